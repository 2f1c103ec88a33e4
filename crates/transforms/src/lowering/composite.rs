//! Decompositions of PyTorch's composite ops (those `torch.export` may leave and its default
//! decomposition table rewrites): aliases, activations, losses, comparisons, stacking.
//!
//! An alias takes exactly its target's arguments (`arctan2` is `atan2`, `divide.Tensor` is
//! `div.Tensor`) and is rewritten to it argument for argument ([`ALIASES`], checked against
//! both schemas by a test); the others are written with core ops and follow PyTorch's
//! definitions, dtype rules included (comparisons give `bool`, losses reduce with `reduction`
//! 0 = none, 1 = mean, 2 = sum).

use super::decompose::{DecompResult, DecompositionTable, cast, input, one, opt_input, rank_of};
use super::rewrite::{Arg, OpBuilder};
use dialect_aten::op;
use ir::OpRef;
use ir::{Attribute, DType, OpId, ValueId};

/// `(alias, target)`: ops that are another op under another name, with the same arguments.
pub const ALIASES: &[(OpRef, OpRef)] = &[
    (op::ABSOLUTE, op::ABS),
    (op::ARCCOS, op::ACOS),
    (op::ARCCOSH, op::ACOSH),
    (op::ARCSIN, op::ASIN),
    (op::ARCSINH, op::ASINH),
    (op::ARCTAN, op::ATAN),
    (op::ARCTAN2, op::ATAN2),
    (op::ARCTANH, op::ATANH),
    (op::CLIP, op::CLAMP),
    (op::CLIP_TENSOR, op::CLAMP_TENSOR),
    (op::CONCAT, op::CAT),
    (op::CONCATENATE, op::CAT),
    (op::DIVIDE_SCALAR, op::DIV_SCALAR),
    (op::DIVIDE_SCALAR_MODE, op::DIV_SCALAR_MODE),
    (op::DIVIDE_TENSOR, op::DIV_TENSOR),
    (op::DIVIDE_TENSOR_MODE, op::DIV_TENSOR_MODE),
    (op::TRUE_DIVIDE_SCALAR, op::DIV_SCALAR),
    (op::TRUE_DIVIDE_TENSOR, op::DIV_TENSOR),
    (op::MULTIPLY_SCALAR, op::MUL_SCALAR),
    (op::MULTIPLY_TENSOR, op::MUL_TENSOR),
    (op::SUBTRACT_SCALAR, op::SUB_SCALAR),
    (op::SUBTRACT_TENSOR, op::SUB_TENSOR),
    (op::NEGATIVE, op::NEG),
    (op::GREATER_SCALAR, op::GT_SCALAR),
    (op::GREATER_TENSOR, op::GT_TENSOR),
    (op::GREATER_EQUAL_SCALAR, op::GE_SCALAR),
    (op::GREATER_EQUAL_TENSOR, op::GE_TENSOR),
    (op::LESS_SCALAR, op::LT_SCALAR),
    (op::LESS_TENSOR, op::LT_TENSOR),
    (op::LESS_EQUAL_SCALAR, op::LE_SCALAR),
    (op::LESS_EQUAL_TENSOR, op::LE_TENSOR),
    (op::NOT_EQUAL_SCALAR, op::NE_SCALAR),
    (op::NOT_EQUAL_TENSOR, op::NE_TENSOR),
    (op::MAX_OTHER, op::MAXIMUM),
    (op::MIN_OTHER, op::MINIMUM),
    (op::FIX, op::TRUNC),
    (op::__AND___SCALAR, op::BITWISE_AND_SCALAR),
    (op::__OR___SCALAR, op::BITWISE_OR_SCALAR),
    (op::__XOR___SCALAR, op::BITWISE_XOR_SCALAR),
    (op::SPECIAL_ERF, op::ERF),
    (op::SPECIAL_ERFC, op::ERFC),
    (op::SPECIAL_ERFINV, op::ERFINV),
    (op::SPECIAL_EXP2, op::EXP2),
    (op::SPECIAL_EXPIT, op::SIGMOID),
    (op::SPECIAL_EXPM1, op::EXPM1),
    (op::SPECIAL_LOG1P, op::LOG1P),
    (op::SPECIAL_ROUND, op::ROUND_DECIMALS),
    (op::SPECIAL_SINC, op::SINC),
    (op::SPECIAL_DIGAMMA, op::DIGAMMA),
    (op::SPECIAL_PSI, op::DIGAMMA),
    (op::SPECIAL_GAMMALN, op::LGAMMA),
    (op::SPECIAL_LOGSUMEXP, op::LOGSUMEXP),
    (op::SPECIAL_SOFTMAX, op::SOFTMAX_INT),
    (op::SPECIAL_LOG_SOFTMAX, op::LOG_SOFTMAX_INT),
    (op::SPECIAL_LOGIT, op::LOGIT),
    (op::SPECIAL_XLOGY, op::XLOGY_TENSOR),
    (op::SPECIAL_XLOGY_SELF_SCALAR, op::XLOGY_SCALAR_SELF),
    (op::SPECIAL_XLOGY_OTHER_SCALAR, op::XLOGY_SCALAR_OTHER),
    (op::GER, op::OUTER),
    (op::ROW_STACK, op::VSTACK),
    (op::UNSAFE_SPLIT_TENSOR, op::SPLIT_TENSOR),
    (op::UNSAFE_SPLIT_WITH_SIZES, op::SPLIT_WITH_SIZES),
    (op::CDIST, op::_CDIST_FORWARD),
    (op::PDIST, op::_PDIST_FORWARD),
];

