//! Shape and dtype inference of aten ops: broadcasting, PyTorch's type promotion, symbolic dims.
//!
//! [`infer_op`] computes the result types of one op from its operand types and constant
//! arguments, reading arguments through the schema binding ([`crate::bind_args`]), so it works
//! for any op declared from an ATen schema (the `edge` dialect reuses it with its own names).
//! Results it cannot decide come back as less specific types (`tensor<*x!prim.any>`), never as
//! guesses; conflicts between inputs (an impossible broadcast, a view whose sizes do not divide
//! the element count) are errors.
//!
//! Symbolic dimensions are [`Dim::Sym`] names (`s0`) or product expressions (`2*s0`,
//! `s0*s1`); [`Ranges`] carries the module's `prim.range_constraints` and decides broadcasting
//! between a symbol and another size when the symbol is known not to be 1.

use crate::signature::{ArgSource, bind_args};
use ir::schema::FunctionSchema;
use ir::{Attribute, Context, DType, DTypeCategory, Dim, Module, OpId, TensorType, Type, TypeKind, ValueId};
use std::collections::HashMap;

/// The module attribute holding range constraints: `{s0 = [lo, hi]}` (`hi` may be absent).
pub const RANGE_CONSTRAINTS: &str = "prim.range_constraints";

/// The default floating dtype (`torch.get_default_dtype()`).
pub const DEFAULT_FLOAT: DType = DType::F32;

/// Known value ranges of symbols, from the module's `prim.range_constraints`.
#[derive(Clone, Debug, Default)]
pub struct Ranges {
    map: HashMap<String, (i64, Option<i64>)>,
}

impl Ranges {
    /// Reads the range constraints of a module (empty when it has none).
    pub fn of_module(m: &Module) -> Ranges {
        let mut r = Ranges::default();
        if let Some(Attribute::Dict(items)) = m.attr(m.top(), RANGE_CONSTRAINTS) {
            for (k, v) in items.iter() {
                let b = v.as_array().unwrap_or(&[]);
                let lo = b.first().and_then(Attribute::as_int).unwrap_or(0);
                let hi = b.get(1).and_then(Attribute::as_int);
                r.map.insert(k.to_string(), (lo, hi));
            }
        }
        r
    }

    pub fn insert(&mut self, sym: &str, lo: i64, hi: Option<i64>) {
        self.map.insert(sym.to_string(), (lo, hi));
    }

    /// The range of a dimension: exact for static sizes, the constraint for a plain symbol,
    /// products of ranges for a product expression, `[0, ∞)` otherwise.
    pub fn range(&self, d: &Dim) -> (i64, Option<i64>) {
        match d {
            Dim::Static(n) => (*n, Some(*n)),
            Dim::Unknown => (0, None),
            Dim::Sym(s) => {
                if let Some(r) = self.map.get(&**s) {
                    return *r;
                }
                match Mono::parse(s) {
                    Some(mono) if !mono.factors.is_empty() => {
                        let mut lo = mono.coef;
                        let mut hi = Some(mono.coef);
                        for f in &mono.factors {
                            let (l, h) = self.map.get(f).copied().unwrap_or((0, None));
                            lo = lo.saturating_mul(l);
                            hi = match (hi, h) {
                                (Some(a), Some(b)) => Some(a.saturating_mul(b)),
                                _ => None,
                            };
                        }
                        (lo, hi)
                    }
                    _ => (0, None),
                }
            }
        }
    }

    /// Whether `d` is known never to be 1.
    pub fn never_one(&self, d: &Dim) -> bool {
        let (lo, hi) = self.range(d);
        lo >= 2 || hi.is_some_and(|h| h < 1)
    }

    /// Whether `d` can take the value `n`.
    pub fn admits(&self, d: &Dim, n: i64) -> bool {
        let (lo, hi) = self.range(d);
        n >= lo && hi.is_none_or(|h| n <= h)
    }
}

// ----- symbolic arithmetic -----

/// A product `coef * f1 * f2 ...` of symbol names (factors sorted); other expressions are atoms.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Mono {
    coef: i64,
    factors: Vec<String>,
}

impl Mono {
    fn parse(s: &str) -> Option<Mono> {
        let mut coef = 1i64;
        let mut factors = Vec::new();
        for part in s.split('*') {
            let p = part.trim();
            if p.is_empty() {
                return None;
            }
            if let Ok(n) = p.parse::<i64>() {
                coef = coef.checked_mul(n)?;
            } else if p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                factors.push(p.to_string());
            } else {
                // A parenthesized or additive atom is kept whole.
                factors.push(p.to_string());
            }
        }
        factors.sort();
        Some(Mono { coef, factors })
    }

    fn of_dim(d: &Dim) -> Option<Mono> {
        match d {
            Dim::Static(n) => Some(Mono { coef: *n, factors: Vec::new() }),
            Dim::Sym(s) => {
                if s.contains(['+', '-', '/']) && !s.starts_with('(') {
                    Some(Mono { coef: 1, factors: vec![format!("({s})")] })
                } else {
                    Mono::parse(s)
                }
            }
            Dim::Unknown => None,
        }
    }

    fn to_dim(&self) -> Dim {
        if self.factors.is_empty() || self.coef == 0 {
            return Dim::Static(self.coef);
        }
        let mut parts = Vec::new();
        if self.coef != 1 {
            parts.push(self.coef.to_string());
        }
        parts.extend(self.factors.iter().cloned());
        Dim::Sym(parts.join("*").into())
    }
}

/// `a * b` with symbolic operands kept as a product expression.
pub fn dim_mul(a: &Dim, b: &Dim) -> Dim {
    match (a, b) {
        (Dim::Static(0), _) | (_, Dim::Static(0)) => Dim::Static(0),
        (Dim::Static(x), Dim::Static(y)) => x.checked_mul(*y).map(Dim::Static).unwrap_or(Dim::Unknown),
        _ => match (Mono::of_dim(a), Mono::of_dim(b)) {
            (Some(x), Some(y)) => {
                let Some(coef) = x.coef.checked_mul(y.coef) else { return Dim::Unknown };
                let mut factors = x.factors;
                factors.extend(y.factors);
                factors.sort();
                Mono { coef, factors }.to_dim()
            }
            _ => Dim::Unknown,
        },
    }
}

/// The product of dims (1 for none).
pub fn dim_product(dims: &[Dim]) -> Dim {
    dims.iter().fold(Dim::Static(1), |acc, d| dim_mul(&acc, d))
}

/// `a / b` when it is exact and expressible; `None` when `b` does not divide `a`.
pub fn dim_div_exact(a: &Dim, b: &Dim) -> Option<Dim> {
    match (a, b) {
        (_, Dim::Static(0)) => None,
        (Dim::Static(x), Dim::Static(y)) => (x % y == 0).then(|| Dim::Static(x / y)),
        _ => {
            let (x, y) = (Mono::of_dim(a)?, Mono::of_dim(b)?);
            if y.coef == 0 || x.coef % y.coef != 0 {
                return None;
            }
            let mut factors = x.factors;
            for f in &y.factors {
                let i = factors.iter().position(|g| g == f)?;
                factors.remove(i);
            }
            Some(Mono { coef: x.coef / y.coef, factors }.to_dim())
        }
    }
}

/// `a + b`, symbolic as `a+b` text.
pub fn dim_add(a: &Dim, b: &Dim) -> Dim {
    match (a, b) {
        (Dim::Static(x), Dim::Static(y)) => x.checked_add(*y).map(Dim::Static).unwrap_or(Dim::Unknown),
        (Dim::Static(0), d) | (d, Dim::Static(0)) => d.clone(),
        (Dim::Unknown, _) | (_, Dim::Unknown) => Dim::Unknown,
        (x, y) => {
            if x == y {
                return dim_mul(&Dim::Static(2), x);
            }
            Dim::Sym(format!("{x}+{y}").into())
        }
    }
}

fn dim_sub_static(a: &Dim, n: i64) -> Dim {
    match a {
        Dim::Static(x) => Dim::Static(x - n),
        Dim::Sym(s) if n == 0 => Dim::Sym(s.clone()),
        Dim::Sym(s) if n > 0 => Dim::Sym(format!("{s}-{n}").into()),
        Dim::Sym(s) => Dim::Sym(format!("{s}+{}", -n).into()),
        Dim::Unknown => Dim::Unknown,
    }
}

// ----- broadcasting -----

