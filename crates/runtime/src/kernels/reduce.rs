//! Reductions and scans: sum, mean, prod, amax/amin, max/min (values and indices),
//! argmax/argmin, var/std, any/all, logsumexp, cumsum/cumprod, softmax and log_softmax.
//!
//! Float sums, means and variances accumulate in `f64` and round once at the end. PyTorch's
//! CPU kernels accumulate `f32` with pairwise/vectorized summation; accumulating in `f64` is at
//! least as accurate, is independent of the memory layout, and stays within the fixtures'
//! tolerances. Integer sums and products wrap in `i64`.

use dialect_aten::op;
use half::{bf16, f16};
use ir::DType;

use super::{Args, KernelRegistry, ret};
use crate::dispatch_dtype;
use crate::tensor::shape::{normalize_dim, normalize_dims};
use crate::tensor::{Element, KernelError, Result, Scalar, Tensor};
use crate::value::IValue;

/// Resolves reduction dims: `None` or an empty list means all dims.
fn reduce_dims(op: &str, t: &Tensor, dims: Option<&[i64]>) -> Result<Vec<usize>> {
    match dims {
        None | Some([]) => Ok((0..t.dim()).collect()),
        Some(d) => {
            if t.dim() == 0 {
                for &x in d {
                    normalize_dim(op, x, 0)?;
                }
                return Ok(vec![]);
            }
            normalize_dims(op, d, t.dim())
        }
    }
}

/// Output sizes of reducing `dims` of `sizes`.
fn reduced_sizes(sizes: &[usize], dims: &[usize], keepdim: bool) -> Vec<usize> {
    let mut out = Vec::with_capacity(sizes.len());
    for (d, &s) in sizes.iter().enumerate() {
        if dims.contains(&d) {
            if keepdim {
                out.push(1);
            }
        } else {
            out.push(s);
        }
    }
    out
}

/// Applies `f` to each block of reduced elements (in row-major order of the reduced dims);
/// `t` must have element type `T`.
pub fn reduce<T: Element, O: Element>(
    t: &Tensor,
    dims: &[usize],
    keepdim: bool,
    f: impl Fn(&[T]) -> O + Sync,
) -> Result<Tensor> {
    // The reduced dims in memory order, so that a block is read as it lies (`mean(x, [-1, -2])`
    // needs no transposed copy) and summed in PyTorch's order.
    let mut sorted = dims.to_vec();
    sorted.sort_unstable();
    let dims = &sorted[..];
    let mut perm: Vec<i64> = (0..t.dim()).filter(|d| !dims.contains(d)).map(|d| d as i64).collect();
    perm.extend(dims.iter().map(|&d| d as i64));
    let p = t.permute(&perm)?.contiguous()?;
    let inner: usize = dims.iter().map(|&d| t.sizes()[d]).product();
    let out_sizes = reduced_sizes(t.sizes(), dims, keepdim);
    let data = p.as_slice::<T>()?;
    Tensor::build::<O>(&out_sizes, |out| {
        if inner == 0 {
            for o in out.iter_mut() {
                *o = f(&[]);
            }
        } else {
            // Blocks are independent: with enough of them and enough elements in all, they
            // split across the intra-op team (each block still summed by one task, in order).
            let threads = crate::parallel::threads();
            let tasks = if threads > 1 && data.len() >= PARALLEL_MIN_ELEMENTS { (threads * 4).min(out.len()) } else { 1 };
            crate::parallel::for_each_range(out, 1, tasks, |start, part| {
                for (i, o) in part.iter_mut().enumerate() {
                    *o = f(&data[(start + i) * inner..(start + i + 1) * inner]);
                }
            });
        }
        Ok(())
    })
}

/// Reductions reading at least this many elements split across the intra-op team.
const PARALLEL_MIN_ELEMENTS: usize = 1 << 16;

/// Applies `f(row_in, row_out)` to every 1-d row along `dim`, giving a tensor of `t`'s shape.
pub fn along_dim<T: Element, O: Element>(t: &Tensor, dim: usize, f: impl Fn(&[T], &mut [O])) -> Result<Tensor> {
    if t.dim() == 0 {
        let c = t.contiguous()?;
        let x = c.as_slice::<T>()?;
        return Tensor::build::<O>(&[], |out| {
            f(x, out);
            Ok(())
        });
    }
    let nd = t.dim();
    let mut perm: Vec<i64> = (0..nd as i64).filter(|&d| d as usize != dim).collect();
    perm.push(dim as i64);
    let p = t.permute(&perm)?.contiguous()?;
    let n = t.sizes()[dim];
    let data = p.as_slice::<T>()?;
    let out = Tensor::build::<O>(p.sizes(), |out| {
        if n > 0 {
            for (row, orow) in data.chunks_exact(n).zip(out.chunks_exact_mut(n)) {
                f(row, orow);
            }
        }
        Ok(())
    })?;
    if dim == nd - 1 {
        return Ok(out);
    }
    let mut inv = vec![0i64; nd];
    for (i, &p) in perm.iter().enumerate() {
        inv[p as usize] = i as i64;
    }
    out.permute(&inv)?.contiguous()
}

