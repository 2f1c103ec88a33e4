//! Branch-free `f32` transcendental functions for the interpreter's kernels, and a slice map
//! that runs them as many lanes wide as the CPU allows.
//!
//! These are the approximations of the JIT (`crates/jit/src/math.rs`), written as plain Rust
//! arithmetic with selects instead of branches so that LLVM vectorizes the loops that call
//! them: range reduction plus polynomials, special values (NaN, ±inf, ±0, denormals) handled
//! by the same selects. Products and sums are rounded separately (Rust never contracts them),
//! and the one polynomial written with fused multiply-adds ([`gelu_erf_f32`]'s) calls
//! `mul_add`, which rounds once on every path (an FMA instruction in the AVX2 and AVX-512
//! loops, the library's `fmaf` elsewhere); so the baseline (SSE2) loop and the AVX2 and
//! AVX-512 loops round identically, and the scalar form (used for strided elements and single
//! values) agrees bit for bit with both. Accuracy (ulp against f64 libm) is that of the JIT's
//! versions, recorded in `docs/performance.md`; the unit tests below re-check it. The `tanh`
//! and `erf` coefficient tables are defined once, here, in f64: the JIT emits them as they are
//! and these kernels use them rounded to f32 at compile time. The exact GELU is the exception:
//! it evaluates `erf` once per element, as one polynomial over the whole range that matters
//! ([`GELU_ERF`]), where the JIT evaluates its two-range `erf`.

/// `tanh(x) = x + x^3 P(s)` for `|x| < 0.55`, with `s = x^2 * 2/0.3025 - 1` on `[-1, 1]`.
pub const TANH_SMALL: [f64; 7] = [
    -0.31432997516888167,
    0.017907231256043217,
    -0.0010328257202717858,
    5.964454424676825e-05,
    -3.444929939723705e-06,
    2.001428672317372e-07,
    -1.1560011487737093e-08,
];
const TANH_SMALL_F32: [f32; 7] = to_f32(&TANH_SMALL);
pub const TANH_CUT: f64 = 0.55;
const TANH_CUT_F32: f32 = TANH_CUT as f32;

/// `erf(x) = x P(s)` for `|x| < 0.875`, with `s = x^2 * 2/0.765625 - 1`.
pub const ERF_SMALL: [f64; 8] = [
    0.9995275084270684,
    -0.11501988579715686,
    0.012622533418736814,
    -0.0011217030743489453,
    8.216009823303061e-05,
    -5.089762953880417e-06,
    2.736336925934779e-07,
    -1.287893036661103e-08,
];
const ERF_SMALL_F32: [f32; 8] = to_f32(&ERF_SMALL);
pub const ERF_CUT: f64 = 0.875;
const ERF_CUT_F32: f32 = ERF_CUT as f32;

/// `erfc(a) = Q(s)` for `0.875 <= a < 4`, with `s = (2a - 4.875) / 3.125`.
pub const ERFC_BIG: [f64; 15] = [
    0.0005665432545804631,
    -0.00463372699438161,
    0.017649008993042056,
    -0.04105065012558408,
    0.06379016952585927,
    -0.06701304594636115,
    0.04369096765951234,
    -0.009057307124359919,
    -0.014771420940179188,
    0.01792060760841257,
    -0.006151729450482672,
    -0.004337592520055485,
    0.003802330632661703,
    0.000209240813459625,
    -0.0006133955744833959,
];
const ERFC_BIG_F32: [f32; 15] = to_f32(&ERFC_BIG);

/// `erf(a / √2) ≈ P(t)` for `0 <= a < GELU_CUT`, with `t = a·(2/GELU_CUT) - 1` on `[-1, 1]`:
/// the exact GELU's `Φ`, for `|x|` up to where `erf` rounds to 1 in `f32` (`erfc(5.5/√2)` is
/// 3.8e-8). Fitted for absolute error (it is added to 1) by iteratively reweighted least
/// squares, each coefficient rounded to `f32` in turn and the higher ones refitted to the
/// remainder; the truncation error is 5e-9 and the evaluation's roundings dominate (2e-7).
pub const GELU_ERF: [f32; 19] = [
    0.994_040_5,
    0.050_014_593,
    -0.189_120_26,
    0.413_694_95,
    -0.543_704,
    0.353_176,
    0.102_400_46,
    -0.429_443_3,
    0.326_484_53,
    0.045_070_56,
    -0.263_694_2,
    0.144_013_73,
    0.077_910_63,
    -0.107_439_28,
    0.000_763_031_9,
    0.036_190_312,
    -0.006_235_470_5,
    -0.005_277_597_3,
    0.001_154_741_2,
];
/// Where [`GELU_ERF`] ends: beyond it `Φ` is taken as exactly 0 or 1.
pub const GELU_CUT: f32 = 5.5;

