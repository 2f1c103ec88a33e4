//! Convolution with a prepacked `f32` filter: each panel of consecutive output positions is
//! gathered straight into the packed GEMM's panel layout and multiplied while in L1, the panels
//! split across the intra-op team.

use super::*;
use ::kernels::gemm::{gemm_packed_a_rows_post, gemm_packed_a_rows_split_post};

/// The weight of a forward convolution prepacked for the `f32` GEMM: one packed
/// `[cout/groups, cin/groups · K]` matrix per group.
#[derive(Debug)]
pub(crate) struct PackedFilter {
    pub groups: usize,
    pub per_group: Vec<PackedA>,
    /// The weight itself, `[C, 1, k...]`, of a depthwise filter (one output channel per
    /// single-channel group), which the direct kernel reads instead of `per_group` (empty).
    pub depthwise: Option<Vec<f32>>,
    /// The filter transposed (`cin·K × cout`), for the pixel-major product ([`by_positions`]),
    /// which then runs instead of `per_group` (empty).
    pub pixel_major: Option<PackedB>,
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
        if cout_g == 1 && w.sizes()[1] == 1 {
            return Ok(PackedFilter { groups, per_group: Vec::new(), depthwise: Some(data.to_vec()), pixel_major: None });
        }
        let per_group = (0..groups)
            .map(|g| PackedA::pack(op, isa, MatView::new(op, data, g * cout_g * cols, cout_g, cols, cols, 1)?))
            .collect::<::kernels::Result<_>>()?;
        Ok(PackedFilter { groups, per_group, depthwise: None, pixel_major: None })
    }

    /// Packs the filter `w` of a forward convolution in `groups` groups whose images have
    /// `positions` output positions: pixel-major where that fills the vector lanes better
    /// ([`pixel_major_pays`]), as [`PackedFilter::pack`] otherwise.
    pub(crate) fn pack_for(op: &'static str, isa: Isa, w: &Tensor, groups: usize, positions: usize) -> Result<PackedFilter> {
        let cout = w.sizes().first().copied().unwrap_or(0);
        let k: usize = w.sizes().iter().skip(1).product();
        if groups != 1 || w.dim() < 3 || k == 0 || !pixel_major_applies(isa, positions, k, cout) {
            return Self::pack(op, isa, w, groups);
        }
        let wc = w.contiguous()?;
        let packed = pack_pixel_major(op, isa, wc.as_slice::<f32>()?, cout, k)?;
        Ok(PackedFilter { groups: 1, per_group: Vec::new(), depthwise: None, pixel_major: Some(packed) })
    }
}

/// [`conv_compute`] for `f32` with the weight prepacked: the bias is added in the GEMM's
/// epilogue instead of a pass of its own, and `post` (a residual addend of the output's
/// layout, an activation) applied to each tile of the output as it is finished.
pub(crate) fn conv_compute_packed(
    op: &'static str,
    g: &Geometry,
    x: &[f32],
    w: &PackedFilter,
    bias: Option<&[f32]>,
    post: &Post<'_>,
    out: &mut [f32],
) -> Result<()> {
    let (cin_g, cout_g) = (g.cin / g.groups, g.cout / g.groups);
    let k = g.kernel_numel();
    let (lin, lout) = (g.in_numel(), g.out_numel());
    if let (Some(raw), Some(d)) = (&w.depthwise, g.depthwise()) {
        if x.len() < g.n * g.cin * lin || out.len() < g.n * g.cout * lout || raw.len() != g.cout * k {
            return Err(KernelError::new(op, "internal error: convolution buffers are too small"));
        }
        if post.addend.is_none() && post.half == HalfRounding::NONE {
            return Ok(::kernels::depthwise::depthwise(op, Isa::current(), &d, g.n, x, raw, bias, post.act, out)?);
        }
        // The direct kernel applies an activation only: a residual (and a rounding through
        // `f16`) is applied after it.
        ::kernels::depthwise::depthwise(op, Isa::current(), &d, g.n, x, raw, bias, Activation::None, out)?;
        return Ok(post.apply_to(op, g.n * g.cout, lout, out, lout)?);
    }
    if let Some(wt) = &w.pixel_major {
        return by_positions(op, g, x, wt, bias, post, out);
    }
    if g.transposed || w.depthwise.is_some() || w.groups != g.groups || w.per_group.iter().any(|a| a.rows() != cout_g || a.cols() != cin_g * k) {
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
                let row = n * g.cout + grp * cout_g;
                let o = row * lout;
                let post = post.from(row, 0);
                gemm_packed_a_post(op, a, b, &group_epilogue(bias, grp, cout_g), &post, &mut out[o..o + cout_g * lout], lout)?;
            }
        }
        return Ok(());
    }
    if w.per_group.first().is_some_and(|a| by_rows_applies(g, a.isa()) || by_image_applies(g, a.isa(), post)) {
        return by_rows(op, g, x, w, bias, post, out);
    }
    by_panels(op, g, x, w, bias, post, out)
}