/// The casts `_cast_<Type>(self, non_blocking)`.
const CASTS: &[(OpRef, DType)] = &[
    (op::_CAST_BYTE, DType::U8),
    (op::_CAST_CHAR, DType::I8),
    (op::_CAST_DOUBLE, DType::F64),
    (op::_CAST_FLOAT, DType::F32),
    (op::_CAST_HALF, DType::F16),
    (op::_CAST_INT, DType::I32),
    (op::_CAST_LONG, DType::I64),
    (op::_CAST_SHORT, DType::I16),
];

/// Adds the composite ops' decompositions to `t`.
pub(super) fn add(t: &mut DecompositionTable) {
    for &(alias, target) in ALIASES {
        t.insert(alias, move |b, op| rename(b, op, target));
    }
    for &(name, d) in CASTS {
        t.insert(name, move |b, op| {
            let x = input(b, op, "self")?;
            cast(b, x, d).map(|v| Some(vec![v]))
        });
    }
    t.insert(op::CLAMP_MIN_TENSOR, |b, op| {
        let (x, m) = (input(b, op, "self")?, input(b, op, "min")?);
        one(b.call(op::CLAMP_TENSOR, &[x.into(), m.into()]))
    })
    .insert(op::CLAMP_MAX_TENSOR, |b, op| {
        let (x, m) = (input(b, op, "self")?, input(b, op, "max")?);
        one(b.call(op::CLAMP_TENSOR, &[x.into(), Arg::A(dialect_prim::kinds::none()), m.into()]))
    })
    .insert(op::FLOOR_DIVIDE_SCALAR, |b, op| {
        let x = input(b, op, "self")?;
        let s = b.with_args(op, |a| a.constant("other"))?.ok_or("floor_divide: the divisor must be constant")?;
        one(b.call(op::DIV_SCALAR_MODE, &[x.into(), Arg::A(s), Arg::A(Attribute::str("floor"))]))
    })
    .insert(op::CELU, |b, op| {
        let x = input(b, op, "self")?;
        let alpha = b.with_args(op, |a| a.float("alpha"))?.unwrap_or(1.0);
        if alpha == 0.0 {
            return Err("celu: alpha must not be 0".into());
        }
        one(b.call(op::ELU, &[x.into(), f(alpha), f(1.0), f(1.0 / alpha)]))
    })
    .insert(op::SELU, |b, op| {
        let x = input(b, op, "self")?;
        one(b.call(op::ELU, &[x.into(), f(1.673_263_242_354_377_3), f(1.050_700_987_355_480_5), f(1.0)]))
    })
    .insert(op::GLU, glu)
    .insert(op::HARDSHRINK, |b, op| {
        let x = input(b, op, "self")?;
        let l = b.with_args(op, |a| a.float("lambd"))?.unwrap_or(0.5);
        let ax = b.call(op::ABS, &[x.into()])?;
        let keep = b.call(op::GT_SCALAR, &[ax.into(), f(l)])?;
        let zero = zeros_like(b, x)?;
        one(b.call(op::WHERE_SELF, &[keep.into(), x.into(), zero.into()]))
    })
    .insert(op::SOFTSHRINK, |b, op| {
        let x = input(b, op, "self")?;
        let l = b.with_args(op, |a| a.float("lambd"))?.unwrap_or(0.5);
        let hi = b.call(op::GT_SCALAR, &[x.into(), f(l)])?;
        let lo = b.call(op::LT_SCALAR, &[x.into(), f(-l)])?;
        let minus = b.call(op::SUB_SCALAR, &[x.into(), f(l)])?;
        let plus = b.call(op::ADD_SCALAR, &[x.into(), f(l)])?;
        let zero = zeros_like(b, x)?;
        let inner = b.call(op::WHERE_SELF, &[lo.into(), plus.into(), zero.into()])?;
        one(b.call(op::WHERE_SELF, &[hi.into(), minus.into(), inner.into()]))
    })
    .insert(op::THRESHOLD, |b, op| {
        let x = input(b, op, "self")?;
        let (th, v) = b.with_args(op, |a| (a.constant("threshold"), a.constant("value")))?;
        let (Some(th), Some(v)) = (th, v) else { return Err("threshold: threshold and value must be constant".into()) };
        let keep = b.call(op::GT_SCALAR, &[x.into(), Arg::A(th)])?;
        let d = b.dtype(x).ok_or("threshold: unknown dtype")?;
        let fill = b.call(op::SCALAR_TENSOR, &[Arg::A(v), Arg::A(dialect_prim::kinds::dtype(d))])?;
        one(b.call(op::WHERE_SELF, &[keep.into(), x.into(), fill.into()]))
    })
    .insert(op::LOG_SIGMOID, |b, op| {
        // log σ(x) = min(x, 0) − log1p(exp(−|x|)), stable for every x.
        let x = input(b, op, "self")?;
        let zero = zeros_like(b, x)?;
        let m = b.call(op::MINIMUM, &[x.into(), zero.into()])?;
        let ax = b.call(op::ABS, &[x.into()])?;
        let na = b.call(op::NEG, &[ax.into()])?;
        let e = b.call(op::EXP, &[na.into()])?;
        let l = b.call(op::LOG1P, &[e.into()])?;
        one(b.call(op::SUB_TENSOR, &[m.into(), l.into()]))
    })
    .insert(op::LOGADDEXP, |b, op| logaddexp(b, op, false))
    .insert(op::LOGADDEXP2, |b, op| logaddexp(b, op, true))
    .insert(op::LOGIT, |b, op| {
        let x = input(b, op, "self")?;
        let eps = b.with_args(op, |a| a.float("eps"))?;
        let x = match eps {
            Some(e) => b.call(op::CLAMP, &[x.into(), f(e), f(1.0 - e)])?,
            None => x,
        };
        let one_minus = b.call(op::RSUB_SCALAR, &[x.into(), f(1.0)])?;
        let q = b.call(op::DIV_TENSOR, &[x.into(), one_minus.into()])?;
        one(b.call(op::LOG, &[q.into()]))
    })
    .insert(op::HEAVISIDE, |b, op| {
        let (x, v) = (input(b, op, "self")?, input(b, op, "values")?);
        let d = b.dtype(x).ok_or("heaviside: unknown dtype")?;
        let pos = b.call(op::GT_SCALAR, &[x.into(), Arg::A(Attribute::Int(0))])?;
        let pos = cast(b, pos, d)?;
        let z = b.call(op::EQ_SCALAR, &[x.into(), Arg::A(Attribute::Int(0))])?;
        one(b.call(op::WHERE_SELF, &[z.into(), v.into(), pos.into()]))
    })
    .insert(op::OUTER, |b, op| {
        let (x, y) = (input(b, op, "self")?, input(b, op, "vec2")?);
        let col = b.call(op::UNSQUEEZE, &[x.into(), Arg::A(Attribute::Int(1))])?;
        one(b.call(op::MUL_TENSOR, &[col.into(), y.into()]))
    })
    .insert(op::ADDR, |b, op| {
        let (x, v1, v2) = (input(b, op, "self")?, input(b, op, "vec1")?, input(b, op, "vec2")?);
        let (beta, alpha) = b.with_args(op, |a| (a.constant("beta"), a.constant("alpha")))?;
        let col = b.call(op::UNSQUEEZE, &[v1.into(), Arg::A(Attribute::Int(1))])?;
        let outer = b.call(op::MUL_TENSOR, &[col.into(), v2.into()])?;
        let outer = b.call(op::MUL_SCALAR, &[outer.into(), Arg::A(alpha.unwrap_or(Attribute::Int(1)))])?;
        let x = b.call(op::MUL_SCALAR, &[x.into(), Arg::A(beta.unwrap_or(Attribute::Int(1)))])?;
        one(b.call(op::ADD_TENSOR, &[x.into(), outer.into()]))
    })
    .insert(op::DOT, dot)
    .insert(op::VDOT, dot)
    .insert(op::INNER, |b, op| {
        let (x, y) = (input(b, op, "self")?, input(b, op, "other")?);
        if rank_of(b, x)? == 1 && rank_of(b, y)? == 1 {
            let p = b.call(op::MUL_TENSOR, &[x.into(), y.into()])?;
            return one(b.call(op::SUM, &[p.into()]));
        }
        Ok(None)
    })
    .insert(op::TRACE, |b, op| {
        let x = input(b, op, "self")?;
        let d = b.call(op::DIAGONAL, &[x.into()])?;
        one(b.call(op::SUM, &[d.into()]))
    })
    .insert(op::MSE_LOSS, |b, op| {
        let (x, y) = (input(b, op, "self")?, input(b, op, "target")?);
        let d = b.call(op::SUB_TENSOR, &[x.into(), y.into()])?;
        let sq = b.call(op::MUL_TENSOR, &[d.into(), d.into()])?;
        reduce(b, op, sq)
    })
    .insert(op::L1_LOSS, |b, op| {
        let (x, y) = (input(b, op, "self")?, input(b, op, "target")?);
        let d = b.call(op::SUB_TENSOR, &[x.into(), y.into()])?;
        let ad = b.call(op::ABS, &[d.into()])?;
        reduce(b, op, ad)
    })
    .insert(op::SMOOTH_L1_LOSS, |b, op| {
        let beta = b.with_args(op, |a| a.float("beta"))?.unwrap_or(1.0);
        piecewise_loss(b, op, beta, 0.5 / beta.max(f64::MIN_POSITIVE), 0.5 * beta, 1.0, beta == 0.0)
    })
    .insert(op::HUBER_LOSS, |b, op| {
        let delta = b.with_args(op, |a| a.float("delta"))?.unwrap_or(1.0);
        piecewise_loss(b, op, delta, 0.5, 0.5 * delta * delta, delta, false)
    })
    .insert(op::BINARY_CROSS_ENTROPY, bce)
    .insert(op::BINARY_CROSS_ENTROPY_WITH_LOGITS, bce_with_logits)
    .insert(op::KL_DIV, |b, op| {
        let (x, y) = (input(b, op, "self")?, input(b, op, "target")?);
        let log_target = b.with_args(op, |a| a.bool("log_target"))?.unwrap_or(false);
        let v = if log_target {
            let e = b.call(op::EXP, &[y.into()])?;
            let d = b.call(op::SUB_TENSOR, &[y.into(), x.into()])?;
            b.call(op::MUL_TENSOR, &[e.into(), d.into()])?
        } else {
            let yl = b.call(op::XLOGY_TENSOR, &[y.into(), y.into()])?;
            let yx = b.call(op::MUL_TENSOR, &[y.into(), x.into()])?;
            b.call(op::SUB_TENSOR, &[yl.into(), yx.into()])?
        };
        reduce(b, op, v)
    })
    .insert(op::XLOGY_TENSOR, |b, op| {
        let (x, y) = (input(b, op, "self")?, input(b, op, "other")?);
        one(super::losses::xlog(b, x, y, "log"))
    })
    .insert(op::COSINE_SIMILARITY, |b, op| {
        let (x1, x2) = (input(b, op, "x1")?, input(b, op, "x2")?);
        let (dim, eps) = b.with_args(op, |a| (a.int("dim"), a.float("eps")))?;
        let dim = Arg::A(Attribute::ints(&[dim.unwrap_or(1)]));
        let eps = eps.unwrap_or(1e-8);
        let p = b.call(op::MUL_TENSOR, &[x1.into(), x2.into()])?;
        let num = b.call(op::SUM_DIM_INTLIST, &[p.into(), dim.clone()])?;
        let s1 = b.call(op::MUL_TENSOR, &[x1.into(), x1.into()])?;
        let n1 = b.call(op::SUM_DIM_INTLIST, &[s1.into(), dim.clone()])?;
        let s2 = b.call(op::MUL_TENSOR, &[x2.into(), x2.into()])?;
        let n2 = b.call(op::SUM_DIM_INTLIST, &[s2.into(), dim])?;
        let den = b.call(op::MUL_TENSOR, &[n1.into(), n2.into()])?;
        let den = b.call(op::CLAMP, &[den.into(), f(eps * eps)])?;
        let den = b.call(op::SQRT, &[den.into()])?;
        one(b.call(op::DIV_TENSOR, &[num.into(), den.into()]))
    })
    .insert(op::PAIRWISE_DISTANCE, |b, op| {
        let (x1, x2) = (input(b, op, "x1")?, input(b, op, "x2")?);
        let (p, eps, keep) = b.with_args(op, |a| (a.float("p"), a.float("eps"), a.bool("keepdim")))?;
        let d = b.call(op::SUB_TENSOR, &[x1.into(), x2.into()])?;
        let d = b.call(op::ADD_SCALAR, &[d.into(), f(eps.unwrap_or(1e-6))])?;
        let p = p.unwrap_or(2.0);
        if p != 2.0 {
            return Ok(None);
        }
        let sq = b.call(op::MUL_TENSOR, &[d.into(), d.into()])?;
        let s = b.call(op::SUM_DIM_INTLIST, &[sq.into(), Arg::A(Attribute::ints(&[-1])), Arg::A(Attribute::Bool(keep.unwrap_or(false)))])?;
        one(b.call(op::SQRT, &[s.into()]))
    })
    .insert(op::COUNT_NONZERO, |b, op| {
        let x = input(b, op, "self")?;
        let nz = b.call(op::NE_SCALAR, &[x.into(), Arg::A(Attribute::Int(0))])?;
        let r = rank_of(b, x)? as i64;
        let dims: Vec<i64> = (0..r).collect();
        one(b.call(op::SUM_DIM_INTLIST, &[nz.into(), Arg::A(Attribute::ints(&dims)), Arg::A(Attribute::Bool(false)), Arg::A(dialect_prim::kinds::dtype(DType::I64))]))
    })
    .insert(op::COUNT_NONZERO_DIM_INTLIST, |b, op| {
        let x = input(b, op, "self")?;
        let dims = b.with_args(op, |a| a.ints("dim"))?.ok_or("count_nonzero: dims must be constant")?;
        let nz = b.call(op::NE_SCALAR, &[x.into(), Arg::A(Attribute::Int(0))])?;
        one(b.call(op::SUM_DIM_INTLIST, &[nz.into(), Arg::A(Attribute::ints(&dims)), Arg::A(Attribute::Bool(false)), Arg::A(dialect_prim::kinds::dtype(DType::I64))]))
    })
    .insert(op::NANSUM, |b, op| {
        let x = input(b, op, "self")?;
        let (dims, keep) = b.with_args(op, |a| (a.ints("dim"), a.bool("keepdim")))?;
        let clean = without_nan(b, x)?;
        let dims = match dims {
            Some(d) if !d.is_empty() => d,
            _ => (0..rank_of(b, x)? as i64).collect(),
        };
        one(b.call(op::SUM_DIM_INTLIST, &[clean.into(), Arg::A(Attribute::ints(&dims)), Arg::A(Attribute::Bool(keep.unwrap_or(false)))]))
    })
    .insert(op::ISCLOSE, |b, op| {
        let (x, y) = (input(b, op, "self")?, input(b, op, "other")?);
        let (rtol, atol, equal_nan) = b.with_args(op, |a| (a.float("rtol"), a.float("atol"), a.bool("equal_nan")))?;
        let d = b.call(op::SUB_TENSOR, &[x.into(), y.into()])?;
        let ad = b.call(op::ABS, &[d.into()])?;
        let ay = b.call(op::ABS, &[y.into()])?;
        let tol = b.call(op::MUL_SCALAR, &[ay.into(), f(rtol.unwrap_or(1e-5))])?;
        let tol = b.call(op::ADD_SCALAR, &[tol.into(), f(atol.unwrap_or(1e-8))])?;
        let close = b.call(op::LE_TENSOR, &[ad.into(), tol.into()])?;
        let eq = b.call(op::EQ_TENSOR, &[x.into(), y.into()])?;
        let mut r = b.call(op::LOGICAL_OR, &[close.into(), eq.into()])?;
        if equal_nan == Some(true) {
            let nx = b.call(op::ISNAN, &[x.into()])?;
            let ny = b.call(op::ISNAN, &[y.into()])?;
            let both = b.call(op::LOGICAL_AND, &[nx.into(), ny.into()])?;
            r = b.call(op::LOGICAL_OR, &[r.into(), both.into()])?;
        }
        one(Ok(r))
    })
    .insert(op::FLIPLR, |b, op| {
        let x = input(b, op, "self")?;
        one(b.call(op::FLIP, &[x.into(), Arg::A(Attribute::ints(&[1]))]))
    })
    .insert(op::FLIPUD, |b, op| {
        let x = input(b, op, "self")?;
        one(b.call(op::FLIP, &[x.into(), Arg::A(Attribute::ints(&[0]))]))
    })
    .insert(op::TILE, |b, op| {
        let x = input(b, op, "self")?;
        let dims = b.with_args(op, |a| a.ints("dims"))?.ok_or("tile: dims must be constant")?;
        let r = rank_of(b, x)?;
        let mut reps = vec![1i64; r.saturating_sub(dims.len())];
        reps.extend(&dims);
        one(b.call(op::REPEAT, &[x.into(), Arg::A(Attribute::ints(&reps))]))
    })
    .insert(op::PRELU, |b, op| {
        let (x, w) = (input(b, op, "self")?, input(b, op, "weight")?);
        let r = rank_of(b, x)?;
        let w = if r >= 2 && rank_of(b, w)? == 1 {
            let mut shape = vec![-1i64];
            shape.extend(std::iter::repeat_n(1, r - 2));
            b.call(op::VIEW, &[w.into(), Arg::A(Attribute::ints(&shape))])?
        } else {
            w
        };
        let pos = b.call(op::GT_SCALAR, &[x.into(), Arg::A(Attribute::Int(0))])?;
        let neg = b.call(op::MUL_TENSOR, &[x.into(), w.into()])?;
        one(b.call(op::WHERE_SELF, &[pos.into(), x.into(), neg.into()]))
    })
    .insert(op::AMINMAX, |b, op| {
        let x = input(b, op, "self")?;
        let (dim, keep) = b.with_args(op, |a| (a.int("dim"), a.bool("keepdim")))?;
        let keep = Arg::A(Attribute::Bool(keep.unwrap_or(false)));
        let dims = match dim {
            Some(d) => vec![d],
            None => (0..rank_of(b, x)? as i64).collect(),
        };
        let lo = b.call(op::AMIN, &[x.into(), Arg::A(Attribute::ints(&dims)), keep.clone()])?;
        let hi = b.call(op::AMAX, &[x.into(), Arg::A(Attribute::ints(&dims)), keep])?;
        Ok(Some(vec![lo, hi]))
    })
    .insert(op::ZERO, |b, op| {
        let x = input(b, op, "self")?;
        one(zeros_like(b, x))
    })
    .insert(op::FLOAT_POWER_TENSOR_TENSOR, |b, op| {
        let (x, y) = (input(b, op, "self")?, input(b, op, "exponent")?);
        let (x, y) = (cast(b, x, DType::F64)?, cast(b, y, DType::F64)?);
        one(b.call(op::POW_TENSOR_TENSOR, &[x.into(), y.into()]))
    })
    .insert(op::FLOAT_POWER_TENSOR_SCALAR, |b, op| {
        let x = input(b, op, "self")?;
        let e = b.with_args(op, |a| a.float("exponent"))?.ok_or("float_power: the exponent must be constant")?;
        let x = cast(b, x, DType::F64)?;
        one(b.call(op::POW_TENSOR_SCALAR, &[x.into(), f(e)]))
    })
    .insert(op::HANN_WINDOW, |b, op| hann(b, op, true))
    .insert(op::HANN_WINDOW_PERIODIC, |b, op| hann(b, op, false))
    .insert(op::DIFF, |b, op| {
        let x = input(b, op, "self")?;
        let (n, dim) = b.with_args(op, |a| (a.int("n"), a.int("dim")))?;
        if opt_input(b, op, "prepend")?.is_some() || opt_input(b, op, "append")?.is_some() {
            return Ok(None);
        }
        let dim = Attribute::Int(dim.unwrap_or(-1));
        let mut v = x;
        for _ in 0..n.unwrap_or(1) {
            let hi = b.call(op::SLICE_TENSOR, &[v.into(), Arg::A(dim.clone()), Arg::A(Attribute::Int(1)), Arg::A(Attribute::Int(i64::MAX))])?;
            let lo = b.call(op::SLICE_TENSOR, &[v.into(), Arg::A(dim.clone()), Arg::A(Attribute::Int(0)), Arg::A(Attribute::Int(-1))])?;
            v = if b.dtype(x) == Some(DType::Bool) {
                b.call(op::LOGICAL_XOR, &[hi.into(), lo.into()])?
            } else {
                b.call(op::SUB_TENSOR, &[hi.into(), lo.into()])?
            };
        }
        one(Ok(v))
    })
    .insert(op::SQUEEZE_COPY, |b, op| {
        let x = input(b, op, "self")?;
        let s = b.call(op::SQUEEZE, &[x.into()])?;
        one(b.call(op::CLONE, &[s.into()]))
    })
    .insert(op::SQUEEZE_COPY_DIM, |b, op| {
        let x = input(b, op, "self")?;
        let d = b.with_args(op, |a| a.constant("dim"))?.ok_or("squeeze_copy: dim must be constant")?;
        let s = b.call(op::SQUEEZE_DIM, &[x.into(), Arg::A(d)])?;
        one(b.call(op::CLONE, &[s.into()]))
    })
    .insert(op::ISREAL, |b, op| {
        // No complex dtype: every element is real.
        let x = input(b, op, "self")?;
        one(b.call(op::ONES_LIKE, &[x.into(), Arg::A(dialect_prim::kinds::dtype(DType::Bool))]))
    })
    .insert(op::CHANNEL_SHUFFLE, channel_shuffle)
    .insert(op::NATIVE_CHANNEL_SHUFFLE, channel_shuffle)
    .insert(op::PIXEL_SHUFFLE, |b, op| pixel_shuffle(b, op, true))
    .insert(op::PIXEL_UNSHUFFLE, |b, op| pixel_shuffle(b, op, false));
}

