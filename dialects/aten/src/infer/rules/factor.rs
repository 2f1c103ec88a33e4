//! Inference rules of the factorization ops (`linalg_inv`, `det`, `slogdet`, `linalg_solve`,
//! `linalg_cholesky`, `linalg_eigh`, the SVDs, pseudo-inverses and LU factors): the batch dimensions of
//! their matrix operand carried through, the matrix dimensions as each op returns them.

use super::super::*;
use super::*;
use crate::op;
use ir::OpRef;

/// The smaller of two dimensions when both are static.
fn min_dim(a: &Dim, b: &Dim) -> Dim {
    match (a.as_static(), b.as_static()) {
        (Some(x), Some(y)) => Dim::Static(x.min(y)),
        _ => Dim::Unknown,
    }
}

/// `lead` followed by `tail`.
fn cat(lead: &[Dim], tail: &[Dim]) -> Vec<Dim> {
    lead.iter().chain(tail).cloned().collect()
}

/// The result types of `this`, of the family `head`, if this file's rules cover it.
pub(super) fn infer(this: OpRef, head: OpRef, a: &Args, r: &Ranges) -> Result<Option<Vec<Type>>, String> {
    const OPS: &[OpRef] = &[
        op::DET, op::INVERSE, op::LINALG_CHOLESKY, op::LINALG_DET, op::LINALG_EIGH, op::LINALG_EIGVALSH, op::LINALG_INV,
        op::LINALG_PINV, op::LINALG_SLOGDET, op::LINALG_SOLVE, op::LINALG_SOLVE_EX, op::LINALG_SVD, op::LINALG_SVDVALS,
        op::LOGDET, op::PINVERSE, op::SLOGDET, op::SVD, op::LINALG_LU_FACTOR, op::_LU_WITH_INFO, op::LU_SOLVE,
    ];
    if !OPS.contains(&head) {
        return super::views::infer(this, head, a);
    }
    let s = a.tensor("A").or_else(|| self_or(a));
    let dt = s.as_ref().and_then(|t| t.dtype);
    // The batch dimensions and the matrix's rows and columns, when the rank is known.
    let parts = s.as_ref().and_then(|t| t.shape.clone()).map(|sh| {
        if sh.len() < 2 {
            return Err(format!("{}: expects a tensor of matrices, got {}-d", this.name(), sh.len()));
        }
        let n = sh.len();
        Ok((sh[..n - 2].to_vec(), sh[n - 2].clone(), sh[n - 1].clone()))
    });
    let parts = match parts {
        Some(p) => Some(p?),
        None => None,
    };
    let shape = |f: &dyn Fn(&[Dim], &Dim, &Dim) -> Vec<Dim>| parts.as_ref().map(|(l, m, n)| f(l, m, n));
    let types = match head {
        op::LINALG_INV | op::INVERSE | op::LINALG_CHOLESKY => vec![tensor(dt, shape(&|l, m, n| cat(l, &[m.clone(), n.clone()])))],
        op::LINALG_DET | op::DET | op::LOGDET => vec![tensor(dt, shape(&|l, _, _| l.to_vec()))],
        op::LINALG_SLOGDET | op::SLOGDET => vec![tensor(dt, shape(&|l, _, _| l.to_vec())); 2],
        op::LINALG_EIGH => vec![tensor(dt, shape(&|l, m, _| cat(l, &[m.clone()]))), tensor(dt, shape(&|l, m, n| cat(l, &[m.clone(), n.clone()])))],
        op::LINALG_EIGVALSH => vec![tensor(dt, shape(&|l, m, _| cat(l, &[m.clone()])))],
        op::LINALG_SVDVALS => vec![tensor(dt, shape(&|l, m, n| cat(l, &[min_dim(m, n)])))],
        op::LINALG_SVD | op::SVD => {
            // `linalg_svd(A, full_matrices=True)` returns `U, S, Vh`; `svd(self, some=True)` `U, S, V`.
            let full = if head == op::SVD { !a.bool("some").unwrap_or(true) } else { a.bool("full_matrices").unwrap_or(true) };
            let u = shape(&|l, m, n| cat(l, &[m.clone(), if full { m.clone() } else { min_dim(m, n) }]));
            let sv = shape(&|l, m, n| cat(l, &[min_dim(m, n)]));
            let v = shape(&|l, m, n| {
                let k = if full { n.clone() } else { min_dim(m, n) };
                if head == op::SVD { cat(l, &[n.clone(), k]) } else { cat(l, &[k, n.clone()]) }
            });
            vec![tensor(dt, u), tensor(dt, sv), tensor(dt, v)]
        }
        op::LINALG_LU_FACTOR | op::_LU_WITH_INFO => {
            let mut v = vec![
                tensor(dt, shape(&|l, m, n| cat(l, &[m.clone(), n.clone()]))),
                tensor(Some(DType::I32), shape(&|l, m, n| cat(l, &[min_dim(m, n)]))),
            ];
            if head == op::_LU_WITH_INFO {
                v.push(tensor(Some(DType::I32), shape(&|l, _, _| l.to_vec())));
            }
            v
        }
        op::LU_SOLVE => {
            // `lu_solve(B, LU, pivots)`: `B`'s matrices, batches broadcast with `LU`'s.
            let lu = a.tensor("LU_data").and_then(|t| t.shape);
            let out = match (parts.as_ref(), lu) {
                (Some((l, m, n)), Some(ls)) if ls.len() >= 2 => Some(cat(&broadcast_shapes(l, &ls[..ls.len() - 2], r)?, &[m.clone(), n.clone()])),
                _ => None,
            };
            vec![tensor(dt, out)]
        }
        op::LINALG_PINV | op::PINVERSE => vec![tensor(dt, shape(&|l, m, n| cat(l, &[n.clone(), m.clone()])))],
        op::LINALG_SOLVE | op::LINALG_SOLVE_EX => {
            let b = a.tensor("B");
            let out = match (parts.as_ref(), b.as_ref().and_then(|t| t.shape.clone())) {
                (Some((l, m, _)), Some(bs)) => {
                    let rank = l.len() + 2;
                    if bs.len() == 1 {
                        Some((cat(l, &[m.clone()]), l.clone()))
                    } else if bs.len() + 1 == rank && bs[..] == cat(l, &[m.clone()])[..] {
                        Some((bs.clone(), l.clone()))
                    } else {
                        let k = bs.len();
                        let lead = broadcast_shapes(l, &bs[..k - 2], r)?;
                        Some((cat(&lead, &bs[k - 2..]), lead))
                    }
                }
                _ => None,
            };
            let (x, lead) = match out {
                Some((x, lead)) => (Some(x), Some(lead)),
                None => (None, None),
            };
            let mut v = vec![tensor(dt, x)];
            if head == op::LINALG_SOLVE_EX {
                v.push(tensor(Some(DType::I32), lead));
            }
            v
        }
        _ => return Ok(None),
    };
    Ok(Some(types))
}
