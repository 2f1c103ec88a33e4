//! `repeat_interleave.Tensor(repeats)`: the indices `0..len` of a 1-d integer tensor, index
//! `i` repeated `repeats[i]` times; its length, the sum of the repeats, is known only when it
//! runs (`repeat_interleave.self_Tensor` decomposes to an `index_select` by it).

use super::{Args, KernelRegistry, ret};
use crate::tensor::{KernelError, Result, Tensor};
use crate::value::IValue;
use dialect_aten::op;
use ir::DType;

fn repeat_interleave_tensor(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::REPEAT_INTERLEAVE_TENSOR, args, 1)?;
    let err = |m: &str| KernelError::new(a.op, m.to_string());
    let r = a.tensor(0)?;
    if r.dim() != 1 {
        return Err(err("repeat_interleave only accept 1D vector as repeat"));
    }
    if !matches!(r.dtype(), DType::I64 | DType::I32) {
        return Err(err("repeats has to be Long or Int tensor"));
    }
    let reps = r.to_vec_i64();
    if reps.iter().any(|&n| n < 0) {
        return Err(err("repeats can not be negative"));
    }
    let total: i64 = reps.iter().sum();
    if let Some(n) = a.opt_int(1)? {
        if n != total {
            return Err(KernelError::new(a.op, format!("output_size {n} is not the sum of the repeats, {total}")));
        }
    }
    let mut out = Vec::with_capacity(total as usize);
    for (i, &n) in reps.iter().enumerate() {
        out.extend(std::iter::repeat_n(i as i64, n as usize));
    }
    let t = Tensor::from_vec(out, &[total as usize])?;
    ret(if r.dtype() == DType::I32 { t.to_dtype(DType::I32)? } else { t })
}

pub fn register(r: &mut KernelRegistry) {
    r.register(op::REPEAT_INTERLEAVE_TENSOR, repeat_interleave_tensor);
}
