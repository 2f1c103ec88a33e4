//! What a program is compiled with: its weights and the compile options.

use std::collections::HashMap;
use std::sync::Arc;

use ir::DType;

use crate::fusion::FusionCompiler;
use crate::tensor::Tensor;

/// Named tensors a program binds its parameters, buffers and lifted constants to.
#[derive(Clone, Debug, Default)]
pub struct Weights {
    pub(super) tensors: HashMap<String, Tensor>,
}

impl Weights {
    pub fn new() -> Weights {
        Weights::default()
    }

    /// Adds (or replaces) a tensor.
    pub fn insert(&mut self, name: impl Into<String>, t: Tensor) {
        self.tensors.insert(name.into(), t);
    }

    /// Adds a tensor from little-endian bytes (converted once, here).
    pub fn insert_bytes(&mut self, name: impl Into<String>, dtype: DType, sizes: &[usize], bytes: &[u8]) -> Result<(), crate::tensor::KernelError> {
        self.insert(name, Tensor::from_bytes(dtype, sizes, bytes)?);
        Ok(())
    }

    pub fn get(&self, name: &str) -> Option<&Tensor> {
        self.tensors.get(name)
    }

    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    /// Names, sorted.
    pub fn names(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.tensors.keys().map(String::as_str).collect();
        v.sort_unstable();
        v
    }
}

impl FromIterator<(String, Tensor)> for Weights {
    fn from_iter<I: IntoIterator<Item = (String, Tensor)>>(iter: I) -> Weights {
        Weights { tensors: iter.into_iter().collect() }
    }
}

/// What to do when inputs match no specialization and no new one may be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GuardPolicy {
    /// Make a new specialization, evicting the least recently made one past the limit.
    Respecialize,
    /// Fail with an error naming the first input that differs.
    Error,
}

/// How to compile and run a program.
#[derive(Clone, Debug)]
pub struct CompileOptions {
    /// The function to run.
    pub function: String,
    /// Plan intermediates into a reused slab (out-variants for the ops that have one).
    pub memory_plan: bool,
    /// Specialize on input dtypes and shapes; when off, one plan serves every shape and grows as needed.
    pub specialize: bool,
    /// Most specializations a runtime keeps.
    pub max_specializations: usize,
    pub on_guard_failure: GuardPolicy,
    /// Check inputs against the signature before running.
    pub validate_inputs: bool,
    /// Compiles `prim.FusionGroup`s to native kernels (the `jit` crate provides one); `None`
    /// interprets every group's region.
    pub fusion: Option<Arc<dyn FusionCompiler>>,
    /// The composite fallback's decompositions: an op without a kernel that has an entry is
    /// decomposed before compiling (built-in table by default; embedders add entries for their
    /// own ops).
    pub decompositions: Arc<transforms::lowering::DecompositionTable>,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            function: "forward".into(),
            memory_plan: true,
            specialize: true,
            max_specializations: 8,
            on_guard_failure: GuardPolicy::Respecialize,
            validate_inputs: true,
            fusion: None,
            decompositions: transforms::lowering::DecompositionTable::core_aten_shared(),
        }
    }
}
