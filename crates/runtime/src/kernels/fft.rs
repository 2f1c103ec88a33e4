//! Discrete Fourier transforms: ATen's three transform kernels (`_fft_c2c`, `_fft_r2c`,
//! `_fft_c2r`), the `fft_*` ops of `torch.fft` over them with PyTorch's argument rules (signal
//! sizes `n`/`s` that crop or zero-pad, `dim`, the `norm` modes), `fftshift`/`ifftshift`, and
//! the short-time transforms `stft` and `istft`.
//!
//! One-dimensional transforms of any length come from `rustfft` (mixed-radix, Rader and
//! Bluestein plans), run along each transformed dim of a contiguous `complex128` buffer;
//! `complex64` results are rounded from it.

use dialect_aten::op;
use ir::DType;
use rustfft::FftPlanner;

use super::complex::{conj, from_c64, from_f64, to_c64};
use super::{Args, KernelRegistry, ret};
use crate::tensor::{C64, KernelError, Result, Tensor, normalize_dim};
use crate::value::IValue;

/// ATen's `fft_norm_mode`: no scaling, `1/sqrt(n)`, `1/n`.
const NORM_NONE: i64 = 0;
const NORM_ROOT_N: i64 = 1;
const NORM_N: i64 = 2;

fn scale(op: &str, norm: i64, n: usize) -> Result<f64> {
    match norm {
        NORM_NONE => Ok(1.0),
        NORM_ROOT_N => Ok(1.0 / (n as f64).sqrt()),
        NORM_N => Ok(1.0 / n as f64),
        other => Err(KernelError::new(op.to_string(), format!("invalid normalization mode {other}"))),
    }
}

/// Transforms the contiguous `data` of shape `sizes` along each of `dims` (unnormalized;
/// `forward` uses `exp(-2πi·jk/n)`, backward `exp(+2πi·jk/n)`).
fn transform(data: &mut [C64], sizes: &[usize], dims: &[usize], forward: bool) {
    if data.is_empty() {
        return;
    }
    let mut planner = FftPlanner::<f64>::new();
    for &d in dims {
        let n = sizes[d];
        if n <= 1 {
            continue;
        }
        let fft = if forward { planner.plan_fft_forward(n) } else { planner.plan_fft_inverse(n) };
        let inner: usize = sizes[d + 1..].iter().product();
        let outer: usize = sizes[..d].iter().product();
        let mut line = vec![C64::default(); n];
        let mut scratch = vec![C64::default(); fft.get_inplace_scratch_len()];
        for o in 0..outer {
            for i in 0..inner {
                let base = o * n * inner + i;
                for (k, l) in line.iter_mut().enumerate() {
                    *l = data[base + k * inner];
                }
                fft.process_with_scratch(&mut line, &mut scratch);
                for (k, l) in line.iter().enumerate() {
                    data[base + k * inner] = *l;
                }
            }
        }
    }
}

/// Normalized, distinct dims.
fn dims_of(op: &str, dims: &[i64], ndim: usize) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(dims.len());
    for &d in dims {
        let d = normalize_dim(op, d, ndim)?;
        if out.contains(&d) {
            return Err(KernelError::new(op.to_string(), "FFT dims must be unique"));
        }
        out.push(d);
    }
    Ok(out)
}

fn require_float(op: &str, t: &Tensor) -> Result<()> {
    if matches!(t.dtype(), DType::F32 | DType::F64) {
        Ok(())
    } else {
        Err(KernelError::new(op.to_string(), format!("expected a float32 or float64 tensor, got {}", t.dtype().torch_name())))
    }
}

fn require_complex(op: &str, t: &Tensor) -> Result<()> {
    if t.dtype().is_complex() {
        Ok(())
    } else {
        Err(KernelError::new(op.to_string(), format!("expected a complex tensor, got {}", t.dtype().torch_name())))
    }
}

fn scaled(mut data: Vec<C64>, s: f64) -> Vec<C64> {
    if s != 1.0 {
        data.iter_mut().for_each(|z| *z *= s);
    }
    data
}

