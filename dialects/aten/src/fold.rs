//! Folders of aten ops: TorchScript scalar arithmetic (`aten.add.int`, `aten.lt.float`, …),
//! `is None` checks the types decide (`aten.__is__`, `aten.__isnot__`), and elementwise ops on
//! small constant tensors (`aten.add.Tensor`, `aten.mul.Scalar`, `aten.neg`, …).
//!
//! A folder gets the constant operands (`None` where not constant) and returns one
//! [`Folded`] per result. Tensor folds compute in the result's dtype, as ATen does, and only
//! where no type promotion happens (every tensor operand already has the result's dtype), so the
//! folded constant is bit-identical to what the kernel would produce. Integer arithmetic wraps at
//! the dtype's width like ATen's; float ops that ATen may evaluate in a different order (`alpha`
//! other than 1) are not folded.

use dialect_prim::kinds::{Kind as PK, TypeExt as _};
use crate::signature::{ArgSource, bind_args};
use dialect_prim::fold::Folded;
use crate::op;
use ir::{Attribute, Context, DType, DenseAttr, Module, OpId, OpRef};

/// Tensor folds give up beyond this many result elements unless the caller passes another limit.
pub const DEFAULT_MAX_ELEMENTS: usize = 64;

/// Binary tensor ops folded elementwise.
const TENSOR_BINARY: [OpRef; 10] = [
    op::ADD_TENSOR,
    op::SUB_TENSOR,
    op::MUL_TENSOR,
    op::DIV_TENSOR,
    op::ADD_SCALAR,
    op::SUB_SCALAR,
    op::MUL_SCALAR,
    op::DIV_SCALAR,
    op::MAXIMUM,
    op::MINIMUM,
];

/// Unary tensor ops folded elementwise.
const TENSOR_UNARY: [OpRef; 3] = [op::NEG, op::ABS, op::RELU];

/// Scalar (TorchScript `int`/`float`/`Scalar`) ops folded.
const SCALAR_BASES: [&str; 9] = [
    "add", "sub", "mul", "div", "floordiv", "gt", "lt", "ge", "le",
];

/// The names of the aten ops with a folder, among those registered in `ctx`.
pub fn foldable_ops(ctx: &Context) -> Vec<String> {
    let mut names: Vec<String> = TENSOR_BINARY
        .iter()
        .chain(TENSOR_UNARY.iter())
        .chain([op::__IS__, op::__ISNOT__].iter())
        .map(|o| o.name().to_string())
        .collect();
    for def in ctx.ops() {
        if def.dialect() == crate::DIALECT && is_scalar_op(ctx, &def.name) {
            names.push(def.name.clone());
        }
    }
    names.retain(|n| ctx.op_def(n).is_some());
    names.sort();
    names.dedup();
    names
}

/// Whether `name` is a scalar op with a scalar-only schema this module folds.
fn is_scalar_op(ctx: &Context, name: &str) -> bool {
    let Some(schema) = ctx.op_def(name).and_then(|d| d.schema.clone()) else {
        return false;
    };
    use ir::schema::SchemaType as S;
    SCALAR_BASES.contains(&schema.name.as_str())
        && schema.args.len() == 2
        && schema.args.iter().all(|a| {
            matches!(
                a.ty,
                S::Int | S::Float | S::Scalar | S::SymInt | S::SymFloat
            )
        })
        && schema.returns.len() == 1
        && matches!(
            schema.returns[0].ty,
            S::Int | S::Float | S::Scalar | S::Bool | S::SymInt | S::SymFloat
        )
}

/// Folds an aten op with the default tensor size limit.
pub fn fold(
    ctx: &Context,
    m: &Module,
    op: OpId,
    consts: &[Option<Attribute>],
) -> Option<Vec<Folded>> {
    fold_with_limit(ctx, m, op, consts, DEFAULT_MAX_ELEMENTS)
}

