//! The `fuse-epilogue` pass: a linear layer and the elementwise op that consumes its result
//! become one `backend.kernel {kernel = "linear"}`, which a runtime computes with the
//! consumer applied to the product's tiles while they are in registers (no separate pass over
//! the result).
//!
//! It matches (Edge or aten spellings alike), for an `f32` product:
//!
//! ```text
//! y = addmm(bias, x, w)                 bias: [n], x: [m, k], w: [k, n]
//! [y = view(y)]                         any static shape whose last dim is n
//! add.Tensor(r, y) | add.Tensor(y, r)   r of the result's shape (alpha 1)
//! gelu(y)                               approximate = "none"
//! relu(y)
//! ```
//!
//! where every intermediate is used only by the next matched op, and moves exactly those ops
//! into the region of a `backend.kernel` whose operands are `bias`, `x`, `w` (and `r`), so
//! the region stays the kernel's reference semantics: a runtime without a native `linear`, or
//! a call it declines (a weight that is not constant, a residual whose rows are not
//! contiguous), interprets it. The attributes say what follows the product: `epilogue`
//! (`"add"`, `"gelu"`, `"relu"`) and, for `"add"`, `residual` (`"lhs"` or `"rhs"`: the side of
//! the sum the residual is on, which the runtime keeps, so the bits are the unfused ops').
//! A residual that broadcasts (a shape other than the result's) stays unfused. The pass runs
//! at Edge level after `fuse-attention` and before `fuse-elementwise`, which would otherwise
//! take the consumer into a fusion group; `lower-to-backend` moves the kernel whole into a
//! partition.

use ir::{Attribute, Context, Diagnostic, InsertPoint, Module, OpId, OperationState, Type, ValueId, WalkOrder};
use pass::{AnalysisManager, Pass, PassResult};

/// The name of the kernel the pass forms.
pub const KERNEL_NAME: &str = "linear";

/// The op's name without its dialect, when it is an Edge or aten op.
fn base(m: &Module, op: OpId) -> Option<&str> {
    let n = m.op_name(op);
    n.strip_prefix("edge.").or_else(|| n.strip_prefix("aten."))
}

fn dims(m: &Module, v: ValueId) -> Option<Vec<i64>> {
    m.value_type(v).as_tensor()?.static_dims()
}

fn is_f32(m: &Module, v: ValueId) -> bool {
    m.value_type(v).as_tensor().and_then(|t| t.dtype) == Some(ir::DType::F32)
}

fn single_use(m: &Module, v: ValueId) -> bool {
    m.uses(v).len() == 1
}

