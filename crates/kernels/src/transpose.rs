//! Copying a strided matrix into a row-major one in square tiles: the transposed keys of the
//! fused attention, and a pixel-major convolution's result turned back into channel planes.
//! With contiguous columns (`rs == 1`, the source being the transpose of a row-major matrix)
//! whole tiles are transposed in registers: 16 × 16 with AVX-512F, 8 × 8 with AVX.

use crate::Isa;
use crate::mat::MatView;

/// Copies the `rows × cols` matrix `src` into `dst` (`rows × cols`, row-major), in square
/// tiles so that both the strided reads and the writes stay within a few cache lines.
///
/// # Panics
/// When `dst` holds fewer than `rows × cols` elements (a caller's bug).
pub fn transpose_into(src: &MatView<'_, f32>, dst: &mut [f32]) {
    let (rows, cols) = (src.rows, src.cols);
    assert!(dst.len() >= rows * cols, "transpose_into: destination too short");
    #[cfg(target_arch = "x86_64")]
    if src.rs == 1 {
        let tile = match Isa::current() {
            Isa::Avx512 => Some(16),
            Isa::Avx2 => Some(8),
            Isa::Generic => None,
        };
        if let Some(tile) = tile {
            let (rt, ct) = (rows / tile * tile, cols / tile * tile);
            // SAFETY: the CPU has the tile's ISA (`Isa::current` says so), and `dst` holds
            // `rows × cols` elements (asserted above); `rs == 1`, `rt ≤ rows`, `ct ≤ cols`.
            unsafe {
                if tile == 16 {
                    crate::x86::avx512::transpose_tiles(src, dst, rt, ct);
                } else {
                    crate::x86::avx2::transpose_tiles(src, dst, rt, ct);
                }
            }
            transpose_part(src, dst, rt..rows, 0..cols);
            transpose_part(src, dst, 0..rt, ct..cols);
            return;
        }
    }
    transpose_part(src, dst, 0..rows, 0..cols);
}

/// [`transpose_into`] for rows `rs` and columns `cs` of `src`, element by element.
fn transpose_part(src: &MatView<'_, f32>, dst: &mut [f32], rs: std::ops::Range<usize>, cs: std::ops::Range<usize>) {
    const T: usize = 16;
    let cols = src.cols;
    for r0 in rs.clone().step_by(T) {
        let r1 = (r0 + T).min(rs.end);
        for c in cs.clone() {
            let at = src.off + c * src.cs;
            for r in r0..r1 {
                dst[r * cols + c] = src.data[at + r * src.rs];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Gen;

    #[test]
    fn transposing_in_tiles_gives_every_element_on_every_isa() {
        for isa in Isa::supported() {
            crate::isa::with(isa, || for (rows, cols) in [(64, 128), (16, 16), (8, 8), (37, 53), (5, 40), (40, 5), (33, 17), (49, 576)] {
                for cs in [cols.max(rows) + 3, rows] {
                    let data = Gen(1 + (rows * cols) as u64).vec(cs * cols + rows);
                    let src = MatView::new("t", &data, 2, rows, cols, 1, cs).unwrap();
                    let mut dst = vec![f32::NAN; rows * cols];
                    transpose_into(&src, &mut dst);
                    for r in 0..rows {
                        for c in 0..cols {
                            assert_eq!(dst[r * cols + c].to_bits(), data[2 + r + c * cs].to_bits(), "{isa}: {rows}x{cols} at {r}, {c}");
                        }
                    }
                }
            });
        }
    }
}
