//! The annotated input dump and the diagnostics around it, byte for byte:
//! each case under `tests/data/recorded/` holds a check file, an input, the
//! extra command-line arguments, and the standard error and exit code that
//! LLVM's FileCheck (version 22) printed for them. When that FileCheck is
//! installed, the same cases also run through it, so a changed reference is
//! noticed too.

use std::path::{Path, PathBuf};

use filecheck::main_with_io;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/recorded")
}

/// Every case directory, sorted by name.
fn cases() -> Vec<PathBuf> {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(data_dir())
        .expect("tests/data/recorded exists")
        .map(|entry| entry.expect("readable entry").path())
        .filter(|path| path.is_dir())
        .collect();
    cases.sort();
    cases
}

fn args_of(case: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(case.join("args")).expect("args file");
    text.lines().filter(|l| !l.is_empty()).map(str::to_string).collect()
}

/// Runs our FileCheck on a case; returns the exit code and standard error
/// with the case directory taken out of file names (LLVM's output was
/// recorded with the files named relative to it).
fn run_ours(case: &Path) -> (i32, String) {
    let dir = format!("{}/", case.display());
    let check = case.join("check.txt").display().to_string();
    let input = case.join("input.txt").display().to_string();
    let argv = ["filecheck".to_string(), check, "--input-file".to_string(), input].into_iter().chain(args_of(case));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = main_with_io(argv, &mut std::io::empty(), &mut out, &mut err);
    (code, String::from_utf8_lossy(&err).replace(&dir, ""))
}

fn expected(case: &Path) -> (i32, String) {
    let code = std::fs::read_to_string(case.join("exit-code")).expect("exit-code file");
    let stderr = std::fs::read_to_string(case.join("expected.txt")).expect("expected.txt");
    (code.trim().parse().expect("numeric exit code"), stderr)
}

#[test]
fn dumps_match_llvm_byte_for_byte() {
    let cases = cases();
    assert!(cases.len() >= 20, "expected the recorded cases, found {}", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let ours = run_ours(case);
        let want = expected(case);
        if ours != want {
            failures.push(format!(
                "{}: exit {} (want {})\n--- ours ---\n{}--- LLVM ---\n{}",
                case.display(),
                ours.0,
                want.0,
                ours.1,
                want.1
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Where LLVM's FileCheck is, if installed.
fn llvm_filecheck() -> Option<PathBuf> {
    let candidates = ["/usr/lib/llvm-22/bin/FileCheck", "/usr/bin/FileCheck-22"];
    candidates.iter().map(PathBuf::from).find(|p| p.exists())
}

#[test]
fn recorded_outputs_are_llvm_outputs() {
    let Some(llvm) = llvm_filecheck() else {
        println!("skipped: LLVM 22's FileCheck is not installed (apt-get install llvm-22-tools)");
        return;
    };
    for case in cases() {
        let output = std::process::Command::new(&llvm)
            .current_dir(&case)
            .args(["check.txt", "--input-file", "input.txt"])
            .args(args_of(&case))
            .env_remove("FILECHECK_OPTS")
            .output()
            .expect("LLVM FileCheck runs");
        let got = (output.status.code().unwrap_or(-1), String::from_utf8_lossy(&output.stderr).into_owned());
        assert_eq!(got, expected(&case), "{}", case.display());
    }
}

/// `--dump-input=help` prints the guide to standard output and exits 0,
/// whatever else is on the command line; it wins over other values.
#[test]
fn dump_help_goes_to_stdout() {
    for args in [vec!["--dump-input=help"], vec!["--dump-input=always", "--dump-input=help", "no-such-file"]] {
        let argv = std::iter::once("filecheck".to_string()).chain(args.iter().map(|a| a.to_string()));
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = main_with_io(argv, &mut std::io::empty(), &mut out, &mut err);
        let out = String::from_utf8_lossy(&out);
        assert_eq!(code, 0);
        assert!(err.is_empty());
        assert!(out.starts_with("The following description was requested by -dump-input=help"), "{out}");
        assert!(out.lines().last().is_some_and(|l| l.starts_with("  - colors")), "{out}");
    }
}

/// Bad option values are rejected with LLVM's words, the program named as invoked.
#[test]
fn bad_dump_options() {
    let cases = [
        ("--dump-input=foobar", "for the --dump-input option: Cannot find option named 'foobar'!"),
        ("--dump-input-filter=foo", "for the --dump-input-filter option: Cannot find option named 'foo'!"),
        ("--dump-input-context=-1", "for the --dump-input-context option: '-1' value invalid for uint argument!"),
    ];
    for (arg, message) in cases {
        let argv = ["/some/dir/FileCheck".to_string(), arg.to_string()];
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = main_with_io(argv, &mut std::io::empty(), &mut out, &mut err);
        assert_ne!(code, 0);
        assert_eq!(String::from_utf8_lossy(&err), format!("FileCheck: {message}\n"));
    }
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = main_with_io(["filecheck".to_string()], &mut std::io::empty(), &mut out, &mut err);
    assert_eq!((code, String::from_utf8_lossy(&err).into_owned()), (2, "<check-file> not specified\n".to_string()));
}
