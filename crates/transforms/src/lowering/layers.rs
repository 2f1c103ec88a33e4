//! Decompositions of PyTorch's composite layer ops: `bilinear`, `chain_matmul`,
//! `max_pool1d_with_indices` (as a 2-d pool over a unit height), `_prelu_kernel`, `rrelu`
//! in evaluation mode (a leaky ReLU with the mean slope; training draws random slopes),
//! `log_sigmoid_forward`, `_fused_rms_norm` and padding by mode (`_pad_enum`, `_pad_circular`).

use super::composite::static_shape;
use super::decompose::{DecompResult, DecompositionTable, input, one, opt_input, rank_of};
use super::rewrite::{Arg, OpBuilder};
use super::stacking::tensor_list;
use dialect_aten::op;
use ir::{Attribute, DType, OpId, ValueId};

/// Adds the layers' decompositions to `t`.
pub(super) fn add(t: &mut DecompositionTable) {
    t.insert(op::_PRELU_KERNEL, |b, op| {
        let (x, w) = (input(b, op, "self")?, input(b, op, "weight")?);
        let pos = b.call(op::GT_SCALAR, &[x.into(), Arg::A(Attribute::Int(0))])?;
        let neg = b.call(op::MUL_TENSOR, &[w.into(), x.into()])?;
        one(b.call(op::WHERE_SELF, &[pos.into(), x.into(), neg.into()]))
    })
    .insert(op::RRELU, |b, op| {
        let x = input(b, op, "self")?;
        let (lo, hi, training) = b.with_args(op, |a| (a.float("lower"), a.float("upper"), a.bool("training")))?;
        if training.unwrap_or(false) {
            return Err("rrelu: training mode draws random slopes, which is not supported".into());
        }
        let slope = (lo.unwrap_or(0.125) + hi.unwrap_or(1.0 / 3.0)) / 2.0;
        one(b.call(op::LEAKY_RELU, &[x.into(), Arg::A(Attribute::float(slope))]))
    })
    .insert(op::CHAIN_MATMUL, |b, op| {
        let ms = tensor_list(b, op, "matrices")?;
        for &m in &ms {
            if rank_of(b, m)? != 2 {
                return Err("chain_matmul: expects 2-d tensors".into());
            }
        }
        let mut acc = ms[0];
        if ms.len() == 1 {
            return one(b.call(op::CLONE, &[acc.into()]));
        }
        for &m in &ms[1..] {
            acc = b.call(op::MM, &[acc.into(), m.into()])?;
        }
        one(Ok(acc))
    })
    .insert(op::BILINEAR, bilinear)
    .insert(op::MAX_POOL1D_WITH_INDICES, max_pool1d_with_indices)
    .insert(op::LOG_SIGMOID_FORWARD, |b, op| {
        // The buffer is `exp(−|x|)`, what PyTorch's CPU kernel keeps for the backward.
        let x = input(b, op, "self")?;
        let out = b.call(op::LOG_SIGMOID, &[x.into()])?;
        let ax = b.call(op::ABS, &[x.into()])?;
        let nax = b.call(op::NEG, &[ax.into()])?;
        let buf = b.call(op::EXP, &[nax.into()])?;
        Ok(Some(vec![out, buf]))
    })
    .insert(op::_FUSED_RMS_NORM, fused_rms_norm)
    .insert(op::_PAD_CIRCULAR, |b, op| {
        let x = input(b, op, "self")?;
        let pad = b.with_args(op, |a| a.ints("pad"))?.ok_or("_pad_circular: the padding must be constant")?;
        one(pad_circular(b, x, &pad))
    })
    .insert(op::_PAD_ENUM, pad_enum);
}

/// `bilinear(x1, x2, W, b)`: `y[…, o] = Σᵢⱼ x1[…, i]·W[o, i, j]·x2[…, j] + b[o]`, as `x1`
/// times `W` laid out `[i, o·j]`, then a product with `x2` summed over `j`.
fn bilinear(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let (x1, x2, w) = (input(b, op, "input1")?, input(b, op, "input2")?, input(b, op, "weight")?);
    let bias = opt_input(b, op, "bias")?;
    let ws = static_shape(b, w, "bilinear")?;
    let [o, i, j] = ws[..] else { return Err("bilinear: the weight must be 3-d".into()) };
    let s1 = static_shape(b, x1, "bilinear")?;
    let lead = &s1[..s1.len().saturating_sub(1)];
    let wp = b.call(op::PERMUTE, &[w.into(), Arg::A(Attribute::ints(&[1, 0, 2]))])?;
    let wm = b.call(op::RESHAPE, &[wp.into(), Arg::A(Attribute::ints(&[i, o * j]))])?;
    let u = b.call(op::MATMUL, &[x1.into(), wm.into()])?;
    let u = b.call(op::RESHAPE, &[u.into(), Arg::A(Attribute::ints(&[lead, &[o, j]].concat()))])?;
    let x2u = b.call(op::UNSQUEEZE, &[x2.into(), Arg::A(Attribute::Int(-2))])?;
    let p = b.call(op::MUL_TENSOR, &[u.into(), x2u.into()])?;
    let mut y = b.call(op::SUM_DIM_INTLIST, &[p.into(), Arg::A(Attribute::ints(&[-1]))])?;
    if let Some(bias) = bias {
        y = b.call(op::ADD_TENSOR, &[y.into(), bias.into()])?;
    }
    one(Ok(y))
}

