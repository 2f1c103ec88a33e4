//! The GEMM entry point over strided matrices, batched products and the matrix-vector path
//! they take for one output row or column.

use super::*;
use super::real::*;

/// `c[m×n] = alpha·a·b + beta·c`, where `c` is row-major with leading dimension `ldc`. With
/// `beta == 0`, `c` is not read (NaNs in it do not propagate, as in BLAS and PyTorch).
pub(crate) fn gemm<T: Real>(
    op: &'static str,
    alpha: T,
    a: MatView<'_, T>,
    b: MatView<'_, T>,
    beta: T,
    c: &mut [T],
    ldc: usize,
) -> Result<()> {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    if b.rows != k {
        return Err(KernelError::new(op, format!("cannot multiply {m}x{k} and {}x{n} matrices", b.rows)));
    }
    if m == 0 || n == 0 {
        return Ok(());
    }
    if ldc < n || (m - 1) * ldc + n > c.len() {
        return Err(KernelError::new(op, "output buffer is too small"));
    }
    let combine = |dst: &mut T, v: T| {
        *dst = if beta == T::ZERO { alpha * v } else { alpha * v + beta * *dst };
    };
    if k == 0 {
        for i in 0..m {
            for dst in &mut c[i * ldc..i * ldc + n] {
                combine(dst, T::ZERO);
            }
        }
        return Ok(());
    }
    // Matrix-vector shapes: one output row (x·B) or one output column (A·x).
    if m == 1 || n == 1 {
        let (x, mat) = if m == 1 { (a.t(), b) } else { (b, a.t()) };
        // `x` is a k×1 column; `mat` is k×len; result[j] = Σ_p x[p]·mat[p, j].
        if let Some(y) = gemv(op, x, mat)? {
            for (j, v) in y.into_iter().enumerate() {
                let dst = if m == 1 { &mut c[j] } else { &mut c[j * ldc] };
                combine(dst, v);
            }
            return Ok(());
        }
    }
    if let Some(r) = T::gemm_native(op, alpha, a, b, beta, c, ldc) {
        return r;
    }
    // SAFETY: `MatView::new` checked both inputs against their storage, `c` was checked to hold
    // m rows of ldc elements, and `c` is a separate (mutable, hence unaliased) buffer.
    unsafe {
        T::gemm_raw(
            m,
            k,
            n,
            alpha,
            a.data.as_ptr().add(a.off),
            a.rs as isize,
            a.cs as isize,
            b.data.as_ptr().add(b.off),
            b.rs as isize,
            b.cs as isize,
            beta,
            c.as_mut_ptr(),
            ldc as isize,
            1,
        );
    }
    Ok(())
}

/// Batched products with at least this many multiply-adds in all split their batch entries
/// across the intra-op team (`crate::parallel`), whole entries per task, so each entry's sums
/// are the same on any number of threads. `bench_transformer`'s attention products
/// (`4 × 128 × 64 × 128`: 2²² multiply-adds, ~30 µs on one core) are above it; a split costs
/// about a microsecond when a worker is awake.
pub(super) const BATCH_PARALLEL_MIN_FMAS: usize = 1 << 20;

/// `c[bi] = alpha·A(bi)·B(bi) + beta·c[bi]` for every batch entry `bi < batch`, where
/// `views(bi)` gives the two `m × k` and `k × n` operands and `c` holds the entries one after
/// the other (`m·n` elements each, rows `n` apart). With `beta == 0`, `c` is not read.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm_batched<'v, T: Real>(
    op: &'static str,
    batch: usize,
    (m, k, n): (usize, usize, usize),
    alpha: T,
    beta: T,
    views: impl Fn(usize) -> Result<(MatView<'v, T>, MatView<'v, T>)> + Sync,
    c: &mut [T],
) -> Result<()> {
    let entry = m.checked_mul(n).ok_or_else(|| KernelError::new(op, "result is too large"))?;
    if batch.checked_mul(entry).is_none_or(|len| len > c.len()) {
        return Err(KernelError::new(op, "output buffer is too small"));
    }
    let one = |bi: usize, c: &mut [T]| -> Result<()> {
        let (a, b) = views(bi)?;
        gemm(op, alpha, a, b, beta, c, n)
    };
    let threads = crate::parallel::threads();
    let fmas = batch.saturating_mul(entry).saturating_mul(k);
    if threads <= 1 || batch < 2 || fmas < BATCH_PARALLEL_MIN_FMAS || entry == 0 {
        for bi in 0..batch {
            one(bi, &mut c[bi * entry..(bi + 1) * entry])?;
        }
        return Ok(());
    }
    let tasks = batch.min(threads * 4);
    let out = crate::parallel::SharedOut(c.as_mut_ptr());
    crate::parallel::try_for_each(tasks, |t| {
        for bi in batch * t / tasks..batch * (t + 1) / tasks {
            // SAFETY: `c` holds `batch` entries of `entry` elements (checked above) and every
            // entry is written by exactly one task.
            let c = unsafe { std::slice::from_raw_parts_mut(out.get().add(bi * entry), entry) };
            one(bi, c)?;
        }
        Ok(())
    })
}

