//! How the tools write output files (`-o`, `--emit-archive`, reproducers, IR tree dumps): a
//! regular file is replaced atomically, a device or FIFO is written in place and stays what it
//! is, `-` is standard output, and a bad target is an error that touches nothing.

use std::fs;
use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::{is_root, scratch_dir, skip, tool, workspace_root};

fn tour() -> PathBuf {
    workspace_root().join("examples/tour.ir")
}

fn opt(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(tool("dialect-opt")).args(args).output().expect("run dialect-opt")
}

fn os(s: &str) -> &std::ffi::OsStr {
    s.as_ref()
}

/// The IR `dialect-opt` prints for the tour, on standard output.
fn expected_tour() -> Vec<u8> {
    let out = opt(&[tour().as_os_str()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!out.stdout.is_empty());
    out.stdout
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

fn mkfifo(path: &Path) -> bool {
    Command::new("mkfifo").arg(path).status().map(|s| s.success()).unwrap_or(false)
}

#[test]
fn output_to_a_character_device_keeps_the_device() {
    if !is_root() {
        return skip("output_to_a_character_device_keeps_the_device", "mknod needs root", false);
    }
    let d = scratch_dir("chardev");
    let dev = d.join("fakenull");
    let made = Command::new("mknod").args(["-m", "666"]).arg(&dev).args(["c", "1", "3"]).status();
    if !made.map(|s| s.success()).unwrap_or(false) {
        return skip("output_to_a_character_device_keeps_the_device", "mknod is not permitted here", false);
    }
    let out = opt(&[tour().as_os_str(), os("-o"), dev.as_os_str()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ft = fs::symlink_metadata(&dev).unwrap().file_type();
    assert!(ft.is_char_device(), "the device was replaced: {ft:?}");
    // The archive and a symlink to the device go the same way.
    let link = d.join("link");
    std::os::unix::fs::symlink(&dev, &link).unwrap();
    let out = opt(&[workspace_root().join("examples/mlp/model.pt2").as_os_str(), os("--emit-archive"), link.as_os_str(), os("-o"), link.as_os_str()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(fs::symlink_metadata(&dev).unwrap().file_type().is_char_device());
    assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(entries(&d), ["fakenull", "link"], "no temporary file is left");
}

#[test]
fn output_to_a_fifo_reaches_its_reader() {
    let d = scratch_dir("fifo");
    let fifo = d.join("pipe");
    if !mkfifo(&fifo) {
        return skip("output_to_a_fifo_reaches_its_reader", "mkfifo is not available", true);
    }
    let reader_path = fifo.clone();
    let reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        fs::File::open(&reader_path).unwrap().read_to_end(&mut s).unwrap();
        s
    });
    let out = opt(&[tour().as_os_str(), os("-o"), fifo.as_os_str()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(reader.join().unwrap(), expected_tour());
    assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    assert_eq!(entries(&d), ["pipe"]);
}

#[test]
fn dash_means_standard_output() {
    let d = scratch_dir("dash");
    let out = Command::new(tool("dialect-opt")).arg(tour()).args(["-o", "-"]).current_dir(&d).output().unwrap();
    assert!(out.status.success());
    assert_eq!(out.stdout, expected_tour());
    assert!(entries(&d).is_empty(), "no file named '-' is created");
}

#[test]
fn a_regular_file_is_replaced_with_the_output() {
    let d = scratch_dir("regular");
    let target = d.join("out.ir");
    fs::write(&target, b"old contents").unwrap();
    let out = opt(&[tour().as_os_str(), os("-o"), target.as_os_str()]);
    assert!(out.status.success());
    assert_eq!(fs::read(&target).unwrap(), expected_tour());
    assert_eq!(entries(&d), ["out.ir"]);
}

#[test]
fn a_missing_directory_is_an_error_that_creates_nothing() {
    let d = scratch_dir("missing");
    let target = d.join("no/such/dir/out.ir");
    let out = opt(&[tour().as_os_str(), os("-o"), target.as_os_str()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not exist"), "{err}");
    assert!(entries(&d).is_empty());
}

#[test]
fn a_directory_target_is_an_error() {
    let d = scratch_dir("dirtarget");
    let out = opt(&[tour().as_os_str(), os("-o"), d.as_os_str()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is a directory"));
    assert!(entries(&d).is_empty());
}

#[test]
fn an_error_before_writing_leaves_the_target_byte_identical() {
    let d = scratch_dir("untouched");
    let bad = d.join("bad.ir");
    fs::write(&bad, "func.func @f() {\n  %x = aten.nonexistent_op : i64\n}\n").unwrap();
    let target = d.join("out.ir");
    fs::write(&target, b"precious\x00bytes").unwrap();
    let out = opt(&[bad.as_os_str(), os("-o"), target.as_os_str()]);
    assert_ne!(out.status.code(), Some(0));
    assert_eq!(fs::read(&target).unwrap(), b"precious\x00bytes");
    let archive = d.join("out.dar");
    fs::write(&archive, b"old archive").unwrap();
    let out = opt(&[bad.as_os_str(), os("--emit-archive"), archive.as_os_str()]);
    assert_ne!(out.status.code(), Some(0));
    assert_eq!(fs::read(&archive).unwrap(), b"old archive");
    assert_eq!(entries(&d), ["bad.ir", "out.dar", "out.ir"]);
}

#[test]
fn a_read_only_target_is_an_error() {
    let d = scratch_dir("readonly");
    let target = d.join("out.ir");
    fs::write(&target, b"keep").unwrap();
    let mut p = fs::metadata(&target).unwrap().permissions();
    p.set_readonly(true);
    fs::set_permissions(&target, p).unwrap();
    let out = opt(&[tour().as_os_str(), os("-o"), target.as_os_str()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("read-only"));
    assert_eq!(fs::read(&target).unwrap(), b"keep");
}

#[test]
fn reproducers_and_ir_trees_go_through_the_same_rule() {
    let d = scratch_dir("repro");
    let fifo = d.join("repro.pipe");
    if !mkfifo(&fifo) {
        return skip("reproducers_and_ir_trees_go_through_the_same_rule", "mkfifo is not available", true);
    }
    let reader_path = fifo.clone();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        fs::File::open(&reader_path).unwrap().read_to_string(&mut s).unwrap();
        s
    });
    // A pipeline that fails: the `verify` pass over IR the parser was told not to verify.
    let invalid = workspace_root().join("lit/pass/Inputs/invalid.ir");
    let out = opt(&[os("--no-verify"), invalid.as_os_str(), os("--pass-pipeline=builtin.module(verify)"), os("--reproducer"), fifo.as_os_str()]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if !stderr.contains("reproducer written") {
        // Unblock the reader whatever happened, then report.
        let _ = fs::OpenOptions::new().write(true).open(&fifo);
        let _ = reader.join();
        panic!("no reproducer was written: {stderr}");
    }
    assert!(reader.join().unwrap().contains("configuration"));
    assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());

    let tree = d.join("tree");
    let out = opt(&[tour().as_os_str(), os("--canonicalize"), os("--print-ir-tree-dir"), tree.as_os_str()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(tree.is_dir());
}
