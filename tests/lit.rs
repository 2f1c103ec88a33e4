//! Runs the project's lit suite (`<workspace>/lit`) under `cargo test`, reporting like libtest.
//!
//! The driver's binaries (`dialect-opt`, `dialect-run`, `filecheck`, built by `support::tool`) are put first on
//! `PATH`. A positional argument filters tests by a substring of their name
//! (`cargo test -p integration-tests --test lit -- transforms/cse`); other libtest flags are accepted
//! and, where they make sense, honoured (`--test-threads N`, `-q`, `--exact`, `--skip`,
//! `--list`, `--ignored`). `LIT_TIMEOUT` sets the per-test limit in seconds (default 300,
//! 0 for none).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use lit::{Config, Outcome, TestResult};

/// The libtest flags that take a value, so the value is not mistaken for a filter.
const FLAGS_WITH_VALUE: [&str; 6] = [
    "--test-threads",
    "--color",
    "--format",
    "--skip",
    "--logfile",
    "-Z",
];

#[derive(Debug, Default)]
struct Args {
    filters: Vec<String>,
    skips: Vec<String>,
    exact: bool,
    quiet: bool,
    list: bool,
    only_ignored: bool,
    workers: Option<usize>,
}

fn parse_args(args: impl Iterator<Item = String>) -> Args {
    let mut parsed = Args::default();
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        let (flag, inline_value) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                (flag.to_string(), Some(value.to_string()))
            }
            _ => (arg.clone(), None),
        };
        let value = if FLAGS_WITH_VALUE.contains(&flag.as_str()) {
            inline_value.or_else(|| args.next())
        } else {
            None
        };
        match flag.as_str() {
            "--test-threads" => parsed.workers = value.and_then(|v| v.parse().ok()),
            "--skip" => parsed.skips.extend(value),
            "--exact" => parsed.exact = true,
            "-q" | "--quiet" => parsed.quiet = true,
            "--list" => parsed.list = true,
            "--ignored" => parsed.only_ignored = true,
            _ if arg.starts_with('-') => {}
            _ => parsed.filters.push(arg),
        }
    }
    parsed
}

impl Args {
    fn selects(&self, name: &str) -> bool {
        let matches = |pattern: &String| {
            if self.exact {
                name == pattern
            } else {
                name.contains(pattern.as_str())
            }
        };
        (self.filters.is_empty() || self.filters.iter().any(matches))
            && !self.skips.iter().any(matches)
    }
}

fn main() -> ExitCode {
    match run(parse_args(std::env::args().skip(1))) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(101),
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(101)
        }
    }
}

/// Runs the suite; `Ok(false)` when a test failed.
fn run(args: Args) -> Result<bool, String> {
    let workspace = support::workspace_root();
    let workspace = std::path::absolute(&workspace).map_err(|err| err.to_string())?;
    let workspace = normalize(&workspace);
    let root = workspace.join("lit");
    let tools_dir = support::tool("dialect-opt")
        .parent()
        .map(Path::to_path_buf)
        .ok_or("the dialect-opt binary has no parent directory")?;
    for tool in ["dialect-opt", "dialect-run", "filecheck"].map(support::tool) {
        if !tool.exists() {
            return Err(format!("tool {} was not built", tool.display()));
        }
    }

    let mut config = Config::new(&root);
    config.tools_dir = Some(tools_dir.clone());
    config.temp_root = tools_dir.join("lit-tmp");
    config.features = vec!["dialect-opt".to_string(), "dialect-run".to_string()];
    // A hung tool fails its test instead of hanging `cargo test`; LIT_TIMEOUT=0 disables it.
    let timeout = match std::env::var("LIT_TIMEOUT") {
        Ok(value) => value
            .parse::<u64>()
            .map_err(|_| format!("LIT_TIMEOUT={value} is not a number of seconds"))?,
        Err(_) => 300,
    };
    config.timeout = (timeout > 0).then(|| std::time::Duration::from_secs(timeout));
    // Real MLIR, where installed, checks that our generic form stays legal MLIR.
    if let Some(mlir_opt) = find_on_path(&["mlir-opt-22", "mlir-opt"]) {
        config.features.push("mlir-opt".to_string());
        config.substitutions.push(("%mlir-opt".to_string(), mlir_opt.to_string_lossy().into_owned()));
    }
    let fixtures = normalize(&workspace.join("../shared/fixtures"));
    if fixtures.is_dir() {
        config.features.push("shared-fixtures".to_string());
    } else if std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1") {
        return Err(format!(
            "CI is set but the shared fixtures are missing at {}; tests that \
             `REQUIRES: shared-fixtures` would be skipped",
            fixtures.display()
        ));
    }

    let all = lit::discover(&root).map_err(|err| format!("cannot discover lit tests: {err}"))?;
    let name_of = |path: &Path| -> String {
        path.strip_prefix(&workspace)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned()
    };
    let tests: Vec<PathBuf> = all
        .iter()
        .filter(|path| !args.only_ignored && args.selects(&name_of(path)))
        .cloned()
        .collect();
    let filtered_out = all.len() - tests.len();

    if args.list {
        for test in &tests {
            println!("{}: test", name_of(test));
        }
        println!("\n{} tests, 0 benchmarks", tests.len());
        return Ok(true);
    }

    println!("\nrunning {} tests", tests.len());
    let start = Instant::now();
    let mut failures: Vec<TestResult> = Vec::new();
    let mut stdout = std::io::stdout();
    let workers = args.workers.unwrap_or(2);
    let summary = lit::run_tests(&config, &tests, workers, |result| {
        let verdict = match result.outcome {
            Outcome::Pass | Outcome::XFail => ("ok", "."),
            Outcome::Unsupported => ("ignored", "i"),
            Outcome::Fail | Outcome::XPass | Outcome::Unresolved => ("FAILED", "F"),
        };
        // Printing is best effort: a closed stdout must not hide the exit status.
        let _ = if args.quiet {
            write!(stdout, "{}", verdict.1)
        } else {
            writeln!(stdout, "test {} ... {}", name_of(&result.path), verdict.0)
        };
        let _ = stdout.flush();
        if result.outcome.is_failure() {
            failures.push(result.clone());
        }
    });
    if args.quiet {
        println!();
    }

    failures.sort_by(|a, b| a.path.cmp(&b.path));
    if !failures.is_empty() {
        println!("\nfailures:\n");
        for failure in &failures {
            println!(
                "---- {} ({}) ----",
                name_of(&failure.path),
                failure.outcome.label()
            );
            println!("{}", failure.output);
        }
        println!("failures:");
        for failure in &failures {
            println!("    {}", name_of(&failure.path));
        }
    }
    let passed = summary.count(Outcome::Pass) + summary.count(Outcome::XFail);
    let ignored = summary.count(Outcome::Unsupported);
    let ok = failures.is_empty();
    println!(
        "\ntest result: {}. {passed} passed; {} failed; {ignored} ignored; 0 measured; \
         {filtered_out} filtered out; finished in {:.2}s\n",
        if ok { "ok" } else { "FAILED" },
        summary.failures(),
        start.elapsed().as_secs_f64(),
    );
    Ok(ok)
}

/// Removes `.` and `..` components so test names read `lit/…`.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The first of `names` found in a directory of `PATH`.
fn find_on_path(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    names.iter().find_map(|n| std::env::split_paths(&path).map(|d| d.join(n)).find(|p| p.is_file()))
}
