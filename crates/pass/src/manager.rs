//! The pass manager: runs nested pipelines over a module with verification, analyses and
//! instrumentation (IR printing, tree dumps, timing, logging, rewrite limits, reproducers).

use crate::analysis::{AnalysisManager, PassState};
use crate::env::{LogConfig, OptLimits};
use crate::instrument::{Reproducer, Statistics, Timing};
use crate::pass::{Anchor, Pass};
use crate::pipeline::{Pipeline, PipelineElement, PipelineError};
use crate::registry::PassRegistry;
use ir::{Context, Diagnostic, Location, Module, OpId, PrintOptions};
use std::collections::HashMap;
use std::fmt;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

/// How a [`PassManager`] checks and reports; the fields are `dialect-opt` flags.
#[derive(Clone, Debug)]
pub struct PassManagerConfig {
    /// Verify the anchor op after each pass (`--verify-each`, on by default).
    pub verify_each: bool,
    /// Print the IR before these passes (`--print-ir-before=a,b`).
    pub print_ir_before: Vec<String>,
    /// Print the IR before every pass (`--print-ir-before-all`).
    pub print_ir_before_all: bool,
    /// Print the IR after these passes (`--print-ir-after=a,b`).
    pub print_ir_after: Vec<String>,
    /// Print the IR after every pass (`--print-ir-after-all`).
    pub print_ir_after_all: bool,
    /// Print the IR after a pass only when its printed text changed (`--print-ir-after-change`).
    pub print_ir_after_change: bool,
    /// Print the IR after a pass that failed (`--print-ir-after-failure`).
    pub print_ir_after_failure: bool,
    /// Print the whole module rather than the anchor op (`--print-ir-module-scope`).
    pub print_ir_module_scope: bool,
    /// Write the anchor's IR after every pass to `dir/<anchor path>/<index>_<pass>.ir`
    /// (`--print-ir-tree-dir=dir`).
    pub print_ir_tree_dir: Option<PathBuf>,
    /// How instrumentation prints IR (`--mlir-print-op-generic`, `--mlir-print-debuginfo`).
    pub print_options: PrintOptions,
    /// Print a timing report at the end of each run (`--timing`).
    pub timing: bool,
    /// Print the passes' statistics at the end of each run (`--mlir-pass-statistics`).
    pub pass_statistics: bool,
    /// On failure, write the failing pass's input IR and pipeline here (`--reproducer=path`).
    pub reproducer_path: Option<PathBuf>,
    /// Per-pass logging (`DIALECT_LOG`).
    pub log: LogConfig,
    /// Per-pass rewrite limits (`DIALECT_OPT_LIMIT`).
    pub opt_limits: OptLimits,
}

impl Default for PassManagerConfig {
    fn default() -> Self {
        PassManagerConfig {
            verify_each: true,
            print_ir_before: Vec::new(),
            print_ir_before_all: false,
            print_ir_after: Vec::new(),
            print_ir_after_all: false,
            print_ir_after_change: false,
            print_ir_after_failure: false,
            print_ir_module_scope: false,
            print_ir_tree_dir: None,
            print_options: PrintOptions::default(),
            timing: false,
            pass_statistics: false,
            reproducer_path: None,
            log: LogConfig::default(),
            opt_limits: OptLimits::default(),
        }
    }
}

impl PassManagerConfig {
    /// Reads `DIALECT_LOG` and `DIALECT_OPT_LIMIT` from the process environment into `log` and
    /// `opt_limits`.
    pub fn with_env(mut self) -> Result<PassManagerConfig, String> {
        self.log = LogConfig::from_env()?;
        self.opt_limits = OptLimits::from_env()?;
        Ok(self)
    }
}

enum Item {
    Pass {
        pass: Box<dyn Pass>,
        options: String,
    },
    Nested(OpPassManager),
}

/// Passes and nested pass managers run on ops of one name.
pub struct OpPassManager {
    anchor: String,
    items: Vec<Item>,
}

