//! A check of the overload TorchScript will pick for an emitted call: TorchScript first tries
//! every overload of the name without converting any argument, so a call is only safe when no
//! other overload accepts the emitted arguments exactly as they are. Types here are the
//! TorchScript types of the emitted arguments (a tensor, an `int` literal, a `List[int]`, …).

use ir::schema::{FunctionSchema, SchemaType};

/// The TorchScript type of one emitted argument, as far as overload matching can tell.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Ty {
    Tensor,
    Int,
    Float,
    Bool,
    Str,
    None,
    Device,
    /// `List[T]`.
    List(Box<Ty>),
    /// `Optional[T]`.
    Optional(Box<Ty>),
    /// Anything else (tuples, `Any`): matches only `Any` and type variables.
    Other,
}

impl Ty {
    /// The type of a value of IR type `t`.
    pub(super) fn of(t: &ir::Type) -> Ty {
        use dialect_prim::kinds::Kind as K;
        match dialect_prim::kinds::kind(t) {
            K::Tensor(_) => Ty::Tensor,
            K::Int => Ty::Int,
            K::Float => Ty::Float,
            K::Bool => Ty::Bool,
            K::Str => Ty::Str,
            K::None => Ty::None,
            K::Device => Ty::Device,
            K::List(e) => Ty::List(Box::new(Ty::of(e))),
            K::Optional(e) => Ty::Optional(Box::new(Ty::of(e))),
            _ => Ty::Other,
        }
    }

    /// The type of a value TorchScript makes for the schema type `s` (a literal or an
    /// annotated list written for that argument).
    pub(super) fn of_schema(s: &SchemaType) -> Ty {
        match s {
            SchemaType::Tensor => Ty::Tensor,
            SchemaType::Int | SchemaType::SymInt | SchemaType::ScalarType | SchemaType::Layout | SchemaType::MemoryFormat => Ty::Int,
            SchemaType::Float | SchemaType::SymFloat => Ty::Float,
            SchemaType::Bool | SchemaType::SymBool => Ty::Bool,
            SchemaType::Str => Ty::Str,
            SchemaType::Device => Ty::Device,
            SchemaType::List { elem, .. } => Ty::List(Box::new(Ty::of_schema(elem))),
            SchemaType::Optional(inner) => Ty::Optional(Box::new(Ty::of_schema(inner))),
            _ => Ty::Other,
        }
    }

    /// Whether TorchScript passes a value of this type for `s` without a conversion.
    fn fits(&self, s: &SchemaType) -> bool {
        use SchemaType as S;
        match (self, s) {
            (_, S::Any | S::Var(_)) => true,
            (Ty::None, S::Optional(_) | S::NoneType) => true,
            (Ty::Optional(inner), S::Optional(s)) => inner.fits(s),
            (_, S::Optional(inner)) => self.fits(inner),
            (Ty::Tensor, S::Tensor) => true,
            (Ty::Int, S::Int | S::SymInt | S::ScalarType | S::Layout | S::MemoryFormat | S::Scalar | S::Number) => true,
            (Ty::Float, S::Float | S::SymFloat | S::Scalar | S::Number) => true,
            (Ty::Bool, S::Bool | S::SymBool | S::Scalar | S::Number) => true,
            (Ty::Str, S::Str | S::Dimname) => true,
            (Ty::Device, S::Device) => true,
            // Lists are invariant in TorchScript, but a list of tensors is also taken where
            // optional tensors are expected: count it as fitting, to stay on the safe side.
            (Ty::List(e), S::List { elem, .. }) => match (e.as_ref(), elem.as_ref()) {
                (Ty::Tensor, S::Optional(inner)) if matches!(inner.as_ref(), S::Tensor) => true,
                (e, elem) => Ty::of_schema(elem) == *e || matches!(elem, S::Any | S::Var(_)),
            },
            _ => false,
        }
    }
}

/// One emitted argument: by position or by keyword.
#[derive(Clone, Debug)]
pub(super) struct Given {
    pub keyword: Option<String>,
    pub ty: Ty,
}

/// The argument types through which `schema` accepts the call `given` without converting an
/// argument (in the order of `given`), or `None` when it does not accept it.
fn accepts<'a>(schema: &'a FunctionSchema, given: &[Given]) -> Option<Vec<&'a SchemaType>> {
    let mut used = vec![false; schema.args.len()];
    let mut through = Vec::with_capacity(given.len());
    let mut next = 0;
    for g in given {
        let (i, arg) = match &g.keyword {
            None => schema.args.iter().enumerate().skip(next).find(|(_, a)| !a.kwarg_only)?,
            Some(name) => schema.args.iter().enumerate().find(|(_, a)| &a.name == name)?,
        };
        if used[i] || !g.ty.fits(&arg.ty) {
            return None;
        }
        if g.keyword.is_none() {
            next = i + 1;
        }
        used[i] = true;
        through.push(&arg.ty);
    }
    // An argument left out needs a default (an optional one without a default is required).
    schema.args.iter().zip(&used).all(|(a, &u)| u || a.default.is_some()).then_some(through)
}

