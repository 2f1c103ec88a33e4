//! Compile-time conversion of attributes (op attributes, schema defaults, constants) to runtime values.

use dialect_prim::kinds::{Attr as PA, Kind as PK, TypeExt as _};
use ir::schema::SchemaType;
use ir::{Attribute, DType, DenseAttr, Type};

use crate::tensor::Tensor;
use crate::value::IValue;

/// Converts a dense attribute to a tensor.
pub(crate) fn dense_to_tensor(d: &DenseAttr) -> Result<Tensor, String> {
    let dims = d.dims();
    let sizes: Vec<usize> = dims.iter().map(|&x| x.max(0) as usize).collect();
    Tensor::from_bytes(d.dtype(), &sizes, d.data()).map_err(|e| e.to_string())
}

/// Converts an attribute passed for a schema argument of type `ty`.
pub(crate) fn attr_for_schema(a: &Attribute, ty: &SchemaType) -> Result<IValue, String> {
    use SchemaType as S;
    let inner = ty.unwrap_optional();
    if dialect_prim::kinds::is_none(a) {
        return Ok(IValue::None);
    }
    Ok(match (a, inner) {
        (Attribute::Int(i), S::ScalarType) => IValue::ScalarType(
            DType::from_scalar_type_code(*i).ok_or_else(|| format!("unsupported ScalarType code {i}"))?,
        ),
        (Attribute::Int(i), S::Layout) => IValue::Layout(*i),
        (Attribute::Int(i), S::MemoryFormat) => IValue::MemoryFormat(*i),
        (Attribute::Int(i), S::Float | S::SymFloat) => IValue::Float(*i as f64),
        (Attribute::Int(i), S::List { elem, size }) => match elem.unwrap_optional() {
            S::Float | S::SymFloat => IValue::FloatList(vec![*i as f64; size.unwrap_or(1)]),
            _ => IValue::IntList(vec![*i; size.unwrap_or(1)]),
        },
        (Attribute::Float(f), S::List { size, .. }) => IValue::FloatList(vec![f.get(); size.unwrap_or(1)]),
        (Attribute::Bool(b), S::List { size, .. }) => IValue::BoolList(vec![*b; size.unwrap_or(1)]),
        (Attribute::Array(items), S::List { elem, .. }) => array(items, Some(elem.unwrap_optional()))?,
        (Attribute::Array(items), _) => array(items, None)?,
        _ => attr_value(a, None)?,
    })
}

fn array(items: &[Attribute], elem: Option<&SchemaType>) -> Result<IValue, String> {
    use SchemaType as S;
    let all = |f: fn(&Attribute) -> bool| items.iter().all(f);
    let want_float = matches!(elem, Some(S::Float | S::SymFloat));
    if !want_float && all(|a| matches!(a, Attribute::Int(_))) && !matches!(elem, Some(S::Bool)) {
        return Ok(IValue::IntList(items.iter().filter_map(Attribute::as_int).collect()));
    }
    if all(|a| matches!(a, Attribute::Int(_) | Attribute::Float(_))) && !items.is_empty() {
        if items.iter().all(|a| matches!(a, Attribute::Int(_))) && !want_float {
            return Ok(IValue::IntList(items.iter().filter_map(Attribute::as_int).collect()));
        }
        return Ok(IValue::FloatList(
            items.iter().map(|a| a.as_number().unwrap_or(0.0)).collect(),
        ));
    }
    if all(|a| matches!(a, Attribute::Bool(_))) {
        return Ok(IValue::BoolList(items.iter().filter_map(Attribute::as_bool).collect()));
    }
    if items.is_empty() {
        return Ok(match elem {
            Some(S::Float | S::SymFloat) => IValue::FloatList(Vec::new()),
            Some(S::Bool) => IValue::BoolList(Vec::new()),
            Some(S::Tensor) => IValue::TensorList(Vec::new()),
            _ => IValue::IntList(Vec::new()),
        });
    }
    let vals = items.iter().map(|a| attr_value(a, None)).collect::<Result<Vec<_>, _>>()?;
    Ok(IValue::List(vals))
}

/// Converts an attribute to a value; `ty`, when known, is the type of the value it becomes.
pub(crate) fn attr_value(a: &Attribute, ty: Option<&Type>) -> Result<IValue, String> {
    match dialect_prim::kinds::attr(a) {
        PA::None => return Ok(IValue::None),
        PA::DType(d) => return Ok(IValue::ScalarType(d)),
        PA::Device(d) => return Ok(IValue::Device(d.into())),
        PA::Other(_) => {}
    }
    Ok(match a {
        Attribute::Unit => IValue::None,
        Attribute::Bool(b) => IValue::Bool(*b),
        Attribute::Int(i) => match ty.map(dialect_prim::kinds::kind) {
            Some(PK::Float) => IValue::Float(*i as f64),
            Some(PK::Bool) => IValue::Bool(*i != 0),
            _ => IValue::Int(*i),
        },
        Attribute::Float(f) => IValue::Float(f.get()),
        Attribute::Str(s) => IValue::Str(s.clone()),
        Attribute::Dense(d) => IValue::Tensor(dense_to_tensor(d)?),
        Attribute::Array(items) => {
            let elem = match ty.map(dialect_prim::kinds::kind) {
                Some(PK::List(e)) => match e.pk() {
                    PK::Float => Some(SchemaType::Float),
                    PK::Bool => Some(SchemaType::Bool),
                    PK::Int => Some(SchemaType::Int),
                    _ => None,
                },
                _ => None,
            };
            if let Some(PK::Tuple(ts)) = ty.map(dialect_prim::kinds::kind) {
                let vals = items
                    .iter()
                    .enumerate()
                    .map(|(i, a)| attr_value(a, ts.get(i)))
                    .collect::<Result<Vec<_>, _>>()?;
                return Ok(IValue::Tuple(vals));
            }
            array(items, elem.as_ref())?
        }
        other => return Err(format!("unsupported {} attribute {other}", other.kind_name())),
    })
}
