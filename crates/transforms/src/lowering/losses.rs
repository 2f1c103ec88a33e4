//! Decompositions of PyTorch's composite losses (`nll_loss` and `cross_entropy_loss` with
//! class weights and `ignore_index`, margin, multi-class margin, hinge, soft-margin,
//! cosine-embedding, Poisson and triplet losses), statistics (`var_mean`, `std_mean`, `nanmean`, `instance_norm`, `renorm`)
//! and special functions (`entr`, `ndtr`, `log_ndtr`, `xlog1py`, `xlogy` with a scalar,
//! `float_power` of a scalar).
//!
//! Losses reduce with `reduction` 0 = none, 1 = mean, 2 = sum; ops PyTorch refuses on integer
//! tensors (the statistics) are refused here too.

use super::composite::{f, reduce, zeros_like};
use super::reductions::p_norm;
use super::stacking::{int, ints};
use super::decompose::{DecompResult, DecompositionTable, cast, input, one, opt_input, rank_of};
use super::rewrite::{Arg, OpBuilder};
use dialect_aten::infer::{PromoteArg, float_result, result_type};
use dialect_aten::op;
use ir::{Attribute, DType, DTypeCategory, OpId, ValueId};

/// Adds the losses', statistics' and special functions' decompositions to `t`.
pub(super) fn add(t: &mut DecompositionTable) {
    t.insert(op::VAR_MEAN, |b, op| stat_mean(b, op, "var.correction", false))
        .insert(op::VAR_MEAN_DIM, |b, op| stat_mean(b, op, "var.correction", true))
        .insert(op::STD_MEAN, |b, op| stat_mean(b, op, "std.correction", false))
        .insert(op::STD_MEAN_DIM, |b, op| stat_mean(b, op, "std.correction", true))
        .insert(op::STD_MEAN_CORRECTION, std_mean_correction)
        .insert(op::NANMEAN, nanmean)
        .insert(op::INSTANCE_NORM, instance_norm)
        .insert(op::RENORM, renorm)
        .insert(op::NLL_LOSS, |b, op| nll(b, op, false, false))
        .insert(op::NLL_LOSS_ND, |b, op| nll(b, op, false, false))
        .insert(op::NLL_LOSS2D, |b, op| nll(b, op, false, false))
        .insert(op::NLL_LOSS_FORWARD, |b, op| nll(b, op, false, true))
        .insert(op::NLL_LOSS2D_FORWARD, |b, op| nll(b, op, false, true))
        .insert(op::CROSS_ENTROPY_LOSS, |b, op| nll(b, op, true, false))
        .insert(op::MARGIN_RANKING_LOSS, |b, op| {
            let (x1, x2, y) = (input(b, op, "input1")?, input(b, op, "input2")?, input(b, op, "target")?);
            let margin = b.with_args(op, |a| a.float("margin"))?.unwrap_or(0.0);
            // max(0, −y·(x1 − x2) + margin)
            let d = b.call(op::SUB_TENSOR, &[x1.into(), x2.into()])?;
            let yd = b.call(op::MUL_TENSOR, &[y.into(), d.into()])?;
            let v = b.call(op::RSUB_SCALAR, &[yd.into(), f(margin)])?;
            let v = b.call(op::CLAMP, &[v.into(), f(0.0)])?;
            reduce(b, op, v)
        })
        .insert(op::HINGE_EMBEDDING_LOSS, |b, op| {
            let (x, y) = (input(b, op, "self")?, input(b, op, "target")?);
            let margin = b.with_args(op, |a| a.float("margin"))?.unwrap_or(1.0);
            // max(0, margin − x) where y ≠ 1, plus x where y ≠ −1.
            let m = b.call(op::RSUB_SCALAR, &[x.into(), f(margin)])?;
            let m = b.call(op::CLAMP, &[m.into(), f(0.0)])?;
            let zero = zeros_like(b, m)?;
            let not_pos = b.call(op::NE_SCALAR, &[y.into(), Arg::A(Attribute::Int(1))])?;
            let lm = b.call(op::WHERE_SELF, &[not_pos.into(), m.into(), zero.into()])?;
            let not_neg = b.call(op::NE_SCALAR, &[y.into(), Arg::A(Attribute::Int(-1))])?;
            let ls = b.call(op::WHERE_SELF, &[not_neg.into(), x.into(), zero.into()])?;
            let v = b.call(op::ADD_TENSOR, &[lm.into(), ls.into()])?;
            reduce(b, op, v)
        })
        .insert(op::SOFT_MARGIN_LOSS, |b, op| {
            let (x, y) = (input(b, op, "self")?, input(b, op, "target")?);
            let p = b.call(op::MUL_TENSOR, &[y.into(), x.into()])?;
            let n = b.call(op::NEG, &[p.into()])?;
            let e = b.call(op::EXP, &[n.into()])?;
            let v = b.call(op::LOG1P, &[e.into()])?;
            reduce(b, op, v)
        })
        .insert(op::COSINE_EMBEDDING_LOSS, cosine_embedding_loss)
        .insert(op::MULTI_MARGIN_LOSS, multi_margin_loss)
        .insert(op::POISSON_NLL_LOSS, poisson_nll_loss)
        .insert(op::TRIPLET_MARGIN_LOSS, triplet_margin_loss)
        .insert(op::SPECIAL_ENTR, special_entr)
        .insert(op::SPECIAL_NDTR, |b, op| {
            let x = float_of(b, input(b, op, "self")?)?;
            one(ndtr(b, x))
        })
        .insert(op::SPECIAL_LOG_NDTR, log_ndtr)
        .insert(op::SPECIAL_XLOG1PY, |b, op| {
            let (x, y) = (input(b, op, "self")?, input(b, op, "other")?);
            one(xlog(b, x, y, "log1p"))
        })
        .insert(op::SPECIAL_XLOG1PY_SELF_SCALAR, |b, op| scalar_xlog(b, op, "log1p", true))
        .insert(op::SPECIAL_XLOG1PY_OTHER_SCALAR, |b, op| scalar_xlog(b, op, "log1p", false))
        .insert(op::XLOGY_SCALAR_SELF, |b, op| scalar_xlog(b, op, "log", true))
        .insert(op::XLOGY_SCALAR_OTHER, |b, op| scalar_xlog(b, op, "log", false))
        .insert(op::FLOAT_POWER_SCALAR, |b, op| {
            let e = input(b, op, "exponent")?;
            let s = b.with_args(op, |a| a.float("self"))?.ok_or("float_power: the base must be constant")?;
            let e = cast(b, e, DType::F64)?;
            one(b.call(op::POW_SCALAR, &[f(s), e.into()]))
        });
}

