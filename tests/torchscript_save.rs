//! Programs saved as TorchScript archives (`import::torchscript_pt::save`): every program of
//! `../shared/fixtures/export` and `../shared/zoo` (as exported and decomposed), and every
//! archive of `../shared/fixtures/torchscript_pt` as the frontend compiles it, is saved, loaded by the real
//! `torch.jit.load` (`tests/data/torchscript_check.py` in the project's `.venv`, or the
//! interpreter `DIALECT_PYTHON` names), run on the fixture's inputs (twice for stateful
//! programs) and compared with PyTorch's recorded outputs; the loaded graph must call exactly
//! the overloads the IR names. Saving is deterministic, and has no jitter (an archive loaded and
//! saved, loaded and saved again, gives the same bytes); the project's own reader reads the
//! archives back, `dialect-opt --emit-torchscript` writes the same bytes, and what cannot be
//! expressed is refused with an error naming the op (and no file). Without the corpus or
//! Python with torch, the tests that need them skip with a reason (and fail under `CI=true`).

use std::path::{Path, PathBuf};
use std::process::Command;

use import::torchscript_pt::{self, save};
use import::{Program, Weights};

fn python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("DIALECT_PYTHON") {
        return Some(PathBuf::from(p));
    }
    let venv = support::workspace_root().join(".venv/bin/python");
    venv.is_file().then_some(venv)
}

/// A Python interpreter with torch and safetensors, or `None` after saying why the test skips.
fn torch_python(test: &str) -> Option<PathBuf> {
    let Some(python) = python() else {
        support::skip(test, "no .venv (run `bash .ci/python-env` to make it) and no DIALECT_PYTHON", true);
        return None;
    };
    let ok = Command::new(&python).args(["-c", "import torch, safetensors"]).output().is_ok_and(|o| o.status.success());
    if !ok {
        support::skip(test, &format!("{} cannot import torch and safetensors", python.display()), true);
        return None;
    }
    Some(python)
}

/// The fixture directories of `export/`, sorted.
/// The case directories of `root` that hold `file`, in order.
fn cases_with(root: &Path, file: &str) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root).unwrap().flatten().map(|e| e.path()).filter(|p| p.join(file).is_file()).collect();
    dirs.sort();
    dirs
}

fn import(ctx: &ir::Context, path: &Path) -> Program {
    import::import_file(ctx, path, None).unwrap_or_else(|e| panic!("{e}"))
}

/// The ops of `func` whose work can be seen: those with effects (not pure), those the results
/// depend on, and the ops holding either. TorchScript drops the others when it loads the code.
fn live_ops(ctx: &ir::Context, m: &ir::Module, func: ir::OpId) -> std::collections::HashSet<ir::OpId> {
    let mut live = std::collections::HashSet::new();
    let mut work: Vec<ir::OpId> = m
        .nested_ops(func)
        .into_iter()
        .filter(|&op| op != func && (!ctx.has_trait(m.op_name(op), ir::Traits::PURE) || m.op_name(op) == "func.return"))
        .collect();
    while let Some(op) = work.pop() {
        if op == func || !live.insert(op) {
            continue;
        }
        for &v in m.operands(op) {
            match m.defining_op(v) {
                Some(d) => work.push(d),
                // A block argument: the op owning the block feeds it.
                None => work.extend(m.value_block(v).and_then(|b| m.block_parent_op(b))),
            }
        }
        work.extend(m.parent_op(op));
        for &r in m.regions(op) {
            for &b in m.region_blocks(r) {
                work.extend(m.last_op(b));
            }
        }
    }
    live
}

