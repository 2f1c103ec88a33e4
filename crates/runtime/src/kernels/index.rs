//! Indexing kernels: `embedding`, `index_select`, `gather`, the `scatter` family
//! (`scatter.src/.value/.reduce/.value_reduce`, `scatter_add`, `scatter_reduce.two`),
//! advanced indexing (`index.Tensor`, `index_put`), `index_add`, `index_copy`,
//! `index_fill`, `masked_scatter`, `select_scatter`, `slice_scatter`, `diagonal_scatter`,
//! `take` and `nonzero`.
//!
//! Kernels work on contiguous copies of their inputs and build fresh outputs; every dtype is
//! supported. Index values are checked: an out-of-range index is an error naming the op, the
//! index, the dim and its size. Accumulations follow the element type: floats add in `f64`
//! and round once, integers wrap, bools act as logical or/and.
//!
//! One file because every kernel here shares the index checking and the accumulation rules
//! above; it stays near the size limit for that reason.

use dialect_aten::op;
use ir::DType;

use super::linalg::outs;
use super::{Args, KernelRegistry};
use crate::dispatch_dtype;
use crate::tensor::shape::{broadcast_all, contiguous_strides, normalize_dim};
use crate::tensor::{Element, KernelError, Result, Scalar, Tensor};
use crate::value::IValue;

/// Checks (and, with `wrap`, wraps negative) index `i` against a dim of `size` elements.
fn bound(op: &'static str, i: i64, size: usize, dim: usize, wrap: bool) -> Result<usize> {
    let j = if wrap && i < 0 { i + size as i64 } else { i };
    if j < 0 || j >= size as i64 {
        return Err(KernelError::new(op, format!("index {i} is out of bounds for dimension {dim} with size {size}")));
    }
    Ok(j as usize)
}

/// The values of an integer index tensor (row-major).
fn index_values(op: &'static str, what: &str, t: &Tensor) -> Result<Vec<i64>> {
    match t.dtype() {
        DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64 => Ok(t.to_vec_i64()),
        dt => Err(KernelError::new(op, format!("{what} must be an integer tensor, got {}", dt.torch_name()))),
    }
}

/// Calls `f(position, linear)` for every position of `sizes`, row-major.
fn for_each_pos(sizes: &[usize], mut f: impl FnMut(&[usize], usize) -> Result<()>) -> Result<()> {
    let total: usize = sizes.iter().product();
    let mut pos = vec![0usize; sizes.len()];
    for lin in 0..total {
        f(&pos, lin)?;
        for d in (0..sizes.len()).rev() {
            pos[d] += 1;
            if pos[d] < sizes[d] {
                break;
            }
            pos[d] = 0;
        }
    }
    Ok(())
}

/// Offsets (in a contiguous tensor of `sizes`) of every position of the sub-space spanned by
/// `dims`, row-major over those dims.
fn sub_offsets(sizes: &[usize], dims: &[usize]) -> Vec<usize> {
    let strides = contiguous_strides(sizes);
    let sub: Vec<usize> = dims.iter().map(|&d| sizes[d]).collect();
    let mut out = Vec::with_capacity(sub.iter().product());
    let _ = for_each_pos(&sub, |pos, _| {
        out.push(pos.iter().zip(dims).map(|(&p, &d)| p * strides[d]).sum());
        Ok(())
    });
    out
}

// ----- element arithmetic shared by scatter, index_put and friends -----

#[inline(always)]
fn add<T: Element>(a: T, b: T) -> T {
    if T::DTYPE.is_floating() {
        T::from_f64(a.to_f64() + b.to_f64())
    } else {
        T::from_i64(a.to_i64().wrapping_add(b.to_i64()))
    }
}

#[inline(always)]
fn mul<T: Element>(a: T, b: T) -> T {
    if T::DTYPE.is_floating() {
        T::from_f64(a.to_f64() * b.to_f64())
    } else if T::DTYPE == DType::Bool {
        T::from_bool(a.to_bool() && b.to_bool())
    } else {
        T::from_i64(a.to_i64().wrapping_mul(b.to_i64()))
    }
}

/// Maximum (`max == true`) or minimum with NaN propagation from either side.
#[inline(always)]
fn extreme<T: Element>(a: T, b: T, max: bool) -> T {
    if T::DTYPE.is_floating() {
        let (x, y) = (a.to_f64(), b.to_f64());
        if x.is_nan() {
            return a;
        }
        if y.is_nan() {
            return b;
        }
        if (max && y > x) || (!max && y < x) { b } else { a }
    } else {
        let (x, y) = (a.to_i64(), b.to_i64());
        if (max && y > x) || (!max && y < x) { b } else { a }
    }
}

