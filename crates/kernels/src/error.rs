//! The error type of the kernels: which op's kernel refused its operands and why.

/// A kernel's refusal of its operands (shapes that do not fit, a size that overflows). It names
/// the op the caller runs the kernel for, so the runtime turns it into its own error unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{op}: {message}")]
pub struct Error {
    pub op: &'static str,
    pub message: String,
}

impl Error {
    pub fn new(op: &'static str, message: impl Into<String>) -> Error {
        Error { op, message: message.into() }
    }
}

/// Shorthand for results of kernels.
pub type Result<T, E = Error> = std::result::Result<T, E>;
