//! Scalar functions the generated code calls by address: f64 transcendentals and the float
//! operations without an inline expansion. Each computes exactly what the runtime's reference
//! kernel computes for one element, so these paths agree with the interpreter bit for bit.

use runtime::kernels::binary as bin;
use runtime::kernels::elementwise::{BinaryFn, FloatFn};
use runtime::kernels::unary as u;

use crate::group::LibFn;

macro_rules! shim1 {
    ($($name:ident: $t:ty => |$x:ident| $e:expr;)*) => {$(
        pub(crate) extern "C" fn $name($x: $t) -> $t {
            $e
        }
    )*};
}

shim1! {
    exp_f64: f64 => |x| u::Exp.f64(x);
    log_f64: f64 => |x| u::Log.f64(x);
    tanh_f64: f64 => |x| u::Tanh.f64(x);
    sigmoid_f64: f64 => |x| u::Sigmoid.f64(x);
    erf_f64: f64 => |x| u::Erf.f64(x);
    sin_f64: f64 => |x| u::Sin.f64(x);
    cos_f64: f64 => |x| u::Cos.f64(x);
    silu_f64: f64 => |x| x / (1.0 + (-x).exp());
    gelu_erf_f64: f64 => |x| 0.5 * x * (1.0 + libm::erf(x * std::f64::consts::FRAC_1_SQRT_2));
    gelu_tanh_f64: f64 => |x| {
        let k = (2.0 / std::f64::consts::PI).sqrt();
        0.5 * x * (1.0 + (k * (x + 0.044715 * x * x * x)).tanh())
    };
    sin_f32: f32 => |x| u::Sin.f32(x);
    cos_f32: f32 => |x| u::Cos.f32(x);
}

macro_rules! shim2 {
    ($($name:ident: $t:ty => |$a:ident, $b:ident| $e:expr;)*) => {$(
        pub(crate) extern "C" fn $name($a: $t, $b: $t) -> $t {
            $e
        }
    )*};
}

shim2! {
    pow_f32: f32 => |a, b| a.powf(b);
    pow_f64: f64 => |a, b| a.powf(b);
    fmod_f32: f32 => |a, b| a % b;
    fmod_f64: f64 => |a, b| a % b;
    rem_f32: f32 => |a, b| bin::Remainder.f32(a, b);
    rem_f64: f64 => |a, b| bin::Remainder.f64(a, b);
    floor_div_f32: f32 => |a, b| bin::FloorDiv.f32(a, b);
    floor_div_f64: f64 => |a, b| bin::FloorDiv.f64(a, b);
}

/// The f32 and f64 versions of a library function.
pub(crate) fn lib_fn(f: LibFn) -> (extern "C" fn(f32) -> f32, extern "C" fn(f64) -> f64) {
    macro_rules! pick {
        ($($v:ident => $ty:ident),*) => {
            match f {
                $(LibFn::$v => {
                    extern "C" fn a(x: f32) -> f32 { u::$ty.f32(x) }
                    extern "C" fn b(x: f64) -> f64 { u::$ty.f64(x) }
                    (a, b)
                })*
            }
        };
    }
    pick!(Exp2 => Exp2, Expm1 => Expm1, Log2 => Log2, Log10 => Log10, Log1p => Log1p, Tan => Tan, Asin => Asin,
        Acos => Acos, Atan => Atan, Sinh => Sinh, Cosh => Cosh, Asinh => Asinh, Acosh => Acosh, Atanh => Atanh,
        Erfc => Erfc)
}
