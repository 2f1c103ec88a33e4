//! `Program`: one compiled program, called from any number of Python threads at once. Each
//! call takes a runtime (registers, state, memory plans) from a pool, or makes one, and runs
//! with the GIL released.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ir::{Context, Module, PrintOptions};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use runtime::{CompileOptions, CompiledProgram, IValue, InputKind, Runtime};

use crate::{error, values};

/// How a program's fusion groups run.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Backend {
    Jit,
    Interp,
}

/// What `compile` was asked for.
struct Options {
    opt_level: u32,
    threads: usize,
    backend: Backend,
}

impl Options {
    fn new(opt_level: u32, threads: usize, backend: Option<&str>) -> PyResult<Options> {
        if opt_level > driver::pipeline::MAX_OPT_LEVEL {
            return Err(error(format!("opt_level must be between 0 and {}, got {opt_level}", driver::pipeline::MAX_OPT_LEVEL)));
        }
        if threads == 0 {
            return Err(error("threads must be at least 1"));
        }
        let backend = match backend {
            None if opt_level >= 2 => Backend::Jit,
            None => Backend::Interp,
            Some("jit") => Backend::Jit,
            Some("interp") => Backend::Interp,
            Some(other) => return Err(error(format!("unknown backend '{other}' (expected 'jit' or 'interp')"))),
        };
        Ok(Options { opt_level, threads, backend })
    }
}

/// The program at each stage of lowering, kept to print on request.
struct Stages {
    ctx: Context,
    imported: Module,
    /// Made on first request at -O0, which runs the program as imported (a program without
    /// tensor types, such as FX text, runs but cannot be lowered).
    edge: Option<Module>,
    backend: Module,
}

/// Everything a call needs; shared by the Python object and the calls running without the GIL.
struct Inner {
    compiled: CompiledProgram,
    jit: Option<Arc<jit::Jit>>,
    runtimes: Mutex<Vec<Runtime>>,
    threads: usize,
    stages: Mutex<Stages>,
    in_spec: Option<import::TreeSpec>,
    /// Whether the program names its output tree (an exported program does; a function from
    /// text returns its results as they are).
    has_out_spec: bool,
    times: [Duration; 3],
}

impl Inner {
    fn take_runtime(&self) -> Runtime {
        let pooled = self.runtimes.lock().unwrap_or_else(|e| e.into_inner()).pop();
        pooled.unwrap_or_else(|| self.compiled.runtime())
    }

    fn give_back(&self, rt: Runtime) {
        self.runtimes.lock().unwrap_or_else(|e| e.into_inner()).push(rt);
    }

    fn call(&self, inputs: &[IValue]) -> Result<Vec<IValue>, String> {
        let mut rt = self.take_runtime();
        let result = kernels::parallel::with_threads(self.threads, || rt.run(inputs));
        self.give_back(rt);
        result.map_err(|e| e.to_string())
    }
}

/// A compiled program. Call it through the Python package's `dialect.Program`, which
/// flattens inputs and rebuilds the output pytree.
#[pyclass(frozen, module = "dialect._native")]
pub struct Program {
    inner: Arc<Inner>,
}

/// Compiles the program in the file at `path` (`.pt2`, `.dar`, FX, TorchScript or IR text; the
/// format from the extension unless `format` names it).
#[pyfunction]
#[pyo3(signature = (path, format=None, opt_level=2, threads=1, backend=None))]
pub fn compile_path(py: Python<'_>, path: PathBuf, format: Option<&str>, opt_level: u32, threads: usize, backend: Option<&str>) -> PyResult<Program> {
    let options = Options::new(opt_level, threads, backend)?;
    let format = format.map(format_named).transpose()?;
    compile_with(py, &options, move |ctx| import::import_file(ctx, &path, format))
}

/// Compiles a program held in memory: `data` is a `.pt2` archive's bytes (what
/// `torch.export.save` writes into a buffer) or FX, TorchScript or IR text; `name` stands for
/// its file in messages.
#[pyfunction]
#[pyo3(signature = (data, format, name="<memory>", opt_level=2, threads=1, backend=None))]
pub fn compile_bytes(
    py: Python<'_>,
    data: &Bound<'_, PyBytes>,
    format: &str,
    name: &str,
    opt_level: u32,
    threads: usize,
    backend: Option<&str>,
) -> PyResult<Program> {
    let options = Options::new(opt_level, threads, backend)?;
    let format = format_named(format)?;
    // One copy, which the import keeps: the bytes must outlive the GIL released below.
    let bytes: Arc<[u8]> = Arc::from(data.as_bytes());
    let name = PathBuf::from(name);
    compile_with(py, &options, move |ctx| import::import_bytes(ctx, &name, bytes, format))
}