/// `x` in its floating result dtype (integers and bool compute in the default float dtype).
fn float_of(b: &mut OpBuilder, x: ValueId) -> Result<ValueId, String> {
    let d = b.dtype(x).ok_or("unknown dtype")?;
    cast(b, x, float_result(d))
}

/// The `self` operand of an op PyTorch computes only in floating point (statistics, norms),
/// refused otherwise.
pub(super) fn float_only(b: &OpBuilder, op: OpId, what: &str) -> Result<ValueId, String> {
    let x = input(b, op, "self")?;
    match b.dtype(x) {
        Some(d) if d.is_floating() => Ok(x),
        Some(d) => Err(format!("{what} only supports floating-point dtypes, got {}", d.torch_name())),
        None => Err(format!("{what}: unknown dtype")),
    }
}

/// The reduced dimensions: `dim` when given and not empty, else all of them.
fn dims_or_all(b: &OpBuilder, x: ValueId, dims: Option<Vec<i64>>) -> Result<Vec<i64>, String> {
    match dims {
        Some(d) if !d.is_empty() => Ok(d),
        _ => Ok((0..rank_of(b, x)? as i64).collect()),
    }
}

/// `(stat(x), mean(x))` over `dims` with Bessel's `correction`.
fn stat_and_mean(b: &mut OpBuilder, stat: &str, x: ValueId, dims: &[i64], correction: Attribute, keep: bool) -> DecompResult {
    let s = b.call(stat, &[x.into(), ints(dims), Arg::A(correction), Arg::A(Attribute::Bool(keep))])?;
    let m = b.call(op::MEAN_DIM, &[x.into(), ints(dims), Arg::A(Attribute::Bool(keep))])?;
    Ok(Some(vec![s, m]))
}

