//! The JIT as the runtime's fusion compiler: [`Jit`] implements `runtime::FusionCompiler`.
//!
//! When a program is compiled, each `prim.FusionGroup` is captured as a [`Group`]; a group the
//! JIT cannot lower (an op or dtype it does not compile) is declined and interpreted. When the
//! group's operand types are fully static, the kernel for contiguous inputs of those types is
//! compiled right away, so the first run does not pay for it (and a group whose static types
//! the JIT cannot compile is declined then). At run time the group's kernel looks for a
//! specialization whose dtypes, sizes and strides equal the inputs' (no allocation on that
//! path), compiles one through the shared [`KernelCache`] on a miss, and runs it after the
//! kernel's own guard; inputs it cannot compile for are handed back to the interpreter.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use ir::{Dim, Module, OpId, ValueId};
use runtime::{FusionCompiler, FusionKernel, FusionOutcome, KernelError, OutputAlloc, Tensor};

use crate::cache::{CacheStats, KernelCache};
use crate::group::{Group, schema_of};
use crate::lowering::Lowerings;
use crate::kernel::{Kernel, RunOptions};
use crate::spec::{KernelSpec, TensorSpec};

/// Options of the [`Jit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JitOptions {
    /// Compile the kernel of a group with static operand types when the program is compiled.
    pub precompile: bool,
    /// How kernels split their work across the runtime's intra-op threads.
    pub run: RunOptions,
}

impl Default for JitOptions {
    fn default() -> JitOptions {
        JitOptions { precompile: true, run: RunOptions::default() }
    }
}

#[derive(Debug, Default)]
struct Counters {
    groups_compiled: AtomicU64,
    groups_declined: AtomicU64,
    native_calls: AtomicU64,
    interpreted_calls: AtomicU64,
}

/// What the JIT has done so far (all programs compiled with it, all runtimes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JitStats {
    /// Fusion groups the JIT took when their program was compiled.
    pub groups_compiled: u64,
    /// Fusion groups it declined (they are interpreted).
    pub groups_declined: u64,
    /// Calls that ran native code.
    pub native_calls: u64,
    /// Calls of taken groups that the JIT handed back to the interpreter (inputs it does not
    /// compile for).
    pub interpreted_calls: u64,
    /// The kernel cache: hits, misses, kernels, failed specializations, total compile time.
    pub cache: CacheStats,
    /// Time this JIT's creation spent on state every kernel of the process shares (the host
    /// ISA and its flags); zero when an earlier `Jit` of the process already built it. Kernel
    /// compile times exclude it.
    pub setup_time: Duration,
}

/// The runtime's fusion compiler backed by Cranelift; set it as `CompileOptions::fusion`.
///
/// ```
/// use std::sync::Arc;
/// let jit = Arc::new(jit::Jit::default());
/// let options = runtime::CompileOptions { fusion: Some(jit.clone()), ..Default::default() };
/// # let _ = options;
/// ```
#[derive(Debug)]
pub struct Jit {
    cache: Arc<KernelCache>,
    options: JitOptions,
    counters: Arc<Counters>,
    setup_time: Duration,
    /// The lowering interfaces of the context the JIT was made for, when it was.
    lowerings: Option<Arc<Lowerings>>,
}

impl Default for Jit {
    fn default() -> Jit {
        Jit::new(JitOptions::default())
    }
}

impl Jit {
    /// A JIT with an empty cache. Detects the host ISA (once per process), so that the first
    /// kernel's compile time is its own; the time that took is [`JitStats::setup_time`].
    pub fn new(options: JitOptions) -> Jit {
        let setup_time = crate::kernel::detect_isa();
        Jit { cache: Arc::new(KernelCache::new()), options, counters: Arc::default(), setup_time, lowerings: None }
    }

    /// A JIT that also lowers the ops to which `ctx` attaches a
    /// [`JitLowering`](crate::JitLowering) (a user's dialect's elementwise ops).
    pub fn for_context(ctx: &ir::Context, options: JitOptions) -> Jit {
        Jit { lowerings: Some(Arc::new(Lowerings::of_context(ctx))), ..Jit::new(options) }
    }

    /// The cache every kernel of this JIT goes through.
    pub fn cache(&self) -> &Arc<KernelCache> {
        &self.cache
    }

    pub fn stats(&self) -> JitStats {
        let c = &self.counters;
        JitStats {
            groups_compiled: c.groups_compiled.load(Ordering::Relaxed),
            groups_declined: c.groups_declined.load(Ordering::Relaxed),
            native_calls: c.native_calls.load(Ordering::Relaxed),
            interpreted_calls: c.interpreted_calls.load(Ordering::Relaxed),
            cache: self.cache.stats(),
            setup_time: self.setup_time,
        }
    }

    /// Compile time of every kernel compiled so far, in the order they were compiled.
    pub fn compile_times(&self) -> Vec<Duration> {
        self.cache.compile_times().into_iter().map(|(_, d)| d).collect()
    }

