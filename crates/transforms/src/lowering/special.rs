//! The `special_` spellings of special functions that have an interpreter kernel under their
//! ATen name: `special_i0` (`i0`), `special_polygamma` (`polygamma`), `special_gammainc`
//! (`igamma`) and `special_gammaincc` (`igammac`), and `matrix_exp` (`linalg_matrix_exp`).

use super::decompose::{DecompositionTable, input, one};
use super::stacking::int;
use dialect_aten::op;

/// Adds the special-function decompositions to `t`.
pub(super) fn add(t: &mut DecompositionTable) {
    t.insert(op::SPECIAL_I0, |b, op| {
        let x = input(b, op, "self")?;
        one(b.call(op::I0, &[x.into()]))
    })
    .insert(op::SPECIAL_POLYGAMMA, |b, op| {
        let x = input(b, op, "self")?;
        let n = b.with_args(op, |a| a.int("n"))?.ok_or("special_polygamma: n must be constant")?;
        one(b.call(op::POLYGAMMA, &[int(n), x.into()]))
    })
    .insert(op::SPECIAL_GAMMAINC, |b, op| {
        let (x, y) = (input(b, op, "self")?, input(b, op, "other")?);
        one(b.call(op::IGAMMA, &[x.into(), y.into()]))
    })
    .insert(op::MATRIX_EXP, |b, op| {
        let x = input(b, op, "self")?;
        one(b.call(op::LINALG_MATRIX_EXP, &[x.into()]))
    })
    .insert(op::SPECIAL_GAMMAINCC, |b, op| {
        let (x, y) = (input(b, op, "self")?, input(b, op, "other")?);
        one(b.call(op::IGAMMAC, &[x.into(), y.into()]))
    });
}
