//! The AVX-512F microkernels: the packed GEMM's `R × 32` tiles (and `R × 16` ones for a narrow
//! last panel, over packed panels or rows of `B` at their own offsets) and their post-ops, the
//! gather that packs a row panel, the matrix-vector product's blocks of 8 × 16 columns, the
//! softmax row and the 3 × 3 stride-2 max pooling's plane.
//!
//! Every function here requires a CPU with AVX-512F (`Isa::Avx512`); callers choose them only
//! after asking [`crate::isa`].

use std::arch::x86_64::*;

use crate::gemm::{Activation, HalfRounding, PostTile, Tile};
use crate::gemv::{Columns, Finish, GROUPS, LANES};

/// Lane mask of the first `n` of 16 lanes.
#[inline(always)]
pub(crate) fn mask16(n: usize) -> __mmask16 {
    if n >= 16 { 0xffff } else { ((1u32 << n) - 1) as __mmask16 }
}

/// The indices that `_mm512_permutex2var_ps(lo, i, hi)` takes to pick the even elements, then
/// the odd ones, of the 32 in `lo` and `hi`.
///
/// # Safety
/// The CPU supports AVX-512F.
#[inline(always)]
pub(crate) unsafe fn even_odd_indices() -> [__m512i; 2] {
    // SAFETY: register operations only; the caller runs with AVX-512F enabled.
    unsafe {
        [
            _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30),
            _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31),
        ]
    }
}

/// An `R × 32` tile with AVX-512F: two vectors per row of `C`. With `PACKED`, `A` is a row
/// panel (`rsa == 1`), read through one pointer that steps `csa` a step with the
/// broadcasts at fixed offsets from it (no address arithmetic in the loop but that
/// pointer's and `B`'s); otherwise through one pointer per row and one running column
/// offset, so no chain of address additions runs through the loop.
///
/// # Safety
/// As `drive`: every address read or written is in bounds; the CPU supports AVX-512F.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn tile_avx512<const R: usize, const MASKED: bool, const PACKED: bool>(t: &Tile) {
    // SAFETY: forwarded.
    unsafe { tile_avx512_vectors::<R, MASKED, PACKED, 2, false>(t) }
}

/// [`tile_avx512`] over a `B` whose rows lie at their own offsets (`t.b_rows`), read in
/// place: the same operations in the same order, so the same bits as over those rows packed.
///
/// # Safety
/// As [`tile_avx512`], with `t.b_rows` holding `t.k` offsets of rows of `B` from `t.b`, and
/// `A` packed.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn tile_avx512_rows<const R: usize, const MASKED: bool, const PACKED: bool>(t: &Tile) {
    const { assert!(PACKED) };
    // SAFETY: forwarded.
    unsafe { tile_avx512_vectors::<R, MASKED, true, 2, true>(t) }
}

/// An `R × 16` tile with AVX-512F, for the last panel of a product when it has at most 16
/// columns (`t.cols ≤ 16`): [`tile_avx512`] without the multiply-adds of its second half,
/// whose columns do not exist. The first half's sums are the same operations in the same
/// order, so the results are the same bits.
///
/// # Safety
/// As [`tile_avx512`], with `t.cols ≤ 16`.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn tile_avx512_narrow<const R: usize, const MASKED: bool, const PACKED: bool>(t: &Tile) {
    debug_assert!(t.cols <= 16);
    // SAFETY: forwarded.
    unsafe { tile_avx512_vectors::<R, MASKED, PACKED, 1, false>(t) }
}

/// [`tile_avx512_narrow`] over a `B` whose rows lie at their own offsets, as
/// [`tile_avx512_rows`].
///
/// # Safety
/// As [`tile_avx512_rows`], with `t.cols ≤ 16`.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn tile_avx512_narrow_rows<const R: usize, const MASKED: bool, const PACKED: bool>(t: &Tile) {
    const { assert!(PACKED) };
    debug_assert!(t.cols <= 16);
    // SAFETY: forwarded.
    unsafe { tile_avx512_vectors::<R, MASKED, true, 1, true>(t) }
}

