//! Shape and dtype propagation, decompositions, and the lowerings to the Edge and Backend dialects.
//!
//! Passes: `shape-propagation` ([`shape_prop`]), `decompose` ([`decompose`]), `lower-to-edge`
//! and `verify-edge` ([`edge`]), `fuse-attention` ([`attention`]), `fuse-epilogue` ([`epilogue`]), `lower-to-backend` ([`backend`]), and `default-pipeline`
//! (`{opt-level=0|2}`), which runs [`pipeline_text`]. The stages follow EXIR: ATen as exported
//! → decomposed core ATen with known types → Edge (explicit dtypes) → backend partitions.

pub mod attention;
pub mod backend;
pub mod decompose;
pub mod edge;
pub mod epilogue;
mod kernel;
pub mod rewrite;
pub mod shape_prop;

pub use attention::{FuseAttention, fuse_attention};
pub use backend::{Backend, InterpreterBackend, LowerToBackend, OpListBackend, partition};
pub use decompose::{DecompFn, Decompose, DecompositionTable, decompose as decompose_ops};
pub use edge::{LowerToEdge, VerifyEdge, lower_to_edge, verify_edge};
pub use epilogue::{FuseEpilogue, fuse_epilogue};
pub use rewrite::{Arg, OpBuilder, Size};
pub use shape_prop::{ShapePropagation, propagate_shapes};

use ir::{Context, Diagnostic, Module, OpId};
use pass::{AnalysisManager, Pass, PassInfo, PassManager, PassManagerConfig, PassOptions, PassRegistry, PassResult};

/// The optimization passes `-O2` runs when they are registered, in order.
const O2_OPTIMIZATIONS: &[&str] = &["cse", "canonicalize", "constant-pooling"];

/// The pipeline of an optimization level, for the passes registered in `registry`.
///
/// - `-O0`: `functionalize` (when registered), `shape-propagation`, `decompose`,
///   `shape-propagation`, `lower-to-edge{strict=false}`: what the interpreter needs — no
///   in-place ops, core ops, explicit casts; ops outside the Edge set stay aten ops, which the
///   interpreter also runs.
/// - `-O2`: the same with a strict Edge lowering, the optimization passes (`cse`,
///   `canonicalize`, `constant-pooling`, each when registered) before and after it, `dce`,
///   `fuse-attention` (decomposed attention into one `backend.kernel`), `fuse-epilogue` (a
///   linear layer and the residual add or activation after it into one `backend.kernel`), `fuse-elementwise` (registered by the `egraph` crate: Edge's elementwise ops carry the
///   same traits as their aten counterparts, so groups form over Edge ops), then
///   `lower-to-backend`, which keeps each `prim.FusionGroup` whole inside its partition.
///
/// A pass that is not registered is left out; `skipped` receives its name.
pub fn pipeline_text_for(registry: &PassRegistry, opt_level: u32, skipped: &mut Vec<String>) -> String {
    let mut passes: Vec<String> = Vec::new();
    let mut want = |name: &str, text: &str, passes: &mut Vec<String>| {
        if registry.get(name).is_some() {
            passes.push(text.to_string());
        } else if !skipped.iter().any(|s| s == name) {
            skipped.push(name.to_string());
        }
    };
    want("functionalize", "functionalize", &mut passes);
    want("shape-propagation", "shape-propagation", &mut passes);
    want("decompose", "decompose", &mut passes);
    want("shape-propagation", "shape-propagation", &mut passes);
    if opt_level == 0 {
        want("lower-to-edge", "lower-to-edge{strict=false}", &mut passes);
    } else {
        for p in O2_OPTIMIZATIONS {
            want(p, p, &mut passes);
        }
        want("lower-to-edge", "lower-to-edge", &mut passes);
        for p in O2_OPTIMIZATIONS {
            want(p, p, &mut passes);
        }
        want("dce", "dce", &mut passes);
        // Attention is matched on the settled Edge ops, before elementwise fusion would take
        // its scale and mask into a fusion group.
        want("fuse-attention", "fuse-attention", &mut passes);
        // Likewise a linear layer's consumer (a residual add, an activation), which the
        // product then applies to its tiles.
        want("fuse-epilogue", "fuse-epilogue", &mut passes);
        // Fusion runs on Edge, after the optimizations have settled the ops and before
        // partitioning, which moves each group whole into a partition.
        want("fuse-elementwise", "fuse-elementwise", &mut passes);
        want("lower-to-backend", "lower-to-backend", &mut passes);
    }
    format!("builtin.module({})", passes.join(","))
}

