//! Tensors across the boundary without copies: a [`Tensor`] shows its buffer to NumPy through
//! `__array_interface__` (which PyTorch's `from_numpy` then shares), and an input array or
//! tensor is wrapped as storage that keeps its Python owner alive.

use std::sync::Arc;

use ir::DType;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::error;

/// A tensor the program produced, contiguous, owned by the runtime's allocator. NumPy sees its
/// memory through `__array_interface__`, so `numpy.asarray(t)` and `torch.from_numpy` share it.
#[pyclass(frozen, module = "dialect._native")]
pub struct Tensor {
    t: runtime::Tensor,
}

impl Tensor {
    /// Wraps `t`, copying it only when its elements are not laid out contiguously.
    pub fn new(t: runtime::Tensor) -> PyResult<Tensor> {
        let t = if t.is_contiguous() { t } else { t.contiguous().map_err(error)? };
        Ok(Tensor { t })
    }
}

/// NumPy's type string of a dtype. NumPy has no bfloat16: its bits are shown as `uint16`, and
/// the Python package views them as `torch.bfloat16`. Complex elements are NumPy's own
/// `complex64`/`complex128` (pairs of floats, real part first).
fn typestr(d: DType) -> &'static str {
    match d {
        DType::Bool => "|b1",
        DType::U8 => "|u1",
        DType::I8 => "|i1",
        DType::I16 => "<i2",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
        DType::F16 => "<f2",
        DType::BF16 => "<u2",
        DType::F32 => "<f4",
        DType::F64 => "<f8",
        DType::C64 => "<c8",
        DType::C128 => "<c16",
    }
}

#[pymethods]
impl Tensor {
    /// NumPy's array interface (version 3) over this tensor's memory.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        let addr = self.t.storage().as_ptr() as usize + self.t.offset() * self.t.dtype().size_bytes();
        d.set_item("version", 3)?;
        d.set_item("shape", PyTuple::new(py, self.t.sizes())?)?;
        d.set_item("typestr", typestr(self.t.dtype()))?;
        d.set_item("data", (addr, false))?;
        d.set_item("strides", py.None())?;
        Ok(d)
    }

    /// PyTorch's name of the element type (`float32`, `bfloat16`, …).
    #[getter]
    fn dtype(&self) -> &'static str {
        self.t.dtype().torch_name()
    }

    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.t.sizes())
    }

    fn __repr__(&self) -> String {
        format!("dialect._native.Tensor(dtype={}, shape={:?})", self.t.dtype().torch_name(), self.t.sizes())
    }
}

/// Wraps memory that a Python object owns as an input tensor, without copying: `addr` is the
/// address of the first element, `strides` count elements. The object is kept alive as long
/// as the runtime holds the tensor.
pub fn borrowed(owner: Py<PyAny>, addr: usize, dtype: &str, sizes: &[usize], strides: &[usize]) -> PyResult<runtime::Tensor> {
    let dtype = DType::from_torch_name(dtype).ok_or_else(|| error(format!("unsupported input element type '{dtype}'")))?;
    if sizes.len() != strides.len() {
        return Err(error(format!("an input of shape {sizes:?} has strides {strides:?} of another rank")));
    }
    let elem = dtype.size_bytes();
    if addr % elem != 0 {
        return Err(error(format!("an input's data at {addr:#x} is not aligned to its {elem}-byte elements")));
    }
    // The storage spans the elements the view reaches: the last one's offset plus one.
    let numel = sizes.iter().try_fold(1usize, |n, &s| n.checked_mul(s));
    let reach = if numel == Some(0) {
        Some(0)
    } else {
        sizes
            .iter()
            .zip(strides)
            .try_fold(0usize, |acc, (&s, &st)| (s - 1).checked_mul(st).and_then(|x| acc.checked_add(x)))
            .and_then(|last| last.checked_add(1))
    };
    let nbytes = reach
        .and_then(|n| n.checked_mul(elem))
        .ok_or_else(|| error(format!("an input of shape {sizes:?} and strides {strides:?} overflows the address space")))?;
    // SAFETY: the Python side passes the address of a live array or tensor whose memory covers
    // every element of this view (it derives the address, shape and strides from that very
    // object), and `owner` is that object, which the storage keeps alive. The runtime writes to
    // it only where the program mutates its input, which PyTorch would do to the same tensor.
    let storage = unsafe { runtime::Storage::external(addr as *mut u8, nbytes, Box::new(owner)) };
    runtime::Tensor::from_storage(Arc::new(storage), dtype, sizes, strides, 0).map_err(error)
}
