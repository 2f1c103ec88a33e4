//! The multi-label margin loss: `multilabel_margin_loss` and its `_forward` form (which also
//! returns `is_target`, each class marked 1 where the sample's target list names it). A
//! sample's target list ends at its first `-1`; every listed class `j` is held against every
//! class `i` not listed, `Σ max(0, 1 − (x[j] − x[i])) / C`, as tensor ops over `[N, K, C]`
//! (list position by class) so the lists' data-dependent lengths need no control flow.
//! Target values outside `[-1, C)` are not checked (a value check a decomposition cannot make);
//! they name no class.

use super::composite::static_shape;
use super::decompose::{DecompResult, DecompositionTable, cast, input};
use super::rewrite::{Arg, OpBuilder};
use super::stacking::{int, ints};
use dialect_aten::op;
use ir::{Attribute, DType, OpId};

/// Adds the margin-loss decompositions to `t`.
pub(super) fn add(t: &mut DecompositionTable) {
    t.insert(op::MULTILABEL_MARGIN_LOSS, |b, op| Ok(multilabel(b, op)?.map(|v| vec![v[0]])))
        .insert(op::MULTILABEL_MARGIN_LOSS_FORWARD, multilabel);
}

fn multilabel(b: &mut OpBuilder, op: OpId) -> DecompResult {
    const WHAT: &str = "multilabel_margin_loss";
    let (x, t) = (input(b, op, "self")?, input(b, op, "target")?);
    let red = b.with_args(op, |a| a.int("reduction"))?.unwrap_or(1);
    if !(0..=2).contains(&red) {
        return Err(format!("{WHAT}: reduction must be 0, 1 or 2, got {red}"));
    }
    let dt = b.dtype(x).ok_or(format!("{WHAT}: the input's dtype is unknown"))?;
    if !dt.is_floating() {
        return Err(format!("{WHAT}: \"multilabel_margin_loss_forward_out_frame\" not implemented for '{}'", dt.torch_name()));
    }
    if b.dtype(t) != Some(DType::I64) {
        return Err(format!("{WHAT}: the target must be int64"));
    }
    let xs = static_shape(b, x, WHAT)?;
    if static_shape(b, t, WHAT)? != xs {
        return Err(format!("{WHAT}: inconsistent target size: the target must have the input's shape {xs:?}"));
    }
    let (n, c) = match xs.as_slice() {
        [] => (1, 1),
        [c] => (1, *c),
        [n, c] => (*n, *c),
        _ => return Err(format!("{WHAT}: expected a 0-d, 1-d or 2-d input, got shape {xs:?}")),
    };
    if c == 0 && n > 0 {
        return Err(format!("{WHAT}: expected non-empty vector input of size ({n}, {c})"));
    }
    let x2 = b.call(op::RESHAPE, &[x.into(), ints(&[n, c])])?;
    let t2 = b.call(op::RESHAPE, &[t.into(), ints(&[n, c])])?;
    // Positions before the first -1 hold targets.
    let neg = b.call(op::EQ_SCALAR, &[t2.into(), int(-1)])?;
    let seen = b.call(op::CUMSUM, &[neg.into(), int(1)])?;
    let valid = b.call(op::EQ_SCALAR, &[seen.into(), int(0)])?;
    // hit[n, k, i]: position k of sample n names class i.
    let classes = b.call(op::ARANGE, &[int(c), Arg::A(dialect_prim::kinds::dtype(DType::I64))])?;
    let tu = b.call(op::UNSQUEEZE, &[t2.into(), int(2)])?;
    let hit = b.call(op::EQ_TENSOR, &[tu.into(), classes.into()])?;
    let vu = b.call(op::UNSQUEEZE, &[valid.into(), int(2)])?;
    let hit = b.call(op::LOGICAL_AND, &[hit.into(), vu.into()])?;
    let is_target = b.call(op::ANY_DIM, &[hit.into(), int(1)])?;
    // x at each listed class (0 where the position holds none; those terms are masked).
    let zero = b.call(op::ZEROS_LIKE, &[t2.into()])?;
    let tc = b.call(op::WHERE_SELF, &[valid.into(), t2.into(), zero.into()])?;
    let tc = b.call(op::CLAMP, &[tc.into(), int(0), int((c - 1).max(0))])?;
    let xj = b.call(op::GATHER, &[x2.into(), int(1), tc.into()])?;
    let xj = b.call(op::UNSQUEEZE, &[xj.into(), int(2)])?;
    let xi = b.call(op::UNSQUEEZE, &[x2.into(), int(1)])?;
    let diff = b.call(op::SUB_TENSOR, &[xj.into(), xi.into()])?;
    let m = b.call(op::RSUB_SCALAR, &[diff.into(), Arg::A(Attribute::float(1.0))])?;
    let m = b.call(op::CLAMP, &[m.into(), Arg::A(Attribute::float(0.0))])?;
    let other = b.call(op::LOGICAL_NOT, &[is_target.into()])?;
    let other = b.call(op::UNSQUEEZE, &[other.into(), int(1)])?;
    let keep = b.call(op::LOGICAL_AND, &[vu.into(), other.into()])?;
    let zero = b.call(op::ZEROS_LIKE, &[m.into()])?;
    let m = b.call(op::WHERE_SELF, &[keep.into(), m.into(), zero.into()])?;
    let per = b.call(op::SUM_DIM_INTLIST, &[m.into(), ints(&[1, 2])])?;
    let per = b.call(op::DIV_SCALAR, &[per.into(), Arg::A(Attribute::float(c.max(1) as f64))])?;
    let loss = match red {
        0 => {
            let s: Vec<i64> = if xs.len() <= 1 { vec![] } else { vec![n] };
            b.call(op::RESHAPE, &[per.into(), ints(&s)])?
        }
        1 => b.call(op::MEAN_DIM, &[per.into(), ints(&[0])])?,
        _ => b.call(op::SUM_DIM_INTLIST, &[per.into(), ints(&[0])])?,
    };
    let is_target = cast(b, is_target, dt)?;
    let is_target = b.call(op::RESHAPE, &[is_target.into(), ints(&xs)])?;
    Ok(Some(vec![loss, is_target]))
}
