//! Decompositions of the real linear-algebra ops given tensor tolerances or Householder
//! reflectors: `linalg_matrix_rank` and `linalg_pinv` with tolerance tensors (`tol_tensor`,
//! `atol_rtol_tensor`, `rcond_tensor`), through the SVD (or, `hermitian`, the symmetric
//! eigendecomposition) kernels, and `orgqr`/`linalg_householder_product`, the product of the
//! reflectors `geqrf` leaves.

use super::composite::static_shape;
use super::decompose::{DecompResult, DecompositionTable, cast, input, one, opt_input};
use super::rewrite::{Arg, OpBuilder};
use super::stacking::{int, ints};
use dialect_aten::op;
use dialect_prim::kinds;
use ir::{Attribute, DType, DenseAttr, OpId, ValueId};

/// Adds the decompositions to `t`.
pub(super) fn add(t: &mut DecompositionTable) {
    t.insert(op::LINALG_MATRIX_RANK_TOL_TENSOR, |b, op| {
        let x = real_input(b, op, "input", "linalg.matrix_rank")?;
        let tol = input(b, op, "tol")?;
        let zero = scalar(b, 0.0, x)?;
        rank(b, op, x, tol, zero)
    })
    .insert(op::LINALG_MATRIX_RANK_ATOL_RTOL_TENSOR, |b, op| {
        let x = real_input(b, op, "input", "linalg.matrix_rank")?;
        let (atol, rtol) = tolerances(b, op, x)?;
        rank(b, op, x, atol, rtol)
    })
    .insert(op::LINALG_PINV_RCOND_TENSOR, |b, op| {
        let x = real_input(b, op, "self", "linalg.pinv")?;
        let rcond = input(b, op, "rcond")?;
        let zero = scalar(b, 0.0, x)?;
        pinv(b, op, x, zero, rcond)
    })
    .insert(op::LINALG_PINV_ATOL_RTOL_TENSOR, |b, op| {
        let x = real_input(b, op, "self", "linalg.pinv")?;
        let (atol, rtol) = tolerances(b, op, x)?;
        pinv(b, op, x, atol, rtol)
    })
    .insert(op::ORGQR, |b, op| householder_product(b, op, "self", "input2", "orgqr"))
    .insert(op::LINALG_HOUSEHOLDER_PRODUCT, |b, op| householder_product(b, op, "input", "tau", "linalg.householder_product"));
}

/// Operand `name`, which must be an `f32`/`f64` matrix (or batch of them).
fn real_input(b: &OpBuilder, op: OpId, name: &str, what: &str) -> Result<ValueId, String> {
    let x = input(b, op, name)?;
    match b.dtype(x) {
        Some(DType::F32 | DType::F64) => {}
        Some(d) => return Err(format!("{what}: expected a float or double matrix, got {}", d.torch_name())),
        None => return Err(format!("{what}: the dtype is unknown")),
    }
    match b.rank(x) {
        Some(r) if r >= 2 => Ok(x),
        Some(r) => Err(format!("{what}: the input tensor must have at least 2 dimensions, got {r}")),
        None => Err(format!("{what}: the rank is unknown")),
    }
}

/// A 0-d tensor of `v` in `like`'s dtype.
fn scalar(b: &mut OpBuilder, v: f64, like: ValueId) -> Result<ValueId, String> {
    let d = b.dtype(like).unwrap_or(DType::F32);
    b.call(op::SCALAR_TENSOR, &[Arg::A(Attribute::float(v)), Arg::A(kinds::dtype(d))])
}

/// The `atol` and `rtol` tensors of the `atol_rtol_tensor` overloads: an absent `atol` is 0; an
/// absent `rtol` is the dtype's epsilon times the larger matrix side, or 0 where `atol` is
/// given and positive.
fn tolerances(b: &mut OpBuilder, op: OpId, x: ValueId) -> Result<(ValueId, ValueId), String> {
    let (atol, rtol) = (opt_input(b, op, "atol")?, opt_input(b, op, "rtol")?);
    let dtype = b.dtype(x).unwrap_or(DType::F32);
    let s = static_shape(b, x, "the matrix")?;
    let side = s[s.len() - 2].max(s[s.len() - 1]);
    let eps = if dtype == DType::F64 { f64::EPSILON } else { f32::EPSILON as f64 };
    let default = scalar(b, eps * side as f64, x)?;
    let rtol = match (rtol, atol) {
        (Some(r), _) => r,
        (None, Some(a)) => {
            let not_positive = b.call(op::LE_SCALAR, &[a.into(), Arg::A(Attribute::Int(0))])?;
            let not_positive = cast(b, not_positive, dtype)?;
            b.call(op::MUL_TENSOR, &[not_positive.into(), default.into()])?
        }
        (None, None) => default,
    };
    let atol = match atol {
        Some(a) => a,
        None => scalar(b, 0.0, x)?,
    };
    Ok((atol, rtol))
}

