//! Decompositions of non-core ATen ops into core ATen, table-driven (`decompose` pass).
//!
//! A [`DecompositionTable`] maps an op name (`aten.linear`) to a Rust function that builds the
//! replacement with an [`OpBuilder`] placed before the op and returns the replacement values
//! (`Ok(None)` leaves the op alone, e.g. `dropout` in training mode). Users add their own
//! entries with [`DecompositionTable::insert`]. Replacements may themselves use non-core ops
//! with an entry (`scaled_dot_product_attention` builds `aten.matmul`): the driver decomposes
//! newly created ops too, to a fixed point.

use super::rewrite::{Arg, OpBuilder, Size, is_contiguous_producer};
use dialect_aten::infer::{Ranges, ScalarVal, norm_dim, refine, split_sizes};
use dialect_aten::op;
use ir::{Attribute, Context, DType, Diagnostic, Dim, Module, OpId, TypeKind, ValueId, WalkOrder};
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
                one(b.call("clone", &[x.into(), Arg::A(Attribute::Int(0))]))
            })
            .insert(op::DETACH, |b, op| Ok(Some(vec![input(b, op, "self")?])))
            .insert(op::LIFT_FRESH_COPY, |b, op| {
                let x = input(b, op, "self")?;
                one(b.call("clone", &[x.into()]))
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
                one(b.call("expand", &[x.into(), s]))
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
                let s = b.call("sigmoid", &[x.into()])?;
                one(b.call("mul.Tensor", &[x.into(), s.into()]))
            })
            .insert(op::HARDSIGMOID, |b, op| {
                let x = float_input(b, op, "hardsigmoid")?;
                one(hardsigmoid(b, x))
            })
            .insert(op::HARDSWISH, |b, op| {
                let x = float_input(b, op, "hardswish")?;
                let h = hardsigmoid(b, x)?;
                one(b.call("mul.Tensor", &[x.into(), h.into()]))
            })
            .insert(op::RELU6, |b, op| {
                let x = input(b, op, "self")?;
                one(b.call("clamp", &[x.into(), Arg::A(Attribute::Int(0)), Arg::A(Attribute::Int(6))]))
            })
            .insert(op::MISH, |b, op| {
                let x = float_input(b, op, "mish")?;
                let sp = softplus(b, x)?;
                let t = b.call("tanh", &[sp.into()])?;
                one(b.call("mul.Tensor", &[x.into(), t.into()]))
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
                one(b.call("where.self", &[mask.into(), v.into(), x.into()]))
            })
            .insert(op::SUM, |b, op| reduce_all(b, op, "sum.dim_IntList"))
            .insert(op::FLOOR_DIVIDE, |b, op| {
                let (x, o) = (input(b, op, "self")?, input(b, op, "other")?);
                one(b.call("div.Tensor_mode", &[x.into(), o.into(), Arg::A(Attribute::str("floor"))]))
            })
            .insert(op::__AND___TENSOR, |b, op| binary_rename(b, op, "bitwise_and.Tensor"))
            .insert(op::__OR___TENSOR, |b, op| binary_rename(b, op, "bitwise_or.Tensor"))
            .insert(op::__XOR___TENSOR, |b, op| binary_rename(b, op, "bitwise_xor.Tensor"))
            .insert(op::MAX_POOL2D, |b, op| {
                let x = input(b, op, "self")?;
                let mut consts = b.with_args(op, |a| {
                    ["kernel_size", "stride", "padding", "dilation", "ceil_mode"].map(|n| a.constant(n).unwrap_or(Attribute::None))
                })?;
                if consts[1] == Attribute::None || consts[1].as_array().is_some_and(|a| a.is_empty()) {
                    consts[1] = consts[0].clone();
                }
                let mut args = vec![Arg::V(x)];
                args.extend(consts.into_iter().map(Arg::A));
                Ok(b.call_n(op::MAX_POOL2D_WITH_INDICES, &args)?.first().map(|&v| vec![v]))
            })
            .insert(op::ADAPTIVE_AVG_POOL2D, |b, op| {
                let x = input(b, op, "self")?;
                let os = b.with_args(op, |a| a.ints("output_size"))?.ok_or("adaptive_avg_pool2d: output_size must be constant")?;
                one(b.call("_adaptive_avg_pool2d", &[x.into(), Arg::A(Attribute::ints(&os))]))
            })
            .insert(op::SQUARE, |b, op| {
                let x = input(b, op, "self")?;
                // A bool tensor squares as int64, as `pow(x, 2)` promotes it.
                let x = if b.dtype(x) == Some(DType::Bool) { cast(b, x, DType::I64)? } else { x };
                one(b.call("mul.Tensor", &[x.into(), x.into()]))
            })
            .insert(op::CLAMP_MIN, |b, op| {
                let x = input(b, op, "self")?;
                let v = b.with_args(op, |a| a.constant("min"))?.ok_or("clamp_min: bound must be constant")?;
                one(b.call("clamp", &[x.into(), Arg::A(v)]))
            })
            .insert(op::CLAMP_MAX, |b, op| {
                let x = input(b, op, "self")?;
                let v = b.with_args(op, |a| a.constant("max"))?.ok_or("clamp_max: bound must be constant")?;
                one(b.call("clamp", &[x.into(), Arg::A(Attribute::None), Arg::A(v)]))
            });
        for add in [super::composite::add, super::stacking::add, super::losses::add, super::reductions::add, super::layers::add] {
            add(&mut t);
        }
        t
    }
}

