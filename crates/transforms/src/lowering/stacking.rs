//! Decompositions of PyTorch's composite shape ops: stacking (`vstack`, `hstack`, `dstack`,
//! `column_stack`, `atleast_*d`), grids and broadcasting (`meshgrid`, `broadcast_tensors`),
//! block and diagonal matrices (`block_diag`, `kron`, `diag`, `diag_embed`, `diagflat`),
//! rearrangements (`rot90`, `take_along_dim`, `repeat_interleave`, `cross`, `tensordot`),
//! `one_hot`, `vander` and `_dim_arange`.
//!
//! Each follows PyTorch's definition with the static shapes shape propagation gives; an op
//! whose result shape would depend on tensor data (`one_hot` without `num_classes`) is refused.

use super::composite::static_shape;
use super::decompose::{DecompResult, DecompositionTable, cast, input, one, rank_of};
use super::rewrite::{Arg, OpBuilder};
use dialect_aten::op;
use ir::{Attribute, DType, OpId, ValueId};

/// Adds the shape ops' decompositions to `t`.
pub(super) fn add(t: &mut DecompositionTable) {
    t.insert(op::ATLEAST_1D_SEQUENCE, |b, op| atleast_each(b, op, 1))
        .insert(op::ATLEAST_2D_SEQUENCE, |b, op| atleast_each(b, op, 2))
        .insert(op::ATLEAST_3D_SEQUENCE, |b, op| atleast_each(b, op, 3))
        .insert(op::VSTACK, |b, op| stack_along(b, op, 2, |_| 0))
        .insert(op::DSTACK, |b, op| stack_along(b, op, 3, |_| 2))
        .insert(op::HSTACK, |b, op| stack_along(b, op, 1, |r| if r == 1 { 0 } else { 1 }))
        .insert(op::COLUMN_STACK, column_stack)
        .insert(op::MESHGRID, |b, op| meshgrid(b, op, false))
        .insert(op::MESHGRID_INDEXING, |b, op| {
            let xy = match b.with_args(op, |a| a.constant("indexing"))? {
                Some(Attribute::Str(s)) if &*s == "xy" => true,
                Some(Attribute::Str(s)) if &*s == "ij" => false,
                other => return Err(format!("meshgrid: indexing must be \"ij\" or \"xy\", got {other:?}")),
            };
            meshgrid(b, op, xy)
        })
        .insert(op::BROADCAST_TENSORS, broadcast_tensors)
        .insert(op::BLOCK_DIAG, block_diag)
        .insert(op::KRON, kron)
        .insert(op::DIAG, diag)
        .insert(op::DIAG_EMBED, |b, op| {
            let x = input(b, op, "self")?;
            let (off, d1, d2) = b.with_args(op, |a| (a.int("offset"), a.int("dim1"), a.int("dim2")))?;
            one(diag_embed(b, x, off.unwrap_or(0), d1.unwrap_or(-2), d2.unwrap_or(-1)))
        })
        .insert(op::DIAGFLAT, |b, op| {
            let x = input(b, op, "self")?;
            let off = b.with_args(op, |a| a.int("offset"))?.unwrap_or(0);
            let flat = b.call(op::RESHAPE, &[x.into(), ints(&[-1])])?;
            one(diag_embed(b, flat, off, 0, 1))
        })
        .insert(op::ROT90, rot90)
        .insert(op::TAKE_ALONG_DIM, take_along_dim)
        .insert(op::REPEAT_INTERLEAVE_SELF_INT, repeat_interleave)
        .insert(op::ONE_HOT, one_hot)
        .insert(op::LINALG_CROSS, |b, op| {
            let dim = b.with_args(op, |a| a.int("dim"))?.unwrap_or(-1);
            cross(b, op, Some(dim))
        })
        .insert(op::CROSS, |b, op| {
            let dim = b.with_args(op, |a| a.int("dim"))?;
            cross(b, op, dim)
        })
        .insert(op::TENSORDOT, tensordot)
        .insert(op::VANDER, vander)
        .insert(op::_DIM_ARANGE, |b, op| {
            let x = input(b, op, "like")?;
            let dim = b.with_args(op, |a| a.int("dim"))?.ok_or("_dim_arange: dim must be constant")?;
            let s = static_shape(b, x, "_dim_arange")?;
            let n = s[norm_dim(dim, s.len(), "_dim_arange")?];
            one(b.call(op::ARANGE, &[int(n), Arg::A(dialect_prim::kinds::dtype(DType::I64))]))
        });
}