/// A coefficient table rounded to `f32`, at compile time.
const fn to_f32<const N: usize>(c: &[f64; N]) -> [f32; N] {
    let mut out = [0.0f32; N];
    let mut i = 0;
    while i < N {
        out[i] = c[i] as f32;
        i += 1;
    }
    out
}

#[inline(always)]
fn horner<const N: usize>(s: f32, c: &[f32; N]) -> f32 {
    let mut p = c[N - 1];
    let mut i = N - 1;
    while i > 0 {
        i -= 1;
        p = p * s + c[i];
    }
    p
}

/// [`horner`] with fused multiply-adds (one rounding per step; see the module's note on
/// `mul_add`).
#[inline(always)]
fn horner_fma<const N: usize>(s: f32, c: &[f32; N]) -> f32 {
    let mut p = c[N - 1];
    let mut i = N - 1;
    while i > 0 {
        i -= 1;
        p = p.mul_add(s, c[i]);
    }
    p
}

/// `|a|` with the sign of `s`.
#[inline(always)]
fn copysign(a: f32, s: f32) -> f32 {
    f32::from_bits((a.to_bits() & 0x7fff_ffff) | (s.to_bits() & 0x8000_0000))
}

#[inline(always)]
fn abs(x: f32) -> f32 {
    f32::from_bits(x.to_bits() & 0x7fff_ffff)
}

/// `1.5·2^23`: adding it to `|x| < 2^22` rounds to an integer (nearest, ties to even), which
/// the low mantissa bits of the sum then hold.
const ROUND_MAGIC: f32 = 12_582_912.0;

/// `2^k` for `k` in `[-126, 127]`.
#[inline(always)]
fn pow2i(k: i32) -> f32 {
    f32::from_bits((k.wrapping_add(127) as u32) << 23)
}

// The literals below are the exact decimal values of the f32 constants.
/// [`exp_f32`]'s largest argument with a finite result; above it the result is `inf`.
#[allow(clippy::excessive_precision)]
const EXP_HI: f32 = 88.722_839_355_468_75;
/// [`exp_f32`]'s smallest argument with a nonzero result; below it the result is 0.
#[allow(clippy::excessive_precision)]
const EXP_LO: f32 = -103.972_084_045_410_16;
/// [`exp_f32`]'s Cody–Waite split of `ln 2` (the first exact in 9 bits).
#[allow(clippy::excessive_precision)]
const EXP_LN2: [f32; 2] = [0.693_359_375, -2.121_944_4e-4];
/// [`exp_f32`]'s polynomial: `e^r = 1 + r + r^2 P(r)`, `P` the Taylor terms from `1/2!`.
const EXP_POLY: [f32; 6] = [1.0 / 2.0, 1.0 / 6.0, 1.0 / 24.0, 1.0 / 120.0, 1.0 / 720.0, 1.0 / 5040.0];

/// `exp(x)`: `x = k ln2 + r`, `|r| <= ln2/2`, degree-7 Taylor polynomial of `e^r`, scaled by
/// `2^k` in two steps so that results in the denormal range round once.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    const HI: f32 = EXP_HI;
    const LO: f32 = EXP_LO;
    // Lanes outside [LO, HI] compute on 0 and are replaced at the end: clamping them to LO
    // would make a denormal product, which costs a microcode assist per lane (a softmax over
    // a causal mask is half -inf). NaN passes through (comparisons with NaN are false).
    let xc = if x < LO || x > HI { 0.0 } else { x };
    // `k = round(x / ln 2)`, read from the bits of the rounded sum instead of an `as` cast
    // (whose saturation does not vectorize); NaN lanes give garbage `k` but a NaN result.
    let t = xc * std::f32::consts::LOG2_E + ROUND_MAGIC;
    let kf = t - ROUND_MAGIC;
    let k = (t.to_bits() as i32).wrapping_sub(ROUND_MAGIC.to_bits() as i32);
    let r = xc - kf * EXP_LN2[0];
    let r = r - kf * EXP_LN2[1];
    let p = horner(r, &EXP_POLY);
    let e = (r * r * p + r) + 1.0;
    let k1 = k >> 1;
    let k2 = k.wrapping_sub(k1);
    let y = e * pow2i(k1) * pow2i(k2);
    let y = if x > HI { f32::INFINITY } else { y };
    if x < LO { 0.0 } else { y }
}

