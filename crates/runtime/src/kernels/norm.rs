//! Normalization kernels: layer norm, batch norm (training statistics, running-stat updates
//! and inference), group norm and RMS norm, with their core (`native_*`,
//! `_native_batch_norm_legit*`) and non-core entry points.
//!
//! Layer norm computes in the input's precision, as PyTorch does: its statistics over blocks
//! of 256 elements summed in that precision (the blocks' sums in `f64`), its outputs in it.
//! The other norms accumulate their statistics in `f64` whatever the input's float dtype and
//! compute their outputs in `f64`, rounded once. Outputs and the returned statistics have the
//! input's dtype. Variances are biased for normalization; the running variance is updated
//! with the unbiased one, as PyTorch does.

use dialect_aten::op;
use ir::DType;

use super::linalg::{Real, compute_dtype, outs, with_real};
use super::{Args, KernelRegistry};
use crate::tensor::{KernelError, Result, Tensor};
use crate::value::IValue;

/// The values of a float tensor as `f64`, row-major; an error naming the op otherwise.
fn values(op: &'static str, what: &str, t: &Tensor) -> Result<Vec<f64>> {
    compute_dtype(op, t.dtype()).map_err(|_| {
        KernelError::new(op, format!("{what} must be a floating-point tensor, got {}", t.dtype().torch_name()))
    })?;
    t.to_dtype(DType::F64)?.to_vec::<f64>()
}

/// An optional per-feature parameter of `n` elements.
fn param(op: &'static str, what: &str, t: Option<&Tensor>, n: usize) -> Result<Option<Vec<f64>>> {
    let Some(t) = t else { return Ok(None) };
    if t.numel() != n {
        return Err(KernelError::new(op, format!("{what} of shape {:?} should have {n} elements", t.sizes())));
    }
    values(op, what, t).map(Some)
}

/// A tensor of `dt` from `f64` values.
fn make(dt: DType, data: Vec<f64>, sizes: &[usize]) -> Result<Tensor> {
    Tensor::from_vec(data, sizes)?.cast_to(dt)
}

/// The input as a contiguous tensor of its compute type (`f32` or `f64`).
fn float_input(op: &'static str, x: &Tensor) -> Result<Tensor> {
    let ct = compute_dtype(op, x.dtype()).map_err(|_| {
        KernelError::new(op, format!("input must be a floating-point tensor, got {}", x.dtype().torch_name()))
    })?;
    x.cast_to(ct)?.contiguous()
}

/// Mean and biased variance over several slices taken together, two-pass in `f64`.
fn moments_of<T: Real>(parts: &[&[T]]) -> (f64, f64) {
    let n: usize = parts.iter().map(|p| p.len()).sum();
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let mean = parts.iter().flat_map(|p| p.iter()).map(|v| v.to_f64()).sum::<f64>() / n as f64;
    let var =
        parts.iter().flat_map(|p| p.iter()).map(|v| (v.to_f64() - mean) * (v.to_f64() - mean)).sum::<f64>() / n as f64;
    (mean, var)
}

/// Mean and biased variance of one row, two-pass, each sum over [`lane_sum`]'s blocks in the
/// row's own precision (as PyTorch computes them for `f32`), the blocks' sums added in `f64`.
/// The mean sums the differences from the row's first element, so a mean far from zero
/// beside a small spread costs no more rounding than the spread itself.
#[inline(always)]
fn row_moments<T: Real>(row: &[T]) -> (f64, f64) {
    let Some(&x0) = row.first() else {
        return (f64::NAN, f64::NAN);
    };
    let n = row.len() as f64;
    let mean = x0.to_f64() + lane_sum(row, |v| v - x0) / n;
    let m = T::of(mean);
    let var = lane_sum(row, |v| (v - m) * (v - m)) / n;
    (mean, var)
}

