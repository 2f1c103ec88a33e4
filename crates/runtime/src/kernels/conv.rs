//! Convolution kernels (`convolution`, `conv1d/2d/3d` with numeric or `"same"`/`"valid"`
//! padding, `conv_transpose1d/2d/3d`): 1-, 2- and 3-d, strided, padded, dilated, grouped and
//! transposed, with optional bias.
//!
//! Every convolution is lowered to GEMM per (batch, group): the forward case gathers input
//! patches into a column matrix (im2col; skipped for 1×1 kernels with unit stride and no
//! padding) and multiplies the group's weight rows by it; the transposed case multiplies the
//! transposed weight by the input and scatters the columns back into the output (col2im).
//! With a prepacked `f32` filter the column matrix is never built whole: each panel of
//! consecutive output positions is written in the packed GEMM's panel layout and multiplied
//! at once, and the panels split across the intra-op team.
//! Lower-dimensional convolutions run as 3-d ones with leading unit dims. The same gather
//! and scatter back `im2col` and `col2im` (`F.unfold`/`F.fold`).

use dialect_aten::op;
use super::linalg::{MatView, Real, gemm, outs, widen_halves};
use ::kernels::Isa;
use ::kernels::gemm::{Bias, Epilogue, PackedA, Tiles, aligned_start, gemm_packed_a, gemm_packed_a_panels};
use super::{Args, KernelRegistry};
use crate::tensor::{KernelError, Result, Tensor};
use crate::value::IValue;
use ir::DType;

/// Geometry of one convolution, already padded to three spatial dims.
#[derive(Clone, Debug)]
pub(crate) struct Geometry {
    pub n: usize,
    pub cin: usize,
    pub cout: usize,
    pub groups: usize,
    pub input: [usize; 3],
    pub kernel: [usize; 3],
    pub output: [usize; 3],
    pub stride: [usize; 3],
    pub pad_lo: [usize; 3],
    pub dilation: [usize; 3],
    pub transposed: bool,
}

impl Geometry {
    fn kernel_numel(&self) -> usize {
        self.kernel.iter().product()
    }
    fn in_numel(&self) -> usize {
        self.input.iter().product()
    }
    fn out_numel(&self) -> usize {
        self.output.iter().product()
    }
    /// Whether a forward convolution is a plain product of the filter and the input (1×1
    /// kernel, stride 1, no padding): no column tile is needed.
    fn direct(&self) -> bool {
        self.kernel_numel() == 1 && self.stride == [1, 1, 1] && self.pad_lo == [0, 0, 0] && self.in_numel() == self.out_numel()
    }
    /// Output rows per column tile of a forward convolution: as many as fit [`COL_TILE`]
    /// elements (at least one).
    fn band(&self) -> usize {
        let [od, oh, ow] = self.output;
        let rows = od * oh;
        if ow == 0 {
            return rows.max(1);
        }
        let per_row = (self.cin / self.groups) * self.kernel_numel() * ow;
        (COL_TILE / per_row.max(1)).clamp(1, rows.max(1))
    }
}

/// Element types convolution runs in: `f32`/`f64` through GEMM, `i64` (every integer dtype,
/// wrapping like PyTorch's integer convolution) through a plain loop.
pub(crate) trait ConvElem: Copy + PartialEq + Send + Sync + 'static {
    const ZERO: Self;
    const ONE: Self;
    fn plus(self, other: Self) -> Self;
    /// `c = a·b + beta·c` with `beta` zero or one.
    fn gemm(
        op: &'static str,
        a: MatView<'_, Self>,
        b: MatView<'_, Self>,
        beta: Self,
        c: &mut [Self],
        ldc: usize,
    ) -> Result<()>;
}

impl<T: Real> ConvElem for T {
    const ZERO: T = <T as Real>::ZERO;
    const ONE: T = <T as Real>::ONE;
    fn plus(self, other: T) -> T {
        self + other
    }
    fn gemm(op: &'static str, a: MatView<'_, T>, b: MatView<'_, T>, beta: T, c: &mut [T], ldc: usize) -> Result<()> {
        gemm(op, <T as Real>::ONE, a, b, beta, c, ldc)
    }
}

