//! Binary elementwise kernels with broadcasting and PyTorch type promotion: arithmetic,
//! division modes, remainder/fmod, min/max, bitwise and logical ops, comparisons, `pow`,
//! `where`, `masked_fill`, `lerp`, `addcmul`/`addcdiv`, and in-place variants.
//!
//! Integer arithmetic wraps on overflow (as PyTorch's does); integer division or remainder by
//! zero is an error.

use ir::DType;

use super::elementwise::{
    BinaryFn, CompareFn, Operand, apply_binary, apply_compare, binary_operands, float_result, map1, map3,
    result_type,
};
use super::unary::write_inplace;
use super::{Args, KernelRegistry, ret};
use crate::dispatch_dtype;
use crate::tensor::{Element, KernelError, Result, Scalar, Tensor};
use crate::value::IValue;

/// Reads argument `i` as an operand: a tensor, or a number in a tensor position.
pub fn operand<'a>(a: &Args<'a>, i: usize) -> Result<Operand<'a>> {
    match a.get(i) {
        IValue::Tensor(t) => Ok(Operand::Tensor(t)),
        IValue::Int(v) => Ok(Operand::Scalar(Scalar::Int(*v))),
        IValue::Float(v) => Ok(Operand::Scalar(Scalar::Float(*v))),
        IValue::Bool(v) => Ok(Operand::Scalar(Scalar::Bool(*v))),
        v => Err(KernelError::new(a.op, format!("argument {i}: expected Tensor or Scalar, got {}", v.kind()))),
    }
}

/// How the compute dtype follows from the promoted dtype.
#[derive(Clone, Copy, PartialEq)]
enum Promote {
    /// Compute in the promoted dtype.
    Same,
    /// Integers and bools promote to float32 (true division, atan2, …).
    IntToFloat,
}

fn binary<F: BinaryFn>(op: &str, a: Operand, b: Operand, f: &F, promote: Promote) -> Result<Tensor> {
    let rt = result_type(&[a, b]);
    let ct = if promote == Promote::IntToFloat { float_result(rt) } else { rt };
    let (ta, tb) = binary_operands(op, a, b, ct)?;
    apply_binary(op, &ta, &tb, ct, f)
}

// ----- arithmetic -----

struct Add {
    alpha: f64,
    alpha_i: i64,
}

impl BinaryFn for Add {
    fn f32(&self, a: f32, b: f32) -> f32 {
        if self.alpha == 1.0 { a + b } else { a + self.alpha as f32 * b }
    }
    fn f64(&self, a: f64, b: f64) -> f64 {
        if self.alpha == 1.0 { a + b } else { a + self.alpha * b }
    }
    fn int(&self, a: i64, b: i64, _: u32) -> Option<i64> {
        Some(a.wrapping_add(self.alpha_i.wrapping_mul(b)))
    }
    fn boolean(&self, a: bool, b: bool) -> Option<bool> {
        Some(a || (self.alpha_i != 0 && b))
    }
}

/// `a + alpha * b` with PyTorch's checks on `alpha`.
pub fn add(op: &str, a: Operand, b: Operand, alpha: Scalar) -> Result<Tensor> {
    let rt = result_type(&[a, b]);
    if !rt.is_floating() && alpha.is_floating() {
        return Err(KernelError::new(
            op.to_string(),
            "for integral input tensors, argument alpha must not be a floating point number",
        ));
    }
    binary(op, a, b, &Add { alpha: alpha.to_f64(), alpha_i: alpha.to_i64() }, Promote::Same)
}

/// `a - alpha * b`; bool operands are rejected as in PyTorch.
pub fn sub(op: &str, a: Operand, b: Operand, alpha: Scalar) -> Result<Tensor> {
    let is_bool = |o: &Operand| match o {
        Operand::Tensor(t) => t.dtype() == DType::Bool,
        Operand::Scalar(s) => matches!(s, Scalar::Bool(_)),
    };
    if is_bool(&a) && is_bool(&b) || result_type(&[a, b]) == DType::Bool {
        return Err(KernelError::new(
            op.to_string(),
            "subtraction, the `-` operator, with two bool tensors is not supported; use `^` or logical_xor() instead",
        ));
    }
    if is_bool(&a) || is_bool(&b) {
        return Err(KernelError::new(
            op.to_string(),
            "subtraction, the `-` operator, with a bool tensor is not supported; to invert a mask use `~` or logical_not()",
        ));
    }
    let neg = match alpha {
        Scalar::Float(f) => Scalar::Float(-f),
        s => Scalar::Int(s.to_i64().wrapping_neg()),
    };
    add(op, a, b, neg)
}

