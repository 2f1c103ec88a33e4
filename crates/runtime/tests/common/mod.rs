//! Helpers shared by the executor tests: parsing IR text, compiling, making tensors.
#![allow(dead_code)]

pub mod counting;

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

/// A small MLP in IR text: addmm → relu → mm → add → relu → add (residual). Weights are
/// stored pre-transposed so no view op runs per call.
pub const MLP: &str = r#"
module {
  func.func @forward(%w1: tensor<8x16xf32> {prim.param = "fc1.weight"}, %b1: tensor<16xf32> {prim.param = "fc1.bias"}, %w2: tensor<16x8xf32> {prim.param = "fc2.weight"}, %b2: tensor<8xf32> {prim.param = "fc2.bias"}, %x: tensor<?x8xf32, #prim.sym<s0>> {prim.input = "x"}) -> tensor<?x8xf32, #prim.sym<s0>> {
    %h = aten.addmm %b1, %x, %w1 : (tensor<16xf32>, tensor<?x8xf32, #prim.sym<s0>>, tensor<8x16xf32>) -> tensor<?x16xf32, #prim.sym<s0>>
    %r = aten.relu %h : (tensor<?x16xf32, #prim.sym<s0>>) -> tensor<?x16xf32, #prim.sym<s0>>
    %h2 = aten.mm %r, %w2 : (tensor<?x16xf32, #prim.sym<s0>>, tensor<16x8xf32>) -> tensor<?x8xf32, #prim.sym<s0>>
    %a = aten.add.Tensor %h2, %b2 : (tensor<?x8xf32, #prim.sym<s0>>, tensor<8xf32>) -> tensor<?x8xf32, #prim.sym<s0>>
    %r2 = aten.relu %a : (tensor<?x8xf32, #prim.sym<s0>>) -> tensor<?x8xf32, #prim.sym<s0>>
    %o = aten.add.Tensor %r2, %x : (tensor<?x8xf32, #prim.sym<s0>>, tensor<?x8xf32, #prim.sym<s0>>) -> tensor<?x8xf32, #prim.sym<s0>>
    func.return %o : tensor<?x8xf32, #prim.sym<s0>>
  }
}
"#;

/// Deterministic pseudo-random values in [-1, 1).
pub fn noise(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

pub fn mlp_weights() -> Weights {
    let mut w = Weights::new();
    w.insert("fc1.weight", Tensor::from_slice(&noise(8 * 16, 1), &[8, 16]).unwrap());
    w.insert("fc1.bias", Tensor::from_slice(&noise(16, 2), &[16]).unwrap());
    w.insert("fc2.weight", Tensor::from_slice(&noise(16 * 8, 3), &[16, 8]).unwrap());
    w.insert("fc2.bias", Tensor::from_slice(&noise(8, 4), &[8]).unwrap());
    w
}

/// The MLP computed directly, for comparison.
pub fn mlp_reference(x: &[f32], rows: usize) -> Vec<f64> {
    let (w1, b1, w2, b2) = (noise(8 * 16, 1), noise(16, 2), noise(16 * 8, 3), noise(8, 4));
    let mut out = Vec::new();
    for i in 0..rows {
        let xr = &x[i * 8..(i + 1) * 8];
        let h: Vec<f64> = (0..16)
            .map(|j| (b1[j] as f64 + (0..8).map(|k| xr[k] as f64 * w1[k * 16 + j] as f64).sum::<f64>()).max(0.0))
            .collect();
        for j in 0..8 {
            let a = b2[j] as f64 + (0..16).map(|k| h[k] * w2[k * 8 + j] as f64).sum::<f64>();
            out.push(a.max(0.0) + xr[j] as f64);
        }
    }
    out
}
