//! Running one test file: directives, features, substitutions, then its `RUN:` lines.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::boolexpr;
use crate::config::Config;
use crate::directives::{self, Directives};
use crate::error::{LitError, Result};
use crate::shell::{self, ExecOutput, ShellEnv, exec::quote};
use crate::substitute::{Substitutions, TestPaths};

/// The verdict on one test, with lit's meanings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Outcome {
    /// Every `RUN:` line succeeded.
    Pass,
    /// A `RUN:` line failed.
    Fail,
    /// A `RUN:` line failed and the test is marked `XFAIL`.
    XFail,
    /// Every `RUN:` line succeeded although the test is marked `XFAIL`: a failure.
    XPass,
    /// `REQUIRES:` or `UNSUPPORTED:` excluded the test.
    Unsupported,
    /// The test could not be run: unreadable, no `RUN:` line, malformed directive or command.
    Unresolved,
}

impl Outcome {
    /// Whether this outcome makes the run fail.
    pub fn is_failure(self) -> bool {
        matches!(self, Outcome::Fail | Outcome::XPass | Outcome::Unresolved)
    }

    /// lit's name for the outcome (`PASS`, `XFAIL`, …).
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Pass => "PASS",
            Outcome::Fail => "FAIL",
            Outcome::XFail => "XFAIL",
            Outcome::XPass => "XPASS",
            Outcome::Unsupported => "UNSUPPORTED",
            Outcome::Unresolved => "UNRESOLVED",
        }
    }
}

/// The result of running one test.
#[derive(Debug, Clone)]
pub struct TestResult {
    pub path: PathBuf,
    pub outcome: Outcome,
    /// A transcript like `lit -v` prints: each `RUN:` line, the commands, their statuses and
    /// output, or why the test was not run.
    pub output: String,
    pub elapsed: Duration,
}

/// Runs one test file.
pub fn run_test(config: &Config, path: &Path) -> TestResult {
    let start = Instant::now();
    let (outcome, output) = match run(config, path) {
        Ok(verdict) => verdict,
        Err(err) => (Outcome::Unresolved, format!("error: {err}\n")),
    };
    TestResult {
        path: path.to_path_buf(),
        outcome,
        output,
        elapsed: start.elapsed(),
    }
}

fn run(config: &Config, path: &Path) -> Result<(Outcome, String)> {
    let path = std::path::absolute(path).map_err(|err| LitError::io(path, err))?;
    let bytes = std::fs::read(&path).map_err(|err| LitError::io(&path, err))?;
    let directives = directives::parse(&String::from_utf8_lossy(&bytes))?;
    if directives.run.is_empty() {
        return Ok((
            Outcome::Unresolved,
            "error: test has no RUN: lines\n".to_string(),
        ));
    }
    if let Some(reason) = unsupported_reason(&directives, &config.features)? {
        return Ok((Outcome::Unsupported, reason));
    }
    let expect_failure = expects_failure(&directives, &config.features)?;

    let (temp_dir, temp) = temp_paths(config, &path);
    std::fs::create_dir_all(&temp_dir).map_err(|err| LitError::io(&temp_dir, err))?;
    remove_stale(&temp)?;
    let substitutions = Substitutions::for_test(
        &config.substitutions,
        &TestPaths {
            source: &path,
            temp: &temp,
            temp_dir: &temp_dir,
        },
    );
    let mut env = shell_env(config, &path);
    env.deadline = config.timeout.map(|timeout| Instant::now() + timeout);

    let mut transcript = String::new();
    let mut failed = false;
    for run_line in &directives.run {
        let command = substitutions.apply(&run_line.command);
        let _ = writeln!(transcript, "# RUN: at line {}\n{command}", run_line.line);
        let script = match shell::parse(&command) {
            Ok(script) => script,
            Err(err) => {
                let _ = writeln!(transcript, "# error: {err}");
                return Ok((Outcome::Unresolved, transcript));
            }
        };
        let result = shell::execute(&script, &mut env);
        describe(&result, &mut transcript);
        if result.timed_out {
            let timeout = config.timeout.unwrap_or_default();
            let _ = writeln!(
                transcript,
                "# error: timed out after {:.1}s",
                timeout.as_secs_f64()
            );
            return Ok((Outcome::Fail, transcript));
        }
        if result.status != 0 {
            failed = true;
            break;
        }
    }
    let outcome = match (failed, expect_failure) {
        (false, false) => Outcome::Pass,
        (true, false) => Outcome::Fail,
        (true, true) => Outcome::XFail,
        (false, true) => {
            transcript.push_str("# error: test is marked XFAIL but passed\n");
            Outcome::XPass
        }
    };
    Ok((outcome, transcript))
}

