//! `_sobol_engine_draw(quasi, n, sobolstate, dimension, num_generated, dtype)`: `n` further
//! points of a Sobol sequence by Gray-code stepping. Point `k` (counting from
//! `num_generated`) XORs into each dimension's state the direction number of the lowest zero
//! bit of `k`; the points are the states scaled by `2^-30`. Returns the `[n, dimension]`
//! points in `dtype` (`f32` by default, `f64` allowed) and the advanced state. The direction
//! numbers `sobolstate` (`[dimension, 30]`, `int64`) are an input, as `SobolEngine` passes them.

use dialect_aten::op;
use ir::DType;

use super::{Args, KernelRegistry};
use crate::tensor::{KernelError, Result, Tensor};
use crate::value::IValue;

/// Bits of a Sobol state: points are multiples of `2^-MAXBIT`.
const MAXBIT: u32 = 30;

fn k_sobol_engine_draw(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::_SOBOL_ENGINE_DRAW, args, 5)?;
    let (quasi, n, state, dimension, generated) = (a.tensor(0)?, a.int(1)?, a.tensor(2)?, a.int(3)?, a.int(4)?);
    let dtype = a.opt_dtype(5)?.unwrap_or(DType::F32);
    if state.dtype() != DType::I64 {
        return Err(KernelError::new(a.op, "sobolstate needs to be of type int64"));
    }
    if quasi.dtype() != DType::I64 {
        return Err(KernelError::new(a.op, "quasi needs to be of type int64"));
    }
    if !matches!(dtype, DType::F32 | DType::F64) {
        return Err(KernelError::new(a.op, format!("not implemented for dtype {}", dtype.torch_name())));
    }
    let (n, dim) = match (usize::try_from(n), usize::try_from(dimension)) {
        (Ok(n), Ok(d)) => (n, d),
        _ => return Err(KernelError::new(a.op, format!("n ({n}) and dimension ({dimension}) must be non-negative"))),
    };
    if generated < 0 {
        return Err(KernelError::new(a.op, format!("num_generated must be non-negative, got {generated}")));
    }
    if quasi.dim() != 1 || quasi.numel() < dim || state.dim() != 2 || state.sizes()[0] < dim {
        return Err(KernelError::new(
            a.op,
            format!(
                "expected quasi of at least [{dim}] and sobolstate of at least [{dim}, bits], got {:?} and {:?}",
                quasi.sizes(),
                state.sizes()
            ),
        ));
    }
    let bits = state.sizes()[1];
    let mut q = quasi.to_vec::<i64>()?;
    let directions = state.to_vec::<i64>()?;
    let mut points = Vec::with_capacity(n * dim);
    for i in 0..n {
        let k = generated + i as i64;
        let l = k.trailing_ones() as usize;
        if l >= bits {
            return Err(KernelError::new(a.op, format!("point {k} needs direction number {l}, but sobolstate has {bits}")));
        }
        for (j, qj) in q.iter_mut().enumerate().take(dim) {
            *qj ^= directions[j * bits + l];
            points.push(*qj as f64 * (1.0 / (1u64 << MAXBIT) as f64));
        }
    }
    let len = q.len();
    Ok(vec![
        IValue::Tensor(Tensor::from_vec(points, &[n, dim])?.to_dtype(dtype)?),
        IValue::Tensor(Tensor::from_vec(q, &[len])?),
    ])
}

pub fn register(r: &mut KernelRegistry) {
    r.register(op::_SOBOL_ENGINE_DRAW, k_sobol_engine_draw);
}
