//! Compiling a typed graph to native code, and running the compiled kernel: the guard that
//! checks inputs against the specialization, output allocation, and the split of the
//! iteration space across the runtime's intra-op team (`runtime::parallel`).

use std::cell::RefCell;
use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{AbiParam, InstBuilder, MemFlagsData, Signature, StackSlot, StackSlotData, StackSlotKind, UserFuncName, Value, types};
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{Linkage, Module as _, default_libcall_names};
use ir::DType;
use runtime::Tensor;

use crate::block::{self, BlockFn, CodegenOptions};
use crate::codegen::{Access, ConstPool, Emitter, Hoist, Layout, Mode, PhaseLoop, PoolEntry, multi_use, scratch_entry, vector_lanes};
use crate::error::JitError;
use crate::fission::{self, BLOCK_VECTORS, Plan};
use crate::group::{Binary, Graph, Group, NodeId, NodeKind, Unary};
use crate::spec::{KernelSpec, holds};

/// The native entry point: `(ptrs, start, end, err)`; `ptrs` holds the inputs' and outputs'
/// base addresses, then the addresses of the kernel's constant pool and of a copy of it.
/// `start` and `end` are multiples of 64 or the number of elements: a kernel whose rows hold
/// whole vectors has no tail code (see `emit_function`).
type EntryFn = unsafe extern "C" fn(*const *mut u8, i64, i64, *mut u32);

/// How a kernel splits its work across threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunOptions {
    /// Kernels with fewer elements than this run on the calling thread.
    pub parallel_threshold: usize,
    /// Elements per task when running in parallel (rounded to a multiple of 64).
    pub chunk: usize,
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions { parallel_threshold: 16 * 1024, chunk: 8 * 1024 }
    }
}

/// The compiled code of a kernel; freed when the kernel is dropped.
struct Code {
    module: Option<JITModule>,
}

impl Drop for Code {
    fn drop(&mut self) {
        if let Some(m) = self.module.take() {
            // SAFETY: the entry pointer lives only in the `Kernel` that owns this `Code`, which is
            // being dropped, so no call into the code can be running or start later.
            unsafe { m.free_memory() };
        }
    }
}

/// A native kernel specialized to one input spec.
pub struct Kernel {
    entry: EntryFn,
    _code: Mutex<Code>,
    /// The vector constants the code reads (see `ConstPool`), twice; never written.
    pool: [Vec<PoolEntry>; 2],
    spec: KernelSpec,
    outputs: Vec<(DType, Vec<usize>)>,
    numel: usize,
    lanes: u8,
    compile_time: Duration,
    /// When its compilation finished (orders a cache's kernels).
    compiled_at: Instant,
    /// The first op that can raise at run time (integer division), for error messages.
    raising_op: Option<&'static str>,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernel")
            .field("spec", &self.spec)
            .field("outputs", &self.outputs)
            .field("lanes", &self.lanes)
            .field("compile_time", &self.compile_time)
            .finish()
    }
}

/// The host ISA, built once per process, and how long building it took.
static ISA: OnceLock<(Result<OwnedTargetIsa, String>, Duration)> = OnceLock::new();

/// The host ISA with the single-pass register allocator, built by the first kernel that uses
/// it (see [`isa_for`]).
static QUICK_ISA: OnceLock<Result<OwnedTargetIsa, String>> = OnceLock::new();

fn isa() -> Result<OwnedTargetIsa, JitError> {
    ISA.get_or_init(|| build_isa(false)).0.clone().map_err(JitError::Codegen)
}

/// The ISA a kernel is compiled with. A body fissioned with every cut calling a block routine
/// keeps only loads, stores, calls and cheap arithmetic for Cranelift, so the single-pass
/// allocator (a fraction of the backtracking one's time) serves it where compile time weighs
/// most: below [`fission::MIN_ELEMENTS`], where only the routines make fission pay (the LSTM
/// cell's gates run as fast either way). Larger kernels run long enough for the backtracking
/// allocator's code to earn its time back (bench_pointwise's kernel, 4Mi elements, is 9 %
/// slower with single-pass allocation), and every other body needs it for its spill-free
/// inline polynomials.
fn isa_for(quick: bool) -> Result<OwnedTargetIsa, JitError> {
    if quick {
        QUICK_ISA.get_or_init(|| build_isa(true).0).clone().map_err(JitError::Codegen)
    } else {
        isa()
    }
}

fn build_isa(single_pass: bool) -> (Result<OwnedTargetIsa, String>, Duration) {
    let start = Instant::now();
    let isa = (|| {
        let mut fb = settings::builder();
        // No mid-end optimizer: the code generator emits what it means to run where it should
        // run (see `codegen::Hoist`), and skipping the e-graph pass saves a third of the
        // compile time with kernels as fast as before.
        fb.set("opt_level", "none").map_err(|e| e.to_string())?;
        if single_pass {
            fb.set("regalloc_algorithm", "single_pass").map_err(|e| e.to_string())?;
        }
        // The IR verifier runs in debug builds (tests); release builds skip its cost.
        let verify = if cfg!(debug_assertions) { "true" } else { "false" };
        fb.set("enable_verifier", verify).map_err(|e| e.to_string())?;
        fb.set("is_pic", "false").map_err(|e| e.to_string())?;
        fb.set("use_colocated_libcalls", "false").map_err(|e| e.to_string())?;
        let mut ib = cranelift_native::builder().map_err(|e| e.to_string())?;
        crate::block::cap_flags(&mut ib)?;
        ib.finish(settings::Flags::new(fb)).map_err(|e| e.to_string())
    })();
    (isa, start.elapsed())
}

/// Builds the host ISA now (once per process) rather than in the first compilation; an error
/// is reported by that compilation. Returns the time this call spent building it: zero when
/// an earlier call (or compilation) already had.
pub(crate) fn detect_isa() -> Duration {
    let mut built = None;
    ISA.get_or_init(|| {
        let r = build_isa(false);
        built = Some(r.1);
        r
    });
    built.unwrap_or_default()
}

/// Whether the host ISA has FMA (detected by `cranelift_native`).
fn has_fma() -> bool {
    isa().is_ok_and(|isa| isa.isa_flags().iter().any(|f| f.name == "has_fma" && f.as_bool() == Some(true)))
}

impl Kernel {
    /// The specialization the kernel was compiled for.
    pub fn spec(&self) -> &KernelSpec {
        &self.spec
    }

    /// Dtype and shape of each output.
    pub fn outputs(&self) -> &[(DType, Vec<usize>)] {
        &self.outputs
    }

    /// Elements per SIMD iteration of the inner loop (1: scalar code only).
    pub fn lanes(&self) -> u8 {
        self.lanes
    }

    /// Wall time spent generating and compiling the code.
    pub fn compile_time(&self) -> Duration {
        self.compile_time
    }

    /// When the compilation finished.
    pub fn compiled_at(&self) -> Instant {
        self.compiled_at
    }

    /// Number of elements of the iteration space.
    pub fn numel(&self) -> usize {
        self.numel
    }

    /// Whether `inputs` have exactly the dtypes, sizes and strides the kernel was compiled for,
    /// and the aliases it addresses them by (the first check of the guard; storage bounds are
    /// checked when it runs).
    pub fn accepts(&self, inputs: &[Tensor]) -> bool {
        self.spec.admits(inputs)
    }

    /// Runs the kernel on `inputs`, returning freshly allocated contiguous outputs.
    pub fn run(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>, JitError> {
        self.run_with(inputs, RunOptions::default())
    }

    pub fn run_with(&self, inputs: &[Tensor], opts: RunOptions) -> Result<Vec<Tensor>, JitError> {
        let outs = self
            .outputs
            .iter()
            .map(|(d, s)| Tensor::zeros(*d, s))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| JitError::Runtime { op: "jit".into(), message: e.message })?;
        self.run_into_with(inputs, &outs, opts)?;
        Ok(outs)
    }

    /// Runs the kernel writing into `outputs` (contiguous tensors of the output dtypes and
    /// shapes, overlapping neither each other nor the inputs).
    pub fn run_into(&self, inputs: &[Tensor], outputs: &[Tensor]) -> Result<(), JitError> {
        self.run_into_with(inputs, outputs, RunOptions::default())
    }

