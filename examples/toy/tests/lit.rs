//! Runs toy's own lit suite (`examples/toy/lit`) under `cargo test -p toy`: the settings of
//! `lit/lit.cfg.py` — `.ir` tests, `toy-opt`, `toy-run` and `filecheck` first on `PATH`, their
//! names as features, `mlir-opt` where installed — with the project's lit runner. A positional argument filters tests by a
//! substring of their path.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn main() -> ExitCode {
    let filters: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("lit");
    // `filecheck` is the driver's binary, built into the directory of this package's binaries.
    let filecheck = support::tool("filecheck");
    let tools_dir = PathBuf::from(env!("CARGO_BIN_EXE_toy-opt")).parent().map(Path::to_path_buf).unwrap_or_default();
    if filecheck.parent() != Some(tools_dir.as_path()) {
        eprintln!("error: filecheck was built in {}, not beside toy-opt in {}", filecheck.display(), tools_dir.display());
        return ExitCode::from(101);
    }
    let mut config = lit::Config::new(&root);
    config.tools_dir = Some(tools_dir.clone());
    config.temp_root = tools_dir.join("toy-lit-tmp");
    config.features = vec!["toy-opt".to_string(), "toy-run".to_string()];
    config.timeout = Some(std::time::Duration::from_secs(300));
    // Real MLIR, where installed, checks that toy's generic form is legal MLIR.
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mlir_opt = ["mlir-opt-22", "mlir-opt"].iter().find_map(|n| std::env::split_paths(&path).map(|d| d.join(n)).find(|p| p.is_file()));
    if let Some(m) = mlir_opt {
        config.features.push("mlir-opt".to_string());
        config.substitutions.push(("%mlir-opt".to_string(), m.to_string_lossy().into_owned()));
    }
    let tests = match lit::discover(&root) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot discover lit tests: {e}");
            return ExitCode::from(101);
        }
    };
    let name = |p: &Path| p.strip_prefix(&root).unwrap_or(p).display().to_string();
    let tests: Vec<PathBuf> = tests.into_iter().filter(|t| filters.is_empty() || filters.iter().any(|f| name(t).contains(f.as_str()))).collect();
    println!("\nrunning {} tests", tests.len());
    let mut failures = Vec::new();
    let summary = lit::run_tests(&config, &tests, 2, |r| {
        println!("test {} ... {}", name(&r.path), if r.outcome.is_failure() { "FAILED" } else { "ok" });
        if r.outcome.is_failure() {
            failures.push(r.clone());
        }
    });
    for f in &failures {
        println!("\n---- {} ({}) ----\n{}", name(&f.path), f.outcome.label(), f.output);
    }
    let failed = summary.failures();
    println!("\ntest result: {}. {} passed; {failed} failed\n", if failed == 0 { "ok" } else { "FAILED" }, tests.len() - failed);
    if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(101) }
}
