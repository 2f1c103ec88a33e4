//! Per-op inference rules of the ATen families not declared through the
//! [`ShapeInference`](super::ShapeInference) interface: comparisons, binary arithmetic,
//! shape-preserving unary ops, reductions, views, matrix products, convolutions and the rest.

use super::*;

pub(super) fn tensor(dtype: Option<DType>, shape: Option<Vec<Dim>>) -> Type {
    Type::tensor_of(TensorType { dtype, shape })
}

pub(super) fn promote_arg(t: &TensorType) -> Option<PromoteArg> {
    Some(PromoteArg::Tensor {
        dtype: t.dtype?,
        zero_dim: t.rank() == Some(0),
    })
}

const SAME_UNARY: &[&str] = &[
    "neg",
    "abs",
    "relu",
    "relu6",
    "ceil",
    "floor",
    "round",
    "trunc",
    "sign",
    "sgn",
    "bitwise_not",
    "clone",
    "contiguous",
    "alias",
    "leaky_relu",
    "hardtanh",
    "tril",
    "triu",
    "dropout",
    "detach",
    "fill",
    "flip",
    "roll",
    "frac",
    "nan_to_num",
    "lift_fresh_copy",
    "fix",
    "positive",
    "_softmax",
    "_log_softmax",
    "alpha_dropout",
    "feature_dropout",
    "_safe_softmax",
    "celu_",
    "logcumsumexp",
    "cummax",
    "_assert_scalar",
    "copy",
    "masked_fill",
    "index_fill",
    "scatter",
    "scatter_add",
    "scatter_reduce",
    "index_put",
    "index_add",
    "index_copy",
    "masked_scatter",
    "slice_scatter",
    "select_scatter",
    "diagonal_scatter",
    "constant_pad_nd_same",
    "layer_norm",
    "batch_norm",
    "group_norm",
    "instance_norm",
    "rms_norm",
    "dropout_",
    "fill_",
    "zero",
    "bernoulli",
    "uniform",
    "normal_",
    "rand_like",
    "randn_like",
    "empty_like",
];

const BOOL_UNARY: &[&str] = &[
    "logical_not",
    "isnan",
    "isinf",
    "isfinite",
    "signbit",
    "isneginf",
    "isposinf",
];

const COMPARE: &[&str] = &[
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "logical_and",
    "logical_or",
    "logical_xor",
];

const BINARY: &[&str] = &[
    "add",
    "sub",
    "mul",
    "rsub",
    "remainder",
    "fmod",
    "maximum",
    "minimum",
    "fmax",
    "fmin",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "__and__",
    "__or__",
    "__xor__",
    "floor_divide",
    "copysign",
    "hypot",
    "atan2",
    "xlogy",
    "lerp",
    "pow",
    "bitwise_left_shift",
    "bitwise_right_shift",
    "__lshift__",
    "__rshift__",
    "nextafter",
];

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