/// The tile of `R` rows and `V` vectors (`V` is 1 or 2) of [`tile_avx512`], over `t.blocks`
/// row blocks; with `ROWS`, row `p` of `B` is read at `t.b + t.b_rows[p]` instead of
/// `t.b + p·t.rsb`.
///
/// # Safety
/// As [`tile_avx512`], with `t.cols ≤ 16·V` (and, with `ROWS`, as [`tile_avx512_rows`]).
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn tile_avx512_vectors<const R: usize, const MASKED: bool, const PACKED: bool, const V: usize, const ROWS: bool>(t: &Tile) {
    for q in 0..t.blocks.max(1) {
        let tb = t.enter_block(R, q);
        // SAFETY: block `q` is inside the product (caller's contract).
        unsafe { tile_avx512_block::<R, MASKED, PACKED, V, ROWS>(&tb) };
    }
}

/// One row block of [`tile_avx512_vectors`].
///
/// # Safety
/// As [`tile_avx512_vectors`].
// The rows are indexed, not iterated or copied whole: see the loops over them.
#[allow(clippy::needless_range_loop, clippy::manual_memcpy)]
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn tile_avx512_block<const R: usize, const MASKED: bool, const PACKED: bool, const V: usize, const ROWS: bool>(t: &Tile) {
    let m0 = mask16(t.cols);
    let m1 = if V == 2 { mask16(t.cols.saturating_sub(16)) } else { 0 };
    let mut acc = [[_mm512_setzero_ps(); 2]; R];
    let rows: [*const f32; R] = std::array::from_fn(|i| t.a.wrapping_add(i * t.rsa));
    let (mut a, mut off, mut b, mut b_rows) = (t.a, 0usize, t.b, t.b_rows);
    // SAFETY: the addresses read are in bounds (caller's contract): `A`'s row `i < R`
    // column `p < k` and `B`'s row `p` (its masked-off lanes untouched; with `ROWS` at the
    // tile's `p`-th offset); the pointers are advanced with `wrapping_add` because they step
    // once past the block; prefetches do not fault.
    unsafe {
        macro_rules! step {
            () => {{
                if ROWS {
                    b = t.b.add(*b_rows);
                    b_rows = b_rows.add(1);
                }
                let b0 = if MASKED { _mm512_maskz_loadu_ps(m0, b) } else { _mm512_loadu_ps(b) };
                let b1 = if V == 1 {
                    b0
                } else if MASKED {
                    _mm512_maskz_loadu_ps(m1, b.wrapping_add(16))
                } else {
                    _mm512_loadu_ps(b.add(16))
                };
                // Indexed, not iterated with `zip`: LLVM then unrolls the loop for every `R`
                // and keeps the accumulators in registers.
                for i in 0..R {
                    let x = _mm512_set1_ps(if PACKED { *a.add(i) } else { *rows[i].add(off) });
                    acc[i][0] = _mm512_fmadd_ps(x, b0, acc[i][0]);
                    if V == 2 {
                        acc[i][1] = _mm512_fmadd_ps(x, b1, acc[i][1]);
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
        // The tile's share of the next slice of `B` is prefetched in its first steps, so the
        // other steps test nothing.
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
        // The epilogue is too long for LLVM to unroll over every row, and an array it
        // indexes at run time lives in memory; were that `acc`, the loop would store every
        // accumulator at every step. So the epilogue reads a copy, made row by row.
        let mut sums = [[_mm512_setzero_ps(); 2]; R];
        for i in 0..R {
            sums[i] = acc[i];
        }
        let alpha = _mm512_set1_ps(t.alpha);
        let beta = _mm512_set1_ps(t.beta);
        let bscale = _mm512_set1_ps(t.bias_scale);
        let finish = t.act != Activation::None || t.half != HalfRounding::NONE;
        if t.half == HalfRounding::NONE && matches!(t.act, Activation::None | Activation::Relu) && (!t.first || t.beta == 0.0) {
            macro_rules! fast {
                ($($first:literal $relu:literal $whole:literal)*) => {
                    match (t.first, t.act == Activation::Relu, t.cols == 16 * V) {
                        $(($first, $relu, $whole) => store_sums::<R, V, $first, $relu, $whole>(t, &sums, [m0, m1]),)*
                    }
                };
            }
            fast!(true true true true true false true false true true false false
                  false true true false true false false false true false false false);
            return;
        }
        for (i, row) in sums.iter().enumerate() {
            let crow = t.c.add(i * t.ldc);
            for (h, &mask) in [m0, m1].iter().enumerate().take(V) {
                if mask == 0 {
                    continue;
                }
                let dst = crow.add(16 * h);
                let mut v = _mm512_mul_ps(row[h], alpha);
                if t.first {
                    if !t.bias_col.is_null() {
                        let bias = _mm512_maskz_loadu_ps(mask, t.bias_col.add(16 * h));
                        v = _mm512_add_ps(v, _mm512_mul_ps(bscale, bias));
                    }
                    if !t.bias_row.is_null() {
                        let bias = _mm512_set1_ps(*t.bias_row.add(i));
                        v = _mm512_add_ps(v, _mm512_mul_ps(bscale, bias));
                    }
                    if t.beta != 0.0 {
                        v = _mm512_add_ps(v, _mm512_mul_ps(beta, _mm512_maskz_loadu_ps(mask, dst)));
                    }
                } else {
                    v = _mm512_add_ps(_mm512_maskz_loadu_ps(mask, dst), v);
                }
                if finish {
                    v = finish16(v, t.act, t.half);
                }
                _mm512_mask_storeu_ps(dst, mask, v);
            }
        }
    }
}

/// The epilogue of [`tile_avx512_block`] for its common cases, without a branch a vector:
/// no `f16` rounding, no activation or a ReLU, on the first block of `k` without `beta` (a bias
/// added, or `-0.0` in its place, which leaves every value's bits as they are) or on a later
/// one (added to `C`); `WHOLE` tiles store every vector plainly. The general path's operations
/// in its order, so its bits; a stem's tiles (`k` of 27) had spent as long in that path's
/// tests and jumps as in their multiply-adds.
///
/// # Safety
/// As [`tile_avx512_block`]: `sums` are the tile's sums, `masks` its columns' masks.
#[inline(always)]
unsafe fn store_sums<const R: usize, const V: usize, const FIRST: bool, const RELU: bool, const WHOLE: bool>(
    t: &Tile,
    sums: &[[__m512; 2]; R],
    masks: [__mmask16; 2],
) {
    // SAFETY: the tile's rows of `C`, its bias' elements and its columns' lanes are in bounds
    // (caller's contract); masked-off lanes are neither read nor written.
    unsafe {
        let alpha = _mm512_set1_ps(t.alpha);
        let bscale = _mm512_set1_ps(t.bias_scale);
        let none = _mm512_set1_ps(-0.0);
        let bias_col: [__m512; 2] = std::array::from_fn(|h| {
            if FIRST && h < V && !t.bias_col.is_null() {
                _mm512_mul_ps(bscale, _mm512_maskz_loadu_ps(masks[h], t.bias_col.add(16 * h)))
            } else {
                none
            }
        });
        for i in 0..R {
            let crow = t.c.add(i * t.ldc);
            let bias_row = if FIRST && !t.bias_row.is_null() { _mm512_mul_ps(bscale, _mm512_set1_ps(*t.bias_row.add(i))) } else { none };
            for h in 0..V {
                let dst = crow.add(16 * h);
                let mut v = _mm512_mul_ps(sums[i][h], alpha);
                if FIRST {
                    v = _mm512_add_ps(_mm512_add_ps(v, bias_col[h]), bias_row);
                } else if WHOLE {
                    v = _mm512_add_ps(_mm512_loadu_ps(dst), v);
                } else {
                    v = _mm512_add_ps(_mm512_maskz_loadu_ps(masks[h], dst), v);
                }
                if RELU {
                    v = act16(v, Activation::Relu);
                }
                if WHOLE {
                    _mm512_storeu_ps(dst, v);
                } else if masks[h] != 0 {
                    _mm512_mask_storeu_ps(dst, masks[h], v);
                }
            }
        }
    }
}

/// Each lane of `v` rounded to the nearest `f16` (ties to even) and widened back: the bits of
/// `crate::halves::round_to_f16`.
#[inline(always)]
unsafe fn round16(v: __m512) -> __m512 {
    // SAFETY: register operations only; the caller runs with AVX-512F enabled.
    unsafe { _mm512_cvtph_ps(_mm512_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v)) }
}

/// What a tile applies to its results in registers before storing them: a rounding through
/// `f16`, then `act`, then another, each as `half` says.
#[inline(always)]
unsafe fn finish16(v: __m512, act: Activation, half: HalfRounding) -> __m512 {
    // SAFETY: register operations only; the caller runs with AVX-512F enabled.
    unsafe {
        let v = if half.product { round16(v) } else { v };
        let v = act16(v, act);
        if half.result { round16(v) } else { v }
    }
}

/// `act` of each lane of `v` with the bits of [`Activation::apply`] (a GELU one vector at a
/// time: [`post_avx512`] computes it several vectors at once, which overlaps their chains).
#[inline(always)]
pub(crate) unsafe fn act16(v: __m512, act: Activation) -> __m512 {
    // SAFETY: register operations only; the caller runs with AVX-512F enabled.
    unsafe {
        match act {
            Activation::Relu => {
                // `v > 0` or unordered (NaN) keeps `v`.
                let keep = _mm512_cmp_ps_mask::<_CMP_NLE_UQ>(v, _mm512_setzero_ps());
                _mm512_maskz_mov_ps(keep, v)
            }
            Activation::Clamp(lo, hi) => clamp16(v, lo, hi),
            Activation::Hardswish => {
                let t = clamp16(_mm512_add_ps(v, _mm512_set1_ps(3.0)), 0.0, 6.0);
                _mm512_mul_ps(v, _mm512_div_ps(t, _mm512_set1_ps(6.0)))
            }
            Activation::HardswishProductFirst => {
                let t = clamp16(_mm512_add_ps(v, _mm512_set1_ps(3.0)), 0.0, 6.0);
                _mm512_div_ps(_mm512_mul_ps(v, t), _mm512_set1_ps(6.0))
            }
            Activation::Gelu => crate::fastmath::gelu_erf_f32x16_n([v])[0],
            Activation::None => v,
        }
    }
}

/// `min(max(v, lo), hi)` lane by lane, a NaN lane kept (`max` and `min` return their second
/// operand when either is NaN).
#[inline(always)]
unsafe fn clamp16(v: __m512, lo: f32, hi: f32) -> __m512 {
    // SAFETY: register operations only; the caller runs with AVX-512F enabled.
    unsafe { _mm512_min_ps(_mm512_set1_ps(hi), _mm512_max_ps(_mm512_set1_ps(lo), v)) }
}

/// The post-ops of a tile of `rows` rows and up to 32 columns with AVX-512F: each vector
/// rounded through `f16` where `p.half` says, the addend and the activation vector by vector,
/// the GELU four rows (eight polynomials) at a time, so that their chains of multiply-adds
/// overlap. The tile was just stored, so it is read from L1.
///
/// # Safety
/// As `post_tile`.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn post_avx512(p: &PostTile, rows: usize) {
    let masks = [mask16(p.cols), mask16(p.cols.saturating_sub(16))];
    let at = |i: usize, h: usize| p.c.wrapping_add(i * p.ldc + 16 * h);
    // SAFETY (all loads and stores): rows `i < rows`, lanes within `cols` (caller's
    // contract); masked-off lanes are not touched.
    let load = |i: usize, h: usize| unsafe {
        let mut v = _mm512_maskz_loadu_ps(masks[h], at(i, h));
        if p.half.product {
            v = round16(v);
        }
        if p.addend.is_null() {
            return v;
        }
        let r = _mm512_maskz_loadu_ps(masks[h], p.addend.add(i * p.add_ld + 16 * h));
        if p.add_first { _mm512_add_ps(r, v) } else { _mm512_add_ps(v, r) }
    };
    let store = |i: usize, h: usize, v: __m512| unsafe {
        let v = if p.half.result { round16(v) } else { v };
        _mm512_mask_storeu_ps(at(i, h), masks[h], v)
    };
    let halves = if masks[1] == 0 { 1 } else { 2 };
    match p.act {
        Activation::Gelu => {
            let mut i = 0;
            while i + 4 <= rows {
                let x: [__m512; 8] = std::array::from_fn(|v| load(i + v / 2, v % 2));
                let y = crate::fastmath::gelu_erf_f32x16_n(x);
                for (v, y) in y.into_iter().enumerate() {
                    store(i + v / 2, v % 2, y);
                }
                i += 4;
            }
            for i in i..rows {
                let y = crate::fastmath::gelu_erf_f32x16_n([load(i, 0), load(i, 1)]);
                store(i, 0, y[0]);
                store(i, 1, y[1]);
            }
        }
        act => {
            for i in 0..rows {
                for h in 0..halves {
                    // SAFETY: register operations only; AVX-512F is enabled here.
                    store(i, h, unsafe { act16(load(i, h), act) });
                }
            }
        }
    }
}


/// [`crate::x86::avx2::max_pool_3x3s2_plane`] sixteen outputs at a time: a window row's three
/// taps are the even elements, the odd elements and the even elements one further on of 32
/// consecutive inputs, picked out of two vectors by two-source permutes; the taps in the
/// same order under the same rule, so the same bits.
///
/// # Safety
/// The CPU supports AVX-512F; `x` holds `(2·oh + 1)` rows of `iw > 2·ow` elements, `out` `oh`
/// rows of `ow ≥ 16`.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn max_pool_3x3s2_plane(x: *const f32, iw: usize, oh: usize, ow: usize, out: *mut f32) {
    // SAFETY: AVX-512F is enabled here.
    let [evens, odds] = unsafe { even_odd_indices() };
    // PyTorch's rule: `v` replaces `best` when larger (ordered) or NaN.
    let tap = |best: __m512, v: __m512| {
        let take = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(v, best) | _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
        _mm512_mask_mov_ps(best, take, v)
    };
    for y in 0..oh {
        // SAFETY (every pointer below): rows `2y..2y + 3 ≤ 2·oh + 1` of the plane; output
        // `xs + 15 < ow` reads columns up to `2·(xs + 15) + 2 ≤ 2·ow < iw`; the stores write
        // `xs..xs + 16 ≤ ow` of output row `y`.
        unsafe {
            let top = x.add(2 * y * iw);
            let dst = out.add(y * ow);
            let mut x0 = 0;
            loop {
                let xs = x0.min(ow - 16);
                let mut best = _mm512_setzero_ps();
                for a in 0..3 {
                    let p = top.add(a * iw + 2 * xs);
                    let (lo, hi) = (_mm512_loadu_ps(p), _mm512_loadu_ps(p.add(16)));
                    let (lo1, hi1) = (_mm512_loadu_ps(p.add(1)), _mm512_loadu_ps(p.add(17)));
                    let t0 = _mm512_permutex2var_ps(lo, evens, hi);
                    best = if a == 0 { t0 } else { tap(best, t0) };
                    best = tap(best, _mm512_permutex2var_ps(lo, odds, hi));
                    best = tap(best, _mm512_permutex2var_ps(lo1, odds, hi1));
                }
                _mm512_storeu_ps(dst.add(xs), best);
                if xs + 16 >= ow {
                    break;
                }
                x0 += 16;
            }
        }
    }
}

/// Packs `rows ≤ mr ≤ 16` rows of `A` (from `a`, `rs` apart, columns `cs` apart) into
/// one row panel: `dst[p·mr + i] = a[i·rs + p·cs]` for `p < k`, zero for `i ≥ rows`.
///
/// # Safety
/// Those elements of `A` are readable, `dst` holds `k·mr` elements, `(rows - 1)·rs` fits
/// an `i32`, and the CPU supports AVX-512F.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn pack_panel_avx512(a: *const f32, rs: usize, cs: usize, rows: usize, k: usize, mr: usize, dst: *mut f32) {
    let lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    // Lanes from `rows` on are masked off, so their offsets (which may wrap) are not used.
    let offsets = _mm512_mullo_epi32(lanes, _mm512_set1_epi32(rs as i32));
    let (read, write) = (mask16(rows), mask16(mr));
    for p in 0..k {
        // SAFETY: the lanes read are rows `i < rows` of column `p`, and the lanes written
        // the panel's column `p` (caller's contract).
        unsafe {
            let v = _mm512_mask_i32gather_ps::<4>(_mm512_setzero_ps(), read, offsets, a.wrapping_add(p * cs));
            _mm512_mask_storeu_ps(dst.add(p * mr), write, v);
        }
    }
}


/// [`crate::gemv::finish`] in vectors of 16, the last one masked.
///
/// # Safety
/// The CPU supports AVX-512F; `y[j0..j0 + sums.len()]` is writable and the caller's alone;
/// a per-column bias has at least `j0 + sums.len()` values.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn gemv_finish(fin: &Finish<'_>, j0: usize, sums: &[f32], y: *mut f32) {
    let alpha = _mm512_set1_ps(fin.alpha);
    let beta = _mm512_set1_ps(fin.beta);
    let bias_scale = _mm512_set1_ps(fin.bias_scale);
    for (g, s) in sums.chunks(LANES).enumerate() {
        let j = j0 + g * LANES;
        let mask: __mmask16 = if s.len() >= LANES { 0xffff } else { ((1u32 << s.len()) - 1) as __mmask16 };
        // SAFETY: the masked lanes are those of `s`, inside `sums`.
        let mut v = _mm512_mul_ps(alpha, unsafe { _mm512_maskz_loadu_ps(mask, s.as_ptr()) });
        if let Some((bv, per_row)) = fin.bias {
            let b = if per_row {
                _mm512_set1_ps(bv[0])
            } else {
                // SAFETY: a per-column bias covers these columns (caller's contract).
                unsafe { _mm512_maskz_loadu_ps(mask, bv.as_ptr().add(j)) }
            };
            v = _mm512_add_ps(v, _mm512_mul_ps(bias_scale, b));
        }
        if fin.beta != 0.0 {
            // SAFETY: the masked lanes are outputs of this block (caller's contract).
            let d = unsafe { _mm512_maskz_loadu_ps(mask, y.add(j)) };
            v = _mm512_add_ps(v, _mm512_mul_ps(beta, d));
        }
        // SAFETY: as above.
        unsafe { _mm512_mask_storeu_ps(y.add(j), mask, v) };
    }
}

