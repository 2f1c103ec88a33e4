//! `fold-batch-norm`: an inference batch norm of a convolution's result becomes part of the
//! convolution's weight and bias.
//!
//! It matches
//!
//! ```text
//! y = convolution(x, w, b?, stride, padding, dilation, transposed = false, output_padding, groups)
//! (z, _, _) = _native_batch_norm_legit_no_training(y, gamma?, beta?, mean, var, momentum, eps)
//! ```
//!
//! where `y` is used only by the batch norm, its other two results are unused, and every tensor
//! is floating-point of one dtype with `w` of static output channels, and rewrites it to
//!
//! ```text
//! s  = gamma · rsqrt(var + eps)                         (rsqrt(var + eps) without gamma)
//! z  = convolution(x, w · s.view(C, 1, …), (b − mean) · s + beta, …)
//! ```
//!
//! The new weight and bias depend only on the layer's parameters, so a runtime that knows the
//! parameters when it compiles the program (the interpreter freezes them and hoists what they
//! alone determine) computes them once, and each call runs one convolution with no pass over
//! its result. The result differs from the unfolded ops' by rounding only.

use dialect_aten::infer::Ranges;
use dialect_aten::op;
use ir::{Attribute, Context, DType, Diagnostic, Module, OpId, OpRef, ValueId};
use pass::{AnalysisManager, LogLevel};

use crate::lowering::{Arg, OpBuilder};

/// The ATen op `op` is.
fn base(m: &Module, op: OpId) -> Option<OpRef> {
    dialect_edge::as_aten(m.op_name(op))
}

fn dtype(m: &Module, v: ValueId) -> Option<DType> {
    m.value_type(v).as_tensor()?.dtype
}

/// A batch norm to fold: the convolution, the batch norm and their operands.
struct Fold {
    conv: OpId,
    /// The convolution's arguments in schema order.
    conv_args: Vec<Arg>,
    weight: ValueId,
    bias: Option<ValueId>,
    gamma: Option<ValueId>,
    beta: Option<ValueId>,
    mean: ValueId,
    var: ValueId,
    eps: f64,
    /// The weight's sizes.
    wdims: Vec<i64>,
}

/// The fold rooted at the batch norm `bn`, if it matches.
fn match_at(ctx: &Context, m: &Module, bn: OpId) -> Option<Fold> {
    if base(m, bn) != Some(op::_NATIVE_BATCH_NORM_LEGIT_NO_TRAINING) || m.results(bn).len() != 3 {
        return None;
    }
    if m.results(bn)[1..].iter().any(|&r| !m.uses(r).is_empty()) {
        return None;
    }
    let schema_of = |o: OpId| ctx.op_def(m.op_name(o)).and_then(|d| d.schema.clone());
    let bn_schema = schema_of(bn)?;
    let a = dialect_aten::infer::Args::bind(ctx, m, bn, &bn_schema).ok()?;
    let y = a.value("input")?;
    let opt = |name: &str| if a.is_none(name) { Some(None) } else { a.value(name).map(Some) };
    let (gamma, beta) = (opt("weight")?, opt("bias")?);
    let (mean, var, eps) = (a.value("running_mean")?, a.value("running_var")?, a.float("eps")?);
    if m.uses(y).len() != 1 {
        return None;
    }
    let conv = m.defining_op(y)?;
    if base(m, conv) != Some(op::CONVOLUTION) || m.parent_block(conv) != m.parent_block(bn) || m.results(conv).len() != 1 {
        return None;
    }
    let schema = schema_of(conv)?;
    let c = dialect_aten::infer::Args::bind(ctx, m, conv, &schema).ok()?;
    if c.bool("transposed") != Some(false) {
        return None;
    }
    let weight = c.value("weight")?;
    let bias = if c.is_none("bias") { None } else { Some(c.value("bias")?) };
    let wdims = m.value_type(weight).as_tensor()?.static_dims()?;
    let dt = dtype(m, y).filter(|d| d.is_floating())?;
    let params = [Some(weight), bias, gamma, beta, Some(mean), Some(var)];
    if params.iter().flatten().any(|&v| dtype(m, v) != Some(dt)) || wdims.len() < 3 {
        return None;
    }
    let cout = wdims[0];
    let vector = |v: ValueId| m.value_type(v).as_tensor().and_then(|t| t.static_dims()) == Some(vec![cout]);
    if !params[1..].iter().flatten().all(|&v| vector(v)) {
        return None;
    }
    let conv_args = crate::lowering::schema_args(ctx, m, conv).ok()?;
    if conv_args.len() != 9 {
        return None;
    }
    Some(Fold { conv, conv_args, weight, bias, gamma, beta, mean, var, eps, wdims })
}

/// Builds the folded convolution before the batch norm; returns its result.
fn rewrite(b: &mut OpBuilder, f: Fold) -> Result<ValueId, String> {
    let eps = Arg::A(Attribute::float(f.eps));
    let shifted = b.call(op::ADD_SCALAR, &[f.var.into(), eps])?;
    let mut scale = b.call(op::RSQRT, &[shifted.into()])?;
    if let Some(g) = f.gamma {
        scale = b.call(op::MUL_TENSOR, &[g.into(), scale.into()])?;
    }
    let mut shape = vec![f.wdims[0]];
    shape.resize(f.wdims.len(), 1);
    let column = b.call(op::VIEW, &[scale.into(), Arg::A(Attribute::ints(&shape))])?;
    let weight = b.call(op::MUL_TENSOR, &[f.weight.into(), column.into()])?;
    let centered = match f.bias {
        Some(bias) => b.call(op::SUB_TENSOR, &[bias.into(), f.mean.into()])?,
        None => b.call(op::NEG, &[f.mean.into()])?,
    };
    let mut bias = b.call(op::MUL_TENSOR, &[centered.into(), scale.into()])?;
    if let Some(beta) = f.beta {
        bias = b.call(op::ADD_TENSOR, &[bias.into(), beta.into()])?;
    }
    let mut args = f.conv_args;
    args[1] = Arg::V(weight);
    args[2] = Arg::V(bias);
    b.call(op::CONVOLUTION, &args)
}

/// Folds every matching batch norm in `func`; returns how many.
pub fn run_fold_bn(ctx: &Context, m: &mut Module, func: OpId, am: &mut AnalysisManager) -> Result<usize, Diagnostic> {
    let mut bns = Vec::new();
    m.walk(func, ir::WalkOrder::PreOrder, &mut |o| bns.push(o));
    let ranges = Ranges::of_module(m);
    let mut folded = 0;
    for bn in bns {
        let Some(f) = match_at(ctx, m, bn) else { continue };
        if !am.may_rewrite() {
            break;
        }
        let (conv, z, loc) = (f.conv, m.results(bn)[0], m.loc(bn).clone());
        let mut b = OpBuilder::before(ctx, m, &ranges, bn);
        let new = rewrite(&mut b, f).map_err(|e| Diagnostic::error(loc, format!("fold-batch-norm: {e}")))?;
        pass::log!(am, LogLevel::Update, "folding a batch norm into its convolution");
        m.replace_all_uses(z, new);
        for o in [bn, conv] {
            m.erase_op(o).map_err(|e| Diagnostic::error(m.loc(o).clone(), e.to_string()))?;
        }
        folded += 1;
    }
    Ok(folded)
}
