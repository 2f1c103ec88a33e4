//! Unary elementwise kernels: math functions, activations, rounding, predicates, clamp.
//!
//! Ops that are only defined on floats (`exp`, `sin`, `sigmoid`, …) promote integer and bool
//! inputs to `float32`, as PyTorch does. `f16`/`bf16` compute in `f32` and round.

use dialect_aten::op;
use half::{bf16, f16};
use ir::DType;

use super::fastmath;
use super::elementwise::{FloatFn, Operand, float_result, map_float, map1, map3, result_type};
use super::{Args, KernelRegistry, ret};
use crate::dispatch_dtype;
use crate::tensor::{Element, KernelError, Result, Scalar, Tensor};
use crate::value::IValue;

/// A float function with its ATen op name.
pub trait NamedFloatFn: FloatFn + Default {
    const NAME: &'static str;
}

macro_rules! float_fns {
    ($($ty:ident $name:literal |$x:ident| $f32:expr, $f64:expr;)*) => {$(
        #[derive(Default)]
        pub struct $ty;
        impl FloatFn for $ty {
            #[inline(always)]
            fn f32(&self, $x: f32) -> f32 { $f32 }
            #[inline(always)]
            fn f64(&self, $x: f64) -> f64 { $f64 }
        }
        impl NamedFloatFn for $ty {
            const NAME: &'static str = $name;
        }
    )*};
}

/// Float functions whose `f32` form is a branch-free approximation from [`fastmath`]: the
/// scalar and the slice form compute the same bits, and contiguous runs vectorize.
macro_rules! fast_float_fns {
    ($($ty:ident $name:literal $fast:path, |$x:ident| $f64:expr;)*) => {$(
        #[derive(Default)]
        pub struct $ty;
        impl FloatFn for $ty {
            #[inline(always)]
            fn f32(&self, x: f32) -> f32 { $fast(x) }
            #[inline(always)]
            fn f64(&self, $x: f64) -> f64 { $f64 }
            fn f32_slice(&self, src: &[f32], dst: &mut [f32]) { fastmath::map_slice(src, dst, $fast) }
            fn f32_in_place(&self, data: &mut [f32]) { fastmath::map_in_place(data, $fast) }
        }
        impl NamedFloatFn for $ty {
            const NAME: &'static str = $name;
        }
    )*};
}

fast_float_fns! {
    Exp "aten.exp" fastmath::exp_f32, |x| x.exp();
    Tanh "aten.tanh" fastmath::tanh_f32, |x| x.tanh();
    Erf "aten.erf" fastmath::erf_f32, |x| libm::erf(x);
    Sigmoid "aten.sigmoid" fastmath::sigmoid_f32, |x| sigmoid64(x);
}

