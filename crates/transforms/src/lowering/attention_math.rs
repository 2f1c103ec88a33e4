//! Decompositions of the attention ops that also return what the backward pass reads:
//! `_scaled_dot_product_attention_math` (the output and the attention weights) and
//! `_scaled_dot_product_flash_attention_for_cpu` (the output and each query's log-sum-exp of
//! its scores), both from `softmax(q·kᵀ·scale + mask)·v` (a causal mask is −∞ above the
//! diagonal). `_weight_norm_interface` (the
//! weight and the norm it was divided by) sits here too, as another op returning its
//! intermediate for autograd.

use super::decompose::{DecompositionTable, cast, input, opt_input};
use super::rewrite::{Arg, OpBuilder};
use super::stacking::{int, ints};
use super::tensor_ops::{band_mask, swap_last};
use dialect_aten::op;
use ir::{Attribute, DType, OpId, ValueId};

/// Adds the decompositions to `t`.
pub(super) fn add(t: &mut DecompositionTable) {
    t.insert(op::_SCALED_DOT_PRODUCT_ATTENTION_MATH, |b, op| {
        let (o, p, _) = attention(b, op, true)?;
        Ok(Some(vec![o, p]))
    })
    .insert(op::_SCALED_DOT_PRODUCT_FLASH_ATTENTION_FOR_CPU, |b, op| {
        let (o, _, lse) = attention(b, op, false)?;
        Ok(Some(vec![o, lse]))
    })
    .insert(op::_WEIGHT_NORM_INTERFACE, |b, op| {
        let (v, g) = (input(b, op, "v")?, input(b, op, "g")?);
        let dim = b.with_args(op, |a| a.int("dim"))?.ok_or("_weight_norm_interface: dim must be constant")?;
        let r = b.rank(v).ok_or("_weight_norm_interface: the rank of v is unknown")? as i64;
        if dim != 0 && dim != r - 1 {
            return Err(format!("_weight_norm_interface: the fused kernel normalizes over the first or last dim only, got dim {dim}"));
        }
        let n = b.call(op::NORM_EXCEPT_DIM, &[v.into(), Arg::A(Attribute::Int(2)), int(dim)])?;
        let s = b.call(op::DIV_TENSOR, &[g.into(), n.into()])?;
        let w = b.call(op::MUL_TENSOR, &[v.into(), s.into()])?;
        let gs = b.shape(g).ok_or("_weight_norm_interface: the shape of g is unknown")?;
        let n = if b.shape(n) == Some(gs.clone()) {
            n
        } else {
            let s = b.sizes_of(g).ok_or("_weight_norm_interface: the shape of g is unknown")?;
            let s = b.sizes(&s)?;
            b.call(op::RESHAPE, &[n.into(), s])?
        };
        Ok(Some(vec![w, n]))
    });
}

