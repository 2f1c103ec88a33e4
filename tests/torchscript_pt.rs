//! TorchScript archives (`torch.jit.save`, `.pt`) of `../shared/fixtures/torchscript_pt`: every
//! one loads, its module tree agrees with the classes its `code/` declares and with the
//! fixture's `meta.json`, every tensor lies inside its storage, the debug tables unpickle; and
//! archives damaged on purpose (rewritten from a real one) fail with errors that say what is
//! wrong. Every archive also compiles (the TorchScript frontend) to IR that verifies and
//! round-trips as text, and runs at -O0 and -O2 with PyTorch's outputs; errors in its source are
//! positioned, and mutated sources never panic. Skips with a reason when the corpus is absent
//! (fails under `CI=true`).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use import::torchscript_pt::{self, Module, Slot, TorchScriptArchive, Value, pickle};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipArchive, ZipWriter};

fn corpus() -> Option<PathBuf> {
    support::required_fixture_dir("torchscript_pt")
}

fn cases(root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root).unwrap().flatten().map(|e| e.path()).filter(|p| p.join("model.pt").is_file()).collect();
    dirs.sort();
    dirs
}

fn load(path: &Path) -> TorchScriptArchive {
    torchscript_pt::load(path).unwrap_or_else(|e| panic!("{e}"))
}

fn meta(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("meta.json")).unwrap()).unwrap()
}

/// Every submodule's class is the one its parent's class header annotates the attribute with.
fn check_annotations(archive: &TorchScriptArchive, module: &Module) {
    let (file, class) = module.class.rsplit_once('.').unwrap();
    let source = &archive.sources()[&format!("{}.py", file.replace('.', "/"))];
    let header: String = source.split(&format!("class {class}(")).nth(1).unwrap().lines().take_while(|l| !l.starts_with("  def ")).collect::<Vec<_>>().join("\n");
    for a in &module.attributes {
        if let Slot::Submodule(sub) = &a.slot {
            let plain = format!("  {} : {}", a.name, sub.class);
            let quoted = format!("__annotations__[\"{}\"] = {}", a.name, sub.class);
            assert!(header.contains(&plain) || header.contains(&quoted), "{}: `{}` is not annotated `{}`:\n{header}", module.class, a.name, sub.class);
            check_annotations(archive, sub);
        }
    }
}

#[test]
fn every_archive_loads_with_its_declared_structure() {
    let Some(root) = corpus() else { return };
    let dirs = cases(&root);
    assert_eq!(dirs.len(), 17, "{dirs:?}");
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let archive = load(&dir.join("model.pt"));
        let meta = meta(&dir);
        assert_eq!(archive.prefix(), "model/");
        assert!(archive.root().class.starts_with("__torch__."), "{name}: {}", archive.root().class);
        let forward_self = meta["forward_schema"].as_str().unwrap().split_whitespace().nth(0).unwrap().trim_start_matches("forward(").to_string();
        assert_eq!(archive.root().class, forward_self, "{name}");
        check_annotations(&archive, archive.root());

        // The sources are the archive's `code/` entries that meta.json lists.
        let listed: Vec<&str> = meta["code_files"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
        for (file, _) in archive.sources() {
            assert!(listed.contains(&format!("code/{file}").as_str()), "{name}: {file}");
            assert!(archive.debug_pkl().contains_key(file), "{name}: {file} has no debug table");
        }
        assert_eq!(listed.len(), archive.sources().len() + archive.debug_pkl().len(), "{name}");
        let gelu = meta["node_kinds"].as_array().unwrap().iter().any(|k| k == "aten::gelu");
        assert_eq!(archive.version(), if gelu { 10 } else { 3 }, "{name}");

        // Every tensor's view lies inside its storage, which the archive maps.
        let params = archive.root().named_parameters();
        let buffers = archive.root().named_buffers();
        let constants: Vec<_> = archive.constants().iter().map(|c| c.as_tensor().unwrap()).collect();
        for t in params.iter().map(|(_, t)| *t).chain(buffers.iter().map(|(_, t)| *t)).chain(constants.iter().copied()) {
            let view = archive.tensor_view(t).unwrap();
            let elem = view.dtype.size_bytes() as u64;
            let reach = if view.sizes.contains(&0) { 0 } else { (view.offset + view.sizes.iter().zip(view.strides).map(|(s, st)| (s - 1) * st).sum::<u64>() + 1) * elem };
            assert!(reach <= view.storage.len() as u64, "{name}: view reaches {reach} of {}", view.storage.len());
            assert_eq!(view.storage.len() as u64, t.storage.numel * elem);
        }
        if meta["how"] != "script+freeze" {
            let numel: u64 = params.iter().map(|(_, t)| t.sizes.iter().product::<u64>()).sum();
            assert_eq!(numel, meta["params"].as_u64().unwrap(), "{name}: parameter elements");
        }
        for (file, bytes) in archive.debug_pkl() {
            let table = pickle::unpickle_plain(bytes).unwrap_or_else(|e| panic!("{name}: {file}.debug_pkl: {e}"));
            let t = table.as_tuple().unwrap();
            assert_eq!(t[0].as_str(), Some("FORMAT_WITH_STRING_TABLE"), "{name}: {file}");
        }
        println!("ok {name:<24} {} parameters, {} buffers, {} constants, {} sources", params.len(), buffers.len(), constants.len(), archive.sources().len());
    }
}

