//! Shape arithmetic: dim normalization, broadcasting, contiguous strides and view strides.

use super::error::{KernelError, Result};

/// Row-major (contiguous) strides for `sizes`, in elements.
pub fn contiguous_strides(sizes: &[usize]) -> Vec<usize> {
    let mut strides = vec![0; sizes.len()];
    let mut acc = 1usize;
    for i in (0..sizes.len()).rev() {
        strides[i] = acc;
        acc = acc.saturating_mul(sizes[i].max(1));
    }
    strides
}

/// Number of elements of a shape, or an error if it overflows.
pub fn checked_numel(op: &str, sizes: &[usize]) -> Result<usize> {
    sizes.iter().try_fold(1usize, |acc, &s| acc.checked_mul(s)).ok_or_else(|| {
        KernelError::new(op.to_string(), format!("shape {sizes:?} has too many elements"))
    })
}

/// Wraps a possibly negative dim into `0..ndim`. A 0-d tensor accepts dims `-1` and `0`
/// (PyTorch's "wrap scalar" rule).
pub fn normalize_dim(op: &str, dim: i64, ndim: usize) -> Result<usize> {
    let n = ndim.max(1) as i64;
    let d = if dim < 0 { dim + n } else { dim };
    if d < 0 || d >= n {
        return Err(KernelError::new(
            op.to_string(),
            format!("dimension {dim} out of range for a tensor of {ndim} dimensions (expected in [{}, {}])", -n, n - 1),
        ));
    }
    Ok(d as usize)
}

/// Like `normalize_dim` but for inserting a new dim (`unsqueeze`): the range is `0..=ndim`.
pub fn normalize_insert_dim(op: &str, dim: i64, ndim: usize) -> Result<usize> {
    let n = ndim as i64 + 1;
    let d = if dim < 0 { dim + n } else { dim };
    if d < 0 || d >= n {
        return Err(KernelError::new(
            op.to_string(),
            format!("dimension {dim} out of range for inserting into {ndim} dimensions (expected in [{}, {}])", -n, n - 1),
        ));
    }
    Ok(d as usize)
}

/// Normalizes a list of dims, rejecting duplicates. An empty list stays empty.
pub fn normalize_dims(op: &str, dims: &[i64], ndim: usize) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(dims.len());
    for &d in dims {
        let n = normalize_dim(op, d, ndim)?;
        if out.contains(&n) {
            return Err(KernelError::new(op.to_string(), format!("dim {n} appears multiple times in {dims:?}")));
        }
        out.push(n);
    }
    Ok(out)
}

/// Converts `i64` sizes to `usize`, rejecting negatives.
pub fn to_sizes(op: &str, sizes: &[i64]) -> Result<Vec<usize>> {
    sizes
        .iter()
        .map(|&s| {
            usize::try_from(s)
                .map_err(|_| KernelError::new(op.to_string(), format!("negative size {s} in {sizes:?}")))
        })
        .collect()
}

/// The broadcast shape of two shapes (NumPy/PyTorch rules), or an error naming both.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let da = if i + a.len() >= n { a[i + a.len() - n] } else { 1 };
        let db = if i + b.len() >= n { b[i + b.len() - n] } else { 1 };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(KernelError::new(
                "broadcast",
                format!("shapes {a:?} and {b:?} are not broadcastable (size {da} vs {db} at dim {i})"),
            ));
        };
    }
    Ok(out)
}

/// The broadcast shape of several shapes.
pub fn broadcast_all(shapes: &[&[usize]]) -> Result<Vec<usize>> {
    let mut out: Vec<usize> = Vec::new();
    for s in shapes {
        out = broadcast_shapes(&out, s)?;
    }
    Ok(out)
}

