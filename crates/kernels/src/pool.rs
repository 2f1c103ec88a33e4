//! Max pooling of `f32` planes with a 3 × 3 window and stride 2 (the pooling of SqueezeNet,
//! AlexNet, GoogLeNet, ResNet's stem) in vector registers.
//!
//! Each output takes its window's nine taps in PyTorch's order (row by row, each row left to
//! right) with PyTorch's update rule (a larger value or any NaN replaces the maximum so far),
//! so the result is the same bits as the scalar loop's: the same `-0.0` or `0.0` of a tie, the
//! same NaN. Eight outputs of a row at a time: the three taps of a window row are the even
//! elements, the odd elements and the even elements one further on of sixteen consecutive
//! inputs, split out of two vectors by shuffles, so no tap is gathered.

use crate::isa::Isa;

/// Max pooling of `planes` planes of `ih × iw` into `oh × ow` planes with a 3 × 3 window,
/// stride 2, no padding and no dilation, every window wholly inside its plane
/// (`2·oh + 1 ≤ ih`, `2·ow + 1 ≤ iw`). Returns `false`, writing nothing, when no vector path
/// applies (the generic path, rows narrower than a vector, shapes outside that contract, or
/// buffers too small for them): the caller's general loop runs then.
pub fn max_pool_3x3s2(x: &[f32], planes: usize, ih: usize, iw: usize, oh: usize, ow: usize, out: &mut [f32]) -> bool {
    let fits = ow >= 8
        && oh >= 1
        && 2 * oh < ih
        && 2 * ow < iw
        && planes.checked_mul(ih * iw).is_some_and(|n| n <= x.len())
        && planes.checked_mul(oh * ow).is_some_and(|n| n <= out.len());
    if !fits || !Isa::Avx2.available() {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    {
        for p in 0..planes {
            // SAFETY: the CPU runs AVX2 (`available`); plane `p` of `x` holds `ih·iw` elements
            // and of `out` `oh·ow` (checked above), and every window lies inside the plane.
            unsafe { crate::x86::avx2::max_pool_3x3s2_plane(x.as_ptr().add(p * ih * iw), iw, oh, ow, out.as_mut_ptr().add(p * oh * ow)) };
        }
        true
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scalar rule, taps in PyTorch's order.
    fn reference(x: &[f32], planes: usize, ih: usize, iw: usize, oh: usize, ow: usize) -> Vec<f32> {
        let mut out = vec![0.0; planes * oh * ow];
        for p in 0..planes {
            for y in 0..oh {
                for xo in 0..ow {
                    let mut best = x[p * ih * iw + 2 * y * iw + 2 * xo];
                    for a in 0..3 {
                        for c in 0..3 {
                            let v = x[p * ih * iw + (2 * y + a) * iw + 2 * xo + c];
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
        // one, ties of signed zeros, NaNs with distinct payloads and infinities.
        for &(ih, iw) in &[(17, 17), (18, 19), (27, 27), (55, 55), (9, 40), (111, 111), (5, 33)] {
            let (oh, ow) = ((ih - 3) / 2 + 1, (iw - 3) / 2 + 1);
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
            let want = reference(&x, planes, ih, iw, oh, ow);
            let mut got = vec![1.5f32; planes * oh * ow];
            for isa in Isa::supported() {
                let ran = crate::isa::with(isa, || max_pool_3x3s2(&x, planes, ih, iw, oh, ow, &mut got));
                assert_eq!(ran, isa >= Isa::Avx2 && ow >= 8, "{isa} {ih}x{iw}");
                if ran {
                    let same = want.iter().zip(&got).all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(same, "{isa} {ih}x{iw}: {want:?} != {got:?}");
                }
            }
        }
    }

    #[test]
    fn declines_what_it_does_not_cover() {
        let x = vec![0.0f32; 20 * 20];
        let mut out = vec![0.0f32; 10 * 10];
        // A window past the last column (ceil mode's partial window), a short output buffer.
        assert!(!max_pool_3x3s2(&x, 1, 20, 20, 9, 10, &mut out));
        assert!(!max_pool_3x3s2(&x, 1, 20, 20, 9, 9, &mut out[..80]));
    }
}
