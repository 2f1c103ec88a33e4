//! Rewrite patterns, the pattern rewriter, fold hooks, and the greedy driver that applies them
//! to a fixed point.

use ir::{
    Attribute, Context, Diagnostic, InsertPoint, Location, Module, OpId, OperationState, Traits,
    Type, ValueId,
};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// What a folder turns one result into: a constant (materialized by the dialect) or an existing value.
#[derive(Clone, Debug, PartialEq)]
pub enum FoldResult {
    Attr(Attribute),
    Value(ValueId),
}

/// Folds an op given the constant values of its operands (`None` where not constant). Returns
/// one [`FoldResult`] per result, or `None` when the op does not fold.
pub type FoldFn = Arc<
    dyn Fn(&Context, &Module, OpId, &[Option<Attribute>]) -> Option<Vec<FoldResult>> + Send + Sync,
>;

/// Builds a constant op of a dialect producing `value` with type `ty` (one result).
pub type MaterializeFn =
    Arc<dyn Fn(&Context, &Attribute, &Type, &Location) -> Option<OperationState> + Send + Sync>;

/// A local rewrite: matches an op and rewrites it through the [`PatternRewriter`].
pub trait RewritePattern {
    /// A name for logs and debugging.
    fn name(&self) -> &str {
        std::any::type_name::<Self>()
    }

    /// The op name this pattern applies to; `None` for any op.
    fn root(&self) -> Option<&str>;

    /// Patterns with a higher benefit are tried first.
    fn benefit(&self) -> u16 {
        1
    }

    /// Rewrites `op` and returns `true`, or returns `false` having changed nothing.
    fn match_and_rewrite(
        &self,
        ctx: &Context,
        rw: &mut PatternRewriter<'_>,
        op: OpId,
    ) -> Result<bool, Diagnostic>;
}

/// Patterns, folders and constant materializers: what canonicalization applies. Dialects fill it.
#[derive(Clone, Default)]
pub struct RewriteSet {
    patterns: Vec<Arc<dyn RewritePattern + Send + Sync>>,
    folders: HashMap<String, FoldFn>,
    materializers: HashMap<String, MaterializeFn>,
}

impl RewriteSet {
    pub fn new() -> RewriteSet {
        RewriteSet::default()
    }

    pub fn add_pattern(&mut self, p: impl RewritePattern + Send + Sync + 'static) -> &mut Self {
        self.patterns.push(Arc::new(p));
        self
    }

    /// Sets the folder of an op name (replacing an earlier one).
    pub fn add_folder(
        &mut self,
        op: &str,
        f: impl Fn(&Context, &Module, OpId, &[Option<Attribute>]) -> Option<Vec<FoldResult>>
        + Send
        + Sync
        + 'static,
    ) -> &mut Self {
        self.folders.insert(op.to_string(), Arc::new(f));
        self
    }

    /// Sets how a dialect builds constants for folded results.
    pub fn add_materializer(
        &mut self,
        dialect: &str,
        f: impl Fn(&Context, &Attribute, &Type, &Location) -> Option<OperationState>
        + Send
        + Sync
        + 'static,
    ) -> &mut Self {
        self.materializers.insert(dialect.to_string(), Arc::new(f));
        self
    }

    /// Adds everything of `other` (its folders and materializers win on clashes).
    pub fn extend(&mut self, other: &RewriteSet) -> &mut Self {
        self.patterns.extend(other.patterns.iter().cloned());
        self.folders
            .extend(other.folders.iter().map(|(k, v)| (k.clone(), v.clone())));
        self.materializers.extend(
            other
                .materializers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone())),
        );
        self
    }

    pub fn patterns(&self) -> &[Arc<dyn RewritePattern + Send + Sync>] {
        &self.patterns
    }

    pub fn folder(&self, op: &str) -> Option<&FoldFn> {
        self.folders.get(op)
    }

    pub fn materializer(&self, dialect: &str) -> Option<&MaterializeFn> {
        self.materializers.get(dialect)
    }

    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty() && self.folders.is_empty()
    }
}

