//! The `fuse-attention` pass: decomposed scaled-dot-product attention becomes one
//! `backend.kernel {kernel = "attention"}`.
//!
//! It matches, around each `_softmax` over the last dim, the ops a decomposed attention runs
//! (Edge or aten spellings alike):
//!
//! ```text
//! scores = bmm(view/clone…(q), view/clone…(kᵀ))      q: […, L, E], kᵀ: […, E, S]
//! [view…] [mul.Scalar c | div.Scalar c]
//! [where.self(mask, scalar_tensor(f), ·) | where.self(mask, ·, scalar_tensor(f)) | add.Tensor(·, mask)]
//! p = _softmax(·, dim = -1)
//! out = bmm(view…(p), view/clone…(v))                  v: […, S, Ev]
//! [view to [B, H, L, Ev] [permute(0, 2, 1, 3) clone]]
//! ```
//!
//! and moves exactly those ops into the region of a `backend.kernel` whose operands are `q`,
//! `kᵀ` and `v` as the views they are before the copies (and the mask), so the region stays
//! the kernel's reference semantics: a runtime without a native `attention` interprets it.
//! The attributes say what the region computes (`runtime::kernels::attention` reads them):
//! `scale` or `divisor`, `mask` (`"none"`, `"fill"`, `"keep"`, `"add"`) with `fill` and
//! `mask_heads`, and `output` (`"bmm"`, `"split"`, `"permuted"`) with `out_heads`.
//!
//! Every intermediate value must be used only by the next matched op (a score tensor read
//! elsewhere keeps the ops unfused); shapes must be static, q, kᵀ and v of rank 3 or 4 (their
//! leading dims merged into the products' batch), the mask's broadcast must not widen the
//! scores, and the softmax must not change the dtype. The pass runs at Edge level before
//! `fuse-elementwise` (which leaves the kernel's region alone) and `lower-to-backend` (which
//! moves the kernel whole into a partition).

use dialect_aten::op;
use ir::{Attribute, Context, Diagnostic, Module, OpId, OpRef, ValueId};
use pass::{AnalysisManager, Pass, PassResult};
use std::collections::HashSet;

use super::kernel::{KernelMatch, fuse_matches};

/// The name of the kernel the pass forms.
pub const KERNEL_NAME: &str = dialect_backend::kernels::ATTENTION;

/// The ATen op `op` is or mirrors.
fn base(m: &Module, op: OpId) -> Option<OpRef> {
    dialect_edge::as_aten(m.op_name(op))
}

fn def_is(m: &Module, v: ValueId, name: OpRef) -> Option<OpId> {
    m.defining_op(v).filter(|&d| base(m, d) == Some(name))
}

fn dims(m: &Module, v: ValueId) -> Option<Vec<i64>> {
    m.value_type(v).as_tensor()?.static_dims()
}

fn single_use(m: &Module, v: ValueId) -> bool {
    m.uses(v).len() == 1
}

/// Whether `t` is `[…lead, r, c]` with rank 3 or 4 and its leading dims multiplying to `n`.
fn batched(t: &[i64], n: i64, r: i64, c: i64) -> bool {
    matches!(t.len(), 3 | 4) && t[t.len() - 2..] == [r, c] && t[..t.len() - 2].iter().product::<i64>() == n
}

/// Walks back from `v` (an operand of a batched product, `[n, r, c]`) through single-use
/// views and copies; returns the furthest value of rank 3 or 4 that is `[…, r, c]` with `n`
/// batches, and the ops after it.
fn operand_source(m: &Module, v: ValueId, (n, r, c): (i64, i64, i64)) -> Option<(ValueId, Vec<OpId>)> {
    let mut chain = Vec::new();
    let mut best = dims(m, v).filter(|d| batched(d, n, r, c)).map(|_| (v, 0usize));
    let mut cur = v;
    loop {
        let Some(d) = m.defining_op(cur) else { break };
        let view = base(m, d).is_some_and(|b| [op::VIEW, op::CLONE, op::RESHAPE].contains(&b)) || op::_UNSAFE_VIEW.is(m.op_name(d));
        if !view || !single_use(m, cur) {
            break;
        }
        chain.push(d);
        cur = m.operands(d)[0];
        if dims(m, cur).is_some_and(|t| batched(&t, n, r, c)) {
            best = Some((cur, chain.len()));
        }
    }
    let (src, len) = best?;
    Some((src, chain[..len].to_vec()))
}