/// `y[j] = Σ_p x[p]·mat[p, j]` when `mat` has a unit stride along either axis; `None` when
/// neither axis is contiguous (the caller falls back to GEMM).
pub(super) fn gemv<T: Real>(op: &'static str, x: MatView<'_, T>, mat: MatView<'_, T>) -> Result<Option<Vec<T>>> {
    let (k, len) = (mat.rows, mat.cols);
    if mat.rs != 1 && mat.cs != 1 {
        return Ok(None);
    }
    let xs: Vec<T>;
    let xv: &[T] = if x.rs == 1 || k == 1 {
        &x.data[x.off..x.off + k]
    } else {
        xs = (0..k).map(|p| x.at(p, 0)).collect();
        &xs
    };
    if mat.rs == 1 {
        // Each column of `mat` is contiguous along p: one dot product per output.
        Ok(Some((0..len).map(|j| T::dot(xv, &mat.data[mat.off + j * mat.cs..mat.off + j * mat.cs + k])).collect()))
    } else {
        // Each row of `mat` is contiguous.
        T::gemv_rows(op, xv, mat).map(Some)
    }
}

// ---------------------------------------------------------------------------------------------
// Batched strided products over tensors.
// ---------------------------------------------------------------------------------------------

/// Operand of a batched product: a tensor seen as `[batch..., rows, cols]` with explicit
/// strides (batch strides may be 0 for broadcasting).
pub(super) struct Operand<'t> {
    pub(super) t: &'t Tensor,
    pub(super) batch_strides: Vec<usize>,
    pub(super) rows: usize,
    pub(super) cols: usize,
    pub(super) rs: usize,
    pub(super) cs: usize,
}

pub(super) fn operand<'t>(
    t: &'t Tensor,
    batch_strides: Vec<usize>,
    rows: usize,
    cols: usize,
    rs: usize,
    cs: usize,
) -> Operand<'t> {
    Operand { t, batch_strides, rows, cols, rs, cs }
}

