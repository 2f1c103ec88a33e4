//! `cse`: common subexpression elimination that respects memory effects.
//!
//! Walks the function in dominance order with a scoped table of the ops seen so far: an op in a
//! nested region may reuse an equivalent op of an enclosing block that comes before it (not
//! across an isolated-from-above region). Two ops are equivalent when they have the same name,
//! operands (in sorted order for commutative ops without an `alpha`), attributes (namespaced
//! metadata such as `prim.nn_module_stack` ignored) and result types, and no regions.
//!
//! Only pure, non-writing ops are candidates. A later op is not merged into an earlier one when
//! any result of either has writers (the copies would stop being independent), or when an op
//! that may write what the op reads runs between them: ops after the earlier one and before the
//! later one in program order, and every op of a loop that holds the later op but not the
//! earlier one (the loop's next iteration runs them in between).

use super::alias::AliasDb;
use ir::{Attribute, Context, Diagnostic, Module, OpId, Traits, Type, ValueId};
use pass::{AnalysisManager, LogLevel};
use std::collections::HashMap;
use std::sync::Arc;

type Key = (Arc<str>, Vec<ValueId>, Vec<(Arc<str>, Attribute)>, Vec<Type>);

/// The state of one CSE run over a function.
struct Cse<'a> {
    ctx: &'a Context,
    db: AliasDb,
    scopes: Vec<HashMap<Key, OpId>>,
    /// Each op's pre-order position and the ops that write memory, with positions.
    writers: Vec<(usize, OpId)>,
    merged: usize,
    stopped: bool,
}

/// Runs CSE on everything nested in `root`; returns the number of ops merged.
pub fn run_cse(ctx: &Context, m: &mut Module, root: OpId, am: &mut AnalysisManager) -> Result<usize, Diagnostic> {
    let db = AliasDb::new(ctx, m, root);
    let mut writers: Vec<(usize, OpId)> = m
        .nested_ops(root)
        .into_iter()
        .filter(|&o| m.regions(o).is_empty() && (db.is_mutable_op(o) || db.is_opaque(o)))
        .filter_map(|o| db.order(o).map(|i| (i, o)))
        .collect();
    writers.sort();
    let mut cse = Cse { ctx, db, scopes: Vec::new(), writers, merged: 0, stopped: false };
    cse.region_list(m, root, am)?;
    Ok(cse.merged)
}

impl Cse<'_> {
    fn region_list(&mut self, m: &mut Module, op: OpId, am: &mut AnalysisManager) -> Result<(), Diagnostic> {
        let isolated = self.ctx.has_trait(m.op_name(op), Traits::ISOLATED_FROM_ABOVE);
        let saved = if isolated { std::mem::take(&mut self.scopes) } else { Vec::new() };
        for r in m.regions(op).to_vec() {
            for b in m.region_blocks(r).to_vec() {
                self.scopes.push(HashMap::new());
                for o in m.block_ops(b) {
                    if self.stopped {
                        break;
                    }
                    if !m.contains_op(o) {
                        continue;
                    }
                    if !m.regions(o).is_empty() {
                        self.region_list(m, o, am)?;
                        continue;
                    }
                    self.visit(m, o, am)?;
                }
                self.scopes.pop();
            }
        }
        if isolated {
            self.scopes = saved;
        }
        Ok(())
    }

    fn key(&self, m: &Module, op: OpId) -> Key {
        let mut operands = m.operands(op).to_vec();
        let alpha_is_one = m.attr(op, "alpha").is_none_or(|a| matches!(a, Attribute::Int(1)));
        if self.ctx.has_trait(m.op_name(op), Traits::COMMUTATIVE) && alpha_is_one {
            operands.sort();
        }
        let attrs = m.attributes(op).iter().filter(|(k, _)| !k.contains('.')).cloned().collect();
        let types = m.results(op).iter().map(|&r| m.value_type(r).clone()).collect();
        (m.op(op).name.clone(), operands, attrs, types)
    }

    fn candidate(&self, m: &Module, op: OpId) -> bool {
        let Some(def) = self.ctx.op_def(m.op_name(op)) else { return false };
        def.has_trait(Traits::PURE)
            && !def.has_trait(Traits::TERMINATOR)
            && !m.results(op).is_empty()
            && !self.db.is_mutable_op(op)
            && !self.db.is_opaque(op)
    }

    fn visit(&mut self, m: &mut Module, op: OpId, am: &mut AnalysisManager) -> Result<(), Diagnostic> {
        if !self.candidate(m, op) {
            return Ok(());
        }
        let key = self.key(m, op);
        let existing = self.scopes.iter().rev().find_map(|s| s.get(&key).copied());
        match existing {
            Some(prev) if m.contains_op(prev) && self.may_merge(m, prev, op) => {
                if !am.may_rewrite() {
                    self.stopped = true;
                    return Ok(());
                }
                pass::log!(am, LogLevel::Update, "merging '{}' into an earlier equivalent", m.op_name(op));
                let new = m.results(prev).to_vec();
                m.replace_op_results(op, &new);
                m.erase_op(op).map_err(|e| Diagnostic::error(m.loc(op).clone(), e.to_string()))?;
                self.merged += 1;
            }
            Some(_) => {
                pass::log!(am, LogLevel::Debug, "not merging '{}': memory may change in between", m.op_name(op));
                // Later duplicates may still merge into this one.
                if let Some(s) = self.scopes.last_mut() {
                    s.insert(key, op);
                }
            }
            None => {
                if let Some(s) = self.scopes.last_mut() {
                    s.insert(key, op);
                }
            }
        }
        Ok(())
    }

    fn may_merge(&self, m: &Module, prev: OpId, op: OpId) -> bool {
        let results = m.results(prev).iter().chain(m.results(op));
        if results.clone().any(|&r| self.db.has_writers(r)) {
            return false;
        }
        let reads = self.db.reads_from(op);
        if reads.is_empty() {
            return true;
        }
        let (Some(lo), Some(hi)) = (self.db.order(prev), self.db.order(op)) else { return false };
        // Loops around `op` that do not hold `prev` run all their ops between two executions.
        let mut loops = Vec::new();
        let mut cur = m.parent_op(op);
        while let Some(p) = cur {
            if m.is_ancestor(p, prev) {
                break;
            }
            if m.op_name(p) == dialect_prim::LOOP {
                loops.push(p);
            }
            cur = m.parent_op(p);
        }
        self.writers.iter().all(|&(i, w)| {
            let between = (i > lo && i < hi) || loops.iter().any(|&l| m.contains_op(w) && m.is_ancestor(l, w));
            !between || !m.contains_op(w) || !self.db.conflicts(w, op)
        })
    }
}
