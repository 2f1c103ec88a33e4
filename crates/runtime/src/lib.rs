//! Tensors, kernels, the interpreter, the memory planner and the executor.
//!
//! `tensor` holds the strided tensor over shared storage, `value` the runtime values that flow
//! between ops, `kernels` the interpreter kernels and their registry, `io` safetensors files,
//! `parallel` (re-exported from the `kernels` crate) the intra-op parallel-for that kernels split
//! their work with.

pub mod exec;
pub mod fusion;
mod interp;
pub mod io;
pub mod kernels;
pub mod memory;
pub mod plan;
pub mod tensor;
pub mod value;

pub use exec::{
    CompileOptions, CompiledProgram, ExecError, GuardPolicy, InputInfo, InputKind, MissingKernel, OpProfile, OutSpec, Outputs, Runtime,
    Weights, compile, compile_with_registry,
};
pub use ::kernels::parallel;
pub use fusion::{FusionCompiler, FusionDecision, FusionKernel, FusionOutcome, OutputAlloc};
pub use kernels::{KernelFn, KernelRegistry, registry};
pub use tensor::{Element, KernelError, Result, RuntimeError, Scalar, Storage, Tensor};
pub use value::IValue;
