//! Optimization passes: alias analysis, DCE, CSE, folding, canonicalization, inlining, unrolling, functionalization.

/// Registers the optimization passes.
pub fn register(_r: &mut pass::PassRegistry) {}
