//! View constructors: tensors that share storage with their base (`view`, `permute`,
//! `expand`, `slice`, `select`, `squeeze`, `unsqueeze`, `as_strided`, `transpose`).

use super::shape::{self, normalize_dim, normalize_insert_dim};
use super::{KernelError, Layout, Result, Tensor, check_bounds};

impl Tensor {
    fn with_layout(&self, sizes: Vec<usize>, strides: Vec<usize>, offset: usize) -> Tensor {
        Tensor { storage: self.storage.clone(), dtype: self.dtype, layout: Layout::new(&sizes, &strides), offset }
    }

    /// A view that starts `offset` elements into the storage, unless it has no elements: an
    /// empty view addresses nothing and keeps this tensor's offset, which stays inside the
    /// storage (an offset past an empty storage would fail the next view's bounds check).
    fn with_view_offset(&self, sizes: Vec<usize>, strides: Vec<usize>, offset: usize) -> Tensor {
        let offset = if sizes.contains(&0) { self.offset } else { offset };
        self.with_layout(sizes, strides, offset)
    }

    /// `view`: the same elements with a new shape (one size may be `-1`), sharing storage.
    /// Fails if the layout does not allow it without copying (use `reshape`).
    pub fn view(&self, sizes: &[i64]) -> Result<Tensor> {
        let new_sizes = shape::infer_size("view", sizes, self.numel())?;
        match shape::view_strides(self.sizes(), self.strides(), &new_sizes) {
            Some(strides) => Ok(self.with_layout(new_sizes, strides, self.offset)),
            None => Err(KernelError::new(
                "view",
                format!(
                    "view size {sizes:?} is not compatible with input size {:?} and strides {:?} (at least one dimension spans across two contiguous subspaces); use reshape",
                    self.sizes(), self.strides()
                ),
            )),
        }
    }

    /// `reshape`: a view when the layout allows it, otherwise a contiguous copy.
    pub fn reshape(&self, sizes: &[i64]) -> Result<Tensor> {
        let new_sizes = shape::infer_size("reshape", sizes, self.numel())?;
        match shape::view_strides(self.sizes(), self.strides(), &new_sizes) {
            Some(strides) => Ok(self.with_layout(new_sizes, strides, self.offset)),
            None => {
                let c = self.deep_clone()?;
                let strides = shape::contiguous_strides(&new_sizes);
                Ok(c.with_layout(new_sizes, strides, c.offset))
            }
        }
    }

    /// `permute`: reorders dims.
    pub fn permute(&self, dims: &[i64]) -> Result<Tensor> {
        if dims.len() != self.dim() {
            return Err(KernelError::new(
                "permute",
                format!("number of dims in {dims:?} does not match the tensor's {} dims", self.dim()),
            ));
        }
        let dims = shape::normalize_dims("permute", dims, self.dim())?;
        let sizes: Vec<usize> = dims.iter().map(|&d| self.sizes()[d]).collect();
        let strides: Vec<usize> = dims.iter().map(|&d| self.strides()[d]).collect();
        Ok(self.with_layout(sizes, strides, self.offset))
    }

    /// `transpose`: swaps two dims.
    pub fn transpose(&self, d0: i64, d1: i64) -> Result<Tensor> {
        if self.dim() == 0 {
            normalize_dim("transpose", d0, 0)?;
            normalize_dim("transpose", d1, 0)?;
            return Ok(self.clone());
        }
        let a = normalize_dim("transpose", d0, self.dim())?;
        let b = normalize_dim("transpose", d1, self.dim())?;
        let mut sizes = self.sizes().to_vec();
        let mut strides = self.strides().to_vec();
        sizes.swap(a, b);
        strides.swap(a, b);
        Ok(self.with_layout(sizes, strides, self.offset))
    }

    /// `t`: transpose of a tensor with at most 2 dims.
    pub fn t(&self) -> Result<Tensor> {
        if self.dim() > 2 {
            return Err(KernelError::new("t", format!("expects a tensor with <= 2 dimensions, got {}", self.dim())));
        }
        if self.dim() < 2 { Ok(self.clone()) } else { self.transpose(0, 1) }
    }

