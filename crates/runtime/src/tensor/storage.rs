//! Tensor storage: a 64-byte-aligned byte buffer shared by a tensor and all its views.
//!
//! A `Storage` owns its buffer, is a region carved out of another storage (a slab), which it
//! keeps alive, or borrows memory that an embedder owns (a NumPy array or a PyTorch tensor
//! handed in without a copy), whose owner it keeps alive. A memory planner allocates one slab
//! and hands out regions of it; the tensors over those regions behave like any other tensor.
//!
//! Storage is shared and mutable, like PyTorch's: views alias it and in-place kernels write
//! through it. Access goes through raw pointers; the runtime guarantees that a kernel never
//! holds a mutable slice of a storage while reading it through another slice (in-place kernels
//! compute into a fresh buffer or read and write one element at a time). Concurrent writes
//! from several threads to one storage are a program error, as in PyTorch.

use std::alloc::{self, Layout};
use std::ptr::NonNull;
use std::sync::Arc;

use super::error::{KernelError, Result};

/// Alignment of every owned buffer, in bytes (one cache line; enough for any SIMD width).
pub const STORAGE_ALIGN: usize = 64;

/// A non-null pointer aligned for every element type, for empty buffers.
fn aligned_dangling() -> NonNull<u8> {
    NonNull::new(std::ptr::without_provenance_mut(STORAGE_ALIGN)).unwrap_or(NonNull::dangling())
}

enum Backing {
    /// The buffer was allocated with this layout and is freed on drop (`None` for empty).
    Owned(Option<Layout>),
    /// A region of a parent storage, which is kept alive.
    Region(#[allow(dead_code)] Arc<Storage>),
    /// Memory owned by someone else, kept alive by holding its owner.
    External(#[allow(dead_code)] Box<dyn Send + Sync>),
}

/// A contiguous byte buffer holding tensor elements.
pub struct Storage {
    ptr: NonNull<u8>,
    nbytes: usize,
    backing: Backing,
}

// SAFETY: the buffer is plain bytes owned (or kept alive) by the storage; sharing it between
// threads is as safe as PyTorch's storage sharing: reads are fine, racing writes are a program
// error that the runtime's scheduling rules out.
unsafe impl Send for Storage {}
unsafe impl Sync for Storage {}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.backing {
            Backing::Owned(_) => "owned",
            Backing::Region(_) => "region",
            Backing::External(_) => "external",
        };
        write!(f, "Storage({} bytes, {kind})", self.nbytes)
    }
}

impl Storage {
    /// A zero-filled, 64-byte-aligned buffer of `nbytes` bytes.
    pub fn zeroed(nbytes: usize) -> Result<Storage> {
        if nbytes == 0 {
            return Ok(Storage { ptr: aligned_dangling(), nbytes: 0, backing: Backing::Owned(None) });
        }
        let layout = Layout::from_size_align(nbytes, STORAGE_ALIGN)
            .map_err(|_| KernelError::new("allocate", format!("cannot allocate {nbytes} bytes")))?;
        crate::memory::reserve(nbytes).map_err(|e| KernelError::new("allocate", e))?;
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(raw) else {
            crate::memory::release(nbytes);
            return Err(KernelError::new("allocate", format!("out of memory allocating {nbytes} bytes")));
        };
        Ok(Storage { ptr, nbytes, backing: Backing::Owned(Some(layout)) })
    }

    /// A buffer holding a copy of `bytes`.
    pub fn from_bytes(bytes: &[u8]) -> Result<Storage> {
        let s = Storage::zeroed(bytes.len())?;
        // SAFETY: `s` owns `bytes.len()` fresh bytes that nothing else references.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), s.ptr.as_ptr(), bytes.len()) };
        Ok(s)
    }

    /// The region `[offset, offset + nbytes)` of `slab`, sharing its memory. The region keeps
    /// the slab alive. `offset` must be a multiple of 64 so that elements stay aligned.
    pub fn region(slab: &Arc<Storage>, offset: usize, nbytes: usize) -> Result<Storage> {
        let end = offset.checked_add(nbytes);
        if end.is_none_or(|e| e > slab.nbytes) {
            return Err(KernelError::new(
                "storage_region",
                format!("region [{offset}, +{nbytes}) exceeds the slab of {} bytes", slab.nbytes),
            ));
        }
        if !offset.is_multiple_of(STORAGE_ALIGN) {
            return Err(KernelError::new(
                "storage_region",
                format!("region offset {offset} is not a multiple of {STORAGE_ALIGN}"),
            ));
        }
        // SAFETY: offset + nbytes <= slab.nbytes, so the pointer stays inside the allocation.
        let ptr = unsafe { NonNull::new_unchecked(slab.ptr.as_ptr().add(offset)) };
        let ptr = if nbytes == 0 { aligned_dangling() } else { ptr };
        Ok(Storage { ptr, nbytes, backing: Backing::Region(slab.clone()) })
    }

    /// A storage over `nbytes` bytes at `ptr` that `owner` keeps alive: memory an embedder hands
    /// in without copying. Its elements need only their natural alignment, not 64 bytes.
    ///
    /// # Safety
    ///
    /// `ptr` must be valid for reads and writes of `nbytes` bytes for as long as `owner` lives,
    /// and nothing may write to that memory while the runtime uses the storage (the rule every
    /// storage follows: racing writes are a program error).
    pub unsafe fn external(ptr: *mut u8, nbytes: usize, owner: Box<dyn Send + Sync>) -> Storage {
        let ptr = if nbytes == 0 { aligned_dangling() } else { NonNull::new(ptr).unwrap_or_else(aligned_dangling) };
        Storage { ptr, nbytes, backing: Backing::External(owner) }
    }

    /// Size of the buffer in bytes.
    pub fn nbytes(&self) -> usize {
        self.nbytes
    }

    /// Whether this storage is a region of another storage.
    pub fn is_region(&self) -> bool {
        matches!(self.backing, Backing::Region(_))
    }

    /// Start of the buffer. Writing through it is allowed (storage is shared-mutable) as long
    /// as no slice obtained from `as_slice` of an overlapping tensor is alive.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// A copy of the raw bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        // SAFETY: the buffer holds `nbytes` initialized bytes.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.nbytes).to_vec() }
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        if let Backing::Owned(Some(layout)) = self.backing {
            // SAFETY: allocated in `zeroed` with exactly this layout.
            unsafe { alloc::dealloc(self.ptr.as_ptr(), layout) };
            crate::memory::release(layout.size());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owned_storage_is_aligned_and_zeroed() {
        let s = Storage::zeroed(100).unwrap();
        assert_eq!(s.as_ptr() as usize % STORAGE_ALIGN, 0);
        assert!(s.to_bytes().iter().all(|&b| b == 0));
    }

    #[test]
    fn regions_share_the_slab() {
        let slab = Arc::new(Storage::zeroed(256).unwrap());
        let r = Storage::region(&slab, 64, 16).unwrap();
        unsafe { *r.as_ptr() = 7 };
        assert_eq!(slab.to_bytes()[64], 7);
        assert!(Storage::region(&slab, 250, 16).is_err());
        assert!(Storage::region(&slab, 3, 16).is_err());
    }
}
