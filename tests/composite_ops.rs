//! PyTorch's composite ops that run here only through their decompositions, checked against
//! PyTorch itself: `tests/data/composite/` holds one case per op (`cases.json`: the op with its
//! attributes; `io.safetensors`: random inputs and PyTorch 2.15's result, written by `make.py`
//! there). Each case runs at `-O0` (the runtime's composite fallback decomposes the op, which
//! has no kernel) and through the `-O2` pipeline, and must match PyTorch's result; where
//! PyTorch refuses the call (an integer tensor given to `var_mean`), both runs must fail.

use std::collections::HashMap;

use runtime::{IValue, Tensor};

fn type_text(t: &Tensor) -> String {
    let dims: String = t.sizes().iter().map(|d| format!("{d}x")).collect();
    format!("tensor<{dims}{}>", t.dtype().mlir_name())
}

/// How a case passes its inputs and gets its results.
struct Form {
    /// The inputs form one `Tensor[]` operand (`prim.ListConstruct`).
    list_in: bool,
    /// The number of results compared.
    outputs: usize,
    /// The op returns them as one `Tensor[]` (unpacked with `prim.ListUnpack`).
    list_out: bool,
}

/// The function applying `op` (`aten.name {attributes}`) to `inputs`, in MLIR's generic form.
fn program(op: &str, inputs: &[Tensor], form: &Form) -> String {
    const ANY: &str = "tensor<*x!prim.any>";
    let list = format!("!prim.list<{ANY}>");
    let (name, attrs) = op.split_once(' ').unwrap_or((op, ""));
    let params: Vec<String> = inputs.iter().enumerate().map(|(i, t)| format!("%a{i}: {}", type_text(t))).collect();
    let mut operands: Vec<String> = (0..inputs.len()).map(|i| format!("%a{i}")).collect();
    let mut types: Vec<String> = inputs.iter().map(type_text).collect();
    let mut body = String::new();
    if form.list_in {
        // Elements of different types make a list of `!prim.any`, as shape propagation types it.
        let elem = if types.iter().all(|t| *t == types[0]) { types[0].clone() } else { "!prim.any".into() };
        body += &format!("  %l = prim.ListConstruct {} : ({}) -> !prim.list<{elem}>\n", operands.join(", "), types.join(", "));
        (operands, types) = (vec!["%l".into()], vec![format!("!prim.list<{elem}>")]);
    }
    let results: Vec<String> = (0..form.outputs).map(|i| format!("%r{i}")).collect();
    let anys = vec![ANY; form.outputs].join(", ");
    let call = format!("\"{name}\"({}) {attrs} : ({})", operands.join(", "), types.join(", "));
    if form.list_out {
        body += &format!("  %o = {call} -> {list}\n  {} = prim.ListUnpack %o : ({list}) -> ({anys})\n", results.join(", "));
    } else {
        body += &format!("  {} = {call} -> ({anys})\n", results.join(", "));
    }
    format!(
        "func.func @f({}) -> ({anys}) {{\n{body}  func.return {} : {anys}\n}}\n",
        params.join(", "),
        results.join(", ")
    )
}

fn run(ctx: &ir::Context, src: &str, level: u32, inputs: &[Tensor]) -> Result<Vec<Tensor>, String> {
    let pipeline = (level > 0).then(|| driver::pipeline_for_level(level));
    let args: Vec<IValue> = inputs.iter().cloned().map(IValue::Tensor).collect();
    support::run_function(ctx, src, pipeline.as_deref(), &args)?
        .into_iter()
        .map(|v| match v {
            IValue::Tensor(t) => Ok(t),
            other => Err(format!("not a tensor: {other:?}")),
        })
        .collect()
}

fn matches(got: &Tensor, want: &Tensor) -> Result<(), String> {
    if got.sizes() != want.sizes() || got.dtype() != want.dtype() {
        return Err(format!("{:?} {} instead of {:?} {}", got.sizes(), got.dtype().mlir_name(), want.sizes(), want.dtype().mlir_name()));
    }
    for (i, (g, w)) in got.to_vec_f64().iter().zip(want.to_vec_f64()).enumerate() {
        if !((g - w).abs() <= 1e-6 + 1e-5 * w.abs() || *g == w || (g.is_nan() && w.is_nan())) {
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
        let form = Form {
            list_in: case["list_in"].as_bool().unwrap_or(false),
            outputs: case["outputs"].as_u64().unwrap_or(1) as usize,
            list_out: case["list_out"].as_bool().unwrap_or(false),
        };
        let src = program(op, &inputs, &form);
        if case["error"].as_bool().unwrap_or(false) {
            for level in [0, 2] {
                if let Ok(got) = run(&ctx, &src, level, &inputs) {
                    failures.push(format!("{name} at -O{level}: PyTorch refuses it, but it gave {got:?}"));
                }
            }
            continue;
        }
        let want: Vec<&Tensor> = match form.outputs {
            1 => vec![&tensors[&format!("{name}.out")]],
            k => (0..k).map(|i| &tensors[&format!("{name}.out.{i}")]).collect(),
        };
        for level in [0, 2] {
            let checked = run(&ctx, &src, level, &inputs).and_then(|got| {
                if got.len() != want.len() {
                    return Err(format!("{} results instead of {}", got.len(), want.len()));
                }
                got.iter().zip(&want).enumerate().try_for_each(|(i, (g, w))| matches(g, w).map_err(|e| format!("result {i}: {e}")))
            });
            if let Err(e) = checked {
                failures.push(format!("{name} at -O{level}: {e}"));
            }
        }
    }
    assert!(cases.len() >= 30, "only {} cases", cases.len());
    assert!(failures.is_empty(), "{} of {} runs differ from PyTorch:\n{}", failures.len(), 2 * cases.len(), failures.join("\n"));
}
