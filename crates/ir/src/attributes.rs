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
            DType::F16 | DType::BF16 | DType::C64 | DType::C128 => return None,
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
        let listable = !matches!(self.dtype(), DType::F16 | DType::BF16 | DType::C64 | DType::C128);
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
    Bool(bool),
    /// A 64-bit integer, `3 : i64`.
    Int(i64),
    /// A 64-bit float, `1.5 : f64`, compared and hashed by bits so that every value round-trips.
    Float(FloatBits),
    /// An integer of another builtin width, `3 : i32`, `-1 : i8`, `4 : index`; the value is
    /// kept sign-extended from its width. `i64` values are always [`Attribute::Int`] and `i1`
    /// values [`Attribute::Bool`] ([`Attribute::integer`] chooses).
    SizedInt { value: i64, ty: IntType },
    /// A float of another builtin width, `1.5 : f32`, `0x3C00 : f16`, kept as the bits of that
    /// format so every value round-trips. `f64` values are always [`Attribute::Float`].
    SizedFloat { bits: u32, ty: FloatType },
    Str(Arc<str>),
    Type(Type),
    Array(Arc<[Attribute]>),
    /// A dictionary, kept sorted by key.
    Dict(Arc<[(Arc<str>, Attribute)]>),
    Dense(DenseAttr),
    /// `@name`.
    SymbolRef(Arc<str>),
    /// An attribute of a kind a dialect registered (`Context::register_attr`), with its parameters.
    Dialect(crate::extension::DialectValue),
    /// An attribute of an unregistered dialect, or of one that defines no attribute kinds,
    /// kept as raw text (`#other.shape<2, 3>`).
    Opaque { dialect: Arc<str>, name: Arc<str>, body: Option<Arc<str>> },
}

/// The builtin integer types an integer attribute may have besides `i64` and `i1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IntType {
    I8,
    I16,
    I32,
    /// MLIR's `index`: a 64-bit target-sized integer.
    Index,
}

impl IntType {
    pub fn name(self) -> &'static str {
        match self {
            IntType::I8 => "i8",
            IntType::I16 => "i16",
            IntType::I32 => "i32",
            IntType::Index => "index",
        }
    }

    pub fn bits(self) -> u32 {
        match self {
            IntType::I8 => 8,
            IntType::I16 => 16,
            IntType::I32 => 32,
            IntType::Index => 64,
        }
    }

    /// `value` as this width holds it (sign-extended), when it fits as a signed or unsigned
    /// value of the width (`255 : i8` is `-1 : i8`, as in MLIR's signless integers).
    pub fn wrap(self, value: i128) -> Option<i64> {
        let bits = self.bits();
        let min = -(1i128 << (bits - 1));
        let max = (1i128 << bits) - 1;
        if value < min || value > max {
            return None;
        }
        let shift = 128 - bits;
        Some(((value << shift) >> shift) as i64)
    }
}

/// The builtin float types a float attribute may have besides `f64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FloatType {
    F16,
    BF16,
    F32,
}

impl FloatType {
    pub fn name(self) -> &'static str {
        match self {
            FloatType::F16 => "f16",
            FloatType::BF16 => "bf16",
            FloatType::F32 => "f32",
        }
    }

    /// The value of `bits` in this format, exactly.
    pub fn to_f64(self, bits: u32) -> f64 {
        match self {
            FloatType::F16 => half::f16::from_bits(bits as u16).to_f64(),
            FloatType::BF16 => half::bf16::from_bits(bits as u16).to_f64(),
            FloatType::F32 => f32::from_bits(bits) as f64,
        }
    }

    /// The bits of `v` rounded to this format (to nearest, ties to even).
    pub fn from_f64(self, v: f64) -> u32 {
        match self {
            FloatType::F16 => half::f16::from_f64(v).to_bits() as u32,
            FloatType::BF16 => half::bf16::from_f64(v).to_bits() as u32,
            FloatType::F32 => (v as f32).to_bits(),
        }
    }

    /// Hex digits a bit pattern of this format is written with.
    pub fn hex_digits(self) -> usize {
        match self {
            FloatType::F16 | FloatType::BF16 => 4,
            FloatType::F32 => 8,
        }
    }

    /// Parses a decimal literal into this format, rounding to nearest (f32 in one step, the
    /// 16-bit formats through f64).
    pub fn parse_decimal(self, text: &str) -> Option<u32> {
        match self {
            FloatType::F32 => text.parse::<f32>().ok().map(f32::to_bits),
            FloatType::F16 | FloatType::BF16 => text.parse::<f64>().ok().map(|v| self.from_f64(v)),
        }
    }
}

