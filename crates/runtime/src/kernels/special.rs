//! Special functions: the modified Bessel function `i0`, `polygamma(n, x)` (the `n`-th
//! derivative of digamma, from the Hurwitz zeta function for `n ≥ 1`), and the regularized
//! incomplete gamma functions `igamma` (lower, `P(a, x)`) and `igammac` (upper, `Q(a, x)`).
//! Integer and bool inputs of `i0` and `polygamma` compute as `float32` (the incomplete gamma
//! functions refuse them, as PyTorch does); `f16`/`bf16` compute in `f32` and round.
//! Everything is evaluated in `f64`.

use super::elementwise::{BinaryFn, FloatFn, Operand, apply_binary, binary_operands, float_result, map_float, result_type};
use super::{Args, KernelRegistry, ret};
use crate::tensor::{KernelError, Result};
use crate::value::IValue;
use dialect_aten::op;

const MACHEP: f64 = 1.11022302462515654042e-16;
const MAXLOG: f64 = 7.09782712893383996843e2;

/// `I₀(x) = Σₖ (x²/4)ᵏ / (k!)²`, summed until the terms stop mattering (all are positive).
pub fn i0(x: f64) -> f64 {
    // PyTorch's evaluation gives NaN at ±∞.
    if x.is_nan() || x.is_infinite() {
        return f64::NAN;
    }
    let x = x.abs();
    if x > 713.0 {
        return f64::INFINITY;
    }
    let q = x * x / 4.0;
    let (mut term, mut sum) = (1.0f64, 1.0f64);
    let mut k = 0.0;
    loop {
        k += 1.0;
        term *= q / (k * k);
        sum += term;
        if term <= sum * MACHEP || !sum.is_finite() {
            return sum;
        }
    }
}

/// The Hurwitz zeta function `ζ(s, q) = Σₖ (k + q)^−s` for `s > 1`: the first terms summed,
/// the tail by the Euler–Maclaurin formula.
pub fn zeta(s: f64, q: f64) -> f64 {
    const A: [f64; 12] = [
        12.0,
        -720.0,
        30240.0,
        -1209600.0,
        47900160.0,
        -1.8924375803183791606e9,
        7.47242496e10,
        -2.950130727918164224e12,
        1.1646782814350067249e14,
        -4.5979787224074726105e15,
        1.8152105401943546773e17,
        -7.1661652561756670113e18,
    ];
    if s == 1.0 {
        return f64::INFINITY;
    }
    if s < 1.0 || s.is_nan() || q.is_nan() {
        return f64::NAN;
    }
    if q <= 0.0 {
        if q == q.floor() {
            return f64::INFINITY;
        }
        if s != s.floor() {
            return f64::NAN;
        }
    }
    let mut sum = q.powf(-s);
    let mut a = q;
    let mut b = 0.0;
    let mut i = 0;
    while i < 9 || a <= 9.0 {
        i += 1;
        a += 1.0;
        b = a.powf(-s);
        sum += b;
        if (b / sum).abs() < MACHEP {
            return sum;
        }
    }
    let w = a;
    sum += b * w / (s - 1.0);
    sum -= 0.5 * b;
    let mut fac = 1.0;
    let mut k = 0.0;
    for c in A {
        fac *= s + k;
        b /= w;
        let t = fac * b / c;
        sum += t;
        if (t / sum).abs() < MACHEP {
            return sum;
        }
        k += 1.0;
        fac *= s + k;
        b /= w;
        k += 1.0;
    }
    sum
}