/// [`exp_f32`] of 16 lanes with AVX-512F intrinsics: the same operations in the same order,
/// lane by lane (no fused multiply-add), so the same bits; for loops whose partial sums or
/// masks the compiler does not keep in registers when it vectorizes the scalar form itself
/// (softmax's rows).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub fn exp_f32x16(x: std::arch::x86_64::__m512) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::*;
    let (lo, hi) = (_mm512_set1_ps(EXP_LO), _mm512_set1_ps(EXP_HI));
    let magic = _mm512_set1_ps(ROUND_MAGIC);
    let below = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(x, lo);
    let above = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(x, hi);
    let xc = _mm512_maskz_mov_ps(!(below | above), x);
    let t = _mm512_add_ps(_mm512_mul_ps(xc, _mm512_set1_ps(std::f32::consts::LOG2_E)), magic);
    let kf = _mm512_sub_ps(t, magic);
    let k = _mm512_sub_epi32(_mm512_castps_si512(t), _mm512_castps_si512(magic));
    let r = _mm512_sub_ps(xc, _mm512_mul_ps(kf, _mm512_set1_ps(EXP_LN2[0])));
    let r = _mm512_sub_ps(r, _mm512_mul_ps(kf, _mm512_set1_ps(EXP_LN2[1])));
    let mut p = _mm512_set1_ps(EXP_POLY[5]);
    for &c in EXP_POLY[..5].iter().rev() {
        p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(c));
    }
    let e = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(_mm512_mul_ps(r, r), p), r), _mm512_set1_ps(1.0));
    let k1 = _mm512_srai_epi32::<1>(k);
    let k2 = _mm512_sub_epi32(k, k1);
    let bias = _mm512_set1_epi32(127);
    let p1 = _mm512_castsi512_ps(_mm512_slli_epi32::<23>(_mm512_add_epi32(k1, bias)));
    let p2 = _mm512_castsi512_ps(_mm512_slli_epi32::<23>(_mm512_add_epi32(k2, bias)));
    let y = _mm512_mul_ps(_mm512_mul_ps(e, p1), p2);
    let y = _mm512_mask_mov_ps(y, above, _mm512_set1_ps(f32::INFINITY));
    _mm512_mask_mov_ps(y, below, _mm512_setzero_ps())
}

/// [`exp_f32`] of 8 lanes with AVX2 intrinsics: the same operations in the same order, lane
/// by lane (no fused multiply-add), so the same bits (as [`exp_f32x16`] on AVX-512).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub fn exp_f32x8(x: std::arch::x86_64::__m256) -> std::arch::x86_64::__m256 {
    use std::arch::x86_64::*;
    let (lo, hi) = (_mm256_set1_ps(EXP_LO), _mm256_set1_ps(EXP_HI));
    let magic = _mm256_set1_ps(ROUND_MAGIC);
    let below = _mm256_cmp_ps::<_CMP_LT_OQ>(x, lo);
    let above = _mm256_cmp_ps::<_CMP_GT_OQ>(x, hi);
    let xc = _mm256_andnot_ps(_mm256_or_ps(below, above), x);
    let t = _mm256_add_ps(_mm256_mul_ps(xc, _mm256_set1_ps(std::f32::consts::LOG2_E)), magic);
    let kf = _mm256_sub_ps(t, magic);
    let k = _mm256_sub_epi32(_mm256_castps_si256(t), _mm256_castps_si256(magic));
    let r = _mm256_sub_ps(xc, _mm256_mul_ps(kf, _mm256_set1_ps(EXP_LN2[0])));
    let r = _mm256_sub_ps(r, _mm256_mul_ps(kf, _mm256_set1_ps(EXP_LN2[1])));
    let mut p = _mm256_set1_ps(EXP_POLY[5]);
    for &c in EXP_POLY[..5].iter().rev() {
        p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(c));
    }
    let e = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(r, r), p), r), _mm256_set1_ps(1.0));
    let k1 = _mm256_srai_epi32::<1>(k);
    let k2 = _mm256_sub_epi32(k, k1);
    let bias = _mm256_set1_epi32(127);
    let p1 = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(k1, bias)));
    let p2 = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(k2, bias)));
    let y = _mm256_mul_ps(_mm256_mul_ps(e, p1), p2);
    let y = _mm256_blendv_ps(y, _mm256_set1_ps(f32::INFINITY), above);
    _mm256_andnot_ps(below, y)
}