/// Sigmoid, written as PyTorch's CPU kernel computes it.
#[inline(always)]
fn sigmoid64(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// Inverse error function: a rational first guess refined by Newton steps on `erf`.
pub fn erfinv64(y: f64) -> f64 {
    if y.is_nan() || !(-1.0..=1.0).contains(&y) {
        return f64::NAN;
    }
    if y == 1.0 {
        return f64::INFINITY;
    }
    if y == -1.0 {
        return f64::NEG_INFINITY;
    }
    // Initial guess from a log-based approximation of the inverse.
    let w = -((1.0 - y) * (1.0 + y)).ln();
    let mut x = if w < 5.0 {
        let w = w - 2.5;
        let mut p = 2.810_226_36e-08;
        p = 3.432_739_39e-07 + p * w;
        p = -3.523_387_7e-06 + p * w;
        p = -4.391_506_54e-06 + p * w;
        p = 0.000_218_580_87 + p * w;
        p = -0.001_253_725_03 + p * w;
        p = -0.004_177_681_64 + p * w;
        p = 0.246_640_727 + p * w;
        p = 1.501_409_41 + p * w;
        p * y
    } else {
        let w = w.sqrt() - 3.0;
        let mut p = -0.000_200_214_257;
        p = 0.000_100_950_558 + p * w;
        p = 0.001_349_343_22 + p * w;
        p = -0.003_673_428_44 + p * w;
        p = 0.005_739_507_73 + p * w;
        p = -0.007_622_461_3 + p * w;
        p = 0.009_438_870_47 + p * w;
        p = 1.001_674_06 + p * w;
        p = 2.832_976_82 + p * w;
        p * y
    };
    let two_over_sqrt_pi = std::f64::consts::FRAC_2_SQRT_PI;
    for _ in 0..3 {
        let err = libm::erf(x) - y;
        let d = two_over_sqrt_pi * (-x * x).exp();
        if d == 0.0 || !d.is_finite() {
            break;
        }
        x -= err / d;
    }
    x
}

float_fns! {
    Exp2 "aten.exp2" |x| x.exp2(), x.exp2();
    Expm1 "aten.expm1" |x| x.exp_m1(), x.exp_m1();
    Log "aten.log" |x| x.ln(), x.ln();
    Log2 "aten.log2" |x| x.log2(), x.log2();
    Log10 "aten.log10" |x| x.log10(), x.log10();
    Log1p "aten.log1p" |x| x.ln_1p(), x.ln_1p();
    Sqrt "aten.sqrt" |x| x.sqrt(), x.sqrt();
    Rsqrt "aten.rsqrt" |x| 1.0 / x.sqrt(), 1.0 / x.sqrt();
    Reciprocal "aten.reciprocal" |x| 1.0 / x, 1.0 / x;
    Sin "aten.sin" |x| x.sin(), x.sin();
    Cos "aten.cos" |x| x.cos(), x.cos();
    Tan "aten.tan" |x| x.tan(), x.tan();
    Asin "aten.asin" |x| x.asin(), x.asin();
    Acos "aten.acos" |x| x.acos(), x.acos();
    Atan "aten.atan" |x| x.atan(), x.atan();
    Sinh "aten.sinh" |x| x.sinh(), x.sinh();
    Cosh "aten.cosh" |x| x.cosh(), x.cosh();
    Asinh "aten.asinh" |x| x.asinh(), x.asinh();
    Acosh "aten.acosh" |x| x.acosh(), x.acosh();
    Atanh "aten.atanh" |x| x.atanh(), x.atanh();
    Erfc "aten.erfc" |x| libm::erfcf(x), libm::erfc(x);
    Erfinv "aten.erfinv" |x| erfinv64(x as f64) as f32, erfinv64(x);
    Lgamma "aten.lgamma" |x| libm::lgammaf(x), libm::lgamma(x);
    Digamma "aten.digamma" |x| digamma(x as f64) as f32, digamma(x);
    Sinc "aten.sinc" |x| sinc(x as f64) as f32, sinc(x);
    Deg2rad "aten.deg2rad" |x| x * (std::f32::consts::PI / 180.0), x * (std::f64::consts::PI / 180.0);
    Rad2deg "aten.rad2deg" |x| x * (180.0 / std::f32::consts::PI), x * (180.0 / std::f64::consts::PI);
}

fn sinc(x: f64) -> f64 {
    if x == 0.0 {
        1.0
    } else {
        let p = std::f64::consts::PI * x;
        p.sin() / p
    }
}

/// Digamma (psi): recurrence up to x >= 6, then the asymptotic series; reflection for x < 0.
fn digamma(mut x: f64) -> f64 {
    if x == 0.0 {
        return if x.is_sign_negative() { f64::INFINITY } else { f64::NEG_INFINITY };
    }
    if x < 0.0 {
        if x == x.floor() {
            return f64::NAN;
        }
        let pi = std::f64::consts::PI;
        return digamma(1.0 - x) - pi / (pi * x).tan();
    }
    let mut acc = 0.0;
    while x < 6.0 {
        acc -= 1.0 / x;
        x += 1.0;
    }
    let inv = 1.0 / x;
    let inv2 = inv * inv;
    let series = inv2 * (1.0 / 12.0 - inv2 * (1.0 / 120.0 - inv2 * (1.0 / 252.0 - inv2 * (1.0 / 240.0 - inv2 / 132.0))));
    acc + x.ln() - 0.5 * inv - series
}

/// Promotes integer/bool tensors to float32 for float-only math.
fn to_float(t: &Tensor) -> Result<Tensor> {
    t.cast_to(float_result(t.dtype()))
}

/// Kernel of a float math function (`aten.exp`, …).
fn k_float<F: NamedFloatFn>(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(F::NAME, args, 1)?;
    let t = to_float(a.tensor(0)?)?;
    ret(map_float(F::NAME, &t, &F::default())?)
}

/// Applies `f` to a float tensor, and `int` to integer tensors (keeping their dtype).
/// Bool tensors are rejected unless `bool_ok` (then `int` runs on 0/1).
fn keep_dtype<F: FloatFn>(op: &str, t: &Tensor, f: &F, int: impl Fn(i64) -> i64, bool_ok: bool) -> Result<Tensor> {
    let d = t.dtype();
    if d.is_floating() {
        return map_float(op, t, f);
    }
    if d == DType::Bool && !bool_ok {
        return Err(KernelError::new(op.to_string(), "not supported on bool tensors"));
    }
    dispatch_dtype!(d, T => map1::<T, T>(t, |x| T::from_i64(int(x.to_i64()))))
}

float_fns! {
    Abs "aten.abs" |x| x.abs(), x.abs();
    Neg "aten.neg" |x| -x, -x;
    Relu "aten.relu" |x| if x > 0.0 || x.is_nan() { x } else { 0.0 }, if x > 0.0 || x.is_nan() { x } else { 0.0 };
    Sign "aten.sign" |x| if x > 0.0 { 1.0 } else if x < 0.0 { -1.0 } else { 0.0 * x }, if x > 0.0 { 1.0 } else if x < 0.0 { -1.0 } else { 0.0 * x };
    Floor "aten.floor" |x| x.floor(), x.floor();
    Ceil "aten.ceil" |x| x.ceil(), x.ceil();
    Round "aten.round" |x| x.round_ties_even(), x.round_ties_even();
    Trunc "aten.trunc" |x| x.trunc(), x.trunc();
    Square "aten.square" |x| x * x, x * x;
}

fn k_abs(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new("aten.abs", args, 1)?.tensor(0)?.clone();
    if t.dtype() == DType::Bool {
        return ret(t.deep_clone()?);
    }
    ret(keep_dtype("aten.abs", &t, &Abs, |x| x.wrapping_abs(), false)?)
}

fn k_neg(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new("aten.neg", args, 1)?.tensor(0)?.clone();
    if t.dtype() == DType::Bool {
        return Err(KernelError::new(
            "aten.neg",
            "negation, the `-` operator, on a bool tensor is not supported; use `~` or logical_not() instead",
        ));
    }
    ret(keep_dtype("aten.neg", &t, &Neg, |x| x.wrapping_neg(), false)?)
}

fn relu_tensor(t: &Tensor) -> Result<Tensor> {
    keep_dtype("aten.relu", t, &Relu, |x| x.max(0), false)
}

fn k_relu(args: &[IValue]) -> Result<Vec<IValue>> {
    ret(relu_tensor(Args::new("aten.relu", args, 1)?.tensor(0)?)?)
}

fn k_sign(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new("aten.sign", args, 1)?.tensor(0)?;
    ret(keep_dtype("aten.sign", t, &Sign, |x| x.signum(), true)?)
}

fn k_sgn(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new("aten.sgn", args, 1)?.tensor(0)?;
    ret(keep_dtype("aten.sgn", t, &Sign, |x| x.signum(), true)?)
}

macro_rules! rounding_kernel {
    ($fn:ident, $ty:ident, $name:literal) => {
        fn $fn(args: &[IValue]) -> Result<Vec<IValue>> {
            let t = Args::new($name, args, 1)?.tensor(0)?;
            if !t.dtype().is_floating() {
                return ret(t.deep_clone()?);
            }
            ret(map_float($name, t, &$ty)?)
        }
    };
}

rounding_kernel!(k_floor, Floor, "aten.floor");
rounding_kernel!(k_ceil, Ceil, "aten.ceil");
rounding_kernel!(k_round, Round, "aten.round");
rounding_kernel!(k_trunc, Trunc, "aten.trunc");

fn k_square(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new("aten.square", args, 1)?.tensor(0)?;
    let t = if t.dtype() == DType::Bool { t.to_dtype(DType::I64)? } else { t.clone() };
    ret(keep_dtype("aten.square", &t, &Square, |x| x.wrapping_mul(x), false)?)
}

struct RoundDecimals {
    decimals: i64,
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

fn k_round_decimals(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.round.decimals", args, 2)?;
    let t = a.tensor(0)?;
    let decimals = a.int(1)?;
    if !t.dtype().is_floating() {
        if decimals != 0 {
            return Err(KernelError::new("aten.round.decimals", "integer tensors support only decimals=0"));
        }
        return ret(t.deep_clone()?);
    }
    ret(map_float("aten.round.decimals", t, &RoundDecimals { decimals })?)
}

struct Frac;
impl FloatFn for Frac {
    fn f32(&self, x: f32) -> f32 {
        x - x.trunc()
    }
    fn f64(&self, x: f64) -> f64 {
        x - x.trunc()
    }
}

fn k_frac(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new("aten.frac", args, 1)?.tensor(0)?;
    ret(map_float("aten.frac", t, &Frac)?)
}

/// Float-only activation functions take their parameters from the arguments.
fn float_only<'a>(op: &str, t: &'a Tensor) -> Result<&'a Tensor> {
    if !t.dtype().is_floating() {
        return Err(KernelError::new(op.to_string(), format!("not implemented for {}", t.dtype().torch_name())));
    }
    Ok(t)
}

