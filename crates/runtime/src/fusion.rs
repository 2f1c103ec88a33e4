//! The hook through which a code generator runs `prim.FusionGroup`s in place of the interpreter.
//!
//! The runtime cannot name a code generator (they depend on it), so it defines the interface:
//! a [`FusionCompiler`] set in [`CompileOptions::fusion`](crate::CompileOptions) is offered
//! every `prim.FusionGroup` of a program when the program is compiled. It either returns a
//! [`FusionKernel`] for the group or declines it with a reason; a declined group runs its
//! region in the interpreter, and the decision is recorded in
//! [`CompiledProgram::fusion_groups`](crate::CompiledProgram::fusion_groups). At run time the
//! group's instruction calls the kernel with the input tensors; the kernel may still decline a
//! particular call (inputs of a dtype or layout it does not compile), and the instruction then
//! interprets the region for that call. Kernels are shared by every runtime of a program, so
//! they are `Send + Sync`.

use std::fmt;
use std::sync::Arc;

use ir::{DType, Module, OpId};

use crate::tensor::{KernelError, Tensor};

/// Compiles fusion groups; set through [`CompileOptions::fusion`](crate::CompileOptions).
pub trait FusionCompiler: Send + Sync + fmt::Debug {
    /// A short name for messages and statistics (`"jit"`).
    fn name(&self) -> &str;

    /// Prepares the `prim.FusionGroup` `group` of `m` (its operand types are as precise as the
    /// program's). `Err` declines the group, with the reason: it is then interpreted.
    fn compile_group(&self, m: &Module, group: OpId) -> Result<Arc<dyn FusionKernel>, String>;
}

/// Where a kernel's outputs go: the runtime hands out planned storage when the memory plan
/// has a home for an output of that dtype and shape, and a fresh tensor otherwise.
pub trait OutputAlloc {
    /// A contiguous tensor of `dtype` and `sizes` for output `index`; its contents are
    /// unspecified (the kernel overwrites every element).
    fn output(&mut self, index: usize, dtype: DType, sizes: &[usize]) -> Result<Tensor, KernelError>;
}

/// What a call of a [`FusionKernel`] did.
#[derive(Debug)]
pub enum FusionOutcome {
    /// The kernel ran; one tensor per group result.
    Ran(Vec<Tensor>),
    /// The kernel does not handle these inputs (reason given); the group is interpreted.
    Declined(String),
}

/// A compiled fusion group.
pub trait FusionKernel: Send + Sync + fmt::Debug {
    /// Runs the group on `inputs` (the group's operands, in order), taking output storage from
    /// `alloc`. Inputs are only read. The kernel must check that the inputs are those it was
    /// specialized to before it enters native code.
    fn run(&self, inputs: &[Tensor], alloc: &mut dyn OutputAlloc) -> Result<FusionOutcome, KernelError>;
}

/// What became of one `prim.FusionGroup` when its program was compiled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FusionDecision {
    /// The group's source location (its members' locations, fused).
    pub loc: String,
    /// Number of ops in the group's body (constants and the terminator excluded).
    pub ops: usize,
    /// `None` when the fusion compiler took the group; the reason it declined otherwise.
    pub declined: Option<String>,
}

impl FusionDecision {
    pub fn compiled(&self) -> bool {
        self.declined.is_none()
    }
}
