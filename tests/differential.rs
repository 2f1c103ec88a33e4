//! Differential testing of the whole pipeline: random well-typed programs
//! (`support::random_program`) run at `-O0` (the interpreter, as written) and at `-O2` (every
//! pass, fusion, the Cranelift JIT) on the same random inputs, and must agree: the same shapes
//! and dtypes (those PyTorch computes), integers and booleans exactly, floats within a tolerance
//! that allows for reassociation and the JIT's polynomials, NaN at the same positions. A sample
//! is also compared with PyTorch eager where the project's `.venv` has it. `DIFF_SEED` sets the
//! first program's seed and `DIFF_COUNT` the number of programs; a failure prints the program,
//! its seed and the command that reproduces it.

use std::io::Write as _;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use rayon::prelude::*;
use runtime::{IValue, Tensor};
use support::random_program::{self, Program, Ty};

/// Programs per run unless `DIFF_COUNT` says otherwise.
const DEFAULT_COUNT: u64 = 4000;
/// The first program's seed unless `DIFF_SEED` says otherwise.
const DEFAULT_SEED: u64 = 20_000;
/// Programs of the run compared with PyTorch.
const TORCH_SAMPLE: u64 = 50;

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v.parse().unwrap_or_else(|_| panic!("{name}={v} is not a number")),
        Err(_) => default,
    }
}

/// Prints a line on standard error even when the test harness captures output, so every run
/// shows its seed.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// The inputs of `p` as runtime tensors.
fn inputs(p: &Program) -> Vec<Tensor> {
    p.inputs
        .iter()
        .zip(&p.input_values)
        .map(|(ty, vals)| Tensor::from_vec(vals.clone(), &ty.shape).and_then(|t| t.to_dtype(ty.dtype)).expect("an input tensor"))
        .collect()
}

/// The tolerance of a program's floats, (relative, absolute): that of the least precise float
/// dtype the program computes in, since a cast to a wider type keeps the error.
fn tolerance(p: &Program) -> (f64, f64) {
    if p.ir.contains("f16>") {
        (2e-2, 2e-2)
    } else if p.ir.contains("f32>") {
        (1e-4, 1e-5)
    } else {
        (1e-9, 1e-9)
    }
}

/// Whether `got` equals `want` (the reference): exactly for integers and booleans, within
/// `tol` for floats, NaN where the reference has NaN.
fn close(got: f64, want: f64, floating: bool, (rtol, atol): (f64, f64)) -> bool {
    if got.is_nan() || want.is_nan() {
        return got.is_nan() && want.is_nan();
    }
    if got == want || !floating {
        return got == want;
    }
    (got - want).abs() <= atol + rtol * want.abs().max(got.abs())
}

/// Compares one result with its reference; an error names the first differing element.
fn compare(got: &Tensor, want: &Tensor, tol: (f64, f64)) -> Result<(), String> {
    if got.sizes() != want.sizes() || got.dtype() != want.dtype() {
        return Err(format!("{:?} {} instead of {:?} {}", got.sizes(), got.dtype().mlir_name(), want.sizes(), want.dtype().mlir_name()));
    }
    let (g, w) = (got.to_vec_f64(), want.to_vec_f64());
    match g.iter().zip(&w).position(|(a, b)| !close(*a, *b, want.dtype().is_floating(), tol)) {
        Some(i) => Err(format!("element {i} is {} instead of {} (of {} elements)", g[i], w[i], w.len())),
        None => Ok(()),
    }
}

/// Checks that results have the types the program declares.
fn check_types(got: &[Tensor], want: &[Ty]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{} results instead of {}", got.len(), want.len()));
    }
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if g.sizes() != w.shape || g.dtype() != w.dtype {
            return Err(format!("result {i} is {:?} {} instead of {}", g.sizes(), g.dtype().mlir_name(), w.text()));
        }
    }
    Ok(())
}

/// What the `-O2` runs did with their fusion groups.
#[derive(Default)]
struct Stats {
    groups: AtomicUsize,
    compiled: AtomicUsize,
}

