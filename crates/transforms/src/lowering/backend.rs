//! The `lower-to-backend` pass and the [`Backend`] trait: partitioning a program among backends.
//!
//! Backends are asked in priority order. Each claims ops through [`Backend::supports`]; the
//! partitioner groups claimed ops of one block into `backend.partition {backend = name}` ops
//! whose isolated region holds them, then calls [`Backend::compile`] on each partition.
//!
//! Partitions are the connected components (through def-use edges) of maximal runs of
//! consecutive ops one backend claims. A partition replaces a contiguous range of its block,
//! so every value it uses is defined before it and every value it gives is used after it:
//! partitioning never introduces a cycle and needs no reordering. Constants (`prim.Constant`)
//! are hoisted to the start of their block first so they do not split runs, and are cloned
//! into the partitions that use them rather than passed as operands.
//!
//! A second backend plugs in without touching this crate: implement [`Backend`] (say, a JIT
//! that `supports` only `prim.FusionGroup` ops and compiles each partition's fusion groups)
//! and put it before the interpreter in the list given to [`LowerToBackend::new`]
//! (or register a pass built with it). The interpreter backend claims every op.

use ir::{Attribute, Context, Diagnostic, InsertPoint, Module, OpId, OperationState, Type, ValueId, ValueMap, WalkOrder};
use pass::{AnalysisManager, Pass, PassOptions, PassResult};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// A backend: what it claims, and how it prepares a claimed partition.
pub trait Backend: Send + Sync {
    /// The name recorded on its partitions (`backend = "interpreter"`).
    fn name(&self) -> &str;

    /// Whether this backend executes `op` (an op directly in a function body or region).
    fn supports(&self, ctx: &Context, m: &Module, op: OpId) -> bool;

    /// Prepares a `backend.partition` this backend claimed (compile it, annotate it, rewrite its
    /// body into `backend.kernel`/`backend.call` ops). The default keeps it as it is, for
    /// backends that interpret the region.
    fn compile(&self, _ctx: &Context, _m: &mut Module, _partition: OpId) -> Result<(), Diagnostic> {
        Ok(())
    }
}

/// The reference interpreter: claims every op.
#[derive(Clone, Copy, Debug, Default)]
pub struct InterpreterBackend;

impl Backend for InterpreterBackend {
    fn name(&self) -> &str {
        "interpreter"
    }

    fn supports(&self, _: &Context, _: &Module, _: OpId) -> bool {
        true
    }
}

/// A backend claiming the ops whose names are listed (exactly, or by `dialect.` prefix); for
/// tests and for declaring simple backends in pipelines (`lower-to-backend{claim=name:ops}`).
#[derive(Clone, Debug)]
pub struct OpListBackend {
    pub name: String,
    pub ops: Vec<String>,
}

impl Backend for OpListBackend {
    fn name(&self) -> &str {
        &self.name
    }

    fn supports(&self, _: &Context, m: &Module, op: OpId) -> bool {
        let n = m.op_name(op);
        self.ops.iter().any(|o| o == n || (o.ends_with('.') && n.starts_with(o.as_str())))
    }
}

/// What partitioning did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PartitionStats {
    pub partitions: usize,
    /// Ops claimed by no backend (left in place).
    pub unclaimed: usize,
}

fn is_terminator(ctx: &Context, m: &Module, op: OpId) -> bool {
    ctx.has_trait(m.op_name(op), ir::Traits::TERMINATOR)
}

/// Partitions the bodies of the functions nested in `root` among `backends` (first claim wins).
pub fn partition(ctx: &Context, m: &mut Module, root: OpId, backends: &[Arc<dyn Backend>]) -> Result<PartitionStats, Diagnostic> {
    let mut funcs = Vec::new();
    m.walk(root, WalkOrder::PreOrder, &mut |o| {
        if m.op_name(o) == ir::builtin::FUNC {
            funcs.push(o);
        }
    });
    let mut stats = PartitionStats::default();
    for f in funcs {
        for r in m.regions(f).to_vec() {
            for b in m.region_blocks(r).to_vec() {
                partition_block(ctx, m, b, backends, &mut stats)?;
            }
        }
    }
    Ok(stats)
}

