//! Prepacked weights: the constant operand of an `f32` matrix product (the weight of
//! `mm`/`addmm`, the filter of a convolution) packed once, when the program is compiled, into
//! the layout of the prepacked GEMM (`kernels::packed`), and shared by every runtime of the
//! program (an `Arc` in the instruction).
//!
//! A prepacked instruction runs through its out-variant: `out::meta` still decides whether the
//! call is of the usual form (so planned and unplanned results come from the same code), and
//! [`compute`] then multiplies with the packed operand. The original constant stays in the
//! argument list, so the registered kernel remains the fallback for anything else.

use std::sync::Arc;

use ir::DType;

use super::Arg;
use super::out::{OutOp, scalar_or, tensor_arg};
use crate::kernels::conv::{PackedFilter, conv_compute_packed, out_geometry};
use crate::kernels::gemv::{Columns, gemv};
use crate::kernels::linalg::MatView;
use crate::kernels::packed::{Bias, Epilogue, Isa, PackedB, gemm_packed_b};
use crate::tensor::{KernelError, Result, Tensor};
use crate::value::IValue;

/// A prepacked constant operand.
#[derive(Debug)]
pub(crate) enum Prepacked {
    /// The right operand (`mat2`) of `mm`/`addmm`.
    Rhs(PackedB),
    /// The weight of a forward convolution.
    Filter(PackedFilter),
}

fn const_f32(arg: Option<&Arg>, dim: usize) -> Option<&Tensor> {
    match arg {
        Some(Arg::Const(IValue::Tensor(t))) if t.dtype() == DType::F32 && t.dim() == dim => Some(t),
        _ => None,
    }
}

/// Packs the constant operand of an instruction whose out-variant is `op`, when there is one
/// this CPU has a prepacked kernel for.
pub(crate) fn prepack(op: OutOp, args: &[Arg]) -> Option<Arc<Prepacked>> {
    let isa = Isa::detect()?;
    prepack_for(isa, op, args)
}

/// [`prepack`] for a given instruction-set path.
pub(crate) fn prepack_for(isa: Isa, op: OutOp, args: &[Arg]) -> Option<Arc<Prepacked>> {
    let packed = match op {
        OutOp::Mm | OutOp::Addmm => {
            let b = const_f32(args.get(if op == OutOp::Mm { 1 } else { 2 }), 2)?;
            let data = b.storage_slice::<f32>().ok()?;
            let view = MatView::new("prepack", data, b.offset(), b.sizes()[0], b.sizes()[1], b.strides()[0], b.strides()[1]).ok()?;
            Prepacked::Rhs(PackedB::pack("prepack", isa, view).ok()?)
        }
        OutOp::Convolution => {
            let w = match args.get(1) {
                Some(Arg::Const(IValue::Tensor(t))) if t.dtype() == DType::F32 && t.dim() >= 3 => t,
                _ => return None,
            };
            let forward = matches!(args.get(6), Some(Arg::Const(IValue::Bool(false))));
            let groups = match args.get(8) {
                Some(Arg::Const(IValue::Int(g))) if *g > 0 => *g as usize,
                _ => return None,
            };
            if !forward {
                return None;
            }
            Prepacked::Filter(PackedFilter::pack("prepack", isa, w, groups).ok()?)
        }
        _ => return None,
    };
    Some(Arc::new(packed))
}

/// Computes the out-variant `op` into `out` (whose dtype and shape `out::meta` gave) with the
/// prepacked operand; calls that do not fit it (an `f64` call) take the plain out-variant. A
/// single row (a batch-1 linear layer) is a matrix-vector product over the same panels
/// (`kernels::gemv`).
pub(crate) fn compute(p: &Prepacked, op: OutOp, name: &'static str, args: &[IValue], out: &Tensor) -> Result<()> {
    if out.dtype() != DType::F32 {
        return super::out::compute(op, name, args, out, [false, false]).map(drop);
    }
    match (p, op) {
        (Prepacked::Rhs(b), OutOp::Mm | OutOp::Addmm) => {
            let a = tensor_arg(name, args, if op == OutOp::Mm { 0 } else { 1 })?;
            if a.dtype() != DType::F32 || a.dim() != 2 {
                return super::out::compute(op, name, args, out, [false, false]).map(drop);
            }
            let data = a.storage_slice::<f32>()?;
            let av = MatView::new(name, data, a.offset(), a.sizes()[0], a.sizes()[1], a.strides()[0], a.strides()[1])?;
            let n = b.cols();
            // SAFETY: `out` is a planned or fresh tensor no other handle references (checked by
            // the caller), distinct from the operands (their lifetimes overlap).
            let c = unsafe { out.as_mut_slice::<f32>()? };
            let product = |ep: &Epilogue<'_>, c: &mut [f32]| {
                if av.rows == 1 { batch1(name, av, b, ep, c) } else { gemm_packed_b(name, av, b, ep, c, n) }
            };
            if op == OutOp::Mm {
                return product(&Epilogue::PLAIN, c);
            }
            let s = tensor_arg(name, args, 0)?;
            let beta = scalar_or(args.get(3), 1.0) as f32;
            let alpha = scalar_or(args.get(4), 1.0) as f32;
            let src = s.as_slice::<f32>()?;
            if beta == 0.0 {
                let ep = Epilogue { alpha, ..Epilogue::PLAIN };
                return product(&ep, c);
            }
            if src.len() == n && n != 1 || src.len() == 1 && n == 1 {
                // `self` is one row broadcast down the result: the bias of a linear layer.
                let ep = Epilogue { alpha, beta: 0.0, bias: Bias::PerColumn(src), bias_scale: beta };
                return product(&ep, c);
            }
            if src.len() == c.len() {
                c.copy_from_slice(src);
            } else if src.len() == 1 {
                c.fill(src[0]);
            } else {
                return super::out::compute(op, name, args, out, [false, false]).map(drop);
            }
            product(&Epilogue { alpha, beta, bias: Bias::None, bias_scale: 1.0 }, c)
        }
        (Prepacked::Filter(w), OutOp::Convolution) => {
            let (g, _) =
                out_geometry(args).ok_or_else(|| KernelError::new(name, "internal error: the out-variant does not apply"))?;
            let x = tensor_arg(name, args, 0)?;
            let bias = match args.get(2) {
                Some(IValue::Tensor(b)) => Some(b.as_slice::<f32>()?),
                _ => None,
            };
            // SAFETY: as above.
            let c = unsafe { out.as_mut_slice::<f32>()? };
            conv_compute_packed(name, &g, x.as_slice::<f32>()?, w, bias, c)
        }
        _ => Err(KernelError::new(name, "internal error: a prepacked operand of another op")),
    }
}

/// `c = ep(a·b)` for a single row `a` (`1 × k`), over the panels of `b`.
fn batch1(name: &'static str, a: MatView<'_, f32>, b: &PackedB, ep: &Epilogue<'_>, c: &mut [f32]) -> Result<()> {
    let cols = Columns::packed(name, b)?;
    if a.cols != cols.rows() {
        return Err(KernelError::new(name, format!("cannot multiply 1x{} and {}x{} matrices", a.cols, cols.rows(), cols.cols())));
    }
    let strided: Vec<f32>;
    let x = if a.cs == 1 || a.cols <= 1 {
        &a.data[a.off..a.off + a.cols]
    } else {
        strided = (0..a.cols).map(|p| a.at(0, p)).collect();
        &strided
    };
    let n = cols.cols();
    let y = c.get_mut(..n).ok_or_else(|| KernelError::new(name, "output buffer is too small"))?;
    gemv(name, x, cols, ep, y)
}
