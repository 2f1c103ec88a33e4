//! The verifier: structural rules (SSA dominance, terminators, isolation) and each op's own rules.

use crate::context::{Context, Traits};
use crate::diag::Diagnostic;
use crate::module::{Module, OpId, ValueDef, ValueId, WalkOrder};
use crate::types::{Dim, Type};
use std::collections::HashMap;

/// Verifies the whole module; returns the first problem found.
pub fn verify(ctx: &Context, m: &Module) -> Result<(), Diagnostic> {
    verify_op(ctx, m, m.top())
}

/// Verifies `root` and everything nested in it.
pub fn verify_op(ctx: &Context, m: &Module, root: OpId) -> Result<(), Diagnostic> {
    let mut order: HashMap<OpId, usize> = HashMap::new();
    // Positions within blocks make "defined before" an O(1) question.
    m.walk(root, WalkOrder::PreOrder, &mut |op| {
        if let Some(b) = m.parent_block(op) {
            let _ = b;
        }
    });
    for_each_block(m, root, &mut |b| {
        for (i, op) in m.block_ops(b).into_iter().enumerate() {
            order.insert(op, i);
        }
    });
    let mut result = Ok(());
    m.walk(root, WalkOrder::PreOrder, &mut |op| {
        if result.is_ok() {
            result = verify_one(ctx, m, op, &order);
        }
    });
    result
}

fn for_each_block(m: &Module, root: OpId, f: &mut dyn FnMut(crate::module::BlockId)) {
    m.walk(root, WalkOrder::PreOrder, &mut |op| {
        for &r in m.regions(op) {
            for &b in m.region_blocks(r) {
                f(b);
            }
        }
    });
}

fn op_error(m: &Module, op: OpId, msg: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::error(m.loc(op).clone(), format!("'{}' op {msg}", m.op_name(op)))
}

fn verify_one(ctx: &Context, m: &Module, op: OpId, order: &HashMap<OpId, usize>) -> Result<(), Diagnostic> {
    let name = m.op_name(op);
    let def = ctx.op_def(name);
    let dialect = name.split('.').next().unwrap_or("");
    if def.is_none() {
        if ctx.is_registered_dialect(dialect) {
            return Err(op_error(m, op, format!("is not registered in dialect '{dialect}'")));
        }
        if !ctx.allow_unregistered() {
            return Err(op_error(m, op, "belongs to an unregistered dialect"));
        }
    }
    check_addressable(m, op)?;
    // Operands: defined, and dominating this use.
    for (i, &v) in m.operands(op).iter().enumerate() {
        check_dominance(ctx, m, op, i, v, order)?;
    }
    if let Some(def) = def {
        let n = m.operands(op).len();
        if !def.operands.admits(n) {
            return Err(op_error(m, op, format!("expected {} operand(s), but found {n}", def.operands)));
        }
        let n = m.results(op).len();
        if !def.results.admits(n) {
            return Err(op_error(m, op, format!("expected {} result(s), but found {n}", def.results)));
        }
        let n = m.regions(op).len();
        if !def.regions.admits(n) {
            return Err(op_error(m, op, format!("expected {} region(s), but found {n}", def.regions)));
        }
        for spec in &def.attrs {
            match m.attr(op, spec.name) {
                None if spec.required => {
                    return Err(op_error(m, op, format!("requires attribute '{}'", spec.name)));
                }
                Some(a) if !spec.kind.admits(a) => {
                    return Err(op_error(
                        m,
                        op,
                        format!("attribute '{}' must be {:?}, but is {}", spec.name, spec.kind, a.kind_name()),
                    ));
                }
                _ => {}
            }
        }
        if def.has_trait(Traits::TERMINATOR) {
            if let Some(b) = m.parent_block(op) {
                if m.last_op(b) != Some(op) {
                    return Err(op_error(m, op, "must be the last operation in the parent block"));
                }
            }
        }
        if !def.has_trait(Traits::NO_TERMINATOR) {
            for &r in m.regions(op) {
                for &b in m.region_blocks(r) {
                    let last = m.last_op(b);
                    let ok = last.is_some_and(|l| {
                        let ln = m.op_name(l);
                        match ctx.op_def(ln) {
                            Some(d) => d.has_trait(Traits::TERMINATOR),
                            None => true,
                        }
                    });
                    if !ok {
                        let at = last.map(|l| m.loc(l).clone()).unwrap_or_else(|| m.loc(op).clone());
                        return Err(Diagnostic::error(
                            at,
                            format!("block in a region of '{name}' must end with a terminator operation"),
                        )
                        .with_note(m.loc(op).clone(), "in this operation"));
                    }
                }
            }
        }
        if def.has_trait(Traits::SAME_OPERANDS_AND_RESULT_SHAPE) {
            let shapes: Vec<_> = m
                .operands(op)
                .iter()
                .chain(m.results(op))
                .filter_map(|&v| m.value_type(v).as_tensor().and_then(|t| t.shape.clone()))
                .collect();
            if shapes.windows(2).any(|w| w[0] != w[1]) {
                return Err(op_error(m, op, "requires the same shape for all operands and results"));
            }
        }
        if let Some(f) = &def.verify {
            f(ctx, m, op).map_err(|msg| op_error(m, op, msg))?;
        }
    }
    Ok(())
}

