//! `AliasDb`: TorchScript's alias analysis over one function, built from schema alias annotations.
//!
//! Every value of a mutable type (tensors, lists, tuples holding them, optionals of them, `Any`)
//! points to a set of abstract memory locations. Results of ops that do not alias their inputs
//! get a fresh location; views (`Tensor(a)` returns) point where their input points; values that
//! may alias anything point to the *wildcard*. A location that flows somewhere the analysis loses
//! track of (a list's elements, an unknown op's operand) *escapes*: it joins the wildcard set, so
//! wildcard values may alias it. Two values may alias when their location sets intersect, after a
//! wildcard is widened to every escaped location.
//!
//! Function arguments: an argument marked by the exporter (`prim.param`, `prim.buffer`,
//! `prim.constant`, `prim.input`) gets a location of its own, since torch.export hands every
//! placeholder its own storage; any other mutable argument is a wildcard, so unmarked arguments
//! may alias one another (and anything that escapes), as TorchScript assumes of graph inputs.
//!
//! Writes: an op writes the locations of each operand bound to a `Tensor(a!)` argument; an op
//! with regions writes what its nested ops write; an unknown op writes the wildcard. The analysis
//! is flow-insensitive, so it stays valid (conservative) while ops are moved or erased.

use dialect_prim::kinds::{Kind as PK, TypeExt as _};
use ir::schema::FunctionSchema;
use ir::{Context, Diagnostic, Module, OpId, Traits, ValueId, WalkOrder};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::Arc;

/// An abstract memory location.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MemLoc(pub u32);

impl MemLoc {
    /// The wildcard: memory that may be anything that escaped.
    pub const WILDCARD: MemLoc = MemLoc(0);
}

/// A set of memory locations.
pub type MemSet = BTreeSet<MemLoc>;

/// Argument attributes that mark a function argument as distinct program state or input.
pub const DISTINCT_ARG_ATTRS: [&str; 4] = ["prim.param", "prim.buffer", "prim.constant", "prim.input"];

/// What an op does to memory.
#[derive(Clone, Debug, Default)]
struct Effects {
    reads: MemSet,
    writes: MemSet,
    /// A side effect the analysis cannot describe by memory (an unregistered op, a random
    /// generator, an exception): such ops keep their order relative to each other and to writers.
    opaque: bool,
}

/// Alias analysis of one function (or any op with regions).
#[derive(Clone, Debug, Default)]
pub struct AliasDb {
    root: Option<OpId>,
    points_to: HashMap<ValueId, MemSet>,
    /// For tuples built by `prim.TupleConstruct`: the locations of each element.
    elements: HashMap<ValueId, Vec<MemSet>>,
    escaped: MemSet,
    effects: HashMap<OpId, Effects>,
    /// Each op's position in a pre-order walk of the root.
    order: HashMap<OpId, usize>,
    fresh: HashMap<(OpId, usize), MemLoc>,
    arg_fresh: HashMap<ValueId, MemLoc>,
    next: u32,
    /// Every location some op writes (the union of all ops' writes), so that asking whether a
    /// value has writers costs one set intersection, not a scan of every op.
    all_writes: MemSet,
}

/// Whether two sets share an element: each element of the smaller looked up in the larger.
fn intersects(a: &MemSet, b: &MemSet) -> bool {
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    small.iter().any(|l| large.contains(l))
}

/// Whether a value of this type can alias memory (a type of another dialect may, for all the
/// analysis knows).
pub fn is_mutable_type(t: &ir::Type) -> bool {
    match t.pk() {
        PK::Tensor(_) | PK::List(_) | PK::Any | PK::Other => true,
        PK::Tuple(items) => items.iter().any(is_mutable_type),
        PK::Optional(e) => is_mutable_type(e),
        _ => false,
    }
}

/// The schema of a registered op.
fn schema_of(ctx: &Context, m: &Module, op: OpId) -> Option<Arc<FunctionSchema>> {
    ctx.op_def(m.op_name(op)).and_then(|d| d.schema.clone())
}