impl OpPassManager {
    pub fn new(anchor: &str) -> OpPassManager {
        OpPassManager {
            anchor: anchor.to_string(),
            items: Vec::new(),
        }
    }

    pub fn anchor(&self) -> &str {
        &self.anchor
    }

    /// Builds the passes of a parsed pipeline.
    pub fn from_pipeline(
        registry: &PassRegistry,
        pipeline: &Pipeline,
    ) -> Result<OpPassManager, String> {
        let mut opm = OpPassManager::new(&pipeline.anchor);
        for e in &pipeline.elements {
            match e {
                PipelineElement::Pass { name, options } => {
                    let info = registry
                        .get(name)
                        .ok_or_else(|| format!("unknown pass '{name}'"))?;
                    let pass = info
                        .create(options)
                        .map_err(|e| format!("cannot create pass '{name}': {e}"))?;
                    opm.push_pass(pass, options.to_option_text())?;
                }
                PipelineElement::Nested(p) => opm
                    .items
                    .push(Item::Nested(OpPassManager::from_pipeline(registry, p)?)),
            }
        }
        Ok(opm)
    }

    /// Appends a pass. A pass anchored on another op kind than this manager's is nested
    /// implicitly when this manager runs on the module, and refused otherwise.
    pub fn add_pass(&mut self, pass: Box<dyn Pass>) -> Result<(), String> {
        let options = pass.option_text();
        self.push_pass(pass, options)
    }

    fn push_pass(&mut self, pass: Box<dyn Pass>, options: String) -> Result<(), String> {
        match pass.anchor() {
            Anchor::Op(a) if a != self.anchor => {
                if self.anchor != ir::builtin::MODULE {
                    return Err(format!(
                        "pass '{}' runs on '{a}' ops and cannot be scheduled on '{}'",
                        pass.name(),
                        self.anchor
                    ));
                }
                match self.items.last_mut() {
                    Some(Item::Nested(n)) if n.anchor == a => n.push_pass(pass, options),
                    _ => {
                        let mut n = OpPassManager::new(&a);
                        n.push_pass(pass, options)?;
                        self.items.push(Item::Nested(n));
                        Ok(())
                    }
                }
            }
            _ => {
                self.items.push(Item::Pass { pass, options });
                Ok(())
            }
        }
    }

    /// Appends a pass manager run on each op named `anchor` directly inside this one's anchor.
    pub fn nest(&mut self, anchor: &str) -> &mut OpPassManager {
        self.items.push(Item::Nested(OpPassManager::new(anchor)));
        match self.items.last_mut() {
            Some(Item::Nested(n)) => n,
            // The item pushed just above is a nested manager.
            _ => unreachable!(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

/// The pipeline text (`builtin.module(func.func(cse),dce)`).
impl fmt::Display for OpPassManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}(", self.anchor)?;
        for (i, item) in self.items.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            match item {
                Item::Pass { pass, options } if options.is_empty() => f.write_str(pass.name())?,
                Item::Pass { pass, options } => write!(f, "{}{{{options}}}", pass.name())?,
                Item::Nested(n) => write!(f, "{n}")?,
            }
        }
        f.write_str(")")
    }
}

/// Runs a pipeline over modules.
pub struct PassManager {
    root: OpPassManager,
    config: PassManagerConfig,
    am: AnalysisManager,
    timing: Timing,
    statistics: Statistics,
}

impl PassManager {
    /// An empty pass manager on `builtin.module`.
    pub fn new(config: PassManagerConfig) -> PassManager {
        PassManager::with_root(OpPassManager::new(ir::builtin::MODULE), config)
    }

    fn with_root(root: OpPassManager, config: PassManagerConfig) -> PassManager {
        PassManager {
            root,
            config,
            am: AnalysisManager::new(),
            timing: Timing::default(),
            statistics: Statistics::default(),
        }
    }