/// `_fft_c2c`: complex to complex over `dims`.
pub(crate) fn c2c(name: &str, t: &Tensor, dims: &[usize], norm: i64, forward: bool) -> Result<Tensor> {
    require_complex(name, t)?;
    let sizes = t.sizes().to_vec();
    let mut data = to_c64(t)?;
    transform(&mut data, &sizes, dims, forward);
    let n = dims.iter().map(|&d| sizes[d]).product();
    from_c64(scaled(data, scale(name, norm, n)?), &sizes, t.dtype())
}

/// `_fft_r2c`: real to complex over `dims`, keeping `n/2 + 1` entries of the last of them when
/// `onesided`.
pub(crate) fn r2c(name: &str, t: &Tensor, dims: &[usize], norm: i64, onesided: bool) -> Result<Tensor> {
    require_float(name, t)?;
    let sizes = t.sizes().to_vec();
    let mut data = to_c64(t)?;
    transform(&mut data, &sizes, dims, true);
    let n = dims.iter().map(|&d| sizes[d]).product();
    let out = from_c64(scaled(data, scale(name, norm, n)?), &sizes, t.dtype().to_complex().unwrap_or(DType::C64))?;
    match dims.last() {
        Some(&last) if onesided => Ok(out.narrow(last as i64, 0, sizes[last] / 2 + 1)?.contiguous()?),
        _ => Ok(out),
    }
}

/// `_fft_c2r`: the inverse of a one-sided transform; the last of `dims` grows to
/// `last_dim_size` real outputs from its first `last_dim_size/2 + 1` entries (Hermitian
/// symmetry supplies the rest; the imaginary parts of the self-conjugate entries are ignored).
pub(crate) fn c2r(name: &str, t: &Tensor, dims: &[usize], norm: i64, last_dim_size: usize) -> Result<Tensor> {
    require_complex(name, t)?;
    let Some(&last) = dims.last() else {
        return Err(KernelError::new(name.to_string(), "expected at least one dim to transform"));
    };
    if last_dim_size == 0 {
        return Err(KernelError::new(name.to_string(), "Invalid number of data points (0) specified"));
    }
    let in_sizes = t.sizes().to_vec();
    let mut sizes = in_sizes.clone();
    sizes[last] = last_dim_size;
    // The other dims first: then each line along the last dim is the one-sided spectrum of a
    // real signal, which Hermitian symmetry completes line by line.
    let mut src = to_c64(t)?;
    transform(&mut src, &in_sizes, &dims[..dims.len() - 1], false);
    let numel: usize = sizes.iter().product();
    let mut data = vec![C64::default(); numel];
    let (m, l) = (in_sizes[last], last_dim_size);
    let inner: usize = sizes[last + 1..].iter().product();
    let outer: usize = sizes[..last].iter().product();
    let half = l / 2 + 1;
    for o in 0..outer {
        for i in 0..inner {
            let at_in = |k: usize| src[o * m * inner + k * inner + i];
            let base = o * l * inner + i;
            for k in 0..half.min(m) {
                let mut z = at_in(k);
                if k == 0 || 2 * k == l {
                    z.im = 0.0;
                }
                data[base + k * inner] = z;
                if k > 0 && l - k != k {
                    data[base + (l - k) * inner] = z.conj();
                }
            }
        }
    }
    transform(&mut data, &sizes, &[last], false);
    let n = dims.iter().map(|&d| sizes[d]).product();
    let s = scale(name, norm, n)?;
    from_f64(data.into_iter().map(|z| z.re * s).collect(), &sizes, t.dtype().to_real())
}

fn k_fft_c2c(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::_FFT_C2C, args, 4)?;
    let t = a.tensor(0)?;
    let dims = dims_of(a.op, &a.int_list(1)?, t.dim())?;
    ret(c2c(a.op, t, &dims, a.int(2)?, a.bool(3)?)?)
}

fn k_fft_r2c(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::_FFT_R2C, args, 4)?;
    let t = a.tensor(0)?;
    let dims = dims_of(a.op, &a.int_list(1)?, t.dim())?;
    ret(r2c(a.op, t, &dims, a.int(2)?, a.bool(3)?)?)
}

fn k_fft_c2r(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::_FFT_C2R, args, 4)?;
    let t = a.tensor(0)?;
    let dims = dims_of(a.op, &a.int_list(1)?, t.dim())?;
    let n = a.int(3)?;
    if n < 1 {
        return Err(KernelError::new(a.op, format!("Invalid number of data points ({n}) specified")));
    }
    ret(c2r(a.op, t, &dims, a.int(2)?, n as usize)?)
}

