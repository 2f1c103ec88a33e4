//! Mutation fuzzing of the readers: thousands of corrupted `.pt2` archives (damaged bytes, and
//! damaged `model.json` inside an intact zip), FX texts and TorchScript texts must import to
//! verified IR or fail with an error — never panic. Deterministic (seeded; `FUZZ_SEED`,
//! `FUZZ_ITERS`), so a failure reproduces; the seed and input are printed.

mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next() % n as u64) as usize }
    }
}

fn settings() -> (u64, usize) {
    let seed = std::env::var("FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0xF0CA_CC1A);
    let iters = std::env::var("FUZZ_ITERS").ok().and_then(|s| s.parse().ok()).unwrap_or(1500);
    (seed, iters)
}

fn context() -> ir::Context {
    let mut ctx = ir::Context::new();
    dialect_prim::register(&mut ctx);
    dialect_aten::register(&mut ctx);
    ctx
}

/// Replaces, deletes, duplicates or inserts pieces of `text`, favouring the tokens each format is built from.
fn mutate_text(rng: &mut Rng, text: &str, tokens: &[&str]) -> String {
    let mut b = text.as_bytes().to_vec();
    for _ in 0..1 + rng.below(3) {
        if b.is_empty() {
            break;
        }
        let at = rng.below(b.len());
        match rng.below(5) {
            0 => {
                let end = (at + 1 + rng.below(16)).min(b.len());
                b.drain(at..end);
            }
            1 => {
                let t = tokens[rng.below(tokens.len())];
                b.splice(at..at, t.bytes());
            }
            2 => {
                let from = rng.below(b.len());
                let len = rng.below(40).min(b.len() - from);
                let piece = b[from..from + len].to_vec();
                b.splice(at..at, piece);
            }
            3 => b.truncate(at),
            _ => b[at] = b"0123456789-.,:\"[]{}()%="[rng.below(23)],
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

fn no_panic<T>(what: &str, seed: u64, i: usize, input: &str, f: impl FnOnce() -> T) -> T {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(_) => panic!("{what}: iteration {i} (seed {seed:#x}) panicked on input:\n{input}"),
    }
}

fn temp_dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("dialect-fuzz-{}-{test}", std::process::id()));
    let _ = std::fs::create_dir_all(&d);
    d
}

/// Rewrites `src` (a zip) with `model.json` replaced by `json`.
fn rezip(src: &Path, json: &str, dst: &Path) -> std::io::Result<()> {
    let mut archive = zip::ZipArchive::new(std::fs::File::open(src)?)?;
    let mut out = zip::ZipWriter::new(std::fs::File::create(dst)?);
    let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i)?;
        let name = entry.name().to_string();
        let mut data = Vec::new();
        entry.read_to_end(&mut data)?;
        out.start_file(name.as_str(), opts)?;
        if name.ends_with("models/model.json") {
            out.write_all(json.as_bytes())?;
        } else {
            out.write_all(&data)?;
        }
    }
    out.finish()?;
    Ok(())
}

fn model_json(src: &Path) -> Option<String> {
    let mut archive = zip::ZipArchive::new(std::fs::File::open(src).ok()?).ok()?;
    for i in 0..archive.len() {
        let mut e = archive.by_index(i).ok()?;
        if e.name().ends_with("models/model.json") {
            let mut s = String::new();
            e.read_to_string(&mut s).ok()?;
            return Some(s);
        }
    }
    None
}

fn import_checked(ctx: &ir::Context, path: &Path, format: import::Format) -> Result<(), String> {
    let p = import::import_file(ctx, path, Some(format)).map_err(|e| e.to_string())?;
    // Whatever imports must be valid IR.
    ir::verify(ctx, &p.module).map_err(|d| format!("imported IR does not verify: {d}"))
}