/// The accumulation dtype of `sum`/`prod` without an explicit dtype: integers and bool widen
/// to int64.
fn sum_dtype(d: DType, requested: Option<DType>) -> DType {
    requested.unwrap_or(if d.is_floating() { d } else { DType::I64 })
}

fn sum_tensor(t: &Tensor, dims: &[usize], keepdim: bool, dtype: DType) -> Result<Tensor> {
    let x = t.cast_to(dtype)?;
    // Every element into one sum: its halves summed on several threads
    // ([`pairwise_sum_team`]), the bits of one thread's.
    if dtype == DType::F32 && x.numel() >= PAIRWISE_TEAM_MIN && dims.len() == x.dim() {
        let xc = x.contiguous()?;
        let total = pairwise_sum_team(xc.as_slice::<f32>()?, |v| v as f64) as f32;
        return Tensor::from_vec(vec![total], &reduced_sizes(x.sizes(), dims, keepdim));
    }
    match dtype {
        DType::F32 => reduce::<f32, f32>(&x, dims, keepdim, |b| pairwise_sum_by(b, |v| v as f64) as f32),
        DType::F64 => reduce::<f64, f64>(&x, dims, keepdim, pairwise_sum),
        DType::F16 => reduce::<f16, f16>(&x, dims, keepdim, |b| f16::from_f64(pairwise_sum_by(b, |v| v.to_f64()))),
        DType::BF16 => reduce::<bf16, bf16>(&x, dims, keepdim, |b| bf16::from_f64(pairwise_sum_by(b, |v| v.to_f64()))),
        DType::Bool => reduce::<bool, bool>(&x, dims, keepdim, |b| b.iter().any(|&v| v)),
        d => dispatch_dtype!(d, T => reduce::<T, T>(&x, dims, keepdim, |b| {
            T::from_i64(b.iter().fold(0i64, |acc, v| acc.wrapping_add(v.to_i64())))
        })),
    }
}

/// Pairwise summation of `f64` values (error grows like log n).
fn pairwise_sum(x: &[f64]) -> f64 {
    pairwise_sum_by(x, |v| v)
}

fn k_sum_dim(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::SUM_DIM_INTLIST, args, 1)?;
    let t = a.tensor(0)?;
    let dims = reduce_dims(a.op, t, a.opt_int_list(1)?.as_deref())?;
    let keepdim = a.opt_bool(2)?.unwrap_or(false);
    let dtype = sum_dtype(t.dtype(), a.opt_dtype(3)?);
    ret(sum_tensor(t, &dims, keepdim, dtype)?)
}

fn k_sum(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::SUM, args, 1)?;
    let t = a.tensor(0)?;
    let dims: Vec<usize> = (0..t.dim()).collect();
    ret(sum_tensor(t, &dims, false, sum_dtype(t.dtype(), a.opt_dtype(1)?))?)
}

fn mean_tensor(op: &str, t: &Tensor, dims: &[usize], keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    let dtype = dtype.unwrap_or(t.dtype());
    if !dtype.is_floating() {
        return Err(KernelError::new(
            op.to_string(),
            format!(
                "mean(): could not infer output dtype; input dtype must be floating point but got {}",
                dtype.torch_name()
            ),
        ));
    }
    let x = t.cast_to(dtype)?;
    // Each block summed pairwise in `f64` and divided there, then rounded once to `dtype`:
    // the blocks are read in their own type, with no `f64` copy of the whole tensor. Halves
    // are first widened to `f32` whole (exactly, and vectorized, where one at a time is a
    // conversion call per element).
    fn mean_of<T: Copy>(b: &[T], f: impl Fn(T) -> f64 + Copy) -> f64 {
        if b.is_empty() { f64::NAN } else { pairwise_sum_by(b, f) / b.len() as f64 }
    }
    match dtype {
        DType::F16 => reduce::<f32, f16>(&x.to_dtype(DType::F32)?, dims, keepdim, |b| f16::from_f64(mean_of(b, f64::from))),
        DType::BF16 => reduce::<f32, bf16>(&x.to_dtype(DType::F32)?, dims, keepdim, |b| bf16::from_f64(mean_of(b, f64::from))),
        _ => dispatch_dtype!(dtype, T => reduce::<T, T>(&x, dims, keepdim, |b| T::from_f64(mean_of(b, |v| v.to_f64())))),
    }
}

/// Sums of at least this many elements split across the team ([`pairwise_sum_team`]).
const PAIRWISE_TEAM_MIN: usize = 1 << 18;

