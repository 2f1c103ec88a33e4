//! `dialect-run`: import a program, compile it, run it on inputs, compare with expected outputs, benchmark.

use clap::Parser;
use ir::{Context, DType, Dim, TypeKind};
use crate::fixture;
use runtime::{CompileOptions, IValue, InputKind, Tensor};
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Command-line options of `dialect-run`.
#[derive(Parser, Debug, Clone)]
#[command(name = "dialect-run", about = "Import, compile and run a program; compare its outputs; benchmark it.")]
pub struct RunArgs {
    /// The program: `.pt2`, FX text, TorchScript text, a program archive (`.dar`) or text IR.
    pub program: PathBuf,
    /// The input format, when the extension does not say (pt2, fx, torchscript, archive, ir).
    #[arg(long, value_name = "FORMAT")]
    pub import: Option<String>,
    /// Inputs from a safetensors file: `in.N` (torch.export fixtures) or `callK.in.N` (TorchScript fixtures).
    #[arg(long, value_name = "FILE")]
    pub inputs: Option<PathBuf>,
    /// Expected outputs (`out.N`, `call2.out.N`, `callK.out.N`); prints the error per output and
    /// fails when one is outside the tolerance (from a `meta.json` beside the file, or --rtol/--atol).
    #[arg(long, value_name = "FILE")]
    pub compare: Option<PathBuf>,
    /// Which call of a TorchScript fixture to run (its `callK.*` tensors and scalar inputs).
    #[arg(long, default_value_t = 0)]
    pub call: usize,
    /// A non-tensor input by position: `--scalar 1=5 --scalar 2=0.5 --scalar 3=None`.
    #[arg(long, value_name = "POS=VALUE")]
    pub scalar: Vec<String>,
    /// Sizes of generated inputs' symbolic dimensions: `--dim s0=1024` (default: the range minimum, at least 2).
    #[arg(long, value_name = "SYM=N")]
    pub dim: Vec<String>,
    /// The shape of a generated input, overriding its type: `--shape x=1024x4096`.
    #[arg(long, value_name = "NAME=DIMS")]
    pub shape: Vec<String>,
    /// Number of calls on the same runtime (state such as mutated buffers carries over).
    #[arg(long)]
    pub calls: Option<usize>,
    /// A pass pipeline to run before compiling.
    #[arg(long, value_name = "PIPELINE", conflicts_with = "opt_level")]
    pub pipeline: Option<String>,
    /// Optimization level: 0 (the default) runs the program as imported; 1 and up run
    /// `driver::pipeline_for_level(N)` before compiling, which `default-pipeline{opt-level=N}`
    /// also runs (functionalize, decompose, optimize, lower to Edge, fuse and partition). Also
    /// spelled `-O2`.
    #[arg(long = "opt-level", short = 'O', value_name = "N", value_parser = clap::value_parser!(u32).range(0..=3))]
    pub opt_level: Option<u32>,
    /// Print the pass pipeline that runs before compiling (on stdout) and continue.
    #[arg(long)]
    pub dump_pass_pipeline: bool,
    /// How fusion groups run: `jit` compiles them with Cranelift (groups or inputs it does not
    /// compile fall back to the interpreter), `interp` runs their regions in the interpreter.
    /// Default: `jit` at -O2 and above, `interp` otherwise.
    #[arg(long, value_enum, value_name = "BACKEND")]
    pub backend: Option<Backend>,
    /// Print what the JIT did (groups compiled and declined, kernel compile times, cache hits,
    /// native and interpreted calls) after running; --bench prints it too.
    #[arg(long)]
    pub stats: bool,
    /// Relative tolerance of --compare.
    #[arg(long)]
    pub rtol: Option<f64>,
    /// Absolute tolerance of --compare.
    #[arg(long)]
    pub atol: Option<f64>,
    /// Kernel worker threads (rayon's pool).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Time repeated calls and print a table.
    #[arg(long)]
    pub bench: bool,
    /// Timed calls of --bench.
    #[arg(long, default_value_t = 100)]
    pub iters: usize,
    /// Untimed calls before --bench measures.
    #[arg(long, default_value_t = 5)]
    pub warmup: usize,
    /// Time each top-level op over `--iters` more calls and print where a call's time goes:
    /// the slowest ops with their results and source locations, and the totals per kind of op.
    #[arg(long)]
    pub profile: bool,
    /// Seed of generated inputs.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Print the program as it will be compiled (after the pipeline and input specialisation) on
    /// standard error
    #[arg(long)]
    pub print_ir: bool,
    /// Print the output values in full.
    #[arg(long)]
    pub print_outputs: bool,
    /// The most tensor memory alive at once (`512M`, `8G`; default: `DIALECT_MEMORY_LIMIT`, else
    /// the machine's physical memory). Inputs, intermediates and outputs that would exceed it are
    /// errors, not an out-of-memory kill.
    #[arg(long, value_name = "SIZE", value_parser = parse_memory_limit)]
    pub memory_limit: Option<usize>,
    /// Declare the operators of an op library: a file of schemas, one per line
    /// (`mylib::foo(Tensor x) -> Tensor`), for programs that use custom operators. Running them
    /// needs a kernel or decomposition registered by an embedder. Repeatable.
    #[arg(long, value_name = "FILE")]
    pub op_library: Vec<PathBuf>,
}

