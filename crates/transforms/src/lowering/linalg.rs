//! Decompositions of the linear-algebra ops PyTorch builds from products and reductions:
//! `linalg_matmul`, `linalg_vecdot`, `linalg_multi_dot`, `matrix_power` and
//! `linalg_matrix_power` (repeated squaring, through `linalg_inv` for negative powers), and the
//! norms `linalg_vector_norm`, `linalg_matrix_norm` (numeric and `"fro"`/`"nuc"` orders; the
//! spectral ones through `linalg_svdvals`), `linalg_norm`, `nuclear_norm`, `linalg_cond` and
//! `linalg_matrix_rank` (from singular values), `linalg_tensorinv` and `linalg_tensorsolve`
//! (through matrices of the tensors), `linalg_vander`, and `baddbmm` with a result dtype. The
//! factorizations themselves are interpreter kernels (`runtime::kernels::linalg`).

use super::composite::static_shape;
use super::decompose::{DecompResult, DecompositionTable, cast, input, one, rank_of};
use super::reductions::p_norm;
use super::rewrite::{Arg, OpBuilder};
use super::stacking::{int, ints, tensor_list};
use dialect_aten::op;
use ir::{Attribute, OpId, ValueId};

/// Adds the linear-algebra decompositions to `t`.
pub(super) fn add(t: &mut DecompositionTable) {
    t.insert(op::LINALG_MATMUL, |b, op| {
        let (x, y) = (input(b, op, "self")?, input(b, op, "other")?);
        one(b.call(op::MATMUL, &[x.into(), y.into()]))
    })
    .insert(op::LINALG_VECDOT, |b, op| {
        let (x, y) = (input(b, op, "x")?, input(b, op, "y")?);
        let dim = b.with_args(op, |a| a.int("dim"))?.unwrap_or(-1);
        let p = b.call(op::MUL_TENSOR, &[x.into(), y.into()])?;
        one(b.call(op::SUM_DIM_INTLIST, &[p.into(), ints(&[dim])]))
    })
    .insert(op::LINALG_MULTI_DOT, multi_dot)
    .insert(op::MATRIX_POWER, matrix_power)
    .insert(op::LINALG_MATRIX_POWER, matrix_power)
    .insert(op::LINALG_VECTOR_NORM, |b, op| {
        let x = input(b, op, "self")?;
        let (ord, dims, keep, dtype) = b.with_args(op, |a| (a.float("ord"), a.ints("dim"), a.bool("keepdim"), a.dtype("dtype").flatten()))?;
        let x = match dtype {
            Some(d) => cast(b, x, d)?,
            None => x,
        };
        one(vector_norm(b, x, ord.unwrap_or(2.0), dims.unwrap_or_default(), keep.unwrap_or(false)))
    })
    .insert(op::LINALG_MATRIX_NORM, |b, op| norm_op(b, op, true))
    .insert(op::LINALG_MATRIX_NORM_STR_ORD, |b, op| norm_op(b, op, true))
    .insert(op::LINALG_NORM, |b, op| norm_op(b, op, false))
    .insert(op::LINALG_NORM_ORD_STR, |b, op| norm_op(b, op, false))
    .insert(op::NUCLEAR_NORM, |b, op| {
        let x = input(b, op, "self")?;
        let keep = b.with_args(op, |a| a.bool("keepdim"))?.unwrap_or(false);
        one(matrix_norm(b, x, Ord::Nuc, &[-2, -1], keep))
    })
    .insert(op::NUCLEAR_NORM_DIM, |b, op| {
        let x = input(b, op, "self")?;
        let (dims, keep) = b.with_args(op, |a| (a.ints("dim"), a.bool("keepdim")))?;
        one(matrix_norm(b, x, Ord::Nuc, &dims.ok_or("nuclear_norm: dim must be constant")?, keep.unwrap_or(false)))
    })
    .insert(op::LINALG_COND, cond)
    .insert(op::LINALG_COND_P_STR, cond)
    .insert(op::LINALG_MATRIX_RANK, |b, op| {
        let x = input(b, op, "self")?;
        let tol = b.with_args(op, |a| a.float("tol"))?.ok_or("linalg.matrix_rank: tol must be constant")?;
        one(matrix_rank(b, x, tol, 0.0))
    })
    .insert(op::LINALG_MATRIX_RANK_ATOL_RTOL_FLOAT, |b, op| {
        let x = input(b, op, "self")?;
        let (atol, rtol) = b.with_args(op, |a| (a.float("atol"), a.float("rtol")))?;
        // With neither tolerance, `rtol` is the dtype's epsilon times the larger matrix side;
        // with only a positive `atol`, it is 0.
        let rtol = match (atol, rtol) {
            (_, Some(r)) => r,
            (Some(a), None) if a > 0.0 => 0.0,
            _ => {
                let s = static_shape(b, x, "linalg.matrix_rank")?;
                let side = s[s.len().saturating_sub(2)..].iter().copied().max().unwrap_or(1);
                let eps = if b.dtype(x) == Some(ir::DType::F64) { f64::EPSILON } else { f32::EPSILON as f64 };
                eps * side as f64
            }
        };
        one(matrix_rank(b, x, atol.unwrap_or(0.0), rtol))
    })
    .insert(op::LINALG_TENSORINV, tensorinv)
    .insert(op::LINALG_TENSORSOLVE, tensorsolve)
    .insert(op::LINALG_VANDER, vander)
    .insert(op::BADDBMM_DTYPE, |b, op| {
        // The operands in the result's dtype, then the product (which accumulates `f16`/`bf16`
        // in `f32` anyway).
        let dtype = b.with_args(op, |a| a.dtype("out_dtype").flatten())?.ok_or("baddbmm: out_dtype must be constant")?;
        let (beta, alpha) = b.with_args(op, |a| (a.constant("beta"), a.constant("alpha")))?;
        let mut v = Vec::new();
        for name in ["self", "batch1", "batch2"] {
            let x = input(b, op, name)?;
            v.push(cast(b, x, dtype)?);
        }
        let scalar = |a: Option<Attribute>| Arg::A(a.unwrap_or(Attribute::Int(1)));
        one(b.call(op::BADDBMM, &[v[0].into(), v[1].into(), v[2].into(), scalar(beta), scalar(alpha)]))
    });
}