pub(super) fn one(v: Result<ValueId, String>) -> DecompResult {
    Ok(Some(vec![v?]))
}

/// The tensor operand bound to argument `name`.
pub(super) fn input(b: &OpBuilder, op: OpId, name: &str) -> Result<ValueId, String> {
    b.with_args(op, |a| a.value(name))?.ok_or_else(|| format!("argument '{name}' must be a value"))
}

/// The `self` operand of a floating-point-only op (activations PyTorch refuses on integers).
fn float_input(b: &OpBuilder, op: OpId, name: &str) -> Result<ValueId, String> {
    let x = input(b, op, "self")?;
    match b.dtype(x) {
        Some(d) if !d.is_floating() => Err(format!("{name} is not implemented for {}", d.torch_name())),
        _ => Ok(x),
    }
}

pub(super) fn opt_input(b: &OpBuilder, op: OpId, name: &str) -> Result<Option<ValueId>, String> {
    b.with_args(op, |a| if a.is_none(name) { None } else { a.value(name) })
}

pub(super) fn rank_of(b: &OpBuilder, v: ValueId) -> Result<usize, String> {
    b.rank(v).ok_or_else(|| "the operand's rank is unknown (run shape-propagation first)".to_string())
}

fn permute(b: &mut OpBuilder, x: ValueId, perm: &[i64]) -> Result<ValueId, String> {
    b.call("permute", &[x.into(), Arg::A(Attribute::ints(perm))])
}

fn swap_last(b: &mut OpBuilder, x: ValueId) -> Result<ValueId, String> {
    let r = rank_of(b, x)?;
    if r < 2 {
        return Ok(x);
    }
    let mut p: Vec<i64> = (0..r as i64).collect();
    p.swap(r - 1, r - 2);
    permute(b, x, &p)
}

/// `view`, cloning first when `x` may not be contiguous.
fn view(b: &mut OpBuilder, x: ValueId, sizes: &[Size]) -> Result<ValueId, String> {
    let x = if is_contiguous_producer(b.module(), x) { x } else { b.call("clone", &[x.into(), Arg::A(Attribute::Int(0))])? };
    let s = b.sizes(sizes)?;
    b.call("view", &[x.into(), s])
}

fn dropout(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let (train, p) = b.with_args(op, |a| (a.bool("train"), a.float("p")))?;
    if train == Some(false) || p == Some(0.0) {
        return Ok(Some(vec![input(b, op, "input")?]));
    }
    Ok(None)
}

fn t_op(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "self")?;
    match rank_of(b, x)? {
        0 | 1 => Ok(Some(vec![x])),
        2 => one(permute(b, x, &[1, 0])),
        r => Err(format!("t() expects a tensor of rank at most 2, got rank {r}")),
    }
}

