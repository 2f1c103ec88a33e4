//! Resampling kernels (interpolation): nearest, nearest-exact, (bi/tri)linear and bicubic
//! upsampling (`upsample_*` with output sizes or scale factors, and their `.vec` forms), the
//! antialiased bilinear, bicubic and Lanczos-3 resizes (`_upsample_*2d_aa`, separable passes
//! in `f32`, `f64` or fixed-point `u8`), and
//! `grid_sampler_2d` (bilinear, nearest and bicubic; zeros, border and reflection padding).
//!
//! Source coordinates are computed the way PyTorch's CPU kernels compute them (scales in the
//! compute type, `align_corners`, explicit scale factors overriding the size ratio); values
//! are interpolated in `f32` for `f16`/`bf16`/`f32` and in `f64` for `f64`. The first two dims
//! are batch and channels; the remaining 1 to 3 are spatial.

use dialect_aten::op;
use super::linalg::{Real, compute_dtype, outs, with_real};
use super::{Args, KernelRegistry};
use crate::tensor::{KernelError, Result, Tensor};
use crate::value::IValue;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    Nearest,
    NearestExact,
    Linear,
    Cubic,
}

/// Output sizes and per-dim scales of an upsample from explicit sizes or scale factors.
fn resolve_sizes(
    op: &'static str,
    x: &Tensor,
    d: usize,
    output_size: Option<Vec<i64>>,
    scales: Vec<Option<f64>>,
) -> Result<(Vec<usize>, Vec<Option<f64>>)> {
    if x.dim() != d + 2 {
        return Err(KernelError::new(op, format!("expected a {}-D input, got {:?}", d + 2, x.sizes())));
    }
    let spatial = &x.sizes()[2..];
    let out: Vec<usize> = match output_size {
        Some(o) => {
            if o.len() != d {
                return Err(KernelError::new(op, format!("output_size must have {d} elements, got {o:?}")));
            }
            o.iter()
                .map(|&v| {
                    usize::try_from(v).map_err(|_| KernelError::new(op, format!("negative output size in {o:?}")))
                })
                .collect::<Result<_>>()?
        }
        None => {
            if scales.len() != d || scales.iter().any(|s| s.is_none()) {
                return Err(KernelError::new(op, "either output_size or scale_factors must be given"));
            }
            spatial.iter().zip(&scales).map(|(&i, s)| (i as f64 * s.unwrap_or(1.0)) as usize).collect()
        }
    };
    if out.contains(&0) || spatial.contains(&0) {
        return Err(KernelError::new(
            op,
            format!("input {:?} and output {out:?} sizes must be greater than 0", x.sizes()),
        ));
    }
    Ok((out, scales))
}

/// `1 / scale` when a positive scale is given, else `in / out` (PyTorch's
/// `compute_scales_value`).
fn scale_value<T: Real>(scale: Option<f64>, input: usize, output: usize) -> T {
    match scale {
        Some(s) if s > 0.0 => T::of(1.0 / s),
        _ => T::of(input as f64) / T::of(output as f64),
    }
}

/// PyTorch's `area_pixel_compute_scale`.
fn area_scale<T: Real>(input: usize, output: usize, align_corners: bool, scale: Option<f64>) -> T {
    if align_corners {
        if output > 1 { T::of((input - 1) as f64) / T::of((output - 1) as f64) } else { T::ZERO }
    } else {
        scale_value(scale, input, output)
    }
}

/// PyTorch's `area_pixel_compute_source_index`.
fn source_index<T: Real>(scale: T, dst: usize, align_corners: bool, cubic: bool) -> T {
    if align_corners {
        scale * T::of(dst as f64)
    } else {
        let src = scale * (T::of(dst as f64) + T::of(0.5)) - T::of(0.5);
        if !cubic && src < T::ZERO { T::ZERO } else { src }
    }
}