/// The canonicalization patterns of a dialect's ops, attached to each op they are rooted at
/// (`ctx.attach(op, CanonicalizationPatterns(set))`, MLIR's `getCanonicalizationPatterns`):
/// `canonicalize` applies every set attached in its context besides its own, so a dialect
/// outside the project gets canonicalized without the pass knowing of it.
#[derive(Clone)]
pub struct CanonicalizationPatterns(pub Arc<RewriteSet>);

impl CanonicalizationPatterns {
    /// `base` extended with every set attached in `ctx` (each once), or `base` itself when
    /// nothing is attached.
    pub fn merged(ctx: &Context, base: &Arc<RewriteSet>) -> Arc<RewriteSet> {
        let mut seen: Vec<&Arc<RewriteSet>> = Vec::new();
        for (_, CanonicalizationPatterns(set)) in ctx.interfaces::<CanonicalizationPatterns>() {
            if !seen.iter().any(|s| Arc::ptr_eq(s, set)) {
                seen.push(set);
            }
        }
        if seen.is_empty() {
            return base.clone();
        }
        let mut all = RewriteSet::clone(base);
        for set in seen {
            all.extend(set);
        }
        Arc::new(all)
    }
}

/// Whether `op` may be erased: a registered pure op, not a terminator, whose results are unused.
pub fn is_trivially_dead(ctx: &Context, m: &Module, op: OpId) -> bool {
    let Some(def) = ctx.op_def(m.op_name(op)) else {
        return false;
    };
    def.has_trait(Traits::PURE)
        && !def.has_trait(Traits::TERMINATOR)
        && m.results(op).iter().all(|&r| !m.has_uses(r))
}

fn op_error(m: &Module, op: OpId, msg: impl Into<String>) -> Diagnostic {
    Diagnostic::error(m.loc(op).clone(), msg.into())
}

fn gone(what: &str) -> Diagnostic {
    Diagnostic::error(
        Location::Unknown,
        format!("rewriter given {what} that is not in the module"),
    )
}

/// Edits the module on behalf of a pattern, telling the driver which ops to revisit.
pub struct PatternRewriter<'m> {
    m: &'m mut Module,
    ip: Option<InsertPoint>,
    loc: Location,
    touched: Vec<OpId>,
    changed: bool,
}

