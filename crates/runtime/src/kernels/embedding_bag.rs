//! `_embedding_bag` (core ATen) and `resize`, `resize_as` (the functional forms `resize_` and
//! `resize_as_` run as).
//!
//! `_embedding_bag(weight, indices, offsets, …, mode, …, per_sample_weights,
//! include_last_offset, padding_idx)` reduces the rows of `weight` named by each bag of
//! `indices` (bag `b` is `indices[offsets[b]..offsets[b + 1]]`) with sum (mode 0, optionally
//! weighted per sample), mean (1) or max (2); rows equal to `padding_idx` are skipped and empty
//! bags give zeros. Accumulation is in f64. The auxiliary results are PyTorch's on CPU, which
//! the backward pass reads and which a program may return:
//!
//! - `offset2bag`, each index's bag; empty for a sum over `f32`/`f16`/`bf16` rows of unit
//!   stride with no `padding_idx`, where PyTorch's fast path computes none;
//! - `bag_size`, each bag's count of indices other than `padding_idx` for mean and max, zeros
//!   for sum;
//! - `max_indices`, for max the row each maximum came from (`[bags, dim]`, zero for an empty
//!   bag); otherwise a copy of `bag_size`.
//!
//! `_rowwise_prune(weight, mask, compressed_indices_dtype)` keeps the rows of a 2-D embedding
//! table whose `mask` entry is true and returns them with the mapping from each original row
//! to its pruned row (-1 for a dropped row), the compressed-indices mapping a pruned embedding
//! lookup reads.


use super::{Args, KernelRegistry, ret};
use crate::tensor::{KernelError, Result, Tensor};
use crate::value::IValue;
use dialect_aten::op;
use ir::DType;

fn k_embedding_bag(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::_EMBEDDING_BAG, args, 3)?;
    let weight = a.tensor(0)?;
    let err = |m: String| KernelError::new(a.op, m);
    let [rows, dim] = weight.sizes() else { return Err(err(format!("weight must be 2-D, got shape {:?}", weight.sizes()))) };
    let (rows, dim) = (*rows, *dim);
    let indices = a.tensor(1)?.to_vec_i64();
    let offsets = a.tensor(2)?.to_vec_i64();
    let mode = a.opt_int(4)?.unwrap_or(0);
    let psw = a.opt_tensor(6)?.map(|t| t.to_vec_f64());
    let include_last = a.opt_bool(7)?.unwrap_or(false);
    let padding = a.opt_int(8)?.unwrap_or(-1);
    if !(0..=2).contains(&mode) {
        return Err(err(format!("mode must be 0 (sum), 1 (mean) or 2 (max), got {mode}")));
    }
    if psw.is_some() && mode != 0 {
        return Err(err("per_sample_weights are only supported with mode sum".into()));
    }
    let bags = if include_last { offsets.len().saturating_sub(1) } else { offsets.len() };
    let w = weight.contiguous()?.to_vec_f64();
    let mut out = vec![0.0f64; bags * dim];
    let mut offset2bag = vec![0i64; indices.len()];
    let mut bag_size = vec![0i64; bags];
    let mut max_idx = vec![0i64; if mode == 2 { bags * dim } else { 0 }];
    for b in 0..bags {
        let start = usize::try_from(offsets[b]).map_err(|_| err(format!("offset {} is negative", offsets[b])))?;
        let end = if b + 1 < offsets.len() { offsets[b + 1] as usize } else { indices.len() };
        if start > end || end > indices.len() {
            return Err(err(format!("offsets must be non-decreasing and within the {} indices", indices.len())));
        }
        let row = &mut out[b * dim..(b + 1) * dim];
        let mut first = true;
        for k in start..end {
            offset2bag[k] = b as i64;
            let i = indices[k];
            if i == padding {
                continue;
            }
            let r = usize::try_from(i).ok().filter(|&r| r < rows).ok_or_else(|| err(format!("index {i} is out of range for {rows} rows")))?;
            let src = &w[r * dim..(r + 1) * dim];
            let scale = psw.as_ref().map_or(1.0, |p| p[k]);
            for j in 0..dim {
                if mode == 2 {
                    if first || src[j] > row[j] {
                        row[j] = src[j];
                        max_idx[b * dim + j] = i;
                    }
                } else {
                    row[j] += scale * src[j];
                }
            }
            first = false;
            bag_size[b] += 1;
        }
        if mode == 1 && bag_size[b] > 0 {
            row.iter_mut().for_each(|x| *x /= bag_size[b] as f64);
        }
    }
    let out = Tensor::from_vec(out, &[bags, dim])?.to_dtype(weight.dtype())?;
    if mode == 0 {
        bag_size.iter_mut().for_each(|n| *n = 0);
        let fast_dtype = matches!(weight.dtype(), DType::F32 | DType::F16 | DType::BF16);
        if fast_dtype && weight.strides()[1] == 1 && padding < 0 {
            offset2bag.clear();
        }
    }
    let (max_idx, max_shape) = if mode == 2 { (max_idx, vec![bags, dim]) } else { (bag_size.clone(), vec![bags]) };
    Ok(vec![
        IValue::Tensor(out),
        IValue::Tensor(Tensor::from_vec(offset2bag.clone(), &[offset2bag.len()])?),
        IValue::Tensor(Tensor::from_vec(bag_size, &[bags])?),
        IValue::Tensor(Tensor::from_vec(max_idx, &max_shape)?),
    ])
}

