//! The AVX2 + FMA microkernels: the packed GEMM's `R × 16` tiles and their post-ops.
//!
//! Every function here requires a CPU with AVX2 and FMA (`Isa::Avx2`); callers choose them only
//! after asking [`crate::isa`].

use std::arch::x86_64::*;

use crate::gemm::{Activation, HalfRounding, PostTile, Tile};

/// The post-ops of a tile of `rows` rows and up to 16 columns with AVX2 and FMA, vector by
/// vector. Whole vectors are loaded and stored plainly, only a partial one with masks: a
/// masked store is microcoded on some AVX2 CPUs (AMD's), many times slower than a plain one.
///
/// # Safety
/// As `post_tile`.
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn post_avx2(p: &PostTile, rows: usize) {
    let (n0, n1) = (p.cols.min(8), p.cols.saturating_sub(8));
    // SAFETY: reads of the mask table only.
    let masks = unsafe { [mask8(n0), mask8(n1)] };
    for i in 0..rows {
        for (h, lanes) in [n0, n1].into_iter().enumerate() {
            if lanes == 0 {
                continue;
            }
            // SAFETY: row `i < rows`, lanes within `cols` (caller's contract): a whole vector
            // when `lanes` is 8; masked-off lanes are not touched.
            unsafe {
                let dst = p.c.add(i * p.ldc + 8 * h);
                let load = |src: *const f32| if lanes == 8 { _mm256_loadu_ps(src) } else { _mm256_maskload_ps(src, masks[h]) };
                let mut v = load(dst);
                if p.half.product {
                    v = round8(v);
                }
                if !p.addend.is_null() {
                    let r = load(p.addend.add(i * p.add_ld + 8 * h));
                    v = if p.add_first { _mm256_add_ps(r, v) } else { _mm256_add_ps(v, r) };
                }
                v = act8(v, p.act);
                if p.half.result {
                    v = round8(v);
                }
                if lanes == 8 {
                    _mm256_storeu_ps(dst, v);
                } else {
                    _mm256_maskstore_ps(dst, masks[h], v);
                }
            }
        }
    }
}


/// Each lane of `v` rounded to the nearest `f16` (ties to even) and widened back: the bits of
/// `crate::halves::round_to_f16`.
#[inline(always)]
pub(crate) unsafe fn round8(v: __m256) -> __m256 {
    // SAFETY: register operations only; the caller runs with F16C enabled.
    unsafe { _mm256_cvtph_ps(_mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v)) }
}

/// What a whole tile applies to its results in registers before storing them: a rounding
/// through `f16`, then `act`, then another, each as `half` says.
#[inline(always)]
unsafe fn finish8(v: __m256, act: Activation, half: HalfRounding) -> __m256 {
    // SAFETY: register operations only; the caller runs with AVX2, FMA and F16C enabled.
    unsafe {
        let v = if half.product { round8(v) } else { v };
        let v = act8(v, act);
        if half.result { round8(v) } else { v }
    }
}

/// `act` of each lane of `v`, with the bits of [`Activation::apply`].
#[inline(always)]
pub(crate) unsafe fn act8(v: __m256, act: Activation) -> __m256 {
    // SAFETY: register operations only; the caller runs with AVX2 and FMA enabled.
    unsafe {
        match act {
            Activation::None => v,
            Activation::Gelu => crate::fastmath::gelu_erf_f32x8(v),
            Activation::Relu => {
                // `v > 0` or unordered (NaN) keeps `v`.
                let keep = _mm256_cmp_ps::<_CMP_NLE_UQ>(v, _mm256_setzero_ps());
                _mm256_and_ps(keep, v)
            }
            Activation::Clamp(lo, hi) => clamp8(v, lo, hi),
            Activation::Hardswish => {
                let t = clamp8(_mm256_add_ps(v, _mm256_set1_ps(3.0)), 0.0, 6.0);
                _mm256_mul_ps(v, _mm256_div_ps(t, _mm256_set1_ps(6.0)))
            }
            Activation::HardswishProductFirst => {
                let t = clamp8(_mm256_add_ps(v, _mm256_set1_ps(3.0)), 0.0, 6.0);
                _mm256_div_ps(_mm256_mul_ps(v, t), _mm256_set1_ps(6.0))
            }
        }
    }
}

