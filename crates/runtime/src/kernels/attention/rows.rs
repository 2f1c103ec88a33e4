//! Row and tile helpers of the fused attention: transposing and copying operands into scratch,
//! reading a mask row, scaling a row of scores.

use super::*;

/// Query rows whose scores are computed, masked, softmaxed and multiplied together: with
/// 128 keys, their scores and probabilities (16 KiB each) stay in L1.
pub(super) const SUB_ROWS: usize = 32;

/// The bits of `-0.0`.
pub(super) const NEG_ZERO: u32 = 0x8000_0000;

/// Copies the `rows × cols` matrix `src` into `dst` (`rows × cols`, row-major), in square
/// tiles so that both the strided reads and the writes stay within a few cache lines. With
/// AVX-512F and contiguous columns (the transposed keys, whose columns are rows of a
/// projection's output) the whole 16 × 16 tiles are transposed in registers.
pub(super) fn transpose_into(src: &MatView<'_, f32>, dst: &mut [f32]) {
    let (rows, cols) = (src.rows, src.cols);
    assert!(dst.len() >= rows * cols, "transpose_into: destination too short");
    #[cfg(target_arch = "x86_64")]
    if src.rs == 1 && Isa::Avx512.available() {
        let (r16, c16) = (rows / 16 * 16, cols / 16 * 16);
        // SAFETY: the CPU has AVX-512F (checked just above), and `dst` holds `rows × cols`
        // elements (asserted above).
        unsafe { transpose_tiles_avx512(src, dst, r16, c16) };
        transpose_part(src, dst, r16..rows, 0..cols);
        transpose_part(src, dst, 0..r16, c16..cols);
        return;
    }
    transpose_part(src, dst, 0..rows, 0..cols);
}

/// [`transpose_into`] for rows `rs` and columns `cs` of `src`.
pub(super) fn transpose_part(src: &MatView<'_, f32>, dst: &mut [f32], rs: std::ops::Range<usize>, cs: std::ops::Range<usize>) {
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

/// The 16 × 16 tiles of [`transpose_into`] within the first `r16` rows and `c16` columns
/// (multiples of 16) of `src`, whose columns are contiguous (`rs == 1`): sixteen columns
/// loaded, transposed in registers (pairs of rows interleaved, then quadruples, then
/// 128-bit quarters), stored as sixteen rows.
///
/// # Safety
/// The CPU supports AVX-512F; `src.rs == 1`, `r16 ≤ rows`, `c16 ≤ cols`, and `dst` holds
/// `rows × cols` elements.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn transpose_tiles_avx512(src: &MatView<'_, f32>, dst: &mut [f32], r16: usize, c16: usize) {
    use std::arch::x86_64::*;
    let (base, out) = (src.data.as_ptr(), dst.as_mut_ptr());
    for c0 in (0..c16).step_by(16) {
        for r0 in (0..r16).step_by(16) {
            // SAFETY: column `c0 + i` rows `r0..r0 + 16` of the view are the 16 consecutive
            // elements from `off + r0 + (c0 + i)·cs`, inside `data` (`MatView::new` checked
            // every element of the view).
            let x: [__m512; 16] = std::array::from_fn(|i| unsafe { _mm512_loadu_ps(base.add(src.off + r0 + (c0 + i) * src.cs)) });
            // Element `j` of `x[i]` is `M[i][j]`; `M[i][j]` for `i` in `4g..4g+4` and `j` in
            // quarter `q`, position `k`, lands in `u[4g + k]` quarter `q`.
            let mut u = [_mm512_setzero_ps(); 16];
            for g in 0..4 {
                let lo01 = _mm512_unpacklo_ps(x[4 * g], x[4 * g + 1]);
                let hi01 = _mm512_unpackhi_ps(x[4 * g], x[4 * g + 1]);
                let lo23 = _mm512_unpacklo_ps(x[4 * g + 2], x[4 * g + 3]);
                let hi23 = _mm512_unpackhi_ps(x[4 * g + 2], x[4 * g + 3]);
                u[4 * g] = _mm512_shuffle_ps::<0x44>(lo01, lo23);
                u[4 * g + 1] = _mm512_shuffle_ps::<0xEE>(lo01, lo23);
                u[4 * g + 2] = _mm512_shuffle_ps::<0x44>(hi01, hi23);
                u[4 * g + 3] = _mm512_shuffle_ps::<0xEE>(hi01, hi23);
            }
            for k in 0..4 {
                let v0 = _mm512_shuffle_f32x4::<0x44>(u[k], u[4 + k]);
                let v1 = _mm512_shuffle_f32x4::<0xEE>(u[k], u[4 + k]);
                let v2 = _mm512_shuffle_f32x4::<0x44>(u[8 + k], u[12 + k]);
                let v3 = _mm512_shuffle_f32x4::<0xEE>(u[8 + k], u[12 + k]);
                let rows = [
                    _mm512_shuffle_f32x4::<0x88>(v0, v2),
                    _mm512_shuffle_f32x4::<0xDD>(v0, v2),
                    _mm512_shuffle_f32x4::<0x88>(v1, v3),
                    _mm512_shuffle_f32x4::<0xDD>(v1, v3),
                ];
                for (q, row) in rows.into_iter().enumerate() {
                    // SAFETY: row `r0 + 4q + k < rows` columns `c0..c0 + 16 ≤ cols` of `dst`.
                    unsafe { _mm512_storeu_ps(out.add((r0 + 4 * q + k) * src.cols + c0), row) };
                }
            }
        }
    }
}

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