/// `self`'s leading elements, in order, laid out with `sizes`; elements beyond the old ones are
/// zero (PyTorch leaves them uninitialized).
fn resized(t: &Tensor, sizes: &[usize]) -> Result<Tensor> {
    let n: usize = sizes.iter().product();
    let flat = t.contiguous()?.reshape(&[t.numel() as i64])?;
    let out = Tensor::zeros(t.dtype(), &[n])?;
    let dims: Vec<i64> = sizes.iter().map(|&d| d as i64).collect();
    let keep = n.min(t.numel());
    if keep > 0 {
        out.narrow(0, 0, keep)?.copy_(&flat.narrow(0, 0, keep)?)?;
    }
    out.reshape(&dims)
}

/// `resize(self, size)`: `self` resized to `size` (see [`resized`]).
fn k_resize(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::RESIZE, args, 2)?;
    ret(resized(a.tensor(0)?, &a.sizes(1)?)?)
}

/// `resize_as(self, the_template)`: `self` resized to the template's sizes.
fn k_resize_as(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::RESIZE_AS, args, 2)?;
    ret(resized(a.tensor(0)?, a.tensor(1)?.sizes())?)
}

fn k_rowwise_prune(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::_ROWWISE_PRUNE, args, 3)?;
    let (w, mask) = (a.tensor(0)?, a.tensor(1)?);
    let idt = a.opt_dtype(2)?.ok_or_else(|| KernelError::new(a.op, "compressed_indices_dtype is required"))?;
    if w.dim() != 2 {
        return Err(KernelError::new(a.op, format!("'weights' should have 2 dimensions, got {:?}", w.sizes())));
    }
    if mask.numel() != w.sizes()[0] {
        return Err(KernelError::new(
            a.op,
            format!("the number of elements in 'mask' ({}) should equal the number of rows in 'weights' ({})", mask.numel(), w.sizes()[0]),
        ));
    }
    if !matches!(idt, DType::I32 | DType::I64) {
        return Err(KernelError::new(a.op, "compressed_indices_dtype should be either int (int32) or long (int64)"));
    }
    if mask.dtype() != DType::Bool {
        return Err(KernelError::new(a.op, format!("mask must be a bool tensor, got {}", mask.dtype().torch_name())));
    }
    if w.dtype() == DType::Bool {
        return Err(KernelError::new(a.op, "not implemented for dtype bool"));
    }
    let keep = mask.to_vec::<bool>()?;
    let cols = w.sizes()[1];
    let mut mapping = Vec::with_capacity(keep.len());
    let mut next = 0i64;
    for &k in &keep {
        mapping.push(if k { next } else { -1 });
        next += k as i64;
    }
    let pruned = crate::dispatch_dtype!(w.dtype(), T => {
        let data = w.to_vec::<T>()?;
        let rows: Vec<T> = keep
            .iter()
            .enumerate()
            .filter(|(_, k)| **k)
            .flat_map(|(r, _)| data[r * cols..(r + 1) * cols].iter().copied())
            .collect();
        Tensor::from_vec(rows, &[next as usize, cols])?
    });
    let n = mapping.len();
    Ok(vec![IValue::Tensor(pruned), IValue::Tensor(Tensor::from_vec(mapping, &[n])?.to_dtype(idt)?)])
}

