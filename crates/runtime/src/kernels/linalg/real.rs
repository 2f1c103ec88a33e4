//! The floating-point element trait the heavy kernels compute in (`Real`, for `f32` and `f64`):
//! its GEMM, dot and `axpy` loops, compiled for AVX2+FMA where the CPU has it.

use super::*;

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
pub(super) fn has_fma() -> bool {
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
pub(super) fn gemv_rows_f32(op: &'static str, x: &[f32], mat: MatView<'_, f32>) -> Result<Vec<f32>> {
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
pub(super) fn gemm_f32_native(
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
