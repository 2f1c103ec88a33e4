//! Pass manager, pipelines, analyses and instrumentation, with the greedy pattern driver and
//! dialect conversion.
//!
//! A [`Pipeline`] is parsed from text against a [`PassRegistry`]; a [`PassManager`] builds its
//! passes and runs them over a module, nested pipelines on each matching op, verifying after
//! each pass and reporting through the instrumentation of [`PassManagerConfig`]. Passes get
//! cached analyses, logging and rewrite limits through the [`AnalysisManager`]. Patterns are
//! applied with [`apply_patterns_greedily`]; dialects are lowered with
//! [`apply_partial_conversion`] and [`apply_full_conversion`]. Patterns may be written as
//! declarative rules ([`drr`]); a dialect attaches its canonicalization patterns to its ops
//! ([`CanonicalizationPatterns`]) and `canonicalize` applies them. See `docs/passes.md`.

mod analysis;
mod conversion;
pub mod drr;
mod env;
mod instrument;
mod manager;
mod options;
mod pass;
mod passes;
mod pipeline;
mod registry;
mod rewrite;

pub use analysis::{Analysis, AnalysisManager, PreservedAnalyses};
pub use conversion::{
    ConversionPattern, ConversionPatternSet, ConversionResult, ConversionRewriter,
    ConversionTarget, LegalityFn, MaterializationFn, OpLegality, TypeConversionFn, TypeConverter,
    apply_full_conversion, apply_partial_conversion,
};
pub use env::{LOG_ENV, LogConfig, LogLevel, OPT_LIMIT_ENV, OptLimits};
pub use instrument::{Reproducer, Statistic, Statistics, Timing};
pub use manager::{OpPassManager, PassManager, PassManagerConfig};
pub use options::{OptionError, OptionKind, OptionSpec, OptionValue, PassOptions};
pub use pass::{Anchor, Pass, PassResult};
pub use passes::{
    Canonicalize, Dce, PrintIr, Verify, default_registry, register_builtin_passes,
    registry_with_rewrites,
};
pub use pipeline::{Pipeline, PipelineElement, PipelineError};
pub use registry::{PassCtor, PassInfo, PassRegistry};
pub use rewrite::{
    CanonicalizationPatterns, FoldFn, FoldResult, GreedyConfig, GreedyResult, MaterializeFn, PatternRewriter, RewritePattern,
    RewriteSet, apply_patterns_greedily, is_trivially_dead,
};
