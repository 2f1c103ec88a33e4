//! Tensors: a dtype, sizes, strides and an offset over shared storage, with PyTorch's view
//! semantics (views alias their base; writes through a view are seen by the base).

mod layout;
mod element;
mod error;
pub mod iter;
mod scalar;
pub mod shape;
mod storage;
mod views;

use std::sync::Arc;

use ir::DType;

pub use element::{C32, C64, Element, cast, f64_to_i32, f64_to_i64};
pub use error::{KernelError, Result, RuntimeError};
pub use iter::{OffsetIter, for_each_offsets, for_each_row};
pub use scalar::Scalar;
pub use shape::{broadcast_all, broadcast_shapes, contiguous_strides, normalize_dim};
pub use storage::{STORAGE_ALIGN, Storage};

use crate::dispatch_all_dtypes;
use layout::Layout;

/// Sizes and strides shared between tensors: a view made with them allocates nothing.
#[derive(Clone)]
pub(crate) struct SharedLayout(Layout);

impl SharedLayout {
    pub fn sizes(&self) -> &[usize] {
        self.0.sizes()
    }

    pub fn strides(&self) -> &[usize] {
        self.0.strides()
    }
}

/// A strided view of typed elements in a shared `Storage`.
///
/// Cloning a tensor is cheap and yields another handle to the same storage (like assigning a
/// tensor in Python). Sizes and strides are in elements; strides may be zero (expanded dims)
/// and need not be row-major.
#[derive(Clone)]
pub struct Tensor {
    storage: Arc<Storage>,
    dtype: DType,
    layout: Layout,
    offset: usize,
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tensor<{}>{:?}", self.dtype.torch_name(), self.sizes())?;
        if !self.is_contiguous() || self.offset != 0 {
            write!(f, " strides={:?} offset={}", self.strides(), self.offset)?;
        }
        if self.numel() <= 16 {
            write!(f, " {:?}", self.to_vec_f64())?;
        }
        Ok(())
    }
}

impl Tensor {
    // ----- construction -----

    /// A zero-filled contiguous tensor.
    pub fn zeros(dtype: DType, sizes: &[usize]) -> Result<Tensor> {
        let numel = shape::checked_numel("zeros", sizes)?;
        let nbytes = numel
            .checked_mul(dtype.size_bytes())
            .ok_or_else(|| KernelError::new("zeros", format!("shape {sizes:?} is too large")))?;
        let storage = Arc::new(Storage::zeroed(nbytes)?);
        Ok(Tensor { storage, dtype, layout: Layout::contiguous(sizes), offset: 0 })
    }

    /// A contiguous tensor filled with `value` cast to `dtype`.
    pub fn full(dtype: DType, sizes: &[usize], value: Scalar) -> Result<Tensor> {
        let t = Tensor::zeros(dtype, sizes)?;
        t.fill_(value)?;
        Ok(t)
    }

    /// A contiguous tensor of `T` built by `init`, which receives the fresh (zeroed) elements.
    /// This is how kernels write their outputs without aliasing concerns.
    pub fn build<T: Element>(sizes: &[usize], init: impl FnOnce(&mut [T]) -> Result<()>) -> Result<Tensor> {
        let t = Tensor::zeros(T::DTYPE, sizes)?;
        // SAFETY: `t` was just created; no other handle or slice of its storage exists.
        let data = unsafe { t.as_mut_slice::<T>()? };
        init(data)?;
        Ok(t)
    }

    /// A tensor holding `data` with shape `sizes`.
    pub fn from_vec<T: Element>(data: Vec<T>, sizes: &[usize]) -> Result<Tensor> {
        Tensor::from_slice(&data, sizes)
    }

    /// A tensor holding a copy of `data` with shape `sizes`.
    pub fn from_slice<T: Element>(data: &[T], sizes: &[usize]) -> Result<Tensor> {
        let numel = shape::checked_numel("from_vec", sizes)?;
        if numel != data.len() {
            return Err(KernelError::new(
                "from_vec",
                format!("{} elements do not fill shape {sizes:?} ({numel} elements)", data.len()),
            ));
        }
        Tensor::build::<T>(sizes, |out| {
            out.copy_from_slice(data);
            Ok(())
        })
    }