/// The epilogue of group `grp`'s product: its channels' share of the bias.
pub(super) fn group_epilogue(bias: Option<&[f32]>, grp: usize, cout_g: usize) -> Epilogue<'_> {
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
pub(super) const PARALLEL_MIN_FMAS: usize = 1 << 20;

/// Tasks per thread of a split convolution: more than one, so a thread that starts late takes
/// a smaller share instead of holding the caller up.
pub(super) const PARALLEL_TASKS_PER_THREAD: usize = 4;

/// The forward convolution as products of the filter with column panels: for every image,
/// group and panel of `nr` consecutive output positions, the panel's columns of the column
/// matrix are written straight into the packed layout of the GEMM ([`PanelPlan::pack`]), a
/// `K × nr` block that stays in L1 while the tile rows of the filter pass over it, and
/// multiplied into the output's columns at once (a few panels at a time when the filter does
/// not fit L2, [`PackedA::panel_group`]). Every output element is computed by one tile over the whole
/// of `K` in one order, so splitting the panels across threads does not change the bits.
pub(super) fn by_panels(
    op: &'static str,
    g: &Geometry,
    x: &[f32],
    w: &PackedFilter,
    bias: Option<&[f32]>,
    post: &Post<'_>,
    out: &mut [f32],
) -> Result<()> {
    let (cin_g, cout_g) = (g.cin / g.groups, g.cout / g.groups);
    let (k, lin, lout) = (cin_g * g.kernel_numel(), g.in_numel(), g.out_numel());
    let Some(first) = w.per_group.first() else { return Ok(()) };
    let isa = first.isa();
    let nr = isa.nr();
    let fmas = g.n.saturating_mul(g.cout).saturating_mul(lout).saturating_mul(k);
    let threads = crate::parallel::threads();
    let split = threads > 1 && fmas >= PARALLEL_MIN_FMAS;
    // Panels are packed `group` at a time, so that a filter too large for L2 is read once a
    // group rather than once a panel; a split convolution keeps at least two groups a thread.
    let total = lout.div_ceil(nr);
    let most = if split { total.div_ceil(2 * threads) } else { total };
    let group = first.panel_group(total).min(most).max(1);
    let panels = lout.div_ceil(nr * group);
    let units = g.n * g.groups * panels;
    let tasks = if split { (threads * PARALLEL_TASKS_PER_THREAD).min(units) } else { 1 };
    let plan = PanelPlan::new(g, nr, true);
    let dst = crate::parallel::SharedOut(out.as_mut_ptr());
    crate::parallel::try_for_each(tasks, |t| {
        PANEL_SCRATCH.with_borrow_mut(|buf| -> Result<()> {
            let start = aligned_start(buf, group * k * nr);
            let panel = &mut buf[start..start + group * k * nr];
            for u in units * t / tasks..units * (t + 1) / tasks {
                let (image_group, p) = (u / panels, u % panels);
                let (n, grp) = (image_group / g.groups, image_group % g.groups);
                let xg = &x[(n * g.cin + grp * cin_g) * lin..(n * g.cin + (grp + 1) * cin_g) * lin];
                let (j0, cols) = (p * group * nr, (group * nr).min(lout - p * group * nr));
                for (q, dst) in panel.chunks_exact_mut(k * nr).take(cols.div_ceil(nr)).enumerate() {
                    plan.pack(xg, cin_g, j0 + q * nr, nr.min(cols - q * nr), dst);
                }
                let row = n * g.cout + grp * cout_g;
                let o = row * lout + j0;
                let ep = group_epilogue(bias, grp, cout_g);
                let post = post.from(row, j0);
                // SAFETY: `out` holds `g.n·g.cout·lout` elements (checked by the caller), so the
                // `cout_g` rows of `cols ≤ lout - j0` elements from `o`, `lout` apart, lie inside
                // it; each (image, group, panel) is one unit, computed by one task.
                unsafe { gemm_packed_a_panels_post(op, &w.per_group[grp], panel, cols, &ep, &post, dst.get().add(o), lout)? };
            }
            Ok(())
        })
    })
}

/// How the column panels of one convolution are packed: the in-range interval of every tap
/// column ([`Span`]), worked out once per call.
pub(super) struct PanelPlan<'g> {
    pub(super) g: &'g Geometry,
    pub(super) nr: usize,
    /// The spans of the first [`MAX_SPANS`] tap columns (later ones are worked out when asked
    /// for), kept in place so that a call allocates nothing.
    pub(super) spans: [Span; MAX_SPANS],
    /// The vector path that assembles rows with masked loads, if any: AVX-512 for 32-wide
    /// panels (unit stride along rows), AVX2 for 16-wide ones (stride 1 or 2 along rows), on a
    /// thread that may run the path.
    pub(super) vector: Option<Isa>,
}

/// Panel columns `d..d + len` are output positions `xo..xo + len` of output row `(z, y)`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Run {
    pub(super) d: usize,
    pub(super) len: usize,
    pub(super) z: usize,
    pub(super) y: usize,
    pub(super) xo: usize,
}

