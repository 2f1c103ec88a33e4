//! Reading an op's arguments by schema name: operand types, constant attributes and
//! schema defaults, and constant integers traced through SymInt arithmetic.

use dialect_prim::kinds::{Attr as PA, Kind as PK, TypeExt as _};
use super::*;

/// The arguments of one op, by schema name.
pub struct Args<'a> {
    pub ctx: &'a Context,
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
    pub fn bind(ctx: &'a Context, m: &'a Module, op: OpId, schema: &'a FunctionSchema) -> Result<Args<'a>, String> {
        let binding = bind_args(schema, m, op).map_err(|e| e.to_string())?;
        Ok(Args {
            ctx,
            m,
            op,
            schema,
            binding,
        })
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
            Some(ArgSource::Const(a)) => *a == dialect_prim::kinds::none(),
            Some(ArgSource::Operand(k)) => self
                .m
                .operands(self.op)
                .get(*k)
                .is_none_or(|&v| matches!(self.m.value_type(v).pk(), PK::None)),
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
        match self.m.value_type(v).pk() {
            PK::Int => Some(ScalarVal::Int(None)),
            PK::Float => Some(ScalarVal::Float(None)),
            PK::Bool => Some(ScalarVal::Bool(None)),
            _ => None,
        }
    }

    /// A `ScalarType?` argument: `Some(None)` when it is `None`.
    pub fn dtype(&self, name: &str) -> Option<Option<DType>> {
        let c = self.constant(name)?;
        match dialect_prim::kinds::attr(&c) {
            PA::None => Some(None),
            PA::DType(d) => Some(Some(d)),
            PA::Other(Attribute::Int(c)) => DType::from_scalar_type_code(*c).map(Some),
            _ => None,
        }
    }

    /// An `int[]`/`SymInt[]` argument as dims: constants are static, SymInt values symbolic
    /// where they can be traced to a tensor size, unknown otherwise.
    pub fn dims(&self, name: &str) -> Option<Vec<Dim>> {
        match self.source(name)? {
            ArgSource::Const(a) => match a {
                Attribute::Array(items) => {
                    items.iter().map(|i| i.as_int().map(Dim::Static)).collect()
                }
                Attribute::Int(i) => Some(vec![Dim::Static(*i)]),
                _ => None,
            },
            ArgSource::Operand(k) => {
                let v = *self.m.operands(self.op).get(*k)?;
                if let Some(a) = constant_of(self.m, v) {
                    return match a {
                        Attribute::Array(items) => {
                            items.iter().map(|i| i.as_int().map(Dim::Static)).collect()
                        }
                        Attribute::Int(i) => Some(vec![Dim::Static(i)]),
                        _ => None,
                    };
                }
                match self.m.value_type(v).pk() {
                    PK::Int => Some(vec![int_dim(self.ctx, self.m, v)]),
                    PK::List(_) => {
                        let def = self.m.defining_op(v)?;
                        if self.m.op_name(def) != dialect_prim::LIST_CONSTRUCT {
                            return None;
                        }
                        Some(
                            self.m
                                .operands(def)
                                .iter()
                                .map(|&e| int_dim(self.ctx, self.m, e))
                                .collect(),
                        )
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

    /// The element type of a `Tensor[]` argument, from the list's type (however it was built).
    pub fn list_elem(&self, name: &str) -> Option<TensorType> {
        let v = self.value(name)?;
        match self.m.value_type(v).pk() {
            PK::List(e) => e.as_tensor().cloned(),
            _ => None,
        }
    }

    /// A `Tensor[]` argument: the types of the `prim.ListConstruct` elements.
    pub fn tensors(&self, name: &str) -> Option<Vec<TensorType>> {
        let v = self.value(name)?;
        let def = self.m.defining_op(v)?;
        if self.m.op_name(def) != dialect_prim::LIST_CONSTRUCT {
            return None;
        }
        self.m
            .operands(def)
            .iter()
            .map(|&e| self.m.value_type(e).as_tensor().cloned())
            .collect()
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
pub fn int_dim(ctx: &Context, m: &Module, v: ValueId) -> Dim {
    int_dim_depth(ctx, m, v, 0)
}

pub(super) fn int_dim_depth(ctx: &Context, m: &Module, v: ValueId, depth: usize) -> Dim {
    if depth > 16 {
        return Dim::Unknown;
    }
    if let Some(Attribute::Int(i)) = constant_of(m, v) {
        return Dim::Static(i);
    }
    let Some(def) = m.defining_op(v) else {
        return Dim::Unknown;
    };
    let ops = m.operands(def);
    // An Edge op reads as the ATen op it mirrors.
    match ctx.mirrored(m.op_name(def)) {
        n if crate::op::SYM_SIZE_INT.is(n) => {
            let Some(t) = ops.first().and_then(|&t| m.value_type(t).as_tensor()) else {
                return Dim::Unknown;
            };
            let dim = ops
                .get(1)
                .and_then(|&d| constant_of(m, d))
                .or_else(|| m.attr(def, "dim").cloned());
            match (t.shape.as_ref(), dim.and_then(|d| d.as_int())) {
                (Some(s), Some(d)) => norm_dim(d, s.len())
                    .map(|i| s[i].clone())
                    .unwrap_or(Dim::Unknown),
                _ => Dim::Unknown,
            }
        }
        dialect_prim::MUL if ops.len() == 2 => dim_mul(
            &int_dim_depth(ctx, m, ops[0], depth + 1),
            &int_dim_depth(ctx, m, ops[1], depth + 1),
        ),
        dialect_prim::ADD if ops.len() == 2 => dim_add(
            &int_dim_depth(ctx, m, ops[0], depth + 1),
            &int_dim_depth(ctx, m, ops[1], depth + 1),
        ),
        dialect_prim::FLOORDIV if ops.len() == 2 => dim_div_exact(
            &int_dim_depth(ctx, m, ops[0], depth + 1),
            &int_dim_depth(ctx, m, ops[1], depth + 1),
        )
        .unwrap_or(Dim::Unknown),
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
pub(super) fn norm_dim_incl(d: i64, rank: usize) -> Option<usize> {
    norm_dim(d, rank + 1)
}
