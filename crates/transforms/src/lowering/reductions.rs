//! Decompositions of PyTorch's composite reductions: vector norms (`norm` overloads,
//! `frobenius_norm`, `norm_except_dim` and the weight normalization built on it, Euclidean
//! distances), the trapezoidal rule (`trapezoid`, `trapz`, `cumulative_trapezoid`),
//! `sum_to_size`, `_safe_softmax` (softmax whose fully masked rows are zero), and the
//! covariance and correlation matrices (`cov` without weights, `corrcoef`).

use dialect_aten::op;
use super::composite::f;
use super::losses::float_only;
use super::stacking::ints;
use super::decompose::{DecompResult, DecompositionTable, cast, input, one, rank_of};
use super::rewrite::{Arg, OpBuilder};
use ir::{Attribute, DType, OpId, ValueId};

/// Adds the reductions' decompositions to `t`.
pub(super) fn add(t: &mut DecompositionTable) {
    t.insert(op::NORM_SCALAR, |b, op| norm(b, op, false, false))
        .insert(op::NORM_SCALAROPT_DTYPE, |b, op| norm(b, op, false, true))
        .insert(op::NORM_SCALAROPT_DIM, |b, op| norm(b, op, true, false))
        .insert(op::NORM_SCALAROPT_DIM_DTYPE, |b, op| norm(b, op, true, true))
        .insert(op::FROBENIUS_NORM_DIM, |b, op| {
            let x = float_only(b, op, "frobenius_norm")?;
            let (dims, keep) = b.with_args(op, |a| (a.ints("dim"), a.bool("keepdim")))?;
            let dims = all_if_empty(b, x, dims.unwrap_or_default())?;
            one(p_norm(b, x, 2.0, &dims, keep.unwrap_or(false)))
        })
        .insert(op::NORM_EXCEPT_DIM, |b, op| {
            let v = input(b, op, "v")?;
            let (p, dim) = b.with_args(op, |a| (a.int("pow"), a.int("dim")))?;
            one(norm_except_dim(b, v, p.unwrap_or(2) as f64, dim.unwrap_or(0)))
        })
        .insert(op::_WEIGHT_NORM, |b, op| {
            let (v, g) = (input(b, op, "v")?, input(b, op, "g")?);
            let dim = b.with_args(op, |a| a.int("dim"))?.unwrap_or(0);
            let n = norm_except_dim(b, v, 2.0, dim)?;
            let s = b.call(op::DIV_TENSOR, &[g.into(), n.into()])?;
            one(b.call(op::MUL_TENSOR, &[v.into(), s.into()]))
        })
        .insert(op::_EUCLIDEAN_DIST, euclidean_dist)
        .insert(op::TRAPEZOID_DX, |b, op| trapezoid_dx(b, op, false))
        .insert(op::TRAPZ_DX, |b, op| trapezoid_dx(b, op, false))
        .insert(op::CUMULATIVE_TRAPEZOID_DX, |b, op| trapezoid_dx(b, op, true))
        .insert(op::TRAPEZOID_X, |b, op| trapezoid_x(b, op, false))
        .insert(op::TRAPZ_X, |b, op| trapezoid_x(b, op, false))
        .insert(op::CUMULATIVE_TRAPEZOID_X, |b, op| trapezoid_x(b, op, true))
        .insert(op::SUM_TO_SIZE, sum_to_size)
        .insert(op::_SAFE_SOFTMAX, safe_softmax)
        .insert(op::COV, |b, op| {
            let x = input(b, op, "self")?;
            let c = b.with_args(op, |a| a.int("correction"))?.unwrap_or(1);
            if b.with_args(op, |a| !a.is_none("fweights") || !a.is_none("aweights"))? {
                return Err("cov: frequency and observation weights are not supported".into());
            }
            one(cov(b, x, c))
        })
        .insert(op::CORRCOEF, |b, op| {
            let x = input(b, op, "self")?;
            let c = cov(b, x, 1)?;
            if rank_of(b, c)? == 0 {
                return one(b.call(op::DIV_TENSOR, &[c.into(), c.into()]));
            }
            let d = b.call(op::DIAGONAL, &[c.into()])?;
            let sd = b.call(op::SQRT, &[d.into()])?;
            let col = b.call(op::UNSQUEEZE, &[sd.into(), Arg::A(Attribute::Int(1))])?;
            let c = b.call(op::DIV_TENSOR, &[c.into(), col.into()])?;
            let c = b.call(op::DIV_TENSOR, &[c.into(), sd.into()])?;
            one(b.call(op::CLAMP, &[c.into(), f(-1.0), f(1.0)]))
        });
}