/// Per-dim taps of output position `o`: (input index, weight) pairs.
fn taps<T: Real>(
    kind: Kind,
    o: usize,
    input: usize,
    output: usize,
    align_corners: bool,
    scale: Option<f64>,
) -> Vec<(usize, T)> {
    match kind {
        Kind::Nearest | Kind::NearestExact => {
            let i = if kind == Kind::Nearest && output == input {
                o
            } else if kind == Kind::Nearest && output == 2 * input {
                o >> 1
            } else {
                // PyTorch computes nearest indices in f32 whatever the dtype.
                let s: f32 = match scale {
                    Some(s) if s > 0.0 => (1.0 / s) as f32,
                    _ => input as f32 / output as f32,
                };
                let pos = if kind == Kind::Nearest { o as f32 * s } else { (o as f32 + 0.5) * s };
                (pos.floor() as usize).min(input - 1)
            };
            vec![(i, T::ONE)]
        }
        Kind::Linear => {
            let s = area_scale::<T>(input, output, align_corners, scale);
            let src = source_index(s, o, align_corners, false);
            let i0 = (src.floor().to_f64() as usize).min(input - 1);
            let i1 = if i0 < input - 1 { i0 + 1 } else { i0 };
            let mut l1 = src - T::of(i0 as f64);
            if l1 < T::ZERO {
                l1 = T::ZERO;
            }
            if l1 > T::ONE {
                l1 = T::ONE;
            }
            vec![(i0, T::ONE - l1), (i1, l1)]
        }
        Kind::Cubic => {
            let s = area_scale::<T>(input, output, align_corners, scale);
            let src = source_index(s, o, align_corners, true);
            let fl = src.floor();
            let idx = fl.to_f64() as i64;
            let mut t = src - fl;
            if t < T::ZERO {
                t = T::ZERO;
            }
            if t > T::ONE {
                t = T::ONE;
            }
            let c = cubic_coeffs(t);
            (0..4).map(|k| ((idx - 1 + k as i64).clamp(0, input as i64 - 1) as usize, c[k])).collect()
        }
    }
}

/// Keys' cubic convolution weights with `A = -0.75` for fractional offset `t`.
fn cubic_coeffs<T: Real>(t: T) -> [T; 4] {
    let a = T::of(-0.75);
    let one = T::ONE;
    let two = T::of(2.0);
    let cc1 = |x: T| ((a + two) * x - (a + T::of(3.0))) * x * x + one;
    let cc2 = |x: T| ((a * x - T::of(5.0) * a) * x + T::of(8.0) * a) * x - T::of(4.0) * a;
    [cc2(t + one), cc1(t), cc1(one - t), cc2(two - t)]
}

/// Separable interpolation of a contiguous `[planes, in...]` buffer to `[planes, out...]`.
fn interpolate<T: Real>(
    x: &[T],
    planes: usize,
    input: &[usize],
    output: &[usize],
    per_dim: &[Vec<Vec<(usize, T)>>],
    out: &mut [T],
) {
    let d = input.len();
    let in_n: usize = input.iter().product();
    let out_n: usize = output.iter().product();
    let in_strides = crate::tensor::contiguous_strides(input);
    let mut pos = vec![0usize; d];
    for p in 0..out_n {
        let mut rem = p;
        for k in (0..d).rev() {
            pos[k] = rem % output[k];
            rem /= output[k];
        }
        for pl in 0..planes {
            let xp = &x[pl * in_n..(pl + 1) * in_n];
            out[pl * out_n + p] = nested(xp, 0, 0, &pos, per_dim, &in_strides);
        }
    }
}

/// Weighted sum over the taps of dims `k..`, outermost dim first (PyTorch's evaluation order).
fn nested<T: Real>(
    x: &[T],
    k: usize,
    base: usize,
    pos: &[usize],
    per_dim: &[Vec<Vec<(usize, T)>>],
    strides: &[usize],
) -> T {
    if k == pos.len() {
        return x[base];
    }
    let mut acc = T::ZERO;
    for (j, &(i, w)) in per_dim[k][pos[k]].iter().enumerate() {
        let v = w * nested(x, k + 1, base + i * strides[k], pos, per_dim, strides);
        acc = if j == 0 { v } else { acc + v };
    }
    acc
}

fn upsample(
    op: &'static str,
    kind: Kind,
    x: &Tensor,
    out_sizes: &[usize],
    scales: &[Option<f64>],
    align_corners: bool,
) -> Result<Tensor> {
    let dt = x.dtype();
    let input: Vec<usize> = x.sizes()[2..].to_vec();
    let planes = x.sizes()[0] * x.sizes()[1];
    let mut full = x.sizes()[..2].to_vec();
    full.extend(out_sizes);
    // Nearest modes copy values, so integer inputs go through f64 (exact below 2^53).
    let ct = if matches!(kind, Kind::Nearest | Kind::NearestExact) && !dt.is_floating() && dt != ir::DType::Bool {
        ir::DType::F64
    } else {
        compute_dtype(op, dt)?
    };
    let xw = x.cast_to(ct)?.contiguous()?;
    let r = with_real!(op, ct, T => {
        let xd = xw.as_slice::<T>()?;
        // The output is allocated (fallibly) before the per-dim tap tables it bounds.
        Tensor::build::<T>(&full, |out| {
            if out.is_empty() {
                return Ok(());
            }
            let per_dim: Vec<Vec<Vec<(usize, T)>>> = (0..input.len())
                .map(|k| {
                    (0..out_sizes[k]).map(|o| taps::<T>(kind, o, input[k], out_sizes[k], align_corners, scales[k])).collect()
                })
                .collect();
            interpolate(xd, planes, &input, out_sizes, &per_dim, out);
            Ok(())
        })?
    });
    r.cast_to(dt)
}

