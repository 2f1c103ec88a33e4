//! PyTorch's composite ops that run here only through their decompositions, checked against
//! PyTorch itself: `tests/data/composite/` holds one case per op (`cases.json`: the op with its
//! attributes; `io.safetensors`: random inputs and PyTorch 2.15's result, written by `make.py`
//! there). Each case runs at `-O0` (the runtime's composite fallback decomposes the op, which
//! has no kernel) and through the `-O2` pipeline, and must match PyTorch's result; where
//! PyTorch refuses the call (an integer tensor given to `var_mean`), both runs must fail.

use runtime::Tensor;
use support::torch_case::{Operand, check_levels, program};

#[test]
fn composite_ops_match_pytorch_at_o0_and_o2() {
    let (cases, tensors) = support::torch_case::load("composite");
    let ctx = driver::default_context();
    let reg = runtime::registry();
    let mut failures = Vec::new();
    for case in &cases {
        let name = case["name"].as_str().expect("name");
        let op = case["op"].as_str().expect("op");
        let n = case["inputs"].as_u64().expect("inputs") as usize;
        let op_name = op.split(' ').next().unwrap_or(op);
        assert!(!reg.contains(op_name), "{op_name} has a kernel: this test is for ops that run through their decomposition");
        let inputs: Vec<Tensor> = (0..n).map(|i| tensors[&format!("{name}.in.{i}")].clone()).collect();
        let outputs = case["outputs"].as_u64().unwrap_or(1) as usize;
        // The inputs are the op's operands, or one `Tensor[]` operand when `list_in`.
        let operands = if case["list_in"].as_bool().unwrap_or(false) {
            vec![Operand::List((0..n).collect())]
        } else {
            (0..n).map(Operand::Tensor).collect()
        };
        let src = program(op, &inputs, &operands, outputs, case["list_out"].as_bool().unwrap_or(false));
        let want: Option<Vec<Tensor>> = (!case["error"].as_bool().unwrap_or(false)).then(|| match outputs {
            1 => vec![tensors[&format!("{name}.out")].clone()],
            k => (0..k).map(|i| tensors[&format!("{name}.out.{i}")].clone()).collect(),
        });
        failures.extend(check_levels(&ctx, name, &src, &inputs, want.as_deref(), 1e-6, 1e-5, &|_, t| t.clone()));
    }
    assert!(cases.len() >= 30, "only {} cases", cases.len());
    assert!(failures.is_empty(), "{} of {} runs differ from PyTorch:\n{}", failures.len(), 2 * cases.len(), failures.join("\n"));
}