impl ConvElem for i64 {
    const ZERO: i64 = 0;
    const ONE: i64 = 1;
    fn plus(self, other: i64) -> i64 {
        self.wrapping_add(other)
    }
    fn gemm(
        op: &'static str,
        a: MatView<'_, i64>,
        b: MatView<'_, i64>,
        beta: i64,
        c: &mut [i64],
        ldc: usize,
    ) -> Result<()> {
        if a.cols != b.rows || (a.rows > 0 && (a.rows - 1) * ldc + b.cols > c.len()) {
            return Err(KernelError::new(op, "internal error: integer product shapes do not match"));
        }
        for i in 0..a.rows {
            for j in 0..b.cols {
                let mut acc = if beta == 0 { 0 } else { c[i * ldc + j] };
                for p in 0..a.cols {
                    acc = acc.wrapping_add(a.at(i, p).wrapping_mul(b.at(p, j)));
                }
                c[i * ldc + j] = acc;
            }
        }
        Ok(())
    }
}

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
fn im2col_rows<T: ConvElem>(x: &[T], g: &Geometry, channels: usize, r0: usize, r1: usize, col: &mut [T]) {
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
const COL_TILE: usize = 1 << 17;

/// The in-range outputs of one row of a column matrix for one tap column: `dst[xo] =
/// src[xo·stride + x0 - pad]`, zero where that index falls outside the input row. The
/// in-range outputs form the interval `lo..hi`, which reads from `first` on.
#[derive(Clone, Copy, Debug)]
struct Span {
    lo: usize,
    hi: usize,
    first: usize,
}

impl Span {
    fn new(x0: usize, stride: usize, pad: usize, iw: usize, ow: usize) -> Span {
        let s = stride.max(1);
        // First output whose input index is >= 0, and first whose index is >= iw.
        let lo = pad.saturating_sub(x0).div_ceil(s).min(ow);
        let hi = (iw + pad).saturating_sub(x0).div_ceil(s).clamp(lo, ow);
        let first = if hi > lo { lo * s + x0 - pad } else { 0 };
        Span { lo, hi, first }
    }

    /// One output row from the input row `src`.
    #[inline]
    fn copy_row<T: ConvElem>(&self, src: &[T], dst: &mut [T], stride: usize) {
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
    fn copy_rows<T: ConvElem>(&self, src: &[T], dst: &mut [T], n: usize, w: usize) {
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
fn zero_run<T: ConvElem>(dst: &mut [T]) {
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

/// One image's product for one group: the group's input channels `xg` times its filter into
/// its `cout/groups` output channels `out` (leading dimension `g.out_numel()`). A 1×1 stride-1
/// convolution multiplies the input itself; the others go band after band of `band` output
/// rows through the column tile `col`. `f(b, c)` multiplies the filter by `b` into `c`.
#[allow(clippy::too_many_arguments)]
fn group_product<T: ConvElem>(
    op: &'static str,
    g: &Geometry,
    xg: &[T],
    direct: bool,
    band: usize,
    col: &mut [T],
    out: &mut [T],
    mut f: impl FnMut(MatView<'_, T>, &mut [T]) -> Result<()>,
) -> Result<()> {
    let (cin_g, cout_g) = (g.cin / g.groups, g.cout / g.groups);
    let (k, lout) = (g.kernel_numel(), g.out_numel());
    if direct {
        return f(MatView::new(op, xg, 0, cin_g, lout, lout, 1)?, out);
    }
    if cout_g == 0 {
        return Ok(());
    }
    let [od, oh, ow] = g.output;
    let rows = od * oh;
    let mut r0 = 0;
    while r0 < rows {
        let r1 = (r0 + band).min(rows);
        let cols = (r1 - r0) * ow;
        let tile = &mut col[..cin_g * k * cols];
        im2col_rows(xg, g, cin_g, r0, r1, tile);
        let b = MatView::new(op, tile, 0, cin_g * k, cols, cols, 1)?;
        f(b, &mut out[r0 * ow..(cout_g - 1) * lout + r1 * ow])?;
        r0 = r1;
    }
    Ok(())
}

/// Runs the convolution described by `g` over contiguous input, weight and optional bias,
/// writing the contiguous `[N, Cout, out...]` result into `out`.
pub(crate) fn conv_compute<T: ConvElem>(
    op: &'static str,
    g: &Geometry,
    x: &[T],
    w: &[T],
    bias: Option<&[T]>,
    out: &mut [T],
) -> Result<()> {
    let (cin_g, cout_g) = (g.cin / g.groups, g.cout / g.groups);
    let k = g.kernel_numel();
    let (lin, lout) = (g.in_numel(), g.out_numel());
    if let Some(b) = bias {
        for (i, chunk) in out.chunks_mut(lout.max(1)).enumerate() {
            chunk.fill(b[i % g.cout]);
        }
    }
    let beta = if bias.is_some() { T::ONE } else { T::ZERO };
    if !g.transposed {
        let (direct, band) = (g.direct(), g.band());
        let mut col = if direct { Vec::new() } else { vec![T::ZERO; cin_g * k * band * g.output[2]] };
        for n in 0..g.n {
            for grp in 0..g.groups {
                let xg = &x[(n * g.cin + grp * cin_g) * lin..(n * g.cin + (grp + 1) * cin_g) * lin];
                let a = MatView::new(op, w, grp * cout_g * cin_g * k, cout_g, cin_g * k, cin_g * k, 1)?;
                let o = (n * g.cout + grp * cout_g) * lout;
                group_product(op, g, xg, direct, band, &mut col, &mut out[o..o + cout_g * lout], |b, c| {
                    T::gemm(op, a, b, beta, c, lout)
                })?;
            }
        }
    } else {
        // weight: [Cin, Cout/groups, k...]; per group a [cin_g, cout_g·K] matrix.
        let mut col = vec![T::ZERO; cout_g * k * lin];
        for n in 0..g.n {
            for grp in 0..g.groups {
                let xg = &x[(n * g.cin + grp * cin_g) * lin..(n * g.cin + (grp + 1) * cin_g) * lin];
                let b = MatView::new(op, xg, 0, cin_g, lin, lin, 1)?;
                let wg = MatView::new(op, w, grp * cin_g * cout_g * k, cin_g, cout_g * k, cout_g * k, 1)?;
                T::gemm(op, wg.t(), b, T::ZERO, &mut col, lin)?;
                let o = (n * g.cout + grp * cout_g) * lout;
                col2im(&col, g, cout_g, &mut out[o..o + cout_g * lout]);
            }
        }
    }
    Ok(())
}

/// The weight of a forward convolution prepacked for the `f32` GEMM: one packed
/// `[cout/groups, cin/groups · K]` matrix per group.
#[derive(Debug)]
pub(crate) struct PackedFilter {
    pub groups: usize,
    pub per_group: Vec<PackedA>,
}

impl PackedFilter {
    /// Packs a contiguous `f32` weight `[cout, cin/groups, k...]` for `groups` groups.
    pub(crate) fn pack(op: &'static str, isa: Isa, w: &Tensor, groups: usize) -> Result<PackedFilter> {
        if w.dim() < 3 || groups == 0 || !w.sizes()[0].is_multiple_of(groups) {
            return Err(KernelError::new(op, format!("cannot prepack a weight of shape {:?} in {groups} groups", w.sizes())));
        }
        let wc = w.contiguous()?;
        let data = wc.as_slice::<f32>()?;
        let cout_g = w.sizes()[0] / groups;
        let cols: usize = w.sizes()[1..].iter().product();
        let per_group = (0..groups)
            .map(|g| PackedA::pack(op, isa, MatView::new(op, data, g * cout_g * cols, cout_g, cols, cols, 1)?))
            .collect::<::kernels::Result<_>>()?;
        Ok(PackedFilter { groups, per_group })
    }
}

/// [`conv_compute`] for `f32` with the weight prepacked: the bias is added in the GEMM's
/// epilogue instead of a pass of its own.
pub(crate) fn conv_compute_packed(
    op: &'static str,
    g: &Geometry,
    x: &[f32],
    w: &PackedFilter,
    bias: Option<&[f32]>,
    out: &mut [f32],
) -> Result<()> {
    let (cin_g, cout_g) = (g.cin / g.groups, g.cout / g.groups);
    let k = g.kernel_numel();
    let (lin, lout) = (g.in_numel(), g.out_numel());
    if g.transposed || w.groups != g.groups || w.per_group.iter().any(|a| a.rows() != cout_g || a.cols() != cin_g * k) {
        return Err(KernelError::new(op, "internal error: the prepacked weight does not match the convolution"));
    }
    if x.len() < g.n * g.cin * lin || out.len() < g.n * g.cout * lout || bias.is_some_and(|b| b.len() < g.cout) {
        return Err(KernelError::new(op, "internal error: convolution buffers are too small"));
    }
    if cout_g == 0 || lout == 0 {
        return Ok(());
    }
    if g.direct() {
        for n in 0..g.n {
            for (grp, a) in w.per_group.iter().enumerate() {
                let xg = &x[(n * g.cin + grp * cin_g) * lin..(n * g.cin + (grp + 1) * cin_g) * lin];
                let b = MatView::new(op, xg, 0, cin_g, lout, lout, 1)?;
                let o = (n * g.cout + grp * cout_g) * lout;
                gemm_packed_a(op, a, b, &group_epilogue(bias, grp, cout_g), &mut out[o..o + cout_g * lout], lout)?;
            }
        }
        return Ok(());
    }
    by_panels(op, g, x, w, bias, out)
}

/// The epilogue of group `grp`'s product: its channels' share of the bias.
fn group_epilogue(bias: Option<&[f32]>, grp: usize, cout_g: usize) -> Epilogue<'_> {
    Epilogue {
        bias: match bias {
            Some(b) => Bias::PerRow(&b[grp * cout_g..(grp + 1) * cout_g]),
            None => Bias::None,
        },
        ..Epilogue::PLAIN
    }
}

thread_local! {
    /// The column panel of the prepacked convolution, kept per thread across calls: packing
    /// writes every element of it, so the buffer is never cleared, and steady-state calls
    /// neither allocate nor fault in fresh pages.
    static PANEL_SCRATCH: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Convolutions with at least this many multiply-adds split their column panels across the
/// intra-op team.
const PARALLEL_MIN_FMAS: usize = 1 << 20;

/// Tasks per thread of a split convolution: more than one, so a thread that starts late takes
/// a smaller share instead of holding the caller up.
const PARALLEL_TASKS_PER_THREAD: usize = 4;

/// The forward convolution as products of the filter with column panels: for every image,
/// group and panel of `nr` consecutive output positions, the panel's columns of the column
/// matrix are written straight into the packed layout of the GEMM ([`pack_panel`]), a `K × nr`
/// block that stays in L1 while the tile rows of the filter pass over it, and multiplied into
/// the output's columns at once. Every output element is computed by one tile over the whole
/// of `K` in one order, so splitting the panels across threads does not change the bits.
fn by_panels(
    op: &'static str,
    g: &Geometry,
    x: &[f32],
    w: &PackedFilter,
    bias: Option<&[f32]>,
    out: &mut [f32],
) -> Result<()> {
    let (cin_g, cout_g) = (g.cin / g.groups, g.cout / g.groups);
    let (k, lin, lout) = (cin_g * g.kernel_numel(), g.in_numel(), g.out_numel());
    let Some(first) = w.per_group.first() else { return Ok(()) };
    let isa = first.isa();
    let nr = isa.nr();
    let panels = lout.div_ceil(nr);
    let units = g.n * g.groups * panels;
    let fmas = g.n.saturating_mul(g.cout).saturating_mul(lout).saturating_mul(k);
    let threads = crate::parallel::threads();
    let split = threads > 1 && fmas >= PARALLEL_MIN_FMAS;
    let tasks = if split { (threads * PARALLEL_TASKS_PER_THREAD).min(units) } else { 1 };
    let plan = PanelPlan::new(g, nr, true);
    let dst = crate::parallel::SharedOut(out.as_mut_ptr());
    crate::parallel::try_for_each(tasks, |t| {
        PANEL_SCRATCH.with_borrow_mut(|buf| -> Result<()> {
            let start = aligned_start(buf, k * nr);
            let panel = &mut buf[start..start + k * nr];
            for u in units * t / tasks..units * (t + 1) / tasks {
                let (image_group, p) = (u / panels, u % panels);
                let (n, grp) = (image_group / g.groups, image_group % g.groups);
                let xg = &x[(n * g.cin + grp * cin_g) * lin..(n * g.cin + (grp + 1) * cin_g) * lin];
                let (j0, cols) = (p * nr, nr.min(lout - p * nr));
                plan.pack(xg, cin_g, j0, cols, panel);
                let o = (n * g.cout + grp * cout_g) * lout + j0;
                let ep = group_epilogue(bias, grp, cout_g);
                // SAFETY: `out` holds `g.n·g.cout·lout` elements (checked by the caller), so the
                // `cout_g` rows of `cols ≤ lout - j0` elements from `o`, `lout` apart, lie inside
                // it; each (image, group, panel) is one unit, computed by one task.
                unsafe { gemm_packed_a_panels(op, &w.per_group[grp], panel, cols, &ep, dst.get().add(o), lout)? };
            }
            Ok(())
        })
    })
}

/// How the column panels of one convolution are packed: the in-range interval of every tap
/// column ([`Span`]), worked out once per call.
struct PanelPlan<'g> {
    g: &'g Geometry,
    nr: usize,
    /// The spans of the first [`MAX_SPANS`] tap columns (later ones are worked out when asked
    /// for), kept in place so that a call allocates nothing.
    spans: [Span; MAX_SPANS],
    /// The vector path that assembles rows with masked loads, if any: AVX-512 for 32-wide
    /// panels, AVX2 for 16-wide ones (unit stride along rows, a thread that may run the path).
    vector: Option<Isa>,
}

/// Panel columns `d..d + len` are output positions `xo..xo + len` of output row `(z, y)`.
#[derive(Clone, Copy, Debug)]
struct Run {
    d: usize,
    len: usize,
    z: usize,
    y: usize,
    xo: usize,
}

/// Tap columns whose spans a [`PanelPlan`] keeps.
const MAX_SPANS: usize = 16;

/// Most runs a panel can have: one per column.
const MAX_RUNS: usize = 32;

impl<'g> PanelPlan<'g> {
    /// The plan for panels `nr` wide (at most [`MAX_RUNS`]); with `masked`, rows are assembled
    /// with masked vector loads (AVX-512 for 32-wide panels, AVX2 for 16-wide ones) where the
    /// thread's ISA and the geometry allow it.
    fn new(g: &'g Geometry, nr: usize, masked: bool) -> PanelPlan<'g> {
        let spans = std::array::from_fn(|e| Self::span_of(g, e));
        let vector = match nr {
            32 => Some(Isa::Avx512),
            16 => Some(Isa::Avx2),
            _ => None,
        }
        .filter(|isa| masked && g.stride[2] == 1 && cfg!(target_arch = "x86_64") && isa.available());
        PanelPlan { g, nr, spans, vector }
    }

    /// Writes the panel of output positions `j0..j0 + cols` (`cols ≤ nr`) of the column matrix
    /// of `channels` input channels `x` to `dst` (`channels·K` rows of `nr`; columns past
    /// `cols` zero): row `c·K + k` (channel, kernel offset), as [`im2col`] orders them.
    fn pack(&self, x: &[f32], channels: usize, j0: usize, cols: usize, dst: &mut [f32]) {
        let [_, oh, ow] = self.g.output;
        let mut runs = [Run { d: 0, len: 0, z: 0, y: 0, xo: 0 }; MAX_RUNS];
        let mut count = 0;
        let mut d = 0;
        while d < cols && count < MAX_RUNS {
            let q = j0 + d;
            let (r, xo) = (q / ow, q % ow);
            let len = (ow - xo).min(cols - d);
            runs[count] = Run { d, len, z: r / oh, y: r % oh, xo };
            count += 1;
            d += len;
        }
        let runs = &runs[..count];
        #[cfg(target_arch = "x86_64")]
        match self.vector {
            // SAFETY: `vector` is AVX-512 only when the CPU has AVX-512F and panels are 32
            // wide, AVX2 only when it has AVX2 and panels are 16 wide; either way the stride
            // along rows is 1.
            Some(Isa::Avx512) => return unsafe { x86::pack_avx512(self, x, channels, runs, dst) },
            Some(Isa::Avx2) => return unsafe { x86::pack_avx2(self, x, channels, runs, dst) },
            _ => {}
        }
        self.pack_rows(x, channels, runs, dst);
    }

    /// The in-range interval of tap column `e`.
    fn span_of(g: &Geometry, e: usize) -> Span {
        Span::new(e * g.dilation[2], g.stride[2], g.pad_lo[2], g.input[2], g.output[2])
    }

    /// [`PanelPlan::pack`] one element at a time (any stride, any panel width).
    fn pack_rows(&self, x: &[f32], channels: usize, runs: &[Run], dst: &mut [f32]) {
        let g = self.g;
        let [ki, kj, kk] = g.kernel;
        let [id, ih, iw] = g.input;
        let plane = id * ih * iw;
        let mut rows = dst.chunks_exact_mut(self.nr);
        for c in 0..channels {
            for a in 0..ki {
                for b in 0..kj {
                    for e in 0..kk {
                        let Some(row) = rows.next() else { return };
                        row.fill(0.0);
                        for run in runs {
                            let Some(base) = self.row_base(run, a, b) else { continue };
                            let (l, h, src) = self.piece(run, e);
                            let src = c * plane + base + src;
                            for (t, v) in row[run.d + l..run.d + h].iter_mut().enumerate() {
                                *v = x[src + t * g.stride[2]];
                            }
                        }
                    }
                }
            }
        }
    }

    /// The start of the input row that taps `(a, b)` of `run` read, relative to its channel's
    /// plane, or `None` when that row lies in the padding.
    #[inline(always)]
    fn row_base(&self, run: &Run, a: usize, b: usize) -> Option<usize> {
        let g = self.g;
        let iz = (run.z * g.stride[0] + a * g.dilation[0]).checked_sub(g.pad_lo[0]).filter(|&v| v < g.input[0])?;
        let iy = (run.y * g.stride[1] + b * g.dilation[1]).checked_sub(g.pad_lo[1]).filter(|&v| v < g.input[1])?;
        Some((iz * g.input[1] + iy) * g.input[2])
    }

    /// The in-range columns of `run` for tap column `e`: the run's columns `l..h` (relative to
    /// its start) read the input row from column `src` on (`l == h` when none does).
    #[inline(always)]
    fn piece(&self, run: &Run, e: usize) -> (usize, usize, usize) {
        let Span { lo, hi, first } = if e < MAX_SPANS { self.spans[e] } else { Self::span_of(self.g, e) };
        let l = lo.clamp(run.xo, run.xo + run.len);
        let h = hi.clamp(l, run.xo + run.len);
        let src = if h > l { first + (l - lo) * self.g.stride[2] } else { 0 };
        (l - run.xo, h - run.xo, src)
    }

    /// The panel lanes that `run`'s in-range piece for tap column `e` fills, as a bit mask
    /// (`0` when none), and the offset from the input row's start of the element lane 0 would
    /// read (lanes outside the mask are neither read nor changed, so that element need not
    /// exist).
    #[inline(always)]
    fn lanes(&self, run: &Run, e: usize) -> (u32, isize) {
        let (l, h, src) = self.piece(run, e);
        let mask = if h > l { (u32::MAX >> (32 - (h - l))) << (run.d + l) } else { 0 };
        (mask, src as isize - (run.d + l) as isize)
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{PanelPlan, Run};

    /// [`PanelPlan::pack`] for 32-wide panels and unit stride along rows: each panel row is
    /// assembled in two vector registers, every in-range piece of a run by one masked load per
    /// half (lanes outside the piece keep their zero), and stored whole.
    ///
    /// # Safety
    /// The CPU supports AVX-512F; `plan.nr == 32` and the geometry's stride along rows is 1.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn pack_avx512(plan: &PanelPlan<'_>, x: &[f32], channels: usize, runs: &[Run], dst: &mut [f32]) {
        let g = plan.g;
        let [ki, kj, kk] = g.kernel;
        let [id, ih, iw] = g.input;
        let plane = id * ih * iw;
        if let [run] = runs
            && kk <= MAX_TAPS
        {
            // SAFETY: forwarded.
            return unsafe { pack_one_run(plan, x, channels, run, dst) };
        }
        // Per tap column and run: the lanes of its in-range piece ([`PanelPlan::lanes`]).
        let mut pieces = [[(0u32, 0isize); super::MAX_RUNS]; MAX_TAPS];
        let taps = kk.min(MAX_TAPS);
        for (e, per_run) in pieces.iter_mut().enumerate().take(taps) {
            for (piece, run) in per_run.iter_mut().zip(runs) {
                *piece = plan.lanes(run, e);
            }
        }
        if taps < kk {
            return plan.pack_rows(x, channels, runs, dst);
        }
        let mut row = 0;
        for c in 0..channels {
            let xc = &x[c * plane..(c + 1) * plane];
            for a in 0..ki {
                for b in 0..kj {
                    let mut bases = [None; super::MAX_RUNS];
                    for (base, run) in bases.iter_mut().zip(runs) {
                        *base = plan.row_base(run, a, b);
                    }
                    for per_run in &pieces[..kk] {
                        let (mut lo, mut hi) = (_mm512_setzero_ps(), _mm512_setzero_ps());
                        for (&(mask, off), base) in per_run.iter().zip(&bases[..runs.len()]) {
                            let Some(base) = *base else { continue };
                            if mask == 0 {
                                continue;
                            }
                            // The lanes the mask selects read `xc[base + off + lane]`, inside
                            // the input row (`piece`); the pointer itself may lie before `xc`.
                            let p = xc.as_ptr().wrapping_offset(base as isize + off);
                            // SAFETY: masked-off lanes are not accessed; the others are in bounds.
                            unsafe {
                                lo = _mm512_mask_loadu_ps(lo, mask as __mmask16, p);
                                hi = _mm512_mask_loadu_ps(hi, (mask >> 16) as __mmask16, p.wrapping_add(16));
                            }
                        }
                        let out = &mut dst[row * 32..row * 32 + 32];
                        // SAFETY: `out` holds 32 elements.
                        unsafe {
                            _mm512_storeu_ps(out.as_mut_ptr(), lo);
                            _mm512_storeu_ps(out.as_mut_ptr().add(16), hi);
                        }
                        row += 1;
                    }
                }
            }
        }
    }

    /// Most tap columns the masked path keeps pieces for; wider kernels take the scalar path.
    const MAX_TAPS: usize = 16;

    /// [`pack_avx512`] for a panel that lies in one output row (every panel when rows are a
    /// multiple of 32 long): each panel row is one input row's run at the tap's offset, two
    /// zero-masked loads and two stores, or two stores of zeros when the row is padding.
    ///
    /// # Safety
    /// As [`pack_avx512`]; `g.kernel[2] <= MAX_TAPS`.
    #[target_feature(enable = "avx512f")]
    unsafe fn pack_one_run(plan: &PanelPlan<'_>, x: &[f32], channels: usize, run: &Run, dst: &mut [f32]) {
        let g = plan.g;
        let [ki, kj, kk] = g.kernel;
        let plane = g.input.iter().product::<usize>();
        // Per tap column: the lane masks of the in-range piece's two halves, and the offset
        // from the input row's start of the element lane 0 would read.
        let mut pieces = [(0u16, 0u16, 0isize); MAX_TAPS];
        for (e, piece) in pieces.iter_mut().enumerate().take(kk) {
            let (mask, off) = plan.lanes(run, e);
            *piece = (mask as u16, (mask >> 16) as u16, off);
        }
        let pieces = &pieces[..kk];
        let rows = channels * ki * kj * kk;
        let dst = &mut dst[..rows * 32];
        let mut out = dst.as_mut_ptr();
        let zero = _mm512_setzero_ps();
        for c in 0..channels {
            let xc = &x[c * plane..(c + 1) * plane];
            for a in 0..ki {
                for b in 0..kj {
                    let base = plan.row_base(run, a, b);
                    for &(m0, m1, off) in pieces {
                        // SAFETY: `out` walks `dst`'s `rows` rows of 32, one per tap (the loops
                        // run `rows` times); the lanes the masks select read `xc[base + off +
                        // lane]`, inside the input row (`piece`), the pointer itself may lie
                        // before `xc`; masked-off lanes are not accessed.
                        unsafe {
                            let (lo, hi) = match base {
                                Some(base) => {
                                    let p = xc.as_ptr().wrapping_offset(base as isize + off);
                                    (_mm512_maskz_loadu_ps(m0, p), _mm512_maskz_loadu_ps(m1, p.wrapping_add(16)))
                                }
                                None => (zero, zero),
                            };
                            _mm512_storeu_ps(out, lo);
                            _mm512_storeu_ps(out.add(16), hi);
                            out = out.add(32);
                        }
                    }
                }
            }
        }
    }
    /// [`PanelPlan::pack`] for 16-wide panels and unit stride along rows: each panel row is
    /// assembled in two 8-lane registers, every in-range piece of a run by one masked load per
    /// half (AVX2 masked loads zero the lanes they skip, so pieces are merged by `or`), and
    /// stored whole. The values are copied, so the panel is the same bits as [`PanelPlan::pack_rows`]'s.
    ///
    /// # Safety
    /// The CPU supports AVX2; `plan.nr == 16` and the geometry's stride along rows is 1.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn pack_avx2(plan: &PanelPlan<'_>, x: &[f32], channels: usize, runs: &[Run], dst: &mut [f32]) {
        let g = plan.g;
        let [ki, kj, kk] = g.kernel;
        let plane = g.input.iter().product::<usize>();
        if kk > MAX_TAPS || runs.len() > NR_AVX2 {
            return plan.pack_rows(x, channels, runs, dst);
        }
        if let [run] = runs {
            // SAFETY: forwarded.
            return unsafe { pack_one_run_avx2(plan, x, channels, run, dst) };
        }
        // Per tap column and run: the lanes of its in-range piece ([`PanelPlan::lanes`]).
        let mut pieces = [[(0u32, 0isize); NR_AVX2]; MAX_TAPS];
        for (e, per_run) in pieces.iter_mut().enumerate().take(kk) {
            for (piece, run) in per_run.iter_mut().zip(runs) {
                *piece = plan.lanes(run, e);
            }
        }
        let rows = channels * ki * kj * kk;
        let dst = &mut dst[..rows * NR_AVX2];
        let mut out = dst.as_mut_ptr();
        for c in 0..channels {
            let xc = &x[c * plane..(c + 1) * plane];
            for a in 0..ki {
                for b in 0..kj {
                    let mut bases = [None; NR_AVX2];
                    for (base, run) in bases.iter_mut().zip(runs) {
                        *base = plan.row_base(run, a, b);
                    }
                    for per_run in &pieces[..kk] {
                        let (mut lo, mut hi) = (_mm256_setzero_ps(), _mm256_setzero_ps());
                        for (&(mask, off), base) in per_run.iter().zip(&bases[..runs.len()]) {
                            let Some(base) = *base else { continue };
                            if mask == 0 {
                                continue;
                            }
                            // The lanes the mask selects read `xc[base + off + lane]`, inside
                            // the input row (`piece`); the pointer itself may lie before `xc`.
                            let p = xc.as_ptr().wrapping_offset(base as isize + off);
                            let (m0, m1) = lane_masks(mask);
                            // SAFETY: masked-off lanes are not accessed; the others are in bounds.
                            unsafe {
                                lo = _mm256_or_ps(lo, _mm256_maskload_ps(p, m0));
                                hi = _mm256_or_ps(hi, _mm256_maskload_ps(p.wrapping_add(8), m1));
                            }
                        }
                        // SAFETY: `out` walks `dst`'s `rows` rows of 16, one per tap (the loops
                        // run `rows` times).
                        unsafe {
                            _mm256_storeu_ps(out, lo);
                            _mm256_storeu_ps(out.add(8), hi);
                            out = out.add(NR_AVX2);
                        }
                    }
                }
            }
        }
    }

    /// [`pack_avx2`] for a panel that lies in one output row (every panel when rows are a
    /// multiple of 16 long): each panel row is one input row's run at the tap's offset, two
    /// masked loads and two stores, or two stores of zeros when the row is padding.
    ///
    /// # Safety
    /// As [`pack_avx2`]; `g.kernel[2] <= MAX_TAPS`.
    #[target_feature(enable = "avx2")]
    unsafe fn pack_one_run_avx2(plan: &PanelPlan<'_>, x: &[f32], channels: usize, run: &Run, dst: &mut [f32]) {
        let g = plan.g;
        let [ki, kj, kk] = g.kernel;
        let plane = g.input.iter().product::<usize>();
        // Per tap column: the lane masks of the in-range piece's two halves, and the offset
        // from the input row's start of the element lane 0 would read.
        let zeros = _mm256_setzero_si256();
        let mut pieces = [(zeros, zeros, 0isize); MAX_TAPS];
        for (e, piece) in pieces.iter_mut().enumerate().take(kk) {
            let (mask, off) = plan.lanes(run, e);
            let (m0, m1) = lane_masks(mask);
            *piece = (m0, m1, off);
        }
        let pieces = &pieces[..kk];
        let rows = channels * ki * kj * kk;
        let dst = &mut dst[..rows * NR_AVX2];
        let mut out = dst.as_mut_ptr();
        let zero = _mm256_setzero_ps();
        for c in 0..channels {
            let xc = &x[c * plane..(c + 1) * plane];
            for a in 0..ki {
                for b in 0..kj {
                    let base = plan.row_base(run, a, b);
                    for &(m0, m1, off) in pieces {
                        // SAFETY: `out` walks `dst`'s `rows` rows of 16, one per tap (the loops
                        // run `rows` times); the lanes the masks select read `xc[base + off +
                        // lane]`, inside the input row (`piece`), the pointer itself may lie
                        // before `xc`; masked-off lanes are not accessed.
                        unsafe {
                            let (lo, hi) = match base {
                                Some(base) => {
                                    let p = xc.as_ptr().wrapping_offset(base as isize + off);
                                    (_mm256_maskload_ps(p, m0), _mm256_maskload_ps(p.wrapping_add(8), m1))
                                }
                                None => (zero, zero),
                            };
                            _mm256_storeu_ps(out, lo);
                            _mm256_storeu_ps(out.add(8), hi);
                            out = out.add(NR_AVX2);
                        }
                    }
                }
            }
        }
    }

    /// The width of the AVX2 path's panels, and so the most runs one of them has.
    const NR_AVX2: usize = 16;

    /// The two 8-lane masks (all ones where selected) of the low 16 bits of `bits`, one bit
    /// per lane.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn lane_masks(bits: u32) -> (__m256i, __m256i) {
        let lanes = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
        let half = |b: u32| {
            let v = _mm256_and_si256(_mm256_set1_epi32(b as i32), lanes);
            _mm256_cmpeq_epi32(v, lanes)
        };
        (half(bits & 0xff), half((bits >> 8) & 0xff))
    }
}

/// The geometry and result sizes of `aten.convolution(input, weight, bias, stride, padding,
/// dilation, transposed, output_padding, groups)` when its out-variant applies: a batched
/// forward convolution of contiguous floating-point tensors of one dtype.
pub(crate) fn out_geometry(args: &[IValue]) -> Option<(Geometry, Vec<usize>)> {
    const OP: &str = "aten.convolution";
    let a = Args::new(OP, args, 9).ok()?;
    let (x, w) = (a.tensor(0).ok()?, a.tensor(1).ok()?);
    let bias = a.opt_tensor(2).ok()?;
    let float = |t: &Tensor| matches!(t.dtype(), DType::F32 | DType::F64) && t.dtype() == x.dtype() && t.is_contiguous();
    if !float(x) || !float(w) || !bias.is_none_or(float) || x.dim() != w.dim() || a.bool(6).ok()? {
        return None;
    }
    let ca = ConvArgs {
        stride: a.int_list(3).ok()?,
        padding: Padding::Explicit(a.int_list(4).ok()?),
        dilation: a.int_list(5).ok()?,
        transposed: false,
        output_padding: a.int_list(7).ok()?,
        groups: a.int(8).ok()?,
    };
    let g = geometry(OP, x.sizes(), w.sizes(), bias.map(|b| b.sizes()), &ca).ok()?;
    let mut sizes = vec![g.n, g.cout];
    sizes.extend_from_slice(&g.output[3 - (w.dim() - 2)..]);
    Some((g, sizes))
}

/// Padding of a convolution: explicit per-dim amounts, or PyTorch's `"same"`/`"valid"`.
pub(crate) enum Padding {
    Explicit(Vec<i64>),
    Same,
    Valid,
}

/// Options of a convolution as its ATen arguments give them.
pub(crate) struct ConvArgs {
    pub stride: Vec<i64>,
    pub padding: Padding,
    pub dilation: Vec<i64>,
    pub transposed: bool,
    pub output_padding: Vec<i64>,
    pub groups: i64,
}

fn expand_param(op: &'static str, name: &str, v: &[i64], d: usize) -> Result<Vec<i64>> {
    if v.iter().any(|x| x.unsigned_abs() > i32::MAX as u64) {
        return Err(KernelError::new(op, format!("{name} {v:?} is out of range")));
    }
    match v.len() {
        1 => Ok(vec![v[0]; d]),
        l if l == d => Ok(v.to_vec()),
        l => Err(KernelError::new(op, format!("expected {name} to have 1 or {d} elements, got {l}"))),
    }
}

/// A computed output size, or an error if it does not fit.
fn fit(op: &'static str, v: i128) -> Result<usize> {
    usize::try_from(v).map_err(|_| KernelError::new(op, format!("output size {v} is out of range")))
}

/// Validates the arguments and computes the geometry (with the padding of each side).
fn geometry(op: &'static str, x: &[usize], w: &[usize], bias: Option<&[usize]>, a: &ConvArgs) -> Result<Geometry> {
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
    let kernel: Vec<usize> = w[2..].to_vec();
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
    let (lo, hi): (Vec<usize>, Vec<usize>) = match &a.padding {
        Padding::Valid => (vec![0; d], vec![0; d]),
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
            let total: Vec<usize> = (0..d).map(|i| dilation[i] as usize * kernel[i].saturating_sub(1)).collect();
            (total.iter().map(|t| t / 2).collect(), total.iter().map(|t| t - t / 2).collect())
        }
    };
    let mut out = vec![0usize; d];
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
        stride: pad3(&stride.iter().map(|&v| v as usize).collect::<Vec<_>>(), 1),
        pad_lo: pad3(&lo, 0),
        dilation: pad3(&dilation.iter().map(|&v| v as usize).collect::<Vec<_>>(), 1),
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
        return if unbatched { super::linalg::reshape_contiguous(&r, &out_sizes[1..]) } else { Ok(r) };
    }
    let r = widen_halves(&ts, |t| {
        super::linalg::with_real!(op, t[0].dtype(), T => {
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
    if unbatched { super::linalg::reshape_contiguous(&r, &out_sizes[1..]) } else { Ok(r) }
}

fn convolution(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = "aten.convolution";
    let a = Args::new(OP, args, 9)?;
    let ca = ConvArgs {
        stride: a.int_list(3)?,
        padding: Padding::Explicit(a.int_list(4)?),
        dilation: a.int_list(5)?,
        transposed: a.bool(6)?,
        output_padding: a.int_list(7)?,
        groups: a.int(8)?,
    };
    Ok(outs([convolution_tensors(OP, a.tensor(0)?, a.tensor(1)?, a.opt_tensor(2)?, &ca)?]))
}

/// `convNd(input, weight, bias, stride, padding, dilation, groups)`, where padding is an int
/// list or (the `.padding` overloads) `"same"`/`"valid"`.
fn conv_nd(op: &'static str, d: usize, args: &[IValue]) -> Result<Vec<IValue>> {
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
        IValue::None => Padding::Explicit(vec![0; d]),
        _ => Padding::Explicit(a.int_list(4)?),
    };
    let ca = ConvArgs {
        stride: list_or(3, 1)?,
        padding,
        dilation: list_or(5, 1)?,
        transposed: false,
        output_padding: vec![0; d],
        groups: a.opt_int(6)?.unwrap_or(1),
    };
    Ok(outs([convolution_tensors(op, a.tensor(0)?, w, a.opt_tensor(2)?, &ca)?]))
}

/// `conv_transposeNd(input, weight, bias, stride, padding, output_padding, groups, dilation)`.
fn conv_transpose_nd(op: &'static str, d: usize, args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op, args, 2)?;
    let w = a.tensor(1)?;
    if w.dim() != d + 2 {
        return Err(KernelError::new(op, format!("expected a {}-D weight, got {:?}", d + 2, w.sizes())));
    }
    let list_or = |i: usize, default: i64| -> Result<Vec<i64>> {
        if a.get(i).is_none() { Ok(vec![default; d]) } else { a.int_list(i) }
    };
    let ca = ConvArgs {
        stride: list_or(3, 1)?,
        padding: Padding::Explicit(list_or(4, 0)?),
        output_padding: list_or(5, 0)?,
        groups: a.opt_int(6)?.unwrap_or(1),
        dilation: list_or(7, 1)?,
        transposed: true,
    };
    Ok(outs([convolution_tensors(op, a.tensor(0)?, w, a.opt_tensor(2)?, &ca)?]))
}

fn conv1d(args: &[IValue]) -> Result<Vec<IValue>> {
    conv_nd("aten.conv1d", 1, args)
}
fn conv2d(args: &[IValue]) -> Result<Vec<IValue>> {
    conv_nd("aten.conv2d", 2, args)
}
fn conv3d(args: &[IValue]) -> Result<Vec<IValue>> {
    conv_nd("aten.conv3d", 3, args)
}
fn conv1d_padding(args: &[IValue]) -> Result<Vec<IValue>> {
    conv_nd("aten.conv1d.padding", 1, args)
}
fn conv2d_padding(args: &[IValue]) -> Result<Vec<IValue>> {
    conv_nd("aten.conv2d.padding", 2, args)
}
fn conv3d_padding(args: &[IValue]) -> Result<Vec<IValue>> {
    conv_nd("aten.conv3d.padding", 3, args)
}
fn conv_transpose1d(args: &[IValue]) -> Result<Vec<IValue>> {
    conv_transpose_nd("aten.conv_transpose1d", 1, args)
}
fn conv_transpose2d(args: &[IValue]) -> Result<Vec<IValue>> {
    conv_transpose_nd("aten.conv_transpose2d.input", 2, args)
}
fn conv_transpose3d(args: &[IValue]) -> Result<Vec<IValue>> {
    conv_transpose_nd("aten.conv_transpose3d.input", 3, args)
}

/// Sliding-block options shared by `im2col` and `col2im`: kernel, dilation, padding, stride
/// (two elements each, or one broadcast to both).
fn block_options(op: &'static str, a: &Args<'_>, first: usize) -> Result<[[usize; 2]; 4]> {
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
fn blocks(op: &'static str, size: usize, k: usize, d: usize, p: usize, s: usize) -> Result<usize> {
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
fn with_conv_elem(
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
    };
    r.cast_to(dt)
}

/// `im2col(self, kernel_size, dilation, padding, stride)`: `[N, C, H, W]` to
/// `[N, C·kh·kw, L]` sliding blocks (`F.unfold`).
fn im2col_op(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = "aten.im2col";
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
fn col2im_op(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = "aten.col2im";
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

pub fn register(r: &mut KernelRegistry) {
    r.register("aten.im2col", im2col_op);
    r.register(op::COL2IM, col2im_op);
    r.register(op::CONVOLUTION, convolution);
    r.register(op::CONV1D, conv1d);
    r.register(op::CONV2D, conv2d);
    r.register("aten.conv3d", conv3d);
    r.register(op::CONV1D_PADDING, conv1d_padding);
    r.register(op::CONV2D_PADDING, conv2d_padding);
    r.register("aten.conv3d.padding", conv3d_padding);
    r.register("aten.conv_transpose1d", conv_transpose1d);
    r.register("aten.conv_transpose2d.input", conv_transpose2d);
    r.register("aten.conv_transpose3d.input", conv_transpose3d);
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::kernels::testing::Gen;

    /// The column matrix by definition: row `c·K + k`, column `r·ow + xo`.
    fn naive_columns(x: &[f32], g: &Geometry, channels: usize, r0: usize, r1: usize) -> Vec<f32> {
        let [ki, kj, kk] = g.kernel;
        let [id, ih, iw] = g.input;
        let [_, oh, ow] = g.output;
        let mut out = Vec::new();
        for c in 0..channels {
            for a in 0..ki {
                for b in 0..kj {
                    for e in 0..kk {
                        for r in r0..r1 {
                            for xo in 0..ow {
                                let iz = (r / oh * g.stride[0] + a * g.dilation[0]) as isize - g.pad_lo[0] as isize;
                                let iy = (r % oh * g.stride[1] + b * g.dilation[1]) as isize - g.pad_lo[1] as isize;
                                let ix = (xo * g.stride[2] + e * g.dilation[2]) as isize - g.pad_lo[2] as isize;
                                let inside = (0..id as isize).contains(&iz)
                                    && (0..ih as isize).contains(&iy)
                                    && (0..iw as isize).contains(&ix);
                                out.push(if inside {
                                    x[((c * id + iz as usize) * ih + iy as usize) * iw + ix as usize]
                                } else {
                                    0.0
                                });
                            }
                        }
                    }
                }
            }
        }
        out
    }

    fn geometry3(
        input: [usize; 3],
        kernel: [usize; 3],
        stride: [usize; 3],
        pad: [usize; 3],
        dil: [usize; 3],
    ) -> Geometry {
        let output: [usize; 3] =
            std::array::from_fn(|i| (input[i] + 2 * pad[i] - dil[i] * (kernel[i] - 1) - 1) / stride[i] + 1);
        Geometry {
            n: 1,
            cin: 2,
            cout: 1,
            groups: 1,
            input,
            kernel,
            output,
            stride,
            pad_lo: pad,
            dilation: dil,
            transposed: false,
        }
    }

    /// Every band of every geometry, merged runs ("same" convolutions) and per-row copies
    /// alike, matches the definition exactly, including bands that start and end inside a
    /// plane of a 3-d output and positions that an earlier band's garbage occupied.
    #[test]
    fn column_bands_match_the_definition() {
        let cases = [
            // 3×3, padding 1, stride 1: rows merge; 5×5 with padding 2; dilated 3×3 with
            // padding 2 (each also "same").
            geometry3([1, 7, 6], [1, 3, 3], [1, 1, 1], [0, 1, 1], [1, 1, 1]),
            geometry3([1, 6, 9], [1, 5, 5], [1, 1, 1], [0, 2, 2], [1, 1, 1]),
            geometry3([1, 8, 5], [1, 3, 3], [1, 1, 1], [0, 2, 2], [1, 2, 2]),
            // 3-d "same": runs stop at each plane's last row.
            geometry3([3, 4, 5], [3, 3, 3], [1, 1, 1], [1, 1, 1], [1, 1, 1]),
            // Not merged: strided, unpadded, padded only along rows, padding wider than taps.
            geometry3([1, 9, 9], [1, 3, 3], [1, 2, 2], [0, 1, 1], [1, 1, 1]),
            geometry3([1, 6, 7], [1, 3, 3], [1, 1, 1], [0, 0, 0], [1, 1, 1]),
            geometry3([1, 6, 7], [1, 3, 2], [1, 1, 1], [0, 1, 0], [1, 1, 1]),
            geometry3([1, 3, 4], [1, 2, 2], [1, 1, 1], [0, 3, 3], [1, 1, 1]),
        ];
        for g in &cases {
            let channels = g.cin;
            let x: Vec<f32> = (0..channels * g.in_numel()).map(|i| i as f32 + 1.0).collect();
            let rows = g.output[0] * g.output[1];
            for band in 1..=rows {
                let per = channels * g.kernel_numel() * band * g.output[2];
                // A tile full of garbage: every element must be written.
                let mut col = vec![f32::NAN; per];
                let mut r0 = 0;
                while r0 < rows {
                    let r1 = (r0 + band).min(rows);
                    let len = channels * g.kernel_numel() * (r1 - r0) * g.output[2];
                    im2col_rows(&x, g, channels, r0, r1, &mut col[..len]);
                    let want = naive_columns(&x, g, channels, r0, r1);
                    assert!(
                        col[..len].iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()),
                        "{g:?}, rows {r0}..{r1}"
                    );
                    r0 = r1;
                }
            }
        }
    }

    /// Geometries covering the cases the column panels distinguish: runs of a panel that
    /// span several output rows (rows shorter than a panel, a panel ending mid-row), rows
    /// wholly in the padding, strides and dilations along every dim, 3-d and 1-d outputs,
    /// and a kernel row wider than the masked path keeps pieces for.
    fn panel_geometries() -> Vec<Geometry> {
        vec![
            geometry3([1, 7, 6], [1, 3, 3], [1, 1, 1], [0, 1, 1], [1, 1, 1]),
            geometry3([1, 6, 40], [1, 3, 3], [1, 1, 1], [0, 1, 1], [1, 1, 1]),
            geometry3([1, 5, 64], [1, 3, 3], [1, 1, 1], [0, 1, 1], [1, 1, 1]),
            geometry3([1, 6, 9], [1, 5, 5], [1, 1, 1], [0, 2, 2], [1, 1, 1]),
            geometry3([1, 8, 35], [1, 3, 3], [1, 1, 1], [0, 2, 2], [1, 2, 2]),
            geometry3([3, 4, 5], [3, 3, 3], [1, 1, 1], [1, 1, 1], [1, 1, 1]),
            geometry3([1, 9, 37], [1, 3, 3], [1, 2, 2], [0, 1, 1], [1, 1, 1]),
            geometry3([5, 9, 9], [2, 3, 3], [2, 1, 2], [1, 0, 1], [2, 1, 1]),
            geometry3([1, 6, 7], [1, 3, 3], [1, 1, 1], [0, 0, 0], [1, 1, 1]),
            geometry3([1, 6, 7], [1, 3, 2], [1, 1, 1], [0, 1, 0], [1, 1, 1]),
            geometry3([1, 3, 4], [1, 2, 2], [1, 1, 1], [0, 3, 3], [1, 1, 1]),
            geometry3([1, 1, 70], [1, 1, 5], [1, 1, 1], [0, 0, 2], [1, 1, 3]),
            geometry3([1, 4, 1], [1, 3, 1], [1, 1, 1], [0, 1, 0], [1, 1, 1]),
            geometry3([1, 3, 20], [1, 1, 19], [1, 1, 1], [0, 0, 9], [1, 1, 1]),
        ]
    }

    /// Every panel of every geometry, for both panel widths and with the masked rows and
    /// without, on every ISA the host runs (AVX-512 for 32-wide panels, AVX2 for 16-wide ones,
    /// the scalar rows otherwise), is the column matrix's block by definition, zero past its
    /// last column: the same bits on every path. Every element of the panel is written (it
    /// starts as NaN).
    #[test]
    fn column_panels_match_the_definition() {
        for isa in Isa::supported() {
            ::kernels::isa::with(isa, || panels_match_the_definition(isa));
        }
    }

    fn panels_match_the_definition(isa: Isa) {
        for g in &panel_geometries() {
            let channels = g.cin;
            let x: Vec<f32> = (0..channels * g.in_numel()).map(|i| i as f32 + 1.0).collect();
            let rows = g.output[0] * g.output[1];
            let lout = g.out_numel();
            let col = naive_columns(&x, g, channels, 0, rows);
            let k = channels * g.kernel_numel();
            for nr in [16, 32] {
                for masked in [false, true] {
                    let plan = PanelPlan::new(g, nr, masked);
                    for j0 in (0..lout).step_by(nr) {
                        let cols = nr.min(lout - j0);
                        let mut panel = vec![f32::NAN; k * nr];
                        plan.pack(&x, channels, j0, cols, &mut panel);
                        for r in 0..k {
                            for j in 0..nr {
                                let want = if j < cols { col[r * lout + j0 + j] } else { 0.0 };
                                let got = panel[r * nr + j];
                                assert!(
                                    got.to_bits() == want.to_bits(),
                                    "{isa} {g:?} nr={nr} masked={masked} panel at {j0}: row {r} column {j}: got {got}, want {want}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    /// The prepacked convolution (column panels, or the input itself for 1×1 stride-1 ones)
    /// agrees with the general one on batches, groups, strides, padding, dilation, 1×1 and
    /// odd sizes, with and without bias; and gives the same bits on one thread and on three,
    /// with the panels split across the team.
    #[test]
    fn prepacked_convolution_matches_the_general_one_on_any_thread_count() {
        let Some(isa) = Isa::simd() else {
            println!("skipping: this CPU runs no prepacked path");
            return;
        };
        let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let three = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        let mut rng = Gen(0x51_7cc1_b727_220a);
        // (n, cin, cout, groups, input, kernel, stride, pad, dilation)
        type Case = (usize, usize, usize, usize, [usize; 3], [usize; 3], [usize; 3], [usize; 3], [usize; 3]);
        let cases: [Case; 9] = [
            (1, 3, 32, 1, [1, 64, 64], [1, 3, 3], [1, 1, 1], [0, 1, 1], [1, 1, 1]),
            (2, 8, 12, 2, [1, 13, 21], [1, 3, 3], [1, 1, 1], [0, 1, 1], [1, 1, 1]),
            (3, 4, 9, 1, [1, 11, 10], [1, 3, 3], [1, 2, 2], [0, 1, 1], [1, 1, 1]),
            (2, 6, 6, 3, [1, 9, 33], [1, 3, 5], [1, 1, 1], [0, 2, 2], [1, 2, 1]),
            (2, 5, 7, 1, [1, 6, 50], [1, 1, 1], [1, 1, 1], [0, 0, 0], [1, 1, 1]),
            (1, 5, 7, 1, [1, 6, 50], [1, 1, 1], [1, 2, 2], [0, 0, 0], [1, 1, 1]),
            (2, 4, 5, 1, [4, 5, 6], [3, 3, 3], [1, 1, 1], [1, 1, 1], [1, 1, 1]),
            (1, 2, 3, 1, [1, 1, 97], [1, 1, 7], [1, 1, 3], [0, 0, 3], [1, 1, 1]),
            (1, 32, 32, 1, [1, 64, 64], [1, 3, 3], [1, 1, 1], [0, 1, 1], [1, 1, 1]),
        ];
        for (n, cin, cout, groups, input, kernel, stride, pad, dil) in cases {
            let g = Geometry { n, cin, cout, groups, ..geometry3(input, kernel, stride, pad, dil) };
            let x = rng.vec(n * cin * g.in_numel());
            let mut wsizes = vec![cout, cin / groups];
            wsizes.extend(kernel);
            let wd = rng.vec(wsizes.iter().product());
            let wt = Tensor::from_vec(wd.clone(), &wsizes).unwrap();
            let filter = PackedFilter::pack("t", isa, &wt, groups).unwrap();
            let bias = rng.vec(cout);
            for b in [None, Some(&bias[..])] {
                let len = n * cout * g.out_numel();
                let mut want = vec![0.0f32; len];
                conv_compute("t", &g, &x, &wd, b, &mut want).unwrap();
                let run = |pool: &rayon::ThreadPool| {
                    let mut got = vec![f32::NAN; len];
                    pool.install(|| conv_compute_packed("t", &g, &x, &filter, b, &mut got)).unwrap();
                    got
                };
                let (single, split) = (run(&one), run(&three));
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&single), bits(&split), "{g:?} bias={}", b.is_some());
                let k = (cin / groups * g.kernel_numel()) as f32;
                for (i, (s, w)) in single.iter().zip(&want).enumerate() {
                    assert!((s - w).abs() <= 1e-5 * (k + 4.0) * (1.0 + w.abs()), "{g:?} element {i}: got {s}, want {w}");
                }
            }
        }
    }
}