    pub fn run_into_with(&self, inputs: &[Tensor], outputs: &[Tensor], opts: RunOptions) -> Result<(), JitError> {
        let ptrs = self.guard(inputs, outputs)?;
        if self.numel == 0 {
            return Ok(());
        }
        let err = AtomicU32::new(0);
        let pool = self.pool.each_ref().map(|p| p.as_ptr() as usize);
        // Addresses as `usize` (the layout of `*mut u8`), so the tasks can share one array.
        let raw: Vec<usize> = ptrs.iter().chain(&pool).copied().collect();
        let call = |start: usize, end: usize| {
            let raw = raw.as_ptr() as *const *mut u8;
            let mut e: u32 = 0;
            // SAFETY: `guard` checked every input and output against the specialization the
            // code was generated for (dtypes, sizes, strides, storage bounds), so every address
            // the code computes for linear indices in `start..end ⊆ 0..numel` lies inside the
            // tensors' storage; outputs overlap nothing else, so the writes race with no reads,
            // and chunks write disjoint elements. The code only reads the constant pools, at the
            // offsets of the entries it was generated with.
            unsafe { (self.entry)(raw, start as i64, end as i64, &mut e) };
            if e != 0 {
                err.fetch_or(e, Ordering::Relaxed);
            }
        };
        let n = self.numel;
        if n < opts.parallel_threshold || runtime::parallel::threads() <= 1 {
            call(0, n);
        } else {
            // Chunks start at multiples of 64 elements, hence of any lane count (see `EntryFn`).
            let chunk = opts.chunk.max(64).div_ceil(64) * 64;
            let tasks = n.div_ceil(chunk);
            runtime::parallel::for_each(tasks, |t| call(t * chunk, ((t + 1) * chunk).min(n)));
        }
        if err.load(Ordering::Relaxed) != 0 {
            return Err(JitError::Runtime {
                op: self.raising_op.unwrap_or("jit").to_string(),
                message: "ZeroDivisionError: integer division by zero".into(),
            });
        }
        Ok(())
    }

    /// Checks inputs and outputs; returns the base address of each (inputs, then outputs).
    fn guard(&self, inputs: &[Tensor], outputs: &[Tensor]) -> Result<Vec<usize>, JitError> {
        if inputs.len() != self.spec.inputs.len() {
            return Err(JitError::Guard(format!("expected {} inputs, got {}", self.spec.inputs.len(), inputs.len())));
        }
        if outputs.len() != self.outputs.len() {
            return Err(JitError::Guard(format!("expected {} outputs, got {}", self.outputs.len(), outputs.len())));
        }
        let mut ptrs = Vec::with_capacity(inputs.len() + outputs.len());
        for (i, (t, s)) in inputs.iter().zip(&self.spec.inputs).enumerate() {
            if !s.matches(t) {
                return Err(JitError::Guard(format!(
                    "input {i}: {} {:?} strides {:?}, specialized to {} {:?} strides {:?}",
                    t.dtype().torch_name(),
                    t.sizes(),
                    t.strides(),
                    s.dtype.torch_name(),
                    s.sizes,
                    s.strides
                )));
            }
            ptrs.push(base_address(t, "input", i)?);
            // The code reads an alias at its distance from the input it is an alias of; the
            // address is that of the input's own first element, whose bounds were just checked.
            if let Some(a) = s.alias
                && !holds(inputs, i, a)
            {
                return Err(JitError::Guard(format!(
                    "input {i}: specialized to view the storage of input {} at {} bytes from it",
                    a.of, a.bytes
                )));
            }
        }
        for (i, (t, (d, s))) in outputs.iter().zip(&self.outputs).enumerate() {
            if t.dtype() != *d || t.sizes() != s.as_slice() || !t.is_contiguous() {
                return Err(JitError::Guard(format!(
                    "output {i}: expected a contiguous {} tensor of shape {s:?}, got {} {:?}",
                    d.torch_name(),
                    t.dtype().torch_name(),
                    t.sizes()
                )));
            }
            for (j, x) in inputs.iter().enumerate() {
                if t.numel() > 0 && x.numel() > 0 && t.may_overlap(x) {
                    return Err(JitError::Guard(format!("output {i} overlaps input {j}")));
                }
            }
            for (j, o) in outputs.iter().enumerate().take(i) {
                if t.numel() > 0 && o.numel() > 0 && t.may_overlap(o) {
                    return Err(JitError::Guard(format!("output {i} overlaps output {j}")));
                }
            }
            ptrs.push(base_address(t, "output", i)?);
        }
        Ok(ptrs)
    }
}

/// The address of a tensor's first element, after checking that every element it spans lies
/// inside its storage.
/// `kind` and `index` name the tensor in errors (formatted only then: this runs on every call).
fn base_address(t: &Tensor, kind: &str, index: usize) -> Result<usize, JitError> {
    let es = t.dtype().size_bytes();
    let nbytes = t.storage().nbytes();
    if t.numel() > 0 {
        let mut last = t.offset();
        for (&s, &st) in t.sizes().iter().zip(t.strides()) {
            last = s
                .checked_sub(1)
                .and_then(|k| k.checked_mul(st))
                .and_then(|k| k.checked_add(last))
                .ok_or_else(|| JitError::Guard(format!("{kind} {index}: strides overflow")))?;
        }
        let end = last.checked_add(1).and_then(|k| k.checked_mul(es));
        if end.is_none_or(|e| e > nbytes) {
            return Err(JitError::Guard(format!("{kind} {index}: view exceeds its storage")));
        }
    }
    Ok(t.storage().as_ptr() as usize + t.offset() * es)
}

/// Strides of an input of shape `sizes`/`strides` read over the iteration space `shape`.
fn expand_strides(sizes: &[usize], strides: &[usize], shape: &[usize]) -> Option<Vec<usize>> {
    if sizes.len() > shape.len() {
        return None;
    }
    let lead = shape.len() - sizes.len();
    let mut out = vec![0; shape.len()];
    for (d, &n) in shape.iter().enumerate().skip(lead) {
        let (s, st) = (sizes[d - lead], strides[d - lead]);
        if s == n {
            out[d] = if n == 1 { 0 } else { st };
        } else if s == 1 {
            out[d] = 0;
        } else {
            return None;
        }
    }
    Some(out)
}

impl Group {
    /// Compiles the group for inputs of the given spec.
    pub fn compile(&self, spec: &KernelSpec) -> Result<Kernel, JitError> {
        self.compile_with(spec, CodegenOptions::default())
    }

    /// Compiles the group for inputs of the given spec with the given code generation options.
    pub fn compile_with(&self, spec: &KernelSpec, options: CodegenOptions) -> Result<Kernel, JitError> {
        let start = Instant::now();
        let g = self.graph(spec)?;
        compile_graph(&g, spec, options, start)
    }
}