fn partition_block(
    ctx: &Context,
    m: &mut Module,
    block: ir::BlockId,
    backends: &[Arc<dyn Backend>],
    stats: &mut PartitionStats,
) -> Result<(), Diagnostic> {
    // Hoist constants (no operands) above the first other op so they do not split runs.
    let ops = m.block_ops(block);
    if let Some(target) = ops.iter().copied().find(|&o| m.op_name(o) != dialect_prim::CONSTANT) {
        let mut past = false;
        for &o in &ops {
            if o == target {
                past = true;
            } else if past && m.op_name(o) == dialect_prim::CONSTANT {
                m.move_before(o, target).map_err(|e| Diagnostic::error(m.loc(o).clone(), e.to_string()))?;
            }
        }
    }
    // Assign each op a backend; a run is a maximal sequence of consecutive ops of one backend.
    let ops: Vec<OpId> = m.block_ops(block).into_iter().filter(|&o| m.op_name(o) != dialect_prim::CONSTANT).collect();
    let mut runs: Vec<(usize, Vec<OpId>)> = Vec::new();
    for o in ops {
        if is_terminator(ctx, m, o) {
            continue;
        }
        let Some(bi) = backends.iter().position(|b| b.supports(ctx, m, o)) else {
            stats.unclaimed += 1;
            runs.push((usize::MAX, Vec::new()));
            continue;
        };
        match runs.last_mut() {
            Some((b, run)) if *b == bi => run.push(o),
            _ => runs.push((bi, vec![o])),
        }
    }
    for (bi, run) in runs {
        if bi == usize::MAX || run.is_empty() {
            continue;
        }
        for comp in components(m, &run) {
            let p = outline(ctx, m, &comp, backends[bi].name())?;
            backends[bi].compile(ctx, m, p)?;
            stats.partitions += 1;
        }
    }
    Ok(())
}

/// Connected components of `run` (def-use edges inside the run), each in program order.
fn components(m: &Module, run: &[OpId]) -> Vec<Vec<OpId>> {
    let index: HashMap<OpId, usize> = run.iter().enumerate().map(|(i, &o)| (o, i)).collect();
    let block = run.first().and_then(|&o| m.parent_block(o));
    let mut parent: Vec<usize> = (0..run.len()).collect();
    fn find(p: &mut [usize], mut x: usize) -> usize {
        while p[x] != x {
            p[x] = p[p[x]];
            x = p[x];
        }
        x
    }
    for (i, &o) in run.iter().enumerate() {
        let mut inner = Vec::new();
        m.walk(o, WalkOrder::PreOrder, &mut |n| inner.push(n));
        for n in inner {
            for &v in m.operands(n) {
                // A value defined in a nested region counts for the top-level op holding it.
                let mut d = m.defining_op(v);
                while let Some(x) = d {
                    if m.parent_block(x) == block {
                        break;
                    }
                    d = m.parent_op(x);
                }
                if let Some(&j) = d.and_then(|x| index.get(&x)) {
                    let (a, b) = (find(&mut parent, i), find(&mut parent, j));
                    parent[a] = b;
                }
            }
        }
    }
    let mut groups: HashMap<usize, Vec<OpId>> = HashMap::new();
    let mut order = Vec::new();
    for (i, &o) in run.iter().enumerate() {
        let r = find(&mut parent, i);
        if !groups.contains_key(&r) {
            order.push(r);
        }
        groups.entry(r).or_default().push(o);
    }
    order.into_iter().filter_map(|r| groups.remove(&r)).collect()
}