/// `G` groups of 16 sums in registers over all of `k`; the last group reads its first
/// `last` lanes only.
///
/// # Safety
/// The CPU supports AVX-512F; `starts[..G]` are group starts of `b` (so every row of every
/// group lies inside `b.data`, as `Columns::checked` ensured), and `x.len() == b.k`.
#[allow(clippy::needless_range_loop)]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn gemv_block<const G: usize>(
    x: &[f32],
    b: &Columns<'_>,
    starts: &[usize; GROUPS],
    last: usize,
    sums: &mut [f32; GROUPS * LANES],
) {
    let mask: __mmask16 = if last >= LANES { 0xffff } else { ((1u32 << last) - 1) as __mmask16 };
    let base = b.data.as_ptr();
    let mut ptrs = [base; G];
    for g in 0..G {
        // SAFETY: a group start is inside `b.data` (caller's contract).
        ptrs[g] = unsafe { base.add(starts[g]) };
    }
    let mut acc = [_mm512_setzero_ps(); G];
    let mut off = 0usize;
    for &xp in x {
        let xv = _mm512_set1_ps(xp);
        for g in 0..G {
            // SAFETY: row `p` of group `g` is inside `b.data` (caller's contract); the last
            // group reads only its `last` lanes.
            let v = unsafe {
                if g + 1 == G { _mm512_maskz_loadu_ps(mask, ptrs[g].add(off)) } else { _mm512_loadu_ps(ptrs[g].add(off)) }
            };
            acc[g] = _mm512_fmadd_ps(xv, v, acc[g]);
        }
        off += b.rs;
    }
    for g in 0..G {
        // SAFETY: `sums` holds `GROUPS ≥ G` groups of 16.
        unsafe { _mm512_storeu_ps(sums.as_mut_ptr().add(g * LANES), acc[g]) };
    }
}