/// Whether `op` writes an argument according to its schema.
pub fn schema_writes(ctx: &Context, m: &Module, op: OpId) -> bool {
    schema_of(ctx, m, op).is_some_and(|s| s.is_mutable())
}

/// Whether an op must be kept even when its results are unused: it is not `PURE`, or its schema
/// says it writes an argument. `dce` and the greedy driver erase exactly the ops for which this
/// is false (and which are not terminators).
pub fn has_side_effects(ctx: &Context, m: &Module, op: OpId) -> bool {
    let pure = ctx.op_def(m.op_name(op)).is_some_and(|d| d.has_trait(Traits::PURE));
    !pure || schema_writes(ctx, m, op)
}

/// Whether no op nested in `root` writes memory or has an opaque side effect (the ops an
/// [`AliasDb`] would give writes or mark opaque): then it would answer every question about
/// writers and conflicts with "none", and a pass may skip building it. One cheap walk.
pub fn is_effect_free(ctx: &Context, m: &Module, root: OpId) -> bool {
    let mut free = true;
    m.walk(root, WalkOrder::PreOrder, &mut |op| {
        if !free || op == root {
            return;
        }
        let name = m.op_name(op);
        let def = ctx.op_def(name);
        let pure = def.is_some_and(|d| d.has_trait(Traits::PURE));
        free = match def.and_then(|d| d.schema.as_ref()) {
            Some(schema) => !schema.is_mutable() && pure,
            None => {
                name != dialect_prim::RAISE_EXCEPTION
                    && (pure
                        // Region ops whose effects are those of their bodies, which the walk
                        // visits too.
                        || matches!(
                            name,
                            dialect_prim::IF
                                | dialect_prim::LOOP
                                | dialect_prim::FUSION_GROUP
                                | dialect_prim::YIELD
                                | dialect_prim::RETURN
                                | dialect_backend::KERNEL
                                | dialect_backend::RETURN
                        )
                        || name == ir::builtin::RETURN)
            }
        };
    });
    free
}

impl pass::Analysis for AliasDb {
    fn name() -> &'static str {
        "alias-db"
    }

    fn compute(ctx: &Context, m: &Module, op: OpId) -> Result<Self, Diagnostic> {
        Ok(AliasDb::new(ctx, m, op))
    }
}

impl AliasDb {
    /// Analyzes everything nested in `root` (a `func.func`, usually).
    pub fn new(ctx: &Context, m: &Module, root: OpId) -> AliasDb {
        let mut db = AliasDb { root: Some(root), next: 1, ..AliasDb::default() };
        if !m.contains_op(root) {
            return db;
        }
        let mut i = 0;
        m.walk(root, WalkOrder::PreOrder, &mut |o| {
            db.order.insert(o, i);
            i += 1;
        });
        db.seed_arguments(m, root);
        // The equations are monotone over finite sets, so iterating reaches a fixed point; the
        // bound only guards against a bug turning into a hang.
        for _ in 0..64 {
            let before = db.size();
            db.visit_regions(ctx, m, root);
            if db.size() == before {
                break;
            }
        }
        db.compute_effects(ctx, m, root);
        db.all_writes = db.effects.values().flat_map(|e| e.writes.iter().copied()).collect();
        db
    }

    /// The analyzed op.
    pub fn root(&self) -> Option<OpId> {
        self.root
    }

    fn size(&self) -> usize {
        self.points_to.values().map(BTreeSet::len).sum::<usize>()
            + self.elements.values().flatten().map(BTreeSet::len).sum::<usize>()
            + self.escaped.len()
    }

    fn new_loc(&mut self) -> MemLoc {
        let l = MemLoc(self.next);
        self.next += 1;
        l
    }

    fn fresh_for(&mut self, op: OpId, index: usize) -> MemLoc {
        if let Some(&l) = self.fresh.get(&(op, index)) {
            return l;
        }
        let l = self.new_loc();
        self.fresh.insert((op, index), l);
        l
    }