/// Writes a float of a narrow format: the shortest decimal that reads back as the same bits,
/// or the hex bits for infinities and NaNs.
fn write_sized_float(f: &mut impl fmt::Write, bits: u32, ty: FloatType) -> fmt::Result {
    let v = ty.to_f64(bits);
    if !v.is_finite() {
        return write!(f, "0x{:0width$X}", bits, width = ty.hex_digits());
    }
    let text = match ty {
        FloatType::F32 => format!("{:?}", f32::from_bits(bits)),
        FloatType::F16 => format!("{:?}", half::f16::from_bits(bits as u16)),
        FloatType::BF16 => format!("{:?}", half::bf16::from_bits(bits as u16)),
    };
    let text = mlir_float_literal(&text);
    if ty.parse_decimal(&text) == Some(bits) {
        f.write_str(&text)
    } else {
        write!(f, "0x{:0width$X}", bits, width = ty.hex_digits())
    }
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

    /// An integer of the given builtin width (`None` is `i64`), in its one canonical variant:
    /// `i64` as [`Attribute::Int`], the others as [`Attribute::SizedInt`]. `None` when the
    /// value does not fit the width.
    pub fn integer(value: i128, ty: Option<IntType>) -> Option<Attribute> {
        match ty {
            None => i64::try_from(value).ok().map(Attribute::Int),
            Some(t) => t.wrap(value).map(|value| Attribute::SizedInt { value, ty: t }),
        }
    }

    /// A float of the given narrow format, rounded from `v`.
    pub fn sized_float(v: f64, ty: FloatType) -> Attribute {
        Attribute::SizedFloat { bits: ty.from_f64(v), ty }
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

    /// The value of an integer attribute of any width.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Attribute::Int(i) | Attribute::SizedInt { value: i, .. } => Some(*i),
            _ => None,
        }
    }

    /// The value of a float attribute of any width, exactly.
    pub fn as_float(&self) -> Option<f64> {
        match self {
            Attribute::Float(f) => Some(f.get()),
            Attribute::SizedFloat { bits, ty } => Some(ty.to_f64(*bits)),
            _ => None,
        }
    }

    /// A number, integer or float, as `f64` (scalar arguments such as `other` or `alpha` are
    /// spelled either way).
    pub fn as_number(&self) -> Option<f64> {
        match self {
            Attribute::Int(_) | Attribute::SizedInt { .. } => self.as_int().map(|i| i as f64),
            _ => self.as_float(),
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

    /// The builtin value type a constant holding this attribute has (`i1`, `i64`, `f64`, a
    /// tensor); dialects type their own attributes (`dialect_prim::kinds::constant_type`).
    pub fn value_type(&self) -> Option<Type> {
        Some(match self {
            Attribute::Bool(_) => Type::bool(),
            Attribute::Int(_) => Type::int(),
            Attribute::Float(_) => Type::float(),
            Attribute::Dense(d) => Type::tensor_of(d.tensor_type().clone()),
            _ => return None,
        })
    }

    /// A short name of the attribute's kind, for diagnostics.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Attribute::Unit => "unit",
            Attribute::Bool(_) => "bool",
            Attribute::Int(_) => "integer",
            Attribute::Float(_) => "float",
            Attribute::SizedInt { .. } => "integer",
            Attribute::SizedFloat { .. } => "float",
            Attribute::Str(_) => "string",
            Attribute::Type(_) => "type",
            Attribute::Array(_) => "array",
            Attribute::Dict(_) => "dictionary",
            Attribute::Dense(_) => "dense tensor",
            Attribute::SymbolRef(_) => "symbol reference",
            Attribute::Dialect(_) => "dialect attribute",
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
            Attribute::Bool(b) => write!(f, "{b}"),
            Attribute::Int(i) => write!(f, "{i} : i64"),
            Attribute::Float(v) => {
                write_f64(f, v.get())?;
                f.write_str(" : f64")
            }
            Attribute::SizedInt { value, ty } => write!(f, "{value} : {}", ty.name()),
            Attribute::SizedFloat { bits, ty } => {
                write_sized_float(f, *bits, *ty)?;
                write!(f, " : {}", ty.name())
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
            Attribute::Dialect(v) => {
                f.write_str("#")?;
                v.write_body(f)
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

    #[test]
    fn sized_scalars_spell_with_their_width() {
        assert_eq!(Attribute::integer(255, Some(IntType::I8)).unwrap().to_string(), "-1 : i8");
        assert_eq!(Attribute::integer(256, Some(IntType::I8)), None);
        assert_eq!(Attribute::integer(7, None), Some(Attribute::Int(7)));
        assert_eq!(Attribute::integer(-3, Some(IntType::Index)).unwrap().to_string(), "-3 : index");
        assert_eq!(Attribute::sized_float(1.5, FloatType::F32).to_string(), "1.5 : f32");
        assert_eq!(Attribute::sized_float(0.5, FloatType::F16).to_string(), "0.5 : f16");
        let tenth = Attribute::sized_float(0.1, FloatType::BF16);
        assert_eq!(tenth.as_float(), Some(0.10009765625));
        assert_eq!(Attribute::sized_float(f64::INFINITY, FloatType::BF16).to_string(), "0x7F80 : bf16");
        assert_eq!(Attribute::sized_float(1e30, FloatType::F32).to_string(), "1.0e30 : f32");
    }
}
