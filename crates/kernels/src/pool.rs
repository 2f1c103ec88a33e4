//! Max pooling of `f32` planes with a 3 × 3 window and stride 2 (the pooling of SqueezeNet,
//! AlexNet, GoogLeNet; padded by one, ResNet's and ShuffleNet's stems) in vector registers.
//!
//! Each output takes its window's nine taps in PyTorch's order (row by row, each row left to
//! right) with PyTorch's update rule (a larger value or any NaN replaces the maximum so far),
//! so the result is the same bits as the scalar loop's: the same `-0.0` or `0.0` of a tie, the
//! same NaN. Eight outputs of a row at a time (sixteen on the AVX-512 path, for rows of at
//! least sixteen): the three taps of a window row are the even elements, the odd elements and
//! the even elements one further on of consecutive inputs, split out of two vectors by
//! shuffles (permutes with AVX-512), so no tap is gathered.

use crate::isa::Isa;

/// Max pooling of `planes` planes of `ih × iw` into `oh × ow` planes with a 3 × 3 window,
/// stride 2, `pad` (0 or 1) rows and columns of padding on every side and no dilation, every
/// window wholly inside the padded plane (`2·oh + 1 ≤ ih + 2·pad`, `2·ow + 1 ≤ iw + 2·pad`).
/// Returns `false`, writing nothing, when no vector path applies (the generic path, rows
/// narrower than a vector, shapes outside that contract, or buffers too small for them): the
/// caller's general loop runs then.
///
/// A padded plane is first copied into `scratch` (any contents; resized here) inside a
/// border of `-∞`, then pooled as an unpadded one. That is PyTorch's rule exactly: its maximum starts at `-∞` and skips the
/// padding, and a `-∞` tap never replaces a maximum (it is not larger, nor a NaN), so a
/// window's first real tap replaces the border's `-∞` just as it replaces the start.
pub fn max_pool_3x3s2(
    x: &[f32],
    planes: usize,
    [ih, iw]: [usize; 2],
    pad: usize,
    [oh, ow]: [usize; 2],
    out: &mut [f32],
    scratch: &mut Vec<f32>,
) -> bool {
    let (ph, pw) = (ih + 2 * pad, iw + 2 * pad);
    let fits = ow >= 8
        && oh >= 1
        && pad <= 1
        && 2 * oh < ph
        && 2 * ow < pw
        && planes.checked_mul(ih * iw).is_some_and(|n| n <= x.len())
        && planes.checked_mul(oh * ow).is_some_and(|n| n <= out.len());
    if !fits || !Isa::Avx2.available() {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    {
        // Rows of at least 16 outputs take sixteen at a time on the AVX-512 path.
        let wide = ow >= 16 && Isa::current() == Isa::Avx512;
        if pad == 1 {
            scratch.resize(ph * pw, f32::NEG_INFINITY);
            scratch[..pw].fill(f32::NEG_INFINITY);
            scratch[(ph - 1) * pw..].fill(f32::NEG_INFINITY);
            for row in scratch[pw..(ph - 1) * pw].chunks_exact_mut(pw) {
                (row[0], row[pw - 1]) = (f32::NEG_INFINITY, f32::NEG_INFINITY);
            }
        }
        for p in 0..planes {
            let plane = &x[p * ih * iw..(p + 1) * ih * iw];
            let src = if pad == 0 {
                plane
            } else {
                // Only the interior is written: the border keeps its `-∞` from plane to plane.
                for (dst, row) in scratch[pw + 1..].chunks_mut(pw).zip(plane.chunks_exact(iw)) {
                    dst[..iw].copy_from_slice(row);
                }
                &scratch[..]
            };
            // SAFETY: the CPU runs AVX2 (`available`); `src` holds a plane of `ph·pw` elements
            // and plane `p` of `out` `oh·ow` (checked above), and every window lies inside it.
            unsafe { pool_rows(src.as_ptr(), pw, oh, ow, out.as_mut_ptr().add(p * oh * ow), wide) };
        }
        true
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = scratch;
        false
    }
}

/// [`max_pool_3x3s2`] of `oh` output rows of `ow` from the unpadded rows of `x`, `pitch`
/// elements apart (`2·oh + 1` of them, each at least `2·ow + 1` long), into `out` (`oh` rows of
/// `ow`, consecutive): the rows of one plane or a band of them, whose padding, if any, the
/// caller wrote as `-∞` around them. Returns `false`, writing nothing, where no vector path
/// applies (the generic path, rows of fewer than eight outputs, buffers too small for the
/// shape): the caller pools them otherwise.
pub fn max_pool_3x3s2_rows(x: &[f32], pitch: usize, [oh, ow]: [usize; 2], out: &mut [f32]) -> bool {
    let fits = ow >= 8
        && oh >= 1
        && pitch > 2 * ow
        && (2 * oh).checked_mul(pitch).is_some_and(|n| n + 2 * ow < x.len())
        && oh.checked_mul(ow).is_some_and(|n| n <= out.len());
    if !fits || !Isa::Avx2.available() {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    {
        let wide = ow >= 16 && Isa::current() == Isa::Avx512;
        // SAFETY: the CPU runs AVX2 (`available`); the last window ends at element
        // `2·oh·pitch + 2·ow < x.len()`, and `out` holds `oh·ow` elements (checked above).
        unsafe { pool_rows(x.as_ptr(), pitch, oh, ow, out.as_mut_ptr(), wide) };
        true
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The vector kernel of `oh` rows of `ow` outputs over rows `pitch` apart: sixteen outputs at a
/// time where `wide`, eight otherwise.
///
/// # Safety
/// The CPU supports AVX2, and AVX-512F where `wide`; `x` holds `2·oh + 1` rows of `pitch > 2·ow`
/// elements (the last at least `2·ow + 1`), `out` `oh·ow`; `ow ≥ 8`, and `ow ≥ 16` where `wide`.
#[cfg(target_arch = "x86_64")]
unsafe fn pool_rows(x: *const f32, pitch: usize, oh: usize, ow: usize, out: *mut f32, wide: bool) {
    // SAFETY: the caller's contract is each routine's.
    unsafe {
        if wide {
            crate::x86::avx512::max_pool_3x3s2_plane(x, pitch, oh, ow, out)
        } else {
            crate::x86::avx2::max_pool_3x3s2_plane(x, pitch, oh, ow, out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scalar rule, taps in PyTorch's order: the maximum starts at `-∞` and the padding's
    /// taps are skipped.
    fn reference(x: &[f32], planes: usize, ih: usize, iw: usize, pad: usize, oh: usize, ow: usize) -> Vec<f32> {
        let mut out = vec![0.0; planes * oh * ow];
        for p in 0..planes {
            for y in 0..oh {
                for xo in 0..ow {
                    let mut best = f32::NEG_INFINITY;
                    for a in 0..3 {
                        for c in 0..3 {
                            let (r, q) = ((2 * y + a).wrapping_sub(pad), (2 * xo + c).wrapping_sub(pad));
                            if r >= ih || q >= iw {
                                continue;
                            }
                            let v = x[p * ih * iw + r * iw + q];
                            if v > best || v.is_nan() {
                                best = v;
                            }
                        }
                    }
                    out[(p * oh + y) * ow + xo] = best;
                }
            }
        }
        out
    }

    #[test]
    fn matches_the_scalar_rule_bit_for_bit() {
        // Odd and even widths, rows of one vector and of several with an overlapping last
        // one (of 8 and of 16 outputs), ties of signed zeros, NaNs with distinct payloads and
        // infinities; with and without padding.
        let mut scratch = Vec::new();
        for pad in [0, 1] {
            for &(ih, iw) in &[(17, 17), (18, 19), (27, 27), (55, 55), (9, 40), (111, 111), (112, 112), (5, 33), (7, 33), (6, 34), (9, 65)] {
                let (oh, ow) = ((ih + 2 * pad - 3) / 2 + 1, (iw + 2 * pad - 3) / 2 + 1);
                let planes = 3;
                let mut s = 12345u32;
                let x: Vec<f32> = (0..planes * ih * iw)
                    .map(|_| {
                        s ^= s << 13;
                        s ^= s >> 17;
                        s ^= s << 5;
                        match s % 23 {
                            0 => f32::from_bits(0x7fc0_0000 | (s >> 9) & 0xffff),
                            1 => -0.0,
                            2 => 0.0,
                            3 => f32::INFINITY,
                            4 => f32::NEG_INFINITY,
                            _ => (s % 7) as f32 - 3.0,
                        }
                    })
                    .collect();
                let want = reference(&x, planes, ih, iw, pad, oh, ow);
                let mut got = vec![1.5f32; planes * oh * ow];
                for isa in Isa::supported() {
                    let ran = crate::isa::with(isa, || max_pool_3x3s2(&x, planes, [ih, iw], pad, [oh, ow], &mut got, &mut scratch));
                    assert_eq!(ran, isa >= Isa::Avx2 && ow >= 8, "{isa} {ih}x{iw} pad {pad}");
                    if ran {
                        let same = want.iter().zip(&got).all(|(a, b)| a.to_bits() == b.to_bits());
                        assert!(same, "{isa} {ih}x{iw} pad {pad}: {want:?} != {got:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn rows_a_pitch_apart_pool_like_their_plane() {
        // A band of rows inside wider ones (junk past each row's end), pooled on every path:
        // the plane's bits, for the rows the band covers.
        for &(ih, iw, pitch) in &[(9, 17, 20), (23, 40, 41), (7, 33, 48)] {
            let (oh, ow) = ((ih - 3) / 2 + 1, (iw - 3) / 2 + 1);
            let x: Vec<f32> = (0..ih * iw).map(|i| ((i * 37) % 11) as f32 - 5.0).collect();
            let want = reference(&x, 1, ih, iw, 0, oh, ow);
            let mut wide = vec![f32::NAN; ih * pitch];
            for (dst, row) in wide.chunks_exact_mut(pitch).zip(x.chunks_exact(iw)) {
                dst[..iw].copy_from_slice(row);
            }
            for isa in Isa::supported() {
                let mut got = vec![1.5f32; oh * ow];
                let ran = crate::isa::with(isa, || max_pool_3x3s2_rows(&wide[2 * pitch..], pitch, [oh - 1, ow], &mut got));
                assert_eq!(ran, isa >= Isa::Avx2, "{isa} {ih}x{iw}");
                if ran {
                    assert_eq!(got[..(oh - 1) * ow], want[ow..], "{isa} {ih}x{iw}: rows 1.. of the plane");
                }
            }
            // A band one element short of its last window declines.
            assert!(!max_pool_3x3s2_rows(&wide[..2 * oh * pitch + 2 * ow], pitch, [oh, ow], &mut vec![0.0; oh * ow]));
        }
    }

    #[test]
    fn declines_what_it_does_not_cover() {
        let x = vec![0.0f32; 20 * 20];
        let mut out = vec![0.0f32; 10 * 10];
        // A window past the last column (ceil mode's partial window), a short output buffer.
        let mut scratch = Vec::new();
        assert!(!max_pool_3x3s2(&x, 1, [20, 20], 0, [9, 10], &mut out, &mut scratch));
        assert!(!max_pool_3x3s2(&x, 1, [20, 20], 0, [9, 9], &mut out[..80], &mut scratch));
        // Padding of 2 (wider than PyTorch allows for this window).
        assert!(!max_pool_3x3s2(&x, 1, [20, 20], 2, [10, 10], &mut out, &mut scratch));
    }
}
