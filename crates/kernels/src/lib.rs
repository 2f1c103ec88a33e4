//! Numeric kernels over slices and raw pointers, and the instruction set they run on.
//!
//! Nothing here knows of tensors or ops: callers pass slices, strides and sizes and get
//! numbers back. `isa` is the one place that asks the CPU what it has (capped by
//! `DIALECT_ISA`); `wide` compiles portable loops for the chosen vector width; `fastmath` holds
//! the branch-free transcendental functions; `parallel` is the intra-op team that kernels
//! split their work across. A kernel refuses operands that do not fit with an [`Error`] naming
//! the caller's op; the runtime turns it into its own error type.

pub mod error;
pub mod fastmath;
pub mod isa;
pub mod parallel;
pub mod wide;

pub use error::{Error, Result};
pub use isa::Isa;
