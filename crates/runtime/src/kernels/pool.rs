//! Pooling kernels: max pooling with indices (1/2/3-d, padding, dilation, ceil mode) and its
//! backward, average pooling (padding, `count_include_pad`, `divisor_override`, ceil mode) and
//! adaptive average and max pooling.
//!
//! All of them run over "planes" (every leading non-spatial dim flattened) with the spatial
//! dims padded to three, so 1-d and 2-d pooling are 3-d pooling with unit leading dims.
//! Inputs may be batched (`[N, C, ...]`) or not (`[C, ...]`). Max pooling follows PyTorch's
//! NaN rule (a NaN wins, and a later NaN replaces an earlier one) and reports flat indices
//! into each input plane.

use dialect_aten::op;
use ir::DType;

use super::linalg::{Real, outs};
use super::{Args, KernelRegistry};
use crate::dispatch_dtype;
use crate::tensor::{Element, KernelError, Result, Tensor};
use crate::value::IValue;

/// Pooling geometry, spatial dims padded to three.
#[derive(Clone, Debug)]
struct PoolGeo {
    planes: usize,
    input: [usize; 3],
    output: [usize; 3],
    kernel: [usize; 3],
    stride: [usize; 3],
    pad: [usize; 3],
    dilation: [usize; 3],
}

impl PoolGeo {
    fn in_numel(&self) -> usize {
        self.input.iter().product()
    }
    fn out_numel(&self) -> usize {
        self.output.iter().product()
    }
}

fn pad3(v: &[usize], fill: usize) -> [usize; 3] {
    let mut r = [fill; 3];
    r[3 - v.len()..].copy_from_slice(v);
    r
}

fn expand(op: &'static str, name: &str, v: &[i64], d: usize, default: Option<&[i64]>) -> Result<Vec<usize>> {
    let v = if v.is_empty() {
        default.ok_or_else(|| KernelError::new(op, format!("{name} must not be empty")))?
    } else {
        v
    };
    if v.iter().any(|x| x.unsigned_abs() > i32::MAX as u64) {
        return Err(KernelError::new(op, format!("{name} {v:?} is out of range")));
    }
    let v = match v.len() {
        1 => vec![v[0]; d],
        l if l == d => v.to_vec(),
        l => return Err(KernelError::new(op, format!("{name} must have 1 or {d} elements, got {l}"))),
    };
    v.iter()
        .map(|&x| {
            usize::try_from(x).map_err(|_| KernelError::new(op, format!("{name} must be non-negative, got {v:?}")))
        })
        .collect()
}

/// PyTorch's `pooling_output_shape`.
pub(crate) fn pooled_size(input: usize, k: usize, pad: usize, stride: usize, dil: usize, ceil: bool) -> isize {
    let (i, k, p, s, d) = (input as isize, k as isize, pad as isize, stride as isize, dil as isize);
    let num = i + 2 * p - d * (k - 1) - 1 + if ceil { s - 1 } else { 0 };
    let mut out = num.div_euclid(s) + 1;
    if ceil && (out - 1) * s >= i + p {
        out -= 1;
    }
    out
}

/// Validates a windowed pooling and computes its geometry and output sizes.
#[allow(clippy::too_many_arguments)]
fn window_geometry(
    op: &'static str,
    sizes: &[usize],
    d: usize,
    kernel: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil: bool,
) -> Result<(PoolGeo, Vec<usize>)> {
    if sizes.len() != d + 1 && sizes.len() != d + 2 {
        return Err(KernelError::new(op, format!("expected a {}-D or {}-D input, got {sizes:?}", d + 1, d + 2)));
    }
    let k = expand(op, "kernel_size", kernel, d, None)?;
    let s = expand(op, "stride", stride, d, Some(kernel))?;
    let p = expand(op, "padding", padding, d, Some(&[0]))?;
    let dl = expand(op, "dilation", dilation, d, Some(&[1]))?;
    if k.contains(&0) || s.contains(&0) || dl.contains(&0) {
        return Err(KernelError::new(
            op,
            format!("kernel_size {k:?}, stride {s:?} and dilation {dl:?} must be positive"),
        ));
    }
    for i in 0..d {
        if p[i] > ((k[i] - 1) * dl[i]).div_ceil(2) {
            return Err(KernelError::new(
                op,
                format!("pad should be at most half of effective kernel size, got padding {p:?} for kernel {k:?}"),
            ));
        }
    }
    let lead = sizes.len() - d;
    let spatial = &sizes[lead..];
    let mut out = Vec::with_capacity(d);
    for i in 0..d {
        let o = pooled_size(spatial[i], k[i], p[i], s[i], dl[i], ceil);
        if o < 1 {
            return Err(KernelError::new(op, format!("output size is too small for input {sizes:?} (kernel {k:?})")));
        }
        out.push(o as usize);
    }
    let mut out_sizes = sizes[..lead].to_vec();
    out_sizes.extend(&out);
    let geo = PoolGeo {
        planes: sizes[..lead].iter().product(),
        input: pad3(spatial, 1),
        output: pad3(&out, 1),
        kernel: pad3(&k, 1),
        stride: pad3(&s, 1),
        pad: pad3(&p, 0),
        dilation: pad3(&dl, 1),
    };
    Ok((geo, out_sizes))
}

/// Whether `v` is NaN (false for non-float types).
#[inline(always)]
#[allow(clippy::eq_op)]
fn is_nan<T: PartialEq>(v: T) -> bool {
    v != v
}