// ----- torch.fft -----

/// The normalization code of a `norm` argument for a transform in direction `forward`.
fn norm_code(op: &str, norm: Option<&str>, forward: bool) -> Result<i64> {
    Ok(match norm {
        None | Some("backward") => {
            if forward { NORM_NONE } else { NORM_N }
        }
        Some("forward") => {
            if forward { NORM_N } else { NORM_NONE }
        }
        Some("ortho") => NORM_ROOT_N,
        Some(other) => return Err(KernelError::new(op.to_string(), format!("Invalid normalization mode: \"{other}\""))),
    })
}

/// PyTorch's dtype rules for transform inputs: integers and bool become `float32`; half
/// precision has no CPU transform; `complex` asks for a complex input (real ones are lifted).
fn promote(op: &str, t: &Tensor, complex: bool) -> Result<Tensor> {
    let t = match t.dtype() {
        DType::F16 | DType::BF16 => {
            return Err(KernelError::new(op.to_string(), format!("Unsupported dtype {}", t.dtype().torch_name())));
        }
        d if d.is_floating() || d.is_complex() => t.clone(),
        _ => t.to_dtype(DType::F32)?,
    };
    match t.dtype().to_complex() {
        Some(c) if complex && !t.dtype().is_complex() => t.to_dtype(c),
        _ => Ok(t),
    }
}

/// `t` cropped or zero-padded at the end of each of `dims` to `sizes`.
fn resize(t: &Tensor, dims: &[usize], sizes: &[usize]) -> Result<Tensor> {
    if dims.iter().zip(sizes).all(|(&d, &s)| t.sizes()[d] == s) {
        return Ok(t.clone());
    }
    let mut shape = t.sizes().to_vec();
    for (&d, &s) in dims.iter().zip(sizes) {
        shape[d] = s;
    }
    let out = Tensor::zeros(t.dtype(), &shape)?;
    let (mut src, mut dst) = (t.clone(), out.clone());
    for (&d, &s) in dims.iter().zip(sizes) {
        let keep = s.min(t.sizes()[d]);
        src = src.narrow(d as i64, 0, keep)?;
        dst = dst.narrow(d as i64, 0, keep)?;
    }
    dst.copy_(&src)?;
    Ok(out)
}

fn points(op: &str, n: i64) -> Result<usize> {
    if n < 1 {
        return Err(KernelError::new(op.to_string(), format!("Invalid number of data points ({n}) specified")));
    }
    Ok(n as usize)
}

/// The dims and signal sizes of an n-dimensional transform from `s` and `dim` (either may be
/// absent), as `torch.fft` resolves them.
fn dims_and_shape(op: &str, t: &Tensor, s: Option<Vec<i64>>, dim: Option<Vec<i64>>) -> Result<(Vec<usize>, Vec<Option<i64>>)> {
    let nd = t.dim();
    let dims = match (&s, dim) {
        (_, Some(d)) => {
            let dims = dims_of(op, &d, nd)?;
            if let Some(s) = &s
                && s.len() != dims.len()
            {
                return Err(KernelError::new(
                    op.to_string(),
                    format!("When given, dim and shape arguments must have the same length (got {} and {})", dims.len(), s.len()),
                ));
            }
            dims
        }
        (Some(s), None) => {
            if s.len() > nd {
                return Err(KernelError::new(
                    op.to_string(),
                    format!("Got shape with {} values but input tensor only has {nd} dimensions.", s.len()),
                ));
            }
            (nd - s.len()..nd).collect()
        }
        (None, None) => (0..nd).collect(),
    };
    let shape = match s {
        Some(s) => s.into_iter().map(|v| (v != -1).then_some(v)).collect(),
        None => vec![None; dims.len()],
    };
    Ok((dims, shape))
}

/// Signal sizes: the given ones, else the input's sizes.
fn full_shape(op: &str, t: &Tensor, dims: &[usize], shape: &[Option<i64>]) -> Result<Vec<usize>> {
    dims.iter().zip(shape).map(|(&d, s)| points(op, s.unwrap_or(t.sizes()[d] as i64))).collect()
}

