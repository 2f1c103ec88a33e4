//! Matrix products (`mm`, `bmm`, `addmm`, `baddbmm`, `mv`, `addmv`, `dot`, `matmul`, `linear`)
//! over strided tensors, plus the helpers the other heavy-kernel files share: the floating-point element
//! trait (`Real`), compute-dtype dispatch and the GEMM entry point.
//!
//! `f32` products run on the microkernel of `kernels::packed` where the CPU has one of its
//! paths (AVX-512F or AVX2+FMA), other floating-point products through `matrixmultiply`; both
//! take arbitrary row and column strides, so transposed and permuted views are multiplied
//! without a copy. Matrix-vector shapes (one output row or column: batch-1 latency) use this
//! file's own dot loops (compiled for AVX2+FMA when the CPU has it) where the matrix's columns
//! are contiguous, and the register-blocked kernel of `kernels::gemv` (`f32`; `axpy` loops for
//! `f64`) where its rows are. `f16`/`bf16` are computed in `f32`; integer
//! products use a plain loop with wrapping arithmetic (as PyTorch's integer GEMM does).

use dialect_aten::op;
use std::ops::{Add, AddAssign, Div, Mul, MulAssign, Neg, Sub, SubAssign};

use ir::DType;

use super::{Args, KernelRegistry};
use crate::tensor::{Element, KernelError, Result, Scalar, Tensor};
use crate::value::IValue;

// ---------------------------------------------------------------------------------------------
// Helpers shared by the heavy kernels (conv, pool, norm, index, sort, pad, interp).
// ---------------------------------------------------------------------------------------------

/// Wraps a list of tensors as a kernel result.
pub(crate) fn outs(ts: impl IntoIterator<Item = Tensor>) -> Vec<IValue> {
    ts.into_iter().map(IValue::Tensor).collect()
}

/// A floating-point element type the heavy kernels compute in (`f32` or `f64`).
pub(crate) trait Real:
    Element
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
    + std::iter::Sum
{
    const ZERO: Self;
    const ONE: Self;
    const NAN: Self;
    fn of(v: f64) -> Self;
    fn floor(self) -> Self;
    fn abs(self) -> Self;
    fn is_nan(self) -> bool;
    /// `C[m×n] (row-major, leading dim ldc) = alpha·A·B + beta·C` through `matrixmultiply`.
    ///
    /// # Safety
    /// Every element addressed through the pointers and strides must be in bounds, and `c`
    /// must not overlap `a` or `b`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm_raw(
        m: usize,
        k: usize,
        n: usize,
        alpha: Self,
        a: *const Self,
        rsa: isize,
        csa: isize,
        b: *const Self,
        rsb: isize,
        csb: isize,
        beta: Self,
        c: *mut Self,
        rsc: isize,
        csc: isize,
    );
    /// `c = alpha·a·b + beta·c` as [`gemm`] documents it, on this crate's own microkernel
    /// (`kernels::packed`) when it has one for `Self` on this CPU; `None` leaves the product
    /// to [`Real::gemm_raw`].
    fn gemm_native(
        _op: &'static str,
        _alpha: Self,
        _a: MatView<'_, Self>,
        _b: MatView<'_, Self>,
        _beta: Self,
        _c: &mut [Self],
        _ldc: usize,
    ) -> Option<Result<()>> {
        None
    }
    /// Dot product of two equal-length contiguous slices.
    fn dot(a: &[Self], b: &[Self]) -> Self;
    /// `y += alpha · x` over equal-length contiguous slices.
    fn axpy(alpha: Self, x: &[Self], y: &mut [Self]);
    /// `y[j] = Σ_p x[p]·mat[p, j]` for a matrix with contiguous rows (`mat.cs == 1`): the
    /// rows scaled by `x[p]` and added up.
    fn gemv_rows(_op: &'static str, x: &[Self], mat: MatView<'_, Self>) -> Result<Vec<Self>> {
        let mut y = vec![Self::ZERO; mat.cols];
        for (p, &xp) in x.iter().enumerate() {
            let start = mat.off + p * mat.rs;
            Self::axpy(xp, &mat.data[start..start + mat.cols], &mut y);
        }
        Ok(y)
    }
}

