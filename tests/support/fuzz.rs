//! The oracles of the coverage-guided fuzz targets in `fuzz/`, one function per reader. Each
//! takes the fuzzer's bytes and returns `Err` when a property every input must have is broken
//! (a printed module that does not parse back, an error without a position); a panic is a bug
//! the fuzzer reports on its own. `tests/fuzz_regressions.rs` replays the inputs the fuzzers
//! found through the same functions, so a fixed crash stays fixed under `cargo test`.

use std::cell::RefCell;
use std::io::{Cursor, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ir::{Context, PrintOptions, parse_module, print_module, verify};

/// The targets, by the names of their binaries in `fuzz/fuzz_targets/` and their regression
/// directories under `tests/data/fuzz/`.
pub const TARGETS: &[&str] = &[
    "ir_text",
    "schema",
    "pt2_archive",
    "pt2_model_json",
    "fx_text",
    "torchscript_text",
    "program_archive",
    "safetensors",
    "filecheck",
    "unpickle",
    "torchscript_source",
];

/// Runs the oracle of `target` on `data`.
pub fn run(target: &str, data: &[u8]) -> Result<(), String> {
    match target {
        "ir_text" => ir_text(data),
        "schema" => schema(data),
        "pt2_archive" => pt2_archive(data),
        "pt2_model_json" => pt2_model_json(data),
        "fx_text" => text_import(data, import::Format::Fx, "fuzz.fx.txt"),
        "torchscript_text" => text_import(data, import::Format::TorchScript, "fuzz.graph.txt"),
        "program_archive" => program_archive(data),
        "safetensors" => safetensors(data),
        "filecheck" => filecheck(data),
        "unpickle" => unpickle(data),
        "torchscript_source" => torchscript_source(data),
        other => Err(format!("no fuzz target `{other}`")),
    }
}

thread_local! {
    /// One context per thread: declaring every ATen op costs a millisecond, far more than
    /// most inputs take to parse.
    static CONTEXT: Context = {
        let mut ctx = crate::context();
        ctx.set_allow_unregistered(true);
        ctx
    };
}

fn with_context<T>(f: impl FnOnce(&Context) -> T) -> T {
    CONTEXT.with(f)
}

/// IR text: whatever parses must print, in both forms, to text that parses back and prints the
/// same (a fixed point); whatever does not parse gets a diagnostic with a line and column.
pub fn ir_text(data: &[u8]) -> Result<(), String> {
    let Ok(text) = std::str::from_utf8(data) else { return Ok(()) };
    with_context(|ctx| match parse_module(ctx, text, "fuzz.ir") {
        Ok(m) => {
            let _ = verify(ctx, &m);
            for opts in [PrintOptions::default(), PrintOptions { generic: true, debug_info: true }] {
                let printed = print_module(ctx, &m, opts);
                let again = parse_module(ctx, &printed, "printed.ir").map_err(|d| format!("printed output does not parse: {d}\n{printed}"))?;
                let twice = print_module(ctx, &again, opts);
                if twice != printed {
                    return Err(format!("printing is not a fixed point:\n{printed}\n---\n{twice}"));
                }
            }
            Ok(())
        }
        Err(d) => {
            if d.loc.file_line_col().is_none() {
                return Err(format!("diagnostic without a position: {d}"));
            }
            let _ = d.render("fuzz.ir", text);
            Ok(())
        }
    })
}

/// ATen schema strings: a parsed schema prints in the canonical spelling, which parses back to
/// the same schema; an error names a column inside the text (or just past its end).
pub fn schema(data: &[u8]) -> Result<(), String> {
    let Ok(text) = std::str::from_utf8(data) else { return Ok(()) };
    match text.parse::<ir::schema::FunctionSchema>() {
        Ok(s) => {
            let printed = s.to_string();
            let again: ir::schema::FunctionSchema = printed.parse().map_err(|e: ir::schema::SchemaError| format!("printed schema `{printed}` does not parse: {}", e.message))?;
            if again != s {
                return Err(format!("`{text}` printed as `{printed}`, which parses to another schema"));
            }
            Ok(())
        }
        Err(e) if e.column == 0 || e.column > text.chars().count() + 1 => {
            Err(format!("error at column {} of a {}-character schema: {}", e.column, text.chars().count(), e.message))
        }
        Err(_) => Ok(()),
    }
}

/// Imports a program and verifies what the importer returns.
fn import_checked(name: &str, bytes: Arc<[u8]>, format: import::Format) -> Result<(), String> {
    with_context(|ctx| match import::import_bytes(ctx, Path::new(name), bytes, format) {
        Ok(p) => verify(ctx, &p.module).map_err(|d| format!("imported IR does not verify: {d}")),
        Err(e) => {
            let message = e.to_string();
            if message.contains(name) {
                Ok(())
            } else {
                Err(format!("the error does not name the input: {message}"))
            }
        }
    })
}

/// The bytes of a `.pt2` archive.
pub fn pt2_archive(data: &[u8]) -> Result<(), String> {
    import_checked("fuzz.pt2", Arc::from(data), import::Format::Pt2)
}

/// The archive `model.json` is fuzzed inside: `DIALECT_FUZZ_PT2_BASE`, or the `mlp` program of
/// the fixture corpus beside the workspace.
pub fn pt2_base_archive() -> PathBuf {
    std::env::var_os("DIALECT_FUZZ_PT2_BASE")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::shared_fixtures().join("export/mlp/model.pt2"))
}