/// How a `torch.fft` op transforms.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// `fft`/`ifft`: complex (or lifted real) to complex.
    Full { forward: bool },
    /// `rfft`: real to one-sided complex.
    Real,
    /// `irfft`: one-sided complex to real.
    InverseReal,
    /// `hfft`: one-sided Hermitian complex to real, forward.
    Hermitian,
    /// `ihfft`: real to one-sided complex, backward.
    InverseHermitian,
}

fn run(op: &str, kind: Kind, x: &Tensor, dims: Vec<usize>, shape: Vec<Option<i64>>, norm: Option<&str>) -> Result<Tensor> {
    match kind {
        Kind::Full { forward } => {
            let x = promote(op, x, true)?;
            let sizes = full_shape(op, &x, &dims, &shape)?;
            c2c(op, &resize(&x, &dims, &sizes)?, &dims, norm_code(op, norm, forward)?, forward)
        }
        Kind::Real | Kind::InverseHermitian => {
            if x.dtype().is_complex() {
                let what = if kind == Kind::Real { "rfft" } else { "ihfft" };
                return Err(KernelError::new(
                    op.to_string(),
                    format!("{what} expects a real input tensor, but got {}", x.dtype().torch_name()),
                ));
            }
            let x = promote(op, x, false)?;
            let sizes = full_shape(op, &x, &dims, &shape)?;
            let x = resize(&x, &dims, &sizes)?;
            if kind == Kind::Real {
                r2c(op, &x, &dims, norm_code(op, norm, true)?, true)
            } else {
                conj(&r2c(op, &x, &dims, norm_code(op, norm, false)?, true)?)
            }
        }
        Kind::InverseReal | Kind::Hermitian => {
            let x = promote(op, x, true)?;
            let Some((&last, _)) = dims.split_last() else {
                return Err(KernelError::new(op.to_string(), "expected at least one dim to transform"));
            };
            let k = dims.len() - 1;
            let mut sizes = full_shape(op, &x, &dims[..k], &shape[..k])?;
            let last_size = points(op, shape[k].unwrap_or(2 * (x.sizes()[last] as i64 - 1)))?;
            sizes.push(last_size / 2 + 1);
            let x = resize(&x, &dims, &sizes)?;
            if kind == Kind::InverseReal {
                c2r(op, &x, &dims, norm_code(op, norm, false)?, last_size)
            } else {
                c2r(op, &conj(&x)?, &dims, norm_code(op, norm, true)?, last_size)
            }
        }
    }
}

/// `fft_fft(self, n, dim, norm)` and its one-dimensional kin.
fn one_dim(name: &'static str, kind: Kind, args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(name, args, 1)?;
    let x = a.tensor(0)?;
    let n = a.opt_int(1)?;
    let dim = a.opt_int(2)?.unwrap_or(-1);
    let norm = a.opt_str(3)?;
    if x.dim() == 0 {
        return Err(KernelError::new(name, format!("Dimension specified as {dim} but tensor has no dimensions")));
    }
    let d = normalize_dim(name, dim, x.dim())?;
    ret(run(name, kind, x, vec![d], vec![n], norm)?)
}

/// `fft_fftn(self, s, dim, norm)` and its kin; the `2` forms pass `dim = [-2, -1]`.
fn n_dim(name: &'static str, kind: Kind, args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(name, args, 1)?;
    let x = a.tensor(0)?;
    let s = a.opt_int_list(1)?;
    let dim = a.opt_int_list(2)?;
    let norm = a.opt_str(3)?;
    let (dims, shape) = dims_and_shape(name, x, s, dim)?;
    if dims.is_empty() && kind != (Kind::Full { forward: true }) && kind != (Kind::Full { forward: false }) {
        return Err(KernelError::new(name, "must transform at least one axis"));
    }
    ret(run(name, kind, x, dims, shape, norm)?)
}

macro_rules! fft_kernels {
    ($($f:ident = $form:ident($op:expr, $kind:expr);)*) => {
        $(fn $f(args: &[IValue]) -> Result<Vec<IValue>> {
            $form($op.name(), $kind, args)
        })*
        const FFT_TABLE: &[(ir::OpRef, super::KernelFn)] = &[$(($op, $f)),*];
    };
}