/// [`pairwise_sum_by`] with the leaves of its first three halvings summed across the intra-op
/// team and added back in the tree's order: the same sums in the same order, so the same bits
/// on any number of threads. Below [`PAIRWISE_TEAM_MIN`] elements, or on one thread, it is
/// [`pairwise_sum_by`] itself.
fn pairwise_sum_team<T: Copy + Sync>(x: &[T], f: impl Fn(T) -> f64 + Copy + Sync) -> f64 {
    if x.len() < PAIRWISE_TEAM_MIN || crate::parallel::threads() <= 1 {
        return pairwise_sum_by(x, f);
    }
    // Each leaf is longer than a run (`RUN`), so `pairwise_sum_by` halves at these same points.
    let mut leaves = vec![(0, x.len())];
    for _ in 0..3 {
        leaves = leaves.iter().flat_map(|&(a, b)| [(a, a + (b - a) / 2), (a + (b - a) / 2, b)]).collect();
    }
    let mut sums = vec![0.0f64; leaves.len()];
    crate::parallel::for_each_range(&mut sums, 1, leaves.len(), |start, part| {
        for (i, s) in part.iter_mut().enumerate() {
            let (a, b) = leaves[start + i];
            *s = pairwise_sum_by(&x[a..b], f);
        }
    });
    while sums.len() > 1 {
        sums = sums.chunks_exact(2).map(|p| p[0] + p[1]).collect();
    }
    sums[0]
}

/// [`pairwise_sum`] of `f(v)` over `x`: halves summed separately down to runs of at most
/// [`RUN`], each run in sixteen interleaved partial sums (element `i` into sum `i % 16`, which
/// the compiler keeps in vector lanes: two registers of AVX-512, four of AVX2) added in halves,
/// `s_i + s_{i+8}`, then `+4`, `+2` and `+1`, as a vector's lanes are. The halving tree is walked with an explicit stack,
/// so that the whole walk is compiled for the widest vector extension
/// ([`super::wide::widest`]; a recursive call would run as compiled for the baseline): the
/// same additions in the same order on every path.
fn pairwise_sum_by<T: Copy>(x: &[T], f: impl Fn(T) -> f64 + Copy) -> f64 {
    // One run costs less than choosing the vector path (a mean over each channel of a small
    // plane sums thousands of them a call).
    if x.len() <= RUN {
        return run_sum(x, f);
    }
    super::wide::widest(
        #[inline(always)]
        || pairwise_walk(x, f),
    )
}

/// The longest run [`pairwise_sum_by`] sums without halving.
const RUN: usize = 256;

/// The run sum of [`pairwise_sum_by`].
#[inline(always)]
fn run_sum<T: Copy>(x: &[T], f: impl Fn(T) -> f64 + Copy) -> f64 {
    // `-0.0` is the identity of addition (a run of `-0.0`s sums to `-0.0`).
    let mut s = [-0.0f64; 16];
    let (rows, rest) = x.as_chunks::<16>();
    for row in rows {
        let w: [f64; 16] = std::array::from_fn(|j| f(row[j]));
        for j in 0..16 {
            s[j] += w[j];
        }
    }
    for (acc, &v) in s.iter_mut().zip(rest) {
        *acc += f(v);
    }
    // Halves added lane by lane, as a vector's are.
    let p8: [f64; 8] = std::array::from_fn(|i| s[i] + s[i + 8]);
    let p4: [f64; 4] = std::array::from_fn(|i| p8[i] + p8[i + 4]);
    (p4[0] + p4[2]) + (p4[1] + p4[3])
}

/// The walk of [`pairwise_sum_by`]'s halving tree: a node of more than [`RUN`] elements is
/// `sum(x[..mid]) + sum(x[mid..])` with `mid = len / 2`, its left half finished first.
#[inline(always)]
fn pairwise_walk<T: Copy>(x: &[T], f: impl Fn(T) -> f64 + Copy) -> f64 {
    /// A node being summed: its range, and its left half's sum once that is known.
    #[derive(Clone, Copy)]
    struct Node {
        start: usize,
        end: usize,
        left: Option<f64>,
    }
    // Halving `usize::MAX` elements down to runs of `RUN` takes fewer than 64 levels.
    let mut stack = [Node { start: 0, end: 0, left: None }; 64];
    stack[0] = Node { start: 0, end: x.len(), left: None };
    let mut depth = 1;
    // The sum of the node just finished, to hand to its parent.
    let mut done: Option<f64> = None;
    loop {
        let node = stack[depth - 1];
        let mid = node.start + (node.end - node.start) / 2;
        match (done.take(), node.left) {
            (None, _) if node.end - node.start <= RUN => done = Some(run_sum(&x[node.start..node.end], f)),
            (None, _) => {
                stack[depth] = Node { start: node.start, end: mid, left: None };
                depth += 1;
                continue;
            }
            (Some(left), None) => {
                stack[depth - 1].left = Some(left);
                stack[depth] = Node { start: mid, end: node.end, left: None };
                depth += 1;
                continue;
            }
            (Some(right), Some(left)) => done = Some(left + right),
        }
        depth -= 1;
        if depth == 0 {
            return done.unwrap_or(0.0);
        }
    }
}

