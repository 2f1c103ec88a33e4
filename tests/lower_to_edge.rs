//! Every exported fixture program decomposes, lowers to Edge and verifies; -O2 partitions it.

use std::path::PathBuf;

fn fixtures() -> Option<PathBuf> {
    let p = support::shared_fixtures();
    if p.is_dir() {
        return Some(p);
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("fixtures not found at {}", p.display());
    }
    println!("skipping: fixtures not found at {}", p.display());
    None
}

fn run(ctx: &ir::Context, m: &mut ir::Module, pipeline: &str) -> Result<(), String> {
    let mut pm = pass::PassManager::parse(&driver::default_pass_registry(), pipeline, pass::PassManagerConfig::default()).map_err(|e| e.message)?;
    pm.run(ctx, m, &mut Vec::new()).map(|_| ()).map_err(|d| d.to_string())
}

fn programs(dir: &str) -> Vec<PathBuf> {
    let Some(f) = fixtures() else { return Vec::new() };
    let mut v: Vec<PathBuf> = std::fs::read_dir(f.join(dir))
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path().join("model.pt2")).filter(|p| p.is_file()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn every_exported_program_lowers_to_edge() {
    let ctx = transforms::context();
    let mut failures = Vec::new();
    let mut done = 0;
    for path in programs("export").into_iter().chain(programs("bench")) {
        let prog = match import::import_file(&ctx, &path, None) {
            Ok(p) => p,
            Err(e) => {
                failures.push(format!("{}: import: {e}", path.display()));
                continue;
            }
        };
        let mut m = prog.module;
        let has_functionalize = transforms::pass_registry().get("functionalize").is_some();
        let pre = if has_functionalize { "functionalize," } else { "" };
        let pipeline = format!("builtin.module({pre}shape-propagation,decompose,shape-propagation,lower-to-edge,verify-edge)");
        if let Err(e) = run(&ctx, &mut m, &pipeline) {
            failures.push(format!("{}: {e}", path.display()));
            continue;
        }
        if let Err(e) = transforms::lowering::verify_edge(&ctx, &m, m.top()) {
            failures.push(format!("{}: {e}", path.display()));
        }
        done += 1;
    }
    assert!(failures.is_empty(), "{} lowered; failures:\n{}", done, failures.join("\n"));
}

#[test]
fn every_exported_program_runs_through_o2() {
    let ctx = transforms::context();
    let mut failures = Vec::new();
    for path in programs("export").into_iter().chain(programs("bench")) {
        let Ok(prog) = import::import_file(&ctx, &path, None) else { continue };
        let mut m = prog.module;
        if let Err(e) = run(&ctx, &mut m, &driver::pipeline_for_level(2)) {
            failures.push(format!("{}: {e}", path.display()));
            continue;
        }
        // Every function body is partitions plus the return.
        for f in m.functions() {
            let entry = m.entry_block(m.regions(f)[0]).unwrap();
            for o in m.block_ops(entry) {
                let n = m.op_name(o);
                assert!(
                    n == "backend.partition" || n == "func.return" || n == "prim.Constant",
                    "{}: '{n}' left outside a partition",
                    path.display()
                );
            }
        }
    }
    assert!(failures.is_empty(), "failures:\n{}", failures.join("\n"));
}