/// `var_mean`/`std_mean` (all dimensions) and their `.dim` overloads, `unbiased` as correction 1.
fn stat_mean(b: &mut OpBuilder, op: OpId, stat: &str, with_dims: bool) -> DecompResult {
    let x = float_only(b, op, stat)?;
    let (dims, unbiased, keep) = b.with_args(op, |a| (a.ints("dim"), a.bool("unbiased"), a.bool("keepdim")))?;
    let dims = dims_or_all(b, x, if with_dims { dims } else { None })?;
    let c = Attribute::Int(unbiased.unwrap_or(true) as i64);
    stat_and_mean(b, stat, x, &dims, c, keep.unwrap_or(false))
}

fn std_mean_correction(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = float_only(b, op, "std_mean")?;
    let (dims, c, keep) = b.with_args(op, |a| (a.ints("dim"), a.constant("correction"), a.bool("keepdim")))?;
    let dims = dims_or_all(b, x, dims)?;
    let c = c.filter(|c| !dialect_prim::kinds::is_none(c)).unwrap_or(Attribute::Int(1));
    stat_and_mean(b, "std.correction", x, &dims, c, keep.unwrap_or(false))
}

/// `nanmean`: the sum of the non-NaN elements over their count.
fn nanmean(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = float_only(b, op, "nanmean")?;
    let (dims, keep, dtype) = b.with_args(op, |a| (a.ints("dim"), a.bool("keepdim"), a.dtype("dtype").flatten()))?;
    let x = match dtype {
        Some(d) => cast(b, x, d)?,
        None => x,
    };
    let dims = ints(&dims_or_all(b, x, dims)?);
    let keep = Arg::A(Attribute::Bool(keep.unwrap_or(false)));
    let nan = b.call(op::ISNAN, &[x.into()])?;
    let zero = zeros_like(b, x)?;
    let clean = b.call(op::WHERE_SELF, &[nan.into(), zero.into(), x.into()])?;
    let s = b.call(op::SUM_DIM_INTLIST, &[clean.into(), dims.clone(), keep.clone()])?;
    let present = b.call(op::LOGICAL_NOT, &[nan.into()])?;
    let d = b.dtype(x).ok_or("nanmean: unknown dtype")?;
    let n = b.call(op::SUM_DIM_INTLIST, &[present.into(), dims, keep, Arg::A(dialect_prim::kinds::dtype(d))])?;
    one(b.call(op::DIV_TENSOR, &[s.into(), n.into()]))
}

/// A per-channel parameter `[C]` shaped `[C, 1, …]` to broadcast against `[N, C, …]` of rank `r`.
fn per_channel(b: &mut OpBuilder, w: ValueId, r: usize) -> Result<ValueId, String> {
    let mut shape = vec![-1i64];
    shape.extend(std::iter::repeat_n(1, r.saturating_sub(2)));
    b.call(op::RESHAPE, &[w.into(), ints(&shape)])
}

/// `instance_norm`: each `(sample, channel)` normalized over its spatial dimensions (or by
/// the running statistics when `use_input_stats` is false), then the per-channel affine map.
fn instance_norm(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "input")?;
    let (w, bias) = (opt_input(b, op, "weight")?, opt_input(b, op, "bias")?);
    let (rm, rv) = (opt_input(b, op, "running_mean")?, opt_input(b, op, "running_var")?);
    let (use_stats, eps) = b.with_args(op, |a| (a.bool("use_input_stats"), a.float("eps")))?;
    let eps = eps.ok_or("instance_norm: eps must be constant")?;
    let r = rank_of(b, x)?;
    if r < 2 {
        return Err("instance_norm: expects an input of at least 2 dimensions".into());
    }
    let (mean, var) = if use_stats.unwrap_or(true) {
        if rm.is_some() || rv.is_some() {
            // PyTorch would also update the running statistics in place.
            return Err("instance_norm: updating running statistics is not supported".into());
        }
        let dims: Vec<i64> = (2..r as i64).collect();
        let keep = Arg::A(Attribute::Bool(true));
        let var = b.call(op::VAR_CORRECTION, &[x.into(), ints(&dims), int(0), keep.clone()])?;
        let mean = b.call(op::MEAN_DIM, &[x.into(), ints(&dims), keep])?;
        (mean, var)
    } else {
        let (Some(rm), Some(rv)) = (rm, rv) else {
            return Err("instance_norm: expects running_mean and running_var when use_input_stats is false".into());
        };
        (per_channel(b, rm, r)?, per_channel(b, rv, r)?)
    };
    let c = b.call(op::SUB_TENSOR, &[x.into(), mean.into()])?;
    let v = b.call(op::ADD_SCALAR, &[var.into(), f(eps)])?;
    let inv = b.call(op::RSQRT, &[v.into()])?;
    let mut y = b.call(op::MUL_TENSOR, &[c.into(), inv.into()])?;
    if let Some(w) = w {
        let w = per_channel(b, w, r)?;
        y = b.call(op::MUL_TENSOR, &[y.into(), w.into()])?;
    }
    if let Some(bias) = bias {
        let bias = per_channel(b, bias, r)?;
        y = b.call(op::ADD_TENSOR, &[y.into(), bias.into()])?;
    }
    one(Ok(y))
}

