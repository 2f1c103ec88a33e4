//! Table-driven tests of every directive: each row is a check file, an input
//! and the expected outcome (pass, or a fragment of the rendered failure).

use filecheck::{Config, FileCheckError, check};

/// Builds a `Config` from command-line style flags.
fn config(flags: &[&str]) -> Config {
    let mut config = Config::default();
    for flag in flags {
        let (name, value) = flag.split_once('=').unwrap_or((flag, ""));
        match name {
            "--check-prefixes" => config.prefixes = value.split(',').map(str::to_string).collect(),
            "--strict-whitespace" => config.strict_whitespace = true,
            "--match-full-lines" => config.match_full_lines = true,
            "--implicit-check-not" => config.implicit_check_not.push(value.to_string()),
            "--enable-var-scope" => config.enable_var_scope = true,
            "--allow-empty" => config.allow_empty = true,
            "--ignore-case" => config.ignore_case = true,
            "-D" => config.defines.push(value.to_string()),
            other => panic!("test table uses unknown flag {other}"),
        }
    }
    config
}

fn run(flags: &[&str], checks: &str, input: &str) -> Result<(), FileCheckError> {
    check(checks, "t.txt", input, "<stdin>", &config(flags))
}

/// (name, flags, check file, input): all must pass.
const PASSING: &[(&str, &[&str], &str, &str)] = &[
    ("plain", &[], "CHECK: foo\nCHECK: bar\n", "foo\nbar\n"),
    ("plain substring", &[], "CHECK: oo b\n", "foo bar\n"),
    ("next", &[], "CHECK: a\nCHECK-NEXT: b\n", "a\nb\n"),
    ("same", &[], "CHECK: a\nCHECK-SAME: b\nCHECK-SAME: c\n", "a b c\n"),
    ("empty", &[], "CHECK: a\nCHECK-EMPTY:\nCHECK-NEXT: b\n", "a\n\nb\n"),
    ("empty at end of input", &[], "CHECK: a\nCHECK-EMPTY:\n", "a\n"),
    ("not", &[], "CHECK: a\nCHECK-NOT: x\nCHECK: b\n", "a\nb\nx\n"),
    ("not at end", &[], "CHECK: a\nCHECK-NOT: x\n", "x\na\n"),
    ("not only", &[], "CHECK-NOT: x\n", "a\n"),
    ("dag any order", &[], "CHECK-DAG: b\nCHECK-DAG: a\nCHECK: c\n", "a\nb\nc\n"),
    ("dag groups around not", &[], "CHECK-DAG: a\nCHECK-DAG: b\nCHECK-NOT: x\nCHECK-DAG: c\nCHECK-DAG: d\n", "b\na\nd\nc\nx\n"),
    ("dag distinct matches", &[], "CHECK-DAG: x\nCHECK-DAG: x\n", "x x\n"),
    ("label blocks", &[], "CHECK-LABEL: f1\nCHECK: a\nCHECK-LABEL: f2\nCHECK: b\n", "f1\na\nf2\nb\n"),
    ("count", &[], "CHECK-COUNT-3: x\nCHECK-NOT: x\n", "x x\nx\ny\n"),
    ("comment", &[], "COM: CHECK: not a check\nCHECK: a\n", "a\n"),
    ("run line is a comment", &[], "// RUN: filecheck --check-prefix=CHECK %s\nCHECK: a\n", "a\n"),
    ("prefix on word boundary", &[], "XCHECK: nope\nFOO-CHECK: nope\nCHECK: a\n", "a\n"),
    ("custom prefixes", &["--check-prefixes=A,B"], "A: x\nB: y\nCHECK: ignored\n", "x y\n"),
    ("literal modifier", &[], "CHECK{LITERAL}: [[a]] {{b}}\n", "[[a]] {{b}}\n"),
    ("regex", &[], "CHECK: a{{[0-9]+}}b{{x|y}}\n", "a123by\n"),
    ("regex alternation is grouped", &[], "CHECK: a{{b|c}}d\n", "acd\n"),
    ("negated class stops at newline", &[], "CHECK: a{{[^z]*$}}\nCHECK-NEXT: z\n", "ab\nz\n"),
    ("posix class", &[], "CHECK: {{[[:digit:]]+}}\n", "42\n"),
    ("string variable", &[], "CHECK: [[R:%[0-9]+]] = add\nCHECK: ret [[R]]\n", "%7 = add\nret %7\n"),
    ("variable reused in its pattern", &[], "CHECK: [[X:a.]] [[X]]\n", "ab ac ad ad\n"),
    ("define string", &["-D=V=hello"], "CHECK: [[V]] world\n", "hello world\n"),
    ("numeric", &[], "CHECK: [[#N:]]\nCHECK: [[#N+1]] [[#N-1]]\n", "5\n6 4\n"),
    ("numeric hex", &[], "CHECK: [[#%x,A:]]\nCHECK: [[#A+1]] [[#%X,A]] [[#%.4x,A]] [[#%#x,A]]\n", "ff\n100 FF 00ff 0xff\n"),
    ("numeric signed", &[], "CHECK: [[#%d,X:]]\nCHECK: [[#X+10]]\n", "-5\n5\n"),
    ("numeric define", &["-D=#N=3"], "CHECK: [[#N-0]]x\n", "3x\n"),
    ("numeric functions", &["-D=#N=3"], "CHECK: [[#mul(N,2)]] [[#max(N,7)]]\n", "6 7\n"),
    ("numeric any", &[], "CHECK: a [[#]] b [[#%x,]]\n", "a 12 b ff\n"),
    ("numeric constraint", &[], "CHECK: [[#N:]]\nCHECK: [[#M:N+1]]\nCHECK: [[#M]]\n", "1\n2\n2\n"),
    ("line", &[], "\nCHECK: [[#@LINE]] [[@LINE-1]]\n", "2 1\n"),
    ("global survives scope", &["--enable-var-scope"], "CHECK-LABEL: f\nCHECK: [[$G:[a-z]+]]\nCHECK-LABEL: g\nCHECK: [[$G]]\n", "f\nab\ng\nab\n"),
    ("local survives without scope", &[], "CHECK-LABEL: f\nCHECK: [[L:[a-z]+]]\nCHECK-LABEL: g\nCHECK: [[L]]\n", "f\nab\ng\nab\n"),
    ("whitespace canonicalized", &[], "CHECK: a  \t b\n", "a\t b\n"),
    ("strict whitespace", &["--strict-whitespace"], "CHECK: a  b\n", "a  b\n"),
    ("full lines", &["--match-full-lines"], "CHECK: foo bar\nCHECK: baz\n", "  foo bar \nbaz\n"),
    ("implicit check not", &["--implicit-check-not=error"], "CHECK: a\n", "a\nwarning\n"),
    ("ignore case", &["--ignore-case"], "CHECK: HeLLo\n", "hello\n"),
    ("allow empty", &["--allow-empty"], "CHECK-NOT: x\n", ""),
    ("crlf input", &[], "CHECK: a\nCHECK-NEXT: b\n", "a\r\nb\r\n"),
];