    fn seed_arguments(&mut self, m: &Module, root: OpId) {
        let arg_attrs = m.attr(root, ir::builtin::ARG_ATTRS).and_then(|a| a.as_array()).map(<[_]>::to_vec);
        let Some(entry) = m.regions(root).first().and_then(|&r| m.entry_block(r)) else { return };
        for (i, &a) in m.block_args(entry).iter().enumerate() {
            if !is_mutable_type(m.value_type(a)) {
                continue;
            }
            let marked = arg_attrs
                .as_ref()
                .and_then(|attrs| attrs.get(i))
                .is_some_and(|d| DISTINCT_ARG_ATTRS.iter().any(|k| d.dict_get(k).is_some()));
            let set = if marked && m.op_name(root) == ir::builtin::FUNC {
                let l = self.new_loc();
                self.arg_fresh.insert(a, l);
                MemSet::from([l])
            } else {
                MemSet::from([MemLoc::WILDCARD])
            };
            self.points_to.insert(a, set);
        }
    }

    fn locs(&self, v: ValueId) -> MemSet {
        self.points_to.get(&v).cloned().unwrap_or_default()
    }

    fn add(&mut self, v: ValueId, set: &MemSet) {
        if set.is_empty() {
            return;
        }
        self.points_to.entry(v).or_default().extend(set.iter().copied());
    }

    fn escape(&mut self, set: &MemSet) {
        self.escaped.extend(set.iter().copied().filter(|&l| l != MemLoc::WILDCARD));
    }

    /// Marks a value, and the elements of a tuple value, as escaped.
    fn escape_value(&mut self, v: ValueId) {
        let s = self.locs(v);
        self.escape(&s);
        if let Some(elems) = self.elements.get(&v).cloned() {
            for e in elems {
                self.escape(&e);
            }
        }
    }

    fn set_mutable(&mut self, m: &Module, v: ValueId, set: MemSet) {
        if is_mutable_type(m.value_type(v)) {
            self.add(v, &set);
        }
    }

    fn wildcard(&mut self, m: &Module, v: ValueId) {
        self.set_mutable(m, v, MemSet::from([MemLoc::WILDCARD]));
    }

    fn visit_regions(&mut self, ctx: &Context, m: &Module, op: OpId) {
        for &r in m.regions(op) {
            for &b in m.region_blocks(r) {
                for o in m.block_ops(b) {
                    self.visit(ctx, m, o);
                }
            }
        }
    }