fn transpose(b: &mut OpBuilder, op: OpId) -> DecompResult {
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

fn reshape(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "self")?;
    let (attr, val) = b.with_args(op, |a| (a.constant("shape"), a.value("shape")))?;
    let x = if is_contiguous_producer(b.module(), x) { x } else { b.call("clone", &[x.into(), Arg::A(Attribute::Int(0))])? };
    let s = match (attr, val) {
        (_, Some(v)) if !matches!(b.module().value_type(v).kind(), TypeKind::None) => Arg::V(v),
        (Some(a), _) => Arg::A(a),
        _ => return Err("reshape: shape is missing".into()),
    };
    one(b.call("view", &[x.into(), s]))
}

fn flatten(b: &mut OpBuilder, op: OpId) -> DecompResult {
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

fn unflatten(b: &mut OpBuilder, op: OpId) -> DecompResult {
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

fn split_like(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let key = b.module().op_name(op).trim_start_matches("aten.").to_string();
    let x = input(b, op, "self")?;
    let (sizes, dim) = b.with_args(op, |a| (split_sizes(&key, a), a.int("dim").unwrap_or(0)))?;
    let sizes = sizes.ok_or_else(|| format!("{key}: split sizes must be static"))?;
    one(b.call("split_with_sizes", &[x.into(), Arg::A(Attribute::ints(&sizes)), Arg::A(Attribute::Int(dim))]))
}

fn rsub_tensor(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let (x, o) = (input(b, op, "self")?, input(b, op, "other")?);
    let alpha = b.with_args(op, |a| a.constant("alpha"))?.unwrap_or(Attribute::Int(1));
    one(b.call("sub.Tensor", &[o.into(), x.into(), Arg::A(alpha)]))
}

fn rsub_scalar(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "self")?;
    if b.dtype(x) == Some(DType::Bool) {
        return Err("subtraction with a bool tensor is not supported".into());
    }
    let (other, alpha) = b.with_args(op, |a| (a.constant("other"), a.scalar("alpha")))?;
    let other = other.ok_or("rsub: the scalar must be constant")?;
    let scaled = match alpha {
        None | Some(ScalarVal::Int(Some(1))) => b.call("neg", &[x.into()])?,
        Some(ScalarVal::Int(Some(k))) => b.call("mul.Scalar", &[x.into(), Arg::A(Attribute::Int(-k))])?,
        Some(ScalarVal::Float(Some(k))) => b.call("mul.Scalar", &[x.into(), Arg::A(Attribute::float(-k))])?,
        _ => return Ok(None),
    };
    one(b.call("add.Scalar", &[scaled.into(), Arg::A(other)]))
}

fn cast_to(b: &mut OpBuilder, x: ValueId, d: Option<DType>) -> DecompResult {
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
    b.call("_to_copy", &[x.into(), Arg::A(Attribute::DType(d))])
}

fn to_dtype(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "self")?;
    let (d, copy) = b.with_args(op, |a| (a.dtype("dtype").flatten(), a.bool("copy").unwrap_or(false)))?;
    let d = d.or(b.dtype(x));
    if copy {
        return one(b.call("_to_copy", &[x.into(), Arg::A(d.map(Attribute::DType).unwrap_or(Attribute::None))]));
    }
    cast_to(b, x, d)
}