pub(super) fn int(i: i64) -> Arg {
    Arg::A(Attribute::Int(i))
}

pub(super) fn ints(v: &[i64]) -> Arg {
    Arg::A(Attribute::ints(v))
}

/// `d` made non-negative for a tensor of rank `r`, or an error.
fn norm_dim(d: i64, r: usize, what: &str) -> Result<usize, String> {
    let r = r as i64;
    let n = if d < 0 { d + r } else { d };
    if n < 0 || n >= r.max(1) {
        return Err(format!("{what}: dimension {d} is out of range for rank {r}"));
    }
    Ok(n as usize)
}

/// The tensors of a `Tensor[]` argument, read from its `prim.ListConstruct`.
pub(super) fn tensor_list(b: &OpBuilder, op: OpId, name: &str) -> Result<Vec<ValueId>, String> {
    let l = input(b, op, name)?;
    let m = b.module();
    let def = m.defining_op(l).filter(|&d| m.op_name(d) == dialect_prim::LIST_CONSTRUCT);
    let def = def.ok_or_else(|| format!("'{name}' must be a list built in the program"))?;
    let elems = m.operands(def).to_vec();
    if elems.is_empty() {
        return Err(format!("'{name}' must not be empty"));
    }
    Ok(elems)
}

/// `x` raised to `n` dimensions as `atleast_{n}d` does: a scalar becomes `[1, …]`, a vector
/// a row (`[1, k]`, and `[1, k, 1]` in 3-d), a matrix gains a trailing axis in 3-d.
fn atleast(b: &mut OpBuilder, x: ValueId, n: usize) -> Result<ValueId, String> {
    match (rank_of(b, x)?, n) {
        (r, n) if r >= n => Ok(x),
        (0, n) => b.call(op::RESHAPE, &[x.into(), ints(&vec![1; n])]),
        (1, 2) => b.call(op::UNSQUEEZE, &[x.into(), int(0)]),
        (1, _) => {
            let row = b.call(op::UNSQUEEZE, &[x.into(), int(0)])?;
            b.call(op::UNSQUEEZE, &[row.into(), int(2)])
        }
        _ => b.call(op::UNSQUEEZE, &[x.into(), int(2)]),
    }
}

fn atleast_each(b: &mut OpBuilder, op: OpId, n: usize) -> DecompResult {
    let xs = tensor_list(b, op, "tensors")?;
    let ys = xs.into_iter().map(|x| atleast(b, x, n)).collect::<Result<Vec<_>, _>>()?;
    one(b.list(ys))
}

/// `cat` of the tensors raised to `n` dimensions, along the dimension `dim(rank of the first)`.
fn stack_along(b: &mut OpBuilder, op: OpId, n: usize, dim: fn(usize) -> i64) -> DecompResult {
    let xs = tensor_list(b, op, "tensors")?;
    let ys = xs.into_iter().map(|x| atleast(b, x, n)).collect::<Result<Vec<_>, _>>()?;
    let d = dim(rank_of(b, ys[0])?);
    let l = b.list(ys)?;
    one(b.call(op::CAT, &[l.into(), int(d)]))
}

