//! Custom operators: `tests/data/custom_op/model.pt2` is a real `torch.export` program (made
//! by `make.py` there) that calls the `torch.library` operator `mylib::scaled_add`. Without
//! its schema the program does not import, and the error says what to do; with `--op-library`
//! (or `dialect_aten::register_library`) it imports, verifies, prints and round-trips; it runs
//! once the embedder registers a kernel or a decomposition for the op, and without either the
//! run fails naming the op and its source location.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::Arc;

fn data() -> PathBuf {
    support::workspace_root().join("tests/data/custom_op")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn run(tool: &str, args: &[&str]) -> Output {
    Command::new(support::tool(tool)).args(args).current_dir(data()).output().expect("the tool runs")
}

#[test]
fn without_its_schema_the_op_is_refused_with_a_hint() {
    let o = run("dialect-opt", &["model.pt2"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("node `scaled_add`") && t.contains("torch.ops.mylib.scaled_add.default"), "{t}");
    assert!(t.contains("--op-library"), "{t}");
}

#[test]
fn with_its_schema_the_program_imports_prints_and_round_trips() {
    let o = run("dialect-opt", &["--op-library", "ops.txt", "model.pt2"]);
    assert!(o.status.success(), "{}", text(&o));
    let printed = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(printed.contains("mylib.scaled_add"), "{printed}");
    let dir = support::scratch_dir("custom-op");
    let ir = dir.join("model.ir");
    std::fs::write(&ir, &printed).unwrap();
    let again = run("dialect-opt", &["--op-library", "ops.txt", ir.to_str().unwrap()]);
    assert!(again.status.success(), "{}", text(&again));
    assert_eq!(String::from_utf8_lossy(&again.stdout), printed);
    let generic = run("dialect-opt", &["--op-library", "ops.txt", "--mlir-print-op-generic", ir.to_str().unwrap()]);
    assert!(generic.status.success() && String::from_utf8_lossy(&generic.stdout).contains("\"mylib.scaled_add\""), "{}", text(&generic));
}

#[test]
fn running_it_without_kernel_or_decomposition_names_the_op_and_its_location() {
    let o = run("dialect-run", &["--op-library", "ops.txt", "model.pt2", "--inputs", "io.safetensors"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("`mylib.scaled_add` at ") && t.contains("make.py:") && t.contains("no kernel and no decomposition"), "{t}");
}

#[test]
fn a_bad_op_library_is_an_error_with_its_line() {
    let dir = support::scratch_dir("custom-op-bad");
    let lib = dir.join("bad.txt");
    std::fs::write(&lib, "# ok\nmylib::scaled_add(Tensor x, Tensor y float alpha) -> Tensor\n").unwrap();
    let o = run("dialect-opt", &["--op-library", lib.to_str().unwrap(), "model.pt2"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("bad.txt:2:"), "{}", text(&o));
}

/// The program imported with the library declared, in a context of the tools' dialects.
fn imported() -> (ir::Context, import::Program) {
    let mut ctx = driver::default_context();
    let lib = std::fs::read_to_string(data().join("ops.txt")).unwrap();
    dialect_aten::register_library(&mut ctx, &lib, "ops.txt").unwrap();
    let program = import::import_file(&ctx, &data().join("model.pt2"), None).expect("imports");
    (ctx, program)
}

fn check(compiled: runtime::CompiledProgram) {
    let report = driver::fixture::run_fixture(&compiled, &data().join("io.safetensors"), 0).expect("runs");
    assert!(report.ok(), "{:?}", report.outputs);
}

/// `mylib.scaled_add` as an embedder implements it, here from the built-in kernels.
fn scaled_add(args: &[runtime::IValue]) -> runtime::Result<Vec<runtime::IValue>> {
    let alpha = match args.get(2) {
        Some(runtime::IValue::Float(a)) => *a,
        other => return Err(runtime::KernelError::new("mylib.scaled_add", format!("alpha must be a float, got {other:?}"))),
    };
    runtime::registry().call("aten.add.Tensor", &[args[0].clone(), args[1].clone(), runtime::IValue::Float(alpha)])
}

#[test]
fn it_runs_with_a_kernel_the_embedder_registers() {
    let (ctx, p) = imported();
    let mut reg = runtime::KernelRegistry::new();
    runtime::kernels::register_all(&mut reg);
    reg.register(ir::OpRef::new("mylib.scaled_add"), scaled_add);
    let weights = driver::fixture::weights_from_import(&p.weights).unwrap();
    let compiled = runtime::compile_with_registry(&p.module, &ctx, &weights, runtime::CompileOptions::default(), &reg).expect("compiles");
    check(compiled);
}

#[test]
fn it_runs_with_a_decomposition_the_embedder_registers() {
    let (ctx, p) = imported();
    let mut table = transforms::lowering::DecompositionTable::core_aten();
    table.insert("mylib.scaled_add", |b, op| {
        let (x, y, alpha) = b.with_args(op, |a| (a.value("x"), a.value("y"), a.constant("alpha")))?;
        let (Some(x), Some(y), Some(alpha)) = (x, y, alpha) else { return Err("scaled_add: x, y and a constant alpha".into()) };
        let sum = b.call("add.Tensor", &[x.into(), y.into(), transforms::lowering::Arg::A(alpha)])?;
        Ok(Some(vec![sum]))
    });
    let options = runtime::CompileOptions { decompositions: Arc::new(table), ..Default::default() };
    let compiled = driver::fixture::compile_program_with(&ctx, &p, options).expect("compiles");
    check(compiled);
}