/// The attention output, its weights and the scores' log-sum-exp over the keys.
fn attention(b: &mut OpBuilder, op: OpId, math: bool) -> Result<(ValueId, ValueId, ValueId), String> {
    let what = if math { "_scaled_dot_product_attention_math" } else { "_scaled_dot_product_flash_attention_for_cpu" };
    let (q, k, v) = (input(b, op, "query")?, input(b, op, "key")?, input(b, op, "value")?);
    let mask = opt_input(b, op, "attn_mask")?;
    let (dp, causal, scale, gqa) = b.with_args(op, |a| {
        (a.float("dropout_p").unwrap_or(0.0), a.bool("is_causal").unwrap_or(false), a.float("scale"), math && a.bool("enable_gqa").unwrap_or(false))
    })?;
    if dp != 0.0 {
        return Err(format!("{what}: dropout (dropout_p = {dp}) is random and is not supported"));
    }
    let dt = b.dtype(q).ok_or(format!("{what}: the query's dtype is unknown"))?;
    if !dt.is_floating() {
        return Err(format!("{what}: the query must be floating-point, got {}", dt.torch_name()));
    }
    let qs = super::composite::static_shape(b, q, what)?;
    let ks = super::composite::static_shape(b, k, what)?;
    if qs.len() < 2 || ks.len() < 2 {
        return Err(format!("{what}: query and key must have at least 2 dimensions"));
    }
    let e = qs[qs.len() - 1];
    if !math {
        let vs = super::composite::static_shape(b, v, what)?;
        if qs.len() != 4 || ks.len() != 4 || vs.len() != 4 {
            return Err(format!("{what}: query, key and value must be 4-dimensional"));
        }
        if ks[3] != e || vs[3] != e {
            return Err(format!("{what}: Q/K/V should have the same head size"));
        }
    }
    let scale = match scale {
        Some(s) => s,
        None => 1.0 / (e as f64).sqrt(),
    };
    // The flash kernel accumulates half-precision inputs in f32 and rounds its output once.
    let half = !math && matches!(dt, DType::F16 | DType::BF16);
    let (q, mut k, mut v, mask) = if half {
        let m = match mask {
            Some(m) if b.dtype(m) != Some(DType::Bool) => Some(cast(b, m, DType::F32)?),
            m => m,
        };
        (cast(b, q, DType::F32)?, cast(b, k, DType::F32)?, cast(b, v, DType::F32)?, m)
    } else {
        (q, k, v, mask)
    };
    if gqa && qs.len() >= 3 && ks.len() >= 3 {
        let (hq, hk) = (qs[qs.len() - 3], ks[ks.len() - 3]);
        if hk == 0 || hq % hk != 0 {
            return Err(format!("{what}: the query's {hq} heads are not a multiple of the key's {hk}"));
        }
        if hq != hk {
            // Each key/value head serves `hq / hk` consecutive query heads.
            let r = hq / hk;
            k = repeat_heads(b, k, r, what)?;
            v = repeat_heads(b, v, r, what)?;
        }
    }
    let kt = swap_last(b, k)?;
    let s = b.call(op::MATMUL, &[q.into(), kt.into()])?;
    let mut s = b.call(op::MUL_SCALAR, &[s.into(), Arg::A(Attribute::float(scale))])?;
    if causal {
        let neg_inf = Attribute::float(f64::NEG_INFINITY);
        let (l, sl) = (qs[qs.len() - 2], ks[ks.len() - 2]);
        let keep = band_mask(b, l, sl, "le.Scalar", 0)?;
        let drop = b.call(op::LOGICAL_NOT, &[keep.into()])?;
        s = b.call(op::MASKED_FILL_SCALAR, &[s.into(), drop.into(), Arg::A(neg_inf)])?;
    }
    if let Some(mv) = mask {
        // The mask is added to the scores; these ops take a boolean mask as 0/1 (the public
        // `scaled_dot_product_attention` turns one into −∞ before calling them), and the
        // flash kernel wants the query's dtype.
        let md = b.dtype(mv).ok_or(format!("{what}: the attention mask's dtype is unknown"))?;
        if !math && md != dt {
            return Err(format!("{what}: Attention mask is the same data type as query"));
        }
        let sd = b.dtype(s).unwrap_or(dt);
        let mv = if md == DType::Bool { cast(b, mv, sd)? } else { mv };
        s = b.call(op::ADD_TENSOR, &[s.into(), mv.into()])?;
    }
    let p = b.call(op::_SOFTMAX, &[s.into(), int(-1), Arg::A(Attribute::Bool(false))])?;
    let o = b.call(op::MATMUL, &[p.into(), v.into()])?;
    // The log-sum-exp stays in f32 for half-precision inputs.
    let lse = if math { p } else { b.call(op::LOGSUMEXP, &[s.into(), ints(&[-1])])? };
    let o = if half { cast(b, o, dt)? } else { o };
    Ok((o, p, lse))
}

/// `x` (`[…, h, s, e]`) with each head repeated `r` times in place: `[…, h·r, s, e]`.
fn repeat_heads(b: &mut OpBuilder, x: ValueId, r: i64, what: &str) -> Result<ValueId, String> {
    let s = super::composite::static_shape(b, x, what)?;
    let n = s.len();
    let u = b.call(op::UNSQUEEZE, &[x.into(), int(n as i64 - 2)])?;
    let mut big = s.clone();
    big.insert(n - 2, r);
    let e = b.call(op::EXPAND, &[u.into(), ints(&big)])?;
    let mut out = s;
    out[n - 3] *= r;
    b.call(op::RESHAPE, &[e.into(), ints(&out)])
}
