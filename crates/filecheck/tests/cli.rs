//! Tests of the command line: flag spellings, files versus stdin, exit codes,
//! and that no input makes the tool panic.

use std::path::PathBuf;

use filecheck::main_with_args;

/// Writes `text` to a fresh file under the target's temp dir.
fn temp_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("filecheck-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("temp file");
    path
}

/// Runs the tool with `args` and `stdin`; returns the exit code and stderr.
fn run(args: &[&str], stdin: &str) -> (i32, String) {
    let argv = std::iter::once("filecheck".to_string()).chain(args.iter().map(|a| a.to_string()));
    let mut err = Vec::new();
    let code = main_with_args(argv, &mut stdin.as_bytes(), &mut err);
    (code, String::from_utf8_lossy(&err).into_owned())
}

#[test]
fn passes_and_fails_on_stdin() {
    let checks = temp_file("basic.txt", "CHECK: hello\nCHECK-NEXT: world\n");
    let path = checks.to_str().unwrap();
    assert_eq!(run(&[path], "hello\nworld\n"), (0, String::new()));
    let (code, err) = run(&[path, "--dump-input=never"], "hello\nthere\n");
    assert_eq!(code, 1);
    assert!(err.starts_with(&format!("{path}:2:13: error: CHECK-NEXT: expected string not found in input\n")), "{err}");
    assert!(err.contains("<stdin>:1:6: note: scanning from here"), "{err}");
}

#[test]
fn flag_spellings() {
    let checks = temp_file("flags.txt", "FOO: [[V]] [[#N+1]]\nBAR-NOT: bad\n");
    let path = checks.to_str().unwrap();
    let input = temp_file("flags.in", "x 4\n");
    let input = input.to_str().unwrap();
    let inline = format!("--input-file={input}");
    let spellings: [Vec<&str>; 3] = [
        vec!["--check-prefixes=FOO,BAR", "-DV=x", "-D#N=3", "--input-file", input],
        vec!["-check-prefixes", "FOO,BAR", "-DV=x", "-D#N=3", "-input-file", input],
        vec!["--check-prefix=FOO", "--check-prefix", "BAR", "-DV=x", "-D#N=3", "--strict-whitespace=false", &inline],
    ];
    for args in spellings {
        let full: Vec<&str> = std::iter::once(path).chain(args).collect();
        assert_eq!(run(&full, ""), (0, String::new()), "{full:?}");
    }
    // `-D` is a prefix option, as in LLVM: `-D V=x` is a missing value and a
    // second positional argument.
    let (code, err) = run(&[path, "-D", "V=x", "--input-file", input], "");
    assert_eq!(code, 1);
    assert!(err.starts_with("filecheck: for the -D option: requires a value!\n"), "{err}");
}

#[test]
fn input_file_name_in_diagnostics() {
    let checks = temp_file("name.txt", "CHECK: nope\n");
    let input = temp_file("name.in", "yes\n");
    let (code, err) = run(&[checks.to_str().unwrap(), "--input-file", input.to_str().unwrap()], "");
    assert_eq!(code, 1);
    assert!(err.contains(&format!("{}:1:1: note: scanning from here", input.display())), "{err}");
}

/// Mistakes the option parser finds exit with 1, as LLVM's option parser
/// exits; those found later (no check file, a bad prefix, empty input) with 2.
#[test]
fn usage_errors_exit_codes() {
    let checks = temp_file("usage.txt", "CHECK: a\n");
    let path = checks.to_str().unwrap();
    assert_eq!(run(&[], "a\n").0, 2);
    assert_eq!(run(&[path, "--no-such-flag"], "a\n").0, 1);
    assert_eq!(run(&[path, "--dump-input=sometimes"], "a\n").0, 1);
    assert_eq!(run(&[path, "--check-prefix"], "a\n").0, 1);
    assert_eq!(run(&[path, path], "a\n").0, 1);
    assert_eq!(run(&[path, "-D"], "a\n").0, 1);
    assert_eq!(run(&["/nonexistent/checks.txt"], "a\n").0, 2);
    assert_eq!(run(&[path, "--check-prefix=1bad"], "a\n").0, 2);
    let (code, err) = run(&[path], "");
    assert_eq!(code, 2);
    assert!(err.starts_with("FileCheck error: '<stdin>' is empty.\nFileCheck command line:  filecheck "), "{err}");
    assert_eq!(run(&[path, "--allow-empty"], "").0, 1);
}

