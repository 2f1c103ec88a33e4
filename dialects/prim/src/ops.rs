//! Declarations of the prim ops: names, signatures, traits and syntax.

use crate::verify;
use ir::{Arity, AttrKind, OpDef, Syntax, Traits};

pub const DIALECT: &str = "prim";
pub const CONSTANT: &str = "prim.Constant";
pub const IF: &str = "prim.If";
pub const LOOP: &str = "prim.Loop";
pub const YIELD: &str = "prim.Yield";
pub const RETURN: &str = "prim.Return";
pub const LIST_CONSTRUCT: &str = "prim.ListConstruct";
pub const LIST_UNPACK: &str = "prim.ListUnpack";
pub const TUPLE_CONSTRUCT: &str = "prim.TupleConstruct";
pub const TUPLE_UNPACK: &str = "prim.TupleUnpack";
pub const TUPLE_INDEX: &str = "prim.TupleIndex";
pub const FUSION_GROUP: &str = "prim.FusionGroup";
pub const UNINITIALIZED: &str = "prim.Uninitialized";
pub const RAISE_EXCEPTION: &str = "prim.RaiseException";
pub const ADD: &str = "prim.add";
pub const SUB: &str = "prim.sub";
pub const MUL: &str = "prim.mul";
pub const FLOORDIV: &str = "prim.floordiv";
pub const MOD: &str = "prim.mod";
pub const MAX: &str = "prim.max";
pub const EQ: &str = "prim.eq";
pub const NE: &str = "prim.ne";
pub const LT: &str = "prim.lt";
pub const LE: &str = "prim.le";
pub const GT: &str = "prim.gt";
pub const GE: &str = "prim.ge";

/// SymInt arithmetic on `i64` values: `(name, summary)`.
pub const SYMINT_BINARY: [(&str, &str); 6] = [
    (ADD, "Adds two integers."),
    (SUB, "Subtracts two integers."),
    (MUL, "Multiplies two integers."),
    (FLOORDIV, "Divides two integers, rounding toward negative infinity (Python's `//`)."),
    (MOD, "Remainder with the sign of the divisor (Python's `%`)."),
    (MAX, "The larger of two integers."),
];

/// SymInt comparisons producing `i1`.
pub const SYMINT_COMPARE: [(&str, &str); 6] = [
    (EQ, "Whether two integers are equal."),
    (NE, "Whether two integers differ."),
    (LT, "Whether the first integer is less than the second."),
    (LE, "Whether the first integer is at most the second."),
    (GT, "Whether the first integer is greater than the second."),
    (GE, "Whether the first integer is at least the second."),
];

/// Every prim op definition.
pub fn definitions() -> Vec<OpDef> {
    let mut defs = vec![
        OpDef::new(CONSTANT)
            .summary("A constant: `%c = prim.Constant 3 : i64`, `prim.Constant dense<...> : tensor<...>`.")
            .traits(Traits::PURE | Traits::CONSTANT_LIKE)
            .operands(Arity::Exact(0))
            .results(Arity::Exact(1))
            .attr("value", AttrKind::Any, true)
            .syntax(Syntax::Constant)
            .verifier(verify::constant),
        OpDef::new(IF)
            .summary("Runs the then-region or the else-region; each yields the results.")
            .operands(Arity::Exact(1))
            .regions(Arity::Exact(2))
            .syntax(Syntax::IfElse)
            .verifier(verify::if_op),
        OpDef::new(LOOP)
            .summary(
                "TorchScript's loop: `prim.Loop %max_trip_count, %initial_condition, %carried...`; \
                 the body block takes `(%i: i64, carried...)` and yields `(condition: i1, carried...)`.",
            )
            .operands(Arity::AtLeast(2))
            .regions(Arity::Exact(1))
            .verifier(verify::loop_op),
        OpDef::new(YIELD)
            .summary("Ends a block of `prim.If` or `prim.Loop`, passing values to the parent.")
            .traits(Traits::TERMINATOR | Traits::PURE)
            .results(Arity::Exact(0))
            .syntax(Syntax::Return)
            .verifier(verify::yield_op),
        OpDef::new(RETURN)
            .summary("Ends the body of a `prim.FusionGroup`, giving its results.")
            .traits(Traits::TERMINATOR | Traits::PURE)
            .results(Arity::Exact(0))
            .syntax(Syntax::Return)
            .verifier(verify::return_op),
        OpDef::new(LIST_CONSTRUCT)
            .summary("Builds a list from its operands.")
            .traits(Traits::PURE)
            .results(Arity::Exact(1))
            .verifier(verify::list_construct),
        OpDef::new(LIST_UNPACK)
            .summary("Splits a list into one result per element; the length must match at run time.")
            .traits(Traits::PURE)
            .operands(Arity::Exact(1))
            .verifier(verify::list_unpack),
        OpDef::new(TUPLE_CONSTRUCT)
            .summary("Builds a tuple from its operands.")
            .traits(Traits::PURE)
            .results(Arity::Exact(1))
            .verifier(verify::tuple_construct),
        OpDef::new(TUPLE_UNPACK)
            .summary("Splits a tuple into its elements.")
            .traits(Traits::PURE)
            .operands(Arity::Exact(1))
            .verifier(verify::tuple_unpack),
        OpDef::new(TUPLE_INDEX)
            .summary("Element `index` of a tuple.")
            .traits(Traits::PURE)
            .operands(Arity::Exact(1))
            .results(Arity::Exact(1))
            .attr("index", AttrKind::Int, true)
            .verifier(verify::tuple_index),
        OpDef::new(FUSION_GROUP)
            .summary(
                "A group of ops compiled and run as one kernel; its isolated region takes the \
                 operands as block arguments and ends with `prim.Return`.",
            )
            .traits(Traits::ISOLATED_FROM_ABOVE)
            .regions(Arity::Exact(1))
            .verifier(verify::fusion_group),
        OpDef::new(UNINITIALIZED)
            .summary("A placeholder value for a path that raises before using it.")
            .traits(Traits::PURE)
            .operands(Arity::Exact(0))
            .results(Arity::Exact(1)),
        OpDef::new(RAISE_EXCEPTION)
            .summary("Raises an exception with a message; execution does not continue.")
            .operands(Arity::Range(1, 2))
            .results(Arity::Exact(0))
            .verifier(verify::raise_exception),
    ];
    for (name, summary) in SYMINT_BINARY {
        defs.push(
            OpDef::new(name)
                .summary(summary)
                .traits(Traits::PURE)
                .operands(Arity::Exact(2))
                .results(Arity::Exact(1))
                .verifier(verify::symint_binary),
        );
    }
    for (name, summary) in SYMINT_COMPARE {
        defs.push(
            OpDef::new(name)
                .summary(summary)
                .traits(Traits::PURE)
                .operands(Arity::Exact(2))
                .results(Arity::Exact(1))
                .verifier(verify::symint_compare),
        );
    }
    for name in [ADD, MUL, MAX, EQ, NE] {
        if let Some(d) = defs.iter_mut().find(|d| d.name == name) {
            d.traits = d.traits | Traits::COMMUTATIVE;
        }
    }
    defs
}
