//! Row and tile helpers of the fused attention: copying operands into scratch,
//! reading a mask row, scaling a row of scores.

use super::*;

/// Query rows whose scores are computed, masked, softmaxed and multiplied together: with
/// 128 keys, their scores and probabilities (16 KiB each) stay in L1.
pub(super) const SUB_ROWS: usize = 32;

/// The bits of `-0.0`.
pub(super) const NEG_ZERO: u32 = 0x8000_0000;

/// Copies the `rows × cols` matrix `src` into `dst` (row-major).
pub(super) fn copy_into(src: &MatView<'_, f32>, dst: &mut [f32]) {
    let (rows, cols) = (src.rows, src.cols);
    for (r, d) in dst.chunks_exact_mut(cols).take(rows).enumerate() {
        let at = src.off + r * src.rs;
        if src.cs == 1 {
            d.copy_from_slice(&src.data[at..at + cols]);
        } else {
            for (c, x) in d.iter_mut().enumerate() {
                *x = src.data[at + c * src.cs];
            }
        }
    }
}

/// A mask row of `s` elements starting at `base`, `cs` apart.
pub(super) enum Row<'a, T> {
    /// Contiguous.
    Slice(&'a [T]),
    /// One element broadcast along the row.
    Same(T),
    /// From the row's start, read at `j·cs`.
    Strided(&'a [T]),
}

/// The mask row at `base`, checked to lie in `data`.
#[inline(always)]
pub(super) fn mask_row<T: Copy>(data: &[T], base: usize, cs: usize, s: usize) -> Result<Row<'_, T>> {
    let end = (s - 1).checked_mul(cs).and_then(|x| x.checked_add(base + 1));
    let Some(row) = end.and_then(|e| data.get(base..e)) else {
        return Err(KernelError::new(OP, "mask view exceeds its storage"));
    };
    Ok(match cs {
        0 => Row::Same(row[0]),
        1 => Row::Slice(row),
        _ => Row::Strided(row),
    })
}

/// Scales a row of scores in place as the unfused `mul.Scalar`/`div.Scalar` do, in `f32`.
#[inline(always)]
pub(super) fn scale_row(row: &mut [f32], scale: Scale) {
    match scale {
        Scale::None => {}
        Scale::Mul(c) => {
            for x in row.iter_mut() {
                *x *= c;
            }
        }
        Scale::Div(c) => {
            for x in row.iter_mut() {
                *x /= c;
            }
        }
    }
}
