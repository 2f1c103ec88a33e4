//! The convolution with the output positions as the product's rows: `Cᵀ = Colᵀ·Wᵀ`, the
//! column matrix read as its transpose (positions × `cin·K`; for a 1×1 convolution with unit
//! stride and no padding the input itself), the filter prepacked transposed (`cin·K × cout`,
//! [`PackedB`]), and the result turned back into channel planes ([`transpose_into`]). A
//! channel-major product (`W·X`) spreads the positions over the tiles' vector lanes, so few
//! positions leave many lanes idle: a 7 × 7 plane (49 positions) fills two 32-wide tiles to
//! 77 %, a 13 × 13 one six to 88 %; with positions as rows the lanes hold output channels,
//! which the networks' widths fill (96, 192, 576, 1024 channels). The column matrix is built
//! whole for one image, so this is for the small planes of a network's later stages.

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

/// Whether a convolution (one group) of `positions` output positions an image, `k` inputs to
/// each output (`cin·K`) and `cout` output channels is computed pixel-major: when the lanes
/// that product leaves idle less than the channel-major one does save more than turning the
/// result back into planes costs, and its column matrix is at most [`MAX_COLUMNS`].
pub(crate) fn pixel_major_applies(isa: Isa, positions: usize, k: usize, cout: usize) -> bool {
    positions.saturating_mul(k) <= MAX_COLUMNS && pixel_major_pays(isa, positions, k, cout)
}

/// Most elements of the column matrix of one image a pixel-major convolution builds (4 MiB).
const MAX_COLUMNS: usize = 1 << 20;

/// Whether the pixel-major product pays (see [`pixel_major_applies`]): per output element the
/// product costs `k` multiply-adds a lane over the share of lanes it fills, the copy
/// [`TRANSPOSE_COST`].
pub(crate) fn pixel_major_pays(isa: Isa, positions: usize, k: usize, cout: usize) -> bool {
    if isa == Isa::Generic || positions == 0 || cout == 0 {
        return false;
    }
    let nr = isa.nr();
    let idle = |n: usize| lanes(n, nr) as f64 / n as f64;
    k as f64 * (idle(positions) - idle(cout)) >= TRANSPOSE_COST
}

/// What copying one element of a pixel-major result into its plane costs, in multiply-adds a
/// lane of the product: one-layer exports on a Zen 4 host (AVX-512, one thread, medians of
/// 400 calls, channel-major against pixel-major), 7 × 7 positions: 96 → 576 channels 0.077 →
/// 0.058 ms, 576 → 96 0.068 → 0.050, 192 → 1024 0.258 → 0.195 (a saving of 29–176 by this
/// measure); 13 × 13, 512 → 1000: 1.87 → 1.75 (17); 14 × 14, 40 → 240: 0.042 → 0.047 (2.5,
/// a loss, which puts the copy at about 7). 3 × 3 filters (padding 1) from their column
/// matrix: 13 × 13, 48 → 192: 0.33 → 0.31 and 64 → 256: 0.55 → 0.50 (18 and 24); 7 × 7,
/// 512 → 512: 3.6 → 2.8 (1411). On the AVX2 path the 7 × 7 1×1 ones gained 8–12 %.
const TRANSPOSE_COST: f64 = 8.0;

/// Packs the filter `[cout, cin, k…]` (contiguous, `k` elements an output channel)
/// transposed, `k × cout`, for the pixel-major product.
pub(crate) fn pack_pixel_major(op: &'static str, isa: Isa, w: &[f32], cout: usize, k: usize) -> Result<PackedB> {
    Ok(PackedB::pack(op, isa, MatView::new(op, w, 0, k, cout, 1, k)?)?)
}

thread_local! {
    /// The pixel-major result of one image (positions × channels) and its column matrix,
    /// kept per thread across calls; every element read is written first.
    static RESULT_SCRATCH: std::cell::Cell<(Vec<f32>, Vec<f32>)> = const { std::cell::Cell::new((Vec::new(), Vec::new())) };
}