    /// `expand`: broadcasts size-1 dims (and new leading dims) to `sizes`; `-1` keeps a size.
    pub fn expand(&self, sizes: &[i64]) -> Result<Tensor> {
        if sizes.len() < self.dim() {
            return Err(KernelError::new(
                "expand",
                format!(
                    "the number of sizes provided ({}) must be greater or equal to the number of dimensions in the tensor ({})",
                    sizes.len(),
                    self.dim()
                ),
            ));
        }
        let lead = sizes.len() - self.dim();
        let mut new_sizes = Vec::with_capacity(sizes.len());
        let mut new_strides = Vec::with_capacity(sizes.len());
        for (i, &s) in sizes.iter().enumerate() {
            if i < lead {
                if s < 0 {
                    return Err(KernelError::new(
                        "expand",
                        format!("the expanded size {s} is not allowed in a leading, non-existing dimension ({sizes:?})"),
                    ));
                }
                new_sizes.push(s as usize);
                new_strides.push(0);
                continue;
            }
            let old = self.sizes()[i - lead];
            let stride = self.strides()[i - lead];
            if s == -1 || s as usize == old && s >= 0 {
                new_sizes.push(old);
                new_strides.push(stride);
            } else if old == 1 && s >= 0 {
                new_sizes.push(s as usize);
                new_strides.push(0);
            } else {
                return Err(KernelError::new(
                    "expand",
                    format!(
                        "the expanded size of the tensor ({s}) must match the existing size ({old}) at non-singleton dimension {i}; target sizes {sizes:?}, tensor sizes {:?}",
                        self.sizes()
                    ),
                ));
            }
        }
        Ok(self.with_layout(new_sizes, new_strides, self.offset))
    }

    /// Broadcasts to `sizes` (an `expand` with `usize` sizes), naming `op` on failure.
    pub fn expand_to(&self, op: &str, sizes: &[usize]) -> Result<Tensor> {
        if self.sizes() == sizes {
            return Ok(self.clone());
        }
        let target: Vec<i64> = sizes.iter().map(|&s| s as i64).collect();
        self.expand(&target).map_err(|_| {
            KernelError::new(
                op.to_string(),
                format!("cannot broadcast a tensor of shape {:?} to shape {sizes:?}", self.sizes()),
            )
        })
    }

    /// `slice.Tensor`: elements `start..end` by `step` along `dim`. Negative bounds count from
    /// the end; out-of-range bounds are clamped (like Python slicing). `step` must be positive.
    pub fn slice(&self, dim: i64, start: Option<i64>, end: Option<i64>, step: i64) -> Result<Tensor> {
        if self.dim() == 0 {
            return Err(KernelError::new("slice", "slice() cannot be applied to a 0-dim tensor"));
        }
        let d = normalize_dim("slice", dim, self.dim())?;
        if step <= 0 {
            return Err(KernelError::new("slice", format!("slice step must be positive, got {step}")));
        }
        let len = self.sizes()[d] as i64;
        let clamp = |v: i64| -> i64 {
            let v = if v < 0 { v + len } else { v };
            v.clamp(0, len)
        };
        let s = start.map_or(0, clamp);
        let e = end.map_or(len, clamp).max(s);
        let n = (e - s + step - 1) / step;
        let mut sizes = self.sizes().to_vec();
        let mut strides = self.strides().to_vec();
        sizes[d] = n as usize;
        let offset = self.offset + s as usize * self.strides()[d];
        strides[d] = self.strides()[d] * step as usize;
        Ok(self.with_view_offset(sizes, strides, offset))
    }

    /// `narrow`: `length` elements from `start` along `dim` (bounds must be in range).
    pub fn narrow(&self, dim: i64, start: i64, length: usize) -> Result<Tensor> {
        let d = normalize_dim("narrow", dim, self.dim())?;
        let len = self.sizes().get(d).copied().unwrap_or(1) as i64;
        let s = if start < 0 { start + len } else { start };
        if s < 0 || s + length as i64 > len {
            return Err(KernelError::new(
                "narrow",
                format!("start ({start}) + length ({length}) exceeds dimension size ({len})"),
            ));
        }
        self.slice(dim, Some(s), Some(s + length as i64), 1)
    }

