//! The error type of tensor operations and kernels: which op failed and why.

use std::borrow::Cow;

/// An error raised by a tensor operation or a kernel. It names the op (`aten.add.Tensor`,
/// `view`, …) and says what was wrong with its inputs. Kernels never panic on bad input;
/// they return one of these.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{op}: {message}")]
pub struct KernelError {
    pub op: Cow<'static, str>,
    pub message: String,
}

impl KernelError {
    pub fn new(op: impl Into<Cow<'static, str>>, message: impl Into<String>) -> KernelError {
        KernelError { op: op.into(), message: message.into() }
    }

    /// The same error attributed to another op (used when a kernel calls a helper).
    pub fn in_op(mut self, op: impl Into<Cow<'static, str>>) -> KernelError {
        self.op = op.into();
        self
    }
}

impl From<::kernels::Error> for KernelError {
    fn from(e: ::kernels::Error) -> KernelError {
        KernelError::new(e.op, e.message)
    }
}

/// The runtime's general error type; tensors and kernels share it.
pub type RuntimeError = KernelError;

/// Shorthand for results of tensor operations and kernels.
pub type Result<T, E = KernelError> = std::result::Result<T, E>;

/// Builds a `KernelError` from an op name and a format string.
#[macro_export]
macro_rules! kerr {
    ($op:expr, $($fmt:tt)*) => {
        $crate::tensor::KernelError::new($op, format!($($fmt)*))
    };
}
