//! Fused attention: `softmax(mask(scale(q·kᵀ)))·v` over strided `f32` operands, the native
//! implementation of `backend.kernel {kernel = "attention"}`.
//!
//! The op's region holds the unfused ops (the product of the queries and the transposed keys,
//! the optional scale, the optional mask, the row softmax, the product with the values and
//! the optional permute and copy of the result); its attributes, written by the pass that
//! formed it (`fuse-attention`), say which of them are present:
//!
//! - `scale` (a multiplier) or `divisor`: the scores are multiplied (divided) by it, in `f32`;
//! - `mask = "fill" | "keep" | "add"` with `fill`: `where(mask, fill, s)`, `where(mask, s,
//!   fill)` or `s + mask`; `mask_heads` is the second of the four dims the scores have where
//!   the mask applies (0 when they have three), which the mask is broadcast against;
//! - `output = "bmm" | "split" | "permuted"` with `out_heads`: the result is the second product
//!   (`[N, L, Ev]`), its view as `[N/h, h, L, Ev]`, or that view permuted to `[N/h, L, h, Ev]`
//!   (contiguous, as the copy that follows the permute makes it).
//!
//! The operands are the queries `[…, L, E]`, the transposed keys `[…, E, S]` and the values
//! `[…, S, Ev]`, each of rank 3 or 4 (the leading dims merged into `N` batches), and the mask:
//! the views the unfused program copies before its products, read here in place at their
//! strides. Each task computes a block of query rows of one batch: the scores with the packed
//! GEMM (`packed::gemm_activations`), scale and mask in one pass, the rows softmaxed with the
//! interpreter's own row routine (so a fully masked row is NaN, as PyTorch's math path gives),
//! the product with the values, then the rows copied into the output's layout. Blocks depend
//! only on the shapes, and each is computed whole by one thread, so the result has the same
//! bits on any number of threads. Scratch lives in per-thread buffers; a call allocates only
//! its output.

use std::sync::Arc;

use ir::{Attribute, DType, Module, OpId};

use super::linalg::MatView;
use ::kernels::Isa;
use ::kernels::gemm::{self as packed, Epilogue};
use crate::fusion::{FusionKernel, FusionOutcome, OutputAlloc};
use crate::tensor::{KernelError, Result, Tensor};

const OP: &str = "attention";

/// How the scores are scaled before the mask.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Scale {
    None,
    Mul(f32),
    Div(f32),
}

/// How the mask applies to the scaled scores.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Mask {
    None,
    /// `where(mask, fill, s)`: a boolean mask, true where the score is replaced.
    Fill(f32),
    /// `where(mask, s, fill)`: a boolean mask, true where the score is kept.
    Keep(f32),
    /// `s + mask`: an `f32` mask.
    Add,
}

/// The layout of the result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Output {
    /// `[N, L, Ev]`, as the second batched product gives it.
    Bmm,
    /// `[N/h, h, L, Ev]`.
    Split(usize),
    /// `[N/h, L, h, Ev]`: heads side by side in each row.
    Permuted(usize),
}

/// What one fused attention computes (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Spec {
    pub scale: Scale,
    pub mask: Mask,
    /// The second dim of the scores where the mask applies, when they have four; 0 for three.
    pub mask_heads: usize,
    pub output: Output,
}

