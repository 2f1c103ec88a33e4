//! Complex tensors (`complex64`, `complex128`): which kernels may see them, the complex forms of
//! the elementwise ops that have them, and the ops that exist for complex numbers
//! (`view_as_real`, `view_as_complex`, `real`, `imag`, `conj`, `complex`, `polar`, `angle`).
//!
//! Kernels are written for real element types; a complex element read as a real number gives
//! its real part. So the interpreter asks [`admits`] before every kernel call with a complex
//! operand or result: an op runs on complex tensors only if its kernel moves elements without
//! reading them as numbers (views, copies, concatenation; the list below), was written for
//! complex numbers (this module, `fft.rs`), or has a complex form here ([`complex_form`]).
//! Every other op refuses complex tensors with an error naming the op and the dtype, never
//! computing on the real part.

use std::collections::HashSet;
use std::sync::OnceLock;

use dialect_aten::op;
use ir::DType;

use super::{Args, KernelFn, KernelRegistry, ret};
use crate::tensor::{C32, C64, Element, KernelError, Result, Scalar, Tensor, broadcast_all};
use crate::value::IValue;
use crate::dispatch_all_dtypes;

/// Ops whose kernels only move, copy or cast elements (casts follow PyTorch's complex rules in
/// `tensor::cast`), so complex tensors pass through them unchanged.
const MOVES_ELEMENTS: &[&str] = &[
    "aten.alias", "aten.alias_copy", "aten.as_strided", "aten.as_strided_copy", "aten.cat", "aten.chunk",
    "aten.clone", "aten.constant_pad_nd", "aten.contiguous", "aten.copy", "aten.copy_", "aten.detach",
    "aten.detach_copy", "aten.diagonal", "aten.diagonal_copy", "aten.empty.memory_format", "aten.empty_like",
    "aten.expand", "aten.expand_copy", "aten.flatten.using_ints", "aten.flip", "aten.full", "aten.full_like",
    "aten.index_select", "aten.lift_fresh_copy", "aten.movedim.int", "aten.narrow", "aten.new_empty",
    "aten.new_zeros", "aten.ones", "aten.ones_like", "aten.permute", "aten.permute_copy", "aten.repeat",
    "aten.reshape", "aten.roll", "aten.select.int", "aten.select_copy.int", "aten.slice.Tensor",
    "aten.slice_copy.Tensor", "aten.split.Tensor", "aten.split_with_sizes", "aten.split_with_sizes_copy",
    "aten.squeeze", "aten.squeeze.dim", "aten.squeeze.dims", "aten.squeeze_copy.dims", "aten.squeeze_copy.dim",
    "aten.stack", "aten.t", "aten.t_copy", "aten.transpose.int", "aten.transpose_copy.int", "aten.unbind.int",
    "aten.unflatten.int", "aten.unfold", "aten.unsqueeze", "aten.unsqueeze_copy", "aten.view",
    "aten.view_copy", "aten._unsafe_view", "aten.zeros", "aten.zeros_like", "aten._to_copy",
    "aten.to.dtype", "aten.type_as", "aten.resolve_neg", "aten.fill.Scalar", "aten.new_full",
    "aten.empty_strided", "aten.new_empty_strided",
];

/// Ops with kernels written for complex tensors (registered under their own names).
const COMPLEX_KERNELS: &[&str] = &[
    "aten.view_as_real", "aten.view_as_complex", "aten.view_as_real_copy", "aten.view_as_complex_copy",
    "aten.real", "aten.imag", "aten.conj", "aten._conj", "aten.resolve_conj", "aten.conj_physical",
    "aten.complex", "aten.polar", "aten.angle", "aten._fft_r2c", "aten._fft_c2r", "aten._fft_c2c",
    "aten.fft_fft", "aten.fft_ifft", "aten.fft_rfft", "aten.fft_irfft", "aten.fft_hfft", "aten.fft_ihfft",
    "aten.fft_fft2", "aten.fft_ifft2", "aten.fft_rfft2", "aten.fft_irfft2", "aten.fft_hfft2",
    "aten.fft_ihfft2", "aten.fft_fftn", "aten.fft_ifftn", "aten.fft_rfftn", "aten.fft_irfftn",
    "aten.fft_hfftn", "aten.fft_ihfftn", "aten.fft_fftshift", "aten.fft_ifftshift", "aten.stft",
    "aten.stft.center", "aten.istft", "aten.linalg_eigvals",
];