#[test]
fn corrupted_pt2_archives_fail_cleanly() {
    let Some(root) = common::fixtures() else { return };
    let (seed, iters) = settings();
    let ctx = context();
    let sources: Vec<PathBuf> = ["export/mlp/core.pt2", "export/cond/core.pt2", "export/mlp_dynamic/core.pt2", "ops/abs__float32_0/core.pt2"]
        .iter()
        .map(|p| root.join(p))
        .collect();
    let tmp = temp_dir("pt2");
    let json_tokens = [
        "{\"as_none\": null}", "null", "-1", "99999999999999999999", "\"s0\"", "[]", "{}", "\"as_tensor\"",
        "\"torch.ops.aten.nope.default\"", "1e308", "\"Infinity\"", "true", "\"%\"", "[[", "\"name\": \"x\"",
    ];
    let mut rng = Rng(seed);
    let (mut ok, mut rejected) = (0, 0);
    for i in 0..iters {
        let src = &sources[i % sources.len()];
        let path = tmp.join(format!("case{}.pt2", i % 4));
        let described = if rng.below(3) == 0 {
            // Damage the bytes of the archive itself.
            let mut bytes = std::fs::read(src).unwrap();
            for _ in 0..1 + rng.below(4) {
                if bytes.is_empty() {
                    break;
                }
                let at = rng.below(bytes.len());
                match rng.below(3) {
                    0 => bytes.truncate(at),
                    1 => bytes[at] ^= 1 << rng.below(8),
                    _ => bytes[at] = rng.next() as u8,
                }
            }
            std::fs::write(&path, &bytes).unwrap();
            format!("bytes of {} damaged", src.display())
        } else {
            let json = model_json(src).unwrap();
            let bad = mutate_text(&mut rng, &json, &json_tokens);
            rezip(src, &bad, &path).unwrap();
            bad
        };
        match no_panic("pt2", seed, i, &described, || import_checked(&ctx, &path, import::Format::Pt2)) {
            Ok(()) => ok += 1,
            Err(_) => rejected += 1,
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    println!("pt2: seed {seed:#x}: {ok} imported, {rejected} rejected with an error");
    assert!(rejected > 0);
}

fn fuzz_text(group_glob: &[PathBuf], format: import::Format, ext: &str, tokens: &[&str]) {
    let (seed, iters) = settings();
    let ctx = context();
    let texts: Vec<String> = group_glob.iter().filter_map(|p| std::fs::read_to_string(p).ok()).collect();
    assert!(!texts.is_empty(), "no inputs");
    let tmp = temp_dir(ext.trim_start_matches('.'));
    let mut rng = Rng(seed ^ 0xABCD);
    let (mut ok, mut rejected) = (0, 0);
    for i in 0..iters {
        let bad = mutate_text(&mut rng, &texts[i % texts.len()], tokens);
        let path = tmp.join(format!("case{}{ext}", i % 4));
        std::fs::write(&path, &bad).unwrap();
        match no_panic(ext, seed, i, &bad, || import_checked(&ctx, &path, format)) {
            Ok(()) => ok += 1,
            Err(e) => {
                // Text errors carry a position.
                assert!(e.chars().any(|c| c.is_ascii_digit()), "error without a position: {e}");
                rejected += 1
            }
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    println!("{ext}: seed {seed:#x}: {ok} imported, {rejected} rejected with an error");
    assert!(rejected > 0);
}

#[test]
fn corrupted_fx_texts_fail_cleanly() {
    let Some(root) = common::fixtures() else { return };
    let mut files: Vec<PathBuf> = Vec::new();
    for group in ["export", "bench"] {
        for e in std::fs::read_dir(root.join(group)).unwrap().flatten() {
            files.push(e.path().join("graph.fx.txt"));
            files.push(e.path().join("core.fx.txt"));
        }
    }
    files.sort();
    let tokens = ["%x", "%", "call_function[target=torch.ops.aten.add.Tensor]", "(", ")", "[", "]", "kwargs = {}", "None", "torch.float32", "-inf", "[num_users=1]", "placeholder", "return", ","];
    fuzz_text(&files, import::Format::Fx, ".fx.txt", &tokens);
}

#[test]
fn corrupted_torchscript_texts_fail_cleanly() {
    let Some(root) = common::fixtures() else { return };
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("torchscript"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".graph.txt"))
        .collect();
    files.sort();
    let tokens = ["%1", "%x.1 : Tensor", "prim::Constant[value=1]()", "aten::add", "block0(", "-> (", "prim::If", "prim::Loop", "# a.py:1:2", "(Tensor, Tensor)", "int[]", ":", "="];
    fuzz_text(&files, import::Format::TorchScript, ".graph.txt", &tokens);
}
