//! Shape and dtype propagation, decompositions, and the lowerings to the Edge and Backend dialects.

/// Registers the lowering passes.
pub fn register(_r: &mut pass::PassRegistry) {}