pub(super) fn f(v: f64) -> Arg {
    Arg::A(Attribute::float(v))
}

pub(super) fn zeros_like(b: &mut OpBuilder, x: ValueId) -> Result<ValueId, String> {
    b.call(op::ZEROS_LIKE, &[x.into()])
}

fn without_nan(b: &mut OpBuilder, x: ValueId) -> Result<ValueId, String> {
    let n = b.call(op::ISNAN, &[x.into()])?;
    let z = zeros_like(b, x)?;
    b.call(op::WHERE_SELF, &[n.into(), z.into(), x.into()])
}

/// An alias: the same arguments, passed to `target`.
fn rename(b: &mut OpBuilder, op: OpId, target: OpRef) -> DecompResult {
    let args = super::schema_args(b.ctx, b.module(), op)?;
    Ok(Some(b.call_n(target, &args)?))
}

/// Applies a loss's `reduction` (0 none, 1 mean, 2 sum) to `v`.
pub(super) fn reduce(b: &mut OpBuilder, op: OpId, v: ValueId) -> DecompResult {
    match b.with_args(op, |a| a.int("reduction"))?.unwrap_or(1) {
        0 => Ok(Some(vec![v])),
        1 => one(b.call(op::MEAN, &[v.into()])),
        2 => one(b.call(op::SUM, &[v.into()])),
        r => Err(format!("reduction must be 0, 1 or 2, got {r}")),
    }
}