fn k_mean_dim(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::MEAN_DIM, args, 1)?;
    let t = a.tensor(0)?;
    let dims = reduce_dims(a.op, t, a.opt_int_list(1)?.as_deref())?;
    ret(mean_tensor(a.op, t, &dims, a.opt_bool(2)?.unwrap_or(false), a.opt_dtype(3)?)?)
}

fn k_mean(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::MEAN, args, 1)?;
    let t = a.tensor(0)?;
    let dims: Vec<usize> = (0..t.dim()).collect();
    ret(mean_tensor(a.op, t, &dims, false, a.opt_dtype(1)?)?)
}

fn prod_tensor(t: &Tensor, dims: &[usize], keepdim: bool, dtype: DType) -> Result<Tensor> {
    let x = t.cast_to(dtype)?;
    match dtype {
        DType::F64 => reduce::<f64, f64>(&x, dims, keepdim, |b| b.iter().product()),
        d if d.is_floating() => {
            let x64 = x.to_dtype(DType::F64)?;
            reduce::<f64, f64>(&x64, dims, keepdim, |b| b.iter().product())?.to_dtype(d)
        }
        DType::Bool => reduce::<bool, bool>(&x, dims, keepdim, |b| b.iter().all(|&v| v)),
        d => dispatch_dtype!(d, T => reduce::<T, T>(&x, dims, keepdim, |b| {
            T::from_i64(b.iter().fold(1i64, |acc, v| acc.wrapping_mul(v.to_i64())))
        })),
    }
}

fn k_prod(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::PROD, args, 1)?;
    let t = a.tensor(0)?;
    let dims: Vec<usize> = (0..t.dim()).collect();
    ret(prod_tensor(t, &dims, false, sum_dtype(t.dtype(), a.opt_dtype(1)?))?)
}

fn k_prod_dim(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::PROD_DIM_INT, args, 2)?;
    let t = a.tensor(0)?;
    let dims = reduce_dims(a.op, t, Some(&[a.int(1)?]))?;
    ret(prod_tensor(t, &dims, a.opt_bool(2)?.unwrap_or(false), sum_dtype(t.dtype(), a.opt_dtype(3)?))?)
}

/// Index and value of the maximum (`greater`) or minimum of a block; NaN wins (first NaN).
fn arg_extreme<T: Element>(b: &[T], greater: bool) -> (T, i64) {
    let float = T::DTYPE.is_floating();
    let mut best = b[0];
    let mut bi = 0usize;
    let mut bv = best.to_f64();
    if float && bv.is_nan() {
        return (best, 0);
    }
    for (i, &v) in b.iter().enumerate().skip(1) {
        let x = if float { v.to_f64() } else { v.to_i64() as f64 };
        if float && x.is_nan() {
            return (v, i as i64);
        }
        let better = if float {
            if greater { x > bv } else { x < bv }
        } else {
            let (xi, bi64) = (v.to_i64(), best.to_i64());
            if greater { xi > bi64 } else { xi < bi64 }
        };
        if better {
            best = v;
            bi = i;
            bv = x;
        }
    }
    (best, bi as i64)
}

fn extreme_values(op: &str, t: &Tensor, dims: &[usize], keepdim: bool, greater: bool) -> Result<Tensor> {
    // An empty input is fine when no reduced dim is empty: the result is empty too.
    if dims.iter().any(|&d| t.sizes()[d] == 0) {
        return Err(KernelError::new(
            op.to_string(),
            "expected reduction dim to be specified for input.numel() == 0, or the reduced dimension to be non-empty",
        ));
    }
    dispatch_dtype!(t.dtype(), T => reduce::<T, T>(t, dims, keepdim, |b| arg_extreme(b, greater).0))
}

fn k_amax(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::AMAX, args, 1)?;
    let t = a.tensor(0)?;
    let dims = reduce_dims(a.op, t, a.opt_int_list(1)?.as_deref())?;
    ret(extreme_values(a.op, t, &dims, a.opt_bool(2)?.unwrap_or(false), true)?)
}

fn k_amin(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::AMIN, args, 1)?;
    let t = a.tensor(0)?;
    let dims = reduce_dims(a.op, t, a.opt_int_list(1)?.as_deref())?;
    ret(extreme_values(a.op, t, &dims, a.opt_bool(2)?.unwrap_or(false), false)?)
}

fn k_max(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::MAX, args, 1)?;
    let t = a.tensor(0)?;
    let dims: Vec<usize> = (0..t.dim()).collect();
    ret(extreme_values(a.op, t, &dims, false, true)?)
}

fn k_min(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::MIN, args, 1)?;
    let t = a.tensor(0)?;
    let dims: Vec<usize> = (0..t.dim()).collect();
    ret(extreme_values(a.op, t, &dims, false, false)?)
}

