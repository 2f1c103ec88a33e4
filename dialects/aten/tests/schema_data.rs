//! The aten dialect's schema data file, `src/schemas.txt`: its checks and its generator.
//!
//! The file holds one PyTorch schema per line, grouped under `#` headers and sorted within each
//! group. It is generated from the PyTorch registry and the fixture corpus in
//! `../shared/fixtures` plus the op lists in `tools/`; run
//! `BLESS=1 cargo test -p dialect-aten --test schema_data` to regenerate it (see
//! `tools/README.md`). Without `../shared` the checks that need it print why and pass, unless
//! `CI=true`, where they fail.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use ir::schema::{FunctionSchema, OpName, parse_schema, registry_lines};

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn data_file() -> PathBuf {
    manifest_dir().join("src/schemas.txt")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The shared fixture directory, or `None` (after printing why) when it is absent.
fn fixtures() -> Option<PathBuf> {
    let dir = manifest_dir().join("../../../shared/fixtures");
    if dir.join("aten_schemas.txt").is_file() {
        return Some(dir);
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{} is required when CI=true", dir.display());
    }
    eprintln!("skipping: {} is absent", dir.display());
    None
}

/// The schema lines of the data file with their 1-based line numbers.
fn data_lines(text: &str) -> Vec<(usize, &str)> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|(i, l)| (i + 1, l.strip_prefix("core ").unwrap_or(l)))
        .collect()
}

fn parse_data(text: &str) -> Vec<FunctionSchema> {
    data_lines(text)
        .into_iter()
        .map(|(n, l)| parse_schema(l).unwrap_or_else(|e| panic!("src/schemas.txt:{n}: {e}\n{l}")))
        .collect()
}

#[test]
fn every_line_parses_and_is_canonical() {
    let text = read(&data_file());
    let lines = data_lines(&text);
    assert!(!lines.is_empty());
    for (n, line) in lines {
        let schema = parse_schema(line).unwrap_or_else(|e| panic!("src/schemas.txt:{n}: {e}"));
        assert_eq!(
            schema.to_string(),
            line,
            "src/schemas.txt:{n} is not in canonical form"
        );
        assert_eq!(schema.namespace, "aten", "src/schemas.txt:{n}");
    }
}

#[test]
fn no_duplicates() {
    let text = read(&data_file());
    let mut seen = HashSet::new();
    for schema in parse_data(&text) {
        let name = schema.op_name();
        assert!(seen.insert(name.clone()), "{name} is declared twice");
    }
}

#[test]
fn groups_have_headers_and_are_sorted() {
    let text = read(&data_file());
    let mut group: Vec<&str> = Vec::new();
    let mut headers = 0;
    for (i, line) in text.lines().enumerate() {
        if line.starts_with('#') {
            headers += 1;
            group.clear();
        } else if !line.trim().is_empty() {
            assert!(
                headers > 0,
                "src/schemas.txt:{}: schema before the first header",
                i + 1
            );
            if let Some(prev) = group.last() {
                assert!(
                    *prev < line,
                    "src/schemas.txt:{}: not sorted after {prev}",
                    i + 1
                );
            }
            group.push(line);
        }
    }
}