/// `min(max(v, lo), hi)` lane by lane, a NaN lane kept (`max` and `min` return their second
/// operand when either is NaN).
#[inline(always)]
unsafe fn clamp8(v: __m256, lo: f32, hi: f32) -> __m256 {
    // SAFETY: register operations only; the caller runs with AVX enabled.
    unsafe { _mm256_min_ps(_mm256_set1_ps(hi), _mm256_max_ps(_mm256_set1_ps(lo), v)) }
}

/// `-1` lanes then `0` lanes: eight consecutive entries starting at `8 - n` mask the
/// first `n` lanes.
static MASK_TABLE: [i32; 16] = [-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0];

/// Lane mask of the first `n` of 8 lanes.
#[inline(always)]
unsafe fn mask8(n: usize) -> __m256i {
    // SAFETY: `8 - min(n, 8)` is in 0..=8, so eight entries from there are in the table.
    unsafe { _mm256_loadu_si256(MASK_TABLE.as_ptr().add(8 - n.min(8)) as *const __m256i) }
}

/// An `R × 16` tile with AVX2 and FMA: two vectors per row of `C`, `A` read as in
/// `tile_avx512`.
///
/// # Safety
/// As `drive`: every address read or written is in bounds; the CPU supports AVX2 and FMA.
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn tile_avx2<const R: usize, const MASKED: bool, const PACKED: bool>(t: &Tile) {
    // SAFETY: forwarded.
    unsafe { tile_avx2_vectors::<R, MASKED, PACKED, 2, false>(t) }
}

/// [`tile_avx2`] over a `B` whose rows lie at their own offsets (`t.b_rows`), read in place:
/// the same operations in the same order, so the same bits as over those rows packed.
///
/// # Safety
/// As [`tile_avx2`], with `t.b_rows` holding `t.k` offsets of rows of `B` from `t.b`, and `A`
/// packed.
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn tile_avx2_rows<const R: usize, const MASKED: bool, const PACKED: bool>(t: &Tile) {
    const { assert!(PACKED) };
    // SAFETY: forwarded.
    unsafe { tile_avx2_vectors::<R, MASKED, true, 2, true>(t) }
}

/// [`tile_avx2_narrow`] over a `B` whose rows lie at their own offsets, as [`tile_avx2_rows`].
///
/// # Safety
/// As [`tile_avx2_rows`], with `t.cols ≤ 8`.
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn tile_avx2_narrow_rows<const R: usize, const MASKED: bool, const PACKED: bool>(t: &Tile) {
    const { assert!(PACKED) };
    debug_assert!(t.cols <= 8);
    // SAFETY: forwarded.
    unsafe { tile_avx2_vectors::<R, MASKED, true, 1, true>(t) }
}

/// An `R × 8` tile with AVX2 and FMA, for the last panel of a product when it has at most 8
/// columns (`t.cols ≤ 8`): the tile of [`tile_avx2`] without the multiply-adds of its second
/// half, whose columns do not exist (a product of 49 columns, 3 panels and 1 column, spent a
/// quarter of its time on that column). The first half's sums are the same operations in the
/// same order, so the results are the same bits.
///
/// # Safety
/// As [`tile_avx2`], with `t.cols ≤ 8`.
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn tile_avx2_narrow<const R: usize, const MASKED: bool, const PACKED: bool>(t: &Tile) {
    debug_assert!(t.cols <= 8);
    // SAFETY: forwarded.
    unsafe { tile_avx2_vectors::<R, MASKED, PACKED, 1, false>(t) }
}