/// PyTorch's max-pool update rule: a larger value or any NaN replaces the current maximum.
#[inline(always)]
fn replaces<T: PartialOrd>(v: T, current: T) -> bool {
    (v > current) | is_nan(v)
}

/// The taps `a` of a window starting at `start` (`k` taps, `dil` apart) that land inside
/// `0..n`.
#[inline(always)]
fn in_range(start: isize, k: usize, dil: usize, n: usize) -> std::ops::Range<usize> {
    if dil == 1 {
        // The common case, without the divisions (which would cost more than the window).
        let lo = (-start).clamp(0, k as isize) as usize;
        let hi = (n as isize - start).clamp(lo as isize, k as isize) as usize;
        return lo..hi;
    }
    let lo = if start < 0 { (start.unsigned_abs()).div_ceil(dil).min(k) } else { 0 };
    let room = n as isize - start;
    let hi = if room <= 0 { 0 } else { ((room as usize).div_ceil(dil)).min(k) };
    lo..hi.max(lo)
}

/// Max pooling of every plane: each output visits its window's in-range taps in order
/// (depth, row, column), so the first maximum wins and a NaN replaces anything before it.
/// Planes split across the intra-op team when there is enough work.
fn max_pool_typed<T: Element + PartialOrd + Send + Sync>(g: &PoolGeo, x: &[T], vals: &mut [T], idxs: &mut [i64]) {
    let (inn, outn) = (g.in_numel(), g.out_numel());
    let work = g.planes * outn * g.kernel.iter().product::<usize>();
    let threads = crate::parallel::threads();
    let tasks = if threads > 1 && work >= 1 << 16 { (threads * 4).min(g.planes) } else { 1 };
    let (vp, ip) = (crate::parallel::SharedOut(vals.as_mut_ptr()), crate::parallel::SharedOut(idxs.as_mut_ptr()));
    crate::parallel::for_each(tasks, |t| {
        for pl in g.planes * t / tasks..g.planes * (t + 1) / tasks {
            // SAFETY: `vals` and `idxs` hold `planes·outn` elements (the caller built them of
            // the output's size); each plane is written by the one task that owns it.
            let (v, i) = unsafe {
                (
                    std::slice::from_raw_parts_mut(vp.get().add(pl * outn), outn),
                    std::slice::from_raw_parts_mut(ip.get().add(pl * outn), outn),
                )
            };
            max_pool_plane(g, &x[pl * inn..(pl + 1) * inn], v, i);
        }
    });
}

/// Outputs whose running maxima one pass over a row's windows keeps at once.
const LANES: usize = 8;

/// [`max_pool_typed`] of one plane: each window's in-range taps (its bounds worked out once
/// per output, not tested per tap) in order, the first maximum winning.
fn max_pool_plane<T: Element + PartialOrd>(g: &PoolGeo, xp: &[T], vals: &mut [T], idxs: &mut [i64]) {
    let [id, ih, iw] = g.input;
    let [od, oh, ow] = g.output;
    let start = |o: usize, d: usize| (o * g.stride[d]) as isize - g.pad[d] as isize;
    for z in 0..od {
        let za = in_range(start(z, 0), g.kernel[0], g.dilation[0], id);
        for y in 0..oh {
            let yb = in_range(start(y, 1), g.kernel[1], g.dilation[1], ih);
            // The outputs whose windows lie wholly inside the row go `LANES` at a time: their
            // running maxima are independent chains, which a single output's one chain of
            // compare-and-select would leave waiting on each other.
            let (kw, dw, sw) = (g.kernel[2], g.dilation[2], g.stride[2]);
            let inside = |xo: usize| start(xo, 2) >= 0 && (start(xo, 2) + ((kw - 1) * dw) as isize) < iw as isize;
            let mut xo = 0;
            while xo < ow {
                if xo + LANES <= ow && inside(xo) && inside(xo + LANES - 1) && !za.is_empty() && !yb.is_empty() {
                    let row = |a: usize, b: usize| {
                        let iz = (start(z, 0) + (a * g.dilation[0]) as isize) as usize;
                        let iy = (start(y, 1) + (b * g.dilation[1]) as isize) as usize;
                        (iz * ih + iy) * iw + start(xo, 2) as usize
                    };
                    let first = row(za.start, yb.start);
                    let mut best: [T; LANES] = std::array::from_fn(|l| xp[first + l * sw]);
                    let mut best_at: [usize; LANES] = std::array::from_fn(|l| first + l * sw);
                    for a in za.clone() {
                        for b in yb.clone() {
                            let r = row(a, b);
                            for c in 0..kw {
                                for l in 0..LANES {
                                    let flat = r + c * dw + l * sw;
                                    let v = xp[flat];
                                    let take = replaces(v, best[l]);
                                    best[l] = std::hint::select_unpredictable(take, v, best[l]);
                                    best_at[l] = std::hint::select_unpredictable(take, flat, best_at[l]);
                                }
                            }
                        }
                    }
                    let o = (z * oh + y) * ow + xo;
                    vals[o..o + LANES].copy_from_slice(&best);
                    for (i, &at) in idxs[o..o + LANES].iter_mut().zip(&best_at) {
                        *i = at as i64;
                    }
                    xo += LANES;
                    continue;
                }
                let xc = in_range(start(xo, 2), g.kernel[2], g.dilation[2], iw);
                // The start of the input row of taps `(a, b)`, and the column of tap `c`.
                let row = |a: usize, b: usize| {
                    let iz = (start(z, 0) + (a * g.dilation[0]) as isize) as usize;
                    let iy = (start(y, 1) + (b * g.dilation[1]) as isize) as usize;
                    (iz * ih + iy) * iw
                };
                let col = |c: usize| (start(xo, 2) + (c * g.dilation[2]) as isize) as usize;
                let o = (z * oh + y) * ow + xo;
                // Every window holds at least one element (padding is at most half the
                // kernel); an empty one would read as -inf at the window's first position.
                if za.is_empty() || yb.is_empty() || xc.is_empty() {
                    vals[o] = T::from_f64(f64::NEG_INFINITY);
                    idxs[o] = 0;
                    xo += 1;
                    continue;
                }
                let first = row(za.start, yb.start) + col(xc.start);
                let (mut best, mut best_at) = (xp[first], first);
                for a in za.clone() {
                    for b in yb.clone() {
                        let r = row(a, b);
                        for c in xc.clone() {
                            let flat = r + col(c);
                            let v = xp[flat];
                            // Selects, not a branch: which tap wins is data-dependent.
                            let take = replaces(v, best);
                            best = std::hint::select_unpredictable(take, v, best);
                            best_at = std::hint::select_unpredictable(take, flat, best_at);
                        }
                    }
                }
                vals[o] = best;
                idxs[o] = best_at as i64;
                xo += 1;
            }
        }
    }
}