/// The operator overloads the saved `forward` must call, sorted: each live aten op of the IR
/// (`aten.add.Tensor`, `aten.relu`), the conversions and integer arithmetic the emitter spells
/// for scalar reads and `prim` arithmetic, and one `aten.copy_` per mutation. Ops without
/// results are left out, as TorchScript drops those it knows to be pure.
fn expected_overloads(ctx: &ir::Context, p: &Program) -> Vec<String> {
    let m = &p.module;
    let func = p.forward().unwrap();
    let live = live_ops(ctx, m, func);
    let mut out = Vec::new();
    for op in m.nested_ops(func) {
        if !live.contains(&op) {
            continue;
        }
        let name = m.op_name(op);
        let result_kind = m.results(op).first().map(|&r| m.value_type(r).kind().clone());
        let int_op = |word: &str| Some(format!("aten.{word}.int"));
        let want = match name {
            "aten._local_scalar_dense" => match result_kind {
                Some(ir::TypeKind::Bool) => Some("aten.Bool.Tensor".to_string()),
                Some(ir::TypeKind::Int) => Some("aten.Int.Tensor".to_string()),
                _ => Some("aten.Float.Tensor".to_string()),
            },
            n if n.starts_with("aten.") && m.results(op).is_empty() => None,
            n if n.starts_with("aten.") => {
                assert!(ctx.op_def(n).is_some_and(|d| d.schema.is_some()), "{n} has no schema");
                Some(n.to_string())
            }
            "prim.add" => int_op("add"),
            "prim.sub" => int_op("sub"),
            "prim.mul" => int_op("mul"),
            "prim.floordiv" => int_op("floordiv"),
            "prim.mod" => Some("aten.remainder.int".to_string()),
            "prim.eq" => int_op("eq"),
            "prim.ne" => int_op("ne"),
            "prim.lt" => int_op("lt"),
            "prim.le" => int_op("le"),
            "prim.gt" => int_op("gt"),
            "prim.ge" => int_op("ge"),
            _ => None,
        };
        out.extend(want);
    }
    let res_attrs = m.attr(func, ir::builtin::RES_ATTRS).and_then(ir::Attribute::as_array).map(<[ir::Attribute]>::to_vec).unwrap_or_default();
    for a in res_attrs {
        if ["prim.buffer_mutation", "prim.param_mutation", "prim.input_mutation"].iter().any(|k| a.dict_get(k).is_some()) {
            out.push("aten.copy_".into());
        }
    }
    out.sort();
    out
}

