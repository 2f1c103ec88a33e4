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
    ($($ty:ident $name:path |$x:ident| $f32:expr, $f64:expr;)*) => {$(
        #[derive(Default)]
        pub struct $ty;
        impl FloatFn for $ty {
            #[inline(always)]
            fn f32(&self, $x: f32) -> f32 { $f32 }
            #[inline(always)]
            fn f64(&self, $x: f64) -> f64 { $f64 }
        }
        impl NamedFloatFn for $ty {
            const NAME: &'static str = $name.name();
        }
    )*};
}

/// Float functions whose `f32` form is a branch-free approximation from [`fastmath`]: the
/// scalar and the slice form compute the same bits, and contiguous runs vectorize.
macro_rules! fast_float_fns {
    ($($ty:ident $name:path, $fast:path, |$x:ident| $f64:expr;)*) => {$(
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
            const NAME: &'static str = $name.name();
        }
    )*};
}

fast_float_fns! {
    Exp op::EXP, fastmath::exp_f32, |x| x.exp();
    Tanh op::TANH, fastmath::tanh_f32, |x| x.tanh();
    Erf op::ERF, fastmath::erf_f32, |x| libm::erf(x);
    Sigmoid op::SIGMOID, fastmath::sigmoid_f32, |x| sigmoid64(x);
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
    Exp2 op::EXP2 |x| x.exp2(), x.exp2();
    Expm1 op::EXPM1 |x| x.exp_m1(), x.exp_m1();
    Log op::LOG |x| x.ln(), x.ln();
    Log2 op::LOG2 |x| x.log2(), x.log2();
    Log10 op::LOG10 |x| x.log10(), x.log10();
    Log1p op::LOG1P |x| x.ln_1p(), x.ln_1p();
    Sqrt op::SQRT |x| x.sqrt(), x.sqrt();
    Rsqrt op::RSQRT |x| 1.0 / x.sqrt(), 1.0 / x.sqrt();
    Reciprocal op::RECIPROCAL |x| 1.0 / x, 1.0 / x;
    Sin op::SIN |x| x.sin(), x.sin();
    Cos op::COS |x| x.cos(), x.cos();
    Tan op::TAN |x| x.tan(), x.tan();
    Asin op::ASIN |x| x.asin(), x.asin();
    Acos op::ACOS |x| x.acos(), x.acos();
    Atan op::ATAN |x| x.atan(), x.atan();
    Sinh op::SINH |x| x.sinh(), x.sinh();
    Cosh op::COSH |x| x.cosh(), x.cosh();
    Asinh op::ASINH |x| x.asinh(), x.asinh();
    Acosh op::ACOSH |x| x.acosh(), x.acosh();
    Atanh op::ATANH |x| x.atanh(), x.atanh();
    Erfc op::ERFC |x| libm::erfcf(x), libm::erfc(x);
    Erfinv op::ERFINV |x| erfinv64(x as f64) as f32, erfinv64(x);
    Lgamma op::LGAMMA |x| libm::lgammaf(x), libm::lgamma(x);
    Digamma op::DIGAMMA |x| digamma(x as f64) as f32, digamma(x);
    Sinc op::SINC |x| sinc(x as f64) as f32, sinc(x);
    Deg2rad op::DEG2RAD |x| x * (std::f32::consts::PI / 180.0), x * (std::f64::consts::PI / 180.0);
    Rad2deg op::RAD2DEG |x| x * (180.0 / std::f32::consts::PI), x * (180.0 / std::f64::consts::PI);
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
pub(crate) fn digamma(mut x: f64) -> f64 {
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
    Abs op::ABS |x| x.abs(), x.abs();
    Neg op::NEG |x| -x, -x;
    Relu op::RELU |x| if x > 0.0 || x.is_nan() { x } else { 0.0 }, if x > 0.0 || x.is_nan() { x } else { 0.0 };
    Sign op::SIGN |x| if x > 0.0 { 1.0 } else if x < 0.0 { -1.0 } else { 0.0 * x }, if x > 0.0 { 1.0 } else if x < 0.0 { -1.0 } else { 0.0 * x };
    Floor op::FLOOR |x| x.floor(), x.floor();
    Ceil op::CEIL |x| x.ceil(), x.ceil();
    Round op::ROUND |x| x.round_ties_even(), x.round_ties_even();
    Trunc op::TRUNC |x| x.trunc(), x.trunc();
    Square op::SQUARE |x| x * x, x * x;
}


mod activations;
mod basic;
mod clamp;

use activations::*;
use basic::*;
use clamp::*;

pub(crate) use activations::Gelu;
pub use clamp::{clamp_scalar, clamp_tensor, write_inplace};

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
    r.register(op::SGN, k_sgn);
    r.register(op::FLOOR, k_floor);
    r.register(op::CEIL, k_ceil);
    r.register(op::ROUND, k_round);
    r.register(op::ROUND_DECIMALS, k_round_decimals);
    r.register(op::TRUNC, k_trunc);
    r.register(op::FIX, k_trunc);
    r.register(op::FRAC, k_frac);
    r.register(op::SQUARE, k_square);
    r.register(op::GELU, k_gelu);
    r.register(op::SILU, k_silu);
    r.register(op::MISH, k_mish);
    r.register(op::HARDSIGMOID, k_hardsigmoid);
    r.register(op::HARDSWISH, k_hardswish);
    r.register(op::LEAKY_RELU, k_leaky_relu);
    r.register(op::ELU, k_elu);
    r.register(op::SOFTPLUS, k_softplus);
    r.register(op::NAN_TO_NUM, k_nan_to_num);
    r.register(op::ISNAN, k_isnan);
    r.register(op::ISINF, k_isinf);
    r.register(op::ISFINITE, k_isfinite);
    r.register(op::ISPOSINF, k_isposinf);
    r.register(op::ISNEGINF, k_isneginf);
    r.register(op::SIGNBIT, k_signbit);
    r.register(op::LOGICAL_NOT, k_logical_not);
    r.register(op::BITWISE_NOT, k_bitwise_not);
    r.register(op::CLAMP, k_clamp);
    r.register(op::CLAMP_TENSOR, k_clamp_tensor);
    r.register(op::CLAMP_MIN, k_clamp_min);
    r.register(op::CLAMP_MAX, k_clamp_max);
    r.register(op::HARDTANH, k_hardtanh);
    r.register(op::RELU_, k_relu_);
    r.register(op::CLAMP_, k_clamp_);
    r.register(op::SIGMOID_, k_sigmoid_);
    r.register(op::TANH_, k_tanh_);
    r.register(op::EXP_, k_exp_);
    r.register(op::SQRT_, k_sqrt_);
    r.register(op::NEG_, k_neg_);
}
