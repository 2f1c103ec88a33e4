//! The convolution half of `fuse-epilogue`: a convolution and the residual add and activation
//! that consume its result become one `backend.kernel {kernel = "conv"}`, which a runtime
//! computes with them applied to the output's tiles as they are finished (no pass of their
//! own over the result).
//!
//! It matches (Edge or aten spellings alike), for an `f32` forward convolution with a bias:
//!
//! ```text
//! y = convolution(x, w, bias)           transposed = false, every option an attribute
//! [y = add.Tensor(y, r) | add.Tensor(r, y)]       r of y's shape (alpha 1)
//! [y = relu(y)                          activation = "relu"
//!    | clamp(y, lo, hi)                 activation = "clamp", min = lo, max = hi
//!    | hardtanh(y, lo, hi)              (relu6 decomposes to clamp(y, 0, 6))
//!    | mul.Tensor(y, div.Scalar(clamp(add.Scalar(y, 3), 0, 6), 6))]
//!                                       activation = "hardswish" (this project's decomposition)
//!    | div.Scalar(mul.Tensor(y, clamp(add.Scalar(y, 3), 0, 6)), 6)
//!                                       activation = "hardswish-product-first" (PyTorch's core
//!                                       decomposition, its clamp as two: min 0, then max 6)
//! ```
//!
//! with a residual, an activation or both, where every intermediate is used only by the next
//! matched op (the hardswish's input by its two ops). In a half-precision program, whose
//! convolution `widen-half-products` computes in `f32` between casts, a cast to `f16` and back
//! right after the convolution (`round_product = "f16"`; with a ReLU in `f16` between the
//! casts, that ReLU too) and one after the activation (`round_result = "f16"`) join the kernel,
//! which applies them as roundings of its `f32` results. The kernel's operands are `x`, `w`,
//! `bias` (and `r`); its attributes say what follows the convolution: `activation` (with
//! `min` and `max` for a clamp) and `residual` (`"lhs"` or `"rhs"`, the side of the sum the
//! residual is on, which the runtime keeps, so the bits are the unfused ops'). The region
//! holds the matched ops, so it stays the kernel's reference semantics: a runtime without a
//! native `conv`, or a call it declines, interprets it.

use dialect_aten::op;
use ir::{Attribute, Context, Module, OpId, ValueId};

use super::epilogue::{base, dims, is_f32, residual};
use super::kernel::KernelMatch;

/// The name of the kernel this half of the pass forms.
pub const KERNEL_NAME: &str = dialect_backend::kernels::CONV;

/// The only op that reads `v`, and `v`'s operand position in it.
fn only_user(m: &Module, v: ValueId) -> Option<(OpId, usize)> {
    match m.uses(v) {
        [u] => Some((u.op, u.index)),
        _ => None,
    }
}

fn number(m: &Module, op: OpId, name: &str) -> Option<f64> {
    m.attr(op, name)?.as_number()
}

/// The single `f32` result of `op`, when it has exactly `operands` operands, no regions and
/// sits in `block`.
fn single_result(m: &Module, op: OpId, operands: usize, block: Option<ir::BlockId>) -> Option<ValueId> {
    let ok = m.operands(op).len() == operands && m.results(op).len() == 1 && m.regions(op).is_empty() && m.parent_block(op) == block;
    let r = *m.results(op).first()?;
    (ok && is_f32(m, r)).then_some(r)
}