    /// A tensor from little-endian raw bytes (as stored in safetensors files).
    pub fn from_bytes(dtype: DType, sizes: &[usize], bytes: &[u8]) -> Result<Tensor> {
        let numel = shape::checked_numel("from_bytes", sizes)?;
        if numel.checked_mul(dtype.size_bytes()) != Some(bytes.len()) {
            return Err(KernelError::new(
                "from_bytes",
                format!(
                    "{} bytes do not hold shape {sizes:?} of {} ({} bytes expected)",
                    bytes.len(),
                    dtype.torch_name(),
                    numel.saturating_mul(dtype.size_bytes())
                ),
            ));
        }
        if dtype == DType::Bool && bytes.iter().any(|&b| b > 1) {
            return Err(KernelError::new("from_bytes", "bool tensor bytes must be 0 or 1"));
        }
        let storage = Storage::from_bytes(bytes)?;
        if cfg!(target_endian = "big") && dtype.size_bytes() > 1 {
            return Err(KernelError::new("from_bytes", "big-endian hosts are not supported"));
        }
        Ok(Tensor {
            storage: Arc::new(storage),
            dtype,
            layout: Layout::contiguous(sizes),
            offset: 0,
        })
    }

    /// A 0-d tensor holding `value` cast to `dtype`.
    pub fn scalar_tensor(value: Scalar, dtype: DType) -> Result<Tensor> {
        Tensor::full(dtype, &[], value)
    }

    /// A tensor over existing storage. Fails unless every element lies inside the storage.
    pub fn from_storage(
        storage: Arc<Storage>,
        dtype: DType,
        sizes: &[usize],
        strides: &[usize],
        offset: usize,
    ) -> Result<Tensor> {
        check_bounds("from_storage", &storage, dtype, sizes, strides, offset)?;
        Ok(Tensor { storage, dtype, layout: Layout::new(sizes, strides), offset })
    }

    /// A view of this tensor's storage with the sizes and strides of `layout` (shared, so no
    /// allocation), at `offset`. Fails unless every element lies inside the storage.
    pub(crate) fn view_with_layout(&self, layout: &SharedLayout, offset: usize) -> Result<Tensor> {
        check_bounds("view", &self.storage, self.dtype, layout.0.sizes(), layout.0.strides(), offset)?;
        Ok(Tensor { storage: self.storage.clone(), dtype: self.dtype, layout: layout.0.clone(), offset })
    }

    /// Whether this handle is the only one on its storage (no other tensor, view or weak
    /// reference): nothing else can read or write the elements while it is held. Takes
    /// `&mut self` so that the answer cannot be invalidated by a clone of this very handle.
    pub(crate) fn storage_is_unique(&mut self) -> bool {
        Arc::get_mut(&mut self.storage).is_some()
    }

    /// This tensor's sizes and strides, to make further views with them.
    pub(crate) fn shared_layout(&self) -> SharedLayout {
        SharedLayout(self.layout.clone())
    }

    // ----- metadata -----

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    pub fn sizes(&self) -> &[usize] {
        self.layout.sizes()
    }

    pub fn strides(&self) -> &[usize] {
        self.layout.strides()
    }

    /// Offset of the first element in the storage, in elements.
    pub fn offset(&self) -> usize {
        self.offset
    }

    pub fn storage(&self) -> &Arc<Storage> {
        &self.storage
    }

    pub fn dim(&self) -> usize {
        self.sizes().len()
    }

    pub fn numel(&self) -> usize {
        self.sizes().iter().product()
    }

    /// Size of dim `d` (negative counts from the end).
    pub fn size(&self, d: i64) -> Result<usize> {
        let d = shape::normalize_dim("size", d, self.dim())?;
        Ok(self.sizes().get(d).copied().unwrap_or(1))
    }

    /// Sizes as `i64`, as ATen reports them.
    pub fn sizes_i64(&self) -> Vec<i64> {
        self.sizes().iter().map(|&s| s as i64).collect()
    }

    /// Whether the tensor is laid out row-major without gaps (strides of size-1 dims ignored).
    pub fn is_contiguous(&self) -> bool {
        let mut expected = 1usize;
        for d in (0..self.sizes().len()).rev() {
            let s = self.sizes()[d];
            if s == 0 {
                return true;
            }
            if s != 1 {
                if self.strides()[d] != expected {
                    return false;
                }
                expected *= s;
            }
        }
        true
    }

