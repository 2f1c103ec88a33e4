//! The decompositions of `gradient` (every overload): along each requested dim, central
//! differences inside and one-sided differences of first or second order at the two ends,
//! concatenated. Uniform spacing is a scalar per dim (1 by default); coordinates (a 1-d tensor
//! per dim) give the second-order accurate formula for uneven steps. The result is one tensor
//! per dim, in the order the dims are given.

use super::decompose::{DecompResult, DecompositionTable, input, one};
use super::rewrite::{Arg, OpBuilder};
use super::stacking::{int, tensor_list};
use dialect_aten::op;
use ir::{Attribute, OpId, ValueId};

/// Adds the `gradient` decompositions to `t`.
pub(super) fn add(t: &mut DecompositionTable) {
    for o in [op::GRADIENT_ARRAY, op::GRADIENT_SCALARARRAY, op::GRADIENT_SCALARINT, op::GRADIENT_SCALARRAYARRAY, op::GRADIENT_SCALARRAYINT] {
        t.insert(o, uniform);
    }
    t.insert(op::GRADIENT_TENSORARRAY, coordinates).insert(op::GRADIENT_TENSORARRAYINT, coordinates);
}

const WHAT: &str = "torch.gradient";

/// The dims to differentiate along (all of them when `dim` is absent or `None`), normalized.
fn dims(b: &OpBuilder, op: OpId, rank: usize) -> Result<Vec<usize>, String> {
    let (none, list) = b.with_args(op, |a| (a.is_none("dim"), a.ints("dim")))?;
    if none {
        return Ok((0..rank).collect());
    }
    let list = list.ok_or(format!("{WHAT}: dim must be constant"))?;
    let mut out = Vec::new();
    for d in list {
        let n = dialect_aten::infer::norm_dim(d, rank).ok_or(format!("{WHAT}: dimension {d} is out of range for rank {rank}"))?;
        if out.contains(&n) {
            return Err(format!("{WHAT}: dim {d} appears multiple times in the list of dims"));
        }
        out.push(n);
    }
    Ok(out)
}

/// The input, its static shape, the dims and the edge order, checked as PyTorch checks them.
fn setup(b: &OpBuilder, op: OpId, spacing_len: Option<usize>) -> Result<(ValueId, Vec<usize>, i64), String> {
    let x = input(b, op, "self")?;
    let shape = super::composite::static_shape(b, x, WHAT)?;
    let ds = dims(b, op, shape.len())?;
    let edge = b.with_args(op, |a| a.int("edge_order"))?.unwrap_or(1);
    if !(1..=2).contains(&edge) {
        return Err(format!("{WHAT} only supports edge_order=1 and edge_order=2."));
    }
    if let Some(n) = spacing_len {
        if n != ds.len() {
            return Err(format!(
                "{WHAT} expected spacing to be unspecified, a scalar or it's spacing and dim arguments to have the same length, but got a spacing argument of length {n} and a dim argument of length {}.",
                ds.len()
            ));
        }
    }
    for &d in &ds {
        if shape[d] < edge + 1 {
            return Err(format!("{WHAT} expected each dimension size to be at least edge_order+1"));
        }
    }
    Ok((x, ds, edge))
}

fn slice(b: &mut OpBuilder, x: ValueId, d: usize, start: i64, end: i64) -> Result<ValueId, String> {
    b.call(op::SLICE_TENSOR, &[x.into(), int(d as i64), int(start), int(end)])
}

fn scalar_op(b: &mut OpBuilder, name: ir::OpRef, x: ValueId, s: &Attribute) -> Result<ValueId, String> {
    b.call(name, &[x.into(), Arg::A(s.clone())])
}

fn cat3(b: &mut OpBuilder, parts: [ValueId; 3], d: usize) -> Result<ValueId, String> {
    let l = b.list(parts.to_vec())?;
    b.call(op::CAT, &[l.into(), int(d as i64)])
}

const END: i64 = i64::MAX;

