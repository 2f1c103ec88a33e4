//! Cranelift backend compiling fusion groups to native CPU kernels.
//!
//! A `prim.FusionGroup` is captured as a [`Group`] (its body's aten ops with their bound
//! arguments), lowered for a [`KernelSpec`] (input dtypes, sizes and strides) to a typed graph
//! of primitive operations with PyTorch's type promotion made explicit, and compiled to one
//! loop nest over the output's iteration space: broadcasting through zero strides, a 128-bit
//! SIMD inner loop (`f32x4`, `i32x4`, `f64x2`, `i64x2`) with a scalar tail where every operand
//! is unit-stride or broadcast along the innermost dimension, inline polynomial f32
//! transcendentals, and a split of large iteration spaces across the runtime's intra-op team.
//! [`KernelCache`] keeps compiled kernels by group and spec. [`Jit`] plugs all of it into the
//! runtime as its fusion compiler (`runtime::CompileOptions::fusion`). The runtime's
//! interpreter kernels are the reference the generated code is tested against.
//!
//! ```
//! use runtime::Tensor;
//! let mut ctx = ir::Context::new();
//! dialect_prim::register(&mut ctx);
//! dialect_aten::register(&mut ctx);
//! let text = r#"
//!   %x = "test.source"() : () -> tensor<4xf32>
//!   %r = "prim.FusionGroup"(%x) ({
//!   ^bb0(%a: tensor<4xf32>):
//!     %e = "aten.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
//!     %m = "aten.mul.Tensor"(%e, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
//!     "prim.Return"(%m) : (tensor<4xf32>) -> ()
//!   }) : (tensor<4xf32>) -> tensor<4xf32>
//! "#;
//! ctx.set_allow_unregistered(true);
//! let m = ir::parse_module(&ctx, text, "doc.ir").unwrap();
//! let group = jit::find_fusion_groups(&m)[0];
//! let x = Tensor::from_vec(vec![0.0f32, 1.0, 2.0, -1.0], &[4]).unwrap();
//! let kernel = jit::compile(&m, group, &jit::KernelSpec::of(&[x.clone()])).unwrap();
//! let out = kernel.run(&[x]).unwrap();
//! assert_eq!(out[0].sizes(), &[4]);
//! ```

mod backend;
mod block;
mod cache;
mod codegen;
mod error;
mod fission;
mod group;
mod hook;
mod kernel;
mod lowering;
mod math;
mod probe;
mod shims;
mod spec;

pub use backend::{FusionJit, claims};
pub use block::CodegenOptions;
pub use cache::{CacheStats, KernelCache};
pub use error::JitError;
pub use group::{Binary, Group, LibFn, NodeId, Unary};
pub use hook::{Jit, JitOptions, JitStats};
pub use kernel::{Kernel, RunOptions};
pub use probe::lowers;
pub use lowering::{FLOAT_UNARY, JitLowering, Lower, LowerFn, attach};
pub use spec::{Alias, KernelSpec, TensorSpec};

use ir::{Module, OpId, WalkOrder};

/// Compiles the `prim.FusionGroup` `group` of `module` for inputs described by `spec`.
pub fn compile(module: &Module, group: OpId, spec: &KernelSpec) -> Result<Kernel, JitError> {
    Group::from_op(module, group)?.compile(spec)
}

/// [`compile`] with code generation options other than the defaults.
pub fn compile_with(module: &Module, group: OpId, spec: &KernelSpec, options: CodegenOptions) -> Result<Kernel, JitError> {
    Group::from_op(module, group)?.compile_with(spec, options)
}

/// Every `prim.FusionGroup` op of the module, in pre-order.
pub fn find_fusion_groups(m: &Module) -> Vec<OpId> {
    let mut out = Vec::new();
    m.walk(m.top(), WalkOrder::PreOrder, &mut |op| {
        if m.op_name(op) == dialect_prim::FUSION_GROUP {
            out.push(op);
        }
    });
    out
}

/// The embedding guide (`docs/embedding.md`), whose examples run as doctests here: this is the
/// lowest crate that sees both the runtime and the JIT.
#[doc = include_str!("../../../docs/embedding.md")]
#[allow(dead_code)]
mod embedding_guide {}
