//! Errors of the JIT: unsupported groups, invalid programs, guard failures and codegen failures.

use ir::DType;

/// Why a fusion group could not be compiled or a kernel could not run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum JitError {
    /// The group uses something the JIT does not compile (an op, a dtype, a layout); the caller
    /// should interpret the group instead.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The group is malformed or would fail in the reference kernels too (bad arguments, dtype
    /// rules PyTorch rejects); the message names the op.
    #[error("invalid fusion group: {0}")]
    Invalid(String),
    /// The inputs given to a kernel do not match its specialization.
    #[error("inputs do not match the kernel's specialization: {0}")]
    Guard(String),
    /// Cranelift rejected the generated function.
    #[error("code generation failed: {0}")]
    Codegen(String),
    /// The kernel ran and reported an error PyTorch would raise (integer division by zero).
    #[error("{op}: {message}")]
    Runtime { op: String, message: String },
}

impl JitError {
    pub(crate) fn unsupported_dtype(op: &str, d: DType) -> JitError {
        JitError::Unsupported(format!("{op}: dtype {} is not compiled", d.torch_name()))
    }
}