fft_kernels! {
    k_fft = one_dim(op::FFT_FFT, Kind::Full { forward: true });
    k_ifft = one_dim(op::FFT_IFFT, Kind::Full { forward: false });
    k_rfft = one_dim(op::FFT_RFFT, Kind::Real);
    k_irfft = one_dim(op::FFT_IRFFT, Kind::InverseReal);
    k_hfft = one_dim(op::FFT_HFFT, Kind::Hermitian);
    k_ihfft = one_dim(op::FFT_IHFFT, Kind::InverseHermitian);
    k_fft2 = n_dim(op::FFT_FFT2, Kind::Full { forward: true });
    k_ifft2 = n_dim(op::FFT_IFFT2, Kind::Full { forward: false });
    k_rfft2 = n_dim(op::FFT_RFFT2, Kind::Real);
    k_irfft2 = n_dim(op::FFT_IRFFT2, Kind::InverseReal);
    k_hfft2 = n_dim(op::FFT_HFFT2, Kind::Hermitian);
    k_ihfft2 = n_dim(op::FFT_IHFFT2, Kind::InverseHermitian);
    k_fftn = n_dim(op::FFT_FFTN, Kind::Full { forward: true });
    k_ifftn = n_dim(op::FFT_IFFTN, Kind::Full { forward: false });
    k_rfftn = n_dim(op::FFT_RFFTN, Kind::Real);
    k_irfftn = n_dim(op::FFT_IRFFTN, Kind::InverseReal);
    k_hfftn = n_dim(op::FFT_HFFTN, Kind::Hermitian);
    k_ihfftn = n_dim(op::FFT_IHFFTN, Kind::InverseHermitian);
}

/// `fftshift` (`inverse`: `ifftshift`): a roll by half of each dim's size (all dims by default).
fn shift(name: &'static str, inverse: bool, args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(name, args, 1)?;
    let x = a.tensor(0)?;
    let dims = match a.opt_int_list(1)? {
        Some(d) => d.iter().map(|&d| normalize_dim(name, d, x.dim())).collect::<Result<Vec<_>>>()?,
        None => (0..x.dim()).collect(),
    };
    if dims.is_empty() {
        return ret(x.deep_clone()?);
    }
    let shifts: Vec<i64> = dims.iter().map(|&d| {
        let n = x.sizes()[d] as i64;
        if inverse { (n + 1) / 2 } else { n / 2 }
    }).collect();
    let dims: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
    super::registry()
        .call(op::ROLL.name(), &[IValue::Tensor(x.clone()), IValue::IntList(shifts), IValue::IntList(dims)])
        .map_err(|e| e.in_op(name))
}

fn k_fftshift(args: &[IValue]) -> Result<Vec<IValue>> {
    shift(op::FFT_FFTSHIFT.name(), false, args)
}

fn k_ifftshift(args: &[IValue]) -> Result<Vec<IValue>> {
    shift(op::FFT_IFFTSHIFT.name(), true, args)
}

// ----- short-time transforms -----

/// `window` (`win_length` long, or a window of ones) centred in `n_fft` zeros, as `f64`.
fn padded_window(op: &str, window: Option<&Tensor>, win_length: usize, n_fft: usize) -> Result<Vec<f64>> {
    let w = match window {
        Some(w) => {
            if w.dim() != 1 || w.sizes()[0] != win_length {
                return Err(KernelError::new(
                    op.to_string(),
                    format!("expected a 1D window tensor of size equal to win_length={win_length}, but got window with size {:?}", w.sizes()),
                ));
            }
            if w.dtype().is_complex() {
                return Err(KernelError::new(op.to_string(), "complex windows are not supported"));
            }
            w.to_vec_f64()
        }
        None => vec![1.0; win_length],
    };
    let left = (n_fft - win_length) / 2;
    let mut out = vec![0.0; n_fft];
    out[left..left + win_length].copy_from_slice(&w);
    Ok(out)
}