/// GELU, exact (`erf`) or with the `tanh` approximation.
pub(crate) struct Gelu {
    pub tanh: bool,
}

impl FloatFn for Gelu {
    #[inline(always)]
    fn f32(&self, x: f32) -> f32 {
        if self.tanh { fastmath::gelu_tanh_f32(x) } else { fastmath::gelu_erf_f32(x) }
    }
    fn f64(&self, x: f64) -> f64 {
        if self.tanh {
            let k = (2.0 / std::f64::consts::PI).sqrt();
            0.5 * x * (1.0 + (k * (x + 0.044715 * x * x * x)).tanh())
        } else {
            0.5 * x * (1.0 + libm::erf(x * std::f64::consts::FRAC_1_SQRT_2))
        }
    }
    fn f32_slice(&self, src: &[f32], dst: &mut [f32]) {
        if self.tanh {
            fastmath::map_slice(src, dst, fastmath::gelu_tanh_f32)
        } else {
            fastmath::map_slice(src, dst, fastmath::gelu_erf_f32)
        }
    }
    fn f32_in_place(&self, data: &mut [f32]) {
        if self.tanh {
            fastmath::map_in_place(data, fastmath::gelu_tanh_f32)
        } else {
            fastmath::map_in_place(data, fastmath::gelu_erf_f32)
        }
    }
}

