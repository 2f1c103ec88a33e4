//! Verifiers of the prim ops.

use crate::kinds::{Attr as PA, AttrExt as _, Kind as PK, TypeExt as _};
use ir::{Attribute, Context, Module, OpId, Type};

type R = Result<(), String>;

fn types(m: &Module, vals: &[ir::ValueId]) -> Vec<Type> {
    vals.iter().map(|&v| m.value_type(v).clone()).collect()
}

fn list_of(ts: &[Type]) -> String {
    ts.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", ")
}

/// Whether `a` is the value type of constant attribute `a`.
fn attr_has_type(a: &Attribute, t: &Type) -> bool {
    match (a.pa(), t.pk()) {
        (PA::Other(Attribute::Array(items)), PK::List(e)) => items.iter().all(|i| attr_has_type(i, e)),
        (PA::None, PK::Optional(_)) => true,
        (PA::DType(_), PK::Int) => true,
        (_, PK::Optional(e)) => attr_has_type(a, e),
        (PA::Other(Attribute::Str(_)), PK::Str) | (PA::Device(_), PK::Device) => true,
        _ => crate::kinds::constant_type(a).is_some_and(|vt| vt == *t),
    }
}

pub fn constant(_: &Context, m: &Module, op: OpId) -> R {
    let Some(value) = m.attr(op, "value") else { return Err("requires attribute 'value'".into()) };
    let t = m.value_type(m.results(op)[0]);
    if !attr_has_type(value, t) {
        return Err(format!("value {} attribute does not match result type {t}", value.kind_name()));
    }
    Ok(())
}

/// The single block of region `i`, which must take `nargs` arguments.
fn single_block(m: &Module, op: OpId, i: usize, what: &str) -> Result<ir::BlockId, String> {
    let r = m.regions(op)[i];
    match m.region_blocks(r) {
        [b] => Ok(*b),
        blocks => Err(format!("{what} region must have exactly one block, found {}", blocks.len())),
    }
}

fn terminator_operands(m: &Module, b: ir::BlockId) -> Vec<Type> {
    m.last_op(b).map(|t| types(m, m.operands(t))).unwrap_or_default()
}

/// Whether a value of type `a` may stand where type `b` is declared: `a` says everything `b`
/// says and possibly more (a known dtype or size where `b` has none, a static size where `b`
/// has a symbol), as TorchScript lets a branch or an iteration give a subtype of the value it
/// defines. Equal types refine each other.
pub fn type_refines(a: &Type, b: &Type) -> bool {
    if a == b {
        return true;
    }
    match (a.pk(), b.pk()) {
        (_, PK::Any) => true,
        // None, and a value that is present, are both values of an optional type.
        (PK::None, PK::Optional(_)) => true,
        (ak, PK::Optional(y)) if !matches!(ak, PK::Optional(_)) => type_refines(a, y),
        (PK::Tensor(x), PK::Tensor(y)) => {
            let dtype = y.dtype.is_none() || x.dtype == y.dtype;
            let shape = match (&x.shape, &y.shape) {
                (_, None) => true,
                (None, Some(_)) => false,
                (Some(p), Some(q)) => {
                    p.len() == q.len()
                        && p.iter().zip(q).all(|(d, e)| match (d, e) {
                            (_, ir::Dim::Unknown) => true,
                            (ir::Dim::Static(_), ir::Dim::Sym(_)) => true,
                            _ => d == e,
                        })
                }
            };
            dtype && shape
        }
        (PK::List(x), PK::List(y)) | (PK::Optional(x), PK::Optional(y)) => type_refines(x, y),
        (PK::Tuple(xs), PK::Tuple(ys)) => xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| type_refines(x, y)),
        _ => false,
    }
}

fn all_refine(given: &[Type], declared: &[Type]) -> bool {
    given.len() == declared.len() && given.iter().zip(declared).all(|(a, b)| type_refines(a, b))
}

/// `prim.If`: each region yields one value per result, of the result's type or a refinement of
/// it (the result type is what both branches have in common).
pub fn if_op(_: &Context, m: &Module, op: OpId) -> R {
    let c = m.value_type(m.operands(op)[0]);
    if c.pk() != PK::Bool {
        return Err(format!("condition must be i1, but is {c}"));
    }
    let results = types(m, m.results(op));
    for (i, what) in [(0, "then"), (1, "else")] {
        let b = single_block(m, op, i, what)?;
        if !m.block_args(b).is_empty() {
            return Err(format!("{what} region must not take arguments"));
        }
        let got = terminator_operands(m, b);
        if !all_refine(&got, &results) {
            return Err(format!("{what} region yields ({}) but the op returns ({})", list_of(&got), list_of(&results)));
        }
    }
    Ok(())
}

/// `prim.Loop`: the body's carried arguments have the result types; the initial values and the
/// values the body yields have those types or refinements of them (the carried type is what
/// every iteration has in common).
pub fn loop_op(_: &Context, m: &Module, op: OpId) -> R {
    let operands = types(m, m.operands(op));
    if operands[0].pk() != PK::Int {
        return Err(format!("max trip count must be i64, but is {}", operands[0]));
    }
    if operands[1].pk() != PK::Bool {
        return Err(format!("initial condition must be i1, but is {}", operands[1]));
    }
    let carried = &operands[2..];
    let results = types(m, m.results(op));
    if !all_refine(carried, &results) {
        return Err(format!("carried values ({}) must match the results ({})", list_of(carried), list_of(&results)));
    }
    let b = single_block(m, op, 0, "body")?;
    let args = types(m, m.block_args(b));
    if args.first().map(|t| t.pk()) != Some(PK::Int) || args[1..] != results[..] {
        return Err(format!("body block must take (i64, {}), but takes ({})", list_of(&results), list_of(&args)));
    }
    let yielded = terminator_operands(m, b);
    if yielded.first().map(|t| t.pk()) != Some(PK::Bool) || !all_refine(&yielded[1..], &results) {
        return Err(format!("body must yield (i1, {}), but yields ({})", list_of(&results), list_of(&yielded)));
    }
    Ok(())
}

