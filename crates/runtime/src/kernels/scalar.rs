//! TorchScript's scalar and list ops (`aten::add.int`, `aten::gt.float`, `aten::size.int`, list
//! concatenation and repetition), Python operators on tensors (`__and__`), and metadata asserts.

use dialect_aten::op;
use super::{Args, KernelRegistry};
use crate::tensor::{KernelError, Result, Scalar};
use crate::value::IValue;

pub(super) fn num(op: &'static str, v: &IValue, i: usize) -> Result<Scalar> {
    match v {
        IValue::Int(x) => Ok(Scalar::Int(*x)),
        IValue::Float(x) => Ok(Scalar::Float(*x)),
        IValue::Bool(b) => Ok(Scalar::Bool(*b)),
        other => Err(KernelError::new(op, format!("argument {i}: expected a number, got {other:?}"))),
    }
}

pub(super) fn as_f64(s: Scalar) -> f64 {
    match s {
        Scalar::Int(i) => i as f64,
        Scalar::Float(f) => f,
        Scalar::Bool(b) => b as i64 as f64,
    }
}

pub(super) fn as_i64(s: Scalar) -> Option<i64> {
    match s {
        Scalar::Int(i) => Some(i),
        Scalar::Bool(b) => Some(b as i64),
        Scalar::Float(_) => None,
    }
}

/// Python arithmetic: integers stay integers (wrapping, as TorchScript's int64), anything with a float is a float.
pub(super) fn arith(op: &'static str, args: &[IValue], fi: fn(i64, i64) -> i64, ff: fn(f64, f64) -> f64) -> Result<Vec<IValue>> {
    let a = Args::new(op, args, 2)?;
    let (x, y) = (num(op, a.get(0), 0)?, num(op, a.get(1), 1)?);
    Ok(vec![match (as_i64(x), as_i64(y)) {
        (Some(i), Some(j)) => IValue::Int(fi(i, j)),
        _ => IValue::Float(ff(as_f64(x), as_f64(y))),
    }])
}

/// Python comparison of two numbers (ints compared exactly, mixed int/float as floats).
pub(super) fn compare(op: &'static str, args: &[IValue], pred: fn(std::cmp::Ordering) -> bool) -> Result<Vec<IValue>> {
    let a = Args::new(op, args, 2)?;
    if let (IValue::Str(x), IValue::Str(y)) = (a.get(0), a.get(1)) {
        return Ok(vec![IValue::Bool(pred(x.cmp(y)))]);
    }
    let (x, y) = (num(op, a.get(0), 0)?, num(op, a.get(1), 1)?);
    let ord = match (as_i64(x), as_i64(y)) {
        (Some(i), Some(j)) => Some(i.cmp(&j)),
        _ => as_f64(x).partial_cmp(&as_f64(y)),
    };
    // Any comparison with NaN is false, as in Python.
    Ok(vec![IValue::Bool(ord.is_some_and(pred))])
}

macro_rules! arith_kernel {
    ($name:ident, $op:path, $fi:expr, $ff:expr) => {
        fn $name(args: &[IValue]) -> Result<Vec<IValue>> {
            arith($op.name(), args, $fi, $ff)
        }
    };
}

macro_rules! compare_kernel {
    ($name:ident, $op:path, $pred:expr) => {
        fn $name(args: &[IValue]) -> Result<Vec<IValue>> {
            compare($op.name(), args, $pred)
        }
    };
}

// The other TorchScript builtins (`script.rs`) are declared the same way.
pub(super) use {arith_kernel, compare_kernel};

arith_kernel!(k_add, op::ADD, i64::wrapping_add, |a, b| a + b);
arith_kernel!(k_mul, op::MUL, i64::wrapping_mul, |a, b| a * b);
compare_kernel!(k_gt, op::GT, |o| o.is_gt());
compare_kernel!(k_lt, op::LT, |o| o.is_lt());

fn k_add_str(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::ADD_STR, args, 2)?;
    match (a.get(0), a.get(1)) {
        (IValue::Str(x), IValue::Str(y)) => Ok(vec![IValue::Str(format!("{x}{y}").into())]),
        _ => Err(KernelError::new(op::ADD_STR, "expected two strings")),
    }
}

/// The elements of a list value, whatever its specialized representation.
pub(super) fn list_items(op: &'static str, v: &IValue) -> Result<Vec<IValue>> {
    Ok(match v {
        IValue::List(items) => items.clone(),
        IValue::IntList(xs) => xs.iter().map(|&x| IValue::Int(x)).collect(),
        IValue::FloatList(xs) => xs.iter().map(|&x| IValue::Float(x)).collect(),
        IValue::BoolList(xs) => xs.iter().map(|&x| IValue::Bool(x)).collect(),
        IValue::TensorList(ts) => ts.iter().cloned().map(IValue::Tensor).collect(),
        other => return Err(KernelError::new(op, format!("expected a list, got {other:?}"))),
    })
}

