//! The decompositions of `quantile` and `nanquantile` (a tensor of quantiles or one float, over
//! one dimension or the flattened input, every interpolation mode): the reduced dimension is
//! moved last and sorted (NaNs sort last); each quantile's fractional rank is `q·(n−1)`, `n`
//! the row's length (computed in f64, as PyTorch does; for `quantile`, the last index when the row has a NaN, so the result is
//! NaN) or its count of non-NaN values (for `nanquantile`, at least 0); the rank is rounded per
//! the interpolation mode and the values at its floor and ceiling are `gather`ed and `lerp`ed.

use super::composite::static_shape;
use super::decompose::{DecompResult, DecompositionTable, cast, input, one};
use super::rewrite::{Arg, OpBuilder};
use super::stacking::{int, ints};
use super::tensor_ops::permute;
use dialect_aten::infer::norm_dim;
use dialect_aten::op;
use ir::{Attribute, DType, OpId, ValueId};

/// Adds the quantile decompositions to `t`.
pub(super) fn add(t: &mut DecompositionTable) {
    t.insert(op::QUANTILE, |b, op| quantile(b, op, false))
        .insert(op::QUANTILE_SCALAR, |b, op| quantile(b, op, false))
        .insert(op::NANQUANTILE, |b, op| quantile(b, op, true))
        .insert(op::NANQUANTILE_SCALAR, |b, op| quantile(b, op, true));
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Linear,
    Lower,
    Higher,
    Midpoint,
    Nearest,
}