/// The tile of `R` rows and `V` vectors (`V` is 1 or 2) of [`tile_avx2`]; with `ROWS`, row
/// `p` of `B` is read at `t.b + t.b_rows[p]` instead of `t.b + p·t.rsb`.
///
/// # Safety
/// As [`tile_avx2`], with `t.cols ≤ 8·V` (and, with `ROWS`, as [`tile_avx2_rows`]).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn tile_avx2_vectors<const R: usize, const MASKED: bool, const PACKED: bool, const V: usize, const ROWS: bool>(t: &Tile) {
    for q in 0..t.blocks.max(1) {
        let tb = t.enter_block(R, q);
        // SAFETY: block `q` is inside the product (caller's contract).
        unsafe { tile_avx2_block::<R, MASKED, PACKED, V, ROWS>(&tb) };
    }
}

/// One row block of [`tile_avx2_vectors`].
///
/// # Safety
/// As [`tile_avx2_vectors`].
// The rows are indexed, not iterated or copied whole: see the loops over them.
#[allow(clippy::needless_range_loop, clippy::manual_memcpy)]
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn tile_avx2_block<const R: usize, const MASKED: bool, const PACKED: bool, const V: usize, const ROWS: bool>(t: &Tile) {
    let (n0, n1) = (t.cols.min(8), if V == 2 { t.cols.saturating_sub(8) } else { 0 });
    // SAFETY: reads of the mask table only.
    let (m0, m1) = unsafe { (mask8(n0), mask8(n1)) };
    let mut acc = [[_mm256_setzero_ps(); 2]; R];
    let rows: [*const f32; R] = std::array::from_fn(|i| t.a.wrapping_add(i * t.rsa));
    let (mut a, mut off, mut b, mut b_rows) = (t.a, 0usize, t.b, t.b_rows);
    // SAFETY: as in `tile_avx512`; masked loads and stores do not touch masked-off lanes.
    // With `ROWS`, `b_rows` walks the tile's `k` offsets (caller's contract).
    unsafe {
        macro_rules! step {
            () => {{
                if ROWS {
                    b = t.b.add(*b_rows);
                    b_rows = b_rows.add(1);
                }
                let b0 = if MASKED { _mm256_maskload_ps(b, m0) } else { _mm256_loadu_ps(b) };
                let b1 = if V == 1 {
                    b0
                } else if MASKED {
                    _mm256_maskload_ps(b.wrapping_add(8), m1)
                } else {
                    _mm256_loadu_ps(b.add(8))
                };
                for i in 0..R {
                    let x = _mm256_broadcast_ss(if PACKED { &*a.add(i) } else { &*rows[i].add(off) });
                    acc[i][0] = _mm256_fmadd_ps(x, b0, acc[i][0]);
                    if V == 2 {
                        acc[i][1] = _mm256_fmadd_ps(x, b1, acc[i][1]);
                    }
                }
                if PACKED {
                    a = a.wrapping_add(t.csa);
                } else {
                    off += t.csa;
                }
                if !ROWS {
                    b = b.wrapping_add(t.rsb);
                }
            }};
        }
        let pf_steps = t.pf_lines.min(t.k);
        let mut pf = t.pf;
        for _ in 0..pf_steps {
            _mm_prefetch::<_MM_HINT_T1>(pf.cast::<i8>());
            pf = pf.wrapping_add(16);
            step!();
        }
        for _ in pf_steps..t.k {
            step!();
        }
        let alpha = _mm256_set1_ps(t.alpha);
        let beta = _mm256_set1_ps(t.beta);
        if V == 2 && t.cols == 16 {
            // A whole tile: the rows unrolled, every accumulator read from its register, and
            // every vector stored plainly (a masked store is microcoded on AMD cores, about a
            // dozen cycles each on Zen 3, which cost a tile of small `k` as much as its
            // multiply-adds). The operations and their order are those of the general path
            // below (a per-row bias is scaled as a scalar: the same product).
            let bias_col = if t.first && !t.bias_col.is_null() {
                let bscale = _mm256_set1_ps(t.bias_scale);
                Some([
                    _mm256_mul_ps(bscale, _mm256_loadu_ps(t.bias_col)),
                    _mm256_mul_ps(bscale, _mm256_loadu_ps(t.bias_col.add(8))),
                ])
            } else {
                None
            };
            let (bias_row, with_beta) = (t.first && !t.bias_row.is_null(), t.first && t.beta != 0.0);
            for i in 0..R {
                let dst = t.c.add(i * t.ldc);
                let mut v = [_mm256_mul_ps(acc[i][0], alpha), _mm256_mul_ps(acc[i][1], alpha)];
                if t.first {
                    if let Some(bias) = bias_col {
                        v = [_mm256_add_ps(v[0], bias[0]), _mm256_add_ps(v[1], bias[1])];
                    }
                    if bias_row {
                        let bias = _mm256_set1_ps(t.bias_scale * *t.bias_row.add(i));
                        v = [_mm256_add_ps(v[0], bias), _mm256_add_ps(v[1], bias)];
                    }
                    if with_beta {
                        v = [
                            _mm256_add_ps(v[0], _mm256_mul_ps(beta, _mm256_loadu_ps(dst))),
                            _mm256_add_ps(v[1], _mm256_mul_ps(beta, _mm256_loadu_ps(dst.add(8)))),
                        ];
                    }
                } else {
                    v = [_mm256_add_ps(_mm256_loadu_ps(dst), v[0]), _mm256_add_ps(_mm256_loadu_ps(dst.add(8)), v[1])];
                }
                if t.act != Activation::None || t.half != HalfRounding::NONE {
                    v = [finish8(v[0], t.act, t.half), finish8(v[1], t.act, t.half)];
                }
                _mm256_storeu_ps(dst, v[0]);
                _mm256_storeu_ps(dst.add(8), v[1]);
            }
            return;
        }
        // A partial tile, with masks. The epilogue is too long for LLVM to unroll over every
        // row, and an array it indexes at run time lives in memory; were that `acc`, the loop
        // would store every accumulator at every step. So the epilogue reads a copy, made row
        // by row.
        let mut sums = [[_mm256_setzero_ps(); 2]; R];
        for i in 0..R {
            sums[i] = acc[i];
        }
        let bscale = _mm256_set1_ps(t.bias_scale);
        for (i, row) in sums.iter().enumerate() {
            let crow = t.c.add(i * t.ldc);
            for (h, (&mask, lanes)) in [m0, m1].iter().zip([n0, n1]).enumerate() {
                if lanes == 0 {
                    continue;
                }
                let dst = crow.add(8 * h);
                // A whole vector (the first half of a tile of 8 to 15 columns) is loaded and
                // stored plainly, as in a whole tile.
                let full = lanes == 8;
                macro_rules! load {
                    ($p:expr, $mask:expr) => {
                        if full { _mm256_loadu_ps($p) } else { _mm256_maskload_ps($p, $mask) }
                    };
                }
                let mut v = _mm256_mul_ps(row[h], alpha);
                if t.first {
                    if !t.bias_col.is_null() {
                        let bias = load!(t.bias_col.add(8 * h), mask);
                        v = _mm256_add_ps(v, _mm256_mul_ps(bscale, bias));
                    }
                    if !t.bias_row.is_null() {
                        let bias = _mm256_set1_ps(*t.bias_row.add(i));
                        v = _mm256_add_ps(v, _mm256_mul_ps(bscale, bias));
                    }
                    if t.beta != 0.0 {
                        v = _mm256_add_ps(v, _mm256_mul_ps(beta, load!(dst, mask)));
                    }
                } else {
                    v = _mm256_add_ps(load!(dst, mask), v);
                }
                if full {
                    _mm256_storeu_ps(dst, v);
                } else {
                    _mm256_maskstore_ps(dst, mask, v);
                }
            }
        }
    }
}