    fn visit(&mut self, ctx: &Context, m: &Module, op: OpId) {
        let name = m.op_name(op).to_string();
        let operands = m.operands(op).to_vec();
        let results = m.results(op).to_vec();
        match name.as_str() {
            dialect_prim::CONSTANT | dialect_prim::UNINITIALIZED => {
                for (i, &r) in results.iter().enumerate() {
                    let l = self.fresh_for(op, i);
                    self.set_mutable(m, r, MemSet::from([l]));
                }
            }
            dialect_prim::LIST_CONSTRUCT => {
                // List elements are wildcards: what goes in escapes, the list itself is fresh.
                for &v in &operands {
                    self.escape_value(v);
                }
                let l = self.fresh_for(op, 0);
                if let Some(&r) = results.first() {
                    self.set_mutable(m, r, MemSet::from([l]));
                }
            }
            dialect_prim::LIST_UNPACK => {
                for &r in &results {
                    self.wildcard(m, r);
                }
            }
            dialect_prim::TUPLE_CONSTRUCT => {
                let elems: Vec<MemSet> = operands.iter().map(|&v| self.locs(v)).collect();
                let all: MemSet = elems.iter().flatten().copied().collect();
                if let Some(&r) = results.first() {
                    self.set_mutable(m, r, all);
                    let slot = self.elements.entry(r).or_insert_with(|| vec![MemSet::new(); elems.len()]);
                    for (s, e) in slot.iter_mut().zip(elems) {
                        s.extend(e);
                    }
                }
            }
            dialect_prim::TUPLE_UNPACK | dialect_prim::TUPLE_INDEX => {
                let Some(&t) = operands.first() else { return };
                let whole = self.locs(t);
                let elems = self.elements.get(&t).cloned();
                for (i, &r) in results.iter().enumerate() {
                    let index = if name == dialect_prim::TUPLE_INDEX {
                        m.attr(op, "index").and_then(|a| a.as_int()).and_then(|i| usize::try_from(i).ok())
                    } else {
                        Some(i)
                    };
                    let set = match (&elems, index) {
                        (Some(e), Some(k)) if k < e.len() => e[k].clone(),
                        _ => whole.clone(),
                    };
                    self.set_mutable(m, r, set);
                }
            }
            dialect_prim::IF => {
                for &region in m.regions(op) {
                    for &b in m.region_blocks(region) {
                        for o in m.block_ops(b) {
                            self.visit(ctx, m, o);
                        }
                        if let Some(t) = m.last_op(b) {
                            for (&y, &r) in m.operands(t).iter().zip(&results) {
                                let s = self.locs(y);
                                self.set_mutable(m, r, s);
                            }
                        }
                    }
                }
            }
            dialect_prim::LOOP => {
                let carried_in = operands.get(2..).unwrap_or(&[]).to_vec();
                let Some(body) = m.regions(op).first().and_then(|&r| m.entry_block(r)) else { return };
                let args = m.block_args(body).to_vec();
                for (&init, &arg) in carried_in.iter().zip(args.iter().skip(1)) {
                    let s = self.locs(init);
                    self.set_mutable(m, arg, s);
                }
                for o in m.block_ops(body) {
                    self.visit(ctx, m, o);
                }
                if let Some(t) = m.last_op(body) {
                    let yielded = m.operands(t).to_vec();
                    for (k, &y) in yielded.iter().enumerate().skip(1) {
                        let s = self.locs(y);
                        if let Some(&arg) = args.get(k) {
                            self.set_mutable(m, arg, s.clone());
                        }
                        if let Some(&r) = results.get(k - 1) {
                            self.set_mutable(m, r, s);
                        }
                    }
                }
                for (&init, &r) in carried_in.iter().zip(&results) {
                    let s = self.locs(init);
                    self.set_mutable(m, r, s);
                }
            }
            dialect_prim::FUSION_GROUP => {
                let Some(body) = m.regions(op).first().and_then(|&r| m.entry_block(r)) else { return };
                for (&v, &a) in operands.iter().zip(m.block_args(body)) {
                    let s = self.locs(v);
                    self.set_mutable(m, a, s);
                }
                for o in m.block_ops(body) {
                    self.visit(ctx, m, o);
                }
                if let Some(t) = m.last_op(body) {
                    for (&y, &r) in m.operands(t).iter().zip(&results) {
                        let s = self.locs(y);
                        self.set_mutable(m, r, s);
                    }
                }
            }
            _ => self.visit_generic(ctx, m, op, &operands, &results),
        }
    }

