//! The backend dialect: what backends execute.
//!
//! - `backend.partition {backend = "name"}`: a subgraph claimed by one backend. Its single
//!   region is isolated from above: the block takes the operands as arguments and ends with
//!   `backend.return` giving the results. A backend compiles or interprets the region as a unit.
//! - `backend.return`: ends the body of a `backend.partition` or `backend.kernel`.
//! - `backend.call {kernel = "name"}`: runs a named, already compiled kernel over its operands.
//! - `backend.kernel {kernel = "name", backend = "name"}`: a fused kernel defined inline (an
//!   isolated region like a partition's) that its backend compiles into one callable.
//! - `backend.alloc {size = bytes, offset = bytes}`: a buffer of the result's tensor type
//!   planned into a slab (`offset` within the slab; both optional until memory planning).
//! - `backend.out_call {kernel = "aten.add.Tensor", outs = 1}`: Static Runtime's out variant:
//!   runs `kernel` on the leading operands, writing into the trailing `outs` buffer operands;
//!   the results are those buffers (same types), so data flow stays explicit in SSA.

mod verify;

use ir::{Arity, AttrKind, OpDef, Traits};

pub const DIALECT: &str = "backend";
pub const PARTITION: &str = "backend.partition";
pub const RETURN: &str = "backend.return";
pub const CALL: &str = "backend.call";
pub const KERNEL: &str = "backend.kernel";
pub const ALLOC: &str = "backend.alloc";
pub const OUT_CALL: &str = "backend.out_call";

/// The kernels a `backend.kernel` can name (its `kernel` attribute): the contract between the
/// lowerings that form them and the runtimes that implement them natively.
pub mod kernels {
    /// The attribute of `backend.kernel` holding the kernel's name.
    pub const ATTR: &str = "kernel";
    /// Scaled dot-product attention over `q`, `kᵀ`, `v` and an optional mask.
    pub const ATTENTION: &str = "attention";
    /// `addmm` followed by an epilogue (a residual add, `gelu` or `relu`).
    pub const LINEAR: &str = "linear";
    /// A forward convolution with a bias followed by a residual add and/or an activation
    /// (`relu`, `clamp`, `hardswish` in either of its decompositions' orders).
    pub const CONV: &str = "conv";
    /// `cat` along channels of a single image's `conv` kernels (its region holds them, the
    /// list and the `cat`): each convolution written straight into its channels of the result.
    pub const CONV_CAT: &str = "conv_cat";
    /// A `conv` kernel without a residual and the 3 × 3, stride-2 max pool of its result (its
    /// region holds both): the pool computed from bands of the convolution's rows, without
    /// the convolution's output.
    pub const CONV_POOL: &str = "conv_pool";
}

/// The attribute naming the backend that claimed a partition or kernel.
pub const BACKEND_ATTR: &str = "backend";

/// Every backend op definition.
pub fn definitions() -> Vec<OpDef> {
    vec![
        OpDef::new(PARTITION)
            .summary("A subgraph claimed by one backend; an isolated region ending with `backend.return`.")
            .traits(Traits::ISOLATED_FROM_ABOVE)
            .regions(Arity::Exact(1))
            .attr(BACKEND_ATTR, AttrKind::Str, true)
            .verifier(verify::region_op),
        OpDef::new(KERNEL)
            .summary("A fused kernel defined inline, compiled by its backend into one callable.")
            .traits(Traits::ISOLATED_FROM_ABOVE)
            .regions(Arity::Exact(1))
            .attr("kernel", AttrKind::Str, true)
            .attr(BACKEND_ATTR, AttrKind::Str, false)
            .verifier(verify::region_op),
        OpDef::new(RETURN)
            .summary("Ends the body of a `backend.partition` or `backend.kernel`, giving its results.")
            .traits(Traits::TERMINATOR | Traits::PURE)
            .results(Arity::Exact(0))
            .syntax(ir::Syntax::Return)
            .verifier(verify::return_op),
        OpDef::new(CALL)
            .summary("Runs a named compiled kernel over the operands.")
            .attr("kernel", AttrKind::Str, true)
            .verifier(verify::call),
        OpDef::new(ALLOC)
            .summary("A planned buffer of the result's type (`size` bytes at `offset` in the slab).")
            .traits(Traits::PURE)
            .operands(Arity::AtLeast(0))
            .results(Arity::Exact(1))
            .attr("size", AttrKind::Int, false)
            .attr("offset", AttrKind::Int, false)
            .verifier(verify::alloc),
        OpDef::new(OUT_CALL)
            .summary("Out variant: runs `kernel` on the leading operands writing into the trailing `outs` buffers.")
            .operands(Arity::AtLeast(1))
            .attr("kernel", AttrKind::Str, true)
            .attr("outs", AttrKind::Int, false)
            .verifier(verify::out_call),
    ]
}

/// Registers the backend dialect and its ops.
pub fn register(ctx: &mut ir::Context) {
    ctx.register_dialect(DIALECT, "What backends execute: partitions, kernels, out variants over planned buffers.");
    for d in definitions() {
        // Fixed, distinct names: a second registration is the only possible failure; skip it.
        let _ = ctx.register_op(d);
    }
}
