//! Matrix products (`mm`, `bmm`, `addmm`, `baddbmm`, `mv`, `addmv`, `dot`, `matmul`, `linear`)
//! over strided tensors, plus the helpers the other heavy-kernel files share: the floating-point element
//! trait (`Real`), compute-dtype dispatch and the GEMM entry point; `dense.rs` holds the
//! factorizations (LU, Cholesky, symmetric eigen, SVD) and the ops built on them.
//!
//! `f32` products run on the microkernel of `kernels::packed` where the CPU has one of its
//! paths (AVX-512F or AVX2+FMA), other floating-point products through `matrixmultiply`; both
//! take arbitrary row and column strides, so transposed and permuted views are multiplied
//! without a copy. Matrix-vector shapes (one output row or column: batch-1 latency) use this
//! file's own dot loops (compiled for AVX2+FMA when the CPU has it) where the matrix's columns
//! are contiguous, and the register-blocked kernel of `kernels::gemv` (`f32`; `axpy` loops for
//! `f64`) where its rows are. `f16`/`bf16` are computed in `f32`; integer
//! products use a plain loop with wrapping arithmetic (as PyTorch's integer GEMM does).

use dialect_aten::op;
use std::ops::{Add, AddAssign, Div, Mul, MulAssign, Neg, Sub, SubAssign};

use ir::DType;

use super::{Args, KernelRegistry};
use crate::tensor::{Element, KernelError, Result, Scalar, Tensor};
use crate::value::IValue;

/// Wraps a list of tensors as a kernel result.
pub(crate) fn outs(ts: impl IntoIterator<Item = Tensor>) -> Vec<IValue> {
    ts.into_iter().map(IValue::Tensor).collect()
}


/// The dtype a floating-point kernel computes in: `f32` for `f16`/`bf16`/`f32`, `f64` for
/// `f64`; an error naming the op for anything else.
pub(crate) fn compute_dtype(op: &'static str, dt: DType) -> Result<DType> {
    match dt {
        DType::F16 | DType::BF16 | DType::F32 => Ok(DType::F32),
        DType::F64 => Ok(DType::F64),
        _ => Err(KernelError::new(op, format!("not implemented for dtype {}", dt.torch_name()))),
    }
}

/// Runs a floating-point kernel body with `$T` bound to the compute type of `$dtype`
/// (`f32` for `f16`/`bf16`/`f32`, `f64` for `f64`).
macro_rules! with_real {
    ($op:expr, $dtype:expr, $T:ident => $body:expr) => {
        match $crate::kernels::linalg::compute_dtype($op, $dtype)? {
            ir::DType::F64 => {
                type $T = f64;
                $body
            }
            _ => {
                type $T = f32;
                $body
            }
        }
    };
}
pub(crate) use with_real;

pub(crate) use ::kernels::mat::MatView;


mod dense;
mod gemm;
mod ops;
mod real;

use gemm::*;
use ops::*;

pub(crate) use gemm::{gemm, gemm_batched, widen_halves};
pub(crate) use ops::reshape_contiguous;
pub(crate) use real::Real;

pub fn register(r: &mut KernelRegistry) {
    r.register(op::MM, mm);
    r.register(op::ADDMM, addmm);
    r.register(op::BMM, bmm);
    r.register(op::BADDBMM, baddbmm);
    r.register(op::MV, mv);
    r.register(op::ADDMV, addmv);
    r.register(op::DOT, dot);
    r.register(op::MATMUL, matmul);
    r.register(op::LINEAR, linear);
    dense::register(r);
}