/// Folds an aten op; tensor results with more than `max_elements` elements are not folded.
pub fn fold_with_limit(
    ctx: &Context,
    m: &Module,
    op: OpId,
    consts: &[Option<Attribute>],
    max_elements: usize,
) -> Option<Vec<Folded>> {
    if !m.contains_op(op) || m.results(op).len() != 1 {
        return None;
    }
    let name = m.op_name(op).to_string();
    let schema = ctx.op_def(&name)?.schema.clone()?;
    let binding = bind_args(&schema, m, op).ok()?;
    let args: Vec<Option<Attribute>> = binding
        .iter()
        .map(|src| match src {
            ArgSource::Operand(i) => consts.get(*i).cloned().flatten(),
            ArgSource::Const(a) => Some(a.clone()),
        })
        .collect();
    let result_ty = m.value_type(m.results(op)[0]).clone();
    if op::__IS__.is(&name) || op::__ISNOT__.is(&name) {
        let is = identity_by_type(m, op, &binding)?;
        return Some(vec![Folded::Const(Attribute::Bool(is == op::__IS__.is(&name)))]);
    }
    let value = if TENSOR_BINARY.iter().chain(&TENSOR_UNARY).any(|o| o.is(&name)) {
        let PK::Tensor(t) = result_ty.pk() else {
            return None;
        };
        let dtype = t.dtype?;
        let dims = t.static_dims()?;
        fold_tensor(&schema.name, &args, dtype, &dims, max_elements)?
    } else if is_scalar_op(ctx, &name) {
        fold_scalar(&schema.name, &args, result_ty.pk())?
    } else {
        return None;
    };
    Some(vec![Folded::Const(value)])
}

/// Whether a value of type `t` is None, when the type decides it: a None-typed value is, a
/// value whose type excludes None is not; an optional or `Any` value is undecided.
pub fn none_by_type(t: PK<'_>) -> Option<bool> {
    match t {
        PK::None => Some(true),
        PK::Optional(_) | PK::Any => None,
        _ => Some(false),
    }
}

/// `a is b` from whether each is None (`none_by_type`): two Nones are the same None, None is
/// not a present value; two present values are undecided.
pub fn identical_by_none(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    match (a?, b?) {
        (true, true) => Some(true),
        (true, false) | (false, true) => Some(false),
        (false, false) => None,
    }
}

/// `a is b` of an `aten.__is__`/`aten.__isnot__` op, when the types decide it.
fn identity_by_type(m: &Module, op: OpId, binding: &[ArgSource]) -> Option<bool> {
    let none = |src: &ArgSource| -> Option<bool> {
        match src {
            ArgSource::Const(a) => Some(*a == dialect_prim::kinds::none()),
            ArgSource::Operand(i) => none_by_type(m.value_type(*m.operands(op).get(*i)?).pk()),
        }
    };
    identical_by_none(none(binding.first()?), none(binding.get(1)?))
}

/// A scalar argument as a number: integer or float.
#[derive(Clone, Copy, Debug)]
enum Num {
    I(i64),
    F(f64),
}

fn num(a: &Attribute) -> Option<Num> {
    match a {
        Attribute::Int(i) => Some(Num::I(*i)),
        Attribute::Float(f) => Some(Num::F(f.get())),
        Attribute::Bool(b) => Some(Num::I(*b as i64)),
        _ => None,
    }
}

impl Num {
    fn f(self) -> f64 {
        match self {
            Num::I(i) => i as f64,
            Num::F(f) => f,
        }
    }
}

fn fold_scalar(base: &str, args: &[Option<Attribute>], result: PK<'_>) -> Option<Attribute> {
    let a = num(args.first()?.as_ref()?)?;
    let b = num(args.get(1)?.as_ref()?)?;
    if let (Num::I(x), Num::I(y)) = (a, b) {
        let v = match base {
            "add" => Num::I(x.checked_add(y)?),
            "sub" => Num::I(x.checked_sub(y)?),
            "mul" => Num::I(x.checked_mul(y)?),
            "floordiv" => Num::I(dialect_prim::fold::floordiv(x, y)?),
            "div" if y != 0 => Num::F(x as f64 / y as f64),
            "gt" => return Some(Attribute::Bool(x > y)),
            "lt" => return Some(Attribute::Bool(x < y)),
            "ge" => return Some(Attribute::Bool(x >= y)),
            "le" => return Some(Attribute::Bool(x <= y)),
            _ => return None,
        };
        return match (v, result) {
            (Num::I(i), PK::Int) => Some(Attribute::Int(i)),
            (Num::F(f), PK::Float) => Some(Attribute::float(f)),
            _ => None,
        };
    }
    let (x, y) = (a.f(), b.f());
    let v = match base {
        "add" => x + y,
        "sub" => x - y,
        "mul" => x * y,
        "div" if y != 0.0 => x / y,
        "gt" => return Some(Attribute::Bool(x > y)),
        "lt" => return Some(Attribute::Bool(x < y)),
        "ge" => return Some(Attribute::Bool(x >= y)),
        "le" => return Some(Attribute::Bool(x <= y)),
        _ => return None,
    };
    (result == PK::Float).then(|| Attribute::float(v))
}

