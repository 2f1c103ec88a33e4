//! The convolution ops: their arguments (stride, padding including `"same"`/`"valid"`,
//! dilation, groups, transposition) checked and turned into a [`Geometry`], and the kernels of
//! `convolution`, `conv1d/2d/3d` and `conv_transpose1d/2d/3d`.

use super::*;
use smallvec::{SmallVec, smallvec};
use std::borrow::Cow;

/// The geometry and result sizes of `aten.convolution(input, weight, bias, stride, padding,
/// dilation, transposed, output_padding, groups)` when its out-variant applies: a batched
/// forward convolution of contiguous floating-point tensors of one dtype.
pub(crate) fn out_geometry(args: &[IValue]) -> Option<(Geometry, ResultSizes)> {
    const OP: &str = op::CONVOLUTION.name();
    let a = Args::new(OP, args, 9).ok()?;
    let (x, w) = (a.tensor(0).ok()?, a.tensor(1).ok()?);
    let bias = a.opt_tensor(2).ok()?;
    let float = |t: &Tensor| matches!(t.dtype(), DType::F32 | DType::F64) && t.dtype() == x.dtype() && t.is_contiguous();
    if !float(x) || !float(w) || !bias.is_none_or(float) || x.dim() != w.dim() || a.bool(6).ok()? {
        return None;
    }
    // The lists are read in place: this runs on every call of a convolution.
    let ints = |i: usize| -> Option<Cow<'_, [i64]>> {
        match args.get(i)? {
            IValue::IntList(v) => Some(Cow::Borrowed(v.as_slice())),
            IValue::Int(v) => Some(Cow::Borrowed(std::slice::from_ref(v))),
            v => v.as_int_list().ok().map(Cow::Owned),
        }
    };
    let ca = ConvArgs {
        stride: ints(3)?,
        padding: Padding::Explicit(ints(4)?),
        dilation: ints(5)?,
        transposed: false,
        output_padding: ints(7)?,
        groups: a.int(8).ok()?,
    };
    let g = geometry(OP, x.sizes(), w.sizes(), bias.map(|b| b.sizes()), &ca).ok()?;
    let sizes = g.result_sizes(w.dim() - 2);
    Some((g, sizes))
}

/// Padding of a convolution: explicit per-dim amounts, or PyTorch's `"same"`/`"valid"`.
#[derive(Debug)]
pub(crate) enum Padding<'a> {
    Explicit(Cow<'a, [i64]>),
    Same,
    Valid,
}

/// Options of a convolution as its ATen arguments give them (borrowed from a call's
/// arguments, or owned by a kernel built at compile time).
#[derive(Debug)]
pub(crate) struct ConvArgs<'a> {
    pub stride: Cow<'a, [i64]>,
    pub padding: Padding<'a>,
    pub dilation: Cow<'a, [i64]>,
    pub transposed: bool,
    pub output_padding: Cow<'a, [i64]>,
    pub groups: i64,
}

/// A per-dim option of `d` spatial dims, one value broadcast to all or one per dim (inline
/// for up to three dims).
pub(super) fn expand_param(op: &'static str, name: &str, v: &[i64], d: usize) -> Result<SmallVec<[i64; 3]>> {
    if v.iter().any(|x| x.unsigned_abs() > i32::MAX as u64) {
        return Err(KernelError::new(op, format!("{name} {v:?} is out of range")));
    }
    match v.len() {
        1 => Ok(smallvec![v[0]; d]),
        l if l == d => Ok(SmallVec::from_slice(v)),
        l => Err(KernelError::new(op, format!("expected {name} to have 1 or {d} elements, got {l}"))),
    }
}

/// A computed output size, or an error if it does not fit.
pub(super) fn fit(op: &'static str, v: i128) -> Result<usize> {
    usize::try_from(v).map_err(|_| KernelError::new(op, format!("output size {v} is out of range")))
}

