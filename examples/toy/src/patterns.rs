//! Toy's canonicalizations, written in the declarative rule language (`pass::drr`) and attached
//! to the ops they are rooted at, so `canonicalize` applies them; the native predicate and
//! builder the rules name are registered here too.

use ir::{Attribute, Context, DenseAttr, OperationState};
use pass::drr::{self, Binding, Natives};
use pass::{CanonicalizationPatterns, RewriteSet};
use std::sync::Arc;

// [doc:rules]
/// The rules, one per line: `name: (match) => result if (condition...) benefit N`.
pub const RULES: &str = r#"
# A transpose undoes a transpose.
transpose-transpose: (toy.transpose (toy.transpose ?x)) => ?x
# Two reshapes are one: the outer one's result type is kept.
reshape-reshape: (toy.reshape (toy.reshape ?x)) => (toy.reshape ?x)
# A reshape to the type it already has does nothing.
reshape-same-type: (toy.reshape ?x) => ?x if (same-type ?x)
# A reshaped constant is a constant of the new shape, built by Rust code.
reshape-constant: (toy.reshape (toy.constant value=?v)) => @reshape-constant ?v \
    if (@small-constant ?v) benefit 2
# Scaling by one does nothing; two scales are one.
scale-one: (toy.scale ?x factor=?f) => ?x if (attr-eq ?f 1.0)
scale-scale: (toy.scale (toy.scale ?x factor=?a) factor=?b) => @merge-scales ?x ?a ?b
# A float tensor added to itself is scaled by two.
add-self: (toy.add ?x ?x) => (toy.scale ?x factor=2.0) if (float ?x)
# A field of a struct built here is the tensor it was built from.
field-of-struct: (toy.field ?s index=?i) => @field-of-struct ?s ?i if (@built-struct ?s)
"#;
// [/doc:rules]

/// Constants up to this many elements are reshaped at compile time; a larger one is reshaped
/// when the program runs, so programs do not grow by a copy of each large constant.
pub const MAX_FOLDED_ELEMENTS: usize = 8;

// [doc:natives]
/// The native functions the rules name.
pub fn natives() -> Natives {
    Natives::new()
        .predicate("small-constant", |_, _, args| {
            args[0].attr().and_then(Attribute::as_dense).is_some_and(|d| d.num_elements() <= MAX_FOLDED_ELEMENTS)
        })
        .builder("reshape-constant", |_, rw, op, args| {
            let Some(value) = args[0].attr().and_then(Attribute::as_dense) else { return Ok(None) };
            let ty = rw.module().value_type(rw.module().results(op)[0]).clone();
            let Some(dims) = ty.as_tensor().and_then(|t| t.static_dims()) else { return Ok(None) };
            let Ok(reshaped) = DenseAttr::new(value.dtype(), &dims, value.data().clone()) else { return Ok(None) };
            let state = OperationState::new(crate::ops::CONSTANT).results([ty]).attr("value", Attribute::Dense(reshaped));
            Ok(Some(vec![rw.create_value(state)?]))
        })
        .predicate("built-struct", |_, m, args| {
            args[0].value().and_then(|v| m.defining_op(v)).is_some_and(|d| m.op_name(d) == crate::ops::STRUCT.name())
        })
        .builder("field-of-struct", |_, rw, _, args| {
            let [Binding::Value(s), Binding::Attr(i)] = args else { return Ok(None) };
            let m = rw.module();
            let Some(def) = m.defining_op(*s) else { return Ok(None) };
            let field = i.as_int().and_then(|i| usize::try_from(i).ok()).and_then(|i| m.operands(def).get(i).copied());
            Ok(field.map(|v| vec![v]))
        })
        .builder("merge-scales", |_, rw, op, args| {
            let [Binding::Value(x), Binding::Attr(a), Binding::Attr(b)] = args else { return Ok(None) };
            let (Some(a), Some(b)) = (a.as_float(), b.as_float()) else { return Ok(None) };
            let ty = rw.module().value_type(rw.module().results(op)[0]).clone();
            let state = OperationState::new(crate::ops::SCALE).operands([*x]).results([ty]).attr("factor", Attribute::float(a * b));
            Ok(Some(vec![rw.create_value(state)?]))
        })
}
// [/doc:natives]

/// The rules compiled against `ctx`, where the toy ops are registered.
pub fn rewrite_set(ctx: &Context) -> Result<RewriteSet, String> {
    let mut set = RewriteSet::new();
    drr::add_rules(&mut set, ctx, "toy/patterns.rs", RULES, &natives()).map_err(|e| e.to_string())?;
    Ok(set)
}

// [doc:attach]
/// Attaches the rules to the ops they are rooted at, for `canonicalize`.
pub fn attach(ctx: &mut Context) -> Result<(), String> {
    let set = Arc::new(rewrite_set(ctx)?);
    for op in [crate::ops::TRANSPOSE, crate::ops::RESHAPE, crate::ops::SCALE, crate::ops::ADD, crate::ops::FIELD] {
        ctx.attach(op, CanonicalizationPatterns(set.clone()));
    }
    Ok(())
}
// [/doc:attach]