/// The maximum of a window so far and its next tap `v`, by PyTorch's rule: the first
/// maximum stays, a NaN replaces anything.
#[inline(always)]
fn max_tap<T: PartialOrd + Copy>(best: T, v: T) -> T {
    if replaces(v, best) { v } else { best }
}

/// Max pooling values without indices, separably: each input row's horizontal window maxima
/// first (into `rows`, one row of `ow` per input row of the plane), then each output the
/// maximum of its window's rows, in row order. Taking rows in order and each row's taps in
/// order keeps PyTorch's first-maximum-wins order of taps exactly (which `-0.0` or `0.0`, which
/// NaN). Both passes run over contiguous memory, so they vectorize where the per-tap loop of
/// [`max_pool_plane`] cannot.
fn max_pool_values_typed<T: Element + PartialOrd + Send + Sync>(g: &PoolGeo, x: &[T], vals: &mut [T]) {
    let (inn, outn) = (g.in_numel(), g.out_numel());
    let work = g.planes * outn * g.kernel.iter().product::<usize>();
    let threads = crate::parallel::threads();
    let tasks = if threads > 1 && work >= 1 << 16 { (threads * 4).min(g.planes) } else { 1 };
    let vp = crate::parallel::SharedOut(vals.as_mut_ptr());
    // A 2-d `f32` 3 × 3 window of stride 2 with padding of at most one and no dilation runs
    // the vector kernel (the same taps in the same order); it declines planes it does not
    // cover.
    let k3s2 = T::DTYPE == DType::F32
        && g.input[0] == 1
        && g.kernel == [1, 3, 3]
        && g.stride == [1, 2, 2]
        && g.pad[0] == 0
        && g.pad[1] == g.pad[2]
        && g.pad[1] <= 1
        && g.dilation == [1, 1, 1];
    crate::parallel::for_each(tasks, |t| {
        let [id, ih, _] = g.input;
        let (mut rows, mut phases): (Vec<T>, Vec<T>) = (Vec::with_capacity(id * ih * g.output[2]), Vec::new());
        let mut padded = Vec::new();
        for pl in g.planes * t / tasks..g.planes * (t + 1) / tasks {
            // SAFETY: `vals` holds `planes·outn` elements (the caller built it of the output's
            // size); each plane is written by the one task that owns it.
            let v = unsafe { std::slice::from_raw_parts_mut(vp.get().add(pl * outn), outn) };
            if k3s2 {
                let xp = &x[pl * inn..(pl + 1) * inn];
                // SAFETY: `T` is `f32` (its dtype is), so both slices are `f32` elements.
                let (xf, vf) = unsafe {
                    (std::slice::from_raw_parts(xp.as_ptr().cast::<f32>(), inn), std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<f32>(), outn))
                };
                if ::kernels::pool::max_pool_3x3s2(xf, 1, [ih, g.input[2]], g.pad[2], [g.output[1], g.output[2]], vf, &mut padded) {
                    continue;
                }
            }
            super::wide::widest(
                #[inline(always)]
                || max_pool_values_plane(g, &x[pl * inn..(pl + 1) * inn], v, &mut rows, &mut phases),
            );
        }
    });
}

