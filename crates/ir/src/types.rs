//! Types of SSA values: the builtin ones (tensors with dtype and possibly symbolic shape, `i64`,
//! `f64`, `i1`, `none`, tuples, functions) and the kinds dialects define.
//!
//! The tensor type spells an unknown dtype `!prim.any` and names its symbolic sizes in a
//! `#prim.sym<...>` encoding: the one place the core's text borrows prim's names, so that a
//! tensor of unknown dtype or symbolic shape is still legal MLIR that real `mlir-opt` reads.

use crate::dtype::DType;
use std::fmt;
use std::sync::Arc;

/// One dimension of a tensor shape.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    /// A size known when the program is compiled.
    Static(i64),
    /// A named symbolic size (`s0`), or an expression over such names (`2*s0`).
    Sym(Arc<str>),
    /// A size nothing is known about.
    Unknown,
}

impl Dim {
    pub fn sym(name: &str) -> Dim {
        Dim::Sym(name.into())
    }

    pub fn as_static(&self) -> Option<i64> {
        match self {
            Dim::Static(n) => Some(*n),
            _ => None,
        }
    }

    pub fn is_static(&self) -> bool {
        matches!(self, Dim::Static(_))
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Static(n) => write!(f, "{n}"),
            Dim::Sym(s) => f.write_str(s),
            Dim::Unknown => f.write_str("?"),
        }
    }
}

/// A tensor type: the dtype and the shape may each be unknown.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorType {
    pub dtype: Option<DType>,
    pub shape: Option<Vec<Dim>>,
}

impl TensorType {
    pub fn new(dtype: DType, shape: Vec<Dim>) -> TensorType {
        TensorType { dtype: Some(dtype), shape: Some(shape) }
    }

    pub fn static_shape(dtype: DType, dims: &[i64]) -> TensorType {
        TensorType::new(dtype, dims.iter().map(|&d| Dim::Static(d)).collect())
    }

    pub fn unknown() -> TensorType {
        TensorType { dtype: None, shape: None }
    }

    pub fn rank(&self) -> Option<usize> {
        self.shape.as_ref().map(Vec::len)
    }

    /// The sizes, when every dimension is static.
    pub fn static_dims(&self) -> Option<Vec<i64>> {
        self.shape.as_ref()?.iter().map(Dim::as_static).collect()
    }

    pub fn num_elements(&self) -> Option<i64> {
        self.static_dims().map(|d| d.iter().product())
    }
}

/// The kinds of type; a [`Type`] is a shared handle to one of these.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TypeKind {
    Tensor(TensorType),
    /// A TorchScript `int` (and `SymInt`): 64-bit signed, spelled `i64`.
    Int,
    /// A TorchScript `float`: 64-bit, spelled `f64`.
    Float,
    /// A TorchScript `bool`, spelled `i1`.
    Bool,
    /// The type of `None`, spelled `none`.
    None,
    /// A fixed-size heterogeneous tuple, spelled `tuple<A, B>`.
    Tuple(Vec<Type>),
    /// A function type, spelled `(A, B) -> (C)`.
    Function { inputs: Vec<Type>, results: Vec<Type> },
    /// A type of a kind a dialect registered (`Context::register_type`), with its parameters.
    Dialect(crate::extension::DialectValue),
    /// A type of an unregistered dialect, or of one that defines no type kinds, kept as its
    /// dialect, name and raw body (`!other.shape<2, 3>`).
    Opaque { dialect: Arc<str>, name: Arc<str>, body: Option<Arc<str>> },
}

/// A shared, cheaply cloned type. Equality is structural (interned types also compare by pointer first).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Type(Arc<TypeKind>);

impl Type {
    pub fn new(kind: TypeKind) -> Type {
        Type(Arc::new(kind))
    }

    pub fn kind(&self) -> &TypeKind {
        &self.0
    }

    pub fn tensor(dtype: DType, dims: &[i64]) -> Type {
        Type::new(TypeKind::Tensor(TensorType::static_shape(dtype, dims)))
    }

    pub fn tensor_of(t: TensorType) -> Type {
        Type::new(TypeKind::Tensor(t))
    }

    pub fn unknown_tensor() -> Type {
        Type::new(TypeKind::Tensor(TensorType::unknown()))
    }

    pub fn int() -> Type {
        Type::new(TypeKind::Int)
    }

