//! Compiling a typed graph to native code, and running the compiled kernel: the guard that
//! checks inputs against the specialization, output allocation, and the split of the
//! iteration space across the runtime's intra-op team (`runtime::parallel`).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use cranelift_jit::JITModule;
use ir::DType;
use runtime::Tensor;

use crate::codegen::PoolEntry;
use crate::error::JitError;
use crate::spec::KernelSpec;

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

mod emit;
mod guard;
mod isa;
mod phases;

pub(crate) use isa::detect_isa;

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
}

#[cfg(test)]
mod tests {
    use super::emit::div_magic;
    use super::phases::fission_plan;
    use crate::block::CodegenOptions;
    use crate::codegen::multi_use;
    use crate::fission;
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
        let mu = multi_use(&g);
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
