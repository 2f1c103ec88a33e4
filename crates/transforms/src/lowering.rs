//! Shape and dtype propagation, decompositions, and the lowerings to the Edge and Backend dialects.
//!
//! The composite fallback of executors ([`fallback`]): ops without a kernel become ops with one.
//!
//! Passes: `shape-propagation` ([`shape_prop`]), `decompose` ([`decompose`]), `lower-to-edge`
//! and `verify-edge` ([`edge`]), `fuse-attention` ([`attention`]), `fuse-epilogue` ([`epilogue`]),
//! and `lower-to-backend` ([`backend`]). The stages follow EXIR: ATen as exported → decomposed
//! core ATen with known types → Edge (explicit dtypes) → backend partitions; the pipelines of
//! the optimization levels, which also name passes of other crates, are the driver's.

pub mod attention;
pub mod backend;
pub mod composite;
pub mod decompose;
pub mod edge;
pub mod conv_epilogue;
pub mod epilogue;
pub mod fallback;
mod kernel;
pub mod rewrite;
pub mod shape_prop;
mod stacking;
mod tensor_ops;
mod losses;
mod reductions;
mod layers;
mod recurrent;
mod linalg;
mod selection;
mod creation;
mod householder;
mod einsum;
mod quantile;
mod gathering;
mod attention_math;
mod sampling;
mod special;
mod margin_losses;
mod conv_forms;
mod gradient;

pub use attention::{FuseAttention, fuse_attention};
pub use backend::{Backend, InterpreterBackend, LowerToBackend, OpListBackend, partition};
pub use decompose::{DecompFn, Decompose, DecompositionTable, decompose as decompose_ops, decompose_where};
pub use edge::{LowerToEdge, VerifyEdge, lower_to_edge, verify_edge};
pub use conv_epilogue::fuse_conv_epilogue;
pub use epilogue::{FuseEpilogue, fuse_epilogue};
pub use fallback::{FallbackStats, composite_fallback, needs_fallback};
pub use rewrite::{Arg, OpBuilder, Size, schema_args};
pub use shape_prop::{ShapePropagation, propagate_shapes};

use pass::{Pass, PassInfo, PassRegistry};

/// Registers the lowering passes.
pub fn register(r: &mut PassRegistry) {
    let infos = [
        PassInfo::new(
            "shape-propagation",
            "Refine tensor result types (dtype, shape, symbolic dims) with the aten inference functions",
            |o| Ok(Box::new(ShapePropagation::with_options(o)) as Box<dyn Pass>),
        )
        .options(ShapePropagation::options()),
        PassInfo::new("decompose", "Decompose non-core ATen ops into core ATen through the decomposition table", |o| {
            Ok(Box::new(Decompose::with_options(o)) as Box<dyn Pass>)
        })
        .options(Decompose::options()),
        PassInfo::new("lower-to-edge", "Lower core ATen ops to the Edge dialect, inserting explicit casts for type promotion", |o| {
            Ok(Box::new(LowerToEdge::with_options(o)) as Box<dyn Pass>)
        })
        .options(LowerToEdge::options()),
        PassInfo::new(
            "fuse-attention",
            "Replace decomposed attention (bmm, scale, mask, softmax, bmm) by a backend.kernel {kernel = \"attention\"}",
            |_| Ok(Box::new(FuseAttention) as Box<dyn Pass>),
        ),
        PassInfo::new(
            "fuse-epilogue",
            "Fuse addmm with the residual add, gelu or relu that consumes it into a backend.kernel {kernel = \"linear\"}",
            |_| Ok(Box::new(FuseEpilogue) as Box<dyn Pass>),
        ),
        PassInfo::new("verify-edge", "Check that the program is in the Edge dialect", |_| Ok(Box::new(VerifyEdge) as Box<dyn Pass>)),
        PassInfo::new("lower-to-backend", "Partition function bodies among backends into backend.partition ops", |o| {
            Ok(Box::new(LowerToBackend::with_options(o)?) as Box<dyn Pass>)
        })
        .options(LowerToBackend::options()),
    ];
    for info in infos {
        if r.get(&info.name).is_none() {
            // Names are valid and were just checked to be free.
            let _ = r.register(info);
        }
    }
}