    /// Whether two tensors share a storage (and so may alias).
    pub fn shares_storage(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.storage, &other.storage)
    }

    /// Whether the two tensors touch overlapping bytes of memory (storage regions of one slab
    /// count). Conservative: compares the address ranges spanned.
    pub fn may_overlap(&self, other: &Tensor) -> bool {
        let (a0, a1) = self.byte_span();
        let (b0, b1) = other.byte_span();
        a0 < b1 && b0 < a1
    }

    fn byte_span(&self) -> (usize, usize) {
        if self.numel() == 0 {
            return (0, 0);
        }
        let base = self.storage.as_ptr() as usize;
        let es = self.dtype.size_bytes();
        let last: usize = self.sizes().iter().zip(self.strides()).map(|(&s, &st)| (s - 1) * st).sum();
        (base + self.offset * es, base + (self.offset + last + 1) * es)
    }

    // ----- element access -----

    fn check_dtype<T: Element>(&self, op: &str) -> Result<()> {
        if T::DTYPE != self.dtype {
            return Err(KernelError::new(
                op.to_string(),
                format!("expected a {} tensor, got {}", T::DTYPE.torch_name(), self.dtype.torch_name()),
            ));
        }
        Ok(())
    }

    /// The whole storage as elements of `T` (storage-relative indexing).
    ///
    /// Storage is shared-mutable (as in PyTorch): a slice obtained here must not be held across
    /// a write through an aliasing tensor (`copy_`, `fill_`, `as_mut_slice`). Kernels read their
    /// inputs and then write fresh outputs, which keeps this rule.
    pub fn storage_slice<T: Element>(&self) -> Result<&[T]> {
        self.check_dtype::<T>("storage_slice")?;
        let len = self.storage.nbytes() / std::mem::size_of::<T>();
        // SAFETY: the storage is aligned to 64 bytes (or is a 64-aligned region), holds `len`
        // initialized elements, and lives as long as `self`. Every byte pattern is a valid `T`
        // except for bool, whose storage only ever receives 0 or 1.
        Ok(unsafe { std::slice::from_raw_parts(self.storage.as_ptr() as *const T, len) })
    }

    /// The elements of a contiguous tensor, in order. Errors if the tensor is not contiguous.
    /// The aliasing rule of `storage_slice` applies.
    pub fn as_slice<T: Element>(&self) -> Result<&[T]> {
        if !self.is_contiguous() {
            return Err(KernelError::new("as_slice", "tensor is not contiguous"));
        }
        let all = self.storage_slice::<T>()?;
        if self.numel() == 0 {
            return Ok(&[]);
        }
        all.get(self.offset..self.offset + self.numel())
            .ok_or_else(|| KernelError::new("as_slice", "view reaches past its storage"))
    }

    /// The elements of a contiguous tensor, mutable.
    ///
    /// # Safety
    /// No other slice of an overlapping part of the storage may be alive while the returned
    /// slice is used, and no other thread may access it.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn as_mut_slice<T: Element>(&self) -> Result<&mut [T]> {
        self.check_dtype::<T>("as_mut_slice")?;
        if !self.is_contiguous() {
            return Err(KernelError::new("as_mut_slice", "tensor is not contiguous"));
        }
        let n = self.numel();
        // SAFETY: bounds were checked when the view was made; exclusivity is the caller's duty.
        Ok(unsafe { std::slice::from_raw_parts_mut((self.storage.as_ptr() as *mut T).add(self.offset), n) })
    }

    /// Storage offsets of the elements in row-major order.
    pub fn offsets(&self) -> OffsetIter {
        OffsetIter::new(self.sizes(), self.strides(), self.offset)
    }

    /// The elements in row-major order. Errors if `T` is not the tensor's element type.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if self.is_contiguous() {
            return Ok(self.as_slice::<T>()?.to_vec());
        }
        let data = self.storage_slice::<T>()?;
        Ok(self.offsets().map(|o| data[o]).collect())
    }

    /// The elements converted to `f64`, row-major (for tests and debugging).
    pub fn to_vec_f64(&self) -> Vec<f64> {
        dispatch_all_dtypes!(self.dtype, T => {
            let data = match self.storage_slice::<T>() {
                Ok(d) => d,
                Err(_) => return Vec::new(),
            };
            self.offsets().map(|o| data[o].to_f64()).collect()
        })
    }

    /// The elements converted to `i64`, row-major (floats truncate).
    pub fn to_vec_i64(&self) -> Vec<i64> {
        dispatch_all_dtypes!(self.dtype, T => {
            let data = match self.storage_slice::<T>() {
                Ok(d) => d,
                Err(_) => return Vec::new(),
            };
            self.offsets().map(|o| data[o].to_i64()).collect()
        })
    }

    /// The single element of a one-element tensor (`Tensor.item()`).
    pub fn item(&self) -> Result<Scalar> {
        if self.numel() != 1 {
            return Err(KernelError::new(
                "item",
                format!("a tensor with {} elements cannot be converted to a scalar", self.numel()),
            ));
        }
        dispatch_all_dtypes!(self.dtype, T => {
            let data = self.storage_slice::<T>()?;
            Ok(Scalar::from_element(data[self.offset]))
        })
    }

    /// Element at a multi-dimensional index, as `f64`.
    pub fn get_f64(&self, index: &[usize]) -> Result<f64> {
        let off = self.offset_of(index)?;
        dispatch_all_dtypes!(self.dtype, T => Ok(self.storage_slice::<T>()?[off].to_f64()))
    }

    fn offset_of(&self, index: &[usize]) -> Result<usize> {
        if index.len() != self.dim() || index.iter().zip(self.sizes()).any(|(&i, &s)| i >= s) {
            return Err(KernelError::new(
                "index",
                format!("index {index:?} is out of bounds for shape {:?}", self.sizes()),
            ));
        }
        Ok(self.offset + index.iter().zip(self.strides()).map(|(&i, &s)| i * s).sum::<usize>())
    }

    // ----- copies and casts -----

    /// A contiguous tensor with the same values: `self` (shared) if already contiguous.
    pub fn contiguous(&self) -> Result<Tensor> {
        if self.is_contiguous() { Ok(self.clone()) } else { self.to_dtype(self.dtype) }
    }

    /// A fresh contiguous copy with elements converted to `dtype` (always copies).
    pub fn to_dtype(&self, dtype: DType) -> Result<Tensor> {
        dispatch_all_dtypes!(self.dtype, S => dispatch_all_dtypes!(dtype, D => self.cast_copy::<S, D>()))
    }

    /// Converts to `dtype` only if needed (shares storage when the dtype already matches).
    pub fn cast_to(&self, dtype: DType) -> Result<Tensor> {
        if self.dtype == dtype { Ok(self.clone()) } else { self.to_dtype(dtype) }
    }

    fn cast_copy<S: Element, D: Element>(&self) -> Result<Tensor> {
        Tensor::build::<D>(self.sizes(), |out| self.cast_into::<S, D>(out))
    }

    /// Writes the elements, converted to `D`, in row-major order into `out` (`numel`
    /// elements): the body of [`Tensor::to_dtype`], for a caller that owns the destination.
    /// `S` must be the tensor's own element type.
    pub(crate) fn cast_into<S: Element, D: Element>(&self, out: &mut [D]) -> Result<()> {
        let src = self.storage_slice::<S>()?;
        let contiguous = self.is_contiguous();
        let (start, n) = (self.offset, self.numel());
        if out.len() != n {
            return Err(KernelError::new("cast", format!("{} elements do not hold shape {:?}", out.len(), self.sizes())));
        }
        if contiguous {
            // An empty view may sit anywhere, even past the end of its storage.
            let src = if n == 0 {
                &src[..0]
            } else {
                src.get(start..start + n).ok_or_else(|| KernelError::new("cast", "view reaches past its storage"))?
            };
            if S::DTYPE == D::DTYPE {
                // SAFETY: S and D are the same type (same DType means same Rust type).
                let src: &[D] = unsafe { std::slice::from_raw_parts(src.as_ptr() as *const D, n) };
                out.copy_from_slice(src);
            } else if !cast_halves_split(src, out) {
                for (o, &s) in out.iter_mut().zip(src) {
                    *o = cast::<S, D>(s);
                }
            }
        } else if S::DTYPE == D::DTYPE {
            // SAFETY: S and D are the same type (same DType means same Rust type).
            let src: &[D] = unsafe { std::slice::from_raw_parts(src.as_ptr() as *const D, src.len()) };
            gather(src, start, self.sizes(), self.strides(), out)?;
        } else {
            for (o, off) in out.iter_mut().zip(self.offsets()) {
                *o = cast::<S, D>(src[off]);
            }
        }
        Ok(())
    }

    /// Copies the elements in row-major order into `out` (`numel` elements of the tensor's
    /// own type): the contiguous copy behind `clone` and `contiguous`, for any strides.
    pub fn copy_to_slice<T: Element>(&self, out: &mut [T]) -> Result<()> {
        let src = self.storage_slice::<T>()?;
        if out.len() != self.numel() {
            return Err(KernelError::new(
                "copy",
                format!("{} elements do not hold shape {:?}", out.len(), self.sizes()),
            ));
        }
        gather(src, self.offset, self.sizes(), self.strides(), out)
    }

    /// A fresh contiguous copy (`clone()` in PyTorch).
    pub fn deep_clone(&self) -> Result<Tensor> {
        self.to_dtype(self.dtype)
    }

    /// Copies `src` into `self` (PyTorch's `copy_`): `src` is broadcast to `self`'s shape and
    /// cast to its dtype; the write goes through `self`'s view into the shared storage.
    /// Overlapping source and destination are handled by copying the source first.
    pub fn copy_(&self, src: &Tensor) -> Result<()> {
        let src = src.expand_to("copy_", &self.sizes())?;
        let src = if src.may_overlap(self) || src.dtype != self.dtype {
            src.to_dtype(self.dtype)?
        } else {
            src
        };
        dispatch_all_dtypes!(self.dtype, T => self.copy_same::<T>(&src))
    }

    fn copy_same<T: Element>(&self, src: &Tensor) -> Result<()> {
        let s = src.storage_slice::<T>()?;
        let dst = self.storage.as_ptr() as *mut T;
        let n = self.numel();
        if self.is_contiguous() && src.is_contiguous() {
            // SAFETY: both ranges were bounds-checked at view creation and do not overlap
            // (overlapping sources were copied out above).
            unsafe { std::ptr::copy_nonoverlapping(s.as_ptr().add(src.offset), dst.add(self.offset), n) };
            return Ok(());
        }
        for_each_offsets(self.sizes(), [self.strides(), src.strides()], [self.offset, src.offset], |[d, o]| {
            // SAFETY: `d` is inside the storage (bounds checked at view creation).
            unsafe { dst.add(d).write(s[o]) };
        });
        Ok(())
    }

    /// Sets every element of this view to `value` (PyTorch's `fill_`), writing through.
    pub fn fill_(&self, value: Scalar) -> Result<()> {
        dispatch_all_dtypes!(self.dtype, T => {
            let v: T = value.to_element();
            let dst = self.storage.as_ptr() as *mut T;
            for_each_offsets(self.sizes(), [self.strides()], [self.offset], |[d]| {
                // SAFETY: `d` is inside the storage (bounds checked at view creation).
                unsafe { dst.add(d).write(v) };
            });
            Ok(())
        })
    }

    /// Raw little-endian bytes of the elements in row-major order.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let c = self.contiguous()?;
        let es = self.dtype.size_bytes();
        let bytes = c.storage.to_bytes();
        Ok(bytes[c.offset * es..(c.offset + c.numel()) * es].to_vec())
    }
}

