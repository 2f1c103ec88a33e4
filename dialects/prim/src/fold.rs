//! Folders of the prim ops: SymInt arithmetic and comparisons on constants, algebraic identities
//! on integers, and tuple indexing of a tuple built in place; plus the constant materializer.
//!
//! The folders do not depend on any pass crate: a folder gets the constant operands (the `value`
//! attribute of each operand's constant definer, `None` where not constant) and returns one
//! [`Folded`] per result. The pass crates adapt them to their own fold registries.

use crate::kinds::{Attr as PA, AttrExt as _, Kind as PK, TypeExt as _};
use crate::ops::{CONSTANT, TUPLE_CONSTRUCT, TUPLE_INDEX};
use ir::{Attribute, Context, Location, Module, OpId, OperationState, Type, ValueId};

/// What one result of a folded op becomes.
#[derive(Clone, Debug, PartialEq)]
pub enum Folded {
    /// A constant with this value.
    Const(Attribute),
    /// An existing value.
    Value(ValueId),
}

/// The op names that have a folder in this module.
pub const FOLDABLE: [&str; 13] = [
    crate::ADD,
    crate::SUB,
    crate::MUL,
    crate::FLOORDIV,
    crate::MOD,
    crate::MAX,
    crate::EQ,
    crate::NE,
    crate::LT,
    crate::LE,
    crate::GT,
    crate::GE,
    TUPLE_INDEX,
];

/// Folds a prim op, or returns `None` when it does not fold.
pub fn fold(_ctx: &Context, m: &Module, op: OpId, consts: &[Option<Attribute>]) -> Option<Vec<Folded>> {
    if !m.contains_op(op) {
        return None;
    }
    let name = m.op_name(op);
    if name == TUPLE_INDEX {
        return fold_tuple_index(m, op);
    }
    let operands = m.operands(op);
    if operands.len() != 2 || consts.len() != 2 {
        return None;
    }
    let (a, b) = (consts[0].as_ref().and_then(Attribute::as_int), consts[1].as_ref().and_then(Attribute::as_int));
    if let (Some(a), Some(b)) = (a, b) {
        let value = match name {
            crate::ADD => Attribute::Int(a.checked_add(b)?),
            crate::SUB => Attribute::Int(a.checked_sub(b)?),
            crate::MUL => Attribute::Int(a.checked_mul(b)?),
            crate::FLOORDIV => Attribute::Int(floordiv(a, b)?),
            crate::MOD => Attribute::Int(python_mod(a, b)?),
            crate::MAX => Attribute::Int(a.max(b)),
            crate::EQ => Attribute::Bool(a == b),
            crate::NE => Attribute::Bool(a != b),
            crate::LT => Attribute::Bool(a < b),
            crate::LE => Attribute::Bool(a <= b),
            crate::GT => Attribute::Bool(a > b),
            crate::GE => Attribute::Bool(a >= b),
            _ => return None,
        };
        return Some(vec![Folded::Const(value)]);
    }
    // Identities: integers are immutable, so returning an operand is always exact.
    let (x, y) = (operands[0], operands[1]);
    let same = x == y;
    let folded = match (name, a, b) {
        (crate::ADD, _, Some(0)) | (crate::SUB, _, Some(0)) | (crate::MUL, _, Some(1)) | (crate::FLOORDIV, _, Some(1)) => {
            Folded::Value(x)
        }
        (crate::ADD, Some(0), _) | (crate::MUL, Some(1), _) => Folded::Value(y),
        (crate::MUL, _, Some(0)) | (crate::MUL, Some(0), _) => Folded::Const(Attribute::Int(0)),
        (crate::MOD, _, Some(1)) | (crate::MOD, _, Some(-1)) => Folded::Const(Attribute::Int(0)),
        (crate::SUB, _, _) if same => Folded::Const(Attribute::Int(0)),
        (crate::MAX, _, _) if same => Folded::Value(x),
        (crate::EQ | crate::LE | crate::GE, _, _) if same => Folded::Const(Attribute::Bool(true)),
        (crate::NE | crate::LT | crate::GT, _, _) if same => Folded::Const(Attribute::Bool(false)),
        _ => return None,
    };
    Some(vec![folded])
}

/// Python's `//` on integers: rounds toward negative infinity; `None` on division by zero or overflow.
pub fn floordiv(a: i64, b: i64) -> Option<i64> {
    let q = a.checked_div(b)?;
    let r = a.checked_rem(b)?;
    Some(if r != 0 && ((r < 0) != (b < 0)) { q - 1 } else { q })
}

/// Python's `%` on integers: the sign of the divisor; `None` on division by zero.
pub fn python_mod(a: i64, b: i64) -> Option<i64> {
    let r = a.checked_rem(b)?;
    Some(if r != 0 && ((r < 0) != (b < 0)) { r + b } else { r })
}

/// `prim.TupleIndex(prim.TupleConstruct(...))` is the indexed element.
fn fold_tuple_index(m: &Module, op: OpId) -> Option<Vec<Folded>> {
    let tuple = *m.operands(op).first()?;
    let def = m.defining_op(tuple)?;
    if m.op_name(def) != TUPLE_CONSTRUCT {
        return None;
    }
    let i = usize::try_from(m.attr(op, "index")?.as_int()?).ok()?;
    let elem = *m.operands(def).get(i)?;
    let result = *m.results(op).first()?;
    (m.value_type(elem) == m.value_type(result)).then(|| vec![Folded::Value(elem)])
}

/// Whether a constant attribute can be the value of a `prim.Constant` of type `ty`.
pub fn constant_fits(value: &Attribute, ty: &Type) -> bool {
    match (value.pa(), ty.pk()) {
        (PA::None, PK::None | PK::Optional(_)) => true,
        (PA::DType(_), PK::Int) => true,
        (PA::Other(Attribute::Str(_)), PK::Str) | (PA::Device(_), PK::Device) => true,
        (PA::Other(Attribute::Array(items)), PK::List(e)) => items.iter().all(|i| constant_fits(i, e)),
        (_, PK::Optional(e)) => constant_fits(value, e),
        _ => crate::kinds::constant_type(value).is_some_and(|t| t == *ty),
    }
}

/// Builds `prim.Constant` holding `value` with result type `ty`, or `None` when the value cannot
/// have that type (a dense tensor whose type differs from a dynamically shaped result, say).
pub fn materialize_constant(_ctx: &Context, value: &Attribute, ty: &Type, loc: &Location) -> Option<OperationState> {
    if !constant_fits(value, ty) {
        return None;
    }
    Some(OperationState::new(CONSTANT).results([ty.clone()]).attr("value", value.clone()).loc(loc.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_division() {
        assert_eq!(floordiv(7, 2), Some(3));
        assert_eq!(floordiv(-7, 2), Some(-4));
        assert_eq!(floordiv(7, -2), Some(-4));
        assert_eq!(floordiv(1, 0), None);
        assert_eq!(floordiv(i64::MIN, -1), None);
        assert_eq!(python_mod(-7, 2), Some(1));
        assert_eq!(python_mod(7, -2), Some(-1));
        assert_eq!(python_mod(7, 0), None);
    }
}