/// Trigamma `ψ⁽¹⁾(x)`: reflected below ½ (`π²/sin²(πx)`), six recurrence steps, then the
/// asymptotic series, evaluated in `T` (PyTorch's own evaluation, so values near the poles
/// round as its do).
fn trigamma<T: num_like::F>(mut x: T) -> T {
    let pi = T::from(std::f64::consts::PI);
    let one = T::from(1.0);
    let mut sign = one;
    let mut result = T::from(0.0);
    if x < T::from(0.5) {
        sign = -one;
        let s = (pi * x).sin();
        result = result - (pi * pi) / (s * s);
        x = one - x;
    }
    for _ in 0..6 {
        result = result + one / (x * x);
        x = x + one;
    }
    let ixx = one / (x * x);
    let tail = one + one / (T::from(2.0) * x) + ixx * (one / T::from(6.0) - ixx * (one / T::from(30.0) - ixx * (one / T::from(42.0))));
    result = result + tail / x;
    sign * result
}

/// The float arithmetic [`trigamma`] needs, for `f32` and `f64`.
mod num_like {
    pub trait F: Copy + PartialOrd + std::ops::Add<Output = Self> + std::ops::Sub<Output = Self> + std::ops::Mul<Output = Self> + std::ops::Div<Output = Self> + std::ops::Neg<Output = Self> {
        fn from(v: f64) -> Self;
        fn sin(self) -> Self;
    }
    impl F for f32 {
        fn from(v: f64) -> f32 {
            v as f32
        }
        fn sin(self) -> f32 {
            f32::sin(self)
        }
    }
    impl F for f64 {
        fn from(v: f64) -> f64 {
            v
        }
        fn sin(self) -> f64 {
            f64::sin(self)
        }
    }
}

/// `ψ⁽ⁿ⁾(x)`: digamma for `n = 0`, trigamma for `n = 1`, else `(−1)ⁿ⁺¹ n! ζ(n + 1, x)`.
pub fn polygamma(n: i64, x: f64) -> f64 {
    if n == 0 {
        return super::unary::digamma(x);
    }
    if n == 1 {
        return trigamma(x);
    }
    let sign = if n % 2 == 1 { 1.0 } else { -1.0 };
    sign * libm::lgamma(n as f64 + 1.0).exp() * zeta(n as f64 + 1.0, x)
}

/// `x^a e^−x / Γ(a)`, the factor both incomplete gamma expansions share; 0 when it underflows.
fn gamma_factor(a: f64, x: f64) -> f64 {
    let ax = a * x.ln() - x - libm::lgamma(a);
    if ax < -MAXLOG { 0.0 } else { ax.exp() }
}

/// The regularized lower incomplete gamma function `P(a, x)`.
pub fn igamma(a: f64, x: f64) -> f64 {
    if a.is_nan() || x.is_nan() || x < 0.0 || a < 0.0 {
        return f64::NAN;
    }
    if a == 0.0 {
        return if x > 0.0 { 1.0 } else { f64::NAN };
    }
    if x == 0.0 {
        return 0.0;
    }
    if a.is_infinite() {
        return if x.is_infinite() { f64::NAN } else { 0.0 };
    }
    if x.is_infinite() {
        return 1.0;
    }
    if x > 1.0 && x > a {
        return 1.0 - igammac(a, x);
    }
    let f = gamma_factor(a, x);
    if f == 0.0 {
        return 0.0;
    }
    let (mut r, mut c, mut sum) = (a, 1.0, 1.0);
    loop {
        r += 1.0;
        c *= x / r;
        sum += c;
        if c <= sum * MACHEP {
            return sum * f / a;
        }
    }
}