fn values_indices(op: &'static str, args: &[IValue], greater: bool) -> Result<Vec<IValue>> {
    let a = Args::new(op, args, 2)?;
    let t = a.tensor(0)?;
    let dims = reduce_dims(op, t, Some(&[a.int(1)?]))?;
    let keepdim = a.opt_bool(2)?.unwrap_or(false);
    if dims.iter().any(|&d| t.sizes()[d] == 0) {
        return Err(KernelError::new(op, "cannot compute over an empty dimension"));
    }
    let values = extreme_values(op, t, &dims, keepdim, greater)?;
    let indices = dispatch_dtype!(t.dtype(), T => reduce::<T, i64>(t, &dims, keepdim, |b| arg_extreme(b, greater).1))?;
    Ok(vec![IValue::Tensor(values), IValue::Tensor(indices)])
}

fn k_max_dim(args: &[IValue]) -> Result<Vec<IValue>> {
    values_indices(op::MAX_DIM.name(), args, true)
}

fn k_min_dim(args: &[IValue]) -> Result<Vec<IValue>> {
    values_indices(op::MIN_DIM.name(), args, false)
}

fn arg_op(op: &'static str, args: &[IValue], greater: bool) -> Result<Vec<IValue>> {
    let a = Args::new(op, args, 1)?;
    let t = a.tensor(0)?;
    let keepdim = a.opt_bool(2)?.unwrap_or(false);
    if t.numel() == 0 {
        return Err(KernelError::new(op, "expected a non-empty tensor"));
    }
    match a.opt_int(1)? {
        None => {
            let flat = t.reshape(&[-1])?;
            let r = dispatch_dtype!(t.dtype(), T => reduce::<T, i64>(&flat, &[0], false, |b| arg_extreme(b, greater).1))?;
            if keepdim {
                let ones = vec![1i64; t.dim()];
                ret(r.reshape(&ones)?)
            } else {
                ret(r)
            }
        }
        Some(d) => {
            let dims = reduce_dims(op, t, Some(&[d]))?;
            if dims.iter().any(|&d| t.sizes()[d] == 0) {
                return Err(KernelError::new(op, "cannot compute over an empty dimension"));
            }
            ret(dispatch_dtype!(t.dtype(), T => reduce::<T, i64>(t, &dims, keepdim, |b| arg_extreme(b, greater).1))?)
        }
    }
}

fn k_argmax(args: &[IValue]) -> Result<Vec<IValue>> {
    arg_op(op::ARGMAX.name(), args, true)
}

fn k_argmin(args: &[IValue]) -> Result<Vec<IValue>> {
    arg_op(op::ARGMIN.name(), args, false)
}

/// Variance with `correction` (Bessel's correction is 1), two-pass in `f64`.
fn var_block(b: &[f64], correction: f64) -> f64 {
    let n = b.len() as f64;
    if b.is_empty() {
        return f64::NAN;
    }
    let mean = pairwise_sum(b) / n;
    let m2: f64 = b.iter().map(|&x| (x - mean) * (x - mean)).sum();
    m2 / (n - correction).max(0.0)
}

fn var_tensor(op: &str, t: &Tensor, dims: &[usize], correction: f64, keepdim: bool, sqrt: bool) -> Result<Tensor> {
    if !t.dtype().is_floating() {
        return Err(KernelError::new(
            op.to_string(),
            format!("std and var only support floating point inputs, got {}", t.dtype().torch_name()),
        ));
    }
    let x64 = t.to_dtype(DType::F64)?;
    let r = reduce::<f64, f64>(&x64, dims, keepdim, |b| {
        let v = var_block(b, correction);
        if sqrt { v.sqrt() } else { v }
    })?;
    r.cast_to(t.dtype())
}

fn var_args(a: &Args, correction_idx: usize, keepdim_idx: usize) -> Result<(Vec<usize>, f64, bool)> {
    let t = a.tensor(0)?;
    let dims = reduce_dims(a.op, t, a.opt_int_list(1)?.as_deref())?;
    let correction = a.opt_scalar(correction_idx)?.map_or(1.0, |s| s.to_f64());
    Ok((dims, correction, a.opt_bool(keepdim_idx)?.unwrap_or(false)))
}

fn k_var_correction(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::VAR_CORRECTION, args, 1)?;
    let (dims, c, k) = var_args(&a, 2, 3)?;
    ret(var_tensor(a.op, a.tensor(0)?, &dims, c, k, false)?)
}

fn k_std_correction(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::STD_CORRECTION, args, 1)?;
    let (dims, c, k) = var_args(&a, 2, 3)?;
    ret(var_tensor(a.op, a.tensor(0)?, &dims, c, k, true)?)
}

fn dim_unbiased(a: &Args) -> Result<(Vec<usize>, f64, bool)> {
    let t = a.tensor(0)?;
    let dims = reduce_dims(a.op, t, a.opt_int_list(1)?.as_deref())?;
    let unbiased = a.opt_bool(2)?.unwrap_or(true);
    Ok((dims, if unbiased { 1.0 } else { 0.0 }, a.opt_bool(3)?.unwrap_or(false)))
}

