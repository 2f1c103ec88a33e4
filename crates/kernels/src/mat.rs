//! A strided read-only matrix over a slice: the operand form of the GEMM and GEMV kernels.

use crate::{Error, Result};

/// A strided read-only matrix inside a slice: element `(i, j)` at `data[off + i·rs + j·cs]`.
#[derive(Clone, Copy)]
pub struct MatView<'a, T> {
    pub data: &'a [T],
    pub off: usize,
    pub rows: usize,
    pub cols: usize,
    pub rs: usize,
    pub cs: usize,
}

impl<'a, T: Copy> MatView<'a, T> {
    /// A view, checked to lie inside `data`.
    pub fn new(
        op: &'static str,
        data: &'a [T],
        off: usize,
        rows: usize,
        cols: usize,
        rs: usize,
        cs: usize,
    ) -> Result<Self> {
        if rows > 0 && cols > 0 {
            let last = (rows - 1)
                .checked_mul(rs)
                .and_then(|x| x.checked_add((cols - 1).checked_mul(cs)?))
                .and_then(|x| x.checked_add(off));
            if last.is_none_or(|l| l >= data.len()) {
                return Err(Error::new(op, "matrix view exceeds its storage"));
            }
        }
        Ok(MatView { data, off, rows, cols, rs, cs })
    }

    pub fn t(self) -> Self {
        MatView { rows: self.cols, cols: self.rows, rs: self.cs, cs: self.rs, ..self }
    }

    #[inline(always)]
    pub fn at(&self, i: usize, j: usize) -> T {
        self.data[self.off + i * self.rs + j * self.cs]
    }
}
