//! Values across the boundary: Python inputs to runtime values, runtime outputs to Python
//! objects, and pytree specs to nested tuples the Python package walks.

use import::{DictKey, TreeSpec};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyList, PyTuple};
use runtime::IValue;

use crate::error;
use crate::tensor::{Tensor, borrowed};

/// One flat input as the Python package hands it over: `None`, a bool, an int, a float, or a
/// tensor described as `(owner, address, dtype, sizes, strides)`; a list of such tensors for a
/// `Tensor[]` input.
pub fn input(v: &Bound<'_, PyAny>) -> PyResult<IValue> {
    if v.is_none() {
        return Ok(IValue::None);
    }
    // `bool` before `int`: Python's bools are ints.
    if v.is_instance_of::<PyBool>() {
        return Ok(IValue::Bool(v.extract()?));
    }
    if v.is_instance_of::<PyInt>() {
        return Ok(IValue::Int(v.extract().map_err(|_| error("an int input does not fit 64 bits"))?));
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(IValue::Float(v.extract()?));
    }
    if let Ok(t) = v.cast::<PyTuple>() {
        let (owner, addr, dtype, sizes, strides): (Py<PyAny>, usize, String, Vec<usize>, Vec<usize>) = t.extract()?;
        return Ok(IValue::Tensor(borrowed(owner, addr, &dtype, &sizes, &strides)?));
    }
    if let Ok(l) = v.cast::<PyList>() {
        let mut ts = Vec::with_capacity(l.len());
        for item in l.iter() {
            match input(&item)? {
                IValue::Tensor(t) => ts.push(t),
                other => return Err(error(format!("a list input holds a {}, not a tensor", other.kind()))),
            }
        }
        return Ok(IValue::TensorList(ts));
    }
    Err(error(format!("unsupported input of type {}", v.get_type().name()?)))
}

/// A runtime output as a Python object: tensors as [`Tensor`], scalars as Python scalars,
/// lists and tuples as lists.
pub fn output(py: Python<'_>, v: IValue) -> PyResult<Py<PyAny>> {
    Ok(match v {
        IValue::None => py.None(),
        IValue::Bool(b) => PyBool::new(py, b).to_owned().into_any().unbind(),
        IValue::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
        IValue::Float(x) => x.into_pyobject(py)?.into_any().unbind(),
        IValue::Str(s) => s.as_ref().into_pyobject(py)?.into_any().unbind(),
        IValue::Tensor(t) => Py::new(py, Tensor::new(t)?)?.into_any(),
        IValue::TensorList(ts) => {
            let items = ts.into_iter().map(|t| Ok(Py::new(py, Tensor::new(t)?)?.into_any())).collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any().unbind()
        }
        IValue::Tuple(xs) | IValue::List(xs) => {
            let items = xs.into_iter().map(|x| output(py, x)).collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any().unbind()
        }
        IValue::IntList(xs) => PyList::new(py, xs)?.into_any().unbind(),
        IValue::FloatList(xs) => PyList::new(py, xs)?.into_any().unbind(),
        IValue::BoolList(xs) => PyList::new(py, xs)?.into_any().unbind(),
        other => return Err(error(format!("an output of kind {} has no Python form", other.kind()))),
    })
}

/// A pytree spec as nested tuples: `("leaf",)`, `("none",)`, `("tuple", [..])`,
/// `("list", [..])`, `("dict", [(key, spec), ..])`, `("other", type, context, [..])`.
pub fn spec(py: Python<'_>, s: &TreeSpec) -> PyResult<Py<PyAny>> {
    let children = |xs: &[TreeSpec]| -> PyResult<Bound<'_, PyList>> {
        let items = xs.iter().map(|x| spec(py, x)).collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    };
    let t = match s {
        TreeSpec::Leaf => PyTuple::new(py, ["leaf"])?,
        TreeSpec::None => PyTuple::new(py, ["none"])?,
        TreeSpec::Tuple(xs) => ("tuple", children(xs)?).into_pyobject(py)?,
        TreeSpec::List(xs) => ("list", children(xs)?).into_pyobject(py)?,
        TreeSpec::Dict(items) => {
            let mut entries = Vec::with_capacity(items.len());
            for (k, x) in items {
                let key: Py<PyAny> = match k {
                    DictKey::Str(s) => s.into_pyobject(py)?.into_any().unbind(),
                    DictKey::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
                };
                entries.push((key, spec(py, x)?).into_pyobject(py)?);
            }
            ("dict", PyList::new(py, entries)?).into_pyobject(py)?
        }
        TreeSpec::Other { ty, context, children: xs } => ("other", ty, context, children(xs)?).into_pyobject(py)?,
    };
    Ok(t.into_any().unbind())
}