/// The largest of 16 lanes that hold no NaN, by halving in registers (the maximum of numbers
/// is the same in any order; of `+0` and `-0` either may come out).
#[target_feature(enable = "avx512f")]
fn hmax(v: std::arch::x86_64::__m512) -> f32 {
    use std::arch::x86_64::*;
    let v = _mm512_max_ps(v, _mm512_shuffle_f32x4::<0b01_00_11_10>(v, v));
    let v = _mm512_max_ps(v, _mm512_shuffle_f32x4::<0b10_11_00_01>(v, v));
    let x = _mm512_castps512_ps128(v);
    let x = _mm_max_ps(x, _mm_movehl_ps(x, x));
    _mm_cvtss_f32(_mm_max_ss(x, _mm_movehdup_ps(x)))
}

/// [`crate::wide::fold_lanes`] of 16 lanes in registers: lane `i` takes lane `i + 8`, then
/// `i + 4`, `i + 2` and `i + 1`, each step one add of the vector and its upper half moved
/// down, so the same sums in the same order (the same bits).
#[target_feature(enable = "avx512f")]
pub(crate) fn fold_lanes_x16(v: std::arch::x86_64::__m512) -> f32 {
    use std::arch::x86_64::*;
    let h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(v))));
    let q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps::<1>(h));
    let d = _mm_add_ps(q, _mm_movehl_ps(q, q));
    _mm_cvtss_f32(_mm_add_ss(d, _mm_movehdup_ps(d)))
}