/// The complex forms of ops whose registered kernel is real-only: the interpreter calls these
/// instead when an operand or result is complex.
pub fn complex_form(op: &str) -> Option<KernelFn> {
    Some(match aten_name(op).as_ref() {
        "aten.add.Tensor" => k_add,
        "aten.sub.Tensor" => k_sub,
        "aten.mul.Tensor" => k_mul,
        "aten.div.Tensor" => k_div,
        "aten.add.Scalar" => k_add_scalar,
        "aten.sub.Scalar" => k_sub_scalar,
        "aten.mul.Scalar" => k_mul_scalar,
        "aten.div.Scalar" => k_div_scalar,
        "aten.neg" => k_neg,
        "aten.abs" => k_abs,
        _ => return None,
    })
}

/// Whether `op`'s registered kernel may run on complex tensors as it is.
pub fn admits(op: &str) -> bool {
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    let set = SET.get_or_init(|| MOVES_ELEMENTS.iter().chain(COMPLEX_KERNELS).copied().collect());
    // Structural ops (lists, tuples, constants) never read elements.
    set.contains(aten_name(op).as_ref()) || op.starts_with("prim.")
}

/// The ATen name of an op: Edge ops (`edge._to_copy`) mirror the ATen op of the same name.
fn aten_name(op: &str) -> std::borrow::Cow<'_, str> {
    match op.strip_prefix("edge.") {
        Some(rest) => format!("aten.{rest}").into(),
        None => op.into(),
    }
}

/// Whether a value of static type `ty` may hold a complex tensor or a complex dtype when the
/// program runs: a tensor whose dtype is complex or not known until then, or a list, optional
/// or tuple of one. Scalars, strings and devices never do.
pub fn may_be_complex(ty: &ir::Type) -> bool {
    use dialect_prim::kinds::{Kind, kind};
    match kind(ty) {
        Kind::Tensor(t) => t.dtype.is_none_or(|d| d.is_complex()),
        Kind::Int | Kind::Float | Kind::Bool | Kind::None | Kind::Str | Kind::Device | Kind::Function { .. } => false,
        Kind::Tuple(items) => items.iter().any(may_be_complex),
        Kind::List(e) | Kind::Optional(e) => may_be_complex(e),
        Kind::Any | Kind::Other => true,
    }
}

/// The complex dtype of the first complex tensor among `values`, if any.
pub fn first_complex(values: &[IValue]) -> Option<DType> {
    fn of(v: &IValue) -> Option<DType> {
        match v {
            IValue::Tensor(t) => t.dtype().is_complex().then(|| t.dtype()),
            IValue::TensorList(ts) => ts.iter().map(|t| t.dtype()).find(|d| d.is_complex()),
            IValue::OptionalTensorList(ts) => ts.iter().flatten().map(|t| t.dtype()).find(|d| d.is_complex()),
            IValue::ScalarType(d) => d.is_complex().then_some(*d),
            IValue::Tuple(vs) | IValue::List(vs) => vs.iter().find_map(of),
            _ => None,
        }
    }
    values.iter().find_map(of)
}

/// The error of an op that has no complex support.
pub fn refuse(op: &str, dtype: DType) -> KernelError {
    KernelError::new(op.to_string(), format!("{op} is not supported on {} tensors", dtype.torch_name()))
}

// ----- element access -----

/// The elements as `complex128` values (real tensors have zero imaginary parts), row-major.
pub(crate) fn to_c64(t: &Tensor) -> Result<Vec<C64>> {
    dispatch_all_dtypes!(t.dtype(), T => Ok(t.to_vec::<T>()?.into_iter().map(|v| {
        let (re, im) = v.to_complex();
        C64::new(re, im)
    }).collect()))
}

