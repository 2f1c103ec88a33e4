//! Composite fallback: ops an executor has no kernel for become ops it has, as PyTorch's
//! dispatcher falls back to an op's composite implementation.
//!
//! [`composite_fallback`] rewrites, to a fixed point, every op whose name the executor's
//! `has_kernel` rejects:
//! - a mutating op (in-place `relu_`, out variant `add.out`) becomes its functional counterpart
//!   (read from the schema's alias annotations, [`dialect_aten::functional_counterpart`])
//!   followed by `aten.copy_` into each written argument, so the mutation stays observable
//!   through every alias, exactly as the op itself would make it;
//! - any other op with an entry in the decomposition table is decomposed.
//!
//! Ops created by either step are visited too, so a chain (`hardswish_` → `hardswish` →
//! `hardsigmoid`, `mul`) ends at ops the executor runs. Ops left without a kernel are the
//! executor's to report. `dialect-run -O0` and `runtime::compile` run this before execution;
//! everything that has a kernel runs as imported.

use super::decompose::{DecompositionTable, decompose_one, replace_results, rewrite_to_fixed_point};
use super::rewrite::{Arg, OpBuilder};
use dialect_aten::infer::Ranges;
use dialect_aten::{ArgSource, bind_args, functional_counterpart};
use ir::{Context, Diagnostic, Module, OpId, WalkOrder};

/// What [`composite_fallback`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FallbackStats {
    /// Mutating ops replaced by their functional counterpart and a copy.
    pub functionalized: usize,
    /// Ops decomposed.
    pub decomposed: usize,
}

/// Whether some op nested in `root` has no kernel and could be rewritten by the fallback.
pub fn needs_fallback(ctx: &Context, m: &Module, root: OpId, table: &DecompositionTable, has_kernel: &dyn Fn(&str) -> bool) -> bool {
    let mut needed = false;
    m.walk(root, WalkOrder::PreOrder, &mut |o| {
        let name = m.op_name(o);
        if !needed && !has_kernel(name) && (table.contains(name) || is_mutating(ctx, name)) {
            needed = true;
        }
    });
    needed
}

/// Whether some op nested in `root` yields a tensor of unknown rank.
fn has_unknown_tensor(m: &Module, root: OpId) -> bool {
    let mut found = false;
    m.walk(root, WalkOrder::PreOrder, &mut |o| {
        found = found || m.results(o).iter().any(|&r| m.value_type(r).as_tensor().is_some_and(|t| t.shape.is_none()));
    });
    found
}

fn is_mutating(ctx: &Context, name: &str) -> bool {
    ctx.op_def(name).and_then(|d| d.schema.as_ref()).is_some_and(|s| s.is_mutable())
}

/// Rewrites the ops nested in `root` that `has_kernel` rejects into ops it accepts where a
/// functional counterpart or a decomposition exists.
pub fn composite_fallback(
    ctx: &Context,
    m: &mut Module,
    root: OpId,
    table: &DecompositionTable,
    has_kernel: &dyn Fn(&str) -> bool,
) -> Result<FallbackStats, Diagnostic> {
    // Decompositions read shapes; a program imported without them (TorchScript declares only
    // `Tensor`) has them inferred first. Inference that fails leaves the types as they were:
    // the decomposition that needs them then reports which op it could not rewrite.
    if has_unknown_tensor(m, root) {
        let _ = super::shape_prop::propagate_shapes(ctx, m, root, false);
    }
    let ranges = Ranges::of_module(m);
    let mut stats = FallbackStats::default();
    rewrite_to_fixed_point(m, root, |m, op| {
        let name = m.op_name(op);
        if has_kernel(name) {
            Ok(None)
        } else if is_mutating(ctx, name) {
            let c = functionalize_one(ctx, m, &ranges, op)?;
            stats.functionalized += usize::from(c.is_some());
            Ok(c)
        } else if let Some(f) = table.get(name).cloned() {
            let c = decompose_one(ctx, m, &ranges, op, &f)?;
            stats.decomposed += usize::from(c.is_some());
            Ok(c)
        } else {
            Ok(None)
        }
    })?;
    Ok(stats)
}

/// `y = foo_(x, …)` → `t = foo(x, …); y = aten.copy_(x, t)` (and likewise for each written
/// argument of an out variant); `None` when the op has no functional counterpart.
fn functionalize_one(ctx: &Context, m: &mut Module, ranges: &Ranges, op: OpId) -> Result<Option<Vec<OpId>>, Diagnostic> {
    let name = m.op_name(op).to_string();
    let Some(schema) = ctx.op_def(&name).and_then(|d| d.schema.clone()) else { return Ok(None) };
    let Ok(counterpart) = functional_counterpart(ctx, &schema) else { return Ok(None) };
    let binding = bind_args(&schema, m, op).map_err(|e| Diagnostic::error(m.loc(op).clone(), format!("'{name}' {e}")))?;
    let operands = m.operands(op).to_vec();
    let value_of = |src: &ArgSource| match src {
        ArgSource::Operand(i) => operands.get(*i).map(|&v| Arg::V(v)),
        ArgSource::Const(a) => Some(Arg::A(a.clone())),
    };
    let mut args = Vec::new();
    let mut targets = Vec::new();
    for (i, src) in binding.iter().enumerate() {
        let Some(arg) = value_of(src) else { return Ok(None) };
        if counterpart.written.contains(&i) {
            let Arg::V(v) = arg else { return Ok(None) };
            targets.push(v);
            if counterpart.is_out {
                continue;
            }
        }
        args.push(arg);
    }
    let mut b = OpBuilder::before(ctx, m, ranges, op);
    let built = (|| -> Result<Vec<ir::ValueId>, String> {
        let values = b.call_n(&counterpart.op, &args)?;
        let mut copies = Vec::with_capacity(targets.len());
        for (&target, &value) in targets.iter().zip(&values) {
            copies.push(b.call_n(dialect_aten::op::COPY_.name(), &[Arg::V(target), Arg::V(value)])?[0]);
        }
        Ok(copies)
    })();
    let created = std::mem::take(&mut b.created);
    let copies = match built {
        Ok(c) => c,
        Err(e) => {
            return Err(Diagnostic::error(m.loc(op).clone(), format!("'{name}' op: its functional form '{}' cannot be built: {e}", counterpart.op)));
        }
    };
    // An op returns its written arguments; a mutating op without results (`_foreach_add_`)
    // still writes them.
    let results = m.results(op).len();
    replace_results(m, op, &copies[..results.min(copies.len())], &created)?;
    Ok(Some(created))
}