fn k_var_dim(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::VAR_DIM, args, 1)?;
    let (dims, c, k) = dim_unbiased(&a)?;
    ret(var_tensor(a.op, a.tensor(0)?, &dims, c, k, false)?)
}

fn k_std_dim(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::STD_DIM, args, 1)?;
    let (dims, c, k) = dim_unbiased(&a)?;
    ret(var_tensor(a.op, a.tensor(0)?, &dims, c, k, true)?)
}

fn k_var(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::VAR, args, 1)?;
    let t = a.tensor(0)?;
    let c = if a.opt_bool(1)?.unwrap_or(true) { 1.0 } else { 0.0 };
    let dims: Vec<usize> = (0..t.dim()).collect();
    ret(var_tensor(a.op, t, &dims, c, false, false)?)
}

fn k_std(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::STD, args, 1)?;
    let t = a.tensor(0)?;
    let c = if a.opt_bool(1)?.unwrap_or(true) { 1.0 } else { 0.0 };
    let dims: Vec<usize> = (0..t.dim()).collect();
    ret(var_tensor(a.op, t, &dims, c, false, true)?)
}

fn k_var_mean_correction(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::VAR_MEAN_CORRECTION, args, 1)?;
    let (dims, c, k) = var_args(&a, 2, 3)?;
    let t = a.tensor(0)?;
    let v = var_tensor(a.op, t, &dims, c, k, false)?;
    let m = mean_tensor(a.op, t, &dims, k, None)?;
    Ok(vec![IValue::Tensor(v), IValue::Tensor(m)])
}

fn any_all(op: &str, t: &Tensor, dims: &[usize], keepdim: bool, any: bool) -> Result<Tensor> {
    let out_u8 = t.dtype() == DType::U8;
    let b = t.cast_to(DType::Bool)?;
    let r = reduce::<bool, bool>(&b, dims, keepdim, |x| if any { x.iter().any(|&v| v) } else { x.iter().all(|&v| v) })
        .map_err(|e| e.in_op(op.to_string()))?;
    if out_u8 { r.to_dtype(DType::U8) } else { Ok(r) }
}

macro_rules! any_all_kernels {
    ($full:ident, $dim:ident, $dims:ident, $any:expr, $n_full:path, $n_dim:path, $n_dims:path) => {
        fn $full(args: &[IValue]) -> Result<Vec<IValue>> {
            let a = Args::new($n_full, args, 1)?;
            let t = a.tensor(0)?;
            let dims: Vec<usize> = (0..t.dim()).collect();
            ret(any_all(a.op, t, &dims, false, $any)?)
        }
        fn $dim(args: &[IValue]) -> Result<Vec<IValue>> {
            let a = Args::new($n_dim, args, 2)?;
            let t = a.tensor(0)?;
            let dims = reduce_dims(a.op, t, Some(&[a.int(1)?]))?;
            ret(any_all(a.op, t, &dims, a.opt_bool(2)?.unwrap_or(false), $any)?)
        }
        fn $dims(args: &[IValue]) -> Result<Vec<IValue>> {
            let a = Args::new($n_dims, args, 1)?;
            let t = a.tensor(0)?;
            let dims = reduce_dims(a.op, t, a.opt_int_list(1)?.as_deref())?;
            ret(any_all(a.op, t, &dims, a.opt_bool(2)?.unwrap_or(false), $any)?)
        }
    };
}

any_all_kernels!(k_any, k_any_dim, k_any_dims, true, op::ANY, op::ANY_DIM, op::ANY_DIMS);
any_all_kernels!(k_all, k_all_dim, k_all_dims, false, op::ALL, op::ALL_DIM, op::ALL_DIMS);

fn logsumexp_block(b: &[f64]) -> f64 {
    let m = b.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if b.iter().any(|x| x.is_nan()) {
        return f64::NAN;
    }
    if m.is_infinite() {
        return m;
    }
    m + b.iter().map(|&x| (x - m).exp()).sum::<f64>().ln()
}

fn k_logsumexp(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::LOGSUMEXP, args, 2)?;
    let t = a.tensor(0)?;
    let dims = reduce_dims(a.op, t, Some(&a.int_list(1)?))?;
    let keepdim = a.opt_bool(2)?.unwrap_or(false);
    let out_dtype = if t.dtype().is_floating() { t.dtype() } else { DType::F32 };
    let x64 = t.to_dtype(DType::F64)?;
    ret(reduce::<f64, f64>(&x64, &dims, keepdim, logsumexp_block)?.cast_to(out_dtype)?)
}