/// `renorm(x, p, dim, maxnorm)`: each slice along `dim` whose `p`-norm exceeds `maxnorm` is
/// scaled to `maxnorm / (norm + 1e-7)`.
fn renorm(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = float_only(b, op, "renorm")?;
    let (p, dim, maxnorm) = b.with_args(op, |a| (a.float("p"), a.int("dim"), a.float("maxnorm")))?;
    let (p, dim, maxnorm) = match (p, dim, maxnorm) {
        (Some(p), Some(d), Some(m)) => (p, d, m),
        _ => return Err("renorm: p, dim and maxnorm must be constant".into()),
    };
    let r = rank_of(b, x)? as i64;
    let d = if dim < 0 { dim + r } else { dim };
    let dims: Vec<i64> = (0..r).filter(|&i| i != d).collect();
    let n = p_norm(b, x, p, &dims, true)?;
    let big = b.call(op::GT_SCALAR, &[n.into(), f(maxnorm)])?;
    let ne = b.call(op::ADD_SCALAR, &[n.into(), f(1e-7)])?;
    let scale = b.call(op::RECIPROCAL, &[ne.into()])?;
    let scale = b.call(op::MUL_SCALAR, &[scale.into(), f(maxnorm)])?;
    let unit = b.call(op::ONES_LIKE, &[scale.into()])?;
    let factor = b.call(op::WHERE_SELF, &[big.into(), scale.into(), unit.into()])?;
    one(b.call(op::MUL_TENSOR, &[x.into(), factor.into()]))
}

/// `nll_loss` (and `cross_entropy_loss`, which takes `log_softmax` first): for class indices
/// `t`, `−w[t]·x[t]` along the class dimension (1, or 0 for an unbatched input), zero where
/// `t == ignore_index`; the mean divides by the sum of the weights taken. The `_forward` ops
/// (`forward`) also return that sum (0 without reduction).
fn nll(b: &mut OpBuilder, op: OpId, log_softmax: bool, forward: bool) -> DecompResult {
    let (x, t) = (input(b, op, "self")?, input(b, op, "target")?);
    let w = opt_input(b, op, "weight")?;
    let (red, ignore) = b.with_args(op, |a| (a.int("reduction"), a.int("ignore_index")))?;
    let (red, ignore) = (red.unwrap_or(1), ignore.unwrap_or(-100));
    let r = rank_of(b, x)?;
    if r == 0 {
        return Err("nll_loss: expects an input of at least 1 dimension".into());
    }
    let cdim = if r == 1 { 0 } else { 1 };
    let x = if log_softmax {
        if b.with_args(op, |a| a.float("label_smoothing"))?.unwrap_or(0.0) != 0.0 {
            return Err("cross_entropy_loss: label smoothing is not supported".into());
        }
        if b.dtype(t).is_some_and(|d| d.is_floating()) {
            return Err("cross_entropy_loss: class-probability targets are not supported".into());
        }
        b.call(op::_LOG_SOFTMAX, &[x.into(), int(cdim), Arg::A(Attribute::Bool(false))])?
    } else {
        x
    };
    if !matches!(b.dtype(t), Some(DType::I64 | DType::U8 | DType::I32)) {
        return Err("nll_loss: the target must hold class indices (an integer tensor)".into());
    }
    if rank_of(b, t)? + 1 != r {
        return Err("nll_loss: the target must have one dimension fewer than the input".into());
    }
    let t = cast(b, t, DType::I64)?;
    let keep = b.call(op::NE_SCALAR, &[t.into(), int(ignore)])?;
    let zero_t = zeros_like(b, t)?;
    let safe = b.call(op::WHERE_SELF, &[keep.into(), t.into(), zero_t.into()])?;
    let idx = b.call(op::UNSQUEEZE, &[safe.into(), int(cdim)])?;
    let picked = b.call(op::GATHER, &[x.into(), int(cdim), idx.into()])?;
    let picked = b.call(op::SQUEEZE_DIM, &[picked.into(), int(cdim)])?;
    let d = b.dtype(x).ok_or("nll_loss: unknown dtype")?;
    let mut wt = cast(b, keep, d)?;
    if let Some(w) = w {
        let flat = b.call(op::RESHAPE, &[safe.into(), ints(&[-1])])?;
        let taken = b.call(op::INDEX_SELECT, &[w.into(), int(0), flat.into()])?;
        let shape = b.shape(safe).ok_or("nll_loss: unknown target shape")?;
        let shape: Vec<i64> = shape.iter().map(|s| s.as_static().ok_or("nll_loss: the target shape must be static")).collect::<Result<_, _>>()?;
        let taken = b.call(op::RESHAPE, &[taken.into(), ints(&shape)])?;
        wt = b.call(op::MUL_TENSOR, &[taken.into(), wt.into()])?;
    }
    let p = b.call(op::MUL_TENSOR, &[picked.into(), wt.into()])?;
    let loss = b.call(op::NEG, &[p.into()])?;
    let (out, total) = match red {
        0 => (loss, b.call(op::SCALAR_TENSOR, &[int(0), Arg::A(dialect_prim::kinds::dtype(d))])?),
        1 | 2 => {
            let s = b.call(op::SUM, &[loss.into()])?;
            let n = b.call(op::SUM, &[wt.into()])?;
            (if red == 1 { b.call(op::DIV_TENSOR, &[s.into(), n.into()])? } else { s }, n)
        }
        r => return Err(format!("reduction must be 0, 1 or 2, got {r}")),
    };
    Ok(Some(if forward { vec![out, total] } else { vec![out] }))
}

