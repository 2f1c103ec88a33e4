//! The fixture corpus end to end: every exported program (`model.pt2`, `core.pt2`) of
//! `../shared/fixtures/{export,bench}` whose io was saved is imported, compiled and run, and
//! its outputs (and second-call outputs) are compared with PyTorch's within the fixture's
//! tolerance. Prints a per-fixture table and the ops that have no kernel. Skips with a reason
//! when the corpus is absent (fails under `CI=true`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use runtime::{CompileOptions, IValue, Tensor, Weights, compile};

fn corpus() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures");
    p.is_dir().then_some(p)
}

fn weights(w: &import::Weights) -> Result<Weights, String> {
    let mut out = Weights::new();
    for (name, wt) in w.iter() {
        let bytes = wt.contiguous_bytes().map_err(|e| e.to_string())?;
        let sizes: Vec<usize> = wt.sizes.iter().map(|&s| s.max(0) as usize).collect();
        out.insert(name, Tensor::from_bytes(wt.dtype, &sizes, &bytes).map_err(|e| e.to_string())?);
    }
    Ok(out)
}

fn close(got: &Tensor, want: &Tensor, rtol: f64, atol: f64) -> Result<(), String> {
    if got.sizes() != want.sizes() {
        return Err(format!("shape {:?}, expected {:?}", got.sizes(), want.sizes()));
    }
    for (i, (g, w)) in got.to_vec_f64().iter().zip(want.to_vec_f64()).enumerate() {
        let ok = (g - w).abs() <= atol + rtol * w.abs() || (g.is_nan() && w.is_nan()) || g == &w;
        if !ok {
            return Err(format!("element {i}: {g} vs {w}"));
        }
    }
    Ok(())
}

fn check(dir: &Path, file: &str, missing: &mut BTreeMap<String, Vec<String>>) -> Result<String, String> {
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("meta.json")).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
    let tol = &meta["tolerance"];
    let (rtol, atol) = (tol["rtol"].as_f64().unwrap_or(1e-4), tol["atol"].as_f64().unwrap_or(1e-5));
    let calls = meta["calls"].as_u64().unwrap_or(1);
    let io: BTreeMap<String, Tensor> = runtime::io::load_safetensors(dir.join("io.safetensors"))
        .map_err(|e| e.to_string())?
        .into_iter()
        .collect();
    let mut ctx = ir::Context::new();
    dialect_prim::register(&mut ctx);
    dialect_aten::register(&mut ctx);
    let prog = import::import_file(&ctx, &dir.join(file), None).map_err(|e| format!("import: {e}"))?;
    let w = weights(&prog.weights)?;
    let compiled = match compile(&prog.module, &ctx, &w, CompileOptions::default()) {
        Ok(c) => c,
        Err(e) => {
            for m in e.missing_kernels() {
                missing.entry(m.op.clone()).or_default().push(format!("{}/{file}", dir.file_name().unwrap_or_default().to_string_lossy()));
            }
            return Err(format!("compile: {}", e.to_string().lines().next().unwrap_or("")));
        }
    };
    let inputs: Vec<IValue> = (0..).map_while(|i| io.get(&format!("in.{i}")).cloned().map(IValue::Tensor)).collect();
    let mut rt = compiled.runtime();
    for call in 0..calls {
        let out = rt.run(&inputs).map_err(|e| format!("run: {e}"))?;
        let prefix = if call == 0 { "out" } else { "call2.out" };
        for (i, v) in out.iter().enumerate() {
            let Some(want) = io.get(&format!("{prefix}.{i}")) else { continue };
            let got = v.as_tensor().map_err(|e| format!("{prefix}.{i}: {e}"))?;
            close(got, want, rtol, atol).map_err(|e| format!("{prefix}.{i}: {e}"))?;
        }
    }
    Ok(format!("{} output(s), {calls} call(s)", compiled.num_outputs()))
}

#[test]
fn exported_fixtures_match_pytorch() {
    let Some(root) = corpus() else {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "../shared/fixtures is missing");
        println!("skipping: ../shared/fixtures is absent");
        return;
    };
    let mut missing: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut rows = Vec::new();
    let (mut pass, mut total) = (0, 0);
    for group in ["export", "bench"] {
        let Ok(entries) = std::fs::read_dir(root.join(group)) else { continue };
        let mut dirs: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        dirs.sort();
        for dir in dirs {
            let meta = std::fs::read_to_string(dir.join("meta.json")).unwrap_or_default();
            if !meta.contains("\"io_saved\": true") {
                continue;
            }
            for file in ["model.pt2", "core.pt2"] {
                total += 1;
                let r = check(&dir, file, &mut missing);
                if r.is_ok() {
                    pass += 1;
                }
                let name = format!("{group}/{}/{file}", dir.file_name().unwrap_or_default().to_string_lossy());
                rows.push(match r {
                    Ok(s) => format!("{name:<40} PASS  {s}"),
                    Err(e) => format!("{name:<40} FAIL  {}", e.chars().take(150).collect::<String>()),
                });
            }
        }
    }
    println!("{}", rows.join("\n"));
    println!("{pass}/{total} fixture programs match PyTorch");
    for (op, users) in &missing {
        println!("missing kernel: {op} ({})", users.join(", "));
    }
    // Today's state, asserted so that regressions show; raise as kernels land.
    assert!(pass >= 1 || total == 0, "no fixture passes");
}