/// `sum / count` as PyTorch's scatter mean does it: true division for floats, floor division
/// for integers.
#[inline(always)]
fn mean_of<T: Element>(sum: T, count: i64) -> T {
    if T::DTYPE.is_floating() {
        T::from_f64(sum.to_f64() / count as f64)
    } else {
        T::from_i64(sum.to_i64().div_euclid(count.max(1)))
    }
}

// ----- embedding / index_select / gather / take -----

/// `self` gathered along `dim` at `index` (1-D or 0-D), checking bounds without wrapping.
fn index_select_impl(op: &'static str, x: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    if index.dim() > 1 {
        return Err(KernelError::new(op, format!("index must be 0-D or 1-D, got {:?}", index.sizes())));
    }
    let idx = index_values(op, "index", index)?;
    let d = normalize_dim(op, dim, x.dim())?;
    let xs: Vec<usize> = if x.dim() == 0 { vec![1] } else { x.sizes().to_vec() };
    let outer: usize = xs[..d].iter().product();
    let size = xs[d];
    let inner: usize = xs[d + 1..].iter().product();
    let rows: Vec<usize> = idx.iter().map(|&i| bound(op, i, size, d, false)).collect::<Result<_>>()?;
    let mut out_sizes = xs.clone();
    out_sizes[d] = rows.len();
    if x.dim() == 0 {
        if rows.len() != 1 {
            return Err(KernelError::new(
                op,
                format!("index to a 0-d tensor can have only 1 value, got {}", rows.len()),
            ));
        }
        out_sizes = vec![];
    }
    crate::dispatch_all_dtypes!(x.dtype(), T => {
        let src = x.contiguous()?;
        let src = src.as_slice::<T>()?;
        let mut out = Vec::with_capacity(outer * rows.len() * inner);
        for o in 0..outer {
            for &r in &rows {
                let s = (o * size + r) * inner;
                out.extend_from_slice(&src[s..s + inner]);
            }
        }
        Tensor::from_vec(out, &out_sizes)
    })
}

fn index_select(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::INDEX_SELECT, args, 3)?;
    Ok(outs([index_select_impl(a.op, a.tensor(0)?, a.int(1)?, a.tensor(2)?)?]))
}

fn embedding(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::EMBEDDING.name();
    let a = Args::new(OP, args, 2)?;
    let (w, idx) = (a.tensor(0)?, a.tensor(1)?);
    if w.dim() != 2 {
        return Err(KernelError::new(OP, format!("weight must be 2-D, got {:?}", w.sizes())));
    }
    let flat = super::linalg::reshape_contiguous(idx, &[idx.numel()])?;
    let rows = index_select_impl(OP, w, 0, &flat)?;
    let mut sizes = idx.sizes().to_vec();
    sizes.push(w.sizes()[1]);
    Ok(outs([super::linalg::reshape_contiguous(&rows, &sizes)?]))
}

fn take(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::TAKE.name();
    let a = Args::new(OP, args, 2)?;
    let (x, index) = (a.tensor(0)?, a.tensor(1)?);
    let idx = index_values(OP, "index", index)?;
    let n = x.numel();
    let pos: Vec<usize> = idx.iter().map(|&i| bound(OP, i, n, 0, true)).collect::<Result<_>>()?;
    let r = dispatch_dtype!(x.dtype(), T => {
        let src = x.to_vec::<T>()?;
        Tensor::from_vec(pos.iter().map(|&p| src[p]).collect::<Vec<T>>(), index.sizes())?
    });
    Ok(outs([r]))
}

/// Sizes with 0-d treated as 1-d of one element (PyTorch's gather/scatter convention).
fn dims_of(t: &Tensor) -> Vec<usize> {
    if t.dim() == 0 { vec![1] } else { t.sizes().to_vec() }
}