/// A scalar fill value: a `scalar_tensor` (0-d) op's `s`.
fn fill_of(m: &Module, v: ValueId) -> Option<(OpId, f64)> {
    let d = def_is(m, v, op::SCALAR_TENSOR)?;
    if !m.operands(d).is_empty() || dims(m, v).is_none_or(|t| !t.is_empty()) {
        return None;
    }
    Some((d, m.attr(d, "s")?.as_number()?))
}

fn scalar_attr(m: &Module, op: OpId) -> Option<f64> {
    m.attr(op, "other")?.as_number()
}

/// The single user of `v`, if it has one.
fn only_user(m: &Module, v: ValueId) -> Option<OpId> {
    single_use(m, v).then(|| m.uses(v)[0].op)
}

/// Whether the reduction `op` of a rank-`rank` operand runs over its last dim, keeping it.
fn over_last_kept(m: &Module, op: OpId, rank: usize) -> bool {
    let dim = m.attr(op, "dim").and_then(|a| a.as_int().or_else(|| a.as_int_array().filter(|d| d.len() == 1).map(|d| d[0])));
    let keep = m.attr(op, "keepdim").and_then(|a| a.as_bool()) == Some(true);
    keep && dim.is_some_and(|d| d == -1 || d == rank as i64 - 1)
}

/// The ops `_safe_softmax` decomposes into around `p = _softmax(x)`, and their result:
///
/// ```text
/// rows = all(eq.Scalar(x, -inf), dim = -1, keepdim)    (or logical_not(any(logical_not(·))))
/// where.self(rows, full_like(p, 0) | zeros_like(p), p)
/// ```
///
/// A row whose scores are all `-inf` gives zeros rather than NaN; `x` is read by the softmax
/// and the comparison only, `p` by the zeros' shape and the `where` only.
fn safe_softmax_tail(m: &Module, sm: OpId, x: ValueId, p: ValueId) -> Option<(Vec<OpId>, ValueId)> {
    let rank = dims(m, x)?.len();
    let xu = m.uses(x);
    if xu.len() != 2 {
        return None;
    }
    let eq = xu.iter().map(|u| u.op).find(|&o| o != sm)?;
    if base(m, eq) != Some(op::EQ_SCALAR) || m.operands(eq).first() != Some(&x) || scalar_attr(m, eq) != Some(f64::NEG_INFINITY) {
        return None;
    }
    let mut ops = vec![eq];
    let eqv = m.results(eq)[0];
    let u = only_user(m, eqv)?;
    let rows = match base(m, u) {
        Some(op::ALL_DIM) if over_last_kept(m, u, rank) => {
            ops.push(u);
            m.results(u)[0]
        }
        Some(op::LOGICAL_NOT) => {
            let any = only_user(m, m.results(u)[0])?;
            if base(m, any) != Some(op::ANY_DIM) || !over_last_kept(m, any, rank) {
                return None;
            }
            let not = only_user(m, m.results(any)[0])?;
            if base(m, not) != Some(op::LOGICAL_NOT) {
                return None;
            }
            ops.extend([u, any, not]);
            m.results(not)[0]
        }
        _ => return None,
    };
    let w = only_user(m, rows)?;
    let [c, z, keep] = *m.operands(w) else { return None };
    if base(m, w) != Some(op::WHERE_SELF) || c != rows || keep != p {
        return None;
    }
    let zop = m.defining_op(z)?;
    let zero = match base(m, zop) {
        Some(op::FULL_LIKE) => m.attr(zop, "fill_value").and_then(|a| a.as_number()) == Some(0.0),
        Some(op::ZEROS_LIKE) => true,
        _ => false,
    };
    if !zero || m.operands(zop).first() != Some(&p) || !single_use(m, z) || m.value_type(z) != m.value_type(p) {
        return None;
    }
    let pu: HashSet<OpId> = m.uses(p).iter().map(|u| u.op).collect();
    if pu != HashSet::from([zop, w]) || m.value_type(m.results(w)[0]) != m.value_type(p) {
        return None;
    }
    ops.extend([zop, w]);
    Some((ops, m.results(w)[0]))
}