/// The pipeline of an optimization level over every pass this crate and the pass crate register
/// (what `dialect-run -O<n>` and `default-pipeline` run).
pub fn pipeline_text(opt_level: u32) -> String {
    pipeline_text_for(&crate::pass_registry(), opt_level, &mut Vec::new())
}

/// The `default-pipeline{opt-level=N}` pass: runs [`pipeline_text`] as a nested pipeline.
pub struct DefaultPipeline {
    opt_level: u32,
    options: String,
}

impl Pass for DefaultPipeline {
    fn name(&self) -> &str {
        "default-pipeline"
    }

    fn description(&self) -> &str {
        "Run the default lowering pipeline of an optimization level (0 or 2)"
    }

    fn option_text(&self) -> String {
        self.options.clone()
    }

    fn anchor(&self) -> pass::Anchor {
        pass::Anchor::module()
    }

    fn run(&mut self, ctx: &Context, m: &mut Module, op: OpId, am: &mut AnalysisManager) -> Result<PassResult, Diagnostic> {
        let registry = crate::pass_registry();
        let mut skipped = Vec::new();
        let text = pipeline_text_for(&registry, self.opt_level, &mut skipped);
        for s in &skipped {
            pass::log!(am, pass::LogLevel::Dump, "pass '{s}' is not registered; skipped");
        }
        pass::log!(am, pass::LogLevel::Dump, "running {text}");
        let mut pm = PassManager::parse(&registry, &text, PassManagerConfig::default())
            .map_err(|e| Diagnostic::error(m.loc(op).clone(), format!("invalid default pipeline '{text}': {}", e.message)))?;
        let mut sink = Vec::new();
        let changed = pm.run(ctx, m, &mut sink)?;
        am.record_nested_timing(pm.timing());
        Ok(PassResult::from_changed(changed))
    }
}

/// Registers the lowering passes.
pub fn register(r: &mut PassRegistry) {
    let infos = [
        PassInfo::new(
            "shape-propagation",
            "Refine tensor result types (dtype, shape, symbolic dims) with the aten inference functions",
            |o| Ok(Box::new(ShapePropagation::with_options(o)) as Box<dyn Pass>),
        )
        .options(ShapePropagation::options()),
        PassInfo::new("decompose", "Decompose non-core ATen ops into core ATen through the decomposition table", |o| {
            Ok(Box::new(Decompose::with_options(o)) as Box<dyn Pass>)
        })
        .options(Decompose::options()),
        PassInfo::new("lower-to-edge", "Lower core ATen ops to the Edge dialect, inserting explicit casts for type promotion", |o| {
            Ok(Box::new(LowerToEdge::with_options(o)) as Box<dyn Pass>)
        })
        .options(LowerToEdge::options()),
        PassInfo::new(
            "fuse-attention",
            "Replace decomposed attention (bmm, scale, mask, softmax, bmm) by a backend.kernel {kernel = \"attention\"}",
            |_| Ok(Box::new(FuseAttention) as Box<dyn Pass>),
        ),
        PassInfo::new(
            "fuse-epilogue",
            "Fuse addmm with the residual add, gelu or relu that consumes it into a backend.kernel {kernel = \"linear\"}",
            |_| Ok(Box::new(FuseEpilogue) as Box<dyn Pass>),
        ),
        PassInfo::new("verify-edge", "Check that the program is in the Edge dialect", |_| Ok(Box::new(VerifyEdge) as Box<dyn Pass>)),
        PassInfo::new("lower-to-backend", "Partition function bodies among backends into backend.partition ops", |o| {
            Ok(Box::new(LowerToBackend::with_options(o)?) as Box<dyn Pass>)
        })
        .options(LowerToBackend::options()),
        PassInfo::new("default-pipeline", "Run the default lowering pipeline of an optimization level (0 or 2)", |o| {
            let level = o.get_int("opt-level").unwrap_or(2);
            let opt_level = match level {
                0 | 1 => 0,
                2 | 3 => 2,
                other => return Err(format!("opt-level must be 0 or 2, got {other}")),
            };
            Ok(Box::new(DefaultPipeline { opt_level, options: o.to_option_text() }) as Box<dyn Pass>)
        })
        .anchor(pass::Anchor::module())
        .options(PassOptions::new().int("opt-level", 2, "0: decompose and lower to Edge; 2: also optimize and partition")),
    ];
    for info in infos {
        if r.get(&info.name).is_none() {
            // Names are valid and were just checked to be free.
            let _ = r.register(info);
        }
    }
}