fn gather(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::GATHER.name();
    let a = Args::new(OP, args, 3)?;
    let (x, index) = (a.tensor(0)?, a.tensor(2)?);
    let d = normalize_dim(OP, a.int(1)?, x.dim())?;
    let (xs, is) = (dims_of(x), dims_of(index));
    if xs.len() != is.len() {
        return Err(KernelError::new(OP, "index tensor must have the same number of dimensions as input tensor"));
    }
    for k in 0..xs.len() {
        if k != d && is[k] > xs[k] {
            return Err(KernelError::new(
                OP,
                format!("size of index {:?} exceeds input {:?} at dimension {k}", index.sizes(), x.sizes()),
            ));
        }
    }
    let idx = index_values(OP, "index", index)?;
    let strides = contiguous_strides(&xs);
    let r = dispatch_dtype!(x.dtype(), T => {
        let src = x.to_vec::<T>()?;
        let mut out = Vec::with_capacity(idx.len());
        for_each_pos(&is, |pos, lin| {
            let j = bound(OP, idx[lin], xs[d], d, false)?;
            let off: usize = pos.iter().enumerate().map(|(k, &p)| if k == d { j } else { p } * strides[k]).sum();
            out.push(src[off]);
            Ok(())
        })?;
        Tensor::from_vec(out, index.sizes())?
    });
    Ok(outs([r]))
}

// ----- scatter family -----

#[derive(Clone, Copy, PartialEq, Debug)]
enum Reduce {
    Replace,
    Sum,
    Prod,
    Mean,
    Max,
    Min,
}

fn parse_reduce(op: &'static str, s: &str) -> Result<Reduce> {
    Ok(match s {
        "sum" | "add" => Reduce::Sum,
        "prod" | "multiply" => Reduce::Prod,
        "mean" => Reduce::Mean,
        "amax" => Reduce::Max,
        "amin" => Reduce::Min,
        other => return Err(KernelError::new(op, format!("unknown reduce '{other}'"))),
    })
}

/// Source of scattered values: a tensor (read at the index position) or one scalar.
enum Src<'a> {
    Tensor(&'a Tensor),
    Value(Scalar),
}

/// `self.clone()` with `src` scattered into it along `dim` at `index`, combined by `reduce`.
fn scatter_impl(
    op: &'static str,
    x: &Tensor,
    dim: i64,
    index: &Tensor,
    src: Src<'_>,
    reduce: Reduce,
    include_self: bool,
) -> Result<Tensor> {
    let d = normalize_dim(op, dim, x.dim())?;
    let (xs, is) = (dims_of(x), dims_of(index));
    if index.numel() == 0 {
        return x.deep_clone();
    }
    if xs.len() != is.len() {
        return Err(KernelError::new(op, "index tensor must have the same number of dimensions as self tensor"));
    }
    let src_sizes = match &src {
        Src::Tensor(s) => {
            let ss = dims_of(s);
            if ss.len() != is.len() {
                return Err(KernelError::new(op, "index tensor must have the same number of dimensions as src tensor"));
            }
            if s.dtype() != x.dtype() {
                return Err(KernelError::new(
                    op,
                    format!(
                        "expected self and src to have the same dtype, got {} and {}",
                        x.dtype().torch_name(),
                        s.dtype().torch_name()
                    ),
                ));
            }
            Some(ss)
        }
        Src::Value(_) => None,
    };
    for k in 0..xs.len() {
        let too_big_self = k != d && is[k] > xs[k];
        let too_big_src = src_sizes.as_ref().is_some_and(|ss| is[k] > ss[k]);
        if too_big_self || too_big_src {
            return Err(KernelError::new(
                op,
                format!("size of index {:?} exceeds self {:?} or src at dimension {k}", index.sizes(), x.sizes()),
            ));
        }
    }
    let idx = index_values(op, "index", index)?;
    let xstr = contiguous_strides(&xs);
    let sstr = src_sizes.as_ref().map(|s| contiguous_strides(s));
    dispatch_dtype!(x.dtype(), T => {
        let mut out = x.to_vec::<T>()?;
        let srcv: Option<Vec<T>> = match &src {
            Src::Tensor(s) => Some(s.to_vec::<T>()?),
            Src::Value(_) => None,
        };
        let value: T = match &src {
            Src::Value(v) => v.to_element(),
            Src::Tensor(_) => T::default(),
        };
        let track = !include_self || reduce == Reduce::Mean;
        let mut count: Vec<i64> = if track { vec![if include_self { 1 } else { 0 }; out.len()] } else { Vec::new() };
        for_each_pos(&is, |pos, lin| {
            let j = bound(op, idx[lin], xs[d], d, false)?;
            let off: usize = pos.iter().enumerate().map(|(k, &p)| if k == d { j } else { p } * xstr[k]).sum();
            let v = match (&srcv, &sstr) {
                (Some(sv), Some(ss)) => sv[pos.iter().zip(ss).map(|(&p, &s)| p * s).sum::<usize>()],
                _ => value,
            };
            if reduce == Reduce::Replace {
                out[off] = v;
                return Ok(());
            }
            if track && count[off] == 0 {
                out[off] = v;
            } else {
                out[off] = match reduce {
                    Reduce::Sum | Reduce::Mean => add(out[off], v),
                    Reduce::Prod => mul(out[off], v),
                    Reduce::Max => extreme(out[off], v, true),
                    Reduce::Min => extreme(out[off], v, false),
                    Reduce::Replace => v,
                };
            }
            if track {
                count[off] += 1;
            }
            Ok(())
        })?;
        if reduce == Reduce::Mean {
            for (o, &c) in out.iter_mut().zip(&count) {
                if c > 1 || (c == 1 && !include_self) {
                    *o = mean_of(*o, c);
                }
            }
        }
        Tensor::from_vec(out, x.sizes())
    })
}