    fn visit_generic(&mut self, ctx: &Context, m: &Module, op: OpId, operands: &[ValueId], results: &[ValueId]) {
        let def = ctx.op_def(m.op_name(op)).cloned();
        if let Some(schema) = def.as_ref().and_then(|d| d.schema.clone()) {
            let binding = dialect_aten::bind_args(&schema, m, op).ok();
            // The operand bound to each schema argument.
            let arg_operand = |i: usize| -> Option<ValueId> {
                match binding.as_ref()?.get(i)? {
                    dialect_aten::ArgSource::Operand(k) => operands.get(*k).copied(),
                    dialect_aten::ArgSource::Const(_) => None,
                }
            };
            // Arguments whose elements get a named alias set (`Tensor(a -> *)`, `Tensor(a)[]`)
            // or the wildcard escape.
            for (i, a) in schema.args.iter().enumerate() {
                let Some(v) = arg_operand(i) else { continue };
                let escapes = a.alias.as_ref().is_some_and(|info| {
                    info.after.iter().any(|s| s == ir::schema::AliasInfo::WILDCARD)
                        || info.before.iter().any(|s| s == ir::schema::AliasInfo::WILDCARD)
                        || info.contained.is_some()
                }) || matches!(a.ty, ir::schema::SchemaType::List { .. }) && a.alias.is_some();
                if escapes {
                    self.escape_value(v);
                }
            }
            for (i, &r) in results.iter().enumerate() {
                let ret = schema.returns.get(i);
                let info = ret.and_then(|r| r.alias.as_ref());
                let wildcard = info.is_some_and(|a| {
                    a.before.iter().chain(&a.after).any(|s| s == ir::schema::AliasInfo::WILDCARD)
                        || a.contained.as_ref().is_some_and(|c| c.before.iter().any(|s| s == ir::schema::AliasInfo::WILDCARD))
                });
                let is_list = ret.is_some_and(|r| matches!(r.ty, ir::schema::SchemaType::List { .. }));
                match schema.returns_alias_of(i).and_then(arg_operand) {
                    Some(src) if is_list => {
                        // `Tensor(a)[]`: a fresh list whose elements alias the (escaped) input.
                        self.escape_value(src);
                        let l = self.fresh_for(op, i);
                        self.set_mutable(m, r, MemSet::from([l]));
                    }
                    Some(src) => {
                        let s = self.locs(src);
                        self.set_mutable(m, r, s);
                        // `Tensor(b|a)` may also be fresh.
                        if info.is_some_and(|a| a.before.len() > 1) {
                            let l = self.fresh_for(op, i);
                            self.set_mutable(m, r, MemSet::from([l]));
                        }
                    }
                    None if wildcard || (info.is_some() && schema.returns_alias_of(i).is_none() && !is_list) => {
                        self.wildcard(m, r);
                    }
                    None => {
                        let l = self.fresh_for(op, i);
                        self.set_mutable(m, r, MemSet::from([l]));
                        if is_list && info.is_some() {
                            self.wildcard(m, r);
                        }
                    }
                }
            }
            return;
        }
        let known_pure = def.as_ref().is_some_and(|d| d.has_trait(Traits::PURE));
        if known_pure && m.regions(op).is_empty() {
            // A registered pure op without a schema may return one of its operands (a view).
            let all: MemSet = operands.iter().flat_map(|&v| self.locs(v)).collect();
            for (i, &r) in results.iter().enumerate() {
                let l = self.fresh_for(op, i);
                let mut s = all.clone();
                s.insert(l);
                self.set_mutable(m, r, s);
            }
            return;
        }
        // Unknown op (or one with regions we do not model): its operands escape, its results are
        // wildcards, and its regions are analyzed for their own values.
        for &v in operands {
            self.escape_value(v);
        }
        for &r in results {
            self.wildcard(m, r);
        }
        for &region in m.regions(op) {
            for &b in m.region_blocks(region) {
                for &a in m.block_args(b) {
                    self.wildcard(m, a);
                }
                for o in m.block_ops(b) {
                    self.visit(ctx, m, o);
                }
                if let Some(t) = m.last_op(b) {
                    for &y in m.operands(t) {
                        self.escape_value(y);
                    }
                }
            }
        }
    }

    /// Computes each op's own reads and writes, then adds nested effects to enclosing ops.
    fn compute_effects(&mut self, ctx: &Context, m: &Module, root: OpId) {
        let mut ops = Vec::new();
        m.walk(root, WalkOrder::PostOrder, &mut |o| ops.push(o));
        ops.pop();
        for &op in &ops {
            let e = self.own_effects(ctx, m, op);
            self.effects.insert(op, e);
        }
        // Post-order: children before parents, so one pass accumulates everything upward.
        for &op in &ops {
            let Some(parent) = m.parent_op(op) else { continue };
            if parent == root {
                continue;
            }
            let child = self.effects.get(&op).cloned().unwrap_or_default();
            let p = self.effects.entry(parent).or_default();
            p.reads.extend(child.reads);
            p.writes.extend(child.writes);
            p.opaque |= child.opaque;
        }
    }