fn parse_memory_limit(s: &str) -> Result<usize, String> {
    runtime::memory::parse_size(s)
}

/// How `dialect-run` executes fusion groups.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The interpreter runs every op, fusion groups included.
    Interp,
    /// Fusion groups run as Cranelift kernels; everything else in the interpreter.
    Jit,
}

impl RunArgs {
    /// The backend chosen, or the default of the optimization level.
    pub fn backend(&self) -> Backend {
        self.backend.unwrap_or(if self.opt_level.unwrap_or(0) >= 2 { Backend::Jit } else { Backend::Interp })
    }
}

/// Runs `dialect-run` (the built-in dialects, passes and kernels); returns the exit code.
pub fn main_with_args(args: Vec<String>, stdout: &mut dyn Write, stderr: &mut dyn Write) -> i32 {
    run_main(crate::default_context(), &crate::default_pass_registry(), runtime::registry(), args, stdout, stderr)
}

/// What a `-run` tool runs programs with: the dialects, the passes its pipelines are parsed
/// against, the interpreter's kernels, and the lowering of its own dialects.
pub struct RunTool<'a> {
    /// The dialects the tool knows (`--op-library` declares more into it).
    pub context: Context,
    /// The passes of `--pipeline` and of the optimization levels.
    pub passes: &'a pass::PassRegistry,
    /// The interpreter's kernels (`runtime::registry()` and the tool's own).
    pub kernels: &'a runtime::KernelRegistry,
    /// Pipeline elements run before the pipeline of `-O<N>` for N ≥ 1 (`toy-to-aten`): the
    /// lowering of the tool's own ops into those the level pipelines know. `-O0` runs the
    /// program as imported, so its ops need kernels of their own.
    pub lowering: Vec<String>,
}

/// A `-run` tool over the caller's dialects, passes and kernels: imports a program, lowers it
/// (`--pipeline`, `-O<N>`), compiles it with `kernels`, runs it, compares and benchmarks it —
/// everything `dialect-run` does. Messages are prefixed with the file name of `args[0]`.
/// Returns the exit code.
pub fn run_main(
    context: Context,
    passes: &pass::PassRegistry,
    kernels: &runtime::KernelRegistry,
    args: Vec<String>,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> i32 {
    run_main_with(RunTool { context, passes, kernels, lowering: Vec::new() }, args, stdout, stderr)
}

/// [`run_main`] with a lowering run before the optimization levels' pipelines.
pub fn run_main_with(tool: RunTool<'_>, args: Vec<String>, stdout: &mut dyn Write, stderr: &mut dyn Write) -> i32 {
    let name = crate::opt::tool_name(&args, "dialect-run");
    let command = <RunArgs as clap::CommandFactory>::command().bin_name(name.clone());
    let opts: RunArgs = match crate::parse_args(command, crate::normalize_llvm_flags(opt_level_flags(args)), stdout, stderr) {
        Ok(o) => o,
        Err(code) => return code,
    };
    match run(tool, &opts, stdout, stderr) {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(stderr, "{name}: {e}");
            1
        }
    }
}

