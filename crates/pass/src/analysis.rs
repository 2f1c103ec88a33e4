//! Analyses cached per anchor op and invalidated after passes, and the per-pass services
//! (logging, the rewrite limit, instrumentation output) that reach a pass through the manager.

use crate::env::LogLevel;
use ir::{Context, Diagnostic, Module, OpId};
use std::any::{Any, TypeId};
use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;

/// A fact computed from the IR under one op, cached until a pass invalidates it.
pub trait Analysis: Any + Sized {
    /// A name for timing and debugging output.
    fn name() -> &'static str {
        std::any::type_name::<Self>()
    }

    fn compute(ctx: &Context, m: &Module, op: OpId) -> Result<Self, Diagnostic>;
}

/// The analyses a pass leaves valid.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PreservedAnalyses {
    all: bool,
    kept: BTreeSet<TypeId>,
}

impl PreservedAnalyses {
    pub fn all() -> PreservedAnalyses {
        PreservedAnalyses {
            all: true,
            kept: BTreeSet::new(),
        }
    }

    pub fn none() -> PreservedAnalyses {
        PreservedAnalyses::default()
    }

    /// Marks analysis `A` preserved.
    pub fn preserve<A: Analysis>(mut self) -> Self {
        self.kept.insert(TypeId::of::<A>());
        self
    }

    pub fn is_all(&self) -> bool {
        self.all
    }

    pub fn is_preserved<A: Analysis>(&self) -> bool {
        self.is_preserved_id(TypeId::of::<A>())
    }

    fn is_preserved_id(&self, id: TypeId) -> bool {
        self.all || self.kept.contains(&id)
    }
}

/// State of the pass being run, set by the pass manager before each run.
#[derive(Clone, Debug, Default)]
pub(crate) struct PassState {
    pub pass: String,
    pub log_level: Option<LogLevel>,
    /// Rewrites left before the optimization limit; `None` when unlimited.
    pub budget: Option<usize>,
    /// Rewrites made in this run.
    pub rewrites: usize,
    /// Whether the limit stopped a rewrite in this run.
    pub limit_hit: bool,
}

/// Caches analyses by type per op, and carries the running pass's logging, rewrite limit and
/// instrumentation output.
#[derive(Default)]
pub struct AnalysisManager {
    cache: HashMap<OpId, HashMap<TypeId, Rc<dyn Any>>>,
    pub(crate) state: PassState,
    output: String,
    nested_timing: crate::instrument::Timing,
    statistics: crate::instrument::Statistics,
}

impl AnalysisManager {
    pub fn new() -> AnalysisManager {
        AnalysisManager::default()
    }

    /// The analysis `A` of `op`, computed now unless cached.
    pub fn get<A: Analysis>(
        &mut self,
        ctx: &Context,
        m: &Module,
        op: OpId,
    ) -> Result<Rc<A>, Diagnostic> {
        if let Some(a) = self.cached::<A>(op) {
            return Ok(a);
        }
        if !m.contains_op(op) {
            return Err(Diagnostic::error(
                ir::Location::Unknown,
                format!("analysis '{}' requested for an erased op", A::name()),
            ));
        }
        let a: Rc<A> = Rc::new(A::compute(ctx, m, op)?);
        self.cache
            .entry(op)
            .or_default()
            .insert(TypeId::of::<A>(), a.clone() as Rc<dyn Any>);
        Ok(a)
    }

    /// The analysis `A` of `op` if it is cached.
    pub fn cached<A: Analysis>(&self, op: OpId) -> Option<Rc<A>> {
        let a = self.cache.get(&op)?.get(&TypeId::of::<A>())?.clone();
        a.downcast::<A>().ok()
    }

    /// Drops analyses made stale by a pass on `anchor`: those of `anchor`, the ops nested in it
    /// and its ancestors, except the preserved ones; and those of ops no longer in the module.
    pub fn invalidate(&mut self, m: &Module, anchor: OpId, preserved: &PreservedAnalyses) {
        let anchor_alive = m.contains_op(anchor);
        self.cache.retain(|&op, entries| {
            if !m.contains_op(op) {
                return false;
            }
            let related = !anchor_alive
                || op == anchor
                || m.is_ancestor(anchor, op)
                || m.is_ancestor(op, anchor);
            if related && !preserved.is_all() {
                entries.retain(|id, _| preserved.is_preserved_id(*id));
            }
            !entries.is_empty()
        });
    }