/// Runs the checker on each `(archive, fixture dir)`: the loaded graphs' overloads, sorted, in
/// order.
fn run_in_torch(python: &Path, cases: &[(PathBuf, PathBuf)]) -> Vec<Vec<String>> {
    let script = support::workspace_root().join("tests/data/torchscript_check.py");
    let mut cmd = Command::new(python);
    cmd.arg("-W").arg("ignore").arg(&script);
    for (archive, dir) in cases {
        cmd.arg(archive).arg(dir);
    }
    let out = cmd.output().expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "torch.jit.load or forward failed:\n{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with('{')).collect();
    assert_eq!(lines.len(), cases.len(), "{stdout}");
    let mut all = Vec::new();
    for ((archive, _), line) in cases.iter().zip(lines) {
        let report: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert_eq!(report["archive"].as_str(), archive.to_str());
        let failures = report["failures"].as_array().unwrap();
        assert!(failures.is_empty(), "{}: outputs differ from PyTorch's: {failures:?}", archive.display());
        let mut overloads: Vec<String> = report["overloads"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
        overloads.sort();
        all.push(overloads);
    }
    all
}

/// Saves the exported and the decomposed program of each case directory, runs them all in
/// torch and checks outputs and overloads.
fn check_in_torch(python: &Path, cases: &[PathBuf], tag: &str) {
    let ctx = support::context();
    let scratch = support::scratch_dir(tag);
    let mut runs = Vec::new();
    let mut expected = Vec::new();
    for dir in cases {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        for file in ["model.pt2", "core.pt2"] {
            let program = import(&ctx, &dir.join(file));
            let stem = format!("{name}_{}", file.trim_end_matches(".pt2"));
            let out = scratch.join(format!("{stem}.pt"));
            save::save(&ctx, &program, &out).unwrap_or_else(|e| panic!("{name}/{file}: {e}"));
            expected.push((format!("{name}/{file}"), expected_overloads(&ctx, &program)));
            runs.push((out, dir.clone()));
        }
    }
    for ((case, want), got) in expected.iter().zip(run_in_torch(python, &runs)) {
        assert_eq!(&got, want, "{case}: the loaded graph calls other overloads");
    }
}

#[test]
fn every_export_fixture_loads_in_torch_with_its_outputs() {
    let Some(root) = support::required_fixture_dir("export") else { return };
    let Some(python) = torch_python("every_export_fixture_loads_in_torch_with_its_outputs") else { return };
    let cases = cases_with(&root, "model.pt2");
    assert!(cases.len() >= 15, "{cases:?}");
    // Every program of the corpus can be expressed; none is refused.
    check_in_torch(&python, &cases, "torchscript-save");
}

#[test]
fn every_torchscript_archive_compiled_and_saved_back_runs_in_torch() {
    let Some(root) = support::required_fixture_dir("torchscript_pt") else { return };
    let Some(python) = torch_python("every_torchscript_archive_compiled_and_saved_back_runs_in_torch") else { return };
    let ctx = support::context();
    let scratch = support::scratch_dir("torchscript-resave");
    let mut runs = Vec::new();
    let mut expected = Vec::new();
    for dir in cases_with(&root, "model.pt") {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let program = import(&ctx, &dir.join("model.pt"));
        let out = scratch.join(format!("{name}.pt"));
        save::save(&ctx, &program, &out).unwrap_or_else(|e| panic!("{name}: {e}"));
        expected.push((name, expected_overloads(&ctx, &program)));
        runs.push((out, dir));
    }
    assert!(runs.len() >= 17, "{runs:?}");
    // TorchScript folds what these programs compute from constants (the `Final` checks of
    // `batch_norm`, say) when it loads them, so the loaded graph calls a subset of the IR's ops,
    // but never another overload.
    for ((case, want), got) in expected.iter().zip(run_in_torch(&python, &runs)) {
        let other: Vec<&String> = got.iter().filter(|o| !want.contains(o)).collect();
        assert!(other.is_empty(), "{case}: the loaded graph calls overloads the IR does not: {other:?}");
    }
}

/// No jitter: an archive loaded (compiled) and saved, loaded and saved again, gives the same
/// bytes both times.
#[test]
fn load_save_load_save_is_byte_identical() {
    let Some(root) = support::required_fixture_dir("torchscript_pt") else { return };
    let ctx = support::context();
    let scratch = support::scratch_dir("torchscript-jitter");
    for dir in cases_with(&root, "model.pt") {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let first = save::to_bytes(&ctx, &import(&ctx, &dir.join("model.pt")), "model").unwrap_or_else(|e| panic!("{name}: {e}"));
        let path = scratch.join(format!("{name}.pt"));
        std::fs::write(&path, &first).unwrap();
        let second = save::to_bytes(&ctx, &import(&ctx, &path), "model").unwrap_or_else(|e| panic!("{name} reloaded: {e}"));
        assert!(first == second, "{name}: the second save differs from the first");
    }
}

#[test]
fn every_zoo_model_loads_in_torch_with_its_outputs() {
    let Some(models) = support::required_zoo_models() else { return };
    let Some(python) = torch_python("every_zoo_model_loads_in_torch_with_its_outputs") else { return };
    check_in_torch(&python, &models, "torchscript-save-zoo");
}

#[test]
fn saving_is_deterministic_and_reads_back() {
    let Some(root) = support::required_fixture_dir("export") else { return };
    for dir in cases_with(&root, "model.pt2") {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        for file in ["model.pt2", "core.pt2"] {
            // Two imports into two contexts, saved: the same bytes.
            let (c1, c2) = (support::context(), support::context());
            let (p1, p2) = (import(&c1, &dir.join(file)), import(&c2, &dir.join(file)));
            let a = save::to_bytes(&c1, &p1, "model").unwrap_or_else(|e| panic!("{name}/{file}: {e}"));
            let b = save::to_bytes(&c2, &p2, "model").unwrap();
            assert!(a == b, "{name}/{file}: two saves differ");
            // The project's reader reads it: each state tensor under its dotted name, same bytes.
            let archive = torchscript_pt::TorchScriptArchive::from_bytes(format!("{name}.pt"), a).unwrap_or_else(|e| panic!("{name}/{file}: {e}"));
            assert_eq!(archive.prefix(), "model/");
            assert_eq!(archive.root().class, format!("__torch__.{}.{}", save::CODE_MODULE, save::ROOT_CLASS));
            let state: Vec<(String, &torchscript_pt::Tensor)> =
                archive.root().named_parameters().into_iter().chain(archive.root().named_buffers()).collect();
            let func = p1.forward().unwrap();
            let arg_attrs = p1.module.attr(func, ir::builtin::ARG_ATTRS).and_then(ir::Attribute::as_array).map(<[ir::Attribute]>::to_vec).unwrap_or_default();
            let mut want: Vec<&str> = arg_attrs
                .iter()
                .filter_map(|a| a.dict_get("prim.param").or_else(|| a.dict_get("prim.buffer")).and_then(ir::Attribute::as_str))
                .collect();
            let mut names: Vec<&str> = state.iter().map(|(n, _)| n.as_str()).collect();
            want.sort();
            names.sort();
            assert_eq!(names, want, "{name}/{file}");
            for (n, t) in &state {
                let view = archive.tensor_view(t).unwrap();
                let w = p1.weights.get(n).unwrap();
                assert_eq!(view.dtype, w.dtype, "{name}/{file}: {n}");
                assert_eq!(view.sizes.iter().map(|&s| s as i64).collect::<Vec<_>>(), w.sizes, "{name}/{file}: {n}");
                assert_eq!(view.storage, &w.contiguous_bytes().unwrap()[..], "{name}/{file}: {n}");
            }
            let lifted = arg_attrs.iter().filter(|a| a.dict_get("prim.constant").is_some()).count();
            assert_eq!(archive.constants().len(), lifted, "{name}/{file}");
        }
    }
}

/// A program of text IR without weights.
fn program(ctx: &ir::Context, src: &str) -> Program {
    let module = ir::parse_module(ctx, src, "case.ir").unwrap_or_else(|d| panic!("{d}"));
    Program { module, weights: Weights::new() }
}

const TRIP_AND_CONDITION: &str = r#"
func.func @forward(%x: tensor<2xf32> {prim.input = "x"}, %n: i64 {prim.input = "n"}) -> tensor<2xf32> {
  %t = prim.Constant true : i1
  %out = prim.Loop %n, %t, %x ({
  ^bb0(%i: i64, %acc: tensor<2xf32>):
    %next = aten.mul.Tensor %acc, %acc : tensor<2xf32>
    %three = prim.Constant 3 : i64
    %go = prim.lt %i, %three : (i64, i64) -> i1
    prim.Yield %go, %next : i1, tensor<2xf32>
  }) : (i64, i1, tensor<2xf32>) -> tensor<2xf32>
  func.return %out : tensor<2xf32>
}
"#;

#[test]
fn what_cannot_be_expressed_is_refused_by_name() {
    let ctx = support::context();
    // A loop that both counts and tests a condition has no `for`/`while` spelling here.
    let e = save::to_bytes(&ctx, &program(&ctx, TRIP_AND_CONDITION), "m").unwrap_err().to_string();
    assert!(e.contains("prim.Loop") && e.contains("trip count"), "{e}");
    // The overload `add(Scalar a, Scalar b)` given two ints: TorchScript would pick `add.int`.
    let ambiguous = r#"func.func @forward(%a: i64 {prim.input = "a"}, %b: i64 {prim.input = "b"}) -> i64 {
  %c = aten.add %a, %b : (i64, i64) -> i64
  func.return %c : i64
}"#;
    let e = save::to_bytes(&ctx, &program(&ctx, ambiguous), "m").unwrap_err().to_string();
    assert!(e.contains("`aten.add`") && e.contains("aten::add.int"), "{e}");
    // State the program names but does not hold.
    let missing = r#"func.func @forward(%w: tensor<2xf32> {prim.param = "fc.weight"}, %x: tensor<2xf32> {prim.input = "x"}) -> tensor<2xf32> {
  %y = aten.add.Tensor %x, %w : tensor<2xf32>
  func.return %y : tensor<2xf32>
}"#;
    let e = save::to_bytes(&ctx, &program(&ctx, missing), "m").unwrap_err().to_string();
    assert!(e.contains("fc.weight"), "{e}");
    // A folder name that is a path.
    let ok = r#"func.func @forward(%x: tensor<2xf32> {prim.input = "x"}) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}"#;
    let e = save::to_bytes(&ctx, &program(&ctx, ok), "a/b").unwrap_err().to_string();
    assert!(e.contains("a/b"), "{e}");
}