/// One plane of [`crate::pool::max_pool_3x3s2`]: output row by output row, eight outputs at a
/// time (the last vector of a row overlaps the one before it, recomputing the same values).
///
/// # Safety
/// The CPU supports AVX2; `x` holds `(2·oh + 1)` rows of `iw > 2·ow` elements, `out` `oh` rows
/// of `ow ≥ 8`.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn max_pool_3x3s2_plane(x: *const f32, iw: usize, oh: usize, ow: usize, out: *mut f32) {
    // The even and the odd elements of `a` then `b`.
    let evens = |a: __m256, b: __m256| {
        let s = _mm256_shuffle_ps::<0b10_00_10_00>(a, b);
        _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(s)))
    };
    let odds = |a: __m256, b: __m256| {
        let s = _mm256_shuffle_ps::<0b11_01_11_01>(a, b);
        _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(s)))
    };
    // PyTorch's rule: `v` replaces `best` when larger (ordered) or NaN.
    let tap = |best: __m256, v: __m256| {
        let take = _mm256_or_ps(_mm256_cmp_ps::<_CMP_GT_OQ>(v, best), _mm256_cmp_ps::<_CMP_UNORD_Q>(v, v));
        _mm256_blendv_ps(best, v, take)
    };
    for y in 0..oh {
        // SAFETY (every pointer below): rows `2y..2y + 3 ≤ 2·oh + 1` of the plane; output
        // `xs + 7 < ow` reads columns up to `2·(xs + 7) + 2 ≤ 2·ow < iw`; the stores write
        // `xs..xs + 8 ≤ ow` of output row `y`.
        unsafe {
            let top = x.add(2 * y * iw);
            let dst = out.add(y * ow);
            let mut x0 = 0;
            loop {
                let xs = x0.min(ow - 8);
                let mut best = _mm256_setzero_ps();
                for a in 0..3 {
                    let p = top.add(a * iw + 2 * xs);
                    let (lo, hi) = (_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(8)));
                    let (lo1, hi1) = (_mm256_loadu_ps(p.add(1)), _mm256_loadu_ps(p.add(9)));
                    let t0 = evens(lo, hi);
                    best = if a == 0 { t0 } else { tap(best, t0) };
                    best = tap(best, odds(lo, hi));
                    best = tap(best, odds(lo1, hi1));
                }
                _mm256_storeu_ps(dst.add(xs), best);
                if xs + 8 >= ow {
                    break;
                }
                x0 += 8;
            }
        }
    }
}

