//! TorchScript's builtins on numbers, bools, strings, lists and optionals, with Python's
//! semantics: `sub`/`floordiv`/`remainder`/`div`/`pow`/`neg`/`abs` and comparisons on ints
//! and floats (floor division and modulo round toward negative infinity), the `int()`/`float()`/
//! `bool()` conversions, `len`, list indexing, `is None`, `not`, `str.format`.

use dialect_aten::op;

use super::scalar::{arith, arith_kernel, as_f64, as_i64, compare, compare_kernel, list_items, num};
use super::{Args, KernelRegistry};
use crate::tensor::{KernelError, Result, Scalar};
use crate::value::IValue;

arith_kernel!(k_sub, op::SUB, i64::wrapping_sub, |a, b| a - b);
compare_kernel!(k_eq, op::EQ, |o| o.is_eq());
compare_kernel!(k_ne, op::NE, |o| o.is_ne());
compare_kernel!(k_le, op::LE, |o| o.is_le());
compare_kernel!(k_ge, op::GE, |o| o.is_ge());

/// Two numbers of a binary builtin.
fn two(op: &'static str, args: &[IValue]) -> Result<(Scalar, Scalar)> {
    let a = Args::new(op, args, 2)?;
    Ok((num(op, a.get(0), 0)?, num(op, a.get(1), 1)?))
}

/// `a // b`: ints floor toward negative infinity; division by zero is an error, as in Python.
fn k_floordiv(args: &[IValue]) -> Result<Vec<IValue>> {
    let op = op::FLOORDIV.name();
    let (x, y) = two(op, args)?;
    Ok(vec![match (as_i64(x), as_i64(y)) {
        (Some(_), Some(0)) => return Err(KernelError::new(op, "integer division or modulo by zero")),
        (Some(i), Some(j)) => IValue::Int(i.wrapping_div(j) - i64::from((i.wrapping_rem(j) != 0) && ((i < 0) != (j < 0)))),
        _ => IValue::Float((as_f64(x) / as_f64(y)).floor()),
    }])
}

/// `a % b`: the result takes the divisor's sign, as in Python.
fn k_remainder(args: &[IValue]) -> Result<Vec<IValue>> {
    let op = op::REMAINDER.name();
    let (x, y) = two(op, args)?;
    Ok(vec![match (as_i64(x), as_i64(y)) {
        (Some(_), Some(0)) => return Err(KernelError::new(op, "integer division or modulo by zero")),
        (Some(i), Some(j)) => {
            let r = i.wrapping_rem(j);
            IValue::Int(if r != 0 && ((r < 0) != (j < 0)) { r + j } else { r })
        }
        _ => {
            let (a, b) = (as_f64(x), as_f64(y));
            IValue::Float(a - (a / b).floor() * b)
        }
    }])
}

/// `a / b`: always a float.
fn k_div(args: &[IValue]) -> Result<Vec<IValue>> {
    let (x, y) = two(op::DIV.name(), args)?;
    Ok(vec![IValue::Float(as_f64(x) / as_f64(y))])
}

/// `a ** b`: `pow.int` gives a float, as its schema says; mixed operands too.
fn k_pow(args: &[IValue]) -> Result<Vec<IValue>> {
    let (x, y) = two(op::POW_INT.name(), args)?;
    Ok(vec![IValue::Float(as_f64(x).powf(as_f64(y)))])
}

fn k_neg(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::NEG_INT, args, 1)?;
    Ok(vec![match num(a.op, a.get(0), 0)? {
        Scalar::Float(f) => IValue::Float(-f),
        s => IValue::Int(as_i64(s).unwrap_or(0).wrapping_neg()),
    }])
}

/// The single number a conversion reads: a number, or a one-element tensor's element.
fn number_of(op: &'static str, v: &IValue) -> Result<Scalar> {
    match v {
        IValue::Tensor(t) => t.item().map_err(|e| KernelError::new(op, e.message)),
        IValue::Str(s) => {
            let s = s.trim();
            s.parse::<i64>()
                .map(Scalar::Int)
                .or_else(|_| s.parse::<f64>().map(Scalar::Float))
                .map_err(|_| KernelError::new(op, format!("could not convert string to a number: '{s}'")))
        }
        other => num(op, other, 0),
    }
}