struct Mul;
impl BinaryFn for Mul {
    fn f32(&self, a: f32, b: f32) -> f32 {
        a * b
    }
    fn f64(&self, a: f64, b: f64) -> f64 {
        a * b
    }
    fn int(&self, a: i64, b: i64, _: u32) -> Option<i64> {
        Some(a.wrapping_mul(b))
    }
    fn boolean(&self, a: bool, b: bool) -> Option<bool> {
        Some(a && b)
    }
}

struct TrueDiv;
impl BinaryFn for TrueDiv {
    fn f32(&self, a: f32, b: f32) -> f32 {
        a / b
    }
    fn f64(&self, a: f64, b: f64) -> f64 {
        a / b
    }
    fn int(&self, _: i64, _: i64, _: u32) -> Option<i64> {
        None
    }
}

struct TruncDiv;
impl BinaryFn for TruncDiv {
    fn f32(&self, a: f32, b: f32) -> f32 {
        (a / b).trunc()
    }
    fn f64(&self, a: f64, b: f64) -> f64 {
        (a / b).trunc()
    }
    fn int(&self, a: i64, b: i64, _: u32) -> Option<i64> {
        if b == 0 { None } else { Some(a.wrapping_div(b)) }
    }
}

macro_rules! floor_div_float {
    ($a:expr, $b:expr, $t:ty) => {{
        let (a, b): ($t, $t) = ($a, $b);
        if b == 0.0 {
            a / b
        } else {
            let m = a % b;
            let mut div = (a - m) / b;
            if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
                div -= 1.0;
            }
            if div != 0.0 {
                let mut fl = div.floor();
                if div - fl > 0.5 {
                    fl += 1.0;
                }
                fl
            } else {
                (0.0 as $t).copysign(a / b)
            }
        }
    }};
}

fn floor_div_int(a: i64, b: i64) -> Option<i64> {
    if b == 0 {
        return None;
    }
    let q = a.wrapping_div(b);
    let r = a.wrapping_rem(b);
    Some(if r != 0 && ((r < 0) != (b < 0)) { q - 1 } else { q })
}

/// Floor division (Python's `//`), the one definition the interpreter and the JIT share.
pub struct FloorDiv;
impl BinaryFn for FloorDiv {
    fn f32(&self, a: f32, b: f32) -> f32 {
        floor_div_float!(a, b, f32)
    }
    fn f64(&self, a: f64, b: f64) -> f64 {
        floor_div_float!(a, b, f64)
    }
    fn int(&self, a: i64, b: i64, _: u32) -> Option<i64> {
        floor_div_int(a, b)
    }
}

/// `div` with an optional rounding mode (`None` = true division, `"trunc"`, `"floor"`).
pub fn div(op: &str, a: Operand, b: Operand, mode: Option<&str>) -> Result<Tensor> {
    match mode {
        None => binary(op, a, b, &TrueDiv, Promote::IntToFloat),
        Some("trunc") => binary(op, a, b, &TruncDiv, Promote::Same),
        Some("floor") => binary(op, a, b, &FloorDiv, Promote::Same),
        Some(m) => Err(KernelError::new(
            op.to_string(),
            format!("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{m}'"),
        )),
    }
}

/// Remainder with the sign of the divisor (Python's `%`).
pub struct Remainder;
impl BinaryFn for Remainder {
    fn f32(&self, a: f32, b: f32) -> f32 {
        let m = a % b;
        if m != 0.0 && ((b < 0.0) != (m < 0.0)) { m + b } else { m }
    }
    fn f64(&self, a: f64, b: f64) -> f64 {
        let m = a % b;
        if m != 0.0 && ((b < 0.0) != (m < 0.0)) { m + b } else { m }
    }
    fn int(&self, a: i64, b: i64, _: u32) -> Option<i64> {
        if b == 0 {
            return None;
        }
        let r = a.wrapping_rem(b);
        Some(if r != 0 && ((r < 0) != (b < 0)) { r + b } else { r })
    }
}

/// Remainder with the sign of the dividend (C's `fmod`).
struct Fmod;
impl BinaryFn for Fmod {
    fn f32(&self, a: f32, b: f32) -> f32 {
        a % b
    }
    fn f64(&self, a: f64, b: f64) -> f64 {
        a % b
    }
    fn int(&self, a: i64, b: i64, _: u32) -> Option<i64> {
        if b == 0 { None } else { Some(a.wrapping_rem(b)) }
    }
}

macro_rules! simple_binary {
    ($ty:ident, |$a:ident, $b:ident| $f:expr, |$x:ident, $y:ident| $i:expr) => {
        struct $ty;
        impl BinaryFn for $ty {
            fn f32(&self, $a: f32, $b: f32) -> f32 {
                $f
            }
            fn f64(&self, $a: f64, $b: f64) -> f64 {
                $f
            }
            fn int(&self, $x: i64, $y: i64, _: u32) -> Option<i64> {
                Some($i)
            }
        }
    };
}

