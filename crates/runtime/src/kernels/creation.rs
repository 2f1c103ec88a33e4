//! Tensor creation kernels: `full`, `zeros`, `ones`, `empty` (zero-filled), their `_like` and
//! `new_` forms, `empty_strided`, `scalar_tensor`, `arange`, `linspace`, `eye`, and `fill`.

use dialect_aten::op;
use ir::DType;

use super::unary::write_inplace;
use super::{Args, KernelRegistry, ret};
use crate::tensor::{KernelError, Result, Scalar, Tensor};
use crate::value::IValue;

/// `full`'s dtype when none is given: bool, int64 or the default float32 from the value.
fn dtype_of_fill(v: Scalar) -> DType {
    v.default_dtype()
}

fn k_full(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::FULL, args, 2)?;
    let v = a.scalar(1)?;
    let dtype = a.opt_dtype(2)?.unwrap_or(dtype_of_fill(v));
    ret(Tensor::full(dtype, &a.sizes(0)?, v)?)
}

fn k_full_like(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::FULL_LIKE, args, 2)?;
    let t = a.tensor(0)?;
    let dtype = a.opt_dtype(2)?.unwrap_or(t.dtype());
    ret(Tensor::full(dtype, t.sizes(), a.scalar(1)?)?)
}

macro_rules! const_kernels {
    ($make:ident, $like:ident, $new:ident, $value:expr, $n_make:path, $n_like:path, $n_new:path) => {
        fn $make(args: &[IValue]) -> Result<Vec<IValue>> {
            let a = Args::new($n_make, args, 1)?;
            let dtype = a.opt_dtype(1)?.unwrap_or(DType::F32);
            ret(Tensor::full(dtype, &a.sizes(0)?, $value)?)
        }
        fn $like(args: &[IValue]) -> Result<Vec<IValue>> {
            let a = Args::new($n_like, args, 1)?;
            let t = a.tensor(0)?;
            let dtype = a.opt_dtype(1)?.unwrap_or(t.dtype());
            ret(Tensor::full(dtype, t.sizes(), $value)?)
        }
        fn $new(args: &[IValue]) -> Result<Vec<IValue>> {
            let a = Args::new($n_new, args, 2)?;
            let t = a.tensor(0)?;
            let dtype = a.opt_dtype(2)?.unwrap_or(t.dtype());
            ret(Tensor::full(dtype, &a.sizes(1)?, $value)?)
        }
    };
}

const_kernels!(k_zeros, k_zeros_like, k_new_zeros, Scalar::Int(0), op::ZEROS, op::ZEROS_LIKE, op::NEW_ZEROS);
const_kernels!(k_ones, k_ones_like, k_new_ones, Scalar::Int(1), op::ONES, op::ONES_LIKE, op::NEW_ONES);
const_kernels!(
    k_empty,
    k_empty_like,
    k_new_empty,
    Scalar::Int(0),
    op::EMPTY_MEMORY_FORMAT,
    op::EMPTY_LIKE,
    op::NEW_EMPTY
);

fn k_new_full(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::NEW_FULL, args, 3)?;
    let t = a.tensor(0)?;
    let dtype = a.opt_dtype(3)?.unwrap_or(t.dtype());
    ret(Tensor::full(dtype, &a.sizes(1)?, a.scalar(2)?)?)
}

/// `empty_strided`: a zero-filled tensor with exactly the given strides.
fn k_empty_strided(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::EMPTY_STRIDED, args, 2)?;
    let sizes = a.sizes(0)?;
    let strides = a.sizes(1)?;
    if sizes.len() != strides.len() {
        return Err(KernelError::new(a.op, format!("sizes {sizes:?} and strides {strides:?} differ in length")));
    }
    let dtype = a.opt_dtype(2)?.unwrap_or(DType::F32);
    let extent = if sizes.contains(&0) {
        0
    } else {
        1 + sizes.iter().zip(&strides).map(|(&s, &st)| (s - 1).saturating_mul(st)).fold(0usize, usize::saturating_add)
    };
    let base = Tensor::zeros(dtype, &[extent])?;
    ret(base.as_strided(&sizes, &strides, Some(0)).map_err(|e| e.in_op(a.op))?)
}

