//! Helpers shared by the executor tests: parsing IR text, compiling, making tensors.
#![allow(dead_code)]

use runtime::{CompileOptions, CompiledProgram, ExecError, IValue, Tensor, Weights, compile};

/// A context with the prim and aten dialects.
pub fn context() -> ir::Context {
    let mut c = ir::Context::new();
    dialect_prim::register(&mut c);
    dialect_aten::register(&mut c);
    c
}

/// Parses and verifies IR text, panicking with a rendered diagnostic on failure.
pub fn parse(src: &str) -> (ir::Context, ir::Module) {
    let c = context();
    let m = ir::parse_module(&c, src, "test.ir").unwrap_or_else(|d| panic!("{}", d.render("test.ir", src)));
    ir::verify(&c, &m).unwrap_or_else(|d| panic!("{}", d.render("test.ir", src)));
    (c, m)
}

pub fn try_compile(src: &str, weights: &Weights, opts: CompileOptions) -> Result<CompiledProgram, ExecError> {
    let (c, m) = parse(src);
    compile(&m, &c, weights, opts)
}

pub fn compile_ok(src: &str, weights: &Weights) -> CompiledProgram {
    try_compile(src, weights, CompileOptions::default()).unwrap_or_else(|e| panic!("compile failed: {e}"))
}

pub fn t(data: &[f32], sizes: &[usize]) -> IValue {
    IValue::Tensor(Tensor::from_slice(data, sizes).unwrap())
}

pub fn ti(data: &[i64], sizes: &[usize]) -> IValue {
    IValue::Tensor(Tensor::from_slice(data, sizes).unwrap())
}

pub fn vals(v: &IValue) -> Vec<f64> {
    v.as_tensor().unwrap().to_vec_f64()
}

pub fn assert_close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "length: got {got:?}, want {want:?}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 1e-5 + 1e-5 * w.abs(), "element {i}: got {g}, want {w} ({got:?} vs {want:?})");
    }
}