/// Offsets (relative to each operand's own offset) of every batch entry, row-major over
/// `batch`.
pub(super) fn batch_offsets(batch: &[usize], strides: &[usize]) -> Vec<usize> {
    let total: usize = batch.iter().product();
    let mut out = Vec::with_capacity(total);
    let mut idx = vec![0usize; batch.len()];
    for _ in 0..total {
        out.push(idx.iter().zip(strides).map(|(&i, &s)| i * s).sum());
        for d in (0..batch.len()).rev() {
            idx[d] += 1;
            if idx[d] < batch[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

/// `out[b] = alpha · a[b] · b[b] (+ beta · init[b])` over a broadcast batch; the result is a
/// contiguous `[batch..., m, n]` tensor of `a`'s dtype. `init`, when given, is already of
/// shape `[batch..., m, n]`, contiguous and of the same dtype.
pub(super) fn batched_product(
    op: &'static str,
    batch: &[usize],
    a: &Operand<'_>,
    b: &Operand<'_>,
    alpha: Scalar,
    beta: Scalar,
    init: Option<&Tensor>,
) -> Result<Tensor> {
    let dt = a.t.dtype();
    if b.t.dtype() != dt {
        return Err(KernelError::new(
            op,
            format!(
                "expected both operands to have the same dtype, got {} and {}",
                dt.torch_name(),
                b.t.dtype().torch_name()
            ),
        ));
    }
    if a.cols != b.rows {
        return Err(KernelError::new(
            op,
            format!("shapes cannot be multiplied ({}x{} and {}x{})", a.rows, a.cols, b.rows, b.cols),
        ));
    }
    let (m, n) = (a.rows, b.cols);
    let mut sizes = batch.to_vec();
    sizes.extend([m, n]);
    match dt {
        DType::F32 => batched_real::<f32>(op, batch, a, b, alpha, beta, init, &sizes),
        DType::F64 => batched_real::<f64>(op, batch, a, b, alpha, beta, init, &sizes),
        DType::F16 | DType::BF16 => {
            Err(KernelError::new(op, "internal error: half-precision operands must be widened first"))
        }
        DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64 => {
            crate::dispatch_dtype!(dt, T => batched_int::<T>(op, batch, a, b, alpha, beta, init, &sizes))
        }
        DType::Bool => Err(KernelError::new(op, "not implemented for dtype bool")),
        DType::C64 | DType::C128 => Err(crate::kernels::complex::refuse(op, dt)),
    }
}

/// Runs `f` on the tensors with `f16`/`bf16` ones widened to `f32`, and rounds the result
/// back to the half type (PyTorch accumulates half-precision products in `f32`).
pub(crate) fn widen_halves(ts: &[&Tensor], f: impl FnOnce(&[&Tensor]) -> Result<Tensor>) -> Result<Tensor> {
    let half = ts.iter().map(|t| t.dtype()).find(|d| matches!(d, DType::F16 | DType::BF16));
    let Some(half) = half else { return f(ts) };
    let wide: Vec<Tensor> = ts
        .iter()
        .map(|t| if t.dtype() == half { t.to_dtype(DType::F32) } else { Ok((*t).clone()) })
        .collect::<Result<_>>()?;
    let refs: Vec<&Tensor> = wide.iter().collect();
    f(&refs)?.to_dtype(half)
}

#[allow(clippy::too_many_arguments)]
pub(super) fn batched_real<T: Real>(
    op: &'static str,
    batch: &[usize],
    a: &Operand<'_>,
    b: &Operand<'_>,
    alpha: Scalar,
    beta: Scalar,
    init: Option<&Tensor>,
    sizes: &[usize],
) -> Result<Tensor> {
    let ad = a.t.storage_slice::<T>()?;
    let bd = b.t.storage_slice::<T>()?;
    let init_data = match init {
        Some(t) => Some(t.as_slice::<T>()?),
        None => None,
    };
    let (m, n) = (a.rows, b.cols);
    let a_offs = batch_offsets(batch, &a.batch_strides);
    let b_offs = batch_offsets(batch, &b.batch_strides);
    let alpha = T::of(alpha.to_f64());
    let beta = if init.is_some() { T::of(beta.to_f64()) } else { T::ZERO };
    Tensor::build::<T>(sizes, |out| {
        if let Some(src) = init_data {
            out.copy_from_slice(src);
        }
        let views = |bi: usize| -> Result<(MatView<'_, T>, MatView<'_, T>)> {
            Ok((
                MatView::new(op, ad, a.t.offset() + a_offs[bi], m, a.cols, a.rs, a.cs)?,
                MatView::new(op, bd, b.t.offset() + b_offs[bi], b.rows, n, b.rs, b.cs)?,
            ))
        };
        gemm_batched(op, a_offs.len(), (m, a.cols, n), alpha, beta, views, out)
    })
}

#[allow(clippy::too_many_arguments)]
pub(super) fn batched_int<T: Element>(
    op: &'static str,
    batch: &[usize],
    a: &Operand<'_>,
    b: &Operand<'_>,
    alpha: Scalar,
    beta: Scalar,
    init: Option<&Tensor>,
    sizes: &[usize],
) -> Result<Tensor> {
    let ad = a.t.storage_slice::<T>()?;
    let bd = b.t.storage_slice::<T>()?;
    let init_data = match init {
        Some(t) => Some(t.as_slice::<T>()?),
        None => None,
    };
    let (m, k, n) = (a.rows, a.cols, b.cols);
    let a_offs = batch_offsets(batch, &a.batch_strides);
    let b_offs = batch_offsets(batch, &b.batch_strides);
    let alpha = alpha.to_i64();
    let beta = beta.to_i64();
    Tensor::build::<T>(sizes, |out| {
        for (bi, (&ao, &bo)) in a_offs.iter().zip(&b_offs).enumerate() {
            let av = MatView::new(op, ad, a.t.offset() + ao, m, k, a.rs, a.cs)?;
            let bv = MatView::new(op, bd, b.t.offset() + bo, k, n, b.rs, b.cs)?;
            for i in 0..m {
                for j in 0..n {
                    let mut acc = 0i64;
                    for p in 0..k {
                        acc = acc.wrapping_add(av.at(i, p).to_i64().wrapping_mul(bv.at(p, j).to_i64()));
                    }
                    let idx = bi * m * n + i * n + j;
                    let mut v = alpha.wrapping_mul(acc);
                    if let Some(src) = init_data
                        && beta != 0
                    {
                        v = v.wrapping_add(beta.wrapping_mul(src[idx].to_i64()));
                    }
                    out[idx] = T::from_i64(v);
                }
            }
        }
        Ok(())
    })
}
