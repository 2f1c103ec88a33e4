//! Strided iteration: element offsets of a tensor in logical (row-major) order.
//!
//! Adjacent dims that are laid out contiguously with each other are merged first, so a
//! contiguous or mostly-contiguous tensor iterates with one long inner loop.

/// Merges adjacent dims whose layouts compose (`stride[i] == stride[i+1] * size[i+1]`) and
/// drops size-1 dims. Returns (sizes, per-operand strides), innermost last. All operands must
/// have the same `sizes`.
pub fn coalesce(sizes: &[usize], strides: &[&[usize]]) -> (Vec<usize>, Vec<Vec<usize>>) {
    let mut out_sizes: Vec<usize> = Vec::with_capacity(sizes.len());
    let mut out_strides: Vec<Vec<usize>> = vec![Vec::with_capacity(sizes.len()); strides.len()];
    for d in 0..sizes.len() {
        if sizes[d] == 1 {
            continue;
        }
        if let Some(&last) = out_sizes.last() {
            let mergeable = strides.iter().enumerate().all(|(k, s)| {
                let prev = *out_strides[k].last().unwrap_or(&0);
                prev == s[d] * sizes[d]
            });
            let _ = last;
            if mergeable {
                let n = out_sizes.len() - 1;
                out_sizes[n] *= sizes[d];
                for (k, s) in strides.iter().enumerate() {
                    out_strides[k][n] = s[d];
                }
                continue;
            }
        }
        out_sizes.push(sizes[d]);
        for (k, s) in strides.iter().enumerate() {
            out_strides[k].push(s[d]);
        }
    }
    (out_sizes, out_strides)
}

/// Iterator over the storage offsets (in elements) of a strided tensor, in row-major order.
#[derive(Clone, Debug)]
pub struct OffsetIter {
    sizes: Vec<usize>,
    strides: Vec<usize>,
    index: Vec<usize>,
    offset: usize,
    remaining: usize,
}

impl OffsetIter {
    pub fn new(sizes: &[usize], strides: &[usize], offset: usize) -> OffsetIter {
        let numel: usize = sizes.iter().product();
        let (sizes, mut strides) = coalesce(sizes, &[strides]);
        let strides = strides.pop().unwrap_or_default();
        OffsetIter { index: vec![0; sizes.len()], sizes, strides, offset, remaining: numel }
    }
}

impl Iterator for OffsetIter {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let cur = self.offset;
        if self.remaining > 0 {
            let mut d = self.sizes.len();
            while d > 0 {
                d -= 1;
                self.index[d] += 1;
                self.offset += self.strides[d];
                if self.index[d] < self.sizes[d] {
                    break;
                }
                self.offset -= self.strides[d] * self.sizes[d];
                self.index[d] = 0;
            }
        }
        Some(cur)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for OffsetIter {}

/// Calls `f(offsets)` for every logical index of `sizes`, where `offsets[k]` is the element
/// offset of operand `k` (given by its strides and base offset). The innermost merged dim runs
/// as a tight loop.
pub fn for_each_offsets<const N: usize>(
    sizes: &[usize],
    strides: [&[usize]; N],
    base: [usize; N],
    mut f: impl FnMut([usize; N]),
) {
    for_each_row(sizes, strides, base, |mut o, inner, inner_strides| {
        for _ in 0..inner {
            f(o);
            for k in 0..N {
                o[k] += inner_strides[k];
            }
        }
    });
}

/// The rows of [`for_each_offsets`]: after coalescing, `f(offsets, len, strides)` once per
/// run of the innermost dim, with the offsets of its first element and the operands' strides
/// along it, in row-major order. A caller whose inner strides are 0 or 1 can then run a loop
/// over contiguous slices and broadcast scalars, which vectorizes.
pub fn for_each_row<const N: usize>(
    sizes: &[usize],
    strides: [&[usize]; N],
    base: [usize; N],
    mut f: impl FnMut([usize; N], usize, [usize; N]),
) {
    if sizes.contains(&0) {
        return;
    }
    let (sizes, strides) = coalesce(sizes, &strides);
    if sizes.is_empty() {
        f(base, 1, [0; N]);
        return;
    }
    let nd = sizes.len();
    let inner = sizes[nd - 1];
    let inner_strides: [usize; N] = std::array::from_fn(|k| strides[k][nd - 1]);
    let mut index = vec![0usize; nd - 1];
    let mut offs = base;
    loop {
        f(offs, inner, inner_strides);
        // Advance the outer odometer.
        let mut d = nd - 1;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            index[d] += 1;
            for k in 0..N {
                offs[k] += strides[k][d];
            }
            if index[d] < sizes[d] {
                break;
            }
            for k in 0..N {
                offs[k] -= strides[k][d] * sizes[d];
            }
            index[d] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_of_transposed() {
        let v: Vec<usize> = OffsetIter::new(&[3, 2], &[1, 3], 0).collect();
        assert_eq!(v, vec![0, 3, 1, 4, 2, 5]);
        let v: Vec<usize> = OffsetIter::new(&[2, 3], &[3, 1], 5).collect();
        assert_eq!(v, vec![5, 6, 7, 8, 9, 10]);
        let v: Vec<usize> = OffsetIter::new(&[], &[], 2).collect();
        assert_eq!(v, vec![2]);
        let v: Vec<usize> = OffsetIter::new(&[2, 0], &[1, 1], 0).collect();
        assert!(v.is_empty());
    }

    #[test]
    fn for_each_two_operands() {
        let mut got = vec![];
        for_each_offsets(&[2, 2], [&[2, 1], &[0, 1]], [0, 10], |[a, b]| got.push((a, b)));
        assert_eq!(got, vec![(0, 10), (1, 11), (2, 10), (3, 11)]);
    }
}
