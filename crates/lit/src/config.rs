//! The configuration of a test run: where the suite is, which tools and features exist.

use std::path::PathBuf;
use std::time::Duration;

/// How to run the tests of a suite.
#[derive(Debug, Clone)]
pub struct Config {
    /// The suite's root directory; test names and temporary paths are relative to it.
    pub root: PathBuf,
    /// A directory put in front of `PATH`, holding the tools under test.
    pub tools_dir: Option<PathBuf>,
    /// Available features, for `REQUIRES:`, `UNSUPPORTED:` and `XFAIL:`.
    pub features: Vec<String>,
    /// Extra substitutions applied before the built-in ones (`%s`, `%t`, …).
    pub substitutions: Vec<(String, String)>,
    /// Extra environment variables for every command.
    pub env: Vec<(String, String)>,
    /// Where per-test temporary files (`%t`, `%T`) go.
    pub temp_root: PathBuf,
    /// The suffixes (without dot) of files that are tests.
    pub suffixes: Vec<String>,
    /// The longest a test may run; its commands are killed then and it fails.
    pub timeout: Option<Duration>,
}

impl Config {
    /// A configuration with no tools, features or substitutions, `.ir`/`.mlir` tests and
    /// temporary files under the system temporary directory.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Config {
            root: root.into(),
            tools_dir: None,
            features: Vec::new(),
            substitutions: Vec::new(),
            env: Vec::new(),
            temp_root: std::env::temp_dir().join(format!("lit-{}", std::process::id())),
            suffixes: vec!["ir".to_string(), "mlir".to_string()],
            timeout: None,
        }
    }
}
