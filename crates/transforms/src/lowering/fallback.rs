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
use dialect_aten::{ArgSource, Counterpart, bind_args, functional_counterpart, is_inplace_view};
use ir::{Context, Diagnostic, Module, OpId, ValueId, WalkOrder};

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
    let mut stats = FallbackStats::default();
    // In-place view ops first, while the types of later reads are still the imported ones:
    // the reads they rewire see a new shape, which inference then propagates.
    stats.functionalized += rewire_inplace_views(ctx, m, root, has_kernel)?;
    if has_unknown_tensor(m, root) {
        let _ = super::shape_prop::propagate_shapes(ctx, m, root, false);
    }
    let ranges = Ranges::of_module(m);
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

/// The functional counterpart of the mutating `op`, the arguments to call it with, and the
/// values `op` writes (in the counterpart's result order); `None` when there is no counterpart.
fn counterpart_call(ctx: &Context, m: &Module, op: OpId) -> Result<Option<(Counterpart, Vec<Arg>, Vec<ValueId>)>, Diagnostic> {
    let name = m.op_name(op);
    let Some(schema) = ctx.op_def(name).and_then(|d| d.schema.clone()) else { return Ok(None) };
    let Ok(counterpart) = functional_counterpart(ctx, &schema) else { return Ok(None) };
    let binding = bind_args(&schema, m, op).map_err(|e| Diagnostic::error(m.loc(op).clone(), format!("'{name}' {e}")))?;
    let operands = m.operands(op);
    let mut args = Vec::new();
    let mut targets = Vec::new();
    for (i, src) in binding.iter().enumerate() {
        let arg = match src {
            ArgSource::Operand(i) => match operands.get(*i) {
                Some(&v) => Arg::V(v),
                None => return Ok(None),
            },
            ArgSource::Const(a) => Arg::A(a.clone()),
        };
        if counterpart.written.contains(&i) {
            let Arg::V(v) = arg else { return Ok(None) };
            targets.push(v);
            if counterpart.is_out {
                continue;
            }
        }
        args.push(arg);
    }
    if !counterpart.options.is_empty() {
        // A factory's out variant: the counterpart's tensor options take their defaults, and its
        // dtype is the written tensor's, when that is known.
        let Some(cs) = ctx.op_def(&counterpart.op).and_then(|d| d.schema.clone()) else { return Ok(None) };
        let dtype_arg = counterpart.dtype_arg(&cs);
        let dtype = targets.first().and_then(|&t| m.value_type(t).as_tensor().and_then(|t| t.dtype));
        let mut given = args.into_iter();
        args = (0..cs.args.len())
            .map(|i| match (counterpart.options.contains(&i), dtype) {
                (true, Some(d)) if Some(i) == dtype_arg => Arg::A(dialect_prim::kinds::dtype(d)),
                (true, _) => Arg::A(dialect_prim::kinds::none()),
                (false, _) => given.next().unwrap_or(Arg::Default),
            })
            .collect();
    }
    Ok(Some((counterpart, args, targets)))
}

/// Copies `value` into `target`, or, for a written `Tensor[]` built by `prim.ListConstruct`,
/// each element of the list `value` into the list's element at its position; the copies'
/// results.
fn copy_into(b: &mut OpBuilder, target: ValueId, value: ValueId) -> Result<Vec<ValueId>, String> {
    if b.m.value_type(target).as_tensor().is_some() {
        return Ok(vec![b.call(dialect_aten::op::COPY_.name(), &[Arg::V(target), Arg::V(value)])?]);
    }
    let elems = match b.m.value_def(target) {
        ir::ValueDef::Result { op, .. } if b.m.op_name(op) == dialect_prim::LIST_CONSTRUCT => b.m.operands(op).to_vec(),
        _ => return Err("a written list must be built by 'prim.ListConstruct'".into()),
    };
    let parts = b.unpack(value, elems.len())?;
    let mut copies = Vec::with_capacity(elems.len());
    for (t, v) in elems.into_iter().zip(parts) {
        copies.push(b.call(dialect_aten::op::COPY_.name(), &[Arg::V(t), Arg::V(v)])?);
    }
    Ok(copies)
}