/// [`max_pool_values_typed`] of one plane; `rows` and `phases` are scratch.
#[inline(always)]
fn max_pool_values_plane<T: Element + PartialOrd>(g: &PoolGeo, xp: &[T], vals: &mut [T], rows: &mut Vec<T>, phases: &mut Vec<T>) {
    let [id, ih, iw] = g.input;
    let [od, oh, ow] = g.output;
    let (kw, sw, dw) = (g.kernel[2], g.stride[2], g.dilation[2]);
    let start = |o: usize, d: usize| (o * g.stride[d]) as isize - g.pad[d] as isize;
    // Output columns whose windows lie wholly inside the row: `lo..hi`.
    let inside = |xo: usize| start(xo, 2) >= 0 && start(xo, 2) + ((kw - 1) * dw) as isize <= iw as isize - 1;
    let lo = (0..ow).find(|&xo| inside(xo)).unwrap_or(ow);
    let hi = if lo == ow { ow } else { (lo..ow).take_while(|&xo| inside(xo)).last().map_or(lo, |x| x + 1) };
    rows.clear();
    rows.resize(id * ih * ow, T::from_f64(f64::NEG_INFINITY));
    for (r, h) in xp.chunks_exact(iw).zip(rows.chunks_exact_mut(ow)) {
        for xo in (0..lo).chain(hi..ow) {
            let xc = in_range(start(xo, 2), kw, dw, iw);
            let col = |c: usize| (start(xo, 2) + (c * dw) as isize) as usize;
            if !xc.is_empty() {
                let mut m = r[col(xc.start)];
                for c in xc.start + 1..xc.end {
                    m = max_tap(m, r[col(c)]);
                }
                h[xo] = m;
            }
        }
        if lo < hi {
            let s0 = start(lo, 2) as usize;
            let (r, h) = (&r[s0..], &mut h[lo..hi]);
            match (sw, dw) {
                (1, 1) => row_max::<T, 1>(r, h, kw, phases),
                (2, 1) => row_max::<T, 2>(r, h, kw, phases),
                _ => {
                    for (k, o) in h.iter_mut().enumerate() {
                        let b = k * sw;
                        *o = (1..kw).fold(r[b], |m, c| max_tap(m, r[b + c * dw]));
                    }
                }
            }
        }
    }
    for z in 0..od {
        let za = in_range(start(z, 0), g.kernel[0], g.dilation[0], id);
        for y in 0..oh {
            let yb = in_range(start(y, 1), g.kernel[1], g.dilation[1], ih);
            let o = &mut vals[(z * oh + y) * ow..][..ow];
            // Every window holds at least one element (padding is at most half the kernel);
            // an empty one reads as -inf.
            if za.is_empty() || yb.is_empty() {
                o.fill(T::from_f64(f64::NEG_INFINITY));
                continue;
            }
            let row = |a: usize, b: usize| {
                let iz = (start(z, 0) + (a * g.dilation[0]) as isize) as usize;
                let iy = (start(y, 1) + (b * g.dilation[1]) as isize) as usize;
                &rows[(iz * ih + iy) * ow..][..ow]
            };
            let rows_of = |t: usize| row(za.start + t / yb.len(), yb.start + t % yb.len());
            max_of_runs(o, za.len() * yb.len(), rows_of);
        }
    }
}

/// Outputs a tile of the separable max pooling keeps in registers.
const TILE: usize = 16;

/// `acc[i] = max_tap(acc[i], src[i])` over `TILE` elements held in registers.
#[inline(always)]
fn tile_max<T: PartialOrd + Copy>(acc: &mut [T; TILE], src: &[T]) {
    let src: &[T; TILE] = src[..TILE].try_into().expect("a tile");
    for i in 0..TILE {
        acc[i] = max_tap(acc[i], src[i]);
    }
}

/// `out[j] = ` the taps `srcs(0)[j], srcs(1)[j], …` combined in order by [`max_tap`], for
/// `j < out.len()`: tiles in registers, stored once (a read-modify-write of `out` per tap
/// would become masked stores).
#[inline(always)]
fn max_of_runs<'s, T: PartialOrd + Copy + 's>(out: &mut [T], taps: usize, srcs: impl Fn(usize) -> &'s [T]) {
    let n = out.len();
    if n < TILE {
        for (j, o) in out.iter_mut().enumerate() {
            let mut m = srcs(0)[j];
            for c in 1..taps {
                m = max_tap(m, srcs(c)[j]);
            }
            *o = m;
        }
        return;
    }
    // The last tile ends at `n`, overlapping the one before it: each output depends only on
    // the sources, so computing some twice gives the same values.
    for j0 in (0..n).step_by(TILE).map(|j| j.min(n - TILE)) {
        let mut acc: [T; TILE] = srcs(0)[j0..j0 + TILE].try_into().expect("a tile");
        for c in 1..taps {
            tile_max(&mut acc, &srcs(c)[j0..]);
        }
        out[j0..j0 + TILE].copy_from_slice(&acc);
    }
}

/// One row's window maxima for windows of `k` adjacent taps `S` apart: `h[j]` is the maximum
/// of `r[j·S..j·S + k]`, taps in order. The row is first split into its `S` phases (`phases`
/// is scratch; phase `p` holds `r[p], r[S + p], …`), so tap `c` of every window is a
/// contiguous run of phase `c mod S`: the loops vectorize (a stride-`S` gather of taps would
/// not).
#[inline(always)]
fn row_max<T: PartialOrd + Copy, const S: usize>(r: &[T], h: &mut [T], k: usize, phases: &mut Vec<T>) {
    let n = h.len();
    let len = n + (k - 1) / S;
    let r = &r[..(n - 1) * S + k];
    if S == 1 {
        max_of_runs(h, k, |c| &r[c..]);
        return;
    }
    phases.clear();
    phases.resize(S * len, r[0]);
    // Phase `p` of the first `whole·S` elements, then what is left of the last group.
    let whole = (r.len() / S).min(len);
    let (lanes, rest) = phases.split_at_mut(len);
    if S == 2 {
        // Two phases as one zipped pass over pairs, the pattern the vectorizer turns into
        // shuffles (indexed stores would keep it scalar).
        for ((e, o), pair) in lanes[..whole].iter_mut().zip(&mut rest[..whole]).zip(r.chunks_exact(2)) {
            *e = pair[0];
            *o = pair[1];
        }
    } else {
        for (j, group) in r.chunks_exact(S).take(whole).enumerate() {
            lanes[j] = group[0];
            for p in 1..S {
                rest[(p - 1) * len + j] = group[p];
            }
        }
    }
    for (i, &v) in r.iter().enumerate().skip(whole * S) {
        if i / S < len {
            phases[(i % S) * len + i / S] = v;
        }
    }
    max_of_runs(h, k, |c| &phases[(c % S) * len + c / S..]);
}

