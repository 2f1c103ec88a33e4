//! Unary kernels that keep or test their operand's values without float-only math: `abs`,
//! `neg`, `relu`, `sign`, rounding, `square`, `frac`, `nan_to_num`, the predicates with bool
//! results, and logical and bitwise not.

use super::*;

pub(super) fn k_abs(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new(op::ABS, args, 1)?.tensor(0)?.clone();
    if t.dtype() == DType::Bool {
        return ret(t.deep_clone()?);
    }
    ret(keep_dtype(op::ABS.name(), &t, &Abs, |x| x.wrapping_abs(), false)?)
}

pub(super) fn k_neg(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new(op::NEG, args, 1)?.tensor(0)?.clone();
    if t.dtype() == DType::Bool {
        return Err(KernelError::new(
            op::NEG,
            "negation, the `-` operator, on a bool tensor is not supported; use `~` or logical_not() instead",
        ));
    }
    ret(keep_dtype(op::NEG.name(), &t, &Neg, |x| x.wrapping_neg(), false)?)
}

pub(super) fn relu_tensor(t: &Tensor) -> Result<Tensor> {
    keep_dtype(op::RELU.name(), t, &Relu, |x| x.max(0), false)
}

pub(super) fn k_relu(args: &[IValue]) -> Result<Vec<IValue>> {
    ret(relu_tensor(Args::new(op::RELU, args, 1)?.tensor(0)?)?)
}

pub(super) fn k_sign(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new(op::SIGN, args, 1)?.tensor(0)?;
    ret(keep_dtype(op::SIGN.name(), t, &Sign, |x| x.signum(), true)?)
}

pub(super) fn k_sgn(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new(op::SGN, args, 1)?.tensor(0)?;
    ret(keep_dtype(op::SGN.name(), t, &Sign, |x| x.signum(), true)?)
}

macro_rules! rounding_kernel {
    ($fn:ident, $ty:ident, $name:path) => {
        pub(super) fn $fn(args: &[IValue]) -> Result<Vec<IValue>> {
            let t = Args::new($name, args, 1)?.tensor(0)?;
            if !t.dtype().is_floating() {
                return ret(t.deep_clone()?);
            }
            ret(map_float($name.name(), t, &$ty)?)
        }
    };
}

rounding_kernel!(k_floor, Floor, op::FLOOR);
rounding_kernel!(k_ceil, Ceil, op::CEIL);
rounding_kernel!(k_round, Round, op::ROUND);
rounding_kernel!(k_trunc, Trunc, op::TRUNC);

pub(super) fn k_square(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new(op::SQUARE, args, 1)?.tensor(0)?;
    let t = if t.dtype() == DType::Bool { t.to_dtype(DType::I64)? } else { t.clone() };
    ret(keep_dtype(op::SQUARE.name(), &t, &Square, |x| x.wrapping_mul(x), false)?)
}

pub(super) struct RoundDecimals {
    pub(super) decimals: i64,
}

impl FloatFn for RoundDecimals {
    fn f32(&self, x: f32) -> f32 {
        let neg = self.decimals < 0;
        let p = 10f32.powi(self.decimals.unsigned_abs().min(400) as i32);
        if neg { (x / p).round_ties_even() * p } else { (x * p).round_ties_even() / p }
    }
    fn f64(&self, x: f64) -> f64 {
        let neg = self.decimals < 0;
        let p = 10f64.powi(self.decimals.unsigned_abs().min(400) as i32);
        if neg { (x / p).round_ties_even() * p } else { (x * p).round_ties_even() / p }
    }
}

pub(super) fn k_round_decimals(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::ROUND_DECIMALS, args, 2)?;
    let t = a.tensor(0)?;
    let decimals = a.int(1)?;
    if !t.dtype().is_floating() {
        if decimals != 0 {
            return Err(KernelError::new(op::ROUND_DECIMALS, "integer tensors support only decimals=0"));
        }
        return ret(t.deep_clone()?);
    }
    ret(map_float(op::ROUND_DECIMALS.name(), t, &RoundDecimals { decimals })?)
}

pub(super) struct Frac;
impl FloatFn for Frac {
    fn f32(&self, x: f32) -> f32 {
        x - x.trunc()
    }
    fn f64(&self, x: f64) -> f64 {
        x - x.trunc()
    }
}

pub(super) fn k_frac(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new(op::FRAC, args, 1)?.tensor(0)?;
    ret(map_float(op::FRAC.name(), t, &Frac)?)
}

