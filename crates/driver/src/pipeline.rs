//! The pass pipelines of the optimization levels, defined here because only the tools see every
//! pass (the `egraph` crate's `fuse-elementwise` among them), and the `default-pipeline` pass
//! that runs them: `default-pipeline{opt-level=N}` runs exactly what `dialect-run -O<N>` runs.

use ir::{Context, Diagnostic, Module, OpId};
use pass::{AnalysisManager, Pass, PassInfo, PassManager, PassManagerConfig, PassOptions, PassRegistry, PassResult};

/// The optimization passes `-O2` runs before and after the lowering to Edge, in order.
const OPTIMIZATIONS: [&str; 3] = ["cse", "canonicalize", "constant-pooling"];

/// The highest optimization level; every level from 1 up runs the optimizing pipeline.
pub const MAX_OPT_LEVEL: u32 = 3;

/// The pass pipeline of optimization level `level`.
///
/// - `0`: `functionalize`, `shape-propagation`, `decompose{best-effort=true}`,
///   `shape-propagation`, `lower-to-edge{strict=false}`: what the interpreter needs — no
///   in-place ops, core ops, explicit casts. An op whose decomposition fails and ops outside
///   the Edge set stay aten ops, which the interpreter runs (or the runtime's composite
///   fallback rewrites), so no level fails on a program that runs as imported.
/// - `1` and up: the same with `fold-batch-norm` (an inference batch norm of a convolution
///   folded into its weight and bias) and the optimization passes (`cse`,
///   `canonicalize`, `constant-pooling`) before and after it (with `inline-if` and
///   `shape-propagation` before it), `dce`, `fuse-attention`
///   (decomposed attention into one `backend.kernel`), `fuse-epilogue` (a linear layer or a
///   convolution and the residual add or activation after it into one `backend.kernel`), `fuse-elementwise`
///   (Edge's elementwise ops carry the same traits as their aten counterparts, so groups form
///   over Edge ops), then `lower-to-backend`, which keeps each `prim.FusionGroup` whole inside
///   its partition.
///
/// `dialect-run -O0` runs no pipeline at all: the program as imported.
pub fn pipeline_for_level(level: u32) -> String {
    let (to_edge, after) = pipeline_stages(level);
    let passes: Vec<&str> = to_edge.into_iter().chain(after).collect();
    format!("builtin.module({})", passes.join(","))
}

/// The passes of [`pipeline_for_level`]`(level)` in two stages: up to and including the lowering
/// to Edge (and the optimizations that settle it), and the rest (fusion and partitioning into
/// backend kernels; empty at level 0). Tools that show a program "at Edge" stop between them.
pub fn pipeline_stages(level: u32) -> (Vec<&'static str>, Vec<&'static str>) {
    let mut passes: Vec<&'static str> = vec!["functionalize", "shape-propagation", "decompose{best-effort=true}", "shape-propagation"];
    let mut after = Vec::new();
    if level == 0 {
        passes.push("lower-to-edge{strict=false}");
    } else {
        // An inference batch norm after a convolution becomes part of its weight and bias
        // while both are still aten ops (the runtime then computes them once, from the frozen
        // parameters).
        passes.push("fold-batch-norm");
        // Half-precision convolutions and products run in f32 between casts: the casts of
        // weights are then computed once, and the f32 kernels (prepacked) run the products.
        passes.push("widen-half-products");
        passes.extend(OPTIMIZATIONS);
        // A branch whose condition canonicalization made constant (an `is None` the input types
        // decide) is inlined, and what it yields typed, before Edge needs every dtype.
        passes.push("inline-if");
        passes.push("shape-propagation");
        passes.push("lower-to-edge{strict=false}");
        passes.extend(OPTIMIZATIONS);
        after.push("dce");
        // Attention is matched on the settled Edge ops, before elementwise fusion would take
        // its scale and mask into a fusion group.
        after.push("fuse-attention");
        // Likewise a linear layer's or a convolution's consumers (a residual add, an
        // activation), which the product then applies to its tiles.
        after.push("fuse-epilogue");
        // Fusion runs on Edge, after the optimizations have settled the ops and before
        // partitioning, which moves each group whole into a partition.
        after.push("fuse-elementwise");
        after.push("lower-to-backend");
    }
    (passes, after)
}

/// The `default-pipeline{opt-level=N}` pass: runs [`pipeline_for_level`]`(N)` as a nested
/// pipeline over the tools' passes.
pub struct DefaultPipeline {
    opt_level: u32,
    options: String,
}

const DESCRIPTION: &str = "Run the pass pipeline of an optimization level (what dialect-run -O<N> runs)";

impl Pass for DefaultPipeline {
    fn name(&self) -> &str {
        "default-pipeline"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn option_text(&self) -> String {
        self.options.clone()
    }

    fn anchor(&self) -> pass::Anchor {
        pass::Anchor::module()
    }

    fn run(&mut self, ctx: &Context, m: &mut Module, op: OpId, am: &mut AnalysisManager) -> Result<PassResult, Diagnostic> {
        let registry = crate::default_pass_registry();
        let text = pipeline_for_level(self.opt_level);
        pass::log!(am, pass::LogLevel::Dump, "running {text}");
        let mut pm = PassManager::parse(&registry, &text, PassManagerConfig::default())
            .map_err(|e| Diagnostic::error(m.loc(op).clone(), format!("invalid default pipeline '{text}': {}", e.message)))?;
        let mut sink = Vec::new();
        let changed = pm.run(ctx, m, &mut sink)?;
        am.record_nested_timing(pm.timing());
        Ok(PassResult::from_changed(changed))
    }
}

/// Registers `default-pipeline`.
pub fn register(r: &mut PassRegistry) {
    let info = PassInfo::new("default-pipeline", DESCRIPTION, |o| {
        let level = o.get_int("opt-level").unwrap_or(2);
        let opt_level = u32::try_from(level)
            .ok()
            .filter(|&l| l <= MAX_OPT_LEVEL)
            .ok_or_else(|| format!("opt-level must be between 0 and {MAX_OPT_LEVEL}, got {level}"))?;
        Ok(Box::new(DefaultPipeline { opt_level, options: o.to_option_text() }) as Box<dyn Pass>)
    })
    .anchor(pass::Anchor::module())
    .options(PassOptions::new().int("opt-level", 2, "0: decompose and lower to Edge; 1 and up: also optimize, fuse and partition"));
    if r.get(&info.name).is_none() {
        // The name is valid and was just checked to be free.
        let _ = r.register(info);
    }
}
