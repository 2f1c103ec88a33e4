//! Block routines: f32 transcendental functions applied over a block of a fissioned body's
//! scratch with 512-bit or 256-bit vectors, compiled ahead of time and called by address.
//!
//! Cranelift's x86-64 backend emits 128-bit vectors only, so an inline expansion (`math`)
//! computes 4 lanes per instruction. On a host with AVX-512F and FMA (or AVX2 and FMA), a phase
//! of a fissioned body whose cut is one of these functions computes the function's argument for
//! the block (or finds it in an input or an earlier cut) and calls the routine, which applies
//! the function to 16 (or 8) lanes per instruction, the last partial vector under a mask. Each
//! routine is the inline expansion's algorithm operation for operation (the same range
//! reduction, polynomial, constants rounded to f32, FMA where the expansion uses it,
//! divisions), so the two give the same bits; `tests/accuracy.rs` checks that over its sweep,
//! and both against f64 libm. The algorithms are written once (`algo`), over the vector
//! operations both extensions provide ([`Lanes`]).

use crate::group::Unary;

/// How kernels are generated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodegenOptions {
    /// Fissioned bodies call the block routines for their f32 `exp`, `tanh`, `sigmoid`,
    /// `log`, `erf`, `silu` and `gelu` phases where the host has AVX-512F or AVX2, with FMA;
    /// `false` (or such a host lacking) expands the functions inline in 128-bit vectors. The
    /// results are the same bits either way.
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