/// How an upsampling op resizes: `(input, output sizes, per-dim scales, align_corners)`.
type Resize<'a> = &'a dyn Fn(&Tensor, &[usize], &[Option<f64>], bool) -> Result<Tensor>;

/// `upsample_<kind>Nd(self, output_size, [align_corners,] scales...)`.
fn upsample_sizes(op: &'static str, kind: Kind, d: usize, args: &[IValue]) -> Result<Vec<IValue>> {
    let takes_align = matches!(kind, Kind::Linear | Kind::Cubic);
    sizes_form(op, d, takes_align, args, &|x, out, scales, align| upsample(op, kind, x, out, scales, align))
}

/// `upsample_<kind>Nd.vec(input, output_size?, [align_corners,] scale_factors?)`.
fn upsample_vec(op: &'static str, kind: Kind, d: usize, args: &[IValue]) -> Result<Vec<IValue>> {
    let takes_align = matches!(kind, Kind::Linear | Kind::Cubic);
    vec_form(op, d, takes_align, args, &|x, out, scales, align| upsample(op, kind, x, out, scales, align))
}

/// The form with explicit output sizes and optional per-dim scales.
fn sizes_form(op: &'static str, d: usize, takes_align: bool, args: &[IValue], resize: Resize) -> Result<Vec<IValue>> {
    let a = Args::new(op, args, 2)?;
    let x = a.tensor(0)?;
    let align = if takes_align { a.bool(2)? } else { false };
    let first = if takes_align { 3 } else { 2 };
    let scales: Vec<Option<f64>> = (0..d).map(|k| a.opt_float(first + k)).collect::<Result<_>>()?;
    let (out, scales) = resolve_sizes(op, x, d, Some(a.int_list(1)?), scales)?;
    Ok(outs([resize(x, &out, &scales, align)?]))
}

/// The `.vec` form: output sizes or scale factors, exactly one of them.
fn vec_form(op: &'static str, d: usize, takes_align: bool, args: &[IValue], resize: Resize) -> Result<Vec<IValue>> {
    let a = Args::new(op, args, 2)?;
    let x = a.tensor(0)?;
    let align = if takes_align { a.bool(2)? } else { false };
    let sf_at = if takes_align { 3 } else { 2 };
    let output_size = a.opt_int_list(1)?;
    let factors: Option<Vec<f64>> = if a.get(sf_at).is_none() { None } else { Some(a.float_list(sf_at)?) };
    if output_size.is_some() && factors.is_some() {
        return Err(KernelError::new(op, "only one of output_size and scale_factors may be given"));
    }
    let scales: Vec<Option<f64>> = match &factors {
        Some(f) if f.len() == d => f.iter().map(|&v| Some(v)).collect(),
        Some(f) => return Err(KernelError::new(op, format!("scale_factors must have {d} elements, got {f:?}"))),
        None => vec![None; d],
    };
    let (out, scales) = resolve_sizes(op, x, d, output_size, scales)?;
    Ok(outs([resize(x, &out, &scales, align)?]))
}

macro_rules! upsample_ops {
    ($($name:ident, $vec:ident, $op:path, $opvec:path, $kind:expr, $d:expr;)*) => {$(
        fn $name(args: &[IValue]) -> Result<Vec<IValue>> {
            upsample_sizes($op.name(), $kind, $d, args)
        }
        fn $vec(args: &[IValue]) -> Result<Vec<IValue>> {
            upsample_vec($opvec.name(), $kind, $d, args)
        }
    )*};
}

