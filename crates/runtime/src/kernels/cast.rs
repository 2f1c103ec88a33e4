//! Copies and casts: `_to_copy`, `to.dtype`, `clone`, `contiguous`, `copy`, `copy_`,
//! `detach`, `lift_fresh_copy`.
//!
//! Every copy is contiguous (row-major); `memory_format` is accepted and ignored, since the
//! values are the same whatever the layout. Float → integer casts truncate toward zero; NaN
//! and out-of-range values follow PyTorch on x86 (see `tensor::Element`).

use super::{Args, KernelRegistry, ret};
use crate::tensor::{KernelError, Result};
use crate::value::IValue;
use dialect_aten::op;

fn k_to_copy(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::_TO_COPY, args, 1)?;
    let t = a.tensor(0)?;
    if let Some(dev) = a.get(3).as_opt_str().ok().flatten()
        && !dev.starts_with("cpu")
    {
        return Err(KernelError::new(a.op, format!("only the cpu device is supported, got '{dev}'")));
    }
    let dtype = a.opt_dtype(1)?.unwrap_or(t.dtype());
    ret(t.to_dtype(dtype)?)
}

fn k_to_dtype(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::TO_DTYPE, args, 2)?;
    let t = a.tensor(0)?;
    let dtype = a.opt_dtype(1)?.unwrap_or(t.dtype());
    let copy = a.opt_bool(3)?.unwrap_or(false);
    if dtype == t.dtype() && !copy {
        return ret(t.clone());
    }
    ret(t.to_dtype(dtype)?)
}

fn k_clone(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::CLONE, args, 1)?;
    ret(a.tensor(0)?.deep_clone()?)
}

fn k_contiguous(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::CONTIGUOUS, args, 1)?;
    ret(a.tensor(0)?.contiguous()?)
}

/// `copy(self, src)`: a new tensor with `self`'s shape and dtype holding `src` (broadcast).
fn k_copy(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::COPY, args, 2)?;
    let t = a.tensor(0)?;
    let out = crate::tensor::Tensor::zeros(t.dtype(), t.sizes())?;
    out.copy_(a.tensor(1)?).map_err(|e| e.in_op(a.op))?;
    ret(out)
}

/// `copy_(self, src)`: writes `src` into `self` through its view.
fn k_copy_(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::COPY_, args, 2)?;
    let t = a.tensor(0)?;
    t.copy_(a.tensor(1)?).map_err(|e| e.in_op(a.op))?;
    ret(t.clone())
}

fn k_detach(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::DETACH, args, 1)?;
    ret(a.tensor(0)?.alias())
}

fn k_lift_fresh_copy(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::LIFT_FRESH_COPY, args, 1)?;
    ret(a.tensor(0)?.deep_clone()?)
}

fn k_type_as(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::TYPE_AS, args, 2)?;
    ret(a.tensor(0)?.cast_to(a.tensor(1)?.dtype())?)
}

pub fn register(r: &mut KernelRegistry) {
    let table: &[(ir::OpRef, super::KernelFn)] = &[
        (op::_TO_COPY, k_to_copy),
        (op::TO_DTYPE, k_to_dtype),
        (op::CLONE, k_clone),
        (op::CONTIGUOUS, k_contiguous),
        (op::COPY, k_copy),
        (op::COPY_, k_copy_),
        (op::DETACH, k_detach),
        (op::LIFT_FRESH_COPY, k_lift_fresh_copy),
        (op::TYPE_AS, k_type_as),
    ];
    for &(name, f) in table {
        r.register(name, f);
    }
}