/// Max pooling values alone (`max_pool1d/2d/3d`, and `max_poolNd_with_indices` whose indices
/// nothing reads).
fn max_pool_values(op: &'static str, d: usize, a: &Args<'_>) -> Result<Tensor> {
    let x = a.tensor(0)?;
    let (g, out_sizes) = pool_args(op, d, a, x)?;
    let xc = x.contiguous()?;
    Ok(dispatch_dtype!(x.dtype(), T => {
        let xd = xc.as_slice::<T>()?;
        Tensor::build::<T>(&out_sizes, |out| {
            max_pool_values_typed(&g, xd, out);
            Ok(())
        })?
    }))
}

/// The geometry of a max pooling call's arguments (`self, kernel_size, stride, padding,
/// dilation, ceil_mode`) over `x`.
fn pool_args(op: &'static str, d: usize, a: &Args<'_>, x: &Tensor) -> Result<(PoolGeo, Vec<usize>)> {
    let r = window_geometry(
        op,
        x.sizes(),
        d,
        &a.int_list(1)?,
        &if a.get(2).is_none() { vec![] } else { a.int_list(2)? },
        &if a.get(3).is_none() { vec![0] } else { a.int_list(3)? },
        &if a.get(4).is_none() { vec![1] } else { a.int_list(4)? },
        a.opt_bool(5)?.unwrap_or(false),
    )?;
    if x.dtype() == DType::Bool {
        return Err(KernelError::new(op, "not implemented for dtype bool"));
    }
    Ok(r)
}

fn max_pool(op: &'static str, d: usize, a: &Args<'_>) -> Result<(Tensor, Tensor)> {
    let x = a.tensor(0)?;
    let (g, out_sizes) = pool_args(op, d, a, x)?;
    let xc = x.contiguous()?;
    let mut vals = None;
    let idx = Tensor::build::<i64>(&out_sizes, |idx| {
        vals = Some(dispatch_dtype!(x.dtype(), T => {
            let xd = xc.as_slice::<T>()?;
            Tensor::build::<T>(&out_sizes, |out| {
                max_pool_typed(&g, xd, out, idx);
                Ok(())
            })?
        }));
        Ok(())
    })?;
    let vals = vals.ok_or_else(|| KernelError::new(op, "internal error: no output"))?;
    Ok((vals, idx))
}

fn max_pool2d_with_indices(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::MAX_POOL2D_WITH_INDICES, args, 2)?;
    let (v, i) = max_pool(a.op, 2, &a)?;
    Ok(outs([v, i]))
}

fn max_pool3d_with_indices(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::MAX_POOL3D_WITH_INDICES, args, 2)?;
    let (v, i) = max_pool(a.op, 3, &a)?;
    Ok(outs([v, i]))
}

fn max_pool1d(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::MAX_POOL1D, args, 2)?;
    Ok(outs([max_pool_values(a.op, 1, &a)?]))
}

fn max_pool2d(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::MAX_POOL2D, args, 2)?;
    Ok(outs([max_pool_values(a.op, 2, &a)?]))
}

fn max_pool3d(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::MAX_POOL3D, args, 2)?;
    Ok(outs([max_pool_values(a.op, 3, &a)?]))
}

/// Gradient of max pooling: each output gradient is added at its recorded input index.
fn max_pool_backward(op: &'static str, d: usize, args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op, args, 8)?;
    let (gout, x, indices) = (a.tensor(0)?, a.tensor(1)?, a.tensor(7)?);
    if gout.sizes() != indices.sizes() {
        return Err(KernelError::new(
            op,
            format!("grad_output {:?} and indices {:?} differ in shape", gout.sizes(), indices.sizes()),
        ));
    }
    let sizes = x.sizes();
    if sizes.len() < d + 1 || gout.dim() != sizes.len() || gout.sizes()[..sizes.len() - d] != sizes[..sizes.len() - d] {
        return Err(KernelError::new(op, format!("grad_output {:?} does not match input {sizes:?}", gout.sizes())));
    }
    let in_plane: usize = sizes[sizes.len() - d..].iter().product();
    let out_plane: usize = gout.sizes()[sizes.len() - d..].iter().product();
    let idx = indices.to_vec_i64();
    let r = super::linalg::with_real!(op, x.dtype(), T => {
        let g: Vec<T> = gout.to_dtype(<T as Element>::DTYPE)?.to_vec::<T>()?;
        Tensor::build::<T>(sizes, |out| {
            for (o, (&gv, &i)) in g.iter().zip(&idx).enumerate() {
                let plane = o.checked_div(out_plane).unwrap_or(0);
                if i < 0 || i as usize >= in_plane {
                    return Err(KernelError::new(op, format!("index {i} is out of bounds for an input plane of {in_plane} elements")));
                }
                out[plane * in_plane + i as usize] += gv;
            }
            Ok(())
        })?
    });
    Ok(outs([r.cast_to(x.dtype())?]))
}

