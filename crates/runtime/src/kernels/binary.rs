//! Binary elementwise kernels with broadcasting and PyTorch type promotion: arithmetic,
//! division modes, remainder/fmod, min/max, bitwise and logical ops, comparisons, `pow`,
//! `where`, `masked_fill`, `lerp`, `addcmul`/`addcdiv`, and in-place variants.
//!
//! Integer arithmetic wraps on overflow (as PyTorch's does); integer division or remainder by
//! zero is an error.

use dialect_aten::op;
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
    ($fn:ident, $name:path, $min:expr, |$a:ident| $body:expr) => {
        fn $fn(args: &[IValue]) -> Result<Vec<IValue>> {
            let $a = Args::new($name, args, $min)?;
            ret($body)
        }
    };
}

kernel!(k_add_tensor, op::ADD_TENSOR, 2, |a| add(a.op, operand(&a, 0)?, operand(&a, 1)?, a.opt_scalar(2)?.unwrap_or(Scalar::Int(1)))?);
kernel!(k_add_scalar, op::ADD_SCALAR, 2, |a| add(a.op, operand(&a, 0)?, operand(&a, 1)?, a.opt_scalar(2)?.unwrap_or(Scalar::Int(1)))?);
kernel!(k_sub_tensor, op::SUB_TENSOR, 2, |a| sub(a.op, operand(&a, 0)?, operand(&a, 1)?, a.opt_scalar(2)?.unwrap_or(Scalar::Int(1)))?);
kernel!(k_sub_scalar, op::SUB_SCALAR, 2, |a| sub(a.op, operand(&a, 0)?, operand(&a, 1)?, a.opt_scalar(2)?.unwrap_or(Scalar::Int(1)))?);
kernel!(k_rsub_tensor, op::RSUB_TENSOR, 2, |a| sub(a.op, operand(&a, 1)?, operand(&a, 0)?, a.opt_scalar(2)?.unwrap_or(Scalar::Int(1)))?);
kernel!(k_rsub_scalar, op::RSUB_SCALAR, 2, |a| sub(a.op, operand(&a, 1)?, operand(&a, 0)?, a.opt_scalar(2)?.unwrap_or(Scalar::Int(1)))?);
kernel!(k_mul_tensor, op::MUL_TENSOR, 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Mul, Promote::Same)?);
kernel!(k_mul_scalar, op::MUL_SCALAR, 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Mul, Promote::Same)?);
kernel!(k_div_tensor, op::DIV_TENSOR, 2, |a| div(a.op, operand(&a, 0)?, operand(&a, 1)?, None)?);
kernel!(k_div_scalar, op::DIV_SCALAR, 2, |a| div(a.op, operand(&a, 0)?, operand(&a, 1)?, None)?);
kernel!(k_div_tensor_mode, op::DIV_TENSOR_MODE, 2, |a| div(a.op, operand(&a, 0)?, operand(&a, 1)?, a.opt_str(2)?)?);
kernel!(k_div_scalar_mode, op::DIV_SCALAR_MODE, 2, |a| div(a.op, operand(&a, 0)?, operand(&a, 1)?, a.opt_str(2)?)?);
kernel!(k_floor_divide, op::FLOOR_DIVIDE, 2, |a| div(a.op, operand(&a, 0)?, operand(&a, 1)?, Some("floor"))?);
kernel!(k_floor_divide_scalar, op::FLOOR_DIVIDE_SCALAR, 2, |a| div(a.op, operand(&a, 0)?, operand(&a, 1)?, Some("floor"))?);
kernel!(k_remainder_tensor, op::REMAINDER_TENSOR, 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Remainder, Promote::Same)?);
kernel!(k_remainder_scalar, op::REMAINDER_SCALAR, 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Remainder, Promote::Same)?);
kernel!(k_remainder_scalar_tensor, op::REMAINDER_SCALAR_TENSOR, 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Remainder, Promote::Same)?);
kernel!(k_fmod_tensor, op::FMOD_TENSOR, 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Fmod, Promote::Same)?);
kernel!(k_fmod_scalar, op::FMOD_SCALAR, 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Fmod, Promote::Same)?);
kernel!(k_maximum, op::MAXIMUM, 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Maximum, Promote::Same)?);
kernel!(k_minimum, op::MINIMUM, 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Minimum, Promote::Same)?);
kernel!(k_fmax, op::FMAX, 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Fmax, Promote::Same)?);
kernel!(k_fmin, op::FMIN, 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Fmin, Promote::Same)?);
kernel!(k_atan2, op::ATAN2, 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Atan2, Promote::IntToFloat)?);
kernel!(k_hypot, op::HYPOT, 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Hypot, Promote::IntToFloat)?);
kernel!(k_copysign, op::COPYSIGN_TENSOR, 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Copysign, Promote::IntToFloat)?);
kernel!(k_copysign_scalar, op::COPYSIGN_SCALAR, 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Copysign, Promote::IntToFloat)?);
kernel!(k_and_tensor, op::BITWISE_AND_TENSOR, 2, |a| bitwise(a.op, operand(&a, 0)?, operand(&a, 1)?, &BitAnd)?);
kernel!(k_and_scalar, op::BITWISE_AND_SCALAR, 2, |a| bitwise(a.op, operand(&a, 0)?, operand(&a, 1)?, &BitAnd)?);
kernel!(k_or_tensor, op::BITWISE_OR_TENSOR, 2, |a| bitwise(a.op, operand(&a, 0)?, operand(&a, 1)?, &BitOr)?);
kernel!(k_or_scalar, op::BITWISE_OR_SCALAR, 2, |a| bitwise(a.op, operand(&a, 0)?, operand(&a, 1)?, &BitOr)?);
kernel!(k_xor_tensor, op::BITWISE_XOR_TENSOR, 2, |a| bitwise(a.op, operand(&a, 0)?, operand(&a, 1)?, &BitXor)?);
kernel!(k_xor_scalar, op::BITWISE_XOR_SCALAR, 2, |a| bitwise(a.op, operand(&a, 0)?, operand(&a, 1)?, &BitXor)?);
kernel!(k_shl_tensor, op::BITWISE_LEFT_SHIFT_TENSOR, 2, |a| bitwise(a.op, operand(&a, 0)?, operand(&a, 1)?, &Shl)?);
kernel!(k_shl_scalar, op::BITWISE_LEFT_SHIFT_TENSOR_SCALAR, 2, |a| bitwise(a.op, operand(&a, 0)?, operand(&a, 1)?, &Shl)?);
kernel!(k_shr_tensor, op::BITWISE_RIGHT_SHIFT_TENSOR, 2, |a| bitwise(a.op, operand(&a, 0)?, operand(&a, 1)?, &Shr)?);
kernel!(k_shr_scalar, op::BITWISE_RIGHT_SHIFT_TENSOR_SCALAR, 2, |a| bitwise(a.op, operand(&a, 0)?, operand(&a, 1)?, &Shr)?);
kernel!(k_logical_and, op::LOGICAL_AND, 2, |a| logical(a.op, a.tensor(0)?, a.tensor(1)?, |x, y| x && y)?);
kernel!(k_logical_or, op::LOGICAL_OR, 2, |a| logical(a.op, a.tensor(0)?, a.tensor(1)?, |x, y| x || y)?);
kernel!(k_logical_xor, op::LOGICAL_XOR, 2, |a| logical(a.op, a.tensor(0)?, a.tensor(1)?, |x, y| x != y)?);
kernel!(k_pow_tt, op::POW_TENSOR_TENSOR, 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Pow, Promote::Same)?);
kernel!(k_pow_ts, op::POW_TENSOR_SCALAR, 2, |a| pow_tensor_scalar(a.op, a.tensor(0)?, a.scalar(1)?)?);
kernel!(k_pow_st, op::POW_SCALAR, 2, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Pow, Promote::Same)?);
kernel!(k_eq_t, op::EQ_TENSOR, 2, |a| compare(a.op, operand(&a, 0)?, operand(&a, 1)?, &Eq)?);
kernel!(k_eq_s, op::EQ_SCALAR, 2, |a| compare(a.op, operand(&a, 0)?, operand(&a, 1)?, &Eq)?);
kernel!(k_ne_t, op::NE_TENSOR, 2, |a| compare(a.op, operand(&a, 0)?, operand(&a, 1)?, &Ne)?);
kernel!(k_ne_s, op::NE_SCALAR, 2, |a| compare(a.op, operand(&a, 0)?, operand(&a, 1)?, &Ne)?);
kernel!(k_lt_t, op::LT_TENSOR, 2, |a| compare(a.op, operand(&a, 0)?, operand(&a, 1)?, &Lt)?);
kernel!(k_lt_s, op::LT_SCALAR, 2, |a| compare(a.op, operand(&a, 0)?, operand(&a, 1)?, &Lt)?);
kernel!(k_le_t, op::LE_TENSOR, 2, |a| compare(a.op, operand(&a, 0)?, operand(&a, 1)?, &Le)?);
kernel!(k_le_s, op::LE_SCALAR, 2, |a| compare(a.op, operand(&a, 0)?, operand(&a, 1)?, &Le)?);
kernel!(k_gt_t, op::GT_TENSOR, 2, |a| compare(a.op, operand(&a, 0)?, operand(&a, 1)?, &Gt)?);
kernel!(k_gt_s, op::GT_SCALAR, 2, |a| compare(a.op, operand(&a, 0)?, operand(&a, 1)?, &Gt)?);
kernel!(k_ge_t, op::GE_TENSOR, 2, |a| compare(a.op, operand(&a, 0)?, operand(&a, 1)?, &Ge)?);
kernel!(k_ge_s, op::GE_SCALAR, 2, |a| compare(a.op, operand(&a, 0)?, operand(&a, 1)?, &Ge)?);