fn quantile(b: &mut OpBuilder, op: OpId, ignore_nan: bool) -> DecompResult {
    let what = if ignore_nan { "nanquantile()" } else { "quantile()" };
    let x = input(b, op, "self")?;
    let dt = b.dtype(x).ok_or(format!("{what}: the input's dtype is unknown"))?;
    if !matches!(dt, DType::F32 | DType::F64) {
        return Err(format!("{what} input tensor must be either float or double dtype"));
    }
    let (dim, keepdim, interp) = b.with_args(op, |a| {
        (
            if a.is_none("dim") { None } else { Some(a.int("dim")) },
            a.bool("keepdim").unwrap_or(false),
            a.constant("interpolation").and_then(|s| s.as_str().map(String::from)),
        )
    })?;
    let mode = match interp.as_deref().unwrap_or("linear") {
        "linear" => Mode::Linear,
        "lower" => Mode::Lower,
        "higher" => Mode::Higher,
        "midpoint" => Mode::Midpoint,
        "nearest" => Mode::Nearest,
        other => {
            return Err(format!("{what} interpolation must be one of linear, lower, higher, midpoint or nearest. Got {other}"));
        }
    };
    // The quantiles: a tensor of rank 0 or 1 of the input's dtype, or one float.
    let q_tensor = b.with_args(op, |a| a.value("q").filter(|&v| a.m.value_type(v).as_tensor().is_some()))?;
    let q: Result<ValueId, f64> = match q_tensor {
        Some(q) => {
            let qr = b.rank(q).ok_or(format!("{what}: the rank of q is unknown"))?;
            if qr > 1 {
                return Err(format!("{what} q must be a scalar or 1D tensor"));
            }
            if b.dtype(q) != Some(dt) {
                return Err(format!("{what} q tensor must be same dtype as the input tensor"));
            }
            Ok(q)
        }
        None => {
            let v = b.with_args(op, |a| a.float("q"))?.ok_or(format!("{what}: q must be constant"))?;
            if !(0.0..=1.0).contains(&v) {
                return Err(format!("{what} q must be in the range [0, 1] but got {v}"));
            }
            Err(v)
        }
    };
    let q_dim = matches!(q, Ok(v) if b.rank(v) == Some(1));
    let shape = static_shape(b, x, what)?;
    if shape.iter().product::<i64>() == 0 {
        return Err(format!("{what} input tensor must be non-empty"));
    }
    let rank = shape.len();
    // The rows to take quantiles of, as the last dimension: `[*rest, n]`.
    let (rows, d) = match dim {
        None => (b.call(op::RESHAPE, &[x.into(), ints(&[-1])])?, None),
        Some(d) => {
            let d = d.ok_or(format!("{what}: dim must be constant"))?;
            let d = norm_dim(d, rank.max(1)).ok_or(format!("{what}: dimension {d} is out of range for rank {rank}"))?;
            if rank == 0 {
                (b.call(op::RESHAPE, &[x.into(), ints(&[1])])?, Some(0))
            } else if d + 1 == rank {
                (x, Some(d))
            } else {
                let mut perm: Vec<i64> = (0..rank as i64).filter(|&i| i != d as i64).collect();
                perm.push(d as i64);
                (permute(b, x, &perm)?, Some(d))
            }
        }
    };
    let n = *static_shape(b, rows, what)?.last().unwrap_or(&1);
    let sorted = b.call_n(op::SORT, &[rows.into(), int(-1)])?[0];
    let nan = b.call(op::ISNAN, &[sorted.into()])?;
    let last = (n - 1) as f64;
    // The fractional ranks, `[*rest, Q]` (`[*rest, 1]` for a single quantile).
    // PyTorch computes the ranks in f64 (a float q as the input's dtype first).
    let q = match q {
        Ok(q) => Ok(cast(b, q, DType::F64)?),
        Err(v) if dt == DType::F32 => Err(v as f32 as f64),
        Err(v) => Err(v),
    };
    let ranks = if ignore_nan {
        let valid = b.call(op::LOGICAL_NOT, &[nan.into()])?;
        let count = b.call(op::SUM_DIM_INTLIST, &[valid.into(), ints(&[-1]), Arg::A(Attribute::Bool(true))])?;
        let count = cast(b, count, DType::F64)?;
        let span = b.call(op::SUB_SCALAR, &[count.into(), Arg::A(Attribute::float(1.0))])?;
        let r = match q {
            Ok(q) => b.call(op::MUL_TENSOR, &[span.into(), q.into()])?,
            Err(v) => b.call(op::MUL_SCALAR, &[span.into(), Arg::A(Attribute::float(v))])?,
        };
        b.call(op::CLAMP, &[r.into(), Arg::A(Attribute::float(0.0))])?
    } else {
        let any = b.call(op::ANY_DIM, &[nan.into(), int(-1), Arg::A(Attribute::Bool(true))])?;
        let base = match q {
            Ok(q) => b.call(op::MUL_SCALAR, &[q.into(), Arg::A(Attribute::float(last))])?,
            Err(v) => b.call(op::FULL_LIKE, &[any.into(), Arg::A(Attribute::float(v * last)), Arg::A(dialect_prim::kinds::dtype(DType::F64))])?,
        };
        b.call(op::WHERE_SCALARSELF, &[any.into(), Arg::A(Attribute::float(last)), base.into()])?
    };
    let ranks = match mode {
        Mode::Lower => b.call(op::FLOOR, &[ranks.into()])?,
        Mode::Higher => b.call(op::CEIL, &[ranks.into()])?,
        Mode::Nearest => b.call(op::ROUND, &[ranks.into()])?,
        Mode::Linear | Mode::Midpoint => ranks,
    };
    let below = cast(b, ranks, DType::I64)?;
    let mut v = b.call(op::GATHER, &[sorted.into(), int(-1), below.into()])?;
    if matches!(mode, Mode::Linear | Mode::Midpoint) {
        let up = b.call(op::CEIL, &[ranks.into()])?;
        let above = cast(b, up, DType::I64)?;
        let va = b.call(op::GATHER, &[sorted.into(), int(-1), above.into()])?;
        let w = if mode == Mode::Midpoint {
            b.call(op::FULL_LIKE, &[ranks.into(), Arg::A(Attribute::float(0.5))])?
        } else {
            let bf = cast(b, below, DType::F64)?;
            b.call(op::SUB_TENSOR, &[ranks.into(), bf.into()])?
        };
        let w = cast(b, w, dt)?;
        v = b.call(op::LERP_TENSOR, &[v.into(), va.into(), w.into()])?;
    }
    // `[*rest, Q]` → `[Q, *rest]`, or `[*rest]` for a single quantile.
    let vr = b.rank(v).ok_or(format!("{what}: the result's rank is unknown"))?;
    if q_dim {
        if vr > 1 {
            let mut perm = vec![vr as i64 - 1];
            perm.extend(0..vr as i64 - 1);
            v = permute(b, v, &perm)?;
        }
    } else {
        v = b.call(op::SQUEEZE_DIM, &[v.into(), int(-1)])?;
    }
    if keepdim {
        let lead = q_dim as i64;
        v = match d {
            None => {
                let mut s: Vec<i64> = static_shape(b, v, what)?[..lead as usize].to_vec();
                s.extend(std::iter::repeat_n(1, rank));
                b.call(op::RESHAPE, &[v.into(), ints(&s)])?
            }
            Some(_) if rank == 0 => v,
            Some(d) => b.call(op::UNSQUEEZE, &[v.into(), int(lead + d as i64)])?,
        };
    }
    one(Ok(v))
}