/// `-O2` → `--opt-level=2` (before LLVM-style single-dash long flags are normalized).
fn opt_level_flags(args: Vec<String>) -> Vec<String> {
    args.into_iter()
        .enumerate()
        .map(|(i, a)| match a.strip_prefix("-O") {
            Some(n) if i > 0 && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => format!("--opt-level={n}"),
            _ => a,
        })
        .collect()
}

/// The pipeline to run before compiling, if any: `--pipeline`, or that of `-O<n>` for n ≥ 1.
fn pipeline_of(opts: &RunArgs, lowering: &[String]) -> Option<String> {
    match (&opts.pipeline, opts.opt_level) {
        (Some(p), _) => Some(p.clone()),
        (None, Some(n)) if n > 0 && lowering.is_empty() => Some(crate::pipeline_for_level(n)),
        (None, Some(n)) if n > 0 => {
            let (to_edge, after) = crate::pipeline_stages(n);
            let level = to_edge.into_iter().chain(after).map(str::to_string);
            Some(format!("builtin.module({})", lowering.iter().cloned().chain(level).collect::<Vec<_>>().join(",")))
        }
        _ => None,
    }
}

fn parse_kv<'a>(s: &'a str, what: &str) -> Result<(&'a str, &'a str), String> {
    s.split_once('=').ok_or_else(|| format!("{what} '{s}' is not of the form KEY=VALUE"))
}