fn k_scalar_tensor(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::SCALAR_TENSOR, args, 1)?;
    let dtype = a.opt_dtype(1)?.unwrap_or(DType::F32);
    ret(Tensor::scalar_tensor(a.scalar(0)?, dtype)?)
}

/// `arange(start, end, step)`: the length is `ceil((end - start) / step)` (computed in `i64`
/// when all three are integers, else in `f64`); values are `start + i * step` computed in
/// `f64` for floating dtypes and in `i64` otherwise. Without a dtype the result is int64 if
/// all three are integers, else float32.
pub fn arange(op: &str, start: Scalar, end: Scalar, step: Scalar, dtype: Option<DType>) -> Result<Tensor> {
    let all_int = !start.is_floating() && !end.is_floating() && !step.is_floating();
    let dtype = dtype.unwrap_or(if all_int { DType::I64 } else { DType::F32 });
    let (s, e, st) = (start.to_f64(), end.to_f64(), step.to_f64());
    if st == 0.0 {
        return Err(KernelError::new(op.to_string(), "step must be nonzero"));
    }
    if !s.is_finite() || !e.is_finite() {
        return Err(KernelError::new(op.to_string(), format!("unsupported range: {start} -> {end}")));
    }
    if (st > 0.0 && e < s) || (st < 0.0 && e > s) {
        return Err(KernelError::new(op.to_string(), "upper bound and larger bound inconsistent with step sign"));
    }
    let len = if all_int {
        let (si, ei, sti) = (start.to_i64() as i128, end.to_i64() as i128, step.to_i64() as i128);
        let d = ei - si;
        let q = d / sti;
        (if d % sti != 0 { q + 1 } else { q }).max(0) as f64
    } else {
        ((e - s) / st).ceil()
    };
    if !(0.0..=(1u64 << 40) as f64).contains(&len) {
        return Err(KernelError::new(op.to_string(), format!("invalid arange length {len}")));
    }
    let n = len as usize;
    if dtype.is_floating() {
        let v: Vec<f64> = (0..n).map(|i| s + i as f64 * st).collect();
        Tensor::from_vec(v, &[n])?.to_dtype(dtype)
    } else {
        let (si, sti) = (start.to_i64(), step.to_i64());
        if !all_int {
            // Integer dtype with float bounds: values computed in f64 and truncated.
            let v: Vec<f64> = (0..n).map(|i| s + i as f64 * st).collect();
            return Tensor::from_vec(v, &[n])?.to_dtype(dtype);
        }
        let v: Vec<i64> = (0..n as i64).map(|i| si.wrapping_add(i.wrapping_mul(sti))).collect();
        Tensor::from_vec(v, &[n])?.to_dtype(dtype)
    }
}

fn k_arange_start_step(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::ARANGE_START_STEP, args, 2)?;
    let step = a.opt_scalar(2)?.unwrap_or(Scalar::Int(1));
    ret(arange(a.op, a.scalar(0)?, a.scalar(1)?, step, a.opt_dtype(3)?)?)
}

fn k_arange_start(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::ARANGE_START, args, 2)?;
    ret(arange(a.op, a.scalar(0)?, a.scalar(1)?, Scalar::Int(1), a.opt_dtype(2)?)?)
}

fn k_arange(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::ARANGE, args, 1)?;
    ret(arange(a.op, Scalar::Int(0), a.scalar(0)?, Scalar::Int(1), a.opt_dtype(1)?)?)
}

/// `linspace`: `steps` points from `start` to `end`; the first half counts up from `start`
/// and the second half down from `end`, as PyTorch's CPU kernel does.
fn k_linspace(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::LINSPACE, args, 3)?;
    let (s, e) = (a.scalar(0)?.to_f64(), a.scalar(1)?.to_f64());
    let steps = a.int(2)?;
    if steps < 0 {
        return Err(KernelError::new(a.op, "number of steps must be non-negative"));
    }
    let dtype = a.opt_dtype(3)?.unwrap_or(DType::F32);
    let n = steps as usize;
    let v: Vec<f64> = if n == 1 {
        vec![s]
    } else {
        let step = (e - s) / (n as f64 - 1.0);
        let half = n / 2;
        (0..n).map(|i| if i < half { s + step * i as f64 } else { e - step * (n - i - 1) as f64 }).collect()
    };
    ret(Tensor::from_vec(v, &[n])?.to_dtype(dtype)?)
}

