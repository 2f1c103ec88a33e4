//! Direct depthwise 2-d convolution (one filter per channel, `groups == channels`), any kernel
//! size, stride, padding and dilation, `f32`.
//!
//! Each channel's input plane is first copied, zero-padded, into a polyphase layout: for a
//! stride `(sh, sw)` the padded plane splits into `sh·sw` sub-planes, sub-plane `(p, q)` holding
//! the padded rows `≡ p (mod sh)` and columns `≡ q (mod sw)`, every sub-plane row `pw` long.
//! Output `(y, x)` and tap `(a, b)` then read sub-plane `(a·dh mod sh, b·dw mod sw)` at row
//! `y + a·dh / sh`, column `x + b·dw / sw`: with outputs numbered `q = y·pw + x` (the columns
//! `ow..pw` of each row are computed and dropped), every tap reads a contiguous run of the
//! sub-plane at a fixed offset, whatever the stride. A tile of consecutive `q` is summed in
//! registers over all taps (bias first, then the taps row by row, each a fused multiply-add on
//! the vector paths), so each output's sum has one order on every ISA and tile width, and the
//! rows of the tile are stored with the activation applied.
//!
//! Channels split across the intra-op team; each thread keeps its padded plane and tile
//! buffer between calls, zeroes the plane once per call and then writes only each channel's
//! own elements into it (the padding is in the same places for every channel).

use crate::gemm::Activation;
use crate::isa::Isa;
use crate::parallel;
use crate::wide::compiled_for;
use crate::{Error, Result};

/// The geometry of a depthwise convolution of one image: `channels` planes of `input`
/// (rows, columns) into planes of `output`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Depthwise {
    pub channels: usize,
    pub input: [usize; 2],
    pub output: [usize; 2],
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    /// Zero rows above and columns left of the input.
    pub pad: [usize; 2],
    pub dilation: [usize; 2],
}

impl Depthwise {
    /// The widest tile: outputs summed at once in a few vector registers of accumulators on
    /// every path. Small planes take a narrower one ([`Depthwise::tile`]).
    const TILE: usize = 64;

    /// The tile width for this geometry: the widest of 64, 32 and 16 outputs that computes at
    /// most 1/16 more outputs past the plane's last row than tiles of 16 do (a 7×7 plane with
    /// a 5×5 kernel computes 80 outputs in tiles of 16 and 128 in tiles of 64).
    fn tile(&self) -> usize {
        let q = self.output[0] * self.phase_dims().1;
        let padded = |t: usize| q.div_ceil(t) * t;
        [Self::TILE, 32].into_iter().find(|&t| padded(t) * 16 <= padded(16) * 17).unwrap_or(16)
    }

    /// Rows and row length of one sub-plane of the polyphase layout.
    fn phase_dims(&self) -> (usize, usize) {
        let [oh, ow] = self.output;
        let rows = oh + (self.kernel[0] - 1) * self.dilation[0] / self.stride[0];
        let cols = ow + (self.kernel[1] - 1) * self.dilation[1] / self.stride[1];
        (rows, cols)
    }

    /// Elements of one sub-plane, with room past its end for the last tile's reads (which
    /// run up to a row and a tile past the rows of outputs).
    fn phase_len(&self) -> usize {
        let (rows, pw) = self.phase_dims();
        (rows + 1) * pw + Self::TILE
    }

    /// Each tap's offset in the polyphase plane, row by row: output `q` of the plane's
    /// numbering reads `plane[offset + q]` for the tap.
    fn tap_offsets(&self) -> Vec<usize> {
        let [kh, kw] = self.kernel;
        let [sh, sw] = self.stride;
        let [dh, dw] = self.dilation;
        let (pw, len) = (self.phase_dims().1, self.phase_len());
        let mut offsets = Vec::with_capacity(kh * kw);
        for a in 0..kh {
            let (ra, pa) = (a * dh / sh, a * dh % sh);
            for b in 0..kw {
                let (cb, qb) = (b * dw / sw, b * dw % sw);
                offsets.push((pa * sw + qb) * len + ra * pw + cb);
            }
        }
        offsets
    }

    /// Outputs computed per channel (whole tiles over `oh` rows of `pw`).
    fn padded_outputs(&self) -> usize {
        let t = self.tile();
        (self.output[0] * self.phase_dims().1).div_ceil(t) * t
    }

