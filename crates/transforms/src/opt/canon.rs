//! Canonicalization patterns of aten and prim ops, and the fold registry adapter.
//!
//! Views that change nothing (`view`/`reshape`/`expand`/`flatten`/`squeeze`/`slice` to the
//! same type, identity `permute`/`transpose`, `alias`, `detach`, `to` the same dtype) are their
//! input: the result aliases the input either way, so the rewrite is exact whatever writes
//! follow. Rewrites that turn a fresh tensor into its input (`clone`, `x + 0`, `x * 1`, `x / 1`)
//! are applied only when neither value is ever written and the fresh value does not become a
//! function result aliasing an argument or another result; `x + 0` on floats only with `-0.0`
//! (`-0.0 + 0.0` is `+0.0`), `x - 0` only with `+0.0`. `aten._assert_tensor_metadata` is
//! removed, `prim.TupleUnpack(prim.TupleConstruct)` and `prim.ListUnpack(prim.ListConstruct)`
//! (when the list is never written) forward the elements.

use dialect_aten::op;
use super::alias::{AliasDb, is_effect_free, is_mutable_type};
use std::cell::RefCell;
use std::collections::HashMap;
use dialect_prim::fold::Folded;
use ir::{Attribute, Context, Diagnostic, Dim, Module, OpId, OpRef, TypeKind, ValueId};
use pass::{FoldResult, PatternRewriter, RewritePattern, RewriteSet};
use std::sync::Arc;

/// What a pattern looks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    NoopView,
    Clone,
    Identity,
    AssertMetadata,
    TupleUnpack,
    ListUnpack,
}

/// One canonicalization pattern, rooted on one op name.
struct Pattern {
    root: String,
    label: String,
    kind: Kind,
}

/// Views that are their input when the result type equals the input type.
const SAME_TYPE_VIEWS: [OpRef; 10] = [
    op::VIEW,
    op::RESHAPE,
    op::EXPAND,
    op::EXPAND_AS,
    op::VIEW_AS,
    op::FLATTEN_USING_INTS,
    op::SQUEEZE_DIM,
    op::SQUEEZE_DIMS,
    op::SLICE_TENSOR,
    op::TO_DTYPE,
];

/// Views that are always their input.
const IDENTITY_VIEWS: [OpRef; 2] = [op::ALIAS, op::DETACH];

/// Views that are their input for some attributes.
const ATTR_VIEWS: [OpRef; 3] = [op::PERMUTE, op::TRANSPOSE_INT, op::T];

/// Arithmetic with an identity operand.
const IDENTITY_ARITH: [OpRef; 8] = [
    op::ADD_TENSOR,
    op::ADD_SCALAR,
    op::SUB_TENSOR,
    op::SUB_SCALAR,
    op::MUL_TENSOR,
    op::MUL_SCALAR,
    op::DIV_TENSOR,
    op::DIV_SCALAR,
];

fn pattern(root: impl AsRef<str>, kind: Kind) -> Pattern {
    let root = root.as_ref();
    Pattern { root: root.to_string(), label: format!("{kind:?}({root})"), kind }
}

/// The no-op view patterns (what `remove-noop-views` applies).
pub fn noop_view_patterns(set: &mut RewriteSet) {
    for name in SAME_TYPE_VIEWS.iter().chain(&IDENTITY_VIEWS).chain(&ATTR_VIEWS) {
        set.add_pattern(pattern(name, Kind::NoopView));
    }
}

/// Every canonicalization pattern of this module.
pub fn canonicalization_patterns(set: &mut RewriteSet) {
    noop_view_patterns(set);
    set.add_pattern(pattern(op::CLONE, Kind::Clone));
    for name in IDENTITY_ARITH {
        set.add_pattern(pattern(name, Kind::Identity));
    }
    set.add_pattern(pattern(op::_ASSERT_TENSOR_METADATA, Kind::AssertMetadata));
    set.add_pattern(pattern(dialect_prim::TUPLE_UNPACK, Kind::TupleUnpack));
    set.add_pattern(pattern(dialect_prim::LIST_UNPACK, Kind::ListUnpack));
}

/// A context with the prim and aten dialects, to enumerate foldable ops at registration time.
fn dialect_context() -> Context {
    let mut ctx = Context::new();
    dialect_prim::register(&mut ctx);
    dialect_aten::register(&mut ctx);
    ctx
}