/// `column_stack`: scalars and vectors become columns, `[n, 1]`; the rest are joined on dim 1.
fn column_stack(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let xs = tensor_list(b, op, "tensors")?;
    let mut ys = Vec::new();
    for x in xs {
        ys.push(match rank_of(b, x)? {
            0 => b.call(op::RESHAPE, &[x.into(), ints(&[1, 1])])?,
            1 => b.call(op::UNSQUEEZE, &[x.into(), int(1)])?,
            _ => x,
        });
    }
    let l = b.list(ys)?;
    one(b.call(op::CAT, &[l.into(), int(1)]))
}

/// `meshgrid`: input `i` (0-d or 1-d) viewed along axis `i` and expanded to the grid; with
/// `xy` the first two inputs and outputs are swapped (Cartesian indexing).
fn meshgrid(b: &mut OpBuilder, op: OpId, xy: bool) -> DecompResult {
    let mut xs = tensor_list(b, op, "tensors")?;
    let swap = xy && xs.len() >= 2;
    if swap {
        xs.swap(0, 1);
    }
    let mut lens = Vec::new();
    for &x in &xs {
        let s = static_shape(b, x, "meshgrid")?;
        if s.len() > 1 {
            return Err("meshgrid: expects 0-d or 1-d tensors".into());
        }
        lens.push(s.first().copied().unwrap_or(1));
    }
    let mut grids = Vec::new();
    for (i, &x) in xs.iter().enumerate() {
        let mut shape = vec![1i64; xs.len()];
        shape[i] = lens[i];
        let v = b.call(op::RESHAPE, &[x.into(), ints(&shape)])?;
        grids.push(b.call(op::EXPAND, &[v.into(), ints(&lens)])?);
    }
    if swap {
        grids.swap(0, 1);
    }
    one(b.list(grids))
}

/// The broadcast of static shapes, or an error.
fn broadcast_shape(shapes: &[Vec<i64>]) -> Result<Vec<i64>, String> {
    let r = shapes.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = vec![1i64; r];
    for s in shapes {
        for (k, &n) in s.iter().enumerate() {
            let o = &mut out[r - s.len() + k];
            if *o == 1 {
                *o = n;
            } else if n != 1 && n != *o {
                return Err(format!("shapes {shapes:?} do not broadcast"));
            }
        }
    }
    Ok(out)
}

fn broadcast_tensors(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let xs = tensor_list(b, op, "tensors")?;
    let shapes = xs.iter().map(|&x| static_shape(b, x, "broadcast_tensors")).collect::<Result<Vec<_>, _>>()?;
    let out = broadcast_shape(&shapes)?;
    let ys = xs.into_iter().map(|x| b.call(op::EXPAND, &[x.into(), ints(&out)])).collect::<Result<Vec<_>, _>>()?;
    one(b.list(ys))
}

/// `block_diag`: each block (a scalar is `[1, 1]`, a vector a row) padded with zeros to the
/// total width at its column offset; the padded blocks are stacked by rows.
fn block_diag(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let xs = tensor_list(b, op, "tensors")?;
    let mut blocks = Vec::new();
    for x in xs {
        let s = static_shape(b, x, "block_diag")?;
        let v = match s.len() {
            0 => b.call(op::RESHAPE, &[x.into(), ints(&[1, 1])])?,
            1 => b.call(op::UNSQUEEZE, &[x.into(), int(0)])?,
            2 => x,
            r => return Err(format!("block_diag: expects tensors of at most 2 dimensions, got {r}")),
        };
        let cols = static_shape(b, v, "block_diag")?[1];
        blocks.push((v, cols));
    }
    // The blocks share PyTorch's promoted dtype before padding.
    let dtypes: Vec<_> = blocks.iter().map(|&(v, _)| b.dtype(v).ok_or("block_diag: unknown dtype")).collect::<Result<_, _>>()?;
    let d = dtypes.iter().copied().reduce(DType::promote).ok_or("block_diag: no tensors")?;
    let width: i64 = blocks.iter().map(|&(_, c)| c).sum();
    let mut rows = Vec::new();
    let mut at = 0;
    for (v, c) in blocks {
        let v = cast(b, v, d)?;
        rows.push(b.call(op::CONSTANT_PAD_ND, &[v.into(), ints(&[at, width - at - c]), int(0)])?);
        at += c;
    }
    let l = b.list(rows)?;
    one(b.call(op::CAT, &[l.into(), int(0)]))
}