/// `|d| < t ? a·d² : |d| − c` scaled by `s` on the linear side (smooth L1 and Huber), with
/// `d = self − target`; `l1` (beta 0) is plain L1.
fn piecewise_loss(b: &mut OpBuilder, op: OpId, t: f64, a: f64, c: f64, s: f64, l1: bool) -> DecompResult {
    let (x, y) = (input(b, op, "self")?, input(b, op, "target")?);
    let d = b.call(op::SUB_TENSOR, &[x.into(), y.into()])?;
    let ad = b.call(op::ABS, &[d.into()])?;
    if l1 {
        return reduce(b, op, ad);
    }
    let sq = b.call(op::MUL_TENSOR, &[ad.into(), ad.into()])?;
    let quad = b.call(op::MUL_SCALAR, &[sq.into(), f(a)])?;
    let lin = b.call(op::SUB_SCALAR, &[ad.into(), f(c / s)])?;
    let lin = b.call(op::MUL_SCALAR, &[lin.into(), f(s)])?;
    let small = b.call(op::LT_SCALAR, &[ad.into(), f(t)])?;
    let v = b.call(op::WHERE_SELF, &[small.into(), quad.into(), lin.into()])?;
    reduce(b, op, v)
}

/// `−w·(y·max(log x, −100) + (1 − y)·max(log(1 − x), −100))`, PyTorch's clamped log.
fn bce(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let (x, y) = (input(b, op, "self")?, input(b, op, "target")?);
    let w = opt_input(b, op, "weight")?;
    let lx = b.call(op::LOG, &[x.into()])?;
    let lx = b.call(op::CLAMP, &[lx.into(), f(-100.0)])?;
    let one_minus = b.call(op::RSUB_SCALAR, &[x.into(), f(1.0)])?;
    let l1x = b.call(op::LOG, &[one_minus.into()])?;
    let l1x = b.call(op::CLAMP, &[l1x.into(), f(-100.0)])?;
    let ny = b.call(op::RSUB_SCALAR, &[y.into(), f(1.0)])?;
    let a = b.call(op::MUL_TENSOR, &[y.into(), lx.into()])?;
    let c = b.call(op::MUL_TENSOR, &[ny.into(), l1x.into()])?;
    let s = b.call(op::ADD_TENSOR, &[a.into(), c.into()])?;
    let mut v = b.call(op::NEG, &[s.into()])?;
    if let Some(w) = w {
        v = b.call(op::MUL_TENSOR, &[v.into(), w.into()])?;
    }
    reduce(b, op, v)
}

