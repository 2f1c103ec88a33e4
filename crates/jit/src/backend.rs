//! The JIT as a fusion-group executor for other layers: a module-independent handle that
//! specializes and caches kernels per input spec and runs them.
//!
//! `runtime` cannot name `jit` (jit depends on runtime), and `transforms` (where the `Backend`
//! trait is being written) sits above both; so the JIT exposes [`FusionJit`], which an
//! interpreter hook or a `Backend` implementation wraps: build it once per `prim.FusionGroup`
//! when the program is linked, call [`FusionJit::run`] at every execution, and interpret the
//! group whenever it returns [`JitError::Unsupported`] or [`JitError::Guard`].

use std::sync::Arc;

use ir::{Module, OpId};
use runtime::Tensor;

use crate::cache::KernelCache;
use crate::error::JitError;
use crate::group::Group;
use crate::spec::KernelSpec;

/// A fusion group ready to run through the JIT.
#[derive(Clone, Debug)]
pub struct FusionJit {
    group: Arc<Group>,
    cache: Arc<KernelCache>,
}

impl FusionJit {
    /// Captures the `prim.FusionGroup` `op` of `m`; kernels go to `cache` (shareable between groups).
    pub fn new(m: &Module, op: OpId, cache: Arc<KernelCache>) -> Result<FusionJit, JitError> {
        Ok(FusionJit { group: Arc::new(Group::from_op(m, op)?), cache })
    }

    pub fn group(&self) -> &Group {
        &self.group
    }

    pub fn cache(&self) -> &Arc<KernelCache> {
        &self.cache
    }

    /// Runs the group on `inputs` (specializing on their dtypes, sizes and strides).
    pub fn run(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>, JitError> {
        let spec = KernelSpec::of(inputs);
        self.cache.get_or_compile(&self.group, &spec)?.run(inputs)
    }
}

/// Whether the JIT claims `op` (a `prim.FusionGroup` whose body it can lower); the dtypes
/// and shapes are only known at run time, so a claimed group may still fall back per call.
pub fn claims(m: &Module, op: OpId) -> bool {
    Group::from_op(m, op).is_ok()
}