fn linear(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let (x, w) = (input(b, op, "input")?, input(b, op, "weight")?);
    let bias = opt_input(b, op, "bias")?;
    let r = rank_of(b, x)?;
    if rank_of(b, w)? != 2 || r == 0 {
        return Ok(None);
    }
    let wt = permute(b, w, &[1, 0])?;
    let mm = |b: &mut OpBuilder, x2: ValueId| -> Result<ValueId, String> {
        match bias {
            Some(bv) => b.call("addmm", &[bv.into(), x2.into(), wt.into()]),
            None => b.call("mm", &[x2.into(), wt.into()]),
        }
    };
    match r {
        2 => one(mm(b, x)),
        1 => {
            let x2 = b.call("unsqueeze", &[x.into(), Arg::A(Attribute::Int(0))])?;
            let y = mm(b, x2)?;
            one(b.call("squeeze.dims", &[y.into(), Arg::A(Attribute::ints(&[0]))]))
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

fn matmul(b: &mut OpBuilder, op: OpId) -> DecompResult {
    if b.with_args(op, |a| a.value("self"))?.and_then(|x| b.dtype(x)) == Some(DType::Bool) {
        return Err("matmul is not implemented for bool".into());
    }
    let (x, y) = (input(b, op, "self")?, input(b, op, "other")?);
    let (rx, ry) = (rank_of(b, x)?, rank_of(b, y)?);
    let i = |k: i64| Arg::A(Attribute::Int(k));
    match (rx, ry) {
        (1, 1) => {
            let p = b.call("mul.Tensor", &[x.into(), y.into()])?;
            // The dot product keeps the operands' dtype (an integer sum would widen to int64).
            let d = b.dtype(p).map_or(Attribute::None, Attribute::DType);
            one(b.call("sum.dim_IntList", &[p.into(), Arg::A(Attribute::ints(&[0])), Arg::A(Attribute::Bool(false)), Arg::A(d)]))
        }
        (2, 2) => one(b.call("mm", &[x.into(), y.into()])),
        (1, 2) => {
            let x2 = b.call("unsqueeze", &[x.into(), i(0)])?;
            let m = b.call("mm", &[x2.into(), y.into()])?;
            one(b.call("squeeze.dims", &[m.into(), Arg::A(Attribute::ints(&[0]))]))
        }
        (_, 1) if rx >= 2 => {
            let y2 = b.call("unsqueeze", &[y.into(), i(1)])?;
            let m = if rx == 2 {
                b.call("mm", &[x.into(), y2.into()])?
            } else {
                let xs = b.sizes_of(x).ok_or("matmul: unknown shape")?;
                let x2 = view(b, x, &[Size::Static(-1), xs[rx - 1].clone()])?;
                let m = b.call("mm", &[x2.into(), y2.into()])?;
                let mut out: Vec<Size> = xs[..rx - 1].to_vec();
                out.push(Size::Static(1));
                view(b, m, &out)?
            };
            one(b.call("squeeze.dims", &[m.into(), Arg::A(Attribute::ints(&[-1]))]))
        }
        (_, 2) if rx >= 3 => {
            let xs = b.sizes_of(x).ok_or("matmul: unknown shape")?;
            let x2 = view(b, x, &[Size::Static(-1), xs[rx - 1].clone()])?;
            let m = b.call("mm", &[x2.into(), y.into()])?;
            let mut out: Vec<Size> = xs[..rx - 1].to_vec();
            out.push(b.sizes_of(y).ok_or("matmul: unknown shape")?[1].clone());
            one(view(b, m, &out))
        }
        (p, q) if p >= 1 && q >= 2 => {
            // Batched: broadcast the batch dims, fold them into one, bmm, unfold.
            let (x, p) = if p == 1 { (b.call("unsqueeze", &[x.into(), i(0)])?, 2) } else { (x, p) };
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
                    let e = b.call("expand", &[v.into(), s])?;
                    b.call("clone", &[e.into(), Arg::A(Attribute::Int(0))])?
                };
                view(b, v, &[Size::Static(nb), tail(&m, r - 2), tail(&n, r - 1)])
            };
            let x3 = fold(b, x, &xs, p)?;
            let y3 = fold(b, y, &ys, q)?;
            let m = b.call("bmm", &[x3.into(), y3.into()])?;
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

fn conv(b: &mut OpBuilder, op: OpId) -> DecompResult {
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
            bias.map(Arg::V).unwrap_or(Arg::A(Attribute::None)),
            Arg::A(Attribute::ints(&expand(s, 1))),
            Arg::A(Attribute::ints(&expand(p, 0))),
            Arg::A(Attribute::ints(&expand(d, 1))),
            Arg::A(Attribute::Bool(false)),
            Arg::A(Attribute::ints(&vec![0; n])),
            Arg::A(Attribute::Int(g)),
        ],
    ))
}

fn batch_norm(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "input")?;
    let (w, bias) = (opt_input(b, op, "weight")?, opt_input(b, op, "bias")?);
    let (rm, rv) = (opt_input(b, op, "running_mean")?, opt_input(b, op, "running_var")?);
    let (training, momentum, eps) = b.with_args(op, |a| (a.bool("training"), a.float("momentum"), a.float("eps")))?;
    let (Some(rm), Some(rv), Some(false)) = (rm, rv, training) else { return Ok(None) };
    let opt = |v: Option<ValueId>| v.map(Arg::V).unwrap_or(Arg::A(Attribute::None));
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

fn layer_norm(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "input")?;
    let (w, bias) = (opt_input(b, op, "weight")?, opt_input(b, op, "bias")?);
    let (ns, eps) = b.with_args(op, |a| (a.ints("normalized_shape"), a.float("eps")))?;
    let ns = ns.ok_or("layer_norm: normalized_shape must be constant")?;
    let opt = |v: Option<ValueId>| v.map(Arg::V).unwrap_or(Arg::A(Attribute::None));
    let r = b.call_n(
        op::NATIVE_LAYER_NORM,
        &[x.into(), Arg::A(Attribute::ints(&ns)), opt(w), opt(bias), Arg::A(Attribute::float(eps.unwrap_or(1e-5)))],
    )?;
    Ok(Some(vec![r[0]]))
}

