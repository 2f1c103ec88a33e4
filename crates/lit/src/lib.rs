//! A lit test runner: LLVM lit's test format and internal shell, as a library.
//!
//! A test is a file whose comments hold `RUN:` lines (and optionally `REQUIRES:`,
//! `UNSUPPORTED:`, `XFAIL:`). Each `RUN:` line is `%`-substituted and run by an internal
//! shell with pipelines, redirections, `not` and a few builtins; the test passes when all
//! of them exit with status 0.
//!
//! ```no_run
//! let mut config = lit::Config::new("lit");
//! config.features.push("dialect-opt".to_string());
//! let tests = lit::discover(&config.root)?;
//! let summary = lit::run_tests(&config, &tests, 2, |result| {
//!     println!("{}: {}", result.outcome.label(), result.path.display());
//! });
//! assert_eq!(summary.failures(), 0);
//! # Ok::<(), lit::LitError>(())
//! ```

mod boolexpr;
mod config;
mod directives;
mod discover;
mod error;
mod runner;
pub mod shell;
mod substitute;
mod suite;

pub use boolexpr::evaluate as evaluate_features;
pub use config::Config;
pub use directives::{Directives, RunLine, parse as parse_directives};
pub use discover::{discover, discover_with_suffixes};
pub use error::{LitError, Result};
pub use runner::{Outcome, TestResult, run_test};
pub use substitute::{Substitutions, TestPaths};
pub use suite::{Summary, run_tests};
