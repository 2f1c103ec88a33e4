//! Every program of the fixture corpus imports, verifies, prints and re-parses to the same text.

mod common;

use std::path::{Path, PathBuf};

use import::{Format, ImportError};
use ir::{Context, PrintOptions, parse_module, print_module, verify};

fn ctx() -> Context {
    let mut c = Context::new();
    dialect_prim::register(&mut c);
    dialect_aten::register(&mut c);
    c
}

/// Fixtures that use operators outside the aten dialect; they must fail naming the target.
const UNSUPPORTED: &[(&str, &str)] = &[
    (
        "nn.functional.linear_cross_entropy.chunked__float32_0",
        "torch.ops.torch_nn._linear_cross_entropy_batch_chunked.default",
    ),
    (
        "nn.functional.linear_cross_entropy.chunked__float32_1",
        "torch.ops.torch_nn._linear_cross_entropy_batch_chunked.default",
    ),
    (
        "nn.functional.linear_cross_entropy.chunked_none__float32_0",
        "torch.ops.torch_nn._linear_cross_entropy_batch_chunked_no_reduction.default",
    ),
];

/// Imports `path` and checks the text round trip in both forms; returns the error message on failure.
fn round_trip(ctx: &Context, path: &Path, format: Option<Format>) -> Result<(), String> {
    let program = import::import_file(ctx, path, format).map_err(|e| e.to_string())?;
    let m = &program.module;
    verify(ctx, m).map_err(|d| format!("verify: {d}"))?;
    for opts in [
        PrintOptions {
            generic: true,
            debug_info: true,
        },
        PrintOptions {
            generic: false,
            debug_info: true,
        },
        PrintOptions {
            generic: false,
            debug_info: false,
        },
    ] {
        let text = print_module(ctx, m, opts);
        let again = parse_module(ctx, &text, "printed.ir")
            .map_err(|d| format!("re-parse ({opts:?}): {d}\n{text}"))?;
        verify(ctx, &again).map_err(|d| format!("re-verify ({opts:?}): {d}"))?;
        let text2 = print_module(ctx, &again, opts);
        if text != text2 {
            let line = text
                .lines()
                .zip(text2.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            return Err(format!(
                "printing differs after re-parse ({opts:?}) at line {}:\n{}\n{}",
                line + 1,
                text.lines().nth(line).unwrap_or(""),
                text2.lines().nth(line).unwrap_or("")
            ));
        }
    }
    Ok(())
}

fn files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for group in ["export", "bench"] {
        for f in ["model.pt2", "core.pt2", "graph.fx.txt", "core.fx.txt"] {
            out.extend(common::cases(group, f));
        }
    }
    out.extend(common::cases("ops", "core.pt2"));
    if let Some(root) = common::fixtures()
        && let Ok(entries) = std::fs::read_dir(root.join("torchscript"))
    {
        let mut ts: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().ends_with(".graph.txt"))
            .collect();
        ts.sort();
        out.extend(ts);
    }
    out
}

#[test]
fn whole_corpus_imports_and_round_trips() {
    let ctx = ctx();
    let files = files();
    if files.is_empty() {
        return;
    }
    let mut failures = Vec::new();
    let mut ok = 0;
    for path in &files {
        let case = path
            .parent()
            .and_then(|p| p.file_name())
            .and_then(|n| n.to_str())
            .unwrap_or("");
        let expected = UNSUPPORTED.iter().find(|(c, _)| *c == case);
        match (round_trip(&ctx, path, None), expected) {
            (Ok(()), None) => ok += 1,
            (Err(e), Some((_, target))) if e.contains(target) => ok += 1,
            (Ok(()), Some(_)) => failures.push(format!(
                "{}: expected to be unsupported, but imported",
                path.display()
            )),
            (Err(e), _) => failures.push(format!("{}: {e}", path.display())),
        }
    }
    eprintln!(
        "{ok} of {} files import and round-trip (or fail as expected)",
        files.len()
    );
    if !failures.is_empty() {
        let n = failures.len();
        failures.truncate(400);
        panic!("{n} failures:\n{}", failures.join("\n"));
    }
}

#[test]
fn unsupported_targets_name_the_node() {
    let Some(root) = common::fixtures() else {
        return;
    };
    let ctx = ctx();
    let (case, target) = UNSUPPORTED[0];
    let path = root.join("ops").join(case).join("core.pt2");
    match import::import_file(&ctx, &path, None) {
        Err(ImportError::UnknownTarget {
            target: t, node, ..
        }) => {
            assert_eq!(t, target);
            assert!(!node.is_empty());
        }
        other => panic!("expected an unknown target, got {other:?}"),
    }
}