simple_binary!(Maximum, |a, b| if a.is_nan() || b.is_nan() { a + b } else { a.max(b) }, |x, y| x.max(y));
simple_binary!(Minimum, |a, b| if a.is_nan() || b.is_nan() { a + b } else { a.min(b) }, |x, y| x.min(y));
simple_binary!(Fmax, |a, b| a.max(b), |x, y| x.max(y));
simple_binary!(Fmin, |a, b| a.min(b), |x, y| x.min(y));
simple_binary!(Atan2, |a, b| a.atan2(b), |x, _y| x);
simple_binary!(Hypot, |a, b| a.hypot(b), |x, _y| x);
simple_binary!(Copysign, |a, b| a.copysign(b), |x, _y| x);
simple_binary!(BitAnd, |a, _b| a, |x, y| x & y);
simple_binary!(BitOr, |a, _b| a, |x, y| x | y);
simple_binary!(BitXor, |a, _b| a, |x, y| x ^ y);

/// Left shift: shifting by the width or more (or by a negative amount) gives 0.
struct Shl;
impl BinaryFn for Shl {
    fn f32(&self, a: f32, _: f32) -> f32 {
        a
    }
    fn f64(&self, a: f64, _: f64) -> f64 {
        a
    }
    fn int(&self, a: i64, b: i64, bits: u32) -> Option<i64> {
        Some(if b < 0 || b >= bits as i64 { 0 } else { a.wrapping_shl(b as u32) })
    }
}

/// Right shift (arithmetic for signed types): shifting by the width or more fills with the sign.
struct Shr;
impl BinaryFn for Shr {
    fn f32(&self, a: f32, _: f32) -> f32 {
        a
    }
    fn f64(&self, a: f64, _: f64) -> f64 {
        a
    }
    fn int(&self, a: i64, b: i64, bits: u32) -> Option<i64> {
        Some(if b < 0 || b >= bits as i64 { if a < 0 { -1 } else { 0 } } else { a >> b })
    }
}

fn bitwise<F: BinaryFn>(op: &str, a: Operand, b: Operand, f: &F) -> Result<Tensor> {
    let rt = result_type(&[a, b]);
    if rt.is_floating() {
        return Err(KernelError::new(op.to_string(), format!("not implemented for {}", rt.torch_name())));
    }
    binary(op, a, b, f, Promote::Same)
}

/// Logical ops: both sides read as `!= 0`, bool result.
fn logical(op: &str, a: &Tensor, b: &Tensor, f: impl Fn(bool, bool) -> bool) -> Result<Tensor> {
    let ta = a.cast_to(DType::Bool)?;
    let tb = b.cast_to(DType::Bool)?;
    super::elementwise::map2::<bool, bool, bool>(op, &ta, &tb, f)
}

// ----- pow -----

/// Integer power by squaring, wrapping; negative exponents give 0 except for bases ±1.
fn ipow(base: i64, exp: i64) -> i64 {
    if exp < 0 {
        return match base {
            1 => 1,
            -1 => {
                if exp % 2 == 0 {
                    1
                } else {
                    -1
                }
            }
            _ => 0,
        };
    }
    let (mut b, mut e, mut acc) = (base, exp as u64, 1i64);
    while e > 0 {
        if e & 1 == 1 {
            acc = acc.wrapping_mul(b);
        }
        b = b.wrapping_mul(b);
        e >>= 1;
    }
    acc
}

struct Pow;
impl BinaryFn for Pow {
    fn f32(&self, a: f32, b: f32) -> f32 {
        a.powf(b)
    }
    fn f64(&self, a: f64, b: f64) -> f64 {
        a.powf(b)
    }
    fn int(&self, a: i64, b: i64, _: u32) -> Option<i64> {
        Some(ipow(a, b))
    }
}

/// `pow` with a scalar exponent; exponents 2, 3, 0.5, -0.5, -1, -2 use exact special cases
/// as PyTorch's CPU kernel does.
struct PowScalar {
    e: f64,
}
macro_rules! pow_special {
    ($x:expr, $e:expr, $t:ty) => {{
        let x: $t = $x;
        let e = $e;
        if e == 2.0 {
            x * x
        } else if e == 3.0 {
            x * x * x
        } else if e == 0.5 {
            x.sqrt()
        } else if e == -0.5 {
            1.0 / x.sqrt()
        } else if e == -1.0 {
            1.0 / x
        } else if e == -2.0 {
            1.0 / (x * x)
        } else {
            x.powf(e as $t)
        }
    }};
}
impl BinaryFn for PowScalar {
    fn f32(&self, a: f32, _: f32) -> f32 {
        pow_special!(a, self.e, f32)
    }
    fn f64(&self, a: f64, _: f64) -> f64 {
        pow_special!(a, self.e, f64)
    }
    fn int(&self, a: i64, b: i64, _: u32) -> Option<i64> {
        Some(ipow(a, b))
    }
}

