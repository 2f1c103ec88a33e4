//! Running a parsed [`Script`]: pipelines over OS pipes, redirections, `not`, `env`, `cd`
//! and builtins, with lit's pipefail semantics.
//!
//! Every stage of a pipeline runs concurrently (external commands as child processes,
//! builtins on their own threads) and the last stage's output and every stage's standard
//! error are drained by reader threads, so no pipe can fill up and deadlock. Failures to
//! start a command or open a redirection are reported on the captured standard error with
//! status 127 or 1, as a shell would, rather than as Rust errors.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{PipeReader, PipeWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::builtins;
use super::parser::{Command, Pipeline, RedirectTarget, Script, SeqOp};

/// The state a script runs in; `cd` changes it for the commands that follow.
#[derive(Debug, Clone)]
pub struct ShellEnv {
    /// The working directory of commands.
    pub cwd: PathBuf,
    /// The complete environment of child processes.
    pub vars: BTreeMap<String, String>,
    /// When set, child processes still running at this instant are killed and their
    /// pipeline fails.
    pub deadline: Option<Instant>,
}

impl ShellEnv {
    /// An environment with the current process's variables.
    pub fn inherit(cwd: PathBuf) -> Self {
        ShellEnv {
            cwd,
            vars: std::env::vars().collect(),
            deadline: None,
        }
    }
}

/// What happened to one command that was executed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandTrace {
    /// The command's words, including `not`/`env` prefixes.
    pub args: Vec<String>,
    /// The exit status after `not` was applied.
    pub status: i32,
}

/// The result of running a script.
#[derive(Debug, Clone, Default)]
pub struct ExecOutput {
    /// The status of the last pipeline that ran.
    pub status: i32,
    /// Standard output of the script that was not redirected.
    pub stdout: Vec<u8>,
    /// Standard error of the script that was not redirected.
    pub stderr: Vec<u8>,
    /// Every command that was started, in order.
    pub commands: Vec<CommandTrace>,
    /// Whether a command was killed because the deadline passed.
    pub timed_out: bool,
}

/// Runs a script, updating `env` for `cd`.
pub fn execute(script: &Script, env: &mut ShellEnv) -> ExecOutput {
    let mut output = ExecOutput::default();
    output.status = run_script(script, env, &mut output);
    output
}

fn run_script(script: &Script, env: &mut ShellEnv, output: &mut ExecOutput) -> i32 {
    match script {
        Script::Pipeline(pipeline) => run_pipeline(pipeline, env, output),
        Script::Seq(lhs, op, rhs) => {
            let status = run_script(lhs, env, output);
            let run_rhs = match op {
                SeqOp::And => status == 0,
                SeqOp::Or => status != 0,
                SeqOp::Then => true,
            };
            if run_rhs {
                run_script(rhs, env, output)
            } else {
                status
            }
        }
    }
}

/// Where a stage reads from.
enum Source {
    Null,
    Pipe(PipeReader),
    File(File),
}

/// Where a stage writes to.
enum Sink {
    Pipe(PipeWriter),
    File(File),
}

impl Source {
    fn into_stdio(self) -> Stdio {
        match self {
            Source::Null => Stdio::null(),
            Source::Pipe(pipe) => pipe.into(),
            Source::File(file) => file.into(),
        }
    }

    fn into_reader(self) -> Box<dyn Read + Send> {
        match self {
            Source::Null => Box::new(std::io::empty()),
            Source::Pipe(pipe) => Box::new(pipe),
            Source::File(file) => Box::new(file),
        }
    }
}

impl Sink {
    fn try_clone(&self) -> std::io::Result<Sink> {
        Ok(match self {
            Sink::Pipe(pipe) => Sink::Pipe(pipe.try_clone()?),
            Sink::File(file) => Sink::File(file.try_clone()?),
        })
    }

    fn into_stdio(self) -> Stdio {
        match self {
            Sink::Pipe(pipe) => pipe.into(),
            Sink::File(file) => file.into(),
        }
    }

    fn into_writer(self) -> Box<dyn Write + Send> {
        match self {
            Sink::Pipe(pipe) => Box::new(pipe),
            Sink::File(file) => Box::new(file),
        }
    }
}

/// The three standard descriptors of a stage.
struct Fds {
    stdin: Source,
    stdout: Sink,
    stderr: Sink,
}

/// A started stage of a pipeline.
enum Running {
    Child(Child),
    Thread(JoinHandle<i32>),
    Finished(i32),
}

/// A stage's command with its `not` and `env` prefixes peeled off.
struct Prepared {
    args: Vec<String>,
    negations: usize,
    expect_crash: bool,
    vars: BTreeMap<String, String>,
}

