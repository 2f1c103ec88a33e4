//! Programs and inputs too large for memory are errors with a location and exit 1, never a
//! panic or an out-of-memory kill, and they leave no output file behind.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use support::{scratch_dir, tool, workspace_root};

/// A function of one relu over a tensor of type `ty`.
fn relu_program(dir: &Path, ty: &str) -> std::path::PathBuf {
    let p = dir.join("p.ir");
    fs::write(&p, format!("func.func @f(%x: {ty}) -> {ty} {{\n  %y = aten.relu %x : {ty}\n  func.return %y : {ty}\n}}\n")).unwrap();
    p
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_type_larger_than_the_address_space_is_refused_with_its_location() {
    let d = scratch_dir("huge-type");
    let p = relu_program(&d, "tensor<99999999999x99999999999xf32>");
    let run = Command::new(tool("dialect-run")).arg(&p).output().unwrap();
    assert_eq!(run.status.code(), Some(1), "{}", stderr(&run));
    let err = stderr(&run);
    assert!(err.contains("p.ir:1:1: error:") && err.contains("more than a process can address"), "{err}");
    let out = d.join("out.ir");
    let opt = Command::new(tool("dialect-opt")).arg(&p).arg("-o").arg(&out).output().unwrap();
    assert_eq!(opt.status.code(), Some(1), "{}", stderr(&opt));
    assert!(!out.exists(), "no output file for a program that does not verify");
}

#[test]
fn a_negative_static_dimension_is_refused() {
    let d = scratch_dir("negative-dim");
    let p = relu_program(&d, "tensor<2x-3xf32>");
    let run = Command::new(tool("dialect-opt")).arg(&p).output().unwrap();
    assert_ne!(run.status.code(), Some(0));
    assert!(!stderr(&run).contains("panicked"), "{}", stderr(&run));
}

#[test]
fn a_generated_input_over_the_memory_limit_is_an_error() {
    let d = scratch_dir("big-input");
    let p = relu_program(&d, "tensor<100000x100000x100xf32>");
    let run = Command::new(tool("dialect-run")).arg(&p).output().unwrap();
    assert_eq!(run.status.code(), Some(1), "{}", stderr(&run));
    assert!(stderr(&run).contains("input 'x' (#0)") && stderr(&run).contains("memory limit"), "{}", stderr(&run));
    // The same limit with symbolic sizes: too large a --dim is refused, a small one runs.
    let q = relu_program(&d, "tensor<?x?xf32, #prim.sym<s0, s1>>");
    let run = Command::new(tool("dialect-run")).arg(&q).args(["--dim", "s0=4000000000", "--dim", "s1=4000000000"]).output().unwrap();
    assert_eq!(run.status.code(), Some(1), "{}", stderr(&run));
    assert!(stderr(&run).contains("memory limit"), "{}", stderr(&run));
    let run = Command::new(tool("dialect-run")).arg(&q).args(["--dim", "s0=4", "--dim", "s1=3"]).output().unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
}

#[test]
fn the_memory_limit_bounds_every_allocation() {
    let mlp = workspace_root().join("examples/mlp/model.pt2");
    let io = workspace_root().join("examples/mlp/io.safetensors");
    let small = Command::new(tool("dialect-run")).arg(&mlp).arg("--inputs").arg(&io).env("DIALECT_MEMORY_LIMIT", "200").output().unwrap();
    assert_eq!(small.status.code(), Some(1), "{}", stderr(&small));
    assert!(stderr(&small).contains("would exceed the memory limit of 200 bytes"), "{}", stderr(&small));
    // The flag overrides the environment.
    let flag = Command::new(tool("dialect-run"))
        .arg(&mlp)
        .args(["--inputs"])
        .arg(&io)
        .args(["--compare"])
        .arg(&io)
        .args(["--memory-limit", "64M"])
        .env("DIALECT_MEMORY_LIMIT", "200")
        .output()
        .unwrap();
    assert_eq!(flag.status.code(), Some(0), "{}", stderr(&flag));
    let bad = Command::new(tool("dialect-run")).arg(&mlp).env("DIALECT_MEMORY_LIMIT", "lots").output().unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(stderr(&bad).contains("DIALECT_MEMORY_LIMIT: 'lots' is not a size"), "{}", stderr(&bad));
}

/// Runs `dialect-opt INPUT -o OUT` and checks that it is refused: exit 1, every one of `expect`
/// in the message, and no output file.
fn refused_by_opt(input: &Path, expect: &[&str]) {
    let out = input.with_extension("out");
    let run = Command::new(tool("dialect-opt")).arg(input).arg("-o").arg(&out).output().unwrap();
    let err = stderr(&run);
    assert_eq!(run.status.code(), Some(1), "{}: {err}", input.display());
    for e in expect {
        assert!(err.contains(e), "{}: expected `{e}` in: {err}", input.display());
    }
    assert!(!out.exists(), "{}: a refused input left an output file", input.display());
}

#[test]
fn deep_nesting_is_refused_in_every_text_format() {
    let d = scratch_dir("deep-nesting");
    let n = 100_000;
    let (open, close) = ("tuple<".repeat(n), ">".repeat(n));
    let p = d.join("types.ir");
    fs::write(&p, format!("func.func @f(%x: {open}f32{close}) {{\n  func.return\n}}\n")).unwrap();
    refused_by_opt(&p, &["types.ir:1:", "nesting too deep"]);
    let p = d.join("attrs.ir");
    fs::write(&p, format!("func.func @f() attributes {{a = {}{}}} {{\n  func.return\n}}\n", "[".repeat(n), "]".repeat(n))).unwrap();
    refused_by_opt(&p, &["attrs.ir:1:", "nesting too deep"]);
    let p = d.join("regions.ir");
    let depth = 20_000;
    let mut ir = String::from("func.func @f(%c: i1) {\n");
    ir.push_str(&"\"prim.If\"(%c) ({\n".repeat(depth));
    ir.push_str("\"prim.Yield\"() : () -> ()\n");
    ir.push_str(&"}, {\n\"prim.Yield\"() : () -> ()\n}) : (i1) -> ()\n".repeat(depth));
    ir.push_str("func.return\n}\n");
    fs::write(&p, ir).unwrap();
    refused_by_opt(&p, &["regions.ir:", "nesting too deep"]);
    let p = d.join("deep.fx.txt");
    let args = format!("{}%x{}", "(".repeat(n), ")".repeat(n));
    fs::write(&p, format!("graph():\n    %x : [num_users=1] = placeholder[target=x]\n    %r : [num_users=1] = call_function[target=torch.ops.aten.relu.default](args = ({args},), kwargs = {{}})\n    return (r,)\n")).unwrap();
    refused_by_opt(&p, &["deep.fx.txt:3:", "nesting too deep"]);
    let p = d.join("deep.graph.txt");
    fs::write(&p, format!("graph(%x : Tensor):\n  %1 : int[] = prim::Constant[value={}1{}]()\n  return (%x)\n", "[".repeat(n), "]".repeat(n))).unwrap();
    refused_by_opt(&p, &["deep.graph.txt:2:", "nesting too deep"]);
    let p = d.join("types.graph.txt");
    fs::write(&p, format!("graph(%x : {}Tensor{}):\n  return (%x)\n", "(".repeat(n), ")".repeat(n))).unwrap();
    refused_by_opt(&p, &["types.graph.txt:1:", "nesting too deep"]);
}

/// Copies the zip `src` to `dst`, replacing the entries `edit` returns new bytes for, and
/// compressing the entries named in `deflate`.
fn rezip(src: &Path, dst: &Path, deflate: &[&str], edit: impl Fn(&str, &[u8]) -> Option<Vec<u8>>) {
    use std::io::{Read, Write};
    let mut zin = zip::ZipArchive::new(fs::File::open(src).unwrap()).unwrap();
    let mut out = zip::ZipWriter::new(fs::File::create(dst).unwrap());
    for i in 0..zin.len() {
        let mut entry = zin.by_index(i).unwrap();
        let name = entry.name().to_string();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).unwrap();
        let method = if deflate.iter().any(|d| name.ends_with(d)) { zip::CompressionMethod::Deflated } else { zip::CompressionMethod::Stored };
        out.start_file(name.as_str(), zip::write::SimpleFileOptions::default().compression_method(method)).unwrap();
        out.write_all(&edit(&name, &bytes).unwrap_or(bytes)).unwrap();
    }
    out.finish().unwrap();
}