fn pow_tensor_scalar(op: &str, t: &Tensor, e: Scalar) -> Result<Tensor> {
    let a = Operand::Tensor(t);
    let b = Operand::Scalar(e);
    let rt = result_type(&[a, b]);
    if !rt.is_floating() && e.to_i64() < 0 && !e.is_floating() {
        return Err(KernelError::new(op.to_string(), "integers to negative integer powers are not allowed"));
    }
    binary(op, a, b, &PowScalar { e: e.to_f64() }, Promote::Same)
}

// ----- comparisons -----

macro_rules! compare_fn {
    ($ty:ident, $op:tt) => {
        struct $ty;
        impl CompareFn for $ty {
            #[inline(always)]
            fn f64(&self, a: f64, b: f64) -> bool {
                a $op b
            }
            #[inline(always)]
            fn f32(&self, a: f32, b: f32) -> bool {
                a $op b
            }
            #[inline(always)]
            fn int(&self, a: i64, b: i64) -> bool {
                a $op b
            }
        }
    };
}

compare_fn!(Eq, ==);
compare_fn!(Ne, !=);
compare_fn!(Lt, <);
compare_fn!(Le, <=);
compare_fn!(Gt, >);
compare_fn!(Ge, >=);

fn compare<F: CompareFn>(op: &str, a: Operand, b: Operand, f: &F) -> Result<Tensor> {
    let ct = result_type(&[a, b]);
    let (ta, tb) = binary_operands(op, a, b, ct)?;
    apply_compare(op, &ta, &tb, ct, f)
}

// ----- kernels -----

macro_rules! kernel {
    ($fn:ident, $name:literal, $min:expr, |$a:ident| $body:expr) => {
        fn $fn(args: &[IValue]) -> Result<Vec<IValue>> {
            let $a = Args::new($name, args, $min)?;
            ret($body)
        }
    };
}