/// One signal padded by `pad` on both sides with PyTorch's `pad_mode`.
fn pad_signal(op: &str, x: &[f64], pad: usize, mode: &str) -> Result<Vec<f64>> {
    let n = x.len();
    let at = |i: i64| -> Result<f64> {
        let n = n as i64;
        Ok(match mode {
            "constant" => {
                if (0..n).contains(&i) { x[i as usize] } else { 0.0 }
            }
            "reflect" => {
                let j = if i < 0 { -i } else if i >= n { 2 * (n - 1) - i } else { i };
                x[j as usize]
            }
            "replicate" => x[i.clamp(0, n - 1) as usize],
            "circular" => x[i.rem_euclid(n) as usize],
            other => return Err(KernelError::new(op.to_string(), format!("unsupported pad_mode '{other}'"))),
        })
    };
    match mode {
        "reflect" if pad >= n => {
            return Err(KernelError::new(
                op.to_string(),
                format!("Argument #4: Padding size should be less than the corresponding input dimension, but got: padding ({pad}, {pad}) at dimension 1 of input [1, {n}]"),
            ));
        }
        "replicate" | "circular" if n == 0 || (mode == "circular" && pad > n) => {
            return Err(KernelError::new(op.to_string(), format!("padding {pad} is too large for a signal of {n} samples")));
        }
        _ => {}
    }
    (-(pad as i64)..(n + pad) as i64).map(at).collect()
}

/// `stft` (`center`: the `stft.center` overload's padding first).
#[allow(clippy::too_many_arguments)]
fn stft(
    op: &str,
    x: &Tensor,
    n_fft: i64,
    hop: Option<i64>,
    win: Option<i64>,
    window: Option<&Tensor>,
    center: Option<&str>,
    normalized: bool,
    onesided: Option<bool>,
    return_complex: Option<bool>,
    align_to_window: Option<bool>,
) -> Result<Tensor> {
    let err = |m: String| Err(KernelError::new(op.to_string(), m));
    let complex_input = x.dtype().is_complex() || window.is_some_and(|w| w.dtype().is_complex());
    let Some(return_complex) = return_complex.or(complex_input.then_some(true)) else {
        return err("stft requires the return_complex parameter be given for real inputs, and will further require that return_complex=True in a future PyTorch release.".into());
    };
    if x.dtype().is_complex() {
        return err(format!("stft of {} input is not supported", x.dtype().torch_name()));
    }
    if !matches!(x.dtype(), DType::F32 | DType::F64) {
        return err(format!("stft expects a float32 or float64 input, got {}", x.dtype().torch_name()));
    }
    if x.dim() != 1 && x.dim() != 2 {
        return err(format!("stft: expected a 1D or 2D tensor, but got {}D", x.dim()));
    }
    let batch = if x.dim() == 2 { x.sizes()[0] } else { 1 };
    let len = x.sizes()[x.dim() - 1];
    let hop = hop.unwrap_or(n_fft >> 2);
    let win = win.unwrap_or(n_fft);
    let rows: Vec<f64> = x.to_vec_f64();
    let mut signals: Vec<Vec<f64>> = (0..batch).map(|b| rows[b * len..(b + 1) * len].to_vec()).collect();
    if let Some(mode) = center {
        let pad = (n_fft / 2).max(0) as usize;
        signals = signals.iter().map(|s| pad_signal(op, s, pad, mode)).collect::<Result<_>>()?;
    }
    let len = signals.first().map_or(len, Vec::len);
    if n_fft <= 0 || n_fft as usize > len {
        return err(format!("stft: expected 0 < n_fft <= {len}, but got n_fft={n_fft}"));
    }
    if hop <= 0 {
        return err(format!("stft: expected hop_length > 0, but got hop_length={hop}"));
    }
    if win <= 0 || win > n_fft {
        return err(format!("stft: expected 0 < win_length <= n_fft, but got win_length={win}"));
    }
    let (n_fft, hop, win) = (n_fft as usize, hop as usize, win as usize);
    if align_to_window == Some(true) && win < n_fft {
        return err("stft with align_to_window=True and win_length < n_fft is not supported".into());
    }
    let w = padded_window(op, window, win, n_fft)?;
    let onesided = onesided.unwrap_or(true);
    let frames = 1 + (len - n_fft) / hop;
    let freqs = if onesided { n_fft / 2 + 1 } else { n_fft };
    // Frames as rows of a (batch, frames, n_fft) signal, windowed, transformed along the last dim.
    let mut data = Vec::with_capacity(batch * frames * n_fft);
    for s in &signals {
        for f in 0..frames {
            data.extend((0..n_fft).map(|k| C64::new(s[f * hop + k] * w[k], 0.0)));
        }
    }
    transform(&mut data, &[batch, frames, n_fft], &[2], true);
    let sc = if normalized { 1.0 / (n_fft as f64).sqrt() } else { 1.0 };
    // (batch, freqs, frames)
    let mut out = Vec::with_capacity(batch * freqs * frames);
    for b in 0..batch {
        for k in 0..freqs {
            out.extend((0..frames).map(|f| data[(b * frames + f) * n_fft + k] * sc));
        }
    }
    let sizes: Vec<usize> = if x.dim() == 2 { vec![batch, freqs, frames] } else { vec![freqs, frames] };
    let c = x.dtype().to_complex().unwrap_or(DType::C64);
    let t = from_c64(out, &sizes, c)?;
    if return_complex { Ok(t) } else { super::complex::view_as_real(op, &t) }
}