fn scan(op: &str, t: &Tensor, dim: i64, dtype: Option<DType>, prod: bool) -> Result<Tensor> {
    let d = normalize_dim(op, dim, t.dim())?;
    let dtype = sum_dtype(t.dtype(), dtype);
    let x = t.cast_to(dtype)?;
    match dtype {
        d2 if d2.is_floating() => {
            let x64 = x.to_dtype(DType::F64)?;
            let r = along_dim::<f64, f64>(&x64, d, |row, out| {
                let mut acc = if prod { 1.0 } else { 0.0 };
                for (o, &v) in out.iter_mut().zip(row) {
                    acc = if prod { acc * v } else { acc + v };
                    *o = acc;
                }
            })?;
            r.cast_to(d2)
        }
        d2 => {
            let x64 = x.cast_to(DType::I64)?;
            let r = along_dim::<i64, i64>(&x64, d, |row, out| {
                let mut acc: i64 = if prod { 1 } else { 0 };
                for (o, &v) in out.iter_mut().zip(row) {
                    acc = if prod { acc.wrapping_mul(v) } else { acc.wrapping_add(v) };
                    *o = acc;
                }
            })?;
            r.cast_to(d2)
        }
    }
}

fn k_cumsum(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::CUMSUM, args, 2)?;
    ret(scan(a.op, a.tensor(0)?, a.int(1)?, a.opt_dtype(2)?, false)?)
}

fn k_cumprod(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::CUMPROD, args, 2)?;
    ret(scan(a.op, a.tensor(0)?, a.int(1)?, a.opt_dtype(2)?, true)?)
}

/// Softmax (or log-softmax) along `dim`, numerically stable (the row maximum is subtracted).
/// Computes in `f64`; the result has `out_dtype`.
pub fn softmax(op: &str, t: &Tensor, dim: i64, log: bool, out_dtype: DType) -> Result<Tensor> {
    if !out_dtype.is_floating() {
        return Err(KernelError::new(op.to_string(), format!("softmax needs a floating dtype, got {}", out_dtype.torch_name())));
    }
    let d = normalize_dim(op, dim, t.dim())?;
    if !log && t.dtype() == DType::F32 && out_dtype == DType::F32 && d + 1 == t.dim() && t.is_contiguous() {
        return softmax_f32_rows(t);
    }
    let x64 = t.to_dtype(DType::F64)?;
    let r = along_dim::<f64, f64>(&x64, d, |row, out| {
        let m = row.iter().copied().fold(f64::NEG_INFINITY, |a, b| if b > a || b.is_nan() { b } else { a });
        let m = if m.is_infinite() { 0.0 } else { m };
        let mut s = 0.0;
        for (o, &v) in out.iter_mut().zip(row) {
            let e = (v - m).exp();
            *o = e;
            s += e;
        }
        if log {
            let ls = s.ln();
            for (o, &v) in out.iter_mut().zip(row) {
                *o = v - m - ls;
            }
        } else {
            for o in out.iter_mut() {
                *o /= s;
            }
        }
    })?;
    r.cast_to(out_dtype)
}

/// Softmax of a contiguous `f32` tensor along its last dim, in `f32` with the vectorized
/// `exp` (as PyTorch's CPU kernel computes it in the input's precision).
fn softmax_f32_rows(t: &Tensor) -> Result<Tensor> {
    let src = t.as_slice::<f32>()?;
    let n = t.sizes().last().copied().unwrap_or(1);
    Tensor::build::<f32>(t.sizes(), |out| {
        softmax_f32_rows_into(src, n, out);
        Ok(())
    })
}

/// The rows of `n` elements of `src` softmaxed into `out` (`kernels::softmax`).
pub(crate) use ::kernels::softmax::rows_into as softmax_f32_rows_into;

fn softmax_kernel(op: &'static str, args: &[IValue], log: bool) -> Result<Vec<IValue>> {
    let a = Args::new(op, args, 3)?;
    let t = a.tensor(0)?;
    let half_to_float = a.bool(2)?;
    let out = if half_to_float && matches!(t.dtype(), DType::F16 | DType::BF16) { DType::F32 } else { t.dtype() };
    ret(softmax(op, t, a.int(1)?, log, out)?)
}

fn k_softmax(args: &[IValue]) -> Result<Vec<IValue>> {
    softmax_kernel(op::_SOFTMAX.name(), args, false)
}

fn k_log_softmax(args: &[IValue]) -> Result<Vec<IValue>> {
    softmax_kernel(op::_LOG_SOFTMAX.name(), args, true)
}

fn softmax_int(op: &'static str, args: &[IValue], log: bool) -> Result<Vec<IValue>> {
    let a = Args::new(op, args, 2)?;
    let t = a.tensor(0)?;
    // Without a dtype the input's is kept, and softmax of integers is refused, as in PyTorch.
    let out = a.opt_dtype(2)?.unwrap_or(t.dtype());
    ret(softmax(op, t, a.int(1)?, log, out)?)
}

fn k_softmax_int(args: &[IValue]) -> Result<Vec<IValue>> {
    softmax_int(op::SOFTMAX_INT.name(), args, false)
}