/// `tanh(x)`: an odd polynomial below 0.55, `1 - 2 / (e^{2|x|} + 1)` with the sign of `x` above.
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    let a = abs(x);
    let x2 = x * x;
    let s = x2 * (2.0 / (TANH_CUT_F32 * TANH_CUT_F32)) + -1.0;
    let p = horner(s, &TANH_SMALL_F32);
    let ys = x + x2 * x * p;
    let e = exp_f32(a + a);
    let yb = copysign(1.0 - 2.0 / (e + 1.0), x);
    if a < TANH_CUT_F32 { ys } else { yb }
}

/// `sigmoid(x) = 1 / (1 + e^{-x})`, computed from `e^{-|x|}` so that no step overflows.
#[inline(always)]
pub fn sigmoid_f32(x: f32) -> f32 {
    let e = exp_f32(-abs(x));
    let num = if x >= 0.0 { 1.0 } else { e };
    num / (1.0 + e)
}

/// `erf(x)`: `x P(x^2)` below 0.875, `1 - Q(|x|)` up to 4 (with the sign of `x`), ±1 beyond.
#[inline(always)]
pub fn erf_f32(x: f32) -> f32 {
    let a = abs(x);
    let s = x * x * (2.0 / (ERF_CUT_F32 * ERF_CUT_F32)) + -1.0;
    let ys = x * horner(s, &ERF_SMALL_F32);
    let s2 = a * (2.0 / 3.125) + (-4.875 / 3.125);
    let yb = 1.0 - horner(s2, &ERFC_BIG_F32);
    let yb = if a >= 4.0 { 1.0 } else { yb };
    let yb = copysign(yb, x);
    if a < ERF_CUT_F32 { ys } else { yb }
}

/// `gelu(x) = 0.5 x (1 + erf(x / sqrt 2))`, with `erf(|x| / √2)` from the one polynomial
/// [`GELU_ERF`] (18 fused multiply-adds) and the sign of `x`; 1 from [`GELU_CUT`] on. Only the
/// absolute error of that `erf` matters (the sum with 1 absorbs it): 2.2e-7 at most, so
/// `gelu` is within 2.6e-7 relative for `x > 0` and 2.3e-7 absolute for `x < 0`, as close to
/// PyTorch as the two-range `erf` was (whose `1 + erf` cancels the same way). NaN stays NaN,
/// `gelu(inf) = inf`, `gelu(-inf)` is NaN (`-inf · 0`, as PyTorch computes it).
#[inline(always)]
pub fn gelu_erf_f32(x: f32) -> f32 {
    let a = abs(x);
    // Past the cut (or for NaN) the polynomial's value is replaced, so `t` needs no clamp.
    let t = a.mul_add(2.0 / GELU_CUT, -1.0);
    let p = horner_fma(t, &GELU_ERF);
    let e = if a < GELU_CUT { p } else { 1.0 };
    (x * 0.5) * (copysign(e, x) + 1.0)
}

