//! Attributes: compile-time constant data attached to operations, with an MLIR-compatible spelling.

use crate::dtype::DType;
use crate::types::{TensorType, Type};
use std::fmt;
use std::sync::Arc;

/// A constant tensor: a static-shape tensor type and its little-endian element bytes (bool as one byte).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct DenseAttr {
    ty: TensorType,
    data: Arc<[u8]>,
}

impl DenseAttr {
    /// Builds a dense attribute, checking that the byte length matches the static shape.
    pub fn new(dtype: DType, dims: &[i64], data: Arc<[u8]>) -> Result<DenseAttr, String> {
        let ty = TensorType::static_shape(dtype, dims);
        let n: i64 = dims.iter().product();
        if dims.iter().any(|&d| d < 0) {
            return Err(format!("negative dimension in dense attribute shape {dims:?}"));
        }
        let expected = n as usize * dtype.size_bytes();
        if data.len() != expected {
            return Err(format!(
                "dense attribute of type {ty} needs {expected} bytes, got {}",
                data.len()
            ));
        }
        Ok(DenseAttr { ty, data })
    }

    pub fn from_f32(dims: &[i64], values: &[f32]) -> Result<DenseAttr, String> {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        DenseAttr::new(DType::F32, dims, bytes.into())
    }

    pub fn from_i64(dims: &[i64], values: &[i64]) -> Result<DenseAttr, String> {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        DenseAttr::new(DType::I64, dims, bytes.into())
    }

    pub fn tensor_type(&self) -> &TensorType {
        &self.ty
    }

    pub fn dtype(&self) -> DType {
        self.ty.dtype.unwrap_or(DType::F32)
    }

    pub fn dims(&self) -> Vec<i64> {
        self.ty.static_dims().unwrap_or_default()
    }

    pub fn data(&self) -> &Arc<[u8]> {
        &self.data
    }

    pub fn num_elements(&self) -> usize {
        self.data.len() / self.dtype().size_bytes()
    }

    /// Element `i` as an f64 (exact for every dtype but i64 beyond 2^53), or `None` for f16/bf16 bytes out of range.
    pub fn element_f64(&self, i: usize) -> Option<f64> {
        let sz = self.dtype().size_bytes();
        let b = self.data.get(i * sz..(i + 1) * sz)?;
        Some(match self.dtype() {
            DType::Bool => (b[0] != 0) as u8 as f64,
            DType::U8 => b[0] as f64,
            DType::I8 => b[0] as i8 as f64,
            DType::I16 => i16::from_le_bytes([b[0], b[1]]) as f64,
            DType::I32 => i32::from_le_bytes(b.try_into().ok()?) as f64,
            DType::I64 => i64::from_le_bytes(b.try_into().ok()?) as f64,
            DType::F32 => f32::from_le_bytes(b.try_into().ok()?) as f64,
            DType::F64 => f64::from_le_bytes(b.try_into().ok()?),
            DType::F16 | DType::BF16 => return None,
        })
    }

    /// Element `i` as an i64, for integer and bool dtypes.
    pub fn element_i64(&self, i: usize) -> Option<i64> {
        let sz = self.dtype().size_bytes();
        let b = self.data.get(i * sz..(i + 1) * sz)?;
        Some(match self.dtype() {
            DType::Bool => (b[0] != 0) as i64,
            DType::U8 => b[0] as i64,
            DType::I8 => b[0] as i8 as i64,
            DType::I16 => i16::from_le_bytes([b[0], b[1]]) as i64,
            DType::I32 => i32::from_le_bytes(b.try_into().ok()?) as i64,
            DType::I64 => i64::from_le_bytes(b.try_into().ok()?),
            _ => return None,
        })
    }
}

impl fmt::Debug for DenseAttr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Dense attributes with more elements than this print as a hex blob.
const DENSE_LIST_LIMIT: usize = 16;

impl fmt::Display for DenseAttr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.num_elements();
        let sz = self.dtype().size_bytes();
        let all_same = n > 1 && (1..n).all(|i| self.data[i * sz..(i + 1) * sz] == self.data[..sz]);
        let listable = !matches!(self.dtype(), DType::F16 | DType::BF16);
        if listable && (all_same || n <= DENSE_LIST_LIMIT) {
            f.write_str("dense<")?;
            let count = if all_same { 1 } else { n };
            let dims = self.dims();
            if !all_same && !dims.is_empty() {
                write_nested(f, self, &dims, 0, &mut 0)?;
            } else {
                for i in 0..count {
                    write_element(f, self, i)?;
                }
            }
            write!(f, "> : {}", self.ty)
        } else {
            f.write_str("dense<\"0x")?;
            for b in self.data.iter() {
                write!(f, "{b:02X}")?;
            }
            write!(f, "\"> : {}", self.ty)
        }
    }
}