/// With `-v`, remarks go to stderr only where no input dump can be printed
/// (`--dump-input=never`); otherwise they are annotations of the dump, which
/// a passing run does not print (LLVM's behaviour).
#[test]
fn verbose_prints_remarks_on_success() {
    let checks = temp_file("verbose.txt", "CHECK: a\n");
    let (code, err) = run(&[checks.to_str().unwrap(), "-v", "--dump-input=never"], "a\n");
    assert_eq!(code, 0);
    assert!(err.contains("remark: CHECK: expected string found in input"), "{err}");
    assert_eq!(run(&[checks.to_str().unwrap(), "-v"], "a\n"), (0, String::new()));
    let (code, err) = run(&[checks.to_str().unwrap(), "-v", "--dump-input=always"], "a\n");
    assert_eq!(code, 0);
    assert!(!err.contains("remark:"), "{err}");
    assert!(err.contains("<<<<<<\n         1: a \ncheck:1     ^\n>>>>>>\n"), "{err}");
}

/// Awkward check files and inputs must produce an exit code, never a panic.
#[test]
fn never_panics() {
    let fragments = [
        "CHECK:", "CHECK-NEXT:", "CHECK-DAG:", "CHECK-NOT:", "CHECK-LABEL:", "CHECK-EMPTY:", "CHECK-SAME:",
        "CHECK-COUNT-2:", "CHECK-COUNT-:", "{{", "}}", "[[", "]]", "[[#", "[[#%", "%x,", "X:", "#", ":", "$", "@LINE",
        "+", "-", "(", ")", "[", "]", "\\", "\n", " ", "\t", "é", "\r\n", "a", "[[X]]", "[[X:.*]]", "[[#N:]]",
        "[[#N+99999999999999999999999999999999999999999]]", "{{[^", "{{(}}", "{{*}}", "{LITERAL}",
    ];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..3000 {
        let mut pick = |n: usize| -> String {
            (0..n).map(|_| fragments[(next() % fragments.len() as u64) as usize]).collect()
        };
        let checks = pick(8);
        let input = pick(6);
        let config = filecheck::Config::default();
        let _ = filecheck::check(&checks, "fuzz.txt", &input, "<stdin>", &config);
        let strict = filecheck::Config { strict_whitespace: true, match_full_lines: true, ..filecheck::Config::default() };
        let _ = filecheck::check(&checks, "fuzz.txt", &input, "<stdin>", &strict);
    }
}

/// The option parser reports every mistake, each after the program's name,
/// before giving up; `-D` never takes the next argument as its value.
#[test]
fn every_option_mistake_is_reported() {
    let checks = temp_file("mistakes.txt", "CHECK: a\n");
    let path = checks.to_str().unwrap();
    let (code, err) = run(&[path, "--dump-input=x", "--strict-whitespace=maybe", "-D", path], "a\n");
    assert_eq!(code, 1);
    assert_eq!(
        err,
        "filecheck: for the --dump-input option: Cannot find option named 'x'!\n\
         filecheck: for the --strict-whitespace option: 'maybe' is invalid value for boolean argument! Try 0 or 1\n\
         filecheck: for the -D option: requires a value!\n\
         filecheck: Too many positional arguments specified!\n\
         Can specify at most 1 positional arguments: See: filecheck --help\n"
    );
}