fn show_shape(s: &[Dim]) -> String {
    let parts: Vec<String> = s.iter().map(|d| d.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// Broadcasts two dims; `None` when they are incompatible.
pub fn broadcast_dim(a: &Dim, b: &Dim, r: &Ranges) -> Option<Dim> {
    Some(match (a, b) {
        (Dim::Static(1), x) | (x, Dim::Static(1)) => x.clone(),
        (Dim::Static(x), Dim::Static(y)) => {
            if x == y {
                Dim::Static(*x)
            } else {
                return None;
            }
        }
        (x, y) if x == y => x.clone(),
        // A symbol meets a static size n > 1: the result is n whether the symbol is 1 or n,
        // unless the symbol's range excludes both.
        (s @ Dim::Sym(_), Dim::Static(n)) | (Dim::Static(n), s @ Dim::Sym(_)) => {
            if !r.admits(s, 1) && !r.admits(s, *n) {
                return None;
            }
            Dim::Static(*n)
        }
        (Dim::Unknown, Dim::Static(n)) | (Dim::Static(n), Dim::Unknown) => Dim::Static(*n),
        (x, y) => {
            if r.never_one(x) {
                x.clone()
            } else if r.never_one(y) {
                y.clone()
            } else {
                Dim::Unknown
            }
        }
    })
}

/// Broadcasts two shapes (numpy rules: align right, 1 stretches).
pub fn broadcast_shapes(a: &[Dim], b: &[Dim], r: &Ranges) -> Result<Vec<Dim>, String> {
    let n = a.len().max(b.len());
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let da = if i + a.len() >= n { a[i + a.len() - n].clone() } else { Dim::Static(1) };
        let db = if i + b.len() >= n { b[i + b.len() - n].clone() } else { Dim::Static(1) };
        match broadcast_dim(&da, &db, r) {
            Some(d) => out.push(d),
            None => {
                return Err(format!(
                    "cannot broadcast shapes {} and {}: dimension {i} is {da} in one and {db} in the other",
                    show_shape(a),
                    show_shape(b)
                ));
            }
        }
    }
    Ok(out)
}

/// Broadcasts optional shapes: an unranked operand makes the result unranked.
fn broadcast_all(shapes: &[Option<Vec<Dim>>], r: &Ranges) -> Result<Option<Vec<Dim>>, String> {
    let mut acc: Vec<Dim> = Vec::new();
    for s in shapes {
        match s {
            None => return Ok(None),
            Some(s) => acc = broadcast_shapes(&acc, s, r)?,
        }
    }
    Ok(Some(acc))
}

// ----- type promotion -----

/// One participant of type promotion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PromoteArg {
    /// A tensor of known dtype; `zero_dim` for a 0-d tensor (lower priority than dimensioned ones).
    Tensor { dtype: DType, zero_dim: bool },
    /// A Python number of this category (`bool`, `int`, `float`).
    Scalar(DTypeCategory),
}

fn combine_categories(higher: Option<DType>, lower: Option<DType>) -> Option<DType> {
    let Some(h) = higher else { return lower };
    let Some(l) = lower else { return Some(h) };
    if h.is_floating() {
        return Some(h);
    }
    if h == DType::Bool || l.is_floating() {
        return Some(DType::promote(h, l));
    }
    Some(h)
}

/// PyTorch's `result_type`: dimensioned tensors, then 0-d tensors, then Python scalars; a lower
/// group only matters when it is of a higher category (bool < integral < floating).
pub fn result_type<A: std::borrow::Borrow<PromoteArg>>(args: impl IntoIterator<Item = A>) -> Option<DType> {
    let (mut dim, mut zero, mut wrapped): (Option<DType>, Option<DType>, Option<DType>) = (None, None, None);
    let up = |slot: &mut Option<DType>, d: DType| *slot = Some(slot.map_or(d, |s| DType::promote(s, d)));
    for a in args {
        match *a.borrow() {
            PromoteArg::Tensor { dtype, zero_dim: false } => up(&mut dim, dtype),
            PromoteArg::Tensor { dtype, zero_dim: true } => up(&mut zero, dtype),
            PromoteArg::Scalar(c) => up(
                &mut wrapped,
                match c {
                    DTypeCategory::Bool => DType::Bool,
                    DTypeCategory::Integral => DType::I64,
                    DTypeCategory::Floating => DEFAULT_FLOAT,
                },
            ),
        }
    }
    combine_categories(dim, combine_categories(zero, wrapped))
}

/// The dtype of an op that computes in floating point (`exp`, true division): integral and
/// bool inputs give the default float dtype.
pub fn float_result(d: DType) -> DType {
    if d.is_floating() { d } else { DEFAULT_FLOAT }
}

// ----- argument access -----

/// The arguments of one op, by schema name.
pub struct Args<'a> {
    pub m: &'a Module,
    pub op: OpId,
    pub schema: &'a FunctionSchema,
    binding: Vec<ArgSource>,
}

/// A scalar argument's kind, for promotion.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScalarVal {
    Int(Option<i64>),
    Float(Option<f64>),
    Bool(Option<bool>),
}

impl ScalarVal {
    pub fn category(self) -> DTypeCategory {
        match self {
            ScalarVal::Int(_) => DTypeCategory::Integral,
            ScalarVal::Float(_) => DTypeCategory::Floating,
            ScalarVal::Bool(_) => DTypeCategory::Bool,
        }
    }

    pub fn as_f64(self) -> Option<f64> {
        match self {
            ScalarVal::Int(i) => i.map(|i| i as f64),
            ScalarVal::Float(f) => f,
            ScalarVal::Bool(b) => b.map(|b| b as i64 as f64),
        }
    }
}

impl<'a> Args<'a> {
    /// Binds the op's operands and attributes to `schema`.
    pub fn bind(m: &'a Module, op: OpId, schema: &'a FunctionSchema) -> Result<Args<'a>, String> {
        let binding = bind_args(schema, m, op).map_err(|e| e.to_string())?;
        Ok(Args { m, op, schema, binding })
    }

    fn source(&self, name: &str) -> Option<&ArgSource> {
        let (i, _) = self.schema.arg(name)?;
        self.binding.get(i)
    }

    /// The argument at schema position `i`, as an operand value.
    pub fn value_at(&self, i: usize) -> Option<ValueId> {
        match self.binding.get(i)? {
            ArgSource::Operand(k) => self.m.operands(self.op).get(*k).copied(),
            ArgSource::Const(_) => None,
        }
    }

    /// The operand index bound to schema argument `i`, if it is passed as an operand.
    pub fn operand_index_at(&self, i: usize) -> Option<usize> {
        match self.binding.get(i)? {
            ArgSource::Operand(k) => Some(*k),
            ArgSource::Const(_) => None,
        }
    }

    /// The operand bound to argument `name`, if it is passed as an operand.
    pub fn value(&self, name: &str) -> Option<ValueId> {
        let (i, _) = self.schema.arg(name)?;
        self.value_at(i)
    }

    /// The constant value of argument `name`: its attribute, or a `prim.Constant` operand's value.
    pub fn constant(&self, name: &str) -> Option<Attribute> {
        match self.source(name)? {
            ArgSource::Const(a) => Some(a.clone()),
            ArgSource::Operand(k) => {
                let v = *self.m.operands(self.op).get(*k)?;
                constant_of(self.m, v)
            }
        }
    }

    /// Whether argument `name` is `None` (absent optional, `#prim.none`, or a `none` value).
    pub fn is_none(&self, name: &str) -> bool {
        match self.source(name) {
            None => true,
            Some(ArgSource::Const(a)) => *a == Attribute::None,
            Some(ArgSource::Operand(k)) => self
                .m
                .operands(self.op)
                .get(*k)
                .is_none_or(|&v| matches!(self.m.value_type(v).kind(), TypeKind::None)),
        }
    }

    /// The tensor type of argument `name` (`None` when absent or not a tensor).
    pub fn tensor(&self, name: &str) -> Option<TensorType> {
        let v = self.value(name)?;
        self.m.value_type(v).as_tensor().cloned()
    }

    pub fn int(&self, name: &str) -> Option<i64> {
        match self.constant(name)? {
            Attribute::Int(i) => Some(i),
            Attribute::Bool(b) => Some(b as i64),
            _ => None,
        }
    }

    pub fn bool(&self, name: &str) -> Option<bool> {
        match self.constant(name)? {
            Attribute::Bool(b) => Some(b),
            Attribute::Int(i) => Some(i != 0),
            _ => None,
        }
    }

    pub fn float(&self, name: &str) -> Option<f64> {
        self.scalar(name)?.as_f64()
    }

    /// A `Scalar`/number argument: its category, and its value when constant.
    pub fn scalar(&self, name: &str) -> Option<ScalarVal> {
        if let Some(c) = self.constant(name) {
            return match c {
                Attribute::Int(i) => Some(ScalarVal::Int(Some(i))),
                Attribute::Float(f) => Some(ScalarVal::Float(Some(f.get()))),
                Attribute::Bool(b) => Some(ScalarVal::Bool(Some(b))),
                _ => None,
            };
        }
        let v = self.value(name)?;
        match self.m.value_type(v).kind() {
            TypeKind::Int => Some(ScalarVal::Int(None)),
            TypeKind::Float => Some(ScalarVal::Float(None)),
            TypeKind::Bool => Some(ScalarVal::Bool(None)),
            _ => None,
        }
    }

    /// A `ScalarType?` argument: `Some(None)` when it is `None`.
    pub fn dtype(&self, name: &str) -> Option<Option<DType>> {
        match self.constant(name)? {
            Attribute::None => Some(None),
            Attribute::DType(d) => Some(Some(d)),
            Attribute::Int(c) => DType::from_scalar_type_code(c).map(Some),
            _ => None,
        }
    }

    /// An `int[]`/`SymInt[]` argument as dims: constants are static, SymInt values symbolic
    /// where they can be traced to a tensor size, unknown otherwise.
    pub fn dims(&self, name: &str) -> Option<Vec<Dim>> {
        match self.source(name)? {
            ArgSource::Const(a) => match a {
                Attribute::Array(items) => items.iter().map(|i| i.as_int().map(Dim::Static)).collect(),
                Attribute::Int(i) => Some(vec![Dim::Static(*i)]),
                _ => None,
            },
            ArgSource::Operand(k) => {
                let v = *self.m.operands(self.op).get(*k)?;
                if let Some(a) = constant_of(self.m, v) {
                    return match a {
                        Attribute::Array(items) => items.iter().map(|i| i.as_int().map(Dim::Static)).collect(),
                        Attribute::Int(i) => Some(vec![Dim::Static(i)]),
                        _ => None,
                    };
                }
                match self.m.value_type(v).kind() {
                    TypeKind::Int => Some(vec![int_dim(self.m, v)]),
                    TypeKind::List(_) => {
                        let def = self.m.defining_op(v)?;
                        if self.m.op_name(def) != dialect_prim::LIST_CONSTRUCT {
                            return None;
                        }
                        Some(self.m.operands(def).iter().map(|&e| int_dim(self.m, e)).collect())
                    }
                    _ => None,
                }
            }
        }
    }

    /// An int list argument whose every element is a constant.
    pub fn ints(&self, name: &str) -> Option<Vec<i64>> {
        self.dims(name)?.iter().map(Dim::as_static).collect()
    }

    /// A `Tensor[]` argument: the types of the `prim.ListConstruct` elements.
    pub fn tensors(&self, name: &str) -> Option<Vec<TensorType>> {
        let v = self.value(name)?;
        let def = self.m.defining_op(v)?;
        if self.m.op_name(def) != dialect_prim::LIST_CONSTRUCT {
            return None;
        }
        self.m.operands(def).iter().map(|&e| self.m.value_type(e).as_tensor().cloned()).collect()
    }
}