/// Imports with `import` into a fresh context and compiles, with the GIL released.
fn compile_with(
    py: Python<'_>,
    options: &Options,
    import: impl FnOnce(&Context) -> Result<import::Program, import::ImportError> + Send,
) -> PyResult<Program> {
    let inner = py.detach(move || {
        let t0 = Instant::now();
        let ctx = driver::default_context();
        let program = import(&ctx).map_err(|e| e.to_string())?;
        build(ctx, program, options, t0.elapsed())
    });
    Ok(Program { inner: Arc::new(inner.map_err(error)?) })
}

fn format_named(name: &str) -> PyResult<import::Format> {
    import::Format::from_name(name).ok_or_else(|| error(format!("unknown program format '{name}' (expected one of {})", import::Format::NAMES)))
}

/// Runs the passes of `passes` over `module`.
fn run_passes(ctx: &Context, module: &mut Module, passes: &[&str]) -> Result<(), String> {
    if passes.is_empty() {
        return Ok(());
    }
    let registry = driver::default_pass_registry();
    let text = format!("builtin.module({})", passes.join(","));
    let mut pm = pass::PassManager::parse(&registry, &text, pass::PassManagerConfig::default()).map_err(|e| format!("invalid pipeline '{text}': {e}"))?;
    let mut sink = Vec::new();
    pm.run(ctx, module, &mut sink).map_err(|d| d.to_string())?;
    Ok(())
}