/// Adds the prim and aten folders (tensor folds up to `max_elements` elements) and the
/// `prim.Constant` materializer for both dialects.
pub fn add_folders(set: &mut RewriteSet, max_elements: usize) {
    for name in dialect_prim::fold::FOLDABLE {
        set.add_folder(name, |ctx, m, op, consts| {
            dialect_prim::fold::fold(ctx, m, op, consts).map(|r| r.into_iter().map(to_fold_result).collect())
        });
    }
    for name in dialect_aten::fold::foldable_ops(&dialect_context()) {
        set.add_folder(&name, move |ctx, m, op, consts| {
            // Most ops do not fold (an operand is not constant): find that out before asking the
            // alias analysis which constants are written, which costs a walk of the function.
            // Fewer constant operands never let more fold.
            let folded = dialect_aten::fold::fold_with_limit(ctx, m, op, consts, max_elements)?;
            let unwritten = unwritten_constants(ctx, m, op, consts);
            let folded = if unwritten == consts {
                folded
            } else {
                dialect_aten::fold::fold_with_limit(ctx, m, op, &unwritten, max_elements)?
            };
            Some(folded.into_iter().map(to_fold_result).collect())
        });
    }
    for dialect in ["prim", "aten"] {
        set.add_materializer(dialect, dialect_prim::fold::materialize_constant);
    }
}

fn to_fold_result(f: Folded) -> FoldResult {
    match f {
        Folded::Const(a) => FoldResult::Attr(a),
        Folded::Value(v) => FoldResult::Value(v),
    }
}

/// The constant operands, without tensor constants that something writes (their `value` is
/// only their initial contents).
fn unwritten_constants(ctx: &Context, m: &Module, op: OpId, consts: &[Option<Attribute>]) -> Vec<Option<Attribute>> {
    let mut out = consts.to_vec();
    let dense: Vec<usize> = (0..out.len()).filter(|&i| matches!(out[i], Some(Attribute::Dense(_)))).collect();
    if dense.is_empty() {
        return out;
    }
    let Some(func) = enclosing_function(m, op) else { return out };
    if function_is_effect_free(ctx, m, func) {
        return out;
    }
    let db = AliasDb::new(ctx, m, func);
    for i in dense {
        if m.operands(op).get(i).is_none_or(|&v| db.has_writers(v)) {
            out[i] = None;
        }
    }
    out
}

thread_local! {
    /// While a `canonicalize` run is under way: whether each function it has asked about writes
    /// nothing and has no opaque effects. Canonicalization only removes ops and adds pure ones,
    /// so an answer holds for the whole run; outside a run nothing is remembered.
    static EFFECT_FREE: RefCell<Option<HashMap<OpId, bool>>> = const { RefCell::new(None) };
}

/// Runs `f` (one canonicalization run) with the per-run memo of effect-free functions, so that
/// folds and rewrites that must know whether anything writes ask once per function, not once
/// per rewrite.
pub fn with_effect_memo<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(Option<HashMap<OpId, bool>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let prev = self.0.take();
            EFFECT_FREE.with(|c| *c.borrow_mut() = prev);
        }
    }
    let _restore = Restore(EFFECT_FREE.with(|c| c.replace(Some(HashMap::new()))));
    f()
}

/// Whether nothing in `func` writes or has opaque effects (memoized during a run).
fn function_is_effect_free(ctx: &Context, m: &Module, func: OpId) -> bool {
    if let Some(known) = EFFECT_FREE.with(|c| c.borrow().as_ref().and_then(|h| h.get(&func).copied())) {
        return known;
    }
    let free = is_effect_free(ctx, m, func);
    EFFECT_FREE.with(|c| {
        if let Some(h) = c.borrow_mut().as_mut() {
            h.insert(func, free);
        }
    });
    free
}

/// The `func.func` holding `op`.
pub fn enclosing_function(m: &Module, op: OpId) -> Option<OpId> {
    let mut cur = m.parent_op(op);
    while let Some(p) = cur {
        if m.op_name(p) == ir::builtin::FUNC {
            return Some(p);
        }
        cur = m.parent_op(p);
    }
    None
}

/// The full canonicalization set: folders, materializers and patterns.
pub fn canonicalize_set(max_elements: usize) -> RewriteSet {
    let mut set = RewriteSet::new();
    add_folders(&mut set, max_elements);
    canonicalization_patterns(&mut set);
    set
}