/// `multi_margin_loss(x, y, p, margin, w)`: for each sample, `Σ_{c ≠ y} max(0, margin − x[y] +
/// x[c])^p · w[y] / C` (`p` is 1 or 2); a 1-d input is one sample.
fn multi_margin_loss(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = float_only(b, op, "multi_margin_loss")?;
    let (y, w) = (input(b, op, "target")?, opt_input(b, op, "weight")?);
    let (p, margin) = b.with_args(op, |a| (a.int("p"), a.float("margin")))?;
    let p = p.unwrap_or(1);
    if p != 1 && p != 2 {
        return Err("multi_margin_loss: only p == 1 and p == 2 are supported".into());
    }
    let ys = b.shape(y).ok_or("multi_margin_loss: unknown target shape")?;
    let ys: Vec<i64> = ys.iter().map(|d| d.as_static().ok_or("multi_margin_loss: the target shape must be static")).collect::<Result<_, _>>()?;
    let c = match super::composite::static_shape(b, x, "multi_margin_loss")?[..] {
        [c] => c,
        [_, c] => c,
        _ => return Err("multi_margin_loss: expects a 1-d or 2-d input".into()),
    };
    let x = b.call(op::RESHAPE, &[x.into(), ints(&[-1, c])])?;
    let t = b.call(op::RESHAPE, &[y.into(), ints(&[-1, 1])])?;
    let xy = b.call(op::GATHER, &[x.into(), int(1), t.into()])?;
    let z = b.call(op::SUB_TENSOR, &[x.into(), xy.into()])?;
    let z = b.call(op::ADD_SCALAR, &[z.into(), f(margin.unwrap_or(1.0))])?;
    let mut z = b.call(op::CLAMP, &[z.into(), f(0.0)])?;
    if p == 2 {
        z = b.call(op::MUL_TENSOR, &[z.into(), z.into()])?;
    }
    if let Some(w) = w {
        let flat = b.call(op::RESHAPE, &[t.into(), ints(&[-1])])?;
        let wy = b.call(op::INDEX_SELECT, &[w.into(), int(0), flat.into()])?;
        let wy = b.call(op::UNSQUEEZE, &[wy.into(), int(1)])?;
        z = b.call(op::MUL_TENSOR, &[z.into(), wy.into()])?;
    }
    let classes = b.call(op::ARANGE, &[int(c), Arg::A(dialect_prim::kinds::dtype(DType::I64))])?;
    let own = b.call(op::EQ_TENSOR, &[classes.into(), t.into()])?;
    let zero = zeros_like(b, z)?;
    let z = b.call(op::WHERE_SELF, &[own.into(), zero.into(), z.into()])?;
    let s = b.call(op::SUM_DIM_INTLIST, &[z.into(), ints(&[1])])?;
    let s = b.call(op::DIV_SCALAR, &[s.into(), int(c)])?;
    let v = b.call(op::RESHAPE, &[s.into(), ints(&ys)])?;
    reduce(b, op, v)
}