    fn check(&self, op: &'static str, images: usize, x: &[f32], w: &[f32], bias: Option<&[f32]>, out: &[f32]) -> Result<()> {
        let [ih, iw] = self.input;
        let [oh, ow] = self.output;
        let [kh, kw] = self.kernel;
        // Any geometry is safe to run (the padded plane covers every read); a zero stride,
        // dilation or kernel is not a convolution.
        if self.stride.contains(&0) || self.dilation.contains(&0) || kh == 0 || kw == 0 {
            return Err(Error::new(op, format!("invalid depthwise geometry {self:?}")));
        }
        let c = self.channels;
        if x.len() < images * c * ih * iw
            || w.len() < c * kh * kw
            || out.len() < images * c * oh * ow
            || bias.is_some_and(|b| b.len() < c)
        {
            return Err(Error::new(op, "depthwise convolution buffers are too small"));
        }
        Ok(())
    }

    /// Elements of the whole polyphase layout (`sh·sw` sub-planes).
    fn layout_len(&self) -> usize {
        self.stride[0] * self.stride[1] * self.phase_len()
    }

    /// Sub-plane column phase `q`'s in-range columns `lo..hi` (the same for every row) and the
    /// input column of `lo`: sub-plane column `i` is input column `i·sw + q - pl`.
    fn phase_cols(&self, q: usize) -> (usize, usize, usize) {
        let (iw, sw, pl) = (self.input[1], self.stride[1], self.pad[1]);
        let pw = self.phase_dims().1;
        let lo = pl.saturating_sub(q).div_ceil(sw).min(pw);
        let hi = (iw + pl).saturating_sub(q).div_ceil(sw).clamp(lo, pw);
        (lo, hi, (lo * sw + q).saturating_sub(pl))
    }

    /// Copies channel plane `x` (`ih × iw`) into the polyphase layout `dst` (`sh·sw` sub-planes
    /// of [`Depthwise::phase_len`]). Only the input's own elements are written: the padding,
    /// the same places for every channel, is zeroed once per call ([`depthwise`]) and stays
    /// zero. Input rows the taps never read are skipped. Column phase by column phase, so its
    /// columns are worked out once (a division per row and phase was a third of the copy of
    /// short rows).
    fn copy_plane(&self, isa: Isa, x: &[f32], dst: &mut [f32]) {
        let [ih, iw] = self.input;
        let [sh, sw] = self.stride;
        let pt = self.pad[0];
        let (rows, pw) = self.phase_dims();
        let len = self.phase_len();
        if iw == 0 {
            return;
        }
        if sw == 2 {
            // Both column phases of a row in one pass: input column `c` is padded column
            // `c + pl`, so columns 0, 2, 4, … go to phase `pl % 2` and 1, 3, 5, … to the
            // other, each from that phase's first in-range column (`phase_cols`: the first
            // input column of phase `q` is 0 or 1).
            let pl = self.pad[1];
            let cols = [self.phase_cols(0), self.phase_cols(1)];
            let (first, second) = if pl.is_multiple_of(2) { (0, 1) } else { (1, 0) };
            debug_assert!(iw < 2 || (cols[first].2 == 0 && cols[second].2 == 1) || cols.iter().any(|c| c.0 == c.1));
            let (mut p, mut j) = (pt % sh, pt / sh);
            for src in x.chunks_exact(iw).take(ih) {
                if j >= rows {
                    break;
                }
                let at = |q: usize| (p * sw + q) * len + j * pw;
                // The two phases' rows lie in different sub-planes, `len` apart.
                let (lo_half, hi_half) = dst.split_at_mut(at(1));
                let row0 = &mut lo_half[at(0)..][cols[0].0..cols[0].1];
                let row1 = &mut hi_half[cols[1].0..cols[1].1];
                let (a, b) = if first == 0 { (row0, row1) } else { (row1, row0) };
                split_pairs(isa, src, a, b);
                p += 1;
                if p == sh {
                    (p, j) = (0, j + 1);
                }
            }
            return;
        }
        for q in 0..sw {
            let (lo, hi, first) = self.phase_cols(q);
            // Input row `iy` is padded row `iy + pt`: row `j` of sub-plane row-phase `p`.
            let (mut p, mut j) = (pt % sh, pt / sh);
            for src in x.chunks_exact(iw).take(ih) {
                if j >= rows {
                    break;
                }
                let row = &mut dst[(p * sw + q) * len + j * pw..][lo..hi];
                // Past the row's end only when the sub-plane takes no column of it (a stride
                // wider than the input).
                let from = src.get(first..).unwrap_or_default();
                match sw {
                    1 => row.copy_from_slice(&from[..hi - lo]),
                    _ => {
                        for (v, &s) in row.iter_mut().zip(from.iter().step_by(sw)) {
                            *v = s;
                        }
                    }
                }
                p += 1;
                if p == sh {
                    (p, j) = (0, j + 1);
                }
            }
        }
    }
}