    /// `select.int`: the sub-tensor at `index` along `dim` (that dim is removed).
    pub fn select(&self, dim: i64, index: i64) -> Result<Tensor> {
        if self.dim() == 0 {
            return Err(KernelError::new("select", "select() cannot be applied to a 0-dim tensor"));
        }
        let d = normalize_dim("select", dim, self.dim())?;
        let len = self.sizes()[d] as i64;
        let i = if index < 0 { index + len } else { index };
        if i < 0 || i >= len {
            return Err(KernelError::new(
                "select",
                format!("index {index} is out of bounds for dimension {d} with size {len}"),
            ));
        }
        let mut sizes = self.sizes().to_vec();
        let mut strides = self.strides().to_vec();
        let offset = self.offset + i as usize * strides[d];
        sizes.remove(d);
        strides.remove(d);
        Ok(self.with_view_offset(sizes, strides, offset))
    }

    /// `squeeze.dims`: removes the listed dims that have size 1 (others are kept).
    pub fn squeeze_dims(&self, dims: &[i64]) -> Result<Tensor> {
        if self.dim() == 0 {
            for &d in dims {
                normalize_dim("squeeze", d, 0)?;
            }
            return Ok(self.clone());
        }
        let dims = shape::normalize_dims("squeeze", dims, self.dim())?;
        let mut sizes = Vec::new();
        let mut strides = Vec::new();
        for d in 0..self.dim() {
            if !(dims.contains(&d) && self.sizes()[d] == 1) {
                sizes.push(self.sizes()[d]);
                strides.push(self.strides()[d]);
            }
        }
        Ok(self.with_layout(sizes, strides, self.offset))
    }

    /// `squeeze`: removes every size-1 dim.
    pub fn squeeze(&self) -> Result<Tensor> {
        let dims: Vec<i64> = (0..self.dim() as i64).collect();
        self.squeeze_dims(&dims)
    }

    /// `unsqueeze`: inserts a size-1 dim at `dim`.
    pub fn unsqueeze(&self, dim: i64) -> Result<Tensor> {
        let d = normalize_insert_dim("unsqueeze", dim, self.dim())?;
        let mut sizes = self.sizes().to_vec();
        let mut strides = self.strides().to_vec();
        let stride = if d < self.dim() { self.sizes()[d] * self.strides()[d] } else { 1 };
        sizes.insert(d, 1);
        strides.insert(d, stride);
        Ok(self.with_layout(sizes, strides, self.offset))
    }

    /// `as_strided`: an arbitrary view of the same storage; every element must lie inside it.
    /// `offset` defaults to this tensor's offset.
    pub fn as_strided(&self, sizes: &[usize], strides: &[usize], offset: Option<usize>) -> Result<Tensor> {
        let offset = offset.unwrap_or(self.offset);
        check_bounds("as_strided", &self.storage, self.dtype, sizes, strides, offset)?;
        Ok(self.with_layout(sizes.to_vec(), strides.to_vec(), offset))
    }

    /// `alias`: another handle to the same view.
    pub fn alias(&self) -> Tensor {
        self.clone()
    }

    /// `diagonal`: the diagonal of dims `dim1`/`dim2` with `offset`, as a view.
    pub fn diagonal(&self, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
        let a = normalize_dim("diagonal", dim1, self.dim())?;
        let b = normalize_dim("diagonal", dim2, self.dim())?;
        if a == b || self.dim() < 2 {
            return Err(KernelError::new("diagonal", format!("diagonal dimensions cannot be identical {dim1}, {dim2}")));
        }
        let (sa, sb) = (self.sizes()[a] as i64, self.sizes()[b] as i64);
        let (len, start) = if offset >= 0 {
            ((sa).min(sb - offset).max(0), offset as usize * self.strides()[b])
        } else {
            ((sa + offset).min(sb).max(0), (-offset) as usize * self.strides()[a])
        };
        let mut sizes = Vec::new();
        let mut strides = Vec::new();
        for d in 0..self.dim() {
            if d != a && d != b {
                sizes.push(self.sizes()[d]);
                strides.push(self.strides()[d]);
            }
        }
        sizes.push(len as usize);
        strides.push(self.strides()[a] + self.strides()[b]);
        let off = if len == 0 { self.offset } else { self.offset + start };
        Ok(self.with_layout(sizes, strides, off))
    }
}