/// `linalg_matrix_rank`: the number of singular values above `max(atol, rtol·s_max)`.
fn matrix_rank(b: &mut OpBuilder, x: ValueId, atol: f64, rtol: f64) -> Result<ValueId, String> {
    let s = b.call(op::LINALG_SVDVALS, &[x.into()])?;
    let top = b.call(op::AMAX, &[s.into(), ints(&[-1]), Arg::A(Attribute::Bool(true))])?;
    let tol = b.call(op::MUL_SCALAR, &[top.into(), Arg::A(Attribute::float(rtol))])?;
    let tol = b.call(op::CLAMP_MIN, &[tol.into(), Arg::A(Attribute::float(atol))])?;
    let above = b.call(op::GT_TENSOR, &[s.into(), tol.into()])?;
    b.call(op::SUM_DIM_INTLIST, &[above.into(), ints(&[-1])])
}

/// `linalg_cond(A, p)`: the ratio of the extreme singular values for `p` absent or ±2, else
/// `‖A‖_p · ‖A⁻¹‖_p` (which needs an invertible `A`).
fn cond(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "self")?;
    let (p_attr, p_num, no_p) = b.with_args(op, |a| (a.constant("p"), a.float("p"), a.is_none("p")))?;
    let ord = match p_attr.as_ref() {
        _ if no_p => Ord::Num(2.0),
        Some(Attribute::Str(s)) => match &**s {
            "fro" => Ord::Fro,
            "nuc" => Ord::Nuc,
            other => return Err(format!("linalg.cond: order '{other}' is not supported")),
        },
        _ => Ord::Num(p_num.ok_or("linalg.cond: p must be constant")?),
    };
    match ord {
        Ord::Num(p) if p.abs() == 2.0 => {
            let s = b.call(op::LINALG_SVDVALS, &[x.into()])?;
            let hi = b.call(op::AMAX, &[s.into(), ints(&[-1])])?;
            let lo = b.call(op::AMIN, &[s.into(), ints(&[-1])])?;
            let (n, d) = if p > 0.0 { (hi, lo) } else { (lo, hi) };
            one(b.call(op::DIV_TENSOR, &[n.into(), d.into()]))
        }
        ord => {
            let inv = b.call(op::LINALG_INV, &[x.into()])?;
            let na = matrix_norm(b, x, ord, &[-2, -1], false)?;
            let ni = matrix_norm(b, inv, ord, &[-2, -1], false)?;
            one(b.call(op::MUL_TENSOR, &[na.into(), ni.into()]))
        }
    }
}

/// The `p`-norm of `x` over `dims` (every dimension when empty).
fn vector_norm(b: &mut OpBuilder, x: ValueId, p: f64, dims: Vec<i64>, keep: bool) -> Result<ValueId, String> {
    let dims = if dims.is_empty() { (0..rank_of(b, x)? as i64).collect() } else { dims };
    p_norm(b, x, p, &dims, keep)
}

