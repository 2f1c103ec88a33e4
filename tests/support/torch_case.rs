//! Runs one ATen op on recorded inputs and compares its results with PyTorch's, for the tests
//! whose cases are written by a `make.py` beside their data (`tests/data/*/`): the function
//! text applying the op, running it at an optimization level, and the comparison.

use std::collections::HashMap;

use runtime::{IValue, Tensor};

/// The cases of `tests/data/<dir>/cases.json` and the tensors of its `io.safetensors`, by name.
pub fn load(dir: &str) -> (Vec<serde_json::Value>, HashMap<String, Tensor>) {
    let dir = crate::workspace_root().join("tests/data").join(dir);
    let cases: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).expect("cases.json")).expect("JSON");
    let tensors = runtime::io::load_safetensors(&dir.join("io.safetensors")).expect("io.safetensors").into_iter().collect();
    (cases.as_array().expect("a list of cases").clone(), tensors)
}

/// An operand of the op: one input tensor, or a `Tensor[]` of several (by input index).
#[derive(Clone, Debug)]
pub enum Operand {
    Tensor(usize),
    List(Vec<usize>),
}

/// `tensor<AxBxf32>` for `t`.
pub fn type_text(t: &Tensor) -> String {
    let dims: String = t.sizes().iter().map(|d| format!("{d}x")).collect();
    format!("tensor<{dims}{}>", t.dtype().mlir_name())
}

/// The function applying `op` (`aten.name {attributes}`) to `operands` of `inputs`, in MLIR's
/// generic form, returning `outputs` results (unpacked from one `Tensor[]` when `list_out`).
pub fn program(op: &str, inputs: &[Tensor], operands: &[Operand], outputs: usize, list_out: bool) -> String {
    const ANY: &str = "tensor<*x!prim.any>";
    let list = format!("!prim.list<{ANY}>");
    let (name, attrs) = op.split_once(' ').unwrap_or((op, ""));
    let params: Vec<String> = inputs.iter().enumerate().map(|(i, t)| format!("%a{i}: {}", type_text(t))).collect();
    let mut body = String::new();
    let (mut names, mut types) = (Vec::new(), Vec::new());
    for (k, o) in operands.iter().enumerate() {
        match o {
            Operand::Tensor(i) => {
                names.push(format!("%a{i}"));
                types.push(type_text(&inputs[*i]));
            }
            Operand::List(is) => {
                let ts: Vec<String> = is.iter().map(|&i| type_text(&inputs[i])).collect();
                let vs: Vec<String> = is.iter().map(|i| format!("%a{i}")).collect();
                // Elements of different types make a list of `!prim.any`, as shape propagation types it.
                let elem = if ts.iter().all(|t| *t == ts[0]) { ts[0].clone() } else { "!prim.any".into() };
                body += &format!("  %l{k} = prim.ListConstruct {} : ({}) -> !prim.list<{elem}>\n", vs.join(", "), ts.join(", "));
                names.push(format!("%l{k}"));
                types.push(format!("!prim.list<{elem}>"));
            }
        }
    }
    let results: Vec<String> = (0..outputs).map(|i| format!("%r{i}")).collect();
    let anys = vec![ANY; outputs].join(", ");
    let call = format!("\"{name}\"({}) {attrs} : ({})", names.join(", "), types.join(", "));
    if list_out {
        body += &format!("  %o = {call} -> {list}\n  {} = prim.ListUnpack %o : ({list}) -> ({anys})\n", results.join(", "));
    } else {
        body += &format!("  {} = {call} -> ({anys})\n", results.join(", "));
    }
    format!("func.func @f({}) -> ({anys}) {{\n{body}  func.return {} : {anys}\n}}\n", params.join(", "), results.join(", "))
}

/// Runs `src` on `inputs` at `-O<level>` (no pipeline at 0).
pub fn run(ctx: &ir::Context, src: &str, level: u32, inputs: &[Tensor]) -> Result<Vec<Tensor>, String> {
    let pipeline = (level > 0).then(|| driver::pipeline_for_level(level));
    let args: Vec<IValue> = inputs.iter().cloned().map(IValue::Tensor).collect();
    crate::run_function(ctx, src, pipeline.as_deref(), &args)?
        .into_iter()
        .map(|v| match v {
            IValue::Tensor(t) => Ok(t),
            other => Err(format!("not a tensor: {other:?}")),
        })
        .collect()
}

/// Runs `src` at `-O0` and through the `-O2` pipeline and returns one line per run that differs
/// from PyTorch: with `want` absent (PyTorch refuses the call) every run must fail, else each
/// result, passed through `adjust` with its index, must match `want`'s within `atol + rtol·|w|`.
#[allow(clippy::too_many_arguments)]
pub fn check_levels(
    ctx: &ir::Context,
    name: &str,
    src: &str,
    inputs: &[Tensor],
    want: Option<&[Tensor]>,
    atol: f64,
    rtol: f64,
    adjust: &dyn Fn(usize, &Tensor) -> Tensor,
) -> Vec<String> {
    let mut failures = Vec::new();
    for level in [0, 2] {
        let got = run(ctx, src, level, inputs);
        let Some(want) = want else {
            if let Ok(got) = got {
                failures.push(format!("{name} at -O{level}: PyTorch refuses it, but it gave {got:?}"));
            }
            continue;
        };
        let checked = got.and_then(|got| {
            if got.len() != want.len() {
                return Err(format!("{} results instead of {}", got.len(), want.len()));
            }
            got.iter().zip(want).enumerate().try_for_each(|(i, (g, w))| matches(&adjust(i, g), w, atol, rtol).map_err(|e| format!("result {i}: {e}")))
        });
        if let Err(e) = checked {
            failures.push(format!("{name} at -O{level}: {e}"));
        }
    }
    failures
}

/// `got` has `want`'s shape and dtype and each element is within `atol + rtol·|want|` of it
/// (equal infinities and NaN against NaN match).
/// Complex tensors compare part by part.
pub fn matches(got: &Tensor, want: &Tensor, atol: f64, rtol: f64) -> Result<(), String> {
    if got.sizes() != want.sizes() || got.dtype() != want.dtype() {
        return Err(format!("{:?} {} instead of {:?} {}", got.sizes(), got.dtype().mlir_name(), want.sizes(), want.dtype().mlir_name()));
    }
    if got.dtype().is_complex() {
        let parts = |t: &Tensor| runtime::kernels::complex::view_as_real("compare", t).map_err(|e| e.to_string());
        return matches(&parts(got)?, &parts(want)?, atol, rtol);
    }
    for (i, (g, w)) in got.to_vec_f64().iter().zip(want.to_vec_f64()).enumerate() {
        if !((g - w).abs() <= atol + rtol * w.abs() || *g == w || (g.is_nan() && w.is_nan())) {
            return Err(format!("element {i}: {g} instead of {w}"));
        }
    }
    Ok(())
}
