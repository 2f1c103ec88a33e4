//! `DIALECT_ISA` pins the kernels to a lower instruction set: the MLP example computes outputs
//! that match its expected ones on the generic path, on AVX2 and on the host's default path,
//! `--bench` names the path that ran, and an unknown value is an error that runs nothing.

use std::process::{Command, Output};

use kernels::Isa;
use support::{tool, workspace_root};

/// `dialect-run -O2` on the MLP example with `DIALECT_ISA` set to `isa` (unset for `None`).
fn run_mlp(isa: Option<&str>, extra: &[&str]) -> Output {
    let dir = workspace_root().join("examples/mlp");
    let data = dir.join("io.safetensors");
    let mut cmd = Command::new(tool("dialect-run"));
    cmd.arg(dir.join("model.pt2")).arg("-O2").arg("--inputs").arg(&data).args(extra);
    match isa {
        Some(v) => cmd.env("DIALECT_ISA", v),
        None => cmd.env_remove("DIALECT_ISA"),
    };
    cmd.output().expect("run dialect-run")
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn every_isa_computes_the_expected_outputs() {
    let data = workspace_root().join("examples/mlp/io.safetensors");
    let compare = ["--compare", data.to_str().expect("a UTF-8 path")];
    for isa in [Some("generic"), Some("avx2"), None] {
        let out = run_mlp(isa, &compare);
        let all = text(&out);
        assert!(out.status.success(), "DIALECT_ISA={isa:?}: {all}");
        assert!(all.lines().any(|l| l.starts_with("match")), "DIALECT_ISA={isa:?}: no match line in\n{all}");
        assert!(!all.contains("FAIL"), "DIALECT_ISA={isa:?}: {all}");
    }
}

#[test]
fn the_bench_table_names_the_isa_that_ran() {
    let bench = ["--bench", "--iters", "3", "--warmup", "1"];
    for (isa, want) in [(Some("generic"), Isa::Generic), (Some("avx2"), Isa::Avx2.min(Isa::host())), (None, Isa::host())] {
        let out = run_mlp(isa, &bench);
        let all = text(&out);
        assert!(out.status.success(), "DIALECT_ISA={isa:?}: {all}");
        let header = all.lines().find(|l| l.starts_with("| program |")).unwrap_or_else(|| panic!("no bench table in\n{all}"));
        let column = header.split('|').map(str::trim).position(|c| c == "isa").expect("an isa column");
        let row = all.lines().find(|l| l.starts_with("| ") && l.contains("model.pt2")).expect("a bench row");
        assert_eq!(row.split('|').map(str::trim).nth(column), Some(want.name()), "DIALECT_ISA={isa:?}: {row}");
    }
}

#[test]
fn an_unknown_isa_is_an_error() {
    let out = run_mlp(Some("sse9"), &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("DIALECT_ISA=\"sse9\" is not an instruction set"), "{err}");
}