/// `G` whole groups of 16 sums of a batch-1 product ([`crate::gemv`]) in `2·G` registers over
/// all of `k`: each output's sum is one chain of fused multiply-adds in the order of `k`, the
/// bits of the portable loop. At most four groups, so the eight accumulators leave registers
/// for the broadcast and the loads.
///
/// # Safety
/// The CPU supports AVX2 and FMA; `starts[..G]` are starts of whole groups of `b` (every row's
/// 16 columns inside `b.data`, as `Columns::checked` ensured); `x.len() == b.k`; `sums` holds
/// `16·G` elements.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn gemv_block<const G: usize>(x: &[f32], b: &crate::gemv::Columns<'_>, starts: &[usize], sums: &mut [f32]) {
    const { assert!(G >= 1 && G <= 4) };
    let base = b.data.as_ptr();
    // SAFETY: a group start is inside `b.data` (caller's contract).
    let ptrs: [*const f32; G] = std::array::from_fn(|g| unsafe { base.add(starts[g]) });
    let mut acc = [[_mm256_setzero_ps(); 2]; G];
    let mut off = 0usize;
    for &xp in x {
        let xv = _mm256_set1_ps(xp);
        for g in 0..G {
            for (h, a) in acc[g].iter_mut().enumerate() {
                // SAFETY: row `p` of group `g` is 16 columns inside `b.data` (caller's contract).
                *a = _mm256_fmadd_ps(xv, unsafe { _mm256_loadu_ps(ptrs[g].add(off + 8 * h)) }, *a);
            }
        }
        off += b.rs;
    }
    for (g, pair) in acc.iter().enumerate() {
        for (h, a) in pair.iter().enumerate() {
            // SAFETY: `sums` holds `16·G` elements (caller's contract).
            unsafe { _mm256_storeu_ps(sums.as_mut_ptr().add(16 * g + 8 * h), *a) };
        }
    }
}