#[test]
fn every_core_schema_of_the_registry_is_present() {
    let Some(fixtures) = fixtures() else { return };
    let registry = read(&fixtures.join("aten_schemas.txt"));
    let text = read(&data_file());
    let ours: HashSet<&str> = data_lines(&text).into_iter().map(|(_, l)| l).collect();
    let missing: Vec<&str> = registry_lines(&registry)
        .filter(|l| l.core && !ours.contains(l.schema))
        .map(|l| l.schema)
        .collect();
    assert!(
        missing.is_empty(),
        "core schemas missing:\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_op_the_fixtures_use_is_present() {
    let Some(fixtures) = fixtures() else { return };
    let used = FixtureOps::collect(&fixtures);
    let text = read(&data_file());
    let schemas = parse_data(&text);
    let ours: HashSet<OpName> = schemas.iter().map(FunctionSchema::op).collect();
    let names: HashSet<&str> = schemas.iter().map(|s| s.name.as_str()).collect();
    let mut missing: Vec<String> = used
        .exact
        .iter()
        .filter(|(op, _)| !ours.contains(op))
        .map(|(op, from)| format!("{op} (used by {from})"))
        .collect();
    missing.extend(
        used.by_name
            .iter()
            .filter(|(name, _)| !names.contains(name.as_str()))
            .map(|(name, from)| format!("aten::{name} (used by {from})")),
    );
    // TorchScript names no overload: every overload of the name must be there.
    let registry = read(&fixtures.join("aten_schemas.txt"));
    for line in registry_lines(&registry) {
        let Ok(schema) = parse_schema(line.schema) else {
            continue;
        };
        if used.by_name.contains_key(&schema.name) && !ours.contains(&schema.op()) {
            missing.push(format!(
                "{} (every overload of aten::{})",
                schema.op_name(),
                schema.name
            ));
        }
    }
    assert!(
        missing.is_empty(),
        "ops missing from src/schemas.txt:\n{}",
        missing.join("\n")
    );
}

/// The file is what the generator makes of today's registry, fixtures and op lists; with
/// `BLESS=1` it is rewritten instead.
#[test]
fn file_is_up_to_date() {
    let Some(fixtures) = fixtures() else { return };
    let generated = match generate(&fixtures) {
        Ok(text) => text,
        Err(e) => panic!("cannot generate src/schemas.txt:\n{e}"),
    };
    if std::env::var("BLESS").as_deref() == Ok("1") {
        std::fs::write(data_file(), &generated).expect("write src/schemas.txt");
        return;
    }
    let current = read(&data_file());
    if current != generated {
        let old: BTreeSet<&str> = current.lines().collect();
        let new: BTreeSet<&str> = generated.lines().collect();
        let diff: Vec<String> = new
            .difference(&old)
            .map(|l| format!("+ {l}"))
            .chain(old.difference(&new).map(|l| format!("- {l}")))
            .take(20)
            .collect();
        panic!(
            "src/schemas.txt is out of date; regenerate with \
             `BLESS=1 cargo test -p dialect-aten --test schema_data`:\n{}",
            diff.join("\n")
        );
    }
}

/// The ATen ops the fixture corpus uses, each with one place that uses it.
#[derive(Default)]
struct FixtureOps {
    /// Ops named with their overload (export graphs, op-suite metadata).
    exact: BTreeMap<OpName, String>,
    /// Op names without an overload (TorchScript graphs): every overload is used.
    by_name: BTreeMap<String, String>,
}

impl FixtureOps {
    fn collect(fixtures: &Path) -> FixtureOps {
        let mut ops = FixtureOps::default();
        for kind in ["export", "bench", "ops"] {
            for dir in sorted_entries(&fixtures.join(kind)) {
                let meta = dir.join("meta.json");
                if meta.is_file() {
                    // The lists also hold Python builtins (`<built-in function getitem>`),
                    // higher-order ops (`cond`) and other namespaces: only ATen is ours.
                    let names = json_string_list(&read(&meta), "core_aten_ops");
                    for name in names.iter().filter(|n| n.starts_with("aten.")) {
                        ops.add_exact(name, &meta);
                    }
                }
                for graph in ["graph.fx.txt", "core.fx.txt"] {
                    let path = dir.join(graph);
                    if path.is_file() {
                        for name in words_after(&read(&path), "torch.ops.aten.", true) {
                            ops.add_exact(&format!("aten.{name}"), &path);
                        }
                    }
                }
            }
        }
        for path in sorted_entries(&fixtures.join("torchscript")) {
            if path.to_string_lossy().ends_with(".graph.txt") {
                for name in words_after(&read(&path), "aten::", false) {
                    ops.by_name
                        .entry(name)
                        .or_insert_with(|| path.display().to_string());
                }
            }
        }
        ops
    }

    fn add_exact(&mut self, name: &str, from: &Path) {
        let op = OpName::parse(name)
            .unwrap_or_else(|e| panic!("{}: bad op name `{name}`: {e}", from.display()));
        self.exact
            .entry(op)
            .or_insert_with(|| from.display().to_string());
    }
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(rd) => rd.filter_map(|e| e.ok().map(|e| e.path())).collect(),
        Err(_) => Vec::new(),
    };
    entries.sort();
    entries
}

/// The words that follow each occurrence of `prefix`: identifier characters, and dots when
/// `dotted` (`add.Tensor` after `torch.ops.aten.`).
fn words_after(text: &str, prefix: &str, dotted: bool) -> Vec<String> {
    text.match_indices(prefix)
        .filter_map(|(at, _)| {
            let rest = &text[at + prefix.len()..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || (dotted && c == '.')))
                .unwrap_or(rest.len());
            let word = rest[..end].trim_end_matches('.');
            (!word.is_empty()).then(|| word.to_string())
        })
        .collect()
}

/// The strings of the JSON array under `"key"` (enough JSON for the fixtures' `meta.json`).
fn json_string_list(json: &str, key: &str) -> Vec<String> {
    let Some(at) = json.find(&format!("\"{key}\"")) else {
        return Vec::new();
    };
    let rest = &json[at..];
    let (Some(open), Some(close)) = (rest.find('['), rest.find(']')) else {
        return Vec::new();
    };
    if close < open {
        return Vec::new();
    }
    rest[open + 1..close]
        .split(',')
        .map(|s| s.trim().trim_matches('"').to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Builds the data file from the registry in `fixtures`: every schema, the core ones first.
fn generate(fixtures: &Path) -> Result<String, String> {
    let registry_text = read(&fixtures.join("aten_schemas.txt"));
    let mut core = Vec::new();
    let mut rest = Vec::new();
    let mut seen: HashSet<OpName> = HashSet::new();
    for line in registry_lines(&registry_text) {
        let schema = parse_schema(line.schema)
            .map_err(|e| format!("aten_schemas.txt:{}: {e}", line.line))?;
        if schema.namespace != "aten" {
            return Err(format!(
                "aten_schemas.txt:{}: not an aten schema",
                line.line
            ));
        }
        if !seen.insert(schema.op()) {
            return Err(format!(
                "aten_schemas.txt:{}: {} is registered twice",
                line.line,
                schema.op_name()
            ));
        }
        if line.core {
            core.push(format!("core {}", line.schema))
        } else {
            rest.push(line.schema.to_string())
        }
    }
    let groups = [
        (
            "Core ATen: every schema the PyTorch registry tags core (the opset of run_decompositions()).",
            core,
        ),
        ("Every other schema of the registry.", rest),
    ];
    let mut out = String::from(
        "# Schemas of the ATen ops the aten dialect declares, one per line in PyTorch's syntax: every\n\
         # schema of PyTorch's registry; `core ` marks the core ATen ones. Generated by dialects/aten/tests/schema_data.rs from\n\
         # ../shared/fixtures/aten_schemas.txt; see tools/README.md.\n",
    );
    for (header, mut lines) in groups {
        lines.sort_unstable();
        out.push_str(&format!("\n# {header}\n"));
        for line in lines {
            out.push_str(&line);
            out.push('\n');
        }
    }
    Ok(out)
}