/// A contiguous complex tensor of `dtype` (`complex64` or `complex128`) from `complex128` values.
pub(crate) fn from_c64(data: Vec<C64>, sizes: &[usize], dtype: DType) -> Result<Tensor> {
    match dtype {
        DType::C128 => Tensor::from_vec(data, sizes),
        DType::C64 => Tensor::from_vec(data.into_iter().map(|v| C32::new(v.re as f32, v.im as f32)).collect::<Vec<_>>(), sizes),
        d => Err(KernelError::new("complex", format!("{} is not a complex dtype", d.torch_name()))),
    }
}

/// A contiguous real tensor of `dtype` from `f64` values.
pub(crate) fn from_f64(data: Vec<f64>, sizes: &[usize], dtype: DType) -> Result<Tensor> {
    Tensor::from_vec(data, sizes)?.cast_to(dtype)
}

fn require_complex(op: &str, t: &Tensor) -> Result<()> {
    if t.dtype().is_complex() {
        Ok(())
    } else {
        Err(KernelError::new(op.to_string(), format!("expected a complex tensor, got {}", t.dtype().torch_name())))
    }
}

/// The real view of a complex tensor's parts: sizes `[..., 2]`, strides doubled.
pub fn view_as_real(op: &str, t: &Tensor) -> Result<Tensor> {
    require_complex(op, t)?;
    let mut sizes = t.sizes().to_vec();
    sizes.push(2);
    let mut strides: Vec<usize> = t.strides().iter().map(|&s| s * 2).collect();
    strides.push(1);
    Tensor::from_storage(t.storage().clone(), t.dtype().to_real(), &sizes, &strides, t.offset() * 2)
}

/// One part (0: real, 1: imaginary) of a complex tensor, as a view.
fn part(op: &str, t: &Tensor, which: usize) -> Result<Tensor> {
    require_complex(op, t)?;
    let strides: Vec<usize> = t.strides().iter().map(|&s| s * 2).collect();
    Tensor::from_storage(t.storage().clone(), t.dtype().to_real(), t.sizes(), &strides, t.offset() * 2 + which)
}

fn k_view_as_real(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new(op::VIEW_AS_REAL, args, 1)?.tensor(0)?;
    if !t.dtype().is_complex() {
        return Err(KernelError::new(op::VIEW_AS_REAL.name(), "view_as_real is only supported for complex tensors"));
    }
    ret(view_as_real(op::VIEW_AS_REAL.name(), t)?)
}

fn k_view_as_real_copy(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new(op::VIEW_AS_REAL_COPY, args, 1)?.tensor(0)?;
    ret(view_as_real(op::VIEW_AS_REAL_COPY.name(), t)?.deep_clone()?)
}

/// The complex view of a real tensor whose last dim holds (real, imaginary) pairs.
pub fn view_as_complex(name: &str, t: &Tensor) -> Result<Tensor> {
    let err = |m: &str| Err(KernelError::new(name.to_string(), m.to_string()));
    let Some(c) = t.dtype().to_complex().filter(|_| t.dtype().is_floating()) else {
        return Err(KernelError::new(
            name.to_string(),
            format!("view_as_complex is only supported for float and double tensors, but got a tensor of scalar type: {}", t.dtype().torch_name()),
        ));
    };
    if t.dim() == 0 {
        return err("Input tensor must have one or more dimensions");
    }
    let n = t.dim();
    if t.sizes()[n - 1] != 2 {
        return err("Tensor must have a last dimension of size 2");
    }
    if t.strides()[n - 1] != 1 {
        return err("Tensor must have a last dimension with stride 1");
    }
    if t.strides()[..n - 1].iter().zip(t.sizes()).any(|(&s, &z)| s % 2 != 0 && z != 1) {
        return err("Tensor must have a stride divisible by 2 for all but last dimension");
    }
    if t.offset() % 2 != 0 {
        return err("Tensor must have a storage_offset divisible by 2");
    }
    let strides: Vec<usize> = t.strides()[..n - 1].iter().map(|&s| s / 2).collect();
    Tensor::from_storage(t.storage().clone(), c, &t.sizes()[..n - 1], &strides, t.offset() / 2)
}