/// `1 − cos(x1, x2)` where `y == 1`, `max(0, cos − margin)` where `y == −1`, the squared
/// magnitudes kept away from zero by 1e-12.
fn cosine_embedding_loss(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let (x1, x2, y) = (input(b, op, "input1")?, input(b, op, "input2")?, input(b, op, "target")?);
    let margin = b.with_args(op, |a| a.float("margin"))?.unwrap_or(0.0);
    let last = ints(&[-1]);
    let p = b.call(op::MUL_TENSOR, &[x1.into(), x2.into()])?;
    let dot = b.call(op::SUM_DIM_INTLIST, &[p.into(), last.clone()])?;
    let mut mags = Vec::new();
    for x in [x1, x2] {
        let sq = b.call(op::MUL_TENSOR, &[x.into(), x.into()])?;
        let s = b.call(op::SUM_DIM_INTLIST, &[sq.into(), last.clone()])?;
        mags.push(b.call(op::ADD_SCALAR, &[s.into(), f(1e-12)])?);
    }
    let den = b.call(op::MUL_TENSOR, &[mags[0].into(), mags[1].into()])?;
    let den = b.call(op::SQRT, &[den.into()])?;
    let cos = b.call(op::DIV_TENSOR, &[dot.into(), den.into()])?;
    let zero = zeros_like(b, cos)?;
    let pos = b.call(op::RSUB_SCALAR, &[cos.into(), f(1.0)])?;
    let neg = b.call(op::SUB_SCALAR, &[cos.into(), f(margin)])?;
    let neg = b.call(op::CLAMP, &[neg.into(), f(0.0)])?;
    let is_pos = b.call(op::EQ_SCALAR, &[y.into(), int(1)])?;
    let lp = b.call(op::WHERE_SELF, &[is_pos.into(), pos.into(), zero.into()])?;
    let is_neg = b.call(op::EQ_SCALAR, &[y.into(), int(-1)])?;
    let ln = b.call(op::WHERE_SELF, &[is_neg.into(), neg.into(), zero.into()])?;
    let v = b.call(op::ADD_TENSOR, &[lp.into(), ln.into()])?;
    reduce(b, op, v)
}

/// `exp(x) − t·x` (`log_input`) or `x − t·log(x + eps)`, plus Stirling's term
/// `t·log t − t + ½·log(2πt)` where `t > 1` when `full`.
fn poisson_nll_loss(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let (x, t) = (input(b, op, "input")?, input(b, op, "target")?);
    let (log_input, full, eps) = b.with_args(op, |a| (a.bool("log_input"), a.bool("full"), a.float("eps")))?;
    let (log_input, full) = (log_input.unwrap_or(true), full.unwrap_or(false));
    let mut v = if log_input {
        let e = b.call(op::EXP, &[x.into()])?;
        let tx = b.call(op::MUL_TENSOR, &[t.into(), x.into()])?;
        b.call(op::SUB_TENSOR, &[e.into(), tx.into()])?
    } else {
        let xe = b.call(op::ADD_SCALAR, &[x.into(), f(eps.unwrap_or(1e-8))])?;
        let l = b.call(op::LOG, &[xe.into()])?;
        let tl = b.call(op::MUL_TENSOR, &[t.into(), l.into()])?;
        b.call(op::SUB_TENSOR, &[x.into(), tl.into()])?
    };
    if full {
        let lt = b.call(op::LOG, &[t.into()])?;
        let tlt = b.call(op::MUL_TENSOR, &[t.into(), lt.into()])?;
        let a = b.call(op::SUB_TENSOR, &[tlt.into(), t.into()])?;
        let tp = b.call(op::MUL_SCALAR, &[t.into(), f(2.0 * std::f64::consts::PI)])?;
        let l2 = b.call(op::LOG, &[tp.into()])?;
        let h = b.call(op::MUL_SCALAR, &[l2.into(), f(0.5)])?;
        let s = b.call(op::ADD_TENSOR, &[a.into(), h.into()])?;
        let big = b.call(op::GT_SCALAR, &[t.into(), int(1)])?;
        let zero = zeros_like(b, s)?;
        let s = b.call(op::WHERE_SELF, &[big.into(), s.into(), zero.into()])?;
        v = b.call(op::ADD_TENSOR, &[v.into(), s.into()])?;
    }
    reduce(b, op, v)
}