fn max_pool2d_with_indices_backward(args: &[IValue]) -> Result<Vec<IValue>> {
    max_pool_backward(op::MAX_POOL2D_WITH_INDICES_BACKWARD.name(), 2, args)
}

fn max_pool3d_with_indices_backward(args: &[IValue]) -> Result<Vec<IValue>> {
    max_pool_backward(op::MAX_POOL3D_WITH_INDICES_BACKWARD.name(), 3, args)
}

/// Sum type and division of average pooling for one element type.
trait AvgElem: Element {
    type Acc: Copy + std::ops::AddAssign;
    fn zero() -> Self::Acc;
    fn acc(self) -> Self::Acc;
    fn finish(sum: Self::Acc, count: i64) -> Self;
}

impl<T: Real> AvgElem for T {
    type Acc = T;
    fn zero() -> T {
        T::ZERO
    }
    fn acc(self) -> T {
        self
    }
    fn finish(sum: T, count: i64) -> T {
        sum / T::of(count as f64)
    }
}

fn avg_pool_typed<T: AvgElem>(g: &PoolGeo, x: &[T], out: &mut [T], include_pad: bool, divisor: Option<i64>) {
    let (inn, outn) = (g.in_numel(), g.out_numel());
    for pl in 0..g.planes {
        let xp = &x[pl * inn..(pl + 1) * inn];
        for z in 0..g.output[0] {
            for y in 0..g.output[1] {
                for xo in 0..g.output[2] {
                    let pos = [z, y, xo];
                    let mut lo = [0isize; 3];
                    let mut hi = [0isize; 3];
                    let mut pool_size = 1isize;
                    for q in 0..3 {
                        let s = (pos[q] * g.stride[q]) as isize - g.pad[q] as isize;
                        let e = (s + g.kernel[q] as isize).min((g.input[q] + g.pad[q]) as isize);
                        pool_size *= e - s;
                        lo[q] = s.max(0);
                        hi[q] = e.min(g.input[q] as isize);
                    }
                    let o = pl * outn + (z * g.output[1] + y) * g.output[2] + xo;
                    if (0..3).any(|q| lo[q] >= hi[q]) {
                        out[o] = T::from_f64(0.0);
                        continue;
                    }
                    let mut sum = T::zero();
                    for iz in lo[0]..hi[0] {
                        for iy in lo[1]..hi[1] {
                            let row = (iz as usize * g.input[1] + iy as usize) * g.input[2];
                            for ix in lo[2]..hi[2] {
                                sum += xp[row + ix as usize].acc();
                            }
                        }
                    }
                    let count = match divisor {
                        Some(dv) => dv,
                        None if include_pad => pool_size as i64,
                        None => (0..3).map(|q| (hi[q] - lo[q]) as i64).product(),
                    };
                    out[o] = T::finish(sum, count);
                }
            }
        }
    }
}

// Average pooling over integers sums in `i64` and divides with truncation, as PyTorch does.
macro_rules! int_avg {
    ($($t:ty),*) => {$(
        impl AvgElem for $t {
            type Acc = i64;
            fn zero() -> i64 {
                0
            }
            fn acc(self) -> i64 {
                self as i64
            }
            fn finish(sum: i64, count: i64) -> $t {
                if count == 0 { 0 } else { sum.wrapping_div(count) as $t }
            }
        }
    )*};
}
int_avg!(u8, i8, i16, i32, i64);

/// `avg_poolNd(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)`.
fn avg_pool(op: &'static str, d: usize, args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op, args, 2)?;
    let x = a.tensor(0)?;
    let (g, out_sizes) = window_geometry(
        op,
        x.sizes(),
        d,
        &a.int_list(1)?,
        &if a.get(2).is_none() { vec![] } else { a.int_list(2)? },
        &if a.get(3).is_none() { vec![0] } else { a.int_list(3)? },
        &[1],
        a.opt_bool(4)?.unwrap_or(false),
    )?;
    let include_pad = a.opt_bool(5)?.unwrap_or(true);
    let divisor = if d == 1 { None } else { a.opt_int(6)? };
    if divisor == Some(0) {
        return Err(KernelError::new(op, "divisor must be not zero"));
    }
    let xc = x.contiguous()?;
    let r = match x.dtype() {
        DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64 => {
            dispatch_int(op, x.dtype(), &xc, &g, &out_sizes, include_pad, divisor)?
        }
        DType::Bool => return Err(KernelError::new(op, "not implemented for dtype bool")),
        dt => {
            let xw = xc.cast_to(super::linalg::compute_dtype(op, dt)?)?;
            let r = super::linalg::with_real!(op, dt, T => {
                let xd = xw.as_slice::<T>()?;
                Tensor::build::<T>(&out_sizes, |out| {
                    avg_pool_typed(&g, xd, out, include_pad, divisor);
                    Ok(())
                })?
            });
            r.cast_to(dt)?
        }
    };
    Ok(outs([r]))
}

