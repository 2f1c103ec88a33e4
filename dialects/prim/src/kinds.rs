//! The prim dialect's types and attributes, defined through the context's type and attribute
//! hooks like any user dialect's: `!prim.str`, `!prim.device`, `!prim.any`, `!prim.list<T>`,
//! `!prim.optional<T>`, `#prim.none`, `#prim.dtype<f32>` and `#prim.device<"cpu">`.
//!
//! Each kind's definition is built once per process and shared by every context, so values
//! made here without a context ([`list`], [`dtype`], …) are the same as the ones the parser
//! makes. [`kind`] views a type with the prim kinds as variants beside the builtin ones, and
//! [`attr`] views an attribute the same way, so code can match on either.

use ir::{Attribute, DType, DialectParser, DialectValue, Diagnostic, KindDef, TensorType, Type, TypeKind};
use std::fmt;
use std::sync::{Arc, LazyLock};

fn no_params(_: &mut DialectParser<'_, '_>) -> Result<Vec<Attribute>, Diagnostic> {
    Ok(Vec::new())
}

fn print_nothing(_: &[Attribute], _: &mut dyn fmt::Write) -> fmt::Result {
    Ok(())
}

/// `<T>`: one type parameter.
fn parse_one_type(p: &mut DialectParser<'_, '_>) -> Result<Vec<Attribute>, Diagnostic> {
    p.expect("<")?;
    let t = p.parse_type()?;
    p.expect(">")?;
    Ok(vec![Attribute::Type(t)])
}

fn print_one_type(params: &[Attribute], f: &mut dyn fmt::Write) -> fmt::Result {
    match params {
        [Attribute::Type(t)] => write!(f, "<{t}>"),
        _ => Err(fmt::Error),
    }
}

fn verify_one_type(params: &[Attribute]) -> Result<(), String> {
    match params {
        [Attribute::Type(_)] => Ok(()),
        _ => Err("takes one type parameter".into()),
    }
}

/// `<f32>`: a dtype by its MLIR element-type name.
fn parse_dtype(p: &mut DialectParser<'_, '_>) -> Result<Vec<Attribute>, Diagnostic> {
    p.expect("<")?;
    let at = p.mark();
    let mut name = p.parse_keyword()?;
    if name == "complex" && p.eat("<") {
        // `complex<f32>`: the complex dtype spelled with its part type.
        let part = p.parse_keyword()?;
        p.expect(">")?;
        name = format!("complex<{part}>");
    }
    let d = DType::from_mlir_name(&name).ok_or_else(|| p.error_at(at, format!("unknown dtype '{name}'")))?;
    p.expect(">")?;
    Ok(vec![Attribute::Str(d.mlir_name().into())])
}

fn print_dtype(params: &[Attribute], f: &mut dyn fmt::Write) -> fmt::Result {
    match params {
        [Attribute::Str(s)] => write!(f, "<{s}>"),
        _ => Err(fmt::Error),
    }
}

fn verify_dtype(params: &[Attribute]) -> Result<(), String> {
    match params {
        [Attribute::Str(s)] if DType::from_mlir_name(s).is_some() => Ok(()),
        _ => Err("takes one dtype name".into()),
    }
}

/// `<"cpu">`: a device string.
fn parse_device(p: &mut DialectParser<'_, '_>) -> Result<Vec<Attribute>, Diagnostic> {
    p.expect("<")?;
    let s = p.parse_string()?;
    p.expect(">")?;
    Ok(vec![Attribute::Str(s.into())])
}

fn print_device(params: &[Attribute], f: &mut dyn fmt::Write) -> fmt::Result {
    match params {
        [s @ Attribute::Str(_)] => write!(f, "<{s}>"),
        _ => Err(fmt::Error),
    }
}

fn verify_device(params: &[Attribute]) -> Result<(), String> {
    match params {
        [Attribute::Str(_)] => Ok(()),
        _ => Err("takes one device string".into()),
    }
}

/// A kind of the prim dialect; `verify` checks the parameters of kinds that have any.
fn def(
    name: &str,
    summary: &str,
    parse: ir::extension::ParseParamsFn,
    print: ir::extension::PrintParamsFn,
    verify: Option<ir::extension::VerifyParamsFn>,
) -> Arc<KindDef> {
    let mut d = KindDef::new(crate::DIALECT, name, parse, print).summary(summary);
    d.verify = verify;
    Arc::new(d)
}

static STR_T: LazyLock<Arc<KindDef>> =
    LazyLock::new(|| def("str", "A string (TorchScript `str`).", no_params, print_nothing, None));
