//! The decompositions of the built-in table ([`DecompositionTable::core_aten`]): views and
//! reshapes, casts, `linear`/`matmul`, convolution, normalization, activations, triangular
//! masks, creation ops and attention, each a function building core ATen with an [`OpBuilder`].

use super::decompose::*;
use super::rewrite::{Arg, OpBuilder, Size, is_contiguous_producer};
use dialect_aten::infer::{ScalarVal, norm_dim, split_sizes};
use dialect_aten::op;
use ir::{Attribute, DType, Dim, OpId, TypeKind, ValueId};

/// The `self` operand of a floating-point-only op (activations PyTorch refuses on integers).
pub(super) fn float_input(b: &OpBuilder, op: OpId, name: &str) -> Result<ValueId, String> {
    let x = input(b, op, "self")?;
    match b.dtype(x) {
        Some(d) if !d.is_floating() => Err(format!("{name} is not implemented for {}", d.torch_name())),
        _ => Ok(x),
    }
}



pub(super) fn permute(b: &mut OpBuilder, x: ValueId, perm: &[i64]) -> Result<ValueId, String> {
    b.call(op::PERMUTE, &[x.into(), Arg::A(Attribute::ints(perm))])
}

pub(super) fn swap_last(b: &mut OpBuilder, x: ValueId) -> Result<ValueId, String> {
    let r = rank_of(b, x)?;
    if r < 2 {
        return Ok(x);
    }
    let mut p: Vec<i64> = (0..r as i64).collect();
    p.swap(r - 1, r - 2);
    permute(b, x, &p)
}

/// `view`, cloning first when `x` may not be contiguous.
pub(super) fn view(b: &mut OpBuilder, x: ValueId, sizes: &[Size]) -> Result<ValueId, String> {
    let x = if is_contiguous_producer(b.ctx, b.module(), x) { x } else { b.call(op::CLONE, &[x.into(), Arg::A(Attribute::Int(0))])? };
    let s = b.sizes(sizes)?;
    b.call(op::VIEW, &[x.into(), s])
}

pub(super) fn dropout(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let (train, p) = b.with_args(op, |a| (a.bool("train"), a.float("p")))?;
    if train == Some(false) || p == Some(0.0) {
        return Ok(Some(vec![input(b, op, "input")?]));
    }
    Ok(None)
}

pub(super) fn t_op(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "self")?;
    match rank_of(b, x)? {
        0 | 1 => Ok(Some(vec![x])),
        2 => one(permute(b, x, &[1, 0])),
        r => Err(format!("t() expects a tensor of rank at most 2, got rank {r}")),
    }
}

pub(super) fn transpose(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "self")?;
    let r = rank_of(b, x)?;
    if r == 0 {
        return Ok(Some(vec![x]));
    }
    let (d0, d1) = b.with_args(op, |a| (a.int("dim0"), a.int("dim1")))?;
    let (Some(i), Some(j)) = (d0.and_then(|d| norm_dim(d, r)), d1.and_then(|d| norm_dim(d, r))) else {
        return Err("transpose: dims must be constants in range".into());
    };
    let mut p: Vec<i64> = (0..r as i64).collect();
    p.swap(i, j);
    one(permute(b, x, &p))
}

pub(super) fn reshape(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "self")?;
    let (attr, val) = b.with_args(op, |a| (a.constant("shape"), a.value("shape")))?;
    let x = if is_contiguous_producer(b.ctx, b.module(), x) { x } else { b.call(op::CLONE, &[x.into(), Arg::A(Attribute::Int(0))])? };
    let s = match (attr, val) {
        (_, Some(v)) if !matches!(b.module().value_type(v).kind(), TypeKind::None) => Arg::V(v),
        (Some(a), _) => Arg::A(a),
        _ => return Err("reshape: shape is missing".into()),
    };
    one(b.call(op::VIEW, &[x.into(), s]))
}