/// How generic `t` is: 0 for a concrete type, 1 for a type variable (`t`), 2 for a type that
/// takes values of any kind (`Scalar`, `number`, `Any`); lists as their elements. TorchScript
/// prefers the less generic of two overloads that both fit.
fn generality(t: &SchemaType) -> u8 {
    match t.unwrap_optional() {
        SchemaType::Scalar | SchemaType::Number | SchemaType::Any => 2,
        SchemaType::Var(_) => 1,
        SchemaType::List { elem, .. } => generality(elem),
        _ => 0,
    }
}

/// The other overloads of `ours`'s name among `all` that accept the call as well, but for
/// those that accept it only through more generic types than `ours` (`add(Scalar a, Scalar b)`
/// beside `add.int(int a, int b)`, `len.any(Any[] a)` beside `len.t(t[] a)`), which
/// TorchScript ranks after it.
///
/// `Err` when the call does not fit `ours` itself without conversions: TorchScript would then
/// convert arguments, and which overload that reaches is not known here.
pub(super) fn rivals<'a>(ours: &FunctionSchema, all: &'a [FunctionSchema], given: &[Given]) -> Result<Vec<&'a FunctionSchema>, ()> {
    let mine = accepts(ours, given).ok_or(())?;
    Ok(all
        .iter()
        .filter(|s| s.namespace == ours.namespace && s.name == ours.name && s.overload != ours.overload)
        .filter(|s| match accepts(s, given) {
            None => false,
            Some(theirs) => {
                let loses = mine.iter().zip(&theirs).all(|(m, t)| m == t || generality(t) > generality(m))
                    && mine.iter().zip(&theirs).any(|(m, t)| m != t)
                    || dialect_aten::signature::SCRIPT_PRECEDENCE.contains(&(ours.name.as_str(), ours.overload.as_str(), s.overload.as_str()));
                !loses
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(text: &str) -> FunctionSchema {
        ir::schema::parse_schema(text).unwrap()
    }

    fn pos(ty: Ty) -> Given {
        Given { keyword: None, ty }
    }

    #[test]
    fn exact_fits_and_rivals() {
        let scalar = schema("aten::add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor");
        let tensor = schema("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
        let generic = schema("aten::add(Scalar a, Scalar b) -> Scalar");
        let int = schema("aten::add.int(int a, int b) -> int");
        let all = vec![scalar.clone(), tensor.clone(), generic.clone(), int.clone()];
        // `add(x, 1, 1)` fits `add.Scalar` alone; `add(x, y, alpha=1)` fits `add.Tensor` alone.
        let call = [pos(Ty::Tensor), pos(Ty::Int), pos(Ty::Int)];
        assert!(accepts(&scalar, &call).is_some() && accepts(&tensor, &call).is_none());
        assert!(rivals(&scalar, &all, &call).unwrap().is_empty());
        let call = [pos(Ty::Tensor), pos(Ty::Tensor), Given { keyword: Some("alpha".into()), ty: Ty::Int }];
        assert!(rivals(&tensor, &all, &call).unwrap().is_empty());
        // A keyword-only argument given by position does not fit.
        assert!(accepts(&tensor, &[pos(Ty::Tensor), pos(Ty::Tensor), pos(Ty::Int)]).is_none());
        // Two ints: `add.int` wins over `add(Scalar, Scalar)`, never the other way round.
        let ints = [pos(Ty::Int), pos(Ty::Int)];
        assert!(rivals(&int, &all, &ints).unwrap().is_empty());
        let r = rivals(&generic, &all, &ints).unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].overload, "int");
        // A float where only ints fit: no exact fit at all.
        assert!(rivals(&int, &all, &[pos(Ty::Int), pos(Ty::Float)]).is_err());
        // An optional argument without a default must be given.
        let dim = schema("aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor");
        assert!(accepts(&dim, &[pos(Ty::Tensor)]).is_none());
        assert!(accepts(&dim, &[pos(Ty::Tensor), pos(Ty::None)]).is_some());
        assert!(accepts(&dim, &[pos(Ty::Tensor), pos(Ty::List(Box::new(Ty::Int)))]).is_some());
    }
}
