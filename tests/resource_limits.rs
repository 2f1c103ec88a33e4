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