#[test]
fn module_trees_match_their_classes() {
    let Some(root) = corpus() else { return };
    let mlp = load(&root.join("mlp/model.pt"));
    assert_eq!(mlp.root().class, "__torch__.fixture_models.MLP");
    let fc1 = mlp.root().submodule("fc1").unwrap();
    assert_eq!(fc1.class, "__torch__.torch.nn.modules.linear.Linear");
    assert_eq!(mlp.root().submodule("fc2").unwrap().class, "__torch__.torch.nn.modules.linear.___torch_mangle_0.Linear");
    let shapes: Vec<(String, Vec<u64>)> = mlp.root().named_parameters().into_iter().map(|(n, t)| (n, t.sizes.clone())).collect();
    let expected = [("fc1.weight", vec![32, 16]), ("fc1.bias", vec![32]), ("fc2.weight", vec![8, 32]), ("fc2.bias", vec![8])];
    assert_eq!(shapes, expected.iter().map(|(n, s)| (n.to_string(), s.clone())).collect::<Vec<_>>());
    let w = mlp.root().named_parameters()[0].1;
    assert!(w.requires_grad);
    assert_eq!(mlp.storage_entry(w), Some("model/data/0"));
    assert_eq!(mlp.tensor_view(w).unwrap().dtype, ir::DType::F32);
    assert_eq!(fc1.get("training"), Some(&Slot::Plain(Value::Bool(false))));

    let stats = load(&root.join("running_stats/model.pt"));
    let buffers: Vec<String> = stats.root().named_buffers().into_iter().map(|(n, _)| n).collect();
    assert_eq!(buffers, ["count", "ema"]);
    assert!(stats.root().named_parameters().is_empty());
    assert!(matches!(stats.root().get("momentum"), Some(Slot::Plain(Value::Float(_)))));

    let frozen = load(&root.join("conv_block_frozen/model.pt"));
    assert_eq!(frozen.constants().len(), 8);
    for c in frozen.constants() {
        let t = c.as_tensor().unwrap();
        assert!(frozen.storage_entry(t).unwrap().starts_with("model/constants/"));
        assert_eq!(frozen.tensor_view(t).unwrap().dtype, ir::DType::F32);
    }
    assert!(frozen.root().attributes.is_empty());

    let bert = load(&root.join("hf_bert/model.pt"));
    assert_eq!(bert.constants().len(), 1);
    let c = bert.constants()[0].as_tensor().unwrap();
    assert!(c.sizes.is_empty());
    assert_eq!(bert.tensor_view(c).unwrap().dtype, ir::DType::I64);
    let layer = bert.root().submodule("encoder").unwrap().submodule("layer").unwrap();
    assert!(layer.submodule("0").unwrap().class.ends_with("BertLayer"));

    // Plain attributes keep their TorchScript type tags (`build_intlist` lists).
    let mobilenet = load(&root.join("tv_mobilenet_v3_small/model.pt"));
    let conv = mobilenet.root().submodule("features").unwrap().submodule("0").unwrap().submodule("0").unwrap();
    let padding = conv.get("_reversed_padding_repeated_twice");
    let Some(Slot::Plain(Value::List(padding))) = padding else { panic!("{padding:?}") };
    assert_eq!(padding.ty.as_deref(), Some("List[int]"));
    assert_eq!(padding.items, vec![Value::Int(1); 4]);
}

/// The entries of the archive at `path`, in order, with whether each is stored.
fn entries(path: &Path) -> Vec<(String, Vec<u8>)> {
    let mut zip = ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap();
    (0..zip.len())
        .map(|i| {
            let mut e = zip.by_index(i).unwrap();
            let mut bytes = Vec::new();
            e.read_to_end(&mut bytes).unwrap();
            (e.name().to_string(), bytes)
        })
        .collect()
}

