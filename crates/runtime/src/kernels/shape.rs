//! Shape and view kernels. View ops (`view`, `permute`, `expand`, `slice`, `select`, …)
//! return tensors aliasing their input; the others (`cat`, `flip`, `roll`, `repeat`, …)
//! produce fresh contiguous tensors. `*_copy` variants (Edge dialect) return copies.

use dialect_aten::op;
use ir::DType;

use super::{Args, KernelRegistry, ret};
use crate::dispatch_dtype;
use crate::tensor::shape::{normalize_dim, normalize_dims, normalize_insert_dim, to_sizes};
use crate::tensor::{Element, KernelError, Result, Tensor};
use crate::value::IValue;

fn list(ts: Vec<Tensor>) -> Result<Vec<IValue>> {
    Ok(vec![IValue::TensorList(ts)])
}

/// Builds a fresh tensor of `sizes` whose element at each multi-index is read from `src` at
/// the storage offset `map(index)` (or zero for `None`).
fn remap(src: &Tensor, sizes: &[usize], map: impl Fn(&[usize]) -> Option<usize>) -> Result<Tensor> {
    crate::dispatch_all_dtypes!(src.dtype(), T => {
        let data = src.storage_slice::<T>()?;
        Tensor::build::<T>(sizes, |out| {
            if out.is_empty() {
                return Ok(());
            }
            let mut idx = vec![0usize; sizes.len()];
            for o in out.iter_mut() {
                if let Some(off) = map(&idx) {
                    *o = data[off];
                }
                let mut d = sizes.len();
                while d > 0 {
                    d -= 1;
                    idx[d] += 1;
                    if idx[d] < sizes[d] {
                        break;
                    }
                    idx[d] = 0;
                }
            }
            Ok(())
        })
    })
}

fn src_offset(t: &Tensor, idx: &[usize]) -> usize {
    t.offset() + idx.iter().zip(t.strides()).map(|(&i, &s)| i * s).sum::<usize>()
}

// ----- views -----

fn k_view(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::VIEW, args, 2)?;
    ret(a.tensor(0)?.view(&a.int_list(1)?).map_err(|e| e.in_op(a.op))?)
}

fn k_reshape(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::RESHAPE, args, 2)?;
    ret(a.tensor(0)?.reshape(&a.int_list(1)?).map_err(|e| e.in_op(a.op))?)
}

fn k_unsafe_view(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::_UNSAFE_VIEW, args, 2)?;
    ret(a.tensor(0)?.reshape(&a.int_list(1)?).map_err(|e| e.in_op(a.op))?)
}

fn k_permute(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::PERMUTE, args, 2)?;
    ret(a.tensor(0)?.permute(&a.int_list(1)?).map_err(|e| e.in_op(a.op))?)
}

fn k_expand(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::EXPAND, args, 2)?;
    ret(a.tensor(0)?.expand(&a.int_list(1)?).map_err(|e| e.in_op(a.op))?)
}

fn k_slice(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::SLICE_TENSOR, args, 1)?;
    let dim = a.opt_int(1)?.unwrap_or(0);
    let step = a.opt_int(4)?.unwrap_or(1);
    ret(a.tensor(0)?.slice(dim, a.opt_int(2)?, a.opt_int(3)?, step).map_err(|e| e.in_op(a.op))?)
}

fn k_select(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::SELECT_INT, args, 3)?;
    ret(a.tensor(0)?.select(a.int(1)?, a.int(2)?).map_err(|e| e.in_op(a.op))?)
}

fn k_squeeze(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::SQUEEZE, args, 1)?;
    ret(a.tensor(0)?.squeeze().map_err(|e| e.in_op(a.op))?)
}

fn k_squeeze_dim(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::SQUEEZE_DIM, args, 2)?;
    ret(a.tensor(0)?.squeeze_dims(&[a.int(1)?]).map_err(|e| e.in_op(a.op))?)
}

fn k_squeeze_dims(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::SQUEEZE_DIMS, args, 2)?;
    ret(a.tensor(0)?.squeeze_dims(&a.int_list(1)?).map_err(|e| e.in_op(a.op))?)
}

fn k_unsqueeze(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::UNSQUEEZE, args, 2)?;
    ret(a.tensor(0)?.unsqueeze(a.int(1)?).map_err(|e| e.in_op(a.op))?)
}

fn k_as_strided(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::AS_STRIDED, args, 3)?;
    let sizes = a.sizes(1)?;
    let strides = a.sizes(2)?;
    let offset = match a.opt_int(3)? {
        Some(o) if o < 0 => return Err(KernelError::new(a.op, format!("negative storage offset {o}"))),
        o => o.map(|o| o as usize),
    };
    ret(a.tensor(0)?.as_strided(&sizes, &strides, offset).map_err(|e| e.in_op(a.op))?)
}

