//! Python scalars as ATen sees them (`Scalar`): a bool, an int or a float.

use ir::DType;

use super::element::{Element, f64_to_i64};

/// A Python number passed to an op as `Scalar` (`add.Scalar`, `full`, `clamp`, …).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
    Float(f64),
}

impl Scalar {
    pub fn to_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => b as u8 as f64,
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
        }
    }

    /// Integer value; floats truncate toward zero.
    pub fn to_i64(self) -> i64 {
        match self {
            Scalar::Bool(b) => b as i64,
            Scalar::Int(i) => i,
            Scalar::Float(f) => f64_to_i64(f),
        }
    }

    pub fn to_bool(self) -> bool {
        match self {
            Scalar::Bool(b) => b,
            Scalar::Int(i) => i != 0,
            Scalar::Float(f) => f != 0.0,
        }
    }

    pub fn is_floating(self) -> bool {
        matches!(self, Scalar::Float(_))
    }

    pub fn is_integral(self) -> bool {
        matches!(self, Scalar::Int(_))
    }

    /// The dtype PyTorch gives a tensor made from this scalar (`torch.tensor(x)`), with the
    /// default float dtype `float32`.
    pub fn default_dtype(self) -> DType {
        match self {
            Scalar::Bool(_) => DType::Bool,
            Scalar::Int(_) => DType::I64,
            Scalar::Float(_) => DType::F32,
        }
    }

    /// The dtype of this scalar as a "wrapped number" in type promotion: int64, float64 or
    /// bool (only its category matters against tensors).
    pub fn wrapped_dtype(self) -> DType {
        match self {
            Scalar::Bool(_) => DType::Bool,
            Scalar::Int(_) => DType::I64,
            Scalar::Float(_) => DType::F64,
        }
    }

    /// Converts to element type `T` with PyTorch's casting rules (ints exactly, floats via f64).
    pub fn to_element<T: Element>(self) -> T {
        match self {
            Scalar::Bool(b) => T::from_bool(b),
            Scalar::Int(i) => T::from_i64(i),
            Scalar::Float(f) => T::from_f64(f),
        }
    }

    /// Reads element `v` as a scalar of the matching kind.
    pub fn from_element<T: Element>(v: T) -> Scalar {
        match T::DTYPE {
            DType::Bool => Scalar::Bool(v.to_bool()),
            d if d.is_floating() || d.is_complex() => Scalar::Float(v.to_f64()),
            _ => Scalar::Int(v.to_i64()),
        }
    }
}

impl std::fmt::Display for Scalar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scalar::Bool(b) => write!(f, "{}", if *b { "True" } else { "False" }),
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::Float(x) => write!(f, "{x:?}"),
        }
    }
}

impl From<bool> for Scalar {
    fn from(v: bool) -> Scalar {
        Scalar::Bool(v)
    }
}

impl From<i64> for Scalar {
    fn from(v: i64) -> Scalar {
        Scalar::Int(v)
    }
}

impl From<f64> for Scalar {
    fn from(v: f64) -> Scalar {
        Scalar::Float(v)
    }
}