/// Rewrites every `inplace_view` op nested in `root` that `has_kernel` rejects as
/// [`rewire_inplace_view`] does; the number rewritten. `functionalize` runs this first too.
pub fn rewire_inplace_views(ctx: &Context, m: &mut Module, root: OpId, has_kernel: &dyn Fn(&str) -> bool) -> Result<usize, Diagnostic> {
    let mut views = Vec::new();
    m.walk(root, WalkOrder::PreOrder, &mut |o| {
        let name = m.op_name(o);
        if !has_kernel(name) && ctx.op_def(name).and_then(|d| d.schema.as_ref()).is_some_and(|s| is_inplace_view(s)) {
            views.push(o);
        }
    });
    if views.is_empty() {
        return Ok(0);
    }
    let ranges = Ranges::of_module(m);
    let mut n = 0;
    for op in views {
        n += usize::from(rewire_inplace_view(ctx, m, &ranges, op)?.is_some());
    }
    Ok(n)
}

/// `y = foo_(x, …)` for one of PyTorch's `inplace_view` ops (`unsqueeze_`, `resize_`, …) →
/// `t = foo(x, …)`, with `y` and every later read of `x` reading `t`: such an op changes the
/// shape `x` is read with, which writing `t` back into `x` cannot. "Later" is after the op in
/// its block, ops nested in later ops included; reads in other blocks keep reading `x`.
fn rewire_inplace_view(ctx: &Context, m: &mut Module, ranges: &Ranges, op: OpId) -> Result<Option<Vec<OpId>>, Diagnostic> {
    let name = m.op_name(op).to_string();
    let Some((counterpart, args, targets)) = counterpart_call(ctx, m, op)? else { return Ok(None) };
    let [target] = targets[..] else { return Ok(None) };
    let block = m.parent_block(op);
    // The ancestor of `user` in the op's block, if it is nested there.
    let in_block = |m: &Module, user: OpId| {
        let mut cur = Some(user);
        while let Some(o) = cur {
            if m.parent_block(o) == block {
                return Some(o);
            }
            cur = m.parent_op(o);
        }
        None
    };
    // Nested below the block defining `x` (a branch, a loop body), the new shape would have to
    // leave the region with `x`; that is declined, and the write-back reports what it cannot do.
    if m.value_block(target) != block && m.uses(target).iter().any(|u| in_block(m, u.op).is_none()) {
        return Ok(None);
    }
    let mut b = OpBuilder::before(ctx, m, ranges, op);
    let built = b.call_n(&counterpart.op, &args);
    let created = std::mem::take(&mut b.created);
    let value = match built.as_deref() {
        Ok(&[v]) => v,
        Ok(_) => return Err(Diagnostic::error(m.loc(op).clone(), format!("'{name}' op: its functional form '{}' cannot be built: it has more than one result", counterpart.op))),
        Err(e) => {
            return Err(Diagnostic::error(m.loc(op).clone(), format!("'{name}' op: its functional form '{}' cannot be built: {e}", counterpart.op)));
        }
    };
    m.replace_uses_where(target, value, |m, u| in_block(m, u.op).is_some_and(|o| m.is_before_in_block(op, o)));
    for r in m.results(op).to_vec() {
        m.replace_all_uses(r, value);
    }
    let loc = m.loc(op).clone();
    m.erase_op(op).map_err(|e| Diagnostic::error(loc, e.to_string()))?;
    Ok(Some(created))
}

/// `y = foo_(x, …)` → `t = foo(x, …); y = aten.copy_(x, t)` (and likewise for each written
/// argument of an out variant); `None` when the op has no functional counterpart.
fn functionalize_one(ctx: &Context, m: &mut Module, ranges: &Ranges, op: OpId) -> Result<Option<Vec<OpId>>, Diagnostic> {
    let name = m.op_name(op).to_string();
    let Some((counterpart, args, targets)) = counterpart_call(ctx, m, op)? else { return Ok(None) };
    let mut b = OpBuilder::before(ctx, m, ranges, op);
    let built = (|| -> Result<Vec<ir::ValueId>, String> {
        let values = b.call_n(&counterpart.op, &args)?;
        let mut copies = Vec::with_capacity(targets.len());
        for (&target, &value) in targets.iter().zip(&values) {
            let written = copy_into(&mut b, target, value)?;
            // A written tensor is the op's result; a written list is not returned.
            copies.push(if written.len() == 1 && b.m.value_type(target).as_tensor().is_some() { written[0] } else { target });
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
