//! Runtime values: what flows between ops at run time (TorchScript's `IValue`).

use std::sync::Arc;

use ir::DType;

use crate::tensor::{KernelError, Result, Scalar, Tensor};

/// A runtime value: a tensor, a Python scalar, a list, a tuple, or one of ATen's enum-like
/// argument kinds (`ScalarType`, `Device`, `Layout`, `MemoryFormat`).
#[derive(Clone, Debug)]
pub enum IValue {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Arc<str>),
    Tensor(Tensor),
    TensorList(Vec<Tensor>),
    OptionalTensorList(Vec<Option<Tensor>>),
    IntList(Vec<i64>),
    FloatList(Vec<f64>),
    BoolList(Vec<bool>),
    ScalarType(DType),
    Device(Arc<str>),
    Layout(i64),
    MemoryFormat(i64),
    Tuple(Vec<IValue>),
    List(Vec<IValue>),
}

fn wrong(expected: &str, got: &IValue) -> KernelError {
    KernelError::new("ivalue", format!("expected {expected}, got {}", got.kind()))
}

impl IValue {
    /// The kind of value, for error messages (`Tensor`, `int`, `int[]`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            IValue::None => "None",
            IValue::Bool(_) => "bool",
            IValue::Int(_) => "int",
            IValue::Float(_) => "float",
            IValue::Str(_) => "str",
            IValue::Tensor(_) => "Tensor",
            IValue::TensorList(_) => "Tensor[]",
            IValue::OptionalTensorList(_) => "Tensor?[]",
            IValue::IntList(_) => "int[]",
            IValue::FloatList(_) => "float[]",
            IValue::BoolList(_) => "bool[]",
            IValue::ScalarType(_) => "ScalarType",
            IValue::Device(_) => "Device",
            IValue::Layout(_) => "Layout",
            IValue::MemoryFormat(_) => "MemoryFormat",
            IValue::Tuple(_) => "tuple",
            IValue::List(_) => "list",
        }
    }

    pub fn is_none(&self) -> bool {
        matches!(self, IValue::None)
    }

    pub fn as_tensor(&self) -> Result<&Tensor> {
        match self {
            IValue::Tensor(t) => Ok(t),
            v => Err(wrong("Tensor", v)),
        }
    }

    pub fn into_tensor(self) -> Result<Tensor> {
        match self {
            IValue::Tensor(t) => Ok(t),
            v => Err(wrong("Tensor", &v)),
        }
    }

    /// `Tensor?`: `None` or a tensor.
    pub fn as_opt_tensor(&self) -> Result<Option<&Tensor>> {
        match self {
            IValue::None => Ok(None),
            IValue::Tensor(t) => Ok(Some(t)),
            v => Err(wrong("Tensor or None", v)),
        }
    }

    pub fn as_bool(&self) -> Result<bool> {
        match self {
            IValue::Bool(b) => Ok(*b),
            IValue::Int(i) if *i == 0 || *i == 1 => Ok(*i == 1),
            v => Err(wrong("bool", v)),
        }
    }

    pub fn as_opt_bool(&self) -> Result<Option<bool>> {
        if self.is_none() { Ok(None) } else { self.as_bool().map(Some) }
    }

    /// `int` (a bool is accepted as 0/1, as Python does).
    pub fn as_int(&self) -> Result<i64> {
        match self {
            IValue::Int(i) => Ok(*i),
            IValue::Bool(b) => Ok(*b as i64),
            v => Err(wrong("int", v)),
        }
    }

    pub fn as_opt_int(&self) -> Result<Option<i64>> {
        if self.is_none() { Ok(None) } else { self.as_int().map(Some) }
    }

    /// `float` (an int is accepted, as Python does).
    pub fn as_float(&self) -> Result<f64> {
        match self {
            IValue::Float(f) => Ok(*f),
            IValue::Int(i) => Ok(*i as f64),
            IValue::Bool(b) => Ok(*b as u8 as f64),
            v => Err(wrong("float", v)),
        }
    }

    pub fn as_opt_float(&self) -> Result<Option<f64>> {
        if self.is_none() { Ok(None) } else { self.as_float().map(Some) }
    }

    /// `Scalar`: an int, float or bool (a one-element tensor is accepted too).
    pub fn as_scalar(&self) -> Result<Scalar> {
        match self {
            IValue::Int(i) => Ok(Scalar::Int(*i)),
            IValue::Float(f) => Ok(Scalar::Float(*f)),
            IValue::Bool(b) => Ok(Scalar::Bool(*b)),
            IValue::Tensor(t) if t.numel() == 1 => t.item(),
            v => Err(wrong("Scalar", v)),
        }
    }

    pub fn as_opt_scalar(&self) -> Result<Option<Scalar>> {
        if self.is_none() { Ok(None) } else { self.as_scalar().map(Some) }
    }

    pub fn as_str(&self) -> Result<&str> {
        match self {
            IValue::Str(s) => Ok(s),
            v => Err(wrong("str", v)),
        }
    }

    pub fn as_opt_str(&self) -> Result<Option<&str>> {
        if self.is_none() { Ok(None) } else { self.as_str().map(Some) }
    }

    /// `int[]` (a single int is accepted, as ATen broadcasts `int[1]` arguments; a list of
    /// ints is accepted too).
    pub fn as_int_list(&self) -> Result<Vec<i64>> {
        match self {
            IValue::IntList(v) => Ok(v.clone()),
            IValue::Int(i) => Ok(vec![*i]),
            IValue::List(items) | IValue::Tuple(items) => items.iter().map(|x| x.as_int()).collect(),
            v => Err(wrong("int[]", v)),
        }
    }

    pub fn as_opt_int_list(&self) -> Result<Option<Vec<i64>>> {
        if self.is_none() { Ok(None) } else { self.as_int_list().map(Some) }
    }

    pub fn as_float_list(&self) -> Result<Vec<f64>> {
        match self {
            IValue::FloatList(v) => Ok(v.clone()),
            IValue::IntList(v) => Ok(v.iter().map(|&i| i as f64).collect()),
            IValue::List(items) | IValue::Tuple(items) => items.iter().map(|x| x.as_float()).collect(),
            v => Err(wrong("float[]", v)),
        }
    }

    pub fn as_bool_list(&self) -> Result<Vec<bool>> {
        match self {
            IValue::BoolList(v) => Ok(v.clone()),
            IValue::List(items) | IValue::Tuple(items) => items.iter().map(|x| x.as_bool()).collect(),
            v => Err(wrong("bool[]", v)),
        }
    }

    pub fn as_tensor_list(&self) -> Result<Vec<Tensor>> {
        match self {
            IValue::TensorList(v) => Ok(v.clone()),
            IValue::List(items) | IValue::Tuple(items) => {
                items.iter().map(|x| x.as_tensor().cloned()).collect()
            }
            v => Err(wrong("Tensor[]", v)),
        }
    }

    pub fn as_opt_tensor_list(&self) -> Result<Vec<Option<Tensor>>> {
        match self {
            IValue::OptionalTensorList(v) => Ok(v.clone()),
            IValue::TensorList(v) => Ok(v.iter().cloned().map(Some).collect()),
            IValue::List(items) | IValue::Tuple(items) => {
                items.iter().map(|x| x.as_opt_tensor().map(|t| t.cloned())).collect()
            }
            v => Err(wrong("Tensor?[]", v)),
        }
    }

    /// `ScalarType` (an int is read as PyTorch's `ScalarType` code).
    pub fn as_dtype(&self) -> Result<DType> {
        match self {
            IValue::ScalarType(d) => Ok(*d),
            IValue::Int(code) => DType::from_scalar_type_code(*code)
                .ok_or_else(|| KernelError::new("ivalue", format!("unsupported ScalarType code {code}"))),
            v => Err(wrong("ScalarType", v)),
        }
    }

    pub fn as_opt_dtype(&self) -> Result<Option<DType>> {
        if self.is_none() { Ok(None) } else { self.as_dtype().map(Some) }
    }

    pub fn as_list(&self) -> Result<&[IValue]> {
        match self {
            IValue::List(v) | IValue::Tuple(v) => Ok(v),
            v => Err(wrong("list", v)),
        }
    }
}

impl From<Tensor> for IValue {
    fn from(t: Tensor) -> IValue {
        IValue::Tensor(t)
    }
}

impl From<Scalar> for IValue {
    fn from(s: Scalar) -> IValue {
        match s {
            Scalar::Bool(b) => IValue::Bool(b),
            Scalar::Int(i) => IValue::Int(i),
            Scalar::Float(f) => IValue::Float(f),
        }
    }
}

impl From<i64> for IValue {
    fn from(v: i64) -> IValue {
        IValue::Int(v)
    }
}

impl From<f64> for IValue {
    fn from(v: f64) -> IValue {
        IValue::Float(v)
    }
}

impl From<bool> for IValue {
    fn from(v: bool) -> IValue {
        IValue::Bool(v)
    }
}

impl From<Vec<i64>> for IValue {
    fn from(v: Vec<i64>) -> IValue {
        IValue::IntList(v)
    }
}

impl From<DType> for IValue {
    fn from(v: DType) -> IValue {
        IValue::ScalarType(v)
    }
}

impl From<&str> for IValue {
    fn from(v: &str) -> IValue {
        IValue::Str(Arc::from(v))
    }
}