/// (name, flags, check file, input, fragment of the rendered error).
const FAILING: &[(&str, &[&str], &str, &str, &str)] = &[
    ("plain", &[], "CHECK: foo\n", "bar\n", "t.txt:1:8: error: CHECK: expected string not found in input"),
    ("order", &[], "CHECK: b\nCHECK: a\n", "a\nb\n", "t.txt:2:8: error: CHECK: expected string not found"),
    ("next on later line", &[], "CHECK: a\nCHECK-NEXT: c\n", "a\nb\nc\n", "CHECK-NEXT: is not on the line after the previous match"),
    ("next on same line", &[], "CHECK: a\nCHECK-NEXT: b\n", "a b\n", "CHECK-NEXT: is on the same line as previous match"),
    ("same on later line", &[], "CHECK: a\nCHECK-SAME: b\n", "a\nb\n", "CHECK-SAME: is not on the same line as the previous match"),
    ("empty not empty", &[], "CHECK: a\nCHECK-EMPTY:\n", "a\nb\n\n", "CHECK-EMPTY: is not on the line after the previous match"),
    ("not found", &[], "CHECK: a\nCHECK-NOT: x\nCHECK: b\n", "a\nx\nb\n", "t.txt:2:12: error: CHECK-NOT: excluded string found in input"),
    ("dag missing", &[], "CHECK-DAG: a\nCHECK-DAG: c\n", "a\nb\n", "CHECK-DAG: expected string not found"),
    ("dag needs distinct matches", &[], "CHECK-DAG: x\nCHECK-DAG: x\n", "x\n", "CHECK-DAG: expected string not found"),
    ("not between dag groups", &[], "CHECK-DAG: a\nCHECK-NOT: x\nCHECK-DAG: b\n", "a\nx\nb\n", "CHECK-NOT: excluded string found"),
    ("dag group order", &[], "CHECK-DAG: a\nCHECK-NOT: x\nCHECK-DAG: b\n", "b\na\n", "t.txt:3:12: error: CHECK-DAG: expected string not found"),
    ("label missing", &[], "CHECK-LABEL: f1\nCHECK-LABEL: f2\n", "f1\n", "CHECK-LABEL: expected string not found"),
    ("label confines checks", &[], "CHECK-LABEL: f1\nCHECK: b\nCHECK-LABEL: f2\n", "f1\na\nf2\nb\n", "t.txt:2:8: error: CHECK: expected string not found"),
    ("later blocks still checked", &[], "CHECK-LABEL: f1\nCHECK: x\nCHECK-LABEL: f2\nCHECK: y\n", "f1\nf2\nz\n", "t.txt:4:8:"),
    ("count", &[], "CHECK-COUNT-3: x\n", "x x\n", "error: CHECK-COUNT: expected string not found in input (3 out of 3)"),
    ("variable mismatch", &[], "CHECK: [[X:[a-z]+]]\nCHECK: [[X]]9\n", "abc\nzzz\n", "note: with \"X\" equal to \"abc\""),
    ("numeric mismatch", &[], "CHECK: [[#N:]]\nCHECK: [[#N+1]]\n", "5\n5\n", "note: with \"N+1\" equal to \"6\""),
    ("undefined variable", &[], "CHECK: [[Y]]\n", "a\n", "t.txt:1:10: error: undefined variable: Y"),
    ("undefined numeric", &[], "CHECK: [[#Y+1]]\n", "a\n", "t.txt:1:11: error: undefined variable: Y"),
    ("var scope", &["--enable-var-scope"], "CHECK-LABEL: f\nCHECK: [[L:[a-z]+]]\nCHECK-LABEL: g\nCHECK: [[L]]\n", "f\nab\ng\nab\n", "undefined variable: L"),
    ("full lines", &["--match-full-lines"], "CHECK: foo\n", "foobar\n", "expected string not found"),
    ("full lines leave CHECK-NOT partial", &["--match-full-lines"], "CHECK: a\nCHECK-NOT: baz\n", "a\nfoo baz\n", "CHECK-NOT: excluded string found"),
    ("strict whitespace", &["--strict-whitespace"], "CHECK: a b\n", "a  b\n", "expected string not found"),
    ("implicit check not", &["--implicit-check-not=warning:"], "CHECK: a\n", "a\nwarning: x\n", "command line:1:22: error: IMPLICIT-CHECK-NOT: excluded string found in input"),
    ("empty input", &[], "CHECK: a\n", "", "FileCheck error: '<stdin>' is empty."),
    ("no checks", &[], "foo\n", "a\n", "error: no check strings found with prefix 'CHECK:'"),
    ("unused prefix", &["--check-prefixes=A,B"], "A: a\n", "a\n", "error: no check strings found with prefix 'B:'"),
    ("unused prefixes", &["--check-prefixes=A,B"], "C: a\n", "a\n", "error: no check strings found with prefixes 'A:', 'B:'"),
    ("empty pattern", &[], "CHECK:\n", "a\n", "t.txt:1:7: error: found empty check string with prefix 'CHECK:'"),
    ("non-empty empty", &[], "CHECK: a\nCHECK-EMPTY: x\n", "a\n", "found non-empty check string for empty check"),
    ("next first", &[], "CHECK-NEXT: a\n", "a\n", "found 'CHECK-NEXT' without previous 'CHECK: line"),
    ("label with variable", &[], "CHECK-LABEL: [[X]]\n", "a\n", "found 'CHECK-LABEL:' with variable definition or use"),
    ("bad regex", &[], "CHECK: a{{(}}\n", "a\n", "t.txt:1:11: error: invalid regex:"),
    ("unterminated regex", &[], "CHECK: a{{b\n", "a\n", "t.txt:1:9: error: found start of regex string with no end '}}'"),
    ("unterminated variable", &[], "CHECK: a[[b\n", "a\n", "t.txt:1:9: error: Invalid substitution block, no ]] found"),
    ("bad count", &[], "CHECK-COUNT-0: x\n", "x\n", "invalid count in -COUNT specification on prefix 'CHECK'"),
    ("numeric defined in same line", &[], "CHECK: [[#N:]] [[#N+1]]\n", "1 2\n", "numeric variable 'N' defined earlier in the same CHECK directive"),
    ("bad numeric operator", &[], "CHECK: [[#N*2]]\n", "1\n", "t.txt:1:12: error: unsupported operation '*'"),
];