upsample_ops! {
    nearest1d, nearest1d_vec, op::UPSAMPLE_NEAREST1D, op::UPSAMPLE_NEAREST1D_VEC, Kind::Nearest, 1;
    nearest2d, nearest2d_vec, op::UPSAMPLE_NEAREST2D, op::UPSAMPLE_NEAREST2D_VEC, Kind::Nearest, 2;
    nearest3d, nearest3d_vec, op::UPSAMPLE_NEAREST3D, op::UPSAMPLE_NEAREST3D_VEC, Kind::Nearest, 3;
    exact1d, exact1d_vec, op::_UPSAMPLE_NEAREST_EXACT1D, op::_UPSAMPLE_NEAREST_EXACT1D_VEC, Kind::NearestExact, 1;
    exact2d, exact2d_vec, op::_UPSAMPLE_NEAREST_EXACT2D, op::_UPSAMPLE_NEAREST_EXACT2D_VEC, Kind::NearestExact, 2;
    exact3d, exact3d_vec, op::_UPSAMPLE_NEAREST_EXACT3D, op::_UPSAMPLE_NEAREST_EXACT3D_VEC, Kind::NearestExact, 3;
    linear1d, linear1d_vec, op::UPSAMPLE_LINEAR1D, op::UPSAMPLE_LINEAR1D_VEC, Kind::Linear, 1;
    bilinear2d, bilinear2d_vec, op::UPSAMPLE_BILINEAR2D, op::UPSAMPLE_BILINEAR2D_VEC, Kind::Linear, 2;
    trilinear3d, trilinear3d_vec, op::UPSAMPLE_TRILINEAR3D, op::UPSAMPLE_TRILINEAR3D_VEC, Kind::Linear, 3;
    bicubic2d, bicubic2d_vec, op::UPSAMPLE_BICUBIC2D, op::UPSAMPLE_BICUBIC2D_VEC, Kind::Cubic, 2;
}

// ----- antialiased upsampling (`_upsample_{bilinear,bicubic,lanczos}2d_aa`) -----

/// The filter of an antialiased resize: its support at scale 1 and its shape.
#[derive(Clone, Copy, PartialEq, Debug)]
enum AaFilter {
    /// The triangle (tent) filter of bilinear resizing, support 1.
    Triangle,
    /// Keys' cubic convolution with `a = -0.5` (Pillow's bicubic), support 2.
    Cubic,
    /// Lanczos-3, `sinc(x)·sinc(x/3)`, support 3.
    Lanczos3,
}

impl AaFilter {
    /// Taps of the filter at scale 1 (twice its support).
    fn interp_size(self) -> f64 {
        match self {
            AaFilter::Triangle => 2.0,
            AaFilter::Cubic => 4.0,
            AaFilter::Lanczos3 => 6.0,
        }
    }

    /// The filter's value at `x`, computed in `T` like PyTorch's CPU kernel.
    fn eval<T: Real>(self, x: T) -> T {
        let x = x.abs();
        match self {
            AaFilter::Triangle => {
                if x < T::ONE { T::of(1.0 - x.to_f64()) } else { T::ZERO }
            }
            AaFilter::Cubic => {
                let a = T::of(-0.5);
                let (two, three) = (T::of(2.0), T::of(3.0));
                if x < T::ONE {
                    ((a + two) * x - (a + three)) * x * x + T::ONE
                } else if x < two {
                    ((a * x - T::of(5.0) * a) * x + T::of(8.0) * a) * x - T::of(4.0) * a
                } else {
                    T::ZERO
                }
            }
            AaFilter::Lanczos3 => {
                if x < T::of(3.0) { sinc(x) * sinc(T::of(x.to_f64() / 3.0)) } else { T::ZERO }
            }
        }
    }
}

/// `sin(πx) / (πx)`, 1 at 0.
fn sinc<T: Real>(x: T) -> T {
    if x == T::ZERO {
        return T::ONE;
    }
    let y = x * T::of(std::f64::consts::PI);
    T::of(y.to_f64().sin()) / y
}

/// The taps of one output position along one dim: the first input index and the normalized
/// weights of the inputs from there on.
struct AaTaps<T> {
    start: usize,
    weights: Vec<T>,
}

/// The antialiased taps of every output position of a dim resized from `input` to `output`,
/// and the largest weight. The filter's support is stretched by the downscale factor (when
/// shrinking), centred on each output pixel's centre in input coordinates, clipped to the input
/// and normalized to sum 1; `align_corners` only changes the scale.
fn aa_taps<T: Real>(
    filter: AaFilter,
    input: usize,
    output: usize,
    align_corners: bool,
    scale: Option<f64>,
) -> (Vec<AaTaps<T>>, T) {
    let s = area_scale::<T>(input, output, align_corners, scale).to_f64();
    let half = filter.interp_size() * 0.5;
    let support = T::of(if s >= 1.0 { half * s } else { half });
    let max_taps = (support.to_f64().ceil() as i64) * 2 + 1;
    let invscale = T::of(if s >= 1.0 { 1.0 / s } else { 1.0 });
    let mut wt_max = T::ZERO;
    let taps = (0..output)
        .map(|i| {
            let center = T::of(s * (i as f64 + 0.5));
            let xmin = (((center - support).to_f64() + 0.5) as i64).max(0);
            let xend = (((center + support).to_f64() + 0.5) as i64).min(input as i64);
            let xsize = (xend - xmin).clamp(0, max_taps);
            let mut weights: Vec<T> = (0..xsize)
                .map(|j| {
                    let off = T::of((j + xmin) as f64) - center;
                    filter.eval(T::of((off.to_f64() + 0.5) * invscale.to_f64()))
                })
                .collect();
            let mut total = T::ZERO;
            for &w in &weights {
                total += w;
            }
            if total != T::ZERO {
                for w in &mut weights {
                    *w = *w / total;
                    if *w > wt_max {
                        wt_max = *w;
                    }
                }
            }
            AaTaps { start: xmin as usize, weights }
        })
        .collect();
    (taps, wt_max)
}