/// [`row_moments`], with AVX-512F intrinsics for an `f32` row when the CPU has them: the
/// same operations in the same order, so the same bits. Compiled from the generic form, the
/// sums' loop runs on 4-lane vectors (four times the instructions), which made the layer
/// norms of bench_transformer cost about 0.6 ns per element.
#[inline(always)]
fn moments<T: Real>(row: &[T]) -> (f64, f64) {
    #[cfg(target_arch = "x86_64")]
    if T::DTYPE == DType::F32 && ::kernels::Isa::Avx512.available() {
        // SAFETY: `T` is `f32` (its dtype says so), so the row is a row of `f32`; the CPU has
        // AVX-512F (checked just above).
        return unsafe { x86::row_moments_f32(std::slice::from_raw_parts(row.as_ptr().cast::<f32>(), row.len())) };
    }
    row_moments(row)
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{BLOCK, LANES};

    /// `super::row_moments` of an `f32` row.
    #[target_feature(enable = "avx512f")]
    pub(super) fn row_moments_f32(row: &[f32]) -> (f64, f64) {
        let Some(&x0) = row.first() else {
            return (f64::NAN, f64::NAN);
        };
        let n = row.len() as f64;
        let x0v = _mm512_set1_ps(x0);
        let mean = x0 as f64 + lane_sum(row, |v| _mm512_sub_ps(v, x0v), |v| v - x0) / n;
        let m = mean as f32;
        let mv = _mm512_set1_ps(m);
        let var = lane_sum(
            row,
            |v| {
                let d = _mm512_sub_ps(v, mv);
                _mm512_mul_ps(d, d)
            },
            |v| (v - m) * (v - m),
        ) / n;
        (mean, var)
    }

    /// `super::lane_sum` of an `f32` row: `f` of 16 lanes, `f1` of one element (the tail).
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn lane_sum(row: &[f32], f: impl Fn(__m512) -> __m512, f1: impl Fn(f32) -> f32) -> f64 {
        const _: () = assert!(LANES == 16);
        let mut total = 0f64;
        for block in row.chunks(BLOCK) {
            let mut acc = _mm512_setzero_ps();
            let mut body = block.chunks_exact(LANES);
            for c in &mut body {
                // SAFETY: `c` holds 16 elements.
                acc = _mm512_add_ps(acc, f(unsafe { _mm512_loadu_ps(c.as_ptr()) }));
            }
            let tail = body.remainder().iter().fold(0f32, |s, &v| s + f1(v));
            let mut lanes = [0f32; LANES];
            // SAFETY: `lanes` holds 16 elements.
            unsafe { _mm512_storeu_ps(lanes.as_mut_ptr(), acc) };
            total += (crate::kernels::wide::fold_lanes(lanes) + tail) as f64;
        }
        total
    }
}

/// Partial sums of [`lane_sum`]: one AVX-512 vector of `f32`, so consecutive additions into
/// it come from different loads and the row's 16 vectors (`d = 256`) need no reduction inside
/// the loop.
const LANES: usize = 16;

/// Elements per block of [`lane_sum`]: 16 additions per partial sum, so each block's sum in
/// `f32` is within 16 roundings of exact however long the row.
const BLOCK: usize = LANES * 16;

/// `Σ f(x)` over blocks of [`BLOCK`] elements, each summed in `T` over [`LANES`] interleaved
/// partial sums combined pairwise, the blocks' sums added in `f64`.
#[inline(always)]
fn lane_sum<T: Real>(row: &[T], f: impl Fn(T) -> T) -> f64 {
    let mut total = 0f64;
    for block in row.chunks(BLOCK) {
        let mut acc = [T::ZERO; LANES];
        let mut body = block.chunks_exact(LANES);
        for c in &mut body {
            for (a, &v) in acc.iter_mut().zip(c) {
                *a += f(v);
            }
        }
        let tail = body.remainder().iter().fold(T::ZERO, |s, &v| s + f(v));
        total += (super::wide::fold_lanes(acc) + tail).to_f64();
    }
    total
}

