//! Operands laid out in the panels the microkernels stream: a constant right operand in column
//! panels ([`PackedB`]), a constant left operand in row panels ([`PackedA`]), and the left
//! operand a product packs for itself, by the intra-op team together ([`PackA`]).

use std::fmt;

use crate::mat::MatView;
use super::*;

/// `f32` elements starting at a 64-byte boundary (a panel row is then one or two whole
/// cache lines).
pub(crate) struct Aligned {
    pub(crate) data: Vec<f32>,
    pub(crate) start: usize,
    pub(crate) len: usize,
}

/// Grows `buf` (with zeros) to hold `len` elements from a 64-byte boundary, and returns the
/// index that boundary is at: a scratch buffer kept across calls, or a new one.
pub fn aligned_start(buf: &mut Vec<f32>, len: usize) -> usize {
    if buf.len() < len + 16 {
        buf.resize(len + 16, 0.0);
    }
    buf.as_ptr().align_offset(64).min(15)
}

impl Aligned {
    pub(crate) fn zeros(op: &'static str, len: usize) -> Result<Aligned> {
        let total = len.checked_add(16).ok_or_else(|| Error::new(op, "packed matrix is too large"))?;
        let mut data = vec![0.0f32; total];
        let start = aligned_start(&mut data, len);
        Ok(Aligned { data, start, len })
    }
    pub(crate) fn slice(&self) -> &[f32] {
        &self.data[self.start..self.start + self.len]
    }
    pub(crate) fn slice_mut(&mut self) -> &mut [f32] {
        &mut self.data[self.start..self.start + self.len]
    }
}

pub(crate) fn checked_len(op: &'static str, dims: &[usize]) -> Result<usize> {
    dims.iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| Error::new(op, "packed matrix is too large"))
}

/// `v` (`k × n`) in column panels of width `w`: panel after panel, each `k` rows of `w`
/// values, the last panel's missing columns zero.
pub(crate) fn pack_panels(op: &'static str, v: MatView<'_, f32>, w: usize) -> Result<Aligned> {
    let mut buf = Aligned::zeros(op, checked_len(op, &[v.cols.div_ceil(w), v.rows, w])?)?;
    pack_into(v, w, buf.slice_mut());
    Ok(buf)
}

/// Writes `v` (`k × n`) in column panels of width `w` to `dst` (`ceil(n/w)·k·w` elements),
/// the last panel's missing columns zero. Whole rows of contiguous columns are copied as
/// fixed-size blocks for the panel widths of the vector paths: the tile walk copies slices of
/// operands read in place this way on every call ([`super::drive`]).
pub(crate) fn pack_into(v: MatView<'_, f32>, w: usize, dst: &mut [f32]) {
    let (k, n) = (v.rows, v.cols);
    for jp in 0..n.div_ceil(w) {
        let j0 = jp * w;
        let width = w.min(n - j0);
        let panel = &mut dst[jp * k * w..(jp + 1) * k * w];
        let at = |p: usize| v.off + p * v.rs + j0 * v.cs;
        match (w, v.cs == 1 && width == w) {
            (16, true) => copy_rows::<16>(v.data, at, panel),
            (32, true) => copy_rows::<32>(v.data, at, panel),
            _ => {
                for (p, row) in panel.chunks_exact_mut(w).enumerate() {
                    let src = at(p);
                    for (j, d) in row[..width].iter_mut().enumerate() {
                        *d = v.data[src + j * v.cs];
                    }
                    row[width..].fill(0.0);
                }
            }
        }
    }
}

/// The rows of one panel of [`pack_into`], each `N` contiguous elements of `data` from
/// `at(p)`.
#[inline(always)]
fn copy_rows<const N: usize>(data: &[f32], at: impl Fn(usize) -> usize, panel: &mut [f32]) {
    for (p, row) in panel.chunks_exact_mut(N).enumerate() {
        row.copy_from_slice(&data[at(p)..at(p) + N]);
    }
}

/// A constant `k × n` right operand in column panels of `isa.nr()`.
pub struct PackedB {
    pub(crate) isa: Isa,
    pub(crate) k: usize,
    pub(crate) n: usize,
    pub(crate) buf: Aligned,
}