/// Reads everything from a pipe on a thread.
fn drain(mut reader: PipeReader) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        // A read error ends the capture; what was read so far is still reported.
        let _ = reader.read_to_end(&mut bytes);
        bytes
    })
}

fn run_pipeline(pipeline: &Pipeline, env: &mut ShellEnv, output: &mut ExecOutput) -> i32 {
    if let [command] = pipeline.commands.as_slice()
        && command.args.first().map(String::as_str) == Some("cd")
    {
        return change_directory(command, env, output);
    }
    let ((out_reader, out_writer), (err_reader, err_writer)) =
        match std::io::pipe().and_then(|out| Ok((out, std::io::pipe()?))) {
            Ok(pipes) => pipes,
            Err(err) => {
                output
                    .stderr
                    .extend(format!("lit: cannot create a pipe: {err}\n").bytes());
                return 1;
            }
        };
    let out_thread = drain(out_reader);
    let err_thread = drain(err_reader);

    let mut stages = Vec::with_capacity(pipeline.commands.len());
    let mut upstream: Option<PipeReader> = None;
    let count = pipeline.commands.len();
    for (index, command) in pipeline.commands.iter().enumerate() {
        let stdin = upstream.take().map_or(Source::Null, Source::Pipe);
        let stdout = if index + 1 == count {
            out_writer.try_clone().map(Sink::Pipe)
        } else {
            std::io::pipe().map(|(reader, writer)| {
                upstream = Some(reader);
                Sink::Pipe(writer)
            })
        };
        let stderr = err_writer.try_clone().map(Sink::Pipe);
        let running = match (stdout, stderr) {
            (Ok(stdout), Ok(stderr)) => start(
                command,
                Fds {
                    stdin,
                    stdout,
                    stderr,
                },
                env,
            ),
            (Err(err), _) | (_, Err(err)) => {
                report(&err_writer, &format!("lit: cannot create a pipe: {err}"));
                (Running::Finished(1), None)
            }
        };
        stages.push((command, running));
    }
    // Only the stages may hold the write ends now, so the drains see end-of-file.
    drop(out_writer);
    drop(err_writer);

    if let Some(deadline) = env.deadline
        && wait_until(&mut stages, deadline)
    {
        output.timed_out = true;
        output
            .stderr
            .extend(b"lit: command timed out and was killed\n");
    }
    let mut status = 0;
    for (command, (running, prepared)) in stages {
        let raw = match running {
            Running::Finished(code) => RawStatus {
                code,
                crashed: false,
            },
            Running::Thread(handle) => RawStatus {
                code: handle.join().unwrap_or(1),
                crashed: false,
            },
            Running::Child(mut child) => match child.wait() {
                Ok(exit) => RawStatus::from(exit),
                Err(_) => RawStatus {
                    code: 1,
                    crashed: false,
                },
            },
        };
        let code = match &prepared {
            Some(prepared) => apply_not(prepared, raw),
            None => raw.code,
        };
        output.commands.push(CommandTrace {
            args: command.args.clone(),
            status: code,
        });
        if code != 0 {
            status = code;
        }
    }
    output.stdout.extend(out_thread.join().unwrap_or_default());
    output.stderr.extend(err_thread.join().unwrap_or_default());
    status
}