/// Moves `ops` (consecutive in program order, one block) into a new `backend.partition`.
fn outline(ctx: &Context, m: &mut Module, ops: &[OpId], backend: &str) -> Result<OpId, Diagnostic> {
    let _ = ctx;
    let set: HashSet<OpId> = ops.iter().copied().collect();
    let inside = |m: &Module, o: OpId| -> bool {
        let mut cur = Some(o);
        while let Some(c) = cur {
            if set.contains(&c) {
                return true;
            }
            cur = m.parent_op(c);
        }
        false
    };
    // Inputs: values used inside but defined outside; outputs: results used outside.
    let mut inputs: Vec<ValueId> = Vec::new();
    let mut consts: Vec<ValueId> = Vec::new();
    let mut seen = HashSet::new();
    for &o in ops {
        let mut nested = Vec::new();
        m.walk(o, WalkOrder::PreOrder, &mut |n| nested.push(n));
        for n in nested {
            for &v in m.operands(n) {
                let defined_inside = match m.defining_op(v) {
                    Some(d) => inside(m, d),
                    None => m.value_block(v).and_then(|b| m.block_parent_op(b)).is_some_and(|p| inside(m, p)),
                };
                if !defined_inside && seen.insert(v) {
                    let is_const = m.defining_op(v).is_some_and(|d| m.op_name(d) == dialect_prim::CONSTANT);
                    if is_const { consts.push(v) } else { inputs.push(v) }
                }
            }
        }
    }
    let mut outputs: Vec<ValueId> = Vec::new();
    for &o in ops {
        for &r in m.results(o) {
            if m.uses(r).iter().any(|u| !inside(m, u.op)) {
                outputs.push(r);
            }
        }
    }
    let first = ops[0];
    let loc = m.loc(first).clone();
    let out_types: Vec<Type> = outputs.iter().map(|&v| m.value_type(v).clone()).collect();
    let in_types: Vec<Type> = inputs.iter().map(|&v| m.value_type(v).clone()).collect();
    let st = OperationState::new(dialect_backend::PARTITION)
        .operands(inputs.iter().copied())
        .results(out_types)
        .attr(dialect_backend::BACKEND_ATTR, Attribute::str(backend))
        .regions(1)
        .loc(loc.clone());
    let p = m.create_op(st);
    m.insert_op(p, InsertPoint::Before(first)).map_err(|e| Diagnostic::error(loc.clone(), e.to_string()))?;
    let region = m.regions(p)[0];
    let body = m.append_block(region, &in_types);
    // Constants are cloned in; other inputs become block arguments.
    let mut map = ValueMap::new();
    for &c in &consts {
        if let Some(d) = m.defining_op(c) {
            let nc = m.clone_op(d, &mut map);
            m.insert_op(nc, InsertPoint::End(body)).map_err(|e| Diagnostic::error(loc.clone(), e.to_string()))?;
        }
    }
    for &o in ops {
        m.move_to_end(o, body).map_err(|e| Diagnostic::error(loc.clone(), e.to_string()))?;
    }
    let args = m.block_args(body).to_vec();
    let in_body = |m: &Module, u: ir::Use| -> bool {
        let mut cur = Some(u.op);
        while let Some(c) = cur {
            if m.parent_op(c) == Some(p) {
                return true;
            }
            cur = m.parent_op(c);
        }
        false
    };
    // `replace_uses_where` removes each use from the old value's use list one by one, which is
    // quadratic in a value with many uses (a weight shared by every layer); when every use is
    // inside, replace them all at once.
    let redirect = |m: &mut Module, v: ValueId, a: ValueId| {
        if m.uses(v).iter().all(|&u| in_body(m, u)) {
            m.replace_all_uses(v, a);
        } else {
            m.replace_uses_where(v, a, in_body);
        }
    };
    for (&v, &a) in inputs.iter().zip(&args) {
        redirect(m, v, a);
    }
    for &c in &consts {
        if let Some(nc) = map.get(c) {
            redirect(m, c, nc);
        }
    }
    let results = m.results(p).to_vec();
    for (&o, &r) in outputs.iter().zip(&results) {
        m.replace_uses_where(o, r, |m, u| !in_body(m, u) && u.op != p);
    }
    let ret = m.create_op(OperationState::new(dialect_backend::RETURN).operands(outputs.iter().copied()).loc(loc.clone()));
    m.insert_op(ret, InsertPoint::End(body)).map_err(|e| Diagnostic::error(loc, e.to_string()))?;
    Ok(p)
}

/// The `lower-to-backend` pass.
pub struct LowerToBackend {
    backends: Vec<Arc<dyn Backend>>,
    options: String,
}

impl LowerToBackend {
    /// Partitions among `backends`, in priority order.
    pub fn new(backends: Vec<Arc<dyn Backend>>) -> LowerToBackend {
        LowerToBackend { backends, options: String::new() }
    }

    pub fn options() -> PassOptions {
        PassOptions::new().list(
            "claim",
            &[],
            "Extra backends before the interpreter, each `name:op1;op2` (an op name, or a `dialect.` prefix)",
        )
    }

    pub fn with_options(o: &PassOptions) -> Result<LowerToBackend, String> {
        let mut backends: Vec<Arc<dyn Backend>> = Vec::new();
        for spec in o.get_list("claim").unwrap_or(&[]) {
            let (name, ops) = spec.split_once(':').ok_or_else(|| format!("claim '{spec}' must be 'name:op1;op2'"))?;
            if name.is_empty() {
                return Err(format!("claim '{spec}' has an empty backend name"));
            }
            backends.push(Arc::new(OpListBackend { name: name.to_string(), ops: ops.split(';').map(String::from).collect() }));
        }
        backends.push(Arc::new(InterpreterBackend));
        Ok(LowerToBackend { backends, options: o.to_option_text() })
    }
}

impl Pass for LowerToBackend {
    fn name(&self) -> &str {
        "lower-to-backend"
    }

    fn description(&self) -> &str {
        "Partition function bodies among backends into backend.partition ops"
    }

    fn option_text(&self) -> String {
        self.options.clone()
    }

    fn run(&mut self, ctx: &Context, m: &mut Module, op: OpId, am: &mut AnalysisManager) -> Result<PassResult, Diagnostic> {
        let s = partition(ctx, m, op, &self.backends)?;
        pass::log!(am, pass::LogLevel::Dump, "{} partition(s), {} unclaimed op(s)", s.partitions, s.unclaimed);
        Ok(PassResult::from_changed(s.partitions > 0))
    }
}
