//! Block routines: f32 transcendental functions applied over a block of a fissioned body's
//! scratch with 512-bit vectors, compiled ahead of time and called by address.
//!
//! Cranelift's x86-64 backend emits 128-bit vectors only, so an inline expansion (`math`)
//! computes 4 lanes per instruction. On a host with AVX-512F and FMA, a phase of a fissioned
//! body whose cut is one of these functions computes the function's argument for the block
//! (or finds it in an input or an earlier cut) and calls the routine, which applies the
//! function to 16 lanes per instruction, the last partial vector under a mask. Each routine
//! is the inline expansion's algorithm operation for operation (the same range reduction,
//! polynomial, constants rounded to f32, FMA where the expansion uses it, divisions), so the
//! two give the same bits; `tests/accuracy.rs` checks that over its sweep, and both against
//! f64 libm.

use crate::group::Unary;

/// How kernels are generated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodegenOptions {
    /// Fissioned bodies call the 512-bit block routines for their f32 `exp`, `tanh`,
    /// `sigmoid`, `log`, `erf`, `silu` and `gelu` phases where the host has AVX-512F and FMA; `false` (or such a host lacking) expands
    /// the functions inline in 128-bit vectors. The results are the same bits either way.
    pub block_routines: bool,
}

impl Default for CodegenOptions {
    fn default() -> CodegenOptions {
        CodegenOptions { block_routines: true }
    }
}

/// A block routine: `dst[i] = f(src[i])` for `i < n`. `src` and `dst` may be the same
/// buffer (each element is read before its result is written); they must not otherwise
/// overlap.
pub(crate) type BlockFn = unsafe extern "C" fn(src: *const f32, dst: *mut f32, n: usize);

/// The block routine of the f32 function `u`, or `None` when there is none or the kernels'
/// ISA (`kernels::Isa`, which `DIALECT_ISA` may lower) is below AVX-512.
pub(crate) fn routine(u: Unary) -> Option<BlockFn> {
    #[cfg(target_arch = "x86_64")]
    {
        if !kernels::Isa::Avx512.available() {
            return None;
        }
        let f: BlockFn = match u {
            Unary::Exp => avx512::exp_block,
            Unary::Tanh => avx512::tanh_block,
            Unary::Sigmoid => avx512::sigmoid_block,
            Unary::Log => avx512::log_block,
            Unary::Erf => avx512::erf_block,
            Unary::Silu => avx512::silu_block,
            Unary::GeluErf => avx512::gelu_erf_block,
            Unary::GeluTanh => avx512::gelu_tanh_block,
            // `sin` and `cos` (which call the library for huge arguments) have none.
            _ => return None,
        };
        Some(f)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = u;
        None
    }
}

/// Turns off the Cranelift target flags of every extension above the process's ISA
/// (`kernels::Isa::process`), so that with `DIALECT_ISA` lowered the JIT's code runs on what
/// the kernels run on: no AVX-512 below `avx512`, no AVX, AVX2 or FMA on the generic path.
pub(crate) fn cap_flags(ib: &mut cranelift_codegen::isa::Builder) -> Result<(), String> {
    use cranelift_codegen::settings::Configurable;
    const AVX512: &[&str] = &["has_avx512bitalg", "has_avx512dq", "has_avx512f", "has_avx512vl", "has_avx512vbmi", "has_avx512vnni"];
    const AVX: &[&str] = &["has_avx", "has_avx2", "has_fma", "has_avx_vnni"];
    if !cfg!(target_arch = "x86_64") {
        return Ok(());
    }
    let isa = kernels::Isa::process();
    let off: Vec<&str> = match isa {
        kernels::Isa::Avx512 => Vec::new(),
        kernels::Isa::Avx2 => AVX512.to_vec(),
        kernels::Isa::Generic => AVX512.iter().chain(AVX).copied().collect(),
    };
    for flag in off {
        ib.set(flag, "false").map_err(|e| format!("{flag}: {e}"))?;
    }
    Ok(())
}

