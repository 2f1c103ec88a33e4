//! Where the operands' elements are: each 3-D or 4-D operand as `N` strided matrices, the
//! mask broadcast against the scores, and the blocks of query rows a task computes.

use super::*;

/// How an operand's batch `n` (of `N`) maps to storage: `(n / split)·hi + (n % split)·lo`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Batch {
    pub(super) split: usize,
    pub(super) hi: usize,
    pub(super) lo: usize,
}

impl Batch {
    pub(super) fn offset(self, n: usize) -> usize {
        (n / self.split) * self.hi + (n % self.split) * self.lo
    }
}

/// A 3-D or 4-D operand as `N` matrices: its batch mapping, its matrix dims and strides.
#[derive(Clone, Copy, Debug)]
pub(super) struct Mats {
    pub(super) batch: Batch,
    pub(super) n: usize,
    pub(super) rows: usize,
    pub(super) cols: usize,
    pub(super) rs: usize,
    pub(super) cs: usize,
}

pub(super) fn mats(t: &Tensor) -> Option<Mats> {
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
pub(super) struct MaskLayout {
    pub(super) batch: Batch,
    pub(super) rs: usize,
    pub(super) cs: usize,
}

pub(super) fn mask_layout(t: &Tensor, n: usize, l: usize, s: usize, heads: usize) -> Option<MaskLayout> {
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
    pub(super) static SCRATCH: std::cell::Cell<Vec<f32>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Query rows per task: whole batches when there are several, otherwise the rows split so
/// that there are about four tasks (the split depends only on the shapes).
pub(super) fn row_block(n: usize, l: usize) -> usize {
    let blocks = 4usize.div_ceil(n.max(1)).min(l.div_ceil(16)).max(1);
    l.div_ceil(blocks).max(1)
}

/// The mask's elements, by dtype.
pub(super) enum MaskData<'a> {
    None,
    Bool(&'a [bool], MaskLayout),
    F32(&'a [f32], MaskLayout),
}