/// The regularized upper incomplete gamma function `Q(a, x) = 1 − P(a, x)`, by its continued
/// fraction where `x` is past both 1 and `a`.
pub fn igammac(a: f64, x: f64) -> f64 {
    const BIG: f64 = 4.503599627370496e15;
    const BIGINV: f64 = 2.22044604925031308085e-16;
    if a.is_nan() || x.is_nan() || x < 0.0 || a < 0.0 {
        return f64::NAN;
    }
    if a == 0.0 {
        return if x > 0.0 { 0.0 } else { f64::NAN };
    }
    if x == 0.0 {
        return 1.0;
    }
    if a.is_infinite() {
        return if x.is_infinite() { f64::NAN } else { 1.0 };
    }
    if x.is_infinite() {
        return 0.0;
    }
    if x < 1.0 || x < a {
        return 1.0 - igamma(a, x);
    }
    let f = gamma_factor(a, x);
    if f == 0.0 {
        return 0.0;
    }
    let mut y = 1.0 - a;
    let mut z = x + y + 1.0;
    let mut c = 0.0;
    let (mut pkm2, mut qkm2, mut pkm1, mut qkm1) = (1.0, x, x + 1.0, z * x);
    let mut ans = pkm1 / qkm1;
    for _ in 0..10_000 {
        c += 1.0;
        y += 1.0;
        z += 2.0;
        let yc = y * c;
        let pk = pkm1 * z - pkm2 * yc;
        let qk = qkm1 * z - qkm2 * yc;
        let t = if qk != 0.0 {
            let r = pk / qk;
            let t = ((ans - r) / r).abs();
            ans = r;
            t
        } else {
            1.0
        };
        pkm2 = pkm1;
        pkm1 = pk;
        qkm2 = qkm1;
        qkm1 = qk;
        if pk.abs() > BIG {
            pkm2 *= BIGINV;
            pkm1 *= BIGINV;
            qkm2 *= BIGINV;
            qkm1 *= BIGINV;
        }
        if t <= MACHEP {
            break;
        }
    }
    ans * f
}

struct I0;
impl FloatFn for I0 {
    fn f32(&self, x: f32) -> f32 {
        i0(x as f64) as f32
    }
    fn f64(&self, x: f64) -> f64 {
        i0(x)
    }
}

struct Polygamma(i64);
impl FloatFn for Polygamma {
    fn f32(&self, x: f32) -> f32 {
        if self.0 == 1 { trigamma(x) } else { polygamma(self.0, x as f64) as f32 }
    }
    fn f64(&self, x: f64) -> f64 {
        polygamma(self.0, x)
    }
}

struct Igamma(bool);
impl BinaryFn for Igamma {
    fn f32(&self, a: f32, x: f32) -> f32 {
        self.f64(a as f64, x as f64) as f32
    }
    fn f64(&self, a: f64, x: f64) -> f64 {
        if self.0 { igammac(a, x) } else { igamma(a, x) }
    }
    fn int(&self, _: i64, _: i64, _: u32) -> Option<i64> {
        None
    }
}

fn k_i0(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::I0, args, 1)?;
    let t = a.tensor(0)?;
    let t = t.cast_to(float_result(t.dtype()))?;
    ret(map_float(a.op, &t, &I0)?)
}

fn k_polygamma(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::POLYGAMMA, args, 2)?;
    let n = a.int(0)?;
    if n < 0 {
        return Err(KernelError::new(a.op, "polygamma(n, x) does not support negative n."));
    }
    let t = a.tensor(1)?;
    let t = t.cast_to(float_result(t.dtype()))?;
    ret(map_float(a.op, &t, &Polygamma(n))?)
}

fn incomplete_gamma(args: &[IValue], upper: bool) -> Result<Vec<IValue>> {
    let a = Args::new(if upper { op::IGAMMAC } else { op::IGAMMA }, args, 2)?;
    let (x, y) = (a.tensor(0)?, a.tensor(1)?);
    let ct = result_type(&[Operand::Tensor(x), Operand::Tensor(y)]);
    if !ct.is_floating() {
        return Err(KernelError::new(a.op, format!("\"igamma_cpu\" not implemented for '{}'", ct.torch_name())));
    }
    let (x, y) = binary_operands(a.op, Operand::Tensor(x), Operand::Tensor(y), ct)?;
    ret(apply_binary(a.op, &x, &y, ct, &Igamma(upper))?)
}

pub fn register(r: &mut KernelRegistry) {
    r.register(op::I0, k_i0);
    r.register(op::POLYGAMMA, k_polygamma);
    r.register(op::IGAMMA, |args| incomplete_gamma(args, false));
    r.register(op::IGAMMAC, |args| incomplete_gamma(args, true));
}
