//! The aten dialect registers every schema of its data file, and the schema verifier accepts and rejects as it should.

use ir::{Context, PrintOptions, parse_module, print_module, verify};

fn ctx() -> Context {
    let mut c = Context::new();
    dialect_prim::register(&mut c);
    dialect_aten::register(&mut c);
    c
}

#[test]
fn every_schema_becomes_an_op() {
    let c = ctx();
    let n = dialect_aten::schemas().len();
    assert!(n >= 380, "only {n} schemas");
    assert_eq!(c.ops_of_dialect("aten").len(), n);
    let add = c.op_def("aten.add.Tensor").expect("aten.add.Tensor");
    assert!(add.has_trait(ir::Traits::PURE | ir::Traits::ELEMENTWISE | ir::Traits::COMMUTATIVE));
    assert!(
        !c.op_def("aten.add_.Tensor")
            .expect("add_")
            .has_trait(ir::Traits::PURE)
    );
    assert!(c.op_def("aten.relu").is_some());
}

fn check(src: &str) -> Result<String, String> {
    let c = ctx();
    let m = parse_module(&c, src, "t.ir").map_err(|d| d.to_string())?;
    verify(&c, &m).map_err(|d| d.to_string())?;
    Ok(print_module(&c, &m, PrintOptions::default()))
}

#[test]
fn binding_defaults_attributes_and_operands() {
    let ok = r#"
func.func @f(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>, %s: f64) -> tensor<2x3xf32> {
  %0 = aten.add.Tensor %a, %b : tensor<2x3xf32>
  %1 = aten.add.Tensor %0, %b {alpha = 2 : i64} : tensor<2x3xf32>
  %2 = aten.mul.Scalar %1, %s : (tensor<2x3xf32>, f64) -> tensor<2x3xf32>
  %3 = aten.sum.dim_IntList %2 {dim = [1], keepdim = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  %4 = aten.expand %3 {size = [2, 3]} : (tensor<2x1xf32>) -> tensor<2x3xf32>
  func.return %4 : tensor<2x3xf32>
}"#;
    let out = check(ok).unwrap();
    assert!(
        out.contains("%1 = aten.add.Tensor %0, %b {alpha = 2 : i64} : tensor<2x3xf32>"),
        "{out}"
    );
    let e = check("func.func @f(%a: tensor<2xf32>) {\n %0 = aten.relu %a {bogus = 1 : i64} : tensor<2xf32>\n func.return\n}").unwrap_err();
    assert!(e.contains("attribute 'bogus' is not an argument"), "{e}");
    let e = check("func.func @f(%a: tensor<2xf32>) {\n %0 = aten.relu %a, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n func.return\n}").unwrap_err();
    assert!(e.contains("has 2 operand(s)"), "{e}");
    let e = check("func.func @f(%a: tensor<2xf32>) {\n %0 = aten.sum.dim_IntList %a {dim = \"x\"} : (tensor<2xf32>) -> tensor<f32>\n func.return\n}").unwrap_err();
    assert!(e.contains("attribute 'dim' is string"), "{e}");
    let e = check(
        "func.func @f(%a: i64) {\n %0 = aten.relu %a : (i64) -> tensor<2xf32>\n func.return\n}",
    )
    .unwrap_err();
    assert!(e.contains("operand #0 ('self') has type i64"), "{e}");
}