/// `dims`, or every dimension when it is empty.
fn all_if_empty(b: &OpBuilder, x: ValueId, dims: Vec<i64>) -> Result<Vec<i64>, String> {
    if dims.is_empty() { Ok((0..rank_of(b, x)? as i64).collect()) } else { Ok(dims) }
}

/// The `p`-norm of `x` over `dims`: `(Σ|x|^p)^(1/p)`, the largest (`∞`) or smallest (`−∞`)
/// magnitude, or the count of non-zeros (`p = 0`).
pub(super) fn p_norm(b: &mut OpBuilder, x: ValueId, p: f64, dims: &[i64], keep: bool) -> Result<ValueId, String> {
    let keep = Arg::A(Attribute::Bool(keep));
    if p == 2.0 {
        let sq = b.call(op::MUL_TENSOR, &[x.into(), x.into()])?;
        let s = b.call(op::SUM_DIM_INTLIST, &[sq.into(), ints(dims), keep])?;
        return b.call(op::SQRT, &[s.into()]);
    }
    let ax = b.call(op::ABS, &[x.into()])?;
    if p == f64::INFINITY {
        return b.call(op::AMAX, &[ax.into(), ints(dims), keep]);
    }
    if p == f64::NEG_INFINITY {
        return b.call(op::AMIN, &[ax.into(), ints(dims), keep]);
    }
    if p == 0.0 {
        let nz = b.call(op::NE_SCALAR, &[x.into(), Arg::A(Attribute::Int(0))])?;
        let d = b.dtype(x).ok_or("norm: unknown dtype")?;
        let nz = cast(b, nz, d)?;
        return b.call(op::SUM_DIM_INTLIST, &[nz.into(), ints(dims), keep]);
    }
    let pw = if p == 1.0 { ax } else { b.call(op::POW_TENSOR_SCALAR, &[ax.into(), f(p)])? };
    let s = b.call(op::SUM_DIM_INTLIST, &[pw.into(), ints(dims), keep])?;
    if p == 1.0 {
        return Ok(s);
    }
    b.call(op::POW_TENSOR_SCALAR, &[s.into(), f(1.0 / p)])
}

/// `norm(x, p, dim, keepdim, dtype)`: `p` defaults to 2 and `dim` to every dimension; with
/// `dtype` the input is converted first.
fn norm(b: &mut OpBuilder, op: OpId, with_dims: bool, with_dtype: bool) -> DecompResult {
    let x = float_only(b, op, "norm")?;
    let (p, dims, keep, dtype) = b.with_args(op, |a| (a.float("p"), a.ints("dim"), a.bool("keepdim"), a.dtype("dtype").flatten()))?;
    let p = if b.with_args(op, |a| a.is_none("p"))? { 2.0 } else { p.ok_or("norm: p must be constant")? };
    let x = match dtype {
        Some(d) if with_dtype => cast(b, x, d)?,
        _ => x,
    };
    let dims = all_if_empty(b, x, if with_dims { dims.ok_or("norm: dims must be constant")? } else { Vec::new() })?;
    one(p_norm(b, x, p, &dims, keep.unwrap_or(false)))
}

/// `Σ (y[i+1] + y[i]) / 2 · dx[i]` along `dim` (its running sum with `cumulative`).
fn trapezoid_sum(b: &mut OpBuilder, y: ValueId, dx: Arg, dim: i64, cumulative: bool) -> Result<ValueId, String> {
    let hi = b.call(op::SLICE_TENSOR, &[y.into(), Arg::A(Attribute::Int(dim)), Arg::A(Attribute::Int(1)), Arg::A(Attribute::Int(i64::MAX))])?;
    let lo = b.call(op::SLICE_TENSOR, &[y.into(), Arg::A(Attribute::Int(dim)), Arg::A(Attribute::Int(0)), Arg::A(Attribute::Int(-1))])?;
    let s = b.call(op::ADD_TENSOR, &[hi.into(), lo.into()])?;
    let s = match dx {
        Arg::V(dx) => b.call(op::MUL_TENSOR, &[s.into(), dx.into()])?,
        a => b.call(op::MUL_SCALAR, &[s.into(), a])?,
    };
    let s = if cumulative { b.call(op::CUMSUM, &[s.into(), Arg::A(Attribute::Int(dim))])? } else { b.call(op::SUM_DIM_INTLIST, &[s.into(), ints(&[dim])])? };
    b.call(op::MUL_SCALAR, &[s.into(), f(0.5)])
}

