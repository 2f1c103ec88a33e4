//! Reading `.pt2` archives: every fixture opens, weights read back, corrupt inputs fail cleanly.

mod common;

use std::io::{Cursor, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use import::ImportError;
use import::pt2::schema::{Argument, InputSpec, OutputSpec, ScalarType};
use import::pt2::{PayloadKind, Pt2Archive};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipArchive, ZipWriter};

fn open_ok(path: &Path) -> Pt2Archive {
    match Pt2Archive::open(path) {
        Ok(a) => a,
        Err(e) => panic!("{e}"),
    }
}

/// Every value a graph uses is defined before its use, and every tensor has metadata.
fn check_graph(path: &Path, graph: &import::pt2::schema::Graph) {
    for input in &graph.inputs {
        if let Some(name) = input.as_tensor_name() {
            assert!(
                graph.tensor_values.contains_key(name),
                "{}: no meta for {name}",
                path.display()
            );
        }
    }
    for node in &graph.nodes {
        assert!(
            node.target.contains('.'),
            "{}: odd target {}",
            path.display(),
            node.target
        );
        for input in &node.inputs {
            if let Argument::AsGraph(g) = &input.arg {
                check_graph(path, &g.graph);
            }
        }
        for out in &node.outputs {
            if let Some(name) = out.as_tensor_name() {
                assert!(
                    graph.tensor_values.contains_key(name),
                    "{}: no meta for {name}",
                    path.display()
                );
            }
        }
    }
}

fn check_archive(path: &Path) -> Pt2Archive {
    let archive = open_ok(path);
    let program = archive.program();
    assert_eq!(program.schema_version.major, 8);
    check_graph(path, &program.graph_module.graph);
    for (name, info) in archive.weights().chain(archive.constants()) {
        let bytes = archive.weight_bytes(name).unwrap();
        assert_eq!(
            bytes.len() as u64,
            info.byte_len,
            "{}: {name}",
            path.display()
        );
        assert!(info.numel() as usize * info.dtype.element_size().unwrap() <= bytes.len());
    }
    archive
}

#[test]
fn export_and_bench_archives_open() {
    let mut count = 0;
    for group in ["export", "bench"] {
        for file in ["model.pt2", "core.pt2"] {
            for path in common::cases(group, file) {
                check_archive(&path);
                count += 1;
            }
        }
    }
    if common::fixtures().is_some() {
        assert_eq!(count, 40, "expected 20 programs with two archives each");
    }
}

#[test]
fn every_op_archive_opens() {
    let cases = common::cases("ops", "core.pt2");
    for path in &cases {
        check_archive(path);
    }
    if common::fixtures().is_some() {
        assert!(cases.len() > 1000, "only {} op cases found", cases.len());
    }
}

#[test]
fn mlp_weights_read_back() {
    let Some(root) = common::fixtures() else {
        return;
    };
    let archive = open_ok(&root.join("export/mlp/model.pt2"));
    let weights: Vec<(&str, u64, Vec<u64>)> = archive
        .weights()
        .map(|(n, i)| (n, i.byte_len, i.sizes.clone()))
        .collect();
    assert_eq!(
        weights,
        vec![
            ("fc1.weight", 2048, vec![32, 16]),
            ("fc1.bias", 128, vec![32]),
            ("fc2.weight", 1024, vec![8, 32]),
            ("fc2.bias", 32, vec![8]),
        ]
    );
    for (name, info) in archive.weights() {
        assert_eq!(info.dtype, ScalarType::Float32);
        assert_eq!(info.kind, PayloadKind::Parameter);
        assert!(info.is_contiguous());
        let bytes = archive.weight_bytes(name).unwrap();
        assert_eq!(bytes.len(), info.numel() as usize * 4);
        let values: Vec<f32> = bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert!(
            values.iter().all(|v| v.is_finite() && v.abs() < 1.0),
            "{name}: {values:?}"
        );
    }
    assert!(matches!(
        archive.weight_bytes("nope"),
        Err(ImportError::UnknownWeight { .. })
    ));
    let sig = &archive.program().graph_module.signature;
    assert!(
        matches!(&sig.input_specs[0], InputSpec::Parameter(p) if p.parameter_name == "fc1.weight")
    );
    assert!(matches!(&sig.output_specs[0], OutputSpec::UserOutput(_)));
}