impl Spec {
    /// The spec a `backend.kernel {kernel = "attention"}` op's attributes describe.
    pub(crate) fn of_op(m: &Module, op: OpId) -> std::result::Result<Spec, String> {
        let float = |k: &str| m.attr(op, k).and_then(Attribute::as_number);
        let int = |k: &str| -> std::result::Result<usize, String> {
            let v = m.attr(op, k).and_then(|a| a.as_int()).ok_or_else(|| format!("attribute '{k}' is missing"))?;
            usize::try_from(v).map_err(|_| format!("attribute '{k}' is negative"))
        };
        let scale = match (float("scale"), float("divisor")) {
            (None, None) => Scale::None,
            (Some(s), None) => Scale::Mul(s as f32),
            (None, Some(d)) => Scale::Div(d as f32),
            (Some(_), Some(_)) => return Err("both 'scale' and 'divisor' are given".into()),
        };
        let mask_kind = m.attr(op, "mask").and_then(|a| a.as_str()).unwrap_or("none");
        let fill = || float("fill").map(|f| f as f32).ok_or_else(|| "attribute 'fill' is missing".to_string());
        let mask = match mask_kind {
            "none" => Mask::None,
            "fill" => Mask::Fill(fill()?),
            "keep" => Mask::Keep(fill()?),
            "add" => Mask::Add,
            other => return Err(format!("unknown mask kind '{other}'")),
        };
        let mask_heads = if mask == Mask::None { 0 } else { int("mask_heads")? };
        let output = match m.attr(op, "output").and_then(|a| a.as_str()).unwrap_or("bmm") {
            "bmm" => Output::Bmm,
            "split" => Output::Split(int("out_heads")?.max(1)),
            "permuted" => Output::Permuted(int("out_heads")?.max(1)),
            other => return Err(format!("unknown output layout '{other}'")),
        };
        Ok(Spec { scale, mask, mask_heads, output })
    }
}

/// How an operand's batch `n` (of `N`) maps to storage: `(n / split)·hi + (n % split)·lo`.
#[derive(Clone, Copy, Debug)]
struct Batch {
    split: usize,
    hi: usize,
    lo: usize,
}

impl Batch {
    fn offset(self, n: usize) -> usize {
        (n / self.split) * self.hi + (n % self.split) * self.lo
    }
}

/// A 3-D or 4-D operand as `N` matrices: its batch mapping, its matrix dims and strides.
#[derive(Clone, Copy, Debug)]
struct Mats {
    batch: Batch,
    n: usize,
    rows: usize,
    cols: usize,
    rs: usize,
    cs: usize,
}

fn mats(t: &Tensor) -> Option<Mats> {
    let (sz, st) = (t.sizes(), t.strides());
    match *sz {
        [n, rows, cols] => Some(Mats { batch: Batch { split: 1, hi: st[0], lo: 0 }, n, rows, cols, rs: st[1], cs: st[2] }),
        [a, b, rows, cols] => Some(Mats {
            batch: Batch { split: b.max(1), hi: st[0], lo: st[1] },
            n: a * b,
            rows,
            cols,
            rs: st[2],
            cs: st[3],
        }),
        _ => None,
    }
}

/// The mask broadcast against the scores `[N, L, S]` (or `[N/h, h, L, S]`).
#[derive(Clone, Copy, Debug)]
struct MaskLayout {
    batch: Batch,
    rs: usize,
    cs: usize,
}

fn mask_layout(t: &Tensor, n: usize, l: usize, s: usize, heads: usize) -> Option<MaskLayout> {
    if heads != 0 && n % heads != 0 {
        return None;
    }
    // Arrays, not vectors: this runs on every call.
    let (dims, r) = if heads == 0 { ([n, l, s, 0], 3) } else { ([n / heads, heads, l, s], 4) };
    let scores = &dims[..r];
    let (sz, st) = (t.sizes(), t.strides());
    if sz.len() > scores.len() {
        return None;
    }
    // Strides broadcast to the scores' shape (0 along dims the mask lacks or has as 1).
    let lead = scores.len() - sz.len();
    let mut bst = [0usize; 4];
    for (i, (&d, &want)) in sz.iter().zip(&scores[lead..]).enumerate() {
        if d == want {
            bst[lead + i] = if d == 1 { 0 } else { st[i] };
        } else if d != 1 {
            return None;
        }
    }
    let batch = if heads == 0 { Batch { split: 1, hi: bst[0], lo: 0 } } else { Batch { split: heads, hi: bst[0], lo: bst[1] } };
    Some(MaskLayout { batch, rs: bst[r - 2], cs: bst[r - 1] })
}