thread_local! {
    static PT2_BASE: RefCell<Option<Vec<u8>>> = const { RefCell::new(None) };
}

/// `model.json` of a `.pt2` archive: the bytes replace that entry of an intact archive, so the
/// fuzzer works on the program's graph, signature and tensor metadata rather than on the zip.
pub fn pt2_model_json(data: &[u8]) -> Result<(), String> {
    let base = PT2_BASE.with(|cell| -> Result<Vec<u8>, String> {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            let path = pt2_base_archive();
            *cell = Some(std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?);
        }
        Ok(cell.clone().unwrap_or_default())
    })?;
    let archive = replace_entry(&base, "models/model.json", data).map_err(|e| format!("cannot rebuild the base archive: {e}"))?;
    import_checked("fuzz.pt2", Arc::from(archive), import::Format::Pt2)
}

/// The zip `base` with the entry whose name ends with `suffix` holding `bytes` instead.
fn replace_entry(base: &[u8], suffix: &str, bytes: &[u8]) -> zip::result::ZipResult<Vec<u8>> {
    let mut zin = zip::ZipArchive::new(Cursor::new(base))?;
    let mut out = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for i in 0..zin.len() {
        let mut entry = zin.by_index(i)?;
        let name = entry.name().to_string();
        out.start_file(name.as_str(), options)?;
        if name.ends_with(suffix) {
            out.write_all(bytes)?;
        } else {
            let mut content = Vec::new();
            entry.read_to_end(&mut content)?;
            out.write_all(&content)?;
        }
    }
    Ok(out.finish()?.into_inner())
}

/// FX or TorchScript graph text.
pub fn text_import(data: &[u8], format: import::Format, name: &str) -> Result<(), String> {
    if std::str::from_utf8(data).is_err() {
        return Ok(());
    }
    import_checked(name, Arc::from(data), format)
}

/// The project's program archive (`.dar`), which is read from a mapped file: the bytes go to a
/// per-process file in memory-backed storage where there is one.
pub fn program_archive(data: &[u8]) -> Result<(), String> {
    let dir = Path::new("/dev/shm");
    let dir = if dir.is_dir() { dir.to_path_buf() } else { std::env::temp_dir() };
    let path = dir.join(format!("dialect-fuzz-{}-{:?}.dar", std::process::id(), std::thread::current().id()));
    std::fs::write(&path, data).map_err(|e| format!("{}: {e}", path.display()))?;
    let outcome = with_context(|ctx| match import::archive::load(ctx, &path) {
        Ok(p) => {
            for (name, w) in p.weights.iter() {
                // Every weight the reader accepted must be readable in full.
                w.contiguous_bytes().map_err(|e| format!("accepted weight `{name}` cannot be read: {e}"))?;
            }
            Ok(())
        }
        Err(e) => {
            let message = e.to_string();
            if message.contains(&*path.to_string_lossy()) { Ok(()) } else { Err(format!("the error does not name the archive: {message}")) }
        }
    });
    let _ = std::fs::remove_file(&path);
    outcome
}

/// A safetensors file of inputs: whatever loads has the bytes its shapes need.
pub fn safetensors(data: &[u8]) -> Result<(), String> {
    if let Ok(tensors) = runtime::io::load_safetensors_bytes(data) {
        for (name, t) in &tensors {
            let expected = t.numel().checked_mul(t.dtype().size_bytes()).ok_or_else(|| format!("`{name}`: byte size overflows"))?;
            let bytes = t.to_bytes().map_err(|e| format!("`{name}` loaded but cannot be read: {e}"))?;
            if bytes.len() != expected {
                return Err(format!("`{name}`: {} bytes for {expected}", bytes.len()));
            }
        }
    }
    Ok(())
}