fn group_norm(b: &mut OpBuilder, op: OpId) -> DecompResult {
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
        None => Arg::V(b.call("sym_size.int", &[x.into(), Arg::A(Attribute::Int(0))])?),
    };
    let opt = |v: Option<ValueId>| v.map(Arg::V).unwrap_or(Arg::A(Attribute::None));
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

fn softmax(b: &mut OpBuilder, op: OpId, core: &str) -> DecompResult {
    let x = input(b, op, "self")?;
    let (dim, dtype) = b.with_args(op, |a| (a.int("dim"), a.dtype("dtype").flatten()))?;
    let dim = dim.ok_or("softmax: dim must be constant")?;
    let x = match dtype {
        Some(d) if b.dtype(x) != Some(d) => b.call("_to_copy", &[x.into(), Arg::A(Attribute::DType(d))])?,
        _ => x,
    };
    one(b.call(core, &[x.into(), Arg::A(Attribute::Int(dim)), Arg::A(Attribute::Bool(false))]))
}

fn hardsigmoid(b: &mut OpBuilder, x: ValueId) -> Result<ValueId, String> {
    let s = b.call("add.Scalar", &[x.into(), Arg::A(Attribute::Int(3))])?;
    let c = b.call("clamp", &[s.into(), Arg::A(Attribute::Int(0)), Arg::A(Attribute::Int(6))])?;
    b.call("div.Scalar", &[c.into(), Arg::A(Attribute::Int(6))])
}

fn softplus(b: &mut OpBuilder, x: ValueId) -> Result<ValueId, String> {
    let e = b.call("exp", &[x.into()])?;
    let l = b.call("log1p", &[e.into()])?;
    let big = b.call("gt.Scalar", &[x.into(), Arg::A(Attribute::Int(20))])?;
    b.call("where.self", &[big.into(), x.into(), l.into()])
}

/// A bool `[rows, cols]` mask of `col - row <cmp> diagonal`.
fn band_mask(b: &mut OpBuilder, rows: i64, cols: i64, cmp: &str, diagonal: i64) -> Result<ValueId, String> {
    let i = |k: i64| Arg::A(Attribute::Int(k));
    let c = b.call("arange.start_step", &[i(0), i(cols)])?;
    let r = b.call("arange.start_step", &[i(0), i(rows)])?;
    let c = b.call("unsqueeze", &[c.into(), i(0)])?;
    let r = b.call("unsqueeze", &[r.into(), i(1)])?;
    let d = b.call("sub.Tensor", &[c.into(), r.into()])?;
    b.call(cmp, &[d.into(), i(diagonal)])
}