/// `‖x − y + eps‖_p` over the last dimension, as `pairwise_distance` computes it.
fn distance(b: &mut OpBuilder, x: ValueId, y: ValueId, p: f64, eps: f64) -> Result<ValueId, String> {
    let d = b.call(op::SUB_TENSOR, &[x.into(), y.into()])?;
    let d = b.call(op::ADD_SCALAR, &[d.into(), f(eps)])?;
    p_norm(b, d, p, &[-1], false)
}

/// `max(d(a, p) − d(a, n) + margin, 0)`, with `d(a, n)` replaced by `min(d(a, n), d(p, n))`
/// when `swap`.
fn triplet_margin_loss(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let (a, p, n) = (input(b, op, "anchor")?, input(b, op, "positive")?, input(b, op, "negative")?);
    let (margin, pn, eps, swap) = b.with_args(op, |x| (x.float("margin"), x.float("p"), x.float("eps"), x.bool("swap")))?;
    let (pn, eps) = (pn.unwrap_or(2.0), eps.unwrap_or(1e-6));
    let dp = distance(b, a, p, pn, eps)?;
    let mut dn = distance(b, a, n, pn, eps)?;
    if swap.unwrap_or(false) {
        let ds = distance(b, p, n, pn, eps)?;
        dn = b.call(op::MINIMUM, &[dn.into(), ds.into()])?;
    }
    let d = b.call(op::SUB_TENSOR, &[dp.into(), dn.into()])?;
    let d = b.call(op::ADD_SCALAR, &[d.into(), f(margin.unwrap_or(1.0))])?;
    let v = b.call(op::CLAMP, &[d.into(), f(0.0)])?;
    reduce(b, op, v)
}

/// `entr(x) = −x·log x` for `x > 0`, 0 at 0, −∞ below (NaN stays NaN).
fn special_entr(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = float_of(b, input(b, op, "self")?)?;
    let d = b.dtype(x).ok_or("entr: unknown dtype")?;
    let l = b.call(op::LOG, &[x.into()])?;
    let p = b.call(op::MUL_TENSOR, &[x.into(), l.into()])?;
    let v = b.call(op::NEG, &[p.into()])?;
    let zero = zeros_like(b, x)?;
    let is_zero = b.call(op::EQ_SCALAR, &[x.into(), int(0)])?;
    let v = b.call(op::WHERE_SELF, &[is_zero.into(), zero.into(), v.into()])?;
    let ninf = b.call(op::SCALAR_TENSOR, &[f(f64::NEG_INFINITY), Arg::A(dialect_prim::kinds::dtype(d))])?;
    let neg = b.call(op::LT_SCALAR, &[x.into(), int(0)])?;
    one(b.call(op::WHERE_SELF, &[neg.into(), ninf.into(), v.into()]))
}

/// `ndtr(x) = ½·erfc(−x/√2)`, accurate in both tails.
fn ndtr(b: &mut OpBuilder, x: ValueId) -> Result<ValueId, String> {
    let s = b.call(op::MUL_SCALAR, &[x.into(), f(-std::f64::consts::FRAC_1_SQRT_2)])?;
    let e = b.call(op::ERFC, &[s.into()])?;
    b.call(op::MUL_SCALAR, &[e.into(), f(0.5)])
}