macro_rules! simd_loops {
    ($t:ty, $lanes:expr, $dot_plain:ident, $dot_fma:ident, $axpy_plain:ident, $axpy_fma:ident) => {
        #[inline(always)]
        fn $dot_plain(a: &[$t], b: &[$t]) -> $t {
            let mut acc = [0 as $t; $lanes];
            let mut ca = a.chunks_exact($lanes);
            let mut cb = b.chunks_exact($lanes);
            for (x, y) in (&mut ca).zip(&mut cb) {
                for l in 0..$lanes {
                    acc[l] += x[l] * y[l];
                }
            }
            let mut s: $t = acc.iter().sum();
            for (x, y) in ca.remainder().iter().zip(cb.remainder()) {
                s += x * y;
            }
            s
        }

        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        fn $dot_fma(a: &[$t], b: &[$t]) -> $t {
            let mut acc = [0 as $t; $lanes];
            let mut ca = a.chunks_exact($lanes);
            let mut cb = b.chunks_exact($lanes);
            for (x, y) in (&mut ca).zip(&mut cb) {
                for l in 0..$lanes {
                    acc[l] = x[l].mul_add(y[l], acc[l]);
                }
            }
            let mut s: $t = acc.iter().sum();
            for (x, y) in ca.remainder().iter().zip(cb.remainder()) {
                s += x * y;
            }
            s
        }

        #[inline(always)]
        fn $axpy_plain(alpha: $t, x: &[$t], y: &mut [$t]) {
            for (yi, &xi) in y.iter_mut().zip(x) {
                *yi += alpha * xi;
            }
        }

        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        fn $axpy_fma(alpha: $t, x: &[$t], y: &mut [$t]) {
            for (yi, &xi) in y.iter_mut().zip(x) {
                *yi = alpha.mul_add(xi, *yi);
            }
        }
    };
}

simd_loops!(f32, 16, dot_f32_plain, dot_f32_fma, axpy_f32_plain, axpy_f32_fma);
simd_loops!(f64, 8, dot_f64_plain, dot_f64_fma, axpy_f64_plain, axpy_f64_fma);

#[cfg(target_arch = "x86_64")]
fn has_fma() -> bool {
    ::kernels::Isa::Avx2.available()
}