fn compile_graph(g: &Graph, spec: &KernelSpec, options: CodegenOptions, start: Instant) -> Result<Kernel, JitError> {
    let live = live_nodes(g);
    // Integer divisions may raise, so they run even when their value is unused.
    let raising: Vec<usize> = (0..g.nodes.len()).filter(|&i| can_raise(g, i)).collect();
    let shape = g.nodes[g.outputs[0]].shape.clone();
    for &o in &g.outputs {
        if g.nodes[o].shape != shape {
            return Err(JitError::Unsupported(format!(
                "outputs of different shapes ({:?} and {:?})",
                shape, g.nodes[o].shape
            )));
        }
    }
    let n_in = spec.inputs.len();
    let mut used = vec![false; n_in];
    let mut strides = Vec::new();
    for (i, n) in g.nodes.iter().enumerate() {
        if let NodeKind::Input(k) = n.kind
            && live[i]
        {
            used[k] = true;
        }
    }
    // Used inputs addressed from another input's pointer: (that input, distance in bytes).
    let mut share: Vec<Option<(usize, i32)>> = vec![None; n_in];
    for (k, s) in spec.inputs.iter().enumerate() {
        let Some(a) = s.alias else { continue };
        let root = spec.inputs.get(a.of).filter(|r| a.of < k && r.alias.is_none());
        if root.is_none_or(|r| (r.dtype, &r.sizes, &r.strides) != (s.dtype, &s.sizes, &s.strides)) {
            return Err(JitError::Unsupported(format!("input {k}: alias of input {} of another layout", a.of)));
        }
        if used[k] {
            share[k] = Some((a.of, a.bytes));
        }
    }
    let needed = |k: usize| used[k] || share.iter().any(|s| s.is_some_and(|(r, _)| r == k));
    for (k, s) in spec.inputs.iter().enumerate() {
        if !needed(k) {
            strides.push(vec![0; shape.len()]);
            continue;
        }
        let e = expand_strides(&s.sizes, &s.strides, &shape)
            .ok_or_else(|| JitError::Unsupported(format!("input {k} of shape {:?} does not broadcast to {shape:?}", s.sizes)))?;
        strides.push(e);
    }
    for _ in &g.outputs {
        strides.push(runtime::tensor::contiguous_strides(&shape));
    }
    let layout = Layout::new(&shape, strides);
    let lanes = vector_lanes(g, &live, &layout, n_in, &used);
    let raising_op = raising.first().map(|&i| g.nodes[i].op);
    for &i in &raising {
        if broadcast_into(&g.nodes[i].shape, &shape).is_none() {
            return Err(JitError::Unsupported("an unused integer division does not broadcast to the output".into()));
        }
    }
    let mut result = build(g, &layout, &used, &share, lanes, options);
    let mut lanes_used = lanes;
    if let (Err(e), true) = (&result, lanes > 1) {
        if std::env::var_os("JIT_DEBUG").is_some() {
            eprintln!("jit: vector code failed ({e}); using scalar code");
        }
        // Some vector lowering is missing on this machine: fall back to scalar code.
        result = build(g, &layout, &used, &share, 1, options);
        lanes_used = 1;
    }
    let (module, entry, pool) = result?;
    let outputs = g.outputs.iter().map(|&o| (g.nodes[o].dtype, shape.clone())).collect();
    Ok(Kernel {
        entry,
        _code: Mutex::new(Code { module: Some(module) }),
        pool: [pool.clone(), pool],
        spec: spec.clone(),
        outputs,
        numel: layout.numel,
        lanes: lanes_used,
        compile_time: start.elapsed(),
        compiled_at: Instant::now(),
        raising_op,
    })
}

type Built = (JITModule, EntryFn, Vec<PoolEntry>);

/// Cranelift's per-function state (the function, its analyses, the register allocator's
/// context, the builder's scratch), kept per thread and reused by every compilation on it:
/// a compile clears it and keeps its allocations, so a thread's later kernels neither grow
/// nor free them again. A thread's first compilation builds it (and pays for it).
struct CompileContext {
    ctx: cranelift_codegen::Context,
    fctx: FunctionBuilderContext,
}

thread_local! {
    static COMPILE_CONTEXT: RefCell<Option<CompileContext>> = const { RefCell::new(None) };
}

fn build(g: &Graph, layout: &Layout, used: &[bool], share: &[Option<(usize, i32)>], lanes: u8, options: CodegenOptions) -> Result<Built, JitError> {
    COMPILE_CONTEXT.with(|slot| {
        // A compilation on this thread is under way only if Cranelift re-entered the JIT,
        // which it does not; should it, the inner compilation gets a context of its own.
        let Ok(mut slot) = slot.try_borrow_mut() else {
            let mut fresh = CompileContext { ctx: cranelift_codegen::Context::new(), fctx: FunctionBuilderContext::new() };
            return build_guarded(&mut fresh, g, layout, used, share, lanes, options);
        };
        let cc = slot.get_or_insert_with(|| CompileContext { ctx: cranelift_codegen::Context::new(), fctx: FunctionBuilderContext::new() });
        let r = build_guarded(cc, g, layout, used, share, lanes, options);
        if r.is_err() {
            // A failed compilation may leave the builder mid-function: start the next afresh.
            *slot = None;
        }
        r
    })
}

#[allow(clippy::too_many_arguments)]
fn build_guarded(
    cc: &mut CompileContext,
    g: &Graph,
    layout: &Layout,
    used: &[bool],
    share: &[Option<(usize, i32)>],
    lanes: u8,
    options: CodegenOptions,
) -> Result<Built, JitError> {
    match catch_unwind(AssertUnwindSafe(|| build_inner(cc, g, layout, used, share, lanes, options))) {
        Ok(r) => r,
        Err(_) => Err(JitError::Codegen("code generator panicked".into())),
    }
}

#[allow(clippy::too_many_arguments)]
fn build_inner(
    cc: &mut CompileContext,
    g: &Graph,
    layout: &Layout,
    used: &[bool],
    share: &[Option<(usize, i32)>],
    lanes: u8,
    options: CodegenOptions,
) -> Result<Built, JitError> {
    // Heavy vector bodies with several transcendental functions run in phases over blocks of
    // vectors (see `fission`); whether every phase calls a block routine also picks the ISA.
    let multi_use = multi_use(g);
    let (plan, routine_fission) = fission_plan(g, &multi_use, layout.numel, lanes, options).map_or((None, false), |(p, r)| (Some(p), r));
    let isa = isa_for(routine_fission && layout.numel < fission::MIN_ELEMENTS)?;
    let mut module = JITModule::new(JITBuilder::with_isa(isa, default_libcall_names()));
    let ptr = module.target_config().pointer_type();
    let CompileContext { ctx, fctx } = cc;
    module.clear_context(ctx);
    let mut sig = module.make_signature();
    for _ in 0..4 {
        sig.params.push(AbiParam::new(ptr));
    }
    let id = module
        .declare_function("fusion_kernel", Linkage::Export, &sig)
        .map_err(|e| JitError::Codegen(e.to_string()))?;
    ctx.func.signature = sig;
    ctx.func.name = UserFuncName::user(0, id.as_u32());
    let pool = {
        let mut b = FunctionBuilder::new(&mut ctx.func, fctx);
        let err = b.declare_var(types::I32);
        let pool = emit_function(&mut b, g, layout, used, share, lanes, ptr, err, options, plan.as_ref(), multi_use)?;
        b.seal_all_blocks();
        b.finalize(module.target_config());
        pool
    };
    let dump = std::env::var_os("JIT_DUMP").is_some();
    if dump {
        ctx.set_disasm(true);
    }
    module.define_function(id, ctx).map_err(|e| JitError::Codegen(format!("{e:?}")))?;
    if dump {
        if let Some(code) = ctx.compiled_code() {
            eprintln!("jit: {lanes}-lane kernel, {} bytes of code\n{}", code.code_info().total_size, code.vcode.as_deref().unwrap_or(""));
            if let Some(path) = std::env::var_os("JIT_DUMP_BIN") {
                if let Err(e) = outfile::write(std::path::Path::new(&path), code.code_buffer()) {
                    eprintln!("jit: {e}");
                }
            }
        }
    }
    module.clear_context(ctx);
    module.finalize_definitions().map_err(|e| JitError::Codegen(e.to_string()))?;
    let code = module.get_finalized_function(id);
    // SAFETY: `code` is the finalized entry of a function declared with four pointer-sized
    // parameters and no results, matching `EntryFn` under the platform's C calling convention.
    let entry = unsafe { std::mem::transmute::<*const u8, EntryFn>(code) };
    Ok((module, entry, pool))
}

