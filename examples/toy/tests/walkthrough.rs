//! A dialect declared in a few lines registers, parses, verifies and prints like the built-in
//! ones; toy registers its ops and attaches its rules.

use ir::{Arity, AttrKind, Context, Module, OpDef, OpId, PrintOptions, Syntax, Traits, parse_module, print_module, verify};

fn register(ctx: &mut Context) {
    ctx.register_dialect("mini", "The docs example.");
    ctx.register_op(
        OpDef::new("mini.add")
            .summary("Elementwise addition of two tensors of the same shape.")
            .traits(Traits::PURE | Traits::ELEMENTWISE | Traits::COMMUTATIVE | Traits::SAME_OPERANDS_AND_RESULT_SHAPE)
            .operands(Arity::Exact(2))
            .results(Arity::Exact(1))
            .verifier(verify_tensors),
    )
    .unwrap();
    ctx.register_op(
        OpDef::new("mini.constant")
            .summary("A constant tensor.")
            .traits(Traits::PURE | Traits::CONSTANT_LIKE)
            .operands(Arity::Exact(0))
            .results(Arity::Exact(1))
            .attr("value", AttrKind::Dense, true)
            .syntax(Syntax::Constant),
    )
    .unwrap();
}

fn verify_tensors(_: &Context, m: &Module, op: OpId) -> Result<(), String> {
    for &v in m.operands(op).iter().chain(m.results(op)) {
        if !m.value_type(v).is_tensor() {
            return Err(format!("expects tensors, found {}", m.value_type(v)));
        }
    }
    Ok(())
}

#[test]
fn docs_example_registers_and_round_trips() {
    let mut ctx = Context::new();
    register(&mut ctx);
    let src = "func.func @main() {\n  %r = mini.constant dense<[1.0, 2.0]> : tensor<2xf64>\n  %s = mini.add %r, %r : tensor<2xf64>\n  func.return\n}\n";
    let m = parse_module(&ctx, src, "doc.ir").unwrap();
    verify(&ctx, &m).unwrap();
    let out = print_module(&ctx, &m, PrintOptions::default());
    assert!(out.contains("%s = mini.add %r, %r : tensor<2xf64>"), "{out}");
    let bad = "func.func @main(%x: i64) {\n  %s = mini.add %x, %x : i64\n  func.return\n}\n";
    let m = parse_module(&ctx, bad, "doc.ir").unwrap();
    let e = verify(&ctx, &m).unwrap_err();
    assert_eq!(e.to_string(), "doc.ir:2:3: error: 'mini.add' op expects tensors, found i64");
}

#[test]
fn toy_registers_like_builtin_dialects() {
    let mut ctx = Context::new();
    toy::register(&mut ctx).unwrap();
    assert_eq!(
        ctx.ops_of_dialect("toy"),
        ["toy.add", "toy.constant", "toy.field", "toy.fill", "toy.mul", "toy.print", "toy.reshape", "toy.scale", "toy.struct", "toy.transpose"]
    );
    let attached = ctx.interfaces::<pass::CanonicalizationPatterns>().count();
    assert_eq!(attached, 5, "the rules are attached to each op they are rooted at");
    let (types, attrs) = ctx.kinds_of_dialect("toy");
    assert_eq!(types.iter().map(|d| d.full_name()).collect::<Vec<_>>(), ["toy.struct"]);
    assert_eq!(attrs.iter().map(|d| d.full_name()).collect::<Vec<_>>(), ["toy.shape"]);
    // A second registration is refused, not a panic.
    assert!(toy::register(&mut ctx).is_err());
}