/// Polls the child processes of a pipeline until they exit or `deadline` passes, then
/// kills those still running. Returns whether any was killed.
fn wait_until(stages: &mut [(&Command, (Running, Option<Prepared>))], deadline: Instant) -> bool {
    let mut pause = Duration::from_millis(1);
    loop {
        let mut running = false;
        for (_, (stage, _)) in stages.iter_mut() {
            if let Running::Child(child) = stage {
                running |= matches!(child.try_wait(), Ok(None));
            }
        }
        if !running {
            return false;
        }
        if Instant::now() >= deadline {
            for (_, (stage, _)) in stages.iter_mut() {
                if let Running::Child(child) = stage {
                    // A child that exited meanwhile cannot be killed; that is fine.
                    let _ = child.kill();
                }
            }
            return true;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

struct RawStatus {
    code: i32,
    crashed: bool,
}

impl From<std::process::ExitStatus> for RawStatus {
    fn from(exit: std::process::ExitStatus) -> Self {
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            if let Some(signal) = exit.signal() {
                return RawStatus {
                    code: 128 + signal,
                    crashed: true,
                };
            }
        }
        RawStatus {
            code: exit.code().unwrap_or(1),
            crashed: false,
        }
    }
}

/// Applies `not` (success iff the command failed without crashing) or `not --crash`
/// (success iff it crashed); an even number of `not`s inverts that again.
fn apply_not(prepared: &Prepared, raw: RawStatus) -> i32 {
    if prepared.negations == 0 {
        return raw.code;
    }
    let single = if prepared.expect_crash {
        raw.crashed
    } else {
        !raw.crashed && raw.code != 0
    };
    let success = if prepared.negations % 2 == 1 {
        single
    } else {
        !single
    };
    i32::from(!success)
}

fn report(sink: &PipeWriter, message: &str) {
    // Reporting is best effort: the capture may already be closed.
    if let Ok(mut sink) = sink.try_clone() {
        let _ = writeln!(sink, "{message}");
    }
}

fn report_to(sink: &Sink, message: &str) {
    if let Ok(sink) = sink.try_clone() {
        let _ = writeln!(sink.into_writer(), "{message}");
    }
}

fn change_directory(command: &Command, env: &mut ShellEnv, output: &mut ExecOutput) -> i32 {
    let status = match command.args.as_slice() {
        [_, dir] if command.redirects.is_empty() => {
            let target = env.cwd.join(dir);
            if target.is_dir() {
                env.cwd = target;
                0
            } else {
                output
                    .stderr
                    .extend(format!("cd: {dir}: no such directory\n").bytes());
                1
            }
        }
        _ => {
            output
                .stderr
                .extend(b"cd: expected exactly one directory and no redirections\n");
            1
        }
    };
    output.commands.push(CommandTrace {
        args: command.args.clone(),
        status,
    });
    status
}

/// Applies a command's redirections, left to right, to its descriptors.
fn redirect(command: &Command, mut fds: Fds, cwd: &Path) -> Result<Fds, (String, Fds)> {
    for redirect in &command.redirects {
        let open = |path: &str, append: bool| {
            let mut options = OpenOptions::new();
            options.write(true).create(true);
            if append {
                options.append(true)
            } else {
                options.truncate(true)
            };
            options
                .open(cwd.join(path))
                .map_err(|err| format!("{path}: {err}"))
        };
        let result: Result<(), String> = (|| {
            match (redirect.target.clone(), redirect.fd) {
                (RedirectTarget::Read(path), 0) => {
                    let file =
                        File::open(cwd.join(&path)).map_err(|err| format!("{path}: {err}"))?;
                    fds.stdin = Source::File(file);
                }
                (RedirectTarget::Write(path) | RedirectTarget::Append(path), fd @ (1 | 2)) => {
                    let file = open(&path, matches!(redirect.target, RedirectTarget::Append(_)))?;
                    if fd == 1 {
                        fds.stdout = Sink::File(file)
                    } else {
                        fds.stderr = Sink::File(file)
                    }
                }
                (RedirectTarget::WriteBoth(path), _) => {
                    let file = open(&path, false)?;
                    fds.stderr =
                        Sink::File(file.try_clone().map_err(|err| format!("{path}: {err}"))?);
                    fds.stdout = Sink::File(file);
                }
                (RedirectTarget::Dup(0), 0) => {}
                (RedirectTarget::Dup(from @ (1 | 2)), to @ (1 | 2)) => {
                    let source = if from == 1 { &fds.stdout } else { &fds.stderr };
                    let copy = source.try_clone().map_err(|err| err.to_string())?;
                    if to == 1 {
                        fds.stdout = copy
                    } else {
                        fds.stderr = copy
                    }
                }
                (RedirectTarget::Dup(0), fd @ (1 | 2)) | (RedirectTarget::Dup(fd @ (1 | 2)), 0) => {
                    return Err(format!(
                        "cannot duplicate between stdin and descriptor {fd}"
                    ));
                }
                (_, fd) => return Err(format!("unsupported redirection of descriptor {fd}")),
            }
            Ok(())
        })();
        if let Err(message) = result {
            return Err((message, fds));
        }
    }
    Ok(fds)
}

/// Peels `not [--crash]` and `env [-u NAME] [-i] NAME=VALUE…` prefixes off a command.
fn prepare(args: &[String], env: &ShellEnv) -> Result<Prepared, String> {
    let mut prepared = Prepared {
        args: Vec::new(),
        negations: 0,
        expect_crash: false,
        vars: env.vars.clone(),
    };
    let mut rest = args;
    loop {
        match rest.first().map(String::as_str) {
            Some("not") => {
                prepared.negations += 1;
                rest = &rest[1..];
                if rest.first().map(String::as_str) == Some("--crash") {
                    prepared.expect_crash = true;
                    rest = &rest[1..];
                }
            }
            Some("env") => {
                rest = &rest[1..];
                loop {
                    match rest.first().map(String::as_str) {
                        Some("-u") => {
                            let Some(name) = rest.get(1) else {
                                return Err("env: option -u needs a name".to_string());
                            };
                            prepared.vars.remove(name);
                            rest = &rest[2..];
                        }
                        Some("-i" | "-") => {
                            prepared.vars.clear();
                            rest = &rest[1..];
                        }
                        Some(word) if word.contains('=') && !word.starts_with('=') => {
                            let (name, value) = word.split_once('=').unwrap_or((word, ""));
                            prepared.vars.insert(name.to_string(), value.to_string());
                            rest = &rest[1..];
                        }
                        _ => break,
                    }
                }
            }
            Some(_) => break,
            None => return Err("expected a command".to_string()),
        }
    }
    prepared.args = rest.to_vec();
    Ok(prepared)
}

/// Finds an executable on `PATH` (or relative to `cwd` when the name has a slash).
pub fn find_program(name: &str, cwd: &Path, vars: &BTreeMap<String, String>) -> Option<PathBuf> {
    if name.contains('/') {
        let path = cwd.join(name);
        return is_executable(&path).then_some(path);
    }
    let path_var = vars.get("PATH")?;
    std::env::split_paths(path_var)
        .map(|dir| {
            if dir.is_relative() {
                cwd.join(dir)
            } else {
                dir
            }
        })
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    let Ok(metadata) = std::fs::metadata(path) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        metadata.is_file() && metadata.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        metadata.is_file()
    }
}

/// Starts one stage; the second value is `None` when the command never got to run.
fn start(command: &Command, fds: Fds, env: &ShellEnv) -> (Running, Option<Prepared>) {
    let fds = match redirect(command, fds, &env.cwd) {
        Ok(fds) => fds,
        Err((message, fds)) => {
            report_to(&fds.stderr, &format!("lit: {message}"));
            return (Running::Finished(1), None);
        }
    };
    let prepared = match prepare(&command.args, env) {
        Ok(prepared) => prepared,
        Err(message) => {
            report_to(&fds.stderr, &format!("lit: {message}"));
            return (Running::Finished(1), None);
        }
    };
    let Some(name) = prepared.args.first().cloned() else {
        return (Running::Finished(1), None);
    };
    if name == "cd" {
        report_to(
            &fds.stderr,
            "lit: `cd` cannot be used in a pipeline or with `not`/`env`",
        );
        return (Running::Finished(1), Some(prepared));
    }
    if builtins::is_builtin(&name) {
        let args = prepared.args.clone();
        let cwd = env.cwd.clone();
        let handle = std::thread::spawn(move || {
            let mut stdin = fds.stdin.into_reader();
            let mut stdout = fds.stdout.into_writer();
            let mut stderr = fds.stderr.into_writer();
            let status = builtins::run(&args, &cwd, &mut stdin, &mut stdout, &mut stderr);
            let _ = stdout.flush();
            status
        });
        return (Running::Thread(handle), Some(prepared));
    }
    let Some(program) = find_program(&name, &env.cwd, &prepared.vars) else {
        report_to(&fds.stderr, &format!("lit: {name}: command not found"));
        return (Running::Finished(127), Some(prepared));
    };
    let stderr_copy = fds.stderr.try_clone();
    let spawned = {
        let mut process = std::process::Command::new(&program);
        process
            .args(&prepared.args[1..])
            .current_dir(&env.cwd)
            .env_clear()
            .envs(&prepared.vars)
            .stdin(fds.stdin.into_stdio())
            .stdout(fds.stdout.into_stdio())
            .stderr(fds.stderr.into_stdio());
        // `process` and the descriptors it holds are dropped at the end of this block.
        process.spawn()
    };
    match spawned {
        Ok(child) => (Running::Child(child), Some(prepared)),
        Err(err) => {
            if let Ok(sink) = stderr_copy {
                report_to(&sink, &format!("lit: {}: {err}", program.display()));
            }
            (Running::Finished(126), Some(prepared))
        }
    }
}

/// Quotes a word for display so that it reads back as the same word.
pub fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_alphanumeric() || "-_./=:,+%@^{}".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_for_display() {
        assert_eq!(quote("abc/d.ir"), "abc/d.ir");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn not_semantics() {
        let p = |negations, expect_crash| Prepared {
            args: Vec::new(),
            negations,
            expect_crash,
            vars: BTreeMap::new(),
        };
        let raw = |code, crashed| RawStatus { code, crashed };
        assert_eq!(apply_not(&p(0, false), raw(3, false)), 3);
        assert_eq!(apply_not(&p(1, false), raw(3, false)), 0);
        assert_eq!(apply_not(&p(1, false), raw(0, false)), 1);
        assert_eq!(apply_not(&p(2, false), raw(3, false)), 1);
        assert_eq!(apply_not(&p(2, false), raw(0, false)), 0);
        assert_eq!(apply_not(&p(1, true), raw(134, true)), 0);
        assert_eq!(apply_not(&p(1, true), raw(1, false)), 1);
        assert_eq!(apply_not(&p(1, false), raw(134, true)), 1);
    }
}
