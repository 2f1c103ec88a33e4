//! Per-op inference rules of the ATen families not declared through the
//! [`ShapeInference`](super::ShapeInference) interface, dispatched by family head
//! ([`head_of`](super::families::head_of)): comparisons, binary arithmetic, shape-preserving
//! unary ops, casts and reductions here; matrix products, convolutions and pooling in
//! `linalg.rs`; factorizations (inverses, determinants, solves, eigen and singular value
//! decompositions) in `factor.rs`; views, shape ops and indexing in `views.rs`; creation, normalization,
//! attention and scalars in `other.rs`.

mod complex;
mod factor;
mod linalg;
mod other;
mod views;

use super::*;
use super::families::*;
use crate::op;
use ir::OpRef;

pub(super) fn tensor(dtype: Option<DType>, shape: Option<Vec<Dim>>) -> Type {
    Type::tensor_of(TensorType { dtype, shape })
}

pub(super) fn promote_arg(t: &TensorType) -> Option<PromoteArg> {
    Some(PromoteArg::Tensor {
        dtype: t.dtype?,
        zero_dim: t.rank() == Some(0),
    })
}

/// Elementwise promotion over the tensor and scalar arguments named in `names`.
pub(super) fn elementwise(
    a: &Args,
    names: &[&str],
    r: &Ranges,
) -> Result<(Option<DType>, Option<Vec<Dim>>), String> {
    let mut shapes = Vec::new();
    let mut pargs = Vec::new();
    let mut unknown_dtype = false;
    for &n in names {
        if a.is_none(n)
            && a.schema
                .arg(n)
                .is_some_and(|(_, arg)| matches!(arg.ty, ir::schema::SchemaType::Optional(_)))
        {
            continue;
        }
        if let Some(t) = a.tensor(n) {
            shapes.push(t.shape.clone());
            match promote_arg(&t) {
                Some(p) => pargs.push(p),
                None => unknown_dtype = true,
            }
        } else if let Some(s) = a.scalar(n) {
            pargs.push(PromoteArg::Scalar(s.category()));
        } else if a.value(n).is_some() {
            // A value of a type inference does not follow (`!prim.any`).
            unknown_dtype = true;
            shapes.push(None);
        }
    }
    let shape = broadcast_all(&shapes, r)?;
    let dtype = if unknown_dtype {
        None
    } else {
        result_type(&pargs)
    };
    Ok((dtype, shape))
}

pub(super) fn self_or(a: &Args) -> Option<TensorType> {
    a.tensor("self").or_else(|| a.tensor("input"))
}

pub(super) fn one(t: Type) -> Result<Option<Vec<Type>>, String> {
    Ok(Some(vec![t]))
}

/// The rules' families: every op whose base name (the schema name without a trailing `_`) is
/// the base name of one of these handles is inferred by the rule of that handle ([`head_of`]).