/// `y = x · scale + shift` elementwise, in `f64` and rounded once.
#[inline(always)]
fn affine<T: Real>(x: &[T], y: &mut [T], scale: f64, shift: f64) {
    for (o, &v) in y.iter_mut().zip(x) {
        *o = T::of(v.to_f64() * scale + shift);
    }
}

/// Layer norm of `outer` rows of `x` into `y`: statistics as [`row_moments`] computes them,
/// `rstd` in `f64`, then `y = (x - mean) · rstd · w + b` in `T`; each row's mean and `rstd`
/// are written to `means` and `rstds` when given (one element per row). The parameters may
/// have any float type (they are rounded to `T`). With more than one thread and at least
/// [`LAYER_NORM_PARALLEL_MIN`] elements the rows are split across the intra-op team, whole
/// rows per task, so the results do not depend on the split.
#[allow(clippy::too_many_arguments)]
pub(crate) fn layer_norm_rows<T: Real, P: Real, S: Real>(
    x: &[T],
    y: &mut [T],
    outer: usize,
    w: Option<&[P]>,
    b: Option<&[P]>,
    eps: f64,
    means: Option<&mut [S]>,
    rstds: Option<&mut [S]>,
) {
    let inner = x.len().checked_div(outer).unwrap_or(0);
    let outer = outer.min(y.len().checked_div(inner).unwrap_or(outer));
    let outer = means.as_deref().map_or(outer, |m| outer.min(m.len()));
    let outer = rstds.as_deref().map_or(outer, |r| outer.min(r.len()));
    let threads = crate::parallel::threads();
    if threads <= 1 || outer < 2 || outer * inner < LAYER_NORM_PARALLEL_MIN {
        layer_norm_range(x, y, inner, 0..outer, w, b, eps, means, rstds);
        return;
    }
    let tasks = (threads * 4).min(outer);
    let dst = crate::parallel::SharedOut(y.as_mut_ptr());
    let mean_dst = means.map(|m| crate::parallel::SharedOut(m.as_mut_ptr()));
    let rstd_dst = rstds.map(|r| crate::parallel::SharedOut(r.as_mut_ptr()));
    crate::parallel::for_each(tasks, |t| {
        let (r0, r1) = (outer * t / tasks, outer * (t + 1) / tasks);
        // SAFETY: `y` holds at least `outer·inner` elements and `means`/`rstds` at least `outer`
        // (`outer` was bounded by their lengths above); the tasks' row ranges are disjoint.
        let (o, m, r) = unsafe {
            (
                std::slice::from_raw_parts_mut(dst.get().add(r0 * inner), (r1 - r0) * inner),
                mean_dst.map(|p| std::slice::from_raw_parts_mut(p.get().add(r0), r1 - r0)),
                rstd_dst.map(|p| std::slice::from_raw_parts_mut(p.get().add(r0), r1 - r0)),
            )
        };
        layer_norm_range(&x[r0 * inner..r1 * inner], o, inner, 0..r1 - r0, w, b, eps, m, r);
    });
}

/// Layer norms of at least this many elements split their rows across threads (as softmax's
/// rows do).
const LAYER_NORM_PARALLEL_MIN: usize = 1 << 14;