/// `(1 − y)·x + (1 + (pw − 1)·y)·(log1p(exp(−|x|)) + max(−x, 0))`, times `weight`.
fn bce_with_logits(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let (x, y) = (input(b, op, "self")?, input(b, op, "target")?);
    let (w, pw) = (opt_input(b, op, "weight")?, opt_input(b, op, "pos_weight")?);
    let ax = b.call(op::ABS, &[x.into()])?;
    let nax = b.call(op::NEG, &[ax.into()])?;
    let e = b.call(op::EXP, &[nax.into()])?;
    let l = b.call(op::LOG1P, &[e.into()])?;
    let nx = b.call(op::NEG, &[x.into()])?;
    let zero = zeros_like(b, x)?;
    let m = b.call(op::MAXIMUM, &[nx.into(), zero.into()])?;
    let sp = b.call(op::ADD_TENSOR, &[l.into(), m.into()])?;
    let ny = b.call(op::RSUB_SCALAR, &[y.into(), f(1.0)])?;
    let lin = b.call(op::MUL_TENSOR, &[ny.into(), x.into()])?;
    let coef = match pw {
        Some(pw) => {
            let pm1 = b.call(op::SUB_SCALAR, &[pw.into(), f(1.0)])?;
            let t = b.call(op::MUL_TENSOR, &[pm1.into(), y.into()])?;
            Some(b.call(op::ADD_SCALAR, &[t.into(), f(1.0)])?)
        }
        None => None,
    };
    let sp = match coef {
        Some(c) => b.call(op::MUL_TENSOR, &[c.into(), sp.into()])?,
        None => sp,
    };
    let mut v = b.call(op::ADD_TENSOR, &[lin.into(), sp.into()])?;
    if let Some(w) = w {
        v = b.call(op::MUL_TENSOR, &[v.into(), w.into()])?;
    }
    reduce(b, op, v)
}