static DEVICE_T: LazyLock<Arc<KindDef>> =
    LazyLock::new(|| def("device", "A device (TorchScript `Device`).", no_params, print_nothing, None));
static ANY_T: LazyLock<Arc<KindDef>> =
    LazyLock::new(|| def("any", "A value of any type (TorchScript `Any`).", no_params, print_nothing, None));
static LIST_T: LazyLock<Arc<KindDef>> = LazyLock::new(|| {
    def("list", "A homogeneous list (TorchScript `List[T]`).", parse_one_type, print_one_type, Some(verify_one_type))
});
static OPTIONAL_T: LazyLock<Arc<KindDef>> = LazyLock::new(|| {
    def("optional", "`T` or None (TorchScript `Optional[T]`).", parse_one_type, print_one_type, Some(verify_one_type))
});
static NONE_A: LazyLock<Arc<KindDef>> =
    LazyLock::new(|| def("none", "Python's `None` as an argument value.", no_params, print_nothing, None));
static DTYPE_A: LazyLock<Arc<KindDef>> = LazyLock::new(|| {
    def("dtype", "A dtype (`torch.float32` is `#prim.dtype<f32>`).", parse_dtype, print_dtype, Some(verify_dtype))
});
static DEVICE_A: LazyLock<Arc<KindDef>> = LazyLock::new(|| {
    def("device", "A device (`#prim.device<\"cpu\">`).", parse_device, print_device, Some(verify_device))
});

/// Registers the prim type and attribute kinds in a context (the dialect must be registered).
pub fn register(ctx: &mut ir::Context) {
    for d in [&*STR_T, &*DEVICE_T, &*ANY_T, &*LIST_T, &*OPTIONAL_T] {
        // Each kind is registered once per context; a repeat registration is the only failure.
        let _ = ctx.register_shared_type(d);
    }
    for d in [&*NONE_A, &*DTYPE_A, &*DEVICE_A] {
        let _ = ctx.register_shared_attr(d);
    }
}

fn trusted(def: &Arc<KindDef>, params: Vec<Attribute>) -> DialectValue {
    DialectValue::trusted(def, params)
}

/// `!prim.str`.
pub fn str_type() -> Type {
    Type::new(TypeKind::Dialect(trusted(&STR_T, Vec::new())))
}

/// `!prim.device`.
pub fn device_type() -> Type {
    Type::new(TypeKind::Dialect(trusted(&DEVICE_T, Vec::new())))
}

/// `!prim.any`.
pub fn any_type() -> Type {
    Type::new(TypeKind::Dialect(trusted(&ANY_T, Vec::new())))
}

/// `!prim.list<elem>`.
pub fn list(elem: Type) -> Type {
    Type::new(TypeKind::Dialect(trusted(&LIST_T, vec![Attribute::Type(elem)])))
}

/// `!prim.optional<elem>`.
pub fn optional(elem: Type) -> Type {
    Type::new(TypeKind::Dialect(trusted(&OPTIONAL_T, vec![Attribute::Type(elem)])))
}

/// `#prim.none`.
pub fn none() -> Attribute {
    Attribute::Dialect(trusted(&NONE_A, Vec::new()))
}

/// `#prim.dtype<d>`.
pub fn dtype(d: DType) -> Attribute {
    Attribute::Dialect(trusted(&DTYPE_A, vec![Attribute::Str(d.mlir_name().into())]))
}

/// `#prim.device<"name">`.
pub fn device(name: &str) -> Attribute {
    Attribute::Dialect(trusted(&DEVICE_A, vec![Attribute::Str(name.into())]))
}