fn k_stft(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::STFT, args, 2)?;
    let t = stft(
        a.op,
        a.tensor(0)?,
        a.int(1)?,
        a.opt_int(2)?,
        a.opt_int(3)?,
        a.opt_tensor(4)?,
        None,
        a.opt_bool(5)?.unwrap_or(false),
        a.opt_bool(6)?,
        a.opt_bool(7)?,
        a.opt_bool(8)?,
    )?;
    ret(t)
}

fn k_stft_center(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::STFT_CENTER, args, 2)?;
    let center = a.opt_bool(5)?.unwrap_or(true);
    let mode = a.opt_str(6)?.unwrap_or("reflect");
    let t = stft(
        a.op,
        a.tensor(0)?,
        a.int(1)?,
        a.opt_int(2)?,
        a.opt_int(3)?,
        a.opt_tensor(4)?,
        center.then_some(mode),
        a.opt_bool(7)?.unwrap_or(false),
        a.opt_bool(8)?,
        a.opt_bool(9)?,
        a.opt_bool(10)?,
    )?;
    ret(t)
}

/// `istft(self, n_fft, hop_length, win_length, window, center, normalized, onesided, length,
/// return_complex)`: inverse transforms of the frames, windowed, overlap-added and divided by
/// the overlap-added squared window.
fn k_istft(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::ISTFT, args, 2)?;
    let name = a.op;
    let err = |m: String| Err(KernelError::new(name, m));
    let x = a.tensor(0)?;
    let n_fft = a.int(1)?;
    let hop = a.opt_int(2)?.unwrap_or(n_fft >> 2);
    let win = a.opt_int(3)?.unwrap_or(n_fft);
    let window = a.opt_tensor(4)?;
    let center = a.opt_bool(5)?.unwrap_or(true);
    let normalized = a.opt_bool(6)?.unwrap_or(false);
    let onesided = a.opt_bool(7)?;
    let length = a.opt_int(8)?;
    let return_complex = a.opt_bool(9)?.unwrap_or(false);
    if !x.dtype().is_complex() {
        return err("istft requires a complex-valued input tensor matching the output from stft with return_complex=True.".into());
    }
    if x.dim() != 2 && x.dim() != 3 {
        return err(format!("istft: expected a tensor with 2 or 3 dimensions of complex dtype, but got {}", x.dim()));
    }
    let batched = x.dim() == 3;
    let x3 = if batched { x.clone() } else { x.unsqueeze(0)? };
    let (batch, fft_size, frames) = (x3.sizes()[0], x3.sizes()[1], x3.sizes()[2]);
    if n_fft <= 0 {
        return err(format!("istft: expected n_fft > 0, but got n_fft={n_fft}"));
    }
    if win <= 0 || win > n_fft {
        return err(format!("istft: expected 0 < win_length <= n_fft, but got win_length={win}"));
    }
    if hop <= 0 || hop > win {
        return err(format!("istft: expected 0 < hop_length <= win_length, but got hop_length={hop}"));
    }
    let (n_fft, hop, win) = (n_fft as usize, hop as usize, win as usize);
    let onesided = onesided.unwrap_or(fft_size != n_fft);
    if onesided {
        if n_fft / 2 + 1 != fft_size {
            return err(format!(
                "istft expected the frequency dimension (3rd to the last) of the input tensor to match n_fft / 2 + 1 when onesided=True, but got {fft_size}"
            ));
        }
        if return_complex {
            return err("Cannot have onesided output if window or input is complex".into());
        }
    } else if n_fft != fft_size {
        return err(format!(
            "istft expected the frequency dimension (3rd to the last) of the input tensor to match n_fft when onesided=False, but got {fft_size}"
        ));
    }
    if frames == 0 {
        return err("istft: expected at least one frame".into());
    }
    let w = padded_window(name, window, win, n_fft)?;
    let norm = if normalized { NORM_ROOT_N } else { NORM_N };
    // (batch, frames, freqs) → inverse transform along the last dim → (batch, frames, n_fft).
    let spec = x3.transpose(1, 2)?;
    let frames_time: Vec<C64> = if return_complex {
        to_c64(&c2c(name, &spec, &[2], norm, false)?)?
    } else {
        let spec = if onesided { spec } else { spec.narrow(2, 0, n_fft / 2 + 1)? };
        let real = c2r(name, &spec, &[2], norm, n_fft)?;
        real.to_vec_f64().into_iter().map(|v| C64::new(v, 0.0)).collect()
    };
    let total = n_fft + hop * (frames - 1);
    let mut y = vec![C64::default(); batch * total];
    let mut env = vec![0.0f64; total];
    for f in 0..frames {
        for k in 0..n_fft {
            env[f * hop + k] += w[k] * w[k];
        }
    }
    for b in 0..batch {
        for f in 0..frames {
            for k in 0..n_fft {
                y[b * total + f * hop + k] += frames_time[(b * frames + f) * n_fft + k] * w[k];
            }
        }
    }
    let start = if center { n_fft / 2 } else { 0 };
    let end = match length {
        Some(l) if l < 0 => return err(format!("istft: expected length >= 0, but got {l}")),
        Some(l) => start + l as usize,
        None => {
            if center { total.saturating_sub(n_fft / 2) } else { total }
        }
    };
    let stop = end.min(total);
    let start_c = start.min(stop);
    if env[start_c..stop].iter().any(|e| e.abs() < 1e-11) {
        return err("istft(...): window overlap add min: the window's squared overlap-add is (nearly) zero somewhere in the output; check the window and hop_length".into());
    }
    let out_len = end.saturating_sub(start);
    let mut out = Vec::with_capacity(batch * out_len);
    for b in 0..batch {
        out.extend((start..end).map(|i| if i < stop { y[b * total + i] / env[i] } else { C64::default() }));
    }
    let sizes: Vec<usize> = if batched { vec![batch, out_len] } else { vec![out_len] };
    let t = if return_complex {
        from_c64(out, &sizes, x.dtype())?
    } else {
        from_f64(out.into_iter().map(|z| z.re).collect(), &sizes, x.dtype().to_real())?
    };
    ret(t)
}