/// The constant a value holds, when it is a `prim.Constant` result.
pub fn constant_of(m: &Module, v: ValueId) -> Option<Attribute> {
    let def = m.defining_op(v)?;
    if m.op_name(def) != dialect_prim::CONSTANT {
        return None;
    }
    m.attr(def, "value").cloned()
}

/// The size an `i64` value stands for: a constant, a traced `sym_size`, or SymInt arithmetic.
pub fn int_dim(m: &Module, v: ValueId) -> Dim {
    int_dim_depth(m, v, 0)
}

fn int_dim_depth(m: &Module, v: ValueId, depth: usize) -> Dim {
    if depth > 16 {
        return Dim::Unknown;
    }
    if let Some(Attribute::Int(i)) = constant_of(m, v) {
        return Dim::Static(i);
    }
    let Some(def) = m.defining_op(v) else { return Dim::Unknown };
    let ops = m.operands(def);
    match m.op_name(def) {
        "aten.sym_size.int" | "edge.sym_size.int" => {
            let Some(t) = ops.first().and_then(|&t| m.value_type(t).as_tensor()) else { return Dim::Unknown };
            let dim = ops.get(1).and_then(|&d| constant_of(m, d)).or_else(|| m.attr(def, "dim").cloned());
            match (t.shape.as_ref(), dim.and_then(|d| d.as_int())) {
                (Some(s), Some(d)) => norm_dim(d, s.len()).map(|i| s[i].clone()).unwrap_or(Dim::Unknown),
                _ => Dim::Unknown,
            }
        }
        "prim.mul" if ops.len() == 2 => dim_mul(&int_dim_depth(m, ops[0], depth + 1), &int_dim_depth(m, ops[1], depth + 1)),
        "prim.add" if ops.len() == 2 => dim_add(&int_dim_depth(m, ops[0], depth + 1), &int_dim_depth(m, ops[1], depth + 1)),
        "prim.floordiv" if ops.len() == 2 => {
            dim_div_exact(&int_dim_depth(m, ops[0], depth + 1), &int_dim_depth(m, ops[1], depth + 1)).unwrap_or(Dim::Unknown)
        }
        _ => Dim::Unknown,
    }
}

/// Normalizes a possibly negative dim index for a tensor of rank `rank`.
pub fn norm_dim(d: i64, rank: usize) -> Option<usize> {
    let r = rank as i64;
    let d = if d < 0 { d + r } else { d };
    (0..r).contains(&d).then_some(d as usize)
}

/// Like [`norm_dim`], for positions where `rank` is one more (`unsqueeze`).
fn norm_dim_incl(d: i64, rank: usize) -> Option<usize> {
    norm_dim(d, rank + 1)
}

// ----- results -----

fn tensor(dtype: Option<DType>, shape: Option<Vec<Dim>>) -> Type {
    Type::tensor_of(TensorType { dtype, shape })
}

fn promote_arg(t: &TensorType) -> Option<PromoteArg> {
    Some(PromoteArg::Tensor { dtype: t.dtype?, zero_dim: t.rank() == Some(0) })
}

/// The inferred result types of `op`, or `None` when no rule covers it. The op must carry an
/// ATen schema (aten and edge ops do).
pub fn infer_op(ctx: &Context, m: &Module, op: OpId) -> Result<Option<Vec<Type>>, String> {
    infer_op_with(ctx, m, op, &Ranges::of_module(m))
}

/// [`infer_op`] with the range constraints already read.
pub fn infer_op_with(ctx: &Context, m: &Module, op: OpId, r: &Ranges) -> Result<Option<Vec<Type>>, String> {
    let Some(schema) = ctx.op_def(m.op_name(op)).and_then(|d| d.schema.clone()) else { return Ok(None) };
    let a = Args::bind(m, op, &schema)?;
    let key = if schema.overload.is_empty() { schema.name.clone() } else { format!("{}.{}", schema.name, schema.overload) };
    infer_key(&key, &schema.name, &a, r)
}

const FLOAT_UNARY: &[&str] = &[
    "exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "tanh", "sigmoid", "sqrt", "rsqrt",
    "erf", "erfc", "erfinv", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "reciprocal", "gelu",
    "silu", "mish", "softplus", "elu", "hardswish", "hardsigmoid", "lgamma", "digamma", "logit", "sinc", "selu",
    "celu", "log_sigmoid",
];

const SAME_UNARY: &[&str] = &[
    "neg", "abs", "relu", "relu6", "ceil", "floor", "round", "trunc", "sign", "sgn", "bitwise_not", "clone",
    "contiguous", "alias", "leaky_relu", "hardtanh", "tril", "triu", "dropout", "detach", "fill", "flip", "roll",
    "frac", "square", "nan_to_num", "lift_fresh_copy", "fix", "positive", "clamp_min", "clamp_max", "_softmax",
    "_log_softmax", "alpha_dropout", "feature_dropout", "_safe_softmax", "celu_", "logcumsumexp", "cummax",
    "_assert_scalar", "copy", "masked_fill", "index_fill", "scatter", "scatter_add", "scatter_reduce", "index_put",
    "index_add", "index_copy", "masked_scatter", "slice_scatter", "select_scatter", "diagonal_scatter",
    "constant_pad_nd_same", "layer_norm", "batch_norm", "group_norm", "instance_norm", "rms_norm", "dropout_",
    "fill_", "zero", "bernoulli", "uniform", "normal_", "rand_like", "randn_like", "empty_like",
];

const BOOL_UNARY: &[&str] = &["logical_not", "isnan", "isinf", "isfinite", "signbit", "isneginf", "isposinf"];

const COMPARE: &[&str] = &["eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"];

const BINARY: &[&str] = &[
    "add", "sub", "mul", "rsub", "remainder", "fmod", "maximum", "minimum", "fmax", "fmin", "bitwise_and",
    "bitwise_or", "bitwise_xor", "__and__", "__or__", "__xor__", "floor_divide", "copysign", "hypot", "atan2",
    "xlogy", "lerp", "pow", "bitwise_left_shift", "bitwise_right_shift", "__lshift__", "__rshift__", "nextafter",
];

/// Elementwise promotion over the tensor and scalar arguments named in `names`.
fn elementwise(a: &Args, names: &[&str], r: &Ranges) -> Result<(Option<DType>, Option<Vec<Dim>>), String> {
    let mut shapes = Vec::new();
    let mut pargs = Vec::new();
    let mut unknown_dtype = false;
    for &n in names {
        if a.is_none(n) && a.schema.arg(n).is_some_and(|(_, arg)| matches!(arg.ty, ir::schema::SchemaType::Optional(_))) {
            continue;
        }
        if let Some(t) = a.tensor(n) {
            shapes.push(t.shape.clone());
            match promote_arg(&t) {
                Some(p) => pargs.push(p),
                None => unknown_dtype = true,
            }
        } else if let Some(s) = a.scalar(n) {
            pargs.push(PromoteArg::Scalar(s.category()));
        } else if a.value(n).is_some() {
            // A value of a type inference does not follow (`!prim.any`).
            unknown_dtype = true;
            shapes.push(None);
        }
    }
    let shape = broadcast_all(&shapes, r)?;
    let dtype = if unknown_dtype { None } else { result_type(&pargs) };
    Ok((dtype, shape))
}

fn self_or(a: &Args) -> Option<TensorType> {
    a.tensor("self").or_else(|| a.tensor("input"))
}

fn reduce_shape(shape: &[Dim], dims: Option<&[i64]>, keepdim: bool) -> Result<Vec<Dim>, String> {
    let rank = shape.len();
    let mut sel = vec![false; rank];
    match dims {
        None | Some([]) => sel.iter_mut().for_each(|s| *s = true),
        Some(ds) => {
            for &d in ds {
                let i = norm_dim(d, rank.max(1)).ok_or_else(|| format!("dimension {d} out of range for rank {rank}"))?;
                if i < rank {
                    sel[i] = true;
                }
            }
        }
    }
    Ok(shape
        .iter()
        .zip(&sel)
        .filter_map(|(d, &s)| if s { keepdim.then_some(Dim::Static(1)) } else { Some(d.clone()) })
        .collect())
}