/// `a[i] = src[2·i]` and `b[i] = src[2·i + 1]` for every `i` of `a` and of `b`; `src` holds at
/// least `2·a.len() - 1` and `2·b.len()` elements.
fn split_pairs(isa: Isa, src: &[f32], a: &mut [f32], b: &mut [f32]) {
    let (na, nb) = (a.len().min(src.len().div_ceil(2)), b.len().min(src.len() / 2));
    #[allow(unused_mut)]
    let mut i = 0;
    #[cfg(target_arch = "x86_64")]
    if isa >= Isa::Avx2 {
        // SAFETY: the ISA's features are available (`isa` is capped at the thread's by the
        // caller); `src` holds `2·na - 1` and `2·nb` elements, `a` `na` and `b` `nb`.
        i = unsafe { x86::split_pairs(isa == Isa::Avx512, src.as_ptr(), src.len(), a.as_mut_ptr(), na, b.as_mut_ptr(), nb) };
    }
    let _ = isa;
    for (k, v) in a[..na].iter_mut().enumerate().skip(i) {
        *v = src[2 * k];
    }
    for (k, v) in b[..nb].iter_mut().enumerate().skip(i) {
        *v = src[2 * k + 1];
    }
}

/// `out = act(depthwise(x, w) + bias)` for `images` images of `d.channels` channels: `x`
/// `[images, C, ih, iw]`, `w` `[C, 1, kh, kw]`, `bias` `[C]`, `out` `[images, C, oh, ow]`, all
/// contiguous. Runs the path of `isa` (capped at the thread's), fused multiply-adds on AVX2
/// and AVX-512, separate multiplies and adds on the generic path.
#[allow(clippy::too_many_arguments)]
pub fn depthwise(
    op: &'static str,
    isa: Isa,
    d: &Depthwise,
    images: usize,
    x: &[f32],
    w: &[f32],
    bias: Option<&[f32]>,
    act: Activation,
    out: &mut [f32],
) -> Result<()> {
    d.check(op, images, x, w, bias, out)?;
    let [ih, iw] = d.input;
    let [oh, ow] = d.output;
    let [kh, kw] = d.kernel;
    let c = d.channels;
    let units = images * c;
    if units == 0 || oh * ow == 0 {
        return Ok(());
    }
    let isa = isa.min(Isa::current());
    let fmas = units.saturating_mul(oh * ow).saturating_mul(kh * kw);
    let threads = parallel::threads();
    let tasks = if threads > 1 && fmas >= PARALLEL_MIN_FMAS { (threads * TASKS_PER_THREAD).min(units) } else { 1 };
    let dst = parallel::SharedOut(out.as_mut_ptr());
    let offsets = d.tap_offsets();
    let (plane_len, tile_len, width) = (d.layout_len(), d.padded_outputs(), d.tile());
    // Every tile's reads lie inside the plane, which the vector loops rely on.
    if offsets.iter().any(|&o| o + tile_len > plane_len) {
        return Err(Error::new(op, format!("internal error: depthwise taps outside the padded plane for {d:?}")));
    }
    parallel::for_each(tasks, |t| {
        SCRATCH.with_borrow_mut(|buf| {
            if buf.len() < plane_len + tile_len {
                buf.resize(plane_len + tile_len, 0.0);
            }
            let (plane, rest) = buf.split_at_mut(plane_len);
            let tile = &mut rest[..tile_len];
            // The padding: zero for every channel, which writes only its own elements.
            plane.fill(0.0);
            for u in units * t / tasks..units * (t + 1) / tasks {
                let ch = u % c;
                d.copy_plane(isa, &x[u * ih * iw..(u + 1) * ih * iw], plane);
                let taps = &w[ch * kh * kw..(ch + 1) * kh * kw];
                let b = bias.map_or(0.0, |b| b[ch]);
                // SAFETY: `out` holds `units·oh·ow` elements (checked), and each unit's plane
                // is written by the one task that owns the unit.
                let o = unsafe { std::slice::from_raw_parts_mut(dst.get().add(u * oh * ow), oh * ow) };
                match width {
                    16 => channel::<16>(isa, d, plane, &offsets, taps, b, act, tile, o),
                    32 => channel::<32>(isa, d, plane, &offsets, taps, b, act, tile, o),
                    _ => channel::<64>(isa, d, plane, &offsets, taps, b, act, tile, o),
                }
            }
        })
    });
    Ok(())
}