/// Checks that every element of a strided view lies inside `storage`.
fn check_bounds(
    op: &str,
    storage: &Storage,
    dtype: DType,
    sizes: &[usize],
    strides: &[usize],
    offset: usize,
) -> Result<()> {
    if sizes.len() != strides.len() {
        return Err(KernelError::new(
            op.to_string(),
            format!("sizes {sizes:?} and strides {strides:?} have different lengths"),
        ));
    }
    let capacity = storage.nbytes() / dtype.size_bytes();
    if sizes.contains(&0) {
        return if offset <= capacity {
            Ok(())
        } else {
            Err(KernelError::new(op.to_string(), format!("offset {offset} is outside a storage of {capacity} elements")))
        };
    }
    let mut last = offset;
    for (&s, &st) in sizes.iter().zip(strides) {
        last = (s - 1)
            .checked_mul(st)
            .and_then(|x| x.checked_add(last))
            .ok_or_else(|| KernelError::new(op.to_string(), format!("sizes {sizes:?} with strides {strides:?} overflow")))?;
    }
    if last >= capacity {
        return Err(KernelError::new(
            op.to_string(),
            format!(
                "view with sizes {sizes:?}, strides {strides:?} and offset {offset} needs {} elements but the storage holds {capacity}",
                last + 1
            ),
        ));
    }
    Ok(())
}