fn scatter_src(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::SCATTER_SRC, args, 4)?;
    let r =
        scatter_impl(a.op, a.tensor(0)?, a.int(1)?, a.tensor(2)?, Src::Tensor(a.tensor(3)?), Reduce::Replace, true)?;
    Ok(outs([r]))
}

fn scatter_value(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::SCATTER_VALUE, args, 4)?;
    let r = scatter_impl(a.op, a.tensor(0)?, a.int(1)?, a.tensor(2)?, Src::Value(a.scalar(3)?), Reduce::Replace, true)?;
    Ok(outs([r]))
}

fn scatter_reduce_legacy(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::SCATTER_REDUCE, args, 5)?;
    let red = match a.str(4)? {
        "add" => Reduce::Sum,
        "multiply" => Reduce::Prod,
        other => {
            return Err(KernelError::new(a.op, format!("reduce argument must be 'add' or 'multiply', got '{other}'")));
        }
    };
    let r = scatter_impl(a.op, a.tensor(0)?, a.int(1)?, a.tensor(2)?, Src::Tensor(a.tensor(3)?), red, true)?;
    Ok(outs([r]))
}

fn scatter_value_reduce(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::SCATTER_VALUE_REDUCE, args, 5)?;
    let red = match a.str(4)? {
        "add" => Reduce::Sum,
        "multiply" => Reduce::Prod,
        other => {
            return Err(KernelError::new(a.op, format!("reduce argument must be 'add' or 'multiply', got '{other}'")));
        }
    };
    let r = scatter_impl(a.op, a.tensor(0)?, a.int(1)?, a.tensor(2)?, Src::Value(a.scalar(3)?), red, true)?;
    Ok(outs([r]))
}

fn scatter_add(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::SCATTER_ADD, args, 4)?;
    let r = scatter_impl(a.op, a.tensor(0)?, a.int(1)?, a.tensor(2)?, Src::Tensor(a.tensor(3)?), Reduce::Sum, true)?;
    Ok(outs([r]))
}

fn scatter_reduce_two(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::SCATTER_REDUCE_TWO, args, 5)?;
    let red = parse_reduce(a.op, a.str(4)?)?;
    let include_self = a.opt_bool(5)?.unwrap_or(true);
    let r = scatter_impl(a.op, a.tensor(0)?, a.int(1)?, a.tensor(2)?, Src::Tensor(a.tensor(3)?), red, include_self)?;
    Ok(outs([r]))
}

// ----- advanced indexing -----

