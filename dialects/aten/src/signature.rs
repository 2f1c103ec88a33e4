//! Binding an op's operands and attributes to its schema's arguments.
//!
//! Arguments given as attributes are matched by name; the remaining arguments take the operands
//! in order; arguments left over take their schema default (or `None` when optional).

use dialect_prim::kinds::{Kind as PK, TypeExt as _};
use ir::schema::{DefaultValue, FunctionSchema, SchemaType};
use ir::{Attribute, DType, Module, OpId, Type};

/// Where one schema argument's value comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgSource {
    /// Operand `i` of the op.
    Operand(usize),
    /// A constant: an attribute of the op, or the schema default converted to one.
    Const(Attribute),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BindError {
    #[error("has {given} operand(s) but only {max} argument(s) can take one")]
    TooManyOperands { given: usize, max: usize },
    #[error("argument '{0}' is missing and has no default")]
    Missing(String),
    #[error("attribute '{0}' is not an argument of the schema")]
    UnknownAttr(String),
    #[error("argument '{name}' must be a value of type {expected}; an attribute cannot supply it")]
    TensorAttr { name: String, expected: String },
    #[error("default value of argument '{0}' cannot be represented")]
    BadDefault(String),
}

/// Overloads TorchScript picks over a sibling that fits the same arguments as well or better:
/// it tries a name's overloads in registration order, which the schema registry does not keep.
/// Each entry is `(name, chosen overload, passed-over overload)`, as observed in PyTorch 2.15
/// (`float(n)` of an int is `aten::Float.Scalar`, not `aten::Float.int`).
pub const SCRIPT_PRECEDENCE: &[(&str, &str, &str)] = &[("Float", "Scalar", "int")];

/// Attributes an aten op may carry besides its arguments (kept by importers and passes).
pub fn is_metadata_attr(name: &str) -> bool {
    name.contains('.') || name.starts_with('_')
}

/// Binds each schema argument to an operand or a constant; a vararg schema (`format(str
/// self, ...)`) binds its remaining operands after the named arguments.
pub fn bind_args(
    schema: &FunctionSchema,
    m: &Module,
    op: OpId,
) -> Result<Vec<ArgSource>, BindError> {
    for (k, _) in m.attributes(op) {
        if !is_metadata_attr(k) && schema.arg(k).is_none() {
            return Err(BindError::UnknownAttr(k.to_string()));
        }
    }
    let n_operands = m.operands(op).len();
    let mut next = 0;
    let mut out = Vec::with_capacity(schema.args.len());
    for a in &schema.args {
        if let Some(attr) = m.attr(op, &a.name) {
            if matches!(a.ty.unwrap_optional(), SchemaType::Tensor) && *attr != dialect_prim::kinds::none() {
                return Err(BindError::TensorAttr {
                    name: a.name.clone(),
                    expected: a.ty.to_string(),
                });
            }
            out.push(ArgSource::Const(attr.clone()));
        } else if next < n_operands {
            out.push(ArgSource::Operand(next));
            next += 1;
        } else {
            let c = match &a.default {
                Some(d) => default_attribute(d, &a.ty)
                    .ok_or_else(|| BindError::BadDefault(a.name.clone()))?,
                None if matches!(a.ty, SchemaType::Optional(_)) => dialect_prim::kinds::none(),
                None => return Err(BindError::Missing(a.name.clone())),
            };
            out.push(ArgSource::Const(c));
        }
    }
    if schema.is_vararg {
        // The operands past the named arguments are the `...` arguments, in order.
        out.extend((next..n_operands).map(ArgSource::Operand));
        next = n_operands;
    }
    if next < n_operands {
        return Err(BindError::TooManyOperands {
            given: n_operands,
            max: next,
        });
    }
    Ok(out)
}