/// Element values of one operand of a tensor fold, broadcast by index.
enum Elems {
    F(Vec<f64>),
    I(Vec<i64>),
}

impl Elems {
    fn len(&self) -> usize {
        match self {
            Elems::F(v) => v.len(),
            Elems::I(v) => v.len(),
        }
    }
}

/// The elements of a tensor argument (dense of the result dtype, broadcastable to `dims`) or of
/// a scalar argument converted to `dtype`.
fn elems(a: &Attribute, dtype: DType, dims: &[i64]) -> Option<Elems> {
    let n: i64 = dims.iter().product();
    match a {
        Attribute::Dense(d) => {
            if d.dtype() != dtype {
                return None;
            }
            let ddims = d.dims();
            let fits = ddims == dims || (d.num_elements() == 1 && ddims.len() <= dims.len());
            if !fits || (d.num_elements() != 1 && d.num_elements() as i64 != n) {
                return None;
            }
            let k = d.num_elements();
            if dtype.is_floating() {
                (0..k)
                    .map(|i| d.element_f64(i))
                    .collect::<Option<Vec<_>>>()
                    .map(Elems::F)
            } else {
                (0..k)
                    .map(|i| d.element_i64(i))
                    .collect::<Option<Vec<_>>>()
                    .map(Elems::I)
            }
        }
        Attribute::Int(i) if dtype.is_floating() => {
            Some(Elems::F(vec![round_to(dtype, *i as f64)?]))
        }
        Attribute::Int(i) => Some(Elems::I(vec![*i])),
        Attribute::Float(f) if dtype.is_floating() => {
            Some(Elems::F(vec![round_to(dtype, f.get())?]))
        }
        _ => None,
    }
}

/// Rounds an f64 to the dtype's precision (f32 and f64 only).
fn round_to(dtype: DType, v: f64) -> Option<f64> {
    match dtype {
        DType::F32 => Some(v as f32 as f64),
        DType::F64 => Some(v),
        _ => None,
    }
}

/// Wraps an integer to the dtype's width, as ATen's integer kernels do.
fn wrap(dtype: DType, v: i64) -> Option<i64> {
    Some(match dtype {
        DType::I64 => v,
        DType::I32 => v as i32 as i64,
        DType::I16 => v as i16 as i64,
        DType::I8 => v as i8 as i64,
        DType::U8 => v as u8 as i64,
        _ => return None,
    })
}