#[test]
fn buffers_constants_and_symbols() {
    let Some(root) = common::fixtures() else {
        return;
    };
    let archive = open_ok(&root.join("export/buffer_mutation/core.pt2"));
    let sig = &archive.program().graph_module.signature;
    assert!(
        sig.input_specs
            .iter()
            .any(|s| matches!(s, InputSpec::Buffer(b) if b.persistent))
    );
    assert!(
        sig.output_specs
            .iter()
            .any(|s| matches!(s, OutputSpec::BufferMutation(_)))
    );
    assert!(
        archive
            .weights()
            .any(|(_, i)| i.kind == PayloadKind::Buffer)
    );

    let archive = open_ok(&root.join("export/mlp_dynamic/model.pt2"));
    let ranges = &archive.program().range_constraints;
    assert_eq!(ranges.len(), 1);
    let range = ranges.values().next().unwrap();
    assert_eq!((range.min_val, range.max_val), (Some(1), Some(4096)));

    let archive = open_ok(&root.join("export/cond/model.pt2"));
    let graphs: Vec<&str> = archive
        .program()
        .graph_module
        .graph
        .nodes
        .iter()
        .flat_map(|n| &n.inputs)
        .filter_map(|i| match &i.arg {
            Argument::AsGraph(g) => Some(g.name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(graphs, ["true_graph_0", "false_graph_0"]);
}

#[test]
fn open_is_lazy() {
    let Some(root) = common::fixtures() else {
        return;
    };
    let path = root.join("bench/bench_lstm_cell/core.pt2");
    let _ = open_ok(&path);
    let start = Instant::now();
    let archive = open_ok(&path);
    let elapsed = start.elapsed();
    eprintln!("Pt2Archive::open({}) took {elapsed:?}", path.display());
    assert!(archive.weights().count() == 4);
}

// Corrupt archives, derived from export/mlp/model.pt2.

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A file in the temp folder, removed on drop.
struct TempFile(PathBuf);

impl TempFile {
    fn new(bytes: &[u8]) -> TempFile {
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let path =
            std::env::temp_dir().join(format!("import-pt2-test-{}-{n}.pt2", std::process::id()));
        std::fs::write(&path, bytes).unwrap();
        TempFile(path)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Rewrites the mlp archive: `edit` may replace or drop each entry's bytes.
fn rewrite_mlp(
    method: CompressionMethod,
    mut edit: impl FnMut(&str, Vec<u8>) -> Option<Vec<u8>>,
) -> Option<TempFile> {
    let root = common::fixtures()?;
    let bytes = std::fs::read(root.join("export/mlp/model.pt2")).unwrap();
    let mut zip = ZipArchive::new(Cursor::new(bytes)).unwrap();
    let mut out = ZipWriter::new(Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default().compression_method(method);
    for i in 0..zip.len() {
        let mut file = zip.by_index(i).unwrap();
        let name = file.name().to_owned();
        let mut data = Vec::new();
        file.read_to_end(&mut data).unwrap();
        if let Some(data) = edit(&name, data) {
            out.start_file(name, options).unwrap();
            out.write_all(&data).unwrap();
        }
    }
    Some(TempFile::new(&out.finish().unwrap().into_inner()))
}

fn edit_json(data: Vec<u8>, f: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let mut value: serde_json::Value = serde_json::from_slice(&data).unwrap();
    f(&mut value);
    serde_json::to_vec(&value).unwrap()
}

#[test]
fn compressed_entries_are_inflated() {
    let Some(file) = rewrite_mlp(CompressionMethod::Deflated, |_, d| Some(d)) else {
        return;
    };
    let root = common::fixtures().unwrap();
    let stored = open_ok(&root.join("export/mlp/model.pt2"));
    let deflated = open_ok(&file.0);
    assert_eq!(stored.program(), deflated.program());
    for (name, _) in stored.weights() {
        assert_eq!(
            stored.weight_bytes(name).unwrap(),
            deflated.weight_bytes(name).unwrap()
        );
        // The second access is served from the cache.
        assert_eq!(
            stored.weight_bytes(name).unwrap(),
            deflated.weight_bytes(name).unwrap()
        );
    }
}

#[test]
fn truncated_zip_is_rejected() {
    let Some(root) = common::fixtures() else {
        return;
    };
    let bytes = std::fs::read(root.join("export/mlp/model.pt2")).unwrap();
    for len in [0, 10, bytes.len() / 2, bytes.len() - 10] {
        let file = TempFile::new(&bytes[..len]);
        let err = Pt2Archive::open(&file.0).unwrap_err();
        assert!(
            matches!(err, ImportError::NotZip { .. }),
            "len {len}: {err}"
        );
        assert!(err.to_string().contains(&file.0.display().to_string()));
    }
    let err = Pt2Archive::open(root.join("does/not/exist.pt2")).unwrap_err();
    assert!(matches!(err, ImportError::Io { .. }), "{err}");
}

#[test]
fn missing_model_json_is_rejected() {
    let Some(file) = rewrite_mlp(CompressionMethod::Stored, |name, d| {
        (!name.ends_with("models/model.json")).then_some(d)
    }) else {
        return;
    };
    let err = Pt2Archive::open(&file.0).unwrap_err();
    assert!(matches!(err, ImportError::MissingModelJson { .. }), "{err}");
}

#[test]
fn unsupported_schema_version_is_rejected() {
    let Some(file) = rewrite_mlp(CompressionMethod::Stored, |name, d| {
        Some(if name.ends_with("models/model.json") {
            edit_json(d, |v| v["schema_version"]["major"] = 99.into())
        } else {
            d
        })
    }) else {
        return;
    };
    let err = Pt2Archive::open(&file.0).unwrap_err();
    assert!(
        matches!(
            err,
            ImportError::UnsupportedSchemaVersion {
                major: 99,
                minor: 20,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("99.20"), "{err}");
}

#[test]
fn garbage_json_reports_line_and_column() {
    let Some(file) = rewrite_mlp(CompressionMethod::Stored, |name, d| {
        Some(if name.ends_with("models/model.json") {
            b"{\n  \"graph_module\": [1,,]\n}".to_vec()
        } else {
            d
        })
    }) else {
        return;
    };
    let err = Pt2Archive::open(&file.0).unwrap_err();
    match &err {
        ImportError::Json {
            entry,
            line,
            column,
            ..
        } => {
            assert_eq!(entry, "model/models/model.json");
            assert_eq!((*line, *column), (2, 22), "{err}");
        }
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn schema_mismatch_reports_json_error() {
    let Some(file) = rewrite_mlp(CompressionMethod::Stored, |name, d| {
        Some(if name.ends_with("models/model.json") {
            edit_json(d, |v| {
                v["graph_module"]["graph"]["outputs"][0] = serde_json::json!({"as_frobnicator": 1})
            })
        } else {
            d
        })
    }) else {
        return;
    };
    let err = Pt2Archive::open(&file.0).unwrap_err();
    assert!(matches!(err, ImportError::Json { .. }), "{err}");
    assert!(err.to_string().contains("as_frobnicator"), "{err}");
}

#[test]
fn weight_beyond_file_is_rejected() {
    let Some(file) = rewrite_mlp(CompressionMethod::Stored, |name, d| {
        Some(if name.ends_with("model_weights_config.json") {
            edit_json(d, |v| {
                v["config"]["fc1.bias"]["tensor_meta"]["storage_offset"] =
                    serde_json::json!({"as_int": 1})
            })
        } else {
            d
        })
    }) else {
        return;
    };
    let err = Pt2Archive::open(&file.0).unwrap_err();
    match &err {
        ImportError::WeightTooShort {
            name,
            needed,
            actual,
            ..
        } => {
            assert_eq!((name.as_str(), *needed, *actual), ("fc1.bias", 132, 128));
        }
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn missing_weight_file_is_rejected() {
    let Some(file) = rewrite_mlp(CompressionMethod::Stored, |name, d| {
        (!name.ends_with("weights/weight_2")).then_some(d)
    }) else {
        return;
    };
    let err = Pt2Archive::open(&file.0).unwrap_err();
    assert!(
        matches!(&err, ImportError::WeightMissing { name, .. } if name == "fc2.weight"),
        "{err}"
    );
}

#[test]
fn undeclared_weight_is_rejected() {
    let Some(file) = rewrite_mlp(CompressionMethod::Stored, |name, d| {
        Some(if name.ends_with("model_weights_config.json") {
            edit_json(d, |v| {
                v["config"].as_object_mut().unwrap().remove("fc2.bias");
            })
        } else {
            d
        })
    }) else {
        return;
    };
    let err = Pt2Archive::open(&file.0).unwrap_err();
    assert!(
        matches!(&err, ImportError::WeightUndeclared { name, .. } if name == "fc2.bias"),
        "{err}"
    );
}

#[test]
fn duplicate_names_are_rejected() {
    let Some(file) = rewrite_mlp(CompressionMethod::Stored, |name, d| {
        Some(if name.ends_with("model_weights_config.json") {
            let text = String::from_utf8(d).unwrap();
            // Repeat the first entry under the same key.
            let body = text.trim_start_matches("{\"config\": {");
            let first_end = body.find("}}, ").unwrap() + 4;
            format!("{{\"config\": {{{}{}", &body[..first_end], body).into_bytes()
        } else {
            d
        })
    }) else {
        return;
    };
    let err = Pt2Archive::open(&file.0).unwrap_err();
    assert!(
        matches!(&err, ImportError::DuplicateName { name, .. } if name == "fc1.weight"),
        "{err}"
    );
}