/// A matrix norm's order.
#[derive(Clone, Copy)]
enum Ord {
    Num(f64),
    Fro,
    Nuc,
}

/// `dims` as non-negative dimensions of a rank-`r` tensor.
fn normalize(dims: &[i64], r: usize) -> Result<Vec<i64>, String> {
    dims.iter()
        .map(|&d| {
            let n = if d < 0 { d + r as i64 } else { d };
            if (0..r as i64).contains(&n) { Ok(n) } else { Err(format!("dimension {d} is out of range for rank {r}")) }
        })
        .collect()
}

/// The matrix norm of `x` over the two dimensions `dims`.
fn matrix_norm(b: &mut OpBuilder, x: ValueId, ord: Ord, dims: &[i64], keep: bool) -> Result<ValueId, String> {
    let r = rank_of(b, x)?;
    let d = normalize(dims, r)?;
    let [d0, d1] = d[..] else { return Err("linalg.matrix_norm: dim must be a 2-tuple".into()) };
    if d0 == d1 {
        return Err("linalg.matrix_norm: dims must be different".into());
    }
    let keep_arg = Arg::A(Attribute::Bool(true));
    let reduced = match ord {
        Ord::Fro => return p_norm(b, x, 2.0, &[d0, d1], keep),
        Ord::Num(p) if p.abs() == 1.0 || p.is_infinite() => {
            // Column sums for ±1 (the sum runs down `d0`), row sums for ±∞; then their extreme.
            let (sum_dim, ext_dim) = if p.abs() == 1.0 { (d0, d1) } else { (d1, d0) };
            let ax = b.call(op::ABS, &[x.into()])?;
            let s = b.call(op::SUM_DIM_INTLIST, &[ax.into(), ints(&[sum_dim]), keep_arg.clone()])?;
            let ext = if p > 0.0 { op::AMAX } else { op::AMIN };
            b.call(ext, &[s.into(), ints(&[ext_dim]), keep_arg])?
        }
        Ord::Num(p) if p.abs() == 2.0 => spectral(b, x, d0, d1, r, Some(p))?,
        Ord::Nuc => spectral(b, x, d0, d1, r, None)?,
        Ord::Num(p) => return Err(format!("linalg.matrix_norm: order {p} is not supported (expected ±1, ±2, ±inf, 'fro' or 'nuc')")),
    };
    if keep {
        return Ok(reduced);
    }
    let mut both = [d0, d1];
    both.sort_unstable();
    b.call(op::SQUEEZE_DIMS, &[reduced.into(), ints(&both)])
}

/// The largest (`p` = 2), smallest (`p` = −2) or summed (`None`: nuclear) singular value over
/// `d0`, `d1`, with both dimensions kept as size 1.
fn spectral(b: &mut OpBuilder, x: ValueId, d0: i64, d1: i64, r: usize, p: Option<f64>) -> Result<ValueId, String> {
    let mut perm: Vec<i64> = (0..r as i64).filter(|&d| d != d0 && d != d1).collect();
    perm.extend([d0, d1]);
    let m = b.call(op::PERMUTE, &[x.into(), ints(&perm)])?;
    let s = b.call(op::LINALG_SVDVALS, &[m.into()])?;
    let s = match p {
        Some(p) if p > 0.0 => b.call(op::AMAX, &[s.into(), ints(&[-1])])?,
        Some(_) => b.call(op::AMIN, &[s.into(), ints(&[-1])])?,
        None => b.call(op::SUM_DIM_INTLIST, &[s.into(), ints(&[-1])])?,
    };
    // Back to `x`'s rank, the reduced dimensions as size 1 in their places.
    let (lo, hi) = (d0.min(d1), d0.max(d1));
    let s = b.call(op::UNSQUEEZE, &[s.into(), int(lo)])?;
    b.call(op::UNSQUEEZE, &[s.into(), int(hi)])
}