fn pool_out(input: &Dim, k: i64, s: i64, p: i64, d: i64, ceil: bool) -> Result<Dim, String> {
    let Dim::Static(n) = input else { return Ok(Dim::Unknown) };
    if s <= 0 {
        return Err(format!("stride must be positive, got {s}"));
    }
    let eff = n + 2 * p - d * (k - 1) - 1;
    if eff < 0 {
        return Err(format!("input size {n} is too small for kernel {k} with padding {p} and dilation {d}"));
    }
    let mut out = if ceil { (eff + s - 1) / s + 1 } else { eff / s + 1 };
    if ceil && (out - 1) * s >= n + p {
        out -= 1;
    }
    Ok(Dim::Static(out))
}

fn pick(list: &[i64], i: usize, default: i64) -> i64 {
    match list.len() {
        0 => default,
        1 => list[0],
        _ => list.get(i).copied().unwrap_or(default),
    }
}

/// The result shape of `view`/`reshape` to `sizes` (one may be -1).
pub fn view_shape(input: Option<&[Dim]>, sizes: &[Dim]) -> Result<Vec<Dim>, String> {
    let infer_at: Vec<usize> = sizes.iter().enumerate().filter(|(_, d)| **d == Dim::Static(-1)).map(|(i, _)| i).collect();
    if infer_at.len() > 1 {
        return Err("only one dimension can be inferred (-1)".into());
    }
    let mut out = sizes.to_vec();
    let numel = input.map(dim_product);
    if let Some(&i) = infer_at.first() {
        let known: Vec<Dim> = sizes.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, d)| d.clone()).collect();
        let known = dim_product(&known);
        out[i] = match &numel {
            Some(n) if *n != Dim::Unknown && known != Dim::Unknown => dim_div_exact(n, &known).ok_or_else(|| {
                format!("shape {} is invalid for input of {n} elements", show_shape(sizes))
            })?,
            _ => Dim::Unknown,
        };
    } else if let (Some(Dim::Static(n)), Dim::Static(k)) = (&numel, dim_product(sizes)) {
        if *n != k {
            return Err(format!("shape {} is invalid for input of {n} elements", show_shape(sizes)));
        }
    }
    Ok(out)
}

fn matmul_shape(x: &[Dim], y: &[Dim], r: &Ranges) -> Result<Vec<Dim>, String> {
    let check = |a: &Dim, b: &Dim| -> Result<(), String> {
        if let (Dim::Static(p), Dim::Static(q)) = (a, b) {
            if p != q {
                return Err(format!("contraction dimensions differ: {p} vs {q} (shapes {} and {})", show_shape(x), show_shape(y)));
            }
        }
        Ok(())
    };
    match (x.len(), y.len()) {
        (0, _) | (_, 0) => Err("matmul operands must have at least one dimension".into()),
        (1, 1) => {
            check(&x[0], &y[0])?;
            Ok(vec![])
        }
        (2, 1) => {
            check(&x[1], &y[0])?;
            Ok(vec![x[0].clone()])
        }
        (1, 2) => {
            check(&x[0], &y[0])?;
            Ok(vec![y[1].clone()])
        }
        (2, 2) => {
            check(&x[1], &y[0])?;
            Ok(vec![x[0].clone(), y[1].clone()])
        }
        (n, 1) => {
            check(&x[n - 1], &y[0])?;
            Ok(x[..n - 1].to_vec())
        }
        (1, n) => {
            check(&x[0], &y[n - 2])?;
            let mut out = y[..n - 2].to_vec();
            out.push(y[n - 1].clone());
            Ok(out)
        }
        (p, q) => {
            check(&x[p - 1], &y[q - 2])?;
            let mut out = broadcast_shapes(&x[..p - 2], &y[..q - 2], r)?;
            out.push(x[p - 2].clone());
            out.push(y[q - 1].clone());
            Ok(out)
        }
    }
}

fn one(t: Type) -> Result<Option<Vec<Type>>, String> {
    Ok(Some(vec![t]))
}