/// `log ndtr(x)`, computed in double precision: `log1p(−½·erfc(x/√2))` for `x > 0`,
/// `log(½·erfc(−x/√2))` down to −20, and below that the asymptotic series
/// `−x²/2 − log(−x) − ½·log 2π + log(1 − 1/x² + 3/x⁴ − 15/x⁶ + 105/x⁸)`.
fn log_ndtr(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = float_of(b, input(b, op, "self")?)?;
    let d = b.dtype(x).ok_or("log_ndtr: unknown dtype")?;
    let x = cast(b, x, DType::F64)?;
    let s = b.call(op::MUL_SCALAR, &[x.into(), f(std::f64::consts::FRAC_1_SQRT_2)])?;
    let upper = b.call(op::ERFC, &[s.into()])?;
    let upper = b.call(op::MUL_SCALAR, &[upper.into(), f(-0.5)])?;
    let hi = b.call(op::LOG1P, &[upper.into()])?;
    let n = ndtr(b, x)?;
    let mid = b.call(op::LOG, &[n.into()])?;
    let x2 = b.call(op::MUL_TENSOR, &[x.into(), x.into()])?;
    let inv = b.call(op::RECIPROCAL, &[x2.into()])?;
    // Horner form of 1 − u + 3u² − 15u³ + 105u⁴ with u = 1/x².
    let mut series = b.call(op::MUL_SCALAR, &[inv.into(), f(105.0)])?;
    for c in [-15.0, 3.0, -1.0] {
        let t = b.call(op::ADD_SCALAR, &[series.into(), f(c)])?;
        series = b.call(op::MUL_TENSOR, &[t.into(), inv.into()])?;
    }
    let series = b.call(op::ADD_SCALAR, &[series.into(), f(1.0)])?;
    let ls = b.call(op::LOG, &[series.into()])?;
    let nx = b.call(op::NEG, &[x.into()])?;
    let lx = b.call(op::LOG, &[nx.into()])?;
    let q = b.call(op::MUL_SCALAR, &[x2.into(), f(-0.5)])?;
    let q = b.call(op::SUB_TENSOR, &[q.into(), lx.into()])?;
    let q = b.call(op::ADD_TENSOR, &[q.into(), ls.into()])?;
    let low = b.call(op::SUB_SCALAR, &[q.into(), f(0.5 * (2.0 * std::f64::consts::PI).ln())])?;
    let is_low = b.call(op::LT_SCALAR, &[x.into(), f(-20.0)])?;
    let v = b.call(op::WHERE_SELF, &[is_low.into(), low.into(), mid.into()])?;
    let pos = b.call(op::GT_SCALAR, &[x.into(), int(0)])?;
    let v = b.call(op::WHERE_SELF, &[pos.into(), hi.into(), v.into()])?;
    one(cast(b, v, d))
}

/// `x·g(y)` (`g` = `log` or `log1p`), 0 where `x == 0` unless `y` is NaN.
pub(super) fn xlog(b: &mut OpBuilder, x: ValueId, y: ValueId, g: &str) -> Result<ValueId, String> {
    let l = b.call(g, &[y.into()])?;
    let p = b.call(op::MUL_TENSOR, &[x.into(), l.into()])?;
    let z = b.call(op::EQ_SCALAR, &[x.into(), int(0)])?;
    let ny = b.call(op::ISNAN, &[y.into()])?;
    let nny = b.call(op::LOGICAL_NOT, &[ny.into()])?;
    let zero_case = b.call(op::LOGICAL_AND, &[z.into(), nny.into()])?;
    let zero = zeros_like(b, p)?;
    b.call(op::WHERE_SELF, &[zero_case.into(), zero.into(), p.into()])
}

/// `xlogy`/`xlog1py` with one side a Python number: the number becomes a tensor of the
/// promoted floating dtype (a number ranks below a tensor in PyTorch's promotion).
fn scalar_xlog(b: &mut OpBuilder, op: OpId, g: &str, scalar_self: bool) -> DecompResult {
    let (sname, tname) = if scalar_self { ("self", "other") } else { ("other", "self") };
    let t = input(b, op, tname)?;
    let s = b.with_args(op, |a| a.constant(sname))?.ok_or("xlogy: the number must be constant")?;
    let cat = match s {
        Attribute::Float(_) => DTypeCategory::Floating,
        Attribute::Int(_) => DTypeCategory::Integral,
        Attribute::Bool(_) => DTypeCategory::Bool,
        _ => return Err("xlogy: the number must be an int, float or bool".into()),
    };
    let td = b.dtype(t).ok_or("xlogy: unknown dtype")?;
    let d = result_type([PromoteArg::Tensor { dtype: td, zero_dim: false }, PromoteArg::Scalar(cat)]).ok_or("xlogy: no common dtype")?;
    let d = float_result(d);
    let s = b.call(op::SCALAR_TENSOR, &[Arg::A(s), Arg::A(dialect_prim::kinds::dtype(d))])?;
    let t = cast(b, t, d)?;
    let (x, y) = if scalar_self { (s, t) } else { (t, s) };
    one(xlog(b, x, y, g))
}