/// Writes `entries` as a zip (stored, 64-byte aligned like PyTorch's, except where `deflate`
/// names an entry) and loads it.
fn load_rewritten(name: &str, entries: &[(String, Vec<u8>)], deflate: Option<&str>) -> Result<TorchScriptArchive, String> {
    let path = support::scratch_dir(name).join("model.pt");
    let mut zip = ZipWriter::new(std::fs::File::create(&path).unwrap());
    for (entry, bytes) in entries {
        let method = if deflate == Some(entry.as_str()) { CompressionMethod::Deflated } else { CompressionMethod::Stored };
        zip.start_file(entry.as_str(), SimpleFileOptions::default().compression_method(method).with_alignment(64)).unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap();
    let out = torchscript_pt::load(&path).map_err(|e| e.to_string());
    if let Err(e) = &out {
        assert!(e.starts_with(&path.display().to_string()), "{e}");
    }
    out
}

fn edit(entries: &mut [(String, Vec<u8>)], name: &str, f: impl FnOnce(&mut Vec<u8>)) {
    f(&mut entries.iter_mut().find(|(n, _)| n == name).unwrap().1);
}

fn find(haystack: &[u8], needle: &[u8]) -> usize {
    haystack.windows(needle.len()).position(|w| w == needle).unwrap()
}

#[test]
fn damaged_archives_fail_with_clear_errors() {
    let Some(root) = corpus() else { return };
    let original = entries(&root.join("mlp/model.pt"));
    // Rewritten unchanged, and under another top-level folder, it loads.
    load_rewritten("ts_same", &original, None).unwrap();
    let renamed: Vec<_> = original.iter().map(|(n, b)| (n.replacen("model/", "weights_v2/", 1), b.clone())).collect();
    assert_eq!(load_rewritten("ts_renamed", &renamed, None).unwrap().prefix(), "weights_v2/");

    let mut e = original.clone();
    e.retain(|(n, _)| n != "model/data.pkl");
    let err = load_rewritten("ts_no_data_pkl", &e, None).unwrap_err();
    assert!(err.contains("archive entry `data.pkl` is missing"), "{err}");

    let mut e = original.clone();
    edit(&mut e, "model/data/0", |b| b.truncate(100));
    let err = load_rewritten("ts_short_storage", &e, None).unwrap_err();
    assert!(err.contains("`model/data.pkl`: storage `model/data/0` holds 100 bytes, but the pickle declares 512 elements of 4 bytes (2048 bytes) at byte offset 250"), "{err}");

    let mut e = original.clone();
    let mut at = 0;
    edit(&mut e, "model/data.pkl", |b| {
        at = find(b, b"ctorch._utils\n_rebuild_tensor_v2\n");
        b.splice(at..at + 33, b"cos\nsystem\n".iter().copied());
    });
    let err = load_rewritten("ts_os_system", &e, None).unwrap_err();
    assert!(err.contains(&format!("`model/data.pkl`: unsupported pickle global 'os system' at byte offset {at}")), "{err}");

    let mut e = original.clone();
    edit(&mut e, "model/data.pkl", |b| b.truncate(b.len() / 2));
    let err = load_rewritten("ts_truncated", &e, None).unwrap_err();
    assert!(err.contains("`model/data.pkl`: the pickle ends"), "{err}");

    let err = load_rewritten("ts_deflated", &original, Some("model/data/1")).unwrap_err();
    assert!(err.contains("storage `model/data/1` is compressed; tensor data must be stored uncompressed"), "{err}");

    let mut e = original.clone();
    e.retain(|(n, _)| n != "model/data/2");
    let err = load_rewritten("ts_missing_storage", &e, None).unwrap_err();
    assert!(err.contains("storage `model/data/2` is not in the archive"), "{err}");

    let mut e = original.clone();
    e.retain(|(n, _)| !n.ends_with("linear.py"));
    let err = load_rewritten("ts_no_source", &e, None).unwrap_err();
    assert!(err.contains("class `__torch__.torch.nn.modules.linear.Linear` has no source under `code/`"), "{err}");

    let mut e = original.clone();
    edit(&mut e, "model/byteorder", |b| *b = b"big".to_vec());
    let err = load_rewritten("ts_big_endian", &e, None).unwrap_err();
    assert!(err.contains("byte order `big` is not supported"), "{err}");
}

#[test]
fn dialect_opt_prints_the_compiled_program() {
    let Some(root) = corpus() else { return };
    let out = std::process::Command::new(support::tool("dialect-opt")).arg(root.join("mlp/model.pt")).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("func.func @forward(%x: tensor<*x!prim.any> {prim.input = \"x\"}"), "{stdout}");
    assert!(stdout.contains("{prim.param = \"fc1.weight\"}") && stdout.contains("aten.linear"), "{stdout}");
}