/// `max(a, b) + log1p(exp(−|a − b|))` (base 2 with `two`).
fn logaddexp(b: &mut OpBuilder, op: OpId, two: bool) -> DecompResult {
    let (x, y) = (input(b, op, "self")?, input(b, op, "other")?);
    let m = b.call(op::MAXIMUM, &[x.into(), y.into()])?;
    let d = b.call(op::SUB_TENSOR, &[x.into(), y.into()])?;
    let ad = b.call(op::ABS, &[d.into()])?;
    let nad = b.call(op::NEG, &[ad.into()])?;
    let t = if two {
        let p = b.call(op::EXP2, &[nad.into()])?;
        let l = b.call(op::LOG1P, &[p.into()])?;
        b.call(op::MUL_SCALAR, &[l.into(), f(std::f64::consts::LOG2_E)])?
    } else {
        let p = b.call(op::EXP, &[nad.into()])?;
        b.call(op::LOG1P, &[p.into()])?
    };
    one(b.call(op::ADD_TENSOR, &[m.into(), t.into()]))
}

fn dot(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "self")?;
    // `dot` names its second argument `tensor`, `vdot` names it `other`.
    let y = b.with_args(op, |a| a.value_at(1))?.ok_or("dot: the second argument must be a value")?;
    if rank_of(b, x)? != 1 || rank_of(b, y)? != 1 {
        return Err("dot: both operands must be 1-D".into());
    }
    if b.dtype(x) == Some(DType::Bool) {
        return Err("dot is not implemented for bool".into());
    }
    let p = b.call(op::MUL_TENSOR, &[x.into(), y.into()])?;
    // The product keeps its dtype (integer sums would widen to int64).
    let d = b.dtype(p).ok_or("dot: unknown dtype")?;
    one(b.call(op::SUM, &[p.into(), Arg::A(dialect_prim::kinds::dtype(d))]))
}