fn k_t(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::T, args, 1)?;
    ret(a.tensor(0)?.t().map_err(|e| e.in_op(a.op))?)
}

fn k_transpose(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::TRANSPOSE_INT, args, 3)?;
    ret(a.tensor(0)?.transpose(a.int(1)?, a.int(2)?).map_err(|e| e.in_op(a.op))?)
}

fn k_alias(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::ALIAS, args, 1)?;
    ret(a.tensor(0)?.alias())
}

fn k_diagonal(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::DIAGONAL, args, 1)?;
    let t = a.tensor(0)?;
    let off = a.opt_int(1)?.unwrap_or(0);
    let d1 = a.opt_int(2)?.unwrap_or(0);
    let d2 = a.opt_int(3)?.unwrap_or(1);
    ret(t.diagonal(off, d1, d2).map_err(|e| e.in_op(a.op))?)
}

fn k_narrow(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::NARROW, args, 4)?;
    let len = a.int(3)?;
    if len < 0 {
        return Err(KernelError::new(a.op, format!("negative length {len}")));
    }
    ret(a.tensor(0)?.narrow(a.int(1)?, a.int(2)?, len as usize).map_err(|e| e.in_op(a.op))?)
}

fn k_flatten(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::FLATTEN_USING_INTS, args, 1)?;
    let t = a.tensor(0)?;
    if t.dim() == 0 {
        return ret(t.reshape(&[1])?);
    }
    let s = normalize_dim(a.op, a.opt_int(1)?.unwrap_or(0), t.dim())?;
    let e = normalize_dim(a.op, a.opt_int(2)?.unwrap_or(-1), t.dim())?;
    if s > e {
        return Err(KernelError::new(a.op, "flatten() has invalid args: start_dim cannot come after end_dim"));
    }
    let mut sizes: Vec<i64> = t.sizes()[..s].iter().map(|&x| x as i64).collect();
    sizes.push(t.sizes()[s..=e].iter().product::<usize>() as i64);
    sizes.extend(t.sizes()[e + 1..].iter().map(|&x| x as i64));
    ret(t.reshape(&sizes)?)
}

fn k_unbind(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::UNBIND_INT, args, 1)?;
    let t = a.tensor(0)?;
    let dim = a.opt_int(1)?.unwrap_or(0);
    let d = normalize_dim(a.op, dim, t.dim())?;
    if t.dim() == 0 {
        return Err(KernelError::new(a.op, "dimension specified as 0 but tensor has no dimensions"));
    }
    list((0..t.sizes()[d]).map(|i| t.select(d as i64, i as i64)).collect::<Result<_>>()?)
}

fn split_sizes(op: &str, t: &Tensor, d: usize, sizes: &[usize]) -> Result<Vec<Tensor>> {
    let total: usize = sizes.iter().sum();
    if total != t.sizes()[d] {
        return Err(KernelError::new(
            op.to_string(),
            format!("split sizes {sizes:?} must sum to the size {} of dimension {d}", t.sizes()[d]),
        ));
    }
    let mut start = 0i64;
    let mut out = Vec::with_capacity(sizes.len());
    for &s in sizes {
        out.push(t.slice(d as i64, Some(start), Some(start + s as i64), 1)?);
        start += s as i64;
    }
    Ok(out)
}

fn k_split_with_sizes(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::SPLIT_WITH_SIZES, args, 2)?;
    let t = a.tensor(0)?;
    if t.dim() == 0 {
        return Err(KernelError::new(a.op, "split expects at least a 1-dimensional tensor"));
    }
    let d = normalize_dim(a.op, a.opt_int(2)?.unwrap_or(0), t.dim())?;
    list(split_sizes(a.op, t, d, &a.sizes(1)?)?)
}

fn k_split(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::SPLIT_TENSOR, args, 2)?;
    let t = a.tensor(0)?;
    if t.dim() == 0 {
        return Err(KernelError::new(a.op, "split expects at least a 1-dimensional tensor"));
    }
    let d = normalize_dim(a.op, a.opt_int(2)?.unwrap_or(0), t.dim())?;
    let size = a.int(1)?;
    let n = t.sizes()[d];
    if size < 0 || (size == 0 && n != 0) {
        return Err(KernelError::new(a.op, format!("split_size must be positive, got {size}")));
    }
    let size = size as usize;
    let mut sizes = Vec::new();
    if size == 0 {
        sizes.push(0);
    } else {
        let mut rest = n;
        while rest > 0 {
            sizes.push(rest.min(size));
            rest -= rest.min(size);
        }
        if sizes.is_empty() {
            sizes.push(0);
        }
    }
    list(split_sizes(a.op, t, d, &sizes)?)
}

