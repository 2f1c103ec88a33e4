//! The convolution spellings besides `convolution` itself: `_convolution.deprecated` (the
//! first nine arguments are `convolution`'s), `_convolution_mode` (padding `"valid"`, none, or
//! `"same"`, the input padded so the output keeps its size: half of `dilation·(k−1)` on each
//! side, the odd one extra at the end), and `thnn_conv2d`/`slow_conv3d` (plain convolutions
//! with a stride and padding; `kernel_size` must be the weight's).

use super::composite::static_shape;
use super::decompose::{DecompResult, DecompositionTable, input, one, opt_input};
use super::rewrite::{Arg, OpBuilder};
use super::stacking::ints;
use super::tensor_ops::convolution_with_flags;
use dialect_aten::op;
use ir::{Attribute, OpId};

/// Adds the convolution decompositions to `t`.
pub(super) fn add(t: &mut DecompositionTable) {
    t.insert(op::_CONVOLUTION_DEPRECATED, convolution_with_flags)
        .insert(op::_CONVOLUTION_MODE, convolution_mode)
        .insert(op::THNN_CONV2D, |b, op| plain(b, op, 2))
        .insert(op::SLOW_CONV3D, |b, op| plain(b, op, 3));
}

fn convolution(b: &mut OpBuilder, x: ir::ValueId, w: ir::ValueId, bias: Option<ir::ValueId>, stride: &[i64], pad: &[i64], dil: &[i64], groups: i64) -> DecompResult {
    let n = pad.len();
    one(b.call(
        op::CONVOLUTION,
        &[
            x.into(),
            w.into(),
            bias.map(Arg::V).unwrap_or(Arg::A(dialect_prim::kinds::none())),
            ints(stride),
            ints(pad),
            ints(dil),
            Arg::A(Attribute::Bool(false)),
            ints(&vec![0; n]),
            Arg::A(Attribute::Int(groups)),
        ],
    ))
}

/// `v` with one entry per spatial dim (a single entry repeated).
fn per_dim(v: Vec<i64>, n: usize, what: &str, name: &str) -> Result<Vec<i64>, String> {
    match v.len() {
        1 => Ok(vec![v[0]; n]),
        l if l == n => Ok(v),
        l => Err(format!("{what}: expected {name} to have {n} elements, got {l}")),
    }
}

fn convolution_mode(b: &mut OpBuilder, op: OpId) -> DecompResult {
    const WHAT: &str = "_convolution_mode";
    let (x, w) = (input(b, op, "input")?, input(b, op, "weight")?);
    let bias = opt_input(b, op, "bias")?;
    let (stride, padding, dilation, groups) =
        b.with_args(op, |a| (a.ints("stride"), a.constant("padding").and_then(|p| p.as_str().map(String::from)), a.ints("dilation"), a.int("groups")))?;
    let ws = static_shape(b, w, WHAT)?;
    if ws.len() < 3 {
        return Err(format!("{WHAT}: the weight must have at least 3 dimensions, got {}", ws.len()));
    }
    let n = ws.len() - 2;
    let stride = per_dim(stride.ok_or(format!("{WHAT}: stride must be constant"))?, n, WHAT, "stride")?;
    let dil = per_dim(dilation.ok_or(format!("{WHAT}: dilation must be constant"))?, n, WHAT, "dilation")?;
    let groups = groups.ok_or(format!("{WHAT}: groups must be constant"))?;
    match padding.as_deref() {
        Some("valid") => convolution(b, x, w, bias, &stride, &vec![0; n], &dil, groups),
        Some("same") => {
            if stride.iter().any(|&s| s != 1) {
                return Err(format!("{WHAT}: padding='same' is not supported for strided convolutions"));
            }
            let total: Vec<i64> = (0..n).map(|i| dil[i] * (ws[i + 2] - 1)).collect();
            let left: Vec<i64> = total.iter().map(|t| t / 2).collect();
            let mut x = x;
            if total.iter().zip(&left).any(|(t, l)| t - l != *l) {
                // `constant_pad_nd` lists the last dim first: (start, end) pairs.
                let mut pad = Vec::new();
                for i in (0..n).rev() {
                    pad.extend([0, total[i] - 2 * left[i]]);
                }
                x = b.call(op::CONSTANT_PAD_ND, &[x.into(), ints(&pad)])?;
            }
            convolution(b, x, w, bias, &stride, &left, &dil, groups)
        }
        Some(p) => Err(format!("{WHAT}: Invalid padding string: '{p}'")),
        None => Err(format!("{WHAT}: padding must be a constant string")),
    }
}

/// `thnn_conv2d`/`slow_conv3d(x, w, kernel_size, bias, stride, padding)`.
fn plain(b: &mut OpBuilder, op: OpId, n: usize) -> DecompResult {
    let what = if n == 2 { "thnn_conv2d" } else { "slow_conv3d" };
    let (x, w) = (input(b, op, "self")?, input(b, op, "weight")?);
    let bias = opt_input(b, op, "bias")?;
    let (k, stride, padding) = b.with_args(op, |a| (a.ints("kernel_size"), a.ints("stride"), a.ints("padding")))?;
    let k = per_dim(k.ok_or(format!("{what}: kernel_size must be constant"))?, n, what, "kernel_size")?;
    let ws = static_shape(b, w, what)?;
    // PyTorch reads a weight whose shape disagrees with `kernel_size` through the wrong
    // strides; that is refused here.
    if ws.len() != n + 2 || ws[2..] != k[..] {
        return Err(format!("{what}: kernel_size {k:?} does not match the weight's shape {ws:?}"));
    }
    let stride = per_dim(stride.unwrap_or(vec![1]), n, what, "stride")?;
    let pad = per_dim(padding.unwrap_or(vec![0]), n, what, "padding")?;
    convolution(b, x, w, bias, &stride, &pad, &vec![1; n], 1)
}