fn k_gelu(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.gelu", args, 1)?;
    let t = float_only("aten.gelu", a.tensor(0)?)?;
    let tanh = match a.opt_str(1)?.unwrap_or("none") {
        "none" => false,
        "tanh" => true,
        other => return Err(KernelError::new("aten.gelu", format!("approximate must be 'none' or 'tanh', got '{other}'"))),
    };
    ret(map_float("aten.gelu", t, &Gelu { tanh })?)
}

struct Silu;
impl FloatFn for Silu {
    fn f32(&self, x: f32) -> f32 {
        x / (1.0 + (-x).exp())
    }
    fn f64(&self, x: f64) -> f64 {
        x / (1.0 + (-x).exp())
    }
}

fn k_silu(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = float_only("aten.silu", Args::new("aten.silu", args, 1)?.tensor(0)?)?;
    ret(map_float("aten.silu", t, &Silu)?)
}

struct Mish;
impl FloatFn for Mish {
    fn f32(&self, x: f32) -> f32 {
        x * softplus64(x as f64, 1.0, 20.0).tanh() as f32
    }
    fn f64(&self, x: f64) -> f64 {
        x * softplus64(x, 1.0, 20.0).tanh()
    }
}

fn k_mish(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = float_only("aten.mish", Args::new("aten.mish", args, 1)?.tensor(0)?)?;
    ret(map_float("aten.mish", t, &Mish)?)
}

struct HardSigmoid;
impl FloatFn for HardSigmoid {
    fn f32(&self, x: f32) -> f32 {
        (x + 3.0).clamp(0.0, 6.0) / 6.0
    }
    fn f64(&self, x: f64) -> f64 {
        (x + 3.0).clamp(0.0, 6.0) / 6.0
    }
}