/// `int(x)`: floats truncate toward zero.
fn k_int(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::TS_INT_TENSOR, args, 1)?;
    Ok(vec![IValue::Int(match number_of(a.op, a.get(0))? {
        Scalar::Float(f) if f.is_finite() => f.trunc() as i64,
        Scalar::Float(f) => return Err(KernelError::new(a.op, format!("cannot convert {f} to an integer"))),
        s => as_i64(s).unwrap_or(0),
    })])
}

fn k_float(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::TS_FLOAT_TENSOR, args, 1)?;
    Ok(vec![IValue::Float(as_f64(number_of(a.op, a.get(0))?))])
}

fn k_bool(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::TS_BOOL_TENSOR, args, 1)?;
    Ok(vec![IValue::Bool(as_f64(number_of(a.op, a.get(0))?) != 0.0)])
}

/// `ScalarImplicit`: a one-element tensor's element as a number of its kind.
fn k_scalar_implicit(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::TS_SCALARIMPLICIT, args, 1)?;
    let t = a.tensor(0)?;
    if !t.sizes().is_empty() {
        return Err(KernelError::new(a.op, format!("expected a 0-dim tensor, got sizes {:?}", t.sizes())));
    }
    Ok(vec![match t.item()? {
        Scalar::Int(i) => IValue::Int(i),
        Scalar::Float(f) => IValue::Float(f),
        Scalar::Bool(b) => IValue::Bool(b),
    }])
}

fn k_len(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::LEN_T, args, 1)?;
    let n = match a.get(0) {
        IValue::Str(s) => s.chars().count(),
        IValue::Tensor(t) => *t.sizes().first().ok_or_else(|| KernelError::new(a.op, "len() of a 0-d tensor"))?,
        other => list_items(a.op, other)?.len(),
    };
    Ok(vec![IValue::Int(n as i64)])
}

/// `list[i]`, negative indices counted from the end.
fn k_getitem(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::__GETITEM___T, args, 2)?;
    let i = a.int(1)?;
    if let IValue::Str(s) = a.get(0) {
        let chars: Vec<char> = s.chars().collect();
        let j = if i < 0 { i + chars.len() as i64 } else { i };
        let c = usize::try_from(j).ok().and_then(|j| chars.get(j)).ok_or_else(|| KernelError::new(a.op, "string index out of range"))?;
        return Ok(vec![IValue::Str(c.to_string().into())]);
    }
    let items = list_items(a.op, a.get(0))?;
    let j = if i < 0 { i + items.len() as i64 } else { i };
    usize::try_from(j)
        .ok()
        .and_then(|j| items.get(j).cloned())
        .map(|v| vec![v])
        .ok_or_else(|| KernelError::new(a.op, format!("list index {i} out of range for a list of {}", items.len())))
}

/// `a is b` for None, bools and ints (what `is` compares in programs); other values are refused
/// rather than guessed.
fn identical(op: &'static str, a: &IValue, b: &IValue) -> Result<bool> {
    Ok(match (a, b) {
        (IValue::None, IValue::None) => true,
        (IValue::None, _) | (_, IValue::None) => false,
        (IValue::Bool(x), IValue::Bool(y)) => x == y,
        (IValue::Int(x), IValue::Int(y)) => x == y,
        _ => return Err(KernelError::new(op, "`is` between values other than None, bools and ints is not supported")),
    })
}

fn k_is(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::__IS__, args, 2)?;
    Ok(vec![IValue::Bool(identical(a.op, a.get(0), a.get(1))?)])
}

fn k_isnot(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::__ISNOT__, args, 2)?;
    Ok(vec![IValue::Bool(!identical(a.op, a.get(0), a.get(1))?)])
}

fn k_not(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::__NOT__, args, 1)?;
    Ok(vec![IValue::Bool(!a.get(0).as_bool().map_err(|e| KernelError::new(a.op, e.message))?)])
}

fn k_and_bool(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::__AND___BOOL, args, 2)?;
    let (x, y) = (a.get(0).as_bool(), a.get(1).as_bool());
    Ok(vec![IValue::Bool(x.map_err(|e| KernelError::new(a.op, e.message))? && y.map_err(|e| KernelError::new(a.op, e.message))?)])
}