kernel!(k_add_tensor, "aten.add.Tensor", 2, |a| add(a.op, operand(&a, 0)?, operand(&a, 1)?, a.opt_scalar(2)?.unwrap_or(Scalar::Int(1)))?);
kernel!(k_add_scalar, "aten.add.Scalar", 2, |a| add(a.op, operand(&a, 0)?, operand(&a, 1)?, a.opt_scalar(2)?.unwrap_or(Scalar::Int(1)))?);
kernel!(k_sub_tensor, "aten.sub.Tensor", 2, |a| sub(a.op, operand(&a, 0)?, operand(&a, 1)?, a.opt_scalar(2)?.unwrap_or(Scalar::Int(1)))?);
kernel!(k_sub_scalar, "aten.sub.Scalar", 2, |a| sub(a.op, operand(&a, 0)?, operand(&a, 1)?, a.opt_scalar(2)?.unwrap_or(Scalar::Int(1)))?);
kernel!(k_rsub_tensor, "aten.rsub.Tensor", 2, |a| sub(a.op, operand(&a, 1)?, operand(&a, 0)?, a.opt_scalar(2)?.unwrap_or(Scalar::Int(1)))?);
kernel!(k_rsub_scalar, "aten.rsub.Scalar", 2, |a| sub(a.op, operand(&a, 1)?, operand(&a, 0)?, a.opt_scalar(2)?.unwrap_or(Scalar::Int(1)))?);
kernel!(k_mul_tensor, "aten.mul.Tensor", 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Mul, Promote::Same)?);
kernel!(k_mul_scalar, "aten.mul.Scalar", 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Mul, Promote::Same)?);
kernel!(k_div_tensor, "aten.div.Tensor", 2, |a| div(a.op, operand(&a, 0)?, operand(&a, 1)?, None)?);
kernel!(k_div_scalar, "aten.div.Scalar", 2, |a| div(a.op, operand(&a, 0)?, operand(&a, 1)?, None)?);
kernel!(k_div_tensor_mode, "aten.div.Tensor_mode", 2, |a| div(a.op, operand(&a, 0)?, operand(&a, 1)?, a.opt_str(2)?)?);
kernel!(k_div_scalar_mode, "aten.div.Scalar_mode", 2, |a| div(a.op, operand(&a, 0)?, operand(&a, 1)?, a.opt_str(2)?)?);
kernel!(k_floor_divide, "aten.floor_divide", 2, |a| div(a.op, operand(&a, 0)?, operand(&a, 1)?, Some("floor"))?);
kernel!(k_floor_divide_scalar, "aten.floor_divide.Scalar", 2, |a| div(a.op, operand(&a, 0)?, operand(&a, 1)?, Some("floor"))?);
kernel!(k_remainder_tensor, "aten.remainder.Tensor", 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Remainder, Promote::Same)?);
kernel!(k_remainder_scalar, "aten.remainder.Scalar", 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Remainder, Promote::Same)?);
kernel!(k_remainder_scalar_tensor, "aten.remainder.Scalar_Tensor", 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Remainder, Promote::Same)?);
kernel!(k_fmod_tensor, "aten.fmod.Tensor", 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Fmod, Promote::Same)?);
kernel!(k_fmod_scalar, "aten.fmod.Scalar", 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Fmod, Promote::Same)?);
kernel!(k_maximum, "aten.maximum", 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Maximum, Promote::Same)?);
kernel!(k_minimum, "aten.minimum", 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Minimum, Promote::Same)?);
kernel!(k_fmax, "aten.fmax", 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Fmax, Promote::Same)?);
kernel!(k_fmin, "aten.fmin", 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Fmin, Promote::Same)?);
kernel!(k_atan2, "aten.atan2", 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Atan2, Promote::IntToFloat)?);
kernel!(k_hypot, "aten.hypot", 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Hypot, Promote::IntToFloat)?);
kernel!(k_copysign, "aten.copysign.Tensor", 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Copysign, Promote::IntToFloat)?);
kernel!(k_copysign_scalar, "aten.copysign.Scalar", 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Copysign, Promote::IntToFloat)?);
kernel!(k_and_tensor, "aten.bitwise_and.Tensor", 2, |a| bitwise(a.op, operand(&a, 0)?, operand(&a, 1)?, &BitAnd)?);
kernel!(k_and_scalar, "aten.bitwise_and.Scalar", 2, |a| bitwise(a.op, operand(&a, 0)?, operand(&a, 1)?, &BitAnd)?);
kernel!(k_or_tensor, "aten.bitwise_or.Tensor", 2, |a| bitwise(a.op, operand(&a, 0)?, operand(&a, 1)?, &BitOr)?);
kernel!(k_or_scalar, "aten.bitwise_or.Scalar", 2, |a| bitwise(a.op, operand(&a, 0)?, operand(&a, 1)?, &BitOr)?);
kernel!(k_xor_tensor, "aten.bitwise_xor.Tensor", 2, |a| bitwise(a.op, operand(&a, 0)?, operand(&a, 1)?, &BitXor)?);
kernel!(k_xor_scalar, "aten.bitwise_xor.Scalar", 2, |a| bitwise(a.op, operand(&a, 0)?, operand(&a, 1)?, &BitXor)?);
kernel!(k_shl_tensor, "aten.bitwise_left_shift.Tensor", 2, |a| bitwise(a.op, operand(&a, 0)?, operand(&a, 1)?, &Shl)?);
kernel!(k_shl_scalar, "aten.bitwise_left_shift.Tensor_Scalar", 2, |a| bitwise(a.op, operand(&a, 0)?, operand(&a, 1)?, &Shl)?);
kernel!(k_shr_tensor, "aten.bitwise_right_shift.Tensor", 2, |a| bitwise(a.op, operand(&a, 0)?, operand(&a, 1)?, &Shr)?);
kernel!(k_shr_scalar, "aten.bitwise_right_shift.Tensor_Scalar", 2, |a| bitwise(a.op, operand(&a, 0)?, operand(&a, 1)?, &Shr)?);
kernel!(k_logical_and, "aten.logical_and", 2, |a| logical(a.op, a.tensor(0)?, a.tensor(1)?, |x, y| x && y)?);
kernel!(k_logical_or, "aten.logical_or", 2, |a| logical(a.op, a.tensor(0)?, a.tensor(1)?, |x, y| x || y)?);
kernel!(k_logical_xor, "aten.logical_xor", 2, |a| logical(a.op, a.tensor(0)?, a.tensor(1)?, |x, y| x != y)?);
kernel!(k_pow_tt, "aten.pow.Tensor_Tensor", 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Pow, Promote::Same)?);
kernel!(k_pow_ts, "aten.pow.Tensor_Scalar", 2, |a| pow_tensor_scalar(a.op, a.tensor(0)?, a.scalar(1)?)?);
kernel!(k_pow_st, "aten.pow.Scalar", 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Pow, Promote::Same)?);
kernel!(k_eq_t, "aten.eq.Tensor", 2, |a| compare(a.op, operand(&a, 0)?, operand(&a, 1)?, &Eq)?);
kernel!(k_eq_s, "aten.eq.Scalar", 2, |a| compare(a.op, operand(&a, 0)?, operand(&a, 1)?, &Eq)?);
kernel!(k_ne_t, "aten.ne.Tensor", 2, |a| compare(a.op, operand(&a, 0)?, operand(&a, 1)?, &Ne)?);
kernel!(k_ne_s, "aten.ne.Scalar", 2, |a| compare(a.op, operand(&a, 0)?, operand(&a, 1)?, &Ne)?);
kernel!(k_lt_t, "aten.lt.Tensor", 2, |a| compare(a.op, operand(&a, 0)?, operand(&a, 1)?, &Lt)?);
kernel!(k_lt_s, "aten.lt.Scalar", 2, |a| compare(a.op, operand(&a, 0)?, operand(&a, 1)?, &Lt)?);
kernel!(k_le_t, "aten.le.Tensor", 2, |a| compare(a.op, operand(&a, 0)?, operand(&a, 1)?, &Le)?);
kernel!(k_le_s, "aten.le.Scalar", 2, |a| compare(a.op, operand(&a, 0)?, operand(&a, 1)?, &Le)?);
kernel!(k_gt_t, "aten.gt.Tensor", 2, |a| compare(a.op, operand(&a, 0)?, operand(&a, 1)?, &Gt)?);
kernel!(k_gt_s, "aten.gt.Scalar", 2, |a| compare(a.op, operand(&a, 0)?, operand(&a, 1)?, &Gt)?);
kernel!(k_ge_t, "aten.ge.Tensor", 2, |a| compare(a.op, operand(&a, 0)?, operand(&a, 1)?, &Ge)?);
kernel!(k_ge_s, "aten.ge.Scalar", 2, |a| compare(a.op, operand(&a, 0)?, operand(&a, 1)?, &Ge)?);