fn k_chunk(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::CHUNK, args, 2)?;
    let t = a.tensor(0)?;
    let chunks = a.int(1)?;
    if chunks <= 0 {
        return Err(KernelError::new(a.op, format!("chunk expects `chunks` to be greater than 0, got: {chunks}")));
    }
    let d = normalize_dim(a.op, a.opt_int(2)?.unwrap_or(0), t.dim())?;
    let n = t.sizes()[d];
    let size = n.div_ceil(chunks as usize).max(1);
    let mut sizes = Vec::new();
    let mut rest = n;
    while rest > 0 {
        sizes.push(rest.min(size));
        rest -= rest.min(size);
    }
    if sizes.is_empty() {
        sizes.push(0);
    }
    list(split_sizes(a.op, t, d, &sizes)?)
}

// ----- copying shape ops -----

/// `cat`: concatenates along `dim`, promoting dtypes. 1-d empty tensors are skipped, as in
/// PyTorch.
pub fn cat(op: &str, tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    let parts: Vec<&Tensor> = tensors.iter().filter(|t| !(t.dim() == 1 && t.numel() == 0)).collect();
    if tensors.is_empty() {
        return Err(KernelError::new(op.to_string(), "expected a non-empty list of tensors"));
    }
    // cat promotes like `torch.promote_types` over all inputs.
    let dtype = tensors.iter().skip(1).fold(tensors[0].dtype(), |acc, t| DType::promote(acc, t.dtype()));
    let Some(first) = parts.first() else {
        return Tensor::zeros(dtype, &[0]);
    };
    if first.dim() == 0 {
        return Err(KernelError::new(op.to_string(), "zero-dimensional tensor cannot be concatenated"));
    }
    let d = normalize_dim(op, dim, first.dim())?;
    let mut sizes = first.sizes().to_vec();
    let mut total = 0usize;
    for (i, t) in parts.iter().enumerate() {
        if t.dim() != first.dim() || (0..t.dim()).any(|k| k != d && t.sizes()[k] != first.sizes()[k]) {
            return Err(KernelError::new(
                op.to_string(),
                format!(
                    "sizes of tensors must match except in dimension {d}; tensor 0 has shape {:?}, tensor {i} has shape {:?}",
                    first.sizes(),
                    t.sizes()
                ),
            ));
        }
        total += t.sizes()[d];
    }
    sizes[d] = total;
    let out = Tensor::zeros(dtype, &sizes)?;
    let mut start = 0usize;
    for t in parts {
        let n = t.sizes()[d];
        out.narrow(d as i64, start as i64, n)?.copy_(t)?;
        start += n;
    }
    Ok(out)
}

fn k_cat(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::CAT, args, 1)?;
    ret(cat(a.op, &a.tensor_list(0)?, a.opt_int(1)?.unwrap_or(0))?)
}

fn k_stack(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::STACK, args, 1)?;
    let ts = a.tensor_list(0)?;
    let Some(first) = ts.first() else {
        return Err(KernelError::new(a.op, "expected a non-empty list of tensors"));
    };
    let d = normalize_insert_dim(a.op, a.opt_int(1)?.unwrap_or(0), first.dim())?;
    for (i, t) in ts.iter().enumerate() {
        if t.sizes() != first.sizes() {
            return Err(KernelError::new(
                a.op,
                format!("stack expects each tensor to be equal size, but got {:?} at entry 0 and {:?} at entry {i}", first.sizes(), t.sizes()),
            ));
        }
    }
    let parts: Vec<Tensor> = ts.iter().map(|t| t.unsqueeze(d as i64)).collect::<Result<_>>()?;
    ret(cat(a.op, &parts, d as i64)?)
}

fn k_flip(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::FLIP, args, 2)?;
    let t = a.tensor(0)?;
    let dims = if t.dim() == 0 { vec![] } else { normalize_dims(a.op, &a.int_list(1)?, t.dim())? };
    let sizes = t.sizes().to_vec();
    ret(remap(t, &sizes, |idx| {
        let mut off = t.offset();
        for (d, &i) in idx.iter().enumerate() {
            let j = if dims.contains(&d) { sizes[d] - 1 - i } else { i };
            off += j * t.strides()[d];
        }
        Some(off)
    })?)
}