/// Resizes dim `dim` of a contiguous buffer of `sizes` with `taps`, accumulating each output
/// from its first tap on in `T` (the rows of an outer dim are combined whole, element by
/// element in the same order).
fn aa_pass<T: Real>(x: &[T], sizes: &[usize], dim: usize, taps: &[AaTaps<T>]) -> Vec<T> {
    let outer: usize = sizes[..dim].iter().product();
    let inner: usize = sizes[dim + 1..].iter().product();
    let (n_in, n_out) = (sizes[dim], taps.len());
    let mut out = vec![T::ZERO; outer * n_out * inner];
    if inner == 0 {
        return out;
    }
    for (src, plane) in x.chunks_exact(n_in * inner).zip(out.chunks_exact_mut(n_out * inner)) {
        for (t, dst) in taps.iter().zip(plane.chunks_exact_mut(inner)) {
            if inner == 1 {
                let mut terms = src[t.start..t.start + t.weights.len()].iter().zip(&t.weights);
                if let Some((&v, &w)) = terms.next() {
                    let mut acc = v * w;
                    for (&v, &w) in terms {
                        acc += v * w;
                    }
                    dst[0] = acc;
                }
                continue;
            }
            for (j, &w) in t.weights.iter().enumerate() {
                let row = &src[(t.start + j) * inner..(t.start + j + 1) * inner];
                if j == 0 {
                    dst.iter_mut().zip(row).for_each(|(d, &v)| *d = v * w);
                } else {
                    dst.iter_mut().zip(row).for_each(|(d, &v)| *d += v * w);
                }
            }
        }
    }
    out
}

/// The `u8` form of `aa_pass`: weights (computed in `f64`) are scaled to `i16` with as many
/// fraction bits as the largest weight allows, sums are taken in `i32` starting from one half,
/// and each result is shifted back and clamped to 0..=255, as PyTorch's `uint8` path does.
fn aa_pass_u8(x: &[u8], sizes: &[usize], dim: usize, taps: &[AaTaps<f64>], wt_max: f64) -> Vec<u8> {
    let mut precision = 0u32;
    while precision < 22 {
        let next = (0.5 + wt_max * (1u64 << (precision + 1)) as f64) as i64;
        if next >= 1 << 15 {
            break;
        }
        precision += 1;
    }
    let unit = (1u64 << precision) as f64;
    let fixed: Vec<Vec<i32>> = taps
        .iter()
        .map(|t| {
            t.weights
                .iter()
                .map(|&w| {
                    let v = w * unit;
                    (if v < 0.0 { (-0.5 + v) as i32 } else { (0.5 + v) as i32 }) as i16 as i32
                })
                .collect()
        })
        .collect();
    let outer: usize = sizes[..dim].iter().product();
    let inner: usize = sizes[dim + 1..].iter().product();
    let (n_in, n_out) = (sizes[dim], taps.len());
    let half = if precision > 0 { 1i32 << (precision - 1) } else { 0 };
    let mut out = vec![0u8; outer * n_out * inner];
    for o in 0..outer {
        for (k, (t, w)) in taps.iter().zip(&fixed).enumerate() {
            for r in 0..inner {
                let mut acc = half;
                for (j, &wj) in w.iter().enumerate() {
                    acc = acc.wrapping_add(x[(o * n_in + t.start + j) * inner + r] as i32 * wj);
                }
                out[(o * n_out + k) * inner + r] = (acc >> precision).clamp(0, 255) as u8;
            }
        }
    }
    out
}