/// Why `REQUIRES:`/`UNSUPPORTED:` exclude the test, if they do.
fn unsupported_reason(directives: &Directives, features: &[String]) -> Result<Option<String>> {
    let mut missing = Vec::new();
    for expr in &directives.requires {
        if !boolexpr::evaluate(expr, features)? {
            missing.push(expr.as_str());
        }
    }
    if !missing.is_empty() {
        return Ok(Some(format!(
            "Test requires the following unavailable features: {}\n",
            missing.join(", ")
        )));
    }
    let mut matched = Vec::new();
    for expr in &directives.unsupported {
        if boolexpr::evaluate(expr, features)? {
            matched.push(expr.as_str());
        }
    }
    if !matched.is_empty() {
        return Ok(Some(format!(
            "Test does not support the following features: {}\n",
            matched.join(", ")
        )));
    }
    Ok(None)
}

fn expects_failure(directives: &Directives, features: &[String]) -> Result<bool> {
    for expr in &directives.xfail {
        if expr == "*" || boolexpr::evaluate(expr, features)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `%T` and `%t` for a test: its path under the suite root, mirrored under the temp root.
fn temp_paths(config: &Config, path: &Path) -> (PathBuf, PathBuf) {
    let root = std::path::absolute(&config.root).unwrap_or_else(|_| config.root.clone());
    let relative = path
        .strip_prefix(&root)
        .ok()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| {
            // A test outside the root still gets a unique directory, named after its path.
            let flat: String = path
                .to_string_lossy()
                .chars()
                .map(|c| {
                    if c.is_alphanumeric() || c == '.' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            PathBuf::from("external").join(flat)
        });
    let temp_dir = match relative.parent() {
        Some(parent) => config.temp_root.join(parent),
        None => config.temp_root.clone(),
    };
    let name = relative
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = temp_dir.join(format!("{name}.tmp"));
    (temp_dir, temp)
}

/// Removes what a previous run left at `%t`, so every run starts clean.
fn remove_stale(temp: &Path) -> Result<()> {
    let result = match std::fs::symlink_metadata(temp) {
        Ok(metadata) if metadata.is_dir() => std::fs::remove_dir_all(temp),
        Ok(_) => std::fs::remove_file(temp),
        Err(_) => Ok(()),
    };
    result.map_err(|err| LitError::io(temp, err))
}

fn shell_env(config: &Config, path: &Path) -> ShellEnv {
    let cwd = path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let mut env = ShellEnv::inherit(cwd);
    for (name, value) in &config.env {
        env.vars.insert(name.clone(), value.clone());
    }
    if let Some(tools) = &config.tools_dir {
        let mut dirs = vec![tools.clone()];
        if let Some(path) = env.vars.get("PATH") {
            dirs.extend(std::env::split_paths(path));
        }
        if let Ok(joined) = std::env::join_paths(dirs) {
            env.vars
                .insert("PATH".to_string(), joined.to_string_lossy().into_owned());
        }
    }
    env
}

/// Appends what a command line did, in `lit -v` style.
fn describe(result: &ExecOutput, transcript: &mut String) {
    for command in &result.commands {
        let words: Vec<String> = command.args.iter().map(|a| quote(a)).collect();
        let _ = write!(transcript, "# executed command: {}", words.join(" "));
        if command.status != 0 {
            let _ = write!(transcript, "  (exit status {})", command.status);
        }
        transcript.push('\n');
    }
    for (name, bytes) in [("stdout", &result.stdout), ("stderr", &result.stderr)] {
        if bytes.is_empty() {
            continue;
        }
        let _ = writeln!(transcript, "# .---command {name}------------");
        for line in String::from_utf8_lossy(bytes).lines() {
            let _ = writeln!(transcript, "# | {line}");
        }
        let _ = writeln!(transcript, "# `-----------------------------");
    }
    if result.status != 0 {
        let _ = writeln!(
            transcript,
            "# error: command failed with exit status: {}",
            result.status
        );
    }
}
