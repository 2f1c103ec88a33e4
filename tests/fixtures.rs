//! The fixture corpus end to end: every exported program (`model.pt2` and `core.pt2`) of
//! `../shared/fixtures/{export,bench}` whose io was saved, and every TorchScript program of
//! `../shared/fixtures/torchscript` for each of its recorded calls, is imported, compiled, run
//! and compared with PyTorch's outputs within the fixture's tolerance (second-call outputs of
//! stateful programs included). Every one must match. Skips with a reason when the corpus is
//! absent (fails under `CI=true`).

use std::path::{Path, PathBuf};

fn corpus() -> Option<PathBuf> {
    support::required_fixture_dir("")
}

fn check(ctx: &ir::Context, program: &Path, io: &Path, call: usize) -> Result<String, String> {
    let p = import::import_file(ctx, program, None).map_err(|e| format!("import: {e}"))?;
    let compiled = driver::fixture::compile_program(ctx, &p)?;
    let report = driver::fixture::run_fixture(&compiled, io, call)?;
    let lines: Vec<String> = report.outputs.iter().map(|(k, c)| format!("{k} {}", c.text)).collect();
    if report.ok() { Ok(lines.join("; ")) } else { Err(lines.join("; ")) }
}

#[test]
fn every_public_fixture_matches_pytorch() {
    let Some(root) = corpus() else { return };
    let ctx = support::context();
    let mut cases: Vec<(String, PathBuf, PathBuf, usize)> = Vec::new();
    for group in ["export", "bench"] {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join(group)).unwrap().flatten().map(|e| e.path()).collect();
        dirs.sort();
        for d in dirs {
            let meta = std::fs::read_to_string(d.join("meta.json")).unwrap_or_default();
            if meta.contains("\"io_saved\": false") {
                continue;
            }
            for file in ["model.pt2", "core.pt2"] {
                let name = format!("{group}/{}/{file}", d.file_name().unwrap().to_string_lossy());
                cases.push((name, d.join(file), d.join("io.safetensors"), 0));
            }
        }
    }
    let ts = root.join("torchscript");
    let mut graphs: Vec<PathBuf> = std::fs::read_dir(&ts).unwrap().flatten().map(|e| e.path()).filter(|p| p.to_string_lossy().ends_with(".graph.txt")).collect();
    graphs.sort();
    for g in graphs {
        let stem = g.file_name().unwrap().to_string_lossy().trim_end_matches(".graph.txt").to_string();
        let io = ts.join(format!("{stem}.io.safetensors"));
        let meta = driver::fixture::read_meta(&io).unwrap();
        for call in 0..meta.scalar_calls.len().max(1) {
            cases.push((format!("torchscript/{stem} call {call}"), g.clone(), io.clone(), call));
        }
    }
    let mut failures = Vec::new();
    for (name, program, io, call) in &cases {
        match check(&ctx, program, io, *call) {
            Ok(detail) => println!("ok    {name:<40} {detail}"),
            Err(e) => {
                println!("FAIL  {name:<40} {e}");
                failures.push(name.clone());
            }
        }
    }
    println!("{} of {} fixture programs match PyTorch", cases.len() - failures.len(), cases.len());
    assert!(cases.len() >= 49, "only {} fixture programs found", cases.len());
    assert!(failures.is_empty(), "fixtures not matching PyTorch: {failures:?}");
}