/// Tap columns whose spans a [`PanelPlan`] keeps.
pub(super) const MAX_SPANS: usize = 16;

/// Most runs a panel can have: one per column.
pub(super) const MAX_RUNS: usize = 32;

impl<'g> PanelPlan<'g> {
    /// The plan for panels `nr` wide (at most [`MAX_RUNS`]); with `masked`, rows are assembled
    /// with masked vector loads (AVX-512 for 32-wide panels, AVX2 for 16-wide ones) where the
    /// thread's ISA and the geometry allow it.
    pub(super) fn new(g: &'g Geometry, nr: usize, masked: bool) -> PanelPlan<'g> {
        let spans = std::array::from_fn(|e| Self::span_of(g, e));
        let vector = match nr {
            32 => Some(Isa::Avx512),
            16 => Some(Isa::Avx2),
            _ => None,
        }
        .filter(|isa| {
            let stride = g.stride[2] == 1 || (*isa == Isa::Avx2 && g.stride[2] == 2);
            masked && stride && cfg!(target_arch = "x86_64") && isa.available()
        });
        PanelPlan { g, nr, spans, vector }
    }

    /// Writes the panel of output positions `j0..j0 + cols` (`cols ≤ nr`) of the column matrix
    /// of `channels` input channels `x` to `dst` (`channels·K` rows of `nr`; columns past
    /// `cols` zero): row `c·K + k` (channel, kernel offset), as [`im2col`] orders them.
    pub(super) fn pack(&self, x: &[f32], channels: usize, j0: usize, cols: usize, dst: &mut [f32]) {
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
            // SAFETY: `vector` is AVX-512 only when the CPU has AVX-512F, panels are 32 wide
            // and the stride along rows is 1, AVX2 only when it has AVX2, panels are 16 wide
            // and the stride along rows is 1 or 2.
            Some(Isa::Avx512) => return unsafe { x86::pack_avx512(self, x, channels, runs, dst) },
            Some(Isa::Avx2) if self.g.stride[2] == 2 => return unsafe { x86::pack_stride2_avx2(self, x, channels, runs, dst) },
            Some(Isa::Avx2) => return unsafe { x86::pack_avx2(self, x, channels, runs, dst) },
            _ => {}
        }
        self.pack_rows(x, channels, runs, dst);
    }

    /// The in-range interval of tap column `e`.
    pub(super) fn span_of(g: &Geometry, e: usize) -> Span {
        Span::new(e * g.dilation[2], g.stride[2], g.pad_lo[2], g.input[2], g.output[2])
    }

