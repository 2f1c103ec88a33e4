//! Packed sequences: `_pad_packed_sequence`, which unpacks the time-major rows of a packed
//! batch into a padded tensor. Its shape depends on the values of `batch_sizes` (a CPU int64
//! tensor known only when the program runs), so it is a kernel rather than a decomposition.

use super::{Args, KernelRegistry};
use crate::tensor::{KernelError, Result, Tensor};
use crate::value::IValue;
use dialect_aten::op;

/// `_pad_packed_sequence(data, batch_sizes, batch_first, padding_value, total_length) ->
/// (output, lengths)`: step `t` of the packed batch is the next `batch_sizes[t]` rows of `data`
/// (the sequences still running at `t`, longest first); `output` is `[T, B, *]` (`[B, T, *]`
/// with `batch_first`) filled with `padding_value` past each sequence's end, `T` being the
/// number of steps or `total_length` when that is positive, and `lengths` (int64) is each
/// sequence's number of steps.
fn k_pad_packed_sequence(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::_PAD_PACKED_SEQUENCE, args, 5)?;
    let err = |m: String| KernelError::new(a.op, m);
    let data = a.tensor(0)?;
    let bs_t = a.tensor(1)?;
    if bs_t.dtype() != ir::DType::I64 || bs_t.dim() != 1 {
        return Err(err(format!("batch_sizes must be a 1-d int64 tensor, got {} of shape {:?}", bs_t.dtype().torch_name(), bs_t.sizes())));
    }
    let bs = bs_t.to_vec_i64();
    let (batch_first, padding, total_length) = (a.bool(2)?, a.scalar(3)?, a.int(4)?);
    let Some(&batch) = bs.first() else { return Err(err("batch_sizes must not be empty".into())) };
    if bs.iter().any(|&b| b <= 0) || bs.windows(2).any(|w| w[1] > w[0]) {
        return Err(err(format!("batch_sizes must be positive and non-increasing, got {bs:?}")));
    }
    let rows: i64 = bs.iter().sum();
    if data.dim() == 0 || data.sizes()[0] as i64 != rows {
        return Err(err(format!("data has shape {:?} where batch_sizes {bs:?} packs {rows} rows", data.sizes())));
    }
    let steps = bs.len();
    let len = if total_length > 0 {
        if (total_length as usize) < steps {
            return Err(err(format!(
                "Expected total_length to be at least the length of the longest sequence in input, but got total_length={total_length} and max sequence length being {steps}"
            )));
        }
        total_length as usize
    } else {
        steps
    };
    let mut shape = vec![len, batch as usize];
    shape.extend_from_slice(&data.sizes()[1..]);
    let out = Tensor::full(data.dtype(), &shape, padding)?;
    let mut offset = 0i64;
    for (t, &b) in bs.iter().enumerate() {
        let dst = out.select(0, t as i64)?.narrow(0, 0, b as usize)?;
        dst.copy_(&data.narrow(0, offset, b as usize)?)?;
        offset += b;
    }
    let lengths: Vec<i64> = (0..batch).map(|i| bs.iter().filter(|&&b| b > i).count() as i64).collect();
    let lengths = Tensor::from_vec(lengths, &[batch as usize])?;
    let out = if batch_first { out.transpose(0, 1)?.contiguous()? } else { out };
    Ok(vec![IValue::Tensor(out), IValue::Tensor(lengths)])
}

pub fn register(r: &mut KernelRegistry) {
    r.register(op::_PAD_PACKED_SEQUENCE, k_pad_packed_sequence);
}
