//! The model zoo (`../shared/zoo`): real torchvision and transformers models as users export
//! them (`model.pt2`: in-place ops, `dropout`, `to.device`, `scaled_dot_product_attention`, …)
//! and decomposed to core ATen (`core.pt2`), in float32, bfloat16 and float16. Each file runs
//! through `dialect-run` at `-O0` (the interpreter, ops without a kernel through the composite
//! fallback) and `-O2` (the optimizing pipeline, fusion groups compiled by the JIT), and every
//! run must match PyTorch's outputs within the model's `meta.json` tolerance.

use std::path::Path;
use std::process::Command;

/// Runs one model file at one level; `Err` carries the tool's output.
fn run(model: &Path, file: &str, level: u32) -> Result<(), String> {
    let io = model.join("io.safetensors");
    let out = Command::new(support::tool("dialect-run"))
        .arg(model.join(file))
        .arg("--inputs")
        .arg(&io)
        .arg("--compare")
        .arg(&io)
        .arg(format!("-O{level}"))
        .output()
        .map_err(|e| format!("cannot run dialect-run: {e}"))?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if out.status.success() && text.contains("match (") {
        Ok(())
    } else {
        Err(text.lines().filter(|l| !l.contains(" ok")).take(6).collect::<Vec<_>>().join("\n"))
    }
}

#[test]
fn every_zoo_model_matches_pytorch_at_every_level() {
    let Some(models) = support::required_zoo_models() else { return };
    let mut failures = Vec::new();
    let mut runs = 0;
    for model in &models {
        let name = model.file_name().and_then(|n| n.to_str()).unwrap_or("?").to_string();
        for file in ["model.pt2", "core.pt2"] {
            for level in [0, 2] {
                runs += 1;
                match run(model, file, level) {
                    Ok(()) => eprintln!("{name} {file} -O{level}: match"),
                    Err(e) => failures.push(format!("{name} {file} -O{level}:\n{e}")),
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} of {runs} zoo runs failed:\n{}", failures.len(), failures.join("\n\n"));
}