/// Depthwise convolutions with at least this many multiply-adds split their channels across
/// the intra-op team.
const PARALLEL_MIN_FMAS: usize = 1 << 16;

/// Tasks per thread of a split convolution, so that a late thread takes a smaller share.
const TASKS_PER_THREAD: usize = 4;

thread_local! {
    /// The padded plane and output tile of each thread, kept across calls.
    static SCRATCH: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// One channel: the taps over the polyphase `plane`, tile by tile (`T` outputs, [`Depthwise::tile`])
/// into `tile` ([`Depthwise::padded_outputs`] long), then its rows (the first `ow` of every
/// `pw`) activated into `out`. `offsets` holds each tap's offset in the plane
/// ([`Depthwise::tap_offsets`]).
#[allow(clippy::too_many_arguments)]
fn channel<const T: usize>(
    isa: Isa,
    d: &Depthwise,
    plane: &[f32],
    offsets: &[usize],
    taps: &[f32],
    bias: f32,
    act: Activation,
    tile: &mut [f32],
    out: &mut [f32],
) {
    let [oh, ow] = d.output;
    let pw = d.phase_dims().1;
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 | Isa::Avx512 => {
            // SAFETY: the ISA's features are available (`isa` is capped at the thread's);
            // every read is inside `plane` (checked by the caller, `depthwise`), and `taps` has
            // a weight per offset (`kh·kw` of each).
            unsafe {
                if isa == Isa::Avx512 {
                    x86::tiles_avx512::<T>(plane, offsets, taps, bias, act, tile)
                } else {
                    x86::tiles::<T>(plane, offsets, taps, bias, act, tile)
                }
            };
            // The tiles are activated in registers: the rows are only copied out.
            for (y, row) in out.chunks_exact_mut(ow).take(oh).enumerate() {
                row.copy_from_slice(&tile[y * pw..y * pw + ow]);
            }
            return;
        }
        _ => tiles_generic::<T>(plane, offsets, taps, bias, tile),
    }
    compiled_for(
        isa,
        #[inline(always)]
        || {
            for (y, row) in out.chunks_exact_mut(ow).take(oh).enumerate() {
                act.apply_row(&tile[y * pw..y * pw + ow], row);
            }
        },
    )
}