fn write_nested(f: &mut fmt::Formatter<'_>, d: &DenseAttr, dims: &[i64], depth: usize, next: &mut usize) -> fmt::Result {
    f.write_str("[")?;
    for i in 0..dims[depth] {
        if i > 0 {
            f.write_str(", ")?;
        }
        if depth + 1 == dims.len() {
            write_element(f, d, *next)?;
            *next += 1;
        } else {
            write_nested(f, d, dims, depth + 1, next)?;
        }
    }
    f.write_str("]")
}

fn write_element(f: &mut fmt::Formatter<'_>, d: &DenseAttr, i: usize) -> fmt::Result {
    let sz = d.dtype().size_bytes();
    let b = &d.data[i * sz..(i + 1) * sz];
    match d.dtype() {
        DType::Bool => f.write_str(if b[0] != 0 { "true" } else { "false" }),
        DType::F32 => {
            let v = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            if v.is_finite() {
                f.write_str(&mlir_float_literal(&format!("{v:?}")))
            } else {
                write!(f, "0x{:08X}", v.to_bits())
            }
        }
        DType::F64 => write_f64(f, f64::from_le_bytes(b.try_into().map_err(|_| fmt::Error)?)),
        _ => write!(f, "{}", d.element_i64(i).ok_or(fmt::Error)?),
    }
}

/// Turns Rust's shortest round-trip float text into an MLIR float literal (which needs a `.`).
fn mlir_float_literal(s: &str) -> String {
    match s.find(['e', 'E']) {
        Some(pos) if !s[..pos].contains('.') => format!("{}.0{}", &s[..pos], &s[pos..]),
        _ if !s.contains('.') => format!("{s}.0"),
        _ => s.to_string(),
    }
}

/// Writes an f64 so that parsing it back gives the same bits: decimal when finite, hex bits otherwise.
pub fn write_f64(f: &mut impl fmt::Write, v: f64) -> fmt::Result {
    if v.is_finite() {
        f.write_str(&mlir_float_literal(&format!("{v:?}")))
    } else {
        write!(f, "0x{:016X}", v.to_bits())
    }
}

/// Writes a string literal with MLIR's escapes: `\"`, `\\`, and two hex digits for other non-printable bytes.
pub fn write_escaped_string(f: &mut impl fmt::Write, s: &str) -> fmt::Result {
    f.write_char('"')?;
    for b in s.bytes() {
        match b {
            b'"' => f.write_str("\\\"")?,
            b'\\' => f.write_str("\\\\")?,
            0x20..=0x7e => f.write_char(b as char)?,
            _ => write!(f, "\\{b:02X}")?,
        }
    }
    f.write_char('"')
}

/// A compile-time constant attached to an operation.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Attribute {
    /// `unit`: a flag whose presence is the information.
    Unit,
    /// `#prim.none`: Python's `None` as an argument value.
    None,
    Bool(bool),
    /// A 64-bit integer, `3 : i64`.
    Int(i64),
    /// A 64-bit float, `1.5 : f64`, compared and hashed by bits so that every value round-trips.
    Float(FloatBits),
    Str(Arc<str>),
    Type(Type),
    Array(Arc<[Attribute]>),
    /// A dictionary, kept sorted by key.
    Dict(Arc<[(Arc<str>, Attribute)]>),
    Dense(DenseAttr),
    /// `@name`.
    SymbolRef(Arc<str>),
    /// `#prim.dtype<f32>`.
    DType(DType),
    /// `#prim.device<"cpu">`.
    Device(Arc<str>),
    /// An attribute of another dialect kept as raw text (`#toy.shape<2, 3>`).
    Opaque { dialect: Arc<str>, name: Arc<str>, body: Option<Arc<str>> },
}

/// An f64 compared by its bit pattern (so NaN equals itself and -0.0 differs from 0.0).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct FloatBits(pub u64);

impl FloatBits {
    pub fn get(self) -> f64 {
        f64::from_bits(self.0)
    }
}

impl Attribute {
    pub fn float(v: f64) -> Attribute {
        Attribute::Float(FloatBits(v.to_bits()))
    }

    pub fn str(s: &str) -> Attribute {
        Attribute::Str(s.into())
    }

    pub fn array(items: Vec<Attribute>) -> Attribute {
        Attribute::Array(items.into())
    }

    pub fn ints(items: &[i64]) -> Attribute {
        Attribute::Array(items.iter().map(|&i| Attribute::Int(i)).collect())
    }

