//! The interpreter: a function body linearized into instructions over a register file.
//!
//! [`linearize`](linearize::linearize) turns the body of a `func.func` into a [`Function`]: a
//! tree of [`Block`]s whose instructions name their kernel (resolved once, at compile time),
//! their argument list in schema order (registers or constants), their result registers, and
//! which registers die at that instruction. Structured control flow (`prim.If`, `prim.Loop`,
//! `prim.FusionGroup`) keeps its sub-blocks as nested instruction lists over the same register
//! file. Lowered programs run too: `edge.X` ops execute the kernel of `aten.X` (bound with the
//! edge op's schema, the same line), and `backend.partition`s are flattened at compile time
//! ([`partition`]). [`run`](run::Frame) executes a `Function` with a per-runtime [`Frame`](run::Frame):
//! values are moved out of registers at their last use so they are dropped as soon as they
//! are dead, and the memory plan (`crate::plan`) supplies planned storage to out-variant ops.

pub(crate) mod convert;
pub(crate) mod fused_conv;
pub(crate) mod linearize;
pub(crate) mod out;
pub(crate) mod partition;
pub(crate) mod prepack;
pub(crate) mod run;

use std::sync::Arc;

use ir::Location;

use crate::fusion::FusionKernel;
use crate::kernels::KernelFn;
use crate::value::IValue;

/// A register index.
pub(crate) type Reg = u32;

/// How an instruction reads a register operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The value dies here: it is taken out of the register.
    Move,
    /// The value lives on: kernels borrow it (it is swapped in and back out).
    Borrow,
    /// The value lives on and the instruction needs its own handle (containers, repeated operands).
    Clone,
}

/// One argument of an instruction.
#[derive(Clone, Debug)]
pub(crate) enum Arg {
    Reg { reg: Reg, mode: Mode },
    /// A value known at compile time: an attribute, a schema default, a constant, a frozen
    /// weight or the result of an op hoisted out of the function.
    Const(IValue),
}

/// Integer (SymInt) arithmetic and comparisons of the prim dialect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SymOp {
    Add,
    Sub,
    Mul,
    FloorDiv,
    Mod,
    Max,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// The element kind a `prim.ListConstruct` builds, from its result type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ListKind {
    Tensor,
    OptionalTensor,
    Int,
    Float,
    Bool,
    Generic,
}

/// What an instruction does.
#[derive(Clone, Debug)]
pub(crate) enum Kind {
    /// An ATen kernel with its arguments in schema order; `slot` indexes the runtime's
    /// per-instruction argument buffers; `out` is the out-variant used when the value is planned;
    /// `packed`, the constant operand of a matrix product packed at compile time for it;
    /// `complex`, whether an operand or result may be complex when the program runs (decided
    /// from the static types, so calls on real tensors never look for complex ones).
    Kernel { f: KernelFn, slot: usize, out: Option<out::OutOp>, packed: Option<Arc<prepack::Prepacked>>, complex: bool },
    ListConstruct(ListKind),
    ListUnpack,
    TupleConstruct,
    TupleUnpack,
    TupleIndex(usize),
    If { then_block: Block, else_block: Block },
    /// TorchScript's loop: args are `(max_trip_count, initial_condition, carried...)`.
    Loop { body: Block },
    /// A fusion group: its compiled kernel when the fusion compiler took it, and the body run
    /// as a sub-program (args become the body's block arguments) otherwise or when the kernel
    /// declines a call.
    Fusion { body: Block, kernel: Option<Arc<dyn FusionKernel>>, slot: usize },
    Uninitialized,
    Raise,
    Sym(SymOp),
}

/// One instruction.
#[derive(Clone, Debug)]
pub(crate) struct Instr {
    pub kind: Kind,
    pub args: Vec<Arg>,
    pub outs: Vec<Reg>,
    /// Registers to clear after the instruction (values whose last use was inside a nested
    /// block, or results nobody uses).
    pub free: Vec<Reg>,
    /// Index into the function's planning candidates, for out-variant instructions whose result is planned.
    pub home: Option<usize>,
    pub name: Arc<str>,
    pub loc: Location,
}

/// A straight-line list of instructions with its block arguments and the values it yields.
#[derive(Clone, Debug, Default)]
pub(crate) struct Block {
    pub args: Vec<Reg>,
    /// Block arguments nobody reads: cleared on entry.
    pub entry_free: Vec<Reg>,
    pub instrs: Vec<Instr>,
    /// The terminator's operands.
    pub results: Vec<Arg>,
}

/// A value the memory planner may place in the slab: the result of an out-variant
/// instruction of the top-level block whose every use is another out-variant instruction.
#[derive(Clone, Debug)]
pub(crate) struct Candidate {
    pub reg: Reg,
    /// Index of the defining instruction in the top-level block.
    pub def: usize,
    /// Index of the last instruction reading it.
    pub last: usize,
}

/// A linearized function.
#[derive(Clone, Debug)]
pub(crate) struct Function {
    pub body: Block,
    pub num_regs: usize,
    /// Registers holding constants and frozen weights, filled once per runtime.
    pub const_regs: Vec<(Reg, IValue)>,
    /// Number of kernel instructions (argument buffers).
    pub kernel_slots: usize,
    /// The planning candidates of the top-level block.
    pub candidates: Vec<Candidate>,
    /// Number of ops computed once, at compile time, instead of on every call (their results
    /// are among `const_regs`).
    pub hoisted: usize,
}
