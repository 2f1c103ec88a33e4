//! The fused computation: per block of query rows, the scores by the packed GEMM, scaled and
//! masked in one pass, softmaxed, multiplied by the values and written in the output's layout.

use super::*;

/// Computes attention into a fresh output from `alloc`; `Ok(None)` when the operands are not
/// ones this kernel handles (dtype, rank, inconsistent shapes), which the caller then
/// interprets through the op's region.
pub(crate) fn attention(spec: &Spec, inputs: &[Tensor], alloc: &mut dyn OutputAlloc) -> Result<Option<Tensor>> {
    let Some(isa) = Isa::simd() else { return Ok(None) };
    let want = if spec.mask == Mask::None { 3 } else { 4 };
    if inputs.len() != want || inputs[..3].iter().any(|t| t.dtype() != DType::F32) {
        return Ok(None);
    }
    let (Some(q), Some(kt), Some(v)) = (mats(&inputs[0]), mats(&inputs[1]), mats(&inputs[2])) else { return Ok(None) };
    let (n, l, e, s, ev) = (q.n, q.rows, q.cols, kt.cols, v.cols);
    if kt.n != n || v.n != n || kt.rows != e || v.rows != s || [n, l, e, s, ev].contains(&0) {
        return Ok(None);
    }
    let qd = inputs[0].storage_slice::<f32>()?;
    let kd = inputs[1].storage_slice::<f32>()?;
    let vd = inputs[2].storage_slice::<f32>()?;
    let mask = match (spec.mask, inputs.get(3)) {
        (Mask::None, _) => MaskData::None,
        (Mask::Fill(_) | Mask::Keep(_), Some(t)) if t.dtype() == DType::Bool => {
            let Some(ml) = mask_layout(t, n, l, s, spec.mask_heads) else { return Ok(None) };
            MaskData::Bool(t.storage_slice::<bool>()?, ml)
        }
        (Mask::Add, Some(t)) if t.dtype() == DType::F32 => {
            let Some(ml) = mask_layout(t, n, l, s, spec.mask_heads) else { return Ok(None) };
            MaskData::F32(t.storage_slice::<f32>()?, ml)
        }
        _ => return Ok(None),
    };
    let (dims, rank) = match spec.output {
        Output::Bmm => ([n, l, ev, 0], 3),
        Output::Split(h) if n % h == 0 => ([n / h, h, l, ev], 4),
        Output::Permuted(h) if n % h == 0 => ([n / h, l, h, ev], 4),
        _ => return Ok(None),
    };
    let sizes = &dims[..rank];
    // Where output row `i` of batch `b` starts.
    let out_row = |b: usize, i: usize| -> usize {
        match spec.output {
            Output::Bmm | Output::Split(_) => (b * l + i) * ev,
            Output::Permuted(h) => ((b / h) * l + i) * h * ev + (b % h) * ev,
        }
    };
    // A boolean mask replaces a score by `fill` where it differs from `keep`.
    let (fill, keep) = match spec.mask {
        Mask::Fill(f) => (f, false),
        Mask::Keep(f) => (f, true),
        Mask::None | Mask::Add => (0.0, false),
    };
    let out = alloc.output(0, DType::F32, sizes)?;
    if out.dtype() != DType::F32 || out.sizes() != sizes || !out.is_contiguous() {
        return Err(KernelError::new(OP, "output buffer has the wrong type or layout"));
    }
    let total = out.numel();
    // The output's elements, written through the storage's own (mutable) pointer; `out` is
    // contiguous, so they are the `total` elements from its offset.
    let _ = out.storage_slice::<f32>()?.get(out.offset()..out.offset() + total).ok_or_else(|| KernelError::new(OP, "output reaches past its storage"))?;
    // SAFETY: checked just above: `offset + total` elements lie inside the storage.
    let dst = crate::parallel::SharedOut(unsafe { (out.storage().as_ptr() as *mut f32).add(out.offset()) });
    let rb = row_block(n, l);
    let blocks = l.div_ceil(rb);
    let (q_off, k_off, v_off) = (inputs[0].offset(), inputs[1].offset(), inputs[2].offset());
    let m_off = inputs.get(3).map_or(0, Tensor::offset);
    // A boolean mask that replaces scores by `-inf` lets a block skip the columns after the
    // last one any of its rows keeps (see [`block_width`]).
    let skips = matches!(mask, MaskData::Bool(..)) && fill == f32::NEG_INFINITY;
    crate::parallel::try_for_each(n * blocks, |task| -> Result<()> {
        let (b, r0) = (task / blocks, (task % blocks) * rb);
        let rows = rb.min(l - r0);
        let mut scratch = SCRATCH.take();
        let sub_max = SUB_ROWS.min(rows);
        let kt_len = if kt.cs == 1 && kt.rs == s { 0 } else { e * s };
        let v_len = if v.cs == 1 && v.rs == ev { 0 } else { s * ev };
        let q_len = if q.cs == 1 && q.rs == e { 0 } else { sub_max * e };
        let need = kt_len + v_len + q_len + sub_max * (2 * s + ev);
        if scratch.len() < need {
            scratch.resize(need, 0.0);
        }
        let r = (|| -> Result<()> {
            let (kbuf, rest) = scratch.split_at_mut(kt_len);
            let (vbuf, rest) = rest.split_at_mut(v_len);
            let (qbuf, rest) = rest.split_at_mut(q_len);
            let (scores_all, rest) = rest.split_at_mut(sub_max * s);
            let (probs_all, rest) = rest.split_at_mut(sub_max * s);
            let o_all = &mut rest[..sub_max * ev];
            // The transposed keys and the values, contiguous (copied once per task unless they
            // already are), so that both products read their right operand in place: rows
            // of a projection's output are thousands of bytes apart, which maps a head's rows
            // onto a few cache sets.
            let kview = MatView::new(OP, kd, k_off + kt.batch.offset(b), e, s, kt.rs, kt.cs)?;
            let bt = if kt_len == 0 {
                kview
            } else {
                transpose_into(&kview, kbuf);
                MatView::new(OP, kbuf, 0, e, s, s, 1)?
            };
            let vview = MatView::new(OP, vd, v_off + v.batch.offset(b), s, ev, v.rs, v.cs)?;
            let vv = if v_len == 0 {
                vview
            } else {
                copy_into(&vview, vbuf);
                MatView::new(OP, vbuf, 0, s, ev, ev, 1)?
            };
            // The rows of `v` from which on all are finite: a skipped probability (zero) times
            // a NaN or an infinity would have been NaN.
            let v_end = if skips { nonfinite_end(&vv) } else { s };
            // Blocks of query rows whose scores, probabilities and output rows stay in L1.
            for i0 in (0..rows).step_by(sub_max) {
                let (r1, sub) = (r0 + i0, sub_max.min(rows - i0));
                // The columns this block computes, and the mask's rows for it.
                let mut w = match &mask {
                    MaskData::Bool(md, ml) if skips => {
                        let base = m_off + ml.batch.offset(b) + r1 * ml.rs;
                        block_width(kept_end(md, ml, base, sub, s, keep)?.max(v_end), s)
                    }
                    _ => s,
                };
                let qview = MatView::new(OP, qd, q_off + q.batch.offset(b) + r1 * q.rs, sub, e, q.rs, q.cs)?;
                let a = if q_len == 0 {
                    qview
                } else {
                    copy_into(&qview, qbuf);
                    MatView::new(OP, qbuf, 0, sub, e, e, 1)?
                };
                // Computed again at full width if an output is `-0` (see `block_width`).
                loop {
                    let scores = &mut scores_all[..sub * w];
                    let probs = &mut probs_all[..sub * w];
                    let o = &mut o_all[..sub * ev];
                    let bw = MatView::new(OP, bt.data, bt.off, e, w, bt.rs, bt.cs)?;
                    packed::gemm_activations(OP, isa, a, bw, &Epilogue::PLAIN, scores, w)?;
                    // Scale and mask, compiled for the widest vectors (the same bits on every width).
                    super::super::wide::widest(
                        #[inline(always)]
                        || -> Result<()> {
                            for i in 0..sub {
                                let row = &mut scores[i * w..(i + 1) * w];
                                scale_row(row, spec.scale);
                                match &mask {
                                    MaskData::None => {}
                                    MaskData::Bool(md, ml) => {
                                        let base = m_off + ml.batch.offset(b) + (r1 + i) * ml.rs;
                                        match mask_row(md, base, ml.cs, w)? {
                                            Row::Slice(mr) => {
                                                // Bit selects (all ones where the score is
                                                // replaced) vectorize; a branch on a `bool` does not.
                                                let (fb, flip) = (fill.to_bits(), u32::from(keep));
                                                for (x, &mk) in row.iter_mut().zip(mr) {
                                                    let sel = (u32::from(mk) ^ flip).wrapping_neg();
                                                    *x = f32::from_bits((x.to_bits() & !sel) | (fb & sel));
                                                }
                                            }
                                            Row::Same(mk) => {
                                                if mk != keep {
                                                    row.fill(fill);
                                                }
                                            }
                                            Row::Strided(mr) => {
                                                for (j, x) in row.iter_mut().enumerate() {
                                                    if mr[j * ml.cs] != keep {
                                                        *x = fill;
                                                    }
                                                }
                                            }
                                        }
                                    }
                                    MaskData::F32(md, ml) => {
                                        let base = m_off + ml.batch.offset(b) + (r1 + i) * ml.rs;
                                        match mask_row(md, base, ml.cs, w)? {
                                            Row::Slice(mr) => {
                                                for (x, &a) in row.iter_mut().zip(mr) {
                                                    *x += a;
                                                }
                                            }
                                            Row::Same(a) => {
                                                for x in row.iter_mut() {
                                                    *x += a;
                                                }
                                            }
                                            Row::Strided(mr) => {
                                                for (j, x) in row.iter_mut().enumerate() {
                                                    *x += mr[j * ml.cs];
                                                }
                                            }
                                        }
                                    }
                                }
                            }
                            Ok(())
                        },
                    )?;
                    ::kernels::softmax::rows_serial(scores, w, probs);
                    if spec.safe {
                        zero_masked_rows(scores, probs, w);
                    }
                    let p = MatView::new(OP, probs, 0, sub, w, w, 1)?;
                    let vw = MatView::new(OP, vv.data, vv.off, w, ev, vv.rs, vv.cs)?;
                    packed::gemm_activations(OP, isa, p, vw, &Epilogue::PLAIN, o, ev)?;
                    if w == s || !o.iter().fold(false, |z, x| z | (x.to_bits() == NEG_ZERO)) {
                        break;
                    }
                    w = s;
                }
                let o = &o_all[..sub * ev];
                for i in 0..sub {
                    let at = out_row(b, r1 + i);
                    debug_assert!(at + ev <= total);
                    // SAFETY: `out` is a contiguous tensor of `total` elements from `dst`; row
                    // `r1 + i` of batch `b` covers `ev` elements from `at` (`at + ev ≤ total` by the
                    // output's shape), and no other task writes them (each writes its own rows of
                    // its own batch).
                    unsafe { std::ptr::copy_nonoverlapping(o[i * ev..].as_ptr(), dst.get().add(at), ev) };
                }
            }
            Ok(())
        })();
        SCRATCH.set(scratch);
        r
    })?;
    Ok(Some(out))
}

