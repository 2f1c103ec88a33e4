//! The AVX2 and AVX-512 gathers of the packed path: runs of a panel's input positions loaded
//! with masked vector loads.

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
    let kk = plan.g.kernel[2];
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
    // A full piece is two plain loads (masked loads cost more than plain ones on some CPUs).
    // SAFETY: the loads read the lanes of `mask` only, `xc[at + lane]`, inside the input row
    // (`piece`; a full mask selects all 16); masked-off lanes are not accessed.
    let load = |xc: &[f32], at: isize, mask: u32| unsafe {
        let p = xc.as_ptr().wrapping_offset(at);
        if mask == FULL {
            return (_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(8)));
        }
        let (m0, m1) = lane_masks(mask);
        (_mm256_maskload_ps(p, m0), _mm256_maskload_ps(p.wrapping_add(8), m1))
    };
    // SAFETY: forwarded, with a load that reads only the lanes its mask selects.
    unsafe { pack_pieces_avx2(plan, x, channels, runs, &pieces, dst, load) }
}

/// The loop of the AVX2 panel packers: for each channel, tap row and tap column, a panel row
/// of 16 lanes is assembled in two 8-lane registers from every run's in-range piece, `load(xc,
/// at, mask)` giving the piece's two halves with zeros outside `mask` (`at`, the index in the
/// channel's input `xc` of the element panel lane 0 would read, may be negative), merged by
/// `or` and stored whole.
///
/// # Safety
/// The CPU supports AVX2 (the callers enable it); `dst` holds `channels · taps` panel rows;
/// `load` reads only the elements of the lanes its mask selects, which `pieces` keeps inside
/// their input rows.
#[inline(always)]
unsafe fn pack_pieces_avx2(
    plan: &PanelPlan<'_>,
    x: &[f32],
    channels: usize,
    runs: &[Run],
    pieces: &[[(u32, isize); NR_AVX2]; MAX_TAPS],
    dst: &mut [f32],
    load: impl Fn(&[f32], isize, u32) -> (__m256, __m256),
) {
    let g = plan.g;
    let [ki, kj, kk] = g.kernel;
    let plane = g.input.iter().product::<usize>();
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
                    if let Some(base) = *base {
                        prefetch_ahead(xc, base, run, g.stride[2]);
                    }
                }
                for per_run in &pieces[..kk] {
                    // SAFETY: AVX2 is enabled in the callers this is inlined into; the loads
                    // are the caller's; `out` walks `dst`'s `rows` rows of 16, one per tap
                    // (the loops run `rows` times).
                    unsafe {
                        let (mut lo, mut hi) = (_mm256_setzero_ps(), _mm256_setzero_ps());
                        for (&(mask, off), base) in per_run.iter().zip(&bases[..runs.len()]) {
                            let Some(base) = *base else { continue };
                            if mask == 0 {
                                continue;
                            }
                            let (l, h) = load(xc, base as isize + off, mask);
                            lo = _mm256_or_ps(lo, l);
                            hi = _mm256_or_ps(hi, h);
                        }
                        _mm256_storeu_ps(out, lo);
                        _mm256_storeu_ps(out.add(8), hi);
                        out = out.add(NR_AVX2);
                    }
                }
            }
        }
    }
}