/// The result types of `this`, an op of the family `head` (see [`head_of`]).
pub(super) fn infer_key(
    this: OpRef,
    head: OpRef,
    a: &Args,
    r: &Ranges,
) -> Result<Option<Vec<Type>>, String> {
    let s = self_or(a);
    let sshape = s.as_ref().and_then(|t| t.shape.clone());
    let sdtype = s.as_ref().and_then(|t| t.dtype);
    if let Some(r) = complex::infer(this, a) {
        return r;
    }
    // `_unwrap_optional` is the identity on a value that is present.
    if head == op::_UNWRAP_OPTIONAL {
        return Ok(a.tensor("optional").map(|t| vec![tensor(t.dtype, t.shape)]));
    }
    // Comparisons and logical ops: broadcast, bool result.
    if COMPARE.contains(&head) {
        let (_, shape) = elementwise(a, &["self", "other"], r)?;
        return one(tensor(Some(DType::Bool), shape));
    }
    if BOOL_UNARY.contains(&head) {
        return one(tensor(Some(DType::Bool), sshape));
    }
    match this {
        op::DIV_TENSOR | op::DIV_SCALAR | op::TRUE_DIVIDE_TENSOR | op::TRUE_DIVIDE_SCALAR => {
            let (d, shape) = elementwise(a, &["self", "other"], r)?;
            return one(tensor(d.map(float_result), shape));
        }
        op::ADDCMUL => {
            let (d, shape) = elementwise(a, &["self", "tensor1", "tensor2"], r)?;
            return one(tensor(d, shape));
        }
        op::DIV_TENSOR_MODE | op::DIV_SCALAR_MODE => {
            let (d, shape) = elementwise(a, &["self", "other"], r)?;
            let d = if a.is_none("rounding_mode") {
                d.map(float_result)
            } else {
                d
            };
            return one(tensor(d, shape));
        }
        _ => {}
    }
    if BINARY.contains(&head) {
        let mut names = vec!["self", "other"];
        if head == op::POW_SCALAR {
            names = vec!["self", "exponent"];
        }
        if head == op::LERP_SCALAR {
            names = vec!["self", "end", "weight"];
        }
        if this == op::POW_SCALAR {
            names = vec!["self", "exponent"];
        }
        let (d, shape) = elementwise(a, &names, r)?;
        let d = if head == op::ATAN2 {
            d.map(float_result)
        } else {
            d
        };
        return one(tensor(d, shape));
    }
    if SAME_UNARY.contains(&head) && s.is_some() {
        let mut shape = sshape;
        if head == op::MASKED_FILL_SCALAR {
            if let (Some(sh), Some(mask)) = (shape.clone(), a.tensor("mask")) {
                if let Some(ms) = mask.shape {
                    shape = Some(broadcast_shapes(&sh, &ms, r)?);
                }
            }
        }
        return one(tensor(sdtype, shape));
    }
    let out = match head {
        op::WHERE => {
            let (d, _) = elementwise(a, &["self", "other"], r)?;
            let (_, shape) = elementwise(a, &["condition", "self", "other"], r)?;
            tensor(d, shape)
        }
        // The bounds take part in type promotion: an int tensor clamped by a float is float.
        op::CLAMP | op::CLAMP_MIN | op::CLAMP_MAX => {
            let (d, shape) = elementwise(a, &["self", "min", "max"], r)?;
            tensor(d, shape)
        }
        op::_TO_COPY | op::TO_DEVICE => {
            let d = match this {
                op::TO_OTHER => a.tensor("other").and_then(|t| t.dtype),
                _ => a.dtype("dtype").unwrap_or(None).or(sdtype),
            };
            tensor(d, sshape)
        }
        op::TYPE_AS => tensor(a.tensor("other").and_then(|t| t.dtype), sshape),
        // `pow(x, 2)`: a bool tensor squares as int64.
        op::SQUARE => tensor(sdtype.map(|d| if d == DType::Bool { DType::I64 } else { d }), sshape),
        op::SOFTMAX_INT | op::LOG_SOFTMAX_INT => tensor(a.dtype("dtype").flatten().or(sdtype), sshape),
        op::CUMSUM | op::CUMPROD => {
            let d = a
                .dtype("dtype")
                .flatten()
                .or(sdtype.map(|d| if d.is_floating() { d } else { DType::I64 }));
            tensor(d, sshape)
        }
        op::SUM | op::PROD | op::MEAN | op::AMAX | op::AMIN | op::ANY | op::ALL | op::LOGSUMEXP | op::VAR | op::STD
        | op::ARGMAX | op::ARGMIN | op::NANSUM | op::NORM_SCALAR | op::LINALG_VECTOR_NORM => {
            let dims = if a.schema.arg("dim").is_some_and(|(_, x)| {
                !matches!(x.ty.unwrap_optional(), ir::schema::SchemaType::List { .. })
            }) {
                a.int("dim").map(|d| vec![d])
            } else if a.is_none("dim") {
                None
            } else {
                a.ints("dim")
            };
            if a.schema.arg("dim").is_some() && !a.is_none("dim") && dims.is_none() {
                return Ok(None);
            }
            let keepdim = a.bool("keepdim").unwrap_or(false);
            let shape = match &sshape {
                Some(sh) => Some(reduce_shape(sh, dims.as_deref(), keepdim)?),
                None => None,
            };
            let d = match head {
                op::SUM | op::PROD | op::NANSUM => a
                    .dtype("dtype")
                    .flatten()
                    .or(sdtype.map(|d| if d.is_floating() { d } else { DType::I64 })),
                op::MEAN | op::LOGSUMEXP | op::VAR | op::STD | op::NORM_SCALAR | op::LINALG_VECTOR_NORM => {
                    a.dtype("dtype").flatten().or(sdtype.map(float_result))
                }
                op::ANY | op::ALL => Some(DType::Bool),
                op::ARGMAX | op::ARGMIN => Some(DType::I64),
                _ => sdtype,
            };
            tensor(d, shape)
        }
        op::MAX | op::MIN if this == op::MAX_DIM || this == op::MIN_DIM => {
            let dim = a.int("dim").ok_or("dimension must be a constant")?;
            let keepdim = a.bool("keepdim").unwrap_or(false);
            let shape = match &sshape {
                Some(sh) => Some(reduce_shape(sh, Some(&[dim]), keepdim)?),
                None => None,
            };
            return Ok(Some(vec![
                tensor(sdtype, shape.clone()),
                tensor(Some(DType::I64), shape),
            ]));
        }
        op::MAX | op::MIN if this == op::MAX || this == op::MIN => tensor(sdtype, Some(vec![])),
        op::MAX | op::MIN => {
            let (d, shape) = elementwise(a, &["self", "other"], r)?;
            tensor(d, shape)
        }
        op::SORT => {
            return Ok(Some(vec![
                tensor(sdtype, sshape.clone()),
                tensor(Some(DType::I64), sshape),
            ]));
        }
        op::TOPK => {
            let k = a
                .dims("k")
                .and_then(|v| v.first().cloned())
                .unwrap_or(Dim::Unknown);
            let dim = a.int("dim").unwrap_or(-1);
            let shape = sshape.map(|mut sh| {
                if let Some(i) = norm_dim(dim, sh.len()) {
                    sh[i] = k;
                }
                sh
            });
            return Ok(Some(vec![
                tensor(sdtype, shape.clone()),
                tensor(Some(DType::I64), shape),
            ]));
        }
        _ => return linalg::infer(this, head, a, r),
    };
    one(out)
}