/// `where(cond, a, b)`: `a` where `cond` is true, else `b`, promoted to their common dtype.
pub fn where_(op: &str, cond: &Tensor, a: Operand, b: Operand) -> Result<Tensor> {
    let rt = result_type(&[a, b]);
    let (ta, tb) = (super::elementwise::operand_tensor(op, a, rt)?, super::elementwise::operand_tensor(op, b, rt)?);
    let c = cond.cast_to(DType::Bool)?;
    dispatch_dtype!(rt, T => map3::<bool, T, T, T>(op, &c, &ta, &tb, |c, x, y| if c { x } else { y }))
}

kernel!(k_where, op::WHERE_SELF, 3, |a| where_(a.op, a.tensor(0)?, operand(&a, 1)?, operand(&a, 2)?)?);
kernel!(k_where_scalar, op::WHERE_SCALAR, 3, |a| where_(a.op, a.tensor(0)?, operand(&a, 1)?, operand(&a, 2)?)?);
kernel!(k_where_scalar_other, op::WHERE_SCALAROTHER, 3, |a| where_(a.op, a.tensor(0)?, operand(&a, 1)?, operand(&a, 2)?)?);
kernel!(k_where_scalar_self, op::WHERE_SCALARSELF, 3, |a| where_(a.op, a.tensor(0)?, operand(&a, 1)?, operand(&a, 2)?)?);

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
    let a = Args::new(op::MASKED_FILL_SCALAR, args, 3)?;
    ret(masked_fill(a.op, a.tensor(0)?, a.tensor(1)?, a.scalar(2)?)?)
}

