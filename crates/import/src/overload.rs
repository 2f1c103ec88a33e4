//! TorchScript's overload resolution: which `aten::<name>` schema a call's argument types
//! select, shared by the IR text importer and the frontend that compiles archives' code.

use dialect_prim::kinds::{Kind as PK, TypeExt as _};
use ir::Type;
use ir::schema::{FunctionSchema, SchemaType};

/// How well a value of IR type `t` fits schema type `s`: `None` when it does not, else a cost
/// (0 for an exact match).
pub(crate) fn match_cost(s: &SchemaType, t: &Type) -> Option<u32> {
    use SchemaType as S;
    if !dialect_aten::signature::value_matches(s, t) {
        return None;
    }
    Some(match (s, t.pk()) {
        (_, PK::Any) => 3,
        // A type variable binds to the value's type exactly; `Any` takes anything.
        (S::Var(_), _) => 1,
        (S::Any, _) => 3,
        (S::Optional(inner), k) if !matches!(k, PK::None | PK::Optional(_)) => {
            match_cost(inner, t)?
        }
        (S::Scalar | S::Number, _) => 1,
        (S::Float | S::SymFloat, PK::Int) => 2,
        (S::Device, PK::Str) => 2,
        (S::List { elem, .. }, PK::List(e)) => match_cost(elem, e).unwrap_or(3),
        _ => 0,
    })
}

/// The schema of `aten::<name>` these arguments select, and the schema position of each given
/// argument (positional first, then keyword). Among the schemas they fit, the one needing the
/// fewest implicit conversions wins; ties go to the first registered. TorchScript's IR text
/// passes keyword-only arguments positionally too (`keyword_only_positionally`); the
/// frontend's calls name them.
pub(crate) fn resolve(
    name: &str,
    types: &[Type],
    kwargs: &[(String, Type)],
    keyword_only_positionally: bool,
) -> Result<(&'static FunctionSchema, Vec<usize>), String> {
    let mut best: Option<(u32, &'static FunctionSchema, Vec<usize>)> = None;
    let mut any = false;
    'schemas: for s in dialect_aten::schemas().iter().filter(|s| s.name == name && s.namespace == "aten") {
        any = true;
        let positional = if keyword_only_positionally { s.args.len() } else { s.args.iter().take_while(|a| !a.kwarg_only).count() };
        if types.len() > positional && !s.is_vararg {
            continue;
        }
        let mut slots: Vec<usize> = (0..types.len().min(positional)).collect();
        for (k, _) in kwargs {
            match s.arg(k) {
                Some((i, _)) if !slots.contains(&i) => slots.push(i),
                _ => continue 'schemas,
            }
        }
        for (i, a) in s.args.iter().enumerate() {
            if !slots.contains(&i) && a.default.is_none() && !matches!(a.ty, SchemaType::Optional(_)) {
                continue 'schemas;
            }
        }
        let mut cost = 0;
        for (slot, t) in slots.iter().zip(types.iter().chain(kwargs.iter().map(|(_, t)| t))) {
            match match_cost(&s.args[*slot].ty, t) {
                Some(c) => cost += c,
                None => continue 'schemas,
            }
        }
        if best.as_ref().is_none_or(|(c, _, _)| cost < *c) {
            best = Some((cost, s, slots));
        }
    }
    // Where TorchScript's registration order puts another fitting overload first, it wins.
    if let Some((_, chosen, slots)) = &best
        && let Some(&(_, first, _)) = dialect_aten::signature::SCRIPT_PRECEDENCE.iter().find(|(n, _, passed)| *n == name && chosen.overload == *passed)
        && let Some(s) = dialect_aten::schemas().iter().find(|s| s.namespace == "aten" && s.name == name && s.overload == first)
        && slots.iter().zip(types.iter().chain(kwargs.iter().map(|(_, t)| t))).all(|(i, t)| s.args.get(*i).is_some_and(|a| match_cost(&a.ty, t).is_some()))
    {
        let slots = slots.clone();
        return Ok((s, slots));
    }
    match best {
        Some((_, s, slots)) => Ok((s, slots)),
        None if !any => Err(format!("unknown operator `aten::{name}`")),
        None => {
            let mut given: Vec<String> = types.iter().map(Type::to_string).collect();
            given.extend(kwargs.iter().map(|(k, t)| format!("{k}={t}")));
            Err(format!("no overload of `aten::{name}` takes ({})", given.join(", ")))
        }
    }
}