/// `where(cond, a, b)`: `a` where `cond` is true, else `b`, promoted to their common dtype.
pub fn where_(op: &str, cond: &Tensor, a: Operand, b: Operand) -> Result<Tensor> {
    let rt = result_type(&[a, b]);
    let (ta, tb) = (super::elementwise::operand_tensor(op, a, rt)?, super::elementwise::operand_tensor(op, b, rt)?);
    let c = cond.cast_to(DType::Bool)?;
    dispatch_dtype!(rt, T => map3::<bool, T, T, T>(op, &c, &ta, &tb, |c, x, y| if c { x } else { y }))
}

kernel!(k_where, "aten.where.self", 3, |a| where_(a.op, a.tensor(0)?, operand(&a, 1)?, operand(&a, 2)?)?);
kernel!(k_where_scalar, "aten.where.Scalar", 3, |a| where_(a.op, a.tensor(0)?, operand(&a, 1)?, operand(&a, 2)?)?);
kernel!(k_where_scalar_other, "aten.where.ScalarOther", 3, |a| where_(a.op, a.tensor(0)?, operand(&a, 1)?, operand(&a, 2)?)?);
kernel!(k_where_scalar_self, "aten.where.ScalarSelf", 3, |a| where_(a.op, a.tensor(0)?, operand(&a, 1)?, operand(&a, 2)?)?);

/// `masked_fill`: `value` where `mask` is true; keeps `self`'s dtype and shape.
fn masked_fill(op: &str, t: &Tensor, mask: &Tensor, value: Scalar) -> Result<Tensor> {
    if mask.dtype() != DType::Bool {
        return Err(KernelError::new(op.to_string(), format!("expected a bool mask, got {}", mask.dtype().torch_name())));
    }
    // Out of place, self and mask broadcast together, as in PyTorch; the in-place form's
    // write-back refuses a result larger than self.
    dispatch_dtype!(t.dtype(), T => {
        let v: T = value.to_element();
        super::elementwise::map2::<T, bool, T>(op, t, mask, |x, m| if m { v } else { x })
    })
}

fn k_masked_fill_scalar(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.masked_fill.Scalar", args, 3)?;
    ret(masked_fill(a.op, a.tensor(0)?, a.tensor(1)?, a.scalar(2)?)?)
}

fn k_masked_fill_tensor(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new("aten.masked_fill.Tensor", args, 3)?;
    let v = a.tensor(2)?;
    if v.dim() != 0 {
        return Err(KernelError::new(a.op, "value must be a 0-dimensional tensor"));
    }
    ret(masked_fill(a.op, a.tensor(0)?, a.tensor(1)?, v.item()?)?)
}

/// `lerp`: `a + weight * (b - a)`, computed as PyTorch does for accuracy near both ends.
fn lerp(op: &str, a: &Tensor, b: &Tensor, w: Operand) -> Result<Tensor> {
    let rt = result_type(&[Operand::Tensor(a), Operand::Tensor(b), w]);
    if !rt.is_floating() {
        return Err(KernelError::new(op.to_string(), "lerp expects floating tensors"));
    }
    let ct = if rt == DType::F64 { DType::F64 } else { DType::F32 };
    let ta = a.cast_to(ct)?;
    let tb = b.cast_to(ct)?;
    let tw = super::elementwise::operand_tensor(op, w, ct)?;
    let out = match ct {
        DType::F64 => map3::<f64, f64, f64, f64>(op, &ta, &tb, &tw, |s, e, w| {
            if w.abs() < 0.5 { s + w * (e - s) } else { e - (e - s) * (1.0 - w) }
        })?,
        _ => map3::<f32, f32, f32, f32>(op, &ta, &tb, &tw, |s, e, w| {
            if w.abs() < 0.5 { s + w * (e - s) } else { e - (e - s) * (1.0 - w) }
        })?,
    };
    out.cast_to(rt)
}