/// Antialiased resize of the spatial dims of `x` to `out_sizes`: one separable pass per dim
/// whose size changes, the last (contiguous) dim first and then the others from the innermost
/// out, each pass rounding to the element type (`f32`, `f64` or `u8`) as PyTorch's does.
fn upsample_aa(
    op: &'static str,
    filter: AaFilter,
    x: &Tensor,
    out_sizes: &[usize],
    scales: &[Option<f64>],
    align_corners: bool,
) -> Result<Tensor> {
    if x.sizes()[1] == 0 {
        return Err(KernelError::new(op, format!("non-empty 4-D data tensor expected, got sizes {:?}", x.sizes())));
    }
    let dt = x.dtype();
    if !matches!(dt, ir::DType::F32 | ir::DType::F64 | ir::DType::U8) {
        return Err(KernelError::new(op, format!("not implemented for dtype {}", dt.torch_name())));
    }
    let d = out_sizes.len();
    let mut sizes = x.sizes().to_vec();
    let xc = x.contiguous()?;
    let order: Vec<usize> = (0..d).rev().map(|k| k + 2).collect();
    macro_rules! passes {
        ($T:ty, $data:expr, $pass:expr) => {{
            let mut data: Vec<$T> = $data;
            for &dim in &order {
                let k = dim - 2;
                if sizes[dim] == out_sizes[k] {
                    continue;
                }
                data = ($pass)(&data, &sizes, dim, sizes[dim], out_sizes[k], scales[k]);
                sizes[dim] = out_sizes[k];
            }
            Tensor::from_vec(data, &sizes)
        }};
    }
    match dt {
        ir::DType::F32 => passes!(f32, xc.as_slice::<f32>()?.to_vec(), |v: &[f32], s: &[usize], dim, i, o, sc| {
            aa_pass(v, s, dim, &aa_taps::<f32>(filter, i, o, align_corners, sc).0)
        }),
        ir::DType::F64 => passes!(f64, xc.as_slice::<f64>()?.to_vec(), |v: &[f64], s: &[usize], dim, i, o, sc| {
            aa_pass(v, s, dim, &aa_taps::<f64>(filter, i, o, align_corners, sc).0)
        }),
        _ => passes!(u8, xc.as_slice::<u8>()?.to_vec(), |v: &[u8], s: &[usize], dim, i, o, sc| {
            let (taps, wt_max) = aa_taps::<f64>(filter, i, o, align_corners, sc);
            aa_pass_u8(v, s, dim, &taps, wt_max)
        }),
    }
}

macro_rules! upsample_aa_ops {
    ($($name:ident, $vec:ident, $op:path, $opvec:path, $filter:expr;)*) => {$(
        fn $name(args: &[IValue]) -> Result<Vec<IValue>> {
            const OP: &str = $op.name();
            sizes_form(OP, 2, true, args, &|x, out, scales, align| upsample_aa(OP, $filter, x, out, scales, align))
        }
        fn $vec(args: &[IValue]) -> Result<Vec<IValue>> {
            const OP: &str = $opvec.name();
            vec_form(OP, 2, true, args, &|x, out, scales, align| upsample_aa(OP, $filter, x, out, scales, align))
        }
    )*};
}

upsample_aa_ops! {
    bilinear2d_aa, bilinear2d_aa_vec, op::_UPSAMPLE_BILINEAR2D_AA, op::_UPSAMPLE_BILINEAR2D_AA_VEC, AaFilter::Triangle;
    bicubic2d_aa, bicubic2d_aa_vec, op::_UPSAMPLE_BICUBIC2D_AA, op::_UPSAMPLE_BICUBIC2D_AA_VEC, AaFilter::Cubic;
    lanczos2d_aa, lanczos2d_aa_vec, op::_UPSAMPLE_LANCZOS2D_AA, op::_UPSAMPLE_LANCZOS2D_AA_VEC, AaFilter::Lanczos3;
}

// ----- grid_sampler_2d -----

#[derive(Clone, Copy, PartialEq, Debug)]
pub(super) enum GridPad {
    Zeros,
    Border,
    Reflection,
}

impl GridPad {
    /// The padding mode of a grid sampler's `padding_mode` argument (0, 1 or 2).
    pub(super) fn from_arg(op: &'static str, p: i64) -> Result<GridPad> {
        match p {
            0 => Ok(GridPad::Zeros),
            1 => Ok(GridPad::Border),
            2 => Ok(GridPad::Reflection),
            p => Err(KernelError::new(op, format!("unknown padding mode {p}"))),
        }
    }
}

pub(super) fn unnormalize<T: Real>(c: T, size: usize, align_corners: bool) -> T {
    let two = T::of(2.0);
    if align_corners {
        (c + T::ONE) / two * T::of((size - 1) as f64)
    } else {
        ((c + T::ONE) * T::of(size as f64) - T::ONE) / two
    }
}