    fn own_effects(&self, ctx: &Context, m: &Module, op: OpId) -> Effects {
        let mut e = Effects::default();
        for &v in m.operands(op) {
            e.reads.extend(self.locs(v));
            if let Some(elems) = self.elements.get(&v) {
                e.reads.extend(elems.iter().flatten().copied());
            }
            if matches!(m.value_type(v).pk(), PK::List(_)) {
                e.reads.insert(MemLoc::WILDCARD);
            }
        }
        let name = m.op_name(op);
        let def = ctx.op_def(name);
        let is_structural = matches!(
            name,
            dialect_prim::IF | dialect_prim::LOOP | dialect_prim::FUSION_GROUP | dialect_prim::YIELD | dialect_prim::RETURN
        ) || name == ir::builtin::RETURN;
        if let Some(schema) = def.and_then(|d| d.schema.clone()) {
            if schema.is_mutable() {
                if let Ok(binding) = dialect_aten::bind_args(&schema, m, op) {
                    for (i, a) in schema.args.iter().enumerate() {
                        if !a.is_written() {
                            continue;
                        }
                        if let Some(dialect_aten::ArgSource::Operand(k)) = binding.get(i) {
                            if let Some(&v) = m.operands(op).get(*k) {
                                e.writes.extend(self.locs(v));
                                if a.alias.as_ref().is_some_and(|x| x.contained.as_ref().is_some_and(|c| c.is_write))
                                    || matches!(a.ty, ir::schema::SchemaType::List { .. })
                                {
                                    e.writes.insert(MemLoc::WILDCARD);
                                }
                            }
                        }
                    }
                } else {
                    e.writes.insert(MemLoc::WILDCARD);
                }
            } else if !def.is_some_and(|d| d.has_trait(Traits::PURE)) {
                e.opaque = true;
            }
        } else if name == dialect_prim::RAISE_EXCEPTION {
            // Ends execution: nothing may move across it, but it writes nothing.
            e.opaque = true;
        } else if !is_structural && !def.is_some_and(|d| d.has_trait(Traits::PURE)) {
            // Unknown or unmodelled side effects: assume it writes whatever escaped.
            e.opaque = true;
            e.writes.insert(MemLoc::WILDCARD);
            e.reads.insert(MemLoc::WILDCARD);
        }
        e
    }

    /// Whether the widened sets intersect, without building them: `widen` adds the escaped
    /// locations to a set holding the wildcard.
    fn sets_overlap(&self, a: &MemSet, b: &MemSet) -> bool {
        if a.is_empty() || b.is_empty() {
            return false;
        }
        let (wa, wb) = (a.contains(&MemLoc::WILDCARD), b.contains(&MemLoc::WILDCARD));
        if wa && wb {
            return true;
        }
        intersects(a, b) || (wa && intersects(&self.escaped, b)) || (wb && intersects(a, &self.escaped))
    }

    /// The memory locations `v` may point to (empty for immutable values).
    pub fn points_to(&self, v: ValueId) -> MemSet {
        self.locs(v)
    }

    /// Whether `v` may point to the wildcard (may alias anything that escaped).
    pub fn is_wildcard(&self, v: ValueId) -> bool {
        self.points_to.get(&v).is_some_and(|s| s.contains(&MemLoc::WILDCARD))
    }

    /// The locations that escaped into the wildcard set.
    pub fn escaped(&self) -> &MemSet {
        &self.escaped
    }

    /// Whether `a` and `b` may refer to overlapping memory.
    pub fn may_alias(&self, a: ValueId, b: ValueId) -> bool {
        if a == b {
            return self.points_to.get(&a).is_some_and(|s| !s.is_empty());
        }
        self.sets_overlap(&self.locs(a), &self.locs(b))
    }

