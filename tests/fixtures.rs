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

/// A spec with every node of another type reduced to its type's last name and its children,
/// since PyTorch prints such a node's context differently from how it serializes it.
fn comparable(spec: &import::TreeSpec) -> import::TreeSpec {
    use import::TreeSpec as T;
    let all = |c: &[T]| c.iter().map(comparable).collect();
    match spec {
        T::Leaf | T::None => spec.clone(),
        T::Tuple(c) => T::Tuple(all(c)),
        T::List(c) => T::List(all(c)),
        T::Dict(items) => T::Dict(items.iter().map(|(k, s)| (k.clone(), comparable(s))).collect()),
        T::Other { ty, children, .. } => {
            T::Other { ty: ty.rsplit('.').next().unwrap_or_default().to_string(), context: String::new(), children: all(children) }
        }
    }
}

/// The output spec the `.pt2` importer reads from each core-ATen archive is the one PyTorch printed into
/// the fixture's `meta.json`, and a compiled program nests its outputs by it.
#[test]
fn imported_output_specs_match_pytorch() {
    let Some(root) = corpus() else { return };
    let ctx = support::context();
    let mut dirs: Vec<PathBuf> = ["export", "bench", "../zoo"]
        .iter()
        .filter_map(|g| std::fs::read_dir(root.join(g)).ok())
        .flat_map(|r| r.flatten().map(|e| e.path()))
        .filter(|d| d.join("core.pt2").is_file())
        .collect();
    dirs.sort();
    let mut checked = 0;
    for d in dirs {
        let meta: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(d.join("meta.json")).unwrap()).unwrap();
        let Some(printed) = meta["output_tree"].as_str() else { continue };
        let expected = import::TreeSpec::parse(printed).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        let p = import::import_file(&ctx, &d.join("core.pt2"), None).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        let attr = p.module.attr(p.module.top(), import::program::ATTR_OUT_SPEC).unwrap_or_else(|| panic!("{}: no output spec", d.display()));
        let imported = import::TreeSpec::from_attribute(attr).unwrap();
        assert_eq!(comparable(&imported), comparable(&expected), "{}", d.display());
        if d.ends_with("multi_out") {
            let compiled = driver::fixture::compile_program(&ctx, &p).unwrap();
            assert_eq!(compiled.out_spec(), &expected);
            assert!(matches!(compiled.out_spec(), import::TreeSpec::Dict(items) if items.len() == 2));
        }
        checked += 1;
    }
    println!("{checked} output specs match PyTorch's");
    assert!(checked >= 20, "only {checked} output specs checked");
}