pub fn yield_op(_: &Context, m: &Module, op: OpId) -> R {
    match m.parent_op(op).map(|p| m.op_name(p)) {
        Some(crate::IF) | Some(crate::LOOP) => Ok(()),
        Some(other) => Err(format!("expects parent op 'prim.If' or 'prim.Loop', not '{other}'")),
        None => Err("expects parent op 'prim.If' or 'prim.Loop'".into()),
    }
}

pub fn return_op(_: &Context, m: &Module, op: OpId) -> R {
    match m.parent_op(op).map(|p| m.op_name(p)) {
        Some(crate::FUSION_GROUP) => Ok(()),
        _ => Err("expects parent op 'prim.FusionGroup'".into()),
    }
}

pub fn list_construct(_: &Context, m: &Module, op: OpId) -> R {
    let t = m.value_type(m.results(op)[0]);
    let PK::List(elem) = t.pk() else { return Err(format!("result must be a list, but is {t}")) };
    for (i, &v) in m.operands(op).iter().enumerate() {
        let vt = m.value_type(v);
        // An element may be more refined than the list's element type (a shaped tensor in a
        // list of tensors), as a `prim.If` branch may yield a refinement of the result type.
        let ok = type_refines(vt, elem) || matches!(elem.pk(), PK::Optional(e) if e == vt);
        if !ok {
            return Err(format!("element #{i} has type {vt}, but the list holds {elem}"));
        }
    }
    Ok(())
}

pub fn list_unpack(_: &Context, m: &Module, op: OpId) -> R {
    let t = m.value_type(m.operands(op)[0]);
    let PK::List(elem) = t.pk() else { return Err(format!("operand must be a list, but is {t}")) };
    for (i, &r) in m.results(op).iter().enumerate() {
        if m.value_type(r) != elem {
            return Err(format!("result #{i} has type {}, but the list holds {elem}", m.value_type(r)));
        }
    }
    Ok(())
}

pub fn tuple_construct(_: &Context, m: &Module, op: OpId) -> R {
    let t = m.value_type(m.results(op)[0]);
    let want = Type::tuple(types(m, m.operands(op)));
    if *t != want {
        return Err(format!("result type {t} does not match the operands ({want})"));
    }
    Ok(())
}

pub fn tuple_unpack(_: &Context, m: &Module, op: OpId) -> R {
    let t = m.value_type(m.operands(op)[0]);
    let PK::Tuple(elems) = t.pk() else { return Err(format!("operand must be a tuple, but is {t}")) };
    let results = types(m, m.results(op));
    if *elems != results {
        return Err(format!("results ({}) do not match the tuple's elements ({})", list_of(&results), list_of(elems)));
    }
    Ok(())
}

pub fn tuple_index(_: &Context, m: &Module, op: OpId) -> R {
    let t = m.value_type(m.operands(op)[0]);
    let PK::Tuple(elems) = t.pk() else { return Err(format!("operand must be a tuple, but is {t}")) };
    let i = m.attr(op, "index").and_then(Attribute::as_int).unwrap_or(-1);
    let Some(e) = usize::try_from(i).ok().and_then(|i| elems.get(i)) else {
        return Err(format!("index {i} out of range for a tuple of {} element(s)", elems.len()));
    };
    if m.value_type(m.results(op)[0]) != e {
        return Err(format!("result type must be {e}, the tuple's element #{i}"));
    }
    Ok(())
}

pub fn fusion_group(_: &Context, m: &Module, op: OpId) -> R {
    let b = single_block(m, op, 0, "body")?;
    let operands = types(m, m.operands(op));
    let args = types(m, m.block_args(b));
    if operands != args {
        return Err(format!("body block takes ({}) but the operands are ({})", list_of(&args), list_of(&operands)));
    }
    let results = types(m, m.results(op));
    let got = terminator_operands(m, b);
    if got != results {
        return Err(format!("body returns ({}) but the op's results are ({})", list_of(&got), list_of(&results)));
    }
    if m.last_op(b).map(|t| m.op_name(t)) != Some(crate::RETURN) {
        return Err("body must end with 'prim.Return'".into());
    }
    Ok(())
}

pub fn raise_exception(_: &Context, m: &Module, op: OpId) -> R {
    let t = m.value_type(m.operands(op)[0]);
    if t.pk() != PK::Str {
        return Err(format!("message must be !prim.str, but is {t}"));
    }
    Ok(())
}

pub fn symint_binary(_: &Context, m: &Module, op: OpId) -> R {
    let all: Vec<Type> = types(m, m.operands(op)).into_iter().chain(types(m, m.results(op))).collect();
    if all.iter().any(|t| t.pk() != PK::Int) {
        return Err(format!("operands and result must be i64, found ({})", list_of(&all)));
    }
    Ok(())
}

pub fn symint_compare(_: &Context, m: &Module, op: OpId) -> R {
    let ins = types(m, m.operands(op));
    if ins.iter().any(|t| t.pk() != PK::Int) {
        return Err(format!("operands must be i64, found ({})", list_of(&ins)));
    }
    let r = m.value_type(m.results(op)[0]);
    if r.pk() != PK::Bool {
        return Err(format!("result must be i1, found {r}"));
    }
    Ok(())
}
