//! Element types of tensors: the Rust type behind each `DType` and PyTorch's casting rules.
//!
//! Casting follows PyTorch on x86-64 CPUs:
//! - to `bool`: `x != 0` (NaN is `true`);
//! - float to integer truncates toward zero. Values that do not fit (and NaN) follow what the
//!   x86 conversion instructions PyTorch compiles to produce: `i64` and `i32` get their minimum
//!   value ("integer indefinite"); `i16`, `i8` and `u8` are converted through `i32` and keep its
//!   low bits (so `300.0 → i8` is `44`, `-1.0 → u8` is `255`);
//! - integer to narrower integer wraps (keeps the low bits);
//! - to `f16`/`bf16`: round to nearest even.

use half::{bf16, f16};
use ir::DType;

/// Truncates a float to `i64` the way x86's `cvttsd2si` does.
#[inline(always)]
pub fn f64_to_i64(v: f64) -> i64 {
    // 2^63 is exactly representable; anything outside [-2^63, 2^63) or NaN is out of range.
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if !(-TWO_63..TWO_63).contains(&v) {
        i64::MIN
    } else {
        v as i64
    }
}

/// Truncates a float to `i32` the way x86's 32-bit `cvttsd2si` does.
#[inline(always)]
pub fn f64_to_i32(v: f64) -> i32 {
    if !(-2_147_483_649.0 < v && v < 2_147_483_648.0) {
        i32::MIN
    } else {
        v as i32
    }
}

/// A Rust type that is the element type of some `DType`.
pub trait Element: Copy + Send + Sync + PartialEq + Default + std::fmt::Debug + 'static {
    const DTYPE: DType;
    fn to_f64(self) -> f64;
    fn from_f64(v: f64) -> Self;
    fn to_f32(self) -> f32;
    fn from_f32(v: f32) -> Self;
    /// Integer value (floats truncate toward zero, bool is 0/1).
    fn to_i64(self) -> i64;
    /// From an integer: wraps for narrower integers, rounds for floats, `!= 0` for bool.
    fn from_i64(v: i64) -> Self;
    fn to_bool(self) -> bool;
    fn from_bool(v: bool) -> Self;
    /// The value as a complex number `(real, imaginary)`; real types have no imaginary part.
    #[inline(always)]
    fn to_complex(self) -> (f64, f64) {
        (self.to_f64(), 0.0)
    }
    /// From a complex number: real types keep the real part (PyTorch's complex-to-real cast).
    #[inline(always)]
    fn from_complex(re: f64, im: f64) -> Self {
        let _ = im;
        Self::from_f64(re)
    }
}

/// `complex64`'s element: real and imaginary `f32` parts, laid out as two `f32`s.
pub type C32 = num_complex::Complex<f32>;
/// `complex128`'s element: real and imaginary `f64` parts.
pub type C64 = num_complex::Complex<f64>;

/// Complex elements read as real numbers (`to_f64`, `to_i64`) give their real part, as
/// PyTorch's casts do; kernels that are not written for complex never see them (the
/// interpreter refuses complex operands of ops without complex support).
macro_rules! complex_element {
    ($t:ty, $part:ty, $d:ident) => {
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self.re as f64
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                <$t>::new(v as $part, 0.0)
            }
            #[inline(always)]
            fn to_f32(self) -> f32 {
                self.re as f32
            }
            #[inline(always)]
            fn from_f32(v: f32) -> Self {
                <$t>::new(v as $part, 0.0)
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                f64_to_i64(self.re as f64)
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                <$t>::new(v as $part, 0.0)
            }
            #[inline(always)]
            fn to_bool(self) -> bool {
                self.re != 0.0 || self.im != 0.0
            }
            #[inline(always)]
            fn from_bool(v: bool) -> Self {
                <$t>::new(v as u8 as $part, 0.0)
            }
            #[inline(always)]
            fn to_complex(self) -> (f64, f64) {
                (self.re as f64, self.im as f64)
            }
            #[inline(always)]
            fn from_complex(re: f64, im: f64) -> Self {
                <$t>::new(re as $part, im as $part)
            }
        }
    };
}

complex_element!(C32, f32, C64);
complex_element!(C64, f64, C128);