#[test]
fn every_archive_compiles_to_ir_that_round_trips() {
    let Some(root) = corpus() else { return };
    let ctx = support::context();
    for dir in cases(&root) {
        let program = import::import_file(&ctx, &dir.join("model.pt"), None).unwrap_or_else(|e| panic!("{e}"));
        ir::verify(&ctx, &program.module).unwrap();
        let text = ir::print_module(&ctx, &program.module, ir::PrintOptions::default());
        let again = ir::parse_module(&ctx, &text, "round-trip").unwrap_or_else(|d| panic!("{}: {d}\n{text}", dir.display()));
        assert_eq!(ir::print_module(&ctx, &again, ir::PrintOptions::default()), text, "{}", dir.display());
        // Every weight the program reads is one of its arguments, by state name.
        for (name, _) in program.weights.iter() {
            assert!(text.contains(&format!("= \"{name}\"}}")), "{}: `{name}` is not an argument", dir.display());
        }
    }
}

#[test]
fn every_archive_matches_pytorch_at_o0_and_o2() {
    let Some(root) = corpus() else { return };
    for dir in cases(&root) {
        let io = dir.join("io.safetensors");
        for level in ["-O0", "-O2"] {
            let out = std::process::Command::new(support::tool("dialect-run"))
                .arg(dir.join("model.pt"))
                .args(["--inputs".as_ref(), io.as_os_str(), "--compare".as_ref(), io.as_os_str(), level.as_ref()])
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && stdout.contains("\nmatch"),
                "{} {level}:\n{stdout}\n{}",
                dir.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            // The stateful module is compared after both of its calls.
            if meta(&dir)["calls"] == 2 {
                assert!(stdout.contains("call2.out.0"), "{stdout}");
            }
        }
    }
}