    pub fn from_pipeline(
        registry: &PassRegistry,
        pipeline: &Pipeline,
        config: PassManagerConfig,
    ) -> Result<PassManager, String> {
        Ok(PassManager::with_root(
            OpPassManager::from_pipeline(registry, pipeline)?,
            config,
        ))
    }

    /// Parses pipeline text and builds its passes.
    pub fn parse(
        registry: &PassRegistry,
        text: &str,
        config: PassManagerConfig,
    ) -> Result<PassManager, PipelineError> {
        let pipeline = Pipeline::parse(text, registry)?;
        PassManager::from_pipeline(registry, &pipeline, config)
            .map_err(|message| PipelineError { column: 1, message })
    }

    pub fn root(&mut self) -> &mut OpPassManager {
        &mut self.root
    }

    pub fn add_pass(&mut self, pass: Box<dyn Pass>) -> Result<(), String> {
        self.root.add_pass(pass)
    }

    pub fn nest(&mut self, anchor: &str) -> &mut OpPassManager {
        self.root.nest(anchor)
    }

    pub fn config(&self) -> &PassManagerConfig {
        &self.config
    }

    pub fn config_mut(&mut self) -> &mut PassManagerConfig {
        &mut self.config
    }

    /// The analyses cached across passes (and runs, for the same module).
    pub fn analysis_manager(&mut self) -> &mut AnalysisManager {
        &mut self.am
    }

    /// The timing of the last run.
    pub fn timing(&self) -> &Timing {
        &self.timing
    }

    /// The canonical pipeline text, for `--dump-pass-pipeline`.
    pub fn pipeline_text(&self) -> String {
        self.root.to_string()
    }

    /// Runs the pipeline on `m`. Instrumentation goes to `out`. Returns whether any pass
    /// reported a change; stops at the first failure with a diagnostic naming the pass.
    pub fn run(
        &mut self,
        ctx: &Context,
        m: &mut Module,
        out: &mut dyn Write,
    ) -> Result<bool, Diagnostic> {
        let start = Instant::now();
        self.am.clear();
        let mut st = RunState {
            config: &self.config,
            am: &mut self.am,
            timing: Timing::default(),
            statistics: Statistics::default(),
            rewrites: HashMap::new(),
            tree_index: HashMap::new(),
            changed: false,
            out,
        };
        let top = m.top();
        let result = if m.op_name(top) != self.root.anchor {
            Err(Diagnostic::error(
                m.loc(top).clone(),
                format!(
                    "pass manager anchored on '{}' cannot run on '{}'",
                    self.root.anchor,
                    m.op_name(top)
                ),
            ))
        } else {
            run_opm(&mut self.root, &mut st, ctx, m, top, &[])
        };
        let changed = st.changed;
        let timing = std::mem::take(&mut st.timing);
        let total = start.elapsed();
        if self.config.timing {
            let report = timing.report(total);
            emit(st.out, &report)?;
        }
        self.timing = timing;
        let statistics = std::mem::take(&mut st.statistics);
        if self.config.pass_statistics {
            emit(st.out, &statistics.report())?;
        }
        self.statistics = statistics;
        result.map(|_| changed)
    }
}

struct RunState<'a> {
    config: &'a PassManagerConfig,
    am: &'a mut AnalysisManager,
    timing: Timing,
    statistics: Statistics,
    /// Rewrites made so far per pass name, for `DIALECT_OPT_LIMIT`.
    rewrites: HashMap<String, usize>,
    /// Next file index per tree-dump directory.
    tree_index: HashMap<PathBuf, usize>,
    changed: bool,
    out: &'a mut dyn Write,
}

/// One level of the anchor path: the op's name and its symbol name, if any.
#[derive(Clone)]
struct Frame {
    op: String,
    symbol: Option<String>,
}

fn frame(m: &Module, op: OpId) -> Frame {
    Frame {
        op: m.op_name(op).to_string(),
        symbol: m
            .attr(op, ir::builtin::SYM_NAME)
            .and_then(|a| a.as_str())
            .map(str::to_string),
    }
}

