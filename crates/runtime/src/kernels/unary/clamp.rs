//! Clamping (`clamp`, `clamp_min`, `clamp_max`, `hardtanh`, tensor bounds) and the in-place
//! forms of unary ops, written back through [`write_inplace`].

use super::*;

/// Clamps like PyTorch: NaN inputs stay NaN; `min(max(x, lo), hi)` so `hi` wins if `lo > hi`.
pub(super) struct Clamp {
    pub(super) lo: Option<f64>,
    pub(super) hi: Option<f64>,
}

impl FloatFn for Clamp {
    fn f32(&self, x: f32) -> f32 {
        if x.is_nan() {
            return x;
        }
        let mut v = x;
        if let Some(lo) = self.lo {
            let lo = lo as f32;
            if lo.is_nan() {
                return lo;
            }
            if v < lo {
                v = lo;
            }
        }
        if let Some(hi) = self.hi {
            let hi = hi as f32;
            if hi.is_nan() {
                return hi;
            }
            if v > hi {
                v = hi;
            }
        }
        v
    }
    fn f64(&self, x: f64) -> f64 {
        if x.is_nan() {
            return x;
        }
        let mut v = x;
        if let Some(lo) = self.lo {
            if lo.is_nan() {
                return lo;
            }
            if v < lo {
                v = lo;
            }
        }
        if let Some(hi) = self.hi {
            if hi.is_nan() {
                return hi;
            }
            if v > hi {
                v = hi;
            }
        }
        v
    }
}

/// `clamp` with scalar bounds, with type promotion over the tensor and the bounds.
pub fn clamp_scalar(op: &str, t: &Tensor, lo: Option<Scalar>, hi: Option<Scalar>) -> Result<Tensor> {
    if lo.is_none() && hi.is_none() {
        return Err(KernelError::new(op.to_string(), "at least one of 'min' or 'max' must not be None"));
    }
    let mut ops = vec![Operand::Tensor(t)];
    ops.extend(lo.map(Operand::Scalar));
    ops.extend(hi.map(Operand::Scalar));
    let rt = result_type(&ops);
    let t = t.cast_to(rt)?;
    if rt.is_floating() {
        return map_float(op, &t, &Clamp { lo: lo.map(|s| s.to_f64()), hi: hi.map(|s| s.to_f64()) });
    }
    if rt == DType::Bool {
        let (l, h) = (lo.map(|s| s.to_bool()), hi.map(|s| s.to_bool()));
        return map1::<bool, bool>(&t, |x| {
            let v = l.map_or(x, |l| x.max(l));
            h.map_or(v, |h| v.min(h))
        });
    }
    dispatch_dtype!(rt, T => {
        let l = lo.map(|s| s.to_element::<T>().to_i64());
        let h = hi.map(|s| s.to_element::<T>().to_i64());
        map1::<T, T>(&t, |x| {
            let v = x.to_i64();
            let v = l.map_or(v, |l| v.max(l));
            T::from_i64(h.map_or(v, |h| v.min(h)))
        })
    })
}

pub(super) fn k_clamp(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::CLAMP, args, 1)?;
    ret(clamp_scalar(op::CLAMP.name(), a.tensor(0)?, a.opt_scalar(1)?, a.opt_scalar(2)?)?)
}

pub(super) fn k_clamp_min(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::CLAMP_MIN, args, 2)?;
    ret(clamp_scalar(op::CLAMP_MIN.name(), a.tensor(0)?, Some(a.scalar(1)?), None)?)
}

pub(super) fn k_clamp_max(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::CLAMP_MAX, args, 2)?;
    ret(clamp_scalar(op::CLAMP_MAX.name(), a.tensor(0)?, None, Some(a.scalar(1)?))?)
}

pub(super) fn k_hardtanh(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::HARDTANH, args, 1)?;
    let t = a.tensor(0)?;
    let lo = a.opt_scalar(1)?.unwrap_or(Scalar::Int(-1));
    let hi = a.opt_scalar(2)?.unwrap_or(Scalar::Int(1));
    if t.dtype() == DType::Bool {
        return Err(KernelError::new(op::HARDTANH, "not implemented for bool"));
    }
    // hardtanh keeps the input dtype (no promotion by the bounds).
    let out = clamp_scalar(op::HARDTANH.name(), t, Some(lo), Some(hi))?;
    ret(out.cast_to(t.dtype())?)
}