fn k_masked_fill_tensor(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::MASKED_FILL_TENSOR, args, 3)?;
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

kernel!(k_lerp_scalar, op::LERP_SCALAR, 3, |a| lerp(a.op, a.tensor(0)?, a.tensor(1)?, operand(&a, 2)?)?);
kernel!(k_lerp_tensor, op::LERP_TENSOR, 3, |a| lerp(a.op, a.tensor(0)?, a.tensor(1)?, operand(&a, 2)?)?);

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

kernel!(k_addcmul, op::ADDCMUL, 3, |a| addc(a.op, a.tensor(0)?, a.tensor(1)?, a.tensor(2)?, a.opt_scalar(3)?.unwrap_or(Scalar::Int(1)), false)?);
kernel!(k_addcdiv, op::ADDCDIV, 3, |a| addc(a.op, a.tensor(0)?, a.tensor(1)?, a.tensor(2)?, a.opt_scalar(3)?.unwrap_or(Scalar::Int(1)), true)?);

// ----- in-place variants -----

macro_rules! inplace {
    ($fn:ident, $name:path, |$a:ident| $body:expr) => {
        fn $fn(args: &[IValue]) -> Result<Vec<IValue>> {
            let $a = Args::new($name, args, 2)?;
            let dst = $a.tensor(0)?;
            let r: Tensor = $body;
            write_inplace($name.name(), dst, &r)
        }
    };
}