/// Emits the kernel: `used` says which inputs the graph reads, `share` which of those are read
/// through another input's pointer at a byte distance (see `spec::Alias`), `options` whether
/// fissioned phases may call the block routines, `plan` the phases of a fissioned body and
/// `multi_use` as `codegen::multi_use`.
#[allow(clippy::too_many_arguments)]
fn emit_function(
    b: &mut FunctionBuilder,
    g: &Graph,
    layout: &Layout,
    used: &[bool],
    share: &[Option<(usize, i32)>],
    lanes: u8,
    ptr: types::Type,
    err: cranelift_frontend::Variable,
    options: CodegenOptions,
    plan: Option<&Plan>,
    multi_use: Vec<bool>,
) -> Result<Vec<PoolEntry>, JitError> {
    let n_in = used.len();
    let n_ops = layout.strides.len();
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let params = b.block_params(entry).to_vec();
    let (args, start, end, errp) = (params[0], params[1], params[2], params[3]);
    let zero32 = b.ins().iconst(types::I32, 0);
    b.def_var(err, zero32);
    let mut es: Vec<i64> = (0..n_ops)
        .map(|k| if k < n_in { dtype_of_input(g, k) } else { g.nodes[g.outputs[k - n_in]].dtype }.size_bytes() as i64)
        .collect();
    // Operands with a pointer of their own: the outputs, and the used inputs that are not read
    // through another's pointer, and those that others are read through (used or not).
    let mut own: Vec<bool> = (0..n_ops).map(|k| k >= n_in || (used[k] && share[k].is_none())).collect();
    for (k, s) in share.iter().enumerate() {
        if let Some((r, _)) = *s {
            own[r] = true;
            es[r] = es[k];
        }
    }
    // Heavy vector bodies read their constants from the pool (its address and its copy's follow
    // the operands' in `ptrs`).
    let pool_base = (lanes > 1 && heavy(g)).then(|| {
        [0, 1].map(|i| b.ins().load(ptr, MemFlagsData::trusted(), args, ((n_ops + i) * 8) as i32))
    });
    let row = b.create_block();
    let exit = b.create_block();
    let prelude = b.create_block();
    let empty = b.ins().icmp(IntCC::SignedGreaterThanOrEqual, start, end);
    let entry_end = b.ins().brif(empty, exit, &[], prelude, &[]);

    b.switch_to_block(prelude);
    let inner = layout.inner() as i64;
    let (row0, col0) = udiv_const(b, start, inner as u64);
    for _ in 0..3 {
        b.append_block_param(row, ptr);
    }
    b.ins().jump(row, &[row0.into(), col0.into(), start.into()]);

    // Row header: row pointers, the span of columns, and row-invariant inputs. The operands'
    // base addresses are loaded here rather than once in the entry block: reloading them per
    // row costs what reloading them from spill slots would, and keeps them out of the register
    // allocator's way across the loops.
    b.switch_to_block(row);
    let rp = b.block_params(row).to_vec();
    let (r, c, lin) = (rp[0], rp[1], rp[2]);
    let nd = layout.shape.len();
    let mut offs: Vec<Option<Value>> = vec![None; n_ops];
    let mut rem = r;
    for d in (0..nd - 1).rev() {
        let (q, idx) = udiv_const(b, rem, layout.shape[d] as u64);
        rem = q;
        // One product per distinct stride in bytes.
        let mut products: HashMap<i64, Value> = HashMap::new();
        for k in 0..n_ops {
            if !own[k] || layout.strides[k][d] == 0 {
                continue;
            }
            let bytes = layout.strides[k][d] as i64 * es[k];
            let t = *products.entry(bytes).or_insert_with(|| b.ins().imul_imm_s(idx, bytes));
            offs[k] = Some(match offs[k] {
                Some(o) => b.ins().iadd(o, t),
                None => t,
            });
        }
    }
    let mut row_ptr = vec![None; n_ops];
    for k in 0..n_ops {
        if own[k] {
            let p = b.ins().load(ptr, MemFlagsData::trusted(), args, (k * 8) as i32);
            row_ptr[k] = Some(match offs[k] {
                Some(o) => b.ins().iadd(p, o),
                None => p,
            });
        }
    }
    let inner_v = b.ins().iconst(ptr, inner);
    let left_row = b.ins().isub(inner_v, c);
    let left_all = b.ins().isub(end, lin);
    let span = b.ins().umin(left_row, left_all);
    let col_end = b.ins().iadd(c, span);
    let inner_stride: Vec<usize> = layout.strides.iter().map(|s| *s.last().unwrap_or(&0)).collect();

    let hoist = Hoist::before(entry_end);
    let mut em = Emitter { b, g, ptr, err, fma: has_fma(), pool: None, multi_use, hoist, phase: None, carry: Vec::new() };
    let next_row = em.b.create_block();
    // Light kernels keep a scalar tail (their body is small; the padding code would cost more
    // to compile than the body); heavy ones (a transcendental function, or many ops) run the
    // tail through the padded vector body, which halves what Cranelift compiles.
    // When every row holds whole vectors, the vector loop covers every row exactly (callers
    // split the space at multiples of `lanes`, see `EntryFn`): neither tail is emitted.
    let whole = lanes > 1 && inner % lanes as i64 == 0;
    let scalar_tail = lanes == 1 || (!heavy(g) && !whole);
    let padded_tail = lanes > 1 && !scalar_tail && !whole;
    // Per input: the operand whose pointer it is read through, and at what distance. The
    // padded tail copies each input to the stack and fissioned bodies take a pointer per
    // input, so there an alias gets a row pointer of its own.
    let mut read_via: Vec<(usize, i32)> = (0..n_in).map(|k| (k, 0)).collect();
    for (k, s) in share.iter().enumerate() {
        let Some((r, off)) = *s else { continue };
        if padded_tail || plan.is_some() {
            row_ptr[k] = row_ptr[r].map(|p| em.b.ins().iadd_imm_s(p, off as i64));
        } else {
            read_via[k] = (r, off);
        }
    }
    // Inputs that do not move along the row are loaded once per row.
    let mut invariant_scalar: HashMap<usize, Value> = HashMap::new();
    for k in 0..n_in {
        let (r, off) = read_via[k];
        if used[k] && inner_stride[k] == 0
            && let Some(p) = row_ptr[r]
        {
            let d = dtype_of_input(g, k);
            let v = em.load_at(Mode { lanes: 1 }, d, p, off);
            invariant_scalar.insert(k, v);
        }
    }
    let sloop = em.b.create_block();
    em.b.append_block_param(sloop, ptr);
    if lanes > 1 {
        // One vector body serves the row and its tail: the body takes the address of its
        // first element in every strided operand. The last `rem < lanes` elements run through
        // it over stack copies padded with the row's last element, and only `rem` results are
        // copied back (one body instead of a vector body and a scalar tail halves the code).
        let mode = Mode { lanes };
        let mut invariant_vec: HashMap<usize, Value> = HashMap::new();
        for (&k, &v) in &invariant_scalar {
            let d = dtype_of_input(g, k);
            invariant_vec.insert(k, em.broadcast(mode, d, v));
        }
        // Operands read or written through pointers of their own: strided inputs and the outputs.
        let moving: Vec<usize> = (0..n_ops).filter(|&k| row_ptr[k].is_some() && (k >= n_in || inner_stride[k] != 0)).collect();
        let slots: Vec<_> = if !padded_tail {
            Vec::new()
        } else {
            moving.iter().map(|_| em.b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 16, 4))).collect()
        };
        let vloop = em.b.create_block();
        em.b.append_block_param(vloop, ptr);
        let go = em.b.create_block();
        // Without the padded tail or phases, the body addresses every operand from its row
        // pointer and the column (an x86 address mode); otherwise it is a block of its own,
        // taking the address of its first element in every operand.
        let direct = !padded_tail && plan.is_none();
        let vbody = if direct { go } else { em.b.create_block() };
        if !direct {
            em.b.append_block_param(vbody, ptr); // j
            if padded_tail {
                em.b.append_block_param(vbody, types::I8); // 1 in the tail
            }
            if plan.is_some() {
                em.b.append_block_param(vbody, ptr); // vectors in the block
            }
            for _ in &moving {
                em.b.append_block_param(vbody, ptr);
            }
            // The pool's address: a parameter of the body that differs between the row's
            // vectors and the padded tail (the pool and its copy), so that its loads, pure as
            // they are, would not be hoisted out of the loop by an optimizer.
            if pool_base.is_some() {
                em.b.append_block_param(vbody, ptr);
            }
        }
        let tail = if scalar_tail {
            sloop
        } else if whole {
            next_row
        } else {
            let t = em.b.create_block();
            em.b.append_block_param(t, ptr);
            t
        };
        em.b.ins().jump(vloop, &[c.into()]);

        em.b.switch_to_block(vloop);
        let j = em.b.block_params(vloop)[0];
        let jn = em.b.ins().iadd_imm_s(j, lanes as i64);
        let fits = em.b.ins().icmp(IntCC::SignedLessThanOrEqual, jn, col_end);
        let tail_args: &[cranelift_codegen::ir::BlockArg] = if whole { &[] } else { &[j.into()] };
        em.b.ins().brif(fits, go, &[], tail, tail_args);
        em.b.switch_to_block(go);
        let column = j;
        let mut args: Vec<cranelift_codegen::ir::BlockArg> = vec![j.into()];
        if padded_tail {
            args.push(em.b.ins().iconst(types::I8, 0).into());
        }
        if plan.is_some() {
            let left = em.b.ins().isub(col_end, j);
            let vectors = em.b.ins().ushr_imm_u(left, lanes.trailing_zeros() as i64);
            let most = em.b.ins().iconst(ptr, BLOCK_VECTORS);
            args.push(em.b.ins().umin(vectors, most).into());
        }
        for &k in &moving {
            let off = scale(em.b, j, es[k]);
            let p = row_ptr[k].map(|p| em.b.ins().iadd(p, off)).unwrap_or(off);
            args.push(p.into());
        }
        if let Some([p, _]) = pool_base {
            args.push(p.into());
        }
        if !direct {
            em.b.ins().jump(vbody, &args);
        }

        if padded_tail {
            em.b.switch_to_block(tail);
            let j = em.b.block_params(tail)[0];
            let rem = em.b.ins().isub(col_end, j);
            let any = em.b.ins().icmp_imm_s(IntCC::SignedGreaterThan, rem, 0);
            let pad = em.b.create_block();
            em.b.ins().brif(any, pad, &[], next_row, &[]);
            em.b.switch_to_block(pad);
            let last = em.b.ins().iadd_imm_s(rem, -1);
            let one8 = em.b.ins().iconst(types::I8, 1);
            let mut args: Vec<cranelift_codegen::ir::BlockArg> = vec![j.into(), one8.into()];
            if plan.is_some() {
                args.push(em.b.ins().iconst(ptr, 1).into());
            }
            for (&k, &slot) in moving.iter().zip(&slots) {
                let sp = em.b.ins().stack_addr(ptr, slot, 0);
                if k < n_in {
                    let it = int_of_size(es[k]);
                    let off = scale(em.b, j, es[k]);
                    let src = row_ptr[k].map(|p| em.b.ins().iadd(p, off)).unwrap_or(off);
                    for i in 0..lanes as i64 {
                        let a = if i == 0 {
                            src
                        } else {
                            let ic = em.b.ins().iconst(ptr, i);
                            let idx = em.b.ins().umin(ic, last);
                            let o = scale(em.b, idx, es[k]);
                            em.b.ins().iadd(src, o)
                        };
                        let v = em.b.ins().load(it, MemFlagsData::trusted(), a, 0);
                        em.b.ins().store(MemFlagsData::trusted(), v, sp, (i * es[k]) as i32);
                    }
                }
                args.push(sp.into());
            }
            if let Some([_, p]) = pool_base {
                args.push(p.into());
            }
            em.b.ins().jump(vbody, &args);
        }

        let (j, in_tail, vectors, body_ptr, pool) = if direct {
            (column, None, None, row_ptr.clone(), pool_base.map(|[p, _]| p))
        } else {
            em.b.switch_to_block(vbody);
            let params = em.b.block_params(vbody).to_vec();
            let mut first = 1 + usize::from(padded_tail);
            let vectors = plan.as_ref().map(|_| params[first]);
            first += usize::from(plan.is_some());
            let mut body_ptr: Vec<Option<Value>> = vec![None; n_ops];
            for (i, &k) in moving.iter().enumerate() {
                body_ptr[k] = Some(params[first + i]);
            }
            let pool = pool_base.map(|_| params[first + moving.len()]);
            (params[0], padded_tail.then(|| params[1]), vectors, body_ptr, pool)
        };
        let mut body_access: Vec<Option<Access>> = vec![None; n_in];
        let mut body_off = vec![0; n_in];
        for k in 0..n_in {
            let (r, off) = read_via[k];
            if let Some(&v) = invariant_vec.get(&k) {
                body_access[k] = Some(Access::Invariant(v));
            } else if let Some(p) = body_ptr[r] {
                body_access[k] = Some(Access::Strided { row_ptr: p, stride_bytes: es[k] });
                body_off[k] = off;
            }
        }
        if let Some(base) = pool {
            em.pool = Some(ConstPool { base, data: Vec::new() });
        }
        let step = match (&plan, vectors) {
            (Some(plan), Some(nv)) => {
                emit_phases(&mut em, mode, plan, nv, &body_access, &body_ptr, &es, n_in, options)?;
                em.b.ins().imul_imm_s(nv, lanes as i64)
            }
            _ => {
                emit_body(&mut em, mode, direct.then_some(j), &body_access, &body_off, &body_ptr, &es, n_in)?;
                em.b.ins().iconst(ptr, lanes as i64)
            }
        };
        if scalar_tail {
            let jn = em.b.ins().iadd_imm_s(j, lanes as i64);
            em.b.ins().jump(vloop, &[jn.into()]);
        } else if let Some(in_tail) = in_tail {
            let copy = em.b.create_block();
            let next = em.b.create_block();
            em.b.ins().brif(in_tail, copy, &[], next, &[]);
            em.b.switch_to_block(next);
            let jn = em.b.ins().iadd(j, step);
            em.b.ins().jump(vloop, &[jn.into()]);
            // Copy back element 0 (rem >= 1), then element i while i < rem.
            em.b.switch_to_block(copy);
            let rem = em.b.ins().isub(col_end, j);
            let copy_back = |em: &mut Emitter, i: i64| {
                for (&k, &slot) in moving.iter().zip(&slots) {
                    if k < n_in {
                        continue;
                    }
                    let Some(dst) = row_ptr[k] else { continue };
                    let it = int_of_size(es[k]);
                    let v = em.b.ins().stack_load(ptr, it, slot, (i * es[k]) as i32);
                    let ji = em.b.ins().iadd_imm_s(j, i);
                    let off = scale(em.b, ji, es[k]);
                    let a = em.b.ins().iadd(dst, off);
                    em.b.ins().store(MemFlagsData::trusted(), v, a, 0);
                }
            };
            copy_back(&mut em, 0);
            for i in 1..(lanes as i64 - 1) {
                let more = em.b.ins().icmp_imm_s(IntCC::SignedGreaterThan, rem, i);
                let blk = em.b.create_block();
                em.b.ins().brif(more, blk, &[], next_row, &[]);
                em.b.switch_to_block(blk);
                copy_back(&mut em, i);
            }
            em.b.ins().jump(next_row, &[]);
        } else {
            let jn = em.b.ins().iadd(j, step);
            em.b.ins().jump(vloop, &[jn.into()]);
        }
    } else {
        em.b.ins().jump(sloop, &[c.into()]);
    }
    if scalar_tail {
        // Scalar loop: the whole row, or the tail of the vector loop.

        let sbody = em.b.create_block();
        em.b.switch_to_block(sloop);
        let j = em.b.block_params(sloop)[0];
        let more = em.b.ins().icmp(IntCC::SignedLessThan, j, col_end);
        em.b.ins().brif(more, sbody, &[], next_row, &[]);
        em.b.switch_to_block(sbody);
        let accesses: Vec<Option<Access>> = (0..n_in)
            .map(|k| {
                if let Some(&v) = invariant_scalar.get(&k) {
                    Some(Access::Invariant(v))
                } else {
                    row_ptr[read_via[k].0].map(|p| Access::Strided { row_ptr: p, stride_bytes: inner_stride[k] as i64 * es[k] })
                }
            })
            .collect();
        let offsets: Vec<i32> = read_via.iter().map(|&(_, off)| off).collect();
        let out_es: Vec<i64> = (0..n_ops).map(|k| inner_stride[k] as i64 * es[k]).collect();
        emit_body(&mut em, Mode { lanes: 1 }, Some(j), &accesses, &offsets, &row_ptr, &out_es, n_in)?;
        let j1 = em.b.ins().iadd_imm_s(j, 1);
        em.b.ins().jump(sloop, &[j1.into()]);
    }

    em.b.switch_to_block(next_row);
    let lin2 = em.b.ins().iadd(lin, span);
    let r1 = em.b.ins().iadd_imm_s(r, 1);
    let zero = em.b.ins().iconst(ptr, 0);
    let again = em.b.ins().icmp(IntCC::SignedLessThan, lin2, end);
    em.b.ins().brif(again, row, &[r1.into(), zero.into(), lin2.into()], exit, &[]);

    em.b.switch_to_block(exit);
    // Only integer divisions set the error code; without one it stays 0, and reading it here
    // would carry it through every loop as a block parameter.
    if (0..g.nodes.len()).any(|i| can_raise(g, i)) {
        let e = em.b.use_var(err);
        let old = em.b.ins().load(types::I32, MemFlagsData::trusted(), errp, 0);
        let e = em.b.ins().bor(old, e);
        em.b.ins().store(MemFlagsData::trusted(), e, errp, 0);
    }
    em.b.ins().return_(&[]);
    Ok(em.pool.map(|p| p.data).unwrap_or_default())
}