/// Positions addressed by `self[indices]`: the result shape and, for each result element in
/// row-major order, its offset in a contiguous `self`.
fn advanced_offsets(op: &'static str, sizes: &[usize], indices: &[Option<Tensor>]) -> Result<(Vec<usize>, Vec<usize>)> {
    // Expand boolean masks into one integer index per masked dim.
    let mut per_dim: Vec<Option<(Vec<i64>, Vec<usize>)>> = Vec::new();
    for ix in indices {
        match ix {
            None => per_dim.push(None),
            Some(t) if matches!(t.dtype(), DType::Bool | DType::U8) => {
                let d0 = per_dim.len();
                let k = t.dim();
                if d0 + k > sizes.len() || t.sizes() != &sizes[d0..d0 + k] {
                    return Err(KernelError::new(
                        op,
                        format!(
                            "the shape of the mask {:?} does not match the shape of the indexed tensor {sizes:?} at dim {d0}",
                            t.sizes()
                        ),
                    ));
                }
                let mask = t.to_vec_i64();
                let mut coords: Vec<Vec<i64>> = vec![Vec::new(); k];
                for_each_pos(t.sizes(), |pos, lin| {
                    if mask[lin] != 0 {
                        for (c, &p) in coords.iter_mut().zip(pos) {
                            c.push(p as i64);
                        }
                    }
                    Ok(())
                })?;
                for c in coords {
                    let n = c.len();
                    per_dim.push(Some((c, vec![n])));
                }
            }
            Some(t) => {
                let v = match t.dtype() {
                    DType::I8 | DType::I16 | DType::I32 | DType::I64 => t.to_vec_i64(),
                    dt => {
                        return Err(KernelError::new(
                            op,
                            format!(
                                "tensors used as indices must be long, int, byte or bool tensors, got {}",
                                dt.torch_name()
                            ),
                        ));
                    }
                };
                per_dim.push(Some((v, t.sizes().to_vec())));
            }
        }
    }
    if per_dim.len() > sizes.len() {
        return Err(KernelError::new(
            op,
            format!("too many indices for tensor of dimension {} (got {})", sizes.len(), per_dim.len()),
        ));
    }
    per_dim.resize(sizes.len(), None);
    let indexed: Vec<usize> = (0..sizes.len()).filter(|&d| per_dim[d].is_some()).collect();
    let strides = contiguous_strides(sizes);
    if indexed.is_empty() {
        let all: Vec<usize> = (0..sizes.len()).collect();
        return Ok((sizes.to_vec(), sub_offsets(sizes, &all)));
    }
    let shapes: Vec<&[usize]> = indexed.iter().map(|&d| per_dim[d].as_ref().map_or(&[][..], |p| &p.1[..])).collect();
    let b = broadcast_all(&shapes).map_err(|e| {
        KernelError::new(
            op,
            format!("shape mismatch: indexing tensors could not be broadcast together ({})", e.message),
        )
    })?;
    // Offset contributed by the indexed dims for every broadcast position.
    let bn: usize = b.iter().product();
    let mut idx_off = vec![0usize; bn];
    for &d in &indexed {
        let (vals, shp) = per_dim[d].as_ref().map_or((&[][..], &[][..]), |p| (&p.0[..], &p.1[..]));
        let pad = b.len() - shp.len();
        let own = contiguous_strides(shp);
        let bs: Vec<usize> =
            (0..b.len()).map(|k| if k < pad || shp[k - pad] == 1 { 0 } else { own[k - pad] }).collect();
        for_each_pos(&b, |pos, lin| {
            let src = pos.iter().zip(&bs).map(|(&p, &s)| p * s).sum::<usize>();
            let j = bound(op, vals[src], sizes[d], d, true)?;
            idx_off[lin] += j * strides[d];
            Ok(())
        })?;
    }
    let adjacent = indexed.windows(2).all(|w| w[1] == w[0] + 1);
    let (before, after): (Vec<usize>, Vec<usize>) = if adjacent {
        ((0..indexed[0]).collect(), (indexed[indexed.len() - 1] + 1..sizes.len()).collect())
    } else {
        (Vec::new(), (0..sizes.len()).filter(|d| per_dim[*d].is_none()).collect())
    };
    let bo = sub_offsets(sizes, &before);
    let ao = sub_offsets(sizes, &after);
    let mut out_sizes: Vec<usize> = before.iter().map(|&d| sizes[d]).collect();
    out_sizes.extend(&b);
    out_sizes.extend(after.iter().map(|&d| sizes[d]));
    let mut offs = Vec::with_capacity(bo.len() * bn * ao.len());
    for &x in &bo {
        for &y in &idx_off {
            for &z in &ao {
                offs.push(x + y + z);
            }
        }
    }
    Ok((out_sizes, offs))
}

fn index_tensor(args: &[IValue]) -> Result<Vec<IValue>> {
    index_tensor_as(op::INDEX_TENSOR.name(), args)
}

/// `_unsafe_index.Tensor`: `index.Tensor` without the promise of bounds checks (they are
/// still made; an out-of-range index is an error rather than undefined behaviour).
fn unsafe_index_tensor(args: &[IValue]) -> Result<Vec<IValue>> {
    index_tensor_as(op::_UNSAFE_INDEX_TENSOR.name(), args)
}

fn index_tensor_as(op: &'static str, args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op, args, 2)?;
    let x = a.tensor(0)?;
    let (sizes, offs) = advanced_offsets(op, x.sizes(), &a.opt_tensor_list(1)?)?;
    let r = dispatch_dtype!(x.dtype(), T => {
        let src = x.to_vec::<T>()?;
        Tensor::from_vec(offs.iter().map(|&o| src[o]).collect::<Vec<T>>(), &sizes)?
    });
    Ok(outs([r]))
}