/// `max_pool1d_with_indices`: the input gains a unit height, pools with a `[1, k]` window, and
/// loses it again; a flat index over a unit-height plane is the index along the length.
fn max_pool1d_with_indices(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "self")?;
    let (k, s, p, d, ceil) = b.with_args(op, |a| (a.ints("kernel_size"), a.ints("stride"), a.ints("padding"), a.ints("dilation"), a.bool("ceil_mode")))?;
    let one_of = |v: Option<Vec<i64>>, default: Option<i64>| -> Result<i64, String> {
        match v.as_deref() {
            Some([n]) => Ok(*n),
            Some([]) | None => default.ok_or_else(|| "max_pool1d: the kernel size must be constant".to_string()),
            Some(_) => Err("max_pool1d: expects one size per argument".into()),
        }
    };
    let k = one_of(k, None)?;
    let (s, p, d) = (one_of(s, Some(k))?, one_of(p, Some(0))?, one_of(d, Some(1))?);
    let u = b.call(op::UNSQUEEZE, &[x.into(), Arg::A(Attribute::Int(-2))])?;
    let pair = |a: i64, v: i64| Arg::A(Attribute::ints(&[a, v]));
    let r = b.call_n(
        op::MAX_POOL2D_WITH_INDICES,
        &[u.into(), pair(1, k), pair(1, s), pair(0, p), pair(1, d), Arg::A(Attribute::Bool(ceil.unwrap_or(false)))],
    )?;
    let mut out = Vec::new();
    for v in r {
        out.push(b.call(op::SQUEEZE_DIM, &[v.into(), Arg::A(Attribute::Int(-2))])?);
    }
    Ok(Some(out))
}

/// `_fused_rms_norm(x, shape, w, eps)`: `x·rsqrt(mean(x²) + eps)·w` over the trailing `shape`
/// dimensions, and that reciprocal root (kept as size-1 axes); `eps` defaults to the dtype's
/// machine epsilon.
fn fused_rms_norm(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "input")?;
    let w = opt_input(b, op, "weight")?;
    let (shape, eps) = b.with_args(op, |a| (a.ints("normalized_shape"), a.float("eps")))?;
    let n = shape.ok_or("_fused_rms_norm: normalized_shape must be constant")?.len() as i64;
    let r = rank_of(b, x)? as i64;
    if n > r {
        return Err("_fused_rms_norm: normalized_shape has more dimensions than the input".into());
    }
    let eps = match (eps, b.dtype(x)) {
        (Some(e), _) => e,
        (None, Some(DType::F64)) => f64::EPSILON,
        (None, Some(DType::F16)) => 0.000_976_562_5,
        (None, Some(DType::BF16)) => 0.007_812_5,
        (None, _) => f32::EPSILON as f64,
    };
    let dims: Vec<i64> = (r - n..r).collect();
    let sq = b.call(op::MUL_TENSOR, &[x.into(), x.into()])?;
    let ms = b.call(op::MEAN_DIM, &[sq.into(), Arg::A(Attribute::ints(&dims)), Arg::A(Attribute::Bool(true))])?;
    let ms = b.call(op::ADD_SCALAR, &[ms.into(), Arg::A(Attribute::float(eps))])?;
    let rstd = b.call(op::RSQRT, &[ms.into()])?;
    let mut y = b.call(op::MUL_TENSOR, &[x.into(), rstd.into()])?;
    if let Some(w) = w {
        y = b.call(op::MUL_TENSOR, &[y.into(), w.into()])?;
    }
    Ok(Some(vec![y, rstd]))
}

/// Circular padding: along each padded dimension (the last first), the last `l` elements go
/// before and the first `r` after.
fn pad_circular(b: &mut OpBuilder, x: ValueId, pad: &[i64]) -> Result<ValueId, String> {
    let s = static_shape(b, x, "_pad_circular")?;
    if pad.len() % 2 != 0 || pad.len() / 2 > s.len() {
        return Err("_pad_circular: expects a (left, right) pair per padded dimension".into());
    }
    let mut v = x;
    for (i, lr) in pad.chunks(2).enumerate() {
        let d = (s.len() - 1 - i) as i64;
        let (l, r, n) = (lr[0], lr[1], s[d as usize]);
        if l < 0 || r < 0 || l > n || r > n {
            return Err("_pad_circular: each padding must be between 0 and the dimension's size".into());
        }
        let at = |a: i64| Arg::A(Attribute::Int(a));
        let mut parts = Vec::new();
        if l > 0 {
            parts.push(b.call(op::SLICE_TENSOR, &[v.into(), at(d), at(n - l), at(n)])?);
        }
        parts.push(v);
        if r > 0 {
            parts.push(b.call(op::SLICE_TENSOR, &[v.into(), at(d), at(0), at(r)])?);
        }
        if parts.len() > 1 {
            let l = b.list(parts)?;
            v = b.call(op::CAT, &[l.into(), at(d)])?;
        }
    }
    Ok(v)
}

/// `_pad_enum(x, pad, mode, value)`: mode 0 reflects, 1 replicates, 2 wraps around and 3
/// fills with `value` (0 when absent).
fn pad_enum(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "self")?;
    let (pad, mode, value) = b.with_args(op, |a| (a.ints("pad"), a.int("mode"), a.float("value")))?;
    let pad = pad.ok_or("_pad_enum: the padding must be constant")?;
    let padding = Arg::A(Attribute::ints(&pad));
    let k = pad.len() / 2;
    match mode {
        Some(0) | Some(1) if (1..=3).contains(&k) && pad.len() % 2 == 0 => {
            let kind = if mode == Some(0) { "reflection" } else { "replication" };
            one(b.call(&format!("{kind}_pad{k}d"), &[x.into(), padding]))
        }
        Some(2) => one(pad_circular(b, x, &pad)),
        Some(3) => one(b.call(op::CONSTANT_PAD_ND, &[x.into(), padding, Arg::A(Attribute::float(value.unwrap_or(0.0)))])),
        _ => Err(format!("_pad_enum: unsupported mode {mode:?} for {} padded dimensions", k)),
    }
}
