//! The pipelines of the optimization levels are defined once: `default-pipeline{opt-level=N}`
//! in `dialect-opt` runs exactly the pipeline `dialect-run -O<N>` runs, and that pipeline names
//! the fusion passes of every crate (`fuse-attention`, `fuse-epilogue`, `fuse-elementwise`).

use std::process::Command;

use support::{tool, workspace_root};

/// The pipeline `dialect-run -O<level>` prints with `--dump-pass-pipeline` for the example MLP.
fn run_pipeline(level: u32) -> String {
    let program = workspace_root().join("examples/mlp/model.pt2");
    let out = Command::new(tool("dialect-run"))
        .arg(&program)
        .arg(format!("-O{level}"))
        .arg("--dump-pass-pipeline")
        .output()
        .expect("run dialect-run");
    assert!(out.status.success(), "dialect-run -O{level}: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout.lines().next().unwrap_or_default().to_string()
}

/// The pipeline `default-pipeline{opt-level=<level>}` runs in `dialect-opt`, from its log
/// (`DIALECT_LOG=default-pipeline`), in the pass manager's printed form.
fn opt_default_pipeline(level: u32) -> String {
    let program = workspace_root().join("examples/mlp/model.pt2");
    let out = Command::new(tool("dialect-opt"))
        .arg(&program)
        .arg(format!("--pass-pipeline=builtin.module(default-pipeline{{opt-level={level}}})"))
        .env("DIALECT_LOG", "default-pipeline")
        .output()
        .expect("run dialect-opt");
    assert!(out.status.success(), "dialect-opt default-pipeline{{opt-level={level}}}: {}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let text = stderr
        .lines()
        .find_map(|l| l.split_once("] running ").map(|(_, t)| t.trim().to_string()))
        .unwrap_or_else(|| panic!("default-pipeline logged no pipeline:\n{stderr}"));
    let registry = driver::default_pass_registry();
    pass::PassManager::parse(&registry, &text, pass::PassManagerConfig::default())
        .unwrap_or_else(|e| panic!("'{text}' does not parse: {e}"))
        .pipeline_text()
}

#[test]
fn default_pipeline_runs_what_dialect_run_runs_at_each_level() {
    for level in 1..=3 {
        let run = run_pipeline(level);
        assert_eq!(opt_default_pipeline(level), run, "level {level}");
        for pass in ["fuse-attention", "fuse-epilogue", "fuse-elementwise", "lower-to-backend"] {
            assert!(run.contains(pass), "-O{level} does not run {pass}: {run}");
        }
    }
}

#[test]
fn the_level_pipelines_name_only_registered_passes() {
    let registry = driver::default_pass_registry();
    for level in 0..=3 {
        let text = driver::pipeline_for_level(level);
        assert!(pass::PassManager::parse(&registry, &text, pass::PassManagerConfig::default()).is_ok(), "-O{level}: {text}");
    }
    let o0 = driver::pipeline_for_level(0);
    assert!(o0.contains("lower-to-edge{strict=false}") && !o0.contains("fuse-"), "{o0}");
}