/// Converts a schema default to an attribute of the argument's type.
pub fn default_attribute(d: &DefaultValue, ty: &SchemaType) -> Option<Attribute> {
    let ty = ty.unwrap_optional();
    Some(match d {
        DefaultValue::None => dialect_prim::kinds::none(),
        DefaultValue::Bool(b) => Attribute::Bool(*b),
        DefaultValue::Int(i) => match ty {
            SchemaType::Float | SchemaType::SymFloat => Attribute::float(*i as f64),
            SchemaType::List { size, .. } => Attribute::ints(&vec![*i; size.unwrap_or(1)]),
            SchemaType::ScalarType => dialect_prim::kinds::dtype(DType::from_scalar_type_code(*i)?),
            _ => Attribute::Int(*i),
        },
        DefaultValue::Float(f) => match ty {
            SchemaType::List { size, .. } => {
                Attribute::array(vec![Attribute::float(*f); size.unwrap_or(1)])
            }
            _ => Attribute::float(*f),
        },
        DefaultValue::Str(s) => Attribute::str(s),
        DefaultValue::List(items) => {
            let elem = match ty {
                SchemaType::List { elem, .. } => elem.as_ref().clone(),
                _ => SchemaType::Any,
            };
            Attribute::array(
                items
                    .iter()
                    .map(|i| default_attribute(i, &elem))
                    .collect::<Option<Vec<_>>>()?,
            )
        }
        DefaultValue::Ident(id) => match id.as_str() {
            "contiguous_format" => Attribute::Int(0),
            "preserve_format" => Attribute::Int(1),
            "channels_last" => Attribute::Int(2),
            "strided" => Attribute::Int(0),
            "mean" => Attribute::Int(1),
            other => dialect_prim::kinds::dtype(DType::from_torch_name(other)?),
        },
    })
}

/// Whether a value of IR type `t` can be passed for schema type `s`.
pub fn value_matches(s: &SchemaType, t: &Type) -> bool {
    use SchemaType as S;
    match (s, t.pk()) {
        (S::Any | S::Var(_), _) => true,
        (_, PK::Any) => true,
        (S::Optional(_), PK::None) => true,
        (S::Optional(inner), PK::Optional(e)) => value_matches(inner, e),
        (S::Optional(inner), _) => value_matches(inner, t),
        (S::Tensor, PK::Tensor(_)) => true,
        (S::Int | S::SymInt | S::ScalarType | S::Layout | S::MemoryFormat, PK::Int) => true,
        (S::Float | S::SymFloat, PK::Float | PK::Int) => true,
        (S::Bool | S::SymBool, PK::Bool) => true,
        (S::Scalar | S::Number, PK::Int | PK::Float | PK::Bool) => true,
        (S::Str, PK::Str) => true,
        (S::Device, PK::Device | PK::Str) => true,
        (S::Generator, PK::None) => true,
        (S::List { elem, .. }, PK::List(e)) => {
            value_matches(elem, e) || e.pk() == PK::Any
        }
        (S::Tuple(items), PK::Tuple(ts)) => {
            items.len() == ts.len() && items.iter().zip(ts).all(|(a, b)| value_matches(a, b))
        }
        _ => false,
    }
}

/// Whether attribute `a` can be passed for schema type `s`.
pub fn attr_matches(s: &SchemaType, a: &Attribute) -> bool {
    use SchemaType as S;
    match (s, a) {
        (S::Any | S::Var(_), _) => true,
        (S::Optional(_), _) if dialect_prim::kinds::is_none(a) => true,
        (S::Optional(inner), _) => attr_matches(inner, a),
        (S::Int | S::SymInt, Attribute::Int(_)) => true,
        (S::Float | S::SymFloat, Attribute::Float(_) | Attribute::Int(_)) => true,
        (S::Bool | S::SymBool, Attribute::Bool(_)) => true,
        (S::Scalar | S::Number, Attribute::Int(_) | Attribute::Float(_) | Attribute::Bool(_)) => {
            true
        }
        (S::Str, Attribute::Str(_)) => true,
        (S::ScalarType, Attribute::Int(_)) => true,
        (S::ScalarType, _) if dialect_prim::kinds::as_dtype(a).is_some() => true,
        (S::Layout | S::MemoryFormat, Attribute::Int(_)) => true,
        (S::Device, Attribute::Str(_)) => true,
        (S::Device, _) if dialect_prim::kinds::as_device(a).is_some() => true,
        // PyTorch takes a list of any length for `int[N]`: N only says that a single int broadcasts.
        (S::List { elem, .. }, Attribute::Array(items)) => {
            items.iter().all(|i| attr_matches(elem, i))
        }
        (
            S::List {
                elem,
                size: Some(_),
            },
            a,
        ) => attr_matches(elem, a),
        (S::Tensor, Attribute::Dense(_)) => true,
        _ => false,
    }
}

/// Whether a result of IR type `t` fits schema return type `s`.
pub fn result_matches(s: &SchemaType, t: &Type) -> bool {
    value_matches(s, t)
}