fn infer_key(key: &str, name: &str, a: &Args, r: &Ranges) -> Result<Option<Vec<Type>>, String> {
    let base = name.trim_end_matches('_');
    let s = self_or(a);
    let sshape = s.as_ref().and_then(|t| t.shape.clone());
    let sdtype = s.as_ref().and_then(|t| t.dtype);
    // Comparisons and logical ops: broadcast, bool result.
    if COMPARE.contains(&base) {
        let (_, shape) = elementwise(a, &["self", "other"], r)?;
        return one(tensor(Some(DType::Bool), shape));
    }
    if BOOL_UNARY.contains(&base) {
        return one(tensor(Some(DType::Bool), sshape));
    }
    if FLOAT_UNARY.contains(&base) && s.is_some() {
        return one(tensor(sdtype.map(float_result), sshape));
    }
    match key {
        "div.Tensor" | "div.Scalar" | "true_divide.Tensor" | "true_divide.Scalar" => {
            let (d, shape) = elementwise(a, &["self", "other"], r)?;
            return one(tensor(d.map(float_result), shape));
        }
        "addcmul" => {
            let (d, shape) = elementwise(a, &["self", "tensor1", "tensor2"], r)?;
            return one(tensor(d, shape));
        }
        "div.Tensor_mode" | "div.Scalar_mode" => {
            let (d, shape) = elementwise(a, &["self", "other"], r)?;
            let d = if a.is_none("rounding_mode") { d.map(float_result) } else { d };
            return one(tensor(d, shape));
        }
        _ => {}
    }
    if BINARY.contains(&base) {
        let mut names = vec!["self", "other"];
        if base == "pow" {
            names = vec!["self", "exponent"];
        }
        if base == "lerp" {
            names = vec!["self", "end", "weight"];
        }
        if key == "pow.Scalar" {
            names = vec!["self", "exponent"];
        }
        let (d, shape) = elementwise(a, &names, r)?;
        let d = if base == "atan2" { d.map(float_result) } else { d };
        return one(tensor(d, shape));
    }
    if SAME_UNARY.contains(&base) && s.is_some() {
        let mut shape = sshape;
        if base == "masked_fill" {
            if let (Some(sh), Some(mask)) = (shape.clone(), a.tensor("mask")) {
                if let Some(ms) = mask.shape {
                    shape = Some(broadcast_shapes(&sh, &ms, r)?);
                }
            }
        }
        return one(tensor(sdtype, shape));
    }
    let out = match base {
        "where" => {
            let (d, _) = elementwise(a, &["self", "other"], r)?;
            let (_, shape) = elementwise(a, &["condition", "self", "other"], r)?;
            tensor(d, shape)
        }
        "clamp" => {
            let (d, shape) = elementwise(a, &["self", "min", "max"], r)?;
            tensor(d, shape)
        }
        "_to_copy" | "to" => {
            let d = match key {
                "to.other" => a.tensor("other").and_then(|t| t.dtype),
                _ => a.dtype("dtype").unwrap_or(None).or(sdtype),
            };
            tensor(d, sshape)
        }
        "type_as" => tensor(a.tensor("other").and_then(|t| t.dtype), sshape),
        "softmax" | "log_softmax" => tensor(a.dtype("dtype").flatten().or(sdtype), sshape),
        "cumsum" | "cumprod" => {
            let d = a.dtype("dtype").flatten().or(sdtype.map(|d| if d.is_floating() { d } else { DType::I64 }));
            tensor(d, sshape)
        }
        "sum" | "prod" | "mean" | "amax" | "amin" | "any" | "all" | "logsumexp" | "var" | "std" | "argmax" | "argmin"
        | "nansum" | "norm" | "linalg_vector_norm" => {
            let dims = if a.schema.arg("dim").is_some_and(|(_, x)| !matches!(x.ty.unwrap_optional(), ir::schema::SchemaType::List { .. })) {
                a.int("dim").map(|d| vec![d])
            } else if a.is_none("dim") {
                None
            } else {
                a.ints("dim")
            };
            if a.schema.arg("dim").is_some() && !a.is_none("dim") && dims.is_none() {
                return Ok(None);
            }
            let keepdim = a.bool("keepdim").unwrap_or(false);
            let shape = match &sshape {
                Some(sh) => Some(reduce_shape(sh, dims.as_deref(), keepdim)?),
                None => None,
            };
            let d = match base {
                "sum" | "prod" | "nansum" => a.dtype("dtype").flatten().or(sdtype.map(|d| if d.is_floating() { d } else { DType::I64 })),
                "mean" | "logsumexp" | "var" | "std" | "norm" | "linalg_vector_norm" => {
                    a.dtype("dtype").flatten().or(sdtype.map(float_result))
                }
                "any" | "all" => Some(DType::Bool),
                "argmax" | "argmin" => Some(DType::I64),
                _ => sdtype,
            };
            tensor(d, shape)
        }
        "max" | "min" if key.ends_with(".dim") => {
            let dim = a.int("dim").ok_or("dimension must be a constant")?;
            let keepdim = a.bool("keepdim").unwrap_or(false);
            let shape = match &sshape {
                Some(sh) => Some(reduce_shape(sh, Some(&[dim]), keepdim)?),
                None => None,
            };
            return Ok(Some(vec![tensor(sdtype, shape.clone()), tensor(Some(DType::I64), shape)]));
        }
        "max" | "min" if key == "max" || key == "min" => tensor(sdtype, Some(vec![])),
        "max" | "min" => {
            let (d, shape) = elementwise(a, &["self", "other"], r)?;
            tensor(d, shape)
        }
        "sort" => return Ok(Some(vec![tensor(sdtype, sshape.clone()), tensor(Some(DType::I64), sshape)])),
        "topk" => {
            let k = a.dims("k").and_then(|v| v.first().cloned()).unwrap_or(Dim::Unknown);
            let dim = a.int("dim").unwrap_or(-1);
            let shape = sshape.map(|mut sh| {
                if let Some(i) = norm_dim(dim, sh.len()) {
                    sh[i] = k;
                }
                sh
            });
            return Ok(Some(vec![tensor(sdtype, shape.clone()), tensor(Some(DType::I64), shape)]));
        }
        "mm" | "bmm" | "matmul" | "dot" | "mv" | "vdot" => {
            let (Some(x), Some(y)) = (s.clone(), a.tensor(if base == "mv" { "vec" } else if base == "mm" || base == "bmm" { "mat2" } else { "other" }).or_else(|| a.tensor("tensor"))) else {
                return Ok(None);
            };
            let d = match (x.dtype, y.dtype) {
                (Some(p), Some(q)) => Some(DType::promote(p, q)),
                _ => None,
            };
            let shape = match (&x.shape, &y.shape) {
                (Some(p), Some(q)) => {
                    if base == "mm" && (p.len() != 2 || q.len() != 2) {
                        return Err(format!("mm expects 2-d operands, got {} and {}", show_shape(p), show_shape(q)));
                    }
                    if base == "bmm" {
                        if p.len() != 3 || q.len() != 3 {
                            return Err(format!("bmm expects 3-d operands, got {} and {}", show_shape(p), show_shape(q)));
                        }
                        let b = broadcast_dim(&p[0], &q[0], r).ok_or_else(|| format!("bmm batch sizes differ: {} vs {}", p[0], q[0]))?;
                        let mut out = matmul_shape(&p[1..], &q[1..], r)?;
                        out.insert(0, b);
                        Some(out)
                    } else {
                        Some(matmul_shape(p, q, r)?)
                    }
                }
                _ => None,
            };
            tensor(d, shape)
        }
        "addmm" | "baddbmm" | "addmv" | "addbmm" => {
            let (Some(x), Some(y)) = (a.tensor(if base == "addmv" { "mat" } else if base == "addmm" { "mat1" } else { "batch1" }), a.tensor(if base == "addmv" { "vec" } else if base == "addmm" { "mat2" } else { "batch2" })) else {
                return Ok(None);
            };
            let shape = match (&x.shape, &y.shape) {
                (Some(p), Some(q)) if base == "baddbmm" && p.len() == 3 && q.len() == 3 => {
                    let mut out = matmul_shape(&p[1..], &q[1..], r)?;
                    out.insert(0, p[0].clone());
                    Some(out)
                }
                (Some(p), Some(q)) => Some(matmul_shape(p, q, r)?),
                _ => None,
            };
            if let (Some(sh), Some(b)) = (&shape, sshape.as_ref()) {
                broadcast_shapes(b, sh, r)?;
            }
            tensor(x.dtype.or(sdtype), shape)
        }
        "linear" => {
            let (Some(x), Some(w)) = (a.tensor("input"), a.tensor("weight")) else { return Ok(None) };
            let shape = match (&x.shape, &w.shape) {
                (Some(p), Some(q)) if !p.is_empty() => {
                    let mut out = p[..p.len() - 1].to_vec();
                    match q.len() {
                        2 => {
                            if let (Dim::Static(k1), Dim::Static(k2)) = (&p[p.len() - 1], &q[1]) {
                                if k1 != k2 {
                                    return Err(format!("linear: input features {k1} do not match weight {}", show_shape(q)));
                                }
                            }
                            out.push(q[0].clone());
                        }
                        1 => {}
                        _ => return Err("linear: weight must be 1-d or 2-d".into()),
                    }
                    Some(out)
                }
                _ => None,
            };
            tensor(x.dtype, shape)
        }
        "convolution" | "conv1d" | "conv2d" | "conv3d" | "conv_transpose1d" | "conv_transpose2d" | "conv_transpose3d" => {
            let (Some(x), Some(w)) = (a.tensor("input"), a.tensor("weight")) else { return Ok(None) };
            let transposed = a.bool("transposed").unwrap_or(base.starts_with("conv_transpose"));
            let (Some(xs), Some(ws)) = (x.shape.clone(), w.shape.clone()) else { return one(tensor(x.dtype, None)) };
            if xs.len() < 2 || ws.len() < 2 {
                return Err("convolution expects input and weight of rank at least 2".into());
            }
            let spatial = ws.len() - 2;
            let batched = xs.len() == ws.len();
            if !batched && xs.len() + 1 != ws.len() {
                return Err(format!("convolution: input {} and weight {} ranks do not match", show_shape(&xs), show_shape(&ws)));
            }
            let off = if batched { 2 } else { 1 };
            let stride = a.ints("stride").unwrap_or_default();
            let padding = match a.ints("padding") {
                Some(p) => p,
                None => return one(tensor(x.dtype, None)),
            };
            let dilation = a.ints("dilation").unwrap_or_default();
            let out_pad = a.ints("output_padding").unwrap_or_default();
            let groups = a.int("groups").unwrap_or(1);
            let mut out = Vec::new();
            if batched {
                out.push(xs[0].clone());
            }
            out.push(if transposed { dim_mul(&ws[1], &Dim::Static(groups)) } else { ws[0].clone() });
            for i in 0..spatial {
                let (k, st, p, d) = (ws[2 + i].as_static(), pick(&stride, i, 1), pick(&padding, i, 0), pick(&dilation, i, 1));
                let inp = xs.get(off + i).cloned().unwrap_or(Dim::Unknown);
                let dim = match (k, &inp) {
                    (Some(k), Dim::Static(n)) if transposed => {
                        Dim::Static((n - 1) * st - 2 * p + d * (k - 1) + pick(&out_pad, i, 0) + 1)
                    }
                    (Some(k), _) if !transposed => pool_out(&inp, k, st, p, d, false)?,
                    _ => Dim::Unknown,
                };
                out.push(dim);
            }
            tensor(x.dtype, Some(out))
        }
        "max_pool1d" | "max_pool2d" | "max_pool3d" | "avg_pool1d" | "avg_pool2d" | "avg_pool3d" | "max_pool2d_with_indices" | "max_pool3d_with_indices" => {
            let nsp = if base.contains("1d") { 1 } else if base.contains("3d") { 3 } else { 2 };
            let k = a.ints("kernel_size").ok_or("kernel_size must be constant")?;
            let st = a.ints("stride").unwrap_or_default();
            let st = if st.is_empty() { k.clone() } else { st };
            let p = a.ints("padding").unwrap_or_default();
            let d = a.ints("dilation").unwrap_or_default();
            let ceil = a.bool("ceil_mode").unwrap_or(false);
            let shape = match &sshape {
                Some(sh) if sh.len() >= nsp => {
                    let lead = sh.len() - nsp;
                    let mut out = sh[..lead].to_vec();
                    for i in 0..nsp {
                        out.push(pool_out(&sh[lead + i], pick(&k, i, 1), pick(&st, i, 1), pick(&p, i, 0), pick(&d, i, 1), ceil)?);
                    }
                    Some(out)
                }
                Some(sh) => return Err(format!("pooling needs at least {nsp} spatial dimensions, got {}", show_shape(sh))),
                None => None,
            };
            if base.ends_with("with_indices") {
                return Ok(Some(vec![tensor(sdtype, shape.clone()), tensor(Some(DType::I64), shape)]));
            }
            tensor(sdtype, shape)
        }
        "adaptive_avg_pool1d" | "adaptive_avg_pool2d" | "adaptive_avg_pool3d" | "_adaptive_avg_pool2d" | "_adaptive_avg_pool3d" | "adaptive_max_pool2d" => {
            let os = a.dims("output_size").ok_or("output_size must be known")?;
            let shape = sshape.map(|sh| {
                let lead = sh.len().saturating_sub(os.len());
                let mut out = sh[..lead].to_vec();
                out.extend(os.iter().cloned());
                out
            });
            if base == "adaptive_max_pool2d" {
                return Ok(Some(vec![tensor(sdtype, shape.clone()), tensor(Some(DType::I64), shape)]));
            }
            tensor(sdtype, shape)
        }
        "view" | "reshape" | "_unsafe_view" | "view_copy" | "_reshape_alias" => {
            if key == "view.dtype" {
                return one(tensor(a.dtype("dtype").flatten(), None));
            }
            let Some(sizes) = a.dims(if a.schema.arg("size").is_some() { "size" } else { "shape" }) else {
                return one(tensor(sdtype, None));
            };
            tensor(sdtype, Some(view_shape(sshape.as_deref(), &sizes)?))
        }
        "permute" | "permute_copy" => {
            let dims = a.ints("dims").ok_or("permute dims must be constant")?;
            let shape = match &sshape {
                Some(sh) => {
                    if dims.len() != sh.len() {
                        return Err(format!("permute: {} dims given for a tensor of rank {}", dims.len(), sh.len()));
                    }
                    let mut seen = vec![false; sh.len()];
                    let mut out = Vec::new();
                    for &d in &dims {
                        let i = norm_dim(d, sh.len()).ok_or_else(|| format!("permute: dimension {d} out of range"))?;
                        if std::mem::replace(&mut seen[i], true) {
                            return Err(format!("permute: dimension {d} repeated"));
                        }
                        out.push(sh[i].clone());
                    }
                    Some(out)
                }
                None => None,
            };
            tensor(sdtype, shape)
        }
        "transpose" | "swapaxes" | "swapdims" => {
            let (d0, d1) = (a.int("dim0").ok_or("dims must be constant")?, a.int("dim1").ok_or("dims must be constant")?);
            let shape = match sshape {
                Some(mut sh) if sh.is_empty() => Some(std::mem::take(&mut sh)),
                Some(mut sh) => {
                    let i = norm_dim(d0, sh.len()).ok_or_else(|| format!("transpose: dimension {d0} out of range"))?;
                    let j = norm_dim(d1, sh.len()).ok_or_else(|| format!("transpose: dimension {d1} out of range"))?;
                    sh.swap(i, j);
                    Some(sh)
                }
                None => None,
            };
            tensor(sdtype, shape)
        }
        "t" | "numpy_T" => {
            let shape = match sshape {
                Some(mut sh) if sh.len() <= 2 => {
                    sh.reverse();
                    Some(sh)
                }
                Some(sh) => return Err(format!("t() expects a tensor of rank at most 2, got {}", show_shape(&sh))),
                None => None,
            };
            tensor(sdtype, shape)
        }
        "expand" | "expand_copy" | "broadcast_to" => {
            let sizes = a.dims(if base == "broadcast_to" { "size" } else { "size" }).ok_or("sizes must be known")?;
            let shape = match &sshape {
                Some(sh) => {
                    if sizes.len() < sh.len() {
                        return Err(format!("expand: {} sizes for a tensor of rank {}", sizes.len(), sh.len()));
                    }
                    let lead = sizes.len() - sh.len();
                    let mut out = Vec::new();
                    for (i, d) in sizes.iter().enumerate() {
                        if i < lead || *d != Dim::Static(-1) {
                            if i >= lead {
                                let cur = &sh[i - lead];
                                if let (Dim::Static(c), Dim::Static(n)) = (cur, d) {
                                    if *c != 1 && c != n {
                                        return Err(format!("expand: size {c} of dimension {} cannot become {n}", i - lead));
                                    }
                                }
                            }
                            out.push(d.clone());
                        } else {
                            out.push(sh[i - lead].clone());
                        }
                    }
                    Some(out)
                }
                None => Some(sizes.iter().map(|d| if *d == Dim::Static(-1) { Dim::Unknown } else { d.clone() }).collect()),
            };
            tensor(sdtype, shape)
        }
        "expand_as" => tensor(sdtype, a.tensor("other").and_then(|t| t.shape)),
        "slice" | "slice_copy" | "narrow" => {
            let dim = a.int("dim").unwrap_or(0);
            let shape = match sshape {
                Some(mut sh) => {
                    let i = norm_dim(dim, sh.len()).ok_or_else(|| format!("slice: dimension {dim} out of range"))?;
                    sh[i] = if base == "narrow" {
                        a.dims("length").and_then(|v| v.first().cloned()).unwrap_or(Dim::Unknown)
                    } else {
                        slice_len(&sh[i], a)
                    };
                    Some(sh)
                }
                None => None,
            };
            tensor(sdtype, shape)
        }
        "select" | "select_copy" => {
            let dim = a.int("dim").ok_or("dim must be constant")?;
            let shape = match sshape {
                Some(mut sh) => {
                    let i = norm_dim(dim, sh.len()).ok_or_else(|| format!("select: dimension {dim} out of range"))?;
                    if let (Some(idx), Dim::Static(n)) = (a.int("index"), &sh[i]) {
                        if idx >= *n || idx < -n {
                            return Err(format!("select: index {idx} out of range for dimension of size {n}"));
                        }
                    }
                    sh.remove(i);
                    Some(sh)
                }
                None => None,
            };
            tensor(sdtype, shape)
        }
        "squeeze" | "squeeze_copy" => {
            let dims: Option<Vec<i64>> = match key {
                "squeeze.dim" | "squeeze_copy.dim" => a.int("dim").map(|d| vec![d]),
                "squeeze.dims" | "squeeze_copy.dims" => a.ints("dim"),
                _ => None,
            };
            let shape = match sshape {
                Some(sh) => {
                    let rank = sh.len();
                    let targets: Vec<usize> = match &dims {
                        Some(ds) => ds.iter().filter_map(|&d| norm_dim(d, rank.max(1))).filter(|&i| i < rank).collect(),
                        None => (0..rank).collect(),
                    };
                    if targets.iter().any(|&i| !sh[i].is_static()) {
                        if dims.is_none() {
                            return one(tensor(sdtype, None));
                        }
                    }
                    Some(sh.iter().enumerate().filter(|(i, d)| !(targets.contains(i) && **d == Dim::Static(1))).map(|(_, d)| d.clone()).collect())
                }
                None => None,
            };
            tensor(sdtype, shape)
        }
        "unsqueeze" | "unsqueeze_copy" => {
            let dim = a.int("dim").ok_or("dim must be constant")?;
            let shape = match sshape {
                Some(mut sh) => {
                    let i = norm_dim_incl(dim, sh.len()).ok_or_else(|| format!("unsqueeze: dimension {dim} out of range"))?;
                    sh.insert(i, Dim::Static(1));
                    Some(sh)
                }
                None => None,
            };
            tensor(sdtype, shape)
        }
        "flatten" => {
            let (sd, ed) = (a.int("start_dim").unwrap_or(0), a.int("end_dim").unwrap_or(-1));
            let shape = match sshape {
                Some(sh) if sh.is_empty() => Some(vec![Dim::Static(1)]),
                Some(sh) => {
                    let i = norm_dim(sd, sh.len()).ok_or("flatten: start_dim out of range")?;
                    let j = norm_dim(ed, sh.len()).ok_or("flatten: end_dim out of range")?;
                    if i > j {
                        return Err("flatten: start_dim is after end_dim".into());
                    }
                    let mut out = sh[..i].to_vec();
                    out.push(dim_product(&sh[i..=j]));
                    out.extend(sh[j + 1..].iter().cloned());
                    Some(out)
                }
                None => None,
            };
            tensor(sdtype, shape)
        }
        "unflatten" => {
            let dim = a.int("dim").ok_or("dim must be constant")?;
            let sizes = a.dims("sizes").ok_or("sizes must be known")?;
            let shape = match sshape {
                Some(sh) => {
                    let i = norm_dim(dim, sh.len()).ok_or("unflatten: dim out of range")?;
                    let part = view_shape(Some(&sh[i..=i]), &sizes)?;
                    let mut out = sh[..i].to_vec();
                    out.extend(part);
                    out.extend(sh[i + 1..].iter().cloned());
                    Some(out)
                }
                None => None,
            };
            tensor(sdtype, shape)
        }
        "cat" | "concat" | "concatenate" => {
            let Some(ts) = a.tensors("tensors") else { return Ok(None) };
            let dim = a.int("dim").unwrap_or(0);
            let mut dtype = None;
            let mut pargs = Vec::new();
            for t in &ts {
                if let Some(p) = promote_arg(t) {
                    pargs.push(p);
                }
            }
            if pargs.len() == ts.len() {
                dtype = ts.iter().filter_map(|t| t.dtype).reduce(DType::promote);
            }
            // Legacy empty 1-d tensors take no part in the shape.
            let shaped: Vec<&TensorType> = ts.iter().filter(|t| t.shape.as_deref() != Some(&[Dim::Static(0)][..])).collect();
            let mut shape: Option<Vec<Dim>> = None;
            let mut unknown = false;
            for t in shaped {
                let Some(sh) = &t.shape else {
                    unknown = true;
                    continue;
                };
                match &mut shape {
                    None => shape = Some(sh.clone()),
                    Some(acc) => {
                        if acc.len() != sh.len() {
                            return Err(format!("cat: tensors of ranks {} and {}", acc.len(), sh.len()));
                        }
                        let i = norm_dim(dim, acc.len()).ok_or("cat: dim out of range")?;
                        for (k, (x, y)) in acc.iter_mut().zip(sh).enumerate() {
                            if k == i {
                                *x = dim_add(x, y);
                            } else if let (Dim::Static(p), Dim::Static(q)) = (&*x, y) {
                                if p != q {
                                    return Err(format!("cat: sizes differ in dimension {k}: {p} vs {q}"));
                                }
                            } else if *x != *y && x.is_static() {
                            } else if *x != *y {
                                *x = y.clone();
                            }
                        }
                    }
                }
            }
            tensor(dtype, if unknown { None } else { shape })
        }
        "split" | "split_with_sizes" | "chunk" | "unbind" | "tensor_split" | "unsafe_split" => return Ok(split_types(key, base, a, s.as_ref())),
        "index_select" => {
            let dim = a.int("dim").ok_or("dim must be constant")?;
            let n = a.tensor("index").and_then(|t| t.shape).map(|s| dim_product(&s));
            let shape = match (sshape, n) {
                (Some(mut sh), Some(n)) => {
                    if sh.is_empty() {
                        Some(sh)
                    } else {
                        let i = norm_dim(dim, sh.len()).ok_or("index_select: dim out of range")?;
                        sh[i] = n;
                        Some(sh)
                    }
                }
                _ => None,
            };
            tensor(sdtype, shape)
        }
        "gather" => tensor(sdtype, a.tensor("index").and_then(|t| t.shape)),
        "embedding" => {
            let (Some(w), Some(idx)) = (a.tensor("weight"), a.tensor("indices")) else { return Ok(None) };
            let shape = match (w.shape, idx.shape) {
                (Some(ws), Some(mut is)) if ws.len() == 2 => {
                    is.push(ws[1].clone());
                    Some(is)
                }
                _ => None,
            };
            tensor(w.dtype, shape)
        }
        "index" if key == "index.Tensor" => {
            // One index tensor in the first position: gathers rows.
            let Some(idx) = a.tensors("indices") else { return one(tensor(sdtype, None)) };
            match (idx.as_slice(), sshape) {
                ([i], Some(sh)) if !sh.is_empty() && i.dtype != Some(DType::Bool) => {
                    let mut out = i.shape.clone().unwrap_or_default();
                    if i.shape.is_none() {
                        return one(tensor(sdtype, None));
                    }
                    out.extend(sh[1..].iter().cloned());
                    tensor(sdtype, Some(out))
                }
                _ => tensor(sdtype, None),
            }
        }
        "constant_pad_nd" | "pad" | "reflection_pad1d" | "reflection_pad2d" | "replication_pad2d" => {
            let Some(pad) = a.ints(if base == "constant_pad_nd" || base == "pad" { "pad" } else { "padding" }) else {
                return one(tensor(sdtype, None));
            };
            let shape = sshape.map(|mut sh| {
                let n = sh.len();
                for (k, pair) in pad.chunks(2).enumerate() {
                    if k < n {
                        let i = n - 1 - k;
                        let extra = pair.iter().sum::<i64>();
                        sh[i] = match &sh[i] {
                            Dim::Static(x) => Dim::Static(x + extra),
                            other => dim_sub_static(other, -extra),
                        };
                    }
                }
                sh
            });
            tensor(sdtype, shape)
        }
        "repeat" => {
            let reps = a.dims("repeats").ok_or("repeats must be known")?;
            let shape = sshape.map(|sh| {
                let lead = reps.len().saturating_sub(sh.len());
                reps.iter()
                    .enumerate()
                    .map(|(i, r)| if i < lead { r.clone() } else { dim_mul(&sh[i - lead], r) })
                    .collect()
            });
            tensor(sdtype, shape)
        }
        "full" | "zeros" | "ones" | "empty" | "rand" | "randn" | "empty_strided" | "new_full" | "new_zeros" | "new_ones" | "new_empty" => {
            let size = a.dims("size").ok_or("size must be known")?;
            let d = match a.dtype("dtype").flatten() {
                Some(d) => Some(d),
                None if base.starts_with("new_") => sdtype,
                None if base == "full" => match a.scalar("fill_value") {
                    Some(ScalarVal::Bool(_)) => Some(DType::Bool),
                    Some(ScalarVal::Int(_)) => Some(DType::I64),
                    Some(ScalarVal::Float(_)) => Some(DEFAULT_FLOAT),
                    None => None,
                },
                None => Some(DEFAULT_FLOAT),
            };
            tensor(d, Some(size))
        }
        "full_like" | "zeros_like" | "ones_like" | "empty_like" | "rand_like" | "randn_like" => {
            tensor(a.dtype("dtype").flatten().or(sdtype), sshape)
        }
        "scalar_tensor" => tensor(Some(a.dtype("dtype").flatten().unwrap_or(DEFAULT_FLOAT)), Some(vec![])),
        "arange" => {
            let start = if a.schema.arg("start").is_some() { a.scalar("start") } else { Some(ScalarVal::Int(Some(0))) };
            let end = a.scalar("end");
            let step = if a.schema.arg("step").is_some() { a.scalar("step") } else { Some(ScalarVal::Int(Some(1))) };
            let any_float = [start, end, step].iter().any(|s| matches!(s, Some(ScalarVal::Float(_))));
            let d = a.dtype("dtype").flatten().or(Some(if any_float { DEFAULT_FLOAT } else { DType::I64 }));
            let len = match (start.and_then(ScalarVal::as_f64), end.and_then(ScalarVal::as_f64), step.and_then(ScalarVal::as_f64)) {
                (Some(b), Some(e), Some(st)) if st != 0.0 => Dim::Static(((e - b) / st).ceil().max(0.0) as i64),
                (Some(_), Some(_), Some(_)) => return Err("arange: step must be nonzero".into()),
                _ => Dim::Unknown,
            };
            tensor(d, Some(vec![len]))
        }
        "native_layer_norm" => {
            let ns = a.dims("normalized_shape").ok_or("normalized_shape must be known")?;
            let stat = sshape.as_ref().map(|sh| {
                let keep = sh.len().saturating_sub(ns.len());
                let mut out = sh[..keep].to_vec();
                out.extend(std::iter::repeat_n(Dim::Static(1), sh.len() - keep));
                out
            });
            let sd = sdtype.map(float_result);
            return Ok(Some(vec![tensor(sdtype, sshape), tensor(sd, stat.clone()), tensor(sd, stat)]));
        }
        "native_group_norm" => {
            let (n, g) = (a.dims("N").and_then(|v| v.first().cloned()).unwrap_or(Dim::Unknown), a.int("group").map(Dim::Static).unwrap_or(Dim::Unknown));
            let stat = Some(vec![n, g]);
            return Ok(Some(vec![tensor(sdtype, sshape), tensor(sdtype, stat.clone()), tensor(sdtype, stat)]));
        }
        "_native_batch_norm_legit_no_training" | "_native_batch_norm_legit" | "native_batch_norm" | "_native_batch_norm_legit_functional" => {
            let c = sshape.as_ref().and_then(|sh| sh.get(1).cloned()).unwrap_or(Dim::Unknown);
            let training = a.bool("training").unwrap_or(false);
            let stat = if training || base == "native_batch_norm" { Some(vec![c]) } else { Some(vec![Dim::Static(0)]) };
            let mut out = vec![tensor(sdtype, sshape), tensor(sdtype, stat.clone()), tensor(sdtype, stat)];
            if base == "_native_batch_norm_legit_functional" {
                let rm = a.tensor("running_mean").map(Type::tensor_of).unwrap_or_else(Type::unknown_tensor);
                let rv = a.tensor("running_var").map(Type::tensor_of).unwrap_or_else(Type::unknown_tensor);
                out.push(rm);
                out.push(rv);
            }
            return Ok(Some(out));
        }
        "native_dropout" => return Ok(Some(vec![tensor(sdtype, sshape.clone()), tensor(Some(DType::Bool), sshape)])),
        "scaled_dot_product_attention" => {
            let (Some(q), Some(v)) = (a.tensor("query"), a.tensor("value")) else { return Ok(None) };
            let shape = match (q.shape, v.shape) {
                (Some(mut qs), Some(vs)) if !qs.is_empty() && !vs.is_empty() => {
                    let n = qs.len();
                    qs[n - 1] = vs[vs.len() - 1].clone();
                    Some(qs)
                }
                _ => None,
            };
            tensor(q.dtype, shape)
        }
        "sym_size" | "sym_numel" | "sym_stride" | "sym_storage_offset" => Type::int(),
        "_local_scalar_dense" | "item" => match sdtype.map(DType::category) {
            Some(DTypeCategory::Floating) => Type::float(),
            Some(DTypeCategory::Bool) => Type::bool(),
            Some(DTypeCategory::Integral) => Type::int(),
            None => return Ok(None),
        },
        "_assert_tensor_metadata" | "_assert_async" => return Ok(Some(vec![])),
        _ => return Ok(None),
    };
    one(out)
}