impl<'m> PatternRewriter<'m> {
    /// A rewriter inserting before `op` (when it is in a block), giving new ops `op`'s location.
    pub fn new(m: &'m mut Module, op: OpId) -> PatternRewriter<'m> {
        let (ip, loc) = if m.contains_op(op) {
            (
                m.parent_block(op).map(|_| InsertPoint::Before(op)),
                m.loc(op).clone(),
            )
        } else {
            (None, Location::Unknown)
        };
        PatternRewriter {
            m,
            ip,
            loc,
            touched: Vec::new(),
            changed: false,
        }
    }

    pub fn module(&self) -> &Module {
        self.m
    }

    /// Direct access for edits the rewriter has no method for; report them with
    /// [`PatternRewriter::notify_changed`].
    pub fn module_mut(&mut self) -> &mut Module {
        self.changed = true;
        self.m
    }

    /// Marks `op` changed so the driver revisits it.
    pub fn notify_changed(&mut self, op: OpId) {
        self.changed = true;
        self.touched.push(op);
    }

    pub fn insertion_point(&self) -> Option<InsertPoint> {
        self.ip
    }

    pub fn set_insertion_point(&mut self, ip: InsertPoint) {
        self.ip = Some(ip);
    }

    /// The location given to created ops whose state has none.
    pub fn set_loc(&mut self, loc: Location) {
        self.loc = loc;
    }

    /// Whether the rewriter changed anything.
    pub fn changed(&self) -> bool {
        self.changed
    }

    pub(crate) fn take_touched(&mut self) -> Vec<OpId> {
        std::mem::take(&mut self.touched)
    }

    /// Creates an op at the insertion point (which then moves past it).
    pub fn create(&mut self, mut state: OperationState) -> Result<OpId, Diagnostic> {
        let ip = self.ip.ok_or_else(|| {
            Diagnostic::error(self.loc.clone(), "rewriter has no insertion point")
        })?;
        if let InsertPoint::Before(o) | InsertPoint::After(o) = ip
            && !self.m.contains_op(o)
        {
            return Err(gone("an insertion point"));
        }
        if state.operands.iter().any(|&v| !self.m.contains_value(v)) {
            return Err(Diagnostic::error(
                self.loc.clone(),
                format!("operand of new '{}' is not in the module", state.name),
            ));
        }
        if state.loc == Location::Unknown {
            state.loc = self.loc.clone();
        }
        let name = state.name.clone();
        let op = self.m.create_op(state);
        if let Err(e) = self.m.insert_op(op, ip) {
            let _ = self.m.erase_op(op);
            return Err(Diagnostic::error(
                self.loc.clone(),
                format!("cannot insert '{name}': {e}"),
            ));
        }
        if let InsertPoint::After(_) | InsertPoint::Start(_) = ip {
            self.ip = Some(InsertPoint::After(op));
        }
        self.changed = true;
        self.touched.push(op);
        Ok(op)
    }

    /// Creates a one-result op and returns its result.
    pub fn create_value(&mut self, state: OperationState) -> Result<ValueId, Diagnostic> {
        let op = self.create(state)?;
        self.m
            .result(op, 0)
            .ok_or_else(|| op_error(self.m, op, "created op has no result"))
    }

    /// Replaces every use of `old` with `new`.
    pub fn replace_all_uses(&mut self, old: ValueId, new: ValueId) -> Result<(), Diagnostic> {
        if !self.m.contains_value(old) || !self.m.contains_value(new) {
            return Err(gone("a value"));
        }
        self.touched.extend(self.m.uses(old).iter().map(|u| u.op));
        self.m.replace_all_uses(old, new);
        self.changed = true;
        Ok(())
    }

    /// Replaces the results of `op` with `new` (one for one) and erases `op`.
    pub fn replace_op(&mut self, op: OpId, new: &[ValueId]) -> Result<(), Diagnostic> {
        if !self.m.contains_op(op) {
            return Err(gone("an op"));
        }
        let results = self.m.results(op).to_vec();
        if results.len() != new.len() {
            return Err(op_error(
                self.m,
                op,
                format!(
                    "'{}' has {} result(s) but {} replacement value(s) were given",
                    self.m.op_name(op),
                    results.len(),
                    new.len()
                ),
            ));
        }
        for (&old, &n) in results.iter().zip(new) {
            if !self.m.contains_value(n) {
                return Err(gone("a replacement value"));
            }
            if old == n {
                return Err(op_error(
                    self.m,
                    op,
                    format!(
                        "cannot replace '{}' with its own result",
                        self.m.op_name(op)
                    ),
                ));
            }
        }
        for (&old, &n) in results.iter().zip(new) {
            self.replace_all_uses(old, n)?;
        }
        self.erase_op(op)
    }

    /// Creates an op from `state` at the insertion point and replaces `op` with its results.
    pub fn replace_op_with(&mut self, op: OpId, state: OperationState) -> Result<OpId, Diagnostic> {
        let new = self.create(state)?;
        let values = self.m.results(new).to_vec();
        self.replace_op(op, &values)?;
        Ok(new)
    }

    /// Erases `op`, whose results must be unused.
    pub fn erase_op(&mut self, op: OpId) -> Result<(), Diagnostic> {
        if !self.m.contains_op(op) {
            return Err(gone("an op"));
        }
        let defs: Vec<OpId> = self
            .m
            .operands(op)
            .iter()
            .filter_map(|&v| self.m.defining_op(v))
            .collect();
        if let Some(InsertPoint::Before(o) | InsertPoint::After(o)) = self.ip
            && o == op
        {
            self.ip = self.m.parent_block(op).map(|b| match self.m.next_op(op) {
                Some(n) => InsertPoint::Before(n),
                None => InsertPoint::End(b),
            });
        }
        self.m
            .erase_op(op)
            .map_err(|e| op_error(self.m, op, e.to_string()))?;
        self.touched.extend(defs);
        self.changed = true;
        Ok(())
    }

    /// Changes `op` in place through `f` and marks it for revisiting.
    pub fn modify_op(
        &mut self,
        op: OpId,
        f: impl FnOnce(&mut Module, OpId),
    ) -> Result<(), Diagnostic> {
        if !self.m.contains_op(op) {
            return Err(gone("an op"));
        }
        f(self.m, op);
        self.notify_changed(op);
        Ok(())
    }
}

/// Limits of the greedy driver.
#[derive(Clone, Debug)]
pub struct GreedyConfig {
    /// Passes over the whole region before giving up on a fixed point.
    pub max_iterations: usize,
    /// Stop after this many rewrites (folds, pattern applications, dead-op removals).
    pub max_rewrites: Option<usize>,
    /// Apply fold hooks.
    pub fold: bool,
    /// Erase pure ops whose results are unused.
    pub remove_dead: bool,
}

impl Default for GreedyConfig {
    fn default() -> Self {
        GreedyConfig {
            max_iterations: 10,
            max_rewrites: None,
            fold: true,
            remove_dead: true,
        }
    }
}

/// What the greedy driver did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GreedyResult {
    pub changed: bool,
    /// Whether a fixed point was reached (a full pass over the IR made no change).
    pub converged: bool,
    pub rewrites: usize,
    pub iterations: usize,
}