#[test]
fn dialect_opt_emits_the_archive_or_nothing() {
    let scratch = support::scratch_dir("torchscript-save-tool");
    let ctx = support::context();
    let good = scratch.join("good.ir");
    std::fs::write(&good, "func.func @forward(%x: tensor<2xf32> {prim.input = \"x\"}) -> tensor<2xf32> {\n  %y = aten.relu %x : tensor<2xf32>\n  func.return %y : tensor<2xf32>\n}\n").unwrap();
    let out = scratch.join("relu.pt");
    let status = Command::new(support::tool("dialect-opt")).arg(&good).arg("--emit-torchscript").arg(&out).output().unwrap();
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    let want = save::to_bytes(&ctx, &program(&ctx, &std::fs::read_to_string(&good).unwrap()), "relu").unwrap();
    assert!(std::fs::read(&out).unwrap() == want, "the tool's archive differs from `to_bytes`");

    let bad = scratch.join("bad.ir");
    std::fs::write(&bad, TRIP_AND_CONDITION).unwrap();
    let refused = scratch.join("refused.pt");
    let status = Command::new(support::tool("dialect-opt")).arg(&bad).arg("--emit-torchscript").arg(&refused).output().unwrap();
    assert!(!status.status.success());
    let stderr = String::from_utf8_lossy(&status.stderr);
    assert!(stderr.contains("prim.Loop"), "{stderr}");
    assert!(!refused.exists(), "a refused program left a file");
}

