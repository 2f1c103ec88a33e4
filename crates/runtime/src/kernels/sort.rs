//! Sorting kernels: `sort` (and `.stable`), `argsort` (and `.stable`), `msort` and `topk`.
//!
//! Ordering follows PyTorch: NaN is greater than every number (last in ascending order,
//! first in descending order), and `-0.0 == 0.0`. Sorting is always stable, so equal
//! elements keep their input order (descending sorts too); `topk` is a stable selection,
//! returned sorted whatever `sorted` says. PyTorch's unstable CPU paths may order ties
//! differently; values always agree, indices of equal values may not.

use std::cmp::Ordering;

use super::linalg::outs;
use super::{Args, KernelRegistry};
use crate::dispatch_dtype;
use crate::tensor::shape::normalize_dim;
use crate::tensor::{KernelError, Result, Tensor};
use crate::value::IValue;

/// Total order with NaN greatest (NaNs equal to each other).
#[inline(always)]
#[allow(clippy::eq_op)]
fn cmp_nan_last<T: PartialOrd>(a: &T, b: &T) -> Ordering {
    match a.partial_cmp(b) {
        Some(o) => o,
        None => {
            let (an, bn) = (a != a, b != b);
            match (an, bn) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => Ordering::Equal,
            }
        }
    }
}

/// Sorts every lane along `dim`, keeping the first `k` (all when `None`) of each lane.
/// Returns (values, int64 indices), both with `dim` of size `k`.
fn sort_lanes(op: &'static str, x: &Tensor, dim: i64, descending: bool, k: Option<usize>) -> Result<(Tensor, Tensor)> {
    let d = normalize_dim(op, dim, x.dim())?;
    let sizes: Vec<usize> = if x.dim() == 0 { vec![1] } else { x.sizes().to_vec() };
    let n = sizes[d];
    let keep = k.unwrap_or(n);
    if keep > n {
        return Err(KernelError::new(op, format!("k ({keep}) is out of range for dimension {d} of size {n}")));
    }
    let outer: usize = sizes[..d].iter().product();
    let inner: usize = sizes[d + 1..].iter().product();
    let mut out_sizes = x.sizes().to_vec();
    if x.dim() > 0 {
        out_sizes[d] = keep;
    }
    let mut indices = vec![0i64; outer * keep * inner];
    let values = dispatch_dtype!(x.dtype(), T => {
        let src = x.to_vec::<T>()?;
        let mut vals: Vec<T> = vec![T::default(); outer * keep * inner];
        let mut lane: Vec<(T, usize)> = Vec::with_capacity(n);
        for o in 0..outer {
            for i in 0..inner {
                lane.clear();
                lane.extend((0..n).map(|j| (src[(o * n + j) * inner + i], j)));
                if descending {
                    lane.sort_by(|a, b| cmp_nan_last(&b.0, &a.0));
                } else {
                    lane.sort_by(|a, b| cmp_nan_last(&a.0, &b.0));
                }
                for (j, &(v, ix)) in lane.iter().take(keep).enumerate() {
                    let p = (o * keep + j) * inner + i;
                    vals[p] = v;
                    indices[p] = ix as i64;
                }
            }
        }
        Tensor::from_vec(vals, &out_sizes)?
    });
    Ok((values, Tensor::from_vec(indices, &out_sizes)?))
}

fn sort(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.sort", args, 1)?;
    let (v, i) = sort_lanes(a.op, a.tensor(0)?, a.opt_int(1)?.unwrap_or(-1), a.opt_bool(2)?.unwrap_or(false), None)?;
    Ok(outs([v, i]))
}

/// `sort.stable(self, *, stable, dim=-1, descending=False)`.
fn sort_stable(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.sort.stable", args, 1)?;
    let (v, i) = sort_lanes(a.op, a.tensor(0)?, a.opt_int(2)?.unwrap_or(-1), a.opt_bool(3)?.unwrap_or(false), None)?;
    Ok(outs([v, i]))
}

fn argsort(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.argsort", args, 1)?;
    let (_, i) = sort_lanes(a.op, a.tensor(0)?, a.opt_int(1)?.unwrap_or(-1), a.opt_bool(2)?.unwrap_or(false), None)?;
    Ok(outs([i]))
}

/// `argsort.stable(self, *, stable, dim=-1, descending=False)`.
fn argsort_stable(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.argsort.stable", args, 1)?;
    let (_, i) = sort_lanes(a.op, a.tensor(0)?, a.opt_int(2)?.unwrap_or(-1), a.opt_bool(3)?.unwrap_or(false), None)?;
    Ok(outs([i]))
}

fn msort(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.msort", args, 1)?;
    let (v, _) = sort_lanes(a.op, a.tensor(0)?, 0, false, None)?;
    Ok(outs([v]))
}

fn topk(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = "aten.topk";
    let a = Args::new(OP, args, 2)?;
    let x = a.tensor(0)?;
    let k = a.int(1)?;
    let k = usize::try_from(k).map_err(|_| KernelError::new(OP, format!("k ({k}) must be non-negative")))?;
    let largest = a.opt_bool(3)?.unwrap_or(true);
    let (v, i) = sort_lanes(OP, x, a.opt_int(2)?.unwrap_or(-1), largest, Some(k))?;
    Ok(outs([v, i]))
}

pub fn register(r: &mut KernelRegistry) {
    r.register("aten.sort", sort);
    r.register("aten.sort.stable", sort_stable);
    r.register("aten.argsort", argsort);
    r.register("aten.argsort.stable", argsort_stable);
    r.register("aten.msort", msort);
    r.register("aten.topk", topk);
}