struct HardSwish;
impl FloatFn for HardSwish {
    fn f32(&self, x: f32) -> f32 {
        x * (x + 3.0).clamp(0.0, 6.0) / 6.0
    }
    fn f64(&self, x: f64) -> f64 {
        x * (x + 3.0).clamp(0.0, 6.0) / 6.0
    }
}

fn k_hardsigmoid(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = float_only("aten.hardsigmoid", Args::new("aten.hardsigmoid", args, 1)?.tensor(0)?)?;
    ret(map_float("aten.hardsigmoid", t, &HardSigmoid)?)
}

fn k_hardswish(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = float_only("aten.hardswish", Args::new("aten.hardswish", args, 1)?.tensor(0)?)?;
    ret(map_float("aten.hardswish", t, &HardSwish)?)
}

struct LeakyRelu {
    slope: f64,
}
impl FloatFn for LeakyRelu {
    fn f32(&self, x: f32) -> f32 {
        if x > 0.0 { x } else { x * self.slope as f32 }
    }
    fn f64(&self, x: f64) -> f64 {
        if x > 0.0 { x } else { x * self.slope }
    }
}

fn k_leaky_relu(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.leaky_relu", args, 1)?;
    let t = float_only("aten.leaky_relu", a.tensor(0)?)?;
    let slope = a.opt_scalar(1)?.map_or(0.01, |s| s.to_f64());
    ret(map_float("aten.leaky_relu", t, &LeakyRelu { slope })?)
}

struct Elu {
    alpha: f64,
    scale: f64,
    input_scale: f64,
}
impl FloatFn for Elu {
    fn f32(&self, x: f32) -> f32 {
        if x <= 0.0 {
            ((x * self.input_scale as f32).exp_m1()) * (self.alpha * self.scale) as f32
        } else {
            x * self.scale as f32
        }
    }
    fn f64(&self, x: f64) -> f64 {
        if x <= 0.0 { (x * self.input_scale).exp_m1() * self.alpha * self.scale } else { x * self.scale }
    }
}

fn k_elu(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.elu", args, 1)?;
    let t = float_only("aten.elu", a.tensor(0)?)?;
    let get = |i: usize| -> Result<f64> { Ok(a.opt_scalar(i)?.map_or(1.0, |s| s.to_f64())) };
    ret(map_float("aten.elu", t, &Elu { alpha: get(1)?, scale: get(2)?, input_scale: get(3)? })?)
}

fn softplus64(x: f64, beta: f64, threshold: f64) -> f64 {
    if x * beta > threshold { x } else { (x * beta).exp().ln_1p() / beta }
}

struct Softplus {
    beta: f64,
    threshold: f64,
}
impl FloatFn for Softplus {
    fn f32(&self, x: f32) -> f32 {
        let b = self.beta as f32;
        if x * b > self.threshold as f32 { x } else { (x * b).exp().ln_1p() / b }
    }
    fn f64(&self, x: f64) -> f64 {
        softplus64(x, self.beta, self.threshold)
    }
}

fn k_softplus(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.softplus", args, 1)?;
    let t = float_only("aten.softplus", a.tensor(0)?)?;
    let beta = a.opt_scalar(1)?.map_or(1.0, |s| s.to_f64());
    let threshold = a.opt_scalar(2)?.map_or(20.0, |s| s.to_f64());
    ret(map_float("aten.softplus", t, &Softplus { beta, threshold })?)
}

struct NanToNum {
    nan: f64,
    posinf: Option<f64>,
    neginf: Option<f64>,
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

fn k_nan_to_num(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.nan_to_num", args, 1)?;
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
        _ => map_float("aten.nan_to_num", t, &f)?,
    };
    ret(out)
}

// ----- predicates (bool results) -----

fn predicate(op: &str, t: &Tensor, f: impl Fn(f64) -> bool, int: impl Fn(i64) -> bool) -> Result<Tensor> {
    let _ = op;
    match t.dtype() {
        DType::F32 => map1::<f32, bool>(t, |x| f(x as f64)),
        DType::F64 => map1::<f64, bool>(t, &f),
        DType::F16 => map1::<f16, bool>(t, |x| f(x.to_f64())),
        DType::BF16 => map1::<bf16, bool>(t, |x| f(x.to_f64())),
        d => dispatch_dtype!(d, T => map1::<T, bool>(t, |x| int(x.to_i64()))),
    }
}