fn k_view_as_complex(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new(op::VIEW_AS_COMPLEX, args, 1)?.tensor(0)?;
    ret(view_as_complex(op::VIEW_AS_COMPLEX.name(), t)?)
}

fn k_view_as_complex_copy(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new(op::VIEW_AS_COMPLEX_COPY, args, 1)?.tensor(0)?;
    ret(view_as_complex(op::VIEW_AS_COMPLEX_COPY.name(), t)?.deep_clone()?)
}

fn k_real(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new(op::REAL, args, 1)?.tensor(0)?;
    if !t.dtype().is_complex() {
        return ret(t.alias());
    }
    ret(part(op::REAL.name(), t, 0)?)
}

fn k_imag(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new(op::IMAG, args, 1)?.tensor(0)?;
    if !t.dtype().is_complex() {
        return Err(KernelError::new(op::IMAG.name(), "imag is not implemented for tensors with non-complex dtypes."));
    }
    ret(part(op::IMAG.name(), t, 1)?)
}

/// The complex conjugate, materialized (PyTorch's lazy conjugate bit is not kept: a graph reads
/// the same values either way).
pub(crate) fn conj(t: &Tensor) -> Result<Tensor> {
    if !t.dtype().is_complex() {
        return Ok(t.clone());
    }
    let v: Vec<C64> = to_c64(t)?.into_iter().map(|z| z.conj()).collect();
    from_c64(v, t.sizes(), t.dtype())
}

fn k_conj(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new(op::CONJ, args, 1)?.tensor(0)?;
    ret(conj(t)?)
}

fn k_resolve_conj(args: &[IValue]) -> Result<Vec<IValue>> {
    // Conjugates are always materialized, so nothing is left to resolve.
    let t = Args::new(op::RESOLVE_CONJ, args, 1)?.tensor(0)?;
    ret(t.alias())
}

fn k_conj_physical(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new(op::CONJ_PHYSICAL, args, 1)?.tensor(0)?;
    ret(if t.dtype().is_complex() { conj(t)? } else { t.deep_clone()? })
}

/// `complex(real, imag)` and `polar(abs, angle)`: two real tensors of one float dtype,
/// broadcast, to the complex tensor `f(a, b)`.
fn from_parts(name: &'static str, a: &Tensor, b: &Tensor, f: impl Fn(f64, f64) -> C64) -> Result<Tensor> {
    if a.dtype() != b.dtype() {
        return Err(KernelError::new(
            name,
            format!("Expected object of scalar type {} but got scalar type {} for second argument", a.dtype().torch_name(), b.dtype().torch_name()),
        ));
    }
    let Some(c) = a.dtype().to_complex().filter(|_| a.dtype().is_floating()) else {
        return Err(KernelError::new(
            name,
            format!("Expected both inputs to be Float or Double tensors but got {} and {}", a.dtype().torch_name(), b.dtype().torch_name()),
        ));
    };
    let sizes = broadcast_all(&[a.sizes(), b.sizes()]).map_err(|e| e.in_op(name))?;
    let av = a.expand_to(name, &sizes)?.to_vec_f64();
    let bv = b.expand_to(name, &sizes)?.to_vec_f64();
    from_c64(av.into_iter().zip(bv).map(|(x, y)| f(x, y)).collect(), &sizes, c)
}

fn k_complex(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::COMPLEX, args, 2)?;
    ret(from_parts(op::COMPLEX.name(), a.tensor(0)?, a.tensor(1)?, C64::new)?)
}

fn k_polar(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::POLAR, args, 2)?;
    ret(from_parts(op::POLAR.name(), a.tensor(0)?, a.tensor(1)?, |r, t| C64::new(r * t.cos(), r * t.sin()))?)
}

/// `angle`: the argument of complex numbers (a real tensor of the parts' dtype); for real
/// numbers `0` or `π` (NaN stays NaN), integers giving `float32`.
fn k_angle(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new(op::ANGLE, args, 1)?.tensor(0)?;
    let d = t.dtype();
    if d.is_complex() {
        let v = to_c64(t)?.into_iter().map(|z| z.im.atan2(z.re)).collect();
        return ret(from_f64(v, t.sizes(), d.to_real())?);
    }
    let out = if d.is_floating() { d } else { DType::F32 };
    let v = t.to_vec_f64().into_iter().map(|x| if x.is_nan() { x } else if x < 0.0 { std::f64::consts::PI } else { 0.0 }).collect();
    ret(from_f64(v, t.sizes(), out)?)
}