fn run(tool: RunTool<'_>, opts: &RunArgs, stdout: &mut dyn Write, stderr: &mut dyn Write) -> Result<i32, String> {
    if opts.threads == 0 {
        return Err("--threads must be at least 1".into());
    }
    runtime::memory::set_limit_from_env()?;
    if let Some(limit) = opts.memory_limit {
        runtime::memory::set_limit(limit);
    }
    // An unknown `DIALECT_ISA` stops the run rather than timing or checking a path not asked for.
    kernels::isa::from_env().map_err(|e| e.to_string())?;
    // A second build of the global pool (in tests) fails harmlessly: the first size stands.
    let _ = rayon::ThreadPoolBuilder::new().num_threads(opts.threads).build_global();
    let ctx = crate::declare_libraries(tool.context, &opts.op_library)?;
    let format = match &opts.import {
        Some(n) => Some(import::Format::from_name(n).ok_or_else(|| format!("unknown input format '{n}' (expected one of {})", import::Format::NAMES))?),
        None => None,
    };
    let t0 = Instant::now();
    let mut program = import::import_file(&ctx, &opts.program, format).map_err(|e| e.to_string())?;
    let import_time = t0.elapsed();
    let io_inputs = match &opts.inputs {
        Some(p) => runtime::io::load_safetensors(p).map_err(|e| format!("{}: {e}", p.display()))?,
        None => Vec::new(),
    };
    let meta = match (&opts.compare, &opts.inputs) {
        (Some(p), _) | (None, Some(p)) => fixture::read_meta(p)?,
        _ => fixture::Meta::default(),
    };
    fixture::specialize_inputs(&mut program.module, &io_inputs, meta.scalar_calls.get(opts.call), opts.call);
    let t_lower = Instant::now();
    match pipeline_of(opts, &tool.lowering) {
        Some(p) => {
            let mut pm = pass::PassManager::parse(tool.passes, &p, pass::PassManagerConfig::default())
                .map_err(|e| format!("invalid pipeline '{p}': {e}"))?;
            if opts.dump_pass_pipeline {
                let _ = writeln!(stdout, "{}", pm.pipeline_text());
            }
            pm.run(&ctx, &mut program.module, stderr).map_err(|d| d.to_string())?;
        }
        None if opts.dump_pass_pipeline => {
            let _ = writeln!(stdout, "builtin.module()");
        }
        None => {}
    }
    let lower_time = t_lower.elapsed();
    if opts.print_ir {
        let _ = writeln!(stderr, "{}", ir::print_module(&ctx, &program.module, ir::PrintOptions::default()));
    }
    let weights = fixture::weights_from_import(&program.weights)?;
    // The JIT is created inside the timed compile: its one-time setup is part of compiling.
    let t1 = Instant::now();
    let jit = match opts.backend() {
        Backend::Jit => Some(Arc::new(jit::Jit::default())),
        Backend::Interp => None,
    };
    let options = CompileOptions { fusion: jit.clone().map(|j| j as Arc<dyn runtime::FusionCompiler>), ..CompileOptions::default() };
    let compiled = runtime::compile_with_registry(&program.module, &ctx, &weights, options, tool.kernels).map_err(|e| e.to_string())?;
    let compile_time = t1.elapsed();
    let mut rt = compiled.runtime();

    // Inputs.
    let inputs = build_inputs(opts, &compiled, &io_inputs, &meta)?;

    let calls = opts.calls.or(meta.calls).unwrap_or(1).max(1);
    let mut results = Vec::new();
    let t2 = Instant::now();
    for _ in 0..calls {
        // Outputs are compared as PyTorch saves them: pytree-flattened.
        let outs = rt.run(&inputs).map_err(|e| e.to_string())?;
        results.push(fixture::flatten(outs));
    }
    let run_time = t2.elapsed();
    let _ = writeln!(
        stdout,
        "{}: imported in {:.2} ms, lowered in {:.2} ms, compiled in {:.2} ms, {} call(s) in {:.2} ms",
        opts.program.display(),
        ms(import_time),
        ms(lower_time),
        ms(compile_time),
        calls,
        ms(run_time)
    );
    let mut failed = false;
    match &opts.compare {
        Some(path) => {
            let expected: HashMap<String, Tensor> =
                runtime::io::load_safetensors(path).map_err(|e| format!("{}: {e}", path.display()))?.into_iter().collect();
            let rtol = opts.rtol.or(meta.rtol).unwrap_or(1e-4);
            let atol = opts.atol.or(meta.atol).unwrap_or(1e-5);
            for (call, outs) in results.iter().enumerate() {
                let Some(prefix) = fixture::expected_prefix(&expected, opts.call, call) else { continue };
                for (i, v) in outs.iter().enumerate() {
                    let key = format!("{prefix}{i}");
                    let Some(want) = expected.get(&key) else {
                        let _ = writeln!(stdout, "{key}: no expected value in {}", path.display());
                        failed = true;
                        continue;
                    };
                    let c = fixture::compare(v, want, rtol, atol);
                    let _ = writeln!(stdout, "{key}: {}", c.text);
                    failed |= !c.ok;
                }
                let n_expected = expected.keys().filter(|k| k.starts_with(&prefix)).count();
                if n_expected != outs.len() {
                    let _ = writeln!(stdout, "{prefix}*: program gave {} outputs, expected {n_expected}", outs.len());
                    failed = true;
                }
            }
            let _ = writeln!(stdout, "{} (rtol {rtol:e}, atol {atol:e})", if failed { "MISMATCH" } else { "match" });
        }
        None => {
            if let Some(outs) = results.last() {
                for (i, v) in outs.iter().enumerate() {
                    let _ = writeln!(stdout, "out.{i}: {}", describe(v, opts.print_outputs));
                }
            }
        }
    }
    if opts.bench {
        bench(opts, &mut rt, &inputs, stdout, stderr)?;
    }
    if opts.profile {
        profile(opts, &mut rt, &inputs, stdout)?;
    }
    if opts.stats || opts.bench {
        let _ = writeln!(
            stdout,
            "program: {} instruction(s) per call; {} op(s) computed once at compile time (they depend on no input)",
            compiled.num_instructions(),
            compiled.num_hoisted()
        );
        if let Some(plan) = rt.memory_plan() {
            let planned = plan.group_of.iter().filter(|g| g.is_some()).count();
            let _ = writeln!(
                stdout,
                "memory plan: {planned} value(s) in {} group(s), a slab of {} ({} as separate buffers)",
                plan.groups.len(),
                runtime::memory::format_size(plan.slab_bytes),
                runtime::memory::format_size(plan.unshared_bytes)
            );
        }
        let groups = compiled.fusion_groups();
        let taken = groups.iter().filter(|g| g.compiled()).count();
        match &jit {
            Some(j) => {
                let s = j.stats();
                let in_order = j.compile_times();
                let mut times = in_order.clone();
                times.sort();
                let median = times.get(times.len() / 2).copied().unwrap_or_default();
                let _ = writeln!(
                    stdout,
                    "jit: {} fusion group(s), {taken} compiled, {} declined; {} kernel(s) compiled in {:.2} ms (median {:.3} ms), {} failed; cache {} hit(s), {} miss(es); {} native call(s), {} interpreted call(s)",
                    groups.len(),
                    groups.len() - taken,
                    s.cache.kernels,
                    ms(s.cache.total_compile_time),
                    ms(median),
                    s.cache.failures,
                    s.cache.hits,
                    s.cache.misses,
                    s.native_calls,
                    s.interpreted_calls
                );
                let each: Vec<String> = in_order.iter().map(|&d| format!("{:.3}", ms(d))).collect();
                let _ = writeln!(
                    stdout,
                    "jit: setup {:.3} ms (host ISA, once per process); kernel compile times in compile order: [{}] ms",
                    ms(s.setup_time),
                    each.join(", ")
                );
                for g in groups.iter().filter(|g| !g.compiled()) {
                    let _ = writeln!(stdout, "jit: declined the group at {} ({} ops): {}", g.loc, g.ops, g.declined.as_deref().unwrap_or(""));
                }
            }
            None => {
                let _ = writeln!(stdout, "interp: {} fusion group(s) interpreted", count_fusion_groups(&program.module));
            }
        }
    }
    Ok(if failed { 1 } else { 0 })
}