/// `kron(a, b)`: `a` with a size-1 axis after each dimension times `b` with one before each,
/// `[a0, b0, a1, b1, …]`, merged pairwise to `[a0·b0, a1·b1, …]`.
fn kron(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let (x, y) = (input(b, op, "self")?, input(b, op, "other")?);
    let (mut sx, mut sy) = (static_shape(b, x, "kron")?, static_shape(b, y, "kron")?);
    let r = sx.len().max(sy.len());
    sx.splice(0..0, std::iter::repeat_n(1, r - sx.len()));
    sy.splice(0..0, std::iter::repeat_n(1, r - sy.len()));
    let xi: Vec<i64> = sx.iter().flat_map(|&n| [n, 1]).collect();
    let yi: Vec<i64> = sy.iter().flat_map(|&n| [1, n]).collect();
    let xv = b.call(op::RESHAPE, &[x.into(), ints(&xi)])?;
    let yv = b.call(op::RESHAPE, &[y.into(), ints(&yi)])?;
    let p = b.call(op::MUL_TENSOR, &[xv.into(), yv.into()])?;
    let out: Vec<i64> = sx.iter().zip(&sy).map(|(a, c)| a * c).collect();
    one(b.call(op::RESHAPE, &[p.into(), ints(&out)]))
}

/// `diag`: a vector becomes a square matrix with it on diagonal `offset`; a matrix gives a
/// copy of that diagonal.
fn diag(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "self")?;
    let off = b.with_args(op, |a| a.int("diagonal"))?.unwrap_or(0);
    match rank_of(b, x)? {
        1 => one(diag_embed(b, x, off, 0, 1)),
        2 => {
            let d = b.call(op::DIAGONAL, &[x.into(), int(off)])?;
            one(b.call(op::CLONE, &[d.into()]))
        }
        r => Err(format!("diag: expects a 1-d or 2-d tensor, got {r} dimensions")),
    }
}

/// `diag_embed(x, offset, dim1, dim2)`: the last dimension of `x` (length `n`) becomes diagonal
/// `offset` of `m × m` matrices (`m = n + |offset|`) placed on dimensions `dim1` and `dim2`.
fn diag_embed(b: &mut OpBuilder, x: ValueId, off: i64, dim1: i64, dim2: i64) -> Result<ValueId, String> {
    let s = static_shape(b, x, "diag_embed")?;
    let r = s.len() + 1;
    let (d1, d2) = (norm_dim(dim1, r, "diag_embed")?, norm_dim(dim2, r, "diag_embed")?);
    if d1 == d2 {
        return Err("diag_embed: the two dimensions must differ".into());
    }
    let n = *s.last().ok_or("diag_embed: expects at least one dimension")?;
    let m = n + off.abs();
    // Element `k` sits at row `k` (offset ≥ 0) or column `k` (offset < 0): pad to `m` and
    // broadcast along the other axis, then keep only the diagonal where `col − row = offset`.
    let padded = b.call(op::CONSTANT_PAD_ND, &[x.into(), ints(&[0, off.abs()]), int(0)])?;
    let v = b.call(op::UNSQUEEZE, &[padded.into(), int(if off >= 0 { -1 } else { -2 })])?;
    let idx = b.call(op::ARANGE, &[int(m), Arg::A(dialect_prim::kinds::dtype(DType::I64))])?;
    let row = b.call(op::UNSQUEEZE, &[idx.into(), int(1)])?;
    let delta = b.call(op::SUB_TENSOR, &[idx.into(), row.into()])?;
    let on = b.call(op::EQ_SCALAR, &[delta.into(), int(off)])?;
    let zero = b.call(op::SCALAR_TENSOR, &[int(0), Arg::A(dialect_prim::kinds::dtype(b.dtype(x).ok_or("diag_embed: unknown dtype")?))])?;
    let full = b.call(op::WHERE_SELF, &[on.into(), v.into(), zero.into()])?;
    // Batch dimensions keep their order; rows go to `d1` and columns to `d2`.
    let mut batch = 0..(r as i64 - 2);
    let perm: Vec<i64> = (0..r).map(|p| if p == d1 { r as i64 - 2 } else if p == d2 { r as i64 - 1 } else { batch.next().unwrap_or(0) }).collect();
    if perm.iter().enumerate().all(|(i, &p)| i as i64 == p) {
        return Ok(full);
    }
    b.call(op::PERMUTE, &[full.into(), ints(&perm)])
}