/// The rows `rows` of [`layer_norm_rows`] (indices into `x`, `y`, `means` and `rstds`), on one
/// thread, compiled for the widest vectors.
#[allow(clippy::too_many_arguments)]
fn layer_norm_range<T: Real, P: Real, S: Real>(
    x: &[T],
    y: &mut [T],
    inner: usize,
    rows: std::ops::Range<usize>,
    w: Option<&[P]>,
    b: Option<&[P]>,
    eps: f64,
    mut means: Option<&mut [S]>,
    mut rstds: Option<&mut [S]>,
) {
    super::wide::widest(
        #[inline(always)]
        || {
            for r in rows {
                let row = &x[r * inner..(r + 1) * inner];
                let (mean, var) = moments(row);
                let rstd = 1.0 / (var + eps).sqrt();
                let (m, rs) = (T::of(mean), T::of(rstd));
                let out = &mut y[r * inner..(r + 1) * inner];
                match (w, b) {
                    (None, None) => {
                        for (o, &v) in out.iter_mut().zip(row) {
                            *o = (v - m) * rs;
                        }
                    }
                    (Some(w), Some(b)) => {
                        for (((&v, o), &wj), &bj) in row.iter().zip(out.iter_mut()).zip(w).zip(b) {
                            *o = (v - m) * rs * T::of(wj.to_f64()) + T::of(bj.to_f64());
                        }
                    }
                    _ => {
                        for (j, (&v, o)) in row.iter().zip(out.iter_mut()).enumerate() {
                            let z = (v - m) * rs * w.map_or(T::ONE, |w| T::of(w[j].to_f64()));
                            *o = z + b.map_or(T::ZERO, |b| T::of(b[j].to_f64()));
                        }
                    }
                }
                if let Some(ms) = means.as_deref_mut() {
                    ms[r] = S::of(mean);
                }
                if let Some(rss) = rstds.as_deref_mut() {
                    rss[r] = S::of(rstd);
                }
            }
        },
    )
}

/// Batch norm's affine step over `[n, c, inner]` contiguous `x` into `y`, with each channel's
/// mean and inverse std given: `y = x · scale + shift` in `f64`, rounded once.
#[allow(clippy::too_many_arguments)]
pub(crate) fn batch_norm_rows<T: Real, P: Real>(
    x: &[T],
    y: &mut [T],
    n: usize,
    c: usize,
    w: Option<&[P]>,
    b: Option<&[P]>,
    mean: impl Fn(usize) -> f64,
    invstd: impl Fn(usize) -> f64,
) {
    super::wide::widest(
        #[inline(always)]
        || {
            let inner = x.len().checked_div(n * c).unwrap_or(0);
            for i in 0..n {
                for ch in 0..c {
                    let scale = invstd(ch) * w.map_or(1.0, |w| w[ch].to_f64());
                    let shift = b.map_or(0.0, |b| b[ch].to_f64()) - mean(ch) * scale;
                    let s = (i * c + ch) * inner;
                    affine(&x[s..s + inner], &mut y[s..s + inner], scale, shift);
                }
            }
        },
    )
}

/// `native_layer_norm`: normalizes over the trailing `normalized_shape` dims.
fn layer_norm_impl(op: &'static str, a: &Args<'_>, eps_at: usize) -> Result<(Tensor, Tensor, Tensor)> {
    let x = a.tensor(0)?;
    let shape = a.sizes(1)?;
    let eps = a.opt_float(eps_at)?.unwrap_or(1e-5);
    let nd = shape.len();
    if nd == 0 || nd > x.dim() || x.sizes()[x.dim() - nd..] != shape[..] {
        return Err(KernelError::new(
            op,
            format!("normalized_shape {shape:?} does not match the trailing dims of input {:?}", x.sizes()),
        ));
    }
    let inner: usize = shape.iter().product();
    let axis = x.dim() - nd;
    let outer: usize = x.sizes()[..axis].iter().product();
    let w = param(op, "weight", a.opt_tensor(2)?, inner)?;
    let b = param(op, "bias", a.opt_tensor(3)?, inner)?;
    let xc = float_input(op, x)?;
    let mut means = vec![0f64; outer];
    let mut rstds = vec![0f64; outer];
    let y = with_real!(op, x.dtype(), T => {
        let xv = xc.as_slice::<T>()?;
        Tensor::build::<T>(x.sizes(), |y| {
            layer_norm_rows(xv, y, outer, w.as_deref(), b.as_deref(), eps, Some(&mut means), Some(&mut rstds));
            Ok(())
        })?
    });
    let mut stat_sizes = x.sizes()[..axis].to_vec();
    stat_sizes.extend(std::iter::repeat_n(1, nd));
    let dt = x.dtype();
    Ok((y.cast_to(dt)?, make(dt, means, &stat_sizes)?, make(dt, rstds, &stat_sizes)?))
}