fn k_roll(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::ROLL, args, 2)?;
    let t = a.tensor(0)?;
    let shifts = a.int_list(1)?;
    let dims = a.opt_int_list(2)?.unwrap_or_default();
    if dims.is_empty() {
        if shifts.len() != 1 {
            return Err(KernelError::new(a.op, "shifts must have one element when dims is empty"));
        }
        let flat = t.reshape(&[-1])?;
        let n = flat.numel() as i64;
        if n == 0 {
            return ret(t.deep_clone()?);
        }
        let s = shifts[0].rem_euclid(n) as usize;
        let r = remap(&flat, flat.sizes(), |idx| {
            let j = (idx[0] + flat.numel() - s) % flat.numel();
            Some(flat.offset() + j * flat.strides()[0])
        })?;
        return ret(r.reshape(&t.sizes_i64())?);
    }
    if shifts.len() != dims.len() {
        return Err(KernelError::new(a.op, format!("shifts ({}) and dims ({}) must have the same length", shifts.len(), dims.len())));
    }
    let mut per_dim = vec![0usize; t.dim()];
    for (&s, &d) in shifts.iter().zip(&dims) {
        let d = normalize_dim(a.op, d, t.dim())?;
        let n = t.sizes()[d] as i64;
        if n > 0 {
            per_dim[d] = (per_dim[d] as i64 + s).rem_euclid(n) as usize;
        }
    }
    let sizes = t.sizes().to_vec();
    ret(remap(t, &sizes, |idx| {
        let src: Vec<usize> = idx.iter().enumerate().map(|(d, &i)| (i + sizes[d] - per_dim[d]) % sizes[d]).collect();
        Some(src_offset(t, &src))
    })?)
}

fn k_repeat(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::REPEAT, args, 2)?;
    let t = a.tensor(0)?;
    let reps = to_sizes(a.op, &a.int_list(1)?)?;
    if reps.len() < t.dim() {
        return Err(KernelError::new(
            a.op,
            format!("number of dimensions of repeat dims ({}) can not be smaller than number of dimensions of tensor ({})", reps.len(), t.dim()),
        ));
    }
    let lead = reps.len() - t.dim();
    let mut padded = vec![1usize; lead];
    padded.extend_from_slice(t.sizes());
    let x = t.reshape(&padded.iter().map(|&s| s as i64).collect::<Vec<_>>())?;
    let out_sizes: Vec<usize> = padded.iter().zip(&reps).map(|(&s, &r)| s * r).collect();
    ret(remap(&x, &out_sizes, |idx| {
        let src: Vec<usize> = idx.iter().zip(&padded).map(|(&i, &s)| i % s).collect();
        Some(src_offset(&x, &src))
    })?)
}

fn tri(op: &'static str, args: &[IValue], lower: bool) -> Result<Vec<IValue>> {
    let a = Args::new(op, args, 1)?;
    let t = a.tensor(0)?;
    let k = a.opt_int(1)?.unwrap_or(0);
    if t.dim() < 2 {
        return Err(KernelError::new(op, "input tensor must have at least 2 dimensions"));
    }
    let nd = t.dim();
    let sizes = t.sizes().to_vec();
    ret(remap(t, &sizes, |idx| {
        let (i, j) = (idx[nd - 2] as i64, idx[nd - 1] as i64);
        let keep = if lower { j - i <= k } else { j - i >= k };
        if keep { Some(src_offset(t, idx)) } else { None }
    })?)
}

fn k_tril(args: &[IValue]) -> Result<Vec<IValue>> {
    tri(op::TRIL.name(), args, true)
}

fn k_triu(args: &[IValue]) -> Result<Vec<IValue>> {
    tri(op::TRIU.name(), args, false)
}

macro_rules! copy_variant {
    ($fn:ident, $view:ident, $name:path) => {
        fn $fn(args: &[IValue]) -> Result<Vec<IValue>> {
            let r = $view(args).map_err(|e| e.in_op($name))?;
            let t = r[0].as_tensor()?.deep_clone()?;
            ret(t)
        }
    };
}

copy_variant!(k_view_copy, k_view, op::VIEW_COPY);
copy_variant!(k_permute_copy, k_permute, op::PERMUTE_COPY);
copy_variant!(k_expand_copy, k_expand, op::EXPAND_COPY);
copy_variant!(k_slice_copy, k_slice, op::SLICE_COPY_TENSOR);
copy_variant!(k_select_copy, k_select, op::SELECT_COPY_INT);
copy_variant!(k_squeeze_copy_dims, k_squeeze_dims, op::SQUEEZE_COPY_DIMS);
copy_variant!(k_unsqueeze_copy, k_unsqueeze, op::UNSQUEEZE_COPY);
copy_variant!(k_transpose_copy, k_transpose, op::TRANSPOSE_COPY_INT);
copy_variant!(k_t_copy, k_t, op::T_COPY);
copy_variant!(k_alias_copy, k_alias, op::ALIAS_COPY);
copy_variant!(k_as_strided_copy, k_as_strided, op::AS_STRIDED_COPY);
copy_variant!(k_diagonal_copy, k_diagonal, op::DIAGONAL_COPY);