/// `self.clone()` with `values` (broadcast to the indexed shape) written at `self[indices]`,
/// added when `accumulate`.
fn index_put_impl(
    op: &'static str,
    x: &Tensor,
    indices: &[Option<Tensor>],
    values: &Tensor,
    accumulate: bool,
) -> Result<Tensor> {
    let (sizes, offs) = advanced_offsets(op, x.sizes(), indices)?;
    let vals = values.cast_to(x.dtype())?.expand_to(op, &sizes).map_err(|_| {
        KernelError::new(
            op,
            format!(
                "shape mismatch: value tensor of shape {:?} cannot be broadcast to indexing result of shape {sizes:?}",
                values.sizes()
            ),
        )
    })?;
    dispatch_dtype!(x.dtype(), T => {
        let mut out = x.to_vec::<T>()?;
        let v = vals.to_vec::<T>()?;
        for (&o, &val) in offs.iter().zip(&v) {
            out[o] = if accumulate { add(out[o], val) } else { val };
        }
        Tensor::from_vec(out, x.sizes())
    })
}

fn index_put(args: &[IValue]) -> Result<Vec<IValue>> {
    index_put_as(op::INDEX_PUT.name(), args)
}

fn index_put_hacked_twin(args: &[IValue]) -> Result<Vec<IValue>> {
    index_put_as(op::INDEX_PUT_HACKED_TWIN.name(), args)
}

/// `_unsafe_index_put`: `index_put` (bounds are still checked).
fn unsafe_index_put(args: &[IValue]) -> Result<Vec<IValue>> {
    index_put_as(op::_UNSAFE_INDEX_PUT.name(), args)
}

fn index_put_as(op: &'static str, args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op, args, 3)?;
    let r = index_put_impl(a.op, a.tensor(0)?, &a.opt_tensor_list(1)?, a.tensor(2)?, a.opt_bool(3)?.unwrap_or(false))?;
    Ok(outs([r]))
}

/// Indices list selecting `index` along `dim` (all other dims full).
fn dim_indices(dim: usize, index: &Tensor) -> Vec<Option<Tensor>> {
    let mut v: Vec<Option<Tensor>> = vec![None; dim];
    v.push(Some(index.clone()));
    v
}

/// `index_add(self, dim, index, source, alpha)`: `self[..., index[i], ...] += alpha · source[..., i, ...]`.
fn index_add(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::INDEX_ADD.name();
    let a = Args::new(OP, args, 4)?;
    let (x, index, src) = (a.tensor(0)?, a.tensor(2)?, a.tensor(3)?);
    let alpha = a.opt_scalar(4)?.unwrap_or(Scalar::Int(1));
    along_dim_put(OP, x, a.int(1)?, index, src, Some(alpha))
}

/// `index_copy(self, dim, index, source)`.
fn index_copy(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::INDEX_COPY.name();
    let a = Args::new(OP, args, 4)?;
    along_dim_put(OP, a.tensor(0)?, a.int(1)?, a.tensor(2)?, a.tensor(3)?, None)
}

/// Writes (or, with `alpha`, adds `alpha ·`) `src` into `x` at `index` along `dim`.
fn along_dim_put(
    op: &'static str,
    x: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    alpha: Option<Scalar>,
) -> Result<Vec<IValue>> {
    let d = normalize_dim(op, dim, x.dim())?;
    if index.dim() > 1 {
        return Err(KernelError::new(op, format!("index must be 0-D or 1-D, got {:?}", index.sizes())));
    }
    let idx = index_values(op, "index", index)?;
    if x.dim() == 0 {
        let flat = super::linalg::reshape_contiguous(x, &[1])?;
        let s = super::linalg::reshape_contiguous(src, &[src.numel()])?;
        let r = along_dim_put(op, &flat, 0, index, &s, alpha)?;
        let t = r[0].as_tensor()?;
        return Ok(outs([super::linalg::reshape_contiguous(t, &[])?]));
    }
    let mut want = x.sizes().to_vec();
    want[d] = idx.len();
    if src.sizes() != &want[..] && !(src.dim() == 0 && want.iter().product::<usize>() == 1) {
        return Err(KernelError::new(
            op,
            format!("source of shape {:?} does not match the expected shape {want:?}", src.sizes()),
        ));
    }
    for &i in &idx {
        bound(op, i, x.sizes()[d], d, false)?;
    }
    // Move the indexed dim of source first so that it lines up with index_put's result
    // layout (indexed dims are adjacent, so the broadcast index takes dim d's place).
    let values = match alpha {
        Some(al) => scale(src, al)?,
        None => src.clone(),
    };
    let values = super::linalg::reshape_contiguous(&values, &want)?;
    let index1 = super::linalg::reshape_contiguous(index, &[idx.len()])?;
    Ok(outs([index_put_impl(op, x, &dim_indices(d, &index1), &values, alpha.is_some())?]))
}