/// A type seen with the prim kinds as variants beside the builtin ones.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind<'a> {
    Tensor(&'a TensorType),
    Int,
    Float,
    Bool,
    None,
    Tuple(&'a [Type]),
    Function { inputs: &'a [Type], results: &'a [Type] },
    Str,
    Device,
    Any,
    List(&'a Type),
    Optional(&'a Type),
    /// A type of another dialect, registered or opaque.
    Other,
}

fn type_param(v: &DialectValue) -> Option<&Type> {
    match v.params() {
        [Attribute::Type(t)] => Some(t),
        _ => None,
    }
}

/// The kind of `t`, prim kinds included.
pub fn kind(t: &Type) -> Kind<'_> {
    match t.kind() {
        TypeKind::Tensor(tt) => Kind::Tensor(tt),
        TypeKind::Int => Kind::Int,
        TypeKind::Float => Kind::Float,
        TypeKind::Bool => Kind::Bool,
        TypeKind::None => Kind::None,
        TypeKind::Tuple(items) => Kind::Tuple(items),
        TypeKind::Function { inputs, results } => Kind::Function { inputs, results },
        TypeKind::Dialect(v) if v.dialect() == crate::DIALECT => match (v.name(), type_param(v)) {
            ("str", _) => Kind::Str,
            ("device", _) => Kind::Device,
            ("any", _) => Kind::Any,
            ("list", Some(e)) => Kind::List(e),
            ("optional", Some(e)) => Kind::Optional(e),
            _ => Kind::Other,
        },
        _ => Kind::Other,
    }
}

/// Views types with the prim kinds: `t.pk()` is [`kind`]`(t)`.
pub trait TypeExt {
    fn pk(&self) -> Kind<'_>;
}

impl TypeExt for Type {
    fn pk(&self) -> Kind<'_> {
        kind(self)
    }
}

/// The element type of a `!prim.list`.
pub fn as_list(t: &Type) -> Option<&Type> {
    match kind(t) {
        Kind::List(e) => Some(e),
        _ => None,
    }
}

/// The element type of a `!prim.optional`.
pub fn as_optional(t: &Type) -> Option<&Type> {
    match kind(t) {
        Kind::Optional(e) => Some(e),
        _ => None,
    }
}

/// An attribute seen with the prim kinds as variants; other attributes are `Other`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Attr<'a> {
    None,
    DType(DType),
    Device(&'a str),
    Other(&'a Attribute),
}

/// The prim kind of `a`, if it has one.
pub fn attr(a: &Attribute) -> Attr<'_> {
    let Attribute::Dialect(v) = a else { return Attr::Other(a) };
    if v.dialect() != crate::DIALECT {
        return Attr::Other(a);
    }
    match (v.name(), v.params()) {
        ("none", []) => Attr::None,
        ("dtype", [Attribute::Str(s)]) => DType::from_mlir_name(s).map_or(Attr::Other(a), Attr::DType),
        ("device", [Attribute::Str(s)]) => Attr::Device(s),
        _ => Attr::Other(a),
    }
}

/// Whether `a` is `#prim.none`.
pub fn is_none(a: &Attribute) -> bool {
    matches!(attr(a), Attr::None)
}

/// The dtype of a `#prim.dtype`.
pub fn as_dtype(a: &Attribute) -> Option<DType> {
    match attr(a) {
        Attr::DType(d) => Some(d),
        _ => None,
    }
}

/// The name of a `#prim.device`.
pub fn as_device(a: &Attribute) -> Option<&str> {
    match attr(a) {
        Attr::Device(d) => Some(d),
        _ => None,
    }
}

/// Views attributes with the prim kinds: `a.pa()` is [`attr`]`(a)`.
pub trait AttrExt {
    fn pa(&self) -> Attr<'_>;
}

impl AttrExt for Attribute {
    fn pa(&self) -> Attr<'_> {
        attr(self)
    }
}

/// The type a constant holding `a` has (`prim.Constant`'s result type): the builtin value
/// types, `!prim.str` for strings, `!prim.device` for devices, `none` for None, and `i64` for
/// dtypes (TorchScript's ScalarType is an int).
pub fn constant_type(a: &Attribute) -> Option<Type> {
    match attr(a) {
        Attr::None => Some(Type::none()),
        Attr::DType(_) => Some(Type::int()),
        Attr::Device(_) => Some(device_type()),
        Attr::Other(Attribute::Str(_)) => Some(str_type()),
        Attr::Other(a) => a.value_type(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_through_a_context() {
        let mut ctx = ir::Context::new();
        crate::register(&mut ctx);
        let text = "!prim.list<!prim.optional<tensor<2xf32>>>";
        let t = ir::parse_type(&ctx, text).unwrap();
        assert_eq!(t.to_string(), text);
        assert_eq!(t, list(optional(Type::tensor(DType::F32, &[2]))));
        assert!(matches!(kind(&t), Kind::List(e) if as_optional(e).is_some()));
        for (text, want) in [("#prim.none", none()), ("#prim.dtype<bf16>", dtype(DType::BF16)), ("#prim.device<\"cpu\">", device("cpu"))] {
            let a = ir::parse_attribute(&ctx, text).unwrap();
            assert_eq!(a, want);
            assert_eq!(a.to_string(), text);
        }
        assert_eq!(as_dtype(&dtype(DType::I32)), Some(DType::I32));
        let e = ir::parse_attribute(&ctx, "#prim.dtype<q8>").unwrap_err().to_string();
        assert!(e.contains("unknown dtype 'q8'"), "{e}");
        let e = ir::parse_type(&ctx, "!prim.tensorlist").unwrap_err().to_string();
        assert!(e.contains("unknown type '!prim.tensorlist'"), "{e}");
    }
}