pub(super) fn flatten(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "self")?;
    let r = rank_of(b, x)?;
    let (s, e) = b.with_args(op, |a| (a.int("start_dim").unwrap_or(0), a.int("end_dim").unwrap_or(-1)))?;
    if r == 0 {
        return one(view(b, x, &[Size::Static(1)]));
    }
    let (Some(i), Some(j)) = (norm_dim(s, r), norm_dim(e, r)) else { return Err("flatten: dims out of range".into()) };
    if i == j {
        return Ok(Some(vec![x]));
    }
    let all = b.sizes_of(x).ok_or("flatten: unknown shape")?;
    let mut sizes: Vec<Size> = all[..i].to_vec();
    sizes.push(Size::Static(-1));
    sizes.extend(all[j + 1..].iter().cloned());
    one(view(b, x, &sizes))
}

pub(super) fn unflatten(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "self")?;
    let r = rank_of(b, x)?;
    let (d, parts) = b.with_args(op, |a| (a.int("dim"), a.ints("sizes")))?;
    let i = d.and_then(|d| norm_dim(d, r)).ok_or("unflatten: dim out of range")?;
    let parts = parts.ok_or("unflatten: sizes must be constant")?;
    let all = b.sizes_of(x).ok_or("unflatten: unknown shape")?;
    let mut sizes: Vec<Size> = all[..i].to_vec();
    sizes.extend(parts.iter().map(|&n| Size::Static(n)));
    sizes.extend(all[i + 1..].iter().cloned());
    one(view(b, x, &sizes))
}

pub(super) fn split_like(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let name = b.module().op_name(op).to_string();
    let this = dialect_aten::op::by_name(b.ctx.mirrored(&name)).ok_or_else(|| format!("{name}: not a split"))?;
    let x = input(b, op, "self")?;
    let (sizes, dim) = b.with_args(op, |a| (split_sizes(this, a), a.int("dim").unwrap_or(0)))?;
    let sizes = sizes.ok_or_else(|| format!("{name}: split sizes must be static"))?;
    one(b.call(op::SPLIT_WITH_SIZES, &[x.into(), Arg::A(Attribute::ints(&sizes)), Arg::A(Attribute::Int(dim))]))
}

pub(super) fn rsub_tensor(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let (x, o) = (input(b, op, "self")?, input(b, op, "other")?);
    let alpha = b.with_args(op, |a| a.constant("alpha"))?.unwrap_or(Attribute::Int(1));
    one(b.call(op::SUB_TENSOR, &[o.into(), x.into(), Arg::A(alpha)]))
}

pub(super) fn rsub_scalar(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "self")?;
    if b.dtype(x) == Some(DType::Bool) {
        return Err("subtraction with a bool tensor is not supported".into());
    }
    let (other, alpha) = b.with_args(op, |a| (a.constant("other"), a.scalar("alpha")))?;
    let other = other.ok_or("rsub: the scalar must be constant")?;
    let scaled = match alpha {
        None | Some(ScalarVal::Int(Some(1))) => b.call(op::NEG, &[x.into()])?,
        Some(ScalarVal::Int(Some(k))) => b.call(op::MUL_SCALAR, &[x.into(), Arg::A(Attribute::Int(-k))])?,
        Some(ScalarVal::Float(Some(k))) => b.call(op::MUL_SCALAR, &[x.into(), Arg::A(Attribute::float(-k))])?,
        _ => return Ok(None),
    };
    one(b.call(op::ADD_SCALAR, &[scaled.into(), Arg::A(other)]))
}

pub(super) fn to_dtype(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "self")?;
    let (d, copy) = b.with_args(op, |a| (a.dtype("dtype").flatten(), a.bool("copy").unwrap_or(false)))?;
    let d = d.or(b.dtype(x));
    if copy {
        return one(b.call(op::_TO_COPY, &[x.into(), Arg::A(d.map(dialect_prim::kinds::dtype).unwrap_or(dialect_prim::kinds::none()))]));
    }
    cast_to(b, x, d)
}