#[derive(Default)]
struct Worklist {
    stack: Vec<OpId>,
    set: HashSet<OpId>,
}

impl Worklist {
    fn push(&mut self, op: OpId) {
        if self.set.insert(op) {
            self.stack.push(op);
        }
    }

    fn pop(&mut self) -> Option<OpId> {
        let op = self.stack.pop()?;
        self.set.remove(&op);
        Some(op)
    }
}

/// Applies folders, patterns and dead-op removal to the ops nested in `root` (not `root`
/// itself) until nothing changes or a limit is reached. Ops are visited in program order;
/// ops touched by a rewrite are revisited next.
pub fn apply_patterns_greedily(
    ctx: &Context,
    m: &mut Module,
    root: OpId,
    set: &RewriteSet,
    config: &GreedyConfig,
) -> Result<GreedyResult, Diagnostic> {
    let mut result = GreedyResult::default();
    if !m.contains_op(root) {
        return Err(gone("a root op"));
    }
    let mut patterns: Vec<&Arc<dyn RewritePattern + Send + Sync>> = set.patterns.iter().collect();
    patterns.sort_by_key(|p| std::cmp::Reverse(p.benefit()));
    for iteration in 1..=config.max_iterations.max(1) {
        result.iterations = iteration;
        let mut wl = Worklist::default();
        let seeded = m.nested_ops(root);
        // A pattern that keeps producing work ends the iteration after this many rewrites, so
        // every call returns; the iteration cap then bounds the whole run.
        let iteration_cap = 16 * (seeded.len() + 1);
        let at_start = result.rewrites;
        for op in seeded.into_iter().rev() {
            wl.push(op);
        }
        let mut changed = false;
        while let Some(op) = wl.pop() {
            if result.rewrites - at_start >= iteration_cap {
                break;
            }
            if !m.contains_op(op) || op == root {
                continue;
            }
            if config
                .max_rewrites
                .is_some_and(|max| result.rewrites >= max)
            {
                result.changed |= changed;
                return Ok(result);
            }
            if config.remove_dead && is_trivially_dead(ctx, m, op) {
                let defs: Vec<OpId> = m
                    .operands(op)
                    .iter()
                    .filter_map(|&v| m.defining_op(v))
                    .collect();
                m.erase_op(op).map_err(|e| op_error(m, op, e.to_string()))?;
                defs.into_iter().for_each(|d| wl.push(d));
                result.rewrites += 1;
                changed = true;
                continue;
            }
            if config.fold
                && let Some(touched) = try_fold(ctx, m, op, set)?
            {
                touched.into_iter().for_each(|o| wl.push(o));
                result.rewrites += 1;
                changed = true;
                continue;
            }
            let name = m.op_name(op).to_string();
            for p in &patterns {
                if p.root().is_some_and(|r| r != name) {
                    continue;
                }
                let mut rw = PatternRewriter::new(m, op);
                let applied = p.match_and_rewrite(ctx, &mut rw, op)?;
                let rw_changed = rw.changed();
                let touched = rw.take_touched();
                if applied || rw_changed {
                    for o in touched {
                        wl.push(o);
                    }
                    if m.contains_op(op) {
                        wl.push(op);
                    }
                    result.rewrites += 1;
                    changed = true;
                    break;
                }
            }
        }
        result.changed |= changed;
        if !changed {
            result.converged = true;
            break;
        }
    }
    Ok(result)
}