inplace!(k_add_, op::ADD__TENSOR, |a| add(a.op, operand(&a, 0)?, operand(&a, 1)?, a.opt_scalar(2)?.unwrap_or(Scalar::Int(1)))?);
inplace!(k_add_s_, op::ADD__SCALAR, |a| add(a.op, operand(&a, 0)?, operand(&a, 1)?, a.opt_scalar(2)?.unwrap_or(Scalar::Int(1)))?);
inplace!(k_sub_, op::SUB__TENSOR, |a| sub(a.op, operand(&a, 0)?, operand(&a, 1)?, a.opt_scalar(2)?.unwrap_or(Scalar::Int(1)))?);
inplace!(k_sub_s_, op::SUB__SCALAR, |a| sub(a.op, operand(&a, 0)?, operand(&a, 1)?, a.opt_scalar(2)?.unwrap_or(Scalar::Int(1)))?);
inplace!(k_mul_, op::MUL__TENSOR, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Mul, Promote::Same)?);
inplace!(k_mul_s_, op::MUL__SCALAR, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Mul, Promote::Same)?);
inplace!(k_div_, op::DIV__TENSOR, |a| div(a.op, operand(&a, 0)?, operand(&a, 1)?, None)?);
inplace!(k_div_s_, op::DIV__SCALAR, |a| div(a.op, operand(&a, 0)?, operand(&a, 1)?, None)?);
inplace!(k_div_mode_, op::DIV__TENSOR_MODE, |a| div(a.op, operand(&a, 0)?, operand(&a, 1)?, a.opt_str(2)?)?);
inplace!(k_masked_fill_, op::MASKED_FILL__SCALAR, |a| masked_fill(a.op, a.tensor(0)?, a.tensor(1)?, a.scalar(2)?)?);
inplace!(k_pow_, op::POW__SCALAR, |a| pow_tensor_scalar(a.op, a.tensor(0)?, a.scalar(1)?)?);
inplace!(k_remainder_, op::REMAINDER__TENSOR, |a| binary(a.op, operand(&a, 0)?, operand(&a, 1)?, &Remainder, Promote::Same)?);

/// Truncating cast helper used by other modules: `t` as an `i64` vector.
pub fn tensor_to_i64(t: &Tensor) -> Result<Vec<i64>> {
    dispatch_dtype!(t.dtype(), T => Ok(map1::<T, i64>(t, |x| x.to_i64())?.to_vec::<i64>()?))
}