/// Runs `p` at one level (`-O2` with the JIT as its fusion compiler).
fn run(ctx: &ir::Context, p: &Program, level: u32, jit: &Arc<jit::Jit>, stats: &Stats) -> Result<Vec<Tensor>, String> {
    let pipeline = (level > 0).then(|| driver::pipeline_for_level(level));
    let fusion = (level > 0).then(|| jit.clone() as Arc<dyn runtime::FusionCompiler>);
    let options = runtime::CompileOptions { function: "f".into(), fusion, ..runtime::CompileOptions::default() };
    let compiled = support::compile_function(ctx, &p.ir, pipeline.as_deref(), options)?;
    for g in compiled.fusion_groups() {
        stats.groups.fetch_add(1, Ordering::Relaxed);
        stats.compiled.fetch_add(usize::from(g.declined.is_none()), Ordering::Relaxed);
    }
    let args: Vec<IValue> = inputs(p).into_iter().map(IValue::Tensor).collect();
    let outs = compiled.runtime().run(&args).map_err(|e| e.to_string())?;
    outs.into_iter()
        .map(|v| match v {
            IValue::Tensor(t) => Ok(t),
            other => Err(format!("a result is not a tensor: {other:?}")),
        })
        .collect()
}

/// Runs `p` at `-O0` and `-O2` and compares; the `-O0` results on success.
fn differential(ctx: &ir::Context, p: &Program, jit: &Arc<jit::Jit>, stats: &Stats) -> Result<Vec<Tensor>, String> {
    let o0 = run(ctx, p, 0, jit, stats).map_err(|e| format!("-O0: {e}"))?;
    check_types(&o0, &p.outputs).map_err(|e| format!("-O0: {e}"))?;
    let o2 = run(ctx, p, 2, jit, stats).map_err(|e| format!("-O2: {e}"))?;
    check_types(&o2, &p.outputs).map_err(|e| format!("-O2: {e}"))?;
    for (i, (a, b)) in o2.iter().zip(&o0).enumerate() {
        compare(a, b, tolerance(p)).map_err(|e| format!("-O2 differs from -O0 in result {i}: {e}"))?;
    }
    Ok(o0)
}

/// The report of a failing program: what failed, the seed, the command that reruns it and the
/// program.
fn report(seed: u64, p: &Program, error: &str) -> String {
    let inputs: Vec<String> = p.inputs.iter().zip(&p.input_values).map(|(t, v)| format!("  {}: {v:?}", t.text())).collect();
    format!(
        "program seed {seed}: {error}\n  rerun: DIFF_SEED={seed} DIFF_COUNT=1 cargo test --release -p integration-tests --test differential\n{}inputs:\n{}\n",
        p.ir,
        inputs.join("\n")
    )
}

#[test]
fn random_programs_agree_at_o0_and_o2() {
    let seed = env_u64("DIFF_SEED", DEFAULT_SEED);
    let count = env_u64("DIFF_COUNT", DEFAULT_COUNT);
    say(&format!("differential: {count} programs from seed {seed} (DIFF_SEED, DIFF_COUNT)"));
    let ctx = driver::default_context();
    let jit = Arc::new(jit::Jit::default());
    let stats = Stats::default();
    let start = Instant::now();
    let failures: Vec<(u64, String)> = (seed..seed + count)
        .into_par_iter()
        .filter_map(|s| {
            let p = random_program::generate(s, "f");
            differential(&ctx, &p, &jit, &stats).err().map(|e| (s, report(s, &p, &e)))
        })
        .collect();
    say(&format!(
        "differential: {count} programs in {:.1} s; {} fusion group(s) at -O2, {} compiled by the JIT; {} failure(s)",
        start.elapsed().as_secs_f64(),
        stats.groups.load(Ordering::Relaxed),
        stats.compiled.load(Ordering::Relaxed),
        failures.len()
    ));
    let shown: Vec<&str> = failures.iter().take(5).map(|(_, r)| r.as_str()).collect();
    let all: Vec<&str> = failures.iter().filter_map(|(_, r)| r.lines().next()).collect();
    assert!(failures.is_empty(), "{} of {count} programs fail:\n{}\nthe first in full:\n{}", failures.len(), all.join("\n"), shown.join("\n"));
}

/// The Python of the project's `.venv` (or `DIALECT_PYTHON`), as `tests/python.rs` finds it.
fn python() -> Option<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("DIALECT_PYTHON") {
        return Some(p.into());
    }
    let venv = support::workspace_root().join(".venv/bin/python");
    venv.is_file().then_some(venv)
}