/// The 8 × 8 tiles of `crate::transpose::transpose_into` within the first `r8` rows and `c8`
/// columns (multiples of 8) of `src`, whose columns are contiguous (`rs == 1`): eight columns
/// loaded, transposed in registers (pairs interleaved, then quadruples, then 128-bit halves),
/// stored as eight rows of `dst` (`src.cols` elements apart).
///
/// # Safety
/// The CPU supports AVX; `src.rs == 1`, `r8 ≤ rows`, `c8 ≤ cols`, and `dst` holds
/// `rows × cols` elements.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn transpose_tiles(src: &crate::mat::MatView<'_, f32>, dst: &mut [f32], r8: usize, c8: usize) {
    let (base, out) = (src.data.as_ptr(), dst.as_mut_ptr());
    for c0 in (0..c8).step_by(8) {
        for r0 in (0..r8).step_by(8) {
            // SAFETY: column `c0 + i` rows `r0..r0 + 8` of the view are the 8 consecutive
            // elements from `off + r0 + (c0 + i)·cs`, inside `data` (`MatView::new` checked
            // every element of the view).
            let x: [__m256; 8] = std::array::from_fn(|i| unsafe { _mm256_loadu_ps(base.add(src.off + r0 + (c0 + i) * src.cs)) });
            // `x[i]` holds `M[i][0..8]`; after the two in-lane steps `u[4h + k]` holds, in each
            // 128-bit half `q`, `M[4h..4h+4][4q + k]`.
            let mut u = [_mm256_setzero_ps(); 8];
            for h in 0..2 {
                let lo01 = _mm256_unpacklo_ps(x[4 * h], x[4 * h + 1]);
                let hi01 = _mm256_unpackhi_ps(x[4 * h], x[4 * h + 1]);
                let lo23 = _mm256_unpacklo_ps(x[4 * h + 2], x[4 * h + 3]);
                let hi23 = _mm256_unpackhi_ps(x[4 * h + 2], x[4 * h + 3]);
                u[4 * h] = _mm256_shuffle_ps::<0x44>(lo01, lo23);
                u[4 * h + 1] = _mm256_shuffle_ps::<0xEE>(lo01, lo23);
                u[4 * h + 2] = _mm256_shuffle_ps::<0x44>(hi01, hi23);
                u[4 * h + 3] = _mm256_shuffle_ps::<0xEE>(hi01, hi23);
            }
            for k in 0..4 {
                let lo = _mm256_permute2f128_ps::<0x20>(u[k], u[4 + k]);
                let hi = _mm256_permute2f128_ps::<0x31>(u[k], u[4 + k]);
                // SAFETY: rows `r0 + k` and `r0 + 4 + k` (< rows), columns `c0..c0 + 8 ≤ cols`
                // of `dst`.
                unsafe {
                    _mm256_storeu_ps(out.add((r0 + k) * src.cols + c0), lo);
                    _mm256_storeu_ps(out.add((r0 + 4 + k) * src.cols + c0), hi);
                }
            }
        }
    }
}

