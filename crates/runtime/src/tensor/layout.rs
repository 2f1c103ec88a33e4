//! `Layout`: a tensor's sizes and strides in one shared, immutable allocation, so that a
//! tensor handle is small (cheap to move through the interpreter's registers) and cloning it
//! allocates nothing.

use std::sync::Arc;

/// Sizes followed by strides (`2 × rank` elements).
#[derive(Clone)]
pub(crate) struct Layout(Arc<[usize]>);

impl Layout {
    /// `sizes` and `strides` must have the same length.
    pub fn new(sizes: &[usize], strides: &[usize]) -> Layout {
        debug_assert_eq!(sizes.len(), strides.len());
        Layout(sizes.iter().chain(strides).copied().collect())
    }

    /// Row-major strides of `sizes`.
    pub fn contiguous(sizes: &[usize]) -> Layout {
        let n = sizes.len();
        let mut acc = 1usize;
        let mut strides = [0usize; 8];
        if n <= strides.len() {
            for i in (0..n).rev() {
                strides[i] = acc;
                acc = acc.saturating_mul(sizes[i].max(1));
            }
            return Layout::new(sizes, &strides[..n]);
        }
        Layout::new(sizes, &super::contiguous_strides(sizes))
    }

    #[inline]
    pub fn sizes(&self) -> &[usize] {
        &self.0[..self.0.len() / 2]
    }

    #[inline]
    pub fn strides(&self) -> &[usize] {
        &self.0[self.0.len() / 2..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_strides_round_trip() {
        let l = Layout::new(&[2, 3], &[3, 1]);
        assert_eq!(l.sizes(), &[2, 3]);
        assert_eq!(l.strides(), &[3, 1]);
        let c = Layout::contiguous(&[4, 0, 5]);
        assert_eq!(c.strides(), &[5, 5, 1]);
        let e = Layout::contiguous(&[]);
        assert!(e.sizes().is_empty() && e.strides().is_empty());
        let big: Vec<usize> = (1..=10).collect();
        assert_eq!(Layout::contiguous(&big).strides(), crate::tensor::contiguous_strides(&big).as_slice());
    }
}
