//! Placeholder: kernels of this module are not written yet.

use super::KernelRegistry;

/// Registers the kernels of this module.
pub fn register(_r: &mut KernelRegistry) {}
