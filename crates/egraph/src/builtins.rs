//! The built-in named conditions and appliers that rule files may use.

use crate::analysis::{Graph, dtype_of};
use crate::lang::{Node, Scalar};
use crate::rules::{RuleLibrary, attr, tensor_dtype_is};
use egg::{Id, Symbol};
use ir::module::NamedAttr;
use dialect_aten::op;
use ir::{Attribute, DType, OpRef};

/// Registers every built-in condition and applier.
pub fn register(lib: &mut RuleLibrary) {
    lib.add_condition("same-type", |g, root, a| a.iter().all(|&x| same_type(g, root, x)));
    lib.add_condition("float", |g, _, a| a.iter().all(|&x| tensor_dtype_is(g[x].data.ty.as_ref(), DType::is_floating)));
    lib.add_condition("int", |g, _, a| a.iter().all(|&x| tensor_dtype_is(g[x].data.ty.as_ref(), DType::is_integral)));
    lib.add_condition("bool", |g, _, a| a.iter().all(|&x| tensor_dtype_is(g[x].data.ty.as_ref(), |d| d == DType::Bool)));
    lib.add_condition("same-dtype", |g, root, a| {
        let want = g[root].data.ty.as_ref().and_then(|t| t.as_tensor()).and_then(|t| t.dtype);
        want.is_some() && a.iter().all(|&x| tensor_dtype_is(g[x].data.ty.as_ref(), |d| Some(d) == want))
    });
    lib.add_condition("no-writes", |g, _, _| g.analysis.no_writes);
    lib.add_condition("const", |g, _, a| a.iter().all(|&x| g[x].data.konst.is_some()));
    lib.add_condition("plain-copy", |g, root, a| {
        let Some(&x) = a.first() else { return false };
        same_type(g, root, x)
            && ops_over(g, root, &[op::_TO_COPY, op::TO_DTYPE, op::CLONE], x)
                .iter()
                .all(|n| !has_attr(g, n, "device"))
    });
    lib.add_applier("compose-permute", compose_permute);
    lib.add_applier("identity-permute", |g, root, a| {
        let Some(&x) = a.first() else { return Vec::new() };
        if !same_type(g, root, x) {
            return Vec::new();
        }
        let identity = ops_over(g, root, &[op::PERMUTE], x)
            .iter()
            .any(|n| perm_of(g, n).is_some_and(|p| p.iter().enumerate().all(|(i, &d)| i == d)));
        if identity { vec![x] } else { Vec::new() }
    });
    lib.add_applier("compose-view", compose_view);
    lib.add_applier("transpose-transpose", transpose_transpose);
    lib.add_applier("merge-clamp", merge_clamp);
    lib.add_applier("div-pow2", |g, root, a| div_to_mul(g, root, a, true));
    lib.add_applier("div-reciprocal", |g, root, a| div_to_mul(g, root, a, false));
}