impl fmt::Debug for PackedB {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PackedB({}x{}, {:?})", self.k, self.n, self.isa)
    }
}

impl PackedB {
    /// Packs `b` for the `isa` path.
    pub fn pack(op: &'static str, isa: Isa, b: MatView<'_, f32>) -> Result<PackedB> {
        check_isa(op, isa)?;
        let (k, n) = (b.rows, b.cols);
        let buf = pack_panels(op, b, isa.nr())?;
        Ok(PackedB { isa, k, n, buf })
    }

    pub fn cols(&self) -> usize {
        self.n
    }

    /// The packed panels with `k`, `n` and the panel width: panel `jp` holds columns
    /// `jp·width..` as `k` rows of `width` values from `jp·k·width` on (zero past column `n`).
    pub fn panels(&self) -> (&[f32], usize, usize, usize) {
        (self.buf.slice(), self.k, self.n, self.isa.nr())
    }
}

/// A constant `m × k` left operand in row panels of `mr ≤ isa.mr()` rows (see [`block_rows`]).
pub struct PackedA {
    pub(crate) isa: Isa,
    pub(crate) m: usize,
    pub(crate) k: usize,
    pub(crate) mr: usize,
    pub(crate) buf: Aligned,
}

impl fmt::Debug for PackedA {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PackedA({}x{}, {:?})", self.m, self.k, self.isa)
    }
}

impl PackedA {
    /// Packs `a` for the `isa` path.
    pub fn pack(op: &'static str, isa: Isa, a: MatView<'_, f32>) -> Result<PackedA> {
        check_isa(op, isa)?;
        let (m, k) = (a.rows, a.cols);
        let mr = block_rows(m, isa.mr());
        // Row panels of `a` are the column panels of its transpose.
        let buf = pack_panels(op, a.t(), mr)?;
        Ok(PackedA { isa, m, k, mr, buf })
    }

    pub fn rows(&self) -> usize {
        self.m
    }

    pub fn cols(&self) -> usize {
        self.k
    }
}

impl PackedA {
    /// The instruction-set path the matrix is packed for (its panel widths).
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// How many of `panels` column panels a caller that packs `B` panel by panel (a
    /// convolution's column matrix) should pack before multiplying them in one call: one when
    /// this matrix stays in L2 while a panel passes over it, otherwise as many as let the
    /// product read it once for the group instead of once a panel (see `drive_panels`).
    pub fn panel_group(&self, panels: usize) -> usize {
        super::drive::panel_group(self.m, self.k, self.isa.nr(), panels)
    }
}

/// Writes rows `ib·mr..` of `a` (up to `mr` of them) as one row panel laid out as
/// [`PackedA`]'s to `panel` (`mr·cols` elements, zero past the last row). With AVX-512 each
/// column of a panel is one gather, about twice as fast as copying element by element (a
/// `64 × 512` operand: 13 → 6 µs).
pub(crate) fn pack_row_block(isa: Isa, a: MatView<'_, f32>, mr: usize, ib: usize, panel: &mut [f32]) {
    let rows = mr.min(a.rows - ib * mr);
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx512
        && a.cols > 0
        && mr <= 16
        && panel.len() >= mr * a.cols
        && (mr - 1).checked_mul(a.rs).is_some_and(|span| span <= i32::MAX as usize)
    {
        // SAFETY: rows `ib·mr..ib·mr + rows ≤ a.rows` and columns `0..cols` of `a` lie inside
        // its storage (`MatView::new` checked it); the panel holds `mr·cols` elements (checked);
        // the row offsets `i·rs` (`i < rows ≤ mr`) fit an `i32`; `isa` is available (the
        // packed `B` of this product was packed for it).
        unsafe {
            let src = a.data.as_ptr().add(a.off + ib * mr * a.rs);
            crate::x86::avx512::pack_panel_avx512(src, a.rs, a.cs, rows, a.cols, mr, panel.as_mut_ptr())
        };
        return;
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = isa;
    pack_into(MatView { off: a.off + ib * mr * a.rs, rows, ..a }.t(), mr, panel);
}

/// A left operand to pack into row panels (of [`PackedA`]'s layout) before its product
/// runs. A product split across the intra-op team packs it there too: every task first claims
/// row panels from a shared counter and packs them, then waits until all are packed, so the
/// threads share the packing instead of the caller packing alone while the others wait. A
/// panel is claimed once and packed by a thread that waits for nothing meanwhile, so the
/// wait always ends; which thread packs a panel does not change its contents.
pub(crate) struct PackA<'a> {
    pub(crate) isa: Isa,
    pub(crate) src: MatView<'a, f32>,
    pub(crate) mr: usize,
    pub(crate) dst: *mut f32,
    pub(crate) blocks: usize,
    /// The next unclaimed row panel.
    pub(crate) next: std::sync::atomic::AtomicUsize,
    /// Row panels packed (or abandoned by a panic, so no thread waits forever).
    pub(crate) done: std::sync::atomic::AtomicUsize,
    pub(crate) _dst: std::marker::PhantomData<&'a mut [f32]>,
}

