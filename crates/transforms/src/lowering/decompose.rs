//! Decompositions of non-core ATen ops into core ATen, table-driven (`decompose` pass).
//!
//! A [`DecompositionTable`] maps an op name (`aten.linear`) to a Rust function that builds the
//! replacement with an [`OpBuilder`] placed before the op and returns the replacement values
//! (`Ok(None)` leaves the op alone, e.g. `dropout` in training mode). Users add their own
//! entries with [`DecompositionTable::insert`]. Replacements may themselves use non-core ops
//! with an entry (`scaled_dot_product_attention` builds `aten.matmul`): the driver decomposes
//! newly created ops too, to a fixed point.

use dialect_prim::kinds::{Kind as PK, TypeExt as _};
use super::rewrite::{Arg, OpBuilder};
use super::tensor_ops::*;
use dialect_aten::infer::{Ranges, refine};
use dialect_aten::op;
use ir::{Attribute, Context, DType, Diagnostic, Dim, Module, OpId, ValueId, WalkOrder};
use pass::{AnalysisManager, Pass, PassOptions, PassResult};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

/// What a decomposition returns: the replacement values (one per result), or `None` to leave the op.
pub type DecompResult = Result<Option<Vec<ValueId>>, String>;

/// A decomposition: builds core ops before `op` and returns the values replacing its results.
pub type DecompFn = Arc<dyn Fn(&mut OpBuilder, OpId) -> DecompResult + Send + Sync>;

/// Op name → decomposition.
#[derive(Clone, Default)]
pub struct DecompositionTable {
    map: BTreeMap<String, DecompFn>,
}

impl std::fmt::Debug for DecompositionTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.map.keys()).finish()
    }
}

impl DecompositionTable {
    pub fn new() -> DecompositionTable {
        DecompositionTable::default()
    }

    /// Adds (or replaces) the decomposition of `op`: its handle (`dialect_aten::op::LINEAR`), or
    /// the full name of an op declared at run time (an op library's).
    pub fn insert(&mut self, op: impl AsRef<str>, f: impl Fn(&mut OpBuilder, OpId) -> DecompResult + Send + Sync + 'static) -> &mut Self {
        self.map.insert(op.as_ref().to_string(), Arc::new(f));
        self
    }

    pub fn get(&self, op: &str) -> Option<&DecompFn> {
        self.map.get(op)
    }

    pub fn contains(&self, op: &str) -> bool {
        self.map.contains_key(op)
    }