pub(super) fn linear(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let (x, w) = (input(b, op, "input")?, input(b, op, "weight")?);
    let bias = opt_input(b, op, "bias")?;
    let r = rank_of(b, x)?;
    if rank_of(b, w)? != 2 || r == 0 {
        return Ok(None);
    }
    let wt = permute(b, w, &[1, 0])?;
    let mm = |b: &mut OpBuilder, x2: ValueId| -> Result<ValueId, String> {
        match bias {
            Some(bv) => b.call(op::ADDMM, &[bv.into(), x2.into(), wt.into()]),
            None => b.call(op::MM, &[x2.into(), wt.into()]),
        }
    };
    match r {
        2 => one(mm(b, x)),
        1 => {
            let x2 = b.call(op::UNSQUEEZE, &[x.into(), Arg::A(Attribute::Int(0))])?;
            let y = mm(b, x2)?;
            one(b.call(op::SQUEEZE_DIMS, &[y.into(), Arg::A(Attribute::ints(&[0]))]))
        }
        _ => {
            let xs = b.sizes_of(x).ok_or("linear: unknown input shape")?;
            let k = xs[r - 1].clone();
            let x2 = view(b, x, &[Size::Static(-1), k])?;
            let y = mm(b, x2)?;
            let mut out: Vec<Size> = xs[..r - 1].to_vec();
            out.push(b.sizes_of(w).ok_or("linear: unknown weight shape")?[0].clone());
            one(view(b, y, &out))
        }
    }
}

pub(super) fn matmul(b: &mut OpBuilder, op: OpId) -> DecompResult {
    if b.with_args(op, |a| a.value("self"))?.and_then(|x| b.dtype(x)) == Some(DType::Bool) {
        return Err("matmul is not implemented for bool".into());
    }
    let (x, y) = (input(b, op, "self")?, input(b, op, "other")?);
    let (rx, ry) = (rank_of(b, x)?, rank_of(b, y)?);
    let i = |k: i64| Arg::A(Attribute::Int(k));
    match (rx, ry) {
        (1, 1) => {
            let p = b.call(op::MUL_TENSOR, &[x.into(), y.into()])?;
            // The dot product keeps the operands' dtype (an integer sum would widen to int64).
            let d = b.dtype(p).map_or(dialect_prim::kinds::none(), dialect_prim::kinds::dtype);
            one(b.call(op::SUM_DIM_INTLIST, &[p.into(), Arg::A(Attribute::ints(&[0])), Arg::A(Attribute::Bool(false)), Arg::A(d)]))
        }
        (2, 2) => one(b.call(op::MM, &[x.into(), y.into()])),
        (1, 2) => {
            let x2 = b.call(op::UNSQUEEZE, &[x.into(), i(0)])?;
            let m = b.call(op::MM, &[x2.into(), y.into()])?;
            one(b.call(op::SQUEEZE_DIMS, &[m.into(), Arg::A(Attribute::ints(&[0]))]))
        }
        (_, 1) if rx >= 2 => {
            let y2 = b.call(op::UNSQUEEZE, &[y.into(), i(1)])?;
            let m = if rx == 2 {
                b.call(op::MM, &[x.into(), y2.into()])?
            } else {
                let xs = b.sizes_of(x).ok_or("matmul: unknown shape")?;
                let x2 = view(b, x, &[Size::Static(-1), xs[rx - 1].clone()])?;
                let m = b.call(op::MM, &[x2.into(), y2.into()])?;
                let mut out: Vec<Size> = xs[..rx - 1].to_vec();
                out.push(Size::Static(1));
                view(b, m, &out)?
            };
            one(b.call(op::SQUEEZE_DIMS, &[m.into(), Arg::A(Attribute::ints(&[-1]))]))
        }
        (_, 2) if rx >= 3 => {
            let xs = b.sizes_of(x).ok_or("matmul: unknown shape")?;
            let x2 = view(b, x, &[Size::Static(-1), xs[rx - 1].clone()])?;
            let m = b.call(op::MM, &[x2.into(), y.into()])?;
            let mut out: Vec<Size> = xs[..rx - 1].to_vec();
            out.push(b.sizes_of(y).ok_or("matmul: unknown shape")?[1].clone());
            one(view(b, m, &out))
        }
        (p, q) if p >= 1 && q >= 2 => {
            // Batched: broadcast the batch dims, fold them into one, bmm, unfold.
            let (x, p) = if p == 1 { (b.call(op::UNSQUEEZE, &[x.into(), i(0)])?, 2) } else { (x, p) };
            let xs = b.shape(x).ok_or("matmul: unknown shape")?;
            let ys = b.shape(y).ok_or("matmul: unknown shape")?;
            let batch = dialect_aten::infer::broadcast_shapes(&xs[..p - 2], &ys[..q - 2], b.ranges)?;
            if batch.iter().any(|d| !d.is_static()) {
                return Ok(None);
            }
            let bs: Vec<i64> = batch.iter().filter_map(Dim::as_static).collect();
            let nb: i64 = bs.iter().product();
            let fold = |b: &mut OpBuilder, v: ValueId, sh: &[Dim], r: usize| -> Result<ValueId, String> {
                let (m, n) = (sh[r - 2].clone(), sh[r - 1].clone());
                let mut full: Vec<Size> = bs.iter().map(|&k| Size::Static(k)).collect();
                let tail = |d: &Dim, at: usize| d.as_static().map(Size::Static).unwrap_or(Size::Of(v, at));
                full.push(tail(&m, r - 2));
                full.push(tail(&n, r - 1));
                let same = sh[..r - 2].iter().map(Dim::as_static).collect::<Vec<_>>() == bs.iter().map(|&k| Some(k)).collect::<Vec<_>>();
                let v = if same {
                    v
                } else {
                    let s = b.sizes(&full)?;
                    let e = b.call(op::EXPAND, &[v.into(), s])?;
                    b.call(op::CLONE, &[e.into(), Arg::A(Attribute::Int(0))])?
                };
                view(b, v, &[Size::Static(nb), tail(&m, r - 2), tail(&n, r - 1)])
            };
            let x3 = fold(b, x, &xs, p)?;
            let y3 = fold(b, y, &ys, q)?;
            let m = b.call(op::BMM, &[x3.into(), y3.into()])?;
            let ms = b.sizes_of(m).ok_or("matmul: unknown shape")?;
            let mut out: Vec<Size> = bs.iter().map(|&k| Size::Static(k)).collect();
            if rx == 1 {
                out.push(ms[2].clone());
                return one(view(b, m, &out));
            }
            out.push(ms[1].clone());
            out.push(ms[2].clone());
            one(view(b, m, &out))
        }
        _ => Ok(None),
    }
}