#[test]
fn passing_cases() {
    for (name, flags, checks, input) in PASSING {
        if let Err(error) = run(flags, checks, input) {
            panic!("case '{name}' failed:\n{error}");
        }
    }
}

#[test]
fn failing_cases() {
    for (name, flags, checks, input, fragment) in FAILING {
        match run(flags, checks, input) {
            Ok(()) => panic!("case '{name}' passed but should fail"),
            Err(error) => {
                let text = error.to_string();
                assert!(text.contains(fragment), "case '{name}': expected {fragment:?} in:\n{text}");
            }
        }
    }
}

#[test]
fn exit_codes() {
    let fail = run(&[], "CHECK: a\n", "b\n").unwrap_err();
    assert_eq!(fail.exit_code(), 1);
    let bad = run(&[], "CHECK:\n", "b\n").unwrap_err();
    assert_eq!(bad.exit_code(), 2);
    let none = run(&[], "nothing\n", "b\n").unwrap_err();
    assert_eq!(none.exit_code(), 2);
}

/// Rendered texts checked against LLVM FileCheck's output for the same files.
#[test]
fn exact_not_found_with_fuzzy_match() {
    let error = run(&[], "CHECK: hello world\n", "abc\nhello wrld\nxyz\n").unwrap_err();
    assert_eq!(
        error.to_string(),
        "t.txt:1:8: error: CHECK: expected string not found in input
CHECK: hello world
       ^
<stdin>:1:1: note: scanning from here
abc
^
<stdin>:2:1: note: possible intended match here
hello wrld
^
"
    );
}