/// Validates the arguments and computes the geometry (with the padding of each side).
pub(crate) fn geometry(op: &'static str, x: &[usize], w: &[usize], bias: Option<&[usize]>, a: &ConvArgs) -> Result<Geometry> {
    let wd = w.len();
    if !(3..=5).contains(&wd) {
        return Err(KernelError::new(op, format!("weight must be 3-D, 4-D or 5-D, got {wd}-D {w:?}")));
    }
    let d = wd - 2;
    if x.len() != wd {
        return Err(KernelError::new(
            op,
            format!("expected a {wd}-D input for {wd}-D weight {w:?}, got input of shape {x:?}"),
        ));
    }
    let stride = expand_param(op, "stride", &a.stride, d)?;
    let dilation = expand_param(op, "dilation", &a.dilation, d)?;
    if stride.iter().any(|&s| s <= 0) {
        return Err(KernelError::new(op, format!("stride must be positive, got {stride:?}")));
    }
    if dilation.iter().any(|&s| s <= 0) {
        return Err(KernelError::new(op, format!("dilation must be positive, got {dilation:?}")));
    }
    if a.groups <= 0 {
        return Err(KernelError::new(op, format!("groups must be positive, got {}", a.groups)));
    }
    let groups = a.groups as usize;
    let (n, cin) = (x[0], x[1]);
    let kernel = &w[2..];
    let cout = if a.transposed {
        if w[0] != cin {
            return Err(KernelError::new(
                op,
                format!("input {x:?} has {cin} channels but the transposed weight {w:?} expects {}", w[0]),
            ));
        }
        if cin % groups != 0 {
            return Err(KernelError::new(op, format!("input channels {cin} are not divisible by groups {groups}")));
        }
        w[1] * groups
    } else {
        if w[1] * groups != cin {
            return Err(KernelError::new(
                op,
                format!(
                    "input {x:?} has {cin} channels but weight {w:?} with groups={groups} expects {}",
                    w[1] * groups
                ),
            ));
        }
        if !w[0].is_multiple_of(groups) {
            return Err(KernelError::new(op, format!("output channels {} are not divisible by groups {groups}", w[0])));
        }
        w[0]
    };
    if let Some(b) = bias
        && (b.len() != 1 || b[0] != cout)
    {
        return Err(KernelError::new(op, format!("bias of shape {b:?} does not match {cout} output channels")));
    }
    type Dims = SmallVec<[usize; 3]>;
    let (lo, hi): (Dims, Dims) = match &a.padding {
        Padding::Valid => (smallvec![0; d], smallvec![0; d]),
        Padding::Explicit(p) => {
            let p = expand_param(op, "padding", p, d)?;
            if p.iter().any(|&v| v < 0) {
                return Err(KernelError::new(op, format!("padding must be non-negative, got {p:?}")));
            }
            (p.iter().map(|&v| v as usize).collect(), p.iter().map(|&v| v as usize).collect())
        }
        Padding::Same => {
            if stride.iter().any(|&s| s != 1) {
                return Err(KernelError::new(op, "padding='same' is not supported for strided convolutions"));
            }
            let total: Dims = (0..d).map(|i| dilation[i] as usize * kernel[i].saturating_sub(1)).collect();
            (total.iter().map(|t| t / 2).collect(), total.iter().map(|t| t - t / 2).collect())
        }
    };
    let mut out: Dims = smallvec![0; d];
    if a.transposed {
        let op_pad = expand_param(op, "output_padding", &a.output_padding, d)?;
        for i in 0..d {
            let (s, dl) = (stride[i] as usize, dilation[i] as usize);
            let opd =
                usize::try_from(op_pad[i]).map_err(|_| KernelError::new(op, "output_padding must be non-negative"))?;
            if opd >= s && opd >= dl {
                return Err(KernelError::new(
                    op,
                    format!("output padding must be smaller than either stride or dilation, got {op_pad:?}"),
                ));
            }
            let full = (x[2 + i].max(1) as i128 - 1) * s as i128
                + dl as i128 * (kernel[i].max(1) as i128 - 1)
                + opd as i128
                + 1;
            let size = if x[2 + i] == 0 { 0 } else { full - (lo[i] + hi[i]) as i128 };
            if size <= 0 && x[2 + i] != 0 {
                return Err(KernelError::new(op, format!("output size is too small for input {x:?}")));
            }
            out[i] = fit(op, size.max(0))?;
        }
    } else {
        for i in 0..d {
            let (s, dl) = (stride[i] as usize, dilation[i] as usize);
            let padded = fit(op, x[2 + i] as i128 + lo[i] as i128 + hi[i] as i128)?;
            let span = fit(op, dl as i128 * (kernel[i].max(1) as i128 - 1) + 1)?;
            if kernel[i] == 0 || padded < span {
                return Err(KernelError::new(
                    op,
                    format!("kernel {kernel:?} (dilation {dilation:?}) is larger than the padded input {x:?}"),
                ));
            }
            out[i] = (padded - span) / s + 1;
        }
    }
    let pad3 = |v: &[usize], fill: usize| -> [usize; 3] {
        let mut r = [fill; 3];
        r[3 - v.len()..].copy_from_slice(v);
        r
    };
    let geo = Geometry {
        n,
        cin,
        cout,
        groups,
        input: pad3(&x[2..], 1),
        kernel: pad3(&kernel, 1),
        output: pad3(&out, 1),
        stride: pad3(&stride.iter().map(|&v| v as usize).collect::<Dims>(), 1),
        pad_lo: pad3(&lo, 0),
        dilation: pad3(&dilation.iter().map(|&v| v as usize).collect::<Dims>(), 1),
        transposed: a.transposed,
    };
    Ok(geo)
}

