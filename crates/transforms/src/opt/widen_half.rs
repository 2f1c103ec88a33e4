//! `widen-half-products`: convolutions and matrix products of `f16`/`bf16` tensors run in
//! `f32` between explicit casts.
//!
//! It matches
//!
//! ```text
//! y = convolution(x, w, b?, …)      y = addmm(s, a, w, …)      y = mm(a, w)
//! ```
//!
//! with every tensor operand of one half dtype `h` (and, for a convolution, not transposed),
//! and rewrites it to the op on `_to_copy(operand, f32)` for each, its result `_to_copy(…, h)`.
//! That is the arithmetic the runtime's half kernels already do (widen exactly, accumulate in
//! `f32`, round once), so the results are the same; what changes is where it happens. A cast
//! of a parameter depends on nothing else, so a runtime that freezes the parameters widens
//! each weight once instead of on every call, and the `f32` op gets the `f32` kernels:
//! prepacked weights, the direct depthwise convolution, and products split across threads.

use dialect_aten::infer::Ranges;
use dialect_aten::op;
use ir::{Context, DType, Diagnostic, Module, OpId, OpRef, ValueId};
use pass::{AnalysisManager, LogLevel};

use crate::lowering::{Arg, OpBuilder};

/// The ops rewritten, and their tensor operands by schema position.
const PRODUCTS: [(OpRef, &[usize]); 3] = [(op::CONVOLUTION, &[0, 1, 2]), (op::ADDMM, &[0, 1, 2]), (op::MM, &[0, 1])];

fn dtype(m: &Module, v: ValueId) -> Option<DType> {
    m.value_type(v).as_tensor()?.dtype
}

/// A product to widen: the op, its arguments in schema order, and the half dtype.
struct Widen {
    op: OpId,
    base: OpRef,
    args: Vec<Arg>,
    tensors: &'static [usize],
    half: DType,
}

fn match_at(ctx: &Context, m: &Module, o: OpId) -> Option<Widen> {
    let base = dialect_edge::as_aten(m.op_name(o))?;
    let &(_, tensors) = PRODUCTS.iter().find(|(p, _)| *p == base)?;
    if m.results(o).len() != 1 {
        return None;
    }
    let half = dtype(m, m.results(o)[0]).filter(|d| matches!(d, DType::F16 | DType::BF16))?;
    if base == op::CONVOLUTION {
        let schema = ctx.op_def(m.op_name(o)).and_then(|d| d.schema.clone())?;
        let a = dialect_aten::infer::Args::bind(ctx, m, o, &schema).ok()?;
        if a.bool("transposed") != Some(false) {
            return None;
        }
    }
    let args = crate::lowering::schema_args(ctx, m, o).ok()?;
    // Every tensor operand is of the half dtype (an absent bias is a constant `None`).
    for &i in tensors {
        match args.get(i)? {
            Arg::V(v) if dtype(m, *v) != Some(half) => return None,
            _ => {}
        }
    }
    Some(Widen { op: o, base, args, tensors, half })
}

fn rewrite(b: &mut OpBuilder, w: Widen) -> Result<ValueId, String> {
    let mut args = w.args;
    for &i in w.tensors {
        if let Arg::V(v) = args[i] {
            args[i] = Arg::V(b.call(op::_TO_COPY, &[v.into(), Arg::A(dialect_prim::kinds::dtype(DType::F32))])?);
        }
    }
    let wide = b.call(w.base, &args)?;
    b.call(op::_TO_COPY, &[wide.into(), Arg::A(dialect_prim::kinds::dtype(w.half))])
}

/// Widens every matching product in `func`; returns how many.
pub fn run_widen_half(ctx: &Context, m: &mut Module, func: OpId, am: &mut AnalysisManager) -> Result<usize, Diagnostic> {
    let mut ops = Vec::new();
    m.walk(func, ir::WalkOrder::PreOrder, &mut |o| ops.push(o));
    let ranges = Ranges::of_module(m);
    let mut widened = 0;
    for o in ops {
        let Some(w) = match_at(ctx, m, o) else { continue };
        if !am.may_rewrite() {
            break;
        }
        let (y, loc) = (m.results(o)[0], m.loc(o).clone());
        let old = w.op;
        let mut b = OpBuilder::before(ctx, m, &ranges, o);
        let new = rewrite(&mut b, w).map_err(|e| Diagnostic::error(loc, format!("widen-half-products: {e}")))?;
        pass::log!(am, LogLevel::Update, "running a half-precision product in f32");
        m.replace_all_uses(y, new);
        m.erase_op(old).map_err(|e| Diagnostic::error(m.loc(old).clone(), e.to_string()))?;
        widened += 1;
    }
    Ok(widened)
}