pub fn register(r: &mut KernelRegistry) {
    r.register(op::_EMBEDDING_BAG, k_embedding_bag);
    r.register(op::_ROWWISE_PRUNE, k_rowwise_prune);
    r.register(op::RESIZE, k_resize);
    r.register(op::RESIZE_AS, k_resize_as);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bags_sum_mean_and_max() {
        let w = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2]).unwrap();
        let idx = Tensor::from_vec(vec![0i64, 2, 1, 2], &[4]).unwrap();
        let off = Tensor::from_vec(vec![0i64, 2], &[2]).unwrap();
        let run = |mode: i64| {
            let args = [IValue::Tensor(w.clone()), IValue::Tensor(idx.clone()), IValue::Tensor(off.clone()), IValue::Bool(false), IValue::Int(mode)];
            match &k_embedding_bag(&args).unwrap()[0] {
                IValue::Tensor(t) => t.to_vec_f64(),
                _ => unreachable!(),
            }
        };
        assert_eq!(run(0), vec![6.0, 8.0, 8.0, 10.0]);
        assert_eq!(run(1), vec![3.0, 4.0, 4.0, 5.0]);
        assert_eq!(run(2), vec![5.0, 6.0, 5.0, 6.0]);
    }

    /// The auxiliary results as PyTorch 2.15 returns them on CPU for `w = arange(6).view(3, 2)`,
    /// `indices = [0, 2, 1, 2]`, `offsets = [0, 2, 2]` (an empty middle bag).
    #[test]
    fn auxiliary_results_match_pytorch() {
        let idx = Tensor::from_vec(vec![0i64, 2, 1, 2], &[4]).unwrap();
        let off = Tensor::from_vec(vec![0i64, 2, 2], &[3]).unwrap();
        let run = |w: Tensor, mode: i64, padding: i64| -> Vec<(Vec<usize>, Vec<f64>)> {
            let args = [
                IValue::Tensor(w),
                IValue::Tensor(idx.clone()),
                IValue::Tensor(off.clone()),
                IValue::Bool(false),
                IValue::Int(mode),
                IValue::Bool(false),
                IValue::None,
                IValue::Bool(false),
                IValue::Int(padding),
            ];
            k_embedding_bag(&args)
                .unwrap()
                .iter()
                .map(|v| match v {
                    IValue::Tensor(t) => (t.sizes().to_vec(), t.to_vec_f64()),
                    _ => unreachable!(),
                })
                .collect()
        };
        let w32 = Tensor::from_vec((0..6).map(|x| x as f32).collect::<Vec<_>>(), &[3, 2]).unwrap();
        let w64 = w32.to_dtype(DType::F64).unwrap();
        let sum32 = run(w32.clone(), 0, -1);
        assert_eq!(sum32[0].1, vec![4.0, 6.0, 0.0, 0.0, 6.0, 8.0]);
        assert_eq!(sum32[1..], [(vec![0], vec![]), (vec![3], vec![0.0; 3]), (vec![3], vec![0.0; 3])]);
        let sum64 = run(w64, 0, -1);
        assert_eq!(sum64[1], (vec![4], vec![0.0, 0.0, 2.0, 2.0]));
        let padded = run(w32.clone(), 0, 2);
        assert_eq!(padded[1], (vec![4], vec![0.0, 0.0, 2.0, 2.0]));
        let mean = run(w32.clone(), 1, -1);
        assert_eq!(mean[0].1, vec![2.0, 3.0, 0.0, 0.0, 3.0, 4.0]);
        assert_eq!(mean[2..], [(vec![3], vec![2.0, 0.0, 2.0]), (vec![3], vec![2.0, 0.0, 2.0])]);
        let max = run(w32.clone(), 2, -1);
        assert_eq!(max[2], (vec![3], vec![2.0, 0.0, 2.0]));
        assert_eq!(max[3], (vec![3, 2], vec![2.0, 2.0, 0.0, 0.0, 2.0, 2.0]));
        let max_padded = run(w32, 2, 2);
        assert_eq!(max_padded[2], (vec![3], vec![1.0, 0.0, 1.0]));
        assert_eq!(max_padded[3], (vec![3, 2], vec![0.0, 0.0, 0.0, 0.0, 1.0, 1.0]));
    }

    #[test]
    fn resize_keeps_leading_elements() {
        let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
        let r = k_resize(&[IValue::Tensor(t), IValue::IntList(vec![2, 2])]).unwrap();
        let IValue::Tensor(r) = &r[0] else { unreachable!() };
        assert_eq!((r.sizes(), r.to_vec_f64()), (&[2usize, 2][..], vec![1.0, 2.0, 3.0, 0.0]));
        assert_eq!(r.dtype(), ir::DType::F32);
    }
}