/// Per node: whether the outputs (or an integer division, which may raise) depend on it.
fn live_nodes(g: &Graph) -> Vec<bool> {
    let mut live = vec![false; g.nodes.len()];
    let mut stack: Vec<usize> = g.outputs.clone();
    stack.extend((0..g.nodes.len()).filter(|&i| can_raise(g, i)));
    while let Some(n) = stack.pop() {
        if std::mem::replace(&mut live[n], true) {
            continue;
        }
        g.nodes[n].kind.for_each_operand(|a| stack.push(a));
    }
    live
}

/// Emits a fissioned vector body (see `fission`): for `nv` (at least 1) vectors from the
/// operands' pointers on, one loop per phase, each computing its cut for every vector into a
/// scratch buffer on the stack, and a last loop computing and storing the outputs. The loops
/// count the byte offset of a vector (16 bytes); operands of narrower vectors (bools) scale it.
///
/// With `options.block_routines`, a phase whose cut has a block routine (see `block`) is a
/// call of that routine over the block instead: its argument is read from an input or an
/// earlier cut's buffer where it is one, or computed into the cut's own buffer, which the
/// routine then overwrites with the results. The arguments of consecutive such phases are
/// computed in one loop (a phase reading a cut whose call is still pending starts a new
/// group), so a block makes one pass over its inputs for all of them. Such a body first
/// prefetches every operand's next block (see `Phases::prefetch_next`).
#[allow(clippy::too_many_arguments)]
fn emit_phases(
    em: &mut Emitter,
    mode: Mode,
    plan: &Plan,
    nv: Value,
    accesses: &[Option<Access>],
    out_ptr: &[Option<Value>],
    es: &[i64],
    n_in: usize,
    options: CodegenOptions,
) -> Result<(), JitError> {
    let g = em.g;
    let end = em.b.ins().ishl_imm_u(nv, 4);
    // One stack slot holds every scratch buffer: the cuts' first, then the splits' (it grows
    // as `Emitter::split` adds buffers).
    let entries = plan.cuts.len() as u32;
    let scratch = em.b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, entries * scratch_entry(1) as u32, 4));
    let routines: Vec<Option<RoutinePhase>> = plan
        .cuts
        .iter()
        .map(|&c| if options.block_routines && mode.lanes == 4 { routine_phase(g, c) } else { None })
        .collect();
    let ph = Phases { mode, plan, routines: &routines, accesses, scratch, end, nv };
    if routines.iter().any(Option::is_some) {
        ph.prefetch_next(em, out_ptr, es);
    }
    let mut pending: Vec<usize> = Vec::new();
    for (phase, reads) in plan.reads.iter().enumerate() {
        let routine = routines.get(phase).copied().flatten();
        if routine.is_none() || reads.iter().any(|k| pending.contains(k)) {
            ph.calls(em, &pending)?;
            pending.clear();
        }
        if routine.is_some() {
            pending.push(phase);
            continue;
        }
        let root = plan.cuts.get(phase).copied().unwrap_or(usize::MAX);
        let (mut cache, at_scratch) = ph.open(em, root, reads);
        let off = em.phase.map_or(at_scratch, |p| p.off);
        let input = |em: &mut Emitter<'_, '_>, k: usize| ph.input(em, off, k);
        if phase < plan.cuts.len() {
            let v = em.node(mode, root, &mut cache, &input)?;
            // The root's expansion may have split the phase: store in the loop it ended in.
            let at = em.phase.map_or(at_scratch, |p| p.at);
            em.b.ins().store(MemFlagsData::trusted(), v, at, scratch_entry(phase as u32));
        } else {
            let mut values = Vec::with_capacity(g.outputs.len());
            for &o in &g.outputs {
                values.push(em.node(mode, o, &mut cache, &input)?);
            }
            for (k, (&o, v)) in g.outputs.iter().zip(values).enumerate() {
                let Some(p) = out_ptr[n_in + k] else { continue };
                let a = ph.at(em, off, p, es[n_in + k] * mode.lanes as i64);
                em.store(mode, g.nodes[o].dtype, v, a);
            }
        }
        ph.close(em);
    }
    em.phase = None;
    Ok(())
}

