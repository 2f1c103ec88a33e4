//! The generic passes of this crate (`dce`, `canonicalize`, `print-ir`, `verify`) and the
//! default registry holding them.

use crate::analysis::AnalysisManager;
use crate::env::LogLevel;
use crate::options::PassOptions;
use crate::pass::{Pass, PassResult};
use crate::registry::{PassInfo, PassRegistry};
use crate::rewrite::{CanonicalizationPatterns, GreedyConfig, RewriteSet, apply_patterns_greedily, is_trivially_dead};
use ir::{Context, Diagnostic, Module, OpId, PrintOptions, WalkOrder};
use std::sync::Arc;

/// Erases pure ops whose results are unused, to a fixed point; never ops with side effects.
#[derive(Default)]
pub struct Dce;

impl Pass for Dce {
    fn name(&self) -> &str {
        "dce"
    }

    fn description(&self) -> &str {
        "Erase pure operations whose results are unused"
    }

    fn run(
        &mut self,
        ctx: &Context,
        m: &mut Module,
        op: OpId,
        am: &mut AnalysisManager,
    ) -> Result<PassResult, Diagnostic> {
        let mut worklist = Vec::new();
        // In post-order a block's later ops come after its earlier ones, so popping from the back
        // visits users before the ops they use. The anchor (last) is not a candidate.
        m.walk(op, WalkOrder::PostOrder, &mut |o| worklist.push(o));
        worklist.pop();
        let mut erased = 0usize;
        while let Some(o) = worklist.pop() {
            if !m.contains_op(o) || !is_trivially_dead(ctx, m, o) {
                continue;
            }
            if !am.may_rewrite() {
                break;
            }
            crate::log!(am, LogLevel::Update, "erasing '{}'", m.op_name(o));
            let defs: Vec<OpId> = m
                .operands(o)
                .iter()
                .filter_map(|&v| m.defining_op(v))
                .collect();
            m.erase_op(o)
                .map_err(|e| Diagnostic::error(m.loc(o).clone(), e.to_string()))?;
            erased += 1;
            worklist.extend(defs);
        }
        crate::log!(am, LogLevel::Dump, "erased {erased} op(s)");
        Ok(PassResult::from_changed(erased > 0))
    }
}

/// Applies folders and canonicalization patterns greedily, and removes dead pure ops.
pub struct Canonicalize {
    rewrites: Arc<RewriteSet>,
    /// `rewrites` with the patterns attached in the context of the last run (keyed by the
    /// context's address), built once per context.
    merged: Option<(usize, Arc<RewriteSet>)>,
    config: GreedyConfig,
    test_convergence: bool,
    options: String,
}

impl Canonicalize {
    /// The pass's name.
    pub const NAME: &str = "canonicalize";

    /// The pass's description.
    pub const DESCRIPTION: &str = "Apply folders and canonicalization patterns, and remove dead pure operations";

    /// The registration of `canonicalize`, defined here once: `options` are [`Canonicalize::options`]
    /// and whatever the owner of the patterns adds, and `make` builds the pass from their values.
    pub fn info(
        options: PassOptions,
        make: impl Fn(&PassOptions) -> Result<Box<dyn Pass>, String> + Send + Sync + 'static,
    ) -> PassInfo {
        PassInfo::new(Canonicalize::NAME, Canonicalize::DESCRIPTION, make).options(options)
    }

    pub fn new(rewrites: Arc<RewriteSet>) -> Canonicalize {
        Canonicalize {
            rewrites,
            merged: None,
            config: GreedyConfig::default(),
            test_convergence: false,
            options: String::new(),
        }
    }

    /// The options `canonicalize` declares.
    pub fn options() -> PassOptions {
        PassOptions::new()
            .int(
                "max-iterations",
                10,
                "Passes over the IR before giving up on a fixed point",
            )
            .bool("fold", true, "Apply fold hooks")
            .bool(
                "test-convergence",
                false,
                "Fail if no fixed point is reached",
            )
    }

    pub fn with_options(
        rewrites: Arc<RewriteSet>,
        opts: &PassOptions,
    ) -> Result<Canonicalize, String> {
        let mut c = Canonicalize::new(rewrites);
        let iters = opts.get_int("max-iterations").unwrap_or(10);
        c.config.max_iterations = usize::try_from(iters)
            .ok()
            .filter(|&n| n > 0)
            .ok_or("max-iterations must be positive")?;
        c.config.fold = opts.get_bool("fold").unwrap_or(true);
        c.test_convergence = opts.get_bool("test-convergence").unwrap_or(false);
        c.options = opts.to_option_text();
        Ok(c)
    }
}

impl Pass for Canonicalize {
    fn name(&self) -> &str {
        Canonicalize::NAME
    }

    fn description(&self) -> &str {
        Canonicalize::DESCRIPTION
    }

    fn option_text(&self) -> String {
        self.options.clone()
    }

