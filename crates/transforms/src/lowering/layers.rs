//! Decompositions of PyTorch's composite layer ops: `bilinear`, `chain_matmul`,
//! `max_pool1d_with_indices` (as a 2-d pool over a unit height), `_prelu_kernel` and `rrelu`
//! in evaluation mode (a leaky ReLU with the mean slope; training draws random slopes).

use super::composite::static_shape;
use super::decompose::{DecompResult, DecompositionTable, input, one, opt_input, rank_of};
use super::rewrite::{Arg, OpBuilder};
use super::stacking::tensor_list;
use ir::{Attribute, OpId};

/// Adds the layers' decompositions to `t`.
pub(super) fn add(t: &mut DecompositionTable) {
    t.insert("aten._prelu_kernel", |b, op| {
        let (x, w) = (input(b, op, "self")?, input(b, op, "weight")?);
        let pos = b.call("gt.Scalar", &[x.into(), Arg::A(Attribute::Int(0))])?;
        let neg = b.call("mul.Tensor", &[w.into(), x.into()])?;
        one(b.call("where.self", &[pos.into(), x.into(), neg.into()]))
    })
    .insert("aten.rrelu", |b, op| {
        let x = input(b, op, "self")?;
        let (lo, hi, training) = b.with_args(op, |a| (a.float("lower"), a.float("upper"), a.bool("training")))?;
        if training.unwrap_or(false) {
            return Err("rrelu: training mode draws random slopes, which is not supported".into());
        }
        let slope = (lo.unwrap_or(0.125) + hi.unwrap_or(1.0 / 3.0)) / 2.0;
        one(b.call("leaky_relu", &[x.into(), Arg::A(Attribute::float(slope))]))
    })
    .insert("aten.chain_matmul", |b, op| {
        let ms = tensor_list(b, op, "matrices")?;
        for &m in &ms {
            if rank_of(b, m)? != 2 {
                return Err("chain_matmul: expects 2-d tensors".into());
            }
        }
        let mut acc = ms[0];
        if ms.len() == 1 {
            return one(b.call("clone", &[acc.into()]));
        }
        for &m in &ms[1..] {
            acc = b.call("mm", &[acc.into(), m.into()])?;
        }
        one(Ok(acc))
    })
    .insert("aten.bilinear", bilinear)
    .insert("aten.max_pool1d_with_indices", max_pool1d_with_indices);
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
    let wp = b.call("permute", &[w.into(), Arg::A(Attribute::ints(&[1, 0, 2]))])?;
    let wm = b.call("reshape", &[wp.into(), Arg::A(Attribute::ints(&[i, o * j]))])?;
    let u = b.call("matmul", &[x1.into(), wm.into()])?;
    let u = b.call("reshape", &[u.into(), Arg::A(Attribute::ints(&[lead, &[o, j]].concat()))])?;
    let x2u = b.call("unsqueeze", &[x2.into(), Arg::A(Attribute::Int(-2))])?;
    let p = b.call("mul.Tensor", &[u.into(), x2u.into()])?;
    let mut y = b.call("sum.dim_IntList", &[p.into(), Arg::A(Attribute::ints(&[-1]))])?;
    if let Some(bias) = bias {
        y = b.call("add.Tensor", &[y.into(), bias.into()])?;
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
    let u = b.call("unsqueeze", &[x.into(), Arg::A(Attribute::Int(-2))])?;
    let pair = |a: i64, v: i64| Arg::A(Attribute::ints(&[a, v]));
    let r = b.call_n(
        "aten.max_pool2d_with_indices",
        &[u.into(), pair(1, k), pair(1, s), pair(0, p), pair(1, d), Arg::A(Attribute::Bool(ceil.unwrap_or(false)))],
    )?;
    let mut out = Vec::new();
    for v in r {
        out.push(b.call("squeeze.dim", &[v.into(), Arg::A(Attribute::Int(-2))])?);
    }
    Ok(Some(out))
}