pub(super) fn infer_key(
    key: &str,
    name: &str,
    a: &Args,
    r: &Ranges,
) -> Result<Option<Vec<Type>>, String> {
    let base = name.trim_end_matches('_');
    let s = self_or(a);
    let sshape = s.as_ref().and_then(|t| t.shape.clone());
    let sdtype = s.as_ref().and_then(|t| t.dtype);
    // Comparisons and logical ops: broadcast, bool result.
    if COMPARE.contains(&base) {
        let (_, shape) = elementwise(a, &["self", "other"], r)?;
        return one(tensor(Some(DType::Bool), shape));
    }
    if BOOL_UNARY.contains(&base) {
        return one(tensor(Some(DType::Bool), sshape));
    }
    match key {
        "div.Tensor" | "div.Scalar" | "true_divide.Tensor" | "true_divide.Scalar" => {
            let (d, shape) = elementwise(a, &["self", "other"], r)?;
            return one(tensor(d.map(float_result), shape));
        }
        "addcmul" => {
            let (d, shape) = elementwise(a, &["self", "tensor1", "tensor2"], r)?;
            return one(tensor(d, shape));
        }
        "div.Tensor_mode" | "div.Scalar_mode" => {
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
    if BINARY.contains(&base) {
        let mut names = vec!["self", "other"];
        if base == "pow" {
            names = vec!["self", "exponent"];
        }
        if base == "lerp" {
            names = vec!["self", "end", "weight"];
        }
        if key == "pow.Scalar" {
            names = vec!["self", "exponent"];
        }
        let (d, shape) = elementwise(a, &names, r)?;
        let d = if base == "atan2" {
            d.map(float_result)
        } else {
            d
        };
        return one(tensor(d, shape));
    }
    if SAME_UNARY.contains(&base) && s.is_some() {
        let mut shape = sshape;
        if base == "masked_fill" {
            if let (Some(sh), Some(mask)) = (shape.clone(), a.tensor("mask")) {
                if let Some(ms) = mask.shape {
                    shape = Some(broadcast_shapes(&sh, &ms, r)?);
                }
            }
        }
        return one(tensor(sdtype, shape));
    }
    let out = match base {
        "where" => {
            let (d, _) = elementwise(a, &["self", "other"], r)?;
            let (_, shape) = elementwise(a, &["condition", "self", "other"], r)?;
            tensor(d, shape)
        }
        // The bounds take part in type promotion: an int tensor clamped by a float is float.
        "clamp" | "clamp_min" | "clamp_max" => {
            let (d, shape) = elementwise(a, &["self", "min", "max"], r)?;
            tensor(d, shape)
        }
        "_to_copy" | "to" => {
            let d = match key {
                "to.other" => a.tensor("other").and_then(|t| t.dtype),
                _ => a.dtype("dtype").unwrap_or(None).or(sdtype),
            };
            tensor(d, sshape)
        }
        "type_as" => tensor(a.tensor("other").and_then(|t| t.dtype), sshape),
        // `pow(x, 2)`: a bool tensor squares as int64.
        "square" => tensor(sdtype.map(|d| if d == DType::Bool { DType::I64 } else { d }), sshape),
        "softmax" | "log_softmax" => tensor(a.dtype("dtype").flatten().or(sdtype), sshape),
        "cumsum" | "cumprod" => {
            let d = a
                .dtype("dtype")
                .flatten()
                .or(sdtype.map(|d| if d.is_floating() { d } else { DType::I64 }));
            tensor(d, sshape)
        }
        "sum" | "prod" | "mean" | "amax" | "amin" | "any" | "all" | "logsumexp" | "var" | "std"
        | "argmax" | "argmin" | "nansum" | "norm" | "linalg_vector_norm" => {
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
            let d = match base {
                "sum" | "prod" | "nansum" => a
                    .dtype("dtype")
                    .flatten()
                    .or(sdtype.map(|d| if d.is_floating() { d } else { DType::I64 })),
                "mean" | "logsumexp" | "var" | "std" | "norm" | "linalg_vector_norm" => {
                    a.dtype("dtype").flatten().or(sdtype.map(float_result))
                }
                "any" | "all" => Some(DType::Bool),
                "argmax" | "argmin" => Some(DType::I64),
                _ => sdtype,
            };
            tensor(d, shape)
        }
        "max" | "min" if key.ends_with(".dim") => {
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
        "max" | "min" if key == "max" || key == "min" => tensor(sdtype, Some(vec![])),
        "max" | "min" => {
            let (d, shape) = elementwise(a, &["self", "other"], r)?;
            tensor(d, shape)
        }
        "sort" => {
            return Ok(Some(vec![
                tensor(sdtype, sshape.clone()),
                tensor(Some(DType::I64), sshape),
            ]));
        }
        "topk" => {
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
        "mm" | "bmm" | "matmul" | "dot" | "mv" | "vdot" => {
            let (Some(x), Some(y)) = (
                s.clone(),
                a.tensor(if base == "mv" {
                    "vec"
                } else if base == "mm" || base == "bmm" {
                    "mat2"
                } else {
                    "other"
                })
                .or_else(|| a.tensor("tensor")),
            ) else {
                return Ok(None);
            };
            let d = match (x.dtype, y.dtype) {
                (Some(p), Some(q)) => Some(DType::promote(p, q)),
                _ => None,
            };
            let shape = match (&x.shape, &y.shape) {
                (Some(p), Some(q)) => {
                    if base == "mm" && (p.len() != 2 || q.len() != 2) {
                        return Err(format!(
                            "mm expects 2-d operands, got {} and {}",
                            show_shape(p),
                            show_shape(q)
                        ));
                    }
                    if base == "bmm" {
                        if p.len() != 3 || q.len() != 3 {
                            return Err(format!(
                                "bmm expects 3-d operands, got {} and {}",
                                show_shape(p),
                                show_shape(q)
                            ));
                        }
                        let b = broadcast_dim(&p[0], &q[0], r).ok_or_else(|| {
                            format!("bmm batch sizes differ: {} vs {}", p[0], q[0])
                        })?;
                        let mut out = matmul_shape(&p[1..], &q[1..], r)?;
                        out.insert(0, b);
                        Some(out)
                    } else {
                        Some(matmul_shape(p, q, r)?)
                    }
                }
                _ => None,
            };
            tensor(d, shape)
        }
        "addmm" | "baddbmm" | "addmv" | "addbmm" => {
            let (Some(x), Some(y)) = (
                a.tensor(if base == "addmv" {
                    "mat"
                } else if base == "addmm" {
                    "mat1"
                } else {
                    "batch1"
                }),
                a.tensor(if base == "addmv" {
                    "vec"
                } else if base == "addmm" {
                    "mat2"
                } else {
                    "batch2"
                }),
            ) else {
                return Ok(None);
            };
            let shape = match (&x.shape, &y.shape) {
                (Some(p), Some(q)) if base == "baddbmm" && p.len() == 3 && q.len() == 3 => {
                    let mut out = matmul_shape(&p[1..], &q[1..], r)?;
                    out.insert(0, p[0].clone());
                    Some(out)
                }
                (Some(p), Some(q)) => Some(matmul_shape(p, q, r)?),
                _ => None,
            };
            if let (Some(sh), Some(b)) = (&shape, sshape.as_ref()) {
                broadcast_shapes(b, sh, r)?;
            }
            tensor(x.dtype.or(sdtype), shape)
        }
        "linear" => {
            let (Some(x), Some(w)) = (a.tensor("input"), a.tensor("weight")) else {
                return Ok(None);
            };
            let shape = match (&x.shape, &w.shape) {
                (Some(p), Some(q)) if !p.is_empty() => {
                    let mut out = p[..p.len() - 1].to_vec();
                    match q.len() {
                        2 => {
                            if let (Dim::Static(k1), Dim::Static(k2)) = (&p[p.len() - 1], &q[1]) {
                                if k1 != k2 {
                                    return Err(format!(
                                        "linear: input features {k1} do not match weight {}",
                                        show_shape(q)
                                    ));
                                }
                            }
                            out.push(q[0].clone());
                        }
                        1 => {}
                        _ => return Err("linear: weight must be 1-d or 2-d".into()),
                    }
                    Some(out)
                }
                _ => None,
            };
            tensor(x.dtype, shape)
        }
        "convolution" | "conv1d" | "conv2d" | "conv3d" | "conv_transpose1d"
        | "conv_transpose2d" | "conv_transpose3d" => {
            let (Some(x), Some(w)) = (a.tensor("input"), a.tensor("weight")) else {
                return Ok(None);
            };
            let transposed = a
                .bool("transposed")
                .unwrap_or(base.starts_with("conv_transpose"));
            let (Some(xs), Some(ws)) = (x.shape.clone(), w.shape.clone()) else {
                return one(tensor(x.dtype, None));
            };
            if xs.len() < 2 || ws.len() < 2 {
                return Err("convolution expects input and weight of rank at least 2".into());
            }
            let spatial = ws.len() - 2;
            let batched = xs.len() == ws.len();
            if !batched && xs.len() + 1 != ws.len() {
                return Err(format!(
                    "convolution: input {} and weight {} ranks do not match",
                    show_shape(&xs),
                    show_shape(&ws)
                ));
            }
            let off = if batched { 2 } else { 1 };
            let stride = a.ints("stride").unwrap_or_default();
            let padding = match a.ints("padding") {
                Some(p) => p,
                None => return one(tensor(x.dtype, None)),
            };
            let dilation = a.ints("dilation").unwrap_or_default();
            let out_pad = a.ints("output_padding").unwrap_or_default();
            let groups = a.int("groups").unwrap_or(1);
            let mut out = Vec::new();
            if batched {
                out.push(xs[0].clone());
            }
            out.push(if transposed {
                dim_mul(&ws[1], &Dim::Static(groups))
            } else {
                ws[0].clone()
            });
            for i in 0..spatial {
                let (k, st, p, d) = (
                    ws[2 + i].as_static(),
                    pick(&stride, i, 1),
                    pick(&padding, i, 0),
                    pick(&dilation, i, 1),
                );
                let inp = xs.get(off + i).cloned().unwrap_or(Dim::Unknown);
                let dim = match (k, &inp) {
                    (Some(k), Dim::Static(n)) if transposed => {
                        Dim::Static((n - 1) * st - 2 * p + d * (k - 1) + pick(&out_pad, i, 0) + 1)
                    }
                    (Some(k), _) if !transposed => pool_out(&inp, k, st, p, d, false)?,
                    _ => Dim::Unknown,
                };
                out.push(dim);
            }
            tensor(x.dtype, Some(out))
        }
        "max_pool1d"
        | "max_pool2d"
        | "max_pool3d"
        | "avg_pool1d"
        | "avg_pool2d"
        | "avg_pool3d"
        | "max_pool2d_with_indices"
        | "max_pool3d_with_indices" => {
            let nsp = if base.contains("1d") {
                1
            } else if base.contains("3d") {
                3
            } else {
                2
            };
            let k = a
                .ints("kernel_size")
                .ok_or("kernel_size must be constant")?;
            let st = a.ints("stride").unwrap_or_default();
            let st = if st.is_empty() { k.clone() } else { st };
            let p = a.ints("padding").unwrap_or_default();
            let d = a.ints("dilation").unwrap_or_default();
            let ceil = a.bool("ceil_mode").unwrap_or(false);
            let shape = match &sshape {
                Some(sh) if sh.len() >= nsp => {
                    let lead = sh.len() - nsp;
                    let mut out = sh[..lead].to_vec();
                    for i in 0..nsp {
                        out.push(pool_out(
                            &sh[lead + i],
                            pick(&k, i, 1),
                            pick(&st, i, 1),
                            pick(&p, i, 0),
                            pick(&d, i, 1),
                            ceil,
                        )?);
                    }
                    Some(out)
                }
                Some(sh) => {
                    return Err(format!(
                        "pooling needs at least {nsp} spatial dimensions, got {}",
                        show_shape(sh)
                    ));
                }
                None => None,
            };
            if base.ends_with("with_indices") {
                return Ok(Some(vec![
                    tensor(sdtype, shape.clone()),
                    tensor(Some(DType::I64), shape),
                ]));
            }
            tensor(sdtype, shape)
        }
        "adaptive_avg_pool1d"
        | "adaptive_avg_pool2d"
        | "adaptive_avg_pool3d"
        | "_adaptive_avg_pool2d"
        | "_adaptive_avg_pool3d"
        | "adaptive_max_pool2d" => {
            let os = a.dims("output_size").ok_or("output_size must be known")?;
            let shape = sshape.map(|sh| {
                let lead = sh.len().saturating_sub(os.len());
                let mut out = sh[..lead].to_vec();
                out.extend(os.iter().cloned());
                out
            });
            if base == "adaptive_max_pool2d" {
                return Ok(Some(vec![
                    tensor(sdtype, shape.clone()),
                    tensor(Some(DType::I64), shape),
                ]));
            }
            tensor(sdtype, shape)
        }
        "view" | "reshape" | "_unsafe_view" | "view_copy" | "_reshape_alias" => {
            if key == "view.dtype" {
                return one(tensor(a.dtype("dtype").flatten(), None));
            }
            let Some(sizes) = a.dims(if a.schema.arg("size").is_some() {
                "size"
            } else {
                "shape"
            }) else {
                return one(tensor(sdtype, None));
            };
            tensor(sdtype, Some(view_shape(sshape.as_deref(), &sizes)?))
        }
        "permute" | "permute_copy" => {
            let dims = a.ints("dims").ok_or("permute dims must be constant")?;
            let shape = match &sshape {
                Some(sh) => {
                    if dims.len() != sh.len() {
                        return Err(format!(
                            "permute: {} dims given for a tensor of rank {}",
                            dims.len(),
                            sh.len()
                        ));
                    }
                    let mut seen = vec![false; sh.len()];
                    let mut out = Vec::new();
                    for &d in &dims {
                        let i = norm_dim(d, sh.len())
                            .ok_or_else(|| format!("permute: dimension {d} out of range"))?;
                        if std::mem::replace(&mut seen[i], true) {
                            return Err(format!("permute: dimension {d} repeated"));
                        }
                        out.push(sh[i].clone());
                    }
                    Some(out)
                }
                None => None,
            };
            tensor(sdtype, shape)
        }
        "transpose" | "swapaxes" | "swapdims" => {
            let (d0, d1) = (
                a.int("dim0").ok_or("dims must be constant")?,
                a.int("dim1").ok_or("dims must be constant")?,
            );
            let shape = match sshape {
                Some(mut sh) if sh.is_empty() => Some(std::mem::take(&mut sh)),
                Some(mut sh) => {
                    let i = norm_dim(d0, sh.len())
                        .ok_or_else(|| format!("transpose: dimension {d0} out of range"))?;
                    let j = norm_dim(d1, sh.len())
                        .ok_or_else(|| format!("transpose: dimension {d1} out of range"))?;
                    sh.swap(i, j);
                    Some(sh)
                }
                None => None,
            };
            tensor(sdtype, shape)
        }
        "t" | "numpy_T" => {
            let shape = match sshape {
                Some(mut sh) if sh.len() <= 2 => {
                    sh.reverse();
                    Some(sh)
                }
                Some(sh) => {
                    return Err(format!(
                        "t() expects a tensor of rank at most 2, got {}",
                        show_shape(&sh)
                    ));
                }
                None => None,
            };
            tensor(sdtype, shape)
        }
        "expand" | "expand_copy" | "broadcast_to" => {
            let sizes = a
                .dims(if base == "broadcast_to" {
                    "size"
                } else {
                    "size"
                })
                .ok_or("sizes must be known")?;
            let shape = match &sshape {
                Some(sh) => {
                    if sizes.len() < sh.len() {
                        return Err(format!(
                            "expand: {} sizes for a tensor of rank {}",
                            sizes.len(),
                            sh.len()
                        ));
                    }
                    let lead = sizes.len() - sh.len();
                    let mut out = Vec::new();
                    for (i, d) in sizes.iter().enumerate() {
                        if i < lead || *d != Dim::Static(-1) {
                            if i >= lead {
                                let cur = &sh[i - lead];
                                if let (Dim::Static(c), Dim::Static(n)) = (cur, d) {
                                    if *c != 1 && c != n {
                                        return Err(format!(
                                            "expand: size {c} of dimension {} cannot become {n}",
                                            i - lead
                                        ));
                                    }
                                }
                            }
                            out.push(d.clone());
                        } else {
                            out.push(sh[i - lead].clone());
                        }
                    }
                    Some(out)
                }
                None => Some(
                    sizes
                        .iter()
                        .map(|d| {
                            if *d == Dim::Static(-1) {
                                Dim::Unknown
                            } else {
                                d.clone()
                            }
                        })
                        .collect(),
                ),
            };
            tensor(sdtype, shape)
        }
        "expand_as" => tensor(sdtype, a.tensor("other").and_then(|t| t.shape)),
        "slice" | "slice_copy" | "narrow" => {
            let dim = a.int("dim").unwrap_or(0);
            let shape = match sshape {
                Some(mut sh) => {
                    let i = norm_dim(dim, sh.len())
                        .ok_or_else(|| format!("slice: dimension {dim} out of range"))?;
                    sh[i] = if base == "narrow" {
                        a.dims("length")
                            .and_then(|v| v.first().cloned())
                            .unwrap_or(Dim::Unknown)
                    } else {
                        slice_len(&sh[i], a)
                    };
                    Some(sh)
                }
                None => None,
            };
            tensor(sdtype, shape)
        }
        "select" | "select_copy" => {
            let dim = a.int("dim").ok_or("dim must be constant")?;
            let shape = match sshape {
                Some(mut sh) => {
                    let i = norm_dim(dim, sh.len())
                        .ok_or_else(|| format!("select: dimension {dim} out of range"))?;
                    if let (Some(idx), Dim::Static(n)) = (a.int("index"), &sh[i]) {
                        if idx >= *n || idx < -n {
                            return Err(format!(
                                "select: index {idx} out of range for dimension of size {n}"
                            ));
                        }
                    }
                    sh.remove(i);
                    Some(sh)
                }
                None => None,
            };
            tensor(sdtype, shape)
        }
        "squeeze" | "squeeze_copy" => {
            let dims: Option<Vec<i64>> = match key {
                "squeeze.dim" | "squeeze_copy.dim" => a.int("dim").map(|d| vec![d]),
                "squeeze.dims" | "squeeze_copy.dims" => a.ints("dim"),
                _ => None,
            };
            let shape = match sshape {
                Some(sh) => {
                    let rank = sh.len();
                    let targets: Vec<usize> = match &dims {
                        Some(ds) => ds
                            .iter()
                            .filter_map(|&d| norm_dim(d, rank.max(1)))
                            .filter(|&i| i < rank)
                            .collect(),
                        None => (0..rank).collect(),
                    };
                    if targets.iter().any(|&i| !sh[i].is_static()) {
                        if dims.is_none() {
                            return one(tensor(sdtype, None));
                        }
                    }
                    Some(
                        sh.iter()
                            .enumerate()
                            .filter(|(i, d)| !(targets.contains(i) && **d == Dim::Static(1)))
                            .map(|(_, d)| d.clone())
                            .collect(),
                    )
                }
                None => None,
            };
            tensor(sdtype, shape)
        }
        // The two dimensions go; the diagonal's length is appended.
        "diagonal" | "diagonal_copy" => {
            let (offset, d1, d2) = (a.int("offset").unwrap_or(0), a.int("dim1").unwrap_or(0), a.int("dim2").unwrap_or(1));
            let shape = match sshape {
                Some(sh) => {
                    let (i, j) = match (norm_dim(d1, sh.len()), norm_dim(d2, sh.len())) {
                        (Some(i), Some(j)) if i != j => (i, j),
                        _ => return Err(format!("diagonal: dimensions {d1} and {d2} must differ and be in range")),
                    };
                    let len = match (sh[i].as_static(), sh[j].as_static()) {
                        (Some(r), Some(c)) => {
                            let (r, c) = if offset >= 0 { (r, c - offset) } else { (r + offset, c) };
                            Dim::Static(r.min(c).max(0))
                        }
                        _ => Dim::Unknown,
                    };
                    let mut out: Vec<Dim> = sh.iter().enumerate().filter(|(k, _)| *k != i && *k != j).map(|(_, d)| d.clone()).collect();
                    out.push(len);
                    Some(out)
                }
                None => None,
            };
            tensor(sdtype, shape)
        }
        "unsqueeze" | "unsqueeze_copy" => {
            let dim = a.int("dim").ok_or("dim must be constant")?;
            let shape = match sshape {
                Some(mut sh) => {
                    let i = norm_dim_incl(dim, sh.len())
                        .ok_or_else(|| format!("unsqueeze: dimension {dim} out of range"))?;
                    sh.insert(i, Dim::Static(1));
                    Some(sh)
                }
                None => None,
            };
            tensor(sdtype, shape)
        }
        "flatten" => {
            let (sd, ed) = (
                a.int("start_dim").unwrap_or(0),
                a.int("end_dim").unwrap_or(-1),
            );
            let shape = match sshape {
                Some(sh) if sh.is_empty() => Some(vec![Dim::Static(1)]),
                Some(sh) => {
                    let i = norm_dim(sd, sh.len()).ok_or("flatten: start_dim out of range")?;
                    let j = norm_dim(ed, sh.len()).ok_or("flatten: end_dim out of range")?;
                    if i > j {
                        return Err("flatten: start_dim is after end_dim".into());
                    }
                    let mut out = sh[..i].to_vec();
                    out.push(dim_product(&sh[i..=j]));
                    out.extend(sh[j + 1..].iter().cloned());
                    Some(out)
                }
                None => None,
            };
            tensor(sdtype, shape)
        }
        "unflatten" => {
            let dim = a.int("dim").ok_or("dim must be constant")?;
            let sizes = a.dims("sizes").ok_or("sizes must be known")?;
            let shape = match sshape {
                Some(sh) => {
                    let i = norm_dim(dim, sh.len()).ok_or("unflatten: dim out of range")?;
                    let part = view_shape(Some(&sh[i..=i]), &sizes)?;
                    let mut out = sh[..i].to_vec();
                    out.extend(part);
                    out.extend(sh[i + 1..].iter().cloned());
                    Some(out)
                }
                None => None,
            };
            tensor(sdtype, shape)
        }
        "cat" | "concat" | "concatenate" => {
            let Some(ts) = a.tensors("tensors") else {
                return Ok(None);
            };
            let dim = a.int("dim").unwrap_or(0);
            let mut dtype = None;
            let mut pargs = Vec::new();
            for t in &ts {
                if let Some(p) = promote_arg(t) {
                    pargs.push(p);
                }
            }
            if pargs.len() == ts.len() {
                dtype = ts.iter().filter_map(|t| t.dtype).reduce(DType::promote);
            }
            // Legacy empty 1-d tensors take no part in the shape.
            let shaped: Vec<&TensorType> = ts
                .iter()
                .filter(|t| t.shape.as_deref() != Some(&[Dim::Static(0)][..]))
                .collect();
            let mut shape: Option<Vec<Dim>> = None;
            let mut unknown = false;
            for t in shaped {
                let Some(sh) = &t.shape else {
                    unknown = true;
                    continue;
                };
                match &mut shape {
                    None => shape = Some(sh.clone()),
                    Some(acc) => {
                        if acc.len() != sh.len() {
                            return Err(format!(
                                "cat: tensors of ranks {} and {}",
                                acc.len(),
                                sh.len()
                            ));
                        }
                        let i = norm_dim(dim, acc.len()).ok_or("cat: dim out of range")?;
                        for (k, (x, y)) in acc.iter_mut().zip(sh).enumerate() {
                            if k == i {
                                *x = dim_add(x, y);
                            } else if let (Dim::Static(p), Dim::Static(q)) = (&*x, y) {
                                if p != q {
                                    return Err(format!(
                                        "cat: sizes differ in dimension {k}: {p} vs {q}"
                                    ));
                                }
                            } else if *x != *y && x.is_static() {
                            } else if *x != *y {
                                *x = y.clone();
                            }
                        }
                    }
                }
            }
            tensor(dtype, if unknown { None } else { shape })
        }
        "split" | "split_with_sizes" | "chunk" | "unbind" | "tensor_split" | "unsafe_split" => {
            return Ok(split_types(key, base, a, s.as_ref()));
        }
        "index_select" => {
            let dim = a.int("dim").ok_or("dim must be constant")?;
            let n = a
                .tensor("index")
                .and_then(|t| t.shape)
                .map(|s| dim_product(&s));
            let shape = match (sshape, n) {
                (Some(mut sh), Some(n)) => {
                    if sh.is_empty() {
                        Some(sh)
                    } else {
                        let i = norm_dim(dim, sh.len()).ok_or("index_select: dim out of range")?;
                        sh[i] = n;
                        Some(sh)
                    }
                }
                _ => None,
            };
            tensor(sdtype, shape)
        }
        "gather" => tensor(sdtype, a.tensor("index").and_then(|t| t.shape)),
        "embedding" => {
            let (Some(w), Some(idx)) = (a.tensor("weight"), a.tensor("indices")) else {
                return Ok(None);
            };
            let shape = match (w.shape, idx.shape) {
                (Some(ws), Some(mut is)) if ws.len() == 2 => {
                    is.push(ws[1].clone());
                    Some(is)
                }
                _ => None,
            };
            tensor(w.dtype, shape)
        }
        "index" if key == "index.Tensor" => {
            // One index tensor in the first position: gathers rows.
            let Some(idx) = a.tensors("indices") else {
                return one(tensor(sdtype, None));
            };
            match (idx.as_slice(), sshape) {
                ([i], Some(sh)) if !sh.is_empty() && i.dtype != Some(DType::Bool) => {
                    let mut out = i.shape.clone().unwrap_or_default();
                    if i.shape.is_none() {
                        return one(tensor(sdtype, None));
                    }
                    out.extend(sh[1..].iter().cloned());
                    tensor(sdtype, Some(out))
                }
                _ => tensor(sdtype, None),
            }
        }
        "constant_pad_nd" | "pad" | "reflection_pad1d" | "reflection_pad2d"
        | "replication_pad2d" => {
            let Some(pad) = a.ints(if base == "constant_pad_nd" || base == "pad" {
                "pad"
            } else {
                "padding"
            }) else {
                return one(tensor(sdtype, None));
            };
            let shape = sshape.map(|mut sh| {
                let n = sh.len();
                for (k, pair) in pad.chunks(2).enumerate() {
                    if k < n {
                        let i = n - 1 - k;
                        let extra = pair.iter().sum::<i64>();
                        sh[i] = match &sh[i] {
                            Dim::Static(x) => Dim::Static(x + extra),
                            other => dim_sub_static(other, -extra),
                        };
                    }
                }
                sh
            });
            tensor(sdtype, shape)
        }
        "repeat" => {
            let reps = a.dims("repeats").ok_or("repeats must be known")?;
            let shape = sshape.map(|sh| {
                let lead = reps.len().saturating_sub(sh.len());
                reps.iter()
                    .enumerate()
                    .map(|(i, r)| {
                        if i < lead {
                            r.clone()
                        } else {
                            dim_mul(&sh[i - lead], r)
                        }
                    })
                    .collect()
            });
            tensor(sdtype, shape)
        }
        "full" | "zeros" | "ones" | "empty" | "rand" | "randn" | "empty_strided" | "new_full"
        | "new_zeros" | "new_ones" | "new_empty" => {
            let size = a.dims("size").ok_or("size must be known")?;
            let d = match a.dtype("dtype").flatten() {
                Some(d) => Some(d),
                None if base.starts_with("new_") => sdtype,
                None if base == "full" => match a.scalar("fill_value") {
                    Some(ScalarVal::Bool(_)) => Some(DType::Bool),
                    Some(ScalarVal::Int(_)) => Some(DType::I64),
                    Some(ScalarVal::Float(_)) => Some(DEFAULT_FLOAT),
                    None => None,
                },
                None => Some(DEFAULT_FLOAT),
            };
            tensor(d, Some(size))
        }
        "full_like" | "zeros_like" | "ones_like" | "empty_like" | "rand_like" | "randn_like" => {
            tensor(a.dtype("dtype").flatten().or(sdtype), sshape)
        }
        "scalar_tensor" => tensor(
            Some(a.dtype("dtype").flatten().unwrap_or(DEFAULT_FLOAT)),
            Some(vec![]),
        ),
        "arange" => {
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
        "native_layer_norm" => {
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
        "native_group_norm" => {
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
        "_native_batch_norm_legit_no_training"
        | "_native_batch_norm_legit"
        | "native_batch_norm"
        | "_native_batch_norm_legit_functional" => {
            let c = sshape
                .as_ref()
                .and_then(|sh| sh.get(1).cloned())
                .unwrap_or(Dim::Unknown);
            let training = a.bool("training").unwrap_or(false);
            let stat = if training || base == "native_batch_norm" {
                Some(vec![c])
            } else {
                Some(vec![Dim::Static(0)])
            };
            let mut out = vec![
                tensor(sdtype, sshape),
                tensor(sdtype, stat.clone()),
                tensor(sdtype, stat),
            ];
            if base == "_native_batch_norm_legit_functional" {
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
        "native_dropout" => {
            return Ok(Some(vec![
                tensor(sdtype, sshape.clone()),
                tensor(Some(DType::Bool), sshape),
            ]));
        }
        "scaled_dot_product_attention" => {
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
        "sym_size" | "sym_numel" | "sym_stride" | "sym_storage_offset" => Type::int(),
        "_local_scalar_dense" | "item" => match sdtype.map(DType::category) {
            Some(DTypeCategory::Floating) => Type::float(),
            Some(DTypeCategory::Bool) => Type::bool(),
            Some(DTypeCategory::Integral) => Type::int(),
            None => return Ok(None),
        },
        "_assert_tensor_metadata" | "_assert_async" => return Ok(Some(vec![])),
        _ => return Ok(None),
    };
    one(out)
}