fn eye(op: &str, n: i64, m: i64, dtype: Option<DType>) -> Result<Tensor> {
    if n < 0 || m < 0 {
        return Err(KernelError::new(op.to_string(), format!("n and m must be non-negative, got {n}, {m}")));
    }
    let t = Tensor::zeros(dtype.unwrap_or(DType::F32), &[n as usize, m as usize])?;
    if n > 0 && m > 0 {
        t.diagonal(0, 0, 1)?.fill_(Scalar::Int(1))?;
    }
    Ok(t)
}

fn k_eye(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::EYE, args, 1)?;
    let n = a.int(0)?;
    ret(eye(a.op, n, n, a.opt_dtype(1)?)?)
}

fn k_eye_m(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::EYE_M, args, 2)?;
    ret(eye(a.op, a.int(0)?, a.int(1)?, a.opt_dtype(2)?)?)
}

fn k_fill_scalar(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::FILL_SCALAR, args, 2)?;
    let t = a.tensor(0)?;
    ret(Tensor::full(t.dtype(), t.sizes(), a.scalar(1)?)?)
}

fn k_fill_tensor(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::FILL_TENSOR, args, 2)?;
    let t = a.tensor(0)?;
    let v = a.tensor(1)?;
    if v.dim() != 0 {
        return Err(KernelError::new(a.op, format!("fill only supports a 0-dimensional value tensor, got {} dims", v.dim())));
    }
    ret(Tensor::full(t.dtype(), t.sizes(), v.item()?)?)
}

fn k_fill_(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::FILL__SCALAR, args, 2)?;
    let t = a.tensor(0)?;
    t.fill_(a.scalar(1)?)?;
    ret(t.clone())
}

fn k_fill_tensor_(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::FILL__TENSOR, args, 2)?;
    let t = a.tensor(0)?;
    let v = a.tensor(1)?;
    if v.dim() != 0 {
        return Err(KernelError::new(a.op, "fill_ only supports a 0-dimensional value tensor"));
    }
    write_inplace(a.op, t, &Tensor::full(t.dtype(), t.sizes(), v.item()?)?)
}

fn k_zero_(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::ZERO_, args, 1)?;
    let t = a.tensor(0)?;
    t.fill_(Scalar::Int(0))?;
    ret(t.clone())
}

pub fn register(r: &mut KernelRegistry) {
    let table: &[(ir::OpRef, super::KernelFn)] = &[
        (op::FULL, k_full),
        (op::FULL_LIKE, k_full_like),
        (op::ZEROS, k_zeros),
        (op::ZEROS_LIKE, k_zeros_like),
        (op::NEW_ZEROS, k_new_zeros),
        (op::ONES, k_ones),
        (op::ONES_LIKE, k_ones_like),
        (op::NEW_ONES, k_new_ones),
        (op::EMPTY_MEMORY_FORMAT, k_empty),
        (op::EMPTY_LIKE, k_empty_like),
        (op::NEW_EMPTY, k_new_empty),
        (op::NEW_FULL, k_new_full),
        (op::EMPTY_STRIDED, k_empty_strided),
        (op::SCALAR_TENSOR, k_scalar_tensor),
        (op::ARANGE, k_arange),
        (op::ARANGE_START, k_arange_start),
        (op::ARANGE_START_STEP, k_arange_start_step),
        (op::LINSPACE, k_linspace),
        (op::EYE, k_eye),
        (op::EYE_M, k_eye_m),
        (op::FILL_SCALAR, k_fill_scalar),
        (op::FILL_TENSOR, k_fill_tensor),
        (op::FILL__SCALAR, k_fill_),
        (op::FILL__TENSOR, k_fill_tensor_),
        (op::ZERO_, k_zero_),
    ];
    for &(name, f) in table {
        r.register(name, f);
    }
}
