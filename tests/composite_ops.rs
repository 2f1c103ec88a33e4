//! PyTorch's composite ops that run here only through their decompositions, checked against
//! PyTorch itself: `tests/data/composite/` holds one case per op (`cases.json`: the op with its
//! attributes; `io.safetensors`: random inputs and PyTorch 2.15's result, written by `make.py`
//! there). Each case runs at `-O0` (the runtime's composite fallback decomposes the op, which
//! has no kernel) and through the `-O2` pipeline, and must match PyTorch's result.

use std::collections::HashMap;

use runtime::{CompileOptions, IValue, Tensor, Weights};

fn type_text(t: &Tensor) -> String {
    let dims: String = t.sizes().iter().map(|d| format!("{d}x")).collect();
    format!("tensor<{dims}{}>", t.dtype().mlir_name())
}

/// The function applying `op` (`aten.name {attributes}`) to `inputs`, in MLIR's generic form.
fn program(op: &str, inputs: &[Tensor]) -> String {
    let (name, attrs) = op.split_once(' ').unwrap_or((op, ""));
    let params: Vec<String> = inputs.iter().enumerate().map(|(i, t)| format!("%a{i}: {}", type_text(t))).collect();
    let operands: Vec<String> = (0..inputs.len()).map(|i| format!("%a{i}")).collect();
    let types: Vec<String> = inputs.iter().map(type_text).collect();
    format!(
        "func.func @f({}) -> tensor<*x!prim.any> {{\n  %r = \"{name}\"({}) {attrs} : ({}) -> tensor<*x!prim.any>\n  func.return %r : tensor<*x!prim.any>\n}}\n",
        params.join(", "),
        operands.join(", "),
        types.join(", ")
    )
}

fn run(ctx: &ir::Context, src: &str, level: u32, inputs: &[Tensor]) -> Result<Tensor, String> {
    let mut m = ir::parse_module(ctx, src, "case.ir").map_err(|d| d.to_string())?;
    if level > 0 {
        let registry = driver::default_pass_registry();
        let mut pm = pass::PassManager::parse(&registry, &driver::pipeline_for_level(level), pass::PassManagerConfig::default())
            .map_err(|e| e.to_string())?;
        pm.run(ctx, &mut m, &mut Vec::new()).map_err(|d| d.to_string())?;
    }
    let options = CompileOptions { function: "f".into(), ..CompileOptions::default() };
    let compiled = runtime::compile(&m, ctx, &Weights::new(), options).map_err(|e| e.to_string())?;
    let args: Vec<IValue> = inputs.iter().cloned().map(IValue::Tensor).collect();
    match compiled.runtime().run(&args).map_err(|e| e.to_string())?.into_iter().next() {
        Some(IValue::Tensor(t)) => Ok(t),
        other => Err(format!("not a tensor: {other:?}")),
    }
}

fn matches(got: &Tensor, want: &Tensor) -> Result<(), String> {
    if got.sizes() != want.sizes() || got.dtype() != want.dtype() {
        return Err(format!("{:?} {} instead of {:?} {}", got.sizes(), got.dtype().mlir_name(), want.sizes(), want.dtype().mlir_name()));
    }
    for (i, (g, w)) in got.to_vec_f64().iter().zip(want.to_vec_f64()).enumerate() {
        if !((g - w).abs() <= 1e-6 + 1e-5 * w.abs() || (g.is_nan() && w.is_nan())) {
            return Err(format!("element {i}: {g} instead of {w}"));
        }
    }
    Ok(())
}

#[test]
fn composite_ops_match_pytorch_at_o0_and_o2() {
    let dir = support::workspace_root().join("tests/data/composite");
    let cases: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).expect("cases.json")).expect("JSON");
    let tensors: HashMap<String, Tensor> = runtime::io::load_safetensors(&dir.join("io.safetensors")).expect("io.safetensors").into_iter().collect();
    let ctx = driver::default_context();
    let reg = runtime::registry();
    let mut failures = Vec::new();
    let cases = cases.as_array().expect("a list of cases");
    for case in cases {
        let name = case["name"].as_str().expect("name");
        let op = case["op"].as_str().expect("op");
        let n = case["inputs"].as_u64().expect("inputs") as usize;
        let op_name = op.split(' ').next().unwrap_or(op);
        assert!(!reg.contains(op_name), "{op_name} has a kernel: this test is for ops that run through their decomposition");
        let inputs: Vec<Tensor> = (0..n).map(|i| tensors[&format!("{name}.in.{i}")].clone()).collect();
        let want = &tensors[&format!("{name}.out")];
        let src = program(op, &inputs);
        for level in [0, 2] {
            if let Err(e) = run(&ctx, &src, level, &inputs).and_then(|got| matches(&got, want)) {
                failures.push(format!("{name} at -O{level}: {e}"));
            }
        }
    }
    assert!(cases.len() >= 30, "only {} cases", cases.len());
    assert!(failures.is_empty(), "{} of {} runs differ from PyTorch:\n{}", failures.len(), 2 * cases.len(), failures.join("\n"));
}