/// Runs the sample's programs in PyTorch eager in one Python process: the script reads the
/// inputs from `in.safetensors` (`pN.in.K`) and writes the results (`pN.out.K`) and, per
/// program PyTorch refuses, its error.
const DRIVER: &str = r#"
import json, sys
import torch
from safetensors.torch import load_file, save_file
ins = load_file(sys.argv[1])
outs, errors = {}, {}
for name, f, n in PROGRAMS:
    try:
        res = f(*[ins[f"{name}.in.{k}"] for k in range(n)])
        for k, t in enumerate(res):
            outs[f"{name}.out.{k}"] = t.clone().contiguous()
    except Exception as e:
        errors[name] = f"{type(e).__name__}: {e}"
save_file(outs, sys.argv[2])
json.dump(errors, open(sys.argv[3], "w"))
"#;

#[test]
fn a_sample_of_random_programs_matches_pytorch() {
    let Some(python) = python() else {
        support::skip("a_sample_of_random_programs_matches_pytorch", "no .venv (run `bash .ci/python-env` to make it)", true);
        return;
    };
    let has = |m: &str| Command::new(&python).args(["-c", &format!("import {m}")]).status().is_ok_and(|s| s.success());
    for m in ["torch", "safetensors"] {
        if !has(m) {
            support::skip("a_sample_of_random_programs_matches_pytorch", &format!("{} lacks {m} (run `bash .ci/python-env`)", python.display()), true);
            return;
        }
    }
    let seed = env_u64("DIFF_SEED", DEFAULT_SEED);
    let count = env_u64("DIFF_COUNT", DEFAULT_COUNT).min(TORCH_SAMPLE);
    say(&format!("differential vs PyTorch: {count} programs from seed {seed}"));
    let programs: Vec<(u64, Program)> = (seed..seed + count).map(|s| (s, random_program::generate(s, &format!("p{s}")))).collect();
    let dir = support::scratch_dir("differential");
    let mut script = String::from("import torch\n\n");
    let mut tensors = Vec::new();
    for (s, p) in &programs {
        script += &p.python;
        script.push('\n');
        tensors.extend(inputs(p).into_iter().enumerate().map(|(k, t)| (format!("p{s}.in.{k}"), t)));
    }
    let list: Vec<String> = programs.iter().map(|(s, p)| format!("(\"p{s}\", p{s}, {})", p.inputs.len())).collect();
    script += &format!("PROGRAMS = [{}]\n{DRIVER}", list.join(", "));
    let (script_path, ins, outs, errs) = (dir.join("programs.py"), dir.join("in.safetensors"), dir.join("out.safetensors"), dir.join("errors.json"));
    std::fs::File::create(&script_path).and_then(|mut f| f.write_all(script.as_bytes())).expect("the script is written");
    runtime::io::save_safetensors(&ins, &tensors).expect("the inputs are written");
    let status = Command::new(&python).arg(&script_path).args([&ins, &outs, &errs]).status().expect("python runs");
    assert!(status.success(), "{} failed", script_path.display());
    let torch_out: std::collections::HashMap<String, Tensor> = runtime::io::load_safetensors(&outs).expect("PyTorch's results").into_iter().collect();
    let errors: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&errs).expect("errors.json")).expect("JSON");
    let ctx = driver::default_context();
    let jit = Arc::new(jit::Jit::default());
    let stats = Stats::default();
    let mut failures = Vec::new();
    for (s, p) in &programs {
        let name = format!("p{s}");
        if let Some(e) = errors.get(&name) {
            failures.push(report(*s, p, &format!("PyTorch refuses the program: {e}\n{}", p.python)));
            continue;
        }
        let checked = differential(&ctx, p, &jit, &stats).and_then(|o0| {
            let want: Vec<&Tensor> = (0..p.outputs.len()).map(|k| &torch_out[&format!("{name}.out.{k}")]).collect();
            let types: Vec<Ty> = want.iter().map(|t| Ty { dtype: t.dtype(), shape: t.sizes().to_vec() }).collect();
            check_types(&o0, &types).map_err(|e| format!("PyTorch's types differ: {e}"))?;
            o0.iter().zip(&want).enumerate().try_for_each(|(k, (g, w))| compare(g, w, tolerance(p)).map_err(|e| format!("-O0 differs from PyTorch in result {k}: {e}")))
        });
        if let Err(e) = checked {
            failures.push(report(*s, p, &format!("{e}\n{}", p.python)));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "{} of {count} programs differ from PyTorch:\n{}", failures.len(), failures.iter().take(5).cloned().collect::<Vec<_>>().join("\n"));
}
