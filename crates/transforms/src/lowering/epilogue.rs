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
//! partition. The same pass fuses convolutions with their residual adds and activations
//! (`conv_epilogue`).

use dialect_aten::op;
use ir::{Attribute, Context, Diagnostic, Module, OpId, OpRef, ValueId};
use pass::{AnalysisManager, Pass, PassResult};

use super::kernel::{KernelMatch, fuse_matches};

/// The name of the kernel the pass forms.
pub const KERNEL_NAME: &str = dialect_backend::kernels::LINEAR;

/// The ATen op `op` is or mirrors.
pub(super) fn base(m: &Module, op: OpId) -> Option<OpRef> {
    dialect_edge::as_aten(m.op_name(op))
}

pub(super) fn dims(m: &Module, v: ValueId) -> Option<Vec<i64>> {
    m.value_type(v).as_tensor()?.static_dims()
}

pub(super) fn is_f32(m: &Module, v: ValueId) -> bool {
    m.value_type(v).as_tensor().and_then(|t| t.dtype) == Some(ir::DType::F32)
}

/// The residual `r` of `add`, an `add.Tensor` with alpha 1 of `y` and `r`, where `r` is
/// another `f32` value of `y`'s shape `yd`; with the side of the sum `r` is on (`"lhs"` when it
/// is the left operand, which the fused kernel keeps so its bits are the unfused ops').
/// `add(y, y)` reads `y` twice and has no residual.
pub(super) fn residual(m: &Module, add: OpId, y: ValueId, yd: &[i64]) -> Option<(ValueId, &'static str)> {
    if base(m, add)? != op::ADD_TENSOR || m.attr(add, "alpha").is_some_and(|a| a.as_number() != Some(1.0)) {
        return None;
    }
    let [a, b] = m.operands(add) else { return None };
    let (r, side) = if *b == y { (*a, "lhs") } else if *a == y { (*b, "rhs") } else { return None };
    (r != y && is_f32(m, r) && dims(m, r).as_deref() == Some(yd)).then_some((r, side))
}

fn single_use(m: &Module, v: ValueId) -> bool {
    m.uses(v).len() == 1
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
    if base(m, d) == Some(op::VIEW) {
        ops.push(d);
        cur = m.operands(d)[0];
        if !single_use(m, cur) {
            return None;
        }
    }
    let mm = m.defining_op(cur)?;
    if base(m, mm) != Some(op::ADDMM) || m.operands(mm).len() != 3 || m.parent_block(mm) != m.parent_block(d) {
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
fn match_at(m: &Module, op: OpId) -> Option<KernelMatch> {
    let result = *m.results(op).first()?;
    let rd = dims(m, result)?;
    if !is_f32(m, result) || m.results(op).len() != 1 {
        return None;
    }
    let (ops, operands, attrs) = match base(m, op)? {
        op::ADD_TENSOR => {
            let [a, b] = m.operands(op) else { return None };
            // The product on the right (a residual added to a layer's output), else the left.
            let y = if product(m, *b, &rd).is_some() { *b } else { *a };
            let (r, side) = residual(m, op, y, &rd)?;
            let (ops, [bias, x, w]) = product(m, y, &rd)?;
            (ops, vec![bias, x, w, r], vec![("epilogue", Attribute::str("add")), ("residual", Attribute::str(side))])
        }
        name @ (op::GELU | op::RELU) => {
            if name == op::GELU && m.attr(op, "approximate").is_some_and(|a| a.as_str() != Some("none")) {
                return None;
            }
            let (ops, [bias, x, w]) = product(m, *m.operands(op).first()?, &rd)?;
            let act = if name == op::GELU { "gelu" } else { "relu" };
            (ops, vec![bias, x, w], vec![("epilogue", Attribute::str(act))])
        }
        _ => return None,
    };
    let mut ops = ops;
    ops.push(op);
    if ops.iter().any(|&o| m.parent_block(o) != m.parent_block(op) || !m.regions(o).is_empty()) {
        return None;
    }
    Some(KernelMatch { ops, operands, result, attrs, shared: None })
}

/// Fuses every linear layer and its consumer nested in `root`; returns how many.
pub fn fuse_epilogue(m: &mut Module, root: OpId) -> Result<usize, Diagnostic> {
    fuse_matches(m, root, KERNEL_NAME, |m, o| matches!(base(m, o), Some(op::ADD_TENSOR | op::GELU | op::RELU)), match_at)
}

/// The `fuse-epilogue` pass.
#[derive(Clone, Copy, Debug, Default)]
pub struct FuseEpilogue;

impl Pass for FuseEpilogue {
    fn name(&self) -> &str {
        "fuse-epilogue"
    }

    fn description(&self) -> &str {
        "Fuse addmm with the residual add, gelu or relu that consumes it into a backend.kernel {kernel = \"linear\"}, \
         and a convolution with its residual add and activation into a backend.kernel {kernel = \"conv\"}"
    }

    fn run(&mut self, ctx: &Context, m: &mut Module, op: OpId, am: &mut AnalysisManager) -> Result<PassResult, Diagnostic> {
        let n = fuse_epilogue(m, op)?;
        pass::log!(am, pass::LogLevel::Dump, "{n} linear layer(s) fused with their consumer");
        let convs = super::conv_epilogue::fuse_conv_epilogue(ctx, m, op)?;
        pass::log!(am, pass::LogLevel::Dump, "{convs} convolution(s) fused with their residual add or activation");
        Ok(PassResult::from_changed(n + convs > 0))
    }
}