fn clip<T: Real>(c: T, size: usize) -> T {
    let hi = T::of((size - 1) as f64);
    // NaN stays NaN through neither branch, as in PyTorch's clip_coordinates.
    if c < T::ZERO {
        T::ZERO
    } else if c > hi {
        hi
    } else {
        c
    }
}

fn reflect<T: Real>(c: T, twice_low: i64, twice_high: i64) -> T {
    if twice_low == twice_high {
        return T::ZERO;
    }
    let min = T::of(twice_low as f64 / 2.0);
    let span = T::of((twice_high - twice_low) as f64 / 2.0);
    let c = (c - min).abs();
    let flips = (c / span).floor();
    let extra = T::of(c.to_f64() % span.to_f64());
    if flips.to_f64().rem_euclid(2.0) == 0.0 { extra + min } else { span - extra + min }
}

pub(super) fn compute_coord<T: Real>(c: T, size: usize, pad: GridPad, align_corners: bool) -> T {
    match pad {
        GridPad::Zeros => c,
        GridPad::Border => clip(c, size),
        GridPad::Reflection => {
            let r =
                if align_corners { reflect(c, 0, 2 * (size as i64 - 1)) } else { reflect(c, -1, 2 * size as i64 - 1) };
            clip(r, size)
        }
    }
}

/// Value at integer position (x, y) of a plane, 0 outside.
#[inline(always)]
fn at<T: Real>(plane: &[T], x: i64, y: i64, w: usize, h: usize) -> T {
    if x >= 0 && y >= 0 && (x as usize) < w && (y as usize) < h { plane[y as usize * w + x as usize] } else { T::ZERO }
}

/// Rounds half to even, like `nearbyint` in the default rounding mode.
pub(super) fn round_even<T: Real>(v: T) -> T {
    T::of(v.to_f64().round_ties_even())
}

#[allow(clippy::too_many_arguments)]
fn sample<T: Real>(plane: &[T], w: usize, h: usize, gx: T, gy: T, mode: i64, pad: GridPad, align: bool) -> T {
    match mode {
        0 | 1 => {
            let ix = compute_coord(unnormalize(gx, w, align), w, pad, align);
            let iy = compute_coord(unnormalize(gy, h, align), h, pad, align);
            if ix.is_nan() || iy.is_nan() {
                return if mode == 1 { T::ZERO } else { T::NAN };
            }
            if mode == 1 {
                let (nx, ny) = (round_even(ix).to_f64() as i64, round_even(iy).to_f64() as i64);
                return at(plane, nx, ny, w, h);
            }
            let (x0, y0) = (ix.floor(), iy.floor());
            let (x1, y1) = (x0 + T::ONE, y0 + T::ONE);
            let nw = (x1 - ix) * (y1 - iy);
            let ne = (ix - x0) * (y1 - iy);
            let sw = (x1 - ix) * (iy - y0);
            let se = (ix - x0) * (iy - y0);
            let (xi, yi) = (x0.to_f64() as i64, y0.to_f64() as i64);
            at(plane, xi, yi, w, h) * nw
                + at(plane, xi + 1, yi, w, h) * ne
                + at(plane, xi, yi + 1, w, h) * sw
                + at(plane, xi + 1, yi + 1, w, h) * se
        }
        _ => {
            let ix = unnormalize(gx, w, align);
            let iy = unnormalize(gy, h, align);
            let (fx, fy) = (ix.floor(), iy.floor());
            let cx = cubic_coeffs(ix - fx);
            let cy = cubic_coeffs(iy - fy);
            let (xi, yi) = (fx.to_f64() as i64, fy.to_f64() as i64);
            let bounded = |x: i64, y: i64| -> T {
                let cx = compute_coord(T::of(x as f64), w, pad, align);
                let cy = compute_coord(T::of(y as f64), h, pad, align);
                at(plane, cx.to_f64() as i64, cy.to_f64() as i64, w, h)
            };
            let mut acc = T::ZERO;
            for (i, &wy) in cy.iter().enumerate() {
                let mut row = T::ZERO;
                for (j, &wx) in cx.iter().enumerate() {
                    row += bounded(xi - 1 + j as i64, yi - 1 + i as i64) * wx;
                }
                acc += row * wy;
            }
            acc
        }
    }
}