/// Rewrites the uncompressed size that the local and central headers of the entry `name`
/// declare: what a zip bomb lies about.
fn declare_size(zip_path: &Path, name: &str, size: u32) {
    let mut bytes = fs::read(zip_path).unwrap();
    let mut patched = 0;
    for (signature, name_len_at, size_at, header_len) in [(0x0403_4b50u32, 26, 22, 30), (0x0201_4b50, 28, 24, 46)] {
        let mut i = 0;
        while i + header_len <= bytes.len() {
            if u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap()) == signature {
                let len = u16::from_le_bytes(bytes[i + name_len_at..i + name_len_at + 2].try_into().unwrap()) as usize;
                if bytes.get(i + header_len..i + header_len + len) == Some(name.as_bytes()) {
                    bytes[i + size_at..i + size_at + 4].copy_from_slice(&size.to_le_bytes());
                    patched += 1;
                }
            }
            i += 1;
        }
    }
    assert_eq!(patched, 2, "both headers of `{name}` patched");
    fs::write(zip_path, bytes).unwrap();
}

#[test]
fn zip_entries_must_inflate_to_the_size_they_declare() {
    let d = scratch_dir("zip-bomb");
    let mlp = workspace_root().join("examples/mlp/model.pt2");
    // `model.json` followed by 64 MiB of spaces, which deflate to a few tens of kilobytes, in an
    // entry that declares only the JSON's own size.
    let bomb = d.join("bomb.pt2");
    let padding = 64 << 20;
    let json_len = std::cell::Cell::new(0);
    rezip(&mlp, &bomb, &["models/model.json"], |name, bytes| {
        name.ends_with("models/model.json").then(|| {
            json_len.set(bytes.len());
            let mut b = bytes.to_vec();
            b.resize(bytes.len() + padding, b' ');
            b
        })
    });
    assert!(fs::metadata(&bomb).unwrap().len() < 1 << 20);
    declare_size(&bomb, "model/models/model.json", json_len.get() as u32);
    refused_by_opt(&bomb, &["bomb.pt2", "model/models/model.json", "inflates to more than"]);
    // A declared size no deflate stream of that length can produce is refused before reading.
    let liar = d.join("liar.pt2");
    rezip(&mlp, &liar, &["models/model.json"], |_, _| None);
    declare_size(&liar, "model/models/model.json", u32::MAX);
    refused_by_opt(&liar, &["liar.pt2", "more than deflate can produce"]);
    // A truncated entry is not taken for whole.
    let short = d.join("short.pt2");
    rezip(&mlp, &short, &["models/model.json"], |_, _| None);
    declare_size(&short, "model/models/model.json", json_len.get() as u32 + 10);
    refused_by_opt(&short, &["short.pt2", "inflates to"]);
}