fn k_log_softmax_int(args: &[IValue]) -> Result<Vec<IValue>> {
    softmax_int(op::LOG_SOFTMAX_INT.name(), args, true)
}

fn k_count_nonzero(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::COUNT_NONZERO_DIM_INTLIST, args, 2)?;
    let t = a.tensor(0)?;
    let dims = reduce_dims(a.op, t, Some(&a.int_list(1)?))?;
    let b = t.cast_to(DType::Bool)?;
    ret(reduce::<bool, i64>(&b, &dims, false, |x| x.iter().filter(|&&v| v).count() as i64)?)
}

/// `_local_scalar_dense`: the value of a one-element tensor as a Python scalar.
fn k_local_scalar_dense(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::_LOCAL_SCALAR_DENSE, args, 1)?;
    let s: Scalar = a.tensor(0)?.item().map_err(|e| e.in_op(a.op))?;
    Ok(vec![IValue::from(s)])
}

pub fn register(r: &mut KernelRegistry) {
    let table: &[(ir::OpRef, super::KernelFn)] = &[
        (op::SUM, k_sum),
        (op::SUM_DIM_INTLIST, k_sum_dim),
        (op::MEAN, k_mean),
        (op::MEAN_DIM, k_mean_dim),
        (op::PROD, k_prod),
        (op::PROD_DIM_INT, k_prod_dim),
        (op::AMAX, k_amax),
        (op::AMIN, k_amin),
        (op::MAX, k_max),
        (op::MIN, k_min),
        (op::MAX_DIM, k_max_dim),
        (op::MIN_DIM, k_min_dim),
        (op::ARGMAX, k_argmax),
        (op::ARGMIN, k_argmin),
        (op::VAR_CORRECTION, k_var_correction),
        (op::VAR_DIM, k_var_dim),
        (op::VAR, k_var),
        (op::STD_CORRECTION, k_std_correction),
        (op::STD_DIM, k_std_dim),
        (op::STD, k_std),
        (op::VAR_MEAN_CORRECTION, k_var_mean_correction),
        (op::ANY, k_any),
        (op::ANY_DIM, k_any_dim),
        (op::ANY_DIMS, k_any_dims),
        (op::ALL, k_all),
        (op::ALL_DIM, k_all_dim),
        (op::ALL_DIMS, k_all_dims),
        (op::LOGSUMEXP, k_logsumexp),
        (op::CUMSUM, k_cumsum),
        (op::CUMPROD, k_cumprod),
        (op::_SOFTMAX, k_softmax),
        (op::_LOG_SOFTMAX, k_log_softmax),
        (op::SOFTMAX_INT, k_softmax_int),
        (op::LOG_SOFTMAX_INT, k_log_softmax_int),
        (op::COUNT_NONZERO_DIM_INTLIST, k_count_nonzero),
        (op::_LOCAL_SCALAR_DENSE, k_local_scalar_dense),
    ];
    for &(name, f) in table {
        r.register(name, f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::kernels::Isa;

    /// The halving tree by recursion, as [`pairwise_sum_by`] documents it.
    fn recursive(x: &[f32]) -> f64 {
        if x.len() <= RUN {
            let mut s = [-0.0f64; 16];
            for (i, &v) in x.iter().enumerate() {
                s[i % 16] += v as f64;
            }
            let halves = |s: &[f64]| (0..s.len() / 2).map(|i| s[i] + s[i + s.len() / 2]).collect::<Vec<_>>();
            return halves(&halves(&halves(&halves(&s))))[0];
        }
        let mid = x.len() / 2;
        recursive(&x[..mid]) + recursive(&x[mid..])
    }

    /// The walk with an explicit stack gives the recursion's bits on every vector path, for
    /// empty, short, odd and long inputs, and the team's sum gives them on any thread count.
    #[test]
    fn pairwise_sums_give_the_recursions_bits_on_every_path_and_thread_count() {
        let mut g = ::kernels::testing::Gen(0x5u64 << 40 | 0x7);
        let x: Vec<f32> = g.vec(PAIRWISE_TEAM_MIN * 3 + 1001).iter().map(|v| v * 1e3).collect();
        for n in [0, 1, 3, 17, 255, 256, 257, 1000, 4097, 100_003, x.len()] {
            let want = recursive(&x[..n]).to_bits();
            for isa in Isa::supported() {
                let got = ::kernels::isa::with(isa, || pairwise_sum_by(&x[..n], |v| v as f64));
                assert_eq!(got.to_bits(), want, "{isa} n = {n}");
            }
            for t in [1, 3] {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(t).build().unwrap();
                assert_eq!(pool.install(|| pairwise_sum_team(&x[..n], |v| v as f64)).to_bits(), want, "{t} threads, n = {n}");
            }
        }
        assert_eq!(pairwise_sum_by::<f32>(&[], |v| v as f64).to_bits(), (-0.0f64).to_bits());
    }
}