pub(super) fn conv(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let name = b.module().op_name(op).to_string();
    let n = if name.contains("conv1d") { 1 } else if name.contains("conv3d") { 3 } else { 2 };
    let (x, w) = (input(b, op, "input")?, input(b, op, "weight")?);
    let bias = opt_input(b, op, "bias")?;
    let (stride, padding, dilation, groups) =
        b.with_args(op, |a| (a.ints("stride"), a.ints("padding"), a.ints("dilation"), a.int("groups")))?;
    let (Some(s), Some(p), Some(d), Some(g)) = (stride, padding, dilation, groups) else { return Ok(None) };
    let expand = |v: Vec<i64>, def: i64| -> Vec<i64> {
        (0..n).map(|i| if v.len() == 1 { v[0] } else { v.get(i).copied().unwrap_or(def) }).collect()
    };
    one(b.call(
        "convolution",
        &[
            x.into(),
            w.into(),
            bias.map(Arg::V).unwrap_or(Arg::A(dialect_prim::kinds::none())),
            Arg::A(Attribute::ints(&expand(s, 1))),
            Arg::A(Attribute::ints(&expand(p, 0))),
            Arg::A(Attribute::ints(&expand(d, 1))),
            Arg::A(Attribute::Bool(false)),
            Arg::A(Attribute::ints(&vec![0; n])),
            Arg::A(Attribute::Int(g)),
        ],
    ))
}