fn native_layer_norm(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::NATIVE_LAYER_NORM, args, 2)?;
    let (y, m, r) = layer_norm_impl(a.op, &a, 4)?;
    Ok(outs([y, m, r]))
}

fn layer_norm(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::LAYER_NORM, args, 2)?;
    Ok(outs([layer_norm_impl(a.op, &a, 4)?.0]))
}

/// `rms_norm(input, normalized_shape, weight, eps)`: `x / sqrt(mean(x²) + eps) · weight`, with
/// `eps` defaulting to the dtype's machine epsilon.
fn rms_norm(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::RMS_NORM.name();
    let a = Args::new(OP, args, 2)?;
    let x = a.tensor(0)?;
    let shape = a.sizes(1)?;
    let nd = shape.len();
    if nd == 0 || nd > x.dim() || x.sizes()[x.dim() - nd..] != shape[..] {
        return Err(KernelError::new(
            OP,
            format!("normalized_shape {shape:?} does not match the trailing dims of input {:?}", x.sizes()),
        ));
    }
    let eps = match a.opt_float(3)? {
        Some(e) => e,
        None => match x.dtype() {
            DType::F64 => f64::EPSILON,
            DType::F16 => 0.0009765625,
            DType::BF16 => 0.0078125,
            _ => f32::EPSILON as f64,
        },
    };
    let inner: usize = shape.iter().product();
    let xv = values(OP, "input", x)?;
    let w = param(OP, "weight", a.opt_tensor(2)?, inner)?;
    let mut y = vec![0f64; xv.len()];
    for (row, out) in xv.chunks(inner.max(1)).zip(y.chunks_mut(inner.max(1))) {
        let ms = row.iter().map(|v| v * v).sum::<f64>() / inner as f64;
        let r = 1.0 / (ms + eps).sqrt();
        for (j, (&v, o)) in row.iter().zip(out).enumerate() {
            *o = v * r * w.as_ref().map_or(1.0, |w| w[j]);
        }
    }
    Ok(outs([make(x.dtype(), y, x.sizes())?]))
}

/// Batch-norm inputs and options.
struct BatchNorm<'a> {
    x: &'a Tensor,
    weight: Option<&'a Tensor>,
    bias: Option<&'a Tensor>,
    running_mean: Option<&'a Tensor>,
    running_var: Option<&'a Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
}