/// A FileCheck check file and its input, split at the first NUL byte: checking either succeeds
/// or reports an error; nothing panics.
pub fn filecheck(data: &[u8]) -> Result<(), String> {
    let Ok(text) = std::str::from_utf8(data) else { return Ok(()) };
    let (checks, input) = text.split_once('\0').unwrap_or((text, ""));
    let config = filecheck::Config::default();
    if let Ok(file) = filecheck::CheckFile::parse(checks, "fuzz.checks", &config) {
        let _ = file.run(input, "fuzz.input");
    }
    Ok(())
}

/// A pickle as TorchScript archives hold them, every persistent storage taken to exist: decoding
/// either fails with an error at an offset inside the input, or succeeds with every tensor
/// inside the elements its storage declares. The value is walked once per shared part, as a
/// consumer would, without recursion.
pub fn unpickle(data: &[u8]) -> Result<(), String> {
    use import::torchscript_pt::pickle::{self, Value};
    let mut storages = 0;
    let value = match pickle::unpickle(data, &mut |_| {
        storages += 1;
        Ok(storages - 1)
    }) {
        Ok(v) => v,
        Err(e) if e.offset > data.len() as u64 || e.message.is_empty() => {
            return Err(format!("error without a position in the {}-byte input: {e:?}", data.len()));
        }
        Err(_) => return Ok(()),
    };
    let mut seen = std::collections::HashSet::new();
    let mut work = vec![&value];
    while let Some(v) = work.pop() {
        match v {
            Value::Tuple(items) if seen.insert(items.as_ptr() as usize) => work.extend(items.iter()),
            Value::List(l) if seen.insert(&**l as *const _ as usize) => work.extend(l.items.iter()),
            Value::Dict(d) if seen.insert(&**d as *const _ as usize) => work.extend(d.entries.iter().flat_map(|(k, v)| [k, v])),
            Value::Object(o) if seen.insert(&**o as *const _ as usize) => work.extend(o.state.iter()),
            Value::Tensor(t) => {
                let elem = t.storage.dtype.size_bytes() as u128;
                let reach = if t.sizes.contains(&0) {
                    0
                } else {
                    let last = t.sizes.iter().zip(&t.strides).map(|(&s, &st)| (s as u128 - 1) * st as u128).sum::<u128>();
                    (t.offset as u128 + last + 1) * elem
                };
                if reach > t.storage.numel as u128 * elem {
                    return Err(format!("an accepted tensor reaches {reach} bytes of a {}-element storage", t.storage.numel));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// The bytes of a TorchScript archive whose `code/__torch__.py` is `source`: its class `M` is the
/// root module, with no state.
pub fn torchscript_archive(source: &str) -> Vec<u8> {
    use zip::write::SimpleFileOptions;
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let stored = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let entries: [(&str, &[u8]); 4] = [
        // PROTO 2, GLOBAL `__torch__ M`, EMPTY_TUPLE, NEWOBJ, EMPTY_DICT, BUILD, STOP.
        ("model/data.pkl", b"\x80\x02c__torch__\nM\n)\x81}b."),
        ("model/constants.pkl", b"\x80\x02)."),
        ("model/version", b"3\n"),
        ("model/code/__torch__.py", source.as_bytes()),
    ];
    for (name, bytes) in entries {
        // Writing into memory cannot fail.
        let _ = zip.start_file(name, stored);
        let _ = zip.write_all(bytes);
    }
    zip.finish().map(Cursor::into_inner).unwrap_or_default()
}

/// TorchScript source (`code/__torch__.py` of an archive whose root module is its class `M`):
/// compiling it either gives a program that verifies or fails, and an error in the source names
/// a line and column inside it.
pub fn torchscript_source(data: &[u8]) -> Result<(), String> {
    let Ok(text) = std::str::from_utf8(data) else { return Ok(()) };
    let bytes: Arc<[u8]> = torchscript_archive(text).into();
    with_context(|ctx| match import::import_bytes(ctx, Path::new("fuzz.pt"), bytes, import::Format::TorchScriptArchive) {
        Ok(p) => verify(ctx, &p.module).map_err(|d| format!("compiled IR does not verify: {d}")),
        Err(import::ImportError::TorchScriptSource { line, col, message, .. }) => {
            let lines = text.split('\n').count();
            let width = text.split('\n').nth(line.saturating_sub(1)).map_or(0, |l| l.chars().count());
            if line == 0 || line > lines || col == 0 || col > width + 1 || message.is_empty() {
                Err(format!("error at {line}:{col} outside the {lines}-line source: {message}"))
            } else {
                Ok(())
            }
        }
        Err(e) => {
            let message = e.to_string();
            if message.contains("fuzz.pt") { Ok(()) } else { Err(format!("the error does not name the input: {message}")) }
        }
    })
}