    pub fn float() -> Type {
        Type::new(TypeKind::Float)
    }

    pub fn bool() -> Type {
        Type::new(TypeKind::Bool)
    }

    pub fn none() -> Type {
        Type::new(TypeKind::None)
    }

    pub fn tuple(elems: Vec<Type>) -> Type {
        Type::new(TypeKind::Tuple(elems))
    }

    pub fn function(inputs: Vec<Type>, results: Vec<Type>) -> Type {
        Type::new(TypeKind::Function { inputs, results })
    }

    pub fn as_tensor(&self) -> Option<&TensorType> {
        match self.kind() {
            TypeKind::Tensor(t) => Some(t),
            _ => None,
        }
    }

    pub fn is_tensor(&self) -> bool {
        self.as_tensor().is_some()
    }

    pub fn ptr_eq(a: &Type, b: &Type) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }
}

impl fmt::Debug for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl From<TensorType> for Type {
    fn from(t: TensorType) -> Type {
        Type::tensor_of(t)
    }
}

/// Writes `name` plainly when it is a bare identifier, quoted otherwise.
pub(crate) fn write_sym_name(f: &mut impl fmt::Write, name: &str) -> fmt::Result {
    let bare = !name.is_empty()
        && name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if bare { f.write_str(name) } else { crate::attributes::write_escaped_string(f, name) }
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("tensor<")?;
        match &self.shape {
            None => f.write_str("*x")?,
            Some(dims) => {
                for d in dims {
                    match d {
                        Dim::Static(n) => write!(f, "{n}x")?,
                        Dim::Sym(_) | Dim::Unknown => f.write_str("?x")?,
                    }
                }
            }
        }
        match self.dtype {
            Some(d) => f.write_str(d.mlir_name())?,
            None => f.write_str("!prim.any")?,
        }
        // Symbolic names ride in an encoding attribute so the spelling stays legal MLIR.
        if let Some(dims) = &self.shape {
            if dims.iter().any(|d| matches!(d, Dim::Sym(_))) {
                f.write_str(", #prim.sym<")?;
                let mut first = true;
                for d in dims.iter().filter(|d| !d.is_static()) {
                    if !first {
                        f.write_str(", ")?;
                    }
                    first = false;
                    match d {
                        Dim::Sym(s) => write_sym_name(f, s)?,
                        _ => f.write_str("?")?,
                    }
                }
                f.write_str(">")?;
            }
        }
        f.write_str(">")
    }
}

fn write_list(f: &mut fmt::Formatter<'_>, types: &[Type]) -> fmt::Result {
    for (i, t) in types.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{t}")?;
    }
    Ok(())
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind() {
            TypeKind::Tensor(t) => write!(f, "{t}"),
            TypeKind::Int => f.write_str("i64"),
            TypeKind::Float => f.write_str("f64"),
            TypeKind::Bool => f.write_str("i1"),
            TypeKind::None => f.write_str("none"),
            TypeKind::Tuple(elems) => {
                f.write_str("tuple<")?;
                write_list(f, elems)?;
                f.write_str(">")
            }
            TypeKind::Function { inputs, results } => {
                f.write_str("(")?;
                write_list(f, inputs)?;
                f.write_str(") -> ")?;
                if results.len() == 1 && !matches!(results[0].kind(), TypeKind::Function { .. }) {
                    write!(f, "{}", results[0])
                } else {
                    f.write_str("(")?;
                    write_list(f, results)?;
                    f.write_str(")")
                }
            }
            TypeKind::Dialect(v) => {
                f.write_str("!")?;
                v.write_body(f)
            }
            TypeKind::Opaque { dialect, name, body } => {
                write!(f, "!{dialect}.{name}")?;
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
    fn tensor_spelling() {
        let t = TensorType::new(DType::F32, vec![Dim::sym("s0"), Dim::Static(4), Dim::Unknown]);
        assert_eq!(t.to_string(), "tensor<?x4x?xf32, #prim.sym<s0, ?>>");
        assert_eq!(TensorType::unknown().to_string(), "tensor<*x!prim.any>");
        let e = TensorType::new(DType::I64, vec![Dim::sym("2*s0")]);
        assert_eq!(e.to_string(), "tensor<?xi64, #prim.sym<\"2*s0\">>");
    }
}