/// Prefetches, for reading (`write` false) or writing, the `bytes` bytes that follow the
/// `bytes` bytes at `p`: the next block of an operand a fissioned body streams through.
/// Prefetches never fault, so the range may extend past the operand's storage.
pub(crate) fn prefetch(write: bool) -> Option<PrefetchFn> {
    #[cfg(target_arch = "x86_64")]
    {
        Some(if write { prefetch_write } else { prefetch_read })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = write;
        None
    }
}

/// A prefetch routine (see [`prefetch`]).
pub(crate) type PrefetchFn = extern "C" fn(p: *const u8, bytes: usize);

/// Cache lines are 64 bytes.
#[cfg(target_arch = "x86_64")]
const LINE: usize = 64;

/// Prefetches the `bytes` bytes after the `bytes` at `p` (the next block), a line at a time,
/// with the hint `HINT`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn prefetch_next<const HINT: i32>(p: *const u8, bytes: usize) {
    let mut i = bytes;
    while i < 2 * bytes {
        // SAFETY: a prefetch is a hint: it reads nothing the program sees and faults on no
        // address, so any address will do (`wrapping_add` forms it without a provenance claim).
        unsafe { std::arch::x86_64::_mm_prefetch::<HINT>(p.wrapping_add(i) as *const i8) };
        i += LINE;
    }
}

#[cfg(target_arch = "x86_64")]
extern "C" fn prefetch_read(p: *const u8, bytes: usize) {
    prefetch_next::<{ std::arch::x86_64::_MM_HINT_T0 }>(p, bytes);
}