/// `glu(x, dim)`: the first half of `x` along `dim` times the sigmoid of the second.
fn glu(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "self")?;
    let dim = b.with_args(op, |a| a.int("dim"))?.unwrap_or(-1);
    let shape = b.shape(x).ok_or("glu: the shape is unknown")?;
    let r = shape.len() as i64;
    let d = if dim < 0 { dim + r } else { dim };
    let n = match shape.get(d as usize) {
        Some(ir::Dim::Static(n)) if n % 2 == 0 => *n,
        _ => return Err("glu: the halved dimension must be static and even".into()),
    };
    let first = b.call(op::SLICE_TENSOR, &[x.into(), Arg::A(Attribute::Int(d)), Arg::A(Attribute::Int(0)), Arg::A(Attribute::Int(n / 2))])?;
    let second = b.call(op::SLICE_TENSOR, &[x.into(), Arg::A(Attribute::Int(d)), Arg::A(Attribute::Int(n / 2)), Arg::A(Attribute::Int(n))])?;
    let s = b.call(op::SIGMOID, &[second.into()])?;
    one(b.call(op::MUL_TENSOR, &[first.into(), s.into()]))
}

/// `hann_window(n)`: `sin²(π k / N)` for `k < n`, `N = n` when periodic, `n − 1` otherwise.
fn hann(b: &mut OpBuilder, op: OpId, default_overload: bool) -> DecompResult {
    let (n, periodic, dtype) = b.with_args(op, |a| (a.int("window_length"), a.bool("periodic"), a.constant("dtype")))?;
    let n = n.ok_or("hann_window: the length must be constant")?;
    let periodic = if default_overload { true } else { periodic.unwrap_or(true) };
    let dtype = dtype.as_ref().and_then(dialect_prim::kinds::as_dtype).unwrap_or(DType::F32);
    if n <= 1 {
        return one(b.call(op::ONES, &[Arg::A(Attribute::ints(&[n])), Arg::A(dialect_prim::kinds::dtype(dtype))]));
    }
    let den = if periodic { n } else { n - 1 } as f64;
    let k = b.call(op::ARANGE, &[Arg::A(Attribute::Int(n)), Arg::A(dialect_prim::kinds::dtype(DType::F64))])?;
    let a = b.call(op::MUL_SCALAR, &[k.into(), f(std::f64::consts::PI / den)])?;
    let s = b.call(op::SIN, &[a.into()])?;
    let s2 = b.call(op::MUL_TENSOR, &[s.into(), s.into()])?;
    one(cast(b, s2, dtype))
}