/// A matched linear layer and its consumer.
struct Found {
    /// `addmm`, the view if any, then the consumer.
    ops: Vec<OpId>,
    operands: Vec<ValueId>,
    result: ValueId,
    attrs: Vec<(&'static str, Attribute)>,
}

/// Walks back from `y` (an operand of the consumer) through one optional single-use view to a
/// single-use `f32` `addmm` with a one-dim bias; returns the ops (`addmm` first) and the
/// product's operands.
fn product(m: &Module, y: ValueId, result_dims: &[i64]) -> Option<(Vec<OpId>, [ValueId; 3])> {
    if !single_use(m, y) {
        return None;
    }
    let mut ops = Vec::new();
    let mut cur = y;
    let d = m.defining_op(cur)?;
    if base(m, d) == Some("view") {
        ops.push(d);
        cur = m.operands(d)[0];
        if !single_use(m, cur) {
            return None;
        }
    }
    let mm = m.defining_op(cur)?;
    if base(m, mm) != Some("addmm") || m.operands(mm).len() != 3 || m.parent_block(mm) != m.parent_block(d) {
        return None;
    }
    let [bias, x, w] = [m.operands(mm)[0], m.operands(mm)[1], m.operands(mm)[2]];
    let (bd, xd, wd, yd) = (dims(m, bias)?, dims(m, x)?, dims(m, w)?, dims(m, cur)?);
    let n = *wd.last()?;
    if bd != [n] || xd.len() != 2 || wd.len() != 2 || xd[1] != wd[0] || yd != [xd[0], n] {
        return None;
    }
    if result_dims.last() != Some(&n) || result_dims.iter().product::<i64>() != xd[0] * n {
        return None;
    }
    if ![bias, x, w, cur, y].iter().all(|&v| is_f32(m, v)) {
        return None;
    }
    ops.push(mm);
    ops.reverse();
    Some((ops, [bias, x, w]))
}

/// Matches the linear layer consumed by `op`.
fn match_at(m: &Module, op: OpId) -> Option<Found> {
    let result = *m.results(op).first()?;
    let rd = dims(m, result)?;
    if !is_f32(m, result) || m.results(op).len() != 1 {
        return None;
    }
    let (ops, operands, attrs) = match base(m, op)? {
        "add.Tensor" => {
            if m.attr(op, "alpha").is_some_and(|a| a.as_number() != Some(1.0)) || m.operands(op).len() != 2 {
                return None;
            }
            let (a, b) = (m.operands(op)[0], m.operands(op)[1]);
            // The product on the right (a residual added to a layer's output), else the left.
            let (y, r, side) = if product(m, b, &rd).is_some() { (b, a, "lhs") } else { (a, b, "rhs") };
            // `add(y, y)` reads the product twice: not a residual.
            if r == y || dims(m, r).as_deref() != Some(&rd[..]) || !is_f32(m, r) {
                return None;
            }
            let (ops, [bias, x, w]) = product(m, y, &rd)?;
            (ops, vec![bias, x, w, r], vec![("epilogue", Attribute::str("add")), ("residual", Attribute::str(side))])
        }
        name @ ("gelu" | "relu") => {
            if name == "gelu" && m.attr(op, "approximate").is_some_and(|a| a.as_str() != Some("none")) {
                return None;
            }
            let (ops, [bias, x, w]) = product(m, *m.operands(op).first()?, &rd)?;
            let act = if name == "gelu" { "gelu" } else { "relu" };
            (ops, vec![bias, x, w], vec![("epilogue", Attribute::str(act))])
        }
        _ => return None,
    };
    let mut ops = ops;
    ops.push(op);
    if ops.iter().any(|&o| m.parent_block(o) != m.parent_block(op) || !m.regions(o).is_empty()) {
        return None;
    }
    Some(Found { ops, operands, result, attrs })
}

/// Replaces the matched ops by a `backend.kernel` where the consumer was.
fn outline(m: &mut Module, f: Found) -> Result<OpId, Diagnostic> {
    let Some(&last) = f.ops.last() else { return Err(Diagnostic::error(m.loc(m.top()).clone(), "an empty linear match")) };
    let loc = m.loc(last).clone();
    let err = |e: ir::IrError| Diagnostic::error(loc.clone(), e.to_string());
    let mut st = OperationState::new(dialect_backend::KERNEL)
        .operands(f.operands.iter().copied())
        .results([m.value_type(f.result).clone()])
        .attr("kernel", Attribute::str(KERNEL_NAME))
        .regions(1)
        .loc(loc.clone());
    for (k, a) in f.attrs {
        st = st.attr(k, a);
    }
    let k = m.create_op(st);
    m.insert_op(k, InsertPoint::After(last)).map_err(err)?;
    m.replace_all_uses(f.result, m.results(k)[0]);
    let in_types: Vec<Type> = f.operands.iter().map(|&v| m.value_type(v).clone()).collect();
    let region = m.regions(k)[0];
    let body = m.append_block(region, &in_types);
    for &o in &f.ops {
        m.move_to_end(o, body).map_err(err)?;
    }
    let in_body = move |m: &Module, u: ir::Use| m.parent_op(u.op) == Some(k);
    let args = m.block_args(body).to_vec();
    for (&v, &a) in f.operands.iter().zip(&args) {
        m.replace_uses_where(v, a, in_body);
    }
    let ret = m.create_op(OperationState::new(dialect_backend::RETURN).operands([f.result]).loc(loc.clone()));
    m.insert_op(ret, InsertPoint::End(body)).map_err(err)?;
    Ok(k)
}

/// Fuses every linear layer and its consumer nested in `root`; returns how many.
pub fn fuse_epilogue(m: &mut Module, root: OpId) -> Result<usize, Diagnostic> {
    let mut consumers = Vec::new();
    m.walk(root, WalkOrder::PreOrder, &mut |o| {
        if matches!(base(m, o), Some("add.Tensor" | "gelu" | "relu")) {
            consumers.push(o);
        }
    });
    let mut n = 0;
    for op in consumers {
        // Skip ops already inside a fused region (a kernel or a fusion group).
        if m.parent_op(op).is_some_and(|p| {
            let name = m.op_name(p);
            name == dialect_backend::KERNEL || name == dialect_prim::FUSION_GROUP
        }) {
            continue;
        }
        if let Some(f) = match_at(m, op) {
            outline(m, f)?;
            n += 1;
        }
    }
    Ok(n)
}

/// The `fuse-epilogue` pass.
#[derive(Clone, Copy, Debug, Default)]
pub struct FuseEpilogue;

impl Pass for FuseEpilogue {
    fn name(&self) -> &str {
        "fuse-epilogue"
    }

    fn description(&self) -> &str {
        "Fuse addmm with the residual add, gelu or relu that consumes it into a backend.kernel {kernel = \"linear\"}"
    }

    fn run(&mut self, _ctx: &Context, m: &mut Module, op: OpId, am: &mut AnalysisManager) -> Result<PassResult, Diagnostic> {
        let n = fuse_epilogue(m, op)?;
        pass::log!(am, pass::LogLevel::Dump, "{n} linear layer(s) fused with their consumer");
        Ok(PassResult::from_changed(n > 0))
    }
}
