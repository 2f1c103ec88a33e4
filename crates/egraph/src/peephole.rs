//! The `egraph-peephole` pass: equality saturation over every run of pure ops, with the rule
//! sets chosen by its options, then extraction of the cheapest equivalent program.

use crate::engine::{self, EngineConfig, NodeLimit, RunReport};
use crate::extract::Extractor;
use crate::lang::Node;
use crate::analysis::Facts;
use crate::rules::RuleLibrary;
use egg::Rewrite;
use pass::{AnalysisManager, LogLevel, Pass, PassInfo, PassOptions, PassRegistry, PassResult};
use ir::{Context, Diagnostic, Module, OpId, WalkOrder};
use std::sync::Arc;
use std::time::Duration;

pub const NAME: &str = "egraph-peephole";
pub const DESCRIPTION: &str = "Rewrite pure operations by equality saturation and extract the cheapest equivalent";

/// The pass, holding its compiled rules.
pub struct Peephole {
    rules: Vec<Rewrite<crate::lang::Node, Facts>>,
    config: EngineConfig,
    options: String,
}

impl Peephole {
    /// The options `egraph-peephole` declares.
    pub fn options() -> PassOptions {
        PassOptions::new()
            .list("rules", &["aten"], "Rule sets: a dialect (its sound sets) or 'dialect.set'")
            .bool("fast-math", false, "Also apply the fast-math sets (reassociation, x*0, x-x, exp(log x), a*b+c as addcmul, ...)")
            .int("iter-limit", 16, "Saturation iterations per run of ops")
            .int(
                "node-limit",
                engine::NODE_LIMIT_FLOOR as i64,
                &format!(
                    "E-nodes per e-graph before saturation stops: by default the larger of this and {} times the e-graph's initial e-nodes; a value given is used as is",
                    engine::NODE_LIMIT_PER_INITIAL
                ),
            )
            .int("time-limit-ms", 1000, "Saturation time per e-graph, in milliseconds")
            .int(
                "window",
                engine::WINDOW as i64,
                "Ops per e-graph: a longer run of pure ops is rewritten in consecutive windows of this many ops, keeping each e-graph cache-sized (0: the whole run in one e-graph)",
            )
            .string("scheduler", "backoff", "Rule scheduler: 'backoff' (bans rules that match too often) or 'simple'")
            .string("extract", "greedy-dag", "Extraction: 'greedy-dag' (shared subterms counted once), 'tree', or 'ilp' (exact; cargo feature 'ilp')")
            .int("ilp-timeout-ms", 1000, "Time the ILP solver may take per run of ops before the greedy DAG is kept")
            .bool("fold", true, "Fold constants in the e-class analysis")
    }

    /// Builds the pass from options over a rule library.
    pub fn with_options(lib: &RuleLibrary, opts: &PassOptions) -> Result<Peephole, String> {
        let positive = |name: &str| -> Result<usize, String> {
            let v = opts.get_int(name).unwrap_or(1);
            usize::try_from(v).ok().filter(|&n| n > 0).ok_or_else(|| format!("{name} must be positive"))
        };
        let fast = opts.get_bool("fast-math").unwrap_or(false);
        let sets: Vec<String> = opts.get_list("rules").map(<[String]>::to_vec).unwrap_or_default();
        let mut names = sets.clone();
        if fast {
            for s in &sets {
                if !s.contains('.') && lib.sets().contains_key(&format!("{s}.fast-math")) {
                    names.push(format!("{s}.fast-math"));
                }
            }
        }
        let specs = lib.select(&names, fast)?;
        let mut rules = Vec::with_capacity(specs.len());
        let mut seen = std::collections::HashSet::new();
        for s in specs {
            if seen.insert(s.name.clone()) {
                rules.push(s.rewrite()?);
            }
        }
        let config = EngineConfig {
            iter_limit: positive("iter-limit")?,
            node_limit: if opts.is_set("node-limit") {
                NodeLimit::Fixed(positive("node-limit")?)
            } else {
                NodeLimit::Scaled { floor: positive("node-limit")?, per_initial: engine::NODE_LIMIT_PER_INITIAL }
            },
            time_limit: Duration::from_millis(positive("time-limit-ms")? as u64),
            backoff: match opts.get_string("scheduler").unwrap_or("backoff") {
                "backoff" => true,
                "simple" => false,
                other => return Err(format!("unknown scheduler '{other}' (known: backoff, simple)")),
            },
            extractor: match opts.get_string("extract").unwrap_or("greedy-dag") {
                "greedy-dag" => Extractor::GreedyDag,
                "tree" => Extractor::Tree,
                "ilp" if crate::extract::HAS_ILP => Extractor::Ilp { timeout: Duration::from_millis(positive("ilp-timeout-ms")? as u64) },
                "ilp" => return Err("extract=ilp needs the egraph crate built with its `ilp` feature".into()),
                other => return Err(format!("unknown extraction '{other}' (known: greedy-dag, tree, ilp)")),
            },
            fold: opts.get_bool("fold").unwrap_or(true),
            window: usize::try_from(opts.get_int("window").unwrap_or(engine::WINDOW as i64)).map_err(|_| "window must not be negative".to_string())?,
            ..EngineConfig::default()
        };
        Ok(Peephole { rules, config, options: opts.to_option_text() })
    }