fn k_or_bool(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::__OR___BOOL, args, 2)?;
    let (x, y) = (a.get(0).as_bool(), a.get(1).as_bool());
    Ok(vec![IValue::Bool(x.map_err(|e| KernelError::new(a.op, e.message))? || y.map_err(|e| KernelError::new(a.op, e.message))?)])
}

/// `_unwrap_optional`: the value itself; None is an error.
fn k_unwrap_optional(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::_UNWRAP_OPTIONAL, args, 1)?;
    match a.get(0) {
        IValue::None => Err(KernelError::new(a.op, "unwrapping an optional that is None")),
        v => Ok(vec![v.clone()]),
    }
}

fn k_dim(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::DIM, args, 1)?;
    Ok(vec![IValue::Int(a.tensor(0)?.sizes().len() as i64)])
}

/// How Python's `str()` shows a value inside a message.
fn show(v: &IValue) -> String {
    match v {
        IValue::None => "None".into(),
        IValue::Bool(b) => if *b { "True" } else { "False" }.into(),
        IValue::Int(i) => i.to_string(),
        IValue::Float(f) if f.fract() == 0.0 && f.is_finite() => format!("{f:.1}"),
        IValue::Float(f) => f.to_string(),
        IValue::Str(s) => s.to_string(),
        IValue::IntList(xs) => format!("{xs:?}"),
        IValue::Tensor(t) => format!("tensor of sizes {:?}", t.sizes()),
        other => format!("{other:?}"),
    }
}

/// `str.format`: each `{}` takes the next argument.
fn k_format(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::FORMAT, args, 1)?;
    let fmt = a.get(0).as_str().map_err(|e| KernelError::new(a.op, e.message))?;
    let mut out = String::new();
    let mut rest = args[1..].iter();
    let mut parts = fmt.split("{}");
    if let Some(first) = parts.next() {
        out.push_str(first);
    }
    for p in parts {
        match rest.next() {
            Some(v) => out.push_str(&show(v)),
            None => out.push_str("{}"),
        }
        out.push_str(p);
    }
    Ok(vec![IValue::Str(out.into())])
}