/// Zeroes the probabilities of each row whose scores are all `-inf`, as `_safe_softmax` does
/// (such a row's softmax is NaN throughout, so only NaN rows are scanned).
fn zero_masked_rows(scores: &[f32], probs: &mut [f32], w: usize) {
    for (s, p) in scores.chunks_exact(w).zip(probs.chunks_exact_mut(w)) {
        if p[0].is_nan() && s.iter().all(|&x| x == f32::NEG_INFINITY) {
            p.fill(0.0);
        }
    }
}

/// The columns of the scores a block of query rows computes, given `end`, one more than the
/// last column any of its rows keeps (and than the last row of the values that is not
/// finite): `end` rounded up to whole vectors of the softmax, at most `s`.
///
/// The block then has the bits the full width gives when the mask replaces the columns from
/// `end` on by `-inf`. Each score is a sum over `E` alone, whatever the number of columns.
/// Whatever the products there, the replaced columns' probabilities are `exp(-inf) = +0`, so
/// the row maximum is that of the columns kept; the softmax sums 16 lanes by position
/// (element `j` into lane `j % 16`, from `+0`) and the elements after the last whole vector
/// one by one, so the `+0`s of whole vectors or of all the columns change no sum. In the
/// second product a skipped probability is `+0`, and `+0·v` is `±0` for a finite `v`, which
/// leaves a sum unchanged unless the sum is `-0` (its products all `-0`, or negative and
/// under half the smallest subnormal): then the full width may give `+0`, so a block with a
/// `-0` output is computed again at full width. A fully masked block (`end = 0`) computes one
/// vector of columns, `-inf` throughout, so its rows are NaN as they are at full width.
pub(super) fn block_width(end: usize, s: usize) -> usize {
    end.max(1).next_multiple_of(16).min(s)
}