#[test]
fn exact_check_not() {
    let error = run(&[], "CHECK: a\nCHECK-NOT: b\nCHECK: c\n", "a\n  b\nc\n").unwrap_err();
    assert_eq!(
        error.to_string(),
        "t.txt:2:12: error: CHECK-NOT: excluded string found in input
CHECK-NOT: b
           ^
<stdin>:2:2: note: found here
 b
 ^
"
    );
}

#[test]
fn exact_check_next() {
    let error = run(&[], "CHECK: a\nCHECK-NEXT: c\n", "a\nb\nc\n").unwrap_err();
    assert_eq!(
        error.to_string(),
        "t.txt:2:13: error: CHECK-NEXT: is not on the line after the previous match
CHECK-NEXT: c
            ^
<stdin>:3:1: note: 'next' match was here
c
^
<stdin>:1:2: note: previous match ended here
a
 ^
<stdin>:2:1: note: non-matching line after previous match is here
b
^
"
    );
}

#[test]
fn exact_substitution_notes() {
    let error = run(&["-D=#N=4"], "CHECK: [[X:[a-z]+]]\nCHECK: [[X]]-[[#N+1]]\n", "abc\nzzz\n").unwrap_err();
    assert_eq!(
        error.to_string(),
        "t.txt:2:8: error: CHECK: expected string not found in input
CHECK: [[X]]-[[#N+1]]
       ^
<stdin>:1:4: note: scanning from here
abc
   ^
<stdin>:1:4: note: with \"X\" equal to \"abc\"
abc
   ^
<stdin>:1:4: note: with \"N+1\" equal to \"5\"
abc
   ^
"
    );
}

#[test]
fn exact_range_and_tabs() {
    let error = run(&["--strict-whitespace"], "CHECK-NOT: b\tc\n", "xx\ta\tb\tc\n").unwrap_err();
    assert_eq!(
        error.to_string(),
        "t.txt:1:12: error: CHECK-NOT: excluded string found in input
CHECK-NOT: b    c
           ^
<stdin>:1:6: note: found here
xx      a       b       c
                ^~~~~~~~~
"
    );
}

#[test]
fn verbose_remarks() {
    let mut config = config(&[]);
    config.verbose = true;
    let file = filecheck::CheckFile::parse("CHECK: abc\n", "t.txt", &config).unwrap();
    let report = file.run("xabcx\n", "<stdin>").unwrap();
    assert_eq!(
        report.remarks(),
        "t.txt:1:8: remark: CHECK: expected string found in input
CHECK: abc
       ^
<stdin>:1:2: note: found here
xabcx
 ^~~
"
    );
}

#[test]
fn check_file_is_reusable() {
    let file = filecheck::CheckFile::parse("CHECK: [[X:[a-z]+]]\nCHECK-NEXT: [[X]]\n", "t.txt", &Config::default()).unwrap();
    assert!(file.run("ab\nab\n", "one").is_ok());
    assert!(file.run("cd\ncd\n", "two").is_ok());
    assert!(file.run("cd\nab\n", "three").is_err());
}

/// Patterns that substitute variables match the same whether the range they
/// search is short or spans a long input (the two are built differently).
#[test]
fn substituted_patterns_over_short_and_long_ranges() {
    let checks = "CHECK: first [[#N:]] [[S:[a-z]+]]\nCHECK: last [[#N+1]] [[S]]{{$}}\n";
    for filler_lines in [0, 10, 20_000] {
        let filler: String = (0..filler_lines).map(|i| format!("filler {i} last 7 abcd\n")).collect();
        let input = format!("first 6 abc\n{filler}last 7 abc\n");
        assert!(run(&[], checks, &input).is_ok(), "{filler_lines} filler lines");
        let wrong = format!("first 6 abc\n{filler}last 8 abc\n");
        let err = run(&[], checks, &wrong).expect_err("no line has 7 and abc");
        assert!(err.to_string().contains("with \"N+1\" equal to \"7\""), "{err}");
    }
}
