//! The 1×1 convolution with the output positions as the product's rows: `Cᵀ = Xᵀ·Wᵀ`, the
//! input read as its transpose (positions × channels), the filter prepacked transposed
//! (`cin × cout`, [`PackedB`]), and the result turned back into channel planes
//! ([`transpose_into`]). A channel-major product (`W·X`) spreads the positions over the
//! tiles' vector lanes, so few positions leave most lanes idle: a 7 × 7 plane (49 positions)
//! fills two 32-wide tiles to 77 %, a 4 × 4 one a 16-wide tile to exactly 100 % but a
//! 13-row tile's broadcasts for 16 multiply-adds each; with positions as rows the lanes hold
//! output channels, which the networks' widths fill (96, 576, 1024 channels).

use super::*;
use ::kernels::gemm::gemm_packed_b_post;
use ::kernels::transpose::transpose_into;

/// Lanes a product's tiles spend on `n` columns in panels of `nr`: whole panels, and a last
/// partial one at half width when it fits there (the narrow tiles).
fn lanes(n: usize, nr: usize) -> usize {
    let rem = n % nr;
    n - rem
        + match rem {
            0 => 0,
            r if 2 * r <= nr => nr / 2,
            _ => nr,
        }
}

/// Whether a 1×1 convolution (unit stride, no padding, one group) of `positions` output
/// positions an image, `cin` input and `cout` output channels is computed pixel-major: when
/// the lanes that product leaves idle less than the channel-major one does save more than
/// turning the result back into planes costs. Per output element the product costs `cin`
/// multiply-adds a lane over the share of lanes it fills, the copy [`TRANSPOSE_COST`].
pub(crate) fn pixel_major_pays(isa: Isa, positions: usize, cin: usize, cout: usize) -> bool {
    if isa == Isa::Generic || positions == 0 || cout == 0 {
        return false;
    }
    let nr = isa.nr();
    let idle = |n: usize| lanes(n, nr) as f64 / n as f64;
    cin as f64 * (idle(positions) - idle(cout)) >= TRANSPOSE_COST
}

/// What copying one element of a pixel-major result into its plane costs, in multiply-adds a
/// lane of the product: one-layer exports on a Zen 4 host (AVX-512, one thread, medians of
/// 400 calls, channel-major against pixel-major), 7 × 7 positions: 96 → 576 channels 0.077 →
/// 0.058 ms, 576 → 96 0.068 → 0.050, 192 → 1024 0.258 → 0.195 (a saving of 29–176 by this
/// measure); 13 × 13, 512 → 1000: 1.87 → 1.75 (17); 14 × 14, 40 → 240: 0.042 → 0.047 (2.5,
/// a loss, which puts the copy at about 7).
const TRANSPOSE_COST: f64 = 8.0;

/// Packs the filter `[cout, cin, 1, …]` (contiguous) transposed, `cin × cout`, for the
/// pixel-major product.
pub(crate) fn pack_pixel_major(op: &'static str, isa: Isa, w: &[f32], cout: usize, cin: usize) -> Result<PackedB> {
    Ok(PackedB::pack(op, isa, MatView::new(op, w, 0, cin, cout, 1, cin)?)?)
}

thread_local! {
    /// The pixel-major result of one image (positions × channels), kept per thread across
    /// calls; every element read is written first.
    static RESULT_SCRATCH: std::cell::Cell<Vec<f32>> = const { std::cell::Cell::new(Vec::new()) };
}