/// `rot90(x, k, dims)`: a quarter turn is a flip of the second dimension then a transpose.
fn rot90(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "self")?;
    let (k, dims) = b.with_args(op, |a| (a.int("k"), a.ints("dims")))?;
    let dims = dims.unwrap_or(vec![0, 1]);
    let r = rank_of(b, x)?;
    let [a, c] = dims[..] else { return Err("rot90: dims must have two entries".into()) };
    if r < 2 || norm_dim(a, r, "rot90")? == norm_dim(c, r, "rot90")? {
        return Err("rot90: needs two distinct dimensions of a tensor of rank 2 or more".into());
    }
    match k.unwrap_or(1).rem_euclid(4) {
        0 => one(b.call(op::CLONE, &[x.into()])),
        1 => {
            let f = b.call(op::FLIP, &[x.into(), ints(&[c])])?;
            one(b.call(op::TRANSPOSE_INT, &[f.into(), int(a), int(c)]))
        }
        2 => one(b.call(op::FLIP, &[x.into(), ints(&[a, c])])),
        _ => {
            let f = b.call(op::FLIP, &[x.into(), ints(&[a])])?;
            one(b.call(op::TRANSPOSE_INT, &[f.into(), int(a), int(c)]))
        }
    }
}

/// `take_along_dim`: `gather` after broadcasting `self` and `indices` in every dimension but
/// `dim`; without `dim`, both are flattened first.
fn take_along_dim(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let (x, idx) = (input(b, op, "self")?, input(b, op, "indices")?);
    if !matches!(b.dtype(idx), Some(DType::I64 | DType::I32 | DType::U8)) {
        return Err("take_along_dim: indices must be an integer tensor".into());
    }
    let Some(dim) = b.with_args(op, |a| a.int("dim"))? else {
        let fx = b.call(op::RESHAPE, &[x.into(), ints(&[-1])])?;
        let fi = b.call(op::RESHAPE, &[idx.into(), ints(&[-1])])?;
        return one(b.call(op::GATHER, &[fx.into(), int(0), fi.into()]));
    };
    let (sx, si) = (static_shape(b, x, "take_along_dim")?, static_shape(b, idx, "take_along_dim")?);
    if sx.len() != si.len() {
        return Err("take_along_dim: input and indices must have the same number of dimensions".into());
    }
    let d = norm_dim(dim, sx.len(), "take_along_dim")?;
    let mut with_idx = sx.clone();
    with_idx[d] = si[d];
    let shape = broadcast_shape(&[with_idx, si])?;
    let ib = b.call(op::EXPAND, &[idx.into(), ints(&shape)])?;
    let mut xs = shape;
    xs[d] = sx[d];
    let xb = b.call(op::EXPAND, &[x.into(), ints(&xs)])?;
    one(b.call(op::GATHER, &[xb.into(), int(d as i64), ib.into()]))
}