/// Normalizes per channel (dim 1). In training, uses batch statistics, returns them (mean and
/// inverse std) and updates the running statistics in place when given; otherwise uses the
/// running statistics and returns empty statistics, as PyTorch's CPU kernel does. The last
/// two results are the new running mean and variance (for the functional variant).
fn batch_norm_impl(op: &'static str, bn: &BatchNorm<'_>) -> Result<[Tensor; 5]> {
    let x = bn.x;
    if x.dim() < 2 {
        return Err(KernelError::new(op, format!("expected an input with at least 2 dims, got {:?}", x.sizes())));
    }
    let (n, c) = (x.sizes()[0], x.sizes()[1]);
    let inner: usize = x.sizes()[2..].iter().product();
    let xc = float_input(op, x)?;
    let w = param(op, "weight", bn.weight, c)?;
    let b = param(op, "bias", bn.bias, c)?;
    let rm = param(op, "running_mean", bn.running_mean, c)?;
    let rv = param(op, "running_var", bn.running_var, c)?;
    let count = n * inner;
    let mut means = vec![0f64; c];
    let mut vars = vec![0f64; c];
    if bn.training {
        if count <= 1 {
            return Err(KernelError::new(
                op,
                format!("expected more than 1 value per channel when training, got input size {:?}", x.sizes()),
            ));
        }
        with_real!(op, x.dtype(), T => {
            let xv = xc.as_slice::<T>()?;
            for ch in 0..c {
                let parts: Vec<&[T]> = (0..n).map(|i| &xv[(i * c + ch) * inner..(i * c + ch + 1) * inner]).collect();
                let (m, v) = moments_of(&parts);
                means[ch] = m;
                vars[ch] = v;
            }
        });
    } else {
        match (&rm, &rv) {
            (Some(rm), Some(rv)) => {
                means.copy_from_slice(rm);
                vars.copy_from_slice(rv);
            }
            _ => return Err(KernelError::new(op, "running_mean and running_var must be given when not training")),
        }
    }
    let invstd: Vec<f64> = vars.iter().map(|v| 1.0 / (v + bn.eps).sqrt()).collect();
    let out = with_real!(op, x.dtype(), T => {
        let xv = xc.as_slice::<T>()?;
        Tensor::build::<T>(x.sizes(), |y| {
            batch_norm_rows(xv, y, n, c, w.as_deref(), b.as_deref(), |ch| means[ch], |ch| invstd[ch]);
            Ok(())
        })?
    });
    let dt = x.dtype();
    let out = out.cast_to(dt)?;
    if !bn.training {
        let empty = Tensor::zeros(dt, &[0])?;
        let (rmt, rvt) = (make(dt, means, &[c])?, make(dt, vars, &[c])?);
        return Ok([out, empty.clone(), empty, rmt, rvt]);
    }
    // New running statistics (unbiased variance), written back in place when given.
    let m = bn.momentum;
    let unbias = count as f64 / (count as f64 - 1.0);
    let new_rm: Vec<f64> = match &rm {
        Some(rm) => rm.iter().zip(&means).map(|(r, v)| (1.0 - m) * r + m * v).collect(),
        None => means.clone(),
    };
    let new_rv: Vec<f64> = match &rv {
        Some(rv) => rv.iter().zip(&vars).map(|(r, v)| (1.0 - m) * r + m * v * unbias).collect(),
        None => vars.iter().map(|v| v * unbias).collect(),
    };
    let stat_dt = |t: Option<&Tensor>| t.map_or(dt, |t| t.dtype());
    let new_rm = make(stat_dt(bn.running_mean), new_rm, &[c])?;
    let new_rv = make(stat_dt(bn.running_var), new_rv, &[c])?;
    if let Some(t) = bn.running_mean {
        t.copy_(&reshape_like(&new_rm, t)?).map_err(|e| KernelError::new(op, e.message))?;
    }
    if let Some(t) = bn.running_var {
        t.copy_(&reshape_like(&new_rv, t)?).map_err(|e| KernelError::new(op, e.message))?;
    }
    Ok([out, make(dt, means, &[c])?, make(dt, invstd, &[c])?, new_rm, new_rv])
}

/// `src` (contiguous) viewed with the sizes of `like` (same element count).
fn reshape_like(src: &Tensor, like: &Tensor) -> Result<Tensor> {
    super::linalg::reshape_contiguous(src, like.sizes())
}

/// Reads `(input, weight, bias, running_mean, running_var, training, momentum, eps)`.
fn bn_args<'a>(a: &Args<'a>) -> Result<BatchNorm<'a>> {
    Ok(BatchNorm {
        x: a.tensor(0)?,
        weight: a.opt_tensor(1)?,
        bias: a.opt_tensor(2)?,
        running_mean: a.opt_tensor(3)?,
        running_var: a.opt_tensor(4)?,
        training: a.bool(5)?,
        momentum: a.float(6)?,
        eps: a.float(7)?,
    })
}

fn native_batch_norm(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::NATIVE_BATCH_NORM, args, 8)?;
    let [y, m, r, _, _] = batch_norm_impl(a.op, &bn_args(&a)?)?;
    Ok(outs([y, m, r]))
}

fn native_batch_norm_legit(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::_NATIVE_BATCH_NORM_LEGIT, args, 8)?;
    let [y, m, r, _, _] = batch_norm_impl(a.op, &bn_args(&a)?)?;
    Ok(outs([y, m, r]))
}