/// Lowers an imported program at the requested level and compiles it, keeping each stage.
fn build(ctx: Context, program: import::Program, options: &Options, import_time: Duration) -> Result<Inner, String> {
    let t_lower = Instant::now();
    let imported = program.module.clone();
    let mut module = program.module;
    let in_spec = module
        .attr(module.top(), import::program::ATTR_IN_SPEC)
        .map(import::TreeSpec::from_attribute)
        .transpose()
        .map_err(|e| format!("the program's input spec: {e}"))?;
    let has_out_spec = module.attr(module.top(), import::program::ATTR_OUT_SPEC).is_some();
    // `-O0` runs the program as imported, as `dialect-run -O0` does; its Edge stage is still
    // shown on request.
    let (to_edge, after) = driver::pipeline_stages(options.opt_level);
    let edge = if options.opt_level == 0 {
        None
    } else {
        run_passes(&ctx, &mut module, &to_edge)?;
        Some(module.clone())
    };
    run_passes(&ctx, &mut module, &after)?;
    let lower_time = t_lower.elapsed();
    let weights = driver::fixture::weights_from_import(&program.weights)?;
    let t_compile = Instant::now();
    let jit = (options.backend == Backend::Jit).then(|| Arc::new(jit::Jit::default()));
    let compile_options = CompileOptions { fusion: jit.clone().map(|j| j as Arc<dyn runtime::FusionCompiler>), ..CompileOptions::default() };
    let compiled = runtime::compile(&module, &ctx, &weights, compile_options).map_err(|e| e.to_string())?;
    let compile_time = t_compile.elapsed();
    let backend = module;
    Ok(Inner {
        compiled,
        jit,
        runtimes: Mutex::new(Vec::new()),
        threads: options.threads,
        stages: Mutex::new(Stages { ctx, imported, edge, backend }),
        in_spec,
        has_out_spec,
        times: [import_time, lower_time, compile_time],
    })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[pymethods]
impl Program {
    /// Runs the program on flat inputs (see `values::input`); returns the flat outputs.
    fn run(&self, py: Python<'_>, inputs: &Bound<'_, PyList>) -> PyResult<Vec<Py<PyAny>>> {
        let args = inputs.iter().map(|v| values::input(&v)).collect::<PyResult<Vec<_>>>()?;
        let inner = self.inner.clone();
        let outs = py.detach(move || inner.call(&args)).map_err(error)?;
        outs.into_iter().map(|v| values::output(py, v)).collect()
    }

    /// The program's text IR at a stage: `as-imported`, `edge` (decomposed and lowered to
    /// Edge) or `backend` (what was compiled: fused and partitioned at -O1 and up).
    #[pyo3(signature = (stage="backend", generic=false))]
    fn ir(&self, stage: &str, generic: bool) -> PyResult<String> {
        let mut guard = self.inner.stages.lock().unwrap_or_else(|e| e.into_inner());
        let stages = &mut *guard;
        if stage == "edge" && stages.edge.is_none() {
            let mut edge = stages.imported.clone();
            run_passes(&stages.ctx, &mut edge, &driver::pipeline_stages(0).0).map_err(error)?;
            stages.edge = Some(edge);
        }
        let module = match (stage, &stages.edge) {
            ("as-imported", _) => &stages.imported,
            ("edge", Some(edge)) => edge,
            ("backend", _) => &stages.backend,
            (other, _) => return Err(error(format!("unknown stage '{other}' (expected 'as-imported', 'edge' or 'backend')"))),
        };
        Ok(ir::print_module(&stages.ctx, module, PrintOptions { generic, debug_info: false }))
    }

    /// The user inputs: `(name, type)` pairs in call order.
    #[getter]
    fn inputs(&self) -> Vec<(String, String)> {
        self.inner
            .compiled
            .arguments()
            .iter()
            .filter(|a| a.kind == InputKind::User)
            .map(|a| (a.name.clone(), a.ty.to_string()))
            .collect()
    }

    /// The input pytree spec (`((args), {kwargs})`), when the program has one.
    #[getter]
    fn in_spec(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.inner.in_spec.as_ref().map(|s| values::spec(py, s)).transpose()
    }

    /// The output pytree spec, when the program has one; without it a call returns its one
    /// result, or a tuple of several.
    #[getter]
    fn out_spec(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        if !self.inner.has_out_spec {
            return Ok(None);
        }
        values::spec(py, self.inner.compiled.out_spec()).map(Some)
    }

    /// What compiling took and what the JIT did, as a dict.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let inner = &self.inner;
        let d = PyDict::new(py);
        d.set_item("import_ms", ms(inner.times[0]))?;
        d.set_item("lower_ms", ms(inner.times[1]))?;
        d.set_item("compile_ms", ms(inner.times[2]))?;
        d.set_item("instructions", inner.compiled.num_instructions())?;
        d.set_item("hoisted_ops", inner.compiled.num_hoisted())?;
        let groups = inner.compiled.fusion_groups();
        d.set_item("fusion_groups", groups.len())?;
        d.set_item("fusion_groups_compiled", groups.iter().filter(|g| g.compiled()).count())?;
        let declined: Vec<(String, String)> = groups.iter().filter_map(|g| g.declined.clone().map(|why| (g.loc.clone(), why))).collect();
        d.set_item("declined", declined)?;
        d.set_item("backend", if inner.jit.is_some() { "jit" } else { "interp" })?;
        if let Some(j) = &inner.jit {
            let s = j.stats();
            d.set_item("kernels", s.cache.kernels)?;
            d.set_item("kernel_compile_ms", ms(s.cache.total_compile_time))?;
            d.set_item("kernel_failures", s.cache.failures)?;
            d.set_item("cache_hits", s.cache.hits)?;
            d.set_item("cache_misses", s.cache.misses)?;
            d.set_item("native_calls", s.native_calls)?;
            d.set_item("interpreted_calls", s.interpreted_calls)?;
        }
        Ok(d)
    }

    /// Times `iters` calls after `warmup` untimed ones, as `dialect-run --bench` does; returns
    /// its table's row as a dict.
    #[pyo3(signature = (inputs, iters=100, warmup=5))]
    fn bench<'py>(&self, py: Python<'py>, inputs: &Bound<'py, PyList>, iters: usize, warmup: usize) -> PyResult<Bound<'py, PyDict>> {
        let args = inputs.iter().map(|v| values::input(&v)).collect::<PyResult<Vec<_>>>()?;
        let inner = self.inner.clone();
        let timing = py
            .detach(move || {
                let mut rt = inner.take_runtime();
                let t = kernels::parallel::with_threads(inner.threads, || driver::run::time_calls(&mut rt, &args, iters.max(1), warmup, &mut |_, _| {}));
                inner.give_back(rt);
                t
            })
            .map_err(error)?;
        let d = PyDict::new(py);
        d.set_item("threads", self.inner.threads)?;
        d.set_item("isa", kernels::Isa::process().to_string())?;
        d.set_item("calls", timing.calls)?;
        d.set_item("median_ms", ms(timing.median))?;
        d.set_item("p10_ms", ms(timing.p10))?;
        d.set_item("p90_ms", ms(timing.p90))?;
        d.set_item("allocations_per_call", timing.allocations_per_call)?;
        Ok(d)
    }
}