/// `gradient` with a scalar spacing per dim.
fn uniform(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let sp = b.with_args(op, |a| if a.is_none("spacing") { None } else { Some(a.constant("spacing")) })?;
    let rank = b.rank(input(b, op, "self")?).ok_or(format!("{WHAT}: the input's rank is unknown"))?;
    let n = dims(b, op, rank)?.len();
    let spacing: Vec<Attribute> = match sp {
        None => vec![Attribute::float(1.0); n],
        Some(None) => return Err(format!("{WHAT}: spacing must be constant")),
        Some(Some(Attribute::Array(items))) => items.to_vec(),
        Some(Some(s)) => vec![s; n],
    };
    let (x, ds, edge) = setup(b, op, Some(spacing.len()))?;
    let mut outs = Vec::new();
    for (&d, h) in ds.iter().zip(&spacing) {
        let hi = slice(b, x, d, 2, END)?;
        let lo = slice(b, x, d, 0, -2)?;
        let c = b.call(op::SUB_TENSOR, &[hi.into(), lo.into()])?;
        let c = scalar_op(b, op::DIV_SCALAR, c, h)?;
        let c = b.call(op::DIV_SCALAR, &[c.into(), Arg::A(Attribute::Int(2))])?;
        let (s0, s1, s2) = (slice(b, x, d, 0, 1)?, slice(b, x, d, 1, 2)?, slice(b, x, d, 2, 3)?);
        let (e1, e2, e3) = (slice(b, x, d, -1, END)?, slice(b, x, d, -2, -1)?, slice(b, x, d, -3, -2)?);
        let (pre, app) = if edge == 1 {
            let p = b.call(op::SUB_TENSOR, &[s1.into(), s0.into()])?;
            let a = b.call(op::SUB_TENSOR, &[e1.into(), e2.into()])?;
            (scalar_op(b, op::DIV_SCALAR, p, h)?, scalar_op(b, op::DIV_SCALAR, a, h)?)
        } else {
            let f = |v: f64| Arg::A(Attribute::float(v));
            let t0 = b.call(op::MUL_SCALAR, &[s0.into(), f(-1.5)])?;
            let t1 = b.call(op::MUL_SCALAR, &[s1.into(), Arg::A(Attribute::Int(2))])?;
            let t2 = b.call(op::MUL_SCALAR, &[s2.into(), f(0.5)])?;
            let p = b.call(op::ADD_TENSOR, &[t0.into(), t1.into()])?;
            let p = b.call(op::SUB_TENSOR, &[p.into(), t2.into()])?;
            let u0 = b.call(op::MUL_SCALAR, &[e3.into(), f(0.5)])?;
            let u1 = b.call(op::MUL_SCALAR, &[e2.into(), Arg::A(Attribute::Int(2))])?;
            let u2 = b.call(op::MUL_SCALAR, &[e1.into(), f(1.5)])?;
            let a = b.call(op::SUB_TENSOR, &[u0.into(), u1.into()])?;
            let a = b.call(op::ADD_TENSOR, &[a.into(), u2.into()])?;
            (scalar_op(b, op::DIV_SCALAR, p, h)?, scalar_op(b, op::DIV_SCALAR, a, h)?)
        };
        outs.push(cat3(b, [pre, c, app], d)?);
    }
    one(b.list(outs))
}