    /// The op names with a decomposition, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.map.keys().map(String::as_str)
    }

    /// Keeps only the entries whose name (with or without the `aten.` prefix) is in `names`.
    pub fn retain(&mut self, names: &[String]) {
        self.map.retain(|k, _| names.iter().any(|n| n == k || format!("aten.{n}") == *k));
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// [`DecompositionTable::core_aten`], built once per process and shared (what
    /// `runtime::CompileOptions` starts from).
    pub fn core_aten_shared() -> Arc<DecompositionTable> {
        static TABLE: std::sync::OnceLock<Arc<DecompositionTable>> = std::sync::OnceLock::new();
        TABLE.get_or_init(|| Arc::new(DecompositionTable::core_aten())).clone()
    }

    /// The built-in table: the non-core ops `torch.export` leaves and those users meet most.
    pub fn core_aten() -> DecompositionTable {
        let mut t = DecompositionTable::new();
        t.insert(op::_ASSERT_TENSOR_METADATA, |_, _| Ok(Some(vec![])))
            .insert(op::DROPOUT, dropout)
            .insert(op::CONTIGUOUS, |b, op| {
                let x = input(b, op, "self")?;
                one(b.call(op::CLONE, &[x.into(), Arg::A(Attribute::Int(0))]))
            })
            .insert(op::DETACH, |b, op| Ok(Some(vec![input(b, op, "self")?])))
            .insert(op::LIFT_FRESH_COPY, |b, op| {
                let x = input(b, op, "self")?;
                one(b.call(op::CLONE, &[x.into()]))
            })
            .insert(op::T, t_op)
            .insert(op::TRANSPOSE_INT, transpose)
            .insert(op::RESHAPE, reshape)
            .insert(op::FLATTEN_USING_INTS, flatten)
            .insert(op::UNFLATTEN_INT, unflatten)
            .insert(op::CHUNK, split_like)
            .insert(op::SPLIT_TENSOR, split_like)
            .insert(op::RSUB_TENSOR, rsub_tensor)
            .insert(op::RSUB_SCALAR, rsub_scalar)
            .insert(op::EXPAND_AS, |b, op| {
                let (x, o) = (input(b, op, "self")?, input(b, op, "other")?);
                let sizes = b.sizes_of(o).ok_or("expand_as: the other tensor's shape is unknown")?;
                let s = b.sizes(&sizes)?;
                one(b.call(op::EXPAND, &[x.into(), s]))
            })
            .insert(op::TYPE_AS, |b, op| {
                let (x, o) = (input(b, op, "self")?, input(b, op, "other")?);
                cast_to(b, x, b.dtype(o))
            })
            .insert(op::TO_DTYPE, to_dtype)
            .insert(op::TO_DTYPE_LAYOUT, to_dtype)
            .insert(op::TO_DEVICE, to_dtype)
            .insert(op::LINEAR, linear)
            .insert(op::MATMUL, matmul)
            .insert(op::_CONVOLUTION, convolution_with_flags)
            .insert(op::CONV1D, conv)
            .insert(op::CONV2D, conv)
            .insert(op::CONV3D, conv)
            .insert(op::BATCH_NORM, batch_norm)
            .insert(op::LAYER_NORM, layer_norm)
            .insert(op::GROUP_NORM, group_norm)
            .insert(op::SOFTMAX_INT, |b, op| softmax(b, op, "_softmax"))
            .insert(op::LOG_SOFTMAX_INT, |b, op| softmax(b, op, "_log_softmax"))
            .insert(op::SCALED_DOT_PRODUCT_ATTENTION, sdpa)
            .insert(op::SILU, |b, op| {
                let x = float_input(b, op, "silu")?;
                let s = b.call(op::SIGMOID, &[x.into()])?;
                one(b.call(op::MUL_TENSOR, &[x.into(), s.into()]))
            })
            .insert(op::HARDSIGMOID, |b, op| {
                let x = float_input(b, op, "hardsigmoid")?;
                one(hardsigmoid(b, x))
            })
            .insert(op::HARDSWISH, |b, op| {
                let x = float_input(b, op, "hardswish")?;
                let h = hardsigmoid(b, x)?;
                one(b.call(op::MUL_TENSOR, &[x.into(), h.into()]))
            })
            .insert(op::RELU6, |b, op| {
                let x = input(b, op, "self")?;
                one(b.call(op::CLAMP, &[x.into(), Arg::A(Attribute::Int(0)), Arg::A(Attribute::Int(6))]))
            })
            .insert(op::MISH, |b, op| {
                let x = float_input(b, op, "mish")?;
                let sp = softplus(b, x)?;
                let t = b.call(op::TANH, &[sp.into()])?;
                one(b.call(op::MUL_TENSOR, &[x.into(), t.into()]))
            })
            .insert(op::SOFTPLUS, |b, op| {
                let beta = b.with_args(op, |a| a.float("beta"))?.unwrap_or(1.0);
                let th = b.with_args(op, |a| a.float("threshold"))?.unwrap_or(20.0);
                if beta != 1.0 || th != 20.0 {
                    return Ok(None);
                }
                let x = float_input(b, op, "softplus")?;
                one(softplus(b, x))
            })
            .insert(op::TRIL, |b, op| tri(b, op, "le.Scalar"))
            .insert(op::TRIU, |b, op| tri(b, op, "ge.Scalar"))
            .insert(op::ONES, |b, op| fill_like_new(b, op, 1))
            .insert(op::ZEROS, |b, op| fill_like_new(b, op, 0))
            .insert(op::NEW_ONES, |b, op| new_filled(b, op, Some(Attribute::Int(1))))
            .insert(op::NEW_ZEROS, |b, op| new_filled(b, op, Some(Attribute::Int(0))))
            .insert(op::NEW_EMPTY, |b, op| new_filled(b, op, Some(Attribute::Int(0))))
            .insert(op::NEW_FULL, |b, op| new_filled(b, op, None))
            .insert(op::ONES_LIKE, |b, op| fill_like(b, op, 1))
            .insert(op::ZEROS_LIKE, |b, op| fill_like(b, op, 0))
            .insert(op::ARANGE, arange)
            .insert(op::ARANGE_START, arange)
            .insert(op::MASKED_FILL_SCALAR, masked_fill_scalar)
            .insert(op::MASKED_FILL_TENSOR, |b, op| {
                let (x, mask, v) = (input(b, op, "self")?, input(b, op, "mask")?, input(b, op, "value")?);
                one(b.call(op::WHERE_SELF, &[mask.into(), v.into(), x.into()]))
            })
            .insert(op::SUM, |b, op| reduce_all(b, op, "sum.dim_IntList"))
            .insert(op::FLOOR_DIVIDE, |b, op| {
                let (x, o) = (input(b, op, "self")?, input(b, op, "other")?);
                one(b.call(op::DIV_TENSOR_MODE, &[x.into(), o.into(), Arg::A(Attribute::str("floor"))]))
            })
            .insert(op::__AND___TENSOR, |b, op| binary_rename(b, op, "bitwise_and.Tensor"))
            .insert(op::__OR___TENSOR, |b, op| binary_rename(b, op, "bitwise_or.Tensor"))
            .insert(op::__XOR___TENSOR, |b, op| binary_rename(b, op, "bitwise_xor.Tensor"))
            .insert(op::MAX_POOL2D, |b, op| {
                let x = input(b, op, "self")?;
                let mut consts = b.with_args(op, |a| {
                    ["kernel_size", "stride", "padding", "dilation", "ceil_mode"].map(|n| a.constant(n).unwrap_or(dialect_prim::kinds::none()))
                })?;
                if consts[1] == dialect_prim::kinds::none() || consts[1].as_array().is_some_and(|a| a.is_empty()) {
                    consts[1] = consts[0].clone();
                }
                let mut args = vec![Arg::V(x)];
                args.extend(consts.into_iter().map(Arg::A));
                Ok(b.call_n(op::MAX_POOL2D_WITH_INDICES, &args)?.first().map(|&v| vec![v]))
            })
            .insert(op::ADAPTIVE_AVG_POOL2D, |b, op| {
                let x = input(b, op, "self")?;
                let os = b.with_args(op, |a| a.ints("output_size"))?.ok_or("adaptive_avg_pool2d: output_size must be constant")?;
                one(b.call(op::_ADAPTIVE_AVG_POOL2D, &[x.into(), Arg::A(Attribute::ints(&os))]))
            })
            .insert(op::SQUARE, |b, op| {
                let x = input(b, op, "self")?;
                // A bool tensor squares as int64, as `pow(x, 2)` promotes it.
                let x = if b.dtype(x) == Some(DType::Bool) { cast(b, x, DType::I64)? } else { x };
                one(b.call(op::MUL_TENSOR, &[x.into(), x.into()]))
            })
            .insert(op::CLAMP_MIN, |b, op| {
                let x = input(b, op, "self")?;
                let v = b.with_args(op, |a| a.constant("min"))?.ok_or("clamp_min: bound must be constant")?;
                one(b.call(op::CLAMP, &[x.into(), Arg::A(v)]))
            })
            .insert(op::CLAMP_MAX, |b, op| {
                let x = input(b, op, "self")?;
                let v = b.with_args(op, |a| a.constant("max"))?.ok_or("clamp_max: bound must be constant")?;
                one(b.call(op::CLAMP, &[x.into(), Arg::A(dialect_prim::kinds::none()), Arg::A(v)]))
            });
        for add in [super::composite::add, super::stacking::add, super::losses::add, super::reductions::add, super::layers::add, super::recurrent::add, super::linalg::add, super::selection::add, super::einsum::add, super::quantile::add, super::gathering::add, super::attention_math::add, super::sampling::add, super::special::add, super::margin_losses::add, super::conv_forms::add, super::gradient::add, super::creation::add, super::householder::add] {
            add(&mut t);
        }
        t
    }
}