macro_rules! int_element {
    ($t:ty, $d:ident, $from_f64:expr) => {
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                let f: fn(f64) -> $t = $from_f64;
                f(v)
            }
            #[inline(always)]
            fn to_f32(self) -> f32 {
                self as f32
            }
            #[inline(always)]
            fn from_f32(v: f32) -> Self {
                Self::from_f64(v as f64)
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self as i64
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_bool(self) -> bool {
                self != 0
            }
            #[inline(always)]
            fn from_bool(v: bool) -> Self {
                v as $t
            }
        }
    };
}

int_element!(u8, U8, |v| f64_to_i32(v) as u8);
int_element!(i8, I8, |v| f64_to_i32(v) as i8);
int_element!(i16, I16, |v| f64_to_i32(v) as i16);
int_element!(i32, I32, f64_to_i32);
int_element!(i64, I64, f64_to_i64);

impl Element for bool {
    const DTYPE: DType = DType::Bool;
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as u8 as f64
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self as u8 as f32
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        v != 0.0
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self as i64
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        v != 0
    }
    #[inline(always)]
    fn to_bool(self) -> bool {
        self
    }
    #[inline(always)]
    fn from_bool(v: bool) -> Self {
        v
    }
}

impl Element for f32 {
    const DTYPE: DType = DType::F32;
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as f64
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        v
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        f64_to_i64(self as f64)
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        v as f32
    }
    #[inline(always)]
    fn to_bool(self) -> bool {
        self != 0.0
    }
    #[inline(always)]
    fn from_bool(v: bool) -> Self {
        v as u8 as f32
    }
}

impl Element for f64 {
    const DTYPE: DType = DType::F64;
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self as f32
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        v as f64
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        f64_to_i64(self)
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        v as f64
    }
    #[inline(always)]
    fn to_bool(self) -> bool {
        self != 0.0
    }
    #[inline(always)]
    fn from_bool(v: bool) -> Self {
        v as u8 as f64
    }
}

macro_rules! half_element {
    ($t:ty, $d:ident) => {
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                <$t>::to_f64(self)
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                <$t>::from_f64(v)
            }
            #[inline(always)]
            fn to_f32(self) -> f32 {
                <$t>::to_f32(self)
            }
            #[inline(always)]
            fn from_f32(v: f32) -> Self {
                <$t>::from_f32(v)
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                f64_to_i64(<$t>::to_f64(self))
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                <$t>::from_f64(v as f64)
            }
            #[inline(always)]
            fn to_bool(self) -> bool {
                <$t>::to_f32(self) != 0.0
            }
            #[inline(always)]
            fn from_bool(v: bool) -> Self {
                if v { <$t>::ONE } else { <$t>::ZERO }
            }
        }
    };
}

half_element!(f16, F16);
half_element!(bf16, BF16);

/// Converts one element to another element type with PyTorch's casting rules.
#[inline(always)]
pub fn cast<S: Element, D: Element>(v: S) -> D {
    if D::DTYPE.is_complex() {
        if S::DTYPE.is_complex() || S::DTYPE == DType::F64 {
            let (re, im) = v.to_complex();
            return D::from_complex(re, im);
        }
        // Real sources reach the parts as `f32` does (exact for every real dtype but f64/i64).
        let re = if S::DTYPE.is_floating() { v.to_f32() as f64 } else { v.to_i64() as f64 };
        return D::from_complex(re, 0.0);
    }
    let src_float = S::DTYPE.is_floating() || S::DTYPE.is_complex();
    match D::DTYPE {
        DType::Bool => D::from_bool(v.to_bool()),
        DType::F32 | DType::F64 if !src_float => D::from_i64(v.to_i64()),
        DType::F16 | DType::BF16 if !src_float => D::from_f32(v.to_i64() as f32),
        DType::F32 | DType::F64 | DType::F16 | DType::BF16 => {
            if matches!(S::DTYPE, DType::F64 | DType::C128) {
                D::from_f64(v.to_f64())
            } else {
                D::from_f32(v.to_f32())
            }
        }
        _ => {
            if src_float {
                D::from_f64(v.to_f64())
            } else {
                D::from_i64(v.to_i64())
            }
        }
    }
}