/// Most dimensions `gather` handles after merging (more falls back to the element iterator).
const GATHER_RANK: usize = 8;

/// Copies the strided view (`offset`, `sizes`, `strides`) of `src` into `out` in row-major
/// order. Dims of size 1 are dropped and dims that are contiguous with each other merged;
/// then a unit-stride last dim copies whole runs, a unit-stride second-to-last dim (a
/// transpose) copies in square tiles so reads and writes both stay within a few cache lines,
/// and anything else walks the last dim with its stride.
fn gather<T: Copy + Send + Sync>(src: &[T], offset: usize, sizes: &[usize], strides: &[usize], out: &mut [T]) -> Result<()> {
    let numel: usize = sizes.iter().product();
    if numel == 0 {
        return Ok(());
    }
    let past = || KernelError::new("copy", "view reaches past its storage");
    let last: usize = sizes.iter().zip(strides).map(|(&s, &st)| (s - 1) * st).sum();
    if offset + last >= src.len() || out.len() < numel {
        return Err(past());
    }
    // Merged dims, outermost first.
    let mut sz = [0usize; GATHER_RANK];
    let mut st = [0usize; GATHER_RANK];
    let mut rank = 0;
    for (&s, &t) in sizes.iter().zip(strides) {
        if s == 1 {
            continue;
        }
        if rank > 0 && st[rank - 1] == t * s {
            sz[rank - 1] *= s;
            st[rank - 1] = t;
            continue;
        }
        if rank == GATHER_RANK {
            let it = OffsetIter::new(sizes, strides, offset);
            for (o, off) in out.iter_mut().zip(it) {
                *o = src[off];
            }
            return Ok(());
        }
        sz[rank] = s;
        st[rank] = t;
        rank += 1;
    }
    if rank == 0 {
        out[0] = src[offset];
        return Ok(());
    }
    // Rows: the last dim (or, for a transpose, the last two) is copied by `row`; the outer dims
    // are counted by an odometer.
    let inner = if rank >= 2 && st[rank - 2] == 1 && st[rank - 1] != 1 { 2 } else { 1 };
    let outer_rank = rank - inner;
    let block: usize = sz[outer_rank..rank].iter().product();
    let rows = |first: usize, out: &mut [T]| gather_rows(src, offset, &sz[..rank], &st[..rank], inner, first, out);
    // A large copy splits its rows across the intra-op team (each element is copied alone, so
    // the split changes nothing): at two threads a copy between two split ops (a channel
    // shuffle's) otherwise runs on one core while the other waits, reading what that core wrote.
    let threads = crate::parallel::threads();
    if threads > 1 && numel >= GATHER_PARALLEL_MIN_ELEMENTS && numel / block >= 2 {
        crate::parallel::for_each_range(&mut out[..numel], block, threads * 2, |i0, part| rows(i0 / block, part));
    } else {
        rows(0, &mut out[..numel]);
    }
    Ok(())
}