kernel!(k_lerp_scalar, "aten.lerp.Scalar", 3, |a| lerp(a.op, a.tensor(0)?, a.tensor(1)?, operand(&a, 2)?)?);
kernel!(k_lerp_tensor, "aten.lerp.Tensor", 3, |a| lerp(a.op, a.tensor(0)?, a.tensor(1)?, operand(&a, 2)?)?);

/// `addcmul`/`addcdiv`: `self + value * (t1 op t2)`.
fn addc(op: &str, s: &Tensor, t1: &Tensor, t2: &Tensor, value: Scalar, is_div: bool) -> Result<Tensor> {
    let rt = result_type(&[Operand::Tensor(s), Operand::Tensor(t1), Operand::Tensor(t2)]);
    if is_div && !rt.is_floating() {
        return Err(KernelError::new(op.to_string(), "integer division with addcdiv is not supported"));
    }
    let prod = if is_div {
        binary(op, Operand::Tensor(t1), Operand::Tensor(t2), &TrueDiv, Promote::Same)?
    } else {
        binary(op, Operand::Tensor(t1), Operand::Tensor(t2), &Mul, Promote::Same)?
    };
    add(op, Operand::Tensor(&s.cast_to(rt)?), Operand::Tensor(&prod.cast_to(rt)?), value)
}

kernel!(k_addcmul, "aten.addcmul", 3, |a| addc(a.op, a.tensor(0)?, a.tensor(1)?, a.tensor(2)?, a.opt_scalar(3)?.unwrap_or(Scalar::Int(1)), false)?);
kernel!(k_addcdiv, "aten.addcdiv", 3, |a| addc(a.op, a.tensor(0)?, a.tensor(1)?, a.tensor(2)?, a.opt_scalar(3)?.unwrap_or(Scalar::Int(1)), true)?);

// ----- in-place variants -----

macro_rules! inplace {
    ($fn:ident, $name:literal, |$a:ident| $body:expr) => {
        fn $fn(args: &[IValue]) -> Result<Vec<IValue>> {
            let $a = Args::new($name, args, 2)?;
            let dst = $a.tensor(0)?;
            let r: Tensor = $body;
            write_inplace($name, dst, &r)
        }
    };
}

inplace!(k_add_, "aten.add_.Tensor", |a| add(a.op, operand(&a, 0)?, operand(&a, 1)?, a.opt_scalar(2)?.unwrap_or(Scalar::Int(1)))?);
inplace!(k_add_s_, "aten.add_.Scalar", |a| add(a.op, operand(&a, 0)?, operand(&a, 1)?, a.opt_scalar(2)?.unwrap_or(Scalar::Int(1)))?);
inplace!(k_sub_, "aten.sub_.Tensor", |a| sub(a.op, operand(&a, 0)?, operand(&a, 1)?, a.opt_scalar(2)?.unwrap_or(Scalar::Int(1)))?);
inplace!(k_sub_s_, "aten.sub_.Scalar", |a| sub(a.op, operand(&a, 0)?, operand(&a, 1)?, a.opt_scalar(2)?.unwrap_or(Scalar::Int(1)))?);
inplace!(k_mul_, "aten.mul_.Tensor", |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Mul, Promote::Same)?);
inplace!(k_mul_s_, "aten.mul_.Scalar", |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Mul, Promote::Same)?);
inplace!(k_div_, "aten.div_.Tensor", |a| div(a.op, operand(&a, 0)?, operand(&a, 1)?, None)?);
inplace!(k_div_s_, "aten.div_.Scalar", |a| div(a.op, operand(&a, 0)?, operand(&a, 1)?, None)?);
inplace!(k_div_mode_, "aten.div_.Tensor_mode", |a| div(a.op, operand(&a, 0)?, operand(&a, 1)?, a.opt_str(2)?)?);
inplace!(k_masked_fill_, "aten.masked_fill_.Scalar", |a| masked_fill(a.op, a.tensor(0)?, a.tensor(1)?, a.scalar(2)?)?);
inplace!(k_pow_, "aten.pow_.Scalar", |a| pow_tensor_scalar(a.op, a.tensor(0)?, a.scalar(1)?)?);
inplace!(k_remainder_, "aten.remainder_.Tensor", |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Remainder, Promote::Same)?);

/// Truncating cast helper used by other modules: `t` as an `i64` vector.
pub fn tensor_to_i64(t: &Tensor) -> Result<Vec<i64>> {
    dispatch_dtype!(t.dtype(), T => Ok(map1::<T, i64>(t, |x| x.to_i64())?.to_vec::<i64>()?))
}