/// The block routine of the f32 function `u` for the widest vectors the kernels' ISA
/// (`kernels::Isa`, which `DIALECT_ISA` may lower) allows, or `None` when there is none or the
/// ISA is below AVX2.
pub(crate) fn routine(u: Unary) -> Option<BlockFn> {
    #[cfg(target_arch = "x86_64")]
    {
        macro_rules! pick {
            ($m:ident) => {
                match u {
                    Unary::Exp => $m::exp_block,
                    Unary::Tanh => $m::tanh_block,
                    Unary::Sigmoid => $m::sigmoid_block,
                    Unary::Log => $m::log_block,
                    Unary::Erf => $m::erf_block,
                    Unary::Silu => $m::silu_block,
                    Unary::GeluErf => $m::gelu_erf_block,
                    Unary::GeluTanh => $m::gelu_tanh_block,
                    // `sin` and `cos` (which call the library for huge arguments) have none.
                    _ => return None,
                }
            };
        }
        let f: BlockFn = if kernels::Isa::Avx512.available() {
            pick!(avx512)
        } else if kernels::Isa::Avx2.available() {
            pick!(avx2)
        } else {
            return None;
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

/// The operations of the routines' algorithms on one vector of f32 lanes, with its lane
/// masks and i32 lanes: the algorithms are written once, over this, and instantiated for
/// 512-bit (AVX-512F) and 256-bit (AVX2) vectors.
///
/// Every method is `#[inline(always)]` and is only called from a block function compiled
/// with the vector's features, into which it is inlined (intrinsics called outside such a
/// function would not be).
#[cfg(target_arch = "x86_64")]
trait Lanes: Copy {
    /// A lane mask, as a comparison gives it.
    type M: Copy;
    /// The lanes as i32.
    type I: Copy;
    /// Lanes per vector.
    const W: usize;
    unsafe fn splat(c: f32) -> Self;
    unsafe fn add(a: Self, b: Self) -> Self;
    unsafe fn sub(a: Self, b: Self) -> Self;
    unsafe fn mul(a: Self, b: Self) -> Self;
    unsafe fn div(a: Self, b: Self) -> Self;
    /// `a·b + c`, rounded once.
    unsafe fn fmadd(a: Self, b: Self, c: Self) -> Self;
    /// `a < b ? a : b` (`vminps a, b`: `b` when either is NaN).
    unsafe fn min(a: Self, b: Self) -> Self;
    /// `a > b ? a : b` (`vmaxps a, b`).
    unsafe fn max(a: Self, b: Self) -> Self;
    /// `a OP b` for the comparison predicate `P` (`_CMP_*`).
    unsafe fn cmp<const P: i32>(a: Self, b: Self) -> Self::M;
    /// `m ? a : b`.
    unsafe fn sel(m: Self::M, a: Self, b: Self) -> Self;
    /// `m ? a : 0` on i32 lanes.
    unsafe fn isel_zero(m: Self::M, a: Self::I) -> Self::I;
    /// `m ? 1 : 0` added to i32 lanes.
    unsafe fn iadd_one(m: Self::M, a: Self::I) -> Self::I;
    unsafe fn bits(a: Self) -> Self::I;
    unsafe fn from_bits(a: Self::I) -> Self;
    unsafe fn isplat(c: i32) -> Self::I;
    unsafe fn iand(a: Self::I, b: Self::I) -> Self::I;
    unsafe fn ior(a: Self::I, b: Self::I) -> Self::I;
    unsafe fn iadd(a: Self::I, b: Self::I) -> Self::I;
    unsafe fn isub(a: Self::I, b: Self::I) -> Self::I;
    unsafe fn srli23(a: Self::I) -> Self::I;
    unsafe fn srai1(a: Self::I) -> Self::I;
    unsafe fn slli23(a: Self::I) -> Self::I;
    unsafe fn to_f32(a: Self::I) -> Self;
    /// The `n` values at `p`.
    unsafe fn load(p: *const f32) -> Self;
    unsafe fn store(p: *mut f32, v: Self);
    /// The first `n < W` values at `p` (the rest zero), the others not read.
    unsafe fn load_first(p: *const f32, n: usize) -> Self;
    /// Writes the first `n < W` lanes of `v` to `p`, nothing past them.
    unsafe fn store_first(p: *mut f32, n: usize, v: Self);
}

#[cfg(target_arch = "x86_64")]
mod lanes {
    use std::arch::x86_64::*;

    use super::Lanes;

    // SAFETY (every method of both impls): each is an intrinsic of the vector's extension,
    // called only from block functions compiled with it (see `Lanes`); the loads and stores
    // access the elements their callers vouch for.
    impl Lanes for __m512 {
        type M = __mmask16;
        type I = __m512i;
        const W: usize = 16;
        #[inline(always)]
        unsafe fn splat(c: f32) -> Self {
            unsafe { _mm512_set1_ps(c) }
        }
        #[inline(always)]
        unsafe fn add(a: Self, b: Self) -> Self {
            unsafe { _mm512_add_ps(a, b) }
        }
        #[inline(always)]
        unsafe fn sub(a: Self, b: Self) -> Self {
            unsafe { _mm512_sub_ps(a, b) }
        }
        #[inline(always)]
        unsafe fn mul(a: Self, b: Self) -> Self {
            unsafe { _mm512_mul_ps(a, b) }
        }
        #[inline(always)]
        unsafe fn div(a: Self, b: Self) -> Self {
            unsafe { _mm512_div_ps(a, b) }
        }
        #[inline(always)]
        unsafe fn fmadd(a: Self, b: Self, c: Self) -> Self {
            unsafe { _mm512_fmadd_ps(a, b, c) }
        }
        #[inline(always)]
        unsafe fn min(a: Self, b: Self) -> Self {
            unsafe { _mm512_min_ps(a, b) }
        }
        #[inline(always)]
        unsafe fn max(a: Self, b: Self) -> Self {
            unsafe { _mm512_max_ps(a, b) }
        }
        #[inline(always)]
        unsafe fn cmp<const P: i32>(a: Self, b: Self) -> Self::M {
            unsafe { _mm512_cmp_ps_mask::<P>(a, b) }
        }
        #[inline(always)]
        unsafe fn sel(m: Self::M, a: Self, b: Self) -> Self {
            unsafe { _mm512_mask_blend_ps(m, b, a) }
        }
        #[inline(always)]
        unsafe fn isel_zero(m: Self::M, a: Self::I) -> Self::I {
            unsafe { _mm512_maskz_mov_epi32(m, a) }
        }
        #[inline(always)]
        unsafe fn iadd_one(m: Self::M, a: Self::I) -> Self::I {
            unsafe { _mm512_mask_add_epi32(a, m, a, _mm512_set1_epi32(1)) }
        }
        #[inline(always)]
        unsafe fn bits(a: Self) -> Self::I {
            unsafe { _mm512_castps_si512(a) }
        }
        #[inline(always)]
        unsafe fn from_bits(a: Self::I) -> Self {
            unsafe { _mm512_castsi512_ps(a) }
        }
        #[inline(always)]
        unsafe fn isplat(c: i32) -> Self::I {
            unsafe { _mm512_set1_epi32(c) }
        }
        #[inline(always)]
        unsafe fn iand(a: Self::I, b: Self::I) -> Self::I {
            unsafe { _mm512_and_si512(a, b) }
        }
        #[inline(always)]
        unsafe fn ior(a: Self::I, b: Self::I) -> Self::I {
            unsafe { _mm512_or_si512(a, b) }
        }
        #[inline(always)]
        unsafe fn iadd(a: Self::I, b: Self::I) -> Self::I {
            unsafe { _mm512_add_epi32(a, b) }
        }
        #[inline(always)]
        unsafe fn isub(a: Self::I, b: Self::I) -> Self::I {
            unsafe { _mm512_sub_epi32(a, b) }
        }
        #[inline(always)]
        unsafe fn srli23(a: Self::I) -> Self::I {
            unsafe { _mm512_srli_epi32::<23>(a) }
        }
        #[inline(always)]
        unsafe fn srai1(a: Self::I) -> Self::I {
            unsafe { _mm512_srai_epi32::<1>(a) }
        }
        #[inline(always)]
        unsafe fn slli23(a: Self::I) -> Self::I {
            unsafe { _mm512_slli_epi32::<23>(a) }
        }
        #[inline(always)]
        unsafe fn to_f32(a: Self::I) -> Self {
            unsafe { _mm512_cvtepi32_ps(a) }
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> Self {
            unsafe { _mm512_loadu_ps(p) }
        }
        #[inline(always)]
        unsafe fn store(p: *mut f32, v: Self) {
            unsafe { _mm512_storeu_ps(p, v) }
        }
        #[inline(always)]
        unsafe fn load_first(p: *const f32, n: usize) -> Self {
            unsafe { _mm512_maskz_loadu_ps(((1u32 << n) - 1) as u16, p) }
        }
        #[inline(always)]
        unsafe fn store_first(p: *mut f32, n: usize, v: Self) {
            unsafe { _mm512_mask_storeu_ps(p, ((1u32 << n) - 1) as u16, v) }
        }
    }

    /// `-1` lanes then `0` lanes: eight entries from `8 - n` mask the first `n` lanes.
    static FIRST: [i32; 16] = [-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0];

    impl Lanes for __m256 {
        /// All ones in the lanes selected.
        type M = __m256;
        type I = __m256i;
        const W: usize = 8;
        #[inline(always)]
        unsafe fn splat(c: f32) -> Self {
            unsafe { _mm256_set1_ps(c) }
        }
        #[inline(always)]
        unsafe fn add(a: Self, b: Self) -> Self {
            unsafe { _mm256_add_ps(a, b) }
        }
        #[inline(always)]
        unsafe fn sub(a: Self, b: Self) -> Self {
            unsafe { _mm256_sub_ps(a, b) }
        }
        #[inline(always)]
        unsafe fn mul(a: Self, b: Self) -> Self {
            unsafe { _mm256_mul_ps(a, b) }
        }
        #[inline(always)]
        unsafe fn div(a: Self, b: Self) -> Self {
            unsafe { _mm256_div_ps(a, b) }
        }
        #[inline(always)]
        unsafe fn fmadd(a: Self, b: Self, c: Self) -> Self {
            unsafe { _mm256_fmadd_ps(a, b, c) }
        }
        #[inline(always)]
        unsafe fn min(a: Self, b: Self) -> Self {
            unsafe { _mm256_min_ps(a, b) }
        }
        #[inline(always)]
        unsafe fn max(a: Self, b: Self) -> Self {
            unsafe { _mm256_max_ps(a, b) }
        }
        #[inline(always)]
        unsafe fn cmp<const P: i32>(a: Self, b: Self) -> Self::M {
            unsafe { _mm256_cmp_ps::<P>(a, b) }
        }
        #[inline(always)]
        unsafe fn sel(m: Self::M, a: Self, b: Self) -> Self {
            unsafe { _mm256_blendv_ps(b, a, m) }
        }
        #[inline(always)]
        unsafe fn isel_zero(m: Self::M, a: Self::I) -> Self::I {
            unsafe { _mm256_and_si256(_mm256_castps_si256(m), a) }
        }
        #[inline(always)]
        unsafe fn iadd_one(m: Self::M, a: Self::I) -> Self::I {
            // A selected lane is -1: subtracting it adds one.
            unsafe { _mm256_sub_epi32(a, _mm256_castps_si256(m)) }
        }
        #[inline(always)]
        unsafe fn bits(a: Self) -> Self::I {
            unsafe { _mm256_castps_si256(a) }
        }
        #[inline(always)]
        unsafe fn from_bits(a: Self::I) -> Self {
            unsafe { _mm256_castsi256_ps(a) }
        }
        #[inline(always)]
        unsafe fn isplat(c: i32) -> Self::I {
            unsafe { _mm256_set1_epi32(c) }
        }
        #[inline(always)]
        unsafe fn iand(a: Self::I, b: Self::I) -> Self::I {
            unsafe { _mm256_and_si256(a, b) }
        }
        #[inline(always)]
        unsafe fn ior(a: Self::I, b: Self::I) -> Self::I {
            unsafe { _mm256_or_si256(a, b) }
        }
        #[inline(always)]
        unsafe fn iadd(a: Self::I, b: Self::I) -> Self::I {
            unsafe { _mm256_add_epi32(a, b) }
        }
        #[inline(always)]
        unsafe fn isub(a: Self::I, b: Self::I) -> Self::I {
            unsafe { _mm256_sub_epi32(a, b) }
        }
        #[inline(always)]
        unsafe fn srli23(a: Self::I) -> Self::I {
            unsafe { _mm256_srli_epi32::<23>(a) }
        }
        #[inline(always)]
        unsafe fn srai1(a: Self::I) -> Self::I {
            unsafe { _mm256_srai_epi32::<1>(a) }
        }
        #[inline(always)]
        unsafe fn slli23(a: Self::I) -> Self::I {
            unsafe { _mm256_slli_epi32::<23>(a) }
        }
        #[inline(always)]
        unsafe fn to_f32(a: Self::I) -> Self {
            unsafe { _mm256_cvtepi32_ps(a) }
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> Self {
            unsafe { _mm256_loadu_ps(p) }
        }
        #[inline(always)]
        unsafe fn store(p: *mut f32, v: Self) {
            unsafe { _mm256_storeu_ps(p, v) }
        }
        #[inline(always)]
        unsafe fn load_first(p: *const f32, n: usize) -> Self {
            unsafe { _mm256_maskload_ps(p, _mm256_loadu_si256(FIRST.as_ptr().add(8 - n) as *const __m256i)) }
        }
        #[inline(always)]
        unsafe fn store_first(p: *mut f32, n: usize, v: Self) {
            unsafe { _mm256_maskstore_ps(p, _mm256_loadu_si256(FIRST.as_ptr().add(8 - n) as *const __m256i), v) }
        }
    }
}

/// The algorithms of `math`'s expansions over any [`Lanes`].
#[cfg(target_arch = "x86_64")]
mod algo {
    use std::arch::x86_64::{_CMP_EQ_OQ, _CMP_GE_OQ, _CMP_GT_OQ, _CMP_LT_OQ, _CMP_NGE_UQ};

    use runtime::kernels::fastmath::{ERF_CUT, ERF_SMALL, ERFC_BIG};

    use super::Lanes;
    /// The constants of `math`'s expansions (see its `exp_parts`), as f32 where a lane holds them.
    use crate::math::{EXP_MAGIC, EXP_POLY, EXP_SHIFT, LN2_HI, LN2_LO, LOG_POLY};
    const LOG2_E: f32 = std::f64::consts::LOG2_E as f32;
    const EXP_HI: f32 = crate::math::EXP_HI as f32;
    const EXP_LO: f32 = crate::math::EXP_LO as f32;
    const TANH_EXP_MAX: f32 = crate::math::TANH_EXP_MAX as f32;
    const SIGN: i32 = i32::MIN;

    /// `dst[i] = f(src[i])` for `i < n`, full vectors then the last partial one under a mask.
    ///
    /// # Safety
    /// As [`super::BlockFn`]; inlined into a function compiled with `V`'s features.
    #[inline(always)]
    pub(super) unsafe fn apply<V: Lanes>(src: *const f32, dst: *mut f32, n: usize, f: impl Fn(V) -> V) {
        let mut i = 0;
        // SAFETY: `i + W <= n`, so the `W` values at `i` are in both buffers; a partial last
        // vector reads and writes only its `n - i < W` values.
        unsafe {
            while i + V::W <= n {
                V::store(dst.add(i), f(V::load(src.add(i))));
                i += V::W;
            }
            if i < n {
                V::store_first(dst.add(i), n - i, f(V::load_first(src.add(i), n - i)));
            }
        }
    }

    // SAFETY (every function below): lane operations only, inlined into a block function
    // compiled with `V`'s features.

    /// The polynomial with coefficients `c` (lowest degree first) at `s`, by Horner's rule
    /// with FMA (as `math`'s `horner`).
    #[inline(always)]
    unsafe fn horner<V: Lanes>(s: V, c: &[f64]) -> V {
        unsafe {
            let mut p = V::splat(c[c.len() - 1] as f32);
            for &k in c[..c.len() - 1].iter().rev() {
                p = V::fmadd(p, s, V::splat(k as f32));
            }
            p
        }
    }

    /// `|x|`.
    #[inline(always)]
    unsafe fn abs<V: Lanes>(x: V) -> V {
        unsafe { V::from_bits(V::iand(V::bits(x), V::isplat(i32::MAX))) }
    }

    /// `|a|` with the sign of `s`.
    #[inline(always)]
    unsafe fn copysign<V: Lanes>(a: V, s: V) -> V {
        unsafe {
            let mag = V::iand(V::bits(a), V::isplat(i32::MAX));
            let sign = V::iand(V::bits(s), V::isplat(SIGN));
            V::from_bits(V::ior(mag, sign))
        }
    }

    /// `-|x|`: the sign bit set.
    #[inline(always)]
    unsafe fn neg_abs<V: Lanes>(x: V) -> V {
        unsafe { V::from_bits(V::ior(V::bits(x), V::isplat(SIGN))) }
    }

    /// `log(x)` as `math`'s `log_f32`: `x = 2^e m`, `m` in `[sqrt(2)/2, sqrt(2)]`,
    /// `log(m) = 2 atanh(f / (2 + f))`; denormals scaled by `2^23` first.
    #[inline(always)]
    pub(super) unsafe fn log<V: Lanes>(x: V) -> V {
        unsafe {
            let small = V::cmp::<_CMP_LT_OQ>(x, V::splat(f32::MIN_POSITIVE));
            let xs = V::sel(small, V::mul(x, V::splat(8_388_608.0)), x);
            let ebias = V::isel_zero(small, V::isplat(-23));
            let xi = V::bits(xs);
            let ex = V::iand(V::srli23(xi), V::isplat(0xff));
            let ex = V::iadd(V::isub(ex, V::isplat(127)), ebias);
            let mi = V::ior(V::iand(xi, V::isplat(0x007f_ffff)), V::isplat(0x3f80_0000));
            let m = V::from_bits(mi);
            let big = V::cmp::<_CMP_GT_OQ>(m, V::splat(std::f64::consts::SQRT_2 as f32));
            let m = V::sel(big, V::mul(m, V::splat(0.5)), m);
            let ex = V::iadd_one(big, ex);
            let f = V::add(m, V::splat(-1.0));
            let two_f = V::add(f, V::splat(2.0));
            let s = V::div(f, two_f);
            let z = V::mul(s, s);
            let r = V::mul(z, horner(z, &LOG_POLY));
            let hfsq = V::mul(V::mul(f, f), V::splat(0.5));
            let ef = V::to_f32(ex);
            let shr = V::mul(s, V::add(hfsq, r));
            let inner = V::add(shr, V::mul(ef, V::splat(-LN2_LO as f32)));
            let inner = V::sub(f, V::sub(hfsq, inner));
            let y = V::add(V::mul(ef, V::splat(-LN2_HI as f32)), inner);
            // +inf → +inf, ±0 → -inf, negative or NaN → NaN.
            let zero = V::splat(0.0);
            let y = V::sel(V::cmp::<_CMP_EQ_OQ>(x, V::splat(f32::INFINITY)), V::splat(f32::INFINITY), y);
            let y = V::sel(V::cmp::<_CMP_EQ_OQ>(x, zero), V::splat(f32::NEG_INFINITY), y);
            V::sel(V::cmp::<_CMP_NGE_UQ>(x, zero), V::splat(f32::NAN), y)
        }
    }

    /// `erf(x)` as `math`'s `erf_f32`: `x P(x^2)` below 0.875, `1 - Q(|x|)` up to 4 (with
    /// the sign of `x`), ±1 beyond.
    #[inline(always)]
    pub(super) unsafe fn erf<V: Lanes>(x: V) -> V {
        unsafe {
            let a = abs(x);
            let x2 = V::mul(x, x);
            let s = V::add(V::mul(x2, V::splat((2.0 / (ERF_CUT * ERF_CUT)) as f32)), V::splat(-1.0));
            let ys = V::mul(x, horner(s, &ERF_SMALL));
            let s2 = V::add(V::mul(a, V::splat((2.0 / 3.125) as f32)), V::splat((-4.875 / 3.125) as f32));
            let one = V::splat(1.0);
            let yb = V::sub(one, horner(s2, &ERFC_BIG));
            let yb = V::sel(V::cmp::<_CMP_GE_OQ>(a, V::splat(4.0)), one, yb);
            let yb = copysign(yb, x);
            V::sel(V::cmp::<_CMP_LT_OQ>(a, V::splat(ERF_CUT as f32)), ys, yb)
        }
    }

    /// `silu(x) = x sigmoid(x)` as `math`'s `silu_f32` (`x e^{x}` formed as
    /// `(x e^{x + 22}) e^{-22}` far in the negative range).
    #[inline(always)]
    pub(super) unsafe fn silu<V: Lanes>(x: V) -> V {
        unsafe {
            let a = abs(x);
            let far = V::cmp::<_CMP_GT_OQ>(a, V::splat(80.0));
            let shifted = V::sub(V::splat(22.0), a);
            let na = neg_abs(x);
            let es = exp_nonpositive(V::sel(far, shifted, na));
            let c = V::sel(far, V::splat((-22.0f64).exp() as f32), V::splat(1.0));
            let e = V::mul(es, c);
            let xs = V::mul(V::mul(x, es), c);
            let pos = V::cmp::<_CMP_GE_OQ>(x, V::splat(0.0));
            let num = V::sel(pos, x, xs);
            V::div(num, V::add(e, V::splat(1.0)))
        }
    }

    /// `0.5 x (1 + erf(x / sqrt 2))`.
    #[inline(always)]
    pub(super) unsafe fn gelu_erf<V: Lanes>(x: V) -> V {
        unsafe {
            let e = erf(V::mul(x, V::splat(std::f32::consts::FRAC_1_SQRT_2)));
            V::mul(V::mul(x, V::splat(0.5)), V::add(e, V::splat(1.0)))
        }
    }

    /// `0.5 x (1 + tanh(k (x + 0.044715 x^3)))`.
    #[inline(always)]
    pub(super) unsafe fn gelu_tanh<V: Lanes>(x: V) -> V {
        unsafe {
            let c = V::mul(V::mul(V::mul(x, V::splat(0.044715)), x), x);
            let inner = V::mul(V::add(x, c), V::splat(0.797_884_6));
            let th = tanh(inner);
            V::mul(V::mul(x, V::splat(0.5)), V::add(th, V::splat(1.0)))
        }
    }

    /// How `exp` forms `2^k` (as `math::Scale`).
    #[derive(Clone, Copy)]
    enum Scale {
        TwoStep,
        Shift(i32),
    }

    /// `math`'s `exp_parts`: the argument clamped to `[lo, hi]` (`c < x ? c : x`, so NaN
    /// passes: `vminps c, x`), `x = k ln2 + r`, `u = e^r - 1`, and `2^k` as one or two factors.
    #[inline(always)]
    unsafe fn exp_parts<V: Lanes>(x: V, lo: f32, hi: Option<f32>, scale: Scale) -> (V, Option<V>, V) {
        unsafe {
            let mut xc = x;
            if let Some(hi) = hi {
                xc = V::min(V::splat(hi), xc);
            }
            xc = V::max(V::splat(lo), xc);
            let magic = match scale {
                Scale::TwoStep => EXP_MAGIC as f32,
                Scale::Shift(c) => (EXP_MAGIC + 127.0 + c as f64) as f32,
            };
            let kx = V::mul(xc, V::splat(LOG2_E));
            let kt = V::add(kx, V::splat(magic));
            let kf = V::add(kt, V::splat(-magic));
            let r = V::fmadd(kf, V::splat(LN2_HI as f32), xc);
            let r = V::fmadd(kf, V::splat(LN2_LO as f32), r);
            let p = horner(r, &EXP_POLY);
            let r2 = V::mul(r, r);
            let u = V::fmadd(r2, p, r);
            let kbits = V::bits(kt);
            match scale {
                Scale::TwoStep => {
                    let k = V::isub(kbits, V::isplat((EXP_MAGIC as f32).to_bits() as i32));
                    let k1 = V::srai1(k);
                    let k2 = V::isub(k, k1);
                    (pow2i::<V>(k1), Some(pow2i::<V>(k2)), u)
                }
                Scale::Shift(_) => (V::from_bits(V::slli23(kbits)), None, u),
            }
        }
    }

    /// `2^k` for lanes `k` in `[-126, 127]`.
    #[inline(always)]
    unsafe fn pow2i<V: Lanes>(k: V::I) -> V {
        unsafe { V::from_bits(V::slli23(V::iadd(k, V::isplat(127)))) }
    }

    /// `(1 + u) s1 s2`.
    #[inline(always)]
    unsafe fn exp_join<V: Lanes>(s1: V, s2: Option<V>, u: V) -> V {
        unsafe {
            let y = V::mul(V::add(u, V::splat(1.0)), s1);
            match s2 {
                Some(s2) => V::mul(y, s2),
                None => y,
            }
        }
    }

    #[inline(always)]
    pub(super) unsafe fn exp<V: Lanes>(x: V) -> V {
        unsafe {
            let (s1, s2, u) = exp_parts(x, EXP_LO, Some(EXP_HI), Scale::TwoStep);
            exp_join(s1, s2, u)
        }
    }

    /// `exp(x)` for `x <= 0` or NaN (`math`'s `exp_nonpositive`).
    #[inline(always)]
    unsafe fn exp_nonpositive<V: Lanes>(x: V) -> V {
        unsafe {
            let (s1, s2, u) = exp_parts(x, EXP_LO, None, Scale::Shift(EXP_SHIFT));
            V::mul(exp_join(s1, s2, u), V::splat(2f64.powi(-EXP_SHIFT) as f32))
        }
    }

    /// `tanh(x) = -m / (2 + m)` with the sign of `x`, `m = e^{-2|x|} - 1 = 2^k u + (2^k - 1)`.
    #[inline(always)]
    pub(super) unsafe fn tanh<V: Lanes>(x: V) -> V {
        unsafe {
            let na = neg_abs(x);
            let y = V::add(na, na);
            let (s, _, u) = exp_parts(y, -TANH_EXP_MAX, None, Scale::Shift(0));
            let sm1 = V::add(s, V::splat(-1.0));
            let m = V::fmadd(s, u, sm1);
            let den = V::sub(V::splat(-2.0), m);
            let th = V::div(m, den);
            let sign = V::iand(V::bits(x), V::isplat(SIGN));
            V::from_bits(V::ior(V::bits(th), sign))
        }
    }

    /// `sigmoid(x)`: `1 / (1 + e^{-|x|})` for `x >= 0`, `e^{-|x|} / (1 + e^{-|x|})` otherwise.
    #[inline(always)]
    pub(super) unsafe fn sigmoid<V: Lanes>(x: V) -> V {
        unsafe {
            let e = exp_nonpositive(neg_abs(x));
            let one = V::splat(1.0);
            let pos = V::cmp::<_CMP_GE_OQ>(x, V::splat(0.0));
            let num = V::sel(pos, one, e);
            let den = V::add(one, e);
            V::div(num, den)
        }
    }
}

/// The block functions of one vector extension: `$name => $f` defines `$name`, [`BlockFn`]
/// applying `algo::$f` with `$lanes` vectors, compiled with `$features`.
#[cfg(target_arch = "x86_64")]
macro_rules! block_fns {
    ($module:ident, $lanes:ty, $features:literal, $($name:ident => $f:ident),* $(,)?) => {
        mod $module {
            $(
                #[doc = concat!("`", stringify!($f), "` over a block (see [`super::BlockFn`]).")]
                ///
                /// # Safety
                /// `src` must be valid for reading and `dst` for writing `n` f32 values; they are
                /// the same buffer or do not overlap. The host must have the extension
                /// ([`super::routine`] hands it out only then).
                #[target_feature(enable = $features)]
                pub(super) unsafe extern "C" fn $name(src: *const f32, dst: *mut f32, n: usize) {
                    // SAFETY: forwarded; the lane functions inline into this function.
                    unsafe { super::algo::apply::<$lanes>(src, dst, n, |x| super::algo::$f(x)) }
                }
            )*
        }
    };
}

#[cfg(target_arch = "x86_64")]
block_fns!(
    avx512,
    std::arch::x86_64::__m512,
    "avx512f,fma",
    exp_block => exp,
    tanh_block => tanh,
    sigmoid_block => sigmoid,
    log_block => log,
    erf_block => erf,
    silu_block => silu,
    gelu_erf_block => gelu_erf,
    gelu_tanh_block => gelu_tanh,
);

#[cfg(target_arch = "x86_64")]
block_fns!(
    avx2,
    std::arch::x86_64::__m256,
    "avx2,fma",
    exp_block => exp,
    tanh_block => tanh,
    sigmoid_block => sigmoid,
    log_block => log,
    erf_block => erf,
    silu_block => silu,
    gelu_erf_block => gelu_erf,
    gelu_tanh_block => gelu_tanh,
);

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