/// One row of [`crate::softmax::rows_into`] with AVX-512F intrinsics: `softmax::row`'s
/// operations lane by lane (maxima and sums over 16 lanes, combined in the same order; `exp`
/// as [`crate::fastmath::exp_f32x16`]; the last partial vector under a mask, its sum taken
/// element by element as the scalar tail is), so the same bits. Written out because the
/// compiler, vectorizing `softmax::row` itself, keeps the partial sums in memory (a
/// store-to-load chain per vector) and reduces the maxima one lane at a time.
#[target_feature(enable = "avx512f")]
pub(crate) fn softmax_row(row: &[f32], o: &mut [f32]) {
    use std::arch::x86_64::*;
    const LANES: usize = 16;
    let n = row.len().min(o.len());
    let (full, rest) = (n / LANES, n % LANES);
    let tail_mask: __mmask16 = ((1u32 << rest) - 1) as __mmask16;
    let (src, dst) = (row.as_ptr(), o.as_mut_ptr());
    // SAFETY (every load and store below): vector `i < full` covers elements `16i..16i+16 <= n`
    // of `row` and `o`; the masked accesses touch only the `rest` elements from `16·full`.
    let mut lanes = _mm512_set1_ps(f32::NEG_INFINITY);
    for i in 0..full {
        // SAFETY: as above.
        let x = unsafe { _mm512_loadu_ps(src.add(i * LANES)) };
        let take = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(x, lanes) | _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x, x);
        lanes = _mm512_mask_mov_ps(lanes, take, x);
    }
    // The tail folded into the lanes (`-inf` beyond it), then the lanes reduced in registers.
    // The maximum of numbers is the same whatever the order, but not which NaN or which zero
    // (`+0` and `-0` compare equal) the ordered scalar fold keeps: rows with either take it.
    // SAFETY: the masked load touches only the `rest` elements from `16·full`.
    let x = unsafe { _mm512_mask_loadu_ps(_mm512_set1_ps(f32::NEG_INFINITY), tail_mask, src.add(full * LANES)) };
    let all = _mm512_mask_mov_ps(lanes, _mm512_cmp_ps_mask::<_CMP_GT_OQ>(x, lanes) | _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x, x), x);
    let m = if _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(all, all) == 0
        && let m = hmax(all)
        && m != 0.0
    {
        m
    } else {
        let mut lane_max = [0f32; LANES];
        // SAFETY: `lane_max` holds 16 elements.
        unsafe { _mm512_storeu_ps(lane_max.as_mut_ptr(), lanes) };
        let pick = |a: f32, b: f32| if b > a || b.is_nan() { b } else { a };
        row[full * LANES..n].iter().chain(&lane_max).copied().fold(f32::NEG_INFINITY, pick)
    };
    let m = if m.is_infinite() { 0.0 } else { m };
    let mv = _mm512_set1_ps(m);
    let mut sums = _mm512_setzero_ps();
    for i in 0..full {
        // SAFETY: as above.
        let x = unsafe { _mm512_loadu_ps(src.add(i * LANES)) };
        let e = crate::fastmath::exp_f32x16(_mm512_sub_ps(x, mv));
        // SAFETY: as above.
        unsafe { _mm512_storeu_ps(dst.add(i * LANES), e) };
        sums = _mm512_add_ps(sums, e);
    }
    let mut tail = 0f32;
    if rest > 0 {
        // SAFETY: as above.
        unsafe {
            let x = _mm512_maskz_loadu_ps(tail_mask, src.add(full * LANES));
            let e = crate::fastmath::exp_f32x16(_mm512_sub_ps(x, mv));
            _mm512_mask_storeu_ps(dst.add(full * LANES), tail_mask, e);
        }
        for &e in &o[full * LANES..n] {
            tail += e;
        }
    }
    let inv = _mm512_set1_ps(1.0 / (fold_lanes_x16(sums) + tail));
    for i in 0..full {
        // SAFETY: as above.
        unsafe { _mm512_storeu_ps(dst.add(i * LANES), _mm512_mul_ps(_mm512_loadu_ps(dst.add(i * LANES)), inv)) };
    }
    if rest > 0 {
        // SAFETY: as above.
        unsafe {
            let y = _mm512_maskz_loadu_ps(tail_mask, dst.add(full * LANES));
            _mm512_mask_storeu_ps(dst.add(full * LANES), tail_mask, _mm512_mul_ps(y, inv));
        }
    }
}