fn tri(b: &mut OpBuilder, op: OpId, cmp: &str) -> DecompResult {
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
    let zero = b.call("scalar_tensor", &[Arg::A(Attribute::Int(0)), Arg::A(Attribute::DType(dtype))])?;
    one(b.call("where.self", &[mask.into(), x.into(), zero.into()]))
}

/// `ones`/`zeros` → `full` with the dtype made explicit.
fn fill_like_new(b: &mut OpBuilder, op: OpId, value: i64) -> DecompResult {
    let (size_attr, size_val, rest) = b.with_args(op, |a| {
        (a.constant("size"), a.value("size"), ["dtype", "layout", "device", "pin_memory"].map(|n| a.constant(n).unwrap_or(Attribute::None)))
    })?;
    let size = match (size_val, size_attr) {
        (Some(v), _) => Arg::V(v),
        (None, Some(a)) => Arg::A(a),
        _ => return Err("size is missing".into()),
    };
    let [dtype, layout, device, pin] = rest;
    let dtype = if dtype == Attribute::None { Attribute::DType(DType::F32) } else { dtype };
    one(b.call("full", &[size, Arg::A(Attribute::Int(value)), Arg::A(dtype), Arg::A(layout), Arg::A(device), Arg::A(pin)]))
}

/// `new_ones`, `new_zeros`, `new_empty` (zero-filled: any value is a valid empty tensor) and
/// `new_full` (`value` `None`: its `fill_value`): a `full` whose dtype defaults to `self`'s.
fn new_filled(b: &mut OpBuilder, op: OpId, value: Option<Attribute>) -> DecompResult {
    let x = input(b, op, "self")?;
    let (size_attr, size_val, fill, rest) = b.with_args(op, |a| {
        (
            a.constant("size"),
            a.value("size"),
            a.constant("fill_value"),
            ["dtype", "layout", "device", "pin_memory"].map(|n| a.constant(n).unwrap_or(Attribute::None)),
        )
    })?;
    let size = match (size_val, size_attr) {
        (Some(v), _) => Arg::V(v),
        (None, Some(a)) => Arg::A(a),
        _ => return Err("size is missing".into()),
    };
    let value = value.or(fill).ok_or("new_full: the fill value must be constant")?;
    let [dtype, layout, device, pin] = rest;
    let dtype = match dtype {
        Attribute::None => Attribute::DType(b.dtype(x).ok_or("the dtype of self is unknown")?),
        d => d,
    };
    one(b.call("full", &[size, Arg::A(value), Arg::A(dtype), Arg::A(layout), Arg::A(device), Arg::A(pin)]))
}

fn fill_like(b: &mut OpBuilder, op: OpId, value: i64) -> DecompResult {
    let x = input(b, op, "self")?;
    let rest = b.with_args(op, |a| {
        ["dtype", "layout", "device", "pin_memory", "memory_format"].map(|n| a.constant(n).unwrap_or(Attribute::None))
    })?;
    let mut args = vec![Arg::V(x), Arg::A(Attribute::Int(value))];
    args.extend(rest.into_iter().map(Arg::A));
    one(b.call("full_like", &args))
}