fn fold_tensor(
    base: &str,
    args: &[Option<Attribute>],
    dtype: DType,
    dims: &[i64],
    max: usize,
) -> Option<Attribute> {
    let n = usize::try_from(dims.iter().product::<i64>()).ok()?;
    if n > max || dims.iter().any(|&d| d < 0) {
        return None;
    }
    if !matches!(
        dtype,
        DType::F32 | DType::F64 | DType::I64 | DType::I32 | DType::I16 | DType::I8 | DType::U8
    ) {
        return None;
    }
    let unary = matches!(base, "neg" | "abs" | "relu");
    let x = elems(args.first()?.as_ref()?, dtype, dims)?;
    let y = if unary {
        None
    } else {
        Some(elems(args.get(1)?.as_ref()?, dtype, dims)?)
    };
    // `alpha` scales `other` for add and sub; floats fold only without it (ATen may fuse the multiply).
    let alpha = match base {
        "add" | "sub" => match args.get(2).cloned().flatten() {
            None => Num::I(1),
            Some(a) => num(&a)?,
        },
        _ => Num::I(1),
    };
    let get = |e: &Elems, i: usize| -> usize { if e.len() == 1 { 0 } else { i } };
    let bytes: Vec<u8> = match (&x, y.as_ref()) {
        (Elems::F(xs), ys) => {
            if !matches!(alpha, Num::I(1)) && !matches!(alpha, Num::F(a) if a == 1.0) {
                return None;
            }
            let ys = match ys {
                Some(Elems::F(v)) => Some(v),
                Some(Elems::I(_)) => return None,
                None => None,
            };
            let mut out = Vec::with_capacity(n * dtype.size_bytes());
            for i in 0..n {
                let a = xs[if xs.len() == 1 { 0 } else { i }];
                let b = ys.map(|v| v[if v.len() == 1 { 0 } else { i }]);
                match dtype {
                    DType::F32 => {
                        out.extend(float_op32(base, a as f32, b.map(|b| b as f32))?.to_le_bytes())
                    }
                    _ => out.extend(float_op64(base, a, b)?.to_le_bytes()),
                }
            }
            out
        }
        (Elems::I(xs), ys) => {
            let Num::I(alpha) = alpha else { return None };
            let ys = match ys {
                Some(Elems::I(v)) => Some(v),
                Some(Elems::F(_)) => return None,
                None => None,
            };
            let mut out = Vec::with_capacity(n * dtype.size_bytes());
            for i in 0..n {
                let a = xs[get(&x, i)];
                let b = ys.map(|v| v[if v.len() == 1 { 0 } else { i }]);
                let v = wrap(dtype, int_op(base, a, b, alpha)?)?;
                match dtype {
                    DType::I64 => out.extend(v.to_le_bytes()),
                    DType::I32 => out.extend((v as i32).to_le_bytes()),
                    DType::I16 => out.extend((v as i16).to_le_bytes()),
                    DType::I8 => out.push(v as i8 as u8),
                    _ => out.push(v as u8),
                }
            }
            out
        }
    };
    DenseAttr::new(dtype, dims, bytes.into())
        .ok()
        .map(Attribute::Dense)
}

fn float_op32(base: &str, a: f32, b: Option<f32>) -> Option<f32> {
    Some(match (base, b) {
        ("add", Some(b)) => a + b,
        ("sub", Some(b)) => a - b,
        ("mul", Some(b)) => a * b,
        ("div", Some(b)) => a / b,
        ("maximum", Some(b)) => nan_max(a as f64, b as f64) as f32,
        ("minimum", Some(b)) => nan_min(a as f64, b as f64) as f32,
        ("neg", None) => -a,
        ("abs", None) => a.abs(),
        ("relu", None) => relu(a as f64)? as f32,
        _ => return None,
    })
}

fn float_op64(base: &str, a: f64, b: Option<f64>) -> Option<f64> {
    Some(match (base, b) {
        ("add", Some(b)) => a + b,
        ("sub", Some(b)) => a - b,
        ("mul", Some(b)) => a * b,
        ("div", Some(b)) => a / b,
        ("maximum", Some(b)) => nan_max(a, b),
        ("minimum", Some(b)) => nan_min(a, b),
        ("neg", None) => -a,
        ("abs", None) => a.abs(),
        ("relu", None) => relu(a)?,
        _ => return None,
    })
}

/// `relu`; negative zero is left unfolded (its sign in ATen's output is an implementation detail).
fn relu(a: f64) -> Option<f64> {
    if a == 0.0 && a.is_sign_negative() {
        return None;
    }
    Some(if a.is_nan() || a > 0.0 { a } else { 0.0 })
}

/// `maximum` propagates NaN.
fn nan_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

fn nan_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.min(b)
    }
}

fn int_op(base: &str, a: i64, b: Option<i64>, alpha: i64) -> Option<i64> {
    Some(match (base, b) {
        ("add", Some(b)) => a.wrapping_add(b.wrapping_mul(alpha)),
        ("sub", Some(b)) => a.wrapping_sub(b.wrapping_mul(alpha)),
        ("mul", Some(b)) => a.wrapping_mul(b),
        ("maximum", Some(b)) => a.max(b),
        ("minimum", Some(b)) => a.min(b),
        ("neg", None) => a.wrapping_neg(),
        ("abs", None) => a.wrapping_abs(),
        ("relu", None) => a.max(0),
        _ => return None,
    })
}