/// Whether replacing every use of the fresh value `old` with `new` keeps the program's meaning
/// under TorchScript's reference semantics.
pub fn replace_is_alias_safe(ctx: &Context, m: &Module, old: ValueId, new: ValueId) -> bool {
    if !is_mutable_type(m.value_type(old)) && !is_mutable_type(m.value_type(new)) {
        return true;
    }
    let Some(op) = m.defining_op(old) else { return false };
    let Some(func) = enclosing_function(m, op) else { return false };
    let returned = |v: ValueId| m.uses(v).iter().any(|u| m.op_name(u.op) == ir::builtin::RETURN);
    let effect_free = function_is_effect_free(ctx, m, func);
    if effect_free && !returned(old) {
        // Nothing writes either value, and no function result changes.
        return true;
    }
    let db = AliasDb::new(ctx, m, func);
    if db.has_writers(old) || db.has_writers(new) {
        return false;
    }
    if returned(old) {
        if returned(new) {
            return false;
        }
        let entry = m.regions(func).first().and_then(|&r| m.entry_block(r));
        let args = entry.map(|b| m.block_args(b).to_vec()).unwrap_or_default();
        if args.iter().any(|&a| a == new || db.may_alias(a, new)) || db.is_wildcard(new) {
            return false;
        }
    }
    true
}

fn static_rank(t: &ir::Type) -> Option<usize> {
    t.as_tensor()?.rank()
}

/// Whether two tensor types are equal and name every dimension (no `?`), so equal types mean equal shapes.
fn same_known_type(a: &ir::Type, b: &ir::Type) -> bool {
    a == b
        && a.as_tensor().is_some_and(|t| {
            t.dtype.is_some() && t.shape.as_ref().is_some_and(|s| s.iter().all(|d| !matches!(d, Dim::Unknown)))
        })
}

impl RewritePattern for Pattern {
    fn name(&self) -> &str {
        &self.label
    }

    fn root(&self) -> Option<&str> {
        Some(&self.root)
    }

    fn match_and_rewrite(&self, ctx: &Context, rw: &mut PatternRewriter<'_>, op: OpId) -> Result<bool, Diagnostic> {
        let m = rw.module();
        if !m.contains_op(op) {
            return Ok(false);
        }
        let replacement: Option<Vec<ValueId>> = match self.kind {
            Kind::NoopView => noop_view(m, op).map(|v| vec![v]),
            Kind::Clone => {
                let (Some(&x), Some(&r)) = (m.operands(op).first(), m.results(op).first()) else { return Ok(false) };
                let fmt_ok = m.attr(op, "memory_format").is_none_or(|a| *a == dialect_prim::kinds::none());
                (fmt_ok && m.value_type(x) == m.value_type(r) && replace_is_alias_safe(ctx, m, r, x)).then(|| vec![x])
            }
            Kind::Identity => identity_arith(ctx, m, op).map(|v| vec![v]),
            Kind::AssertMetadata => {
                if !m.results(op).is_empty() {
                    return Ok(false);
                }
                rw.erase_op(op)?;
                return Ok(true);
            }
            Kind::TupleUnpack => {
                let Some(def) = m.operands(op).first().and_then(|&t| m.defining_op(t)) else { return Ok(false) };
                (m.op_name(def) == dialect_prim::TUPLE_CONSTRUCT && m.operands(def).len() == m.results(op).len())
                    .then(|| m.operands(def).to_vec())
            }
            Kind::ListUnpack => {
                let Some(&list) = m.operands(op).first() else { return Ok(false) };
                let Some(def) = m.defining_op(list) else { return Ok(false) };
                let fits = m.op_name(def) == dialect_prim::LIST_CONSTRUCT
                    && m.operands(def).len() == m.results(op).len()
                    && m.operands(def).iter().zip(m.results(op)).all(|(&a, &b)| m.value_type(a) == m.value_type(b));
                let unwritten = fits
                    && enclosing_function(m, op)
                        .is_some_and(|f| function_is_effect_free(ctx, m, f) || !AliasDb::new(ctx, m, f).has_writers(list));
                unwritten.then(|| m.operands(def).to_vec())
            }
        };
        let Some(values) = replacement else { return Ok(false) };
        if values.iter().zip(m.results(op)).any(|(a, b)| a == b) {
            return Ok(false);
        }
        rw.replace_op(op, &values)?;
        Ok(true)
    }
}