/// Rebuilds a list in the representation of `like`.
fn rebuild(like: &IValue, items: Vec<IValue>) -> IValue {
    let all = |f: fn(&IValue) -> bool| items.iter().all(f);
    match like {
        IValue::IntList(_) if all(|i| matches!(i, IValue::Int(_))) => {
            IValue::IntList(items.iter().filter_map(|i| if let IValue::Int(x) = i { Some(*x) } else { None }).collect())
        }
        IValue::FloatList(_) if all(|i| matches!(i, IValue::Float(_))) => {
            IValue::FloatList(items.iter().filter_map(|i| if let IValue::Float(x) = i { Some(*x) } else { None }).collect())
        }
        IValue::BoolList(_) if all(|i| matches!(i, IValue::Bool(_))) => {
            IValue::BoolList(items.iter().filter_map(|i| if let IValue::Bool(x) = i { Some(*x) } else { None }).collect())
        }
        IValue::TensorList(_) if all(|i| matches!(i, IValue::Tensor(_))) => {
            IValue::TensorList(items.into_iter().filter_map(|i| if let IValue::Tensor(t) = i { Some(t) } else { None }).collect())
        }
        _ => IValue::List(items),
    }
}

/// `aten::add.t`: list concatenation.
fn k_add_t(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::ADD_T, args, 2)?;
    let mut items = list_items(a.op, a.get(0))?;
    items.extend(list_items(a.op, a.get(1))?);
    Ok(vec![rebuild(a.get(0), items)])
}

fn repeat_list(op: &'static str, list: &IValue, n: &IValue) -> Result<Vec<IValue>> {
    let items = list_items(op, list)?;
    let n = n.as_int().map_err(|e| KernelError::new(op, e.message))?;
    let times = usize::try_from(n).unwrap_or(0);
    let mut out = Vec::with_capacity(items.len().saturating_mul(times));
    for _ in 0..times {
        out.extend(items.iter().cloned());
    }
    Ok(vec![rebuild(list, out)])
}

/// `aten::mul.left_t`: `list * n`.
fn k_mul_left_t(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::MUL_LEFT_T, args, 2)?;
    repeat_list(a.op, a.get(0), a.get(1))
}

/// `aten::mul.right_`: `n * list`.
fn k_mul_right(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::MUL_RIGHT_, args, 2)?;
    repeat_list(a.op, a.get(1), a.get(0))
}

/// `aten::size.int`: one dimension's size, with negative dims counted from the end.
fn k_size_int(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::SIZE_INT, args, 2)?;
    let t = a.tensor(0)?;
    let d = a.get(1).as_int().map_err(|e| KernelError::new(a.op, e.message))?;
    Ok(vec![IValue::Int(t.size(d)? as i64)])
}

/// `aten::size`: all sizes.
fn k_size(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::SIZE, args, 1)?;
    Ok(vec![IValue::IntList(a.tensor(0)?.sizes_i64())])
}

/// `aten::__and__.Tensor`: Python's `&` on tensors, which is `bitwise_and`.
fn k_and(args: &[IValue]) -> Result<Vec<IValue>> {
    super::registry().call(op::BITWISE_AND_TENSOR.name(), args).map_err(|e| KernelError::new(op::__AND___TENSOR, e.message))
}

/// `aten::_assert_tensor_metadata`: fails when the tensor's sizes, strides or dtype differ from
/// the ones given (each check only when given); returns nothing.
fn k_assert_metadata(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::_ASSERT_TENSOR_METADATA, args, 1)?;
    let t = a.tensor(0)?;
    if let IValue::IntList(size) = a.get(1) {
        if *size != t.sizes_i64() {
            return Err(KernelError::new(a.op, format!("expected sizes {size:?}, got {:?}", t.sizes())));
        }
    }
    if let IValue::IntList(stride) = a.get(2) {
        let got: Vec<i64> = t.strides().iter().map(|&s| s as i64).collect();
        // Strides of size-1 dimensions carry no information.
        let differs = stride.iter().zip(&got).zip(t.sizes()).any(|((w, g), &n)| n > 1 && w != g) || stride.len() != got.len();
        if differs {
            return Err(KernelError::new(a.op, format!("expected strides {stride:?}, got {got:?}")));
        }
    }
    match a.get(3) {
        IValue::ScalarType(d) if *d != t.dtype() => {
            return Err(KernelError::new(a.op, format!("expected dtype {d}, got {}", t.dtype())));
        }
        IValue::Int(code) => {
            let want = ir::DType::from_scalar_type_code(*code);
            if want.is_some_and(|d| d != t.dtype()) {
                return Err(KernelError::new(a.op, format!("expected dtype code {code}, got {}", t.dtype())));
            }
        }
        _ => {}
    }
    Ok(Vec::new())
}