    /// The locations `op` (and anything nested in it) writes.
    pub fn writes_to(&self, op: OpId) -> MemSet {
        self.effects.get(&op).map(|e| e.writes.clone()).unwrap_or_default()
    }

    /// The locations `op` (and anything nested in it) reads.
    pub fn reads_from(&self, op: OpId) -> MemSet {
        self.effects.get(&op).map(|e| e.reads.clone()).unwrap_or_default()
    }

    /// Whether `op` writes memory: an in-place or out= op, an op with such ops nested, an unknown op.
    pub fn is_mutable_op(&self, op: OpId) -> bool {
        self.effects.get(&op).is_some_and(|e| !e.writes.is_empty())
    }

    /// Whether `op` has a side effect the analysis cannot describe by memory.
    pub fn is_opaque(&self, op: OpId) -> bool {
        self.effects.get(&op).is_some_and(|e| e.opaque)
    }

    /// Whether `op` writes memory `v` may point to.
    pub fn writes_value(&self, op: OpId, v: ValueId) -> bool {
        self.effects.get(&op).is_some_and(|e| self.sets_overlap(&e.writes, &self.locs(v)))
    }

    /// The ops (at any depth; an op with regions counts with its nested writers) that write
    /// memory `v` may point to, in program order.
    pub fn writers_of(&self, v: ValueId) -> Vec<OpId> {
        let set = self.locs(v);
        let mut out: Vec<OpId> =
            self.effects.iter().filter(|(_, e)| self.sets_overlap(&e.writes, &set)).map(|(&o, _)| o).collect();
        out.sort_by_key(|o| self.order.get(o).copied().unwrap_or(usize::MAX));
        out
    }

    /// Whether any op writes memory `v` may point to.
    pub fn has_writers(&self, v: ValueId) -> bool {
        self.points_to.get(&v).is_some_and(|set| self.sets_overlap(&self.all_writes, set))
    }

    /// Whether running `a` and `b` in either order may differ: one writes what the other reads or
    /// writes, or both have opaque side effects (or one is opaque and the other writes).
    pub fn conflicts(&self, a: OpId, b: OpId) -> bool {
        let (Some(ea), Some(eb)) = (self.effects.get(&a), self.effects.get(&b)) else { return true };
        if (ea.opaque && (eb.opaque || !eb.writes.is_empty())) || (eb.opaque && !ea.writes.is_empty()) {
            return true;
        }
        self.sets_overlap(&ea.writes, &eb.writes)
            || self.sets_overlap(&ea.writes, &eb.reads)
            || self.sets_overlap(&eb.writes, &ea.reads)
    }

    /// The position of `op` in a pre-order walk of the analyzed op.
    pub fn order(&self, op: OpId) -> Option<usize> {
        self.order.get(&op).copied()
    }

    /// Whether `op` may move to just before `target` (same block, `target` earlier) without
    /// changing the program: every value `op` uses is defined before `target`, and no op from
    /// `target` up to `op` conflicts with it.
    pub fn move_before_topologically_valid(&self, m: &Module, op: OpId, target: OpId) -> bool {
        if op == target {
            return true;
        }
        if !self.same_block(m, op, target) {
            return false;
        }
        if m.is_before_in_block(op, target) {
            // Already earlier: moving down to just before `target` is a move after its predecessor.
            return match m.prev_op(target) {
                Some(p) if p == op => true,
                Some(p) => self.move_after_topologically_valid(m, op, p),
                None => false,
            };
        }
        let used = used_values(m, op);
        let mut cur = Some(target);
        while let Some(o) = cur {
            if o == op {
                return true;
            }
            if defines_any(m, o, &used) || self.conflicts(o, op) {
                return false;
            }
            cur = m.next_op(o);
        }
        false
    }