/// One more than the last column that any of the `rows` mask rows from `base` keeps (equals
/// `keep`), 0 when none does. Each row is read only after the last column kept so far.
pub(super) fn kept_end(md: &[bool], ml: &MaskLayout, base: usize, rows: usize, s: usize, keep: bool) -> Result<usize> {
    let mut end = 0;
    // From the last row: in a causal mask it keeps the most.
    for i in (0..rows).rev() {
        if end == s {
            break;
        }
        match mask_row(md, base + i * ml.rs, ml.cs, s)? {
            Row::Slice(mr) => {
                if let Some(j) = last_equal(&mr[end..], keep) {
                    end += j + 1;
                }
            }
            Row::Same(mk) => {
                if mk == keep {
                    end = s;
                }
            }
            Row::Strided(mr) => {
                if let Some(j) = (end..s).rev().find(|&j| mr[j * ml.cs] == keep) {
                    end = j + 1;
                }
            }
        }
    }
    Ok(end)
}

/// The index of the last element of `mr` equal to `want`, looked for 64 elements at a time
/// from the end (a test of a whole chunk vectorizes; a search that stops does not).
pub(super) fn last_equal(mr: &[bool], want: bool) -> Option<usize> {
    let mut end = mr.len();
    while end > 0 {
        let start = end.saturating_sub(64);
        let chunk = &mr[start..end];
        if chunk.iter().fold(false, |any, &m| any | (m == want)) {
            return chunk.iter().rposition(|&m| m == want).map(|j| start + j);
        }
        end = start;
    }
    None
}

/// One more than the last row of `v` holding a NaN or an infinity; 0 when every element is
/// finite.
pub(super) fn nonfinite_end(v: &MatView<'_, f32>) -> usize {
    super::super::wide::widest(
        #[inline(always)]
        || {
            (0..v.rows)
                .rev()
                .find(|&r| {
                    let at = v.off + r * v.rs;
                    if v.cs == 1 {
                        v.data[at..at + v.cols].iter().fold(false, |bad, x| bad | !x.is_finite())
                    } else {
                        (0..v.cols).any(|c| !v.data[at + c * v.cs].is_finite())
                    }
                })
                .map_or(0, |r| r + 1)
        },
    )
}
