//! Tests of the internal shell through its public entry point, `lit::shell::run`.

use lit::shell::{self, ShellEnv};

fn env() -> ShellEnv {
    ShellEnv::inherit(std::env::temp_dir())
}

/// Runs a line; returns status, stdout, stderr and the per-command statuses.
fn run(line: &str) -> (i32, String, String, Vec<i32>) {
    match shell::run(line, &mut env()) {
        Ok(out) => (
            out.status,
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            out.commands.iter().map(|c| c.status).collect(),
        ),
        Err(err) => (-1, String::new(), err.to_string(), Vec::new()),
    }
}

#[test]
fn captures_output_of_the_last_stage_and_all_stderr() {
    let (status, out, err, statuses) = run("echo a; echo b >&2; echo c | cat");
    assert_eq!((status, out.as_str(), err.as_str()), (0, "a\nc\n", "b\n"));
    assert_eq!(statuses, [0, 0, 0, 0]);
}

#[test]
fn pipefail_reports_the_rightmost_failure() {
    let (status, _, _, statuses) = run("sh -c 'exit 3' | sh -c 'exit 4' | true");
    assert_eq!((status, statuses), (4, vec![3, 4, 0]));
    let (status, _, _, _) = run("echo x | not grep y | cat");
    assert_eq!(status, 0);
}

#[test]
fn sequences_skip_and_keep_statuses() {
    let (status, out, _, statuses) = run("false && echo no || echo yes; sh -c 'exit 7'");
    assert_eq!((status, out.as_str()), (7, "yes\n"));
    assert_eq!(statuses, [1, 0, 7]);
}

#[test]
fn not_env_and_unknown_commands() {
    assert_eq!(run("not env LIT_X=1 sh -c 'test $LIT_X = 2'").0, 0);
    assert_eq!(run("env LIT_X=1 not sh -c 'test $LIT_X = 1'").0, 1);
    let (status, _, err, _) = run("surely-not-a-command-xyz arg");
    assert_eq!(status, 127);
    assert!(err.contains("command not found"), "{err}");
    let (status, _, err, _) = run("echo a | cd /");
    assert_eq!(status, 1);
    assert!(err.contains("cd"), "{err}");
}

#[test]
fn cd_persists_across_lines() {
    let mut env = env();
    let dir = std::env::temp_dir().join(format!("lit-shell-cd-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let line = format!("mkdir -p {}/sub && cd {}", dir.display(), dir.display());
    assert_eq!(shell::run(&line, &mut env).map(|o| o.status).ok(), Some(0));
    assert_eq!(env.cwd, dir);
    assert_eq!(
        shell::run("cd sub && echo hi > f.txt", &mut env)
            .map(|o| o.status)
            .ok(),
        Some(0)
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("sub/f.txt"))
            .ok()
            .as_deref(),
        Some("hi\n")
    );
    assert_eq!(
        shell::run("cd does-not-exist", &mut env)
            .map(|o| o.status)
            .ok(),
        Some(1)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn syntax_errors_are_values() {
    for line in ["echo 'open", "a | | b", "a &", "a > "] {
        assert!(shell::run(line, &mut env()).is_err(), "{line}");
    }
}