/// The input of a view that changes nothing.
fn noop_view(m: &Module, op: OpId) -> Option<ValueId> {
    let name = op::by_name(m.op_name(op))?;
    let x = *m.operands(op).first()?;
    let r = *m.results(op).first()?;
    if m.results(op).len() != 1 {
        return None;
    }
    let (tx, tr) = (m.value_type(x), m.value_type(r));
    if IDENTITY_VIEWS.contains(&name) {
        return (tx == tr).then_some(x);
    }
    if !same_known_type(tx, tr) {
        return None;
    }
    let rank = static_rank(tx)? as i64;
    let norm = |d: i64| if d < 0 { d + rank } else { d };
    match name {
        op::PERMUTE => {
            let dims = m.attr(op, "dims")?.as_int_array()?;
            (dims.len() as i64 == rank && dims.iter().enumerate().all(|(i, &d)| norm(d) == i as i64)).then_some(x)
        }
        op::TRANSPOSE_INT => {
            let (a, b) = (m.attr(op, "dim0")?.as_int()?, m.attr(op, "dim1")?.as_int()?);
            (norm(a) == norm(b)).then_some(x)
        }
        op::T => (rank <= 1).then_some(x),
        op::TO_DTYPE => {
            let copy = m.attr(op, "copy").and_then(Attribute::as_bool).unwrap_or(false);
            let fmt = m.attr(op, "memory_format").is_none_or(|a| *a == dialect_prim::kinds::none());
            (!copy && fmt).then_some(x)
        }
        _ if SAME_TYPE_VIEWS.contains(&name) => Some(x),
        _ => None,
    }
}

/// The scalar value of a constant operand or attribute: a number, or a one-element dense tensor.
fn scalar_of(a: &Attribute, rank: usize) -> Option<f64> {
    match a {
        Attribute::Int(_) | Attribute::Float(_) => a.as_number(),
        Attribute::Dense(d) if d.num_elements() == 1 && d.dims().len() <= rank => d.element_f64(0),
        _ => None,
    }
}

/// `x + 0`, `x - 0`, `x * 1`, `x / 1` → `x`, where exact and alias-safe.
fn identity_arith(ctx: &Context, m: &Module, op: OpId) -> Option<ValueId> {
    let schema = ctx.op_def(m.op_name(op))?.schema.clone()?;
    let binding = dialect_aten::bind_args(&schema, m, op).ok()?;
    let arg = |i: usize| -> Option<Attribute> {
        match binding.get(i)? {
            dialect_aten::ArgSource::Const(a) => Some(a.clone()),
            dialect_aten::ArgSource::Operand(k) => {
                let v = *m.operands(op).get(*k)?;
                super::control::constant_value(m, v).cloned()
            }
        }
    };
    let x = match binding.first()? {
        dialect_aten::ArgSource::Operand(k) => *m.operands(op).get(*k)?,
        _ => return None,
    };
    let r = *m.results(op).first()?;
    let (tx, tr) = (m.value_type(x), m.value_type(r));
    if tx != tr {
        return None;
    }
    let TypeKind::Tensor(t) = tx.kind() else { return None };
    let dtype = t.dtype?;
    let rank = t.rank()?;
    let other = arg(1)?;
    if let Attribute::Dense(d) = &other {
        if d.dtype() != dtype && !(d.dims().is_empty()) {
            return None;
        }
    }
    let c = scalar_of(&other, rank)?;
    let alpha_one = match schema.args.get(2).filter(|a| a.name == "alpha") {
        Some(_) => matches!(arg(2), Some(Attribute::Int(1))) || matches!(arg(2), Some(Attribute::Float(f)) if f.get() == 1.0),
        None => true,
    };
    let float = dtype.is_floating();
    let exact = match schema.name.as_str() {
        "add" if float => alpha_one && c == 0.0 && c.is_sign_negative(),
        "add" => c == 0.0 && alpha_one,
        "sub" if float => alpha_one && c == 0.0 && c.is_sign_positive(),
        "sub" => c == 0.0 && alpha_one,
        "mul" => c == 1.0,
        "div" => c == 1.0 && float,
        _ => false,
    };
    (exact && replace_is_alias_safe(ctx, m, r, x)).then_some(x)
}

/// The canonicalization set as a shared value for the pass registry.
pub fn shared_canonicalize_set(max_elements: usize) -> Arc<RewriteSet> {
    Arc::new(canonicalize_set(max_elements))
}