thread_local! {
    /// A task's scores, probabilities and output rows, kept across calls.
    static SCRATCH: std::cell::Cell<Vec<f32>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Query rows per task: whole batches when there are several, otherwise the rows split so
/// that there are about four tasks (the split depends only on the shapes).
fn row_block(n: usize, l: usize) -> usize {
    let blocks = 4usize.div_ceil(n.max(1)).min(l.div_ceil(16)).max(1);
    l.div_ceil(blocks).max(1)
}

/// The mask's elements, by dtype.
enum MaskData<'a> {
    None,
    Bool(&'a [bool], MaskLayout),
    F32(&'a [f32], MaskLayout),
}

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
                    super::wide::widest(
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
fn block_width(end: usize, s: usize) -> usize {
    end.max(1).next_multiple_of(16).min(s)
}

/// One more than the last column that any of the `rows` mask rows from `base` keeps (equals
/// `keep`), 0 when none does. Each row is read only after the last column kept so far.
fn kept_end(md: &[bool], ml: &MaskLayout, base: usize, rows: usize, s: usize, keep: bool) -> Result<usize> {
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
fn last_equal(mr: &[bool], want: bool) -> Option<usize> {
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
fn nonfinite_end(v: &MatView<'_, f32>) -> usize {
    super::wide::widest(
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

/// Query rows whose scores are computed, masked, softmaxed and multiplied together: with
/// 128 keys, their scores and probabilities (16 KiB each) stay in L1.
const SUB_ROWS: usize = 32;

/// The bits of `-0.0`.
const NEG_ZERO: u32 = 0x8000_0000;

/// Copies the `rows × cols` matrix `src` into `dst` (`rows × cols`, row-major), in square
/// tiles so that both the strided reads and the writes stay within a few cache lines. With
/// AVX-512F and contiguous columns (the transposed keys, whose columns are rows of a
/// projection's output) the whole 16 × 16 tiles are transposed in registers.
fn transpose_into(src: &MatView<'_, f32>, dst: &mut [f32]) {
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
unsafe fn transpose_tiles_avx512(src: &MatView<'_, f32>, dst: &mut [f32], r16: usize, c16: usize) {
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
fn copy_into(src: &MatView<'_, f32>, dst: &mut [f32]) {
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
enum Row<'a, T> {
    /// Contiguous.
    Slice(&'a [T]),
    /// One element broadcast along the row.
    Same(T),
    /// From the row's start, read at `j·cs`.
    Strided(&'a [T]),
}

/// The mask row at `base`, checked to lie in `data`.
#[inline(always)]
fn mask_row<T: Copy>(data: &[T], base: usize, cs: usize, s: usize) -> Result<Row<'_, T>> {
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
fn scale_row(row: &mut [f32], scale: Scale) {
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

/// `backend.kernel {kernel = "attention"}` as a [`FusionKernel`]: runs [`attention`], declining
/// the calls it does not handle.
#[derive(Debug)]
pub(crate) struct AttentionKernel {
    spec: Spec,
}

impl FusionKernel for AttentionKernel {
    fn run(&self, inputs: &[Tensor], alloc: &mut dyn OutputAlloc) -> Result<FusionOutcome> {
        Ok(match attention(&self.spec, inputs, alloc)? {
            Some(t) => FusionOutcome::Ran(vec![t]),
            None => FusionOutcome::Declined("operands the attention kernel does not handle".into()),
        })
    }
}

/// The native implementation of the `backend.kernel` op `op` named `name`, if there is one:
/// `Err` with the reason when there is none (unknown name, attributes it does not read, a
/// result count other than one); the op's region is then interpreted.
pub(crate) fn native_kernel(name: &str, m: &Module, op: OpId) -> std::result::Result<Arc<dyn FusionKernel>, String> {
    match name {
        dialect_backend::kernels::ATTENTION => {
            if m.results(op).len() != 1 {
                return Err(format!("attention gives one result, the op has {}", m.results(op).len()));
            }
            Ok(Arc::new(AttentionKernel { spec: Spec::of_op(m, op)? }))
        }
        other => Err(format!("no native kernel named '{other}'")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fresh outputs.
    struct Fresh;

    impl OutputAlloc for Fresh {
        fn output(&mut self, _: usize, dtype: DType, sizes: &[usize]) -> Result<Tensor> {
            Tensor::zeros(dtype, sizes)
        }
    }

    /// Deterministic values in [-2, 2).
    fn noise(n: usize, seed: u64) -> Vec<f32> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(1);
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                ((x >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
            })
            .collect()
    }

    /// The sizes of an attention over `[b, l, h, e]` queries, `[b, s, h, e]` keys and
    /// `[b, s, h, ev]` values.
    #[derive(Clone, Copy, Debug)]
    struct Dims {
        b: usize,
        h: usize,
        l: usize,
        s: usize,
        e: usize,
        ev: usize,
    }

    /// Which scores a mask replaces: by batch, head, query row and column.
    type Replaced = dyn Fn(usize, usize, usize, usize) -> bool;

    /// How the boolean mask is given.
    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Given {
        /// `[l, s]`, shared by every batch and head.
        Shared,
        /// `[h, l, s]`.
        PerHead,
        /// `[s, l]` transposed: columns `l` elements apart.
        Transposed,
        /// `[l, 1]`: whole rows replaced or kept.
        Rows,
    }

    /// The queries, transposed keys and values: the strided views the unfused program
    /// multiplies (heads split out of `[b, l, h, e]` rows).
    fn operands(d: Dims, q: &[f32], k: &[f32], v: &[f32]) -> Vec<Tensor> {
        let Dims { b, h, l, s, e, ev } = d;
        let q = Tensor::from_slice(q, &[b, l, h, e]).unwrap().permute(&[0, 2, 1, 3]).unwrap();
        let kt = Tensor::from_slice(k, &[b, s, h, e]).unwrap().permute(&[0, 2, 3, 1]).unwrap();
        let v = Tensor::from_slice(v, &[b, s, h, ev]).unwrap().permute(&[0, 2, 1, 3]).unwrap();
        vec![q, kt, v]
    }

    fn random(d: Dims, seed: u64) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
        let Dims { b, h, l, s, e, ev } = d;
        (noise(b * l * h * e, seed), noise(b * s * h * e, seed + 1), noise(b * s * h * ev, seed + 2))
    }

    /// The mask tensor (`true` where `replaced`, or where kept with `keep`) and the `mask_heads`
    /// of the spec that reads it.
    fn mask_tensor(d: Dims, given: Given, keep: bool, replaced: &Replaced) -> (Tensor, usize) {
        let Dims { h, l, s, .. } = d;
        let bit = |hh, i, j| replaced(0, hh, i, j) != keep;
        match given {
            Given::Shared => {
                let m: Vec<bool> = (0..l * s).map(|x| bit(0, x / s, x % s)).collect();
                (Tensor::from_slice(&m, &[l, s]).unwrap(), 0)
            }
            Given::PerHead => {
                let m: Vec<bool> = (0..h * l * s).map(|x| bit(x / (l * s), x / s % l, x % s)).collect();
                (Tensor::from_slice(&m, &[h, l, s]).unwrap(), h)
            }
            Given::Transposed => {
                let m: Vec<bool> = (0..s * l).map(|x| bit(0, x % l, x / l)).collect();
                (Tensor::from_slice(&m, &[s, l]).unwrap().t().unwrap(), 0)
            }
            Given::Rows => {
                let m: Vec<bool> = (0..l).map(|i| bit(0, i, 0)).collect();
                (Tensor::from_slice(&m, &[l, 1]).unwrap(), 0)
            }
        }
    }

    /// The output `[b, l, h, ev]` on `threads` threads.
    fn run(spec: &Spec, ins: &[Tensor], threads: usize) -> Vec<f32> {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let out = pool.install(|| attention(spec, ins, &mut Fresh)).unwrap().expect("the kernel takes these operands");
        out.to_vec::<f32>().unwrap()
    }

    fn spec(mask: Mask, mask_heads: usize, h: usize) -> Spec {
        Spec { scale: Scale::Mul(0.3), mask, mask_heads, output: Output::Permuted(h) }
    }

    fn bits(v: &[f32]) -> Vec<u32> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    /// Checks that the boolean mask `replaced` (given as `given`, replacing by `-inf`, so
    /// skipped where it can be) gives, on one and two threads, the bits of the same mask
    /// replacing by `f32::MIN` (whose probabilities are also `+0`, at full width), except in
    /// rows it replaces whole, which are NaN. The rows must each keep a score above `f32::MIN`
    /// or a NaN, where the two fills agree.
    fn check(d: Dims, (q, k, v): (&[f32], &[f32], &[f32]), given: Given, replaced: &Replaced) {
        let Dims { b, h, l, s, ev, .. } = d;
        let ins = operands(d, q, k, v);
        for keep in [false, true] {
            let (mask, heads) = mask_tensor(d, given, keep, replaced);
            let with = |f: f32| {
                let m = if keep { Mask::Keep(f) } else { Mask::Fill(f) };
                let mut ins = ins.clone();
                ins.push(mask.clone());
                (spec(m, heads, h), ins)
            };
            let (skipping, ins_skip) = with(f32::NEG_INFINITY);
            let (full, ins_full) = with(f32::MIN);
            let got = run(&skipping, &ins_skip, 1);
            let want = run(&full, &ins_full, 1);
            assert_eq!(bits(&got), bits(&run(&skipping, &ins_skip, 2)), "{d:?} {given:?} keep {keep}: one and two threads");
            for bb in 0..b {
                for i in 0..l {
                    for hh in 0..h {
                        let at = ((bb * l + i) * h + hh) * ev;
                        let (g, w) = (&got[at..at + ev], &want[at..at + ev]);
                        if (0..s).all(|j| replaced(bb, hh, i, j)) {
                            assert!(g.iter().all(|x| x.is_nan()), "{d:?} {given:?} keep {keep}: row {i} of batch {bb} head {hh} is masked whole");
                        } else {
                            assert_eq!(bits(g), bits(w), "{d:?} {given:?} keep {keep}: row {i} of batch {bb} head {hh}");
                        }
                    }
                }
            }
        }
    }

    fn causal(_: usize, _: usize, i: usize, j: usize) -> bool {
        j > i
    }

    #[test]
    fn a_block_computes_up_to_the_last_column_its_rows_keep_in_whole_vectors() {
        let (l, s) = (40, 100);
        let d = Dims { b: 1, h: 1, l, s, e: 1, ev: 1 };
        let (mask, _) = mask_tensor(d, Given::Shared, false, &causal);
        let md = mask.storage_slice::<bool>().unwrap();
        let ml = mask_layout(&mask, 1, l, s, 0).unwrap();
        let end = |r0: usize, rows: usize| kept_end(md, &ml, r0 * ml.rs, rows, s, false).unwrap();
        assert_eq!([end(0, 1), end(0, 16), end(16, 16), end(32, 8)], [1, 16, 32, 40]);
        assert_eq!([block_width(0, s), block_width(1, s), block_width(16, s), block_width(17, s), block_width(97, s)], [16, 16, 16, 32, 100]);
        // Kept columns before the end do not matter, nor does which row keeps the last one.
        let band = |_: usize, _: usize, i: usize, j: usize| !(j + 3 >= i && j <= i + 5);
        for (given, want) in [(Given::Shared, 21), (Given::Transposed, 21)] {
            let (mask, _) = mask_tensor(d, given, true, &band);
            let md = mask.storage_slice::<bool>().unwrap();
            let ml = mask_layout(&mask, 1, l, s, 0).unwrap();
            assert_eq!(kept_end(md, &ml, mask.offset() + 8 * ml.rs, 8, s, true).unwrap(), want, "{given:?}");
        }
        let (mask, _) = mask_tensor(d, Given::Rows, false, &|_, _, i, _| i % 2 == 0);
        let ml = mask_layout(&mask, 1, l, s, 0).unwrap();
        let md = mask.storage_slice::<bool>().unwrap();
        assert_eq!([kept_end(md, &ml, 0, 1, s, false).unwrap(), kept_end(md, &ml, 0, 2, s, false).unwrap()], [0, s]);
    }

    #[test]
    fn the_values_are_finite_up_to_the_row_after_the_last_nonfinite_one() {
        let mut v = noise(6 * 5, 3);
        let view = |v: &[f32]| nonfinite_end(&MatView::new(OP, v, 0, 6, 5, 5, 1).unwrap());
        assert_eq!(view(&v), 0);
        v[2 * 5 + 4] = f32::INFINITY;
        assert_eq!(view(&v), 3);
        v[3 * 5] = f32::NAN;
        assert_eq!(view(&v), 4);
        v[5 * 5 + 1] = f32::NEG_INFINITY;
        assert_eq!(view(&v), 6);
        // Columns apart: the transposed view of the same elements.
        assert_eq!(nonfinite_end(&MatView::new(OP, &v, 0, 5, 6, 1, 5).unwrap()), 5);
    }

    #[test]
    fn a_causal_mask_skips_with_the_bits_of_the_full_width() {
        // The transformer's attention, then odd sizes: sub-blocks, tasks and panels that end
        // mid-vector, several batches, keys longer than queries.
        for d in [
            Dims { b: 1, h: 4, l: 128, s: 128, e: 64, ev: 64 },
            Dims { b: 2, h: 3, l: 37, s: 53, e: 19, ev: 23 },
            Dims { b: 1, h: 1, l: 200, s: 150, e: 32, ev: 40 },
            Dims { b: 1, h: 2, l: 70, s: 600, e: 8, ev: 600 },
        ] {
            let (q, k, v) = random(d, 7);
            check(d, (&q, &k, &v), Given::Shared, &causal);
        }
    }

    #[test]
    fn other_masks_skip_with_the_bits_of_the_full_width() {
        let d = Dims { b: 2, h: 3, l: 45, s: 77, e: 12, ev: 20 };
        let (q, k, v) = random(d, 11);
        let ops = (&q[..], &k[..], &v[..]);
        // Anti-causal: every row keeps the last column, nothing is skipped.
        check(d, ops, Given::Shared, &|_, _, i, j| j < i);
        // A band: leading columns replaced too, only trailing ones skipped.
        check(d, ops, Given::Shared, &|_, _, i, j| !(j + 4 >= i && j <= i + 9));
        check(d, ops, Given::Transposed, &|_, _, i, j| !(j + 4 >= i && j <= i + 9));
        // Arbitrary, with some rows masked whole (and a block of them).
        check(d, ops, Given::Shared, &|_, _, i, j| (i * 7 + j * 13) % 5 < 2 || i % 9 == 4 || (20..=25).contains(&i));
        check(d, ops, Given::Rows, &|_, _, i, _| i % 3 == 1);
        // A different mask per head: causal, a window of 10, everything after column 3.
        check(d, ops, Given::PerHead, &|_, hh, i, j| match hh {
            0 => j > i,
            1 => j > i || j + 10 < i,
            _ => j > 3,
        });
        // Every row masked whole.
        check(d, ops, Given::Shared, &|_, _, _, _| true);
    }

    #[test]
    fn nonfinite_queries_keys_and_values_give_the_bits_of_the_full_width() {
        let d = Dims { b: 1, h: 2, l: 70, s: 70, e: 8, ev: 6 };
        let (mut q, mut k, v) = random(d, 5);
        let Dims { h, e, ev, .. } = d;
        // A query row with a NaN, one with infinities; a key row with an infinity.
        q[(10 * h) * e + 3] = f32::NAN;
        q[(40 * h + 1) * e] = f32::INFINITY;
        q[(41 * h + 1) * e + 2] = f32::NEG_INFINITY;
        k[(5 * h) * e + 1] = f32::NEG_INFINITY;
        check(d, (&q, &k, &v), Given::Shared, &causal);
        // A NaN or an infinity in a row of the values that the first blocks skip, or in the
        // last row, which every block skips but the last.
        for (row, x) in [(40, f32::NAN), (50, f32::INFINITY), (69, f32::NEG_INFINITY), (3, f32::NAN)] {
            let mut v2 = v.clone();
            v2[(row * h + 1) * ev + 2] = x;
            check(d, (&q, &k, &v2), Given::Shared, &causal);
        }
    }

    #[test]
    fn a_negative_zero_sum_is_computed_again_at_full_width() {
        // Uniform probabilities (zero queries) of at least a third over the kept columns times
        // the least negative subnormal: every product rounds to -0, so the kept columns sum to
        // -0, which the skipped columns' +0·1 turn into +0 at full width.
        let d = Dims { b: 1, h: 1, l: 64, s: 64, e: 4, ev: 2 };
        let q = vec![0.0; 64 * 4];
        let k = noise(64 * 4, 9);
        let v: Vec<f32> = (0..64 * 2).map(|x| if x / 2 < 32 { -f32::from_bits(1) } else { 1.0 }).collect();
        check(d, (&q, &k, &v), Given::Shared, &causal);
        let mut ins = operands(d, &q, &k, &v);
        ins.push(mask_tensor(d, Given::Shared, false, &causal).0);
        let got = run(&spec(Mask::Fill(f32::NEG_INFINITY), 0, 1), &ins, 1);
        assert_eq!(got[20 * 2].to_bits(), 0, "+0, as the full width gives");
    }

    #[test]
    fn an_added_mask_of_zeros_and_minus_infinity_gives_the_bits_of_the_skipping_fill() {
        let d = Dims { b: 1, h: 2, l: 50, s: 50, e: 16, ev: 16 };
        let (q, k, v) = random(d, 13);
        let mut ins = operands(d, &q, &k, &v);
        let add: Vec<f32> = (0..50 * 50).map(|x| if x % 50 > x / 50 { f32::NEG_INFINITY } else { 0.0 }).collect();
        let mut added = ins.clone();
        added.push(Tensor::from_slice(&add, &[50, 50]).unwrap());
        ins.push(mask_tensor(d, Given::Shared, false, &causal).0);
        let want = run(&spec(Mask::Add, 0, 2), &added, 1);
        assert_eq!(bits(&run(&spec(Mask::Fill(f32::NEG_INFINITY), 0, 2), &ins, 1)), bits(&want));
        assert_eq!(bits(&run(&spec(Mask::Add, 0, 2), &added, 2)), bits(&want));
    }

    #[test]
    fn a_finite_fill_is_not_skipped() {
        // A row masked whole with a finite fill is the mean of every row of the values.
        let d = Dims { b: 1, h: 1, l: 40, s: 40, e: 4, ev: 3 };
        let (q, k, v) = random(d, 17);
        let mut ins = operands(d, &q, &k, &v);
        ins.push(mask_tensor(d, Given::Shared, false, &|_, _, i, j| j > i || i == 0).0);
        let got = run(&spec(Mask::Fill(-1e9), 0, 1), &ins, 1);
        for c in 0..3 {
            let mean = (0..40).map(|j| f64::from(v[j * 3 + c])).sum::<f64>() / 40.0;
            assert!((f64::from(got[c]) - mean).abs() < 1e-5, "column {c}: {} against {mean}", got[c]);
        }
    }

    #[test]
    fn transposing_in_tiles_gives_every_element() {
        for (rows, cols) in [(64, 128), (16, 16), (37, 53), (5, 40), (40, 5), (33, 17)] {
            for cs in [cols.max(rows) + 3, rows] {
                let data = noise(cs * cols + rows, (rows * cols) as u64);
                let src = MatView::new(OP, &data, 2, rows, cols, 1, cs).unwrap();
                let mut dst = vec![f32::NAN; rows * cols];
                transpose_into(&src, &mut dst);
                for r in 0..rows {
                    for c in 0..cols {
                        assert_eq!(dst[r * cols + c].to_bits(), src.at(r, c).to_bits(), "{rows}x{cols} at {r}, {c}");
                    }
                }
            }
        }
    }
}