fn k_sym_size(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::SYM_SIZE_INT, args, 2)?;
    Ok(vec![IValue::Int(a.tensor(0)?.size(a.int(1)?).map_err(|e| e.in_op(a.op))? as i64)])
}

fn k_sym_numel(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::SYM_NUMEL, args, 1)?;
    Ok(vec![IValue::Int(a.tensor(0)?.numel() as i64)])
}

fn k_sym_stride(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::SYM_STRIDE_INT, args, 2)?;
    let t = a.tensor(0)?;
    let d = normalize_dim(a.op, a.int(1)?, t.dim())?;
    Ok(vec![IValue::Int(t.strides().get(d).copied().unwrap_or(1) as i64)])
}

fn k_sym_storage_offset(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::SYM_STORAGE_OFFSET, args, 1)?;
    Ok(vec![IValue::Int(a.tensor(0)?.offset() as i64)])
}

fn k_sym_is_contiguous(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::SYM_IS_CONTIGUOUS, args, 1)?;
    Ok(vec![IValue::Bool(a.tensor(0)?.is_contiguous())])
}

/// Reads `t` as `i64` values (any integer dtype), for ops taking index tensors.
pub fn index_values(t: &Tensor) -> Result<Vec<i64>> {
    dispatch_dtype!(t.dtype(), T => Ok(t.to_vec::<T>()?.into_iter().map(|v| v.to_i64()).collect()))
}

pub fn register(r: &mut KernelRegistry) {
    let table: &[(ir::OpRef, super::KernelFn)] = &[
        (op::VIEW, k_view),
        (op::RESHAPE, k_reshape),
        (op::_UNSAFE_VIEW, k_unsafe_view),
        (op::PERMUTE, k_permute),
        (op::EXPAND, k_expand),
        (op::SLICE_TENSOR, k_slice),
        (op::SELECT_INT, k_select),
        (op::SQUEEZE, k_squeeze),
        (op::SQUEEZE_DIM, k_squeeze_dim),
        (op::SQUEEZE_DIMS, k_squeeze_dims),
        (op::UNSQUEEZE, k_unsqueeze),
        (op::AS_STRIDED, k_as_strided),
        (op::T, k_t),
        (op::TRANSPOSE_INT, k_transpose),
        (op::ALIAS, k_alias),
        (op::DIAGONAL, k_diagonal),
        (op::NARROW, k_narrow),
        (op::FLATTEN_USING_INTS, k_flatten),
        (op::UNBIND_INT, k_unbind),
        (op::SPLIT_TENSOR, k_split),
        (op::SPLIT_WITH_SIZES, k_split_with_sizes),
        (op::CHUNK, k_chunk),
        (op::CAT, k_cat),
        (op::STACK, k_stack),
        (op::FLIP, k_flip),
        (op::ROLL, k_roll),
        (op::REPEAT, k_repeat),
        (op::TRIL, k_tril),
        (op::TRIU, k_triu),
        (op::VIEW_COPY, k_view_copy),
        (op::PERMUTE_COPY, k_permute_copy),
        (op::EXPAND_COPY, k_expand_copy),
        (op::SLICE_COPY_TENSOR, k_slice_copy),
        (op::SELECT_COPY_INT, k_select_copy),
        (op::SQUEEZE_COPY_DIMS, k_squeeze_copy_dims),
        (op::UNSQUEEZE_COPY, k_unsqueeze_copy),
        (op::TRANSPOSE_COPY_INT, k_transpose_copy),
        (op::T_COPY, k_t_copy),
        (op::ALIAS_COPY, k_alias_copy),
        (op::AS_STRIDED_COPY, k_as_strided_copy),
        (op::DIAGONAL_COPY, k_diagonal_copy),
        (op::SYM_SIZE_INT, k_sym_size),
        (op::SYM_NUMEL, k_sym_numel),
        (op::SYM_STRIDE_INT, k_sym_stride),
        (op::SYM_STORAGE_OFFSET, k_sym_storage_offset),
        (op::SYM_IS_CONTIGUOUS, k_sym_is_contiguous),
    ];
    for &(name, f) in table {
        r.register(name, f);
    }
}