fn emit(out: &mut dyn Write, text: &str) -> Result<(), Diagnostic> {
    out.write_all(text.as_bytes()).map_err(|e| {
        Diagnostic::error(
            Location::Unknown,
            format!("cannot write instrumentation output: {e}"),
        )
    })
}

fn run_opm(
    opm: &mut OpPassManager,
    st: &mut RunState<'_>,
    ctx: &Context,
    m: &mut Module,
    anchor: OpId,
    path: &[Frame],
) -> Result<(), Diagnostic> {
    let mut path = path.to_vec();
    path.push(frame(m, anchor));
    for item in &mut opm.items {
        if !m.contains_op(anchor) {
            break;
        }
        match item {
            Item::Pass { pass, options } => {
                run_pass(pass.as_mut(), options, st, ctx, m, anchor, &path)?
            }
            Item::Nested(sub) => {
                let children: Vec<OpId> = m
                    .regions(anchor)
                    .iter()
                    .flat_map(|&r| m.region_blocks(r).to_vec())
                    .flat_map(|b| m.block_ops(b))
                    .filter(|&o| m.op_name(o) == sub.anchor)
                    .collect();
                for c in children {
                    if m.contains_op(c) {
                        run_opm(sub, st, ctx, m, c, &path)?;
                    }
                }
            }
        }
    }
    Ok(())
}

fn describe(m: &Module, op: OpId) -> String {
    if !m.contains_op(op) {
        return "erased operation".into();
    }
    let f = frame(m, op);
    match f.symbol {
        Some(s) => format!("'{}' operation: @{s}", f.op),
        None => format!("'{}' operation", f.op),
    }
}

fn print_scope(ctx: &Context, m: &Module, op: OpId, config: &PassManagerConfig) -> String {
    if config.print_ir_module_scope || !m.contains_op(op) {
        ir::print_module(ctx, m, config.print_options)
    } else {
        ir::print_op(ctx, m, op, config.print_options)
    }
}

fn dump(
    st: &mut RunState<'_>,
    ctx: &Context,
    m: &Module,
    op: OpId,
    title: &str,
) -> Result<(), Diagnostic> {
    let text = format!(
        "// -----// IR Dump {title} ({}) //----- //\n{}\n",
        describe(m, op),
        print_scope(ctx, m, op, st.config)
    );
    emit(st.out, &text)
}

/// `name_with_underscores` for a path component.
fn path_component(f: &Frame) -> String {
    let clean = |s: &str| {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect::<String>()
    };
    match &f.symbol {
        Some(s) => format!("{}_{}", clean(&f.op), clean(s)),
        None => clean(&f.op),
    }
}

/// The pipeline that re-runs one pass at the anchor path it failed at.
fn reproducer_pipeline(path: &[Frame], pass: &str, options: &str) -> String {
    let mut text = if options.is_empty() {
        pass.to_string()
    } else {
        format!("{pass}{{{options}}}")
    };
    for f in path.iter().rev() {
        text = format!("{}({text})", f.op);
    }
    text
}