fn native_batch_norm_legit_functional(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::_NATIVE_BATCH_NORM_LEGIT_FUNCTIONAL, args, 8)?;
    let mut bn = bn_args(&a)?;
    // The functional variant returns the new running stats instead of writing them.
    let (rm, rv) =
        (bn.running_mean.map(|t| t.deep_clone()).transpose()?, bn.running_var.map(|t| t.deep_clone()).transpose()?);
    bn.running_mean = rm.as_ref();
    bn.running_var = rv.as_ref();
    let [y, m, r, nrm, nrv] = batch_norm_impl(a.op, &bn)?;
    Ok(outs([y, m, r, nrm, nrv]))
}

fn native_batch_norm_legit_no_stats(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::_NATIVE_BATCH_NORM_LEGIT_NO_STATS, args, 6)?;
    let bn = BatchNorm {
        x: a.tensor(0)?,
        weight: a.opt_tensor(1)?,
        bias: a.opt_tensor(2)?,
        running_mean: None,
        running_var: None,
        training: true,
        momentum: a.float(4)?,
        eps: a.float(5)?,
    };
    let [y, m, r, _, _] = batch_norm_impl(a.op, &bn)?;
    Ok(outs([y, m, r]))
}

fn native_batch_norm_legit_no_training(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::_NATIVE_BATCH_NORM_LEGIT_NO_TRAINING, args, 7)?;
    let bn = BatchNorm {
        x: a.tensor(0)?,
        weight: a.opt_tensor(1)?,
        bias: a.opt_tensor(2)?,
        running_mean: Some(a.tensor(3)?),
        running_var: Some(a.tensor(4)?),
        training: false,
        momentum: a.float(5)?,
        eps: a.float(6)?,
    };
    let [y, m, r, _, _] = batch_norm_impl(a.op, &bn)?;
    Ok(outs([y, m, r]))
}

fn batch_norm(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::BATCH_NORM, args, 8)?;
    let mut bn = bn_args(&a)?;
    // Without running statistics, batch_norm always uses batch statistics.
    if bn.running_mean.is_none() && bn.running_var.is_none() {
        bn.training = true;
    }
    Ok(outs([batch_norm_impl(a.op, &bn)?[0].clone()]))
}

/// Group norm over `[N, C, *]` viewed as `[N, group, C/group · HxW]`.
#[allow(clippy::too_many_arguments)]
fn group_norm_impl(
    op: &'static str,
    x: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    n: usize,
    c: usize,
    hxw: usize,
    group: usize,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    if group == 0 || !c.is_multiple_of(group) {
        return Err(KernelError::new(op, format!("expected {c} channels to be divisible by {group} groups")));
    }
    if n * c * hxw != x.numel() {
        return Err(KernelError::new(op, format!("N={n}, C={c}, HxW={hxw} do not match input {:?}", x.sizes())));
    }
    let w = param(op, "weight", weight, c)?;
    let b = param(op, "bias", bias, c)?;
    let xc = float_input(op, x)?;
    let per = c / group * hxw;
    let mut means = Vec::with_capacity(n * group);
    let mut rstds = Vec::with_capacity(n * group);
    let y = with_real!(op, x.dtype(), T => {
        let xv = xc.as_slice::<T>()?;
        Tensor::build::<T>(x.sizes(), |y| {
            for i in 0..n {
                for g in 0..group {
                    let s = (i * group + g) * per;
                    let (mean, var) = moments_of(&[&xv[s..s + per]]);
                    let rstd = 1.0 / (var + eps).sqrt();
                    for cc in 0..c / group {
                        let ch = g * (c / group) + cc;
                        let scale = rstd * w.as_ref().map_or(1.0, |w| w[ch]);
                        let shift = b.as_ref().map_or(0.0, |b| b[ch]) - mean * scale;
                        let o = s + cc * hxw;
                        affine(&xv[o..o + hxw], &mut y[o..o + hxw], scale, shift);
                    }
                    means.push(mean);
                    rstds.push(rstd);
                }
            }
            Ok(())
        })?
    });
    let dt = x.dtype();
    Ok((y.cast_to(dt)?, make(dt, means, &[n, group])?, make(dt, rstds, &[n, group])?))
}

