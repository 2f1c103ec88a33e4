//! Shape and view kernels. View ops (`view`, `permute`, `expand`, `slice`, `select`, …)
//! return tensors aliasing their input; the others (`cat`, `flip`, `roll`, `repeat`, …)
//! produce fresh contiguous tensors. `*_copy` variants (Edge dialect) return copies.

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
    dispatch_dtype!(src.dtype(), T => {
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
    let a = Args::new("aten.view", args, 2)?;
    ret(a.tensor(0)?.view(&a.int_list(1)?).map_err(|e| e.in_op(a.op))?)
}

fn k_reshape(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.reshape", args, 2)?;
    ret(a.tensor(0)?.reshape(&a.int_list(1)?).map_err(|e| e.in_op(a.op))?)
}

fn k_unsafe_view(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten._unsafe_view", args, 2)?;
    ret(a.tensor(0)?.reshape(&a.int_list(1)?).map_err(|e| e.in_op(a.op))?)
}

fn k_permute(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.permute", args, 2)?;
    ret(a.tensor(0)?.permute(&a.int_list(1)?).map_err(|e| e.in_op(a.op))?)
}

fn k_expand(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.expand", args, 2)?;
    ret(a.tensor(0)?.expand(&a.int_list(1)?).map_err(|e| e.in_op(a.op))?)
}

fn k_slice(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.slice.Tensor", args, 1)?;
    let dim = a.opt_int(1)?.unwrap_or(0);
    let step = a.opt_int(4)?.unwrap_or(1);
    ret(a.tensor(0)?.slice(dim, a.opt_int(2)?, a.opt_int(3)?, step).map_err(|e| e.in_op(a.op))?)
}

fn k_select(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.select.int", args, 3)?;
    ret(a.tensor(0)?.select(a.int(1)?, a.int(2)?).map_err(|e| e.in_op(a.op))?)
}

fn k_squeeze(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.squeeze", args, 1)?;
    ret(a.tensor(0)?.squeeze().map_err(|e| e.in_op(a.op))?)
}

fn k_squeeze_dim(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.squeeze.dim", args, 2)?;
    ret(a.tensor(0)?.squeeze_dims(&[a.int(1)?]).map_err(|e| e.in_op(a.op))?)
}

fn k_squeeze_dims(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.squeeze.dims", args, 2)?;
    ret(a.tensor(0)?.squeeze_dims(&a.int_list(1)?).map_err(|e| e.in_op(a.op))?)
}

fn k_unsqueeze(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.unsqueeze", args, 2)?;
    ret(a.tensor(0)?.unsqueeze(a.int(1)?).map_err(|e| e.in_op(a.op))?)
}

fn k_as_strided(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.as_strided", args, 3)?;
    let sizes = a.sizes(1)?;
    let strides = a.sizes(2)?;
    let offset = match a.opt_int(3)? {
        Some(o) if o < 0 => return Err(KernelError::new(a.op, format!("negative storage offset {o}"))),
        o => o.map(|o| o as usize),
    };
    ret(a.tensor(0)?.as_strided(&sizes, &strides, offset).map_err(|e| e.in_op(a.op))?)
}

fn k_t(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.t", args, 1)?;
    ret(a.tensor(0)?.t().map_err(|e| e.in_op(a.op))?)
}

fn k_transpose(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.transpose.int", args, 3)?;
    ret(a.tensor(0)?.transpose(a.int(1)?, a.int(2)?).map_err(|e| e.in_op(a.op))?)
}

fn k_alias(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.alias", args, 1)?;
    ret(a.tensor(0)?.alias())
}

fn k_diagonal(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.diagonal", args, 1)?;
    let t = a.tensor(0)?;
    let off = a.opt_int(1)?.unwrap_or(0);
    let d1 = a.opt_int(2)?.unwrap_or(0);
    let d2 = a.opt_int(3)?.unwrap_or(1);
    ret(t.diagonal(off, d1, d2).map_err(|e| e.in_op(a.op))?)
}

fn k_narrow(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.narrow", args, 4)?;
    let len = a.int(3)?;
    if len < 0 {
        return Err(KernelError::new(a.op, format!("negative length {len}")));
    }
    ret(a.tensor(0)?.narrow(a.int(1)?, a.int(2)?, len as usize).map_err(|e| e.in_op(a.op))?)
}

fn k_flatten(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.flatten.using_ints", args, 1)?;
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
    let a = Args::new("aten.unbind.int", args, 1)?;
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
    let a = Args::new("aten.split_with_sizes", args, 2)?;
    let t = a.tensor(0)?;
    if t.dim() == 0 {
        return Err(KernelError::new(a.op, "split expects at least a 1-dimensional tensor"));
    }
    let d = normalize_dim(a.op, a.opt_int(2)?.unwrap_or(0), t.dim())?;
    list(split_sizes(a.op, t, d, &a.sizes(1)?)?)
}

fn k_split(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.split.Tensor", args, 2)?;
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
    let a = Args::new("aten.chunk", args, 2)?;
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
    let a = Args::new("aten.cat", args, 1)?;
    ret(cat(a.op, &a.tensor_list(0)?, a.opt_int(1)?.unwrap_or(0))?)
}

fn k_stack(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.stack", args, 1)?;
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
    let a = Args::new("aten.flip", args, 2)?;
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
    let a = Args::new("aten.roll", args, 2)?;
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
    let a = Args::new("aten.repeat", args, 2)?;
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
    tri("aten.tril", args, true)
}

fn k_triu(args: &[IValue]) -> Result<Vec<IValue>> {
    tri("aten.triu", args, false)
}

macro_rules! copy_variant {
    ($fn:ident, $view:ident, $name:literal) => {
        fn $fn(args: &[IValue]) -> Result<Vec<IValue>> {
            let r = $view(args).map_err(|e| e.in_op($name))?;
            let t = r[0].as_tensor()?.deep_clone()?;
            ret(t)
        }
    };
}

copy_variant!(k_view_copy, k_view, "aten.view_copy");
copy_variant!(k_permute_copy, k_permute, "aten.permute_copy");
copy_variant!(k_expand_copy, k_expand, "aten.expand_copy");
copy_variant!(k_slice_copy, k_slice, "aten.slice_copy.Tensor");
copy_variant!(k_select_copy, k_select, "aten.select_copy.int");
copy_variant!(k_squeeze_copy_dims, k_squeeze_dims, "aten.squeeze_copy.dims");
copy_variant!(k_unsqueeze_copy, k_unsqueeze, "aten.unsqueeze_copy");
copy_variant!(k_transpose_copy, k_transpose, "aten.transpose_copy.int");
copy_variant!(k_t_copy, k_t, "aten.t_copy");
copy_variant!(k_alias_copy, k_alias, "aten.alias_copy");
copy_variant!(k_as_strided_copy, k_as_strided, "aten.as_strided_copy");
copy_variant!(k_diagonal_copy, k_diagonal, "aten.diagonal_copy");

fn k_sym_size(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.sym_size.int", args, 2)?;
    Ok(vec![IValue::Int(a.tensor(0)?.size(a.int(1)?).map_err(|e| e.in_op(a.op))? as i64)])
}

fn k_sym_numel(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.sym_numel", args, 1)?;
    Ok(vec![IValue::Int(a.tensor(0)?.numel() as i64)])
}

fn k_sym_stride(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.sym_stride.int", args, 2)?;
    let t = a.tensor(0)?;
    let d = normalize_dim(a.op, a.int(1)?, t.dim())?;
    Ok(vec![IValue::Int(t.strides().get(d).copied().unwrap_or(1) as i64)])
}

fn k_sym_storage_offset(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.sym_storage_offset", args, 1)?;
    Ok(vec![IValue::Int(a.tensor(0)?.offset() as i64)])
}

fn k_sym_is_contiguous(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.sym_is_contiguous", args, 1)?;
    Ok(vec![IValue::Bool(a.tensor(0)?.is_contiguous())])
}

/// Reads `t` as `i64` values (any integer dtype), for ops taking index tensors.
pub fn index_values(t: &Tensor) -> Result<Vec<i64>> {
    dispatch_dtype!(t.dtype(), T => Ok(t.to_vec::<T>()?.into_iter().map(|v| v.to_i64()).collect()))
}

pub fn register(r: &mut KernelRegistry) {
    let table: &[(&'static str, super::KernelFn)] = &[
        ("aten.view", k_view),
        ("aten.reshape", k_reshape),
        (super::undeclared::UNSAFE_VIEW.name(), k_unsafe_view),
        ("aten.permute", k_permute),
        ("aten.expand", k_expand),
        ("aten.slice.Tensor", k_slice),
        ("aten.select.int", k_select),
        ("aten.squeeze", k_squeeze),
        ("aten.squeeze.dim", k_squeeze_dim),
        ("aten.squeeze.dims", k_squeeze_dims),
        ("aten.unsqueeze", k_unsqueeze),
        ("aten.as_strided", k_as_strided),
        ("aten.t", k_t),
        ("aten.transpose.int", k_transpose),
        ("aten.alias", k_alias),
        ("aten.diagonal", k_diagonal),
        ("aten.narrow", k_narrow),
        ("aten.flatten.using_ints", k_flatten),
        ("aten.unbind.int", k_unbind),
        ("aten.split.Tensor", k_split),
        ("aten.split_with_sizes", k_split_with_sizes),
        ("aten.chunk", k_chunk),
        ("aten.cat", k_cat),
        ("aten.stack", k_stack),
        ("aten.flip", k_flip),
        ("aten.roll", k_roll),
        ("aten.repeat", k_repeat),
        ("aten.tril", k_tril),
        ("aten.triu", k_triu),
        ("aten.view_copy", k_view_copy),
        ("aten.permute_copy", k_permute_copy),
        ("aten.expand_copy", k_expand_copy),
        ("aten.slice_copy.Tensor", k_slice_copy),
        ("aten.select_copy.int", k_select_copy),
        ("aten.squeeze_copy.dims", k_squeeze_copy_dims),
        ("aten.unsqueeze_copy", k_unsqueeze_copy),
        ("aten.transpose_copy.int", k_transpose_copy),
        ("aten.t_copy", k_t_copy),
        ("aten.alias_copy", k_alias_copy),
        ("aten.as_strided_copy", k_as_strided_copy),
        ("aten.diagonal_copy", k_diagonal_copy),
        ("aten.sym_size.int", k_sym_size),
        ("aten.sym_numel", k_sym_numel),
        ("aten.sym_stride.int", k_sym_stride),
        ("aten.sym_storage_offset", k_sym_storage_offset),
        ("aten.sym_is_contiguous", k_sym_is_contiguous),
    ];
    for &(name, f) in table {
        r.register(name, f);
    }
}