fn trapezoid_dx(b: &mut OpBuilder, op: OpId, cumulative: bool) -> DecompResult {
    let y = input(b, op, "y")?;
    let (dx, dim) = b.with_args(op, |a| (a.constant("dx"), a.int("dim")))?;
    let dx = dx.unwrap_or(Attribute::Int(1));
    one(trapezoid_sum(b, y, Arg::A(dx), dim.unwrap_or(-1), cumulative))
}

/// `trapezoid(y, x, dim)`: the spacings are the differences of `x` (1-d: along `dim`).
fn trapezoid_x(b: &mut OpBuilder, op: OpId, cumulative: bool) -> DecompResult {
    let (y, x) = (input(b, op, "y")?, input(b, op, "x")?);
    let dim = b.with_args(op, |a| a.int("dim"))?.unwrap_or(-1);
    let (ry, rx) = (rank_of(b, y)? as i64, rank_of(b, x)?);
    let d = if dim < 0 { dim + ry } else { dim };
    if d < 0 || d >= ry {
        return Err(format!("trapezoid: dimension {dim} is out of range"));
    }
    let (x, xd) = if rx == 1 && ry > 1 {
        let mut shape = vec![1i64; ry as usize];
        shape[d as usize] = -1;
        (b.call(op::RESHAPE, &[x.into(), ints(&shape)])?, d)
    } else {
        (x, dim)
    };
    let hi = b.call(op::SLICE_TENSOR, &[x.into(), Arg::A(Attribute::Int(xd)), Arg::A(Attribute::Int(1)), Arg::A(Attribute::Int(i64::MAX))])?;
    let lo = b.call(op::SLICE_TENSOR, &[x.into(), Arg::A(Attribute::Int(xd)), Arg::A(Attribute::Int(0)), Arg::A(Attribute::Int(-1))])?;
    let dx = b.call(op::SUB_TENSOR, &[hi.into(), lo.into()])?;
    one(trapezoid_sum(b, y, Arg::V(dx), d, cumulative))
}

/// `norm_except_dim(v, p, dim)`: the `p`-norm over every dimension but `dim`, kept as size-1
/// axes (over all of `v`, a 0-d result, when `dim` is −1).
fn norm_except_dim(b: &mut OpBuilder, v: ValueId, p: f64, dim: i64) -> Result<ValueId, String> {
    let r = rank_of(b, v)? as i64;
    if dim == -1 {
        let all: Vec<i64> = (0..r).collect();
        return p_norm(b, v, p, &all, false);
    }
    if dim < 0 || dim >= r {
        return Err(format!("norm_except_dim: dimension {dim} is out of range for rank {r}"));
    }
    let dims: Vec<i64> = (0..r).filter(|&i| i != dim).collect();
    p_norm(b, v, p, &dims, true)
}

/// `_euclidean_dist(x1, x2)`: `sqrt(max(|a|² + |b|² − 2a·b, 0))` for every row pair.
fn euclidean_dist(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let (x1, x2) = (input(b, op, "x1")?, input(b, op, "x2")?);
    let r = rank_of(b, x2)?;
    if r < 2 || rank_of(b, x1)? < 2 {
        return Err("_euclidean_dist: expects tensors of at least 2 dimensions".into());
    }
    let keep = Arg::A(Attribute::Bool(true));
    let s1 = b.call(op::MUL_TENSOR, &[x1.into(), x1.into()])?;
    let n1 = b.call(op::SUM_DIM_INTLIST, &[s1.into(), ints(&[-1]), keep.clone()])?;
    let s2 = b.call(op::MUL_TENSOR, &[x2.into(), x2.into()])?;
    let n2 = b.call(op::SUM_DIM_INTLIST, &[s2.into(), ints(&[-1]), keep])?;
    let n2 = b.call(op::TRANSPOSE_INT, &[n2.into(), Arg::A(Attribute::Int(-1)), Arg::A(Attribute::Int(-2))])?;
    let x2t = b.call(op::TRANSPOSE_INT, &[x2.into(), Arg::A(Attribute::Int(-1)), Arg::A(Attribute::Int(-2))])?;
    let dot = b.call(op::MATMUL, &[x1.into(), x2t.into()])?;
    let dot = b.call(op::MUL_SCALAR, &[dot.into(), f(-2.0)])?;
    let d = b.call(op::ADD_TENSOR, &[n1.into(), n2.into()])?;
    let d = b.call(op::ADD_TENSOR, &[d.into(), dot.into()])?;
    let d = b.call(op::CLAMP, &[d.into(), f(0.0)])?;
    one(b.call(op::SQRT, &[d.into()]))
}