/// [`gelu_erf_f32`] of `N` vectors of 16 lanes with AVX-512F intrinsics: the same operations
/// in the same order (the same fused multiply-adds), so the same bits; for a matrix product's
/// epilogue, which applies it to a tile just stored. The polynomials of the `N` vectors are
/// evaluated step by step together: each is a chain of 18 dependent multiply-adds, so one
/// vector at a time waits on the latency of every step, while 4 to 8 chains keep the FMA
/// units busy.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
#[allow(clippy::needless_range_loop)]
pub fn gelu_erf_f32x16_n<const N: usize>(x: [std::arch::x86_64::__m512; N]) -> [std::arch::x86_64::__m512; N] {
    use std::arch::x86_64::*;
    let sign = _mm512_set1_epi32(i32::MIN);
    let xi: [__m512i; N] = std::array::from_fn(|i| _mm512_castps_si512(x[i]));
    let t: [__m512; N] = std::array::from_fn(|i| {
        let a = _mm512_castsi512_ps(_mm512_andnot_si512(sign, xi[i]));
        _mm512_fmadd_ps(a, _mm512_set1_ps(2.0 / GELU_CUT), _mm512_set1_ps(-1.0))
    });
    let mut p = [_mm512_set1_ps(GELU_ERF[GELU_ERF.len() - 1]); N];
    for &c in GELU_ERF[..GELU_ERF.len() - 1].iter().rev() {
        let c = _mm512_set1_ps(c);
        for i in 0..N {
            p[i] = _mm512_fmadd_ps(p[i], t[i], c);
        }
    }
    std::array::from_fn(|i| {
        let a = _mm512_castsi512_ps(_mm512_andnot_si512(sign, xi[i]));
        // Past the cut, and for NaN (the comparison is ordered), 1.
        let inside = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(a, _mm512_set1_ps(GELU_CUT));
        let e = _mm512_castps_si512(_mm512_mask_mov_ps(_mm512_set1_ps(1.0), inside, p[i]));
        let e = _mm512_castsi512_ps(_mm512_or_si512(_mm512_andnot_si512(sign, e), _mm512_and_si512(sign, xi[i])));
        _mm512_mul_ps(_mm512_mul_ps(x[i], _mm512_set1_ps(0.5)), _mm512_add_ps(e, _mm512_set1_ps(1.0)))
    })
}

/// [`gelu_erf_f32`] of 8 lanes with AVX2 and FMA intrinsics (the same bits, as
/// [`gelu_erf_f32x16_n`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
pub fn gelu_erf_f32x8(x: std::arch::x86_64::__m256) -> std::arch::x86_64::__m256 {
    use std::arch::x86_64::*;
    let sign = _mm256_castsi256_ps(_mm256_set1_epi32(i32::MIN));
    let a = _mm256_andnot_ps(sign, x);
    let t = _mm256_fmadd_ps(a, _mm256_set1_ps(2.0 / GELU_CUT), _mm256_set1_ps(-1.0));
    let mut p = _mm256_set1_ps(GELU_ERF[GELU_ERF.len() - 1]);
    for &c in GELU_ERF[..GELU_ERF.len() - 1].iter().rev() {
        p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(c));
    }
    let inside = _mm256_cmp_ps::<_CMP_LT_OQ>(a, _mm256_set1_ps(GELU_CUT));
    let e = _mm256_blendv_ps(_mm256_set1_ps(1.0), p, inside);
    let e = _mm256_or_ps(_mm256_andnot_ps(sign, e), _mm256_and_ps(sign, x));
    _mm256_mul_ps(_mm256_mul_ps(x, _mm256_set1_ps(0.5)), _mm256_add_ps(e, _mm256_set1_ps(1.0)))
}

/// `gelu(x, 'tanh') = 0.5 x (1 + tanh(k (x + 0.044715 x^3)))`.
#[inline(always)]
pub fn gelu_tanh_f32(x: f32) -> f32 {
    let inner = (x + x * 0.044715 * x * x) * 0.797_884_6;
    (x * 0.5) * (tanh_f32(inner) + 1.0)
}

/// `dst[i] = f(src[i])` over two slices of the same length (the shorter one bounds the loop),
/// vectorized as wide as the CPU allows (16 lanes with AVX-512F, 8 with AVX2, 4 with SSE2;
/// see [`crate::wide`]). `f` must be a branch-free composition of the functions above for
/// the loop to vectorize.
#[inline(always)]
pub fn map_slice(src: &[f32], dst: &mut [f32], f: impl Fn(f32) -> f32 + Copy) {
    crate::wide::widest(
        #[inline(always)]
        || {
            for (o, &x) in dst.iter_mut().zip(src) {
                *o = f(x);
            }
        },
    )
}

