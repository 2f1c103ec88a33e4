//! The `Pass` trait, what a pass reports, and the op kinds a pass may be anchored on.

use crate::analysis::{AnalysisManager, PreservedAnalyses};
use ir::{Context, Diagnostic, Module, OpId};
use std::fmt;

/// The kind of op a pass runs on.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Anchor {
    /// Any op: the pass runs on whatever op its pipeline is anchored on.
    Any,
    /// Ops of this name only (`builtin.module`, `func.func`, ...).
    Op(String),
}

impl Anchor {
    pub fn module() -> Anchor {
        Anchor::Op(ir::builtin::MODULE.to_string())
    }

    pub fn func() -> Anchor {
        Anchor::Op(ir::builtin::FUNC.to_string())
    }

    /// Whether a pass with this anchor may run on ops named `op_name`.
    pub fn admits(&self, op_name: &str) -> bool {
        match self {
            Anchor::Any => true,
            Anchor::Op(n) => n == op_name,
        }
    }
}

impl fmt::Display for Anchor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Anchor::Any => f.write_str("any"),
            Anchor::Op(n) => f.write_str(n),
        }
    }
}

/// What a successful pass run reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassResult {
    /// Whether the IR changed.
    pub changed: bool,
    /// The analyses still valid after the run.
    pub preserved: PreservedAnalyses,
}

impl PassResult {
    /// Nothing changed: every analysis stays valid.
    pub fn unchanged() -> PassResult {
        PassResult {
            changed: false,
            preserved: PreservedAnalyses::all(),
        }
    }

    /// The IR changed and no analysis is preserved.
    pub fn changed() -> PassResult {
        PassResult {
            changed: true,
            preserved: PreservedAnalyses::none(),
        }
    }

    /// [`PassResult::changed`] or [`PassResult::unchanged`] by a flag.
    pub fn from_changed(changed: bool) -> PassResult {
        if changed {
            PassResult::changed()
        } else {
            PassResult::unchanged()
        }
    }

    pub fn new(changed: bool, preserved: PreservedAnalyses) -> PassResult {
        PassResult { changed, preserved }
    }
}

/// A transformation or check run on one anchor op at a time.
///
/// The pass manager calls [`Pass::run`] once per anchor op: once on the module for a pass in a
/// `builtin.module(...)` pipeline, once per function for one nested in `func.func(...)`. The
/// [`AnalysisManager`] gives cached analyses, per-pass logging ([`AnalysisManager::log`], the
/// [`log!`](crate::log) macro), the optimization limit ([`AnalysisManager::may_rewrite`]) and the
/// instrumentation output ([`AnalysisManager::output`]).
pub trait Pass {
    /// The name used in pipelines (`cse`, `lower-to-edge`).
    fn name(&self) -> &str;

    fn description(&self) -> &str {
        ""
    }

    /// The ops this pass may run on.
    fn anchor(&self) -> Anchor {
        Anchor::Any
    }

    /// The options this instance was built with, for printing the pipeline back (`a=1 b=x`).
    fn option_text(&self) -> String {
        String::new()
    }

    fn run(
        &mut self,
        ctx: &Context,
        m: &mut Module,
        op: OpId,
        am: &mut AnalysisManager,
    ) -> Result<PassResult, Diagnostic>;
}

/// Logs from inside a pass when `DIALECT_LOG` enables the level for the running pass; the
/// message is formatted only then.
///
/// ```
/// use pass::{AnalysisManager, LogLevel};
/// fn report(am: &mut AnalysisManager, n: usize) {
///     pass::log!(am, LogLevel::Update, "erased {} ops", n);
/// }
/// ```
#[macro_export]
macro_rules! log {
    ($am:expr, $level:expr, $($arg:tt)*) => {
        if $am.log_enabled($level) {
            $am.log($level, &format!($($arg)*));
        }
    };
}