fn run_pass(
    pass: &mut dyn Pass,
    options: &str,
    st: &mut RunState<'_>,
    ctx: &Context,
    m: &mut Module,
    anchor: OpId,
    path: &[Frame],
) -> Result<(), Diagnostic> {
    let name = pass.name().to_string();
    let cfg = st.config;
    if let Anchor::Op(a) = pass.anchor()
        && a != m.op_name(anchor)
    {
        return Err(Diagnostic::error(
            m.loc(anchor).clone(),
            format!(
                "pass '{name}' runs on '{a}' ops and cannot run on '{}'",
                m.op_name(anchor)
            ),
        ));
    }
    if cfg.print_ir_before_all || cfg.print_ir_before.contains(&name) {
        dump(st, ctx, m, anchor, &format!("Before {name}"))?;
    }
    let snapshot = cfg.reproducer_path.as_ref().map(|_| m.clone());
    let before_text = cfg
        .print_ir_after_change
        .then(|| print_scope(ctx, m, anchor, cfg));
    let used = st.rewrites.get(&name).copied().unwrap_or(0);
    st.am.state = PassState {
        pass: name.clone(),
        log_level: cfg.log.level(&name),
        budget: cfg.opt_limits.limit(&name).map(|l| l.saturating_sub(used)),
        rewrites: 0,
        limit_hit: false,
    };
    let t0 = Instant::now();
    let result = pass.run(ctx, m, anchor, st.am);
    st.timing.record(&name, t0.elapsed());
    let nested = st.am.take_nested_timing();
    st.timing.merge(&name, &nested);
    let stats = st.am.take_statistics();
    st.statistics.merge(&stats);
    *st.rewrites.entry(name.clone()).or_insert(0) += st.am.state.rewrites;
    let logged = st.am.take_output();
    emit(st.out, &logged)?;

    let failure = match result {
        Err(d) => Some(Diagnostic {
            message: format!("pass '{name}' failed: {}", d.message),
            ..d
        }),
        Ok(r) => {
            st.changed |= r.changed;
            let mut bad = None;
            if cfg.verify_each {
                let t = Instant::now();
                let v = if m.contains_op(anchor) {
                    ir::verify_op(ctx, m, anchor)
                } else {
                    ir::verify(ctx, m)
                };
                st.timing.record("(V) verifier", t.elapsed());
                if let Err(d) = v {
                    bad = Some(Diagnostic {
                        message: format!("pass '{name}' produced invalid IR: {}", d.message),
                        ..d
                    });
                }
            }
            if bad.is_none() {
                st.am.invalidate(m, anchor, &r.preserved);
            }
            bad
        }
    };
    if let Some(mut d) = failure {
        st.am.clear();
        if cfg.print_ir_after_failure {
            dump(st, ctx, m, anchor, &format!("After {name} Failed"))?;
        }
        if let (Some(p), Some(snap)) = (&cfg.reproducer_path, &snapshot) {
            let ir_text = ir::print_module(
                ctx,
                snap,
                PrintOptions {
                    generic: false,
                    debug_info: true,
                },
            );
            let repro = Reproducer::new(&reproducer_pipeline(path, &name, options), &ir_text);
            match outfile::write(p, repro.to_text(&d.to_string()).as_bytes()) {
                Ok(()) => d = d.with_note(
                    Location::Unknown,
                    format!(
                        "reproducer written to {}; re-run with: dialect-opt --run-reproducer {}",
                        p.display(),
                        p.display()
                    ),
                ),
                Err(e) => {
                    d = d.with_note(
                        Location::Unknown,
                        format!("reproducer not written: {e}"),
                    )
                }
            }
        }
        return Err(d);
    }

    let after_listed = cfg.print_ir_after_all || cfg.print_ir_after.contains(&name);
    let changed_text = match &before_text {
        Some(before) => *before != print_scope(ctx, m, anchor, cfg),
        None => false,
    };
    if after_listed || changed_text {
        dump(st, ctx, m, anchor, &format!("After {name}"))?;
    }
    if let Some(dir) = &cfg.print_ir_tree_dir {
        let mut d = dir.clone();
        for f in path {
            d.push(path_component(f));
        }
        let idx = st.tree_index.entry(d.clone()).or_insert(0);
        let file = d.join(format!("{idx}_{name}.ir"));
        *idx += 1;
        let text = if m.contains_op(anchor) {
            ir::print_op(ctx, m, anchor, cfg.print_options)
        } else {
            String::new()
        };
        std::fs::create_dir_all(&d)
            .map_err(|e| {
                Diagnostic::error(
                    Location::Unknown,
                    format!("cannot create directory {}: {e}", d.display()),
                )
            })
            .and_then(|_| {
                outfile::write(&file, text.as_bytes())
                    .map_err(|e| Diagnostic::error(Location::Unknown, e.to_string()))
            })?;
    }
    Ok(())
}