/// A `for` loop over a counter, a `while` loop with two carried values, an `if` on a tensor
/// and a tensor constant.
const CONTROL_FLOW: &str = r#"
func.func @forward(%x: tensor<2x3xf32> {prim.input = "x"}, %n: i64 {prim.input = "n"}) -> (tensor<2x3xf32> {prim.output = "r"}, tensor<2x3xf32> {prim.output = "y"}, i64 {prim.output = "k"}) {
  %t = prim.Constant true : i1
  %r = prim.Loop %n, %t, %x ({
  ^bb0(%i: i64, %acc: tensor<2x3xf32>):
    %s = aten.sin %acc : tensor<2x3xf32>
    %next = aten.add.Scalar %s, %i : (tensor<2x3xf32>, i64) -> tensor<2x3xf32>
    prim.Yield %t, %next : i1, tensor<2x3xf32>
  }) : (i64, i1, tensor<2x3xf32>) -> tensor<2x3xf32>
  %max = prim.Constant 9223372036854775807 : i64
  %zero = prim.Constant 0 : i64
  %c0 = prim.lt %zero, %n : (i64, i64) -> i1
  %w:2 = prim.Loop %max, %c0, %r, %zero ({
  ^bb0(%j: i64, %acc2: tensor<2x3xf32>, %k: i64):
    %m = aten.mul.Scalar %acc2 {other = 1.5 : f64} : tensor<2x3xf32>
    %one = prim.Constant 1 : i64
    %k1 = prim.add %k, %one : i64
    %go = prim.lt %k1, %n : (i64, i64) -> i1
    prim.Yield %go, %m, %k1 : i1, tensor<2x3xf32>, i64
  }) : (i64, i1, tensor<2x3xf32>, i64) -> (tensor<2x3xf32>, i64)
  %sum = aten.sum %w#0 : (tensor<2x3xf32>) -> tensor<f32>
  %gt = aten.gt.Scalar %sum {other = 0 : i64} : (tensor<f32>) -> tensor<i1>
  %p = aten._local_scalar_dense %gt : (tensor<i1>) -> i1
  %y = prim.If %p -> (tensor<2x3xf32>) {
    %e = aten.exp %w#0 : tensor<2x3xf32>
    prim.Yield %e : tensor<2x3xf32>
  } else {
    %g = aten.neg %w#0 : tensor<2x3xf32>
    %d = prim.Constant dense<[0.5, 1.0, -2.0]> : tensor<3xf32>
    %g2 = aten.mul.Tensor %g, %d : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    prim.Yield %g2 : tensor<2x3xf32>
  }
  %kk = aten.add.int %w#1, %n : (i64, i64) -> i64
  func.return %r, %y, %kk : tensor<2x3xf32>, tensor<2x3xf32>, i64
}
"#;

