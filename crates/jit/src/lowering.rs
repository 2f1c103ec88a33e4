//! The JIT's op interface: how an elementwise op lowers to the primitive nodes of a fusion
//! group's graph, attached to the op by identity.
//!
//! The JIT's own lowerings of the float-unary family are declared here once, by handle
//! ([`FLOAT_UNARY`]); [`attach`] puts them on a context, and a user's dialect attaches a
//! [`JitLowering`] to its own ops the same way. A [`Jit`](crate::Jit) made with
//! [`Jit::for_context`](crate::Jit::for_context) lowers every op with an attached lowering;
//! ops without one are lowered by the rules of the aten ops in `group/aten.rs`.

use std::collections::HashMap;
use std::fmt;

use dialect_aten::op;
use ir::{Context, DType, OpRef};

use crate::error::JitError;
use crate::group::{Binary, Builder, Const, NodeId, Unary};

/// A lowering written as a function of the op's tensor operands (in operand order).
pub type LowerFn = fn(&mut Lower<'_>, &[NodeId]) -> Result<NodeId, JitError>;

/// How the JIT lowers an elementwise op (an interface attached with `Context::attach`).
#[derive(Clone, Copy)]
pub enum JitLowering {
    /// A unary op computed in floating point: the operand is cast to its float result dtype
    /// (the default float dtype for integers and bool), then the primitive is applied.
    FloatUnary(Unary),
    /// Built by a function from primitive nodes.
    Custom(LowerFn),
}

impl PartialEq for JitLowering {
    fn eq(&self, other: &JitLowering) -> bool {
        match (self, other) {
            (JitLowering::FloatUnary(a), JitLowering::FloatUnary(b)) => a == b,
            (JitLowering::Custom(a), JitLowering::Custom(b)) => std::ptr::fn_addr_eq(*a, *b),
            _ => false,
        }
    }
}

impl fmt::Debug for JitLowering {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JitLowering::FloatUnary(u) => write!(f, "FloatUnary({u:?})"),
            JitLowering::Custom(_) => f.write_str("Custom"),
        }
    }
}

/// The JIT's lowerings of aten's float-unary family.
pub const FLOAT_UNARY: &[(OpRef, Unary)] = &[
    (op::EXP, Unary::Exp),
    (op::LOG, Unary::Log),
    (op::SQRT, Unary::Sqrt),
    (op::RSQRT, Unary::Rsqrt),
    (op::RECIPROCAL, Unary::Recip),
    (op::SIN, Unary::Sin),
    (op::COS, Unary::Cos),
    (op::TANH, Unary::Tanh),
    (op::SIGMOID, Unary::Sigmoid),
    (op::ERF, Unary::Erf),
    (op::EXPM1, Unary::Lib(crate::group::LibFn::Expm1)),
    (op::LOG2, Unary::Lib(crate::group::LibFn::Log2)),
    (op::LOG10, Unary::Lib(crate::group::LibFn::Log10)),
    (op::LOG1P, Unary::Lib(crate::group::LibFn::Log1p)),
    (op::TAN, Unary::Lib(crate::group::LibFn::Tan)),
    (op::ASIN, Unary::Lib(crate::group::LibFn::Asin)),
    (op::ACOS, Unary::Lib(crate::group::LibFn::Acos)),
    (op::ATAN, Unary::Lib(crate::group::LibFn::Atan)),
    (op::SINH, Unary::Lib(crate::group::LibFn::Sinh)),
    (op::COSH, Unary::Lib(crate::group::LibFn::Cosh)),
    (op::ASINH, Unary::Lib(crate::group::LibFn::Asinh)),
    (op::ACOSH, Unary::Lib(crate::group::LibFn::Acosh)),
    (op::ATANH, Unary::Lib(crate::group::LibFn::Atanh)),
];

/// Attaches the JIT's own lowerings to `ctx`.
pub fn attach(ctx: &mut Context) {
    for &(o, u) in FLOAT_UNARY {
        ctx.attach(o, JitLowering::FloatUnary(u));
    }
}

/// Op name → lowering: the JIT's own, then those a context attaches (which take precedence).
#[derive(Clone, Debug, Default)]
pub(crate) struct Lowerings {
    by_name: HashMap<String, JitLowering>,
}

impl Lowerings {
    /// The JIT's own lowerings.
    pub(crate) fn builtin() -> &'static Lowerings {
        static CELL: std::sync::OnceLock<Lowerings> = std::sync::OnceLock::new();
        CELL.get_or_init(|| Lowerings {
            by_name: FLOAT_UNARY.iter().map(|&(o, u)| (o.name().to_string(), JitLowering::FloatUnary(u))).collect(),
        })
    }

    /// The JIT's own lowerings and every one `ctx` has attached.
    pub(crate) fn of_context(ctx: &Context) -> Lowerings {
        let mut l = Lowerings::builtin().clone();
        for (name, lowering) in ctx.interfaces::<JitLowering>() {
            l.by_name.insert(name.to_string(), *lowering);
        }
        l
    }

    pub(crate) fn get(&self, name: &str) -> Option<JitLowering> {
        self.by_name.get(name).copied()
    }
}

/// What a [`LowerFn`] builds with: primitive nodes of the group's graph, typed and broadcast
/// as the graph's own.
pub struct Lower<'a> {
    pub(crate) b: &'a mut Builder,
    pub(crate) op: &'static str,
}

impl Lower<'_> {
    /// The dtype of node `n`.
    pub fn dtype(&self, n: NodeId) -> DType {
        self.b.dtype(n)
    }

    /// `n` converted to `dtype` (itself when it has it).
    pub fn cast(&mut self, n: NodeId, dtype: DType) -> Result<NodeId, JitError> {
        self.b.cast(n, dtype, self.op)
    }

    /// `n` in floating point: its own dtype when floating, the default float dtype otherwise.
    pub fn to_float(&mut self, n: NodeId) -> Result<NodeId, JitError> {
        let d = crate::group::float_result(self.b.dtype(n));
        self.b.cast(n, d, self.op)
    }

    /// A scalar constant of `dtype` (a float dtype takes `value` as it is, rounded to the dtype).
    pub fn float_constant(&mut self, value: f64, dtype: DType) -> NodeId {
        self.b.constant(Const::Float(value), dtype, self.op)
    }

    /// A unary primitive of `n`.
    pub fn unary(&mut self, u: Unary, n: NodeId) -> NodeId {
        self.b.unary(u, n, self.op)
    }

    /// A binary primitive of two nodes of one dtype, broadcast together.
    pub fn binary(&mut self, op: Binary, a: NodeId, b: NodeId) -> Result<NodeId, JitError> {
        self.b.binary(op, a, b, self.op)
    }
}