/// In-place form of [`map_slice`].
#[inline(always)]
pub fn map_in_place(data: &mut [f32], f: impl Fn(f32) -> f32 + Copy) {
    crate::wide::widest(
        #[inline(always)]
        || {
            for x in data.iter_mut() {
                *x = f(*x);
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::{self, Isa};

    fn ulp_diff(a: f32, b: f32) -> u32 {
        if a.is_nan() && b.is_nan() || a == b {
            return 0;
        }
        let key = |x: f32| {
            let i = x.to_bits() as i32;
            if i < 0 { i32::MIN.wrapping_sub(i) } else { i }
        };
        key(a).wrapping_sub(key(b)).unsigned_abs()
    }

    fn sweep(f: fn(f32) -> f32, truth: fn(f64) -> f64, max_ulp: u32) {
        let mut worst = (0u32, 0.0f32);
        let mut check = |x: f32| {
            let want = truth(x as f64) as f32;
            let got = f(x);
            let d = ulp_diff(got, want);
            if d > worst.0 {
                worst = (d, x);
            }
        };
        for bits in (0..=u32::MAX).step_by(4099) {
            check(f32::from_bits(bits));
        }
        for i in -200_000..=200_000 {
            check(i as f32 * 1e-4);
        }
        for x in [0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN] {
            check(x);
        }
        assert!(worst.0 <= max_ulp, "worst error {} ulp at {:e}", worst.0, worst.1);
    }

    #[test]
    fn accuracy_against_f64() {
        sweep(exp_f32, f64::exp, 2);
        sweep(tanh_f32, f64::tanh, 8);
        sweep(sigmoid_f32, |x| 1.0 / (1.0 + (-x).exp()), 8);
        sweep(erf_f32, libm::erf, 8);
    }

    /// The exact GELU against `0.5 x (1 + erf(x/√2))` in `f64`: relative error for `x > 0`
    /// (where `Φ ≥ 1/2`), absolute for `x < 0` (where `1 + erf` cancels), over every 257th
    /// `f32` with a normal result and a fine grid of the range where the polynomial is used;
    /// special values exactly.
    #[test]
    fn gelu_accuracy_against_f64() {
        let truth = |x: f32| {
            let x = x as f64;
            0.5 * x * (1.0 + libm::erf(x * std::f64::consts::FRAC_1_SQRT_2))
        };
        let (mut rel, mut abs_neg) = (0f64, 0f64);
        let mut check = |x: f32| {
            let (got, want) = (gelu_erf_f32(x) as f64, truth(x));
            // Results below the normal range keep fewer bits than any approximation's error.
            if !x.is_finite() || want.abs() < f32::MIN_POSITIVE as f64 {
                return;
            }
            if x > 0.0 {
                rel = rel.max((got - want).abs() / want);
            } else {
                abs_neg = abs_neg.max((got - want).abs());
            }
        };
        for bits in (0..=u32::MAX).step_by(257) {
            check(f32::from_bits(bits));
        }
        for i in -700_000..=700_000 {
            check(i as f32 * 1e-5);
        }
        assert!(rel <= 3e-7, "relative error {rel:e} for x > 0");
        assert!(abs_neg <= 2.5e-7, "absolute error {abs_neg:e} for x < 0");
        assert_eq!(gelu_erf_f32(f32::INFINITY), f32::INFINITY);
        assert!(gelu_erf_f32(f32::NEG_INFINITY).is_nan());
        assert!(gelu_erf_f32(f32::NAN).is_nan());
        assert_eq!(gelu_erf_f32(0.0).to_bits(), 0f32.to_bits());
        assert_eq!(gelu_erf_f32(-0.0).to_bits(), (-0f32).to_bits());
        assert_eq!(gelu_erf_f32(GELU_CUT), GELU_CUT);
        assert_eq!(gelu_erf_f32(-GELU_CUT), 0.0);
        assert_eq!(gelu_erf_f32(1e30), 1e30);
    }

    /// The 16-lane `exp` against the scalar one, bit for bit, over every 4099th `f32`, a fine
    /// grid around the range it covers, its ends and the special values.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn gelu_vectors_match_the_scalar() {
        let mut xs: Vec<f32> = (0..=u32::MAX).step_by(4099).map(f32::from_bits).collect();
        xs.extend((-100_000..=100_000).map(|i| i as f32 * 1e-4));
        for c in [GELU_CUT, -GELU_CUT] {
            xs.extend([c, f32::from_bits(c.to_bits() - 1), f32::from_bits(c.to_bits() + 1)]);
        }
        xs.extend([0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, -f32::NAN, f32::MIN_POSITIVE, -1e-45]);
        let mut tested = 0;
        if Isa::Avx512.available() {
            xs.resize(xs.len().next_multiple_of(128), 1.0);
            let want: Vec<u32> = xs.iter().map(|&x| gelu_erf_f32(x).to_bits()).collect();
            for (c, w) in xs.chunks_exact(128).zip(want.chunks_exact(128)) {
                let (mut one, mut eight) = ([0f32; 128], [0f32; 128]);
                // SAFETY: the CPU has AVX-512F (checked above); `c` and the outputs hold 128
                // elements.
                unsafe {
                    use std::arch::x86_64::*;
                    let x: [__m512; 8] = std::array::from_fn(|v| _mm512_loadu_ps(c.as_ptr().add(16 * v)));
                    for (v, y) in gelu_erf_f32x16_n(x).into_iter().enumerate() {
                        _mm512_storeu_ps(eight.as_mut_ptr().add(16 * v), y);
                        _mm512_storeu_ps(one.as_mut_ptr().add(16 * v), gelu_erf_f32x16_n([x[v]])[0]);
                    }
                }
                for (((x, y1), y8), w) in c.iter().zip(one).zip(eight).zip(w) {
                    assert_eq!(y1.to_bits(), *w, "gelu({x:e}) with 16 lanes");
                    assert_eq!(y8.to_bits(), *w, "gelu({x:e}) with 8 vectors of 16 lanes");
                }
            }
            tested += 1;
        }
        if Isa::Avx2.available() {
            xs.resize(xs.len().next_multiple_of(8), 1.0);
            let want: Vec<u32> = xs.iter().map(|&x| gelu_erf_f32(x).to_bits()).collect();
            for (c, w) in xs.chunks_exact(8).zip(want.chunks_exact(8)) {
                let mut got = [0f32; 8];
                // SAFETY: the CPU has AVX2 and FMA (checked above); `c` and `got` hold 8 elements.
                unsafe {
                    use std::arch::x86_64::*;
                    _mm256_storeu_ps(got.as_mut_ptr(), gelu_erf_f32x8(_mm256_loadu_ps(c.as_ptr())));
                }
                for ((x, y), w) in c.iter().zip(got).zip(w) {
                    assert_eq!(y.to_bits(), *w, "gelu({x:e}) with 8 lanes");
                }
            }
            tested += 1;
        }
        if tested == 0 {
            println!("skipping: this CPU has neither AVX-512F nor AVX2 with FMA");
        }
    }

    #[test]
    fn exp_vector_matches_the_scalar() {
        if !Isa::Avx512.available() {
            return;
        }
        let mut xs: Vec<f32> = (0..=u32::MAX).step_by(4099).map(f32::from_bits).collect();
        xs.extend((-1_100_000..=1_000_000).map(|i| i as f32 * 1e-4));
        for e in [EXP_LO, EXP_HI] {
            xs.extend([e, f32::from_bits(e.to_bits() - 1), f32::from_bits(e.to_bits() + 1)]);
        }
        xs.extend([0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, f32::MIN_POSITIVE, -1e-45]);
        xs.resize(xs.len().next_multiple_of(16), 1.0);
        for c in xs.chunks_exact(16) {
            let mut got = [0f32; 16];
            // SAFETY: the CPU has AVX-512F (checked above); `c` and `got` hold 16 elements.
            unsafe {
                use std::arch::x86_64::*;
                _mm512_storeu_ps(got.as_mut_ptr(), exp_f32x16(_mm512_loadu_ps(c.as_ptr())));
            }
            for (x, y) in c.iter().zip(got) {
                assert_eq!(y.to_bits(), exp_f32(*x).to_bits(), "exp({x:e})");
            }
        }
    }

    #[test]
    fn slices_match_scalars() {
        let xs: Vec<f32> = (0..1000).map(|i| (i as f32 - 500.0) * 0.037).collect();
        for path in Isa::supported() {
            isa::with(path, || {
                let mut out = vec![0.0; xs.len()];
                map_slice(&xs, &mut out, tanh_f32);
                for (x, y) in xs.iter().zip(&out) {
                    assert_eq!(y.to_bits(), tanh_f32(*x).to_bits(), "{path}");
                }
                let mut inplace = xs.clone();
                map_in_place(&mut inplace, gelu_erf_f32);
                for (x, y) in xs.iter().zip(&inplace) {
                    assert_eq!(y.to_bits(), gelu_erf_f32(*x).to_bits(), "{path}");
                }
            });
        }
    }
}
