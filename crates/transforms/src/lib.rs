//! Generic passes and the ATen → Edge → Backend lowerings.
//!
//! [`register_passes`] adds every pass of this crate to a registry; the tools call it.

pub mod lowering;
pub mod opt;

/// Registers the passes of this crate.
pub fn register_passes(r: &mut pass::PassRegistry) {
    opt::register(r);
    lowering::register(r);
}

/// A registry with the pass manager's own passes and every pass of this crate.
pub fn pass_registry() -> pass::PassRegistry {
    let mut r = pass::PassRegistry::new();
    pass::register_builtin_passes(&mut r);
    register_passes(&mut r);
    r
}

/// A context with the dialects this crate's passes read and write: `prim`, `aten`, `edge`
/// and `backend`.
pub fn context() -> ir::Context {
    let mut ctx = ir::Context::new();
    dialect_prim::register(&mut ctx);
    dialect_aten::register(&mut ctx);
    dialect_edge::register(&mut ctx);
    dialect_backend::register(&mut ctx);
    ctx
}
