//! Optimization passes: alias analysis, DCE, CSE, folding, canonicalization, inlining, unrolling, functionalization.
//!
//! [`register`] adds `cse`, `constant-propagation`, `constant-pooling`, `fold-batch-norm`, `inline-if`,
//! `loop-unroll`, `remove-noop-views`, `functionalize`, `test-alias-analysis`, `widen-half-products`, and the tools'
//! `canonicalize` (the pass crate's pass, registered with the prim and aten folders and the
//! patterns of [`canon`]; registries built on `pass::register_builtin_passes` have no other). `dce` stays the pass crate's: it erases exactly the unused ops that are
//! `PURE`, and every aten op whose schema writes an argument is registered without `PURE`
//! ([`alias::has_side_effects`] states the rule; a test checks it for every op).

pub mod alias;
pub mod canon;
pub mod control;
pub mod cse;
pub mod fold_bn;
pub mod functionalize;
pub mod pooling;
pub mod test_alias;
pub mod widen_half;

pub use alias::{AliasDb, MemLoc, MemSet};

use ir::{Context, Diagnostic, Module, OpId};
use pass::{AnalysisManager, Anchor, GreedyConfig, LogLevel, Pass, PassInfo, PassOptions, PassRegistry, PassResult, RewriteSet};
use std::sync::Arc;

/// A function pass given by a name, a description and a body.
struct FuncPass {
    name: &'static str,
    description: &'static str,
    options: String,
    body: Box<dyn FnMut(&Context, &mut Module, OpId, &mut AnalysisManager) -> Result<usize, Diagnostic>>,
}

impl Pass for FuncPass {
    fn name(&self) -> &str {
        self.name
    }

    fn description(&self) -> &str {
        self.description
    }

    fn anchor(&self) -> Anchor {
        Anchor::func()
    }

    fn option_text(&self) -> String {
        self.options.clone()
    }

    fn run(&mut self, ctx: &Context, m: &mut Module, op: OpId, am: &mut AnalysisManager) -> Result<PassResult, Diagnostic> {
        let n = (self.body)(ctx, m, op, am)?;
        pass::log!(am, LogLevel::Dump, "{} change(s)", n);
        Ok(PassResult::from_changed(n > 0))
    }
}

/// Applies a rewrite set greedily on the anchor op (`constant-propagation`, `remove-noop-views`).
struct GreedyPass {
    name: &'static str,
    description: &'static str,
    options: String,
    set: Arc<RewriteSet>,
    config: GreedyConfig,
}

impl Pass for GreedyPass {
    fn name(&self) -> &str {
        self.name
    }

    fn description(&self) -> &str {
        self.description
    }

    fn option_text(&self) -> String {
        self.options.clone()
    }

    fn run(&mut self, ctx: &Context, m: &mut Module, op: OpId, am: &mut AnalysisManager) -> Result<PassResult, Diagnostic> {
        let mut config = self.config.clone();
        config.max_rewrites = am.rewrite_budget();
        let r = pass::apply_patterns_greedily(ctx, m, op, &self.set, &config)?;
        am.record_rewrites(r.rewrites);
        pass::log!(am, LogLevel::Dump, "{} rewrite(s) in {} iteration(s)", r.rewrites, r.iterations);
        Ok(PassResult::from_changed(r.changed))
    }
}

/// The pass crate's `canonicalize` with this crate's rewrites, run with the memo of effect-free
/// functions ([`canon::with_effect_memo`]).
struct Canonicalize(pass::Canonicalize);

impl Pass for Canonicalize {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn description(&self) -> &str {
        self.0.description()
    }

    fn anchor(&self) -> pass::Anchor {
        self.0.anchor()
    }

    fn option_text(&self) -> String {
        self.0.option_text()
    }

    fn run(&mut self, ctx: &Context, m: &mut Module, op: OpId, am: &mut AnalysisManager) -> Result<PassResult, Diagnostic> {
        canon::with_effect_memo(|| self.0.run(ctx, m, op, am))
    }
}

fn func_pass(
    name: &'static str,
    description: &'static str,
    options: String,
    body: impl FnMut(&Context, &mut Module, OpId, &mut AnalysisManager) -> Result<usize, Diagnostic> + 'static,
) -> Box<dyn Pass> {
    Box::new(FuncPass { name, description, options, body: Box::new(body) })
}

/// The size limit of tensor folds, from a pass's `max-elements` option.
fn max_elements(o: &PassOptions) -> Result<usize, String> {
    usize::try_from(o.get_int("max-elements").unwrap_or(dialect_aten::fold::DEFAULT_MAX_ELEMENTS as i64))
        .map_err(|_| "max-elements must not be negative".to_string())
}

/// The canonicalization set with the default tensor size limit.
pub fn rewrite_set() -> RewriteSet {
    canon::canonicalize_set(dialect_aten::fold::DEFAULT_MAX_ELEMENTS)
}

