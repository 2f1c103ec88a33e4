//! Inference rules of creation ops, normalization, dropout, attention, symbolic sizes and
//! scalar extraction.

use super::super::*;
use super::*;
use crate::op;
use ir::OpRef;

/// The result types of an op of the family `head`, if this file's rules cover it.
pub(super) fn infer(head: OpRef, a: &Args) -> Result<Option<Vec<Type>>, String> {
    let s = self_or(a);
    let sshape = s.as_ref().and_then(|t| t.shape.clone());
    let sdtype = s.as_ref().and_then(|t| t.dtype);
    let out = match head {
        op::FULL | op::ZEROS | op::ONES | op::EMPTY_MEMORY_FORMAT | op::RAND | op::RANDN | op::EMPTY_STRIDED | op::NEW_FULL
        | op::NEW_ZEROS | op::NEW_ONES | op::NEW_EMPTY => {
            let size = a.dims("size").ok_or("size must be known")?;
            let d = match a.dtype("dtype").flatten() {
                Some(d) => Some(d),
                None if [op::NEW_FULL, op::NEW_ZEROS, op::NEW_ONES, op::NEW_EMPTY].contains(&head) => sdtype,
                None if head == op::FULL => match a.scalar("fill_value") {
                    Some(ScalarVal::Bool(_)) => Some(DType::Bool),
                    Some(ScalarVal::Int(_)) => Some(DType::I64),
                    Some(ScalarVal::Float(_)) => Some(DEFAULT_FLOAT),
                    None => None,
                },
                None => Some(DEFAULT_FLOAT),
            };
            tensor(d, Some(size))
        }
        op::FULL_LIKE | op::ZEROS_LIKE | op::ONES_LIKE | op::EMPTY_LIKE | op::RAND_LIKE | op::RANDN_LIKE => {
            tensor(a.dtype("dtype").flatten().or(sdtype), sshape)
        }
        op::SCALAR_TENSOR => tensor(
            Some(a.dtype("dtype").flatten().unwrap_or(DEFAULT_FLOAT)),
            Some(vec![]),
        ),
        op::ARANGE => {
            let start = if a.schema.arg("start").is_some() {
                a.scalar("start")
            } else {
                Some(ScalarVal::Int(Some(0)))
            };
            let end = a.scalar("end");
            let step = if a.schema.arg("step").is_some() {
                a.scalar("step")
            } else {
                Some(ScalarVal::Int(Some(1)))
            };
            let any_float = [start, end, step]
                .iter()
                .any(|s| matches!(s, Some(ScalarVal::Float(_))));
            let d = a.dtype("dtype").flatten().or(Some(if any_float {
                DEFAULT_FLOAT
            } else {
                DType::I64
            }));
            let len = match (
                start.and_then(ScalarVal::as_f64),
                end.and_then(ScalarVal::as_f64),
                step.and_then(ScalarVal::as_f64),
            ) {
                (Some(b), Some(e), Some(st)) if st != 0.0 => {
                    Dim::Static(((e - b) / st).ceil().max(0.0) as i64)
                }
                (Some(_), Some(_), Some(_)) => return Err("arange: step must be nonzero".into()),
                _ => Dim::Unknown,
            };
            tensor(d, Some(vec![len]))
        }
        op::LINSPACE | op::LOGSPACE | op::EYE => {
            // An out variant's result is its `out`.
            if let Some(&i) = a.schema.out_args().first() {
                return one(a.tensor(&a.schema.args[i].name).map(Type::tensor_of).unwrap_or_else(Type::unknown_tensor));
            }
            let d = Some(a.dtype("dtype").flatten().unwrap_or(DEFAULT_FLOAT));
            let dim = |name: &str| a.int(name).map(Dim::Static).unwrap_or(Dim::Unknown);
            if head == op::EYE {
                let n = dim("n");
                let m = if a.schema.arg("m").is_some() { dim("m") } else { n.clone() };
                tensor(d, Some(vec![n, m]))
            } else {
                tensor(d, Some(vec![dim("steps")]))
            }
        }
        op::NATIVE_LAYER_NORM => {
            let ns = a
                .dims("normalized_shape")
                .ok_or("normalized_shape must be known")?;
            let stat = sshape.as_ref().map(|sh| {
                let keep = sh.len().saturating_sub(ns.len());
                let mut out = sh[..keep].to_vec();
                out.extend(std::iter::repeat_n(Dim::Static(1), sh.len() - keep));
                out
            });
            let sd = sdtype.map(float_result);
            return Ok(Some(vec![
                tensor(sdtype, sshape),
                tensor(sd, stat.clone()),
                tensor(sd, stat),
            ]));
        }
        op::NATIVE_GROUP_NORM => {
            let (n, g) = (
                a.dims("N")
                    .and_then(|v| v.first().cloned())
                    .unwrap_or(Dim::Unknown),
                a.int("group").map(Dim::Static).unwrap_or(Dim::Unknown),
            );
            let stat = Some(vec![n, g]);
            return Ok(Some(vec![
                tensor(sdtype, sshape),
                tensor(sdtype, stat.clone()),
                tensor(sdtype, stat),
            ]));
        }
        op::_NATIVE_BATCH_NORM_LEGIT_NO_TRAINING
        | op::_NATIVE_BATCH_NORM_LEGIT
        | op::NATIVE_BATCH_NORM
        | op::_NATIVE_BATCH_NORM_LEGIT_FUNCTIONAL => {
            let c = sshape
                .as_ref()
                .and_then(|sh| sh.get(1).cloned())
                .unwrap_or(Dim::Unknown);
            let training = a.bool("training").unwrap_or(false);
            let stat = if training || head == op::NATIVE_BATCH_NORM {
                Some(vec![c])
            } else {
                Some(vec![Dim::Static(0)])
            };
            let mut out = vec![
                tensor(sdtype, sshape),
                tensor(sdtype, stat.clone()),
                tensor(sdtype, stat),
            ];
            if head == op::_NATIVE_BATCH_NORM_LEGIT_FUNCTIONAL {
                let rm = a
                    .tensor("running_mean")
                    .map(Type::tensor_of)
                    .unwrap_or_else(Type::unknown_tensor);
                let rv = a
                    .tensor("running_var")
                    .map(Type::tensor_of)
                    .unwrap_or_else(Type::unknown_tensor);
                out.push(rm);
                out.push(rv);
            }
            return Ok(Some(out));
        }
        op::NATIVE_DROPOUT => {
            return Ok(Some(vec![
                tensor(sdtype, sshape.clone()),
                tensor(Some(DType::Bool), sshape),
            ]));
        }
        op::SCALED_DOT_PRODUCT_ATTENTION => {
            let (Some(q), Some(v)) = (a.tensor("query"), a.tensor("value")) else {
                return Ok(None);
            };
            let shape = match (q.shape, v.shape) {
                (Some(mut qs), Some(vs)) if !qs.is_empty() && !vs.is_empty() => {
                    let n = qs.len();
                    qs[n - 1] = vs[vs.len() - 1].clone();
                    Some(qs)
                }
                _ => None,
            };
            tensor(q.dtype, shape)
        }
        op::SYM_SIZE | op::SYM_NUMEL | op::SYM_STRIDE | op::SYM_STORAGE_OFFSET => Type::int(),
        op::_LOCAL_SCALAR_DENSE | op::ITEM => match sdtype.map(DType::category) {
            Some(DTypeCategory::Floating) => Type::float(),
            Some(DTypeCategory::Bool) => Type::bool(),
            Some(DTypeCategory::Integral) => Type::int(),
            Some(DTypeCategory::Complex) | None => return Ok(None),
        },
        op::_ASSERT_TENSOR_METADATA | op::_ASSERT_ASYNC => return Ok(Some(vec![])),
        _ => return Ok(None),
    };
    one(out)
}