/// Copies of at least this many elements split across the intra-op team ([`gather`]).
const GATHER_PARALLEL_MIN_ELEMENTS: usize = 1 << 15;

/// The rows of [`gather`]'s merged view (`sz`, `st`, the last `inner` dims a row) from row
/// `first` on into `out`, whole rows of it.
#[inline]
fn gather_rows<T: Copy>(src: &[T], offset: usize, sz: &[usize], st: &[usize], inner: usize, first: usize, out: &mut [T]) {
    let rank = sz.len();
    let outer_rank = rank - inner;
    let block: usize = sz[outer_rank..rank].iter().product();
    // The odometer at row `first`.
    let mut idx = [0usize; GATHER_RANK];
    let mut base = offset;
    let mut rest = first;
    for d in (0..outer_rank).rev() {
        idx[d] = rest % sz[d];
        rest /= sz[d];
        base += idx[d] * st[d];
    }
    for chunk in out.chunks_exact_mut(block) {
        if inner == 2 {
            transpose_tile(src, base, sz[rank - 2], sz[rank - 1], st[rank - 1], chunk);
        } else if st[rank - 1] == 1 {
            chunk.copy_from_slice(&src[base..base + block]);
        } else {
            let step = st[rank - 1];
            for (k, o) in chunk.iter_mut().enumerate() {
                *o = src[base + k * step];
            }
        }
        // Advance the odometer over the outer dims.
        let mut d = outer_rank;
        while d > 0 {
            d -= 1;
            idx[d] += 1;
            base += st[d];
            if idx[d] < sz[d] {
                break;
            }
            base -= st[d] * sz[d];
            idx[d] = 0;
        }
    }
}