fn count_fusion_groups(m: &ir::Module) -> usize {
    let mut n = 0;
    m.walk(m.top(), ir::WalkOrder::PreOrder, &mut |op| n += usize::from(m.op_name(op) == dialect_prim::FUSION_GROUP));
    n
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn build_inputs(opts: &RunArgs, compiled: &runtime::CompiledProgram, io: &[(String, Tensor)], meta: &fixture::Meta) -> Result<Vec<IValue>, String> {
    let users: Vec<&runtime::InputInfo> = compiled.arguments().iter().filter(|a| a.kind == InputKind::User).collect();
    let mut scalars: HashMap<usize, IValue> = meta.scalar_calls.get(opts.call).cloned().unwrap_or_default();
    for s in &opts.scalar {
        let (k, v) = parse_kv(s, "--scalar")?;
        let pos: usize = k.parse().map_err(|_| format!("--scalar position '{k}' is not a number"))?;
        let val = match v {
            "true" | "True" => IValue::Bool(true),
            "false" | "False" => IValue::Bool(false),
            "None" | "none" => IValue::None,
            _ => match v.parse::<i64>() {
                Ok(i) => IValue::Int(i),
                Err(_) => IValue::Float(v.parse().map_err(|_| format!("--scalar value '{v}' is not a number or bool"))?),
            },
        };
        scalars.insert(pos, val);
    }
    let mut dims: HashMap<String, usize> = HashMap::new();
    for s in &opts.dim {
        let (k, v) = parse_kv(s, "--dim")?;
        dims.insert(k.to_string(), v.parse().map_err(|_| format!("--dim size '{v}' is not a number"))?);
    }
    let mut shapes: HashMap<String, Vec<usize>> = HashMap::new();
    for s in &opts.shape {
        let (k, v) = parse_kv(s, "--shape")?;
        let sizes = v.split('x').map(|d| d.parse::<usize>()).collect::<Result<Vec<_>, _>>().map_err(|_| format!("--shape '{v}' is not like 1024x4096"))?;
        shapes.insert(k.to_string(), sizes);
    }
    let ts_prefix = format!("call{}.in.", opts.call);
    let mut rng = Rng(opts.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut out = Vec::with_capacity(users.len());
    for (pos, info) in users.iter().enumerate() {
        let from_io = io
            .iter()
            .find(|(k, _)| *k == format!("in.{pos}") || *k == format!("{ts_prefix}{pos}"))
            .map(|(_, t)| t.clone());
        if let Some(t) = from_io {
            out.push(IValue::Tensor(t));
            continue;
        }
        if let Some(v) = scalars.get(&pos) {
            out.push(v.clone());
            continue;
        }
        match info.ty.kind() {
            TypeKind::Int | TypeKind::Float | TypeKind::Bool => out.push(scalar_at(&scalars, pos, &info.name)?),
            TypeKind::Tensor(tt) => {
                if !io.is_empty() {
                    return Err(format!("input '{}' (#{pos}) is not in the inputs file", info.name));
                }
                let sizes = match shapes.get(&info.name) {
                    Some(s) => s.clone(),
                    None => {
                        let dims_of = tt.shape.as_ref().ok_or_else(|| format!("input '{}' has unknown rank: give --shape {}=AxB", info.name, info.name))?;
                        dims_of
                            .iter()
                            .map(|d| match d {
                                Dim::Static(n) => Ok(*n as usize),
                                Dim::Sym(s) => Ok(*dims.get(s.as_ref()).unwrap_or(&2)),
                                Dim::Unknown => Err(format!("input '{}' has an unknown dimension: give --shape", info.name)),
                            })
                            .collect::<Result<Vec<_>, _>>()?
                    }
                };
                let dtype = tt.dtype.unwrap_or(DType::F32);
                let t = generate(&mut rng, dtype, &sizes).map_err(|e| format!("input '{}' (#{pos}): {e}", info.name))?;
                out.push(IValue::Tensor(t));
            }
            other => return Err(format!("input '{}' of type {:?} cannot be generated; give it in --inputs", info.name, other)),
        }
    }
    Ok(out)
}

fn scalar_at(scalars: &HashMap<usize, IValue>, pos: usize, name: &str) -> Result<IValue, String> {
    scalars.get(&pos).cloned().ok_or_else(|| format!("non-tensor input '{name}' (#{pos}) needs a value: --scalar {pos}=VALUE"))
}

/// A small deterministic generator for benchmark inputs.
struct Rng(u64);

impl Rng {
    fn next_f64(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Generated inputs: floats uniform in [-2, 2), integers in [0, 10), booleans fair.
fn generate(rng: &mut Rng, dtype: DType, sizes: &[usize]) -> Result<Tensor, String> {
    // The tensor, and the f64 values it is made from, must fit the memory limit: checked before
    // anything is allocated.
    let n = sizes.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
    let bytes = n.and_then(|n| n.checked_mul(dtype.size_bytes() + std::mem::size_of::<f64>()));
    let limit = runtime::memory::limit();
    let n = match (n, bytes) {
        (Some(n), Some(b)) if b <= limit.saturating_sub(runtime::memory::live_bytes()) => n,
        _ => {
            return Err(format!(
                "a generated {dtype:?} tensor of shape {sizes:?} does not fit the memory limit of {limit} bytes; \
                 give smaller --shape/--dim values or raise --memory-limit"
            ));
        }
    };
    let vals: Vec<f64> = (0..n).map(|_| rng.next_f64()).collect();
    let t = match dtype {
        DType::F32 => Tensor::from_vec(vals.iter().map(|v| (v * 4.0 - 2.0) as f32).collect::<Vec<_>>(), sizes),
        DType::F64 => Tensor::from_vec(vals.iter().map(|v| v * 4.0 - 2.0).collect::<Vec<_>>(), sizes),
        DType::I64 => Tensor::from_vec(vals.iter().map(|v| (v * 10.0) as i64).collect::<Vec<_>>(), sizes),
        DType::I32 => Tensor::from_vec(vals.iter().map(|v| (v * 10.0) as i32).collect::<Vec<_>>(), sizes),
        DType::Bool => Tensor::from_vec(vals.iter().map(|v| *v < 0.5).collect::<Vec<_>>(), sizes),
        other => {
            let f = Tensor::from_vec(vals.iter().map(|v| (v * 4.0 - 2.0) as f32).collect::<Vec<_>>(), sizes).map_err(|e| e.to_string())?;
            f.to_dtype(other)
        }
    };
    t.map_err(|e| e.to_string())
}

fn describe(v: &IValue, full: bool) -> String {
    match v {
        IValue::Tensor(t) => {
            let vals = t.to_vec_f64();
            let shown: Vec<String> = vals.iter().take(if full { usize::MAX } else { 8 }).map(|x| format!("{x}")).collect();
            let more = if vals.len() > shown.len() { ", …" } else { "" };
            format!("{}{:?} [{}{more}]", t.dtype(), t.sizes(), shown.join(", "))
        }
        IValue::Int(i) => format!("int {i}"),
        IValue::Float(x) => format!("float {x}"),
        IValue::Bool(b) => format!("bool {b}"),
        IValue::None => "None".into(),
        IValue::Tuple(items) | IValue::List(items) => {
            format!("({})", items.iter().map(|i| describe(i, full)).collect::<Vec<_>>().join(", "))
        }
        IValue::TensorList(ts) => format!("[{}]", ts.iter().map(|t| describe(&IValue::Tensor(t.clone()), full)).collect::<Vec<_>>().join(", ")),
        other => format!("{other:?}"),
    }
}

/// What [`time_calls`] measured.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// Timed calls.
    pub calls: usize,
    pub median: Duration,
    pub p10: Duration,
    pub p90: Duration,
    /// Heap allocations per call (zero unless the process installed [`crate::alloc::Counting`]).
    pub allocations_per_call: f64,
}

/// Times `iters` calls of `rt` on `inputs` after `warmup` untimed ones. `progress` is told the
/// calls done and the time spent about every two seconds of a long run.
///
/// The calls run on a worker of rayon's pool (`rayon::scope` from outside the pool moves its
/// body there), so a kernel that splits its work across the pool runs one part on the calling
/// thread and wakes only the other workers, as PyTorch's intra-op pool does, instead of parking
/// this thread and waking a worker for every split kernel. The body runs in chunks of about two
/// seconds so that progress can be reported between them. Kernels split their work as wide as
/// they would on the calling thread ([`kernels::parallel::threads`], which an embedder may have
/// set with `with_threads`), wherever the body runs.
pub fn time_calls(
    rt: &mut runtime::Runtime,
    inputs: &[IValue],
    iters: usize,
    warmup: usize,
    progress: &mut dyn FnMut(usize, Duration),
) -> Result<Timing, String> {
    let mut outs = Vec::new();
    let width = kernels::parallel::threads();
    rayon::scope(|_| {
        kernels::parallel::with_threads(width, || -> Result<(), String> {
            for _ in 0..warmup {
                rt.run_into(inputs, &mut outs).map_err(|e| e.to_string())?;
            }
            Ok(())
        })
    })?;
    let mut times = Vec::with_capacity(iters);
    let a0 = crate::alloc::allocations();
    let start = Instant::now();
    while times.len() < iters {
        rayon::scope(|_| {
            kernels::parallel::with_threads(width, || -> Result<(), String> {
                let chunk = Instant::now();
                while times.len() < iters && chunk.elapsed() < Duration::from_secs(2) {
                    let t = Instant::now();
                    rt.run_into(inputs, &mut outs).map_err(|e| e.to_string())?;
                    times.push(t.elapsed());
                }
                Ok(())
            })
        })?;
        if times.len() < iters {
            progress(times.len(), start.elapsed());
        }
    }
    let allocations_per_call = (crate::alloc::allocations() - a0) as f64 / iters.max(1) as f64;
    times.sort();
    let pick = |q: f64| times.get(((times.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or_default();
    Ok(Timing { calls: iters, median: pick(0.5), p10: pick(0.1), p90: pick(0.9), allocations_per_call })
}

/// Ops of `--profile`'s first table.
const PROFILE_ROWS: usize = 25;

/// `--profile`: `--iters` calls with per-op timing on, then the slowest ops and the totals per
/// kind of op, in milliseconds a call.
fn profile(opts: &RunArgs, rt: &mut runtime::Runtime, inputs: &[IValue], stdout: &mut dyn Write) -> Result<(), String> {
    rt.set_profiling(true);
    let timing = time_calls(rt, inputs, opts.iters.max(1), 0, &mut |_, _| {});
    let ops = rt.profile();
    rt.set_profiling(false);
    let timing = timing?;
    let calls = timing.calls as f64;
    let per_call = |d: Duration| ms(d) / calls;
    let total: Duration = ops.iter().map(|o| o.total).sum();
    let share = |d: Duration| if total.is_zero() { 0.0 } else { 100.0 * d.as_secs_f64() / total.as_secs_f64() };
    let _ = writeln!(
        stdout,
        "profile: {} call(s), {:.4} ms a call in {} top-level op(s) (median call {:.4} ms)",
        timing.calls,
        per_call(total),
        ops.len(),
        ms(timing.median)
    );
    let mut by_time: Vec<&runtime::OpProfile> = ops.iter().filter(|o| o.calls > 0).collect();
    by_time.sort_by(|a, b| b.total.cmp(&a.total).then(a.index.cmp(&b.index)));
    let _ = writeln!(stdout, "| # | op | result | ms/call | share | location |");
    let _ = writeln!(stdout, "| --- | --- | --- | --- | --- | --- |");
    for o in by_time.iter().take(PROFILE_ROWS) {
        let _ = writeln!(stdout, "| {} | {} | {} | {:.4} | {:.1}% | {} |", o.index, o.op, o.result, per_call(o.total), share(o.total), o.location);
    }
    if by_time.len() > PROFILE_ROWS {
        let rest: Duration = by_time[PROFILE_ROWS..].iter().map(|o| o.total).sum();
        let _ = writeln!(stdout, "| | {} more | | {:.4} | {:.1}% | |", by_time.len() - PROFILE_ROWS, per_call(rest), share(rest));
    }
    // Per kind of op: a fusion group is one kind whatever it fuses.
    let mut kinds: Vec<(String, usize, Duration)> = Vec::new();
    for o in &ops {
        let kind = o.op.split('(').next().unwrap_or(&o.op);
        match kinds.iter_mut().find(|(k, _, _)| k == kind) {
            Some(e) => {
                e.1 += 1;
                e.2 += o.total;
            }
            None => kinds.push((kind.to_string(), 1, o.total)),
        }
    }
    kinds.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    let _ = writeln!(stdout, "| kind | ops | ms/call | share |");
    let _ = writeln!(stdout, "| --- | --- | --- | --- |");
    for (kind, n, d) in &kinds {
        let _ = writeln!(stdout, "| {kind} | {n} | {:.4} | {:.1}% |", per_call(*d), share(*d));
    }
    Ok(())
}

fn bench(opts: &RunArgs, rt: &mut runtime::Runtime, inputs: &[IValue], stdout: &mut dyn Write, stderr: &mut dyn Write) -> Result<(), String> {
    let mut long = false;
    let timing = time_calls(rt, inputs, opts.iters, opts.warmup, &mut |done, spent| {
        long = true;
        let _ = write!(stderr, "\r{done}/{} calls, {:.1} s", opts.iters, spent.as_secs_f64());
    })?;
    if long {
        let _ = writeln!(stderr);
    }
    // The median is the fourth column and the allocations the last, where the peers' harnesses
    // (`../shared/bench/*_reference.py`) and the allocation tests read them.
    let _ = writeln!(stdout, "| program | threads | calls | median ms | p10 ms | p90 ms | isa | allocations/call |");
    let _ = writeln!(stdout, "| --- | --- | --- | --- | --- | --- | --- | --- |");
    let _ = writeln!(
        stdout,
        "| {} | {} | {} | {:.4} | {:.4} | {:.4} | {} | {:.1} |",
        opts.program.display(),
        opts.threads,
        timing.calls,
        ms(timing.median),
        ms(timing.p10),
        ms(timing.p90),
        kernels::Isa::process(),
        timing.allocations_per_call
    );
    Ok(())
}