/// `clamp.Tensor`: elementwise bounds (broadcast), with type promotion.
pub fn clamp_tensor(op: &str, t: &Tensor, lo: Option<&Tensor>, hi: Option<&Tensor>) -> Result<Tensor> {
    if lo.is_none() && hi.is_none() {
        return Err(KernelError::new(op.to_string(), "at least one of 'min' or 'max' must not be None"));
    }
    let mut ops = vec![Operand::Tensor(t)];
    ops.extend(lo.map(Operand::Tensor));
    ops.extend(hi.map(Operand::Tensor));
    let rt = result_type(&ops);
    let x = t.cast_to(rt)?;
    // A missing bound is replaced by a value that never binds.
    let (lo_t, hi_t) = match rt {
        d if d.is_floating() => (
            lo.map_or_else(|| Tensor::scalar_tensor(Scalar::Float(f64::NEG_INFINITY), rt), |l| l.cast_to(rt))?,
            hi.map_or_else(|| Tensor::scalar_tensor(Scalar::Float(f64::INFINITY), rt), |h| h.cast_to(rt))?,
        ),
        _ => (
            lo.map_or_else(|| Tensor::scalar_tensor(Scalar::Int(i64::MIN), DType::I64), |l| l.cast_to(rt))?,
            hi.map_or_else(|| Tensor::scalar_tensor(Scalar::Int(i64::MAX), DType::I64), |h| h.cast_to(rt))?,
        ),
    };
    match rt {
        DType::F32 => map3::<f32, f32, f32, f32>(op, &x, &lo_t, &hi_t, |v, l, h| Clamp { lo: Some(l as f64), hi: Some(h as f64) }.f32(v)),
        DType::F64 => map3::<f64, f64, f64, f64>(op, &x, &lo_t, &hi_t, |v, l, h| Clamp { lo: Some(l), hi: Some(h) }.f64(v)),
        DType::F16 | DType::BF16 => {
            let x32 = x.cast_to(DType::F32)?;
            let (l32, h32) = (lo_t.cast_to(DType::F32)?, hi_t.cast_to(DType::F32)?);
            map3::<f32, f32, f32, f32>(op, &x32, &l32, &h32, |v, l, h| Clamp { lo: Some(l as f64), hi: Some(h as f64) }.f32(v))?
                .to_dtype(rt)
        }
        d => dispatch_dtype!(d, T => {
            let l64 = lo_t.cast_to(DType::I64)?;
            let h64 = hi_t.cast_to(DType::I64)?;
            map3::<T, i64, i64, T>(op, &x, &l64, &h64, |v, l, h| T::from_i64(v.to_i64().max(l).min(h)))
        }),
    }
}

pub(super) fn k_clamp_tensor(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::CLAMP_TENSOR, args, 1)?;
    ret(clamp_tensor(op::CLAMP_TENSOR.name(), a.tensor(0)?, a.opt_tensor(1)?, a.opt_tensor(2)?)?)
}

/// Writes `result` into `dst` (an in-place op's output), checking PyTorch's rules: the result
/// must have `dst`'s shape and its dtype must be castable to `dst`'s (no float → int, no
/// int → bool).
pub fn write_inplace(op: &str, dst: &Tensor, result: &Tensor) -> Result<Vec<IValue>> {
    if result.sizes() != dst.sizes() {
        return Err(KernelError::new(
            op.to_string(),
            format!("output with shape {:?} doesn't match the broadcast shape {:?}", dst.sizes(), result.sizes()),
        ));
    }
    if result.dtype().category() > dst.dtype().category() {
        return Err(KernelError::new(
            op.to_string(),
            format!(
                "result type {} can't be cast to the desired output type {}",
                result.dtype().torch_name(),
                dst.dtype().torch_name()
            ),
        ));
    }
    dst.copy_(result).map_err(|e| e.in_op(op.to_string()))?;
    ret(dst.clone())
}

pub(super) fn k_relu_(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new(op::RELU_, args, 1)?.tensor(0)?;
    write_inplace(op::RELU_.name(), t, &relu_tensor(t)?)
}

pub(super) fn k_clamp_(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::CLAMP_, args, 1)?;
    let t = a.tensor(0)?;
    write_inplace(op::CLAMP_.name(), t, &clamp_scalar(op::CLAMP_.name(), t, a.opt_scalar(1)?, a.opt_scalar(2)?)?)
}

macro_rules! inplace_float {
    ($fn:ident, $ty:ident, $name:path) => {
        pub(super) fn $fn(args: &[IValue]) -> Result<Vec<IValue>> {
            let t = Args::new($name, args, 1)?.tensor(0)?;
            let r = map_float($name.name(), &to_float(t)?, &$ty)?;
            write_inplace($name.name(), t, &r)
        }
    };
}

inplace_float!(k_sigmoid_, Sigmoid, op::SIGMOID_);
inplace_float!(k_tanh_, Tanh, op::TANH_);
inplace_float!(k_exp_, Exp, op::EXP_);
inplace_float!(k_sqrt_, Sqrt, op::SQRT_);

pub(super) fn k_neg_(args: &[IValue]) -> Result<Vec<IValue>> {
    let r = k_neg(args)?;
    let t = Args::new(op::NEG_, args, 1)?.tensor(0)?;
    write_inplace(op::NEG_.name(), t, r[0].as_tensor()?)
}