/// Whether two classes have the same known type.
pub fn same_type(g: &Graph, a: Id, b: Id) -> bool {
    match (&g[a].data.ty, &g[b].data.ty) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

/// The nodes of class `root` that are one of `names` applied to class `child` (first operand).
pub fn ops_over(g: &Graph, root: Id, ops: &[OpRef], child: Id) -> Vec<Node> {
    let child = g.find(child);
    g[root]
        .nodes
        .iter()
        .filter(|n| n.op_name().is_some_and(|name| ops.iter().any(|o| o.is(name))) && n.children().first().is_some_and(|&c| g.find(c) == child))
        .cloned()
        .collect()
}

use egg::Language;

fn has_attr(g: &Graph, n: &Node, name: &str) -> bool {
    attr(&g.analysis, n, name).is_some_and(|a| *a != dialect_prim::kinds::none())
}

fn rank(g: &Graph, id: Id) -> Option<usize> {
    g[id].data.ty.as_ref()?.as_tensor()?.rank()
}

/// The normalized permutation of a permute node (its operand's rank known).
fn perm_of(g: &Graph, n: &Node) -> Option<Vec<usize>> {
    let dims = attr(&g.analysis, n, "dims")?.as_int_array()?;
    let r = rank(g, *n.children().first()?)? as i64;
    let mut out = Vec::with_capacity(dims.len());
    for d in dims {
        let d = if d < 0 { d + r } else { d };
        if d < 0 || d >= r {
            return None;
        }
        out.push(d as usize);
    }
    (out.len() as i64 == r).then_some(out)
}

/// `None` when the e-graph's attribute table is full.
fn op_with_attrs(g: &mut Graph, o: OpRef, attrs: Vec<NamedAttr>, args: Vec<Id>) -> Option<Id> {
    let attrs = g.analysis.attr_index(attrs)?;
    Some(g.add(Node::Op { name: Symbol::from(o.name()), attrs, args: args.into() }))
}

/// permute(permute(x, p1), p2) = permute(x, q) with q[j] = p1[p2[j]]; x itself when q is the identity.
fn compose_permute(g: &mut Graph, root: Id, a: &[Id]) -> Vec<Id> {
    let Some(&x) = a.first() else { return Vec::new() };
    let x = g.find(x);
    let mut out = Vec::new();
    let outers: Vec<Node> = g[root].nodes.iter().filter(|n| n.op_name().is_some_and(|name| op::PERMUTE.is(name))).cloned().collect();
    for outer in outers {
        let Some(p2) = perm_of(g, &outer) else { continue };
        let mid = outer.children()[0];
        for inner in ops_over(g, mid, &[op::PERMUTE], x) {
            let Some(p1) = perm_of(g, &inner) else { continue };
            if p1.len() != p2.len() {
                continue;
            }
            let q: Vec<usize> = p2.iter().map(|&j| p1[j]).collect();
            if q.iter().enumerate().all(|(i, &d)| i == d) {
                if same_type(g, root, x) {
                    out.push(x);
                }
            } else {
                let dims = Attribute::ints(&q.iter().map(|&d| d as i64).collect::<Vec<_>>());
                out.extend(op_with_attrs(g, op::PERMUTE, vec![("dims".into(), dims)], vec![x]));
            }
        }
    }
    out
}

/// view(view(x, s1), s2) = view(x, s2).
fn compose_view(g: &mut Graph, root: Id, a: &[Id]) -> Vec<Id> {
    let Some(&x) = a.first() else { return Vec::new() };
    let x = g.find(x);
    let mut out = Vec::new();
    let outers: Vec<Node> = g[root].nodes.iter().filter(|n| n.op_name().is_some_and(|name| op::VIEW.is(name))).cloned().collect();
    for outer in outers {
        let Node::Op { attrs, args, .. } = &outer else { continue };
        if !ops_over(g, args[0], &[op::VIEW], x).is_empty() {
            out.push(g.add(Node::Op { name: Symbol::from(op::VIEW.name()), attrs: *attrs, args: smallvec::smallvec![x] }));
        }
    }
    out
}

/// transpose(transpose(x, a, b), a, b) = x.
fn transpose_transpose(g: &mut Graph, root: Id, a: &[Id]) -> Vec<Id> {
    let Some(&x) = a.first() else { return Vec::new() };
    if !same_type(g, root, x) {
        return Vec::new();
    }
    let Some(r) = rank(g, x) else { return Vec::new() };
    let pair = |g: &Graph, n: &Node| -> Option<(i64, i64)> {
        let norm = |d: i64| if d < 0 { d + r as i64 } else { d };
        let d0 = norm(attr(&g.analysis, n, "dim0")?.as_int()?);
        let d1 = norm(attr(&g.analysis, n, "dim1")?.as_int()?);
        Some((d0.min(d1), d0.max(d1)))
    };
    let outers: Vec<Node> = g[root].nodes.iter().filter(|n| n.op_name().is_some_and(|name| op::TRANSPOSE_INT.is(name))).cloned().collect();
    for outer in outers {
        let Some(po) = pair(g, &outer) else { continue };
        for inner in ops_over(g, outer.children()[0], &[op::TRANSPOSE_INT], x) {
            if pair(g, &inner) == Some(po) {
                return vec![x];
            }
        }
    }
    Vec::new()
}

fn bound(a: Option<&Attribute>) -> Option<Option<f64>> {
    match a {
        None => Some(None),
        Some(a) if dialect_prim::kinds::is_none(a) => Some(None),
        Some(Attribute::Int(i)) => Some(Some(*i as f64)),
        Some(Attribute::Float(f)) if !f.get().is_nan() => Some(Some(f.get())),
        _ => None,
    }
}

/// clamp(clamp(x, a, b), c, d) = clamp(x, max(a, c), min(b, d)) when that interval is not empty.
fn merge_clamp(g: &mut Graph, root: Id, a: &[Id]) -> Vec<Id> {
    let Some(&x) = a.first() else { return Vec::new() };
    if !same_type(g, root, x) {
        return Vec::new();
    }
    let outers: Vec<Node> = g[root].nodes.iter().filter(|n| n.op_name().is_some_and(|name| op::CLAMP.is(name))).cloned().collect();
    let mut out = Vec::new();
    for outer in outers {
        let (Some(c), Some(d)) = (bound(attr(&g.analysis, &outer, "min")), bound(attr(&g.analysis, &outer, "max"))) else { continue };
        for inner in ops_over(g, outer.children()[0], &[op::CLAMP], x) {
            let (Some(a0), Some(b0)) = (bound(attr(&g.analysis, &inner, "min")), bound(attr(&g.analysis, &inner, "max"))) else { continue };
            let lo = match (a0, c) {
                (Some(p), Some(q)) => Some(p.max(q)),
                (p, q) => p.or(q),
            };
            let hi = match (b0, d) {
                (Some(p), Some(q)) => Some(p.min(q)),
                (p, q) => p.or(q),
            };
            if let (Some(l), Some(h)) = (lo, hi) {
                if l > h {
                    continue;
                }
            }
            // Keep each bound's original attribute (int or float) where it wins.
            let pick = |v: Option<f64>, cands: [Option<&Attribute>; 2]| -> Option<Attribute> {
                let v = v?;
                cands.into_iter().flatten().find(|a| bound(Some(a)) == Some(Some(v))).cloned()
            };
            let lo_attr = pick(lo, [attr(&g.analysis, &inner, "min"), attr(&g.analysis, &outer, "min")]);
            let hi_attr = pick(hi, [attr(&g.analysis, &inner, "max"), attr(&g.analysis, &outer, "max")]);
            let mut attrs: Vec<NamedAttr> = Vec::new();
            if let Some(h) = hi_attr {
                attrs.push(("max".into(), h));
            }
            if let Some(l) = lo_attr {
                attrs.push(("min".into(), l));
            }
            out.extend(op_with_attrs(g, op::CLAMP, attrs, vec![x]));
        }
    }
    out
}

/// Whether `v` is a normal (not subnormal), finite value of `dtype`.
fn is_normal_in(v: f64, dtype: DType) -> bool {
    match dtype {
        DType::F32 => (v as f32).is_normal() && (v as f32 as f64) == v,
        DType::F64 => v.is_normal(),
        _ => false,
    }
}

/// x / c = x * (1/c): exact when c is a power of two whose reciprocal is also normal in the
/// computation dtype (`exact`); otherwise (fast math) for any finite non-zero c.
fn div_to_mul(g: &mut Graph, root: Id, a: &[Id], exact: bool) -> Vec<Id> {
    let [x, c] = a[..] else { return Vec::new() };
    let Some(Scalar::Float(bits)) = g[c].data.konst else { return Vec::new() };
    let (Some(cty), Some(rty)) = (g[c].data.ty.clone(), g[root].data.ty.clone()) else { return Vec::new() };
    let (Some(cd), Some(rd)) = (dtype_of(&cty), dtype_of(&rty)) else { return Vec::new() };
    let v = f64::from_bits(bits);
    let r = 1.0 / v;
    let ok = if exact {
        let pow2 = v.is_finite() && v != 0.0 && (v.abs().to_bits() & ((1u64 << 52) - 1)) == 0;
        pow2 && is_normal_in(v, rd) && is_normal_in(r, rd) && is_normal_in(v, cd) && is_normal_in(r, cd)
    } else {
        v.is_finite() && v != 0.0 && r.is_finite() && cd.is_floating()
    };
    if !ok {
        return Vec::new();
    }
    let r = if cd == DType::F32 { r as f32 as f64 } else { r };
    let ty = g.analysis.type_index(&cty);
    let k = g.add(Node::Const { ty, value: Scalar::float(r) });
    vec![g.add(Node::Op { name: Symbol::from(op::MUL_TENSOR.name()), attrs: 0, args: smallvec::smallvec![x, k] })]
}