/// `sum_to_size(x, size)`: sums the leading dimensions `size` lacks and, keeping them, the
/// dimensions where `size` has 1 and `x` does not.
fn sum_to_size(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "self")?;
    let size = b.with_args(op, |a| a.ints("size"))?.ok_or("sum_to_size: the size must be constant")?;
    let shape = super::composite::static_shape(b, x, "sum_to_size")?;
    if size.len() > shape.len() {
        return Err("sum_to_size: the size has more dimensions than the tensor".into());
    }
    let lead = shape.len() - size.len();
    let mut keep_dims = Vec::new();
    for (i, (&n, &s)) in shape[lead..].iter().zip(&size).enumerate() {
        if s == 1 && n != 1 {
            keep_dims.push((lead + i) as i64);
        } else if s != n {
            return Err(format!("sum_to_size: size {size:?} is not expandable to {shape:?}"));
        }
    }
    let mut v = x;
    if !keep_dims.is_empty() {
        v = b.call(op::SUM_DIM_INTLIST, &[v.into(), ints(&keep_dims), Arg::A(Attribute::Bool(true))])?;
    }
    if lead > 0 {
        let dims: Vec<i64> = (0..lead as i64).collect();
        v = b.call(op::SUM_DIM_INTLIST, &[v.into(), ints(&dims)])?;
    }
    if v == x {
        v = b.call(op::CLONE, &[x.into()])?;
    }
    one(Ok(v))
}

/// `_safe_softmax(x, dim, dtype)`: `softmax`, with 0 on the rows whose every element is −∞.
fn safe_softmax(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "self")?;
    let (dim, dtype) = b.with_args(op, |a| (a.int("dim"), a.dtype("dtype").flatten()))?;
    let dim = dim.ok_or("_safe_softmax: dim must be constant")?;
    let x = match dtype {
        Some(d) => cast(b, x, d)?,
        None => x,
    };
    if !b.dtype(x).is_some_and(|d| d.is_floating()) {
        return Err("_safe_softmax: expected a floating-point tensor".into());
    }
    let sm = b.call(op::_SOFTMAX, &[x.into(), Arg::A(Attribute::Int(dim)), Arg::A(Attribute::Bool(false))])?;
    let top = b.call(op::AMAX, &[x.into(), ints(&[dim]), Arg::A(Attribute::Bool(true))])?;
    let masked = b.call(op::EQ_SCALAR, &[top.into(), f(f64::NEG_INFINITY)])?;
    let zero = b.call(op::SCALAR_TENSOR, &[Arg::A(Attribute::Int(0)), Arg::A(dialect_prim::kinds::dtype(b.dtype(sm).unwrap_or(DType::F32)))])?;
    one(b.call(op::WHERE_SELF, &[masked.into(), zero.into(), sm.into()]))
}

/// `cov(x, correction)`: variables are rows (a vector is one variable, giving a 0-d result),
/// observations columns; `(x − mean)(x − mean)ᵀ / (N − correction)` in floating point.
fn cov(b: &mut OpBuilder, x: ValueId, correction: i64) -> Result<ValueId, String> {
    let d = b.dtype(x).ok_or("cov: unknown dtype")?;
    let x = cast(b, x, dialect_aten::infer::float_result(d))?;
    let s = super::composite::static_shape(b, x, "cov")?;
    let (x, n) = match s[..] {
        [n] => (b.call(op::UNSQUEEZE, &[x.into(), Arg::A(Attribute::Int(0))])?, n),
        [_, n] => (x, n),
        _ => return Err("cov: expects a 1-d or 2-d tensor".into()),
    };
    let m = b.call(op::MEAN_DIM, &[x.into(), ints(&[1]), Arg::A(Attribute::Bool(true))])?;
    let xm = b.call(op::SUB_TENSOR, &[x.into(), m.into()])?;
    let xt = b.call(op::PERMUTE, &[xm.into(), ints(&[1, 0])])?;
    let c = b.call(op::MM, &[xm.into(), xt.into()])?;
    let c = b.call(op::DIV_SCALAR, &[c.into(), Arg::A(Attribute::Int(n - correction))])?;
    if s.len() == 1 { b.call(op::SQUEEZE, &[c.into()]) } else { Ok(c) }
}