/// `_convolution` (what tracing records) is `convolution` with the same first nine arguments;
/// the rest only pick a backend (`benchmark`, `deterministic`, `cudnn_enabled`, `allow_tf32`).
pub(super) fn convolution_with_flags(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let mut args = super::schema_args(b.ctx(), b.module(), op)?;
    args.truncate(9);
    one(b.call(op::CONVOLUTION, &args))
}

pub(super) fn batch_norm(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "input")?;
    let (w, bias) = (opt_input(b, op, "weight")?, opt_input(b, op, "bias")?);
    let (rm, rv) = (opt_input(b, op, "running_mean")?, opt_input(b, op, "running_var")?);
    let (training, momentum, eps) = b.with_args(op, |a| (a.bool("training"), a.float("momentum"), a.float("eps")))?;
    let (Some(rm), Some(rv), Some(false)) = (rm, rv, training) else { return Ok(None) };
    let opt = |v: Option<ValueId>| v.map(Arg::V).unwrap_or(Arg::A(dialect_prim::kinds::none()));
    let r = b.call_n(
        op::_NATIVE_BATCH_NORM_LEGIT_NO_TRAINING,
        &[
            x.into(),
            opt(w),
            opt(bias),
            rm.into(),
            rv.into(),
            Arg::A(Attribute::float(momentum.unwrap_or(0.1))),
            Arg::A(Attribute::float(eps.unwrap_or(1e-5))),
        ],
    )?;
    Ok(Some(vec![r[0]]))
}

pub(super) fn layer_norm(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "input")?;
    let (w, bias) = (opt_input(b, op, "weight")?, opt_input(b, op, "bias")?);
    let (ns, eps) = b.with_args(op, |a| (a.ints("normalized_shape"), a.float("eps")))?;
    let ns = ns.ok_or("layer_norm: normalized_shape must be constant")?;
    let opt = |v: Option<ValueId>| v.map(Arg::V).unwrap_or(Arg::A(dialect_prim::kinds::none()));
    let r = b.call_n(
        op::NATIVE_LAYER_NORM,
        &[x.into(), Arg::A(Attribute::ints(&ns)), opt(w), opt(bias), Arg::A(Attribute::float(eps.unwrap_or(1e-5)))],
    )?;
    Ok(Some(vec![r[0]]))
}

pub(super) fn group_norm(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "input")?;
    let (w, bias) = (opt_input(b, op, "weight")?, opt_input(b, op, "bias")?);
    let (g, eps) = b.with_args(op, |a| (a.int("num_groups"), a.float("eps")))?;
    let g = g.ok_or("group_norm: num_groups must be constant")?;
    let sh = b.shape(x).ok_or("group_norm: unknown shape")?;
    if sh.len() < 2 {
        return Err("group_norm: input must have rank at least 2".into());
    }
    let (Some(c), Some(hw)) = (sh[1].as_static(), sh[2..].iter().map(Dim::as_static).product::<Option<i64>>()) else {
        return Ok(None);
    };
    let n = match sh[0].as_static() {
        Some(n) => Arg::A(Attribute::Int(n)),
        None => Arg::V(b.call(op::SYM_SIZE_INT, &[x.into(), Arg::A(Attribute::Int(0))])?),
    };
    let opt = |v: Option<ValueId>| v.map(Arg::V).unwrap_or(Arg::A(dialect_prim::kinds::none()));
    let r = b.call_n(
        op::NATIVE_GROUP_NORM,
        &[
            x.into(),
            opt(w),
            opt(bias),
            n,
            Arg::A(Attribute::Int(c)),
            Arg::A(Attribute::Int(hw)),
            Arg::A(Attribute::Int(g)),
            Arg::A(Attribute::float(eps.unwrap_or(1e-5))),
        ],
    )?;
    Ok(Some(vec![r[0]]))
}