/// The 16 × 16 tiles of `crate::transpose::transpose_into` within the first `r16` rows and
/// `c16` columns (multiples of 16) of `src`, whose columns are contiguous (`rs == 1`): sixteen
/// columns loaded, transposed in registers (pairs of rows interleaved, then quadruples, then
/// 128-bit quarters), stored as sixteen rows of `dst` (`src.cols` elements apart).
///
/// # Safety
/// The CPU supports AVX-512F; `src.rs == 1`, `r16 ≤ rows`, `c16 ≤ cols`, and `dst` holds
/// `rows × cols` elements.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn transpose_tiles(src: &crate::mat::MatView<'_, f32>, dst: &mut [f32], r16: usize, c16: usize) {
    let (base, out) = (src.data.as_ptr(), dst.as_mut_ptr());
    for c0 in (0..c16).step_by(16) {
        for r0 in (0..r16).step_by(16) {
            // SAFETY: column `c0 + i` rows `r0..r0 + 16` of the view are the 16 consecutive
            // elements from `off + r0 + (c0 + i)·cs`, inside `data` (`MatView::new` checked
            // every element of the view).
            let x: [__m512; 16] = std::array::from_fn(|i| unsafe { _mm512_loadu_ps(base.add(src.off + r0 + (c0 + i) * src.cs)) });
            // Element `j` of `x[i]` is `M[i][j]`; `M[i][j]` for `i` in `4g..4g+4` and `j` in
            // quarter `q`, position `k`, lands in `u[4g + k]` quarter `q`.
            let mut u = [_mm512_setzero_ps(); 16];
            for g in 0..4 {
                let lo01 = _mm512_unpacklo_ps(x[4 * g], x[4 * g + 1]);
                let hi01 = _mm512_unpackhi_ps(x[4 * g], x[4 * g + 1]);
                let lo23 = _mm512_unpacklo_ps(x[4 * g + 2], x[4 * g + 3]);
                let hi23 = _mm512_unpackhi_ps(x[4 * g + 2], x[4 * g + 3]);
                u[4 * g] = _mm512_shuffle_ps::<0x44>(lo01, lo23);
                u[4 * g + 1] = _mm512_shuffle_ps::<0xEE>(lo01, lo23);
                u[4 * g + 2] = _mm512_shuffle_ps::<0x44>(hi01, hi23);
                u[4 * g + 3] = _mm512_shuffle_ps::<0xEE>(hi01, hi23);
            }
            for k in 0..4 {
                let v0 = _mm512_shuffle_f32x4::<0x44>(u[k], u[4 + k]);
                let v1 = _mm512_shuffle_f32x4::<0xEE>(u[k], u[4 + k]);
                let v2 = _mm512_shuffle_f32x4::<0x44>(u[8 + k], u[12 + k]);
                let v3 = _mm512_shuffle_f32x4::<0xEE>(u[8 + k], u[12 + k]);
                let rows = [
                    _mm512_shuffle_f32x4::<0x88>(v0, v2),
                    _mm512_shuffle_f32x4::<0xDD>(v0, v2),
                    _mm512_shuffle_f32x4::<0x88>(v1, v3),
                    _mm512_shuffle_f32x4::<0xDD>(v1, v3),
                ];
                for (q, row) in rows.into_iter().enumerate() {
                    // SAFETY: row `r0 + 4q + k < rows` columns `c0..c0 + 16 ≤ cols` of `dst`.
                    unsafe { _mm512_storeu_ps(out.add((r0 + 4 * q + k) * src.cols + c0), row) };
                }
            }
        }
    }
}
