//! The column matrix of a convolution (im2col) and its scatter back (col2im), a band of output
//! rows at a time, and the `aten.im2col`/`aten.col2im` ops over them (`F.unfold`/`F.fold`).

use super::*;

/// Column matrix of one group of one image: rows `c·K + k` (channel, kernel offset), columns
/// the output positions; out-of-range taps are zero.
pub(crate) fn im2col<T: ConvElem>(x: &[T], g: &Geometry, channels: usize, col: &mut [T]) {
    let [od, oh, _] = g.output;
    im2col_rows(x, g, channels, 0, od * oh, col);
}

/// The columns of output rows `r0..r1` (a row is one `(z, y)` pair of `ow` positions) of the
/// column matrix, as a `[channels·K, (r1 - r0)·ow]` row-major matrix.
///
/// Which input columns a row of taps reads depends only on the tap's column offset, so it is
/// worked out once per tap row ([`Span`]), not per output row. When the input and output rows
/// are equally long and both strides along rows are 1 (a "same" convolution), consecutive
/// output rows read consecutive input rows at the distance they are written at: a run of
/// them is one copy, after which the few padding positions between rows are zeroed again.
pub(super) fn im2col_rows<T: ConvElem>(x: &[T], g: &Geometry, channels: usize, r0: usize, r1: usize, col: &mut [T]) {
    let [ki, kj, kk] = g.kernel;
    let [id, ih, iw] = g.input;
    let [_, oh, ow] = g.output;
    if r0 >= r1 || ow == 0 {
        return;
    }
    let l = (r1 - r0) * ow;
    let merge = g.stride[1] == 1 && g.stride[2] == 1 && iw == ow;
    let plane = id * ih * iw;
    let mut row = 0;
    for c in 0..channels {
        let xc = &x[c * plane..(c + 1) * plane];
        for a in 0..ki {
            for b in 0..kj {
                for e in 0..kk {
                    let dst = &mut col[row * l..(row + 1) * l];
                    row += 1;
                    let span = Span::new(e * g.dilation[2], g.stride[2], g.pad_lo[2], iw, ow);
                    let (mut z, mut y) = (r0 / oh, r0 % oh);
                    let mut r = r0;
                    while r < r1 {
                        let iz = (z * g.stride[0] + a * g.dilation[0]) as isize - g.pad_lo[0] as isize;
                        let iy = (y * g.stride[1] + b * g.dilation[1]) as isize - g.pad_lo[1] as isize;
                        let base = (r - r0) * ow;
                        // Rows taken together: one, or with `merge` the run of in-range rows
                        // of this `z` (their input rows are consecutive).
                        let mut n = 1;
                        if iz < 0 || iz >= id as isize || iy < 0 || iy >= ih as isize {
                            dst[base..base + ow].fill(T::ZERO);
                        } else {
                            let src0 = (iz as usize * ih + iy as usize) * iw;
                            if merge {
                                while r + n < r1 && y + n < oh && iy as usize + n < ih {
                                    n += 1;
                                }
                                span.copy_rows(&xc[src0..], &mut dst[base..base + n * ow], n, ow);
                            } else {
                                span.copy_row(&xc[src0..src0 + iw], &mut dst[base..base + ow], g.stride[2]);
                            }
                        }
                        r += n;
                        y += n;
                        if y >= oh {
                            y = 0;
                            z += 1;
                        }
                    }
                }
            }
        }
    }
}

/// Elements of one tile of the column matrix: the matrix is built and multiplied a band of
/// output rows at a time, so it stays in the L2 cache between im2col and the GEMM's packing.
pub(super) const COL_TILE: usize = 1 << 17;

/// The in-range outputs of one row of a column matrix for one tap column: `dst[xo] =
/// src[xo·stride + x0 - pad]`, zero where that index falls outside the input row. The
/// in-range outputs form the interval `lo..hi`, which reads from `first` on.
#[derive(Clone, Copy, Debug)]
pub(super) struct Span {
    pub(super) lo: usize,
    pub(super) hi: usize,
    pub(super) first: usize,
}