fn k_isnan(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new("aten.isnan", args, 1)?.tensor(0)?;
    ret(predicate("aten.isnan", t, |x| x.is_nan(), |_| false)?)
}

fn k_isinf(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new("aten.isinf", args, 1)?.tensor(0)?;
    ret(predicate("aten.isinf", t, |x| x.is_infinite(), |_| false)?)
}

fn k_isfinite(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new("aten.isfinite", args, 1)?.tensor(0)?;
    ret(predicate("aten.isfinite", t, |x| x.is_finite(), |_| true)?)
}

fn k_isposinf(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new("aten.isposinf", args, 1)?.tensor(0)?;
    ret(predicate("aten.isposinf", t, |x| x == f64::INFINITY, |_| false)?)
}

fn k_isneginf(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new("aten.isneginf", args, 1)?.tensor(0)?;
    ret(predicate("aten.isneginf", t, |x| x == f64::NEG_INFINITY, |_| false)?)
}

fn k_signbit(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new("aten.signbit", args, 1)?.tensor(0)?;
    ret(predicate("aten.signbit", t, |x| x.is_sign_negative(), |x| x < 0)?)
}

fn k_logical_not(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new("aten.logical_not", args, 1)?.tensor(0)?;
    ret(predicate("aten.logical_not", t, |x| x == 0.0, |x| x == 0)?)
}

fn k_bitwise_not(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new("aten.bitwise_not", args, 1)?.tensor(0)?;
    match t.dtype() {
        DType::Bool => ret(map1::<bool, bool>(t, |x| !x)?),
        d if d.is_floating() => {
            Err(KernelError::new("aten.bitwise_not", format!("not implemented for {}", d.torch_name())))
        }
        d => dispatch_dtype!(d, T => ret(map1::<T, T>(t, |x| T::from_i64(!x.to_i64()))?)),
    }
}

// ----- clamp -----