fn slice_len(d: &Dim, a: &Args) -> Dim {
    let start = if a.is_none("start") { Some(0) } else { a.int("start") };
    let end = if a.is_none("end") { Some(i64::MAX) } else { a.int("end") };
    let step = a.int("step").unwrap_or(1).max(1);
    match (d, start, end) {
        (Dim::Static(n), Some(s), Some(e)) => {
            let clampi = |x: i64| if x < 0 { (x + n).max(0) } else { x.min(*n) };
            let (s, e) = (clampi(s), clampi(e));
            Dim::Static(if e > s { (e - s + step - 1) / step } else { 0 })
        }
        (other, Some(0), Some(e)) if step == 1 && e >= i64::MAX / 2 => other.clone(),
        _ => Dim::Unknown,
    }
}

fn split_types(key: &str, base: &str, a: &Args, s: Option<&TensorType>) -> Option<Vec<Type>> {
    let t = s?;
    let sh = t.shape.clone()?;
    let dim = a.int("dim").unwrap_or(0);
    let i = norm_dim(dim, sh.len())?;
    let n = sh[i].as_static();
    let sizes: Vec<i64> = match (base, key) {
        ("split_with_sizes", _) | ("split", "split.sizes") | ("unsafe_split", "unsafe_split.sizes") => a.ints("split_sizes")?,
        ("split", _) | ("unsafe_split", _) => {
            let k = a.int("split_size")?;
            let n = n?;
            if k <= 0 {
                return None;
            }
            let mut v = vec![k; (n / k) as usize];
            if n % k != 0 || n == 0 {
                v.push(n % k);
            }
            v
        }
        ("chunk", _) => {
            let c = a.int("chunks")?;
            let n = n?;
            if c <= 0 {
                return None;
            }
            let k = (n + c - 1) / c;
            let k = k.max(1);
            let mut v = vec![k; (n / k) as usize];
            if n % k != 0 {
                v.push(n % k);
            }
            v
        }
        ("unbind", _) => {
            let mut out = sh.clone();
            out.remove(i);
            let elem = tensor(t.dtype, Some(out));
            return Some(vec![Type::list(elem)]);
        }
        _ => return None,
    };
    // A list holds one element type: the shape is exact only when every piece has the same size.
    let mut out = sh.clone();
    if sizes.windows(2).all(|w| w[0] == w[1]) && !sizes.is_empty() {
        out[i] = Dim::Static(sizes[0]);
    } else {
        out[i] = Dim::Unknown;
    }
    Some(vec![Type::list(tensor(t.dtype, Some(out)))])
}