    /// Whether `op` may move to just after `target` (same block, `target` later): no op after
    /// `op` up to `target` uses its results or conflicts with it.
    pub fn move_after_topologically_valid(&self, m: &Module, op: OpId, target: OpId) -> bool {
        if op == target {
            return true;
        }
        if !self.same_block(m, op, target) {
            return false;
        }
        if m.is_before_in_block(target, op) {
            return match m.next_op(target) {
                Some(n) if n == op => true,
                Some(n) => self.move_before_topologically_valid(m, op, n),
                None => false,
            };
        }
        let results: HashSet<ValueId> = m.results(op).iter().copied().collect();
        let mut cur = m.next_op(op);
        while let Some(o) = cur {
            if used_values(m, o).iter().any(|v| results.contains(v)) || self.conflicts(o, op) {
                return false;
            }
            if o == target {
                return true;
            }
            cur = m.next_op(o);
        }
        false
    }

    fn same_block(&self, m: &Module, a: OpId, b: OpId) -> bool {
        m.contains_op(a)
            && m.contains_op(b)
            && m.parent_block(a).is_some()
            && m.parent_block(a) == m.parent_block(b)
            && m.op_name(a) != ir::builtin::RETURN
            && !ir_is_terminator_name(m.op_name(a))
    }

    /// Moves `op` just before `target` when [`AliasDb::move_before_topologically_valid`] allows it.
    pub fn try_move_before(&self, m: &mut Module, op: OpId, target: OpId) -> bool {
        self.move_before_topologically_valid(m, op, target) && (op == target || m.move_before(op, target).is_ok())
    }

    /// Moves `op` just after `target` when [`AliasDb::move_after_topologically_valid`] allows it.
    pub fn try_move_after(&self, m: &mut Module, op: OpId, target: OpId) -> bool {
        self.move_after_topologically_valid(m, op, target) && (op == target || m.move_after(op, target).is_ok())
    }

    /// A text dump: each mutable value's locations, the escaped set, and each writer.
    pub fn dump(&self, m: &Module, names: &dyn Fn(ValueId) -> String) -> String {
        let mut out = String::new();
        let mut values: Vec<(&ValueId, &MemSet)> = self.points_to.iter().filter(|(v, _)| m.contains_value(**v)).collect();
        values.sort_by_key(|(v, _)| names(**v));
        for (v, s) in values {
            let _ = writeln!(out, "{} -> {}", names(*v), fmt_set(s));
        }
        let _ = writeln!(out, "escaped: {}", fmt_set(&self.escaped));
        out
    }
}

fn ir_is_terminator_name(name: &str) -> bool {
    matches!(name, dialect_prim::YIELD | dialect_prim::RETURN) || name == ir::builtin::RETURN
}

/// Formats a location set: `{*, 1, 2}`.
pub fn fmt_set(s: &MemSet) -> String {
    let items: Vec<String> =
        s.iter().map(|l| if *l == MemLoc::WILDCARD { "*".to_string() } else { l.0.to_string() }).collect();
    format!("{{{}}}", items.join(", "))
}

/// The values `op` uses: its operands and those its nested ops use from outside it.
pub fn used_values(m: &Module, op: OpId) -> Vec<ValueId> {
    let mut out: Vec<ValueId> = m.operands(op).to_vec();
    if m.regions(op).is_empty() {
        return out;
    }
    for o in m.nested_ops(op) {
        for &v in m.operands(o) {
            let inside = match m.value_def(v) {
                ir::ValueDef::Result { op: d, .. } => m.is_ancestor(op, d),
                ir::ValueDef::BlockArg { block, .. } => m.block_parent_op(block).is_some_and(|p| m.is_ancestor(op, p)),
                ir::ValueDef::Placeholder => false,
            };
            if !inside {
                out.push(v);
            }
        }
    }
    out
}

/// Whether `op` (or an op nested in it) defines one of `values`.
fn defines_any(m: &Module, op: OpId, values: &[ValueId]) -> bool {
    values.iter().any(|&v| m.defining_op(v).is_some_and(|d| m.is_ancestor(op, d)))
}