macro_rules! real_impl {
    ($t:ident, $gemm:path, $dot_plain:ident, $dot_fma:ident, $axpy_plain:ident, $axpy_fma:ident $(, $native:ident, $rows:ident)?) => {
        impl Real for $t {
            $(
            fn gemv_rows(op: &'static str, x: &[Self], mat: MatView<'_, Self>) -> Result<Vec<Self>> {
                $rows(op, x, mat)
            }
            fn gemm_native(
                op: &'static str,
                alpha: Self,
                a: MatView<'_, Self>,
                b: MatView<'_, Self>,
                beta: Self,
                c: &mut [Self],
                ldc: usize,
            ) -> Option<Result<()>> {
                $native(op, alpha, a, b, beta, c, ldc)
            }
            )?
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const NAN: Self = $t::NAN;
            #[inline(always)]
            fn of(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn floor(self) -> Self {
                $t::floor(self)
            }
            #[inline(always)]
            fn abs(self) -> Self {
                $t::abs(self)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                $t::is_nan(self)
            }
            unsafe fn gemm_raw(
                m: usize,
                k: usize,
                n: usize,
                alpha: Self,
                a: *const Self,
                rsa: isize,
                csa: isize,
                b: *const Self,
                rsb: isize,
                csb: isize,
                beta: Self,
                c: *mut Self,
                rsc: isize,
                csc: isize,
            ) {
                // SAFETY: forwarded from the caller's contract.
                unsafe { $gemm(m, k, n, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc) }
            }
            fn dot(a: &[Self], b: &[Self]) -> Self {
                #[cfg(target_arch = "x86_64")]
                if has_fma() {
                    // SAFETY: the CPU supports AVX2 and FMA (checked just above).
                    return unsafe { $dot_fma(a, b) };
                }
                $dot_plain(a, b)
            }
            fn axpy(alpha: Self, x: &[Self], y: &mut [Self]) {
                #[cfg(target_arch = "x86_64")]
                if has_fma() {
                    // SAFETY: the CPU supports AVX2 and FMA (checked just above).
                    return unsafe { $axpy_fma(alpha, x, y) };
                }
                $axpy_plain(alpha, x, y)
            }
        }
    };
}

real_impl!(f32, matrixmultiply::sgemm, dot_f32_plain, dot_f32_fma, axpy_f32_plain, axpy_f32_fma, gemm_f32_native, gemv_rows_f32);

/// `f32` matrix-vector products over contiguous rows run on the register-blocked kernel of
/// `kernels::gemv`, which keeps a block of outputs in vector registers over all of `k` (the
/// `axpy` loop loads and stores the whole output once per row), and splits the columns of large
/// products across the intra-op team.
fn gemv_rows_f32(op: &'static str, x: &[f32], mat: MatView<'_, f32>) -> Result<Vec<f32>> {
    let cols = ::kernels::gemv::Columns::in_place(op, mat.data, mat.off, mat.rows, mat.cols, mat.rs)?;
    let mut y = vec![0.0; mat.cols];
    ::kernels::gemv::gemv(op, x, cols, &::kernels::gemm::Epilogue::PLAIN, &mut y)?;
    Ok(y)
}

/// The `f32` products [`gemm`] runs on the microkernel of `kernels::packed` (any strides; `B`
/// read in place or packed per call): every one on a CPU with one of its paths. Measured on
/// the attention products of `bench_transformer` (`4 × 128 × 64 · 64 × 128` and
/// `4 × 128 × 128 · 128 × 64`), this replaced `matrixmultiply`, which packs both operands per
/// call, at a fraction of its time.
fn gemm_f32_native(
    op: &'static str,
    alpha: f32,
    a: MatView<'_, f32>,
    b: MatView<'_, f32>,
    beta: f32,
    c: &mut [f32],
    ldc: usize,
) -> Option<Result<()>> {
    let isa = ::kernels::Isa::simd()?;
    let ep = ::kernels::gemm::Epilogue { alpha, beta, ..::kernels::gemm::Epilogue::PLAIN };
    Some(::kernels::gemm::gemm_activations(op, isa, a, b, &ep, c, ldc).map_err(Into::into))
}
real_impl!(f64, matrixmultiply::dgemm, dot_f64_plain, dot_f64_fma, axpy_f64_plain, axpy_f64_fma);

/// The dtype a floating-point kernel computes in: `f32` for `f16`/`bf16`/`f32`, `f64` for
/// `f64`; an error naming the op for anything else.
pub(crate) fn compute_dtype(op: &'static str, dt: DType) -> Result<DType> {
    match dt {
        DType::F16 | DType::BF16 | DType::F32 => Ok(DType::F32),
        DType::F64 => Ok(DType::F64),
        _ => Err(KernelError::new(op, format!("not implemented for dtype {}", dt.torch_name()))),
    }
}

/// Runs a floating-point kernel body with `$T` bound to the compute type of `$dtype`
/// (`f32` for `f16`/`bf16`/`f32`, `f64` for `f64`).
macro_rules! with_real {
    ($op:expr, $dtype:expr, $T:ident => $body:expr) => {
        match $crate::kernels::linalg::compute_dtype($op, $dtype)? {
            ir::DType::F64 => {
                type $T = f64;
                $body
            }
            _ => {
                type $T = f32;
                $body
            }
        }
    };
}
pub(crate) use with_real;

pub(crate) use ::kernels::mat::MatView;

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
const BATCH_PARALLEL_MIN_FMAS: usize = 1 << 20;

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
fn gemv<T: Real>(op: &'static str, x: MatView<'_, T>, mat: MatView<'_, T>) -> Result<Option<Vec<T>>> {
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
struct Operand<'t> {
    t: &'t Tensor,
    batch_strides: Vec<usize>,
    rows: usize,
    cols: usize,
    rs: usize,
    cs: usize,
}

fn operand<'t>(
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
fn batch_offsets(batch: &[usize], strides: &[usize]) -> Vec<usize> {
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
fn batched_product(
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
fn batched_real<T: Real>(
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
fn batched_int<T: Element>(
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

fn expect_dim(op: &'static str, what: &str, t: &Tensor, d: usize) -> Result<()> {
    if t.dim() != d {
        return Err(KernelError::new(op, format!("{what} must be a {d}-D tensor, got {}-D {:?}", t.dim(), t.sizes())));
    }
    Ok(())
}

/// Whole-tensor matrix operand of a 2-D tensor.
fn mat2d(t: &Tensor) -> Operand<'_> {
    operand(t, vec![], t.sizes()[0], t.sizes()[1], t.strides()[0], t.strides()[1])
}

/// A tensor broadcast to `sizes` as a contiguous tensor of `dtype` (for `self` of addmm-like
/// ops).
fn broadcast_init(op: &'static str, t: &Tensor, sizes: &[usize], dtype: DType) -> Result<Tensor> {
    if t.dtype() != dtype {
        return Err(KernelError::new(
            op,
            format!("self has dtype {} but the product has {}", t.dtype().torch_name(), dtype.torch_name()),
        ));
    }
    let out = Tensor::zeros(dtype, sizes)?;
    // `copy_` broadcasts `t` to `sizes` and errors if it cannot.
    out.copy_(t).map_err(|e| KernelError::new(op, e.message))?;
    Ok(out)
}

fn mm(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = "aten.mm";
    let a = Args::new(OP, args, 2)?;
    let r = widen_halves(&[a.tensor(0)?, a.tensor(1)?], |t| {
        expect_dim(OP, "self", t[0], 2)?;
        expect_dim(OP, "mat2", t[1], 2)?;
        batched_product(OP, &[], &mat2d(t[0]), &mat2d(t[1]), Scalar::Int(1), Scalar::Int(0), None)
    })?;
    Ok(outs([r]))
}

fn addmm(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = "aten.addmm";
    let a = Args::new(OP, args, 3)?;
    let beta = a.opt_scalar(3)?.unwrap_or(Scalar::Int(1));
    let alpha = a.opt_scalar(4)?.unwrap_or(Scalar::Int(1));
    let r = widen_halves(&[a.tensor(0)?, a.tensor(1)?, a.tensor(2)?], |t| {
        let (s, x, y) = (t[0], t[1], t[2]);
        expect_dim(OP, "mat1", x, 2)?;
        expect_dim(OP, "mat2", y, 2)?;
        let sizes = [x.sizes()[0], y.sizes()[1]];
        let init = broadcast_init(OP, s, &sizes, x.dtype())?;
        let init = if beta.to_f64() == 0.0 { None } else { Some(init) };
        batched_product(OP, &[], &mat2d(x), &mat2d(y), alpha, beta, init.as_ref())
    })?;
    Ok(outs([r]))
}

fn bmm_operands<'t>(op: &'static str, x: &'t Tensor, y: &'t Tensor) -> Result<(Vec<usize>, Operand<'t>, Operand<'t>)> {
    expect_dim(op, "batch1", x, 3)?;
    expect_dim(op, "batch2", y, 3)?;
    if x.sizes()[0] != y.sizes()[0] {
        return Err(KernelError::new(op, format!("batch sizes differ: {:?} and {:?}", x.sizes(), y.sizes())));
    }
    let (xs, xt) = (x.sizes(), x.strides());
    let (ys, yt) = (y.sizes(), y.strides());
    Ok((
        vec![xs[0]],
        operand(x, vec![xt[0]], xs[1], xs[2], xt[1], xt[2]),
        operand(y, vec![yt[0]], ys[1], ys[2], yt[1], yt[2]),
    ))
}

fn bmm(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = "aten.bmm";
    let a = Args::new(OP, args, 2)?;
    let r = widen_halves(&[a.tensor(0)?, a.tensor(1)?], |t| {
        let (batch, x, y) = bmm_operands(OP, t[0], t[1])?;
        batched_product(OP, &batch, &x, &y, Scalar::Int(1), Scalar::Int(0), None)
    })?;
    Ok(outs([r]))
}

fn baddbmm(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = "aten.baddbmm";
    let a = Args::new(OP, args, 3)?;
    let beta = a.opt_scalar(3)?.unwrap_or(Scalar::Int(1));
    let alpha = a.opt_scalar(4)?.unwrap_or(Scalar::Int(1));
    let r = widen_halves(&[a.tensor(0)?, a.tensor(1)?, a.tensor(2)?], |t| {
        let (batch, x, y) = bmm_operands(OP, t[1], t[2])?;
        let sizes = [batch[0], x.rows, y.cols];
        let init = broadcast_init(OP, t[0], &sizes, x.t.dtype())?;
        let init = if beta.to_f64() == 0.0 { None } else { Some(init) };
        batched_product(OP, &batch, &x, &y, alpha, beta, init.as_ref())
    })?;
    Ok(outs([r]))
}

/// `[m, k] · [k]` as a product with a one-column matrix, reshaped to `[m]`.
fn mv_impl(
    op: &'static str,
    m: &Tensor,
    v: &Tensor,
    alpha: Scalar,
    beta: Scalar,
    init: Option<&Tensor>,
) -> Result<Tensor> {
    expect_dim(op, "mat", m, 2)?;
    expect_dim(op, "vec", v, 1)?;
    let vo = operand(v, vec![], v.sizes()[0], 1, v.strides()[0], 1);
    let init2 = init.map(|t| reshape_contiguous(t, &[m.sizes()[0], 1])).transpose()?;
    let r = batched_product(op, &[], &mat2d(m), &vo, alpha, beta, init2.as_ref())?;
    reshape_contiguous(&r, &[m.sizes()[0]])
}

/// A contiguous tensor with new sizes over the same storage (`view` of a contiguous tensor).
pub(crate) fn reshape_contiguous(t: &Tensor, sizes: &[usize]) -> Result<Tensor> {
    let c = t.contiguous()?;
    let strides = crate::tensor::contiguous_strides(sizes);
    Tensor::from_storage(c.storage().clone(), c.dtype(), sizes, &strides, c.offset())
}

fn mv(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = "aten.mv";
    let a = Args::new(OP, args, 2)?;
    let r =
        widen_halves(&[a.tensor(0)?, a.tensor(1)?], |t| mv_impl(OP, t[0], t[1], Scalar::Int(1), Scalar::Int(0), None))?;
    Ok(outs([r]))
}

fn addmv(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = "aten.addmv";
    let a = Args::new(OP, args, 3)?;
    let beta = a.opt_scalar(3)?.unwrap_or(Scalar::Int(1));
    let alpha = a.opt_scalar(4)?.unwrap_or(Scalar::Int(1));
    let r = widen_halves(&[a.tensor(0)?, a.tensor(1)?, a.tensor(2)?], |t| {
        let (s, m, v) = (t[0], t[1], t[2]);
        expect_dim(OP, "mat", m, 2)?;
        let init = broadcast_init(OP, s, &[m.sizes()[0]], m.dtype())?;
        let init = if beta.to_f64() == 0.0 { None } else { Some(init) };
        mv_impl(OP, m, v, alpha, beta, init.as_ref())
    })?;
    Ok(outs([r]))
}

fn dot(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = "aten.dot";
    let a = Args::new(OP, args, 2)?;
    let r = widen_halves(&[a.tensor(0)?, a.tensor(1)?], |t| {
        let (x, y) = (t[0], t[1]);
        expect_dim(OP, "self", x, 1)?;
        expect_dim(OP, "tensor", y, 1)?;
        if x.sizes()[0] != y.sizes()[0] {
            return Err(KernelError::new(
                OP,
                format!("inconsistent tensor size: {} and {} elements", x.sizes()[0], y.sizes()[0]),
            ));
        }
        let xo = operand(x, vec![], 1, x.sizes()[0], 0, x.strides()[0]);
        let yo = operand(y, vec![], y.sizes()[0], 1, y.strides()[0], 0);
        let r = batched_product(OP, &[], &xo, &yo, Scalar::Int(1), Scalar::Int(0), None)?;
        reshape_contiguous(&r, &[])
    })?;
    Ok(outs([r]))
}

/// `torch.matmul`: dot, mv, vector-matrix, mm, or a broadcast batched product.
pub(crate) fn matmul_tensors(op: &'static str, x: &Tensor, y: &Tensor) -> Result<Tensor> {
    let (dx, dy) = (x.dim(), y.dim());
    if dx == 0 || dy == 0 {
        return Err(KernelError::new(op, "both arguments to matmul need to be at least 1D"));
    }
    // Logical matrices: a vector on the left is a 1×k row, on the right a k×1 column.
    let (xs, xt) = (x.sizes(), x.strides());
    let (ys, yt) = (y.sizes(), y.strides());
    let (m, k, rsa, csa, xb, xbs) = if dx == 1 {
        (1, xs[0], 0, xt[0], &xs[..0], &xt[..0])
    } else {
        (xs[dx - 2], xs[dx - 1], xt[dx - 2], xt[dx - 1], &xs[..dx - 2], &xt[..dx - 2])
    };
    let (k2, n, rsb, csb, yb, ybs) = if dy == 1 {
        (ys[0], 1, yt[0], 0, &ys[..0], &yt[..0])
    } else {
        (ys[dy - 2], ys[dy - 1], yt[dy - 2], yt[dy - 1], &ys[..dy - 2], &yt[..dy - 2])
    };
    if k != k2 {
        return Err(KernelError::new(op, format!("shapes {xs:?} and {ys:?} cannot be multiplied ({k} vs {k2})")));
    }
    let batch = crate::tensor::broadcast_shapes(xb, yb).map_err(|e| KernelError::new(op, e.message))?;
    let bstrides = |b: &[usize], s: &[usize]| -> Vec<usize> {
        let pad = batch.len() - b.len();
        (0..batch.len()).map(|d| if d < pad || b[d - pad] == 1 { 0 } else { s[d - pad] }).collect()
    };
    let ao = operand(x, bstrides(xb, xbs), m, k, rsa, csa);
    let bo = operand(y, bstrides(yb, ybs), k, n, rsb, csb);
    let r = batched_product(op, &batch, &ao, &bo, Scalar::Int(1), Scalar::Int(0), None)?;
    let mut sizes = batch.clone();
    if dx > 1 {
        sizes.push(m);
    }
    if dy > 1 {
        sizes.push(n);
    }
    reshape_contiguous(&r, &sizes)
}

fn matmul(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = "aten.matmul";
    let a = Args::new(OP, args, 2)?;
    let r = widen_halves(&[a.tensor(0)?, a.tensor(1)?], |t| matmul_tensors(OP, t[0], t[1]))?;
    Ok(outs([r]))
}

/// `y = x · wᵀ + b` over the last dim of `x`.
pub(crate) fn linear_tensors(op: &'static str, x: &Tensor, w: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    if x.dim() == 0 {
        return Err(KernelError::new(op, "input must have at least one dimension"));
    }
    let inf = *x.sizes().last().unwrap_or(&0);
    let (outf, wo) = match w.dim() {
        2 => {
            if w.sizes()[1] != inf {
                return Err(KernelError::new(
                    op,
                    format!("input {:?} and weight {:?} cannot be multiplied", x.sizes(), w.sizes()),
                ));
            }
            (Some(w.sizes()[0]), operand(w, vec![], inf, w.sizes()[0], w.strides()[1], w.strides()[0]))
        }
        1 => {
            if w.sizes()[0] != inf {
                return Err(KernelError::new(
                    op,
                    format!("input {:?} and weight {:?} cannot be multiplied", x.sizes(), w.sizes()),
                ));
            }
            (None, operand(w, vec![], inf, 1, w.strides()[0], 0))
        }
        d => return Err(KernelError::new(op, format!("weight must be 1-D or 2-D, got {d}-D"))),
    };
    let lead: Vec<usize> = x.sizes()[..x.dim() - 1].to_vec();
    let rows: usize = lead.iter().product();
    // Flatten the leading dims of x into rows (a copy only when they do not merge).
    let xc;
    let xo = if x.dim() == 1 {
        operand(x, vec![], 1, inf, 0, x.strides()[0])
    } else if x.dim() == 2 {
        operand(x, vec![], rows, inf, x.strides()[0], x.strides()[1])
    } else {
        xc = x.contiguous()?;
        operand(&xc, vec![], rows, inf, inf, 1)
    };
    let n = outf.unwrap_or(1);
    let init = match bias {
        Some(b) => Some(broadcast_init(op, b, &[rows, n], x.dtype())?),
        None => None,
    };
    let r = batched_product(op, &[], &xo, &wo, Scalar::Int(1), Scalar::Int(1), init.as_ref())?;
    let mut sizes = lead;
    if let Some(o) = outf {
        sizes.push(o);
    }
    reshape_contiguous(&r, &sizes)
}

fn linear(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = "aten.linear";
    let a = Args::new(OP, args, 2)?;
    let (x, w, b) = (a.tensor(0)?, a.tensor(1)?, a.opt_tensor(2)?);
    let mut ts = vec![x, w];
    ts.extend(b);
    let r = widen_halves(&ts, |t| linear_tensors(OP, t[0], t[1], t.get(2).copied()))?;
    Ok(outs([r]))
}

pub fn register(r: &mut KernelRegistry) {
    r.register(op::MM, mm);
    r.register(op::ADDMM, addmm);
    r.register(op::BMM, bmm);
    r.register("aten.baddbmm", baddbmm);
    r.register("aten.mv", mv);
    r.register("aten.addmv", addmv);
    r.register("aten.dot", dot);
    r.register(op::MATMUL, matmul);
    r.register(op::LINEAR, linear);
}