/// `linalg_matrix_norm(x, ord, dim, keepdim, dtype)` (`matrix`) and `linalg_norm(x, ord?, dim?,
/// keepdim, dtype)`: without `ord`, `linalg_norm` is the 2-norm of the flattened input (of its
/// `dim`); with it, a vector norm over one dimension or a matrix norm over two (the input's
/// only ones when `dim` is absent).
fn norm_op(b: &mut OpBuilder, op: OpId, matrix: bool) -> DecompResult {
    let mut x = input(b, op, "self")?;
    let (ord_attr, ord_num, dims, keep, dtype, no_ord) = b.with_args(op, |a| {
        (a.constant("ord"), a.float("ord"), a.ints("dim"), a.bool("keepdim"), a.dtype("dtype").flatten(), a.is_none("ord"))
    })?;
    if let Some(d) = dtype {
        x = cast(b, x, d)?;
    }
    let keep = keep.unwrap_or(false);
    let what = if matrix { "linalg.matrix_norm" } else { "linalg.norm" };
    let ord = match ord_attr.as_ref() {
        _ if no_ord => None,
        Some(Attribute::Str(s)) => Some(match &**s {
            "fro" => Ord::Fro,
            "nuc" => Ord::Nuc,
            other => return Err(format!("{what}: order '{other}' is not supported")),
        }),
        Some(_) => Some(Ord::Num(ord_num.ok_or_else(|| format!("{what}: ord must be a number or 'fro'/'nuc'"))?)),
        None if matrix => Some(Ord::Fro),
        None => return Err(format!("{what}: ord must be constant")),
    };
    let r = rank_of(b, x)?;
    let dims = match (dims, matrix) {
        (Some(d), _) => d,
        (None, true) => vec![-2, -1],
        (None, false) => match (&ord, r) {
            (None, _) => Vec::new(),
            (Some(_), 1) => vec![0],
            (Some(_), 2) => vec![0, 1],
            (Some(_), _) => return Err(format!("{what}: with an order and no dim, the input must be 1-D or 2-D")),
        },
    };
    let v = match (ord, dims.len()) {
        (None, _) => vector_norm(b, x, 2.0, dims, keep)?,
        (Some(Ord::Num(p)), 1) => vector_norm(b, x, p, dims, keep)?,
        (Some(ord), 2) => matrix_norm(b, x, ord, &dims, keep)?,
        (Some(_), n) => return Err(format!("{what}: {n} dimensions given for a norm with an order")),
    };
    one(Ok(v))
}

/// `linalg_multi_dot(tensors)`: the products left to right; a 1-d first operand is a row and a
/// 1-d last one a column, and the result loses those dimensions.
fn multi_dot(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let ms = tensor_list(b, op, "tensors")?;
    if ms.len() < 2 {
        return Err("multi_dot(): expected at least 2 tensors but got fewer".into());
    }
    let (first, last) = (rank_of(b, ms[0])?, rank_of(b, ms[ms.len() - 1])?);
    let mut acc = if first == 1 { b.call(op::UNSQUEEZE, &[ms[0].into(), int(0)])? } else { ms[0] };
    for (i, &m) in ms.iter().enumerate().skip(1) {
        let m = if i == ms.len() - 1 && last == 1 { b.call(op::UNSQUEEZE, &[m.into(), int(1)])? } else { m };
        if rank_of(b, m)? != 2 || rank_of(b, acc)? != 2 {
            return Err("multi_dot(): the first and last tensors must be 1-D or 2-D and the others 2-D".into());
        }
        acc = b.call(op::MM, &[acc.into(), m.into()])?;
    }
    let mut squeeze = Vec::new();
    if first == 1 {
        squeeze.push(0);
    }
    if last == 1 {
        squeeze.push(1);
    }
    if !squeeze.is_empty() {
        acc = b.call(op::SQUEEZE_DIMS, &[acc.into(), ints(&squeeze)])?;
    }
    one(Ok(acc))
}

/// `matrix_power(x, n)`: `x` squared repeatedly and multiplied in where `n`'s bits are set;
/// a negative `n` powers the inverse, and `n = 0` is the identity of `x`'s shape.
fn matrix_power(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "self")?;
    let n = b.with_args(op, |a| a.int("n"))?.ok_or("matrix_power: n must be constant")?;
    if rank_of(b, x)? < 2 {
        return Err("matrix_power: expected a tensor of square matrices".into());
    }
    if n == 0 {
        // The identity: ones shaped as a row of `x`, on a diagonal.
        let row = b.call(op::SELECT_INT, &[x.into(), int(-1), int(0)])?;
        let ones = b.call(op::ONES_LIKE, &[row.into()])?;
        return one(b.call(op::DIAG_EMBED, &[ones.into()]));
    }
    let mut base = if n < 0 { b.call(op::LINALG_INV, &[x.into()])? } else { x };
    let mut k = n.unsigned_abs();
    let mut acc: Option<ValueId> = None;
    loop {
        if k & 1 == 1 {
            acc = Some(match acc {
                Some(a) => b.call(op::MATMUL, &[a.into(), base.into()])?,
                None => base,
            });
        }
        k >>= 1;
        if k == 0 {
            break;
        }
        base = b.call(op::MATMUL, &[base.into(), base.into()])?;
    }
    let acc = acc.ok_or("matrix_power: no product")?;
    // `n = 1` returns a new tensor, not `x` itself.
    if acc == x {
        return one(b.call(op::CLONE, &[x.into()]));
    }
    one(Ok(acc))
}