/// One row of [`crate::softmax::rows_into`] with AVX2 intrinsics, `softmax::one_row`'s
/// operations lane by lane as `avx512::softmax_row` does them: its 16 lanes as two vectors
/// (lanes 8–15 the second), maxima and sums kept in registers and reduced by halving (the
/// sum in `wide::fold_lanes`' order), `exp` as [`crate::fastmath::exp_f32x8`], the last
/// partial vector element by element; so the same bits. A NaN, or a zero maximum (`+0` and
/// `-0` compare equal), takes the ordered scalar fold of the maxima, whose pick decides.
///
/// # Safety
/// The CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn softmax_row(row: &[f32], o: &mut [f32]) {
    const LANES: usize = 16;
    let n = row.len().min(o.len());
    let full = n / LANES;
    let (src, dst) = (row.as_ptr(), o.as_mut_ptr());
    let unord = |v: __m256| _mm256_cmp_ps::<_CMP_UNORD_Q>(v, v);
    let ninf = _mm256_set1_ps(f32::NEG_INFINITY);
    let (mut la, mut lb) = (ninf, ninf);
    for i in 0..full {
        // SAFETY (every access of `src`/`dst` below): vector `i < full` covers elements
        // `16i..16i+16 <= n` of `row` and `o`.
        let (xa, xb) = unsafe { (_mm256_loadu_ps(src.add(i * LANES)), _mm256_loadu_ps(src.add(i * LANES + 8))) };
        la = _mm256_blendv_ps(la, xa, _mm256_or_ps(_mm256_cmp_ps::<_CMP_GT_OQ>(xa, la), unord(xa)));
        lb = _mm256_blendv_ps(lb, xb, _mm256_or_ps(_mm256_cmp_ps::<_CMP_GT_OQ>(xb, lb), unord(xb)));
    }
    let tail = &row[full * LANES..n];
    let nan = _mm256_movemask_ps(_mm256_or_ps(unord(la), unord(lb))) != 0 || tail.iter().any(|x| x.is_nan());
    let quick = if nan {
        None
    } else {
        let v = _mm256_max_ps(la, lb);
        let q = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
        let q = _mm_max_ps(q, _mm_movehl_ps(q, q));
        let v = _mm_cvtss_f32(_mm_max_ss(q, _mm_movehdup_ps(q)));
        Some(tail.iter().fold(v, |a, &b| if b > a { b } else { a })).filter(|&m| m != 0.0)
    };
    let m = quick.unwrap_or_else(|| {
        let mut lane_max = [0f32; LANES];
        // SAFETY: `lane_max` holds 16 elements.
        unsafe {
            _mm256_storeu_ps(lane_max.as_mut_ptr(), la);
            _mm256_storeu_ps(lane_max.as_mut_ptr().add(8), lb);
        }
        let pick = |a: f32, b: f32| if b > a || b.is_nan() { b } else { a };
        tail.iter().chain(&lane_max).copied().fold(f32::NEG_INFINITY, pick)
    });
    let m = if m.is_infinite() { 0.0 } else { m };
    let mv = _mm256_set1_ps(m);
    let (mut sa, mut sb) = (_mm256_setzero_ps(), _mm256_setzero_ps());
    for i in 0..full {
        // SAFETY: as above.
        unsafe {
            let ea = crate::fastmath::exp_f32x8(_mm256_sub_ps(_mm256_loadu_ps(src.add(i * LANES)), mv));
            let eb = crate::fastmath::exp_f32x8(_mm256_sub_ps(_mm256_loadu_ps(src.add(i * LANES + 8)), mv));
            _mm256_storeu_ps(dst.add(i * LANES), ea);
            _mm256_storeu_ps(dst.add(i * LANES + 8), eb);
            sa = _mm256_add_ps(sa, ea);
            sb = _mm256_add_ps(sb, eb);
        }
    }
    let mut rest = 0f32;
    for (y, &x) in o[full * LANES..n].iter_mut().zip(tail) {
        let e = crate::fastmath::exp_f32(x - m);
        *y = e;
        rest += e;
    }
    let h = _mm256_add_ps(sa, sb);
    let q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps::<1>(h));
    let d = _mm_add_ps(q, _mm_movehl_ps(q, q));
    let inv = 1.0 / (_mm_cvtss_f32(_mm_add_ss(d, _mm_movehdup_ps(d))) + rest);
    let iv = _mm256_set1_ps(inv);
    for i in 0..2 * full {
        // SAFETY: as above (half-vectors `8i..8i+8 <= 16·full`).
        unsafe { _mm256_storeu_ps(dst.add(i * 8), _mm256_mul_ps(_mm256_loadu_ps(dst.add(i * 8)), iv)) };
    }
    for y in &mut o[full * LANES..n] {
        *y *= inv;
    }
}