    /// [`PanelPlan::pack`] one element at a time (any stride, any panel width). The pieces
    /// of every tap column are worked out once per panel, the input rows of every run once per
    /// kernel row, and each piece is copied from a slice of its input row (no bounds check per
    /// element).
    pub(super) fn pack_rows(&self, x: &[f32], channels: usize, runs: &[Run], dst: &mut [f32]) {
        let g = self.g;
        let [ki, kj, kk] = g.kernel;
        let [id, ih, iw] = g.input;
        let plane = id * ih * iw;
        let stride = g.stride[2];
        // The pieces of the first `MAX_SPANS` tap columns of every run, kept in place.
        let mut pieces = [[(0usize, 0usize, 0usize); MAX_RUNS]; MAX_SPANS];
        let cached = kk.min(MAX_SPANS);
        for (e, per_run) in pieces.iter_mut().enumerate().take(cached) {
            for (piece, run) in per_run.iter_mut().zip(runs) {
                *piece = self.piece(run, e);
            }
        }
        let mut bases = [None; MAX_RUNS];
        let mut rows = dst.chunks_exact_mut(self.nr);
        for c in 0..channels {
            let xc = &x[c * plane..(c + 1) * plane];
            for a in 0..ki {
                for b in 0..kj {
                    for (base, run) in bases.iter_mut().zip(runs) {
                        *base = self.row_base(run, a, b);
                    }
                    for e in 0..kk {
                        let Some(row) = rows.next() else { return };
                        row.fill(0.0);
                        for (r, run) in runs.iter().enumerate() {
                            let Some(base) = bases[r] else { continue };
                            let (l, h, src) = if e < cached { pieces[e][r] } else { self.piece(run, e) };
                            if h == l {
                                continue;
                            }
                            let src = base + src;
                            let from = &xc[src..src + (h - l - 1) * stride + 1];
                            for (v, &s) in row[run.d + l..run.d + h].iter_mut().zip(from.iter().step_by(stride)) {
                                *v = s;
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
    pub(super) fn row_base(&self, run: &Run, a: usize, b: usize) -> Option<usize> {
        let g = self.g;
        let iz = (run.z * g.stride[0] + a * g.dilation[0]).checked_sub(g.pad_lo[0]).filter(|&v| v < g.input[0])?;
        let iy = (run.y * g.stride[1] + b * g.dilation[1]).checked_sub(g.pad_lo[1]).filter(|&v| v < g.input[1])?;
        Some((iz * g.input[1] + iy) * g.input[2])
    }

    /// The in-range columns of `run` for tap column `e`: the run's columns `l..h` (relative to
    /// its start) read the input row from column `src` on (`l == h` when none does).
    #[inline(always)]
    pub(super) fn piece(&self, run: &Run, e: usize) -> (usize, usize, usize) {
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
    pub(super) fn lanes(&self, run: &Run, e: usize) -> (u32, isize) {
        let (l, h, src) = self.piece(run, e);
        let mask = if h > l { (u32::MAX >> (32 - (h - l))) << (run.d + l) } else { 0 };
        (mask, src as isize - (run.d + l) as isize)
    }
}

/// Whether [`by_rows`] computes a forward convolution with a filter packed for `isa`: a vector
/// path (AVX2 or AVX-512, whose tiles read rows of `B` at their own offsets), and output rows
/// that fill at least nine tenths of the vector lanes of their tiles (half a tile's width, 8
/// lanes with AVX2 and 16 with AVX-512: with AVX2 a row of 64 or 112 fills all of them, one of
/// 55 or 111 all but one; a row of 27, 13 or 7 leaves more idle than packing costs, and takes
/// [`by_panels`], whose panels run on across rows). Any stride (positive, as the geometry
/// checks): a strided input is copied in phases ([`by_rows`]).
pub(super) fn by_rows_applies(g: &Geometry, isa: Isa) -> bool {
    let ow = g.output[2];
    let lanes = isa.nr() / 2;
    isa != Isa::Generic && !g.transposed && ow >= lanes && 10 * ow >= 9 * lanes * ow.div_ceil(lanes)
}

/// Where [`by_rows`] keeps one image's zero-padded input: per channel `pd × ph` rows, each
/// row as `s` phase rows of `pwp` elements (`s` the stride along rows), padded column `px`
/// at `(px % s)·pwp + px / s` of its row. Output column `xo`'s tap `e` reads padded column
/// `s·xo + e·dil`, which is element `xo + e·dil / s` of phase `e·dil % s`: for every tap the
/// output row's columns are consecutive elements of one phase row.
struct PaddedLayout {
    /// The padded extents: every position a tap of an output reads.
    padded: [usize; 3],
    /// Phases of a row (the stride along rows).
    phases: usize,
    /// Elements of a phase row.
    pwp: usize,
}

impl PaddedLayout {
    fn new(g: &Geometry) -> PaddedLayout {
        let padded: [usize; 3] =
            std::array::from_fn(|i| g.output[i].saturating_sub(1) * g.stride[i] + (g.kernel[i] - 1) * g.dilation[i] + 1);
        let phases = g.stride[2];
        PaddedLayout { padded, phases, pwp: padded[2].div_ceil(phases) }
    }

    /// Elements of a padded row (all its phases).
    fn row(&self) -> usize {
        self.phases * self.pwp
    }

    /// Elements of one channel's padded input.
    fn plane(&self) -> usize {
        self.padded[0] * self.padded[1] * self.row()
    }

    /// The offset from a channel's start of the run that tap `(a, b, e)` of output row 0
    /// reads.
    fn tap(&self, g: &Geometry, a: usize, b: usize, e: usize) -> usize {
        let col = e * g.dilation[2];
        (a * g.dilation[0] * self.padded[1] + b * g.dilation[1]) * self.row() + (col % self.phases) * self.pwp + col / self.phases
    }

    /// The offset from a channel's start of output row `(z, y)`'s taps `(0, 0, 0)`.
    fn output_row(&self, g: &Geometry, z: usize, y: usize) -> usize {
        (z * g.stride[0] * self.padded[1] + y * g.stride[1]) * self.row()
    }
}

thread_local! {
    /// The zero-padded input and the column matrix's row offsets of [`by_rows`], kept per
    /// thread across calls (taken out while a convolution runs, so that one started on the same
    /// thread meanwhile allocates its own). Every element the call reads is written first.
    static ROW_SCRATCH: std::cell::Cell<(Vec<f32>, Vec<usize>)> = const { std::cell::Cell::new((Vec::new(), Vec::new())) };
}

/// The forward convolution as products of the filter with the input read in place: each
/// image's input is copied once into a zero-padded one ([`PaddedLayout`]: a strided input in
/// phases), in which the taps of one output row read runs of consecutive elements, so row
/// `c·K + tap` of that output row's column matrix is the run at a fixed offset from the row's
/// start (`(c, tap)`'s offset in the padded input). Each output row is one product over those
/// rows ([`gemm_packed_a_rows_post`]), with nothing packed: for few output channels, writing
/// the column panels had cost a sixth of the convolution (two loads and two stores a row of 16
/// against 64 multiply-adds), and the stride-2 stems of small networks (`k` of 27) spent a
/// fifth of their time packing. The sums are those of [`by_panels`], in its order, so the
/// results are its bits; output rows split across the team.
pub(super) fn by_rows(
    op: &'static str,
    g: &Geometry,
    x: &[f32],
    w: &PackedFilter,
    bias: Option<&[f32]>,
    post: &Post<'_>,
    out: &mut [f32],
) -> Result<()> {
    let (cin_g, cout_g) = (g.cin / g.groups, g.cout / g.groups);
    let [od, oh, ow] = g.output;
    let layout = PaddedLayout::new(g);
    let plane = layout.plane();
    let (lin, lout, rows) = (g.in_numel(), g.out_numel(), od * oh);
    let k = cin_g * g.kernel_numel();
    let (mut buf, offsets, len) = row_scratch(op, g, &layout)?;
    let whole = by_image_applies(g, w.per_group[0].isa(), post);
    let mut wide = if whole { WIDE_SCRATCH.take() } else { Vec::new() };
    let threads = crate::parallel::threads();
    let fmas = g.cout.saturating_mul(lout).saturating_mul(k);
    let split = threads > 1 && fmas >= PARALLEL_MIN_FMAS;
    let team = |units: usize| if split { (threads * PARALLEL_TASKS_PER_THREAD).min(units) } else { 1 };
    let mut result = Ok(());
    for n in 0..g.n {
        pad_image(g, &layout, &x[n * g.cin * lin..(n + 1) * g.cin * lin], &mut buf[..len], team(g.cin));
        let (buf_ref, offsets_ref) = (&buf[..len], &offsets[..]);
        if whole {
            // One product per group and output plane over the plane's rows as one run of
            // columns (`row` apart, the last `row - ow` of each a padded column's junk), into
            // `wide`, whose rows are then copied out without the junk.
            let width = (oh - 1) * layout.row() + ow;
            let ldw = oh * layout.row();
            wide.resize((cout_g * ldw).max(wide.len()), 0.0);
            'planes: for grp in 0..g.groups {
                let ep = group_epilogue(bias, grp, cout_g);
                let row0 = n * g.cout + grp * cout_g;
                let post = post.from(row0, 0);
                for z in 0..od {
                    let start = grp * cin_g * plane + layout.output_row(g, z, 0);
                    // SAFETY: `wide` holds `cout_g` rows of `ldw ≥ width` elements; every run
                    // the offsets start, `width` long, lies inside the image's padded input
                    // (its last output row's taps end inside the plane).
                    result = unsafe {
                        gemm_packed_a_rows_split_post(op, &w.per_group[grp], &buf_ref[start..], offsets_ref, width, &ep, &post, wide.as_mut_ptr(), ldw)
                    }
                    .map_err(KernelError::from);
                    if result.is_err() {
                        break 'planes;
                    }
                    let tasks = team(cout_g);
                    let (src, dst) = (&wide[..cout_g * ldw], crate::parallel::SharedOut(out.as_mut_ptr()));
                    let row_len = layout.row();
                    crate::parallel::for_each(tasks, |t| {
                        for i in cout_g * t / tasks..cout_g * (t + 1) / tasks {
                            for y in 0..oh {
                                let from = &src[i * ldw + y * row_len..i * ldw + y * row_len + ow];
                                // SAFETY: `out` holds `n·cout·lout` elements (checked by the
                                // caller); channel `row0 + i`'s output row `(z, y)` is `ow`
                                // of them, written by this task only.
                                unsafe {
                                    let to = dst.get().add((row0 + i) * lout + (z * oh + y) * ow);
                                    std::ptr::copy_nonoverlapping(from.as_ptr(), to, ow);
                                }
                            }
                        }
                    });
                }
            }
            if result.is_err() {
                break;
            }
            continue;
        }
        let units = g.groups * rows;
        let tasks = team(units);
        let out_ptr = crate::parallel::SharedOut(out.as_mut_ptr());
        result = crate::parallel::try_for_each(tasks, |t| -> Result<()> {
            for u in units * t / tasks..units * (t + 1) / tasks {
                let (grp, r) = (u / rows, u % rows);
                let (z, y) = (r / oh, r % oh);
                let start = grp * cin_g * plane + layout.output_row(g, z, y);
                let row = n * g.cout + grp * cout_g;
                let ep = group_epilogue(bias, grp, cout_g);
                let post = post.from(row, r * ow);
                // SAFETY: `out` holds `n·cout·lout` elements (checked by the caller), so the
                // `cout_g` rows of `ow` elements from `row·lout + r·ow`, `lout` apart, lie
                // inside it; each (group, output row) of the image is one unit, computed by
                // one task. Every run the offsets start lies inside the image's padded input.
                unsafe {
                    let c = out_ptr.get().add(row * lout + r * ow);
                    gemm_packed_a_rows_post(op, &w.per_group[grp], &buf_ref[start..], offsets_ref, ow, &ep, &post, c, lout)?;
                }
            }
            Ok(())
        });
        if result.is_err() {
            break;
        }
    }
    ROW_SCRATCH.set((buf, offsets));
    if whole {
        WIDE_SCRATCH.set(wide);
    }
    result
}

/// [`ROW_SCRATCH`] taken for a product over the padded input in `layout` (give it back when
/// done): the buffer for one image's padded input, sized to hold it (`len` elements: one image
/// at a time, whatever the batch), and the column matrix's row offsets of one group, row
/// `c·K + tap` the run at `offsets[c·K + tap]` from the group's first padded plane.
fn row_scratch(op: &'static str, g: &Geometry, layout: &PaddedLayout) -> Result<(Vec<f32>, Vec<usize>, usize)> {
    let [kd, kh, kw] = g.kernel;
    let plane = layout.plane();
    let len = g.cin.checked_mul(plane).ok_or_else(|| KernelError::new(op, "the padded input is too large"))?;
    let (mut buf, mut offsets) = ROW_SCRATCH.take();
    buf.resize(len.max(buf.len()), 0.0);
    offsets.clear();
    for c in 0..g.cin / g.groups {
        for a in 0..kd {
            for b in 0..kh {
                for e in 0..kw {
                    offsets.push(c * plane + layout.tap(g, a, b, e));
                }
            }
        }
    }
    Ok((buf, offsets, len))
}

/// Writes one image's input `xn` (`cin` planes) into `buf`, its zero-padded planes in
/// `layout`, channel by channel across `tasks` tasks.
fn pad_image(g: &Geometry, layout: &PaddedLayout, xn: &[f32], buf: &mut [f32], tasks: usize) {
    let (plane, lin) = (layout.plane(), g.in_numel());
    let dst = crate::parallel::SharedOut(buf.as_mut_ptr());
    crate::parallel::for_each(tasks, |t| {
        for ch in g.cin * t / tasks..g.cin * (t + 1) / tasks {
            // SAFETY: `buf` holds `cin` planes of `plane` elements (the callers sized it so);
            // each channel is one task's.
            let to = unsafe { std::slice::from_raw_parts_mut(dst.get().add(ch * plane), plane) };
            pad_plane(g, layout, &xn[ch * lin..(ch + 1) * lin], to);
        }
    });
}

/// Whether [`conv_pool_packed`] computes the convolution `g` (its filter `w`, its post-ops
/// `post`) followed by a 3 × 3 max pool of stride 2 with `pad` rows and columns of padding and
/// output planes of `pooled`: a single-image-plane 2-d convolution of one group whose rows
/// [`by_rows`] reads in place, no residual, and every window inside the padded plane (no
/// partial window of `ceil_mode`), on a CPU with the pool's vector path.
pub(crate) fn conv_pool_applies(g: &Geometry, w: &PackedFilter, post: &Post<'_>, pad: usize, [ph, pw]: [usize; 2]) -> bool {
    let [_, oh, ow] = g.output;
    w.depthwise.is_none()
        && g.groups == 1
        && w.per_group.first().is_some_and(|a| by_rows_applies(g, a.isa()))
        && g.input[0] == 1
        && g.output[0] == 1
        && post.addend.is_none()
        && pad <= 1
        && pw >= 8
        && ph >= 1
        && 2 * ph < oh + 2 * pad
        && 2 * pw < ow + 2 * pad
        && Isa::current() >= Isa::Avx2
}

/// The bytes of one task's band of convolution rows in [`conv_pool_packed`]: it stays in L2
/// while it is pooled.
const POOL_BAND_BYTES: usize = 256 << 10;

thread_local! {
    /// The band of convolution rows of [`conv_pool_packed`], kept per thread across calls.
    /// Every element pooled is written first (the rows by the product or as `-∞` padding).
    static BAND_SCRATCH: std::cell::Cell<Vec<f32>> = const { std::cell::Cell::new(Vec::new()) };
}

/// The forward convolution `g` followed by a 3 × 3 max pool of stride 2 with `pad` padding into
/// planes of `pooled` (where [`conv_pool_applies`]), without the convolution's output: each task
/// takes a run of pooled rows and computes them a band at a time, the band's `2·r + 1`
/// convolution rows ([`by_rows`]' products of one output row each, into a buffer that stays in
/// L2) then their `r` pooled rows; a band's first row is the one before's last, copied. The
/// padding is `-∞` around the band, which never replaces a maximum, so the results are the
/// bits of the convolution then the pool (`kernels::pool::max_pool_3x3s2`). A net's stem
/// (SqueezeNet's 64 × 111 × 111, ResNet's and ShuffleNet's 112 × 112) writes and reads back
/// megabytes otherwise, from beyond L2.
#[allow(clippy::too_many_arguments)]
pub(crate) fn conv_pool_packed(
    op: &'static str,
    g: &Geometry,
    x: &[f32],
    w: &PackedFilter,
    bias: Option<&[f32]>,
    post: &Post<'_>,
    pad: usize,
    pooled: [usize; 2],
    out: &mut [f32],
) -> Result<()> {
    let [_, oh, ow] = g.output;
    let [ph, pw] = pooled;
    let lout = ph * pw;
    if !conv_pool_applies(g, w, post, pad, pooled) {
        return Err(KernelError::new(op, "internal error: a pooled convolution outside its contract"));
    }
    if x.len() < g.n * g.cin * g.in_numel() || out.len() < g.n * g.cout * lout || bias.is_some_and(|b| b.len() < g.cout) {
        return Err(KernelError::new(op, "internal error: convolution buffers are too small"));
    }
    let layout = PaddedLayout::new(g);
    let (mut buf, offsets, len) = row_scratch(op, g, &layout)?;
    let a = &w.per_group[0];
    let ep = group_epilogue(bias, 0, g.cout);
    // Band rows: `pitch` apart, `-∞` columns either side where padded; `r` pooled rows a band.
    let pitch = ow + 2 * pad;
    let r = ((POOL_BAND_BYTES / 4 / (g.cout * pitch).max(1)).saturating_sub(1) / 2).clamp(1, ph);
    let channel = (2 * r + 1) * pitch;
    let threads = crate::parallel::threads();
    let fmas = g.cout.saturating_mul(g.out_numel()).saturating_mul(a.cols());
    // Fewer tasks than `by_rows`: each task's first band computes the row before it again.
    let tasks = if threads > 1 && fmas >= PARALLEL_MIN_FMAS { (threads * 2).min(ph.div_ceil(r)) } else { 1 };
    let mut result = Ok(());
    for n in 0..g.n {
        pad_image(g, &layout, &x[n * g.cin * g.in_numel()..(n + 1) * g.cin * g.in_numel()], &mut buf[..len], tasks);
        let (buf_ref, offsets_ref) = (&buf[..len], &offsets[..]);
        let out_ptr = crate::parallel::SharedOut(out.as_mut_ptr());
        result = crate::parallel::try_for_each(tasks, |t| -> Result<()> {
            let mut band = BAND_SCRATCH.take();
            band.resize((g.cout * channel).max(band.len()), f32::NEG_INFINITY);
            if pad == 1 {
                for row in band[..g.cout * channel].chunks_exact_mut(pitch) {
                    (row[0], row[pitch - 1]) = (f32::NEG_INFINITY, f32::NEG_INFINITY);
                }
            }
            let row0 = n * g.cout;
            let post = post.from(row0, 0);
            let run = |band: &mut Vec<f32>| -> Result<()> {
                let (first, end) = (ph * t / tasks, ph * (t + 1) / tasks);
                let mut p0 = first;
                while p0 < end {
                    let rows = r.min(end - p0);
                    // Band row `i` is convolution row `2·p0 + i - pad`.
                    let from = if p0 > first {
                        for c in 0..g.cout {
                            band.copy_within(c * channel + 2 * r * pitch..c * channel + (2 * r + 1) * pitch, c * channel);
                        }
                        1
                    } else {
                        0
                    };
                    for i in from..2 * rows + 1 {
                        match (2 * p0 + i).checked_sub(pad).filter(|&y| y < oh) {
                            Some(y) => {
                                let start = layout.output_row(g, 0, y);
                                // SAFETY: `band` holds `cout` channels of `channel` elements;
                                // the tile writes `cout` rows of `ow` from row `i`'s column
                                // `pad`, `channel` apart, inside them. Every run the offsets
                                // start lies inside the image's padded input.
                                unsafe {
                                    let c = band.as_mut_ptr().add(i * pitch + pad);
                                    gemm_packed_a_rows_post(op, a, &buf_ref[start..], offsets_ref, ow, &ep, &post, c, channel)?;
                                }
                            }
                            None => {
                                for c in 0..g.cout {
                                    band[c * channel + i * pitch..c * channel + (i + 1) * pitch].fill(f32::NEG_INFINITY);
                                }
                            }
                        }
                    }
                    for c in 0..g.cout {
                        // SAFETY: `out` holds `n·cout` planes of `lout` (checked above); rows
                        // `p0..p0 + rows` of channel `row0 + c` are this task's alone.
                        let dst = unsafe { std::slice::from_raw_parts_mut(out_ptr.get().add((row0 + c) * lout + p0 * pw), rows * pw) };
                        let src = &band[c * channel..c * channel + (2 * rows + 1) * pitch];
                        if !::kernels::pool::max_pool_3x3s2_rows(src, pitch, [rows, pw], dst) {
                            return Err(KernelError::new(op, "internal error: the pool declined a band"));
                        }
                    }
                    p0 += rows;
                }
                Ok(())
            };
            let done = run(&mut band);
            BAND_SCRATCH.set(band);
            done
        });
        if result.is_err() {
            break;
        }
    }
    ROW_SCRATCH.set((buf, offsets));
    result
}

thread_local! {
    /// The output of [`by_rows`]'s whole-plane products, with the padded columns' junk, kept
    /// per thread across calls. Every element copied out is written by the product first.
    static WIDE_SCRATCH: std::cell::Cell<Vec<f32>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Whether [`by_rows`] computes each output plane as one product over its rows end to end
/// (the padded input's rows are consecutive, so with unit strides the runs of consecutive
/// output rows are one run with `kw - 1` padded columns between them): every tile is whole
/// but the last, at the cost of the junk columns and a copy of the output without them.
/// Taken over row by row where a row leaves more of its tiles' lanes idle than the junk
/// costs, and with no residual addend (whose layout is the output's).
pub(super) fn by_image_applies(g: &Geometry, isa: Isa, post: &Post<'_>) -> bool {
    let ow = g.output[2];
    let pw = PaddedLayout::new(g).row();
    let lanes = isa.nr() / 2;
    let rows_fill = ow as f64 / (lanes * ow.div_ceil(lanes)) as f64;
    let image_fill = ow as f64 / pw as f64;
    isa != Isa::Generic
        && !g.transposed
        && g.stride == [1, 1, 1]
        && post.addend.is_none()
        && g.output[1] > 1
        && image_fill >= BY_IMAGE_MIN_FILL
        && image_fill > rows_fill
}

/// The share of a whole-plane product's columns that must be output columns for
/// [`by_image_applies`] (`ow / (ow + kw - 1)`). One-layer exports of squeezenet's 3 × 3
/// convolutions on a Zen 5 host (AVX-512, one thread, p10 of 400 calls), by panels against
/// whole planes: 55 wide (`ow/pw` 0.96) 0.345 → 0.297 ms, 27 wide (0.93) 0.357 → 0.305, 13
/// wide (0.87) 0.154 → 0.169 and 0.30 → 0.34 (192 and 256 channels, whose panels' packing
/// costs less beside their products); on the AVX2 path the 27-wide one alike, the 13-wide
/// ones slower again.
const BY_IMAGE_MIN_FILL: f64 = 0.9;

/// Writes one channel's input plane `x` into `to`, its zero-padded copy in `layout`: padded
/// position `p` along each dim holds input element `p - pad_lo` where that exists, zero
/// elsewhere (and so does the rest of every phase row).
fn pad_plane(g: &Geometry, layout: &PaddedLayout, x: &[f32], to: &mut [f32]) {
    let [pd, ph, pw] = layout.padded;
    let [id, ih, iw] = g.input;
    let [lz, ly, lx] = g.pad_lo;
    let (s, pwp, width) = (layout.phases, layout.pwp, layout.row());
    // The input columns a padded row holds, and where.
    let (cols, at) = if lx < pw { (iw.min(pw - lx), lx) } else { (0, pw) };
    for pz in 0..pd {
        let iz = pz.checked_sub(lz).filter(|&v| v < id);
        for py in 0..ph {
            let row = &mut to[(pz * ph + py) * width..(pz * ph + py + 1) * width];
            match (iz, py.checked_sub(ly).filter(|&v| v < ih)) {
                (Some(iz), Some(iy)) => {
                    let src = &x[(iz * ih + iy) * iw..(iz * ih + iy) * iw + cols];
                    if s == 1 {
                        row[..at].fill(0.0);
                        row[at..at + cols].copy_from_slice(src);
                        row[at + cols..].fill(0.0);
                        continue;
                    }
                    row.fill(0.0);
                    if s == 2 {
                        deinterleave_pairs(src, at, pwp, row);
                    } else {
                        for r in 0..s {
                            // Padded columns `at + i` of phase `r`: `i ≡ r - at (mod s)`.
                            let first = (r + s - at % s) % s;
                            let dst = &mut row[r * pwp + (at + first) / s..];
                            for (d, &v) in dst.iter_mut().zip(src.iter().skip(first).step_by(s)) {
                                *d = v;
                            }
                        }
                    }
                }
                _ => row.fill(0.0),
            }
        }
    }
}

/// Writes `src`, padded columns `at..` of a row, into the row's two phases (`row[..pwp]` the
/// even columns, `row[pwp..]` the odd ones): whole pairs in one loop, which LLVM turns into
/// vector loads and shuffles (a loop per phase with a stride of 2 ran element by element, and
/// cost a stride-2 stem a fifth of its time).
fn deinterleave_pairs(src: &[f32], at: usize, pwp: usize, row: &mut [f32]) {
    let (even, odd) = row.split_at_mut(pwp);
    // An odd start puts the first element in the odd phase alone.
    let (head, rest) = if at % 2 == 1 && !src.is_empty() { (Some(src[0]), &src[1..]) } else { (None, src) };
    if let Some(v) = head {
        odd[at / 2] = v;
    }
    let base = at.div_ceil(2);
    let pairs = rest.chunks_exact(2);
    let tail = pairs.remainder();
    let n = rest.len() / 2;
    for ((e, o), p) in even[base..base + n].iter_mut().zip(&mut odd[base..base + n]).zip(pairs) {
        *e = p[0];
        *o = p[1];
    }
    if let Some(&v) = tail.first() {
        even[base + n] = v;
    }
}
