//! Numeric kernels over slices and raw pointers, and the instruction set they run on.
//!
//! Nothing here knows of tensors or ops: callers pass slices, strides and sizes and get
//! numbers back. `isa` is the one place that asks the CPU what it has (capped by
//! `DIALECT_ISA`); `wide` compiles portable loops for the chosen vector width; `fastmath` holds
//! the branch-free transcendental functions and `softmax` the rows built on them; `gemm` the prepacked `f32` GEMM, `depthwise` the direct depthwise convolution and `gemv` the
//! batch-1 matrix-vector product over strided matrices (`mat`), their intrinsics in `x86`
//! (one module per ISA); `parallel` is the intra-op team that kernels split their work
//! across; `transpose` copies strided matrices into row-major ones in register tiles; `testing` the deterministic inputs of tests here and in the runtime. A kernel refuses operands that do not fit with an [`Error`] naming
//! the caller's op; the runtime turns it into its own error type.

pub mod error;
pub mod fastmath;
pub mod gemm;
pub mod depthwise;
pub mod gemv;
pub mod halves;
pub mod isa;
pub mod mat;
pub mod parallel;
pub mod pool;
pub mod softmax;
#[doc(hidden)]
pub mod testing;
pub mod transpose;
pub mod wide;
#[cfg(target_arch = "x86_64")]
mod x86;

pub use error::{Error, Result};
pub use isa::Isa;
