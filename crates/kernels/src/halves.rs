//! Conversions between `f32` and IEEE half precision (`f16`, given as its bits) over whole
//! slices with the F16C instructions, eight lanes an instruction (sixteen on the AVX-512 path)
//! and four vectors a step, inline in one loop. Widening is exact; narrowing rounds to nearest, ties to even, and keeps
//! a NaN a NaN (the instruction's rule, which is also the `half` crate's on such CPUs), so the
//! results are the bits of an element-by-element conversion.

/// `dst[i] = src[i]` widened to `f32` for every `i` of `dst` (`src` at least as long).
/// Returns `false`, writing nothing, when the CPU has no F16C (or `src` is shorter): the
/// caller converts another way.
pub fn f16_to_f32(src: &[u16], dst: &mut [f32]) -> bool {
    if src.len() < dst.len() || !available() {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the CPU has AVX and F16C (`available`); `src` holds `dst.len()` elements.
    unsafe {
        if wide() {
            x86::widen_avx512(src.as_ptr(), dst.as_mut_ptr(), dst.len())
        } else {
            x86::widen(src.as_ptr(), dst.as_mut_ptr(), dst.len())
        }
    };
    true
}

/// `dst[i] = src[i]` rounded to `f16` for every `i` of `dst` (`src` at least as long).
/// Returns `false`, writing nothing, when the CPU has no F16C (or `src` is shorter).
pub fn f32_to_f16(src: &[f32], dst: &mut [u16]) -> bool {
    if src.len() < dst.len() || !available() {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the CPU has AVX and F16C (`available`); `src` holds `dst.len()` elements.
    unsafe {
        if wide() {
            x86::narrow_avx512(src.as_ptr(), dst.as_mut_ptr(), dst.len())
        } else {
            x86::narrow(src.as_ptr(), dst.as_mut_ptr(), dst.len())
        }
    };
    true
}

/// `x[i]` rounded to the nearest `f16` (ties to even, a NaN kept a NaN) and widened back, in
/// place: the bits of [`f32_to_f16`] then [`f16_to_f32`], without the `f16` copy between them.
/// A half-precision program's convolution, computed in `f32` between casts, rounds its results
/// so in its epilogue.
pub fn round_to_f16(x: &mut [f32]) {
    if available() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the CPU has AVX and F16C (`available`); `x` holds `x.len()` elements.
        unsafe {
            if wide() {
                x86::round_trip_avx512(x.as_mut_ptr(), x.len())
            } else {
                x86::round_trip(x.as_mut_ptr(), x.len())
            }
        };
        return;
    }
    for v in x {
        *v = half::f16::from_f32(*v).to_f32();
    }
}

/// Whether the thread runs the AVX-512 path, which converts sixteen lanes an instruction (the
/// same conversions, so the same bits).
fn wide() -> bool {
    crate::isa::Isa::current() == crate::isa::Isa::Avx512
}

/// Whether this CPU converts with F16C (every AVX2 CPU has it; the check is std's cached one).
fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx") && std::arch::is_x86_feature_detected!("f16c")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// Vectors of eight converted a step of the main loop.
    const UNROLL: usize = 4;

    /// # Safety
    /// The CPU has AVX and F16C; `src` points to `n` readable elements, `dst` to `n` writable.
    #[target_feature(enable = "avx,f16c")]
    pub(super) unsafe fn widen(src: *const u16, dst: *mut f32, n: usize) {
        let mut i = 0;
        // SAFETY: every access is below `n` (the loop bounds); the tail goes through a
        // buffer of eight.
        unsafe {
            while i + 8 * UNROLL <= n {
                for u in 0..UNROLL {
                    let h = _mm_loadu_si128(src.add(i + 8 * u).cast());
                    _mm256_storeu_ps(dst.add(i + 8 * u), _mm256_cvtph_ps(h));
                }
                i += 8 * UNROLL;
            }
            while i + 8 <= n {
                _mm256_storeu_ps(dst.add(i), _mm256_cvtph_ps(_mm_loadu_si128(src.add(i).cast())));
                i += 8;
            }
            if i < n {
                let mut h = [0u16; 8];
                std::ptr::copy_nonoverlapping(src.add(i), h.as_mut_ptr(), n - i);
                let mut f = [0f32; 8];
                _mm256_storeu_ps(f.as_mut_ptr(), _mm256_cvtph_ps(_mm_loadu_si128(h.as_ptr().cast())));
                std::ptr::copy_nonoverlapping(f.as_ptr(), dst.add(i), n - i);
            }
        }
    }

    /// [`widen`] sixteen lanes an instruction, the last fewer than 64 elements by [`widen`].
    ///
    /// # Safety
    /// As [`widen`], with AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn widen_avx512(src: *const u16, dst: *mut f32, n: usize) {
        let mut i = 0;
        // SAFETY: every access is below `n` (the loop bound); the rest as in `widen`.
        unsafe {
            while i + 64 <= n {
                for u in 0..4 {
                    let h = _mm256_loadu_si256(src.add(i + 16 * u).cast());
                    _mm512_storeu_ps(dst.add(i + 16 * u), _mm512_cvtph_ps(h));
                }
                i += 64;
            }
            widen(src.add(i), dst.add(i), n - i)
        }
    }

    /// [`narrow`] sixteen lanes an instruction, the last fewer than 64 elements by [`narrow`].
    ///
    /// # Safety
    /// As [`widen`], with AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn narrow_avx512(src: *const f32, dst: *mut u16, n: usize) {
        let mut i = 0;
        // SAFETY: as in `widen_avx512`.
        unsafe {
            while i + 64 <= n {
                for u in 0..4 {
                    let h = _mm512_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm512_loadu_ps(src.add(i + 16 * u)));
                    _mm256_storeu_si256(dst.add(i + 16 * u).cast(), h);
                }
                i += 64;
            }
            narrow(src.add(i), dst.add(i), n - i)
        }
    }

    /// [`round_trip`] sixteen lanes an instruction, the last fewer than 16 by [`round_trip`].
    ///
    /// # Safety
    /// As [`round_trip`], with AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn round_trip_avx512(x: *mut f32, n: usize) {
        let mut i = 0;
        // SAFETY: every access is below `n` (the loop bound); the rest as in `round_trip`.
        unsafe {
            while i + 16 <= n {
                let v = _mm512_loadu_ps(x.add(i));
                _mm512_storeu_ps(x.add(i), _mm512_cvtph_ps(_mm512_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v)));
                i += 16;
            }
            round_trip(x.add(i), n - i)
        }
    }

    /// `x[..n]` narrowed to `f16` and widened back, in place.
    ///
    /// # Safety
    /// The CPU has AVX and F16C; `x` points to `n` readable and writable elements.
    #[target_feature(enable = "avx,f16c")]
    pub(super) unsafe fn round_trip(x: *mut f32, n: usize) {
        let trip = |v: __m256| _mm256_cvtph_ps(_mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v));
        let mut i = 0;
        // SAFETY: every access is below `n` (the loop bounds); the tail goes through a
        // buffer of eight.
        unsafe {
            while i + 8 <= n {
                _mm256_storeu_ps(x.add(i), trip(_mm256_loadu_ps(x.add(i))));
                i += 8;
            }
            if i < n {
                let mut f = [0f32; 8];
                std::ptr::copy_nonoverlapping(x.add(i), f.as_mut_ptr(), n - i);
                _mm256_storeu_ps(f.as_mut_ptr(), trip(_mm256_loadu_ps(f.as_ptr())));
                std::ptr::copy_nonoverlapping(f.as_ptr(), x.add(i), n - i);
            }
        }
    }

    /// # Safety
    /// As [`widen`].
    #[target_feature(enable = "avx,f16c")]
    pub(super) unsafe fn narrow(src: *const f32, dst: *mut u16, n: usize) {
        let mut i = 0;
        let cvt = |v: __m256| _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v);
        // SAFETY: as in `widen`.
        unsafe {
            while i + 8 * UNROLL <= n {
                for u in 0..UNROLL {
                    _mm_storeu_si128(dst.add(i + 8 * u).cast(), cvt(_mm256_loadu_ps(src.add(i + 8 * u))));
                }
                i += 8 * UNROLL;
            }
            while i + 8 <= n {
                _mm_storeu_si128(dst.add(i).cast(), cvt(_mm256_loadu_ps(src.add(i))));
                i += 8;
            }
            if i < n {
                let mut f = [0f32; 8];
                std::ptr::copy_nonoverlapping(src.add(i), f.as_mut_ptr(), n - i);
                let mut h = [0u16; 8];
                _mm_storeu_si128(h.as_mut_ptr().cast(), cvt(_mm256_loadu_ps(f.as_ptr())));
                std::ptr::copy_nonoverlapping(h.as_ptr(), dst.add(i), n - i);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_half_widens_to_its_value() {
        let src: Vec<u16> = (0..=u16::MAX).collect();
        for isa in crate::isa::Isa::supported() {
            crate::isa::with(isa, || {
                let mut got = vec![0f32; src.len()];
                if !f16_to_f32(&src, &mut got) {
                    println!("skipped: this CPU has no F16C");
                    return;
                }
                for (&h, g) in src.iter().zip(&got) {
                    let want = half::f16::from_bits(h).to_f32();
                    assert!(want.to_bits() == g.to_bits() || (want.is_nan() && g.is_nan()), "{isa} {h:#06x}: {want} != {g}");
                }
            })
        }
    }

    #[test]
    fn narrowing_rounds_to_nearest_even() {
        // Every `f16` value, the midpoints between neighbours (ties), points just off them,
        // overflow, subnormals, signed zeros, infinities and NaNs; every tail length.
        let mut src = Vec::new();
        for h in 0..=u16::MAX {
            let v = half::f16::from_bits(h).to_f32();
            let next = half::f16::from_bits(h.wrapping_add(1)).to_f32();
            src.push(v);
            if v.is_finite() && next.is_finite() {
                let mid = (v as f64 + next as f64) / 2.0;
                src.extend([mid as f32, f32::from_bits((mid as f32).to_bits() + 1), f32::from_bits((mid as f32).to_bits().wrapping_sub(1))]);
            }
        }
        src.extend([65520.0, 65519.99, 1e9, -1e9, 1e-10, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, f32::from_bits(0x7f80_0001)]);
        for (isa, len) in crate::isa::Isa::supported().into_iter().flat_map(|isa| [src.len(), 1, 7, 8, 9, 33, 37, 64, 65, 100].map(|l| (isa, l))) {
            crate::isa::with(isa, || {
                let mut got = vec![0u16; len];
                if !f32_to_f16(&src[..len], &mut got) {
                    println!("skipped: this CPU has no F16C");
                    return;
                }
                for (&v, &g) in src.iter().zip(&got) {
                    let want = half::f16::from_f32(v);
                    assert!(want.to_bits() == g || (want.is_nan() && half::f16::from_bits(g).is_nan()), "{isa} {v:e}: {:#06x} != {g:#06x}", want.to_bits());
                }
                // Rounding in place gives the narrowed values widened back.
                let mut round = src[..len].to_vec();
                round_to_f16(&mut round);
                let mut wide = vec![0f32; len];
                assert!(f16_to_f32(&got, &mut wide));
                for (i, (r, w)) in round.iter().zip(&wide).enumerate() {
                    assert!(r.to_bits() == w.to_bits(), "{isa} {:e}: rounded in place to {r:e}, through f16 to {w:e}", src[i]);
                }
            })
        }
    }
}