    fn run(
        &mut self,
        ctx: &Context,
        m: &mut Module,
        op: OpId,
        am: &mut AnalysisManager,
    ) -> Result<PassResult, Diagnostic> {
        let mut config = self.config.clone();
        config.max_rewrites = am.rewrite_budget();
        let key = ctx as *const Context as usize;
        let set = match &self.merged {
            Some((k, set)) if *k == key => set.clone(),
            _ => {
                let set = CanonicalizationPatterns::merged(ctx, &self.rewrites);
                self.merged = Some((key, set.clone()));
                set
            }
        };
        let r = apply_patterns_greedily(ctx, m, op, &set, &config)?;
        am.record_rewrites(r.rewrites);
        am.add_statistic("num-rewrites", "Patterns and folders applied", r.rewrites as u64);
        crate::log!(
            am,
            LogLevel::Dump,
            "{} rewrite(s) in {} iteration(s), converged: {}",
            r.rewrites,
            r.iterations,
            r.converged
        );
        if self.test_convergence
            && !r.converged
            && config.max_rewrites.is_none_or(|max| r.rewrites < max)
        {
            return Err(Diagnostic::error(
                m.loc(op).clone(),
                format!(
                    "canonicalization did not converge after {} iterations",
                    r.iterations
                ),
            ));
        }
        Ok(PassResult::from_changed(r.changed))
    }
}

/// Prints the anchor op (or the module) to the instrumentation output.
pub struct PrintIr {
    label: String,
    module: bool,
    options: String,
}

impl PrintIr {
    pub fn options() -> PassOptions {
        PassOptions::new()
            .string("label", "", "Text printed in the header line")
            .bool(
                "module",
                false,
                "Print the whole module rather than the anchor op",
            )
    }

    pub fn with_options(opts: &PassOptions) -> PrintIr {
        PrintIr {
            label: opts.get_string("label").unwrap_or("").to_string(),
            module: opts.get_bool("module").unwrap_or(false),
            options: opts.to_option_text(),
        }
    }
}

impl Pass for PrintIr {
    fn name(&self) -> &str {
        "print-ir"
    }

    fn description(&self) -> &str {
        "Print the IR to the instrumentation output"
    }

    fn option_text(&self) -> String {
        self.options.clone()
    }

    fn run(
        &mut self,
        ctx: &Context,
        m: &mut Module,
        op: OpId,
        am: &mut AnalysisManager,
    ) -> Result<PassResult, Diagnostic> {
        let text = if self.module {
            ir::print_module(ctx, m, PrintOptions::default())
        } else {
            ir::print_op(ctx, m, op, PrintOptions::default())
        };
        let header = if self.label.is_empty() {
            "// -----// IR Dump //----- //".to_string()
        } else {
            format!("// -----// IR Dump {} //----- //", self.label)
        };
        let out = am.output();
        out.push_str(&header);
        out.push('\n');
        out.push_str(&text);
        Ok(PassResult::unchanged())
    }
}

/// Verifies the anchor op and everything in it.
#[derive(Default)]
pub struct Verify;

impl Pass for Verify {
    fn name(&self) -> &str {
        "verify"
    }

    fn description(&self) -> &str {
        "Verify the IR"
    }

    fn run(
        &mut self,
        ctx: &Context,
        m: &mut Module,
        op: OpId,
        _: &mut AnalysisManager,
    ) -> Result<PassResult, Diagnostic> {
        ir::verify_op(ctx, m, op)?;
        Ok(PassResult::unchanged())
    }
}

/// A registry with `dce`, `canonicalize` (with no patterns or folders), `print-ir` and `verify`:
/// the pass manager's passes for a program with no rewrite patterns.
pub fn default_registry() -> PassRegistry {
    registry_with_rewrites(Arc::new(RewriteSet::new()))
}

/// [`default_registry`] with `canonicalize` applying `rewrites`.
pub fn registry_with_rewrites(rewrites: Arc<RewriteSet>) -> PassRegistry {
    let mut r = PassRegistry::new();
    register_builtin_passes(&mut r);
    // The name is valid and free in a registry holding only the builtin passes.
    let _ = r.register(Canonicalize::info(Canonicalize::options(), move |o| {
        Ok(Box::new(Canonicalize::with_options(rewrites.clone(), o)?) as Box<dyn Pass>)
    }));
    r
}

/// Registers this crate's passes other than `canonicalize` (`dce`, `print-ir`, `verify`) into
/// `r`, skipping names already taken: `canonicalize` is registered by whoever owns the
/// rewrite patterns it applies ([`Canonicalize::info`]).
pub fn register_builtin_passes(r: &mut PassRegistry) {
    let infos =
        [
            PassInfo::new(
                "dce",
                "Erase pure operations whose results are unused",
                |_| Ok(Box::new(Dce) as Box<dyn Pass>),
            ),
            PassInfo::new(
                "print-ir",
                "Print the IR to the instrumentation output",
                |o| Ok(Box::new(PrintIr::with_options(o)) as Box<dyn Pass>),
            )
            .options(PrintIr::options()),
            PassInfo::new("verify", "Verify the IR", |_| {
                Ok(Box::new(Verify) as Box<dyn Pass>)
            }),
        ];
    for info in infos {
        if r.get(&info.name).is_none() {
            // The names are valid and were just checked to be free.
            let _ = r.register(info);
        }
    }
}
