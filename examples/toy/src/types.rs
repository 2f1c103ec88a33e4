//! Toy's own type and attribute, defined through the context's hooks: `!toy.struct<A, B>`, a
//! fixed set of tensors carried as one value, and `#toy.shape<2x3>`, a static shape.
//!
//! Each kind is a `KindDef`: a parse hook reading what follows `!toy.struct` / `#toy.shape`, a
//! print hook writing it back, and a verifier. Values keep their definition, so they print
//! anywhere; the context interns the ones it parses.

use ir::{Attribute, Context, DialectParser, Diagnostic, KindDef, Type, print_angle_list};
use std::fmt;

// [doc:struct-type]
/// `!toy.struct<tensor<2xf64>, tensor<3xf64>>`: the field types, at least one, all tensors.
fn parse_struct(p: &mut DialectParser<'_, '_>) -> Result<Vec<Attribute>, Diagnostic> {
    p.parse_angle_list(|p| Ok(Attribute::Type(p.parse_type()?)))
}

fn verify_struct(params: &[Attribute]) -> Result<(), String> {
    if params.is_empty() {
        return Err("a struct has at least one field".into());
    }
    match params.iter().find(|p| !p.as_type().is_some_and(Type::is_tensor)) {
        Some(p) => Err(format!("fields are tensors, found {p}")),
        None => Ok(()),
    }
}

/// The definition of `!toy.struct`.
pub fn struct_def() -> KindDef {
    KindDef::new(crate::DIALECT, "struct", parse_struct, print_angle_list)
        .summary("A fixed set of tensors carried as one value.")
        .verifier(verify_struct)
}
// [/doc:struct-type]

// [doc:shape-attr]
/// `#toy.shape<2x3>`: static sizes, written as a tensor type writes them.
fn parse_shape(p: &mut DialectParser<'_, '_>) -> Result<Vec<Attribute>, Diagnostic> {
    p.expect("<")?;
    let dims = p.parse_dimension_list()?;
    p.expect(">")?;
    Ok(dims.into_iter().map(Attribute::Int).collect())
}

fn print_shape(params: &[Attribute], f: &mut dyn fmt::Write) -> fmt::Result {
    let dims: Vec<String> = params.iter().map(|d| d.as_int().map_or("?".into(), |d| d.to_string())).collect();
    write!(f, "<{}>", dims.join("x"))
}

fn verify_shape(params: &[Attribute]) -> Result<(), String> {
    match params.iter().find(|d| d.as_int().is_none_or(|d| d < 0)) {
        Some(d) => Err(format!("sizes are non-negative integers, found {d}")),
        None => Ok(()),
    }
}

/// The definition of `#toy.shape`.
pub fn shape_def() -> KindDef {
    KindDef::new(crate::DIALECT, "shape", parse_shape, print_shape)
        .summary("A static shape.")
        .verifier(verify_shape)
}
// [/doc:shape-attr]

/// Registers toy's type and attribute kinds (the dialect must be registered first).
pub fn register(ctx: &mut Context) -> Result<(), String> {
    ctx.register_type(struct_def()).map_err(|e| e.to_string())?;
    ctx.register_attr(shape_def()).map_err(|e| e.to_string())?;
    Ok(())
}

// [doc:accessors]
/// The field types of a `!toy.struct`.
pub fn struct_fields(t: &Type) -> Option<Vec<Type>> {
    t.dialect_params(crate::DIALECT, "struct")?.iter().map(|p| p.as_type().cloned()).collect()
}

/// The sizes of a `#toy.shape`.
pub fn shape_dims(a: &Attribute) -> Option<Vec<i64>> {
    a.dialect_params(crate::DIALECT, "shape")?.iter().map(Attribute::as_int).collect()
}

/// `!toy.struct<fields...>` built in code, checked by the kind's verifier.
pub fn struct_type(ctx: &Context, fields: Vec<Type>) -> Result<Type, String> {
    let def = ctx.type_def(crate::DIALECT, "struct").ok_or("the toy dialect is not registered")?;
    Type::dialect(def, fields.into_iter().map(Attribute::Type).collect())
}
// [/doc:accessors]