#[cfg(target_arch = "x86_64")]
extern "C" fn prefetch_write(p: *const u8, bytes: usize) {
    prefetch_next::<{ std::arch::x86_64::_MM_HINT_ET0 }>(p, bytes);
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use runtime::kernels::fastmath::{ERF_CUT, ERF_SMALL, ERFC_BIG};

    /// The constants of `math`'s expansions (see its `exp_parts`), as f32 where a lane holds them.
    use crate::math::{EXP_MAGIC, EXP_POLY, EXP_SHIFT, LN2_HI, LN2_LO, LOG_POLY};
    const LOG2_E: f32 = std::f64::consts::LOG2_E as f32;
    const EXP_HI: f32 = crate::math::EXP_HI as f32;
    const EXP_LO: f32 = crate::math::EXP_LO as f32;
    const TANH_EXP_MAX: f32 = crate::math::TANH_EXP_MAX as f32;
    const SIGN: i32 = i32::MIN;

    /// Lanes per vector.
    const W: usize = 16;

    macro_rules! block_fn {
        ($(#[$doc:meta])* $name:ident => $lanes:ident) => {
            $(#[$doc])*
            ///
            /// # Safety
            /// `src` must be valid for reading and `dst` for writing `n` f32 values; they are
            /// the same buffer or do not overlap. The host must have AVX-512F and FMA
            /// ([`super::routine`] hands it out only then).
            #[target_feature(enable = "avx512f,fma")]
            pub(super) unsafe extern "C" fn $name(src: *const f32, dst: *mut f32, n: usize) {
                let mut i = 0;
                while i + W <= n {
                    // SAFETY: `i + 16 <= n`, so the 16 values at `i` are in both buffers.
                    unsafe {
                        let x = _mm512_loadu_ps(src.add(i));
                        _mm512_storeu_ps(dst.add(i), $lanes(x));
                    }
                    i += W;
                }
                if i < n {
                    // `n - i` is in 1..16: the mask selects that many low lanes.
                    let m: __mmask16 = (1u32 << (n - i)) as u16 - 1;
                    // SAFETY: masked-off lanes are neither read nor written (no fault on them);
                    // the selected ones are the values `i..n`, inside both buffers.
                    unsafe {
                        let x = _mm512_maskz_loadu_ps(m, src.add(i));
                        _mm512_mask_storeu_ps(dst.add(i), m, $lanes(x));
                    }
                }
            }
        };
    }

    block_fn!(
        /// `exp` over a block.
        exp_block => exp
    );
    block_fn!(
        /// `tanh` over a block.
        tanh_block => tanh
    );
    block_fn!(
        /// `sigmoid` over a block.
        sigmoid_block => sigmoid
    );
    block_fn!(
        /// `log` over a block.
        log_block => log
    );
    block_fn!(
        /// `erf` over a block.
        erf_block => erf
    );
    block_fn!(
        /// `silu` over a block.
        silu_block => silu
    );
    block_fn!(
        /// `gelu` (the `erf` form) over a block.
        gelu_erf_block => gelu_erf
    );
    block_fn!(
        /// `gelu(x, approximate='tanh')` over a block.
        gelu_tanh_block => gelu_tanh
    );

    /// `m ? a : b`.
    #[inline]
    #[target_feature(enable = "avx512f,fma")]
    fn sel(m: __mmask16, a: __m512, b: __m512) -> __m512 {
        _mm512_mask_blend_ps(m, b, a)
    }

    /// The polynomial with coefficients `c` (lowest degree first) at `s`, by Horner's rule
    /// with FMA (as `math`'s `horner`).
    #[inline]
    #[target_feature(enable = "avx512f,fma")]
    fn horner(s: __m512, c: &[f64]) -> __m512 {
        let mut p = splat(c[c.len() - 1] as f32);
        for &k in c[..c.len() - 1].iter().rev() {
            p = _mm512_fmadd_ps(p, s, splat(k as f32));
        }
        p
    }

    /// `|x|`.
    #[inline]
    #[target_feature(enable = "avx512f,fma")]
    fn abs(x: __m512) -> __m512 {
        _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(i32::MAX)))
    }

    /// `|a|` with the sign of `s`.
    #[inline]
    #[target_feature(enable = "avx512f,fma")]
    fn copysign(a: __m512, s: __m512) -> __m512 {
        let mag = _mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(i32::MAX));
        let sign = _mm512_and_si512(_mm512_castps_si512(s), _mm512_set1_epi32(SIGN));
        _mm512_castsi512_ps(_mm512_or_si512(mag, sign))
    }

    /// `log(x)` as `math`'s `log_f32`: `x = 2^e m`, `m` in `[sqrt(2)/2, sqrt(2)]`,
    /// `log(m) = 2 atanh(f / (2 + f))`; denormals scaled by `2^23` first.
    #[inline]
    #[target_feature(enable = "avx512f,fma")]
    fn log(x: __m512) -> __m512 {
        let small = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(x, splat(f32::MIN_POSITIVE));
        let xs = sel(small, _mm512_mul_ps(x, splat(8_388_608.0)), x);
        let ebias = _mm512_maskz_mov_epi32(small, _mm512_set1_epi32(-23));
        let xi = _mm512_castps_si512(xs);
        let ex = _mm512_and_si512(_mm512_srli_epi32::<23>(xi), _mm512_set1_epi32(0xff));
        let ex = _mm512_add_epi32(_mm512_sub_epi32(ex, _mm512_set1_epi32(127)), ebias);
        let mi = _mm512_or_si512(_mm512_and_si512(xi, _mm512_set1_epi32(0x007f_ffff)), _mm512_set1_epi32(0x3f80_0000));
        let m = _mm512_castsi512_ps(mi);
        let big = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(m, splat(std::f64::consts::SQRT_2 as f32));
        let m = sel(big, _mm512_mul_ps(m, splat(0.5)), m);
        let ex = _mm512_mask_add_epi32(ex, big, ex, _mm512_set1_epi32(1));
        let f = _mm512_add_ps(m, splat(-1.0));
        let two_f = _mm512_add_ps(f, splat(2.0));
        let s = _mm512_div_ps(f, two_f);
        let z = _mm512_mul_ps(s, s);
        let r = _mm512_mul_ps(z, horner(z, &LOG_POLY));
        let hfsq = _mm512_mul_ps(_mm512_mul_ps(f, f), splat(0.5));
        let ef = _mm512_cvtepi32_ps(ex);
        let shr = _mm512_mul_ps(s, _mm512_add_ps(hfsq, r));
        let inner = _mm512_add_ps(shr, _mm512_mul_ps(ef, splat(-LN2_LO as f32)));
        let inner = _mm512_sub_ps(f, _mm512_sub_ps(hfsq, inner));
        let y = _mm512_add_ps(_mm512_mul_ps(ef, splat(-LN2_HI as f32)), inner);
        // +inf → +inf, ±0 → -inf, negative or NaN → NaN.
        let y = sel(_mm512_cmp_ps_mask::<_CMP_EQ_OQ>(x, splat(f32::INFINITY)), splat(f32::INFINITY), y);
        let y = sel(_mm512_cmp_ps_mask::<_CMP_EQ_OQ>(x, _mm512_setzero_ps()), splat(f32::NEG_INFINITY), y);
        sel(_mm512_cmp_ps_mask::<_CMP_NGE_UQ>(x, _mm512_setzero_ps()), splat(f32::NAN), y)
    }

    /// `erf(x)` as `math`'s `erf_f32`: `x P(x^2)` below 0.875, `1 - Q(|x|)` up to 4 (with
    /// the sign of `x`), ±1 beyond.
    #[inline]
    #[target_feature(enable = "avx512f,fma")]
    fn erf(x: __m512) -> __m512 {
        let a = abs(x);
        let x2 = _mm512_mul_ps(x, x);
        let s = _mm512_add_ps(_mm512_mul_ps(x2, splat((2.0 / (ERF_CUT * ERF_CUT)) as f32)), splat(-1.0));
        let ys = _mm512_mul_ps(x, horner(s, &ERF_SMALL));
        let s2 = _mm512_add_ps(_mm512_mul_ps(a, splat((2.0 / 3.125) as f32)), splat((-4.875 / 3.125) as f32));
        let one = splat(1.0);
        let yb = _mm512_sub_ps(one, horner(s2, &ERFC_BIG));
        let yb = sel(_mm512_cmp_ps_mask::<_CMP_GE_OQ>(a, splat(4.0)), one, yb);
        let yb = copysign(yb, x);
        sel(_mm512_cmp_ps_mask::<_CMP_LT_OQ>(a, splat(ERF_CUT as f32)), ys, yb)
    }

    /// `silu(x) = x sigmoid(x)` as `math`'s `silu_f32` (`x e^{x}` formed as
    /// `(x e^{x + 22}) e^{-22}` far in the negative range).
    #[inline]
    #[target_feature(enable = "avx512f,fma")]
    fn silu(x: __m512) -> __m512 {
        let a = abs(x);
        let far = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(a, splat(80.0));
        let shifted = _mm512_sub_ps(splat(22.0), a);
        let na = neg_abs(x);
        let es = exp_nonpositive(sel(far, shifted, na));
        let c = sel(far, splat((-22.0f64).exp() as f32), splat(1.0));
        let e = _mm512_mul_ps(es, c);
        let xs = _mm512_mul_ps(_mm512_mul_ps(x, es), c);
        let pos = _mm512_cmp_ps_mask::<_CMP_GE_OQ>(x, _mm512_setzero_ps());
        let num = sel(pos, x, xs);
        _mm512_div_ps(num, _mm512_add_ps(e, splat(1.0)))
    }

    /// `0.5 x (1 + erf(x / sqrt 2))`.
    #[inline]
    #[target_feature(enable = "avx512f,fma")]
    fn gelu_erf(x: __m512) -> __m512 {
        let e = erf(_mm512_mul_ps(x, splat(std::f32::consts::FRAC_1_SQRT_2)));
        _mm512_mul_ps(_mm512_mul_ps(x, splat(0.5)), _mm512_add_ps(e, splat(1.0)))
    }

    /// `0.5 x (1 + tanh(k (x + 0.044715 x^3)))`.
    #[inline]
    #[target_feature(enable = "avx512f,fma")]
    fn gelu_tanh(x: __m512) -> __m512 {
        let c = _mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(x, splat(0.044715)), x), x);
        let inner = _mm512_mul_ps(_mm512_add_ps(x, c), splat(0.797_884_6));
        let th = tanh(inner);
        _mm512_mul_ps(_mm512_mul_ps(x, splat(0.5)), _mm512_add_ps(th, splat(1.0)))
    }

    #[inline]
    #[target_feature(enable = "avx512f,fma")]
    fn splat(c: f32) -> __m512 {
        _mm512_set1_ps(c)
    }

    /// `-|x|`: the sign bit set.
    #[inline]
    #[target_feature(enable = "avx512f,fma")]
    fn neg_abs(x: __m512) -> __m512 {
        _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(x), _mm512_set1_epi32(SIGN)))
    }

    /// How `exp` forms `2^k` (as `math::Scale`).
    #[derive(Clone, Copy)]
    enum Scale {
        TwoStep,
        Shift(i32),
    }

    /// `math`'s `exp_parts`: the argument clamped to `[lo, hi]` (`c < x ? c : x`, so NaN
    /// passes: `vminps c, x`), `x = k ln2 + r`, `u = e^r - 1`, and `2^k` as one or two factors.
    #[inline]
    #[target_feature(enable = "avx512f,fma")]
    fn exp_parts(x: __m512, lo: f32, hi: Option<f32>, scale: Scale) -> (__m512, Option<__m512>, __m512) {
        let mut xc = x;
        if let Some(hi) = hi {
            xc = _mm512_min_ps(splat(hi), xc);
        }
        xc = _mm512_max_ps(splat(lo), xc);
        let magic = match scale {
            Scale::TwoStep => EXP_MAGIC as f32,
            Scale::Shift(c) => (EXP_MAGIC + 127.0 + c as f64) as f32,
        };
        let kx = _mm512_mul_ps(xc, splat(LOG2_E));
        let kt = _mm512_add_ps(kx, splat(magic));
        let kf = _mm512_add_ps(kt, splat(-magic));
        let r = _mm512_fmadd_ps(kf, splat(LN2_HI as f32), xc);
        let r = _mm512_fmadd_ps(kf, splat(LN2_LO as f32), r);
        let p = horner(r, &EXP_POLY);
        let r2 = _mm512_mul_ps(r, r);
        let u = _mm512_fmadd_ps(r2, p, r);
        let kbits = _mm512_castps_si512(kt);
        match scale {
            Scale::TwoStep => {
                let k = _mm512_sub_epi32(kbits, _mm512_set1_epi32((EXP_MAGIC as f32).to_bits() as i32));
                let k1 = _mm512_srai_epi32::<1>(k);
                let k2 = _mm512_sub_epi32(k, k1);
                (pow2i(k1), Some(pow2i(k2)), u)
            }
            Scale::Shift(_) => (_mm512_castsi512_ps(_mm512_slli_epi32::<23>(kbits)), None, u),
        }
    }

    /// `2^k` for lanes `k` in `[-126, 127]`.
    #[inline]
    #[target_feature(enable = "avx512f,fma")]
    fn pow2i(k: __m512i) -> __m512 {
        _mm512_castsi512_ps(_mm512_slli_epi32::<23>(_mm512_add_epi32(k, _mm512_set1_epi32(127))))
    }

    /// `(1 + u) s1 s2`.
    #[inline]
    #[target_feature(enable = "avx512f,fma")]
    fn exp_join(s1: __m512, s2: Option<__m512>, u: __m512) -> __m512 {
        let y = _mm512_mul_ps(_mm512_add_ps(u, splat(1.0)), s1);
        match s2 {
            Some(s2) => _mm512_mul_ps(y, s2),
            None => y,
        }
    }

    #[inline]
    #[target_feature(enable = "avx512f,fma")]
    fn exp(x: __m512) -> __m512 {
        let (s1, s2, u) = exp_parts(x, EXP_LO, Some(EXP_HI), Scale::TwoStep);
        exp_join(s1, s2, u)
    }

    /// `exp(x)` for `x <= 0` or NaN (`math`'s `exp_nonpositive`).
    #[inline]
    #[target_feature(enable = "avx512f,fma")]
    fn exp_nonpositive(x: __m512) -> __m512 {
        let (s1, s2, u) = exp_parts(x, EXP_LO, None, Scale::Shift(EXP_SHIFT));
        _mm512_mul_ps(exp_join(s1, s2, u), splat(2f64.powi(-EXP_SHIFT) as f32))
    }

    /// `tanh(x) = -m / (2 + m)` with the sign of `x`, `m = e^{-2|x|} - 1 = 2^k u + (2^k - 1)`.
    #[inline]
    #[target_feature(enable = "avx512f,fma")]
    fn tanh(x: __m512) -> __m512 {
        let na = neg_abs(x);
        let y = _mm512_add_ps(na, na);
        let (s, _, u) = exp_parts(y, -TANH_EXP_MAX, None, Scale::Shift(0));
        let sm1 = _mm512_add_ps(s, splat(-1.0));
        let m = _mm512_fmadd_ps(s, u, sm1);
        let den = _mm512_sub_ps(splat(-2.0), m);
        let th = _mm512_div_ps(m, den);
        let sign = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(SIGN));
        _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(th), sign))
    }

    /// `sigmoid(x)`: `1 / (1 + e^{-|x|})` for `x >= 0`, `e^{-|x|} / (1 + e^{-|x|})` otherwise.
    #[inline]
    #[target_feature(enable = "avx512f,fma")]
    fn sigmoid(x: __m512) -> __m512 {
        let e = exp_nonpositive(neg_abs(x));
        let one = splat(1.0);
        let pos = _mm512_cmp_ps_mask::<_CMP_GE_OQ>(x, _mm512_setzero_ps());
        let num = _mm512_mask_blend_ps(pos, e, one);
        let den = _mm512_add_ps(one, e);
        _mm512_div_ps(num, den)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values that exercise every branch: specials, denormals, the clamps' edges, and a spread.
    fn inputs() -> Vec<f32> {
        let mut xs = vec![
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            1e-45,
            -1e-45,
            f32::MIN_POSITIVE,
            f32::MAX,
            f32::MIN,
            88.7,
            89.5,
            -103.9,
            -104.5,
            20.0,
            -20.0,
        ];
        let mut bits = 0x0010_0000u32;
        while xs.len() < 203 {
            xs.push(f32::from_bits(bits));
            xs.push(-f32::from_bits(bits));
            bits = bits.wrapping_mul(5).wrapping_add(0x0123_4567) & 0x7fff_ffff;
        }
        xs
    }

    /// The next block of an operand may lie past its storage, or be no memory at all.
    #[test]
    fn prefetching_past_the_end_of_an_operand_does_not_fault() {
        let v = vec![1f32; 16];
        for write in [false, true] {
            let Some(f) = prefetch(write) else { return };
            f(v.as_ptr().cast(), 64);
            f(std::ptr::null(), 1 << 16);
            f(usize::MAX as *const u8, 4096);
        }
        assert_eq!(v, vec![1f32; 16]);
    }

    fn same(a: f32, b: f32) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    /// Every length from 0 to 40 (full vectors and every masked tail), in place and not, at
    /// every alignment mod 16 lanes: each result equals the one computed in a full vector, and
    /// nothing past `n` is written.
    #[test]
    fn partial_blocks_compute_each_element_alone_and_write_nothing_past_the_end() {
        let xs = inputs();
        for u in [Unary::Exp, Unary::Tanh, Unary::Sigmoid, Unary::Log, Unary::Erf, Unary::Silu, Unary::GeluErf, Unary::GeluTanh] {
            let Some(f) = routine(u) else { return };
            let mut full = vec![0f32; xs.len()];
            // SAFETY: both buffers hold `xs.len()` values.
            unsafe { f(xs.as_ptr(), full.as_mut_ptr(), xs.len()) };
            for start in 0..16 {
                for n in 0..=40 {
                    let src = &xs[start..start + n];
                    let mut dst = vec![7.5f32; n + 3];
                    // SAFETY: `src` has `n` values, `dst` at least `n`.
                    unsafe { f(src.as_ptr(), dst.as_mut_ptr(), n) };
                    let mut inplace = src.to_vec();
                    // SAFETY: one buffer of `n` values, read before written element by element.
                    unsafe { f(inplace.as_ptr(), inplace.as_mut_ptr(), n) };
                    for i in 0..n {
                        assert!(same(dst[i], full[start + i]), "{u:?} n={n} at {i}: {} vs {}", dst[i], full[start + i]);
                        assert!(same(inplace[i], full[start + i]), "{u:?} n={n} in place at {i}");
                    }
                    assert!(dst[n..].iter().all(|&v| v == 7.5), "{u:?} n={n}: wrote past the end");
                }
            }
        }
    }
}
