//! Tests of `functionalize` through the pass manager.

use ir::Context;

fn run(ctx: &Context, m: &mut ir::Module, pipeline: &str) -> Result<bool, ir::Diagnostic> {
    let mut pm = pass::PassManager::parse(&transforms::pass_registry(), pipeline, pass::PassManagerConfig::default())
        .map_err(|e| ir::Diagnostic::error(ir::Location::Unknown, e.to_string()))?;
    pm.run(ctx, m, &mut Vec::new())
}

#[test]
fn pipeline_of_functionalize_and_cleanups_reverifies() {
    let ctx = transforms::context();
    let mut m = ir::parse_module(
        &ctx,
        r#"
func.func @forward(%s: tensor<2x3xf32> {prim.buffer = "s"}, %x: tensor<3xf32> {prim.input = "x"}) -> (tensor<3xf32> {prim.output = "y"}) {
  %zero = prim.Constant 0 : i64
  %one = prim.Constant 1 : i64
  %row = aten.slice.Tensor %s, %zero, %one {end = 2} : (tensor<2x3xf32>, i64, i64) -> tensor<1x3xf32>
  %w = aten.add_.Tensor %row, %x : (tensor<1x3xf32>, tensor<3xf32>) -> tensor<1x3xf32>
  %a = aten.alias %x : tensor<3xf32>
  %y = aten.mul.Tensor %a, %x : tensor<3xf32>
  func.return %y : tensor<3xf32>
}
"#,
        "test.ir",
    )
    .expect("parses");
    ir::verify(&ctx, &m).expect("verifies");
    run(&ctx, &mut m, "func.func(functionalize,cse,constant-pooling),canonicalize").expect("runs");
    ir::verify(&ctx, &m).expect("verifies after");
    let text = ir::print_module(&ctx, &m, ir::PrintOptions::default());
    assert!(text.contains("aten.slice_scatter"), "{text}");
    assert!(text.contains("prim.buffer_mutation = \"s\""), "{text}");
    assert!(!text.contains("aten.alias"), "{text}");
}

#[test]
fn ops_without_a_functional_counterpart_are_refused_by_name() {
    let ctx = transforms::context();
    let mut m = ir::parse_module(
        &ctx,
        r#"
func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {
  %z = aten.fill_diagonal_ %x {fill_value = 1.0 : f64} : tensor<2xf32>
  func.return %z : tensor<2xf32>
}
"#,
        "test.ir",
    )
    .expect("parses");
    let err = run(&ctx, &mut m, "func.func(functionalize)").expect_err("refused");
    // PyTorch declares no functional `fill_diagonal`.
    assert!(err.to_string().contains("'aten.fill_diagonal_'"), "{err}");
}