/// Loads the archive in torch and runs `forward(x, n)` for each `n`; one JSON array per call.
const RUN_WITH_INTS: &str = r#"
import json, sys, torch
m = torch.jit.load(sys.argv[1])
x = torch.tensor(json.loads(sys.argv[2]), dtype=torch.float32)
for n in json.loads(sys.argv[3]):
    print(json.dumps([o.flatten().tolist() if isinstance(o, torch.Tensor) else o for o in m(x, n)]))
"#;

#[test]
fn loops_and_branches_run_in_torch_as_in_the_interpreter() {
    let Some(python) = torch_python("loops_and_branches_run_in_torch_as_in_the_interpreter") else { return };
    let ctx = support::context();
    let scratch = support::scratch_dir("torchscript-save-control");
    let out = scratch.join("control.pt");
    save::save(&ctx, &program(&ctx, CONTROL_FLOW), &out).unwrap_or_else(|e| panic!("{e}"));
    // Negative in sum, so that both branches are taken over the values of `n`.
    let xs: Vec<f32> = vec![-0.5, -1.0, 0.25, -2.0, -0.75, 0.1];
    let ns = [0i64, 1, 3, -2];
    let run = Command::new(&python)
        .arg("-W")
        .arg("ignore")
        .arg("-c")
        .arg(RUN_WITH_INTS)
        .arg(&out)
        .arg(serde_json::to_string(&[&xs[..3], &xs[3..]]).unwrap())
        .arg(serde_json::to_string(&ns).unwrap())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{stdout}{}", String::from_utf8_lossy(&run.stderr));
    let lines: Vec<serde_json::Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), ns.len());

    let archive = torchscript_pt::load(&out).unwrap();
    assert_eq!(archive.constants().len(), 1, "the dense constant is `CONSTANTS.c0`");
    let options = runtime::CompileOptions { function: "forward".into(), ..runtime::CompileOptions::default() };
    let compiled = support::compile_function(&ctx, CONTROL_FLOW, None, options).unwrap();
    for (&n, torch_out) in ns.iter().zip(&lines) {
        let x = runtime::Tensor::from_slice(&xs, &[2, 3]).unwrap();
        let ours = compiled.runtime().run(&[runtime::IValue::Tensor(x), runtime::IValue::Int(n)]).unwrap();
        assert_eq!(ours.len(), 3);
        for (k, v) in ours.iter().enumerate() {
            let theirs = &torch_out[k];
            match v {
                runtime::IValue::Int(i) => assert_eq!(theirs.as_i64(), Some(*i), "n = {n}, output {k}"),
                runtime::IValue::Tensor(t) => {
                    let ours: Vec<f32> = t.to_vec().unwrap();
                    let theirs: Vec<f64> = theirs.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
                    assert_eq!(ours.len(), theirs.len());
                    for (a, b) in ours.iter().zip(&theirs) {
                        assert!((f64::from(*a) - b).abs() <= 1e-5 * (1.0 + b.abs()), "n = {n}, output {k}: {ours:?} vs {theirs:?}");
                    }
                }
                other => panic!("unexpected output {other:?}"),
            }
        }
    }
}