/// The sizes each piece of a split gets along the split dimension, when static.
pub fn split_sizes(key: &str, a: &Args) -> Option<Vec<i64>> {
    let t = self_or(a)?;
    let sh = t.shape.clone()?;
    let dim = a.int("dim").unwrap_or(0);
    let i = norm_dim(dim, sh.len())?;
    let n = sh[i].as_static();
    if key.starts_with("split_with_sizes") || key == "split.sizes" {
        return a.ints("split_sizes");
    }
    if key.starts_with("split") {
        let k = a.int("split_size")?;
        let n = n?;
        if k <= 0 {
            return None;
        }
        let mut v = vec![k; (n / k) as usize];
        if n % k != 0 || n == 0 {
            v.push(n % k);
        }
        return Some(v);
    }
    if key.starts_with("chunk") {
        let c = a.int("chunks")?;
        let n = n?;
        if c <= 0 {
            return None;
        }
        let k = ((n + c - 1) / c).max(1);
        let mut v = vec![k; (n / k) as usize];
        if n % k != 0 {
            v.push(n % k);
        }
        return Some(v);
    }
    None
}

// ----- merging -----

/// Merges what is known about a value (`old`) with an inferred type (`new`): the more specific
/// of each part. `Err` when they contradict each other (different dtypes, ranks or static sizes).
pub fn refine(old: &Type, new: &Type) -> Result<Type, String> {
    match (old.kind(), new.kind()) {
        (TypeKind::Tensor(o), TypeKind::Tensor(n)) => {
            let dtype = match (o.dtype, n.dtype) {
                (Some(x), Some(y)) if x != y => return Err(format!("dtype {x} conflicts with inferred {y}")),
                (x, y) => x.or(y),
            };
            let shape = match (&o.shape, &n.shape) {
                (None, s) | (s, None) => s.clone(),
                (Some(x), Some(y)) => {
                    if x.len() != y.len() {
                        return Err(format!("rank {} conflicts with inferred rank {}", x.len(), y.len()));
                    }
                    let mut out = Vec::with_capacity(x.len());
                    for (i, (p, q)) in x.iter().zip(y).enumerate() {
                        out.push(match (p, q) {
                            (Dim::Static(a), Dim::Static(b)) if a != b => {
                                return Err(format!("size {a} of dimension {i} conflicts with inferred size {b}"));
                            }
                            (Dim::Static(_), _) => p.clone(),
                            (_, Dim::Static(_)) => q.clone(),
                            (Dim::Sym(_), _) => p.clone(),
                            (Dim::Unknown, _) => q.clone(),
                        });
                    }
                    Some(out)
                }
            };
            Ok(Type::tensor_of(TensorType { dtype, shape }))
        }
        (TypeKind::List(o), TypeKind::List(n)) => Ok(Type::list(refine(o, n)?)),
        (TypeKind::Any, _) => Ok(new.clone()),
        _ => Ok(old.clone()),
    }
}