    /// Builds a dictionary, sorting by key; a later duplicate key replaces an earlier one.
    pub fn dict(mut items: Vec<(Arc<str>, Attribute)>) -> Attribute {
        items.sort_by(|a, b| a.0.cmp(&b.0));
        items.dedup_by(|later, earlier| {
            if later.0 == earlier.0 {
                std::mem::swap(later, earlier);
                true
            } else {
                false
            }
        });
        Attribute::Dict(items.into())
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            Attribute::Int(i) => Some(*i),
            _ => None,
        }
    }

    pub fn as_float(&self) -> Option<f64> {
        match self {
            Attribute::Float(f) => Some(f.get()),
            _ => None,
        }
    }

    /// A number, integer or float, as `f64` (scalar arguments such as `other` or `alpha` are
    /// spelled either way).
    pub fn as_number(&self) -> Option<f64> {
        match self {
            Attribute::Int(i) => Some(*i as f64),
            Attribute::Float(f) => Some(f.get()),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Attribute::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Attribute::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Attribute]> {
        match self {
            Attribute::Array(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_type(&self) -> Option<&Type> {
        match self {
            Attribute::Type(t) => Some(t),
            _ => None,
        }
    }

    pub fn as_dense(&self) -> Option<&DenseAttr> {
        match self {
            Attribute::Dense(d) => Some(d),
            _ => None,
        }
    }

    /// The integers of an array of ints.
    pub fn as_int_array(&self) -> Option<Vec<i64>> {
        self.as_array()?.iter().map(Attribute::as_int).collect()
    }

    pub fn dict_get(&self, key: &str) -> Option<&Attribute> {
        match self {
            Attribute::Dict(items) => items.iter().find(|(k, _)| &**k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The type a constant holding this attribute has (`prim.Constant`'s result type).
    pub fn value_type(&self) -> Option<Type> {
        Some(match self {
            Attribute::None => Type::none(),
            Attribute::Bool(_) => Type::bool(),
            Attribute::Int(_) => Type::int(),
            Attribute::Float(_) => Type::float(),
            Attribute::Str(_) => Type::str(),
            Attribute::Device(_) => Type::device(),
            Attribute::DType(_) => Type::int(),
            Attribute::Dense(d) => Type::tensor_of(d.tensor_type().clone()),
            _ => return None,
        })
    }

    /// A short name of the attribute's kind, for diagnostics.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Attribute::Unit => "unit",
            Attribute::None => "none",
            Attribute::Bool(_) => "bool",
            Attribute::Int(_) => "integer",
            Attribute::Float(_) => "float",
            Attribute::Str(_) => "string",
            Attribute::Type(_) => "type",
            Attribute::Array(_) => "array",
            Attribute::Dict(_) => "dictionary",
            Attribute::Dense(_) => "dense tensor",
            Attribute::SymbolRef(_) => "symbol reference",
            Attribute::DType(_) => "dtype",
            Attribute::Device(_) => "device",
            Attribute::Opaque { .. } => "opaque",
        }
    }
}

impl fmt::Debug for Attribute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Writes an attribute-dictionary entry name: bare when it is an identifier, quoted otherwise.
pub fn write_attr_name(f: &mut impl fmt::Write, name: &str) -> fmt::Result {
    let bare = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '.');
    if bare { f.write_str(name) } else { write_escaped_string(f, name) }
}

impl fmt::Display for Attribute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Attribute::Unit => f.write_str("unit"),
            Attribute::None => f.write_str("#prim.none"),
            Attribute::Bool(b) => write!(f, "{b}"),
            Attribute::Int(i) => write!(f, "{i} : i64"),
            Attribute::Float(v) => {
                write_f64(f, v.get())?;
                f.write_str(" : f64")
            }
            Attribute::Str(s) => write_escaped_string(f, s),
            Attribute::Type(t) => write!(f, "{t}"),
            Attribute::Array(items) => {
                f.write_str("[")?;
                for (i, a) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{a}")?;
                }
                f.write_str("]")
            }
            Attribute::Dict(items) => {
                f.write_str("{")?;
                for (i, (k, v)) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write_attr_name(f, k)?;
                    if *v != Attribute::Unit {
                        write!(f, " = {v}")?;
                    }
                }
                f.write_str("}")
            }
            Attribute::Dense(d) => write!(f, "{d}"),
            Attribute::SymbolRef(s) => {
                f.write_str("@")?;
                crate::types::write_sym_name(f, s)
            }
            Attribute::DType(d) => write!(f, "#prim.dtype<{}>", d.mlir_name()),
            Attribute::Device(d) => {
                f.write_str("#prim.device<")?;
                write_escaped_string(f, d)?;
                f.write_str(">")
            }
            Attribute::Opaque { dialect, name, body } => {
                write!(f, "#{dialect}.{name}")?;
                if let Some(b) = body {
                    write!(f, "<{b}>")?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_spell_as_mlir_literals() {
        assert_eq!(Attribute::float(1.0).to_string(), "1.0 : f64");
        assert_eq!(Attribute::float(1e-7).to_string(), "1.0e-7 : f64");
        assert_eq!(Attribute::float(-0.0).to_string(), "-0.0 : f64");
        assert_eq!(Attribute::float(f64::INFINITY).to_string(), "0x7FF0000000000000 : f64");
    }

    #[test]
    fn dense_spelling() {
        let d = DenseAttr::from_f32(&[2, 2], &[1.0, 2.0, 3.0, 4.5]).unwrap();
        assert_eq!(d.to_string(), "dense<[[1.0, 2.0], [3.0, 4.5]]> : tensor<2x2xf32>");
        let s = DenseAttr::from_i64(&[3], &[7, 7, 7]).unwrap();
        assert_eq!(s.to_string(), "dense<7> : tensor<3xi64>");
    }
}
