//! The toy dialect, kept out of the project's tree as a user's dialect would be: its ops
//! (`ops.rs`), its canonicalization patterns written in the declarative pattern language
//! (`patterns.rs`), its passes with options and statistics (`passes.rs`), its lowering to ATen
//! (`lowering.rs`) and an interpreter kernel of its own (`kernels.rs`). The `toy-opt` and
//! `toy-run` binaries are the project's tools over what [`context`], [`pass_registry`] and
//! [`kernel_registry`] return; `docs/dialects.md` walks through it, and `lit/` tests it through
//! those tools.

pub mod kernels;
pub mod lowering;
pub mod ops;
pub mod passes;
pub mod patterns;
pub mod types;

use ir::Context;

pub use ops::DIALECT;

// [doc:register]
/// Registers the toy dialect: its ops, and the patterns `canonicalize` applies to them.
pub fn register(ctx: &mut Context) -> Result<(), String> {
    ops::register_ops(ctx)?;
    patterns::attach(ctx)
}

/// The tools' context: every built-in dialect and toy.
pub fn context() -> Result<Context, String> {
    let mut ctx = driver::default_context();
    register(&mut ctx)?;
    Ok(ctx)
}

/// The tools' passes: the built-in ones and toy's.
pub fn pass_registry() -> pass::PassRegistry {
    let mut r = driver::default_pass_registry();
    passes::register(&mut r);
    r
}

/// The interpreter's kernels: the built-in ones and toy's.
pub fn kernel_registry() -> runtime::KernelRegistry {
    let mut r = runtime::KernelRegistry::new();
    runtime::kernels::register_all(&mut r);
    kernels::register(&mut r);
    r
}
// [/doc:register]