    fn take(&self, m: &Module, op: OpId) -> Result<JitKernel, String> {
        let lowerings = self.lowerings.as_deref().unwrap_or(Lowerings::builtin());
        let group = Group::from_op_with(m, op, lowerings).map_err(|e| e.to_string())?;
        let kernel = JitKernel {
            group: Arc::new(group),
            cache: self.cache.clone(),
            counters: self.counters.clone(),
            specs: RwLock::new(Vec::new()),
            run: self.options.run,
        };
        if self.options.precompile {
            if let Some(spec) = static_spec(m, op) {
                let k = self.cache.get_or_compile(&kernel.group, &spec).map_err(|e| e.to_string())?;
                kernel.remember(k);
            }
        }
        Ok(kernel)
    }
}

/// Whether `v` is likely laid out contiguously at run time: not a view of another tensor (the
/// result of an op whose schema returns an alias of an argument, or an element of a list such
/// an op made). Function arguments and fresh results are taken to be contiguous.
fn likely_contiguous(m: &Module, v: ValueId) -> bool {
    let Some(d) = m.defining_op(v) else { return true };
    let name = m.op_name(d);
    if matches!(name, dialect_prim::LIST_UNPACK | dialect_prim::TUPLE_UNPACK | dialect_prim::TUPLE_INDEX) {
        return m.operands(d).first().is_some_and(|&src| likely_contiguous(m, src));
    }
    let aten = dialect_edge::aten_op(name).map_or(name, |a| a.name());
    schema_of(aten).is_none_or(|s| s.returns_alias_of(0).is_none())
}

/// The spec of contiguous inputs of the group's operand types, when every one is a tensor of
/// known dtype and static shape that is not a view (whose strides are only known at run time).
fn static_spec(m: &Module, op: OpId) -> Option<KernelSpec> {
    let mut inputs = Vec::new();
    for &v in m.operands(op) {
        if !likely_contiguous(m, v) {
            return None;
        }
        let t = m.value_type(v).as_tensor()?;
        let dtype = t.dtype?;
        let sizes = t
            .shape
            .as_ref()?
            .iter()
            .map(|d| match d {
                Dim::Static(n) => usize::try_from(*n).ok(),
                _ => None,
            })
            .collect::<Option<Vec<usize>>>()?;
        inputs.push(TensorSpec::contiguous(dtype, &sizes));
    }
    Some(KernelSpec { inputs })
}

impl FusionCompiler for Jit {
    fn name(&self) -> &str {
        "jit"
    }

    fn compile_group(&self, m: &Module, group: OpId) -> Result<Arc<dyn FusionKernel>, String> {
        match self.take(m, group) {
            Ok(k) => {
                self.counters.groups_compiled.fetch_add(1, Ordering::Relaxed);
                Ok(Arc::new(k))
            }
            Err(e) => {
                self.counters.groups_declined.fetch_add(1, Ordering::Relaxed);
                Err(e)
            }
        }
    }
}

/// One fusion group's kernels, by specialization.
#[derive(Debug)]
struct JitKernel {
    group: Arc<Group>,
    cache: Arc<KernelCache>,
    counters: Arc<Counters>,
    /// The specializations this group has run with (a handful: one per input layout seen).
    specs: RwLock<Vec<Arc<Kernel>>>,
    run: RunOptions,
}

impl JitKernel {
    fn remember(&self, k: Arc<Kernel>) {
        let mut specs = match self.specs.write() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        if !specs.iter().any(|s| Arc::ptr_eq(s, &k)) {
            specs.push(k);
        }
    }

    /// The specialization matching `inputs` exactly, if this group has one.
    fn lookup(&self, inputs: &[Tensor]) -> Option<Arc<Kernel>> {
        let specs = match self.specs.read() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        specs.iter().find(|k| k.accepts(inputs)).cloned()
    }
}

impl FusionKernel for JitKernel {
    fn run(&self, inputs: &[Tensor], alloc: &mut dyn OutputAlloc) -> Result<FusionOutcome, KernelError> {
        let kernel = match self.lookup(inputs) {
            Some(k) => {
                self.cache.record_hit();
                k
            }
            None => match self.cache.get_or_compile(&self.group, &KernelSpec::of(inputs)) {
                Ok(k) => {
                    self.remember(k.clone());
                    k
                }
                Err(e) => {
                    self.counters.interpreted_calls.fetch_add(1, Ordering::Relaxed);
                    return Ok(FusionOutcome::Declined(e.to_string()));
                }
            },
        };
        let mut outs = Vec::with_capacity(kernel.outputs().len());
        for (i, (d, s)) in kernel.outputs().iter().enumerate() {
            outs.push(alloc.output(i, *d, s)?);
        }
        match kernel.run_into_with(inputs, &outs, self.run) {
            Ok(()) => {
                self.counters.native_calls.fetch_add(1, Ordering::Relaxed);
                Ok(FusionOutcome::Ran(outs))
            }
            // The guard refused (an output overlapping an input, say) or the kernel raised
            // (integer division by zero): the interpreter runs the group and reports exactly
            // what PyTorch would.
            Err(e) => {
                self.counters.interpreted_calls.fetch_add(1, Ordering::Relaxed);
                Ok(FusionOutcome::Declined(e.to_string()))
            }
        }
    }
}