/// The pass infos of this module.
pub fn pass_infos() -> Vec<PassInfo> {
    const CSE: &str = "Eliminate common subexpressions, never across a write that may change what they read";
    const POOL: &str = "Deduplicate prim.Constant ops and hoist them to the function entry";
    const INLINE_IF: &str = "Inline prim.If ops whose condition is a constant";
    const UNROLL: &str = "Fully unroll prim.Loop ops with a small constant trip count";
    const FUNC: &str = "Replace in-place and out= ops by functional ones, returning mutated arguments";
    const PROP: &str = "Fold prim and aten ops with constant operands (small tensors included)";
    const NOOP: &str = "Remove views that do not change their input (same-shape view/expand/reshape, identity permute, alias)";
    const FOLD_BN: &str = "Fold inference batch norms of convolution results into the convolutions' weights and biases";
    const TEST_ALIAS: &str = "Print the alias analysis of each function (a test aid)";
    const WIDEN_HALF: &str = "Run f16/bf16 convolutions and matrix products in f32 between explicit casts (weights widened once)";
    vec![
        PassInfo::new("cse", CSE, |_| {
            Ok(func_pass("cse", CSE, String::new(), |ctx, m, op, am| cse::run_cse(ctx, m, op, am)))
        })
        .anchor(Anchor::func()),
        PassInfo::new("constant-pooling", POOL, |_| {
            Ok(func_pass("constant-pooling", POOL, String::new(), |ctx, m, op, am| pooling::run_pooling(ctx, m, op, am)))
        })
        .anchor(Anchor::func()),
        PassInfo::new("fold-batch-norm", FOLD_BN, |_| {
            Ok(func_pass("fold-batch-norm", FOLD_BN, String::new(), |ctx, m, op, am| fold_bn::run_fold_bn(ctx, m, op, am)))
        })
        .anchor(Anchor::func()),
        PassInfo::new("widen-half-products", WIDEN_HALF, |_| {
            Ok(func_pass("widen-half-products", WIDEN_HALF, String::new(), |ctx, m, op, am| widen_half::run_widen_half(ctx, m, op, am)))
        })
        .anchor(Anchor::func()),
        PassInfo::new("inline-if", INLINE_IF, |_| {
            Ok(func_pass("inline-if", INLINE_IF, String::new(), |_, m, op, am| control::run_inline_if(m, op, am)))
        })
        .anchor(Anchor::func()),
        PassInfo::new("loop-unroll", UNROLL, |o| {
            let max_trip_count = o.get_int("max-trip-count").unwrap_or(8);
            let max_unrolled_ops = usize::try_from(o.get_int("max-unrolled-ops").unwrap_or(512))
                .map_err(|_| "max-unrolled-ops must not be negative".to_string())?;
            let config = control::UnrollConfig { max_trip_count, max_unrolled_ops };
            Ok(func_pass("loop-unroll", UNROLL, o.to_option_text(), move |ctx, m, op, am| {
                control::run_unroll(ctx, m, op, config, am)
            }))
        })
        .anchor(Anchor::func())
        .options(
            PassOptions::new()
                .int("max-trip-count", 8, "Unroll loops of at most this many iterations")
                .int("max-unrolled-ops", 512, "Unroll only when the copies hold at most this many ops"),
        ),
        PassInfo::new("functionalize", FUNC, |_| {
            Ok(func_pass("functionalize", FUNC, String::new(), |ctx, m, op, am| {
                functionalize::run_functionalize(ctx, m, op, am)
            }))
        })
        .anchor(Anchor::func()),
        PassInfo::new("constant-propagation", PROP, |o| {
            let mut set = RewriteSet::new();
            canon::add_folders(&mut set, max_elements(o)?);
            let config = GreedyConfig { max_iterations: 10, max_rewrites: None, fold: true, remove_dead: true };
            Ok(Box::new(GreedyPass {
                name: "constant-propagation",
                description: PROP,
                options: o.to_option_text(),
                set: Arc::new(set),
                config,
            }) as Box<dyn Pass>)
        })
        .options(PassOptions::new().int(
            "max-elements",
            dialect_aten::fold::DEFAULT_MAX_ELEMENTS as i64,
            "Fold tensor ops only when the result has at most this many elements",
        )),
        PassInfo::new("remove-noop-views", NOOP, |_| {
            let mut set = RewriteSet::new();
            canon::noop_view_patterns(&mut set);
            let config = GreedyConfig { max_iterations: 10, max_rewrites: None, fold: false, remove_dead: false };
            Ok(Box::new(GreedyPass { name: "remove-noop-views", description: NOOP, options: String::new(), set: Arc::new(set), config })
                as Box<dyn Pass>)
        }),
        PassInfo::new("test-alias-analysis", TEST_ALIAS, |_| {
            Ok(func_pass("test-alias-analysis", TEST_ALIAS, String::new(), |ctx, m, op, am| {
                test_alias::run_test_alias(ctx, m, op, am)
            }))
        })
        .anchor(Anchor::func()),
        pass::Canonicalize::info(
            pass::Canonicalize::options().int(
                "max-elements",
                dialect_aten::fold::DEFAULT_MAX_ELEMENTS as i64,
                "Fold tensor ops only when the result has at most this many elements",
            ),
            |o| {
                let set = canon::shared_canonicalize_set(max_elements(o)?);
                Ok(Box::new(Canonicalize(pass::Canonicalize::with_options(set, o)?)) as Box<dyn Pass>)
            },
        ),
    ]
}

/// Registers the optimization passes, `canonicalize` with this crate's rewrites among them,
/// skipping names already taken.
pub fn register(r: &mut PassRegistry) {
    for info in pass_infos() {
        if r.get(&info.name).is_none() {
            // Names are valid and were just checked to be free.
            let _ = r.register(info);
        }
    }
}
