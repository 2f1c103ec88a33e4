//! Families of aten ops that share their rules, declared once by op identity, and the
//! attachment of the rules the aten dialect itself implements (shape and dtype inference).
//!
//! A family lists ops by their handle ([`crate::op`]); every overload, in-place (`sigmoid_`)
//! and out= (`sigmoid.out`) variant of a listed op belongs to the family too, as they compute
//! the same function. Crates above the dialect attach their own implementations (kernels,
//! JIT lowerings, costs) to the same handles.

use crate::infer::ShapeInference;
use crate::op;
use ir::{Context, OpRef};
use std::collections::HashMap;

/// Unary ops computed in floating point: the result has the operand's shape and its dtype
/// when floating, the default float dtype otherwise (`exp`, `sigmoid`, `gelu`, …).
pub const FLOAT_UNARY: &[OpRef] = &[
    op::EXP,
    op::EXP2,
    op::EXPM1,
    op::LOG,
    op::LOG1P,
    op::LOG2,
    op::LOG10,
    op::SIN,
    op::COS,
    op::TAN,
    op::TANH,
    op::SIGMOID,
    op::SQRT,
    op::RSQRT,
    op::ERF,
    op::ERFC,
    op::ASIN,
    op::ACOS,
    op::ATAN,
    op::SINH,
    op::COSH,
    op::ASINH,
    op::ACOSH,
    op::ATANH,
    op::LGAMMA,
    op::RECIPROCAL,
    op::GELU,
    op::SILU,
    op::MISH,
    op::ELU,
    op::HARDSWISH,
    op::HARDSIGMOID,
];

/// Every op of the data file that is `family`'s member or one of its variants (another
/// overload, the in-place or the out= form).
pub fn members(family: &[OpRef]) -> Vec<OpRef> {
    member_heads(family).into_iter().map(|(m, _)| m).collect()
}

/// Every op of the data file that is a member of the family of one of `heads` ([`members`]),
/// with that head, in the data file's order; found in one pass however many heads are given
/// (a later head of the same base name wins).
pub fn member_heads(heads: &[OpRef]) -> Vec<(OpRef, OpRef)> {
    let schemas = crate::schemas();
    let names: Vec<String> = schemas.iter().map(|s| s.op_name()).collect();
    let index: HashMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (n.as_str(), i)).collect();
    let mut head_of_base: HashMap<&str, OpRef> = HashMap::new();
    for &h in heads {
        if let Some(&i) = index.get(h.name()) {
            head_of_base.insert(schemas[i].name.as_str(), h);
        }
    }
    schemas
        .iter()
        .zip(&names)
        .filter_map(|(s, n)| Some((op::by_name(n)?, *head_of_base.get(&*crate::mutation::base_name(&s.name))?)))
        .collect()
}

/// [`members`] of [`FLOAT_UNARY`], found once per process.
pub fn float_unary_members() -> &'static [OpRef] {
    static CELL: std::sync::OnceLock<Vec<OpRef>> = std::sync::OnceLock::new();
    CELL.get_or_init(|| members(FLOAT_UNARY))
}

/// Attaches the aten dialect's own interfaces to its ops.
pub fn attach(ctx: &mut Context) {
    for &o in float_unary_members() {
        ctx.attach(o, ShapeInference::FloatUnary);
    }
}

/// The recurrent cells ATen implements (`lstm`, `gru`, `rnn_tanh`, `rnn_relu`, as cells, layers
/// and packed layers): what their lowerings and kernels need to know of each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecurrentCell {
    Lstm,
    Gru,
    RnnTanh,
    RnnRelu,
}

impl RecurrentCell {
    /// The op-name stem (`lstm`, `gru`, `rnn_tanh`, `rnn_relu`).
    pub fn name(self) -> &'static str {
        match self {
            RecurrentCell::Lstm => "lstm",
            RecurrentCell::Gru => "gru",
            RecurrentCell::RnnTanh => "rnn_tanh",
            RecurrentCell::RnnRelu => "rnn_relu",
        }
    }

    /// The number of gates stacked in a weight's rows.
    pub fn gates(self) -> usize {
        match self {
            RecurrentCell::Lstm => 4,
            RecurrentCell::Gru => 3,
            RecurrentCell::RnnTanh | RecurrentCell::RnnRelu => 1,
        }
    }
}