/// The `match` behind [`dispatch_dtype!`] and [`dispatch_all_dtypes!`]: an arm per real dtype
/// binding `$T`, then the caller's arms for the complex dtypes.
#[doc(hidden)]
#[macro_export]
macro_rules! dispatch_real_then {
    ($dtype:expr, $T:ident => $body:expr; $($complex:tt)*) => {
        match $dtype {
            ir::DType::Bool => {
                type $T = bool;
                $body
            }
            ir::DType::U8 => {
                type $T = u8;
                $body
            }
            ir::DType::I8 => {
                type $T = i8;
                $body
            }
            ir::DType::I16 => {
                type $T = i16;
                $body
            }
            ir::DType::I32 => {
                type $T = i32;
                $body
            }
            ir::DType::I64 => {
                type $T = i64;
                $body
            }
            ir::DType::F16 => {
                type $T = half::f16;
                $body
            }
            ir::DType::BF16 => {
                type $T = half::bf16;
                $body
            }
            ir::DType::F32 => {
                type $T = f32;
                $body
            }
            ir::DType::F64 => {
                type $T = f64;
                $body
            }
            $($complex)*
        }
    };
}

/// Calls `$body` with the type alias `$T` bound to the element type of `$dtype`, for the real
/// dtypes; a complex `$dtype` returns an error from the enclosing function (kernels written
/// with this macro compute on real numbers: see `kernels::complex`).
#[macro_export]
macro_rules! dispatch_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {
        $crate::dispatch_real_then!($dtype, $T => $body;
            d @ (ir::DType::C64 | ir::DType::C128) => {
                return Err(::core::convert::From::from($crate::tensor::KernelError::new(
                    "dispatch",
                    format!("{} tensors are not supported by this kernel", d.torch_name()),
                )));
            }
        )
    };
}

/// Calls `$body` with the type alias `$T` bound to the element type of `$dtype`, complex
/// dtypes included: for code that moves, copies or casts elements without computing on them.
#[macro_export]
macro_rules! dispatch_all_dtypes {
    ($dtype:expr, $T:ident => $body:expr) => {
        $crate::dispatch_real_then!($dtype, $T => $body;
            ir::DType::C64 => {
                type $T = $crate::tensor::C32;
                $body
            }
            ir::DType::C128 => {
                type $T = $crate::tensor::C64;
                $body
            }
        )
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The whole-slice conversions of `to_dtype` between `f32` and the half types give the
    /// bits of [`cast`] element by element, NaNs, infinities, subnormals and ties included.
    #[test]
    fn slice_casts_of_halves_are_elementwise_casts() {
        let mut values: Vec<f32> = (0..4096u32).map(|i| f32::from_bits(i.wrapping_mul(0x9E37_79B9))).collect();
        values.extend([0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 65504.0, 65520.0, 1e-8, 5.96e-8, 1.0 + f32::EPSILON]);
        let t = crate::tensor::Tensor::from_vec(values.clone(), &[values.len()]).unwrap();
        let halves = t.to_dtype(DType::F16).unwrap().to_vec::<f16>().unwrap();
        let brains = t.to_dtype(DType::BF16).unwrap().to_vec::<bf16>().unwrap();
        for (i, &v) in values.iter().enumerate() {
            assert_eq!(halves[i].to_bits(), cast::<f32, f16>(v).to_bits(), "f16 of {v:e}");
            assert_eq!(brains[i].to_bits(), cast::<f32, bf16>(v).to_bits(), "bf16 of {v:e}");
        }
        let h = crate::tensor::Tensor::from_vec(halves.clone(), &[halves.len()]).unwrap();
        let b = crate::tensor::Tensor::from_vec(brains.clone(), &[brains.len()]).unwrap();
        let (hw, bw) = (h.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap(), b.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap());
        for i in 0..values.len() {
            assert_eq!(hw[i].to_bits(), cast::<f16, f32>(halves[i]).to_bits());
            assert_eq!(bw[i].to_bits(), cast::<bf16, f32>(brains[i]).to_bits());
        }
    }

    #[test]
    fn float_to_int_follows_x86_pytorch() {
        assert_eq!(i64::from_f64(-2.7), -2);
        assert_eq!(i32::from_f64(2.7), 2);
        assert_eq!(i64::from_f64(f64::NAN), i64::MIN);
        assert_eq!(i32::from_f64(f64::NAN), i32::MIN);
        assert_eq!(i8::from_f64(300.0), 44);
        assert_eq!(u8::from_f64(-1.0), 255);
        assert!(bool::from_f64(f64::NAN));
        assert!(!bool::from_f64(0.0));
        assert_eq!(i8::from_i64(200), -56);
    }

    #[test]
    fn cast_through_types() {
        assert_eq!(cast::<f32, i32>(-3.9), -3);
        assert_eq!(cast::<i64, f16>(3), f16::from_f32(3.0));
        assert!(cast::<f32, bool>(0.5));
        assert_eq!(cast::<bool, f64>(true), 1.0);
    }
}