/// Clamps like PyTorch: NaN inputs stay NaN; `min(max(x, lo), hi)` so `hi` wins if `lo > hi`.
struct Clamp {
    lo: Option<f64>,
    hi: Option<f64>,
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

fn k_clamp(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.clamp", args, 1)?;
    ret(clamp_scalar("aten.clamp", a.tensor(0)?, a.opt_scalar(1)?, a.opt_scalar(2)?)?)
}

fn k_clamp_min(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.clamp_min", args, 2)?;
    ret(clamp_scalar("aten.clamp_min", a.tensor(0)?, Some(a.scalar(1)?), None)?)
}

fn k_clamp_max(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.clamp_max", args, 2)?;
    ret(clamp_scalar("aten.clamp_max", a.tensor(0)?, None, Some(a.scalar(1)?))?)
}

fn k_hardtanh(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.hardtanh", args, 1)?;
    let t = a.tensor(0)?;
    let lo = a.opt_scalar(1)?.unwrap_or(Scalar::Int(-1));
    let hi = a.opt_scalar(2)?.unwrap_or(Scalar::Int(1));
    if t.dtype() == DType::Bool {
        return Err(KernelError::new("aten.hardtanh", "not implemented for bool"));
    }
    // hardtanh keeps the input dtype (no promotion by the bounds).
    let out = clamp_scalar("aten.hardtanh", t, Some(lo), Some(hi))?;
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

fn k_clamp_tensor(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.clamp.Tensor", args, 1)?;
    ret(clamp_tensor("aten.clamp.Tensor", a.tensor(0)?, a.opt_tensor(1)?, a.opt_tensor(2)?)?)
}

// ----- in-place variants -----

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

fn k_relu_(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new("aten.relu_", args, 1)?.tensor(0)?;
    write_inplace("aten.relu_", t, &relu_tensor(t)?)
}

fn k_clamp_(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.clamp_", args, 1)?;
    let t = a.tensor(0)?;
    write_inplace("aten.clamp_", t, &clamp_scalar("aten.clamp_", t, a.opt_scalar(1)?, a.opt_scalar(2)?)?)
}

macro_rules! inplace_float {
    ($fn:ident, $ty:ident, $name:literal) => {
        fn $fn(args: &[IValue]) -> Result<Vec<IValue>> {
            let t = Args::new($name, args, 1)?.tensor(0)?;
            let r = map_float($name, &to_float(t)?, &$ty)?;
            write_inplace($name, t, &r)
        }
    };
}

inplace_float!(k_sigmoid_, Sigmoid, "aten.sigmoid_");
inplace_float!(k_tanh_, Tanh, "aten.tanh_");
inplace_float!(k_exp_, Exp, "aten.exp_");
inplace_float!(k_sqrt_, Sqrt, "aten.sqrt_");

fn k_neg_(args: &[IValue]) -> Result<Vec<IValue>> {
    let r = k_neg(args)?;
    let t = Args::new("aten.neg_", args, 1)?.tensor(0)?;
    write_inplace("aten.neg_", t, r[0].as_tensor()?)
}

pub fn register(r: &mut KernelRegistry) {
    fn reg<F: NamedFloatFn>(r: &mut KernelRegistry) {
        r.register(F::NAME, k_float::<F>);
    }
    reg::<Exp>(r);
    reg::<Exp2>(r);
    reg::<Expm1>(r);
    reg::<Log>(r);
    reg::<Log2>(r);
    reg::<Log10>(r);
    reg::<Log1p>(r);
    reg::<Sqrt>(r);
    reg::<Rsqrt>(r);
    reg::<Reciprocal>(r);
    reg::<Sin>(r);
    reg::<Cos>(r);
    reg::<Tan>(r);
    reg::<Asin>(r);
    reg::<Acos>(r);
    reg::<Atan>(r);
    reg::<Sinh>(r);
    reg::<Cosh>(r);
    reg::<Tanh>(r);
    reg::<Asinh>(r);
    reg::<Acosh>(r);
    reg::<Atanh>(r);
    reg::<Erf>(r);
    reg::<Erfc>(r);
    reg::<Erfinv>(r);
    reg::<Sigmoid>(r);
    reg::<Lgamma>(r);
    reg::<Digamma>(r);
    reg::<Sinc>(r);
    reg::<Deg2rad>(r);
    reg::<Rad2deg>(r);
    r.register(op::ABS, k_abs);
    r.register(op::NEG, k_neg);
    r.register(op::RELU, k_relu);
    r.register(op::SIGN, k_sign);
    r.register("aten.sgn", k_sgn);
    r.register(op::FLOOR, k_floor);
    r.register(op::CEIL, k_ceil);
    r.register(op::ROUND, k_round);
    r.register("aten.round.decimals", k_round_decimals);
    r.register(op::TRUNC, k_trunc);
    r.register("aten.fix", k_trunc);
    r.register("aten.frac", k_frac);
    r.register(op::SQUARE, k_square);
    r.register(op::GELU, k_gelu);
    r.register(op::SILU, k_silu);
    r.register(op::MISH, k_mish);
    r.register(op::HARDSIGMOID, k_hardsigmoid);
    r.register(op::HARDSWISH, k_hardswish);
    r.register(op::LEAKY_RELU, k_leaky_relu);
    r.register(op::ELU, k_elu);
    r.register("aten.softplus", k_softplus);
    r.register("aten.nan_to_num", k_nan_to_num);
    r.register(op::ISNAN, k_isnan);
    r.register(op::ISINF, k_isinf);
    r.register("aten.isfinite", k_isfinite);
    r.register("aten.isposinf", k_isposinf);
    r.register("aten.isneginf", k_isneginf);
    r.register("aten.signbit", k_signbit);
    r.register(op::LOGICAL_NOT, k_logical_not);
    r.register(op::BITWISE_NOT, k_bitwise_not);
    r.register(op::CLAMP, k_clamp);
    r.register(op::CLAMP_TENSOR, k_clamp_tensor);
    r.register("aten.clamp_min", k_clamp_min);
    r.register("aten.clamp_max", k_clamp_max);
    r.register(op::HARDTANH, k_hardtanh);
    r.register(op::RELU_, k_relu_);
    r.register(op::CLAMP_, k_clamp_);
    r.register(op::SIGMOID_, k_sigmoid_);
    r.register(op::TANH_, k_tanh_);
    r.register(op::EXP_, k_exp_);
    r.register(op::SQRT_, k_sqrt_);
    r.register(op::NEG_, k_neg_);
}
