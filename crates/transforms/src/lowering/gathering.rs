//! Decompositions of ops that gather or scatter rows by index tensors: `repeat_interleave`
//! with a tensor of repeats (an `index_select` by `repeat_interleave.Tensor(repeats)`, whose
//! length is known only when it runs), `embedding_bag` (its core form `_embedding_bag`, the
//! padding index `-1` when none is given, the bookkeeping results as the forward-only kernel
//! gives them), and `max_unpool2d`/`max_unpool3d` (each plane's
//! values `scatter`ed into a zero plane of the output size at their flat indices).

use super::composite::static_shape;
use super::decompose::{DecompResult, DecompositionTable, input, one, opt_input};
use super::rewrite::{Arg, OpBuilder};
use super::stacking::{int, ints};
use dialect_aten::op;
use ir::{Attribute, DType, OpId};

/// Adds the gathering decompositions to `t`.
pub(super) fn add(t: &mut DecompositionTable) {
    t.insert(op::REPEAT_INTERLEAVE_SELF_TENSOR, repeat_interleave)
        .insert(op::EMBEDDING_BAG, embedding_bag)
        .insert(op::EMBEDDING_BAG_PADDING_IDX, embedding_bag)
        .insert(op::MAX_UNPOOL2D, |b, op| max_unpool(b, op, 2))
        .insert(op::MAX_UNPOOL3D, |b, op| max_unpool(b, op, 3));
}

/// `repeat_interleave(x, repeats, dim)`: `x` (flattened when `dim` is `None`) indexed along
/// `dim` by each index repeated as often as `repeats` says; a single repeat applies to all.
fn repeat_interleave(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "self")?;
    let reps = input(b, op, "repeats")?;
    let (dim, output_size) = b.with_args(op, |a| {
        (if a.is_none("dim") { None } else { Some(a.int("dim")) }, if a.is_none("output_size") { None } else { Some(a.int("output_size")) })
    })?;
    let (x, d) = match dim {
        None => (b.call(op::RESHAPE, &[x.into(), ints(&[-1])])?, 0),
        Some(d) => {
            let d = d.ok_or("repeat_interleave: dim must be constant")?;
            let r = b.rank(x).ok_or("repeat_interleave: the input's rank is unknown")?;
            let n = dialect_aten::infer::norm_dim(d, r.max(1)).ok_or(format!("repeat_interleave: dimension {d} is out of range for rank {r}"))?;
            if r == 0 { (b.call(op::RESHAPE, &[x.into(), ints(&[1])])?, 0) } else { (x, n) }
        }
    };
    let n = static_shape(b, x, "repeat_interleave")?[d];
    if !matches!(b.dtype(reps), Some(DType::I64 | DType::I32)) {
        return Err("repeat_interleave: repeats has to be Long or Int tensor".into());
    }
    let rs = static_shape(b, reps, "repeat_interleave")?;
    let reps = match rs.as_slice() {
        [] | [1] => {
            let flat = b.call(op::RESHAPE, &[reps.into(), ints(&[1])])?;
            b.call(op::EXPAND, &[flat.into(), ints(&[n])])?
        }
        [m] if *m == n => reps,
        [m] => return Err(format!("repeat_interleave: repeats must have the same size as input along dim, but got repeats.size(0) = {m} and input.size({d}) = {n}")),
        _ => return Err("repeat_interleave: repeats must be 0-dim or 1-dim tensor".into()),
    };
    let size = match output_size {
        None => Arg::A(dialect_prim::kinds::none()),
        Some(s) => int(s.ok_or("repeat_interleave: output_size must be constant")?),
    };
    let idx = b.call(op::REPEAT_INTERLEAVE_TENSOR, &[reps.into(), size])?;
    one(b.call(op::INDEX_SELECT, &[x.into(), int(d as i64), idx.into()]))
}