/// `mlp` with `edit` applied to its module's source; the error of compiling it.
fn compile_error(name: &str, edit_source: impl FnOnce(&str) -> String) -> String {
    let root = corpus().unwrap();
    let mut e = entries(&root.join("mlp/model.pt"));
    edit(&mut e, "model/code/__torch__/fixture_models.py", |b| *b = edit_source(std::str::from_utf8(b).unwrap()).into_bytes());
    let archive = load_rewritten(name, &e, None).unwrap();
    let ctx = support::context();
    let err = import::torchscript_pt::compile::compile(&ctx, &archive).unwrap_err().to_string();
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn source_errors_point_at_the_archive_code_and_the_original_source() {
    if corpus().is_none() {
        return;
    }
    // An operator that does not exist: the line and column of the call, the line shown with a
    // caret, and where it was compiled from (the archive's debug table).
    let err = compile_error("ts_unknown_op", |s| s.replace("return (fc2).forward(_0, )", "return torch.frobnicate(_0)"));
    assert!(err.contains("code/__torch__/fixture_models.py:"), "{err}");
    assert!(err.contains("error: unknown operator `aten::frobnicate`"), "{err}");
    assert!(err.contains("fixture_models.py:13:12: error"), "{err}");
    assert!(err.contains("    return torch.frobnicate(_0)\n             ^"), "{err}");
    assert!(err.contains("note: compiled from fixture_models.py:"), "{err}");
    // Bad indentation.
    let err = compile_error("ts_bad_indent", |s| s.replacen("\n    return ", "\n   return ", 1));
    assert!(err.contains("fixture_models.py:") && err.contains("unindent does not match"), "{err}");
    // A construct the compiler refuses is named.
    let err = compile_error("ts_with", |s| s.replacen("    return ", "    with x:\n      pass\n    return ", 1));
    assert!(err.contains("`with` statement is not supported"), "{err}");
    // A name that is not bound.
    let err = compile_error("ts_undefined", |s| s.replacen("return ", "return undefined_name + ", 1));
    assert!(err.contains("`undefined_name` is not defined"), "{err}");
}

#[test]
fn mutated_sources_never_panic_and_errors_are_positioned() {
    let Some(root) = corpus() else { return };
    // The sources of the archives, each made the root module `M` of a minimal archive, then
    // mutated byte- and token-wise; the oracle is the fuzz target's.
    let mut sources = Vec::new();
    for dir in cases(&root) {
        let archive = load(&dir.join("model.pt"));
        for text in archive.sources().values() {
            if let Some(at) = text.find("class ") {
                let rest = &text[at + 6..];
                let name_end = rest.find('(').unwrap_or(0);
                sources.push(format!("{}class M{}", &text[..at], &rest[name_end..]));
            }
        }
    }
    sources.sort();
    sources.dedup();
    let tokens = ["if ", "else:", "for i in range(3):", "while ", "return ", "  ", "(", ")", "[", "]", ",", ":", "=", "None", "torch.add(", "self.", "getattr(", "annotate(List[int], [])", "\n", "break", "continue"];
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for (i, s) in sources.iter().enumerate() {
        support::fuzz::torchscript_source(s.as_bytes()).unwrap_or_else(|v| panic!("source {i}: {v}"));
        for _ in 0..40 {
            let mut t = s.clone().into_bytes();
            match next() % 3 {
                0 if !t.is_empty() => {
                    let at = (next() as usize) % t.len();
                    t.truncate(at);
                }
                1 if !t.is_empty() => {
                    let at = (next() as usize) % t.len();
                    let bytes = b" ()[]:,=.\n_a0";
                    t[at] = bytes[(next() as usize) % bytes.len()];
                }
                _ => {
                    let at = (next() as usize) % (t.len() + 1);
                    let tok = tokens[(next() as usize) % tokens.len()];
                    t.splice(at..at, tok.bytes());
                }
            }
            support::fuzz::torchscript_source(&t).unwrap_or_else(|v| panic!("source {i}: {v}\n{}", String::from_utf8_lossy(&t)));
        }
    }
}

/// Refinement and the statements printed code rarely has, compiled from source and run: `x is not
/// None` and `isinstance` narrow an optional in the branch where they hold; `continue` and
/// `break` in a `for` loop.
#[test]
fn refinement_continue_and_break_compile_and_run() {
    let source = "class M(Module):
  __parameters__ = []
  __buffers__ = []
  def forward(self: __torch__.M, x: Tensor, y: Optional[Tensor]=None) -> Tensor:
    if y is not None:
      z = torch.add(x, y)
    else:
      z = x
    if isinstance(y, Tensor):
      z = torch.mul(z, y)
    for i in range(3):
      if i == 1:
        continue
      z = torch.add(z, 1)
      if i == 2:
        break
      z = torch.mul(z, 10)
    return z
";
    let ctx = support::context();
    let bytes: std::sync::Arc<[u8]> = support::fuzz::torchscript_archive(source).into();
    let program = import::import_bytes(&ctx, Path::new("refine.pt"), bytes, import::Format::TorchScriptArchive).unwrap_or_else(|e| panic!("{e}"));
    let weights = driver::fixture::weights_from_import(&program.weights).unwrap();
    let compiled = runtime::compile(&program.module, &ctx, &weights, runtime::CompileOptions::default()).unwrap();
    let x = runtime::Tensor::full(ir::DType::F32, &[2], runtime::Scalar::Float(1.0)).unwrap();
    let y = runtime::Tensor::full(ir::DType::F32, &[2], runtime::Scalar::Float(2.0)).unwrap();
    let run = |y: runtime::IValue| {
        let out = compiled.runtime().run(&[runtime::IValue::Tensor(x.clone()), y]).unwrap();
        match &out[..] {
            [runtime::IValue::Tensor(t)] => t.get_f64(&[0]).unwrap(),
            other => panic!("{other:?}"),
        }
    };
    // With y: (1 + 2) * 2 = 6; i = 0: (6 + 1) * 10 = 70; i = 1 skipped; i = 2: 71, then break.
    assert_eq!(run(runtime::IValue::Tensor(y)), 71.0);
    // Without: 1; i = 0: 20; i = 2: 21.
    assert_eq!(run(runtime::IValue::None), 21.0);
}

/// The README's TorchScript example runs on a fresh machine (it needs no fixture corpus).
#[test]
fn the_bundled_scripted_example_matches_pytorch() {
    let dir = support::workspace_root().join("examples/scripted_mlp");
    let io = dir.join("io.safetensors");
    let out = std::process::Command::new(support::tool("dialect-run"))
        .arg(dir.join("model.pt"))
        .args(["--inputs".as_ref(), io.as_os_str(), "--compare".as_ref(), io.as_os_str()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && stdout.contains("\nmatch"), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
}