/// Static sizes of `x`, or an error naming `what`.
pub(super) fn static_shape(b: &OpBuilder, x: ValueId, what: &str) -> Result<Vec<i64>, String> {
    b.shape(x)
        .ok_or(format!("{what}: the shape is unknown"))?
        .iter()
        .map(|d| match d {
            ir::Dim::Static(n) => Ok(*n),
            _ => Err(format!("{what}: the shape must be static")),
        })
        .collect()
}

/// `channel_shuffle(x, groups)`: `[n, g, c/g, …]`, the two group axes swapped, back to `[n, c, …]`.
fn channel_shuffle(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "self")?;
    let g = b.with_args(op, |a| a.int("groups"))?.ok_or("channel_shuffle: groups must be constant")?;
    let s = static_shape(b, x, "channel_shuffle")?;
    if s.len() < 2 || g <= 0 || s[1] % g != 0 {
        return Err("channel_shuffle: the channels must divide into the groups".into());
    }
    let mut split = vec![s[0], g, s[1] / g];
    split.extend(&s[2..]);
    let c = b.call(op::CLONE, &[x.into(), Arg::A(Attribute::Int(0))])?;
    let v = b.call(op::VIEW, &[c.into(), Arg::A(Attribute::ints(&split))])?;
    let mut perm: Vec<i64> = (0..split.len() as i64).collect();
    perm.swap(1, 2);
    let p = b.call(op::PERMUTE, &[v.into(), Arg::A(Attribute::ints(&perm))])?;
    let p = b.call(op::CLONE, &[p.into(), Arg::A(Attribute::Int(0))])?;
    one(b.call(op::VIEW, &[p.into(), Arg::A(Attribute::ints(&s))]))
}

/// `pixel_shuffle(x, r)` (`[.., c·r², h, w]` → `[.., c, h·r, w·r]`) and its inverse.
fn pixel_shuffle(b: &mut OpBuilder, op: OpId, shuffle: bool) -> DecompResult {
    let x = input(b, op, "self")?;
    let r = b.with_args(op, |a| a.int(if shuffle { "upscale_factor" } else { "downscale_factor" }))?.ok_or("pixel_shuffle: the factor must be constant")?;
    let s = static_shape(b, x, "pixel_shuffle")?;
    if s.len() < 3 || r <= 0 {
        return Err("pixel_shuffle: needs at least 3 dimensions and a positive factor".into());
    }
    let k = s.len() - 3;
    let (lead, c, h, w) = (&s[..k], s[k], s[k + 1], s[k + 2]);
    let (split, perm_tail, out): (Vec<i64>, [i64; 5], Vec<i64>) = if shuffle {
        if c % (r * r) != 0 {
            return Err("pixel_shuffle: the channels must divide by the factor squared".into());
        }
        ([lead, &[c / (r * r), r, r, h, w]].concat(), [0, 3, 1, 4, 2], [lead, &[c / (r * r), h * r, w * r]].concat())
    } else {
        if h % r != 0 || w % r != 0 {
            return Err("pixel_unshuffle: the height and width must divide by the factor".into());
        }
        ([lead, &[c, h / r, r, w / r, r]].concat(), [0, 2, 4, 1, 3], [lead, &[c * r * r, h / r, w / r]].concat())
    };
    let mut perm: Vec<i64> = (0..k as i64).collect();
    perm.extend(perm_tail.iter().map(|p| p + k as i64));
    let c0 = b.call(op::CLONE, &[x.into(), Arg::A(Attribute::Int(0))])?;
    let v = b.call(op::VIEW, &[c0.into(), Arg::A(Attribute::ints(&split))])?;
    let p = b.call(op::PERMUTE, &[v.into(), Arg::A(Attribute::ints(&perm))])?;
    let p = b.call(op::CLONE, &[p.into(), Arg::A(Attribute::Int(0))])?;
    one(b.call(op::VIEW, &[p.into(), Arg::A(Attribute::ints(&out))]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An alias and its target take the same arguments, in the same order and of the same types.
    #[test]
    fn aliases_take_their_targets_arguments() {
        let schema = |n: OpRef| dialect_aten::schemas().iter().find(|s| n.is(&s.op_name())).unwrap_or_else(|| panic!("{n} is declared"));
        for &(alias, target) in ALIASES {
            let (a, t) = (schema(alias), schema(target));
            let ta: Vec<_> = a.args.iter().map(|x| &x.ty).collect();
            let tt: Vec<_> = t.args.iter().map(|x| &x.ty).collect();
            assert_eq!(ta, tt, "{alias} and {target}");
            assert_eq!(a.returns.len(), t.returns.len(), "{alias} and {target}");
        }
    }
}