impl Span {
    pub(super) fn new(x0: usize, stride: usize, pad: usize, iw: usize, ow: usize) -> Span {
        let s = stride.max(1);
        // First output whose input index is >= 0, and first whose index is >= iw.
        let lo = pad.saturating_sub(x0).div_ceil(s).min(ow);
        let hi = (iw + pad).saturating_sub(x0).div_ceil(s).clamp(lo, ow);
        let first = if hi > lo { lo * s + x0 - pad } else { 0 };
        Span { lo, hi, first }
    }

    /// One output row from the input row `src`.
    #[inline]
    pub(super) fn copy_row<T: ConvElem>(&self, src: &[T], dst: &mut [T], stride: usize) {
        let Span { lo, hi, first } = *self;
        zero_run(&mut dst[..lo]);
        zero_run(&mut dst[hi..]);
        if hi > lo {
            if stride <= 1 {
                dst[lo..hi].copy_from_slice(&src[first..first + (hi - lo)]);
            } else {
                for (d, &v) in dst[lo..hi].iter_mut().zip(src[first..].iter().step_by(stride)) {
                    *d = v;
                }
            }
        }
    }

    /// `n` consecutive output rows of `w` elements from the consecutive input rows starting
    /// at `src`, rows `w` apart in both (unit strides): one copy of the whole run, then the
    /// out-of-range positions of every row set to zero.
    #[inline]
    pub(super) fn copy_rows<T: ConvElem>(&self, src: &[T], dst: &mut [T], n: usize, w: usize) {
        let Span { lo, hi, first } = *self;
        if hi > lo {
            let len = (n - 1) * w + (hi - lo);
            dst[lo..lo + len].copy_from_slice(&src[first..first + len]);
        }
        for row in dst.chunks_exact_mut(w) {
            zero_run(&mut row[..lo]);
            zero_run(&mut row[hi..]);
        }
    }
}

/// Sets a run of a column-tile row to zero; the runs are padding, mostly zero or one element
/// long, where a call into the C library's `memset` would cost more than the stores.
#[inline(always)]
pub(super) fn zero_run<T: ConvElem>(dst: &mut [T]) {
    match dst {
        [] => {}
        [d] => *d = T::ZERO,
        _ => dst.fill(T::ZERO),
    }
}