// ----- complex forms of elementwise ops -----

fn k_abs(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new(op::ABS, args, 1)?.tensor(0)?;
    require_complex(op::ABS.name(), t)?;
    let v = to_c64(t)?.into_iter().map(|z| z.re.hypot(z.im)).collect();
    ret(from_f64(v, t.sizes(), t.dtype().to_real())?)
}

fn k_neg(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = Args::new(op::NEG, args, 1)?.tensor(0)?;
    require_complex(op::NEG.name(), t)?;
    let v = to_c64(t)?.into_iter().map(|z| -z).collect();
    ret(from_c64(v, t.sizes(), t.dtype())?)
}

/// The result dtype of a binary op on tensors `a` and `b` where one is complex, with PyTorch's
/// rule that a 0-d tensor only decides the dtype when its category is higher.
fn binary_dtype(a: &Tensor, b: &Tensor) -> DType {
    let (da, db) = (a.dtype(), b.dtype());
    let lift = |d: DType, by: DType| -> DType {
        // A dim-ful tensor of a lower category meets a complex 0-d tensor: the complex type of
        // the dim-ful one's floating dtype, else the 0-d one's dtype.
        if d.is_floating() { d.to_complex().unwrap_or(by) } else { by }
    };
    match (a.dim() == 0, b.dim() == 0) {
        (true, false) if da.category() <= db.category() => db,
        (true, false) => lift(db, da),
        (false, true) if db.category() <= da.category() => da,
        (false, true) => lift(da, db),
        _ => DType::promote(da, db),
    }
}

fn binary(name: &'static str, a: &Tensor, b: &Tensor, f: impl Fn(C64, C64) -> C64) -> Result<Tensor> {
    let dt = binary_dtype(a, b);
    if !dt.is_complex() {
        return Err(refuse(name, dt));
    }
    let sizes = broadcast_all(&[a.sizes(), b.sizes()]).map_err(|e| e.in_op(name))?;
    let av = to_c64(&a.expand_to(name, &sizes)?)?;
    let bv = to_c64(&b.expand_to(name, &sizes)?)?;
    let out: Vec<C64> = av.into_iter().zip(bv).map(|(x, y)| f(x, y)).collect();
    from_c64(out, &sizes, dt)
}

/// The `alpha` of `add`/`sub` (a real scalar).
fn alpha(a: &Args<'_>, i: usize) -> Result<f64> {
    Ok(a.opt_scalar(i)?.map_or(1.0, Scalar::to_f64))
}

fn k_add(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::ADD_TENSOR, args, 2)?;
    let k = alpha(&a, 2)?;
    ret(binary(op::ADD_TENSOR.name(), a.tensor(0)?, a.tensor(1)?, |x, y| x + y * k)?)
}

fn k_sub(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::SUB_TENSOR, args, 2)?;
    let k = alpha(&a, 2)?;
    ret(binary(op::SUB_TENSOR.name(), a.tensor(0)?, a.tensor(1)?, |x, y| x - y * k)?)
}

fn k_mul(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::MUL_TENSOR, args, 2)?;
    ret(binary(op::MUL_TENSOR.name(), a.tensor(0)?, a.tensor(1)?, |x, y| x * y)?)
}

/// Complex division scaled by the larger part of the divisor (Smith's method, as PyTorch's
/// `c10::complex` divides), so that large divisors do not overflow.
fn cdiv(x: C64, y: C64) -> C64 {
    if y.re.abs() >= y.im.abs() {
        if y.re == 0.0 && y.im == 0.0 {
            return C64::new(x.re / y.re.abs(), x.im / y.re.abs());
        }
        let r = y.im / y.re;
        let d = y.re + y.im * r;
        C64::new((x.re + x.im * r) / d, (x.im - x.re * r) / d)
    } else {
        let r = y.re / y.im;
        let d = y.im + y.re * r;
        C64::new((x.re * r + x.im) / d, (x.im * r - x.re) / d)
    }
}