/// `max(atol, rtol · top)` per matrix, as `[…, 1]`, with `top` the largest singular value `[…, 1]`.
fn cutoff(b: &mut OpBuilder, atol: ValueId, rtol: ValueId, top: ValueId) -> Result<ValueId, String> {
    let atol = b.call(op::UNSQUEEZE, &[atol.into(), int(-1)])?;
    let rtol = b.call(op::UNSQUEEZE, &[rtol.into(), int(-1)])?;
    let rel = b.call(op::MUL_TENSOR, &[rtol.into(), top.into()])?;
    b.call(op::MAXIMUM, &[atol.into(), rel.into()])
}

fn hermitian(b: &OpBuilder, op: OpId) -> Result<bool, String> {
    Ok(b.with_args(op, |a| a.bool("hermitian"))?.unwrap_or(false))
}

/// `linalg_matrix_rank`: the number of singular values (absolute eigenvalues, `hermitian`)
/// above `max(atol, rtol · s_max)`.
fn rank(b: &mut OpBuilder, op: OpId, x: ValueId, atol: ValueId, rtol: ValueId) -> DecompResult {
    let s = if hermitian(b, op)? {
        let l = b.call(op::LINALG_EIGVALSH, &[x.into()])?;
        b.call(op::ABS, &[l.into()])?
    } else {
        b.call(op::LINALG_SVDVALS, &[x.into()])?
    };
    let top = b.call(op::AMAX, &[s.into(), ints(&[-1]), Arg::A(Attribute::Bool(true))])?;
    let tol = cutoff(b, atol, rtol, top)?;
    let above = b.call(op::GT_TENSOR, &[s.into(), tol.into()])?;
    one(b.call(op::SUM_DIM_INTLIST, &[above.into(), ints(&[-1])]))
}

/// `linalg_pinv`: `V · diag(1/s) · Uᵀ` over the singular values above `max(atol, rtol · s_max)`
/// (with `hermitian`, `Q · diag(1/λ) · Qᵀ` over the eigenvalues of absolute value above it).
fn pinv(b: &mut OpBuilder, op: OpId, x: ValueId, atol: ValueId, rtol: ValueId) -> DecompResult {
    let transpose = |b: &mut OpBuilder, v: ValueId| b.call(op::TRANSPOSE_INT, &[v.into(), int(-2), int(-1)]);
    let (left, vals, mags, right) = if hermitian(b, op)? {
        let r = b.call_n(op::LINALG_EIGH, &[x.into()])?;
        let (l, q) = (r[0], r[1]);
        let mags = b.call(op::ABS, &[l.into()])?;
        let qt = transpose(b, q)?;
        (q, l, mags, qt)
    } else {
        let r = b.call_n(op::LINALG_SVD, &[x.into(), Arg::A(Attribute::Bool(false))])?;
        let (u, s, vh) = (r[0], r[1], r[2]);
        let v = transpose(b, vh)?;
        let ut = transpose(b, u)?;
        (v, s, s, ut)
    };
    let top = b.call(op::AMAX, &[mags.into(), ints(&[-1]), Arg::A(Attribute::Bool(true))])?;
    let tol = cutoff(b, atol, rtol, top)?;
    let keep = b.call(op::GT_TENSOR, &[mags.into(), tol.into()])?;
    let inv = b.call(op::RECIPROCAL, &[vals.into()])?;
    let zero = b.call(op::ZEROS_LIKE, &[inv.into()])?;
    let inv = b.call(op::WHERE_SELF, &[keep.into(), inv.into(), zero.into()])?;
    let inv = b.call(op::UNSQUEEZE, &[inv.into(), int(-2)])?;
    let scaled = b.call(op::MUL_TENSOR, &[left.into(), inv.into()])?;
    let p = b.call(op::MATMUL, &[scaled.into(), right.into()])?;
    let d = b.dtype(x).unwrap_or(DType::F32);
    one(cast(b, p, d))
}