    /// The compiled rules.
    pub fn rules(&self) -> &[Rewrite<Node, Facts>] {
        &self.rules
    }

    /// Runs the engine on every run of pure ops under `root`; returns the per-run reports.
    pub fn rewrite(&self, ctx: &Context, m: &mut Module, root: OpId, budget: Option<usize>) -> Result<Vec<RunReport>, Diagnostic> {
        let mut config = self.config.clone();
        config.allow_alias = !engine::writes_memory(ctx, m, root);
        config.budget = budget;
        let mut blocks = Vec::new();
        m.walk(root, WalkOrder::PreOrder, &mut |o| {
            for &r in m.regions(o) {
                blocks.extend(m.region_blocks(r).iter().copied());
            }
        });
        let mut reports = Vec::new();
        for b in blocks {
            let func = enclosing_function(m, b);
            for (ops, at) in engine::runs(ctx, m, b, config.window) {
                let mut r = engine::rewrite_run(ctx, m, &ops, at, &self.rules, &config)?;
                r.function = func.clone();
                if let Some(left) = config.budget.as_mut() {
                    *left = left.saturating_sub(r.replaced);
                }
                reports.push(r);
            }
        }
        Ok(reports)
    }
}

impl Pass for Peephole {
    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn option_text(&self) -> String {
        self.options.clone()
    }

    fn run(&mut self, ctx: &Context, m: &mut Module, op: OpId, am: &mut AnalysisManager) -> Result<PassResult, Diagnostic> {
        let reports = self.rewrite(ctx, m, op, am.rewrite_budget())?;
        let mut changed = false;
        for (i, r) in reports.iter().enumerate() {
            changed |= r.replaced > 0;
            am.record_rewrites(r.replaced);
            pass::log!(
                am,
                LogLevel::Dump,
                "@{} run {i}: {} op(s), {} -> {} e-node(s) in {} class(es), {} iteration(s), stop: {}, cost {:.0} ({}), replaced {}, created {}, erased {}; conversion {:.3} ms, saturation {:.3} ms, extraction {:.3} ms",
                r.function, r.ops, r.initial_nodes, r.nodes, r.classes, r.iterations, r.stop, r.cost, r.extraction, r.replaced, r.created, r.erased,
                r.convert.as_secs_f64() * 1e3, r.saturate.as_secs_f64() * 1e3, r.extract.as_secs_f64() * 1e3
            );
            // `--timing` rows: saturation per stop reason (its run count says how many runs of
            // ops stopped that way), and extraction with write-back.
            let why = r.stop.split(" (").next().unwrap_or(&r.stop);
            am.record_time(&format!("saturation ({why})"), r.saturate);
            am.record_time("extraction", r.extract);
            for (rule, n) in &r.applied {
                pass::log!(am, LogLevel::Update, "@{} run {i}: rule '{rule}' applied {n} time(s)", r.function);
            }
        }
        Ok(PassResult::from_changed(changed))
    }
}

/// The name of the function a block belongs to (empty outside functions), for the log.
fn enclosing_function(m: &Module, b: ir::BlockId) -> String {
    let mut op = m.block_parent_op(b);
    while let Some(o) = op {
        if m.op_name(o) == ir::builtin::FUNC {
            return m.attr(o, ir::builtin::SYM_NAME).and_then(|a| a.as_str()).unwrap_or("").to_string();
        }
        op = m.parent_op(o);
    }
    String::new()
}

/// Registers `egraph-peephole` over `lib`.
pub fn register(r: &mut PassRegistry, lib: Arc<RuleLibrary>) {
    let info = PassInfo::new(NAME, DESCRIPTION, move |o| Ok(Box::new(Peephole::with_options(&lib, o)?) as Box<dyn Pass>))
        .options(Peephole::options());
    let _ = r.register(info);
}
