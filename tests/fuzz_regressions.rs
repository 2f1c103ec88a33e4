//! Replays every input the coverage-guided fuzzers of `fuzz/` found a bug with (kept under
//! `tests/data/fuzz/<target>/`) through the same oracle the target runs, so each fixed crash
//! stays fixed. Also runs each oracle once on a few well-formed inputs, so an oracle that
//! rejected everything would fail here rather than fuzz nothing.

use std::path::Path;

use support::fuzz::{TARGETS, run};
use support::workspace_root;

#[test]
fn every_input_the_fuzzers_found_stays_fixed() {
    let root = workspace_root().join("tests/data/fuzz");
    let mut replayed = 0;
    for target in TARGETS {
        let dir = root.join(target);
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut files: Vec<_> = entries.flatten().map(|e| e.path()).filter(|p| p.is_file()).collect();
        files.sort();
        for file in files {
            let data = std::fs::read(&file).unwrap();
            if let Err(violation) = run(target, &data) {
                panic!("{target}: {}: {violation}", file.display());
            }
            replayed += 1;
        }
    }
    println!("{replayed} regression inputs replayed");
}

#[test]
fn the_oracles_accept_well_formed_inputs() {
    let ir = "func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n  %y = aten.relu %x : tensor<2xf32>\n  func.return %y : tensor<2xf32>\n}\n";
    run("ir_text", ir.as_bytes()).unwrap();
    run("schema", b"aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor").unwrap();
    run("filecheck", b"CHECK: a\0a\n").unwrap();
    let example = workspace_root().join("examples/mlp");
    run("pt2_archive", &std::fs::read(example.join("model.pt2")).unwrap()).unwrap();
    run("safetensors", &std::fs::read(example.join("io.safetensors")).unwrap()).unwrap();
    run("ir_text", &std::fs::read(workspace_root().join("examples/tour.ir")).unwrap()).unwrap();
    // Malformed inputs are errors that name the input, which the oracles accept.
    assert!(run("pt2_archive", b"not a zip").is_ok());
    assert!(run("program_archive", b"not a zip").is_ok());
    assert!(run("safetensors", b"\x08\0\0\0\0\0\0\0{}      ").is_ok());
    run("unpickle", b"\x80\x02ccollections\nOrderedDict\n)R.").unwrap();
    assert!(run("unpickle", b"\x80\x02cos\nsystem\n.").is_ok());
    assert!(run("no_such_target", b"").is_err());
}

#[test]
fn the_json_target_imports_its_base_archive_unchanged() {
    let base = support::fuzz::pt2_base_archive();
    if !base.exists() {
        support::skip("the_json_target_imports_its_base_archive_unchanged", &format!("{} is absent", base.display()), true);
        return;
    }
    let json = model_json(&base);
    run("pt2_model_json", &json).unwrap();
    // A damaged graph is an error naming the archive, not a panic.
    run("pt2_model_json", &json[..json.len() / 2]).unwrap();
}

fn model_json(archive: &Path) -> Vec<u8> {
    use std::io::Read;
    let mut zip = zip::ZipArchive::new(std::fs::File::open(archive).unwrap()).unwrap();
    let name = zip.file_names().find(|n| n.ends_with("models/model.json")).unwrap().to_string();
    let mut out = Vec::new();
    zip.by_name(&name).unwrap().read_to_end(&mut out).unwrap();
    out
}