/// What two types have in common (their least upper bound): the type of a value that is one
/// or the other, as a `prim.If` result or a loop-carried value. Differing dtypes, ranks or sizes
/// become unknown; `None` when the two are not the same kind of type (a tensor and an int).
pub fn join(a: &Type, b: &Type) -> Option<Type> {
    if a == b {
        return Some(a.clone());
    }
    match (a.kind(), b.kind()) {
        (TypeKind::Tensor(x), TypeKind::Tensor(y)) => {
            let dtype = if x.dtype == y.dtype { x.dtype } else { None };
            let shape = match (&x.shape, &y.shape) {
                (Some(p), Some(q)) if p.len() == q.len() => {
                    Some(p.iter().zip(q).map(|(d, e)| if d == e { d.clone() } else { Dim::Unknown }).collect())
                }
                _ => None,
            };
            Some(Type::tensor_of(TensorType { dtype, shape }))
        }
        (TypeKind::List(x), TypeKind::List(y)) => Some(Type::list(join(x, y)?)),
        (TypeKind::Optional(x), TypeKind::Optional(y)) => Some(Type::optional(join(x, y)?)),
        (TypeKind::Tuple(xs), TypeKind::Tuple(ys)) if xs.len() == ys.len() => {
            Some(Type::tuple(xs.iter().zip(ys).map(|(x, y)| join(x, y)).collect::<Option<Vec<_>>>()?))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(d: &[i64]) -> Vec<Dim> {
        d.iter().map(|&x| Dim::Static(x)).collect()
    }

    #[test]
    fn broadcasting() {
        let r = Ranges::default();
        assert_eq!(broadcast_shapes(&st(&[2, 1, 4]), &st(&[3, 1]), &r).unwrap(), st(&[2, 3, 4]));
        assert!(broadcast_shapes(&st(&[2, 3]), &st(&[4]), &r).unwrap_err().contains("cannot broadcast"));
        let s0 = Dim::sym("s0");
        assert_eq!(broadcast_shapes(&[s0.clone(), Dim::Static(4)], &st(&[1, 4]), &r).unwrap(), vec![s0.clone(), Dim::Static(4)]);
        assert_eq!(broadcast_shapes(&[s0.clone()], &st(&[5]), &r).unwrap(), st(&[5]));
        let mut rr = Ranges::default();
        rr.insert("s0", 2, Some(4));
        assert!(broadcast_shapes(&[s0.clone()], &st(&[5]), &rr).is_err());
        assert_eq!(broadcast_shapes(&[s0.clone()], &[Dim::sym("s1")], &rr).unwrap(), vec![s0]);
    }

    #[test]
    fn promotion() {
        use DTypeCategory::*;
        let t = |d, z| PromoteArg::Tensor { dtype: d, zero_dim: z };
        assert_eq!(result_type(&[t(DType::I32, false), PromoteArg::Scalar(Floating)]), Some(DType::F32));
        assert_eq!(result_type(&[t(DType::I32, false), PromoteArg::Scalar(Integral)]), Some(DType::I32));
        assert_eq!(result_type(&[t(DType::Bool, false), PromoteArg::Scalar(Integral)]), Some(DType::I64));
        assert_eq!(result_type(&[t(DType::F16, false), PromoteArg::Scalar(Floating)]), Some(DType::F16));
        assert_eq!(result_type(&[t(DType::F32, false), t(DType::F64, true)]), Some(DType::F32));
        assert_eq!(result_type(&[t(DType::I64, false), t(DType::F64, true)]), Some(DType::F64));
        assert_eq!(result_type(&[t(DType::I32, false), t(DType::I64, false)]), Some(DType::I64));
        assert_eq!(result_type(&[t(DType::U8, false), t(DType::I8, false)]), Some(DType::I16));
    }

    #[test]
    fn symbolic_arithmetic() {
        let s0 = Dim::sym("s0");
        assert_eq!(dim_mul(&Dim::Static(2), &s0), Dim::sym("2*s0"));
        assert_eq!(dim_mul(&s0, &Dim::Static(2)), Dim::sym("2*s0"));
        assert_eq!(dim_mul(&Dim::sym("2*s0"), &Dim::sym("s1")), Dim::sym("2*s0*s1"));
        assert_eq!(dim_div_exact(&Dim::sym("4*s0"), &Dim::Static(4)), Some(s0.clone()));
        assert_eq!(dim_div_exact(&Dim::sym("4*s0*s1"), &Dim::sym("s1")), Some(Dim::sym("4*s0")));
        assert_eq!(dim_div_exact(&Dim::sym("3*s0"), &Dim::Static(2)), None);
        assert_eq!(view_shape(Some(&[s0.clone(), Dim::Static(4)]), &[Dim::Static(-1)]).unwrap(), vec![Dim::sym("4*s0")]);
        assert_eq!(
            view_shape(Some(&[Dim::Static(2), s0.clone(), Dim::Static(4)]), &[Dim::Static(-1), Dim::Static(4)]).unwrap(),
            vec![Dim::sym("2*s0"), Dim::Static(4)]
        );
        assert!(view_shape(Some(&st(&[2, 3])), &st(&[4, -1])).is_err());
    }

    #[test]
    fn refinement() {
        let old = Type::tensor_of(TensorType { dtype: None, shape: Some(vec![Dim::Unknown, Dim::Static(3)]) });
        let new = Type::tensor(DType::F32, &[2, 3]);
        assert_eq!(refine(&old, &new).unwrap(), new);
        assert!(refine(&Type::tensor(DType::F32, &[2]), &Type::tensor(DType::F32, &[3])).is_err());
        assert!(refine(&Type::tensor(DType::F32, &[2]), &Type::tensor(DType::I64, &[2])).is_err());
    }
}