/// `linalg_tensorinv(A, ind)`: `A` read as a square matrix of its first `ind` dimensions by the
/// rest, inverted, and shaped as the rest followed by the first.
fn tensorinv(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "self")?;
    let ind = b.with_args(op, |a| a.int("ind"))?.unwrap_or(2);
    let s = static_shape(b, x, "linalg.tensorinv")?;
    if ind <= 0 || ind as usize > s.len() {
        return Err(format!("linalg.tensorinv: expected a strictly positive ind of at most {}, got {ind}", s.len()));
    }
    let (front, back) = s.split_at(ind as usize);
    let (p, q) = (front.iter().product::<i64>(), back.iter().product::<i64>());
    if p != q {
        return Err(format!("linalg.tensorinv: expected prod(shape[:ind]) == prod(shape[ind:]), got {p} and {q}"));
    }
    let m = b.call(op::RESHAPE, &[x.into(), ints(&[p, q])])?;
    let inv = b.call(op::LINALG_INV, &[m.into()])?;
    one(b.call(op::RESHAPE, &[inv.into(), ints(&[back, front].concat())]))
}

/// `linalg_tensorsolve(A, B, dims)`: `dims` of `A` moved last, `A` read as a matrix of `B`'s
/// elements by the rest, and the solution shaped as the rest.
fn tensorsolve(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let (mut x, y) = (input(b, op, "self")?, input(b, op, "other")?);
    let dims = b.with_args(op, |a| a.ints("dims"))?.unwrap_or_default();
    let r = rank_of(b, x)?;
    if !dims.is_empty() {
        let d = normalize(&dims, r)?;
        let mut perm: Vec<i64> = (0..r as i64).filter(|i| !d.contains(i)).collect();
        perm.extend(d);
        x = b.call(op::PERMUTE, &[x.into(), ints(&perm)])?;
    }
    let (sx, sy) = (static_shape(b, x, "linalg.tensorsolve")?, static_shape(b, y, "linalg.tensorsolve")?);
    if sx.len() < sy.len() || sx[..sy.len()] != sy[..] {
        return Err(format!("linalg.tensorsolve: the leading dimensions of A {sx:?} must be B's {sy:?}"));
    }
    let rest = &sx[sy.len()..];
    let (p, q) = (sy.iter().product::<i64>(), rest.iter().product::<i64>());
    if p != q {
        return Err(format!("linalg.tensorsolve: expected a square system, got {p} equations in {q} unknowns"));
    }
    let m = b.call(op::RESHAPE, &[x.into(), ints(&[p, q])])?;
    let v = b.call(op::RESHAPE, &[y.into(), ints(&[p])])?;
    let sol = b.call(op::LINALG_SOLVE, &[m.into(), v.into()])?;
    one(b.call(op::RESHAPE, &[sol.into(), ints(rest)]))
}

/// `linalg_vander(x, N)`: `[…, n, N]` with `x[…, i]^j` in column `j` (`N` defaults to `n`): a
/// column of ones and `x` repeated `N − 1` times, multiplied up along the last axis.
fn vander(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "x")?;
    let s = static_shape(b, x, "linalg.vander")?;
    let n = *s.last().ok_or("linalg.vander: x must have at least one dimension")?;
    let cols = b.with_args(op, |a| a.int("N"))?.unwrap_or(n);
    if cols <= 0 {
        return Err(format!("linalg.vander: N must be greater than 0, got {cols}"));
    }
    let xu = b.call(op::UNSQUEEZE, &[x.into(), int(-1)])?;
    let ones = b.call(op::ONES_LIKE, &[xu.into()])?;
    if cols == 1 {
        return one(Ok(ones));
    }
    let mut shape = s.clone();
    shape.push(cols - 1);
    let reps = b.call(op::EXPAND, &[xu.into(), ints(&shape)])?;
    let l = b.list(vec![ones, reps])?;
    let all = b.call(op::CAT, &[l.into(), int(-1)])?;
    one(b.call(op::CUMPROD, &[all.into(), int(-1)]))
}