fn grid_sampler_2d(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::GRID_SAMPLER_2D.name();
    let a = Args::new(OP, args, 5)?;
    let (x, grid) = (a.tensor(0)?, a.tensor(1)?);
    let mode = a.int(2)?;
    let pad = GridPad::from_arg(OP, a.int(3)?)?;
    if !(0..=2).contains(&mode) {
        return Err(KernelError::new(OP, format!("unknown interpolation mode {mode}")));
    }
    let align = a.bool(4)?;
    if x.dim() != 4 || grid.dim() != 4 || grid.sizes()[3] != 2 || grid.sizes()[0] != x.sizes()[0] {
        return Err(KernelError::new(
            OP,
            format!(
                "expected input [N, C, H, W] and grid [N, H_out, W_out, 2], got {:?} and {:?}",
                x.sizes(),
                grid.sizes()
            ),
        ));
    }
    if x.dtype() != grid.dtype() {
        return Err(KernelError::new(OP, "input and grid must have the same dtype"));
    }
    let (n, c, h, w) = (x.sizes()[0], x.sizes()[1], x.sizes()[2], x.sizes()[3]);
    if h == 0 || w == 0 {
        return Err(KernelError::new(OP, format!("input {:?} has an empty spatial dim", x.sizes())));
    }
    let (ho, wo) = (grid.sizes()[1], grid.sizes()[2]);
    let dt = x.dtype();
    let ct = compute_dtype(OP, dt)?;
    let (xw, gw) = (x.cast_to(ct)?.contiguous()?, grid.cast_to(ct)?.contiguous()?);
    let r = with_real!(OP, dt, T => {
        let xd = xw.as_slice::<T>()?;
        let gd = gw.as_slice::<T>()?;
        Tensor::build::<T>(&[n, c, ho, wo], |out| {
            for b in 0..n {
                for p in 0..ho * wo {
                    let g = (b * ho * wo + p) * 2;
                    let (gx, gy) = (gd[g], gd[g + 1]);
                    for ch in 0..c {
                        let plane = &xd[(b * c + ch) * h * w..(b * c + ch + 1) * h * w];
                        out[(b * c + ch) * ho * wo + p] = sample(plane, w, h, gx, gy, mode, pad, align);
                    }
                }
            }
            Ok(())
        })?
    });
    Ok(outs([r.cast_to(dt)?]))
}

pub fn register(r: &mut KernelRegistry) {
    r.register(op::UPSAMPLE_NEAREST1D, nearest1d);
    r.register(op::UPSAMPLE_NEAREST1D_VEC, nearest1d_vec);
    r.register(op::UPSAMPLE_NEAREST2D, nearest2d);
    r.register(op::UPSAMPLE_NEAREST2D_VEC, nearest2d_vec);
    r.register(op::UPSAMPLE_NEAREST3D, nearest3d);
    r.register(op::UPSAMPLE_NEAREST3D_VEC, nearest3d_vec);
    r.register(op::_UPSAMPLE_NEAREST_EXACT1D, exact1d);
    r.register(op::_UPSAMPLE_NEAREST_EXACT1D_VEC, exact1d_vec);
    r.register(op::_UPSAMPLE_NEAREST_EXACT2D, exact2d);
    r.register(op::_UPSAMPLE_NEAREST_EXACT2D_VEC, exact2d_vec);
    r.register(op::_UPSAMPLE_NEAREST_EXACT3D, exact3d);
    r.register(op::_UPSAMPLE_NEAREST_EXACT3D_VEC, exact3d_vec);
    r.register(op::UPSAMPLE_LINEAR1D, linear1d);
    r.register(op::UPSAMPLE_LINEAR1D_VEC, linear1d_vec);
    r.register(op::UPSAMPLE_BILINEAR2D, bilinear2d);
    r.register(op::UPSAMPLE_BILINEAR2D_VEC, bilinear2d_vec);
    r.register(op::UPSAMPLE_TRILINEAR3D, trilinear3d);
    r.register(op::UPSAMPLE_TRILINEAR3D_VEC, trilinear3d_vec);
    r.register(op::UPSAMPLE_BICUBIC2D, bicubic2d);
    r.register(op::UPSAMPLE_BICUBIC2D_VEC, bicubic2d_vec);
    r.register(op::_UPSAMPLE_BILINEAR2D_AA, bilinear2d_aa);
    r.register(op::_UPSAMPLE_BILINEAR2D_AA_VEC, bilinear2d_aa_vec);
    r.register(op::_UPSAMPLE_BICUBIC2D_AA, bicubic2d_aa);
    r.register(op::_UPSAMPLE_BICUBIC2D_AA_VEC, bicubic2d_aa_vec);
    r.register(op::_UPSAMPLE_LANCZOS2D_AA, lanczos2d_aa);
    r.register(op::_UPSAMPLE_LANCZOS2D_AA_VEC, lanczos2d_aa_vec);
    r.register(op::GRID_SAMPLER_2D, grid_sampler_2d);
}