/// `alpha · t` in `t`'s dtype.
fn scale(t: &Tensor, alpha: Scalar) -> Result<Tensor> {
    if alpha.to_f64() == 1.0 {
        return Ok(t.clone());
    }
    dispatch_dtype!(t.dtype(), T => {
        let a: T = alpha.to_element();
        let v: Vec<T> = t.to_vec::<T>()?.into_iter().map(|x| mul(x, a)).collect();
        Tensor::from_vec(v, t.sizes())
    })
}

/// `index_fill.int_Scalar` / `.int_Tensor`: sets `self` to `value` at `index` along `dim`.
fn index_fill(op: &'static str, args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op, args, 4)?;
    let x = a.tensor(0)?;
    let d = normalize_dim(op, a.int(1)?, x.dim())?;
    let index = a.tensor(2)?;
    let value = a.scalar(3)?;
    if index.dim() > 1 {
        return Err(KernelError::new(op, format!("index must be 0-D or 1-D, got {:?}", index.sizes())));
    }
    let idx = index_values(op, "index", index)?;
    let xs = dims_of(x);
    let d = if x.dim() == 0 { 0 } else { d };
    let outer: usize = xs[..d].iter().product();
    let inner: usize = xs[d + 1..].iter().product();
    let rows: Vec<usize> = idx.iter().map(|&i| bound(op, i, xs[d], d, true)).collect::<Result<_>>()?;
    let r = dispatch_dtype!(x.dtype(), T => {
        let mut out = x.to_vec::<T>()?;
        let v: T = value.to_element();
        for o in 0..outer {
            for &r in &rows {
                let s = (o * xs[d] + r) * inner;
                out[s..s + inner].fill(v);
            }
        }
        Tensor::from_vec(out, x.sizes())?
    });
    Ok(outs([r]))
}

fn index_fill_scalar(args: &[IValue]) -> Result<Vec<IValue>> {
    index_fill(op::INDEX_FILL_INT_SCALAR.name(), args)
}

fn index_fill_tensor(args: &[IValue]) -> Result<Vec<IValue>> {
    index_fill(op::INDEX_FILL_INT_TENSOR.name(), args)
}

// ----- masks and structured scatters -----

fn masked_scatter(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::MASKED_SCATTER.name();
    let a = Args::new(OP, args, 3)?;
    let (x, mask, source) = (a.tensor(0)?, a.tensor(1)?, a.tensor(2)?);
    if !matches!(mask.dtype(), DType::Bool | DType::U8) {
        return Err(KernelError::new(OP, format!("mask must be a bool tensor, got {}", mask.dtype().torch_name())));
    }
    if source.dtype() != x.dtype() {
        return Err(KernelError::new(
            OP,
            format!(
                "self ({}) and source ({}) must have the same dtype",
                x.dtype().torch_name(),
                source.dtype().torch_name()
            ),
        ));
    }
    let sizes = broadcast_all(&[x.sizes(), mask.sizes()]).map_err(|e| KernelError::new(OP, e.message))?;
    let m = mask.expand_to(OP, &sizes)?.to_vec_i64();
    let r = dispatch_dtype!(x.dtype(), T => {
        let mut out = x.expand_to(OP, &sizes)?.to_vec::<T>()?;
        let src = source.to_vec::<T>()?;
        let mut next = 0usize;
        for (o, &mv) in out.iter_mut().zip(&m) {
            if mv != 0 {
                *o = *src.get(next).ok_or_else(|| {
                    KernelError::new(OP, format!("number of elements in source ({}) < number of ones in mask", src.len()))
                })?;
                next += 1;
            }
        }
        Tensor::from_vec(out, &sizes)?
    });
    Ok(outs([r]))
}