/// The 1×1 convolution `g` (direct, one group) of `x` with the filter `wt` packed by
/// [`pack_pixel_major`]: per image, `Cᵀ = Xᵀ·Wᵀ + bias` with the element-wise post-ops in the
/// product's tiles, then `C` copied out plane by plane; a residual addend (laid out as the
/// output) is added after that, with the activation and rounding that follow it. Each sum is
/// the channel-major product's, over `k` in the same blocks and order, so the bits are its.
pub(super) fn by_positions(
    op: &'static str,
    g: &Geometry,
    x: &[f32],
    wt: &PackedB,
    bias: Option<&[f32]>,
    post: &Post<'_>,
    out: &mut [f32],
) -> Result<()> {
    let (cin, cout, l) = (g.cin, g.cout, g.out_numel());
    if g.groups != 1 || !g.direct() || wt.cols() != cout || wt.panels().1 != cin {
        return Err(KernelError::new(op, "internal error: the pixel-major filter does not match the convolution"));
    }
    if x.len() < g.n * cin * l || out.len() < g.n * cout * l || bias.is_some_and(|b| b.len() < cout) {
        return Err(KernelError::new(op, "internal error: convolution buffers are too small"));
    }
    if l == 0 || cout == 0 {
        return Ok(());
    }
    let ep = Epilogue { bias: bias.map_or(Bias::None, |b| Bias::PerColumn(&b[..cout])), ..Epilogue::PLAIN };
    // Without an addend every post-op is element-wise and runs in the tiles; with one, the
    // tiles round the product (if asked) and the rest follows once the planes are out.
    let (in_tiles, after) = match post.addend {
        None => (Post { addend: None, act: post.act, half: post.half }, Post::NONE),
        Some(_) => (
            Post { addend: None, act: Activation::None, half: HalfRounding { product: post.half.product, result: false } },
            Post { addend: post.addend, act: post.act, half: HalfRounding { product: false, result: post.half.result } },
        ),
    };
    let mut scratch = RESULT_SCRATCH.take();
    if scratch.len() < l * cout {
        scratch.resize(l * cout, 0.0);
    }
    let mut result = Ok(());
    for n in 0..g.n {
        let xt = MatView::new(op, x, n * cin * l, l, cin, 1, l)?;
        result = gemm_packed_b_post(op, xt, wt, &ep, &in_tiles, &mut scratch[..l * cout], cout).map_err(KernelError::from);
        if result.is_err() {
            break;
        }
        let planes = &mut out[n * cout * l..(n + 1) * cout * l];
        transpose_planes(MatView::new(op, &scratch[..l * cout], 0, cout, l, 1, cout)?, planes);
        result = after.from(n * cout, 0).apply_to(op, cout, l, planes, l).map_err(KernelError::from);
        if result.is_err() {
            break;
        }
    }
    RESULT_SCRATCH.set(scratch);
    result
}

/// Results of at least this many elements are copied out into planes by the whole team.
const PARALLEL_MIN_ELEMENTS: usize = 1 << 15;

/// Copies `planes` (`cout × l`, the transposed view of a row-major `l × cout` result) into
/// `dst`, bands of channels split across the team when large.
fn transpose_planes(planes: MatView<'_, f32>, dst: &mut [f32]) {
    let (cout, l) = (planes.rows, planes.cols);
    let threads = crate::parallel::threads();
    let tasks = if threads > 1 && l * cout >= PARALLEL_MIN_ELEMENTS { threads.min(cout.div_ceil(16)) } else { 1 };
    let to = crate::parallel::SharedOut(dst.as_mut_ptr());
    crate::parallel::for_each(tasks, |t| {
        // Bands of whole 16-channel tiles, so every task transposes in registers.
        let tiles = cout.div_ceil(16);
        let (c0, c1) = ((tiles * t / tasks * 16).min(cout), (tiles * (t + 1) / tasks * 16).min(cout));
        if c0 == c1 {
            return;
        }
        let view = MatView { off: planes.off + c0, rows: c1 - c0, ..planes };
        // SAFETY: `dst` holds `cout` planes of `l`; planes `c0..c1` are this task's alone.
        let band = unsafe { std::slice::from_raw_parts_mut(to.get().add(c0 * l), (c1 - c0) * l) };
        transpose_into(&view, band);
    });
}
