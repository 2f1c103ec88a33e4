//! The aten dialect: ATen operators declared from schema strings.
//!
//! Every op is declared by one line of `schemas.txt` in PyTorch's own syntax
//! (`aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor`) and named
//! `aten.<name>.<overload>` (`aten.<name>` for the default overload). Tensor arguments are
//! operands; other arguments are operands or attributes named after the argument, and omitted
//! trailing arguments take their schema defaults ([`bind_args`]).

pub mod infer;
pub mod fold;
pub mod ops;
pub mod rules;
pub mod signature;
mod verify;

pub use ops::{SCHEMAS, definitions, schemas};
pub use signature::{ArgSource, BindError, bind_args, default_attribute};

/// Registers the aten dialect and all its ops.
pub fn register(ctx: &mut ir::Context) {
    ctx.register_dialect("aten", "ATen operators, declared from PyTorch's schema strings.");
    for def in definitions() {
        // Op names are unique in the data file (checked by its test); a duplicate is skipped.
        let _ = ctx.register_op(def);
    }
}