/// `repeat_interleave(x, r, dim)`: a size-`r` axis after `dim`, expanded and merged into it.
fn repeat_interleave(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "self")?;
    let (reps, dim) = b.with_args(op, |a| (a.int("repeats"), a.int("dim")))?;
    let reps = reps.ok_or("repeat_interleave: repeats must be constant")?;
    if reps < 0 {
        return Err("repeat_interleave: repeats must be non-negative".into());
    }
    let (x, d) = match dim {
        Some(d) => (x, norm_dim(d, rank_of(b, x)?, "repeat_interleave")?),
        None => (b.call(op::RESHAPE, &[x.into(), ints(&[-1])])?, 0),
    };
    let s = static_shape(b, x, "repeat_interleave")?;
    let u = b.call(op::UNSQUEEZE, &[x.into(), int(d as i64 + 1)])?;
    let mut big = s.clone();
    big.insert(d + 1, reps);
    let e = b.call(op::EXPAND, &[u.into(), ints(&big)])?;
    let mut out = s;
    out[d] *= reps;
    one(b.call(op::RESHAPE, &[e.into(), ints(&out)]))
}

/// `one_hot(x, n)`: `x[…, None] == arange(n)` as int64; `n` must be given (`-1` would make the
/// shape depend on the data).
fn one_hot(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "self")?;
    let n = b.with_args(op, |a| a.int("num_classes"))?.unwrap_or(-1);
    if n < 0 {
        return Err("one_hot: num_classes must be given (the class count of the data is not static)".into());
    }
    if b.dtype(x) != Some(DType::I64) {
        return Err("one_hot is only applicable to index tensors of type int64".into());
    }
    let u = b.call(op::UNSQUEEZE, &[x.into(), int(-1)])?;
    let c = b.call(op::ARANGE, &[int(n), Arg::A(dialect_prim::kinds::dtype(DType::I64))])?;
    let e = b.call(op::EQ_TENSOR, &[u.into(), c.into()])?;
    one(cast(b, e, DType::I64))
}

/// `x` rotated left by `k` along `d` (element `i` is `x[(i + k) mod 3]` for the size-3 axis).
fn rotate3(b: &mut OpBuilder, x: ValueId, d: i64, k: i64) -> Result<ValueId, String> {
    let hi = b.call(op::SLICE_TENSOR, &[x.into(), int(d), int(k), int(3)])?;
    let lo = b.call(op::SLICE_TENSOR, &[x.into(), int(d), int(0), int(k)])?;
    let l = b.list(vec![hi, lo])?;
    b.call(op::CAT, &[l.into(), int(d)])
}

/// `cross(x, y, dim)`: `x₁y₂ − x₂y₁` cyclically along a size-3 dimension (the first such when
/// `dim` is absent, as `torch.cross` does), after broadcasting.
fn cross(b: &mut OpBuilder, op: OpId, dim: Option<i64>) -> DecompResult {
    let (x, y) = (input(b, op, "self")?, input(b, op, "other")?);
    let (sx, sy) = (static_shape(b, x, "cross")?, static_shape(b, y, "cross")?);
    if sx.len() != sy.len() {
        return Err("cross: inputs must have the same number of dimensions".into());
    }
    let shape = broadcast_shape(&[sx, sy])?;
    let d = match dim {
        Some(d) => norm_dim(d, shape.len(), "cross")?,
        None => shape.iter().position(|&n| n == 3).ok_or("cross: no dimension of size 3")?,
    };
    if shape[d] != 3 {
        return Err(format!("cross: dimension {d} must have size 3, has {}", shape[d]));
    }
    let x = b.call(op::EXPAND, &[x.into(), ints(&shape)])?;
    let y = b.call(op::EXPAND, &[y.into(), ints(&shape)])?;
    let d = d as i64;
    let (x1, x2) = (rotate3(b, x, d, 1)?, rotate3(b, x, d, 2)?);
    let (y1, y2) = (rotate3(b, y, d, 1)?, rotate3(b, y, d, 2)?);
    let p = b.call(op::MUL_TENSOR, &[x1.into(), y2.into()])?;
    let q = b.call(op::MUL_TENSOR, &[x2.into(), y1.into()])?;
    one(b.call(op::SUB_TENSOR, &[p.into(), q.into()]))
}