/// `self.clone()` with `src` copied into the view `view(out)`, whose shape `src` must match.
fn scatter_into_view(
    op: &'static str,
    x: &Tensor,
    src: &Tensor,
    view: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    let out = x.deep_clone()?;
    let v = view(&out).map_err(|e| KernelError::new(op, e.message))?;
    if v.sizes() != src.sizes() {
        return Err(KernelError::new(
            op,
            format!(
                "expected src to have a size equal to the slice of self: src {:?}, slice {:?}",
                src.sizes(),
                v.sizes()
            ),
        ));
    }
    v.copy_(src).map_err(|e| KernelError::new(op, e.message))?;
    Ok(out)
}

fn select_scatter(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::SELECT_SCATTER.name();
    let a = Args::new(OP, args, 4)?;
    let x = a.tensor(0)?;
    let (dim, index) = (a.int(2)?, a.int(3)?);
    let d = normalize_dim(OP, dim, x.dim())?;
    let size = x.sizes().get(d).copied().unwrap_or(1);
    bound(OP, index, size, d, true)?;
    Ok(outs([scatter_into_view(OP, x, a.tensor(1)?, |t| t.select(dim, index))?]))
}

fn slice_scatter(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::SLICE_SCATTER.name();
    let a = Args::new(OP, args, 2)?;
    let x = a.tensor(0)?;
    let dim = a.opt_int(2)?.unwrap_or(0);
    let (start, end) = (a.opt_int(3)?, a.opt_int(4)?);
    let step = a.opt_int(5)?.unwrap_or(1);
    if step <= 0 {
        return Err(KernelError::new(OP, format!("slice step must be positive, got {step}")));
    }
    Ok(outs([scatter_into_view(OP, x, a.tensor(1)?, |t| t.slice(dim, start, end, step))?]))
}

fn diagonal_scatter(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::DIAGONAL_SCATTER.name();
    let a = Args::new(OP, args, 2)?;
    let x = a.tensor(0)?;
    let offset = a.opt_int(2)?.unwrap_or(0);
    let (d1, d2) = (a.opt_int(3)?.unwrap_or(0), a.opt_int(4)?.unwrap_or(1));
    Ok(outs([scatter_into_view(OP, x, a.tensor(1)?, |t| t.diagonal(offset, d1, d2))?]))
}

fn nonzero(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::NONZERO.name();
    let a = Args::new(OP, args, 1)?;
    let x = a.tensor(0)?;
    let flags: Vec<bool> = dispatch_dtype!(x.dtype(), T => x.to_vec::<T>()?.into_iter().map(|v| v.to_bool()).collect());
    let nd = x.dim();
    let mut coords = Vec::new();
    let mut count = 0usize;
    for_each_pos(x.sizes(), |pos, lin| {
        if flags[lin] {
            coords.extend(pos.iter().map(|&p| p as i64));
            count += 1;
        }
        Ok(())
    })?;
    Ok(outs([Tensor::from_vec(coords, &[count, nd])?]))
}

pub fn register(r: &mut KernelRegistry) {
    r.register(op::EMBEDDING, embedding);
    r.register(op::INDEX_SELECT, index_select);
    r.register(op::GATHER, gather);
    r.register(op::TAKE, take);
    r.register(op::SCATTER_SRC, scatter_src);
    r.register(op::SCATTER_VALUE, scatter_value);
    r.register(op::SCATTER_REDUCE, scatter_reduce_legacy);
    r.register(op::SCATTER_VALUE_REDUCE, scatter_value_reduce);
    r.register(op::SCATTER_ADD, scatter_add);
    r.register(op::SCATTER_REDUCE_TWO, scatter_reduce_two);
    r.register(op::INDEX_TENSOR, index_tensor);
    r.register(op::INDEX_PUT, index_put);
    r.register(op::INDEX_PUT_HACKED_TWIN, index_put_hacked_twin);
    r.register(op::_UNSAFE_INDEX_TENSOR, unsafe_index_tensor);
    r.register(op::_UNSAFE_INDEX_PUT, unsafe_index_put);
    r.register(op::INDEX_ADD, index_add);
    r.register(op::INDEX_COPY, index_copy);
    r.register(op::INDEX_FILL_INT_SCALAR, index_fill_scalar);
    r.register(op::INDEX_FILL_INT_TENSOR, index_fill_tensor);
    r.register(op::MASKED_SCATTER, masked_scatter);
    r.register(op::SELECT_SCATTER, select_scatter);
    r.register(op::SLICE_SCATTER, slice_scatter);
    r.register(op::DIAGONAL_SCATTER, diagonal_scatter);
    r.register(op::NONZERO, nonzero);
}
