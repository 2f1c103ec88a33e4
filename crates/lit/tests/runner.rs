//! End-to-end tests of the runner: small lit files written to a temporary suite and run.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use lit::{Config, Outcome, TestResult};

/// A fresh suite directory under the system temporary directory, removed on drop.
struct Suite {
    root: PathBuf,
}

impl Suite {
    fn new(name: &str) -> Suite {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let unique = NEXT.fetch_add(1, Ordering::Relaxed);
        let root =
            std::env::temp_dir().join(format!("lit-it-{}-{unique}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).expect("create suite dir");
        Suite { root }
    }

    fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.root.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create test dir");
        }
        std::fs::write(&path, text).expect("write test file");
        path
    }

    fn config(&self) -> Config {
        let mut config = Config::new(self.root.join("tests"));
        config.temp_root = self.root.join("tmp");
        config.features = vec!["has-a".to_string(), "has-b".to_string()];
        config
    }

    fn run_with(&self, config: &Config, text: &str) -> TestResult {
        let path = self.write("tests/t.ir", text);
        lit::run_test(config, &path)
    }

    fn run(&self, text: &str) -> TestResult {
        self.run_with(&self.config(), text)
    }
}

impl Drop for Suite {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Runs each `(expected outcome, test text)` case in its own suite.
fn check(cases: &[(Outcome, &str)]) {
    for (index, (expected, text)) in cases.iter().enumerate() {
        let suite = Suite::new(&format!("case{index}"));
        let result = suite.run(text);
        assert_eq!(
            result.outcome, *expected,
            "test:\n{text}\ntranscript:\n{}",
            result.output
        );
    }
}

#[test]
fn outcomes() {
    check(&[
        (
            Outcome::Pass,
            "// RUN: true\n// RUN: echo hello | grep hello\n",
        ),
        (Outcome::Fail, "// RUN: true\n// RUN: false\n"),
        (Outcome::XFail, "// XFAIL: *\n// RUN: false\n"),
        (Outcome::XPass, "// XFAIL: *\n// RUN: true\n"),
        (Outcome::XFail, "// XFAIL: has-a && !has-c\n// RUN: false\n"),
        (Outcome::Fail, "// XFAIL: has-c, !has-a\n// RUN: false\n"),
        (
            Outcome::Unsupported,
            "// REQUIRES: has-a, has-c\n// RUN: false\n",
        ),
        (
            Outcome::Pass,
            "// REQUIRES: has-a, has-b || has-c\n// RUN: true\n",
        ),
        (
            Outcome::Unsupported,
            "// UNSUPPORTED: has-c || has-b\n// RUN: false\n",
        ),
        (Outcome::Pass, "// UNSUPPORTED: has-c\n// RUN: true\n"),
        (Outcome::Unresolved, "// no run lines here\n"),
        (Outcome::Unresolved, "// RUN: echo 'unterminated\n"),
        (Outcome::Unresolved, "// REQUIRES: has-a &&\n// RUN: true\n"),
        (Outcome::Unresolved, "// RUN: echo \\\n"),
    ]);
}

#[test]
fn shell_features() {
    check(&[
        // `not`, pipefail and sequences.
        (Outcome::Pass, "# RUN: not false\n# RUN: not not true\n"),
        (Outcome::Fail, "# RUN: not true\n"),
        (Outcome::Fail, "# RUN: false | cat\n"),
        (Outcome::Pass, "# RUN: echo x | not grep y\n"),
        (Outcome::Pass, "# RUN: false || true\n# RUN: false ; true\n"),
        (Outcome::Fail, "# RUN: true && false\n"),
        (Outcome::Pass, "# RUN: false && false || true\n"),
        // `%t` files and redirections.
        (
            Outcome::Pass,
            "// RUN: echo abc > %t\n// RUN: echo def >> %t\n// RUN: cat %t | grep -c . | grep 2\n",
        ),
        (
            Outcome::Pass,
            "// RUN: echo abc > %t && rm %t && not cat %t\n",
        ),
        (Outcome::Pass, "// RUN: grep -q 'RUN: grep' < %s\n"),
        (
            Outcome::Pass,
            "// RUN: not cat %t.missing 2>&1 | grep -i 'no such'\n",
        ),
        (
            Outcome::Pass,
            "// RUN: not cat %t.missing 2> %t.err\n// RUN: grep -i 'no such' %t.err\n",
        ),
        (
            Outcome::Pass,
            "// RUN: not cat %t.missing &> %t.both\n// RUN: grep -i 'no such' %t.both\n",
        ),
        (
            Outcome::Pass,
            "// RUN: echo out 2>&1 > %t.o | not grep out\n// RUN: grep out %t.o\n",
        ),
        // Directories, `cd` and `%T`.
        (
            Outcome::Pass,
            "// RUN: mkdir -p %t/a/b && cd %t/a && echo x > b/f\n// RUN: cat b/f | grep x\n// RUN: rm -rf %t && not cat %t/a/b/f\n",
        ),
        (
            Outcome::Pass,
            "// RUN: cd %T\n// RUN: echo here > local.txt\n// RUN: cat %T/local.txt\n",
        ),
        (Outcome::Pass, "// RUN: cd %S && cat t.ir | grep -q XYZZY\n"),
        // Quoting, builtins, continuation and `%%`.
        (
            Outcome::Pass,
            "// RUN: echo \"a  b\" 'c|d' e\\ f | grep -F 'a  b c|d e f'\n",
        ),
        (
            Outcome::Pass,
            "// RUN: echo -n x > %t && echo -e 'y\\tz' >> %t\n// RUN: printf 'xy\\tz\\n' | cmp - %t\n",
        ),
        (
            Outcome::Pass,
            "// RUN: echo 100%% \\\n// RUN:   | grep -F '100%'\n",
        ),
        (
            Outcome::Pass,
            "// RUN: env LIT_TEST_VAR=val printenv LIT_TEST_VAR | grep val\n",
        ),
        (Outcome::Pass, "// RUN: not env -u HOME printenv HOME\n"),
        (Outcome::Pass, "// RUN: echo data | cat - | cat\n"),
        (
            Outcome::Pass,
            "// RUN: rm -f %t.never\n// RUN: not rm %t.never\n// RUN: : ignored words\n",
        ),
        // Unknown commands fail like a shell's.
        (Outcome::Fail, "// RUN: no-such-command-anywhere-1234\n"),
    ]);
}

#[test]
fn crashes_are_detected_by_not_crash() {
    check(&[
        (Outcome::Pass, "// RUN: not --crash sh -c 'kill -SEGV $$'\n"),
        (Outcome::Fail, "// RUN: not --crash false\n"),
        (Outcome::Fail, "// RUN: not sh -c 'kill -ABRT $$'\n"),
    ]);
}

#[test]
fn large_pipes_do_not_deadlock() {
    let suite = Suite::new("large");
    let line = "x".repeat(99);
    let big: String = (0..40_000).map(|_| format!("{line}\n")).collect();
    suite.write("tests/Inputs/big.txt", &big);
    // Four megabytes through external and builtin stages, with stderr produced alongside.
    let result = suite.run(
        "// RUN: cat %S/Inputs/big.txt | cat - %S/Inputs/big.txt | grep -c x | grep 80000\n\
         // RUN: sh -c 'cat %S/Inputs/big.txt; cat %S/Inputs/big.txt >&2' 2>&1 | wc -l | grep 80000\n\
         // RUN: cat %S/Inputs/big.txt | head -n 1 | grep -c x\n",
    );
    assert_eq!(result.outcome, Outcome::Pass, "{}", result.output);
}

#[test]
fn failure_transcript_names_the_command_and_output() {
    let suite = Suite::new("transcript");
    let result =
        suite.run("// RUN: true\n// RUN: echo to-stdout && cat %t.missing-file\n// RUN: true\n");
    assert_eq!(result.outcome, Outcome::Fail);
    let out = &result.output;
    for needle in [
        "# RUN: at line 1",
        "# RUN: at line 2",
        "# executed command: echo to-stdout",
        "# executed command: cat ",
        "# | to-stdout",
        ".---command stderr",
        "missing-file",
        "# error: command failed with exit status: 1",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in:\n{out}");
    }
    assert!(!out.contains("line 3"), "ran past the failure:\n{out}");
}

#[test]
fn tools_dir_substitutions_and_environment() {
    let suite = Suite::new("tools");
    let tool = suite.write("bin/my-tool", "#!/bin/sh\necho \"my-tool:$1:$LIT_EXTRA\"\n");
    set_executable(&tool);
    let mut config = suite.config();
    config.tools_dir = Some(suite.root.join("bin"));
    config.substitutions = vec![("%{greeting}".to_string(), "hello".to_string())];
    config.env = vec![("LIT_EXTRA".to_string(), "extra".to_string())];
    let result = suite.run_with(
        &config,
        "// RUN: my-tool %{greeting} | grep -F 'my-tool:hello:extra'\n",
    );
    assert_eq!(result.outcome, Outcome::Pass, "{}", result.output);
    // Without the tools directory the tool is not found.
    let result = suite.run("// RUN: my-tool\n");
    assert_eq!(result.outcome, Outcome::Fail);
    assert!(
        result.output.contains("command not found"),
        "{}",
        result.output
    );
}

#[test]
fn temp_paths_are_per_test_and_start_clean() {
    let suite = Suite::new("temps");
    let config = suite.config();
    let a = suite.write(
        "tests/a/x.ir",
        "// RUN: not cat %t\n// RUN: echo a > %t\n// RUN: echo %t\n",
    );
    let b = suite.write("tests/b/x.ir", "// RUN: echo %t\n");
    let first = lit::run_test(&config, &a);
    assert_eq!(first.outcome, Outcome::Pass, "{}", first.output);
    // A second run starts without the first run's `%t`.
    let again = lit::run_test(&config, &a);
    assert_eq!(again.outcome, Outcome::Pass, "{}", again.output);
    let other = lit::run_test(&config, &b);
    let temp_of = |r: &TestResult| {
        r.output
            .lines()
            .find(|l| l.starts_with("# | "))
            .map(str::to_string)
            .unwrap_or_default()
    };
    assert_ne!(temp_of(&first), temp_of(&other));
    assert!(temp_of(&first).contains(&suite.root.join("tmp").display().to_string()));
}

#[test]
fn discovery_and_suite_summary() {
    let suite = Suite::new("discover");
    suite.write("tests/b.ir", "// RUN: true\n");
    suite.write("tests/a.mlir", "// RUN: false\n");
    suite.write("tests/sub/c.ir", "// REQUIRES: nope\n// RUN: true\n");
    suite.write("tests/sub/Inputs/d.ir", "// RUN: false\n");
    suite.write("tests/.hidden/e.ir", "// RUN: false\n");
    suite.write("tests/notes.txt", "RUN: false\n");
    let config = suite.config();
    let tests = lit::discover(&config.root).expect("discover");
    let names: Vec<String> = tests
        .iter()
        .map(|p| {
            p.strip_prefix(&config.root)
                .unwrap_or(p)
                .display()
                .to_string()
        })
        .collect();
    assert_eq!(names, ["a.mlir", "b.ir", "sub/c.ir"]);

    let mut seen = Vec::new();
    let summary = lit::run_tests(&config, &tests, 2, |r| seen.push(r.path.clone()));
    seen.sort();
    assert_eq!(seen, tests);
    assert_eq!(summary.count(Outcome::Pass), 1);
    assert_eq!(summary.count(Outcome::Fail), 1);
    assert_eq!(summary.count(Outcome::Unsupported), 1);
    assert_eq!(summary.failures(), 1);
    assert!(lit::discover(&suite.root.join("missing")).is_err());
}

fn set_executable(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755));
    }
}

#[test]
fn timeouts_kill_hung_commands() {
    let suite = Suite::new("timeout");
    let mut config = suite.config();
    config.timeout = Some(std::time::Duration::from_millis(300));
    let result = suite.run_with(&config, "// XFAIL: *\n// RUN: sleep 20 | cat\n");
    assert_eq!(result.outcome, Outcome::Fail, "{}", result.output);
    assert!(result.output.contains("timed out"), "{}", result.output);
    assert!(
        result.elapsed < std::time::Duration::from_secs(10),
        "{:?}",
        result.elapsed
    );
    let result = suite.run_with(&config, "// RUN: true\n");
    assert_eq!(result.outcome, Outcome::Pass, "{}", result.output);
}
