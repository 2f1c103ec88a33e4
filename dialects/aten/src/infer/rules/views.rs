//! Inference rules of views and shape ops: reshapes, permutations, expansion, slicing,
//! squeezing, concatenation, splits, indexing, padding and repetition.

use super::super::*;
use super::*;
use crate::op;
use ir::OpRef;

/// The result types of `this`, of the family `head`, if this file's rules cover it.
pub(super) fn infer(this: OpRef, head: OpRef, a: &Args) -> Result<Option<Vec<Type>>, String> {
    let s = self_or(a);
    let sshape = s.as_ref().and_then(|t| t.shape.clone());
    let sdtype = s.as_ref().and_then(|t| t.dtype);
    let out = match head {
        op::VIEW | op::RESHAPE | op::_UNSAFE_VIEW | op::VIEW_COPY | op::_RESHAPE_ALIAS => {
            if this == op::VIEW_DTYPE {
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
        op::PERMUTE | op::PERMUTE_COPY => {
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
        op::TRANSPOSE_INT | op::SWAPAXES | op::SWAPDIMS => {
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
        op::T | op::NUMPY_T => {
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
        op::EXPAND | op::EXPAND_COPY | op::BROADCAST_TO => {
            let sizes = a.dims("size").ok_or("sizes must be known")?;
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
        op::EXPAND_AS => tensor(sdtype, a.tensor("other").and_then(|t| t.shape)),
        op::RESIZE => tensor(sdtype, a.dims("size")),
        op::RESIZE_AS => tensor(sdtype, a.tensor("the_template").and_then(|t| t.shape)),
        op::SLICE_TENSOR | op::SLICE_COPY_TENSOR | op::NARROW => {
            let dim = a.int("dim").unwrap_or(0);
            let shape = match sshape {
                Some(mut sh) => {
                    let i = norm_dim(dim, sh.len())
                        .ok_or_else(|| format!("slice: dimension {dim} out of range"))?;
                    sh[i] = if head == op::NARROW {
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
        op::SELECT_INT | op::SELECT_COPY_INT => {
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
        op::SQUEEZE | op::SQUEEZE_COPY => {
            let dims: Option<Vec<i64>> = match this {
                op::SQUEEZE_DIM | op::SQUEEZE_COPY_DIM => a.int("dim").map(|d| vec![d]),
                op::SQUEEZE_DIMS | op::SQUEEZE_COPY_DIMS => a.ints("dim"),
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
        op::DIAGONAL | op::DIAGONAL_COPY => {
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
        op::UNSQUEEZE | op::UNSQUEEZE_COPY => {
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
        op::FLATTEN_USING_INTS => {
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
        op::UNFLATTEN_INT => {
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
        op::STACK => {
            // One new dimension at `dim`, as long as the list (known when it is built here).
            let n = a.tensors("tensors").map(|ts| ts.len() as i64);
            let Some(elem) = a.tensors("tensors").and_then(|ts| ts.first().cloned()).or_else(|| a.list_elem("tensors")) else {
                return Ok(None);
            };
            let shape = elem.shape.and_then(|mut sh| {
                let i = norm_dim(a.int("dim").unwrap_or(0), sh.len() + 1)?;
                sh.insert(i, n.map(Dim::Static).unwrap_or(Dim::Unknown));
                Some(sh)
            });
            tensor(elem.dtype, shape)
        }
        op::CAT | op::CONCAT | op::CONCATENATE => {
            let Some(ts) = a.tensors("tensors") else {
                // A list built elsewhere: its element type, with the joined dimension unknown.
                let Some(elem) = a.list_elem("tensors") else { return Ok(None) };
                let shape = elem.shape.and_then(|mut sh| {
                    let i = norm_dim(a.int("dim").unwrap_or(0), sh.len())?;
                    sh[i] = Dim::Unknown;
                    Some(sh)
                });
                return one(tensor(elem.dtype, shape));
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
        op::SPLIT | op::SPLIT_WITH_SIZES | op::CHUNK | op::UNBIND_INT | op::TENSOR_SPLIT_INDICES | op::UNSAFE_SPLIT_TENSOR => {
            return Ok(split_types(this, head, a, s.as_ref()));
        }
        op::INDEX_SELECT => {
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
        op::GATHER => tensor(sdtype, a.tensor("index").and_then(|t| t.shape)),
        op::EMBEDDING => {
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
        op::INDEX_TENSOR if this == op::INDEX_TENSOR => {
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
        op::CONSTANT_PAD_ND | op::PAD | op::REFLECTION_PAD1D | op::REFLECTION_PAD2D
        | op::REPLICATION_PAD2D => {
            let Some(pad) = a.ints(if head == op::CONSTANT_PAD_ND || head == op::PAD {
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
        op::REPEAT => {
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
        // One row of indices per nonzero element: how many is known only when it runs.
        op::NONZERO => tensor(Some(DType::I64), sshape.map(|sh| vec![Dim::Unknown, Dim::Static(sh.len() as i64)])),
        // The repeated indices: as many as the repeats add up to, known only when it runs.
        op::REPEAT_INTERLEAVE_TENSOR if matches!(this, op::REPEAT_INTERLEAVE_TENSOR | op::REPEAT_INTERLEAVE_TENSOR_OUT) => {
            let n = a.int("output_size").map(Dim::Static).unwrap_or(Dim::Unknown);
            tensor(a.tensor("repeats").and_then(|t| t.dtype), Some(vec![n]))
        }
        // Bags of rows: `[bags, dim]`, and the int64 bookkeeping (`offset2bag` may be empty).
        op::_EMBEDDING_BAG => {
            let w = a.tensor("weight").and_then(|t| t.shape);
            let bags = a.tensor("offsets").and_then(|t| t.shape).and_then(|s| s.first().cloned()).map(|m| match (m, a.bool("include_last_offset")) {
                (Dim::Static(m), Some(last)) => Dim::Static(m - last as i64),
                (m, Some(false)) => m,
                _ => Dim::Unknown,
            });
            let dim = w.as_ref().and_then(|w| w.get(1).cloned());
            let (bags, dim) = (bags.unwrap_or(Dim::Unknown), dim.unwrap_or(Dim::Unknown));
            let out = tensor(a.tensor("weight").and_then(|t| t.dtype), Some(vec![bags.clone(), dim.clone()]));
            let max = if a.int("mode") == Some(2) { vec![bags.clone(), dim] } else { vec![bags.clone()] };
            let i64s = |s: Vec<Dim>| tensor(Some(DType::I64), Some(s));
            return Ok(Some(vec![out, i64s(vec![Dim::Unknown]), i64s(vec![bags]), i64s(max)]));
        }
        // One loss per sample without reduction (for batched log-probabilities), else one.
        op::CTC_LOSS_INTLIST => {
            let lp = a.tensor("log_probs");
            let batched = lp.as_ref().and_then(|t| t.shape.as_ref()).map(|s| s.len() == 3);
            let shape = match (a.int("reduction"), batched) {
                (Some(0), Some(true)) => lp.as_ref().and_then(|t| t.shape.as_ref()).map(|s| vec![s[1].clone()]),
                (Some(0), _) => None,
                _ => Some(vec![]),
            };
            tensor(lp.and_then(|t| t.dtype), shape)
        }
        // Each channel sampled at the grid's points: `[N, C, *grid spatial]`.
        op::GRID_SAMPLER_2D | op::GRID_SAMPLER_3D => {
            let g = a.tensor("grid").and_then(|t| t.shape);
            let shape = match (&sshape, g) {
                (Some(x), Some(g)) if x.len() >= 2 && g.len() == x.len() => {
                    let mut s = vec![x[0].clone(), x[1].clone()];
                    s.extend(g[1..g.len() - 1].iter().cloned());
                    Some(s)
                }
                _ => None,
            };
            tensor(sdtype, shape)
        }
        _ => return super::other::infer(head, a),
    };
    one(out)
}