/// Adds the column matrix of a transposed convolution into its output: the inverse gather of
/// `im2col`, where `g.input` is the transposed convolution's input (the columns) and
/// `g.output` its output.
pub(crate) fn col2im<T: ConvElem>(col: &[T], g: &Geometry, channels: usize, out: &mut [T]) {
    let [ki, kj, kk] = g.kernel;
    let [id, ih, iw] = g.input;
    let [od, oh, ow] = g.output;
    let l = g.in_numel();
    let mut row = 0;
    for c in 0..channels {
        let oc = &mut out[c * od * oh * ow..(c + 1) * od * oh * ow];
        for a in 0..ki {
            for b in 0..kj {
                for e in 0..kk {
                    let src = &col[row * l..(row + 1) * l];
                    row += 1;
                    for z in 0..id {
                        let oz = (z * g.stride[0] + a * g.dilation[0]) as isize - g.pad_lo[0] as isize;
                        if oz < 0 || oz >= od as isize {
                            continue;
                        }
                        for y in 0..ih {
                            let oy = (y * g.stride[1] + b * g.dilation[1]) as isize - g.pad_lo[1] as isize;
                            if oy < 0 || oy >= oh as isize {
                                continue;
                            }
                            let srow = &src[(z * ih + y) * iw..(z * ih + y + 1) * iw];
                            let orow = &mut oc
                                [(oz as usize * oh + oy as usize) * ow..(oz as usize * oh + oy as usize + 1) * ow];
                            let x0 = e * g.dilation[2];
                            for (xi, &v) in srow.iter().enumerate() {
                                let ox = (xi * g.stride[2] + x0) as isize - g.pad_lo[2] as isize;
                                if ox >= 0 && (ox as usize) < ow {
                                    orow[ox as usize] = orow[ox as usize].plus(v);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}


/// Sliding-block options shared by `im2col` and `col2im`: kernel, dilation, padding, stride
/// (two elements each, or one broadcast to both).
pub(super) fn block_options(op: &'static str, a: &Args<'_>, first: usize) -> Result<[[usize; 2]; 4]> {
    let mut out = [[0usize; 2]; 4];
    let names = ["kernel_size", "dilation", "padding", "stride"];
    for (k, name) in names.iter().enumerate() {
        let v = expand_param(op, name, &a.int_list(first + k)?, 2)?;
        let positive = k != 2;
        for (j, &x) in v.iter().enumerate() {
            if x < 0 || (positive && x == 0) {
                return Err(KernelError::new(
                    op,
                    format!("{name} must be {}, got {v:?}", if positive { "positive" } else { "non-negative" }),
                ));
            }
            out[k][j] = x as usize;
        }
    }
    Ok(out)
}

/// Number of sliding blocks along a dim.
pub(super) fn blocks(op: &'static str, size: usize, k: usize, d: usize, p: usize, s: usize) -> Result<usize> {
    let span = fit(op, d as i128 * (k as i128 - 1) + 1)?;
    if size as i128 + 2 * p as i128 > i64::MAX as i128 {
        return Err(KernelError::new(op, format!("padded size of {size} is out of range")));
    }
    if size + 2 * p < span {
        return Err(KernelError::new(
            op,
            format!("kernel span {span} is larger than the padded input size {}", size + 2 * p),
        ));
    }
    Ok((size + 2 * p - span) / s + 1)
}

/// Runs `f` over contiguous data of a float (computed in `f32`/`f64`) or integer (computed in
/// wrapping `i64`) tensor, producing a tensor of `x`'s dtype with sizes `out_sizes`.
pub(super) fn with_conv_elem(
    op: &'static str,
    x: &Tensor,
    out_sizes: &[usize],
    f32f: impl FnOnce(&[f32], &mut [f32]),
    f64f: impl FnOnce(&[f64], &mut [f64]),
    i64f: impl FnOnce(&[i64], &mut [i64]),
) -> Result<Tensor> {
    let dt = x.dtype();
    let r = match dt {
        DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64 => {
            let xd = x.to_dtype(DType::I64)?.to_vec::<i64>()?;
            Tensor::build::<i64>(out_sizes, |out| {
                i64f(&xd, out);
                Ok(())
            })?
        }
        DType::F64 => {
            let xd = x.to_vec::<f64>()?;
            Tensor::build::<f64>(out_sizes, |out| {
                f64f(&xd, out);
                Ok(())
            })?
        }
        DType::F32 | DType::F16 | DType::BF16 => {
            let xd = x.to_dtype(DType::F32)?.to_vec::<f32>()?;
            Tensor::build::<f32>(out_sizes, |out| {
                f32f(&xd, out);
                Ok(())
            })?
        }
        DType::Bool => return Err(KernelError::new(op, "not implemented for dtype bool")),
        DType::C64 | DType::C128 => return Err(crate::kernels::complex::refuse(op, dt)),
    };
    r.cast_to(dt)
}

/// `im2col(self, kernel_size, dilation, padding, stride)`: `[N, C, H, W]` to
/// `[N, C·kh·kw, L]` sliding blocks (`F.unfold`).
pub(super) fn im2col_op(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::IM2COL.name();
    let a = Args::new(OP, args, 5)?;
    let x = a.tensor(0)?;
    let [k, d, p, s] = block_options(OP, &a, 1)?;
    let batched = x.dim() == 4;
    if x.dim() != 3 && !batched {
        return Err(KernelError::new(OP, format!("expected a 3-D or 4-D input, got {:?}", x.sizes())));
    }
    let sz = x.sizes();
    let (n, c, h, w) = if batched { (sz[0], sz[1], sz[2], sz[3]) } else { (1, sz[0], sz[1], sz[2]) };
    let (bh, bw) = (blocks(OP, h, k[0], d[0], p[0], s[0])?, blocks(OP, w, k[1], d[1], p[1], s[1])?);
    let g = Geometry {
        n,
        cin: c,
        cout: c,
        groups: 1,
        input: [1, h, w],
        kernel: [1, k[0], k[1]],
        output: [1, bh, bw],
        stride: [1, s[0], s[1]],
        pad_lo: [0, p[0], p[1]],
        dilation: [1, d[0], d[1]],
        transposed: false,
    };
    let rows = c * k[0] * k[1];
    let l = bh * bw;
    let out_sizes = if batched { vec![n, rows, l] } else { vec![rows, l] };
    let (img, colsz) = (c * h * w, rows * l);
    let r = with_conv_elem(
        OP,
        x,
        &out_sizes,
        |xd, out| (0..n).for_each(|b| im2col(&xd[b * img..(b + 1) * img], &g, c, &mut out[b * colsz..(b + 1) * colsz])),
        |xd, out| (0..n).for_each(|b| im2col(&xd[b * img..(b + 1) * img], &g, c, &mut out[b * colsz..(b + 1) * colsz])),
        |xd, out| (0..n).for_each(|b| im2col(&xd[b * img..(b + 1) * img], &g, c, &mut out[b * colsz..(b + 1) * colsz])),
    )?;
    Ok(outs([r]))
}

/// `col2im(self, output_size, kernel_size, dilation, padding, stride)`: sums sliding blocks
/// `[N, C·kh·kw, L]` back into `[N, C, H, W]` (`F.fold`).
pub(super) fn col2im_op(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::COL2IM.name();
    let a = Args::new(OP, args, 6)?;
    let x = a.tensor(0)?;
    let size = expand_param(OP, "output_size", &a.int_list(1)?, 2)?;
    if size.iter().any(|&v| v <= 0) {
        return Err(KernelError::new(OP, format!("output_size must be positive, got {size:?}")));
    }
    let (h, w) = (size[0] as usize, size[1] as usize);
    let [k, d, p, s] = block_options(OP, &a, 2)?;
    let batched = x.dim() == 3;
    if x.dim() != 2 && !batched {
        return Err(KernelError::new(OP, format!("expected a 2-D or 3-D input, got {:?}", x.sizes())));
    }
    let sz = x.sizes();
    let (n, rows, l) = if batched { (sz[0], sz[1], sz[2]) } else { (1, sz[0], sz[1]) };
    let kk = k[0] * k[1];
    if rows % kk != 0 {
        return Err(KernelError::new(
            OP,
            format!("dim 1 of the input ({rows}) must be divisible by the kernel area {kk}"),
        ));
    }
    let (bh, bw) = (blocks(OP, h, k[0], d[0], p[0], s[0])?, blocks(OP, w, k[1], d[1], p[1], s[1])?);
    if bh * bw != l {
        return Err(KernelError::new(
            OP,
            format!("expected {} sliding blocks ({bh}x{bw}) for output size {size:?}, got {l}", bh * bw),
        ));
    }
    let c = rows / kk;
    let g = Geometry {
        n,
        cin: c,
        cout: c,
        groups: 1,
        input: [1, bh, bw],
        kernel: [1, k[0], k[1]],
        output: [1, h, w],
        stride: [1, s[0], s[1]],
        pad_lo: [0, p[0], p[1]],
        dilation: [1, d[0], d[1]],
        transposed: true,
    };
    let out_sizes = if batched { vec![n, c, h, w] } else { vec![c, h, w] };
    let img = c
        .checked_mul(h)
        .and_then(|v| v.checked_mul(w))
        .ok_or_else(|| KernelError::new(OP, format!("output size {size:?} is out of range")))?;
    let colsz = rows * l;
    let r = with_conv_elem(
        OP,
        x,
        &out_sizes,
        |xd, out| (0..n).for_each(|b| col2im(&xd[b * colsz..(b + 1) * colsz], &g, c, &mut out[b * img..(b + 1) * img])),
        |xd, out| (0..n).for_each(|b| col2im(&xd[b * colsz..(b + 1) * colsz], &g, c, &mut out[b * img..(b + 1) * img])),
        |xd, out| (0..n).for_each(|b| col2im(&xd[b * colsz..(b + 1) * colsz], &g, c, &mut out[b * img..(b + 1) * img])),
    )?;
    Ok(outs([r]))
}