pub fn register(r: &mut KernelRegistry) {
    let table: &[(ir::OpRef, super::KernelFn)] = &[
        (op::ADD_TENSOR, k_add_tensor),
        (op::ADD_SCALAR, k_add_scalar),
        (op::SUB_TENSOR, k_sub_tensor),
        (op::SUB_SCALAR, k_sub_scalar),
        (op::RSUB_TENSOR, k_rsub_tensor),
        (op::RSUB_SCALAR, k_rsub_scalar),
        (op::MUL_TENSOR, k_mul_tensor),
        (op::MUL_SCALAR, k_mul_scalar),
        (op::DIV_TENSOR, k_div_tensor),
        (op::DIV_SCALAR, k_div_scalar),
        (op::DIV_TENSOR_MODE, k_div_tensor_mode),
        (op::DIV_SCALAR_MODE, k_div_scalar_mode),
        (op::FLOOR_DIVIDE, k_floor_divide),
        (op::FLOOR_DIVIDE_SCALAR, k_floor_divide_scalar),
        (op::REMAINDER_TENSOR, k_remainder_tensor),
        (op::REMAINDER_SCALAR, k_remainder_scalar),
        (op::REMAINDER_SCALAR_TENSOR, k_remainder_scalar_tensor),
        (op::FMOD_TENSOR, k_fmod_tensor),
        (op::FMOD_SCALAR, k_fmod_scalar),
        (op::MAXIMUM, k_maximum),
        (op::MINIMUM, k_minimum),
        (op::FMAX, k_fmax),
        (op::FMIN, k_fmin),
        (op::ATAN2, k_atan2),
        (op::HYPOT, k_hypot),
        (op::COPYSIGN_TENSOR, k_copysign),
        (op::COPYSIGN_SCALAR, k_copysign_scalar),
        (op::BITWISE_AND_TENSOR, k_and_tensor),
        (op::BITWISE_AND_SCALAR, k_and_scalar),
        (op::BITWISE_OR_TENSOR, k_or_tensor),
        (op::BITWISE_OR_SCALAR, k_or_scalar),
        (op::BITWISE_XOR_TENSOR, k_xor_tensor),
        (op::BITWISE_XOR_SCALAR, k_xor_scalar),
        (op::BITWISE_LEFT_SHIFT_TENSOR, k_shl_tensor),
        (op::BITWISE_LEFT_SHIFT_TENSOR_SCALAR, k_shl_scalar),
        (op::BITWISE_RIGHT_SHIFT_TENSOR, k_shr_tensor),
        (op::BITWISE_RIGHT_SHIFT_TENSOR_SCALAR, k_shr_scalar),
        (op::LOGICAL_AND, k_logical_and),
        (op::LOGICAL_OR, k_logical_or),
        (op::LOGICAL_XOR, k_logical_xor),
        (op::POW_TENSOR_TENSOR, k_pow_tt),
        (op::POW_TENSOR_SCALAR, k_pow_ts),
        (op::POW_SCALAR, k_pow_st),
        (op::EQ_TENSOR, k_eq_t),
        (op::EQ_SCALAR, k_eq_s),
        (op::NE_TENSOR, k_ne_t),
        (op::NE_SCALAR, k_ne_s),
        (op::LT_TENSOR, k_lt_t),
        (op::LT_SCALAR, k_lt_s),
        (op::LE_TENSOR, k_le_t),
        (op::LE_SCALAR, k_le_s),
        (op::GT_TENSOR, k_gt_t),
        (op::GT_SCALAR, k_gt_s),
        (op::GE_TENSOR, k_ge_t),
        (op::GE_SCALAR, k_ge_s),
        (op::WHERE_SELF, k_where),
        (op::WHERE_SCALAR, k_where_scalar),
        (op::WHERE_SCALAROTHER, k_where_scalar_other),
        (op::WHERE_SCALARSELF, k_where_scalar_self),
        (op::MASKED_FILL_SCALAR, k_masked_fill_scalar),
        (op::MASKED_FILL_TENSOR, k_masked_fill_tensor),
        (op::LERP_SCALAR, k_lerp_scalar),
        (op::LERP_TENSOR, k_lerp_tensor),
        (op::ADDCMUL, k_addcmul),
        (op::ADDCDIV, k_addcdiv),
        (op::ADD__TENSOR, k_add_),
        (op::ADD__SCALAR, k_add_s_),
        (op::SUB__TENSOR, k_sub_),
        (op::SUB__SCALAR, k_sub_s_),
        (op::MUL__TENSOR, k_mul_),
        (op::MUL__SCALAR, k_mul_s_),
        (op::DIV__TENSOR, k_div_),
        (op::DIV__SCALAR, k_div_s_),
        (op::DIV__TENSOR_MODE, k_div_mode_),
        (op::MASKED_FILL__SCALAR, k_masked_fill_),
        (op::POW__SCALAR, k_pow_),
        (op::REMAINDER__TENSOR, k_remainder_),
    ];
    for &(name, f) in table {
        r.register(name, f);
    }
}