pub fn register(r: &mut KernelRegistry) {
    let table: &[(&'static str, super::KernelFn)] = &[
        ("aten.add.Tensor", k_add_tensor),
        ("aten.add.Scalar", k_add_scalar),
        ("aten.sub.Tensor", k_sub_tensor),
        ("aten.sub.Scalar", k_sub_scalar),
        ("aten.rsub.Tensor", k_rsub_tensor),
        ("aten.rsub.Scalar", k_rsub_scalar),
        ("aten.mul.Tensor", k_mul_tensor),
        ("aten.mul.Scalar", k_mul_scalar),
        ("aten.div.Tensor", k_div_tensor),
        ("aten.div.Scalar", k_div_scalar),
        ("aten.div.Tensor_mode", k_div_tensor_mode),
        ("aten.div.Scalar_mode", k_div_scalar_mode),
        ("aten.floor_divide", k_floor_divide),
        ("aten.floor_divide.Scalar", k_floor_divide_scalar),
        ("aten.remainder.Tensor", k_remainder_tensor),
        ("aten.remainder.Scalar", k_remainder_scalar),
        ("aten.remainder.Scalar_Tensor", k_remainder_scalar_tensor),
        ("aten.fmod.Tensor", k_fmod_tensor),
        ("aten.fmod.Scalar", k_fmod_scalar),
        ("aten.maximum", k_maximum),
        ("aten.minimum", k_minimum),
        ("aten.fmax", k_fmax),
        ("aten.fmin", k_fmin),
        ("aten.atan2", k_atan2),
        ("aten.hypot", k_hypot),
        ("aten.copysign.Tensor", k_copysign),
        ("aten.copysign.Scalar", k_copysign_scalar),
        ("aten.bitwise_and.Tensor", k_and_tensor),
        ("aten.bitwise_and.Scalar", k_and_scalar),
        ("aten.bitwise_or.Tensor", k_or_tensor),
        ("aten.bitwise_or.Scalar", k_or_scalar),
        ("aten.bitwise_xor.Tensor", k_xor_tensor),
        ("aten.bitwise_xor.Scalar", k_xor_scalar),
        ("aten.bitwise_left_shift.Tensor", k_shl_tensor),
        ("aten.bitwise_left_shift.Tensor_Scalar", k_shl_scalar),
        ("aten.bitwise_right_shift.Tensor", k_shr_tensor),
        ("aten.bitwise_right_shift.Tensor_Scalar", k_shr_scalar),
        ("aten.logical_and", k_logical_and),
        ("aten.logical_or", k_logical_or),
        ("aten.logical_xor", k_logical_xor),
        ("aten.pow.Tensor_Tensor", k_pow_tt),
        ("aten.pow.Tensor_Scalar", k_pow_ts),
        ("aten.pow.Scalar", k_pow_st),
        ("aten.eq.Tensor", k_eq_t),
        ("aten.eq.Scalar", k_eq_s),
        ("aten.ne.Tensor", k_ne_t),
        ("aten.ne.Scalar", k_ne_s),
        ("aten.lt.Tensor", k_lt_t),
        ("aten.lt.Scalar", k_lt_s),
        ("aten.le.Tensor", k_le_t),
        ("aten.le.Scalar", k_le_s),
        ("aten.gt.Tensor", k_gt_t),
        ("aten.gt.Scalar", k_gt_s),
        ("aten.ge.Tensor", k_ge_t),
        ("aten.ge.Scalar", k_ge_s),
        ("aten.where.self", k_where),
        ("aten.where.Scalar", k_where_scalar),
        ("aten.where.ScalarOther", k_where_scalar_other),
        ("aten.where.ScalarSelf", k_where_scalar_self),
        ("aten.masked_fill.Scalar", k_masked_fill_scalar),
        ("aten.masked_fill.Tensor", k_masked_fill_tensor),
        ("aten.lerp.Scalar", k_lerp_scalar),
        ("aten.lerp.Tensor", k_lerp_tensor),
        ("aten.addcmul", k_addcmul),
        ("aten.addcdiv", k_addcdiv),
        ("aten.add_.Tensor", k_add_),
        ("aten.add_.Scalar", k_add_s_),
        ("aten.sub_.Tensor", k_sub_),
        ("aten.sub_.Scalar", k_sub_s_),
        ("aten.mul_.Tensor", k_mul_),
        ("aten.mul_.Scalar", k_mul_s_),
        ("aten.div_.Tensor", k_div_),
        ("aten.div_.Scalar", k_div_s_),
        ("aten.div_.Tensor_mode", k_div_mode_),
        ("aten.masked_fill_.Scalar", k_masked_fill_),
        ("aten.pow_.Scalar", k_pow_),
        ("aten.remainder_.Tensor", k_remainder_),
    ];
    for &(name, f) in table {
        r.register(name, f);
    }
}