pub(super) fn opt_input(b: &OpBuilder, op: OpId, name: &str) -> Result<Option<ValueId>, String> {
    b.with_args(op, |a| if a.is_none(name) { None } else { a.value(name) })
}

pub(super) fn rank_of(b: &OpBuilder, v: ValueId) -> Result<usize, String> {
    b.rank(v).ok_or_else(|| "the operand's rank is unknown (run shape-propagation first)".to_string())
}

pub(super) fn one(v: Result<ValueId, String>) -> DecompResult {
    Ok(Some(vec![v?]))
}

/// The tensor operand bound to argument `name`.
pub(super) fn input(b: &OpBuilder, op: OpId, name: &str) -> Result<ValueId, String> {
    b.with_args(op, |a| a.value(name))?.ok_or_else(|| format!("argument '{name}' must be a value"))
}

pub(super) fn cast_to(b: &mut OpBuilder, x: ValueId, d: Option<DType>) -> DecompResult {
    match d {
        Some(want) => one(cast(b, x, want)),
        None => Ok(None),
    }
}

/// `x` as `d`: itself when it already is, else a `_to_copy`.
pub(super) fn cast(b: &mut OpBuilder, x: ValueId, d: DType) -> Result<ValueId, String> {
    if b.dtype(x) == Some(d) {
        return Ok(x);
    }
    b.call(op::_TO_COPY, &[x.into(), Arg::A(dialect_prim::kinds::dtype(d))])
}