/// A phase of a fissioned body computed by a block routine (see `block`): the routine and the
/// node whose values it maps; for a capped `exp` (`clamp(exp(x), max=c)`, see `fission`) the
/// `exp` node too, whose values the cut's buffer then holds (its readers apply the clamp).
#[derive(Clone, Copy)]
struct RoutinePhase {
    f: BlockFn,
    arg: NodeId,
    exp: Option<NodeId>,
}

/// The block routine computing cut `root`, if it has one on this host.
fn routine_phase(g: &Graph, root: NodeId) -> Option<RoutinePhase> {
    let f32_node = |n: NodeId| g.nodes[n].dtype == DType::F32;
    if !f32_node(root) {
        return None;
    }
    match g.nodes[root].kind {
        NodeKind::Unary(u, a) if f32_node(a) => block::routine(u).map(|f| RoutinePhase { f, arg: a, exp: None }),
        NodeKind::Binary(Binary::ClampHi, e, _) => match g.nodes[e].kind {
            NodeKind::Unary(Unary::Exp, x) if f32_node(e) && f32_node(x) => {
                block::routine(Unary::Exp).map(|f| RoutinePhase { f, arg: x, exp: Some(e) })
            }
            _ => None,
        },
        _ => None,
    }
}

/// What the loops and calls of one fissioned body share.
struct Phases<'p> {
    mode: Mode,
    plan: &'p Plan,
    routines: &'p [Option<RoutinePhase>],
    accesses: &'p [Option<Access>],
    scratch: StackSlot,
    /// The block's size in bytes of vectors (16 per vector), and in vectors.
    end: Value,
    nv: Value,
}