pub(super) fn softmax(b: &mut OpBuilder, op: OpId, core: &str) -> DecompResult {
    let x = input(b, op, "self")?;
    let (dim, dtype) = b.with_args(op, |a| (a.int("dim"), a.dtype("dtype").flatten()))?;
    let dim = dim.ok_or("softmax: dim must be constant")?;
    let x = match dtype {
        Some(d) if b.dtype(x) != Some(d) => b.call(op::_TO_COPY, &[x.into(), Arg::A(dialect_prim::kinds::dtype(d))])?,
        _ => x,
    };
    one(b.call(core, &[x.into(), Arg::A(Attribute::Int(dim)), Arg::A(Attribute::Bool(false))]))
}

pub(super) fn hardsigmoid(b: &mut OpBuilder, x: ValueId) -> Result<ValueId, String> {
    let s = b.call(op::ADD_SCALAR, &[x.into(), Arg::A(Attribute::Int(3))])?;
    let c = b.call(op::CLAMP, &[s.into(), Arg::A(Attribute::Int(0)), Arg::A(Attribute::Int(6))])?;
    b.call(op::DIV_SCALAR, &[c.into(), Arg::A(Attribute::Int(6))])
}

pub(super) fn softplus(b: &mut OpBuilder, x: ValueId) -> Result<ValueId, String> {
    let e = b.call(op::EXP, &[x.into()])?;
    let l = b.call(op::LOG1P, &[e.into()])?;
    let big = b.call(op::GT_SCALAR, &[x.into(), Arg::A(Attribute::Int(20))])?;
    b.call(op::WHERE_SELF, &[big.into(), x.into(), l.into()])
}

/// A bool `[rows, cols]` mask of `col - row <cmp> diagonal`.
pub(super) fn band_mask(b: &mut OpBuilder, rows: i64, cols: i64, cmp: &str, diagonal: i64) -> Result<ValueId, String> {
    let i = |k: i64| Arg::A(Attribute::Int(k));
    let c = b.call(op::ARANGE_START_STEP, &[i(0), i(cols)])?;
    let r = b.call(op::ARANGE_START_STEP, &[i(0), i(rows)])?;
    let c = b.call(op::UNSQUEEZE, &[c.into(), i(0)])?;
    let r = b.call(op::UNSQUEEZE, &[r.into(), i(1)])?;
    let d = b.call(op::SUB_TENSOR, &[c.into(), r.into()])?;
    b.call(cmp, &[d.into(), i(diagonal)])
}

pub(super) fn tri(b: &mut OpBuilder, op: OpId, cmp: &str) -> DecompResult {
    let x = input(b, op, "self")?;
    let diag = b.with_args(op, |a| a.int("diagonal"))?.unwrap_or(0);
    let sh = b.shape(x).ok_or("tril/triu: unknown shape")?;
    let n = sh.len();
    if n < 2 {
        return Err("tril/triu: input must have rank at least 2".into());
    }
    let (Some(rows), Some(cols)) = (sh[n - 2].as_static(), sh[n - 1].as_static()) else { return Ok(None) };
    let mask = band_mask(b, rows, cols, cmp, diag)?;
    let dtype = b.dtype(x).ok_or("tril/triu: unknown dtype")?;
    let zero = b.call(op::SCALAR_TENSOR, &[Arg::A(Attribute::Int(0)), Arg::A(dialect_prim::kinds::dtype(dtype))])?;
    one(b.call(op::WHERE_SELF, &[mask.into(), x.into(), zero.into()]))
}

/// `ones`/`zeros` → `full` with the dtype made explicit.
pub(super) fn fill_like_new(b: &mut OpBuilder, op: OpId, value: i64) -> DecompResult {
    let (size_attr, size_val, rest) = b.with_args(op, |a| {
        (a.constant("size"), a.value("size"), ["dtype", "layout", "device", "pin_memory"].map(|n| a.constant(n).unwrap_or(dialect_prim::kinds::none())))
    })?;
    let size = match (size_val, size_attr) {
        (Some(v), _) => Arg::V(v),
        (None, Some(a)) => Arg::A(a),
        _ => return Err("size is missing".into()),
    };
    let [dtype, layout, device, pin] = rest;
    let dtype = if dtype == dialect_prim::kinds::none() { dialect_prim::kinds::dtype(DType::F32) } else { dtype };
    one(b.call(op::FULL, &[size, Arg::A(Attribute::Int(value)), Arg::A(dtype), Arg::A(layout), Arg::A(device), Arg::A(pin)]))
}