/// The first `n` columns of `H₁ H₂ ⋯ H_k` for the `m × n` matrices of reflectors `a` (`m ≥ n ≥ k`):
/// `Hᵢ = I − τᵢ vᵢ vᵢᵀ`, `vᵢ` being 1 at row `i`, 0 above it and `a`'s column `i` below it.
/// Applied right to left to the first `n` columns of the identity.
fn householder_product(b: &mut OpBuilder, op: OpId, a_name: &str, tau_name: &str, what: &str) -> DecompResult {
    let a = real_input(b, op, a_name, what)?;
    let tau = input(b, op, tau_name)?;
    let s = static_shape(b, a, what)?;
    let ts = static_shape(b, tau, what)?;
    let (m, n) = (s[s.len() - 2], s[s.len() - 1]);
    if m < n {
        return Err(format!("{what}: input.shape[-2] must be greater than or equal to input.shape[-1]"));
    }
    let k = *ts.last().ok_or_else(|| format!("{what}: tau must have at least one dimension"))?;
    if k > n {
        return Err(format!("{what}: input.shape[-1] must be greater than or equal to tau.shape[-1]"));
    }
    if ts.len() != s.len() - 1 || ts[..ts.len() - 1] != s[..s.len() - 2] {
        return Err(format!("{what}: expected batch dimensions of tau to be equal to input.shape[:-2], got tau of shape {ts:?} for input of shape {s:?}"));
    }
    if b.dtype(tau) != b.dtype(a) {
        return Err(format!("{what}: tau must have the same dtype as input"));
    }
    let dtype = b.dtype(a).unwrap_or(DType::F32);
    let eye = b.call(op::EYE_M, &[int(m), int(n), Arg::A(kinds::dtype(dtype))])?;
    let mut q = b.call(op::EXPAND, &[eye.into(), ints(&s)])?;
    for i in (0..k).rev() {
        // vᵢ: the column below the diagonal, 1 on it, 0 above.
        let below: Vec<f32> = (0..m).map(|r| if r > i { 1.0 } else { 0.0 }).collect();
        let unit: Vec<f32> = (0..m).map(|r| if r == i { 1.0 } else { 0.0 }).collect();
        let below = constant_vector(b, &below, dtype)?;
        let unit = constant_vector(b, &unit, dtype)?;
        let col = b.call(op::SELECT_INT, &[a.into(), int(-1), int(i)])?;
        let v = b.call(op::MUL_TENSOR, &[col.into(), below.into()])?;
        let v = b.call(op::ADD_TENSOR, &[v.into(), unit.into()])?;
        let v = b.call(op::UNSQUEEZE, &[v.into(), int(-1)])?;
        // Q ← Q − τᵢ vᵢ (vᵢᵀ Q)
        let vt = b.call(op::TRANSPOSE_INT, &[v.into(), int(-2), int(-1)])?;
        let w = b.call(op::MATMUL, &[vt.into(), q.into()])?;
        let t = b.call(op::SELECT_INT, &[tau.into(), int(-1), int(i)])?;
        let t = b.call(op::UNSQUEEZE, &[t.into(), int(-1)])?;
        let t = b.call(op::UNSQUEEZE, &[t.into(), int(-1)])?;
        let tv = b.call(op::MUL_TENSOR, &[v.into(), t.into()])?;
        let update = b.call(op::MUL_TENSOR, &[tv.into(), w.into()])?;
        q = b.call(op::SUB_TENSOR, &[q.into(), update.into()])?;
    }
    if k == 0 {
        q = b.call(op::CLONE, &[q.into()])?;
    }
    one(Ok(q))
}

/// A constant 1-d tensor of `v` in `dtype`.
fn constant_vector(b: &mut OpBuilder, v: &[f32], dtype: DType) -> Result<ValueId, String> {
    let c = b.constant(Attribute::Dense(DenseAttr::from_f32(&[v.len() as i64], v)?))?;
    cast(b, c, dtype)
}