// SAFETY: the threads write disjoint row panels of `dst` (each claimed once from `next`), and
// read `dst` only after `done` (released by every writer) says all are written.
unsafe impl Sync for PackA<'_> {}

impl<'a> PackA<'a> {
    /// `src` to pack into `dst` (`ceil(rows/mr)·mr·cols` elements; only the whole panels that
    /// `dst` holds are packed).
    pub(crate) fn new(isa: Isa, src: MatView<'a, f32>, mr: usize, dst: &'a mut [f32]) -> PackA<'a> {
        let len = mr * src.cols;
        debug_assert!(len > 0 && dst.len() >= src.rows.div_ceil(mr) * len);
        PackA {
            isa,
            src,
            mr,
            dst: dst.as_mut_ptr(),
            blocks: dst.len().checked_div(len).map_or(0, |fit| src.rows.div_ceil(mr).min(fit)),
            next: std::sync::atomic::AtomicUsize::new(0),
            done: std::sync::atomic::AtomicUsize::new(0),
            _dst: std::marker::PhantomData,
        }
    }

    /// Where the packed panels start (valid once [`PackA::claim`] or [`PackA::share`] returned on
    /// the thread that reads them).
    pub(crate) fn packed(&self) -> *const f32 {
        self.dst
    }

    /// Claims and packs row panels until none is left unclaimed (alone, all of them).
    pub(crate) fn claim(&self) {
        use std::sync::atomic::Ordering;
        /// Counts its panel as done when dropped, even when packing unwinds.
        struct Done<'p>(&'p std::sync::atomic::AtomicUsize);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::Release);
            }
        }
        let len = self.mr * self.src.cols;
        loop {
            let ib = self.next.fetch_add(1, Ordering::Relaxed);
            if ib >= self.blocks {
                return;
            }
            let _done = Done(&self.done);
            // SAFETY: panel `ib < blocks` lies inside `dst` (`new` counts only whole panels that
            // fit) and is written by this thread alone: `ib` was claimed once.
            let panel = unsafe { std::slice::from_raw_parts_mut(self.dst.add(ib * len), len) };
            pack_row_block(self.isa, self.src, self.mr, ib, panel);
        }
    }

    /// Packs a share of the panels, then waits until the others' are packed too.
    pub(crate) fn share(&self) {
        use std::sync::atomic::Ordering;
        self.claim();
        let mut spins = 0u32;
        while self.done.load(Ordering::Acquire) < self.blocks {
            spins += 1;
            if spins < 1 << 16 {
                std::hint::spin_loop();
            } else {
                // The thread packing the last panel was preempted: let it run.
                std::thread::yield_now();
            }
        }
    }
}

/// The rows per block and per band of a left operand of `m × k` packed per call: bands are
/// multiples of the block whose packed panels fit [`A_PACK_MAX`].
pub(crate) fn band_rows(isa: Isa, m: usize, k: usize) -> (usize, usize) {
    let most = (A_PACK_MAX / k).max(1);
    let mr = block_rows(m.min(most), isa.mr());
    (mr, (most / mr).max(1) * mr)
}