fn dispatch_int(
    op: &'static str,
    dt: DType,
    xc: &Tensor,
    g: &PoolGeo,
    out_sizes: &[usize],
    include_pad: bool,
    divisor: Option<i64>,
) -> Result<Tensor> {
    macro_rules! go {
        ($t:ty) => {{
            let xd = xc.as_slice::<$t>()?;
            Tensor::build::<$t>(out_sizes, |out| {
                avg_pool_typed(g, xd, out, include_pad, divisor);
                Ok(())
            })
        }};
    }
    match dt {
        DType::U8 => go!(u8),
        DType::I8 => go!(i8),
        DType::I16 => go!(i16),
        DType::I32 => go!(i32),
        DType::I64 => go!(i64),
        _ => Err(KernelError::new(op, format!("not implemented for dtype {}", dt.torch_name()))),
    }
}

fn avg_pool1d(args: &[IValue]) -> Result<Vec<IValue>> {
    avg_pool(op::AVG_POOL1D.name(), 1, args)
}
fn avg_pool2d(args: &[IValue]) -> Result<Vec<IValue>> {
    avg_pool(op::AVG_POOL2D.name(), 2, args)
}
fn avg_pool3d(args: &[IValue]) -> Result<Vec<IValue>> {
    avg_pool(op::AVG_POOL3D.name(), 3, args)
}

/// Start and end (exclusive) of adaptive window `o` of `out` windows over `input` elements.
fn adaptive_range(o: usize, input: usize, out: usize) -> (usize, usize) {
    let start = (o * input) / out;
    let end = ((o + 1) * input).div_ceil(out);
    (start, end)
}

fn adaptive_geometry(op: &'static str, sizes: &[usize], d: usize, output: &[i64]) -> Result<(PoolGeo, Vec<usize>)> {
    if sizes.len() != d + 1 && sizes.len() != d + 2 {
        return Err(KernelError::new(op, format!("expected a {}-D or {}-D input, got {sizes:?}", d + 1, d + 2)));
    }
    let lead = sizes.len() - d;
    let out = expand(op, "output_size", output, d, None)?;
    if sizes[lead..].contains(&0) && !out.contains(&0) {
        return Err(KernelError::new(op, format!("input {sizes:?} has an empty spatial dim")));
    }
    let mut out_sizes = sizes[..lead].to_vec();
    out_sizes.extend(&out);
    let geo = PoolGeo {
        planes: sizes[..lead].iter().product(),
        input: pad3(&sizes[lead..], 1),
        output: pad3(&out, 1),
        kernel: [1; 3],
        stride: [1; 3],
        pad: [0; 3],
        dilation: [1; 3],
    };
    Ok((geo, out_sizes))
}

/// Partial sums of [`run_sum`]: two AVX-512 vectors of `f32`, so the additions of one pass
/// of the loop do not wait on each other.
const RUN_LANES: usize = 32;

/// The sum of a contiguous run of a pooling window, over [`RUN_LANES`] interleaved partial
/// sums combined pairwise (runs shorter than that add up left to right).
#[inline(always)]
fn run_sum<T: Real>(v: &[T]) -> T {
    let mut body = v.chunks_exact(RUN_LANES);
    let mut total = T::ZERO;
    if v.len() >= RUN_LANES {
        let mut acc = [T::ZERO; RUN_LANES];
        for c in &mut body {
            for (a, &x) in acc.iter_mut().zip(c) {
                *a += x;
            }
        }
        total = super::wide::fold_lanes(acc);
    }
    for &x in body.remainder() {
        total += x;
    }
    total
}

fn adaptive_avg(op: &'static str, d: usize, args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op, args, 2)?;
    let x = a.tensor(0)?;
    let (g, out_sizes) = adaptive_geometry(op, x.sizes(), d, &a.int_list(1)?)?;
    let dt = x.dtype();
    let xw = x.cast_to(super::linalg::compute_dtype(op, dt)?)?.contiguous()?;
    let r = super::linalg::with_real!(op, dt, T => {
        let xd = xw.as_slice::<T>()?;
        let (inn, outn) = (g.in_numel(), g.out_numel());
        Tensor::build::<T>(&out_sizes, |out| {
            super::wide::widest(#[inline(always)] || {
                for pl in 0..g.planes {
                    let xp = &xd[pl * inn..(pl + 1) * inn];
                    for z in 0..g.output[0] {
                        let (z0, z1) = adaptive_range(z, g.input[0], g.output[0]);
                        for y in 0..g.output[1] {
                            let (y0, y1) = adaptive_range(y, g.input[1], g.output[1]);
                            for xo in 0..g.output[2] {
                                let (x0, x1) = adaptive_range(xo, g.input[2], g.output[2]);
                                let mut sum = T::ZERO;
                                for iz in z0..z1 {
                                    let plane = iz * g.input[1];
                                    if x0 == 0 && x1 == g.input[2] {
                                        // Whole rows: the window's rows of this plane are
                                        // one contiguous run.
                                        let w = g.input[2];
                                        sum += run_sum(&xp[(plane + y0) * w..(plane + y1) * w]);
                                        continue;
                                    }
                                    for iy in y0..y1 {
                                        let row = (plane + iy) * g.input[2];
                                        sum += run_sum(&xp[row + x0..row + x1]);
                                    }
                                }
                                let count = (z1 - z0) * (y1 - y0) * (x1 - x0);
                                out[pl * outn + (z * g.output[1] + y) * g.output[2] + xo] = sum / T::of(count as f64);
                            }
                        }
                    }
                }
            });
            Ok(())
        })?
    });
    Ok(outs([r.cast_to(dt)?]))
}