fn native_group_norm(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::NATIVE_GROUP_NORM.name();
    let a = Args::new(OP, args, 8)?;
    let size = |i: usize| -> Result<usize> {
        usize::try_from(a.int(i)?).map_err(|_| KernelError::new(OP, format!("argument {i} must be non-negative")))
    };
    let (y, m, r) = group_norm_impl(
        OP,
        a.tensor(0)?,
        a.opt_tensor(1)?,
        a.opt_tensor(2)?,
        size(3)?,
        size(4)?,
        size(5)?,
        size(6)?,
        a.float(7)?,
    )?;
    Ok(outs([y, m, r]))
}

fn group_norm(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::GROUP_NORM.name();
    let a = Args::new(OP, args, 2)?;
    let x = a.tensor(0)?;
    if x.dim() < 2 {
        return Err(KernelError::new(OP, format!("expected an input with at least 2 dims, got {:?}", x.sizes())));
    }
    let group = usize::try_from(a.int(1)?).map_err(|_| KernelError::new(OP, "num_groups must be positive"))?;
    let (n, c) = (x.sizes()[0], x.sizes()[1]);
    let hxw = x.sizes()[2..].iter().product();
    let eps = a.opt_float(4)?.unwrap_or(1e-5);
    let (y, _, _) = group_norm_impl(OP, x, a.opt_tensor(2)?, a.opt_tensor(3)?, n, c, hxw, group, eps)?;
    Ok(outs([y]))
}

pub fn register(r: &mut KernelRegistry) {
    r.register(op::NATIVE_LAYER_NORM, native_layer_norm);
    r.register(op::LAYER_NORM, layer_norm);
    r.register(op::RMS_NORM, rms_norm);
    r.register(op::NATIVE_BATCH_NORM, native_batch_norm);
    r.register(op::_NATIVE_BATCH_NORM_LEGIT, native_batch_norm_legit);
    r.register(op::_NATIVE_BATCH_NORM_LEGIT_NO_STATS, native_batch_norm_legit_no_stats);
    r.register(op::_NATIVE_BATCH_NORM_LEGIT_NO_TRAINING, native_batch_norm_legit_no_training);
    r.register(op::_NATIVE_BATCH_NORM_LEGIT_FUNCTIONAL, native_batch_norm_legit_functional);
    r.register(op::BATCH_NORM, batch_norm);
    r.register(op::NATIVE_GROUP_NORM, native_group_norm);
    r.register(op::GROUP_NORM, group_norm);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The statistics of `f32` rows computed on every ISA this host runs (intrinsics on
    /// AVX-512) have the bits of the generic form (compiled here for the baseline), for rows
    /// shorter than a vector, of whole and partial vectors and blocks, with a mean far from
    /// zero, and with non-finite elements.
    #[test]
    fn f32_moments_have_the_bits_of_the_generic_form() {
        let mut s = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
        };
        let bits = |(a, b): (f64, f64)| (a.to_bits(), b.to_bits());
        for len in [1, 2, 15, 16, 17, 100, 255, 256, 257, 700, 1024] {
            for (offset, special) in [(0.0, None), (1000.0, None), (0.0, Some(f32::NAN)), (0.0, Some(f32::INFINITY))] {
                let mut row: Vec<f32> = (0..len).map(|_| next() * 3.0 + offset).collect();
                if let Some(x) = special {
                    row[len / 2] = x;
                }
                for path in ::kernels::Isa::supported() {
                    let got = ::kernels::isa::with(path, || moments(&row));
                    assert_eq!(bits(got), bits(row_moments(&row)), "{path}: {len} elements, offset {offset}, {special:?}");
                }
            }
        }
        assert!(moments::<f32>(&[]).0.is_nan());
    }
}