/// Resolves a requested view shape with at most one `-1` against `numel`.
pub fn infer_size(op: &str, shape: &[i64], numel: usize) -> Result<Vec<usize>> {
    let mut infer = None;
    let mut known = 1usize;
    for (i, &s) in shape.iter().enumerate() {
        if s == -1 {
            if infer.is_some() {
                return Err(KernelError::new(op.to_string(), format!("only one dimension can be inferred in {shape:?}")));
            }
            infer = Some(i);
        } else if s < 0 {
            return Err(KernelError::new(op.to_string(), format!("invalid shape dimension {s} in {shape:?}")));
        } else {
            known = known
                .checked_mul(s as usize)
                .ok_or_else(|| KernelError::new(op.to_string(), format!("shape {shape:?} is too large")))?;
        }
    }
    let mut out: Vec<usize> = shape.iter().map(|&s| s.max(0) as usize).collect();
    match infer {
        Some(i) => {
            if known == 0 || !numel.is_multiple_of(known) {
                return Err(KernelError::new(
                    op.to_string(),
                    format!("shape {shape:?} is invalid for input of size {numel}"),
                ));
            }
            out[i] = numel / known;
        }
        None => {
            if known != numel {
                return Err(KernelError::new(
                    op.to_string(),
                    format!("shape {shape:?} is invalid for input of size {numel}"),
                ));
            }
        }
    }
    Ok(out)
}

/// Strides for viewing a tensor of `old_sizes`/`old_strides` as `new_sizes` without copying,
/// or `None` if the memory layout does not allow it (then a reshape must copy).
pub fn view_strides(old_sizes: &[usize], old_strides: &[usize], new_sizes: &[usize]) -> Option<Vec<usize>> {
    let numel: usize = old_sizes.iter().product();
    if numel == 0 || old_sizes.is_empty() {
        return Some(contiguous_strides(new_sizes));
    }
    let mut new_strides = vec![0usize; new_sizes.len()];
    // Walk the old dims from the innermost, grouping dims that are contiguous with each other
    // into chunks; each chunk must be matched by a run of new dims with the same element count.
    let mut view_d = new_sizes.len() as isize - 1;
    let mut chunk_base_stride = *old_strides.last()?;
    let mut tensor_numel = 1usize;
    let mut view_numel = 1usize;
    for tensor_d in (0..old_sizes.len()).rev() {
        tensor_numel *= old_sizes[tensor_d];
        let at_chunk_end = tensor_d == 0
            || (old_sizes[tensor_d - 1] != 1
                && old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride);
        if at_chunk_end {
            while view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d as usize] == 1) {
                new_strides[view_d as usize] = view_numel * chunk_base_stride;
                view_numel *= new_sizes[view_d as usize];
                view_d -= 1;
            }
            if view_numel != tensor_numel {
                return None;
            }
            if tensor_d > 0 {
                chunk_base_stride = old_strides[tensor_d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    if view_d != -1 {
        return None;
    }
    Some(new_strides)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting() {
        assert_eq!(broadcast_shapes(&[3, 1], &[4]).unwrap(), vec![3, 4]);
        assert_eq!(broadcast_shapes(&[], &[2, 2]).unwrap(), vec![2, 2]);
        assert_eq!(broadcast_shapes(&[0, 1], &[1, 5]).unwrap(), vec![0, 5]);
        let e = broadcast_shapes(&[3, 2], &[4, 2]).unwrap_err();
        assert!(e.message.contains("[3, 2]") && e.message.contains("[4, 2]"), "{e}");
    }

    #[test]
    fn infer() {
        assert_eq!(infer_size("view", &[-1, 4], 12).unwrap(), vec![3, 4]);
        assert!(infer_size("view", &[-1, 5], 12).is_err());
        assert!(infer_size("view", &[-1, -1], 12).is_err());
        assert!(infer_size("view", &[0, -1], 0).is_err());
    }

    #[test]
    fn view_strides_of_transposed() {
        // A transposed 2x3 (sizes [3,2], strides [1,3]) cannot be flattened.
        assert_eq!(view_strides(&[3, 2], &[1, 3], &[6]), None);
        assert_eq!(view_strides(&[2, 3], &[3, 1], &[3, 2]), Some(vec![2, 1]));
        // Splitting a non-contiguous dim is fine.
        assert_eq!(view_strides(&[4, 3], &[1, 4], &[2, 2, 3]), Some(vec![2, 1, 4]));
        assert_eq!(view_strides(&[2, 3], &[3, 1], &[1, 2, 1, 3]), Some(vec![6, 3, 3, 1]));
    }
}