/// `gradient` with coordinates: one 1-d tensor per dim.
fn coordinates(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let coords = tensor_list(b, op, "spacing")?;
    let (x, ds, edge) = setup(b, op, Some(coords.len()))?;
    let rank = b.rank(x).unwrap_or(0);
    let mut outs = Vec::new();
    for (&d, &cv) in ds.iter().zip(&coords) {
        if b.rank(cv) != Some(1) {
            return Err(format!("{WHAT}: each coordinate tensor must be 1-dimensional"));
        }
        let mut shape = vec![1i64; rank];
        shape[d] = -1;
        let dx = b.call(op::DIFF, &[cv.into(), int(1), int(0)])?;
        let dx1 = slice(b, dx, 0, 0, -1)?;
        let dx2 = slice(b, dx, 0, 1, END)?;
        let sum = b.call(op::ADD_TENSOR, &[dx1.into(), dx2.into()])?;
        let mul = |b: &mut OpBuilder, p: ValueId, q: ValueId| b.call(op::MUL_TENSOR, &[p.into(), q.into()]);
        let div = |b: &mut OpBuilder, p: ValueId, q: ValueId| b.call(op::DIV_TENSOR, &[p.into(), q.into()]);
        let neg_dx2 = b.call(op::NEG, &[dx2.into()])?;
        let den = mul(b, dx1, sum)?;
        let ca = div(b, neg_dx2, den)?;
        let diff = b.call(op::SUB_TENSOR, &[dx2.into(), dx1.into()])?;
        let den = mul(b, dx1, dx2)?;
        let cb = div(b, diff, den)?;
        let den = mul(b, dx2, sum)?;
        let cc = div(b, dx1, den)?;
        let view = |b: &mut OpBuilder, v: ValueId| b.call(op::RESHAPE, &[v.into(), Arg::A(Attribute::ints(&shape))]);
        let (ca, cb, cc) = (view(b, ca)?, view(b, cb)?, view(b, cc)?);
        let t0 = slice(b, x, d, 0, -2)?;
        let t1 = slice(b, x, d, 1, -1)?;
        let t2 = slice(b, x, d, 2, END)?;
        let p0 = mul(b, ca, t0)?;
        let p1 = mul(b, cb, t1)?;
        let p2 = mul(b, cc, t2)?;
        let c = b.call(op::ADD_TENSOR, &[p0.into(), p1.into()])?;
        let c = b.call(op::ADD_TENSOR, &[c.into(), p2.into()])?;
        let at = |b: &mut OpBuilder, i: i64| b.call(op::SELECT_INT, &[dx.into(), int(0), int(i)]);
        let (s0, s1, s2) = (slice(b, x, d, 0, 1)?, slice(b, x, d, 1, 2)?, slice(b, x, d, 2, 3)?);
        let (e1, e2, e3) = (slice(b, x, d, -1, END)?, slice(b, x, d, -2, -1)?, slice(b, x, d, -3, -2)?);
        let (pre, app) = if edge == 1 {
            let (h0, hn) = (at(b, 0)?, at(b, -1)?);
            let p = b.call(op::SUB_TENSOR, &[s1.into(), s0.into()])?;
            let a = b.call(op::SUB_TENSOR, &[e1.into(), e2.into()])?;
            (div(b, p, h0)?, div(b, a, hn)?)
        } else {
            let (h0, h1) = (at(b, 0)?, at(b, 1)?);
            let (hn, hm) = (at(b, -1)?, at(b, -2)?);
            let two = |b: &mut OpBuilder, v: ValueId| b.call(op::MUL_SCALAR, &[v.into(), Arg::A(Attribute::float(2.0))]);
            // prepend: a = −(2h₀ + h₁)/(h₀(h₀ + h₁)), b = (h₀ + h₁)/(h₀h₁), c = −h₀/(h₁(h₀ + h₁)).
            let s01 = b.call(op::ADD_TENSOR, &[h0.into(), h1.into()])?;
            let t = two(b, h0)?;
            let t = b.call(op::ADD_TENSOR, &[t.into(), h1.into()])?;
            let t = b.call(op::NEG, &[t.into()])?;
            let den = mul(b, h0, s01)?;
            let a0 = div(b, t, den)?;
            let den = mul(b, h0, h1)?;
            let b0 = div(b, s01, den)?;
            let nh0 = b.call(op::NEG, &[h0.into()])?;
            let den = mul(b, h1, s01)?;
            let c0 = div(b, nh0, den)?;
            let q0 = mul(b, a0, s0)?;
            let q1 = mul(b, b0, s1)?;
            let q2 = mul(b, c0, s2)?;
            let p = b.call(op::ADD_TENSOR, &[q0.into(), q1.into()])?;
            let p = b.call(op::ADD_TENSOR, &[p.into(), q2.into()])?;
            // append: a = hₙ/(hₘ(hₙ + hₘ)), b = −(hₙ + hₘ)/(hₙhₘ), c = (2hₙ + hₘ)/(hₙ(hₙ + hₘ)).
            let snm = b.call(op::ADD_TENSOR, &[hn.into(), hm.into()])?;
            let den = mul(b, hm, snm)?;
            let a1 = div(b, hn, den)?;
            let nsnm = b.call(op::NEG, &[snm.into()])?;
            let den = mul(b, hn, hm)?;
            let b1 = div(b, nsnm, den)?;
            let t = two(b, hn)?;
            let t = b.call(op::ADD_TENSOR, &[t.into(), hm.into()])?;
            let den = mul(b, hn, snm)?;
            let c1 = div(b, t, den)?;
            let r0 = mul(b, a1, e3)?;
            let r1 = mul(b, b1, e2)?;
            let r2 = mul(b, c1, e1)?;
            let a = b.call(op::ADD_TENSOR, &[r0.into(), r1.into()])?;
            let a = b.call(op::ADD_TENSOR, &[a.into(), r2.into()])?;
            (p, a)
        };
        outs.push(cat3(b, [pre, c, app], d)?);
    }
    one(b.list(outs))
}