pub(super) struct NanToNum {
    pub(super) nan: f64,
    pub(super) posinf: Option<f64>,
    pub(super) neginf: Option<f64>,
}
impl FloatFn for NanToNum {
    fn f32(&self, x: f32) -> f32 {
        if x.is_nan() {
            self.nan as f32
        } else if x == f32::INFINITY {
            self.posinf.map_or(f32::MAX, |v| v as f32)
        } else if x == f32::NEG_INFINITY {
            self.neginf.map_or(f32::MIN, |v| v as f32)
        } else {
            x
        }
    }
    fn f64(&self, x: f64) -> f64 {
        if x.is_nan() {
            self.nan
        } else if x == f64::INFINITY {
            self.posinf.unwrap_or(f64::MAX)
        } else if x == f64::NEG_INFINITY {
            self.neginf.unwrap_or(f64::MIN)
        } else {
            x
        }
    }
}

pub(super) fn k_nan_to_num(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::NAN_TO_NUM, args, 1)?;
    let t = a.tensor(0)?;
    if !t.dtype().is_floating() {
        return ret(t.deep_clone()?);
    }
    let f = NanToNum { nan: a.opt_float(1)?.unwrap_or(0.0), posinf: a.opt_float(2)?, neginf: a.opt_float(3)? };
    // Half types saturate at their own range.
    let out = match t.dtype() {
        DType::F16 => map1::<f16, f16>(t, |x| {
            let (lo, hi) = (f16::MIN.to_f32(), f16::MAX.to_f32());
            let v = x.to_f32();
            let r = if v.is_nan() { f.nan as f32 } else if v == f32::INFINITY { f.posinf.map_or(hi, |p| p as f32) } else if v == f32::NEG_INFINITY { f.neginf.map_or(lo, |p| p as f32) } else { v };
            f16::from_f32(r)
        })?,
        DType::BF16 => map1::<bf16, bf16>(t, |x| {
            let (lo, hi) = (bf16::MIN.to_f32(), bf16::MAX.to_f32());
            let v = x.to_f32();
            let r = if v.is_nan() { f.nan as f32 } else if v == f32::INFINITY { f.posinf.map_or(hi, |p| p as f32) } else if v == f32::NEG_INFINITY { f.neginf.map_or(lo, |p| p as f32) } else { v };
            bf16::from_f32(r)
        })?,
        _ => map_float(op::NAN_TO_NUM.name(), t, &f)?,
    };
    ret(out)
}

pub(super) fn predicate(op: &str, t: &Tensor, f: impl Fn(f64) -> bool, int: impl Fn(i64) -> bool) -> Result<Tensor> {
    let _ = op;
    match t.dtype() {
        DType::F32 => map1::<f32, bool>(t, |x| f(x as f64)),
        DType::F64 => map1::<f64, bool>(t, &f),
        DType::F16 => map1::<f16, bool>(t, |x| f(x.to_f64())),
        DType::BF16 => map1::<bf16, bool>(t, |x| f(x.to_f64())),
        d => dispatch_dtype!(d, T => map1::<T, bool>(t, |x| int(x.to_i64()))),
    }
}

pub(super) fn k_isnan(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new(op::ISNAN, args, 1)?.tensor(0)?;
    ret(predicate(op::ISNAN.name(), t, |x| x.is_nan(), |_| false)?)
}

pub(super) fn k_isinf(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new(op::ISINF, args, 1)?.tensor(0)?;
    ret(predicate(
        op::ISINF.name(),
        t,
        |x| x.is_infinite(),
        |_| false,
    )?)
}

pub(super) fn k_isfinite(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new(op::ISFINITE, args, 1)?.tensor(0)?;
    ret(predicate(
        op::ISFINITE.name(),
        t,
        |x| x.is_finite(),
        |_| true,
    )?)
}

pub(super) fn k_isposinf(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new(op::ISPOSINF, args, 1)?.tensor(0)?;
    ret(predicate(op::ISPOSINF.name(), t, |x| x == f64::INFINITY, |_| false)?)
}

pub(super) fn k_isneginf(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new(op::ISNEGINF, args, 1)?.tensor(0)?;
    ret(predicate(op::ISNEGINF.name(), t, |x| x == f64::NEG_INFINITY, |_| false)?)
}

pub(super) fn k_signbit(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new(op::SIGNBIT, args, 1)?.tensor(0)?;
    ret(predicate(op::SIGNBIT.name(), t, |x| x.is_sign_negative(), |x| x < 0)?)
}

pub(super) fn k_logical_not(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new(op::LOGICAL_NOT, args, 1)?.tensor(0)?;
    ret(predicate(
        op::LOGICAL_NOT.name(),
        t,
        |x| x == 0.0,
        |x| x == 0,
    )?)
}

pub(super) fn k_bitwise_not(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new(op::BITWISE_NOT, args, 1)?.tensor(0)?;
    match t.dtype() {
        DType::Bool => ret(map1::<bool, bool>(t, |x| !x)?),
        d if d.is_floating() => {
            Err(KernelError::new(op::BITWISE_NOT, format!("not implemented for {}", d.torch_name())))
        }
        d => dispatch_dtype!(d, T => ret(map1::<T, T>(t, |x| T::from_i64(!x.to_i64()))?)),
    }
}