/// The generic path's tiles: separate multiplies and adds, bias first, then the taps in order.
fn tiles_generic<const T: usize>(plane: &[f32], offsets: &[usize], taps: &[f32], bias: f32, tile: &mut [f32]) {
    for (n, chunk) in tile.chunks_exact_mut(T).enumerate() {
        let mut acc = [bias; T];
        for (&off, &wv) in offsets.iter().zip(taps) {
            let src = &plane[off + n * T..off + n * T + T];
            for (a, &x) in acc.iter_mut().zip(src) {
                *a += wv * x;
            }
        }
        chunk.copy_from_slice(&acc);
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use crate::gemm::Activation;

    /// [`super::split_pairs`] with AVX-512F: sixteen pairs at a time from two loads and two
    /// two-source permutes, the last ones under masks. Returns the pairs written (all).
    ///
    /// # Safety
    /// The CPU supports AVX-512F; `src` points to `len ≥ max(2·na - 1, 2·nb)` readable
    /// elements, `a` to `na` writable ones, `b` to `nb`, with `na` and `nb` at most one apart.
    #[target_feature(enable = "avx512f")]
    unsafe fn split_pairs_avx512(src: *const f32, len: usize, a: *mut f32, na: usize, b: *mut f32, nb: usize) -> usize {
        use crate::x86::avx512::mask16 as lanes;
        // SAFETY: AVX-512F is enabled here.
        let [evens, odds] = unsafe { crate::x86::avx512::even_odd_indices() };
        let (n, all) = (na.min(nb), na.max(nb));
        let mut i = 0;
        // SAFETY: sixteen pairs read `src[2·i..2·i + 32]` and write `a[i..i + 16]` and
        // `b[i..i + 16]`, inside while `i + 16 ≤ n`; the masked loads of the rest read only
        // `src[2·i..len]` and its masked stores write only `a[i..na]` and `b[i..nb]`.
        unsafe {
            while i + 16 <= n {
                let (lo, hi) = (_mm512_loadu_ps(src.add(2 * i)), _mm512_loadu_ps(src.add(2 * i + 16)));
                _mm512_storeu_ps(a.add(i), _mm512_permutex2var_ps(lo, evens, hi));
                _mm512_storeu_ps(b.add(i), _mm512_permutex2var_ps(lo, odds, hi));
                i += 16;
            }
            if i < all {
                let left = len - 2 * i;
                let lo = _mm512_maskz_loadu_ps(lanes(left), src.add(2 * i));
                let hi = _mm512_maskz_loadu_ps(lanes(left.saturating_sub(16)), src.wrapping_add(2 * i + 16));
                _mm512_mask_storeu_ps(a.add(i), lanes(na - i), _mm512_permutex2var_ps(lo, evens, hi));
                _mm512_mask_storeu_ps(b.add(i), lanes(nb - i), _mm512_permutex2var_ps(lo, odds, hi));
            }
        }
        all
    }

    /// [`super::split_pairs`] with AVX2: eight pairs at a time from two loads, two shuffles and
    /// two permutes, the last vector overlapping the one before. Returns the pairs written to
    /// both `a` and `b` (`min(na, nb)` when that is at least 8, none otherwise).
    ///
    /// # Safety
    /// As [`split_pairs_avx512`], with AVX2 for AVX-512F.
    #[target_feature(enable = "avx2")]
    unsafe fn split_pairs_avx2(src: *const f32, a: *mut f32, na: usize, b: *mut f32, nb: usize) -> usize {
        let n = na.min(nb);
        if n < 8 {
            return 0;
        }
        // SAFETY: eight pairs from `i ≤ n - 8` read `src[2·i..2·i + 16]` (`2·n ≤ len`) and
        // write `a[i..i + 8]` and `b[i..i + 8]`, inside `na` and `nb`.
        unsafe {
            let pairs = |i: usize| {
                let (lo, hi) = (_mm256_loadu_ps(src.add(2 * i)), _mm256_loadu_ps(src.add(2 * i + 8)));
                let even = _mm256_shuffle_ps::<0b10_00_10_00>(lo, hi);
                let odd = _mm256_shuffle_ps::<0b11_01_11_01>(lo, hi);
                _mm256_storeu_ps(a.add(i), _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(even))));
                _mm256_storeu_ps(b.add(i), _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(odd))));
            };
            let mut i = 0;
            while i + 8 <= n {
                pairs(i);
                i += 8;
            }
            if i < n {
                pairs(n - 8);
            }
        }
        n
    }

    /// [`split_pairs_avx512`] when `wide`, [`split_pairs_avx2`] otherwise.
    ///
    /// # Safety
    /// As [`split_pairs_avx512`] (AVX-512F when `wide`, AVX2 otherwise).
    pub(super) unsafe fn split_pairs(wide: bool, src: *const f32, len: usize, a: *mut f32, na: usize, b: *mut f32, nb: usize) -> usize {
        // SAFETY: forwarded.
        unsafe { if wide { split_pairs_avx512(src, len, a, na, b, nb) } else { split_pairs_avx2(src, a, na, b, nb) } }
    }

    /// [`tiles`] with the tile in `T / 16` AVX-512 registers: the same operations on every
    /// output in the same order, so the same bits.
    ///
    /// # Safety
    /// As [`tiles`], with AVX-512F for AVX2 and FMA.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn tiles_avx512<const T: usize>(plane: &[f32], offsets: &[usize], taps: &[f32], bias: f32, act: Activation, tile: &mut [f32]) {
        const { assert!(T.is_multiple_of(16) && T <= 64) };
        for (n, chunk) in tile.chunks_exact_mut(T).enumerate() {
            let mut acc = [_mm512_set1_ps(bias); 4];
            for (&off, &w) in offsets.iter().zip(taps) {
                // SAFETY: `off + n·T + T ≤ off + tile.len()`, inside the plane (the caller).
                let src = unsafe { plane.as_ptr().add(off + n * T) };
                let wv = _mm512_set1_ps(w);
                for (v, a) in acc.iter_mut().enumerate().take(T / 16) {
                    // SAFETY: as above.
                    *a = _mm512_fmadd_ps(wv, unsafe { _mm512_loadu_ps(src.add(16 * v)) }, *a);
                }
            }
            for (v, a) in acc.iter().enumerate().take(T / 16) {
                // SAFETY: `chunk` holds `T` elements; AVX-512F is enabled here.
                unsafe { _mm512_storeu_ps(chunk.as_mut_ptr().add(16 * v), crate::x86::avx512::act16(*a, act)) };
            }
        }
    }

    /// The tiles of `T` outputs in `T / 8` AVX2 registers, which stay there across all taps:
    /// bias first, then one fused multiply-add per tap in order (the bits of `f32::mul_add`),
    /// then `act` (the bits of [`Activation::apply`]) as they are stored.
    ///
    /// # Safety
    /// The CPU supports AVX2 and FMA; `plane[off + tile.len() - 1]` is in bounds for every
    /// `off` of `offsets`, and `taps` is at least as long as `offsets`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn tiles<const T: usize>(plane: &[f32], offsets: &[usize], taps: &[f32], bias: f32, act: Activation, tile: &mut [f32]) {
        // The accumulators: `T / 8` registers, indexed by constants once unrolled.
        const { assert!(T.is_multiple_of(8) && T <= 64) };
        for (n, chunk) in tile.chunks_exact_mut(T).enumerate() {
            let mut acc = [_mm256_set1_ps(bias); 8];
            for (&off, &w) in offsets.iter().zip(taps) {
                // SAFETY: `off + n·T + T ≤ off + tile.len()`, inside the plane (the caller).
                let src = unsafe { plane.as_ptr().add(off + n * T) };
                let wv = _mm256_set1_ps(w);
                for (v, a) in acc.iter_mut().enumerate().take(T / 8) {
                    // SAFETY: as above.
                    *a = _mm256_fmadd_ps(wv, unsafe { _mm256_loadu_ps(src.add(8 * v)) }, *a);
                }
            }
            for (v, a) in acc.iter().enumerate().take(T / 8) {
                // SAFETY: `chunk` holds `T` elements; AVX2 and FMA are enabled here.
                unsafe { _mm256_storeu_ps(chunk.as_mut_ptr().add(8 * v), crate::x86::avx2::act8(*a, act)) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Gen;

    /// The convolution by definition, in `f64`.
    fn reference(d: &Depthwise, images: usize, x: &[f32], w: &[f32], bias: Option<&[f32]>, act: Activation) -> Vec<f32> {
        let [ih, iw] = d.input;
        let [oh, ow] = d.output;
        let [kh, kw] = d.kernel;
        let mut out = Vec::new();
        for u in 0..images * d.channels {
            let ch = u % d.channels;
            for y in 0..oh {
                for xo in 0..ow {
                    let mut s = bias.map_or(0.0, |b| b[ch] as f64);
                    for a in 0..kh {
                        for b in 0..kw {
                            let iy = (y * d.stride[0] + a * d.dilation[0]) as isize - d.pad[0] as isize;
                            let ix = (xo * d.stride[1] + b * d.dilation[1]) as isize - d.pad[1] as isize;
                            if (0..ih as isize).contains(&iy) && (0..iw as isize).contains(&ix) {
                                s += w[(ch * kh + a) * kw + b] as f64 * x[(u * ih + iy as usize) * iw + ix as usize] as f64;
                            }
                        }
                    }
                    out.push(act.apply(s as f32));
                }
            }
        }
        out
    }

    fn geometry(channels: usize, input: [usize; 2], kernel: [usize; 2], stride: [usize; 2], pad: [usize; 2], dil: [usize; 2]) -> Depthwise {
        let output = std::array::from_fn(|i| (input[i] + 2 * pad[i] - dil[i] * (kernel[i] - 1) - 1) / stride[i] + 1);
        Depthwise { channels, input, output, kernel, stride, pad, dilation: dil }
    }

    #[test]
    fn depthwise_matches_the_definition_on_every_path() {
        let cases = [
            geometry(3, [7, 9], [3, 3], [1, 1], [1, 1], [1, 1]),
            geometry(4, [13, 11], [3, 3], [2, 2], [1, 1], [1, 1]),
            geometry(2, [12, 12], [5, 5], [1, 1], [2, 2], [1, 1]),
            geometry(5, [15, 17], [5, 5], [2, 2], [2, 2], [1, 1]),
            geometry(2, [9, 10], [3, 3], [1, 1], [2, 2], [2, 2]),
            geometry(3, [6, 5], [3, 2], [1, 2], [0, 1], [1, 1]),
            geometry(1, [1, 1], [3, 3], [1, 1], [1, 1], [1, 1]),
            geometry(2, [40, 70], [3, 3], [2, 1], [1, 1], [1, 1]),
            // Rows of stride 2 wide enough for several vectors of even elements, odd and even.
            geometry(2, [9, 53], [3, 3], [2, 2], [1, 1], [1, 1]),
            geometry(2, [5, 101], [3, 3], [2, 2], [1, 1], [1, 1]),
            geometry(1, [4, 96], [3, 3], [2, 2], [0, 0], [1, 1]),
            geometry(2, [4, 1], [1, 1], [2, 2], [0, 0], [1, 1]),
            geometry(2, [5, 3], [3, 3], [2, 2], [3, 3], [1, 1]),
            geometry(1, [7, 40], [7, 7], [2, 2], [3, 3], [1, 1]),
            geometry(2, [6, 48], [5, 5], [1, 2], [2, 2], [1, 1]),
            geometry(2, [8, 8], [3, 3], [2, 2], [1, 1], [1, 1]),
            geometry(3, [10, 12], [3, 3], [2, 2], [0, 0], [1, 1]),
            geometry(2, [9, 13], [4, 4], [2, 2], [0, 0], [1, 1]),
            // Tiles of 16 and of 32.
            geometry(3, [7, 7], [5, 5], [1, 1], [2, 2], [1, 1]),
            geometry(2, [14, 14], [3, 3], [1, 1], [1, 1], [1, 1]),
            // No input columns: every output is the bias over padding.
            geometry(2, [3, 0], [3, 1], [1, 1], [1, 1], [1, 1]),
            // A stride wider than the input: two of the three column phases take no column.
            geometry(2, [4, 1], [1, 1], [1, 3], [0, 0], [1, 1]),
            geometry(2, [5, 2], [2, 2], [3, 3], [1, 1], [1, 1]),
        ];
        let mut rng = Gen(7);
        for d in cases {
            let images = 2;
            let x = rng.vec(images * d.channels * d.input[0] * d.input[1]);
            let w = rng.vec(d.channels * d.kernel[0] * d.kernel[1]);
            let b = rng.vec(d.channels);
            for (bias, act) in [
                (None, Activation::None),
                (Some(&b[..]), Activation::Relu),
                (Some(&b[..]), Activation::Clamp(0.0, 0.5)),
                (Some(&b[..]), Activation::Hardswish),
                (None, Activation::HardswishProductFirst),
            ] {
                let want = reference(&d, images, &x, &w, bias, act);
                let mut bits = None;
                for isa in Isa::supported() {
                    for threads in [1, 2] {
                        let mut out = vec![f32::NAN; want.len()];
                        parallel::with_threads(threads, || depthwise("test", isa, &d, images, &x, &w, bias, act, &mut out)).unwrap();
                        for (i, (g, e)) in out.iter().zip(&want).enumerate() {
                            assert!((g - e).abs() <= 1e-5, "{d:?} {isa:?} output {i}: {g} vs {e}");
                        }
                        // The split does not change the bits; the vector paths agree bit for bit.
                        if isa != Isa::Generic {
                            let b: Vec<u32> = out.iter().map(|v| v.to_bits()).collect();
                            assert_eq!(bits.get_or_insert(b.clone()), &b, "{d:?} {isa:?} threads {threads}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn small_planes_take_narrow_tiles() {
        assert_eq!(geometry(1, [7, 7], [5, 5], [1, 1], [2, 2], [1, 1]).tile(), 16);
        assert_eq!(geometry(1, [14, 14], [3, 3], [1, 1], [1, 1], [1, 1]).tile(), 32);
        assert_eq!(geometry(1, [56, 56], [3, 3], [1, 1], [1, 1], [1, 1]).tile(), 64);
    }

    #[test]
    fn short_buffers_are_errors() {
        let d = geometry(2, [4, 4], [3, 3], [1, 1], [1, 1], [1, 1]);
        let mut out = vec![0.0; 31];
        let e = depthwise("op", Isa::current(), &d, 1, &[0.0; 32], &[0.0; 18], None, Activation::None, &mut out).unwrap_err();
        assert!(e.to_string().contains("too small"), "{e}");
    }
}