impl Phases<'_> {
    /// Starts a loop over the block's vectors computing `root` (`usize::MAX`: no cut, which
    /// no expansion may split), with the cuts `reads` loaded from scratch into the returned
    /// cache; also returns the current vector's address in the scratch slot.
    fn open(&self, em: &mut Emitter, root: NodeId, reads: &[usize]) -> (HashMap<NodeId, Value>, Value) {
        let ptr = em.ptr;
        let head = em.b.create_block();
        em.b.append_block_param(head, ptr);
        let zero = em.b.ins().iconst(ptr, 0);
        em.b.ins().jump(head, &[zero.into()]);
        em.b.switch_to_block(head);
        let off = em.b.block_params(head)[0];
        let base = em.b.ins().stack_addr(ptr, self.scratch, 0);
        let at = em.b.ins().iadd(base, off);
        // Buffers added by earlier splits stay allocated (the slot only grows).
        let entries = em.b.func.sized_stack_slots[self.scratch].size / scratch_entry(1) as u32;
        em.phase = Some(PhaseLoop { root, head, off, end: self.end, scratch: self.scratch, entries, at, split: false });
        let mut cache = HashMap::new();
        for &k in reads {
            let c = self.plan.cuts[k];
            let v = em.b.ins().load(self.mode.ty(em.g.nodes[c].dtype), MemFlagsData::trusted(), at, scratch_entry(k as u32));
            // A capped `exp` computed by a routine left `exp`'s values: the clamp is applied here.
            let node = self.routines[k].and_then(|r| r.exp).unwrap_or(c);
            cache.insert(node, v);
        }
        (cache, at)
    }

    /// Ends the loop [`Phases::open`] started (or the last one its root's expansion split
    /// it into).
    fn close(&self, em: &mut Emitter) {
        let Some(p) = em.phase else { return };
        let next = em.b.ins().iadd_imm_s(p.off, 16);
        let more = em.b.ins().icmp(IntCC::UnsignedLessThan, next, p.end);
        let after = em.b.create_block();
        em.b.ins().brif(more, p.head, &[next.into()], after, &[]);
        em.b.switch_to_block(after);
    }

    /// The address of the vector at byte offset `off` (of 16-byte vectors) in an operand of
    /// `bytes` bytes per vector starting at `p`.
    fn at(&self, em: &mut Emitter, off: Value, p: Value, bytes: i64) -> Value {
        let o = if bytes == 16 {
            off
        } else if bytes > 0 && (bytes as u64).is_power_of_two() && bytes < 16 {
            em.b.ins().ushr_imm_u(off, (16 / bytes).trailing_zeros() as i64)
        } else {
            let v = em.b.ins().ushr_imm_u(off, 4);
            scale(em.b, v, bytes)
        };
        em.b.ins().iadd(p, o)
    }

    /// Input `k` at the vector of byte offset `off`.
    fn input(&self, em: &mut Emitter, off: Value, k: usize) -> Value {
        let d = dtype_of_input(em.g, k);
        match self.accesses.get(k).copied().flatten() {
            Some(Access::Invariant(v)) => v,
            Some(Access::Strided { row_ptr, stride_bytes }) => {
                let a = self.at(em, off, row_ptr, stride_bytes * self.mode.lanes as i64);
                em.load(self.mode, d, a)
            }
            // Unused inputs are never reached from a live node.
            None => em.iconst(self.mode.ty(DType::I32), 0),
        }
    }

    /// Prefetches the next block of every operand read or written through a pointer (its
    /// `nv` vectors after this block's). The phases interrupt an operand's stream for most of
    /// a block's time (the routines read only scratch), so the hardware prefetcher, which
    /// runs only a little ahead of the accesses, leaves the next block's loads to miss.
    fn prefetch_next(&self, em: &mut Emitter, out_ptr: &[Option<Value>], es: &[i64]) {
        let ptr = em.ptr;
        let n_in = self.accesses.len();
        let mut targets = Vec::new();
        for a in self.accesses.iter().flatten() {
            if let Access::Strided { row_ptr, stride_bytes } = *a {
                targets.push((row_ptr, stride_bytes, false));
            }
        }
        for (k, p) in out_ptr.iter().enumerate().skip(n_in) {
            if let Some(p) = *p {
                targets.push((p, es[k], true));
            }
        }
        let mut sig = Signature::new(em.b.func.signature.call_conv);
        sig.params.extend([AbiParam::new(ptr); 2]);
        let sref = em.b.import_signature(sig);
        for (p, elem_bytes, write) in targets {
            let Some(f) = block::prefetch(write) else { return };
            let bytes = em.b.ins().imul_imm_s(self.nv, elem_bytes * self.mode.lanes as i64);
            let callee = em.b.ins().iconst(ptr, f as usize as i64);
            em.b.ins().call_indirect(sref, callee, &[p, bytes]);
        }
    }

    /// Emits the pending routine phases: one loop computing the arguments that are neither an
    /// input's block nor an earlier cut's buffer into the phases' own buffers, then one call
    /// per phase. The phases read only cuts whose values are complete (see `emit_phases`).
    fn calls(&self, em: &mut Emitter, pending: &[usize]) -> Result<(), JitError> {
        if pending.is_empty() {
            return Ok(());
        }
        let ptr = em.ptr;
        let g = em.g;
        let buffer = |em: &mut Emitter, k: usize| em.b.ins().stack_addr(ptr, self.scratch, scratch_entry(k as u32));
        let phases: Vec<(usize, RoutinePhase)> = pending.iter().filter_map(|&p| self.routines[p].map(|r| (p, r))).collect();
        let mut src: Vec<Option<Value>> = Vec::with_capacity(phases.len());
        let mut computed = Vec::new();
        for &(p, r) in &phases {
            let direct = match g.nodes[r.arg].kind {
                NodeKind::Input(k) => match self.accesses.get(k).copied().flatten() {
                    Some(Access::Strided { row_ptr, stride_bytes: 4 }) => Some(row_ptr),
                    _ => None,
                },
                _ => match self.plan.cuts.iter().position(|&c| c == r.arg) {
                    // A buffer holding a capped `exp`'s unclamped values is not the argument.
                    Some(k) if self.routines[k].is_none_or(|r| r.exp.is_none()) => Some(buffer(em, k)),
                    _ => None,
                },
            };
            if direct.is_none() {
                computed.push((p, r.arg));
            }
            src.push(direct);
        }
        if !computed.is_empty() {
            let mut reads: Vec<usize> = computed.iter().flat_map(|&(p, _)| self.plan.reads[p].iter().copied()).collect();
            reads.sort_unstable();
            reads.dedup();
            let (mut cache, at) = self.open(em, usize::MAX, &reads);
            let off = em.phase.map_or(at, |p| p.off);
            let input = |em: &mut Emitter<'_, '_>, k: usize| self.input(em, off, k);
            for &(p, arg) in &computed {
                let v = em.node(self.mode, arg, &mut cache, &input)?;
                em.b.ins().store(MemFlagsData::trusted(), v, at, scratch_entry(p as u32));
            }
            self.close(em);
            em.phase = None;
        }
        let n = em.b.ins().ishl_imm_u(self.nv, self.mode.lanes.trailing_zeros() as i64);
        let mut sig = Signature::new(em.b.func.signature.call_conv);
        sig.params.extend([AbiParam::new(ptr); 3]);
        let sref = em.b.import_signature(sig);
        for (&(p, r), s) in phases.iter().zip(src) {
            // In bounds: every buffer holds `BLOCK_VECTORS` vectors and a block has at most
            // that many (`nv`), so `n` values fit in the cut's buffer and in an earlier cut's;
            // an input's block is `nv` whole vectors of the row from its pointer on (or the
            // padded tail's copy of one vector), inside the storage the guard checked.
            let dst = buffer(em, p);
            let src = s.unwrap_or(dst);
            let callee = em.b.ins().iconst(ptr, r.f as usize as i64);
            em.b.ins().call_indirect(sref, callee, &[src, dst, n]);
        }
        Ok(())
    }
}

/// Whether node `i` is an integer division or remainder (which raises on a zero divisor).
fn can_raise(g: &Graph, i: usize) -> bool {
    use crate::group::Binary::*;
    let n = &g.nodes[i];
    matches!(n.kind, NodeKind::Binary(DivTrunc | DivFloor | Rem | Fmod, _, _)) && !n.dtype.is_floating()
}

/// The integer type of an element of `bytes` bytes (to copy elements of any dtype).
fn int_of_size(bytes: i64) -> types::Type {
    match bytes {
        1 => types::I8,
        2 => types::I16,
        4 => types::I32,
        _ => types::I64,
    }
}

