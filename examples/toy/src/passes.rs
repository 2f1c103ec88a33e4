//! Toy's passes, registered into its tools beside the built-in ones: `toy-combine` applies
//! toy's rules alone (no folders, no other dialect's patterns), with an option and a statistic,
//! and `toy-to-aten` lowers toy (`lowering.rs`).

use ir::{Context, Diagnostic, Module, OpId};
use pass::{AnalysisManager, GreedyConfig, Pass, PassInfo, PassOptions, PassRegistry, PassResult, RewriteSet};

// [doc:combine]
/// `toy-combine{max-iterations=N}`: toy's rules, applied greedily.
struct ToyCombine {
    max_iterations: usize,
    options: String,
    /// The rules, compiled against the context of the first run.
    rules: Option<RewriteSet>,
}

impl Pass for ToyCombine {
    fn name(&self) -> &str {
        "toy-combine"
    }

    fn description(&self) -> &str {
        COMBINE
    }

    fn option_text(&self) -> String {
        self.options.clone()
    }

    fn run(&mut self, ctx: &Context, m: &mut Module, op: OpId, am: &mut AnalysisManager) -> Result<PassResult, Diagnostic> {
        if self.rules.is_none() {
            let set = crate::patterns::rewrite_set(ctx).map_err(|e| Diagnostic::error(m.loc(op).clone(), e))?;
            self.rules = Some(set);
        }
        let rules = self.rules.as_ref().ok_or_else(|| Diagnostic::error(m.loc(op).clone(), "toy-combine has no rules"))?;
        let config = GreedyConfig { max_iterations: self.max_iterations, max_rewrites: am.rewrite_budget(), fold: false, remove_dead: true };
        let r = pass::apply_patterns_greedily(ctx, m, op, rules, &config)?;
        am.record_rewrites(r.rewrites);
        am.add_statistic("num-rewrites", "Toy rules applied and dead ops erased", r.rewrites as u64);
        am.add_statistic("num-iterations", "Passes over the function", r.iterations as u64);
        Ok(PassResult::from_changed(r.changed))
    }
}

const COMBINE: &str = "Apply the toy dialect's rewrite rules greedily";

/// Registers toy's passes.
pub fn register(r: &mut PassRegistry) {
    let combine = PassInfo::new("toy-combine", COMBINE, |o| {
        let max_iterations = usize::try_from(o.get_int("max-iterations").unwrap_or(10))
            .ok()
            .filter(|&n| n > 0)
            .ok_or("max-iterations must be positive")?;
        Ok(Box::new(ToyCombine { max_iterations, options: o.to_option_text(), rules: None }) as Box<dyn Pass>)
    })
    .anchor(pass::Anchor::func())
    .options(PassOptions::new().int("max-iterations", 10, "Passes over the function before giving up on a fixed point"));
    for info in [combine, crate::lowering::pass_info()] {
        // Both names are valid and not among the built-in passes.
        let _ = r.register(info);
    }
}
// [/doc:combine]
