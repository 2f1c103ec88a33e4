//! Inference rules of matrix products, `linear`, convolutions and pooling.

use super::super::*;
use super::*;
use crate::op;
use ir::OpRef;

/// The result types of `this`, of the family `head`, if this file's rules cover it.
pub(super) fn infer(this: OpRef, head: OpRef, a: &Args, r: &Ranges) -> Result<Option<Vec<Type>>, String> {
    let s = self_or(a);
    let sshape = s.as_ref().and_then(|t| t.shape.clone());
    let sdtype = s.as_ref().and_then(|t| t.dtype);
    let out = match head {
        op::MM | op::BMM | op::MATMUL | op::DOT | op::MV | op::VDOT => {
            let (Some(x), Some(y)) = (
                s.clone(),
                a.tensor(if head == op::MV {
                    "vec"
                } else if head == op::MM || head == op::BMM {
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
                    if head == op::MM && (p.len() != 2 || q.len() != 2) {
                        return Err(format!(
                            "mm expects 2-d operands, got {} and {}",
                            show_shape(p),
                            show_shape(q)
                        ));
                    }
                    if head == op::BMM {
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
        op::ADDMM | op::BADDBMM | op::ADDMV | op::ADDBMM => {
            let (Some(x), Some(y)) = (
                a.tensor(if head == op::ADDMV {
                    "mat"
                } else if head == op::ADDMM {
                    "mat1"
                } else {
                    "batch1"
                }),
                a.tensor(if head == op::ADDMV {
                    "vec"
                } else if head == op::ADDMM {
                    "mat2"
                } else {
                    "batch2"
                }),
            ) else {
                return Ok(None);
            };
            let shape = match (&x.shape, &y.shape) {
                (Some(p), Some(q)) if head == op::BADDBMM && p.len() == 3 && q.len() == 3 => {
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
            // `baddbmm.dtype` (and `addmm.dtype`, …) return their `out_dtype`.
            let out_dtype = if this.name().ends_with(".dtype") { a.dtype("out_dtype").flatten() } else { None };
            tensor(out_dtype.or(x.dtype).or(sdtype), shape)
        }
        op::LINEAR => {
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
        op::CONVOLUTION | op::CONV1D | op::CONV2D | op::CONV3D | op::CONV_TRANSPOSE1D
        | op::CONV_TRANSPOSE2D_INPUT | op::CONV_TRANSPOSE3D_INPUT => {
            let (Some(x), Some(w)) = (a.tensor("input"), a.tensor("weight")) else {
                return Ok(None);
            };
            let transposed = a
                .bool("transposed")
                .unwrap_or([op::CONV_TRANSPOSE1D, op::CONV_TRANSPOSE2D_INPUT, op::CONV_TRANSPOSE3D_INPUT].contains(&head));
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
        op::MAX_POOL1D
        | op::MAX_POOL2D
        | op::MAX_POOL3D
        | op::AVG_POOL1D
        | op::AVG_POOL2D
        | op::AVG_POOL3D
        | op::MAX_POOL2D_WITH_INDICES
        | op::MAX_POOL3D_WITH_INDICES => {
            let nsp = if [op::MAX_POOL1D, op::AVG_POOL1D].contains(&head) {
                1
            } else if [op::MAX_POOL3D, op::AVG_POOL3D, op::MAX_POOL3D_WITH_INDICES].contains(&head) {
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
            if head == op::MAX_POOL2D_WITH_INDICES || head == op::MAX_POOL3D_WITH_INDICES {
                return Ok(Some(vec![
                    tensor(sdtype, shape.clone()),
                    tensor(Some(DType::I64), shape),
                ]));
            }
            tensor(sdtype, shape)
        }
        op::ADAPTIVE_AVG_POOL1D
        | op::ADAPTIVE_AVG_POOL2D
        | op::ADAPTIVE_AVG_POOL3D
        | op::_ADAPTIVE_AVG_POOL2D
        | op::_ADAPTIVE_AVG_POOL3D
        | op::ADAPTIVE_MAX_POOL2D => {
            let os = a.dims("output_size").ok_or("output_size must be known")?;
            let shape = sshape.map(|sh| {
                let lead = sh.len().saturating_sub(os.len());
                let mut out = sh[..lead].to_vec();
                out.extend(os.iter().cloned());
                out
            });
            if head == op::ADAPTIVE_MAX_POOL2D {
                return Ok(Some(vec![
                    tensor(sdtype, shape.clone()),
                    tensor(Some(DType::I64), shape),
                ]));
            }
            tensor(sdtype, shape)
        }
        _ => return super::factor::infer(this, head, a, r),
    };
    one(out)
}