pub fn register(r: &mut KernelRegistry) {
    for op in [op::ADD, op::ADD_INT, op::ADD_FLOAT, op::ADD_INT_FLOAT, op::ADD_FLOAT_INT] {
        r.register(op, k_add);
    }
    for op in [op::MUL, op::MUL_INT, op::MUL_FLOAT, op::MUL_INT_FLOAT, op::MUL_FLOAT_INT] {
        r.register(op, k_mul);
    }
    for op in [op::GT, op::GT_INT, op::GT_FLOAT, op::GT_INT_FLOAT, op::GT_FLOAT_INT, op::GT_STR] {
        r.register(op, k_gt);
    }
    for op in [op::LT, op::LT_INT, op::LT_FLOAT, op::LT_INT_FLOAT, op::LT_FLOAT_INT, op::LT_STR] {
        r.register(op, k_lt);
    }
    r.register(op::ADD_STR, k_add_str);
    r.register(op::ADD_T, k_add_t);
    r.register(op::MUL_LEFT_T, k_mul_left_t);
    r.register(op::MUL_RIGHT_, k_mul_right);
    r.register(op::SIZE_INT, k_size_int);
    r.register(op::SIZE, k_size);
    r.register(op::__AND___TENSOR, k_and);
    r.register(op::_ASSERT_TENSOR_METADATA, k_assert_metadata);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::Tensor;

    fn call(op: &str, args: &[IValue]) -> Vec<IValue> {
        super::super::registry().call(op, args).unwrap()
    }

    #[test]
    fn python_arithmetic_and_comparisons() {
        assert!(matches!(call(op::ADD_INT.name(), &[IValue::Int(2), IValue::Int(3)])[..], [IValue::Int(5)]));
        assert!(matches!(call(op::ADD_INT_FLOAT.name(), &[IValue::Int(2), IValue::Float(0.5)])[..], [IValue::Float(x)] if x == 2.5));
        assert!(matches!(call(op::MUL_INT.name(), &[IValue::Int(i64::MAX), IValue::Int(2)])[..], [IValue::Int(-2)]));
        assert!(matches!(call(op::GT_INT.name(), &[IValue::Int(3), IValue::Int(2)])[..], [IValue::Bool(true)]));
        assert!(matches!(call(op::LT_FLOAT.name(), &[IValue::Float(f64::NAN), IValue::Float(1.0)])[..], [IValue::Bool(false)]));
        assert!(matches!(call(op::LT_INT_FLOAT.name(), &[IValue::Int(1), IValue::Float(1.5)])[..], [IValue::Bool(true)]));
    }

    #[test]
    fn lists_and_sizes() {
        let out = call(op::ADD_T.name(), &[IValue::IntList(vec![1]), IValue::IntList(vec![2, 3])]);
        assert!(matches!(&out[..], [IValue::IntList(v)] if *v == vec![1, 2, 3]));
        let out = call(op::MUL_LEFT_T.name(), &[IValue::IntList(vec![1, 2]), IValue::Int(2)]);
        assert!(matches!(&out[..], [IValue::IntList(v)] if *v == vec![1, 2, 1, 2]));
        let t = Tensor::zeros(ir::DType::F32, &[2, 5]).unwrap();
        assert!(matches!(call(op::SIZE_INT.name(), &[IValue::Tensor(t.clone()), IValue::Int(-1)])[..], [IValue::Int(5)]));
        assert!(super::super::registry().call(op::SIZE_INT.name(), &[IValue::Tensor(t), IValue::Int(2)]).is_err());
    }

    #[test]
    fn metadata_asserts() {
        let t = Tensor::zeros(ir::DType::F32, &[2, 3]).unwrap();
        let ok = [IValue::Tensor(t.clone()), IValue::IntList(vec![2, 3]), IValue::IntList(vec![3, 1]), IValue::ScalarType(ir::DType::F32)];
        assert!(call(op::_ASSERT_TENSOR_METADATA.name(), &ok).is_empty());
        let bad = [IValue::Tensor(t), IValue::IntList(vec![3, 2])];
        let e = super::super::registry().call(op::_ASSERT_TENSOR_METADATA.name(), &bad).unwrap_err();
        assert!(e.message.contains("expected sizes [3, 2]"), "{e}");
    }
}
