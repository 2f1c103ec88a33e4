//! Slices and splits: the length of a slice and the pieces of `split`/`chunk`/`unbind`.

use super::*;
use crate::op;
use ir::OpRef;


pub(super) fn slice_len(d: &Dim, a: &Args) -> Dim {
    let start = if a.is_none("start") { Some(0) } else { a.int("start") };
    let end = if a.is_none("end") { Some(i64::MAX) } else { a.int("end") };
    let step = a.int("step").unwrap_or(1).max(1);
    match (d, start, end) {
        (Dim::Static(n), Some(s), Some(e)) => {
            let clampi = |x: i64| if x < 0 { (x + n).max(0) } else { x.min(*n) };
            let (s, e) = (clampi(s), clampi(e));
            Dim::Static(if e > s { (e - s + step - 1) / step } else { 0 })
        }
        (other, Some(0), Some(e)) if step == 1 && e >= i64::MAX / 2 => other.clone(),
        _ => Dim::Unknown,
    }
}

/// The result types of `this`, a split of the family `head` (`split`, `split_with_sizes`,
/// `unsafe_split`, `chunk`, `unbind`).
pub(super) fn split_types(this: OpRef, head: OpRef, a: &Args, s: Option<&TensorType>) -> Option<Vec<Type>> {
    let t = s?;
    let sh = t.shape.clone()?;
    let dim = a.int("dim").unwrap_or(0);
    let i = norm_dim(dim, sh.len())?;
    let n = sh[i].as_static();
    let sizes: Option<Vec<i64>> = match head {
        op::SPLIT_WITH_SIZES => a.ints("split_sizes"),
        op::SPLIT if this == op::SPLIT_SIZES => a.ints("split_sizes"),
        op::SPLIT | op::UNSAFE_SPLIT_TENSOR => n.zip(a.int("split_size")).and_then(|(n, k)| split_pieces(n, k)),
        op::CHUNK => n.zip(a.int("chunks")).and_then(|(n, k)| chunk_pieces(n, k)),
        op::UNBIND_INT => {
            let mut out = sh.clone();
            out.remove(i);
            let elem = tensor(t.dtype, Some(out));
            return Some(vec![dialect_prim::kinds::list(elem)]);
        }
        _ => return None,
    };
    // A list holds one element type: the shape is exact only when every piece has the same size
    // (and, when the sizes are not known, only the split dimension is unknown).
    let mut out = sh.clone();
    let sizes = sizes.unwrap_or_default();
    if sizes.windows(2).all(|w| w[0] == w[1]) && !sizes.is_empty() {
        out[i] = Dim::Static(sizes[0]);
    } else {
        out[i] = Dim::Unknown;
    }
    Some(vec![dialect_prim::kinds::list(tensor(t.dtype, Some(out)))])
}

/// The sizes each piece of a split gets along the split dimension, when static.
pub fn split_sizes(this: OpRef, a: &Args) -> Option<Vec<i64>> {
    let t = self_or(a)?;
    let sh = t.shape.clone()?;
    let dim = a.int("dim").unwrap_or(0);
    let i = norm_dim(dim, sh.len())?;
    let n = sh[i].as_static();
    match this {
        op::SPLIT_WITH_SIZES | op::SPLIT_WITH_SIZES_COPY | op::SPLIT_WITH_SIZES_COPY_OUT | op::SPLIT_SIZES => {
            a.ints("split_sizes")
        }
        op::SPLIT_TENSOR | op::SPLIT_COPY_TENSOR | op::SPLIT_COPY_TENSOR_OUT | op::UNSAFE_SPLIT_TENSOR => {
            split_pieces(n?, a.int("split_size")?)
        }
        op::CHUNK => chunk_pieces(n?, a.int("chunks")?),
        _ => None,
    }
}

/// The pieces of `n` elements split into pieces of `k` (the last one shorter; one empty piece
/// when `n` is 0); `None` when `k` is not positive.
fn split_pieces(n: i64, k: i64) -> Option<Vec<i64>> {
    if k <= 0 {
        return None;
    }
    let mut v = vec![k; (n / k) as usize];
    if n % k != 0 || n == 0 {
        v.push(n % k);
    }
    Some(v)
}

/// The pieces of `n` elements cut into at most `c` chunks of equal size (the last one
/// shorter); `None` when `c` is not positive.
fn chunk_pieces(n: i64, c: i64) -> Option<Vec<i64>> {
    if c <= 0 {
        return None;
    }
    let k = ((n + c - 1) / c).max(1);
    let mut v = vec![k; (n / k) as usize];
    if n % k != 0 {
        v.push(n % k);
    }
    Some(v)
}