/// Folds `op` if it has a folder that applies; returns the ops to revisit.
fn try_fold(
    ctx: &Context,
    m: &mut Module,
    op: OpId,
    set: &RewriteSet,
) -> Result<Option<Vec<OpId>>, Diagnostic> {
    let name = m.op_name(op).to_string();
    let Some(folder) = set.folder(&name) else {
        return Ok(None);
    };
    if ctx.has_trait(&name, Traits::CONSTANT_LIKE) {
        return Ok(None);
    }
    let consts: Vec<Option<Attribute>> = m
        .operands(op)
        .iter()
        .map(|&v| {
            m.defining_op(v)
                .filter(|&d| ctx.has_trait(m.op_name(d), Traits::CONSTANT_LIKE))
                .and_then(|d| m.attr(d, "value").cloned())
        })
        .collect();
    let Some(folded) = folder(ctx, m, op, &consts) else {
        return Ok(None);
    };
    let results = m.results(op).to_vec();
    if folded.len() != results.len() {
        return Err(op_error(
            m,
            op,
            format!(
                "folder of '{name}' returned {} value(s) for {} result(s)",
                folded.len(),
                results.len()
            ),
        ));
    }
    if folded
        .iter()
        .zip(&results)
        .all(|(f, r)| *f == FoldResult::Value(*r))
    {
        return Ok(None);
    }
    // Build every constant's state first, so a missing materializer leaves the IR untouched.
    let dialect = name.split('.').next().unwrap_or("");
    let loc = m.loc(op).clone();
    let mut states = Vec::new();
    for (f, &r) in folded.iter().zip(&results) {
        match f {
            FoldResult::Attr(a) => {
                let Some(mat) = set.materializer(dialect) else {
                    return Ok(None);
                };
                let Some(st) = mat(ctx, a, m.value_type(r), &loc) else {
                    return Ok(None);
                };
                states.push(Some(st));
            }
            FoldResult::Value(v) => {
                if !m.contains_value(*v) || *v == r {
                    return Err(op_error(
                        m,
                        op,
                        format!("folder of '{name}' returned an invalid value"),
                    ));
                }
                states.push(None);
            }
        }
    }
    let mut rw = PatternRewriter::new(m, op);
    let mut values = Vec::new();
    for (f, st) in folded.iter().zip(states) {
        match (f, st) {
            (_, Some(st)) => values.push(rw.create_value(st)?),
            (FoldResult::Value(v), None) => values.push(*v),
            (FoldResult::Attr(_), None) => return Ok(None),
        }
    }
    rw.replace_op(op, &values)?;
    Ok(Some(rw.take_touched()))
}