/// [`PanelPlan::pack`] for 16-wide panels and stride 2 along rows (a strided stem): each half
/// of a panel row is the even elements of two vectors of the input row, loaded with the masks
/// of the lanes a run's in-range piece fills (the odd elements and the lanes outside the piece
/// read as zeros, so pieces are merged by `or`), then stored whole. The values are copied, so
/// the panel is the same bits as [`PanelPlan::pack_rows`]'s.
///
/// # Safety
/// The CPU supports AVX2; `plan.nr == 16` and the geometry's stride along rows is 2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn pack_stride2_avx2(plan: &PanelPlan<'_>, x: &[f32], channels: usize, runs: &[Run], dst: &mut [f32]) {
    let kk = plan.g.kernel[2];
    if kk > MAX_TAPS || runs.len() > NR_AVX2 {
        return plan.pack_rows(x, channels, runs, dst);
    }
    // The panel lanes `run`'s in-range piece for tap column `e` fills, and the offset from the
    // input row's start of the element lane 0 would read (lane `j` reads `2·j` past it).
    let lanes = |run: &Run, e: usize| {
        let (l, h, src) = plan.piece(run, e);
        if h > l { (((1u32 << (h - l)) - 1) << (run.d + l), src as isize - 2 * (run.d + l) as isize) } else { (0, 0) }
    };
    // The even elements of `a` then of `b`.
    let evens = |a: __m256, b: __m256| {
        let s = _mm256_shuffle_ps::<0b10_00_10_00>(a, b);
        _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(s)))
    };
    // A full piece whose last odd element is in the input too is four plain loads (masked
    // loads cost more than plain ones on some CPUs).
    // SAFETY: the plain loads read `xc[at..at + 32]`, in bounds (`at` ≥ 0 as lane 0 is in the
    // row, and checked against the end); the masked loads read the elements the masks select,
    // `xc[at + 2·lane]` for the piece's lanes, inside the input row (`piece`); masked-off
    // elements are not accessed.
    let load = |xc: &[f32], at: isize, mask: u32| unsafe {
        let p = xc.as_ptr().wrapping_offset(at);
        if mask == FULL && at + 32 <= xc.len() as isize {
            let lo = evens(_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(8)));
            return (lo, evens(_mm256_loadu_ps(p.add(16)), _mm256_loadu_ps(p.add(24))));
        }
        let m = |q: u32| _mm256_loadu_si256(EVEN_MASKS[((mask >> (4 * q)) & 15) as usize].as_ptr() as *const __m256i);
        let lo = evens(_mm256_maskload_ps(p, m(0)), _mm256_maskload_ps(p.wrapping_add(8), m(1)));
        let hi = if mask >> 8 != 0 {
            evens(_mm256_maskload_ps(p.wrapping_add(16), m(2)), _mm256_maskload_ps(p.wrapping_add(24), m(3)))
        } else {
            _mm256_setzero_ps()
        };
        (lo, hi)
    };
    if let [run] = runs {
        let mut pieces = [(0u32, 0isize); MAX_TAPS];
        for (e, piece) in pieces.iter_mut().enumerate().take(kk) {
            *piece = lanes(run, e);
        }
        // SAFETY: forwarded, with a load that reads only the elements its mask selects.
        return unsafe { pack_one_run_pieces_avx2(plan, x, channels, run, &pieces[..kk], dst, load) };
    }
    let mut pieces = [[(0u32, 0isize); NR_AVX2]; MAX_TAPS];
    for (e, per_run) in pieces.iter_mut().enumerate().take(kk) {
        for (piece, run) in per_run.iter_mut().zip(runs) {
            *piece = lanes(run, e);
        }
    }
    // SAFETY: forwarded, with a load that reads only the elements its mask selects.
    unsafe { pack_pieces_avx2(plan, x, channels, runs, &pieces, dst, load) }
}