/// `embedding_bag` as `_embedding_bag` with the same arguments.
fn embedding_bag(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let (w, idx, off) = (input(b, op, "weight")?, input(b, op, "indices")?, input(b, op, "offsets")?);
    let psw = opt_input(b, op, "per_sample_weights")?;
    let (scale, mode, sparse, last, pad) = b.with_args(op, |a| {
        (a.bool("scale_grad_by_freq"), a.int("mode"), a.bool("sparse"), a.bool("include_last_offset"), if a.is_none("padding_idx") { Some(-1) } else { a.int("padding_idx") })
    })?;
    let flag = |v: Option<bool>| Arg::A(Attribute::Bool(v.unwrap_or(false)));
    let args = [
        w.into(),
        idx.into(),
        off.into(),
        flag(scale),
        int(mode.ok_or("embedding_bag: mode must be constant")?),
        flag(sparse),
        psw.map(Arg::V).unwrap_or(Arg::A(dialect_prim::kinds::none())),
        flag(last),
        int(pad.ok_or("embedding_bag: padding_idx must be constant")?),
    ];
    let mut r = b.call_n(op::_EMBEDDING_BAG, &args)?;
    // Without autograd PyTorch runs the forward-only kernel, whose sum mode with a last offset
    // gives `bag_size` and `max_indices` one zero per offset, not per bag.
    if mode == Some(0) && last == Some(true) {
        let n = static_shape(b, off, "embedding_bag")?.first().copied().unwrap_or(0);
        for i in [2, 3] {
            r[i] = b.call(op::NEW_ZEROS, &[r[i].into(), ints(&[n])])?;
        }
    }
    Ok(Some(r))
}

/// `max_unpool{2,3}d(x, indices, output_size)`: each plane of `x` scattered into a zero plane
/// of `output_size` at the flat positions `indices` hold.
fn max_unpool(b: &mut OpBuilder, op: OpId, k: usize) -> DecompResult {
    let what = if k == 2 { "max_unpool2d" } else { "max_unpool3d" };
    let (x, idx) = (input(b, op, "self")?, input(b, op, "indices")?);
    let out = b.with_args(op, |a| a.ints("output_size"))?.ok_or(format!("{what}: output_size must be constant"))?;
    if out.len() != k {
        return Err(format!("{what}: there should be exactly {k} elements in output_size, but got {}", out.len()));
    }
    if k == 3 {
        let (stride, pad) = b.with_args(op, |a| (a.ints("stride"), a.ints("padding")))?;
        let (stride, pad) = (stride.ok_or("max_unpool3d: stride must be constant")?, pad.ok_or("max_unpool3d: padding must be constant")?);
        if stride.len() != 3 || pad.len() != 3 {
            return Err("max_unpool3d: there should be exactly three elements (depth, height, width) in stride and padding".into());
        }
        if stride.iter().any(|&s| s <= 0) {
            return Err(format!("max_unpool3d: strides should be greater than zero, but got stride: {stride:?}"));
        }
    }
    if b.dtype(idx) != Some(DType::I64) {
        return Err(format!("{what}: elements in indices should be type int64"));
    }
    let xs = static_shape(b, x, what)?;
    if static_shape(b, idx, what)? != xs {
        return Err(format!("{what}: expected shape of indices to be same as that of the input tensor"));
    }
    if xs.len() != k + 1 && xs.len() != k + 2 {
        return Err(format!("{what}: input to max_unpooling should be a {}d or {}d Tensor, but got a tensor with {} dimensions", k + 1, k + 2, xs.len()));
    }
    if xs[xs.len() - k..].iter().chain(&out).any(|&s| s <= 0) && xs.iter().product::<i64>() != 0 {
        return Err(format!("{what}: found an empty dimension in the input or output size"));
    }
    let lead = &xs[..xs.len() - k];
    let plane: i64 = xs[xs.len() - k..].iter().product();
    let mut flat = lead.to_vec();
    flat.push(plane);
    let mut zero = lead.to_vec();
    zero.push(out.iter().product());
    let xf = b.call(op::RESHAPE, &[x.into(), ints(&flat)])?;
    let idf = b.call(op::RESHAPE, &[idx.into(), ints(&flat)])?;
    let z = b.call(op::NEW_ZEROS, &[x.into(), ints(&zero)])?;
    let s = b.call(op::SCATTER_SRC, &[z.into(), int(-1), idf.into(), xf.into()])?;
    let mut shape = lead.to_vec();
    shape.extend(&out);
    one(b.call(op::RESHAPE, &[s.into(), ints(&shape)]))
}
