//! Decompositions of the selection ops: `where(condition)` and `nonzero_numpy` (the indices of
//! the nonzero elements, one 1-d tensor per dimension), `argwhere` (`nonzero`), `isin` (an
//! equality test against every test element), `split_with_sizes_copy` (slices copied out) and
//! the multivariate log-gamma `mvlgamma`/`special_multigammaln`.

use super::decompose::{DecompResult, DecompositionTable, input, one, rank_of};
use super::rewrite::{Arg, OpBuilder};
use super::stacking::{int, ints};
use dialect_aten::op;
use ir::{Attribute, OpId};

/// Adds the selection decompositions to `t`.
pub(super) fn add(t: &mut DecompositionTable) {
    t.insert(op::WHERE, nonzero_tuple)
        .insert(op::NONZERO_NUMPY, nonzero_tuple)
        .insert(op::ARGWHERE, |b, op| {
            let x = input(b, op, "self")?;
            one(b.call(op::NONZERO, &[x.into()]))
        })
        .insert(op::ISIN_TENSOR_TENSOR, |b, op| {
            let (x, test) = (input(b, op, "elements")?, input(b, op, "test_elements")?);
            let xu = b.call(op::UNSQUEEZE, &[x.into(), int(-1)])?;
            let flat = b.call(op::RESHAPE, &[test.into(), ints(&[-1])])?;
            let eq = b.call(op::EQ_TENSOR, &[xu.into(), flat.into()])?;
            let any = b.call(op::ANY_DIM, &[eq.into(), int(-1)])?;
            invert_if(b, op, any)
        })
        .insert(op::ISIN_TENSOR_SCALAR, |b, op| {
            let x = input(b, op, "elements")?;
            let s = b.with_args(op, |a| a.constant("test_element"))?.ok_or("isin: the test element must be constant")?;
            let eq = b.call(op::EQ_SCALAR, &[x.into(), Arg::A(s)])?;
            invert_if(b, op, eq)
        })
        .insert(op::ISIN_SCALAR_TENSOR, |b, op| {
            let test = input(b, op, "test_elements")?;
            let s = b.with_args(op, |a| a.constant("element"))?.ok_or("isin: the element must be constant")?;
            let eq = b.call(op::EQ_SCALAR, &[test.into(), Arg::A(s)])?;
            let any = b.call(op::ANY, &[eq.into()])?;
            invert_if(b, op, any)
        })
        .insert(op::SPLIT_WITH_SIZES_COPY, |b, op| {
            let x = input(b, op, "self")?;
            let (sizes, dim) = b.with_args(op, |a| (a.ints("split_sizes"), a.int("dim")))?;
            let sizes = sizes.ok_or("split_with_sizes_copy: the sizes must be constant")?;
            let dim = dim.unwrap_or(0);
            let mut parts = Vec::new();
            let mut start = 0;
            for n in sizes {
                let s = b.call(op::SLICE_TENSOR, &[x.into(), int(dim), int(start), int(start + n)])?;
                parts.push(b.call(op::CLONE, &[s.into()])?);
                start += n;
            }
            one(b.list(parts))
        })
        .insert(op::MVLGAMMA, mvlgamma)
        .insert(op::SPECIAL_MULTIGAMMALN, mvlgamma);
}

/// `where(condition)`: the columns of `nonzero(condition)`, as a list of 1-d index tensors.
fn nonzero_tuple(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "condition").or_else(|_| input(b, op, "self"))?;
    let r = rank_of(b, x)?;
    if r == 0 {
        return Err("where: the condition must have at least one dimension".into());
    }
    let nz = b.call(op::NONZERO, &[x.into()])?;
    let mut cols = Vec::new();
    for d in 0..r as i64 {
        cols.push(b.call(op::SELECT_INT, &[nz.into(), int(1), int(d)])?);
    }
    one(b.list(cols))
}

/// `v`, negated when the op's `invert` is set.
fn invert_if(b: &mut OpBuilder, op: OpId, v: ir::ValueId) -> DecompResult {
    if b.with_args(op, |a| a.bool("invert"))?.unwrap_or(false) {
        return one(b.call(op::LOGICAL_NOT, &[v.into()]));
    }
    one(Ok(v))
}

/// `mvlgamma(x, p) = Σⱼ lgamma(x − j/2) + p(p−1)/4 · ln π` for `j` in `0..p`, the terms added
/// from `j = p − 1` down as PyTorch adds them. PyTorch also refuses an `x` not above `(p−1)/2`,
/// a check of the values that a decomposition cannot make; there the result is the sum's
/// (infinite or NaN) value.
fn mvlgamma(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "self")?;
    let p = b.with_args(op, |a| a.int("p"))?.ok_or("mvlgamma: p must be constant")?;
    if p < 1 {
        return Err("mvlgamma: p has to be greater than or equal to 1".into());
    }
    let mut acc: Option<ir::ValueId> = None;
    for j in (0..p).rev() {
        let shifted = b.call(op::SUB_SCALAR, &[x.into(), Arg::A(Attribute::float(j as f64 / 2.0))])?;
        let g = b.call(op::LGAMMA, &[shifted.into()])?;
        acc = Some(match acc {
            None => g,
            Some(a) => b.call(op::ADD_TENSOR, &[a.into(), g.into()])?,
        });
    }
    let acc = acc.ok_or("mvlgamma: no terms")?;
    let c = (p * (p - 1)) as f64 / 4.0 * std::f64::consts::PI.ln();
    one(b.call(op::ADD_SCALAR, &[acc.into(), Arg::A(Attribute::float(c))]))
}