pub fn register(r: &mut KernelRegistry) {
    r.register(op::_FFT_C2C, k_fft_c2c);
    r.register(op::_FFT_R2C, k_fft_r2c);
    r.register(op::_FFT_C2R, k_fft_c2r);
    for &(o, f) in FFT_TABLE {
        r.register(o, f);
    }
    r.register(op::FFT_FFTSHIFT, k_fftshift);
    r.register(op::FFT_IFFTSHIFT, k_ifftshift);
    r.register(op::STFT, k_stft);
    r.register(op::STFT_CENTER, k_stft_center);
    r.register(op::ISTFT, k_istft);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c2r_inverts_r2c() {
        let x = Tensor::from_vec(vec![1.0f64, 2.0, -1.0, 0.5, 3.0], &[5]).unwrap();
        let z = r2c("t", &x, &[0], NORM_NONE, true).unwrap();
        assert_eq!(z.sizes(), &[3]);
        let back = c2r("t", &z, &[0], NORM_N, 5).unwrap();
        for (a, b) in back.to_vec_f64().iter().zip(x.to_vec_f64()) {
            assert!((a - b).abs() < 1e-12, "{a} vs {b}");
        }
    }

    #[test]
    fn transform_of_an_impulse_is_flat() {
        let x = Tensor::from_vec(vec![1.0f32, 0.0, 0.0, 0.0], &[4]).unwrap();
        let z = r2c("t", &x, &[0], NORM_NONE, false).unwrap();
        assert_eq!(z.dtype(), DType::C64);
        assert_eq!(to_c64(&z).unwrap(), vec![C64::new(1.0, 0.0); 4]);
    }
}