    /// Drops every cached analysis.
    pub fn clear(&mut self) {
        self.cache.clear();
    }

    /// The name of the running pass.
    pub fn pass_name(&self) -> &str {
        &self.state.pass
    }

    /// Whether `DIALECT_LOG` enables `level` for the running pass.
    pub fn log_enabled(&self, level: LogLevel) -> bool {
        self.state.log_level.is_some_and(|l| level <= l)
    }

    /// Writes a log line (each line prefixed `[LEVEL pass] `) when the level is enabled.
    pub fn log(&mut self, level: LogLevel, msg: &str) {
        if !self.log_enabled(level) {
            return;
        }
        for line in msg.lines() {
            self.output
                .push_str(&format!("[{level} {}] {line}\n", self.state.pass));
        }
    }

    /// Asks before one rewrite: `true` (and counts it) unless `DIALECT_OPT_LIMIT` says the running
    /// pass has made all the rewrites it may.
    pub fn may_rewrite(&mut self) -> bool {
        match self.state.budget {
            Some(0) => {
                if !self.state.limit_hit {
                    self.state.limit_hit = true;
                    let pass = self.state.pass.clone();
                    self.log(
                        LogLevel::Dump,
                        &format!("optimization limit reached for '{pass}'"),
                    );
                }
                false
            }
            Some(n) => {
                self.state.budget = Some(n - 1);
                self.state.rewrites += 1;
                true
            }
            None => {
                self.state.rewrites += 1;
                true
            }
        }
    }

    /// The rewrites the running pass may still make (`None`: unlimited), for drivers that count
    /// their own rewrites and report them with [`AnalysisManager::record_rewrites`].
    pub fn rewrite_budget(&self) -> Option<usize> {
        self.state.budget
    }

    /// Counts `n` rewrites made against [`AnalysisManager::rewrite_budget`].
    pub fn record_rewrites(&mut self, n: usize) {
        self.state.rewrites += n;
        if let Some(b) = self.state.budget {
            self.state.budget = Some(b.saturating_sub(n));
            if b <= n && !self.state.limit_hit {
                self.state.limit_hit = true;
                let pass = self.state.pass.clone();
                self.log(
                    LogLevel::Dump,
                    &format!("optimization limit reached for '{pass}'"),
                );
            }
        }
    }

    /// Records the time of one phase of the running pass; `--timing` reports it in a row
    /// `pass/label` under the pass's own (rows with equal labels add up and count runs), so a
    /// label may carry an outcome, e.g. `saturation (iteration limit)`.
    pub fn record_time(&mut self, label: &str, d: std::time::Duration) {
        self.nested_timing.record(label, d);
    }

    /// Rewrites counted in the running pass so far.
    pub fn rewrites(&self) -> usize {
        self.state.rewrites
    }

    /// The instrumentation output (stderr in tools), written out after the pass returns.
    pub fn output(&mut self) -> &mut String {
        &mut self.output
    }

    /// Reports the timing of a pipeline the running pass ran itself: its rows join the timing
    /// report under the pass's name (`default-pipeline/cse`).
    pub fn record_nested_timing(&mut self, timing: &crate::instrument::Timing) {
        self.nested_timing.merge("", timing);
    }

    /// Adds `value` to the running pass's counter `name` (created at zero with `description`
    /// when first reported); the pass manager sums counters over the pass's runs and prints
    /// them when asked (`--mlir-pass-statistics`).
    pub fn add_statistic(&mut self, name: &str, description: &str, value: u64) {
        let pass = self.state.pass.clone();
        self.statistics.add(&pass, name, description, value);
    }

    pub(crate) fn take_statistics(&mut self) -> crate::instrument::Statistics {
        std::mem::take(&mut self.statistics)
    }

    pub(crate) fn take_nested_timing(&mut self) -> crate::instrument::Timing {
        std::mem::take(&mut self.nested_timing)
    }

    pub(crate) fn take_output(&mut self) -> String {
        std::mem::take(&mut self.output)
    }
}
