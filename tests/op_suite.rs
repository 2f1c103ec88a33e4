//! The op-coverage suite: every case of `../shared/fixtures/ops/` (PyTorch's OpInfo samples,
//! exported and decomposed to core ATen) is imported, compiled and run, and its outputs are
//! compared with PyTorch's. Prints per-op pass counts; every case must pass.
//! Skips with a reason when the corpus is absent (fails under `CI=true`).

use std::collections::BTreeMap;
use std::path::Path;

/// Cases whose programs use operators outside ATen (`torch.ops.torch_nn.*`): the importer refuses
/// them by name, which `import`'s own tests check.
fn uses_non_aten_ops(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("meta.json")).is_ok_and(|m| m.contains("torch_nn."))
}

/// Whether the program draws random numbers: `native_dropout` in training mode with 0 < p < 1.
/// Such a fixture recorded one draw of PyTorch's unseeded generator; no rerun (PyTorch's
/// included) reproduces it, so those cases are reported, not compared.
fn draws_random_numbers(m: &ir::Module) -> bool {
    let mut found = false;
    m.walk(m.top(), ir::WalkOrder::PreOrder, &mut |op| {
        if m.op_name(op) == "aten.native_dropout" {
            let train = m.attr(op, "train").and_then(|a| a.as_bool()).unwrap_or(true);
            let p = m.attr(op, "p").and_then(|a| a.as_float()).unwrap_or(0.5);
            found |= train && p > 0.0 && p < 1.0;
        }
    });
    found
}

/// The static shapes of the program's results, as torch.export recorded them.
fn declared_result_shapes(m: &ir::Module) -> Vec<Option<Vec<usize>>> {
    let Some(f) = m.function("forward") else { return Vec::new() };
    let Some((_, results)) = ir::builtin::function_signature(m, f) else { return Vec::new() };
    results
        .iter()
        .map(|t| t.as_tensor().and_then(|t| t.static_dims()).map(|d| d.iter().map(|&x| x as usize).collect()))
        .collect()
}

#[test]
fn every_op_case_matches_pytorch() {
    let Some(root) = support::required_fixture_dir("ops") else { return };
    let ctx = support::context();
    let mut dirs: Vec<_> = std::fs::read_dir(&root).unwrap().flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    let filter = std::env::var("OP_SUITE_FILTER").ok();
    let mut per_op: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut skipped = 0;
    let mut random = Vec::new();
    let mut contradictions = Vec::new();
    for dir in &dirs {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        if filter.as_ref().is_some_and(|f| !name.contains(f.as_str())) {
            continue;
        }
        if uses_non_aten_ops(dir) {
            skipped += 1;
            continue;
        }
        let meta: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("meta.json")).unwrap()).unwrap();
        let ops: Vec<String> = meta["core_aten_ops"]
            .as_array()
            .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        // A panic is a bug like any mismatch: record it against the case and go on.
        let mut notes = Vec::new();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let program = import::import_file(&ctx, &dir.join("core.pt2"), None).map_err(|e| format!("import: {e}"))?;
            if draws_random_numbers(&program.module) {
                return Err("RANDOM".to_string());
            }
            let declared = declared_result_shapes(&program.module);
            let compiled = driver::fixture::compile_program(&ctx, &program)?;
            let mut report = driver::fixture::run_fixture(&compiled, &dir.join("io.safetensors"), 0)?;
            // Where PyTorch's own decomposition declares a result shape that its eager run did not
            // produce, the recorded value cannot be the program's: compare the program's own shape.
            report.outputs.retain(|(key, c)| {
                let i: usize = key.rsplit('.').next().and_then(|s| s.parse().ok()).unwrap_or(usize::MAX);
                let contradicts = !c.ok
                    && c.text.starts_with("shape ")
                    && declared.get(i).cloned().flatten().is_some_and(|d| c.text.starts_with(&format!("shape {d:?}")));
                if contradicts {
                    notes.push(format!("{key}: the exported program declares shape {:?} but PyTorch recorded another ({})", declared[i], c.text));
                }
                !contradicts
            });
            Ok(report)
        }))
        .unwrap_or_else(|p| {
            let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
            Err(format!("panic: {}", msg.unwrap_or_default()))
        });
        if matches!(&result, Err(e) if e == "RANDOM") {
            random.push(name.clone());
            continue;
        }
        contradictions.extend(notes.into_iter().map(|n| format!("{name}: {n}")));
        let ok = match &result {
            Ok(r) if r.ok() => true,
            Ok(r) => {
                let bad: Vec<String> = r.outputs.iter().filter(|(_, c)| !c.ok).map(|(k, c)| format!("{k}: {}", c.text)).collect();
                failures.push(format!("{name}: {}", bad.join("; ")));
                false
            }
            Err(e) => {
                failures.push(format!("{name}: {}", e.lines().next().unwrap_or("")));
                false
            }
        };
        for op in ops {
            let e = per_op.entry(op).or_default();
            e.0 += 1;
            if ok {
                e.1 += 1;
            }
        }
    }
    println!("{:<60} {:>6} {:>6}", "op", "cases", "passed");
    for (op, (n, p)) in &per_op {
        println!("{op:<60} {n:>6} {p:>6}{}", if n != p { "  <-" } else { "" });
    }
    let total = dirs.len() - skipped - random.len();
    println!(
        "{} of {total} cases pass ({skipped} use non-ATen operators; {} draw random numbers: {})",
        total - failures.len(),
        random.len(),
        random.join(", ")
    );
    for c in &contradictions {
        println!("NOTE {c}");
    }
    for f in &failures {
        println!("FAIL {f}");
    }
    assert!(failures.is_empty(), "{} op case(s) do not match PyTorch", failures.len());
}
