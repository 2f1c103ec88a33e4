//! Types and attributes a dialect defines through hooks: parse, print, verify, interning, and
//! the errors of each, with a small `shapes` dialect declared here.

use ir::{Attribute, Context, DialectParser, Diagnostic, KindDef, Type, parse_attribute, parse_module, parse_type, print_angle_list, print_module};
use std::fmt;

/// `!shapes.pair<T, U>`: two types.
fn parse_pair(p: &mut DialectParser<'_, '_>) -> Result<Vec<Attribute>, Diagnostic> {
    p.expect("<")?;
    let a = p.parse_type()?;
    p.expect(",")?;
    let b = p.parse_type()?;
    p.expect(">")?;
    Ok(vec![Attribute::Type(a), Attribute::Type(b)])
}

/// `#shapes.dims<2x3x4>`: static sizes written as a tensor shape is.
fn parse_dims(p: &mut DialectParser<'_, '_>) -> Result<Vec<Attribute>, Diagnostic> {
    p.expect("<")?;
    let dims = p.parse_dimension_list()?;
    p.expect(">")?;
    Ok(dims.into_iter().map(Attribute::Int).collect())
}

fn print_dims(params: &[Attribute], f: &mut dyn fmt::Write) -> fmt::Result {
    let dims: Vec<String> = params.iter().map(|d| d.as_int().unwrap_or(0).to_string()).collect();
    write!(f, "<{}>", dims.join("x"))
}

fn verify_dims(params: &[Attribute]) -> Result<(), String> {
    match params.iter().find(|d| d.as_int().is_none_or(|d| d <= 0)) {
        Some(d) => Err(format!("sizes must be positive, found {d}")),
        None => Ok(()),
    }
}

fn verify_pair(params: &[Attribute]) -> Result<(), String> {
    match params {
        [Attribute::Type(_), Attribute::Type(_)] => Ok(()),
        _ => Err("takes two types".into()),
    }
}

fn context() -> Context {
    let mut ctx = Context::new();
    ctx.register_dialect("shapes", "A dialect with a type and an attribute of its own.");
    ctx.register_type(KindDef::new("shapes", "pair", parse_pair, print_angle_list).verifier(verify_pair)).unwrap();
    ctx.register_attr(KindDef::new("shapes", "dims", parse_dims, print_dims).verifier(verify_dims)).unwrap();
    ctx.set_allow_unregistered(true);
    ctx
}

#[test]
fn types_and_attributes_round_trip() {
    let ctx = context();
    let t = parse_type(&ctx, "!shapes.pair<tensor<2xf32>, !shapes.pair<i64, f64>>").unwrap();
    assert_eq!(t.to_string(), "!shapes.pair<tensor<2xf32>, !shapes.pair<i64, f64>>");
    let inner = t.dialect_params("shapes", "pair").unwrap()[1].as_type().unwrap().clone();
    assert_eq!(inner.dialect_params("shapes", "pair").map(<[_]>::len), Some(2));
    let a = parse_attribute(&ctx, "#shapes.dims< 2 x 3x4 >").unwrap();
    assert_eq!(a.to_string(), "#shapes.dims<2x3x4>");
    assert_eq!(a.dialect_params("shapes", "dims").unwrap().len(), 3);
    // Equal values are one interned type.
    let again = parse_type(&ctx, "!shapes.pair<tensor<2xf32>, !shapes.pair<i64, f64>>").unwrap();
    assert!(Type::ptr_eq(&t, &again));
}

#[test]
fn programs_round_trip_in_both_forms() {
    let ctx = context();
    let src = r#"func.func @f(%x: !shapes.pair<i64, tensor<3xf32>>) -> !shapes.pair<i64, tensor<3xf32>> {
  %y = "test.id"(%x) {d = #shapes.dims<2x3>} : (!shapes.pair<i64, tensor<3xf32>>) -> !shapes.pair<i64, tensor<3xf32>>
  func.return %y : !shapes.pair<i64, tensor<3xf32>>
}"#;
    let m = parse_module(&ctx, src, "t.ir").unwrap();
    let pretty = print_module(&ctx, &m, Default::default());
    assert!(pretty.contains("{d = #shapes.dims<2x3>}"), "{pretty}");
    let m2 = parse_module(&ctx, &pretty, "t2.ir").unwrap();
    assert_eq!(print_module(&ctx, &m2, Default::default()), pretty);
    let generic = print_module(&ctx, &m, ir::PrintOptions { generic: true, ..Default::default() });
    let m3 = parse_module(&ctx, &generic, "t3.ir").unwrap();
    assert_eq!(print_module(&ctx, &m3, Default::default()), pretty);
}

#[test]
fn errors_are_positioned() {
    let ctx = context();
    let e = parse_attribute(&ctx, "#shapes.dims<2x0>").unwrap_err().to_string();
    assert!(e.contains("invalid shapes.dims: sizes must be positive, found 0 : i64"), "{e}");
    let e = parse_type(&ctx, "!shapes.pair<i64>").unwrap_err().to_string();
    assert!(e.contains("1:17") && e.contains("expected ','"), "{e}");
    let e = parse_type(&ctx, "!shapes.triple<i64>").unwrap_err().to_string();
    assert!(e.contains("unknown type '!shapes.triple' in dialect 'shapes'"), "{e}");
    let e = parse_attribute(&ctx, "#shapes.size<2>").unwrap_err().to_string();
    assert!(e.contains("unknown attribute '#shapes.size' in dialect 'shapes'"), "{e}");
}

#[test]
fn registration_checks_the_dialect_and_duplicates() {
    let mut ctx = context();
    assert!(ctx.register_type(KindDef::new("shapes", "pair", parse_pair, print_angle_list)).is_err());
    assert!(ctx.register_type(KindDef::new("nowhere", "pair", parse_pair, print_angle_list)).is_err());
    let (types, attrs) = ctx.kinds_of_dialect("shapes");
    assert_eq!(types.iter().map(|d| d.full_name()).collect::<Vec<_>>(), ["shapes.pair"]);
    assert_eq!(attrs.iter().map(|d| d.full_name()).collect::<Vec<_>>(), ["shapes.dims"]);
}

#[test]
fn values_built_in_code_are_verified() {
    let ctx = context();
    let def = ctx.attr_def("shapes", "dims").unwrap();
    assert!(Attribute::dialect(def, vec![Attribute::Int(-1)]).is_err());
    let ok = Attribute::dialect(def, vec![Attribute::Int(4)]).unwrap();
    assert_eq!(ok.to_string(), "#shapes.dims<4>");
    let pair = ctx.type_def("shapes", "pair").unwrap();
    assert!(Type::dialect(pair, vec![Attribute::Int(1)]).is_err());
}