#[test]
fn weight_offsets_and_lengths_are_checked_before_mapping() {
    let d = scratch_dir("weight-bounds");
    let mlp = workspace_root().join("examples/mlp/model.pt2");
    // A storage shorter than its tensor needs.
    let short = d.join("short.pt2");
    rezip(&mlp, &short, &[], |name, bytes| name.ends_with("weights/weight_0").then(|| bytes[..100].to_vec()));
    refused_by_opt(&short, &["short.pt2", "fc1.weight", "needs 2048 bytes", "holds only 100"]);
    // A storage offset far past the storage, and sizes whose byte count overflows.
    let config = |from: &str, to: &str| {
        let (from, to) = (from.to_string(), to.to_string());
        move |name: &str, bytes: &[u8]| {
            name.ends_with("model_weights_config.json").then(|| String::from_utf8_lossy(bytes).replacen(&from, &to, 1).into_bytes())
        }
    };
    let offset = d.join("offset.pt2");
    rezip(&mlp, &offset, &[], config(r#""storage_offset": {"as_int": 0}"#, r#""storage_offset": {"as_int": 4611686018427387904}"#));
    refused_by_opt(&offset, &["offset.pt2", "fc1.weight"]);
    let huge = d.join("huge.pt2");
    rezip(&mlp, &huge, &[], config(r#""sizes": [{"as_int": 32}, {"as_int": 16}]"#, r#""sizes": [{"as_int": 99999999999}, {"as_int": 99999999999}]"#));
    refused_by_opt(&huge, &["huge.pt2", "fc1.weight"]);
    // The same checks on the program archive: a weight whose entry is cut short.
    let dar = d.join("mlp.dar");
    let save = Command::new(tool("dialect-opt")).arg(&mlp).arg("--emit-archive").arg(&dar).arg("-o").arg(d.join("mlp.ir")).output().unwrap();
    assert_eq!(save.status.code(), Some(0), "{}", stderr(&save));
    let cut = d.join("cut.dar");
    rezip(&dar, &cut, &[], |name, bytes| (name.starts_with("weights/") && bytes.len() > 16).then(|| bytes[..16].to_vec()));
    refused_by_opt(&cut, &["cut.dar", "needs", "holds only 16"]);
}

#[test]
fn an_exported_tensor_too_large_to_address_is_refused() {
    let d = scratch_dir("huge-meta");
    let mlp = workspace_root().join("examples/mlp/model.pt2");
    let p = d.join("huge.pt2");
    rezip(&mlp, &p, &[], |name, bytes| {
        name.ends_with("models/model.json").then(|| {
            let text = String::from_utf8_lossy(bytes);
            // The first layer's weight, as the graph declares it, becomes 99999999999 × 99999999999.
            text.replace(r#""sizes": [{"as_int": 32}, {"as_int": 16}]"#, r#""sizes": [{"as_int": 99999999999}, {"as_int": 99999999999}]"#).into_bytes()
        })
    });
    refused_by_opt(&p, &["huge.pt2"]);
    let run = Command::new(tool("dialect-run")).arg(&p).output().unwrap();
    assert_eq!(run.status.code(), Some(1), "{}", stderr(&run));
    assert!(stderr(&run).contains("huge.pt2") && !stderr(&run).contains("panicked"), "{}", stderr(&run));
}