pub fn register(r: &mut KernelRegistry) {
    let groups: &[(&[ir::OpRef], super::KernelFn)] = &[
        (&[op::SUB, op::SUB_INT, op::SUB_FLOAT, op::SUB_INT_FLOAT, op::SUB_FLOAT_INT], k_sub),
        (&[op::FLOORDIV, op::FLOORDIV_INT, op::FLOORDIV_FLOAT, op::FLOORDIV_INT_FLOAT, op::FLOORDIV_FLOAT_INT], k_floordiv),
        (&[op::REMAINDER, op::REMAINDER_INT, op::REMAINDER_FLOAT, op::REMAINDER_INT_FLOAT, op::REMAINDER_FLOAT_INT], k_remainder),
        (&[op::DIV, op::DIV_INT, op::DIV_FLOAT], k_div),
        (&[op::POW_INT, op::POW_FLOAT, op::POW_INT_FLOAT, op::POW_FLOAT_INT], k_pow),
        (&[op::NEG_INT, op::NEG_FLOAT, op::NEG_SCALAR], k_neg),
        (&[op::EQ, op::EQ_INT, op::EQ_FLOAT, op::EQ_INT_FLOAT, op::EQ_FLOAT_INT, op::EQ_STR, op::EQ_BOOL], k_eq),
        (&[op::NE, op::NE_INT, op::NE_FLOAT, op::NE_INT_FLOAT, op::NE_FLOAT_INT, op::NE_STR, op::NE_BOOL], k_ne),
        (&[op::LE, op::LE_INT, op::LE_FLOAT, op::LE_INT_FLOAT, op::LE_FLOAT_INT, op::LE_STR], k_le),
        (&[op::GE, op::GE_INT, op::GE_FLOAT, op::GE_INT_FLOAT, op::GE_FLOAT_INT, op::GE_STR], k_ge),
        (&[op::TS_INT_TENSOR, op::TS_INT_FLOAT, op::TS_INT_BOOL, op::TS_INT_SCALAR, op::TS_INT_STR], k_int),
        (&[op::TS_FLOAT_TENSOR, op::TS_FLOAT_INT, op::TS_FLOAT_BOOL, op::TS_FLOAT_SCALAR, op::TS_FLOAT_STR], k_float),
        (&[op::TS_BOOL_TENSOR, op::TS_BOOL_INT, op::TS_BOOL_FLOAT], k_bool),
        (&[op::TS_SCALARIMPLICIT], k_scalar_implicit),
        (&[op::LEN_T, op::LEN_ANY, op::LEN_STR, op::LEN_TENSOR], k_len),
        (&[op::__GETITEM___T, op::__GETITEM___STR], k_getitem),
        (&[op::__IS__], k_is),
        (&[op::__ISNOT__], k_isnot),
        (&[op::__NOT__], k_not),
        (&[op::__AND___BOOL], k_and_bool),
        (&[op::__OR___BOOL], k_or_bool),
        (&[op::_UNWRAP_OPTIONAL], k_unwrap_optional),
        (&[op::DIM], k_dim),
        (&[op::FORMAT], k_format),
    ];
    for (ops, k) in groups {
        for op in *ops {
            r.register(*op, *k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(op: ir::OpRef, args: &[IValue]) -> Vec<IValue> {
        super::super::registry().call(op.name(), args).unwrap()
    }

    #[test]
    fn integer_division_and_modulo_follow_python() {
        assert!(matches!(call(op::FLOORDIV_INT, &[IValue::Int(-7), IValue::Int(2)])[..], [IValue::Int(-4)]));
        assert!(matches!(call(op::FLOORDIV_INT, &[IValue::Int(7), IValue::Int(-2)])[..], [IValue::Int(-4)]));
        assert!(matches!(call(op::FLOORDIV_INT, &[IValue::Int(6), IValue::Int(3)])[..], [IValue::Int(2)]));
        assert!(matches!(call(op::REMAINDER_INT, &[IValue::Int(-7), IValue::Int(3)])[..], [IValue::Int(2)]));
        assert!(matches!(call(op::REMAINDER_INT, &[IValue::Int(7), IValue::Int(-3)])[..], [IValue::Int(-2)]));
        assert!(matches!(call(op::REMAINDER_FLOAT, &[IValue::Float(-1.5), IValue::Float(1.0)])[..], [IValue::Float(x)] if x == 0.5));
        assert!(super::super::registry().call(op::FLOORDIV_INT.name(), &[IValue::Int(1), IValue::Int(0)]).is_err());
        assert!(matches!(call(op::DIV_INT, &[IValue::Int(3), IValue::Int(2)])[..], [IValue::Float(x)] if x == 1.5));
    }

    #[test]
    fn conversions_comparisons_and_containers() {
        assert!(matches!(call(op::TS_INT_FLOAT, &[IValue::Float(-2.7)])[..], [IValue::Int(-2)]));
        assert!(matches!(call(op::TS_FLOAT_INT, &[IValue::Int(3)])[..], [IValue::Float(x)] if x == 3.0));
        assert!(matches!(call(op::EQ_INT_FLOAT, &[IValue::Int(1), IValue::Float(1.0)])[..], [IValue::Bool(true)]));
        assert!(matches!(call(op::GE_STR, &[IValue::Str("b".into()), IValue::Str("a".into())])[..], [IValue::Bool(true)]));
        assert!(matches!(call(op::LEN_T, &[IValue::IntList(vec![1, 2, 3])])[..], [IValue::Int(3)]));
        assert!(matches!(call(op::__GETITEM___T, &[IValue::IntList(vec![1, 2, 3]), IValue::Int(-1)])[..], [IValue::Int(3)]));
        assert!(super::super::registry().call(op::__GETITEM___T.name(), &[IValue::IntList(vec![1]), IValue::Int(1)]).is_err());
        assert!(matches!(call(op::__IS__, &[IValue::None, IValue::None])[..], [IValue::Bool(true)]));
        assert!(matches!(call(op::__ISNOT__, &[IValue::Int(1), IValue::None])[..], [IValue::Bool(true)]));
        let s = call(op::FORMAT, &[IValue::Str("got {}D input, {}".into()), IValue::Int(3), IValue::Float(2.0)]);
        assert!(matches!(&s[..], [IValue::Str(x)] if &**x == "got 3D input, 2.0"), "{s:?}");
    }
}