/// `new_ones`, `new_zeros`, `new_empty` (zero-filled: any value is a valid empty tensor) and
/// `new_full` (`value` `None`: its `fill_value`): a `full` whose dtype defaults to `self`'s.
pub(super) fn new_filled(b: &mut OpBuilder, op: OpId, value: Option<Attribute>) -> DecompResult {
    let x = input(b, op, "self")?;
    let (size_attr, size_val, fill, rest) = b.with_args(op, |a| {
        (
            a.constant("size"),
            a.value("size"),
            a.constant("fill_value"),
            ["dtype", "layout", "device", "pin_memory"].map(|n| a.constant(n).unwrap_or(dialect_prim::kinds::none())),
        )
    })?;
    let size = match (size_val, size_attr) {
        (Some(v), _) => Arg::V(v),
        (None, Some(a)) => Arg::A(a),
        _ => return Err("size is missing".into()),
    };
    let value = value.or(fill).ok_or("new_full: the fill value must be constant")?;
    let [dtype, layout, device, pin] = rest;
    let dtype = if dialect_prim::kinds::is_none(&dtype) {
        dialect_prim::kinds::dtype(b.dtype(x).ok_or("the dtype of self is unknown")?)
    } else {
        dtype
    };
    one(b.call(op::FULL, &[size, Arg::A(value), Arg::A(dtype), Arg::A(layout), Arg::A(device), Arg::A(pin)]))
}

pub(super) fn fill_like(b: &mut OpBuilder, op: OpId, value: i64) -> DecompResult {
    let x = input(b, op, "self")?;
    let rest = b.with_args(op, |a| {
        ["dtype", "layout", "device", "pin_memory", "memory_format"].map(|n| a.constant(n).unwrap_or(dialect_prim::kinds::none()))
    })?;
    let mut args = vec![Arg::V(x), Arg::A(Attribute::Int(value))];
    args.extend(rest.into_iter().map(Arg::A));
    one(b.call(op::FULL_LIKE, &args))
}

pub(super) fn arange(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let (start, start_v, end, end_v, rest) = b.with_args(op, |a| {
        (
            a.constant("start").unwrap_or(Attribute::Int(0)),
            a.value("start"),
            a.constant("end"),
            a.value("end"),
            ["dtype", "layout", "device", "pin_memory"].map(|n| a.constant(n).unwrap_or(dialect_prim::kinds::none())),
        )
    })?;
    let start = start_v.map(Arg::V).unwrap_or(Arg::A(start));
    let end = match (end_v, end) {
        (Some(v), _) => Arg::V(v),
        (None, Some(e)) => Arg::A(e),
        _ => return Err("arange: end is missing".into()),
    };
    let mut args = vec![start, end, Arg::A(Attribute::Int(1))];
    args.extend(rest.into_iter().map(Arg::A));
    one(b.call(op::ARANGE_START_STEP, &args))
}

pub(super) fn masked_fill_scalar(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let (x, mask) = (input(b, op, "self")?, input(b, op, "mask")?);
    let v = b.with_args(op, |a| a.constant("value"))?.ok_or("masked_fill: the value must be constant")?;
    let dtype = b.dtype(x).ok_or("masked_fill: unknown dtype")?;
    let s = b.call(op::SCALAR_TENSOR, &[Arg::A(v), Arg::A(dialect_prim::kinds::dtype(dtype))])?;
    one(b.call(op::WHERE_SELF, &[mask.into(), s.into(), x.into()]))
}