/// `out[i][j] = src[base + i + j·col_stride]` for an `rows × cols` block (`out` row-major),
/// in 16 × 16 tiles.
fn transpose_tile<T: Copy>(src: &[T], base: usize, rows: usize, cols: usize, col_stride: usize, out: &mut [T]) {
    const TILE: usize = 16;
    for i0 in (0..rows).step_by(TILE) {
        let i1 = (i0 + TILE).min(rows);
        for j0 in (0..cols).step_by(TILE) {
            let j1 = (j0 + TILE).min(cols);
            for j in j0..j1 {
                let s = &src[base + j * col_stride + i0..base + j * col_stride + i1];
                for (k, &v) in s.iter().enumerate() {
                    out[(i0 + k) * cols + j] = v;
                }
            }
        }
    }
}

/// Half ↔ `f32` conversions of at least this many elements split across the intra-op team.
const CAST_PARALLEL_MIN_ELEMENTS: usize = 1 << 14;

/// [`cast_halves`], split across the intra-op team for long slices (each element converted on
/// its own, so the split does not change any result): at two threads the casts around
/// mobilenet_v3_small_f16's widened convolutions ran on one while the other spun.
fn cast_halves_split<S: Element, D: Element>(src: &[S], out: &mut [D]) -> bool {
    let halves = matches!(
        (S::DTYPE, D::DTYPE),
        (DType::F16, DType::F32) | (DType::BF16, DType::F32) | (DType::F32, DType::F16) | (DType::F32, DType::BF16)
    );
    let n = src.len().min(out.len());
    let threads = crate::parallel::threads();
    if !halves || threads <= 1 || n < CAST_PARALLEL_MIN_ELEMENTS {
        return cast_halves(src, out);
    }
    // Chunks of whole 64-element blocks (a cache line of either type and more).
    crate::parallel::for_each_range(&mut out[..n], 64, threads * 4, |i0, o| {
        cast_halves(&src[i0..i0 + o.len()], o);
    });
    true
}

/// Conversions between `f16`/`bf16` and `f32` over whole slices, vectorized (F16C on
/// x86 CPUs that have it, `kernels::halves` for `f16`, `half` otherwise): the same
/// values as [`cast`] element by element (widening is exact, narrowing rounds to
/// nearest even). `false` for other pairs.
pub(crate) fn cast_halves<S: Element, D: Element>(src: &[S], out: &mut [D]) -> bool {
    use half::slice::HalfFloatSliceExt;
    let n = src.len().min(out.len());
    // SAFETY (each arm): the dtypes name the Rust types (`Element::DTYPE`), so the
    // slices are reinterpreted as the types they hold.
    unsafe {
        let s = src.as_ptr();
        let o = out.as_mut_ptr();
        match (S::DTYPE, D::DTYPE) {
            // F16C inline, four vectors a step (`half` calls a function per vector).
            (DType::F16, DType::F32)
                if ::kernels::halves::f16_to_f32(std::slice::from_raw_parts(s.cast::<u16>(), n), std::slice::from_raw_parts_mut(o.cast::<f32>(), n)) => {}
            (DType::F32, DType::F16)
                if ::kernels::halves::f32_to_f16(std::slice::from_raw_parts(s.cast::<f32>(), n), std::slice::from_raw_parts_mut(o.cast::<u16>(), n)) => {}
            (DType::F16, DType::F32) => std::slice::from_raw_parts(s.cast::<half::f16>(), n)
                .convert_to_f32_slice(std::slice::from_raw_parts_mut(o.cast::<f32>(), n)),
            (DType::BF16, DType::F32) => std::slice::from_raw_parts(s.cast::<half::bf16>(), n)
                .convert_to_f32_slice(std::slice::from_raw_parts_mut(o.cast::<f32>(), n)),
            (DType::F32, DType::F16) => std::slice::from_raw_parts_mut(o.cast::<half::f16>(), n)
                .convert_from_f32_slice(std::slice::from_raw_parts(s.cast::<f32>(), n)),
            (DType::F32, DType::BF16) => std::slice::from_raw_parts_mut(o.cast::<half::bf16>(), n)
                .convert_from_f32_slice(std::slice::from_raw_parts(s.cast::<f32>(), n)),
            _ => return false,
        }
    }
    true
}