/// Convolution of tensors with PyTorch's semantics (unbatched inputs accepted).
pub(crate) fn convolution_tensors(
    op: &'static str,
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    a: &ConvArgs,
) -> Result<Tensor> {
    if x.dtype() != w.dtype() || bias.is_some_and(|b| b.dtype() != x.dtype()) {
        return Err(KernelError::new(
            op,
            format!(
                "input ({}), weight ({}) and bias must have the same dtype",
                x.dtype().torch_name(),
                w.dtype().torch_name()
            ),
        ));
    }
    let unbatched = x.dim() + 1 == w.dim();
    let mut xs = x.sizes().to_vec();
    if unbatched {
        xs.insert(0, 1);
    }
    let g = geometry(op, &xs, w.sizes(), bias.map(|b| b.sizes()), a)?;
    let mut out_sizes = vec![g.n, g.cout];
    out_sizes.extend_from_slice(&g.output[3 - (w.dim() - 2)..]);
    let mut ts = vec![x, w];
    ts.extend(bias);
    if matches!(x.dtype(), DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64) {
        let xd = x.to_dtype(DType::I64)?.to_vec::<i64>()?;
        let wd = w.to_dtype(DType::I64)?.to_vec::<i64>()?;
        let bd = bias.map(|b| b.to_dtype(DType::I64)?.to_vec::<i64>()).transpose()?;
        let r = Tensor::build::<i64>(&out_sizes, |out| conv_compute(op, &g, &xd, &wd, bd.as_deref(), out))?
            .to_dtype(x.dtype())?;
        return if unbatched { super::super::linalg::reshape_contiguous(&r, &out_sizes[1..]) } else { Ok(r) };
    }
    let r = widen_halves(&ts, |t| {
        super::super::linalg::with_real!(op, t[0].dtype(), T => {
            let xc = t[0].contiguous()?;
            let wc = t[1].contiguous()?;
            let bc = t.get(2).map(|b| b.contiguous()).transpose()?;
            let bias_data = match &bc {
                Some(b) => Some(b.as_slice::<T>()?),
                None => None,
            };
            let (xd, wd) = (xc.as_slice::<T>()?, wc.as_slice::<T>()?);
            Tensor::build::<T>(&out_sizes, |out| conv_compute(op, &g, xd, wd, bias_data, out))
        })
    })?;
    if unbatched { super::super::linalg::reshape_contiguous(&r, &out_sizes[1..]) } else { Ok(r) }
}

pub(super) fn convolution(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::CONVOLUTION.name();
    let a = Args::new(OP, args, 9)?;
    let ca = ConvArgs {
        stride: a.int_list(3)?.into(),
        padding: Padding::Explicit(a.int_list(4)?.into()),
        dilation: a.int_list(5)?.into(),
        transposed: a.bool(6)?,
        output_padding: a.int_list(7)?.into(),
        groups: a.int(8)?,
    };
    Ok(outs([convolution_tensors(OP, a.tensor(0)?, a.tensor(1)?, a.opt_tensor(2)?, &ca)?]))
}

