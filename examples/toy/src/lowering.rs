//! `toy-to-aten`: the dialect conversion of toy's computing ops into ATen and prim ops, after
//! which the project's pipelines, fusion, JIT and interpreter run toy programs. `toy.print`
//! stays: it runs through its own kernel.

use ir::{Attribute, Context, Diagnostic, Module, OpId, OperationState};
use pass::{
    AnalysisManager, Anchor, ConversionPattern, ConversionPatternSet, ConversionRewriter, ConversionTarget, Pass, PassInfo,
    PassResult, TypeConverter,
};

/// The pass's name.
pub const PASS: &str = "toy-to-aten";

// [doc:lowering]
/// Rewrites one toy op into one op of another dialect, with the same operands and result types.
struct OneToOne {
    from: ir::OpRef,
    to: ir::OpRef,
    /// The attributes of the new op, from the old one.
    attrs: fn(&Module, OpId) -> Option<Vec<(&'static str, Attribute)>>,
}

impl ConversionPattern for OneToOne {
    fn root(&self) -> Option<&str> {
        Some(self.from.name())
    }

    fn match_and_rewrite(&self, _: &Context, rw: &mut ConversionRewriter<'_, '_>, op: OpId, operands: &[ValueId]) -> Result<bool, Diagnostic> {
        let Some(attrs) = (self.attrs)(rw.module(), op) else { return Ok(false) };
        let types = rw.module().results(op).iter().map(|&r| rw.module().value_type(r).clone()).collect::<Vec<_>>();
        let mut state = OperationState::new(self.to).operands(operands.iter().copied()).results(types);
        for (name, value) in attrs {
            state = state.attr(name, value);
        }
        rw.replace_op_with(op, state)?;
        Ok(true)
    }
}

/// `toy.struct` becomes a `prim.TupleConstruct` of the same tensors, typed `tuple<...>`.
struct StructToTuple;

impl ConversionPattern for StructToTuple {
    fn root(&self) -> Option<&str> {
        Some(crate::ops::STRUCT.name())
    }

    fn match_and_rewrite(&self, _: &Context, rw: &mut ConversionRewriter<'_, '_>, op: OpId, operands: &[ValueId]) -> Result<bool, Diagnostic> {
        let m = rw.module();
        let Some(fields) = crate::types::struct_fields(m.value_type(m.results(op)[0])) else { return Ok(false) };
        let state = OperationState::new(dialect_prim::TUPLE_CONSTRUCT).operands(operands.iter().copied()).results([Type::tuple(fields)]);
        rw.replace_op_with(op, state)?;
        Ok(true)
    }
}

/// The conversion patterns: each toy op that computes, and what it becomes.
pub fn patterns() -> ConversionPatternSet {
    use crate::ops::*;
    use dialect_aten::op;
    let none = |_: &Module, _: OpId| Some(Vec::new());
    let mut set = ConversionPatternSet::new();
    set.add(OneToOne { from: CONSTANT, to: ir::OpRef::new(dialect_prim::CONSTANT), attrs: |m, o| Some(vec![("value", m.attr(o, "value")?.clone())]) });
    set.add(OneToOne { from: ADD, to: op::ADD_TENSOR, attrs: none });
    set.add(OneToOne { from: MUL, to: op::MUL_TENSOR, attrs: none });
    set.add(OneToOne { from: SCALE, to: op::MUL_SCALAR, attrs: |m, o| Some(vec![("other", m.attr(o, "factor")?.clone())]) });
    set.add(OneToOne { from: TRANSPOSE, to: op::T, attrs: none });
    set.add(OneToOne {
        from: RESHAPE,
        to: op::RESHAPE,
        attrs: |m, o| {
            let dims = m.value_type(m.results(o)[0]).as_tensor()?.static_dims()?;
            Some(vec![("shape", Attribute::ints(&dims))])
        },
    });
    set.add(StructToTuple);
    set.add(OneToOne {
        from: FIELD,
        to: ir::OpRef::new(dialect_prim::TUPLE_INDEX),
        attrs: |m, o| Some(vec![("index", Attribute::Int(m.attr(o, "index")?.as_int()?))]),
    });
    set.add(OneToOne {
        from: FILL,
        to: op::FULL,
        attrs: |m, o| {
            let t = m.value_type(m.results(o)[0]).as_tensor()?;
            Some(vec![
                ("size", Attribute::ints(&t.static_dims()?)),
                ("fill_value", m.attr(o, "value")?.clone()),
                ("dtype", dialect_prim::kinds::dtype(t.dtype?)),
            ])
        },
    });
    set
}

/// What the conversion must reach: no toy op but `toy.print`.
pub fn target() -> ConversionTarget {
    let mut t = ConversionTarget::new();
    t.add_legal_dialect("aten").add_legal_dialect("prim").add_legal_dialect("func");
    t.add_illegal_dialect(crate::DIALECT).add_legal_op(crate::ops::PRINT.name());
    t
}
// [/doc:lowering]

use ir::{Type, ValueId};

// [doc:pass]
/// The lowering as a pass; it counts the ops it converted (`num-lowered`).
struct ToyToAten {
    patterns: ConversionPatternSet,
}

impl Pass for ToyToAten {
    fn name(&self) -> &str {
        PASS
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn anchor(&self) -> Anchor {
        Anchor::func()
    }

    fn run(&mut self, ctx: &Context, m: &mut Module, op: OpId, am: &mut AnalysisManager) -> Result<PassResult, Diagnostic> {
        let r = pass::apply_partial_conversion(ctx, m, op, &target(), &self.patterns, &TypeConverter::new())?;
        am.add_statistic("num-lowered", "Toy ops lowered to ATen and prim ops", r.converted as u64);
        Ok(PassResult::from_changed(r.converted > 0))
    }
}

const DESCRIPTION: &str = "Lower toy ops to ATen and prim ops (toy.print stays, run by its kernel)";

/// The registration of `toy-to-aten`.
pub fn pass_info() -> PassInfo {
    PassInfo::new(PASS, DESCRIPTION, |_| Ok(Box::new(ToyToAten { patterns: patterns() }) as Box<dyn Pass>)).anchor(Anchor::func())
}
// [/doc:pass]