pub(super) fn reduce_all(b: &mut OpBuilder, op: OpId, core: &str) -> DecompResult {
    let x = input(b, op, "self")?;
    let dtype = b.with_args(op, |a| a.constant("dtype"))?.unwrap_or(dialect_prim::kinds::none());
    let r = rank_of(b, x)? as i64;
    let dims: Vec<Size> = (0..r).map(Size::Static).collect();
    let dims = int_list_value(b, &dims)?;
    one(b.call(core, &[x.into(), dims, Arg::A(Attribute::Bool(false)), Arg::A(dtype)]))
}

/// An int list passed as a `prim.ListConstruct` value (schemas such as `int[1]` take any length only so).
pub(super) fn int_list_value(b: &mut OpBuilder, sizes: &[Size]) -> Result<Arg, String> {
    if sizes.len() <= 1 {
        return b.sizes(sizes);
    }
    let mut elems = Vec::new();
    for s in sizes {
        elems.push(match s {
            Size::Static(n) => b.constant(Attribute::Int(*n))?,
            Size::Of(v, i) => b.call(op::SYM_SIZE_INT, &[Arg::V(*v), Arg::A(Attribute::Int(*i as i64))])?,
        });
    }
    Ok(Arg::V(b.list(elems)?))
}

pub(super) fn binary_rename(b: &mut OpBuilder, op: OpId, core: &str) -> DecompResult {
    let (x, o) = (input(b, op, "self")?, input(b, op, "other")?);
    one(b.call(core, &[x.into(), o.into()]))
}

pub(super) fn sdpa(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let (q, k, v) = (input(b, op, "query")?, input(b, op, "key")?, input(b, op, "value")?);
    let mask = opt_input(b, op, "attn_mask")?;
    let (dp, causal, scale, gqa) =
        b.with_args(op, |a| (a.float("dropout_p").unwrap_or(0.0), a.bool("is_causal").unwrap_or(false), a.float("scale"), a.bool("enable_gqa").unwrap_or(false)))?;
    if dp != 0.0 || gqa {
        return Ok(None);
    }
    let qs = b.shape(q).ok_or("scaled_dot_product_attention: unknown query shape")?;
    let ks = b.shape(k).ok_or("scaled_dot_product_attention: unknown key shape")?;
    let e = qs.last().and_then(Dim::as_static);
    let scale = match (scale, e) {
        (Some(s), _) => s,
        (None, Some(e)) if e > 0 => 1.0 / (e as f64).sqrt(),
        _ => return Ok(None),
    };
    let kt = swap_last(b, k)?;
    let s = b.call(op::MATMUL, &[q.into(), kt.into()])?;
    let mut s = b.call(op::MUL_SCALAR, &[s.into(), Arg::A(Attribute::float(scale))])?;
    let neg_inf = Attribute::float(f64::NEG_INFINITY);
    if causal {
        let (Some(l), Some(sl)) = (qs.get(qs.len().wrapping_sub(2)).and_then(Dim::as_static), ks.get(ks.len().wrapping_sub(2)).and_then(Dim::as_static)) else {
            return Ok(None);
        };
        let keep = band_mask(b, l, sl, "le.Scalar", 0)?;
        let drop = b.call(op::LOGICAL_NOT, &[keep.into()])?;
        s = b.call(op::MASKED_FILL_SCALAR, &[s.into(), drop.into(), Arg::A(neg_inf.clone())])?;
    }
    if let Some(mv) = mask {
        // A boolean mask selects, any other is added: which one it is must be known.
        match b.dtype(mv) {
            Some(DType::Bool) => {
                let drop = b.call(op::LOGICAL_NOT, &[mv.into()])?;
                s = b.call(op::MASKED_FILL_SCALAR, &[s.into(), drop.into(), Arg::A(neg_inf)])?;
            }
            Some(_) => s = b.call(op::ADD_TENSOR, &[s.into(), mv.into()])?,
            None => return Err("scaled_dot_product_attention: unknown attention mask dtype".into()),
        }
    }
    let p = b.call(op::_SOFTMAX, &[s.into(), Arg::A(Attribute::Int(-1)), Arg::A(Attribute::Bool(false))])?;
    one(b.call(op::MATMUL, &[p.into(), v.into()]))
}

