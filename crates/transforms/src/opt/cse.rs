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

use super::alias::{AliasDb, is_effect_free};
use ir::{Attribute, Context, Diagnostic, Module, OpId, Traits, Type, ValueId};
use pass::{AnalysisManager, LogLevel};
use std::collections::HashMap;
use std::sync::Arc;

type Key = (Arc<str>, Vec<ValueId>, Vec<(Arc<str>, Attribute)>, Vec<Type>);

/// The state of one CSE run over a function.
struct Cse<'a> {
    ctx: &'a Context,
    /// `None` when nothing in the function writes memory or has opaque effects: then every op
    /// that is pure by its definition is a candidate and merging never crosses a write.
    db: Option<AliasDb>,
    scopes: Vec<HashMap<Key, OpId>>,
    /// The ops that write memory (or have opaque effects), by pre-order position.
    writers: Vec<(usize, OpId)>,
    /// The pre-order positions each `prim.Loop` spans (itself and everything nested).
    loop_spans: HashMap<OpId, (usize, usize)>,
    merged: usize,
    stopped: bool,
}

/// Runs CSE on everything nested in `root`; returns the number of ops merged.
pub fn run_cse(ctx: &Context, m: &mut Module, root: OpId, am: &mut AnalysisManager) -> Result<usize, Diagnostic> {
    let db = (!is_effect_free(ctx, m, root)).then(|| AliasDb::new(ctx, m, root));
    let mut writers: Vec<(usize, OpId)> = Vec::new();
    let mut loop_spans = HashMap::new();
    if let Some(db) = &db {
        writers = m
            .nested_ops(root)
            .into_iter()
            .filter(|&o| m.regions(o).is_empty() && (db.is_mutable_op(o) || db.is_opaque(o)))
            .filter_map(|o| db.order(o).map(|i| (i, o)))
            .collect();
        writers.sort();
        for o in m.nested_ops(root) {
            if m.op_name(o) == dialect_prim::LOOP {
                let start = db.order(o).unwrap_or(0);
                let end = m.nested_ops(o).iter().filter_map(|&n| db.order(n)).max().unwrap_or(start);
                loop_spans.insert(o, (start, end));
            }
        }
    }
    let mut cse = Cse { ctx, db, scopes: Vec::new(), writers, loop_spans, merged: 0, stopped: false };
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
            && self.db.as_ref().is_none_or(|db| !db.is_mutable_op(op) && !db.is_opaque(op))
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
        let Some(db) = &self.db else { return true };
        let results = m.results(prev).iter().chain(m.results(op));
        if results.clone().any(|&r| db.has_writers(r)) {
            return false;
        }
        if db.reads_from(op).is_empty() {
            return true;
        }
        let (Some(lo), Some(hi)) = (db.order(prev), db.order(op)) else { return false };
        // The positions whose writers run between the two: after `prev` and before `op`, and
        // all of each loop around `op` that does not hold `prev` (its next iteration runs them
        // in between).
        let mut spans = vec![(lo + 1, hi)];
        let mut cur = m.parent_op(op);
        while let Some(p) = cur {
            if m.is_ancestor(p, prev) {
                break;
            }
            if let Some(&(s, e)) = self.loop_spans.get(&p) {
                spans.push((s, e + 1));
            }
            cur = m.parent_op(p);
        }
        spans.into_iter().all(|(from, to)| {
            let first = self.writers.partition_point(|&(i, _)| i < from);
            self.writers[first..]
                .iter()
                .take_while(|&&(i, _)| i < to)
                .all(|&(_, w)| !m.contains_op(w) || !db.conflicts(w, op))
        })
    }
}