/// `tensordot(a, b, da, db)`: `a` permuted to `[free, contracted]` and `b` to `[contracted,
/// free]`, each flattened to a matrix, multiplied, and unflattened.
fn tensordot(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let (x, y) = (input(b, op, "self")?, input(b, op, "other")?);
    let (dx, dy) = b.with_args(op, |a| (a.ints("dims_self"), a.ints("dims_other")))?;
    let (dx, dy) = (dx.ok_or("tensordot: dims must be constant")?, dy.ok_or("tensordot: dims must be constant")?);
    let (sx, sy) = (static_shape(b, x, "tensordot")?, static_shape(b, y, "tensordot")?);
    if dx.len() != dy.len() {
        return Err("tensordot: both tensors must contract the same number of dimensions".into());
    }
    let dx = dx.iter().map(|&d| norm_dim(d, sx.len(), "tensordot")).collect::<Result<Vec<_>, _>>()?;
    let dy = dy.iter().map(|&d| norm_dim(d, sy.len(), "tensordot")).collect::<Result<Vec<_>, _>>()?;
    if dx.iter().zip(&dy).any(|(&i, &j)| sx[i] != sy[j]) {
        return Err("tensordot: contracted dimensions must have equal sizes".into());
    }
    let free_x: Vec<usize> = (0..sx.len()).filter(|i| !dx.contains(i)).collect();
    let free_y: Vec<usize> = (0..sy.len()).filter(|i| !dy.contains(i)).collect();
    let k: i64 = dx.iter().map(|&i| sx[i]).product();
    let mx: i64 = free_x.iter().map(|&i| sx[i]).product();
    let ny: i64 = free_y.iter().map(|&i| sy[i]).product();
    let px: Vec<i64> = free_x.iter().chain(&dx).map(|&i| i as i64).collect();
    let py: Vec<i64> = dy.iter().chain(&free_y).map(|&i| i as i64).collect();
    let xp = b.call(op::PERMUTE, &[x.into(), ints(&px)])?;
    let xm = b.call(op::RESHAPE, &[xp.into(), ints(&[mx, k])])?;
    let yp = b.call(op::PERMUTE, &[y.into(), ints(&py)])?;
    let ym = b.call(op::RESHAPE, &[yp.into(), ints(&[k, ny])])?;
    let p = b.call(op::MM, &[xm.into(), ym.into()])?;
    let out: Vec<i64> = free_x.iter().map(|&i| sx[i]).chain(free_y.iter().map(|&i| sy[i])).collect();
    one(b.call(op::RESHAPE, &[p.into(), ints(&out)]))
}

/// `vander(x, N, increasing)`: column `k` is `x^(N−1−k)` (`x^k` when increasing), in `x`'s dtype
/// promoted with int64.
fn vander(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "x")?;
    let (n, inc) = b.with_args(op, |a| (a.int("N"), a.bool("increasing")))?;
    let s = static_shape(b, x, "vander")?;
    let [len] = s[..] else { return Err("vander: expects a 1-d tensor".into()) };
    let n = n.unwrap_or(len);
    if n < 0 {
        return Err("vander: N must be non-negative".into());
    }
    let d = DType::promote(b.dtype(x).ok_or("vander: unknown dtype")?, DType::I64);
    let x = cast(b, x, d)?;
    let mut k = b.call(op::ARANGE, &[int(n), Arg::A(dialect_prim::kinds::dtype(d))])?;
    if !inc.unwrap_or(false) {
        k = b.call(op::FLIP, &[k.into(), ints(&[0])])?;
    }
    let col = b.call(op::UNSQUEEZE, &[x.into(), int(1)])?;
    one(b.call(op::POW_TENSOR_TENSOR, &[col.into(), k.into()]))
}
