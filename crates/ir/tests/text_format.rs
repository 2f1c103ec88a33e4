//! Text-format tests: parse → print → parse → print is a fixed point in both forms, and errors carry positions.

use ir::{Context, PrintOptions, parse_module, print_module, verify};

fn ctx() -> Context {
    let mut c = Context::new();
    c.set_allow_unregistered(true);
    c
}

/// Parses, verifies, prints in the given form, and checks that re-parsing prints the same text.
fn round_trip(src: &str, opts: PrintOptions) -> String {
    let c = ctx();
    let m = parse_module(&c, src, "test.ir").unwrap_or_else(|d| panic!("{}", d.render("test.ir", src)));
    verify(&c, &m).unwrap_or_else(|d| panic!("{}", d.render("test.ir", src)));
    let once = print_module(&c, &m, opts);
    let m2 = parse_module(&c, &once, "printed.ir").unwrap_or_else(|d| panic!("{}\n{once}", d.render("printed.ir", &once)));
    verify(&c, &m2).unwrap_or_else(|d| panic!("{}", d.render("printed.ir", &once)));
    let twice = print_module(&c, &m2, opts);
    assert_eq!(once, twice, "printing is not a fixed point");
    once
}

const SAMPLE: &str = r#"
module {
  func.func @forward(%x: tensor<2x3xf32>, %n: i64 {prim.param = "w"}) -> (tensor<2x3xf32>, i64) {
    %0 = "test.add"(%x, %x) {alpha = 1 : i64, beta = 1.5 : f64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> loc("model.py":12:4)
    %p:2 = "test.pair"(%0) : (tensor<2x3xf32>) -> (tensor<2x3xf32>, i64)
    %r = "test.region"(%p#0) ({
    ^bb0(%a: tensor<2x3xf32>):
      "test.yield"(%a) : (tensor<2x3xf32>) -> ()
    }) {names = ["a", "b"], d = {k = unit}, t = tensor<?x4xf32, #prim.sym<s0>>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    func.return %r, %p#1 : tensor<2x3xf32>, i64
  }
}
"#;

#[test]
fn pretty_round_trip_is_fixed_point() {
    let out = round_trip(SAMPLE, PrintOptions::default());
    assert!(out.contains("func.func @forward(%x: tensor<2x3xf32>, %n: i64 {prim.param = \"w\"})"), "{out}");
    assert!(out.contains("%p:2 = \"test.pair\"(%0)"), "{out}");
    assert!(out.contains("func.return %r, %p#1 : tensor<2x3xf32>, i64"), "{out}");
}

#[test]
fn generic_round_trip_is_fixed_point() {
    let out = round_trip(SAMPLE, PrintOptions { generic: true, debug_info: false });
    assert!(out.starts_with("\"builtin.module\"() ({"), "{out}");
    assert!(out.contains("\"func.func\"() ({"), "{out}");
    assert!(out.contains("\"func.return\"(%r, %p#1)"), "{out}");
}

#[test]
fn debug_info_keeps_locations() {
    let out = round_trip(SAMPLE, PrintOptions { generic: false, debug_info: true });
    assert!(out.contains("loc(\"model.py\":12:4)"), "{out}");
}

#[test]
fn floats_round_trip_exactly() {
    for v in [0.1, -0.0, 1e-300, 5e-324, f64::MAX, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 1.0 / 3.0] {
        let a = ir::Attribute::float(v);
        let text = a.to_string();
        let b = ir::parse_attribute(&ctx(), &text).unwrap();
        assert_eq!(a, b, "{text}");
    }
}

#[test]
fn parse_errors_have_positions() {
    let c = ctx();
    let src = "module {\n  %0 = \"test.op\"(%x) : (i64) -> i64\n}\n";
    let e = parse_module(&c, src, "bad.ir").unwrap_err();
    let text = e.render("bad.ir", src);
    assert!(text.starts_with("bad.ir:2:18: error: use of undeclared SSA value name '%x'"), "{text}");
    let src = "module {\n  %0 = \"test.op\"() : () -> tensor<2xq9>\n}\n";
    let e = parse_module(&c, src, "bad.ir").unwrap_err();
    assert!(e.to_string().contains("unsupported tensor element type 'q9'"), "{e}");
}