/// The forward convolution `g` (one group) of `x` with the filter `wt` packed by
/// [`pack_pixel_major`]: per image, the column matrix (the input itself for a direct 1×1
/// convolution), `Cᵀ = Colᵀ·Wᵀ + bias` with the element-wise post-ops in the product's
/// tiles, then `C` copied out plane by plane; a residual addend (laid out as the output) is
/// added after that, with the activation and rounding that follow it. Each sum is the
/// channel-major product's, over `k` in the same blocks and order, so the bits are its.
pub(super) fn by_positions(
    op: &'static str,
    g: &Geometry,
    x: &[f32],
    wt: &PackedB,
    bias: Option<&[f32]>,
    post: &Post<'_>,
    out: &mut [f32],
) -> Result<()> {
    let (cin, cout, l, lin) = (g.cin, g.cout, g.out_numel(), g.in_numel());
    let k = cin * g.kernel_numel();
    if g.groups != 1 || g.transposed || wt.cols() != cout || wt.panels().1 != k {
        return Err(KernelError::new(op, "internal error: the pixel-major filter does not match the convolution"));
    }
    if x.len() < g.n * cin * lin || out.len() < g.n * cout * l || bias.is_some_and(|b| b.len() < cout) {
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
    let (mut scratch, mut col) = RESULT_SCRATCH.take();
    if scratch.len() < l * cout {
        scratch.resize(l * cout, 0.0);
    }
    let direct = g.direct();
    if !direct && col.len() < k * l {
        col.resize(k * l, 0.0);
    }
    let result = (|| -> Result<()> {
        for n in 0..g.n {
            let xn = &x[n * cin * lin..(n + 1) * cin * lin];
            let cols = if direct {
                xn
            } else {
                columns(g, xn, &mut col[..k * l]);
                &col[..k * l]
            };
            let colt = MatView::new(op, cols, 0, l, k, 1, l)?;
            gemm_packed_b_post(op, colt, wt, &ep, &in_tiles, &mut scratch[..l * cout], cout)?;
            let planes = &mut out[n * cout * l..(n + 1) * cout * l];
            transpose_planes(MatView::new(op, &scratch[..l * cout], 0, cout, l, 1, cout)?, planes);
            after.from(n * cout, 0).apply_to(op, cout, l, planes, l)?;
        }
        Ok(())
    })();
    RESULT_SCRATCH.set((scratch, col));
    result
}

/// Writes the column matrix of one image `x` (`cin·K × l`, as [`im2col`] orders it) to
/// `col`, bands of channels split across the team when large.
fn columns(g: &Geometry, x: &[f32], col: &mut [f32]) {
    let (per_channel, lin) = (g.kernel_numel() * g.out_numel(), g.in_numel());
    let threads = crate::parallel::threads();
    let tasks = if threads > 1 && col.len() >= PARALLEL_MIN_ELEMENTS { threads.min(g.cin) } else { 1 };
    crate::parallel::for_each_range(col, per_channel, tasks, |i0, band| {
        let (c0, channels) = (i0 / per_channel, band.len() / per_channel);
        im2col(&x[c0 * lin..(c0 + channels) * lin], g, channels, band);
    });
}

/// Results (and column matrices) of at least this many elements are copied by the whole team.
const PARALLEL_MIN_ELEMENTS: usize = 1 << 15;

/// Copies `planes` (`cout × l`, the transposed view of a row-major `l × cout` result) into
/// `dst`, bands of channels split across the team when large.
fn transpose_planes(planes: MatView<'_, f32>, dst: &mut [f32]) {
    let (cout, l) = (planes.rows, planes.cols);
    let threads = crate::parallel::threads();
    let tasks = if threads > 1 && l * cout >= PARALLEL_MIN_ELEMENTS { threads.min(cout.div_ceil(16)) } else { 1 };
    // Bands of whole 16-channel tiles, so every task transposes in registers.
    crate::parallel::for_each_range(&mut dst[..cout * l], 16 * l, tasks, |i0, band| {
        let view = MatView { off: planes.off + i0 / l, rows: band.len() / l, ..planes };
        transpose_into(&view, band);
    });
}

/// The output positions an image of a forward convolution with the input sizes `x` (static,
/// as a value's type gives them), the filter sizes `w` and options `a` has, when those are
/// a valid convolution.
pub(crate) fn static_positions(x: &[i64], w: &[usize], a: &ConvArgs) -> Option<usize> {
    let x: Vec<usize> = x.iter().map(|&d| usize::try_from(d).ok()).collect::<Option<_>>()?;
    let g = geometry("conv", &x, w, None, a).ok()?;
    (!g.transposed).then(|| g.out_numel())
}