fn adaptive_max(op: &'static str, d: usize, args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op, args, 2)?;
    let x = a.tensor(0)?;
    let (g, out_sizes) = adaptive_geometry(op, x.sizes(), d, &a.int_list(1)?)?;
    if g.input.contains(&0) {
        return Err(KernelError::new(op, format!("input {:?} has an empty spatial dim", x.sizes())));
    }
    if x.dtype() == DType::Bool {
        return Err(KernelError::new(op, "not implemented for dtype bool"));
    }
    let xc = x.contiguous()?;
    let (inn, outn) = (g.in_numel(), g.out_numel());
    let mut vals = None;
    let idx = Tensor::build::<i64>(&out_sizes, |idx| {
        vals = Some(dispatch_dtype!(x.dtype(), T => {
            let xd = xc.as_slice::<T>()?;
            Tensor::build::<T>(&out_sizes, |out| {
                for pl in 0..g.planes {
                    let xp = &xd[pl * inn..(pl + 1) * inn];
                    for z in 0..g.output[0] {
                        let (z0, z1) = adaptive_range(z, g.input[0], g.output[0]);
                        for y in 0..g.output[1] {
                            let (y0, y1) = adaptive_range(y, g.input[1], g.output[1]);
                            for xo in 0..g.output[2] {
                                let (x0, x1) = adaptive_range(xo, g.input[2], g.output[2]);
                                let mut best: Option<(T, usize)> = None;
                                for iz in z0..z1 {
                                    for iy in y0..y1 {
                                        for ix in x0..x1 {
                                            let flat = (iz * g.input[1] + iy) * g.input[2] + ix;
                                            let v = xp[flat];
                                            match best {
                                                Some((m, _)) if !replaces(v, m) => {}
                                                _ => best = Some((v, flat)),
                                            }
                                        }
                                    }
                                }
                                let o = pl * outn + (z * g.output[1] + y) * g.output[2] + xo;
                                let (v, i) = best.unwrap_or((T::from_f64(f64::NEG_INFINITY), 0));
                                out[o] = v;
                                idx[o] = i as i64;
                            }
                        }
                    }
                }
                Ok(())
            })?
        }));
        Ok(())
    })?;
    let vals = vals.ok_or_else(|| KernelError::new(op, "internal error: no output"))?;
    Ok(outs([vals, idx]))
}

fn adaptive_avg_pool1d(args: &[IValue]) -> Result<Vec<IValue>> {
    adaptive_avg(op::ADAPTIVE_AVG_POOL1D.name(), 1, args)
}
fn adaptive_avg_pool2d_core(args: &[IValue]) -> Result<Vec<IValue>> {
    adaptive_avg(op::_ADAPTIVE_AVG_POOL2D.name(), 2, args)
}
fn adaptive_avg_pool2d(args: &[IValue]) -> Result<Vec<IValue>> {
    adaptive_avg(op::ADAPTIVE_AVG_POOL2D.name(), 2, args)
}
fn adaptive_avg_pool3d_core(args: &[IValue]) -> Result<Vec<IValue>> {
    adaptive_avg(op::_ADAPTIVE_AVG_POOL3D.name(), 3, args)
}
fn adaptive_avg_pool3d(args: &[IValue]) -> Result<Vec<IValue>> {
    adaptive_avg(op::ADAPTIVE_AVG_POOL3D.name(), 3, args)
}
fn adaptive_max_pool1d(args: &[IValue]) -> Result<Vec<IValue>> {
    adaptive_max(op::ADAPTIVE_MAX_POOL1D.name(), 1, args)
}
fn adaptive_max_pool2d(args: &[IValue]) -> Result<Vec<IValue>> {
    adaptive_max(op::ADAPTIVE_MAX_POOL2D.name(), 2, args)
}
fn adaptive_max_pool3d(args: &[IValue]) -> Result<Vec<IValue>> {
    adaptive_max(op::ADAPTIVE_MAX_POOL3D.name(), 3, args)
}

pub fn register(r: &mut KernelRegistry) {
    r.register(op::MAX_POOL2D_WITH_INDICES, max_pool2d_with_indices);
    r.register(op::MAX_POOL3D_WITH_INDICES, max_pool3d_with_indices);
    r.register(op::MAX_POOL1D, max_pool1d);
    r.register(op::MAX_POOL2D, max_pool2d);
    r.register(op::MAX_POOL3D, max_pool3d);
    r.register(op::MAX_POOL2D_WITH_INDICES_BACKWARD, max_pool2d_with_indices_backward);
    r.register(op::MAX_POOL3D_WITH_INDICES_BACKWARD, max_pool3d_with_indices_backward);
    r.register(op::AVG_POOL1D, avg_pool1d);
    r.register(op::AVG_POOL2D, avg_pool2d);
    r.register(op::AVG_POOL3D, avg_pool3d);
    r.register(op::ADAPTIVE_AVG_POOL1D, adaptive_avg_pool1d);
    r.register(op::_ADAPTIVE_AVG_POOL2D, adaptive_avg_pool2d_core);
    r.register(op::ADAPTIVE_AVG_POOL2D, adaptive_avg_pool2d);
    r.register(op::_ADAPTIVE_AVG_POOL3D, adaptive_avg_pool3d_core);
    r.register(op::ADAPTIVE_AVG_POOL3D, adaptive_avg_pool3d);
    r.register(op::ADAPTIVE_MAX_POOL1D, adaptive_max_pool1d);
    r.register(op::ADAPTIVE_MAX_POOL2D, adaptive_max_pool2d);
    r.register(op::ADAPTIVE_MAX_POOL3D, adaptive_max_pool3d);
}