/// The activation applied to `y` (by the op or ops that read it), as the kernel's attributes,
/// the ops and their result.
fn activation(m: &Module, y: ValueId, block: Option<ir::BlockId>) -> Option<(Vec<(&'static str, Attribute)>, Vec<OpId>, ValueId)> {
    let uses = m.uses(y);
    if let [u] = uses {
        let o = u.op;
        let r = single_result(m, o, 1, block)?;
        let name = base(m, o)?;
        let clamp = |lo: &str, hi: &str| -> Option<Vec<(&'static str, Attribute)>> {
            let (lo, hi) = (number(m, o, lo)?, number(m, o, hi)?);
            Some(vec![("activation", Attribute::str("clamp")), ("min", Attribute::float(lo)), ("max", Attribute::float(hi))])
        };
        let attrs = match name {
            op::RELU => vec![("activation", Attribute::str("relu"))],
            op::CLAMP => clamp("min", "max")?,
            op::HARDTANH => clamp("min_val", "max_val")?,
            _ => return None,
        };
        return Some((attrs, vec![o], r));
    }
    // hardswish as a decomposition writes it: y + 3, clamped to [0, 6] (by one clamp or by a
    // clamp of the minimum then one of the maximum), then y · (c / 6) (this project's) or
    // (y · c) / 6 (PyTorch's core decomposition).
    let [a, b] = uses else { return None };
    let (add, mul) = if base(m, a.op) == Some(op::ADD_SCALAR) { (a, b) } else { (b, a) };
    if base(m, add.op) != Some(op::ADD_SCALAR) || add.index != 0 || base(m, mul.op) != Some(op::MUL_TENSOR) || mul.index != 0 {
        return None;
    }
    let is = |o: OpId, name: &str, v: f64| number(m, o, name) == Some(v);
    let absent = |o: OpId, name: &str| number(m, o, name).is_none();
    let s = single_result(m, add.op, 1, block).filter(|_| is(add.op, "other", 3.0) && m.attr(add.op, "alpha").is_none_or(|a| a.as_number() == Some(1.0)))?;
    let mut ops = vec![add.op];
    let (c1, _) = only_user(m, s).filter(|&(o, _)| base(m, o) == Some(op::CLAMP))?;
    let mut c = single_result(m, c1, 1, block)?;
    ops.push(c1);
    if !(is(c1, "min", 0.0) && is(c1, "max", 6.0)) {
        let (c2, _) = only_user(m, c).filter(|&(o, _)| base(m, o) == Some(op::CLAMP))?;
        if !(is(c1, "min", 0.0) && absent(c1, "max") && absent(c2, "min") && is(c2, "max", 6.0)) {
            return None;
        }
        c = single_result(m, c2, 1, block)?;
        ops.push(c2);
    }
    let (next, _) = only_user(m, c)?;
    let (name, r) = if base(m, next) == Some(op::DIV_SCALAR) {
        let d = single_result(m, next, 1, block).filter(|_| is(next, "other", 6.0))?;
        if only_user(m, d) != Some((mul.op, 1)) {
            return None;
        }
        ops.extend([next, mul.op]);
        ("hardswish", single_result(m, mul.op, 2, block)?)
    } else if next == mul.op && only_user(m, c) == Some((mul.op, 1)) {
        let p = single_result(m, mul.op, 2, block)?;
        let (div, _) = only_user(m, p).filter(|&(o, _)| base(m, o) == Some(op::DIV_SCALAR) && is(o, "other", 6.0))?;
        ops.extend([mul.op, div]);
        ("hardswish-product-first", single_result(m, div, 1, block)?)
    } else {
        return None;
    };
    Some((vec![("activation", Attribute::str(name))], ops, r))
}

/// Matches the convolution `conv` and what follows it.
pub(crate) fn match_at(ctx: &Context, m: &Module, conv: OpId) -> Option<KernelMatch> {
    if base(m, conv) != Some(op::CONVOLUTION) || m.results(conv).len() != 1 || !m.regions(conv).is_empty() {
        return None;
    }
    let schema = ctx.op_def(m.op_name(conv)).and_then(|d| d.schema.clone())?;
    let c = dialect_aten::infer::Args::bind(ctx, m, conv, &schema).ok()?;
    if c.bool("transposed") != Some(false) || c.is_none("bias") {
        return None;
    }
    let (x, w, bias) = (c.value("input")?, c.value("weight")?, c.value("bias")?);
    // Every option an attribute: the runtime reads them from the region's convolution.
    if m.operands(conv) != [x, w, bias] {
        return None;
    }
    let block = m.parent_block(conv);
    let mut y = m.results(conv)[0];
    let yd = dims(m, y)?;
    if ![x, w, bias, y].iter().all(|&v| is_f32(m, v)) || dims(m, w)?.len() < 3 {
        return None;
    }
    let mut ops = vec![conv];
    let mut operands = vec![x, w, bias];
    let mut attrs = Vec::new();
    let mut act = None;
    if let Some((round, round_ops, r)) = half_round(ctx, m, y, block) {
        attrs.push(("round_product", Attribute::str("f16")));
        ops.extend(round_ops);
        y = r;
        act = round.then(|| vec![("activation", Attribute::str("relu"))]);
    }
    if act.is_none()
        && let Some((add, _)) = only_user(m, y)
        && let Some((r, side)) = residual(m, add, y, &yd)
        && let Some(sum) = single_result(m, add, 2, block)
    {
        ops.push(add);
        operands.push(r);
        attrs.push(("residual", Attribute::str(side)));
        y = sum;
    }
    if act.is_none()
        && let Some((a, act_ops, r)) = activation(m, y, block)
    {
        act = Some(a);
        ops.extend(act_ops);
        y = r;
    }
    if let Some((false, round_ops, r)) = half_round(ctx, m, y, block) {
        attrs.push(("round_result", Attribute::str("f16")));
        ops.extend(round_ops);
        y = r;
    }
    match act {
        Some(a) => attrs.extend(a),
        None if ops.len() == 1 => return None,
        None => attrs.push(("activation", Attribute::str("none"))),
    }
    Some(KernelMatch { ops, operands, result: y, attrs, shared: None })
}

/// The result of `op` when it is a plain cast (`_to_copy` with only `dtype` set) of an `f32`
/// tensor to `f16` (`narrow`) or of an `f16` one to `f32`, of the same shape, in `block`.
fn half_cast(ctx: &Context, m: &Module, op: OpId, narrow: bool, block: Option<ir::BlockId>) -> Option<ValueId> {
    if base(m, op) != Some(op::_TO_COPY) || m.operands(op).len() != 1 || m.results(op).len() != 1 || !m.regions(op).is_empty() || m.parent_block(op) != block {
        return None;
    }
    let schema = ctx.op_def(m.op_name(op)).and_then(|d| d.schema.clone())?;
    let c = dialect_aten::infer::Args::bind(ctx, m, op, &schema).ok()?;
    if !["layout", "device", "pin_memory", "memory_format"].iter().all(|k| c.is_none(k)) {
        return None;
    }
    let (x, y) = (m.operands(op)[0], m.results(op)[0]);
    let dtype = |v: ValueId| m.value_type(v).as_tensor().and_then(|t| t.dtype);
    let (from, to) = if narrow { (ir::DType::F32, ir::DType::F16) } else { (ir::DType::F16, ir::DType::F32) };
    (dtype(x) == Some(from) && dtype(y) == Some(to) && dims(m, x).is_some() && dims(m, x) == dims(m, y)).then_some(y)
}

/// `y` cast to `f16` and back, each value read by nothing else: what `widen-half-products`
/// leaves between a half-precision program's convolution and the `f32` ops after it, the
/// rounding that [`match_at`]'s kernel applies as `round_product` or `round_result`. With
/// `true`, a ReLU in `f16` stands between the casts: on values already rounded it is the
/// `f32` ReLU, so the kernel rounds and then applies it.
fn half_round(ctx: &Context, m: &Module, y: ValueId, block: Option<ir::BlockId>) -> Option<(bool, Vec<OpId>, ValueId)> {
    let (narrow, _) = only_user(m, y)?;
    let h = half_cast(ctx, m, narrow, true, block)?;
    let (next, _) = only_user(m, h)?;
    if let Some(w) = half_cast(ctx, m, next, false, block) {
        return Some((false, vec![narrow, next], w));
    }
    if base(m, next) != Some(op::RELU) || m.operands(next).len() != 1 || m.results(next).len() != 1 || !m.regions(next).is_empty() || m.parent_block(next) != block {
        return None;
    }
    let (widen, _) = only_user(m, m.results(next)[0])?;
    let w = half_cast(ctx, m, widen, false, block)?;
    Some((true, vec![narrow, next, widen], w))
}

/// Fuses every convolution nested in `root` with its residual add and activation, then every
/// concatenation of such kernels along channels ([`match_cat`]) and every 3 × 3 stride-2 max
/// pool of one ([`match_pool`]); returns how many kernels it formed.
pub fn fuse_conv_epilogue(ctx: &Context, m: &mut Module, root: OpId) -> Result<usize, ir::Diagnostic> {
    let convs = super::kernel::fuse_matches(m, root, KERNEL_NAME, |m, o| base(m, o) == Some(op::CONVOLUTION), |m, o| match_at(ctx, m, o))?;
    let cats = super::kernel::fuse_matches(m, root, CAT_KERNEL_NAME, |m, o| base(m, o) == Some(op::CAT), match_cat)?;
    let is_pool = |m: &Module, o: OpId| matches!(base(m, o), Some(op::MAX_POOL2D_WITH_INDICES | op::MAX_POOL2D));
    let pools = super::kernel::fuse_matches(m, root, POOL_KERNEL_NAME, is_pool, match_pool)?;
    Ok(convs + cats + pools)
}

/// The name of the kernel that pools a fused convolution.
pub const POOL_KERNEL_NAME: &str = dialect_backend::kernels::CONV_POOL;

/// Matches a max pool of a 3 × 3 window, stride 2, padding of at most one and no dilation
/// (`max_pool2d_with_indices` whose indices nothing reads, or `max_pool2d`, every option an
/// attribute) of the 4-d result of a `conv` kernel without a residual that nothing else reads
/// (the stems of SqueezeNet, ResNet, ShuffleNet): the kernel it becomes holds both, and a
/// runtime computes the pool from bands of the convolution's rows without its output.
pub(crate) fn match_pool(m: &Module, pool: OpId) -> Option<KernelMatch> {
    let block = m.parent_block(pool);
    let (&[x], results) = (m.operands(pool), m.results(pool)) else { return None };
    let y = *results.first()?;
    let indices_unread = match results {
        [_] => true,
        [_, i] => m.uses(*i).is_empty(),
        _ => false,
    };
    if !indices_unread || !m.regions(pool).is_empty() || !is_f32(m, y) || dims(m, y)?.len() != 4 {
        return None;
    }
    let ints = |key: &str| m.attr(pool, key).map(|a| a.as_int_array());
    let pair = |key: &str, want: &[i64], absent: bool| match ints(key) {
        None => absent,
        Some(Some(v)) => v.iter().all(|x| want.contains(x)) && !v.is_empty() && v.iter().all(|&x| x == v[0]),
        Some(None) => false,
    };
    let window = pair("kernel_size", &[3], false) && pair("stride", &[2], false) && pair("padding", &[0, 1], true) && pair("dilation", &[1], true);
    if !window || m.attr(pool, "ceil_mode").is_some_and(|a| a.as_bool().is_none()) {
        return None;
    }
    let k = m.defining_op(x)?;
    let is_conv = m.op_name(k) == dialect_backend::KERNEL
        && m.attr(k, dialect_backend::kernels::ATTR).and_then(|a| a.as_str()) == Some(KERNEL_NAME)
        && m.attr(k, "residual").is_none();
    if !is_conv || m.parent_block(k) != block || only_user(m, x) != Some((pool, 0)) {
        return None;
    }
    Some(KernelMatch { ops: vec![k, pool], operands: m.operands(k).to_vec(), result: y, attrs: Vec::new(), shared: None })
}

/// The name of the kernel that concatenates fused convolutions.
pub const CAT_KERNEL_NAME: &str = dialect_backend::kernels::CONV_CAT;

/// Matches `cat([k₀, k₁, …], 1)` of a single image whose every part is the result of a `conv`
/// kernel read by nothing else (SqueezeNet's fire modules, Inception's branches): the kernel
/// it becomes holds those kernels, the list and the `cat`, and a runtime computes each
/// convolution straight into its channels of the concatenated result, without the copies and
/// without the parts' own buffers.
pub(crate) fn match_cat(m: &Module, cat: OpId) -> Option<KernelMatch> {
    let block = m.parent_block(cat);
    let &[list] = m.operands(cat) else { return None };
    let y = single_result(m, cat, 1, block)?;
    let yd = dims(m, y)?;
    let dim = m.attr(cat, "dim").and_then(|a| a.as_int())?;
    if yd.len() < 3 || yd[0] != 1 || (dim != 1 && dim != 1 - yd.len() as i64) {
        return None;
    }
    let lop = m.defining_op(list)?;
    if m.op_name(lop) != dialect_prim::LIST_CONSTRUCT || m.parent_block(lop) != block || only_user(m, list) != Some((cat, 0)) {
        return None;
    }
    let parts = m.operands(lop).to_vec();
    if parts.len() < 2 {
        return None;
    }
    let mut ops = Vec::new();
    let mut operands: Vec<ValueId> = Vec::new();
    for (i, &p) in parts.iter().enumerate() {
        let k = m.defining_op(p)?;
        let is_conv = m.op_name(k) == dialect_backend::KERNEL
            && m.attr(k, dialect_backend::kernels::ATTR).and_then(|a| a.as_str()) == Some(KERNEL_NAME);
        if !is_conv || m.parent_block(k) != block || only_user(m, p) != Some((lop, i)) || ops.contains(&k) {
            return None;
        }
        let pd = dims(m, p)?;
        if pd.len() != yd.len() || pd[0] != 1 || pd[2..] != yd[2..] {
            return None;
        }
        for &v in m.operands(k) {
            if !operands.contains(&v) {
                operands.push(v);
            }
        }
        ops.push(k);
    }
    ops.extend([lop, cat]);
    Some(KernelMatch { ops, operands, result: y, attrs: Vec::new(), shared: None })
}