/// Whether a kernel's body is large enough that one padded vector body beats a vector body and
/// a scalar tail in compile time: it calls an inline transcendental function or has many ops.
/// The fission plan of a kernel of `numel` elements (see `fission`; `multi_use` as
/// `codegen::multi_use`), and whether each of its cuts calls a block routine; `None` when the
/// body runs unfissioned.
fn fission_plan(g: &Graph, multi_use: &[bool], numel: usize, lanes: u8, options: CodegenOptions) -> Option<(Plan, bool)> {
    if lanes <= 1 || !heavy(g) {
        return None;
    }
    let plan = fission::plan(g, &live_nodes(g), multi_use)?;
    // Routines serve 4-lane (f32) bodies only; see `emit_phases`.
    let routines = options.block_routines && lanes == 4 && plan.cuts.iter().all(|&c| routine_phase(g, c).is_some());
    let min = if routines { fission::MIN_ELEMENTS_ROUTINES } else { fission::MIN_ELEMENTS };
    (numel >= min).then_some((plan, routines))
}

fn heavy(g: &Graph) -> bool {
    g.nodes.len() > 16 || g.nodes.iter().any(|n| matches!(n.kind, NodeKind::Unary(u, _) if fission::transcendental(u)))
}

fn broadcast_into(s: &[usize], shape: &[usize]) -> Option<()> {
    let st = vec![0; s.len()];
    expand_strides(s, &st, shape).map(|_| ())
}

fn dtype_of_input(g: &Graph, k: usize) -> DType {
    g.nodes
        .iter()
        .find_map(|n| match n.kind {
            NodeKind::Input(i) if i == k => Some(n.dtype),
            _ => None,
        })
        .unwrap_or(DType::F32)
}

/// `x * k` for a constant `k` (a shift when `k` is a power of two).
fn scale(b: &mut FunctionBuilder, x: Value, k: i64) -> Value {
    if k > 0 && (k as u64).is_power_of_two() {
        b.ins().ishl_imm_u(x, k.trailing_zeros() as i64)
    } else {
        b.ins().imul_imm_s(x, k)
    }
}

/// `(x / d, x % d)` for `0 <= x < 2^63` and a constant `d`, without a division instruction:
/// shifts for powers of two, otherwise Granlund and Montgomery's multiply by
/// `m = ceil(2^(63 + l) / d)` (`2^(l-1) < d <= 2^l`), which fits in 64 bits for 63-bit
/// dividends, and `x / d = (x m / 2^64) >> (l - 1)`. A dimension of size `d = 0` leaves no
/// element to compute, so the code never runs; it gets `(0, x)`.
fn udiv_const(b: &mut FunctionBuilder, x: Value, d: u64) -> (Value, Value) {
    let ty = b.func.dfg.value_type(x);
    if d == 0 {
        return (b.ins().iconst(ty, 0), x);
    }
    if d.is_power_of_two() {
        let q = b.ins().ushr_imm_u(x, d.trailing_zeros() as i64);
        let r = b.ins().band_imm_u(x, (d - 1) as i64);
        return (q, r);
    }
    let (m, l) = div_magic(d);
    let mv = b.ins().iconst(ty, m as i64);
    let hi = b.ins().umulhi(x, mv);
    let q = b.ins().ushr_imm_u(hi, (l - 1) as i64);
    let qd = b.ins().imul_imm_s(q, d as i64);
    let r = b.ins().isub(x, qd);
    (q, r)
}

/// The multiplier and shift of [`udiv_const`] for a divisor `d` that is not a power of two.
fn div_magic(d: u64) -> (u64, u32) {
    let l = 64 - (d - 1).leading_zeros();
    let m = ((1u128 << (63 + l)).div_ceil(d as u128)) as u64;
    (m, l)
}

/// Emits the computation of all outputs for column `j` of the current row (`None`: the
/// accesses' pointers are already at the element); input `k` is read `offsets[k]` bytes from
/// its access's address.
#[allow(clippy::too_many_arguments)]
fn emit_body(
    em: &mut Emitter,
    mode: Mode,
    j: Option<Value>,
    accesses: &[Option<Access>],
    offsets: &[i32],
    row_ptr: &[Option<Value>],
    out_step: &[i64],
    n_in: usize,
) -> Result<(), JitError> {
    let mut cache = HashMap::new();
    let g = em.g;
    let mut values = Vec::new();
    // The address of element `j` of a row (the row's pointer itself without `j`).
    let at = |em: &mut Emitter<'_, '_>, p: Value, step: i64| match j {
        Some(j) => {
            let off = scale(em.b, j, step);
            em.b.ins().iadd(p, off)
        }
        None => p,
    };
    // Reads input `k` at column `j` of the row.
    let input = |em: &mut Emitter<'_, '_>, k: usize| -> Value {
        let d = dtype_of_input(g, k);
        match accesses.get(k).copied().flatten() {
            Some(Access::Invariant(v)) => v,
            Some(Access::Strided { row_ptr, stride_bytes }) => {
                let addr = at(em, row_ptr, stride_bytes);
                em.load_at(mode, d, addr, offsets[k])
            }
            // Unused inputs are never reached from a live node.
            None => em.iconst(mode.ty(DType::I32), 0),
        }
    };
    for &o in &g.outputs {
        values.push(em.node(mode, o, &mut cache, &input)?);
    }
    for i in 0..g.nodes.len() {
        if can_raise(g, i) {
            em.node(mode, i, &mut cache, &input)?;
        }
    }
    for (i, (&o, v)) in g.outputs.iter().zip(values).enumerate() {
        let k = n_in + i;
        let Some(p) = row_ptr[k] else { continue };
        let addr = at(em, p, out_step[k]);
        em.store(mode, g.nodes[o].dtype, v, addr);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{CodegenOptions, div_magic, fission, fission_plan};
    use crate::group::{Binary, Graph, Node, NodeKind, Unary};

    /// The LSTM cell's gates: two sigmoids and two tanhs.
    fn gates() -> Graph {
        let kinds = [
            NodeKind::Input(0),
            NodeKind::Input(1),
            NodeKind::Unary(Unary::Sigmoid, 0),
            NodeKind::Unary(Unary::Tanh, 1),
            NodeKind::Binary(Binary::Mul, 2, 3),
            NodeKind::Unary(Unary::Sigmoid, 1),
            NodeKind::Binary(Binary::Add, 4, 5),
            NodeKind::Unary(Unary::Tanh, 6),
        ];
        let nodes = kinds.into_iter().map(|kind| Node { kind, dtype: ir::DType::F32, shape: vec![8], op: "test" }).collect();
        Graph { nodes, outputs: vec![7, 6] }
    }

    #[test]
    fn kernels_with_block_routines_are_fissioned_from_fewer_elements() {
        let g = gates();
        let mu = super::multi_use(&g);
        let on = CodegenOptions { block_routines: true };
        let off = CodegenOptions { block_routines: false };
        let has_routines = crate::block::routine(Unary::Tanh).is_some();
        let min = fission::MIN_ELEMENTS_ROUTINES;
        assert_eq!(fission_plan(&g, &mu, min, 4, on).map(|(_, r)| r), has_routines.then_some(true));
        assert_eq!(fission_plan(&g, &mu, min - 1, 4, on), None);
        // Without routines, or in 2-lane bodies, the inline threshold holds.
        assert_eq!(fission_plan(&g, &mu, min, 4, off), None);
        assert_eq!(fission_plan(&g, &mu, fission::MIN_ELEMENTS, 4, off).map(|(_, r)| r), Some(false));
        assert_eq!(fission_plan(&g, &mu, min, 2, on), None);
    }

    /// `x / d` as the code of `udiv_const` computes it.
    fn quotient(x: u64, d: u64) -> u64 {
        let (m, l) = div_magic(d);
        (((x as u128 * m as u128) >> 64) as u64) >> (l - 1)
    }

    #[test]
    fn magic_division_matches_division_over_63_bit_dividends() {
        let divisors = (3..2000u64).filter(|d| !d.is_power_of_two()).chain([4095, 4097, 1 << 20 | 1, 3 << 40, u32::MAX as u64, (1 << 62) + 1]);
        for d in divisors {
            let top = (1u64 << 63) - 1;
            let edges = [0, 1, d - 1, d, d + 1, 2 * d - 1, d.saturating_mul(1001) - 1, top, top - 1, top / d * d, top / d * d - 1];
            let spread = (0..200u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 1);
            for x in edges.into_iter().filter(|&x| x <= top).chain(spread) {
                assert_eq!(quotient(x, d), x / d, "{x} / {d}");
            }
        }
    }
}