/// Matches the attention around the softmax `sm`.
fn match_at(m: &Module, sm: OpId) -> Option<KernelMatch> {
    let x = *m.operands(sm).first()?;
    let p = *m.results(sm).first()?;
    let xd = dims(m, x)?;
    let dim = m.attr(sm, "dim")?.as_int()?;
    if xd.is_empty() || !(dim == -1 || dim == xd.len() as i64 - 1) || m.attr(sm, "half_to_float").and_then(|a| a.as_bool()) == Some(true) {
        return None;
    }
    if m.value_type(x) != m.value_type(p) {
        return None;
    }
    let mut ops: Vec<OpId> = vec![sm];
    let mut attrs: Vec<(&'static str, Attribute)> = Vec::new();
    // The probabilities the second product reads: the softmax's, or a safe softmax's.
    let p = if single_use(m, x) && single_use(m, p) {
        p
    } else {
        let (tail, safe) = safe_softmax_tail(m, sm, x, p)?;
        ops.extend(tail);
        attrs.push(("safe_softmax", Attribute::Bool(true)));
        safe
    };
    let mut operands_mask = None;
    let mut shared_fill = None;
    let mut mask_heads = 0i64;
    // The mask.
    let mut s = x;
    if let Some(w) = def_is(m, s, op::WHERE_SELF) {
        let [c, a, b] = *m.operands(w) else { return None };
        let bool_mask = m.value_type(c).as_tensor().and_then(|t| t.dtype) == Some(ir::DType::Bool);
        let (kind, fill, scores) = match (fill_of(m, a), fill_of(m, b)) {
            (Some(f), _) => ("fill", f, b),
            (None, Some(f)) => ("keep", f, a),
            _ => return None,
        };
        if !bool_mask || m.value_type(scores) != m.value_type(s) || !single_use(m, scores) {
            return None;
        }
        ops.push(w);
        if single_use(m, m.results(fill.0)[0]) {
            ops.push(fill.0);
        } else {
            shared_fill = Some(fill.0);
        }
        attrs.push(("mask", Attribute::str(kind)));
        attrs.push(("fill", Attribute::float(fill.1)));
        operands_mask = Some(c);
        mask_heads = if xd.len() == 4 { xd[1] } else { 0 };
        s = scores;
    } else if let Some(add) = def_is(m, s, op::ADD_TENSOR) {
        let [a, b] = *m.operands(add) else { return None };
        if m.attr(add, "alpha").is_some_and(|al| al.as_number() != Some(1.0)) {
            return None;
        }
        // The scores are the side computed from a product; the other is the mask.
        let from_product = |v: ValueId| {
            m.defining_op(v).is_some_and(|d| base(m, d).is_some_and(|b| [op::BMM, op::VIEW, op::MUL_SCALAR, op::DIV_SCALAR].contains(&b)))
        };
        let (scores, mask) = if from_product(a) { (a, b) } else { (b, a) };
        if m.value_type(scores) != m.value_type(s) || m.value_type(mask).as_tensor().and_then(|t| t.dtype) != m.value_type(s).as_tensor().and_then(|t| t.dtype) || !single_use(m, scores) {
            return None;
        }
        ops.push(add);
        attrs.push(("mask", Attribute::str("add")));
        operands_mask = Some(mask);
        mask_heads = if xd.len() == 4 { xd[1] } else { 0 };
        s = scores;
    }
    if operands_mask.is_some() && !matches!(xd.len(), 3 | 4) {
        return None;
    }
    // The scale.
    for (name, attr) in [(op::MUL_SCALAR, "scale"), (op::DIV_SCALAR, "divisor")] {
        if let Some(d) = def_is(m, s, name) {
            let c = scalar_attr(m, d)?;
            let src = m.operands(d)[0];
            if !single_use(m, src) {
                return None;
            }
            ops.push(d);
            attrs.push((attr, Attribute::float(c)));
            s = src;
            break;
        }
    }
    // Views back to the first product.
    while let Some(d) = def_is(m, s, op::VIEW) {
        let src = m.operands(d)[0];
        if !single_use(m, src) {
            return None;
        }
        ops.push(d);
        s = src;
    }
    let bmm1 = def_is(m, s, op::BMM)?;
    let sd = dims(m, s)?;
    let [n, l, sl] = *sd.as_slice() else { return None };
    if !batched(&xd, n, l, sl) {
        return None;
    }
    ops.push(bmm1);
    let [qa, kb] = *m.operands(bmm1) else { return None };
    let e = *dims(m, qa)?.last()?;
    let (q, qchain) = operand_source(m, qa, (n, l, e))?;
    let (kt, kchain) = operand_source(m, kb, (n, e, sl))?;
    ops.extend(qchain);
    ops.extend(kchain);
    // Forward: views of the probabilities to the second product.
    let mut pv = p;
    let bmm2 = loop {
        let u = m.uses(pv).first()?.op;
        match base(m, u) {
            Some(op::VIEW) => {
                ops.push(u);
                pv = m.results(u)[0];
                if !single_use(m, pv) {
                    return None;
                }
            }
            Some(op::BMM) if m.operands(u)[0] == pv && m.operands(u)[1] != pv => break u,
            _ => return None,
        }
    };
    if dims(m, pv)? != [n, l, sl] {
        return None;
    }
    ops.push(bmm2);
    let vb = m.operands(bmm2)[1];
    let ev = *dims(m, vb)?.last()?;
    let (v, vchain) = operand_source(m, vb, (n, sl, ev))?;
    ops.extend(vchain);
    // The result, and the views and copy that lay it out.
    let mut result = m.results(bmm2)[0];
    let mut output = ("bmm", 0i64);
    if single_use(m, result) {
        let u = m.uses(result)[0].op;
        let ud = m.results(u).first().and_then(|&r| dims(m, r));
        if base(m, u) == Some(op::VIEW)
            && let Some(ud) = ud
            && ud.len() == 4
            && ud[0] * ud[1] == n
            && ud[2..] == [l, ev]
        {
            ops.push(u);
            result = m.results(u)[0];
            output = ("split", ud[1]);
            if single_use(m, result) {
                let pu = m.uses(result)[0].op;
                let perm = m.attr(pu, "dims").and_then(|a| a.as_int_array());
                if base(m, pu) == Some(op::PERMUTE) && perm.as_deref() == Some(&[0, 2, 1, 3][..]) {
                    let pr = m.results(pu)[0];
                    if single_use(m, pr) && base(m, m.uses(pr)[0].op) == Some(op::CLONE) {
                        let cl = m.uses(pr)[0].op;
                        ops.push(pu);
                        ops.push(cl);
                        result = m.results(cl)[0];
                        output = ("permuted", ud[1]);
                    }
                }
            }
        }
    }
    attrs.push(("output", Attribute::str(output.0)));
    if output.1 != 0 {
        attrs.push(("out_heads", Attribute::Int(output.1)));
    }
    if operands_mask.is_some() {
        attrs.push(("mask_heads", Attribute::Int(mask_heads)));
    }
    // Every op in one block; the operands must come from outside the matched ops.
    let block = m.parent_block(sm);
    if ops.iter().any(|&o| m.parent_block(o) != block || !m.regions(o).is_empty()) {
        return None;
    }
    let mut operands = vec![q, kt, v];
    operands.extend(operands_mask);
    let set: HashSet<OpId> = ops.iter().copied().collect();
    if operands.iter().any(|&o| m.defining_op(o).is_some_and(|d| set.contains(&d))) {
        return None;
    }
    // Every operand of a matched op is a matched result, a kernel operand, or the shared fill.
    let inside: HashSet<ValueId> = ops.iter().flat_map(|&o| m.results(o).iter().copied()).collect();
    let shared: Option<ValueId> = shared_fill.map(|f| m.results(f)[0]);
    for &o in &ops {
        for &v in m.operands(o) {
            if !inside.contains(&v) && !operands.contains(&v) && Some(v) != shared {
                return None;
            }
        }
    }
    Some(KernelMatch { ops, operands, result, attrs, shared: shared_fill })
}

/// Fuses every attention nested in `root`; returns how many.
pub fn fuse_attention(m: &mut Module, root: OpId) -> Result<usize, Diagnostic> {
    fuse_matches(m, root, KERNEL_NAME, |m, o| base(m, o) == Some(op::_SOFTMAX), match_at)
}

/// The `fuse-attention` pass.
#[derive(Clone, Copy, Debug, Default)]
pub struct FuseAttention;

impl Pass for FuseAttention {
    fn name(&self) -> &str {
        "fuse-attention"
    }

    fn description(&self) -> &str {
        "Replace decomposed attention (bmm, scale, mask, softmax, bmm) by a backend.kernel {kernel = \"attention\"}"
    }

    fn run(&mut self, _ctx: &Context, m: &mut Module, op: OpId, am: &mut AnalysisManager) -> Result<PassResult, Diagnostic> {
        let n = fuse_attention(m, op)?;
        pass::log!(am, pass::LogLevel::Dump, "{n} attention(s) fused");
        Ok(PassResult::from_changed(n > 0))
    }
}
