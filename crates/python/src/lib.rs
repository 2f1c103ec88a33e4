//! The Python extension module `dialect._native`: compiles a program (a file, the bytes of a
//! program PyTorch serialized in memory, or text) and runs it on tensors handed over without
//! copies. The pure-Python package `dialect` (`python/dialect`) wraps it; `docs/python.md`
//! describes both.

mod program;
mod tensor;
mod values;

use pyo3::prelude::*;

// Counting allocations lets `Program.bench` report allocations per call, as `dialect-run
// --bench` does. The allocator serves this module's Rust code only.
#[global_allocator]
static ALLOC: driver::alloc::Counting = driver::alloc::Counting;

pyo3::create_exception!(
    _native,
    DialectError,
    pyo3::exceptions::PyException,
    "An error of the importer, the compiler or the runtime. Its message is the diagnostic, with \
     the location it points at (file, line and column, or the op's source location)."
);

/// Turns any displayable error into a [`DialectError`].
pub(crate) fn error(e: impl std::fmt::Display) -> PyErr {
    DialectError::new_err(e.to_string())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<program::Program>()?;
    m.add_class::<tensor::Tensor>()?;
    m.add_function(wrap_pyfunction!(program::compile_path, m)?)?;
    m.add_function(wrap_pyfunction!(program::compile_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(isa, m)?)?;
    m.add("DialectError", m.py().get_type::<DialectError>())?;
    Ok(())
}

/// The instruction-set path the kernels take in this process (`avx512`, `avx2`, `generic`;
/// `DIALECT_ISA` lowers it).
#[pyfunction]
fn isa() -> PyResult<String> {
    kernels::isa::from_env().map_err(error)?;
    Ok(kernels::Isa::process().to_string())
}