/// `convNd(input, weight, bias, stride, padding, dilation, groups)`, where padding is an int
/// list or (the `.padding` overloads) `"same"`/`"valid"`.
pub(super) fn conv_nd(op: &'static str, d: usize, args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op, args, 2)?;
    let w = a.tensor(1)?;
    if w.dim() != d + 2 {
        return Err(KernelError::new(op, format!("expected a {}-D weight, got {:?}", d + 2, w.sizes())));
    }
    let list_or = |i: usize, default: i64| -> Result<Vec<i64>> {
        if a.get(i).is_none() { Ok(vec![default; d]) } else { a.int_list(i) }
    };
    let padding = match a.get(4) {
        IValue::Str(s) => match &**s {
            "same" => Padding::Same,
            "valid" => Padding::Valid,
            other => return Err(KernelError::new(op, format!("invalid padding string '{other}'"))),
        },
        IValue::None => Padding::Explicit(vec![0; d].into()),
        _ => Padding::Explicit(a.int_list(4)?.into()),
    };
    let ca = ConvArgs {
        stride: list_or(3, 1)?.into(),
        padding,
        dilation: list_or(5, 1)?.into(),
        transposed: false,
        output_padding: vec![0; d].into(),
        groups: a.opt_int(6)?.unwrap_or(1),
    };
    Ok(outs([convolution_tensors(op, a.tensor(0)?, w, a.opt_tensor(2)?, &ca)?]))
}

/// `conv_transposeNd(input, weight, bias, stride, padding, output_padding, groups, dilation)`.
pub(super) fn conv_transpose_nd(op: &'static str, d: usize, args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op, args, 2)?;
    let w = a.tensor(1)?;
    if w.dim() != d + 2 {
        return Err(KernelError::new(op, format!("expected a {}-D weight, got {:?}", d + 2, w.sizes())));
    }
    let list_or = |i: usize, default: i64| -> Result<Vec<i64>> {
        if a.get(i).is_none() { Ok(vec![default; d]) } else { a.int_list(i) }
    };
    let ca = ConvArgs {
        stride: list_or(3, 1)?.into(),
        padding: Padding::Explicit(list_or(4, 0)?.into()),
        output_padding: list_or(5, 0)?.into(),
        groups: a.opt_int(6)?.unwrap_or(1),
        dilation: list_or(7, 1)?.into(),
        transposed: true,
    };
    Ok(outs([convolution_tensors(op, a.tensor(0)?, w, a.opt_tensor(2)?, &ca)?]))
}

pub(super) fn conv1d(args: &[IValue]) -> Result<Vec<IValue>> {
    conv_nd(op::CONV1D.name(), 1, args)
}
pub(super) fn conv2d(args: &[IValue]) -> Result<Vec<IValue>> {
    conv_nd(op::CONV2D.name(), 2, args)
}
pub(super) fn conv3d(args: &[IValue]) -> Result<Vec<IValue>> {
    conv_nd(op::CONV3D.name(), 3, args)
}
pub(super) fn conv1d_padding(args: &[IValue]) -> Result<Vec<IValue>> {
    conv_nd(op::CONV1D_PADDING.name(), 1, args)
}
pub(super) fn conv2d_padding(args: &[IValue]) -> Result<Vec<IValue>> {
    conv_nd(op::CONV2D_PADDING.name(), 2, args)
}
pub(super) fn conv3d_padding(args: &[IValue]) -> Result<Vec<IValue>> {
    conv_nd(op::CONV3D_PADDING.name(), 3, args)
}
pub(super) fn conv_transpose1d(args: &[IValue]) -> Result<Vec<IValue>> {
    conv_transpose_nd(op::CONV_TRANSPOSE1D.name(), 1, args)
}
pub(super) fn conv_transpose2d(args: &[IValue]) -> Result<Vec<IValue>> {
    conv_transpose_nd(op::CONV_TRANSPOSE2D_INPUT.name(), 2, args)
}
pub(super) fn conv_transpose3d(args: &[IValue]) -> Result<Vec<IValue>> {
    conv_transpose_nd(op::CONV_TRANSPOSE3D_INPUT.name(), 3, args)
}
