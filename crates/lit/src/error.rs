//! Error values produced while reading, parsing and running lit tests.

use std::path::PathBuf;

/// Everything that can go wrong before or around running a test's commands.
///
/// A command that merely exits non-zero is not an error: it is a test failure and is
/// reported through [`crate::Outcome`].
#[derive(Debug, thiserror::Error)]
pub enum LitError {
    /// A file or directory could not be read or written.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A directive in a test file is malformed.
    #[error("line {line}: {message}")]
    Directive { line: usize, message: String },
    /// A `REQUIRES`/`XFAIL`/`UNSUPPORTED` boolean expression is malformed.
    #[error("bad feature expression `{expr}`: {message}")]
    BoolExpr { expr: String, message: String },
    /// A `RUN:` command line could not be tokenized or parsed.
    #[error("bad shell command `{command}`: {message}")]
    Shell { command: String, message: String },
}

impl LitError {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        LitError::Io {
            path: path.into(),
            source,
        }
    }
}

/// The result type of this crate.
pub type Result<T, E = LitError> = std::result::Result<T, E>;