/// Refuses values whose static tensor type cannot exist in memory: a negative size, or more
/// bytes than a process can address. Checking here makes every importer and the parser refuse
/// such a program with the op's location, before anything computes a size from it.
fn check_addressable(m: &Module, op: OpId) -> Result<(), Diagnostic> {
    for (i, &v) in m.results(op).iter().enumerate() {
        if let Some(why) = unaddressable(m.value_type(v)) {
            return Err(op_error(m, op, format!("result #{i} of type {}: {why}", m.value_type(v))));
        }
    }
    for (r, &region) in m.regions(op).iter().enumerate() {
        for &b in m.region_blocks(region) {
            for (i, &v) in m.block_args(b).iter().enumerate() {
                if let Some(why) = unaddressable(m.value_type(v)) {
                    return Err(op_error(
                        m,
                        op,
                        format!("region #{r} argument #{i} of type {}: {why}", m.value_type(v)),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Why a value of type `t` cannot be held in memory, if it cannot.
fn unaddressable(t: &Type) -> Option<String> {
    let tt = t.as_tensor()?;
    let shape = tt.shape.as_ref()?;
    let elem = tt.dtype.map_or(1, |d| d.size_bytes()) as u128;
    let mut bytes = elem;
    for d in shape {
        if let Dim::Static(n) = d {
            if *n < 0 {
                return Some(format!("dimension {n} is negative"));
            }
            bytes = bytes.saturating_mul(*n as u128);
        }
    }
    (bytes > isize::MAX as u128).then(|| {
        format!("its static dimensions need more than {} bytes, more than a process can address", isize::MAX)
    })
}

/// Whether the definition of `v` dominates operand `index` of `user`.
fn check_dominance(
    ctx: &Context,
    m: &Module,
    user: OpId,
    index: usize,
    v: ValueId,
    order: &HashMap<OpId, usize>,
) -> Result<(), Diagnostic> {
    if !m.contains_value(v) {
        return Err(op_error(m, user, format!("operand #{index} refers to a deleted value")));
    }
    let def_block = match m.value_def(v) {
        ValueDef::Placeholder => return Err(op_error(m, user, format!("operand #{index} is never defined"))),
        ValueDef::Result { op, .. } => match m.parent_block(op) {
            Some(b) => b,
            None => return Err(op_error(m, user, format!("operand #{index} is defined by an op outside any block"))),
        },
        ValueDef::BlockArg { block, .. } => block,
    };
    let def_op = m.defining_op(v);
    let mut cur = user;
    loop {
        let Some(b) = m.parent_block(cur) else { break };
        if b == def_block {
            let ok = match def_op {
                None => true,
                Some(d) => d != cur && order.get(&d).copied().unwrap_or(usize::MAX) < order.get(&cur).copied().unwrap_or(0),
            };
            if ok {
                return Ok(());
            }
            let mut d = op_error(m, user, format!("operand #{index} does not dominate this use"));
            if let Some(def) = def_op {
                d = d.with_note(m.loc(def).clone(), "operand defined here");
            }
            return Err(d);
        }
        let Some(parent) = m.block_parent_op(b) else { break };
        if ctx.has_trait(m.op_name(parent), Traits::ISOLATED_FROM_ABOVE) {
            let mut d = op_error(m, user, format!("operand #{index} uses a value defined outside the region of an isolated-from-above op"));
            d = d.with_note(m.loc(parent).clone(), format!("required by region isolation of '{}'", m.op_name(parent)));
            return Err(d);
        }
        cur = parent;
    }
    let mut d = op_error(m, user, format!("operand #{index} does not dominate this use"));
    if let Some(def) = def_op {
        d = d.with_note(m.loc(def).clone(), "operand defined here");
    }
    Err(d)
}
