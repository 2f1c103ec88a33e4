//! `inline-if` and `loop-unroll`: structured control flow with constant conditions and trip counts.
//!
//! `inline-if` replaces a `prim.If` whose condition is a constant by the ops of the branch taken.
//! `loop-unroll` replaces a `prim.Loop` with a constant trip count (at most `max-trip-count`), a
//! constant-true initial condition and a body that always yields a constant-true condition (a
//! `for` loop) by that many copies of its body, each given its iteration number as a constant.

use ir::{Attribute, Context, Diagnostic, Module, OpId, OperationState, Type, ValueId, ValueMap, WalkOrder};
use pass::{AnalysisManager, LogLevel};

fn err(m: &Module, op: OpId, e: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::error(m.loc(op).clone(), e.to_string())
}

/// The constant value of `v`, when a `prim.Constant` defines it.
pub fn constant_value(m: &Module, v: ValueId) -> Option<&Attribute> {
    let d = m.defining_op(v)?;
    (m.op_name(d) == dialect_prim::CONSTANT).then(|| m.attr(d, "value")).flatten()
}

/// Inlines every constant-condition `prim.If` under `root`; returns how many.
pub fn run_inline_if(m: &mut Module, root: OpId, am: &mut AnalysisManager) -> Result<usize, Diagnostic> {
    let mut ifs = Vec::new();
    m.walk(root, WalkOrder::PreOrder, &mut |o| ifs.push(o));
    let mut n = 0;
    for op in ifs {
        if !m.contains_op(op) || m.op_name(op) != dialect_prim::IF {
            continue;
        }
        let Some(cond) = m.operands(op).first().and_then(|&c| constant_value(m, c)).and_then(Attribute::as_bool) else {
            continue;
        };
        let Some(&region) = m.regions(op).get(if cond { 0 } else { 1 }) else { continue };
        let [block] = m.region_blocks(region) else { continue };
        let block = *block;
        if !am.may_rewrite() {
            break;
        }
        pass::log!(am, LogLevel::Update, "inlining the {} branch of a prim.If", if cond { "then" } else { "else" });
        let ops = m.block_ops(block);
        let Some((&term, body)) = ops.split_last() else { continue };
        for &o in body {
            m.move_before(o, op).map_err(|e| err(m, o, e))?;
        }
        let yielded = m.operands(term).to_vec();
        if yielded.len() != m.results(op).len() {
            return Err(err(m, op, "prim.If branch yields a different number of values than the op returns"));
        }
        m.replace_op_results(op, &yielded);
        m.erase_op(op).map_err(|e| err(m, op, e))?;
        n += 1;
    }
    Ok(n)
}

/// Limits of `loop-unroll`.
#[derive(Clone, Copy, Debug)]
pub struct UnrollConfig {
    /// Loops running more iterations than this are left alone.
    pub max_trip_count: i64,
    /// Loops whose unrolled copies would hold more ops than this are left alone.
    pub max_unrolled_ops: usize,
}

impl Default for UnrollConfig {
    fn default() -> Self {
        UnrollConfig { max_trip_count: 8, max_unrolled_ops: 512 }
    }
}

/// Fully unrolls the eligible `prim.Loop`s under `root`, innermost first; returns how many.
pub fn run_unroll(
    _ctx: &Context,
    m: &mut Module,
    root: OpId,
    config: UnrollConfig,
    am: &mut AnalysisManager,
) -> Result<usize, Diagnostic> {
    let mut loops = Vec::new();
    m.walk(root, WalkOrder::PostOrder, &mut |o| loops.push(o));
    let mut n = 0;
    for op in loops {
        if !m.contains_op(op) || m.op_name(op) != dialect_prim::LOOP {
            continue;
        }
        let Some(trips) = trip_count(m, op) else { continue };
        if trips > config.max_trip_count {
            pass::log!(am, LogLevel::Debug, "not unrolling a loop of {trips} iterations");
            continue;
        }
        let body_size = m.nested_ops(op).len();
        if body_size.saturating_mul(trips as usize) > config.max_unrolled_ops {
            continue;
        }
        if !am.may_rewrite() {
            break;
        }
        pass::log!(am, LogLevel::Update, "unrolling a loop of {trips} iteration(s)");
        unroll(m, op, trips)?;
        n += 1;
    }
    Ok(n)
}

/// The trip count of a `for` loop: constant maximum, constant-true start, constant-true continue.
fn trip_count(m: &Module, op: OpId) -> Option<i64> {
    let operands = m.operands(op);
    let max = constant_value(m, *operands.first()?)?.as_int()?;
    let start = constant_value(m, *operands.get(1)?)?.as_bool()?;
    let body = m.entry_block(*m.regions(op).first()?)?;
    if m.region_blocks(m.regions(op)[0]).len() != 1 {
        return None;
    }
    if !start || max <= 0 {
        return Some(0);
    }
    let term = m.last_op(body)?;
    let cont = constant_value(m, *m.operands(term).first()?)?.as_bool()?;
    cont.then_some(max)
}

fn unroll(m: &mut Module, op: OpId, trips: i64) -> Result<(), Diagnostic> {
    let region = m.regions(op)[0];
    let body = m.entry_block(region).ok_or_else(|| err(m, op, "prim.Loop has no body"))?;
    let mut carried: Vec<ValueId> = m.operands(op)[2..].to_vec();
    let args = m.block_args(body).to_vec();
    let ops = m.block_ops(body);
    let Some((&term, body_ops)) = ops.split_last() else { return Err(err(m, op, "prim.Loop body is empty")) };
    for k in 0..trips {
        let st = OperationState::new(dialect_prim::CONSTANT)
            .results([Type::int()])
            .attr("value", Attribute::Int(k))
            .loc(m.loc(op).clone());
        let iv = m.create_op(st);
        m.insert_op(iv, ir::InsertPoint::Before(op)).map_err(|e| err(m, op, e))?;
        let mut map = ValueMap::new();
        map.insert(args[0], m.results(iv)[0]);
        for (&a, &c) in args.iter().skip(1).zip(&carried) {
            map.insert(a, c);
        }
        for &o in body_ops {
            let c = m.clone_op(o, &mut map);
            m.insert_op(c, ir::InsertPoint::Before(op)).map_err(|e| err(m, op, e))?;
        }
        carried = m.operands(term)[1..].iter().map(|&v| map.lookup(v)).collect();
    }
    if carried.len() != m.results(op).len() {
        return Err(err(m, op, "prim.Loop carries a different number of values than it returns"));
    }
    m.replace_op_results(op, &carried);
    m.erase_op(op).map_err(|e| err(m, op, e))
}
