//! The prim dialect: constants, structured control flow, lists and tuples, fusion groups, SymInt arithmetic.
//!
//! These are TorchScript's `prim::` ops with MLIR spelling: `prim::Constant` is `prim.Constant`,
//! `prim::If` is `prim.If` with two regions, and so on. [`register`] adds them to a context.

pub mod fold;
pub mod kinds;
pub mod ops;
mod verify;

pub use ops::*;
pub use kinds::{AttrExt, TypeExt};
pub use verify::type_refines;

/// Registers the prim dialect: its type and attribute kinds and its ops.
pub fn register(ctx: &mut ir::Context) {
    ctx.register_dialect(DIALECT, "TorchScript's structural ops: constants, control flow, containers, fusion groups.");
    kinds::register(ctx);
    for def in ops::definitions() {
        // Names are fixed and unique, so a second registration is the only possible failure: skip it.
        let _ = ctx.register_op(def);
    }
}