/// The loop of the AVX2 packers for a panel that lies in one output row (every panel when
/// rows are a multiple of 16 long): each panel row is `load(xc, at, mask)` of its tap column's
/// piece (`pieces`, one `(mask, at)` per tap column, `at` as in [`pack_pieces_avx2`], the mask
/// in whatever form `load` takes), or zeros where the input row is padding.
///
/// # Safety
/// As [`pack_pieces_avx2`], for the one run `run`; an empty piece's `load` reads nothing.
#[inline(always)]
unsafe fn pack_one_run_pieces_avx2<M: Copy>(
    plan: &PanelPlan<'_>,
    x: &[f32],
    channels: usize,
    run: &Run,
    pieces: &[(M, isize)],
    dst: &mut [f32],
    load: impl Fn(&[f32], isize, M) -> (__m256, __m256),
) {
    let g = plan.g;
    let [ki, kj, kk] = g.kernel;
    let plane = g.input.iter().product::<usize>();
    let rows = channels * ki * kj * kk;
    let dst = &mut dst[..rows * NR_AVX2];
    let mut out = dst.as_mut_ptr();
    for c in 0..channels {
        let xc = &x[c * plane..(c + 1) * plane];
        for a in 0..ki {
            for b in 0..kj {
                let base = plan.row_base(run, a, b);
                if let Some(base) = base {
                    prefetch_ahead(xc, base, run, g.stride[2]);
                }
                for &(mask, off) in pieces {
                    // SAFETY: AVX2 is enabled in the callers this is inlined into; the load is
                    // the caller's; `out` walks `dst`'s `rows` rows of 16, one per tap.
                    unsafe {
                        let (lo, hi) = match base {
                            Some(base) => load(xc, base as isize + off, mask),
                            None => (_mm256_setzero_ps(), _mm256_setzero_ps()),
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

/// The mask of a piece filling all 16 lanes of a panel row.
const FULL: u32 = (1 << NR_AVX2) - 1;

/// Entry `n` masks the even elements `2·t` of an 8-lane vector for the bits `t` of `n`: the
/// input elements of four panel lanes at stride 2.
static EVEN_MASKS: [[i32; 8]; 16] = {
    let mut table = [[0; 8]; 16];
    let mut n = 0;
    while n < 16 {
        let mut t = 0;
        while t < 4 {
            if (n >> t) & 1 == 1 {
                table[n][2 * t] = -1;
            }
            t += 1;
        }
        n += 1;
    }
    table
};

/// [`pack_avx2`] for a panel that lies in one output row (every panel when rows are a
/// multiple of 16 long): each panel row is one input row's run at the tap's offset, two
/// masked loads and two stores, or two stores of zeros when the row is padding.
///
/// # Safety
/// As [`pack_avx2`]; `g.kernel[2] <= MAX_TAPS`.
#[target_feature(enable = "avx2")]
unsafe fn pack_one_run_avx2(plan: &PanelPlan<'_>, x: &[f32], channels: usize, run: &Run, dst: &mut [f32]) {
    let kk = plan.g.kernel[2];
    // Per tap column: the lane masks of the in-range piece's two halves, and the offset
    // from the input row's start of the element lane 0 would read.
    let zeros = _mm256_setzero_si256();
    let mut pieces = [((zeros, zeros), 0isize); MAX_TAPS];
    for (e, piece) in pieces.iter_mut().enumerate().take(kk) {
        let (mask, off) = plan.lanes(run, e);
        *piece = (lane_masks(mask), off);
    }
    // SAFETY: the lanes the masks select read `xc[at + lane]`, inside the input row (`piece`),
    // the pointer itself may lie before `xc`; masked-off lanes are not accessed.
    let load = |xc: &[f32], at: isize, (m0, m1): (__m256i, __m256i)| unsafe {
        let p = xc.as_ptr().wrapping_offset(at);
        (_mm256_maskload_ps(p, m0), _mm256_maskload_ps(p.wrapping_add(8), m1))
    };
    // SAFETY: forwarded, with a load that reads only the lanes its masks select.
    unsafe { pack_one_run_pieces_avx2(plan, x, channels, run, &pieces[..kk], dst, load) }
}

/// The width of the AVX2 path's panels, and so the most runs one of them has.
const NR_AVX2: usize = 16;

/// Panels ahead of the one being packed whose input a packer prefetches.
const PREFETCH_PANELS: usize = 2;

/// Fetches into L1 the input that the same row of the panel [`PREFETCH_PANELS`] ahead reads
/// (both cache lines of a stride-2 row). The input planes of a large convolution do not stay
/// in L2 between calls, and a panel's dozens of short rows are more streams than the hardware
/// prefetchers follow: without this, the loads of a packer wait for L3 one line at a time.
#[inline(always)]
fn prefetch_ahead(xc: &[f32], base: usize, run: &Run, stride: usize) {
    let ahead = xc.as_ptr().wrapping_add(base + (run.xo + PREFETCH_PANELS * NR_AVX2) * stride);
    ::kernels::gemm::prefetch_l1(ahead);
    if stride > 1 {
        ::kernels::gemm::prefetch_l1(ahead.wrapping_add(NR_AVX2));
    }
}

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