// ----- the driver -----

/// Statistics of one decomposition run.
#[derive(Clone, Debug, Default)]
pub struct DecomposeStats {
    pub decomposed: usize,
    pub created: usize,
    /// Why ops were kept when their decomposition failed (best-effort runs only).
    pub kept: Vec<Diagnostic>,
}

/// Decomposes every op nested in `root` that `table` covers, newly created ops included.
pub fn decompose(ctx: &Context, m: &mut Module, root: OpId, table: &DecompositionTable) -> Result<DecomposeStats, Diagnostic> {
    decompose_where(ctx, m, root, table, &|_| true)
}

/// Like [`decompose`], for the ops whose name `select` accepts only.
pub fn decompose_where(
    ctx: &Context,
    m: &mut Module,
    root: OpId,
    table: &DecompositionTable,
    select: &dyn Fn(&str) -> bool,
) -> Result<DecomposeStats, Diagnostic> {
    decompose_impl(ctx, m, root, table, select, false)
}

/// The decomposition driver; with `keep_on_error`, an op whose decomposition fails stays as it
/// is (counted in [`DecomposeStats::kept`]) instead of failing the run.
fn decompose_impl(
    ctx: &Context,
    m: &mut Module,
    root: OpId,
    table: &DecompositionTable,
    select: &dyn Fn(&str) -> bool,
    keep_on_error: bool,
) -> Result<DecomposeStats, Diagnostic> {
    let ranges = Ranges::of_module(m);
    let mut stats = DecomposeStats::default();
    rewrite_to_fixed_point(m, root, |m, op| {
        if !select(m.op_name(op)) {
            return Ok(None);
        }
        let Some(f) = table.get(m.op_name(op)).cloned() else { return Ok(None) };
        match decompose_one(ctx, m, &ranges, op, &f) {
            Err(d) if keep_on_error => {
                stats.kept.push(d);
                Ok(None)
            }
            Ok(Some(created)) => {
                stats.decomposed += 1;
                stats.created += created.len();
                Ok(Some(created))
            }
            other => other,
        }
    })?;
    Ok(stats)
}

/// Visits every op nested in `root` in pre-order, and the ops each visit creates right after
/// it, until no visit creates more: the driver of decomposition and of the composite fallback.
/// `step` replaces the op it is given and returns the ops it created, or `None` when it leaves
/// the op alone (it is not visited again). A run that keeps creating ops fails once it has
/// made 64 times as many rewrites as there were ops to begin with.
pub(crate) fn rewrite_to_fixed_point(
    m: &mut Module,
    root: OpId,
    mut step: impl FnMut(&mut Module, OpId) -> Result<Option<Vec<OpId>>, Diagnostic>,
) -> Result<(), Diagnostic> {
    let mut work: Vec<OpId> = Vec::new();
    m.walk(root, WalkOrder::PreOrder, &mut |o| work.push(o));
    work.reverse();
    let mut budget = 64 * (work.len() + 16);
    let mut declined: HashSet<OpId> = HashSet::new();
    while let Some(op) = work.pop() {
        if !m.contains_op(op) || declined.contains(&op) {
            continue;
        }
        let (loc, name) = (m.loc(op).clone(), m.op_name(op).to_string());
        match step(m, op)? {
            Some(created) => {
                budget = budget.checked_sub(1).ok_or_else(|| {
                    Diagnostic::error(loc, format!("rewriting '{name}' did not terminate (its replacement keeps producing ops to rewrite)"))
                })?;
                work.extend(created.into_iter().rev());
            }
            None => {
                declined.insert(op);
            }
        }
    }
    Ok(())
}

/// Replaces `op` by what `f` builds; the created ops, or `None` when `f` leaves the op alone.
pub(crate) fn decompose_one(ctx: &Context, m: &mut Module, ranges: &Ranges, op: OpId, f: &DecompFn) -> Result<Option<Vec<OpId>>, Diagnostic> {
    let loc = m.loc(op).clone();
    let name = m.op_name(op).to_string();
    let mut b = super::rewrite::OpBuilder::before(ctx, m, ranges, op);
    let res = f(&mut b, op);
    let created = std::mem::take(&mut b.created);
    let repl = match res {
        Ok(Some(r)) => r,
        Ok(None) => {
            erase_unused(m, &created);
            return Ok(None);
        }
        Err(e) => {
            erase_unused(m, &created);
            return Err(Diagnostic::error(loc, format!("'{name}' op cannot be decomposed: {e}")));
        }
    };
    replace_results(m, op, &repl, &created)?;
    Ok(Some(created))
}

