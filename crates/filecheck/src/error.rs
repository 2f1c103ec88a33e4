//! The errors a FileCheck run reports; each renders to LLVM's wording.

/// Why a FileCheck run did not pass. `Display` gives the full LLVM-style
/// report (with trailing newline where LLVM prints one).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileCheckError {
    /// The configuration is unusable (bad prefix, bad `-D`). Exit code 2.
    #[error("{0}")]
    InvalidConfig(String),
    /// The check file is malformed; holds the rendered diagnostics. Exit code 2.
    #[error("{0}")]
    InvalidCheckFile(String),
    /// A check prefix has no directive in the check file. Exit code 2.
    #[error("error: no check strings found with prefix{} {}", if .0.len() > 1 { "es" } else { "" }, quoted_prefixes(.0))]
    NoCheckStrings(Vec<String>),
    /// The input is empty and `allow_empty` is off. Exit code 2.
    #[error("FileCheck error: '{0}' is empty.")]
    EmptyInput(String),
    /// At least one check failed; holds the rendered diagnostics. Exit code 1.
    #[error("{0}")]
    CheckFailed(String),
}

impl FileCheckError {
    /// The exit code LLVM FileCheck uses for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            FileCheckError::CheckFailed(_) => 1,
            _ => 2,
        }
    }
}

fn quoted_prefixes(prefixes: &[String]) -> String {
    prefixes.iter().map(|p| format!("'{p}:'")).collect::<Vec<_>>().join(", ")
}