fn k_div(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::DIV_TENSOR, args, 2)?;
    ret(binary(op::DIV_TENSOR.name(), a.tensor(0)?, a.tensor(1)?, cdiv)?)
}

fn scalar_op(name: &'static str, a: &Args<'_>, f: impl Fn(C64, f64) -> C64) -> Result<Vec<IValue>> {
    let t = a.tensor(0)?;
    require_complex(name, t)?;
    let s = a.scalar(1)?.to_f64();
    let v = to_c64(t)?.into_iter().map(|z| f(z, s)).collect();
    ret(from_c64(v, t.sizes(), t.dtype())?)
}

fn k_add_scalar(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::ADD_SCALAR, args, 2)?;
    let k = alpha(&a, 2)?;
    scalar_op(op::ADD_SCALAR.name(), &a, |z, s| z + s * k)
}

fn k_sub_scalar(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::SUB_SCALAR, args, 2)?;
    let k = alpha(&a, 2)?;
    scalar_op(op::SUB_SCALAR.name(), &a, |z, s| z - s * k)
}

fn k_mul_scalar(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::MUL_SCALAR, args, 2)?;
    scalar_op(op::MUL_SCALAR.name(), &a, |z, s| z * s)
}

fn k_div_scalar(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::DIV_SCALAR, args, 2)?;
    scalar_op(op::DIV_SCALAR.name(), &a, |z, s| cdiv(z, C64::new(s, 0.0)))
}

pub fn register(r: &mut KernelRegistry) {
    r.register(op::VIEW_AS_REAL, k_view_as_real);
    r.register(op::VIEW_AS_REAL_COPY, k_view_as_real_copy);
    r.register(op::VIEW_AS_COMPLEX, k_view_as_complex);
    r.register(op::VIEW_AS_COMPLEX_COPY, k_view_as_complex_copy);
    r.register(op::REAL, k_real);
    r.register(op::IMAG, k_imag);
    r.register(op::CONJ, k_conj);
    r.register(op::_CONJ, k_conj);
    r.register(op::RESOLVE_CONJ, k_resolve_conj);
    r.register(op::CONJ_PHYSICAL, k_conj_physical);
    r.register(op::COMPLEX, k_complex);
    r.register(op::POLAR, k_polar);
    r.register(op::ANGLE, k_angle);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_as_real_aliases_and_round_trips() {
        let z = from_c64(vec![C64::new(1.0, 2.0), C64::new(3.0, -4.0)], &[2], DType::C64).unwrap();
        let r = view_as_real("t", &z).unwrap();
        assert_eq!(r.sizes(), &[2, 2]);
        assert_eq!(r.to_vec_f64(), vec![1.0, 2.0, 3.0, -4.0]);
        let back = view_as_complex("t", &r).unwrap();
        assert!(back.shares_storage(&z));
        assert_eq!(to_c64(&back).unwrap(), vec![C64::new(1.0, 2.0), C64::new(3.0, -4.0)]);
    }

    #[test]
    fn casts_keep_parts_and_take_the_real_part() {
        let z = from_c64(vec![C64::new(1.5, 2.0)], &[1], DType::C128).unwrap();
        assert_eq!(z.to_dtype(DType::F32).unwrap().to_vec_f64(), vec![1.5]);
        let w = z.to_dtype(DType::C64).unwrap();
        assert_eq!(to_c64(&w).unwrap(), vec![C64::new(1.5, 2.0)]);
        let x = Tensor::from_vec(vec![3i64], &[1]).unwrap().to_dtype(DType::C64).unwrap();
        assert_eq!(to_c64(&x).unwrap(), vec![C64::new(3.0, 0.0)]);
    }

    #[test]
    fn only_listed_ops_admit_complex() {
        assert!(admits("aten.view") && admits("aten._fft_c2c") && admits("prim.ListConstruct"));
        assert!(!admits("aten.exp") && !admits("aten.sum.dim_IntList"));
        assert!(complex_form("aten.mul.Tensor").is_some() && complex_form("aten.exp").is_none());
    }
}
