//! `constant-pooling`: one `prim.Constant` per distinct value and type, hoisted to the function entry.
//!
//! Constants anywhere in the function (nested regions included, isolated regions excluded) are
//! deduplicated by their `value` attribute and result type; the first of each kind moves to the
//! start of the entry block, in order of first appearance, and the others are replaced by it.
//! Constants of a mutable type (tensors) that something writes are left alone: each is fresh
//! storage, so sharing or hoisting it out of a loop would change the program.

use super::alias::{AliasDb, is_effect_free, is_mutable_type};
use ir::{Attribute, Context, Diagnostic, InsertPoint, Module, OpId, Traits, Type};
use pass::{AnalysisManager, LogLevel};
use std::collections::HashMap;

/// Pools the constants of `func`; returns the number of ops moved or erased.
pub fn run_pooling(ctx: &Context, m: &mut Module, func: OpId, am: &mut AnalysisManager) -> Result<usize, Diagnostic> {
    let Some(entry) = m.regions(func).first().and_then(|&r| m.entry_block(r)) else { return Ok(0) };
    let mut constants = Vec::new();
    collect(ctx, m, func, &mut constants);
    // Without writers in the function no constant is written: no analysis needed.
    let mutable = constants.iter().any(|&c| m.results(c).iter().any(|&r| is_mutable_type(m.value_type(r))));
    let needs_db = mutable && !is_effect_free(ctx, m, func);
    let db = needs_db.then(|| AliasDb::new(ctx, m, func));
    let mut pool: HashMap<(Attribute, Type), OpId> = HashMap::new();
    let mut last_hoisted: Option<OpId> = None;
    let mut changes = 0;
    for c in constants {
        let (Some(value), Some(&r)) = (m.attr(c, "value").cloned(), m.results(c).first()) else { continue };
        if m.results(c).len() != 1 {
            continue;
        }
        if is_mutable_type(m.value_type(r)) && db.as_ref().is_some_and(|db| db.has_writers(r)) {
            continue;
        }
        let key = (value, m.value_type(r).clone());
        if let Some(&keep) = pool.get(&key) {
            if !am.may_rewrite() {
                break;
            }
            pass::log!(am, LogLevel::Update, "pooling a duplicate constant");
            let new = m.results(keep).to_vec();
            m.replace_op_results(c, &new);
            m.erase_op(c).map_err(|e| Diagnostic::error(m.loc(c).clone(), e.to_string()))?;
            changes += 1;
            continue;
        }
        let at = match last_hoisted {
            Some(p) => InsertPoint::After(p),
            None => InsertPoint::Start(entry),
        };
        let already_there = match at {
            InsertPoint::After(p) => m.next_op(p) == Some(c),
            _ => m.first_op(entry) == Some(c),
        };
        if !already_there {
            if !am.may_rewrite() {
                break;
            }
            m.detach_op(c);
            m.insert_op(c, at).map_err(|e| Diagnostic::error(m.loc(c).clone(), e.to_string()))?;
            changes += 1;
        }
        last_hoisted = Some(c);
        pool.insert(key, c);
    }
    Ok(changes)
}

fn collect(ctx: &Context, m: &Module, op: OpId, out: &mut Vec<OpId>) {
    for &r in m.regions(op) {
        for &b in m.region_blocks(r) {
            for o in m.block_ops(b) {
                if m.op_name(o) == dialect_prim::CONSTANT {
                    out.push(o);
                }
                if !ctx.has_trait(m.op_name(o), Traits::ISOLATED_FROM_ABOVE) {
                    collect(ctx, m, o, out);
                }
            }
        }
    }
}