fn arange(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let (start, start_v, end, end_v, rest) = b.with_args(op, |a| {
        (
            a.constant("start").unwrap_or(Attribute::Int(0)),
            a.value("start"),
            a.constant("end"),
            a.value("end"),
            ["dtype", "layout", "device", "pin_memory"].map(|n| a.constant(n).unwrap_or(Attribute::None)),
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
    one(b.call("arange.start_step", &args))
}

fn masked_fill_scalar(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let (x, mask) = (input(b, op, "self")?, input(b, op, "mask")?);
    let v = b.with_args(op, |a| a.constant("value"))?.ok_or("masked_fill: the value must be constant")?;
    let dtype = b.dtype(x).ok_or("masked_fill: unknown dtype")?;
    let s = b.call("scalar_tensor", &[Arg::A(v), Arg::A(Attribute::DType(dtype))])?;
    one(b.call("where.self", &[mask.into(), s.into(), x.into()]))
}

fn reduce_all(b: &mut OpBuilder, op: OpId, core: &str) -> DecompResult {
    let x = input(b, op, "self")?;
    let dtype = b.with_args(op, |a| a.constant("dtype"))?.unwrap_or(Attribute::None);
    let r = rank_of(b, x)? as i64;
    let dims: Vec<Size> = (0..r).map(Size::Static).collect();
    let dims = int_list_value(b, &dims)?;
    one(b.call(core, &[x.into(), dims, Arg::A(Attribute::Bool(false)), Arg::A(dtype)]))
}

/// An int list passed as a `prim.ListConstruct` value (schemas such as `int[1]` take any length only so).
fn int_list_value(b: &mut OpBuilder, sizes: &[Size]) -> Result<Arg, String> {
    if sizes.len() <= 1 {
        return b.sizes(sizes);
    }
    let mut elems = Vec::new();
    for s in sizes {
        elems.push(match s {
            Size::Static(n) => b.constant(Attribute::Int(*n))?,
            Size::Of(v, i) => b.call("sym_size.int", &[Arg::V(*v), Arg::A(Attribute::Int(*i as i64))])?,
        });
    }
    Ok(Arg::V(b.list(elems)?))
}

fn binary_rename(b: &mut OpBuilder, op: OpId, core: &str) -> DecompResult {
    let (x, o) = (input(b, op, "self")?, input(b, op, "other")?);
    one(b.call(core, &[x.into(), o.into()]))
}

fn sdpa(b: &mut OpBuilder, op: OpId) -> DecompResult {
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
    let s = b.call("matmul", &[q.into(), kt.into()])?;
    let mut s = b.call("mul.Scalar", &[s.into(), Arg::A(Attribute::float(scale))])?;
    let neg_inf = Attribute::float(f64::NEG_INFINITY);
    if causal {
        let (Some(l), Some(sl)) = (qs.get(qs.len().wrapping_sub(2)).and_then(Dim::as_static), ks.get(ks.len().wrapping_sub(2)).and_then(Dim::as_static)) else {
            return Ok(None);
        };
        let keep = band_mask(b, l, sl, "le.Scalar", 0)?;
        let drop = b.call("logical_not", &[keep.into()])?;
        s = b.call("masked_fill.Scalar", &[s.into(), drop.into(), Arg::A(neg_inf.clone())])?;
    }
    if let Some(mv) = mask {
        if b.dtype(mv) == Some(DType::Bool) {
            let drop = b.call("logical_not", &[mv.into()])?;
            s = b.call("masked_fill.Scalar", &[s.into(), drop.into(), Arg::A(neg_inf)])?;
        } else {
            s = b.call("add.Tensor", &[s.into(), mv.into()])?;
        }
    }
    let p = b.call("_softmax", &[s.into(), Arg::A(Attribute::Int(-1)), Arg::A(Attribute::Bool(false))])?;
    one(b.call("matmul", &[p.into(), v.into()]))
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
    let mut work: Vec<OpId> = Vec::new();
    m.walk(root, WalkOrder::PreOrder, &mut |o| work.push(o));
    work.reverse();
    let mut budget = 64 * (work.len() + 16);
    let mut failed: HashSet<OpId> = HashSet::new();
    while let Some(op) = work.pop() {
        if !m.contains_op(op) || failed.contains(&op) || !select(m.op_name(op)) {
            continue;
        }
        let Some(f) = table.get(m.op_name(op)).cloned() else { continue };
        budget = budget.checked_sub(1).ok_or_else(|| {
            Diagnostic::error(m.loc(op).clone(), "decomposition did not terminate (a decomposition keeps producing its own op)")
        })?;
        let outcome = match decompose_one(ctx, m, &ranges, op, &f) {
            Err(d) if keep_on_error => {
                stats.kept.push(d);
                None
            }
            other => other?,
        };
        match outcome {
            Some(created) => {
                stats.decomposed += 1;
                stats.created += created.len();
                work.extend(created.into_iter().rev());
            }
            None => {
                failed.insert(op);
            }
        }
    }
    Ok(stats)
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
            let list = matches!(ot.kind(), TypeKind::List(_));
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