/// Replaces the results of `op` by `repl` (refining the types of values `created` ops define
/// with the op's own types) and erases `op`.
pub(crate) fn replace_results(m: &mut Module, op: OpId, repl: &[ValueId], created: &[OpId]) -> Result<(), Diagnostic> {
    let loc = m.loc(op).clone();
    let name = m.op_name(op).to_string();
    let results = m.results(op).to_vec();
    if repl.len() != results.len() {
        erase_unused(m, created);
        return Err(Diagnostic::error(
            loc,
            format!("'{name}' op: decomposition gave {} value(s) for {} result(s)", repl.len(), results.len()),
        ));
    }
    let created_set: HashSet<OpId> = created.iter().copied().collect();
    for (&old, &new) in results.iter().zip(repl) {
        let (ot, nt) = (m.value_type(old).clone(), m.value_type(new).clone());
        if ot != nt && m.defining_op(new).is_some_and(|d| created_set.contains(&d)) {
            let t = refine(&ot, &nt).map_err(|e| Diagnostic::error(loc.clone(), format!("'{name}' op: decomposition result {e}")))?;
            // The exported type is authoritative for the value's users (function results, and
            // `prim.ListUnpack` of a list, whose results must have the list's element type), and
            // a function result keeps its declared type until shape propagation refines both.
            let returned = m.uses(old).iter().any(|u| m.op_name(u.op) == ir::builtin::RETURN);
            let list = matches!(ot.pk(), PK::List(_));
            let t = if refine(&t, &ot).is_ok() && t != ot && (ot_is_complete(&ot) || returned || list) { ot.clone() } else { t };
            m.set_value_type(new, t);
        }
        m.replace_all_uses(old, new);
    }
    m.erase_op(op).map_err(|e| Diagnostic::error(loc, e.to_string()))
}

fn ot_is_complete(t: &ir::Type) -> bool {
    t.as_tensor().is_some_and(|t| t.dtype.is_some() && t.shape.as_ref().is_some_and(|s| s.iter().all(|d| !matches!(d, Dim::Unknown))))
}

/// Erases ops a failed decomposition created (last first), when unused.
fn erase_unused(m: &mut Module, created: &[OpId]) {
    for &c in created.iter().rev() {
        if m.contains_op(c) && m.results(c).iter().all(|&r| !m.has_uses(r)) {
            let _ = m.erase_op(c);
        }
    }
}

/// The `decompose` pass.
pub struct Decompose {
    table: DecompositionTable,
    best_effort: bool,
    options: String,
}

impl Decompose {
    pub fn new(table: DecompositionTable) -> Decompose {
        Decompose { table, best_effort: false, options: String::new() }
    }

    pub fn options() -> PassOptions {
        PassOptions::new()
            .list("ops", &[], "Decompose only these ops (`linear,aten.matmul`); all of the table when empty")
            .list("exclude", &[], "Keep these ops")
            .bool("best-effort", false, "Keep an op whose decomposition fails (the pass log says why) instead of failing")
    }

    pub fn with_options(o: &PassOptions) -> Decompose {
        let mut table = DecompositionTable::core_aten();
        if let Some(ops) = o.get_list("ops").filter(|l| !l.is_empty()) {
            table.retain(ops);
        }
        if let Some(ex) = o.get_list("exclude").filter(|l| !l.is_empty()) {
            let keep: Vec<String> = table.names().filter(|n| !ex.iter().any(|e| e == n || format!("aten.{e}") == *n)).map(String::from).collect();
            table.retain(&keep);
        }
        Decompose { table, best_effort: o.get_bool("best-effort").unwrap_or(false), options: o.to_option_text() }
    }
}

impl Pass for Decompose {
    fn name(&self) -> &str {
        "decompose"
    }

    fn description(&self) -> &str {
        "Decompose non-core ATen ops into core ATen through the decomposition table"
    }

    fn option_text(&self) -> String {
        self.options.clone()
    }

    fn run(&mut self, ctx: &Context, m: &mut Module, op: OpId, am: &mut AnalysisManager) -> Result<PassResult, Diagnostic> {
        let s = decompose_impl(ctx, m, op, &self.table, &|_| true, self.best_effort)?;
        for d in &s.kept {
            pass::log!(am, pass::LogLevel::Dump, "{}: kept: {}", d.loc, d.message);
        }
        pass::log!(am, pass::LogLevel::Dump, "decomposed {} op(s) into {} op(s)", s.decomposed, s.created);
        Ok(PassResult::from_changed(s.decomposed > 0))
    }
}
