//! Prepacked `f32` GEMM: matrix products with one operand fixed at compile time (the weight
//! of `mm`/`addmm`, the filter of a convolution), packed once into the panel layout the
//! microkernel streams, so a call packs nothing (Static Runtime's and fbgemm's prepacked
//! linear and convolution weights).
//!
//! The microkernel computes an `MR × NR` tile of `C` as a sum over `p` of a broadcast element
//! of `A` times a row vector of `B`: `A` is read element by element, from a packed row panel
//! (tiles of up to 14 rows with AVX-512) or in place at any strides (up to 8), `B` a row of
//! `NR` contiguous elements at a time. The rows of a product are split into blocks of even
//! height ([`block_rows`]). The two drivers differ only in which operand is packed:
//!
//! - [`PackedB`] (a constant right operand, the weight of a linear layer): `B` split into
//!   column panels of `NR`, each panel stored row after row (`k × NR`, zero-padded), so a
//!   tile streams one contiguous panel, and prefetches its share of the slice read after
//!   its own; `A` (the activations) is read in place, or, when `B` has many panels, packed
//!   per call into the row panels of [`PackedA`] (see [`PACK_A_MIN_PANELS`]).
//! - [`PackedA`] (a constant left operand, a convolution's weight matrix): `A` split into
//!   row panels of `mr ≤ MR` rows, each stored column after column (`k × mr`, zero-padded),
//!   so the broadcasts read consecutive elements; `B` (the im2col matrix or the input itself) is
//!   read in place, its last partial panel with masked loads.
//!
//! Tiles are computed panel by panel of `B` and, within a panel, over `k` in blocks of [`KC`]
//! (the `KC × NR` slice of `B` stays in L1 while every row block of `A` passes over it, and a
//! packed `B` is read front to back in one stream); the first block applies the epilogue
//! (`alpha`, the bias of `addmm`/`linear`/convolution, `beta·C`), later blocks add to `C`.
//! The order of every sum is fixed by the shapes alone, so results are the same bits on every
//! run and on every thread. Kernels exist for AVX-512F (`NR` = 32) and AVX2+FMA (`NR` = 16),
//! chosen at run time; on other CPUs nothing is packed and products go through the
//! general GEMM (`matrixmultiply`).

use std::fmt;

pub(crate) use ::kernels::Isa;

use super::linalg::MatView;
use crate::tensor::{KernelError, Result};

/// Most rows of a tile on any path.
const MAX_MR: usize = 14;
/// Depth of a block of `k`: one `KC × NR` slice of a `B` panel is 32 KiB with AVX-512, which
/// with a packed row block of `A` (at most `14 × KC`, 14 KiB) fits the 48 KiB L1, so the slice
/// stays there while the row blocks of `A` stream past it. Deeper blocks also halve the passes
/// that add a block's sums to `C` (`benches/gemm.rs`: 128 → 256 ran the LSTM product ≈ 5 %
/// faster).
pub(crate) const KC: usize = 256;

/// The microkernel's tile sizes on each instruction-set path. The generic path has no
/// microkernel (nothing is packed for it: [`PackedB::pack`] and [`PackedA::pack`] refuse it);
/// its sizes are AVX2's, so a layout computed for it is still a valid one.
pub(crate) trait Tiles {
    fn mr(self) -> usize;
    fn mr_in_place(self) -> usize;
    fn nr(self) -> usize;
}

impl Tiles for Isa {
    /// Most rows of a tile that reads a packed `A` (and of a [`PackedA`] panel): the
    /// accumulators (`MR × 2` vectors), the two vectors of `B` and a broadcast fill the vector
    /// registers (31 of 32 with AVX-512, 15 of 16 with AVX2). Each step of `k` loads the two
    /// vectors of `B` and `MR` broadcasts for `2·MR` multiply-adds; the loads are what keeps
    /// the FMA units from their peak, so the tallest tile that fits is the fastest.
    fn mr(self) -> usize {
        match self {
            Isa::Avx512 => 14,
            Isa::Avx2 | Isa::Generic => 6,
        }
    }

    /// Most rows of a tile that reads `A` in place: it keeps one pointer per row in a general
    /// register, so the tile is shorter than [`Tiles::mr`] where that would run out of them.
    fn mr_in_place(self) -> usize {
        match self {
            Isa::Avx512 => 8,
            Isa::Avx2 | Isa::Generic => 6,
        }
    }

    /// Columns of a tile (and of a [`PackedB`] panel).
    fn nr(self) -> usize {
        match self {
            Isa::Avx512 => 32,
            Isa::Avx2 | Isa::Generic => 16,
        }
    }
}

/// `f32` elements starting at a 64-byte boundary (a panel row is then one or two whole
/// cache lines).
struct Aligned {
    data: Vec<f32>,
    start: usize,
    len: usize,
}

/// Grows `buf` (with zeros) to hold `len` elements from a 64-byte boundary, and returns the
/// index that boundary is at: a scratch buffer kept across calls, or a new one.
pub(crate) fn aligned_start(buf: &mut Vec<f32>, len: usize) -> usize {
    if buf.len() < len + 16 {
        buf.resize(len + 16, 0.0);
    }
    buf.as_ptr().align_offset(64).min(15)
}

impl Aligned {
    fn zeros(op: &'static str, len: usize) -> Result<Aligned> {
        let total = len.checked_add(16).ok_or_else(|| KernelError::new(op, "packed matrix is too large"))?;
        let mut data = vec![0.0f32; total];
        let start = aligned_start(&mut data, len);
        Ok(Aligned { data, start, len })
    }
    fn slice(&self) -> &[f32] {
        &self.data[self.start..self.start + self.len]
    }
    fn slice_mut(&mut self) -> &mut [f32] {
        &mut self.data[self.start..self.start + self.len]
    }
}

/// Rows per block when `m` rows are split into blocks of at most `max`: as even as possible,
/// so that no block is much shorter than the others (64 rows run as 13, 13, 13, 13 and 12
/// rather than four blocks of 14 and one of 8, whose tile would waste most of its loads).
fn block_rows(m: usize, max: usize) -> usize {
    if m == 0 { max } else { m.div_ceil(m.div_ceil(max)) }
}

fn checked_len(op: &'static str, dims: &[usize]) -> Result<usize> {
    dims.iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| KernelError::new(op, "packed matrix is too large"))
}

/// `v` (`k × n`) in column panels of width `w`: panel after panel, each `k` rows of `w`
/// values, the last panel's missing columns zero.
fn pack_panels(op: &'static str, v: MatView<'_, f32>, w: usize) -> Result<Aligned> {
    let mut buf = Aligned::zeros(op, checked_len(op, &[v.cols.div_ceil(w), v.rows, w])?)?;
    pack_into(v, w, buf.slice_mut());
    Ok(buf)
}

/// Writes `v` (`k × n`) in column panels of width `w` to `dst` (`ceil(n/w)·k·w` elements),
/// the last panel's missing columns zero.
fn pack_into(v: MatView<'_, f32>, w: usize, dst: &mut [f32]) {
    let (k, n) = (v.rows, v.cols);
    for jp in 0..n.div_ceil(w) {
        let j0 = jp * w;
        let width = w.min(n - j0);
        let panel = &mut dst[jp * k * w..(jp + 1) * k * w];
        for (p, row) in panel.chunks_exact_mut(w).enumerate() {
            let src = v.off + p * v.rs + j0 * v.cs;
            for (j, d) in row[..width].iter_mut().enumerate() {
                *d = v.data[src + j * v.cs];
            }
            row[width..].fill(0.0);
        }
    }
}

/// A constant `k × n` right operand in column panels of `isa.nr()`.
pub(crate) struct PackedB {
    isa: Isa,
    k: usize,
    n: usize,
    buf: Aligned,
}

impl fmt::Debug for PackedB {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PackedB({}x{}, {:?})", self.k, self.n, self.isa)
    }
}

impl PackedB {
    /// Packs `b` for the `isa` path.
    pub(crate) fn pack(op: &'static str, isa: Isa, b: MatView<'_, f32>) -> Result<PackedB> {
        check_isa(op, isa)?;
        let (k, n) = (b.rows, b.cols);
        let buf = pack_panels(op, b, isa.nr())?;
        Ok(PackedB { isa, k, n, buf })
    }

    pub(crate) fn cols(&self) -> usize {
        self.n
    }

    /// The packed panels with `k`, `n` and the panel width: panel `jp` holds columns
    /// `jp·width..` as `k` rows of `width` values from `jp·k·width` on (zero past column `n`).
    pub(crate) fn panels(&self) -> (&[f32], usize, usize, usize) {
        (self.buf.slice(), self.k, self.n, self.isa.nr())
    }
}

/// Refuses a path this thread may not run, and the generic path, which has no microkernel:
/// every packed operand and every product is for a path whose microkernels the CPU runs.
fn check_isa(op: &'static str, isa: Isa) -> Result<()> {
    if isa == Isa::Generic || !isa.available() {
        return Err(KernelError::new(op, format!("internal error: the packed GEMM has no {isa} path here")));
    }
    Ok(())
}

/// A constant `m × k` left operand in row panels of `mr ≤ isa.mr()` rows (see [`block_rows`]).
pub(crate) struct PackedA {
    isa: Isa,
    m: usize,
    k: usize,
    mr: usize,
    buf: Aligned,
}

impl fmt::Debug for PackedA {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PackedA({}x{}, {:?})", self.m, self.k, self.isa)
    }
}

impl PackedA {
    /// Packs `a` for the `isa` path.
    pub(crate) fn pack(op: &'static str, isa: Isa, a: MatView<'_, f32>) -> Result<PackedA> {
        check_isa(op, isa)?;
        let (m, k) = (a.rows, a.cols);
        let mr = block_rows(m, isa.mr());
        // Row panels of `a` are the column panels of its transpose.
        let buf = pack_panels(op, a.t(), mr)?;
        Ok(PackedA { isa, m, k, mr, buf })
    }

    pub(crate) fn rows(&self) -> usize {
        self.m
    }

    pub(crate) fn cols(&self) -> usize {
        self.k
    }
}

/// A bias added to every product.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Bias<'a> {
    None,
    /// `bias[j]` added to column `j` (a linear layer's bias; `n` elements).
    PerColumn(&'a [f32]),
    /// `bias[i]` added to row `i` (a convolution's per-channel bias; `m` elements).
    PerRow(&'a [f32]),
}

/// What a product does with its sums: `C = alpha·A·B + bias_scale·bias + beta·C`. With
/// `beta == 0`, `C` is not read (NaNs in it do not propagate).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Epilogue<'a> {
    pub alpha: f32,
    pub beta: f32,
    pub bias: Bias<'a>,
    pub bias_scale: f32,
}

impl Epilogue<'_> {
    /// `C = A·B`.
    pub(crate) const PLAIN: Epilogue<'static> = Epilogue { alpha: 1.0, beta: 0.0, bias: Bias::None, bias_scale: 1.0 };
}

/// An elementwise function applied to a product's results once every sum is complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Activation {
    None,
    /// The exact GELU, with the interpreter's bits (`fastmath::gelu_erf_f32`).
    Gelu,
    /// `relu`, with the interpreter's bits: `x` when `x > 0` or NaN, `+0` otherwise.
    Relu,
}

/// A matrix added to a product's results (a residual connection): element `(i, j)` at
/// `data[i·ld + j]`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Addend<'a> {
    pub data: &'a [f32],
    pub ld: usize,
    /// Whether the addend is the left operand of the sum (`r + v` rather than `v + r`: the
    /// same number, but NaN payloads propagate from the left operand).
    pub first: bool,
}

/// What a product does with each result `v` of its [`Epilogue`] once the sum over all of `k`
/// is complete: `act(v + addend)`, the addend and activation each optional. Applied to a tile
/// while it is in registers, so a residual add or an activation after a linear layer costs no
/// pass over the result; the operations are those of the separate ops, in their order, so the
/// bits are theirs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Post<'a> {
    pub addend: Option<Addend<'a>>,
    pub act: Activation,
}

impl Post<'_> {
    /// Nothing after the epilogue.
    pub(crate) const NONE: Post<'static> = Post { addend: None, act: Activation::None };

    /// The post-ops of one element: `v` is the epilogue's result at row `i`, column `j`.
    #[inline(always)]
    pub(crate) fn apply(&self, i: usize, j: usize, v: f32) -> f32 {
        let v = match self.addend {
            Some(r) if r.first => r.data[i * r.ld + j] + v,
            Some(r) => v + r.data[i * r.ld + j],
            None => v,
        };
        match self.act {
            Activation::None => v,
            Activation::Gelu => super::fastmath::gelu_erf_f32(v),
            Activation::Relu => {
                if v > 0.0 || v.is_nan() {
                    v
                } else {
                    0.0
                }
            }
        }
    }

    /// Applies the post-ops to the `m × n` results in `c` (rows `ldc` apart), after a product
    /// that did not (a single row's matrix-vector product).
    pub(crate) fn apply_to(&self, op: &'static str, m: usize, n: usize, c: &mut [f32], ldc: usize) -> Result<()> {
        if self.addend.is_none() && self.act == Activation::None {
            return Ok(());
        }
        check_addend(op, m, n, self)?;
        if m > 0 && n > 0 && (ldc < n || (m - 1).checked_mul(ldc).and_then(|x| x.checked_add(n)).is_none_or(|l| l > c.len())) {
            return Err(KernelError::new(op, "output buffer is too small"));
        }
        if m == 0 || n == 0 {
            return Ok(());
        }
        if let Some(isa) = Isa::simd() {
            // Strips of a tile's width, through the tiles' own vector post-ops.
            for j0 in (0..n).step_by(isa.nr()) {
                let p = self.tile(c[j0..].as_mut_ptr(), ldc, 0, j0, isa.nr().min(n - j0));
                // SAFETY: `c` holds `m` rows of `n` elements `ldc` apart (checked above), the
                // addend as many `add_ld` apart (`check_addend`), and the strip's columns are
                // within `n`; `isa` was detected on this CPU.
                unsafe { post_tile(isa, m, &p) };
            }
            return Ok(());
        }
        for i in 0..m {
            for (j, x) in c[i * ldc..i * ldc + n].iter_mut().enumerate() {
                *x = self.apply(i, j, *x);
            }
        }
        Ok(())
    }

    /// The post-ops of the tile of `cols` columns from row `i0`, column `j0` of the result,
    /// stored at `c` (its rows `ldc` apart).
    fn tile(&self, c: *mut f32, ldc: usize, i0: usize, j0: usize, cols: usize) -> PostTile {
        let (addend, add_ld, add_first) = match self.addend {
            Some(r) => (r.data.as_ptr().wrapping_add(i0 * r.ld + j0), r.ld, r.first),
            None => (std::ptr::null(), 0, false),
        };
        PostTile { cols, c, ldc, addend, add_ld, add_first, act: self.act }
    }

    /// Rows `i..` of the same post-ops.
    fn rows_from(&self, i: usize) -> Post<'_> {
        let addend = self.addend.map(|r| Addend { data: &r.data[(i * r.ld).min(r.data.len())..], ..r });
        Post { addend, act: self.act }
    }
}

/// The operands of one product in the microkernel's terms. Row block `ib` of `A` (rows
/// `ib·mr..`) starts at `a + ib·a_blk`, its rows `rsa` apart and its columns `csa` apart;
/// column panel `jp` of `B` starts at `b + jp·b_pnl`, its rows `rsb` apart and its columns
/// contiguous.
#[derive(Clone, Copy)]
struct Raw {
    m: usize,
    n: usize,
    k: usize,
    /// Rows per block of `A` (the last block may have fewer).
    mr: usize,
    /// Whether `A` is in row panels of `mr` (`rsa == 1`, `csa == mr`), which the tiles read
    /// with one pointer; otherwise they keep one pointer per row.
    a_packed: bool,
    a: *const f32,
    a_blk: usize,
    rsa: usize,
    csa: usize,
    b: *const f32,
    b_pnl: usize,
    rsb: usize,
    /// Whether `B` is read in place, so its last, partial panel must be loaded with masks (a
    /// [`PackedB`] is padded, and its panels lie one after the other, which is what lets a
    /// tile prefetch the slice read next).
    b_tail_masked: bool,
}

/// Products with a prepacked `B` of at least this many column panels pack `A` first, into
/// the row panels [`PackedA`] uses. Every panel of `B` reads all of `A`; read in place, the
/// rows of a row block are the row stride apart, which for the power-of-two widths of neural
/// networks puts them in a few cache sets, so `A` falls out of L1 between panels. Packing
/// costs about one panel's multiply-adds, and measured on the products of the benchmark
/// programs (`benches/gemm.rs`) it paid from 24 panels on (`64 × 512 · 512 × 2048`: 64 panels,
/// −5 %; `128 × 256 · 256 × 768`: 24 panels, −2 %; `· 256 × 1024`: 32 panels, −3 %) and
/// lost below (8 panels, `· 256 × 256` and `128 × 1024 · 1024 × 256`: +10 % and +6 %).
const PACK_A_MIN_PANELS: usize = 16;

/// Most elements of `A` packed at once (4 MiB): larger left operands are packed and
/// multiplied a band of rows at a time.
const A_PACK_MAX: usize = 1 << 20;

thread_local! {
    /// The packed left operand of [`gemm_packed_b`], kept per thread across calls. It is taken
    /// out while a product runs, so a product started on the same thread meanwhile (a rayon
    /// worker stealing work) finds it empty and allocates its own.
    static A_SCRATCH: std::cell::Cell<Vec<f32>> = const { std::cell::Cell::new(Vec::new()) };
}

/// `C[m×n]` (rows `ldc` apart) `= alpha·A·B + bias + beta·C`, with `B` prepacked.
pub(crate) fn gemm_packed_b(
    op: &'static str,
    a: MatView<'_, f32>,
    b: &PackedB,
    ep: &Epilogue<'_>,
    c: &mut [f32],
    ldc: usize,
) -> Result<()> {
    gemm_packed_b_post(op, a, b, ep, &Post::NONE, c, ldc)
}

/// [`gemm_packed_b`] followed by `post` on every result, applied tile by tile.
pub(crate) fn gemm_packed_b_post(
    op: &'static str,
    a: MatView<'_, f32>,
    b: &PackedB,
    ep: &Epilogue<'_>,
    post: &Post<'_>,
    c: &mut [f32],
    ldc: usize,
) -> Result<()> {
    if a.cols != b.k {
        return Err(KernelError::new(op, format!("cannot multiply {}x{} and {}x{} matrices", a.rows, a.cols, b.k, b.n)));
    }
    let (m, n, k) = (a.rows, b.n, b.k);
    check_addend(op, m, n, post)?;
    if settled_post(op, (m, n, k), ep, post, c, ldc)? {
        return Ok(());
    }
    let nr = b.isa.nr();
    let raw = |m: usize, mr: usize, a_packed: bool, a: *const f32, a_blk: usize, rs: usize, cs: usize| Raw {
        m,
        n,
        k,
        mr,
        a_packed,
        a,
        a_blk,
        rsa: rs,
        csa: cs,
        b: b.buf.slice().as_ptr(),
        b_pnl: k * nr,
        rsb: nr,
        b_tail_masked: false,
    };
    if n.div_ceil(nr) < PACK_A_MIN_PANELS {
        let mr = block_rows(m, b.isa.mr_in_place());
        // SAFETY: `MatView::new` checked that every element of `a` lies inside its storage.
        let a_ptr = unsafe { a.data.as_ptr().add(a.off) };
        // SAFETY: the packed panels hold `ceil(n/nr)·k·nr` elements; `A`'s block `ib` row `i`
        // column `p` is `a + (ib·mr + i)·rs + p·cs` with `ib·mr + i < m` and `p < k`, inside
        // its storage; `c` was checked to hold `m` rows of `ldc ≥ n` elements; `b.isa` was
        // available when the matrix was packed.
        unsafe { drive(b.isa, &raw(m, mr, false, a_ptr, mr * a.rs, a.rs, a.cs), None, ep, post, c.as_mut_ptr(), ldc) };
        return Ok(());
    }
    let (mr, band) = band_rows(b.isa, m, k);
    let mut scratch = A_SCRATCH.take();
    let start = aligned_start(&mut scratch, band.min(m.div_ceil(mr) * mr) * k);
    let mut r0 = 0;
    while r0 < m {
        let rows = band.min(m - r0);
        let packed = &mut scratch[start..start + rows.div_ceil(mr) * mr * k];
        let pack = PackA::new(b.isa, MatView { off: a.off + r0 * a.rs, rows, ..a }, mr, packed);
        let bias = match ep.bias {
            Bias::PerRow(x) => Bias::PerRow(&x[r0..]),
            other => other,
        };
        let (band_raw, band_ep) = (raw(rows, mr, true, pack.packed(), mr * k, 1, mr), Epilogue { bias, ..*ep });
        let band_post = post.rows_from(r0);
        // SAFETY: as above, with `A`'s rows `r0..r0 + rows` packed (by `drive`, before any tile
        // reads them) in row panels of `mr` (`ceil(rows/mr)·mr·k` elements), row `i` column `p`
        // of block `ib` at `ib·mr·k + p·mr + i`, and `C` and a per-row bias from row `r0 < m`.
        unsafe { drive(b.isa, &band_raw, Some(&pack), &band_ep, &band_post, c.as_mut_ptr().add(r0 * ldc), ldc) };
        r0 += rows;
    }
    A_SCRATCH.set(scratch);
    Ok(())
}

/// Writes rows `ib·mr..` of `a` (up to `mr` of them) as one row panel laid out as
/// [`PackedA`]'s to `panel` (`mr·cols` elements, zero past the last row). With AVX-512 each
/// column of a panel is one gather, about twice as fast as copying element by element (a
/// `64 × 512` operand: 13 → 6 µs).
fn pack_row_block(isa: Isa, a: MatView<'_, f32>, mr: usize, ib: usize, panel: &mut [f32]) {
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
            x86::pack_panel_avx512(src, a.rs, a.cs, rows, a.cols, mr, panel.as_mut_ptr())
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
struct PackA<'a> {
    isa: Isa,
    src: MatView<'a, f32>,
    mr: usize,
    dst: *mut f32,
    blocks: usize,
    /// The next unclaimed row panel.
    next: std::sync::atomic::AtomicUsize,
    /// Row panels packed (or abandoned by a panic, so no thread waits forever).
    done: std::sync::atomic::AtomicUsize,
    _dst: std::marker::PhantomData<&'a mut [f32]>,
}

// SAFETY: the threads write disjoint row panels of `dst` (each claimed once from `next`), and
// read `dst` only after `done` (released by every writer) says all are written.
unsafe impl Sync for PackA<'_> {}

impl<'a> PackA<'a> {
    /// `src` to pack into `dst` (`ceil(rows/mr)·mr·cols` elements; only the whole panels that
    /// `dst` holds are packed).
    fn new(isa: Isa, src: MatView<'a, f32>, mr: usize, dst: &'a mut [f32]) -> PackA<'a> {
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
    fn packed(&self) -> *const f32 {
        self.dst
    }

    /// Claims and packs row panels until none is left unclaimed (alone, all of them).
    fn claim(&self) {
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
    fn share(&self) {
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
fn band_rows(isa: Isa, m: usize, k: usize) -> (usize, usize) {
    let most = (A_PACK_MAX / k).max(1);
    let mr = block_rows(m.min(most), isa.mr());
    (mr, (most / mr).max(1) * mr)
}

/// `C[m×n]` (rows `ldc` apart) `= alpha·A·B + bias + beta·C`, with `A` prepacked; `B` must
/// have unit column stride.
pub(crate) fn gemm_packed_a(
    op: &'static str,
    a: &PackedA,
    b: MatView<'_, f32>,
    ep: &Epilogue<'_>,
    c: &mut [f32],
    ldc: usize,
) -> Result<()> {
    if b.rows != a.k {
        return Err(KernelError::new(op, format!("cannot multiply {}x{} and {}x{} matrices", a.m, a.k, b.rows, b.cols)));
    }
    if b.cs != 1 && b.cols > 1 {
        return Err(KernelError::new(op, "internal error: the right operand of a prepacked product needs unit column stride"));
    }
    let (m, n, k) = (a.m, b.cols, a.k);
    if settled(op, (m, n, k), ep, c, ldc)? {
        return Ok(());
    }
    let nr = a.isa.nr();
    // SAFETY: `MatView::new` checked that every element of `b` lies inside its storage.
    let b_ptr = unsafe { b.data.as_ptr().add(b.off) };
    let raw = Raw {
        m,
        n,
        k,
        mr: a.mr,
        a_packed: true,
        a: a.buf.slice().as_ptr(),
        a_blk: a.mr * k,
        rsa: 1,
        csa: a.mr,
        b: b_ptr,
        b_pnl: nr,
        rsb: b.rs,
        b_tail_masked: true,
    };
    // SAFETY: the packed panels hold `ceil(m/mr)·k·mr` elements; `B`'s row `p < k` columns
    // `j0..j0+nr` are read whole only when `j0 + nr ≤ n` (the last partial panel is masked),
    // inside its storage; `c` holds `m` rows of `ldc ≥ n`; `a.isa` was available at packing.
    unsafe { drive(a.isa, &raw, None, ep, &Post::NONE, c.as_mut_ptr(), ldc) };
    Ok(())
}

thread_local! {
    /// The per-call packed right operand of [`gemm_activations`], kept per thread across calls
    /// (taken out while a product runs, as [`A_SCRATCH`] is).
    static B_SCRATCH: std::cell::Cell<Vec<f32>> = const { std::cell::Cell::new(Vec::new()) };
}

/// `C[m×n]` (rows `ldc` apart) `= alpha·A·B + bias + beta·C` with neither operand prepacked:
/// products of two activations (attention's batched products). `A` is read in place at any
/// strides. `B` is read in place when its columns are contiguous and it has fewer than
/// [`PACK_A_MIN_PANELS`] panels (its last partial panel with masked loads); otherwise it is
/// packed for this call into column panels in a per-thread buffer and multiplied as a
/// prepacked `B` would be. The order of every sum depends only on the shapes.
pub(crate) fn gemm_activations(
    op: &'static str,
    isa: Isa,
    a: MatView<'_, f32>,
    b: MatView<'_, f32>,
    ep: &Epilogue<'_>,
    c: &mut [f32],
    ldc: usize,
) -> Result<()> {
    if a.cols != b.rows {
        return Err(KernelError::new(op, format!("cannot multiply {}x{} and {}x{} matrices", a.rows, a.cols, b.rows, b.cols)));
    }
    check_isa(op, isa)?;
    let (m, n, k) = (a.rows, b.cols, a.cols);
    if settled(op, (m, n, k), ep, c, ldc)? {
        return Ok(());
    }
    let nr = isa.nr();
    if (b.cs == 1 || n == 1) && n.div_ceil(nr) < PACK_A_MIN_PANELS {
        // SAFETY: `MatView::new` checked that every element of both views lies inside its
        // storage.
        let (a_ptr, b_ptr) = unsafe { (a.data.as_ptr().add(a.off), b.data.as_ptr().add(b.off)) };
        let mr = block_rows(m, isa.mr_in_place());
        let raw = Raw {
            m,
            n,
            k,
            mr,
            a_packed: false,
            a: a_ptr,
            a_blk: mr * a.rs,
            rsa: a.rs,
            csa: a.cs,
            b: b_ptr,
            b_pnl: nr,
            rsb: b.rs,
            b_tail_masked: true,
        };
        // SAFETY: `A`'s block `ib` row `i` column `p` is `a + (ib·mr + i)·rs + p·cs` with
        // `ib·mr + i < m` and `p < k`; `B`'s row `p < k` columns `j0..j0+nr` are read whole only
        // when `j0 + nr ≤ n` (the last partial panel is masked), at `b + p·rs + j`; both inside
        // their storage. `c` holds `m` rows of `ldc ≥ n`; the CPU runs `isa` (checked above).
        unsafe { drive(isa, &raw, None, ep, &Post::NONE, c.as_mut_ptr(), ldc) };
        return Ok(());
    }
    let len = checked_len(op, &[n.div_ceil(nr), k, nr])?;
    let mut data = B_SCRATCH.take();
    let start = aligned_start(&mut data, len);
    pack_into(b, nr, &mut data[start..start + len]);
    let packed = PackedB { isa, k, n, buf: Aligned { data, start, len } };
    let r = gemm_packed_b(op, a, &packed, ep, c, ldc);
    B_SCRATCH.set(packed.buf.data);
    r
}

/// Checks that `c` holds `C` (`m` rows of `ldc ≥ n`) and that the bias covers it, then settles
/// the products with nothing to multiply: `true` when `C` is empty, or when `k == 0` and the
/// epilogue alone has been applied.
fn settled(op: &'static str, mnk: (usize, usize, usize), ep: &Epilogue<'_>, c: &mut [f32], ldc: usize) -> Result<bool> {
    settled_post(op, mnk, ep, &Post::NONE, c, ldc)
}

/// [`settled`] with post-ops (applied after the epilogue of an empty sum).
fn settled_post(
    op: &'static str,
    (m, n, k): (usize, usize, usize),
    ep: &Epilogue<'_>,
    post: &Post<'_>,
    c: &mut [f32],
    ldc: usize,
) -> Result<bool> {
    if m > 0 && n > 0 && (ldc < n || (m - 1).checked_mul(ldc).and_then(|x| x.checked_add(n)).is_none_or(|l| l > c.len())) {
        return Err(KernelError::new(op, "output buffer is too small"));
    }
    check_bias(op, m, n, ep)?;
    if m == 0 || n == 0 {
        return Ok(true);
    }
    if k == 0 {
        epilogue_only(m, n, ep, c, ldc);
        post.apply_to(op, m, n, c, ldc)?;
        return Ok(true);
    }
    Ok(false)
}

/// Checks that the addend of `post` covers an `m × n` output.
fn check_addend(op: &'static str, m: usize, n: usize, post: &Post<'_>) -> Result<()> {
    match post.addend {
        Some(r)
            if m > 0
                && n > 0
                && (r.ld < n || (m - 1).checked_mul(r.ld).and_then(|x| x.checked_add(n)).is_none_or(|l| l > r.data.len())) =>
        {
            Err(KernelError::new(op, "the addend is smaller than the output"))
        }
        _ => Ok(()),
    }
}

/// Checks that the bias covers an `m × n` output.
fn check_bias(op: &'static str, m: usize, n: usize, ep: &Epilogue<'_>) -> Result<()> {
    match ep.bias {
        Bias::PerColumn(b) if b.len() < n => Err(KernelError::new(op, "bias is shorter than the output rows")),
        Bias::PerRow(b) if b.len() < m => Err(KernelError::new(op, "bias is shorter than the output columns")),
        _ => Ok(()),
    }
}

/// The epilogue of an empty sum (`k == 0`).
fn epilogue_only(m: usize, n: usize, ep: &Epilogue<'_>, c: &mut [f32], ldc: usize) {
    for i in 0..m {
        for j in 0..n {
            let dst = &mut c[i * ldc + j];
            let mut v = ep.alpha * 0.0;
            match ep.bias {
                Bias::PerColumn(b) => v += ep.bias_scale * b[j],
                Bias::PerRow(b) => v += ep.bias_scale * b[i],
                Bias::None => {}
            }
            if ep.beta != 0.0 {
                v += ep.beta * *dst;
            }
            *dst = v;
        }
    }
}

/// One tile's worth of pointers and sizes.
struct Tile {
    k: usize,
    a: *const f32,
    rsa: usize,
    csa: usize,
    b: *const f32,
    rsb: usize,
    /// The first of `pf_lines` cache lines of `B` to prefetch into L2, one per step of `k`:
    /// this tile's share of the slice of `B` that the next block of tiles reads.
    pf: *const f32,
    pf_lines: usize,
    /// Valid columns of the tile (`≤ nr`).
    cols: usize,
    c: *mut f32,
    ldc: usize,
    /// Whether this is the first block of `k` (the epilogue applies) or a later one (adds).
    first: bool,
    alpha: f32,
    beta: f32,
    /// `bias[j0]` for a per-column bias, null otherwise.
    bias_col: *const f32,
    /// `bias[i0]` for a per-row bias, null otherwise.
    bias_row: *const f32,
    bias_scale: f32,
}

/// The post-ops of one tile, applied to it once its last block of `k` is stored.
struct PostTile {
    /// Valid columns of the tile (`≤ nr`).
    cols: usize,
    c: *mut f32,
    ldc: usize,
    /// The addend's element `(i0, j0)` (its rows `add_ld` apart), null without one.
    addend: *const f32,
    add_ld: usize,
    add_first: bool,
    act: Activation,
}

/// Runs every tile of a product.
///
/// # Safety
/// `raw` must describe operands that are readable as documented on [`Raw`] (whole panels of
/// `B` except a masked last one, every row block of `A` up to its `m` rows), `c` must hold
/// `m` rows of `ldc ≥ n` writable elements, the bias of `ep` at least `n` (per column) or
/// `m` (per row) elements, the addend of `post` `m` rows of `ld ≥ n` readable elements, and
/// the CPU must support `isa`. With `pack`, `raw.a` is its
/// destination, packed here before any tile reads it.
unsafe fn drive(isa: Isa, raw: &Raw, pack: Option<&PackA<'_>>, ep: &Epilogue<'_>, post: &Post<'_>, c: *mut f32, ldc: usize) {
    let panels = raw.n.div_ceil(isa.nr());
    let threads = crate::parallel::threads();
    let fmas = raw.m.saturating_mul(raw.n).saturating_mul(raw.k);
    if threads <= 1 || panels < 2 || fmas < PARALLEL_MIN_FMAS {
        if let Some(p) = pack {
            p.claim();
        }
        // SAFETY: forwarded.
        unsafe { drive_panels(isa, raw, ep, post, c, ldc, 0..panels) };
        return;
    }
    // One panel a task (up to the most a pinned job has): each thread works through its own
    // run of panels, so the slice of `B` a tile prefetches is the one its thread reads next,
    // and a constant `B` is read by the same core call after call; a thread done early takes
    // single panels from the end of another's run.
    let tasks = panels.min(crate::parallel::MAX_PINNED);
    let out = crate::parallel::SharedOut(c);
    crate::parallel::for_each_pinned(tasks, |t| {
        // Every task needs all of `A`: the first ones to start pack it together, the others
        // find it packed.
        if let Some(p) = pack {
            p.share();
        }
        let range = panels * t / tasks..panels * (t + 1) / tasks;
        // SAFETY: forwarded; tasks write disjoint column panels of `C`.
        unsafe { drive_panels(isa, raw, ep, post, out.get(), ldc, range) };
    });
}

/// Products with at least this many multiply-adds are split across the intra-op team
/// (`crate::parallel`), by column panels: each tile is computed whole by one thread, so the
/// result does not depend on the split. The team's workers spin between ops, so a split costs
/// about a microsecond when a worker is awake. At 2 threads on a quiet machine (medians of 300
/// calls, thresholds alternated): 2¹⁹ ran bench_resnet_tiny at 2.00–2.11 ms, slower than one
/// thread, because its convolutions' bands (~2²² multiply-adds each, between serial im2col
/// steps) then split; 2²³ ran it at 1.82–1.84 ms and kept the transformer's 2²³-sized products
/// split (1.43–1.48 ms, against 1.59–1.66 with 2²⁴).
const PARALLEL_MIN_FMAS: usize = 1 << 23;

// SAFETY: `Raw` only reads through its pointers, and the operands are not written while a
// product runs.
unsafe impl Sync for Raw {}

/// Runs the tiles of column panels `panels` of a product.
///
/// # Safety
/// As [`drive`], with `panels` within `0..ceil(n / nr)`.
unsafe fn drive_panels(
    isa: Isa,
    raw: &Raw,
    ep: &Epilogue<'_>,
    post: &Post<'_>,
    c: *mut f32,
    ldc: usize,
    panels: std::ops::Range<usize>,
) {
    let (mr, nr) = (raw.mr, isa.nr());
    let (bias_col, bias_row) = match ep.bias {
        Bias::None => (std::ptr::null(), std::ptr::null()),
        Bias::PerColumn(b) => (b.as_ptr(), std::ptr::null()),
        Bias::PerRow(b) => (std::ptr::null(), b.as_ptr()),
    };
    let has_post = post.addend.is_some() || post.act != Activation::None;
    // Panel by panel, so a packed `B` is read front to back in one stream; within a panel,
    // block by block of `k`, each block reused by every row block of `A`.
    let blocks = raw.m.div_ceil(mr);
    for jp in panels {
        let j0 = jp * nr;
        let cols = nr.min(raw.n - j0);
        let masked = raw.b_tail_masked && cols < nr;
        let mut pc = 0;
        while pc < raw.k {
            let kb = KC.min(raw.k - pc);
            let b = raw.b.wrapping_add(jp * raw.b_pnl + pc * raw.rsb);
            // A packed `B` is one stream, the slice after this one (of this panel or the next)
            // being read next. Its lines are prefetched into L2 while this slice is in use,
            // shared evenly by the row blocks, so the first tile of each slice does not wait
            // for memory (a weight larger than L2 is read from memory on every call).
            // Addresses past the end of `B` are only hints: prefetches do not fault.
            let (next, lines) =
                if raw.b_tail_masked { (b, 0) } else { (b.wrapping_add(kb * nr), (kb * nr / 16).div_ceil(blocks)) };
            for ib in 0..blocks {
                let i0 = ib * mr;
                let rows = mr.min(raw.m - i0);
                // SAFETY (all offsets below): in bounds by the caller's contract.
                let t = unsafe {
                    Tile {
                        k: kb,
                        a: raw.a.add(ib * raw.a_blk + pc * raw.csa),
                        rsa: raw.rsa,
                        csa: raw.csa,
                        b,
                        rsb: raw.rsb,
                        pf: next.wrapping_add(ib * lines * 16),
                        pf_lines: lines.min(kb),
                        cols,
                        c: c.add(i0 * ldc + j0),
                        ldc,
                        first: pc == 0,
                        alpha: ep.alpha,
                        beta: ep.beta,
                        bias_col: if bias_col.is_null() { bias_col } else { bias_col.add(j0) },
                        bias_row: if bias_row.is_null() { bias_row } else { bias_row.add(i0) },
                        bias_scale: ep.bias_scale,
                    }
                };
                let p = (has_post && pc + kb == raw.k).then(|| post.tile(t.c, ldc, i0, j0, cols));
                if let Some(p) = &p
                    && !p.addend.is_null()
                {
                    // The addend's rows of this tile are read right after it, each from another
                    // part of memory (the rows are far apart): fetched into L1 while the tile
                    // runs, they do not stall its post-ops.
                    for i in 0..rows {
                        let row = p.addend.wrapping_add(i * p.add_ld);
                        for line in (0..cols).step_by(16) {
                            prefetch_l1(row.wrapping_add(line));
                        }
                    }
                }
                // SAFETY: forwarded.
                unsafe { tile(isa, rows, masked, raw.a_packed, &t) };
                if let Some(p) = &p {
                    // SAFETY: the tile's rows of `C` were just written; the addend holds the
                    // same rows and columns (caller's contract).
                    unsafe { post_tile(isa, rows, p) };
                }
            }
            pc += kb;
        }
    }
}

/// Dispatches one tile to the kernel instance for its row count, masking and reading of `A`.
///
/// # Safety
/// As [`drive`]; `rows` is in `1..=isa.mr()` for a packed `A`, `1..=isa.mr_in_place()`
/// otherwise.
#[allow(unused_variables)]
unsafe fn tile(isa: Isa, rows: usize, masked: bool, a_packed: bool, t: &Tile) {
    #[cfg(target_arch = "x86_64")]
    {
        // The last row count also takes the rows it does not list; its masked instance is
        // exact for unmasked tiles too (a packed `B` is padded, and the masks cover `cols`).
        macro_rules! by_rows {
            ($f:ident, $packed:literal, $($r:literal)*; $last:literal) => {
                // SAFETY: forwarded from the caller.
                unsafe {
                    match (rows, masked) {
                        $(($r, false) => x86::$f::<$r, false, $packed>(t),
                        ($r, true) => x86::$f::<$r, true, $packed>(t),)*
                        ($last, false) => x86::$f::<$last, false, $packed>(t),
                        _ => x86::$f::<$last, true, $packed>(t),
                    }
                }
            };
        }
        debug_assert!(rows >= 1 && rows <= if a_packed { isa.mr() } else { isa.mr_in_place() });
        debug_assert!(isa.mr() <= MAX_MR && isa.mr_in_place() <= isa.mr());
        match (isa, a_packed) {
            (Isa::Avx512, true) => by_rows!(tile_avx512, true, 1 2 3 4 5 6 7 8 9 10 11 12 13; 14),
            (Isa::Avx512, false) => by_rows!(tile_avx512, false, 1 2 3 4 5 6 7; 8),
            (Isa::Avx2, true) => by_rows!(tile_avx2, true, 1 2 3 4 5; 6),
            (Isa::Avx2, false) => by_rows!(tile_avx2, false, 1 2 3 4 5; 6),
            (Isa::Generic, _) => unreachable!("packing refuses the generic path"),
        }
    }
}

/// A hint to fetch the cache line holding `p` into L1 (it never faults, whatever `p` is).
#[inline(always)]
fn prefetch_l1(p: *const f32) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch does not access memory architecturally and never faults.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Applies the post-ops to a tile of `rows` rows just stored.
///
/// # Safety
/// `p.c` holds `rows` rows of `p.cols` written elements (`p.ldc` apart), the addend (when not
/// null) as many readable ones (`p.add_ld` apart), and the CPU supports `isa`.
#[allow(unused_variables)]
unsafe fn post_tile(isa: Isa, rows: usize, p: &PostTile) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: forwarded from the caller.
    unsafe {
        match isa {
            Isa::Avx512 => x86::post_avx512(p, rows),
            Isa::Avx2 => x86::post_avx2(p, rows),
            Isa::Generic => unreachable!("post-ops run in tiles only on a vector path"),
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{Activation, PostTile, Tile};

    /// Lane mask of the first `n` of 16 lanes.
    #[inline(always)]
    fn mask16(n: usize) -> __mmask16 {
        if n >= 16 { 0xffff } else { ((1u32 << n) - 1) as __mmask16 }
    }

    /// An `R × 32` tile with AVX-512F: two vectors per row of `C`. With `PACKED`, `A` is a row
    /// panel (`rsa == 1`), read through one pointer that steps `csa` a step with the
    /// broadcasts at fixed offsets from it (no address arithmetic in the loop but that
    /// pointer's and `B`'s); otherwise through one pointer per row and one running column
    /// offset, so no chain of address additions runs through the loop.
    ///
    /// # Safety
    /// As `drive`: every address read or written is in bounds; the CPU supports AVX-512F.
    // The rows are indexed, not iterated or copied whole: see the loops over them.
    #[allow(clippy::needless_range_loop, clippy::manual_memcpy)]
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn tile_avx512<const R: usize, const MASKED: bool, const PACKED: bool>(t: &Tile) {
        let m0 = mask16(t.cols);
        let m1 = mask16(t.cols.saturating_sub(16));
        let mut acc = [[_mm512_setzero_ps(); 2]; R];
        let rows: [*const f32; R] = std::array::from_fn(|i| t.a.wrapping_add(i * t.rsa));
        let (mut a, mut off, mut b) = (t.a, 0usize, t.b);
        // SAFETY: the addresses read are in bounds (caller's contract): `A`'s row `i < R`
        // column `p < k` and `B`'s row `p` (its masked-off lanes untouched); the pointers are
        // advanced with `wrapping_add` because they step once past the block; prefetches do
        // not fault.
        unsafe {
            macro_rules! step {
                () => {{
                    let (b0, b1) = if MASKED {
                        (_mm512_maskz_loadu_ps(m0, b), _mm512_maskz_loadu_ps(m1, b.wrapping_add(16)))
                    } else {
                        (_mm512_loadu_ps(b), _mm512_loadu_ps(b.add(16)))
                    };
                    // Indexed, not iterated with `zip`: LLVM then unrolls the loop for every `R`
                    // and keeps the accumulators in registers.
                    for i in 0..R {
                        let x = _mm512_set1_ps(if PACKED { *a.add(i) } else { *rows[i].add(off) });
                        acc[i][0] = _mm512_fmadd_ps(x, b0, acc[i][0]);
                        acc[i][1] = _mm512_fmadd_ps(x, b1, acc[i][1]);
                    }
                    if PACKED {
                        a = a.wrapping_add(t.csa);
                    } else {
                        off += t.csa;
                    }
                    b = b.wrapping_add(t.rsb);
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
            for (i, row) in sums.iter().enumerate() {
                let crow = t.c.add(i * t.ldc);
                for (h, &mask) in [m0, m1].iter().enumerate() {
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
                    _mm512_mask_storeu_ps(dst, mask, v);
                }
            }
        }
    }

    /// The post-ops of a tile of `rows` rows and up to 32 columns with AVX-512F: the addend
    /// and ReLU vector by vector, the GELU four rows (eight polynomials) at a time, so that
    /// their chains of multiply-adds overlap. The tile was just stored, so it is read from L1.
    ///
    /// # Safety
    /// As `post_tile`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn post_avx512(p: &PostTile, rows: usize) {
        let masks = [mask16(p.cols), mask16(p.cols.saturating_sub(16))];
        let at = |i: usize, h: usize| p.c.wrapping_add(i * p.ldc + 16 * h);
        // SAFETY (all loads and stores): rows `i < rows`, lanes within `cols` (caller's
        // contract); masked-off lanes are not touched.
        let load = |i: usize, h: usize| unsafe {
            let v = _mm512_maskz_loadu_ps(masks[h], at(i, h));
            if p.addend.is_null() {
                return v;
            }
            let r = _mm512_maskz_loadu_ps(masks[h], p.addend.add(i * p.add_ld + 16 * h));
            if p.add_first { _mm512_add_ps(r, v) } else { _mm512_add_ps(v, r) }
        };
        let store = |i: usize, h: usize, v: __m512| unsafe { _mm512_mask_storeu_ps(at(i, h), masks[h], v) };
        let halves = if masks[1] == 0 { 1 } else { 2 };
        match p.act {
            Activation::Gelu => {
                let mut i = 0;
                while i + 4 <= rows {
                    let x: [__m512; 8] = std::array::from_fn(|v| load(i + v / 2, v % 2));
                    let y = crate::kernels::fastmath::gelu_erf_f32x16_n(x);
                    for (v, y) in y.into_iter().enumerate() {
                        store(i + v / 2, v % 2, y);
                    }
                    i += 4;
                }
                for i in i..rows {
                    let y = crate::kernels::fastmath::gelu_erf_f32x16_n([load(i, 0), load(i, 1)]);
                    store(i, 0, y[0]);
                    store(i, 1, y[1]);
                }
            }
            act => {
                for i in 0..rows {
                    for h in 0..halves {
                        let mut v = load(i, h);
                        if act == Activation::Relu {
                            // `v > 0` or unordered (NaN) keeps `v`.
                            let keep = _mm512_cmp_ps_mask::<_CMP_NLE_UQ>(v, _mm512_setzero_ps());
                            v = _mm512_maskz_mov_ps(keep, v);
                        }
                        store(i, h, v);
                    }
                }
            }
        }
    }

    /// The post-ops of a tile of `rows` rows and up to 16 columns with AVX2 and FMA, vector by
    /// vector.
    ///
    /// # Safety
    /// As `post_tile`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn post_avx2(p: &PostTile, rows: usize) {
        let (n0, n1) = (p.cols.min(8), p.cols.saturating_sub(8));
        // SAFETY: reads of the mask table only.
        let masks = unsafe { [mask8(n0), mask8(n1)] };
        for i in 0..rows {
            for (h, lanes) in [n0, n1].into_iter().enumerate() {
                if lanes == 0 {
                    continue;
                }
                // SAFETY: row `i < rows`, lanes within `cols` (caller's contract); masked-off
                // lanes are not touched.
                unsafe {
                    let dst = p.c.add(i * p.ldc + 8 * h);
                    let mut v = _mm256_maskload_ps(dst, masks[h]);
                    if !p.addend.is_null() {
                        let r = _mm256_maskload_ps(p.addend.add(i * p.add_ld + 8 * h), masks[h]);
                        v = if p.add_first { _mm256_add_ps(r, v) } else { _mm256_add_ps(v, r) };
                    }
                    match p.act {
                        Activation::None => {}
                        Activation::Gelu => v = crate::kernels::fastmath::gelu_erf_f32x8(v),
                        Activation::Relu => {
                            let keep = _mm256_cmp_ps::<_CMP_NLE_UQ>(v, _mm256_setzero_ps());
                            v = _mm256_and_ps(keep, v);
                        }
                    }
                    _mm256_maskstore_ps(dst, masks[h], v);
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
    pub(super) unsafe fn pack_panel_avx512(a: *const f32, rs: usize, cs: usize, rows: usize, k: usize, mr: usize, dst: *mut f32) {
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
    // The rows are indexed, not iterated or copied whole: see the loops over them.
    #[allow(clippy::needless_range_loop, clippy::manual_memcpy)]
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn tile_avx2<const R: usize, const MASKED: bool, const PACKED: bool>(t: &Tile) {
        let (n0, n1) = (t.cols.min(8), t.cols.saturating_sub(8));
        // SAFETY: reads of the mask table only.
        let (m0, m1) = unsafe { (mask8(n0), mask8(n1)) };
        let mut acc = [[_mm256_setzero_ps(); 2]; R];
        let rows: [*const f32; R] = std::array::from_fn(|i| t.a.wrapping_add(i * t.rsa));
        let (mut a, mut off, mut b) = (t.a, 0usize, t.b);
        // SAFETY: as in `tile_avx512`; masked loads and stores do not touch masked-off lanes.
        unsafe {
            macro_rules! step {
                () => {{
                    let (b0, b1) = if MASKED {
                        (_mm256_maskload_ps(b, m0), _mm256_maskload_ps(b.wrapping_add(8), m1))
                    } else {
                        (_mm256_loadu_ps(b), _mm256_loadu_ps(b.add(8)))
                    };
                    for i in 0..R {
                        let x = _mm256_broadcast_ss(if PACKED { &*a.add(i) } else { &*rows[i].add(off) });
                        acc[i][0] = _mm256_fmadd_ps(x, b0, acc[i][0]);
                        acc[i][1] = _mm256_fmadd_ps(x, b1, acc[i][1]);
                    }
                    if PACKED {
                        a = a.wrapping_add(t.csa);
                    } else {
                        off += t.csa;
                    }
                    b = b.wrapping_add(t.rsb);
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
            // The epilogue is too long for LLVM to unroll over every row, and an array it
            // indexes at run time lives in memory; were that `acc`, the loop would store every
            // accumulator at every step. So the epilogue reads a copy, made row by row.
            let mut sums = [[_mm256_setzero_ps(); 2]; R];
            for i in 0..R {
                sums[i] = acc[i];
            }
            let alpha = _mm256_set1_ps(t.alpha);
            let beta = _mm256_set1_ps(t.beta);
            let bscale = _mm256_set1_ps(t.bias_scale);
            for (i, row) in sums.iter().enumerate() {
                let crow = t.c.add(i * t.ldc);
                for (h, (&mask, lanes)) in [m0, m1].iter().zip([n0, n1]).enumerate() {
                    if lanes == 0 {
                        continue;
                    }
                    let dst = crow.add(8 * h);
                    let mut v = _mm256_mul_ps(row[h], alpha);
                    if t.first {
                        if !t.bias_col.is_null() {
                            let bias = _mm256_maskload_ps(t.bias_col.add(8 * h), mask);
                            v = _mm256_add_ps(v, _mm256_mul_ps(bscale, bias));
                        }
                        if !t.bias_row.is_null() {
                            let bias = _mm256_set1_ps(*t.bias_row.add(i));
                            v = _mm256_add_ps(v, _mm256_mul_ps(bscale, bias));
                        }
                        if t.beta != 0.0 {
                            v = _mm256_add_ps(v, _mm256_mul_ps(beta, _mm256_maskload_ps(dst, mask)));
                        }
                    } else {
                        v = _mm256_add_ps(_mm256_maskload_ps(dst, mask), v);
                    }
                    _mm256_maskstore_ps(dst, mask, v);
                }
            }
        }
    }
}

/// `C[m×n]` (rows `ldc` apart) `= alpha·A·B + bias + beta·C`, with `A` prepacked and `B`
/// already in the column panels of a [`PackedB`] (`ceil(n/nr)` panels of `k × nr` for
/// `a.isa().nr()`, each row of a panel contiguous, the last panel's missing columns zero): a
/// convolution's column matrix written straight into that layout by its caller, so tiles read
/// `B` sequentially.
///
/// # Safety
/// `c` must be valid for writes of `m` rows of `ldc ≥ n` elements (and reads, with a non-zero
/// `beta` or `k` beyond one block), and no other thread may access those elements meanwhile.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn gemm_packed_a_panels(
    op: &'static str,
    a: &PackedA,
    b: &[f32],
    n: usize,
    ep: &Epilogue<'_>,
    c: *mut f32,
    ldc: usize,
) -> Result<()> {
    let (m, k, nr) = (a.m, a.k, a.isa.nr());
    if checked_len(op, &[n.div_ceil(nr), k, nr])? > b.len() {
        return Err(KernelError::new(op, "internal error: the column panels are shorter than the product needs"));
    }
    if m > 0 && n > 0 && ldc < n {
        return Err(KernelError::new(op, "output buffer is too small"));
    }
    check_bias(op, m, n, ep)?;
    if m == 0 || n == 0 {
        return Ok(());
    }
    if k == 0 {
        for i in 0..m {
            // SAFETY: row `i < m` of `C` is valid for `n ≤ ldc` elements (caller's contract).
            let row = unsafe { std::slice::from_raw_parts_mut(c.add(i * ldc), n) };
            epilogue_only(1, n, &Epilogue { bias: bias_from(ep.bias, i), ..*ep }, row, n);
        }
        return Ok(());
    }
    let raw = Raw {
        m,
        n,
        k,
        mr: a.mr,
        a_packed: true,
        a: a.buf.slice().as_ptr(),
        a_blk: a.mr * k,
        rsa: 1,
        csa: a.mr,
        b: b.as_ptr(),
        b_pnl: k * nr,
        rsb: nr,
        b_tail_masked: false,
    };
    // SAFETY: the packed panels of `A` hold `ceil(m/mr)·k·mr` elements and `b` holds
    // `ceil(n/nr)·k·nr` (checked above); `c` holds `m` rows of `ldc ≥ n` (caller's contract);
    // `a.isa` was available when `A` was packed.
    unsafe { drive(a.isa, &raw, None, ep, &Post::NONE, c, ldc) };
    Ok(())
}

/// A per-row bias from row `i` on (other biases unchanged).
fn bias_from(bias: Bias<'_>, i: usize) -> Bias<'_> {
    match bias {
        Bias::PerRow(x) => Bias::PerRow(&x[i..]),
        other => other,
    }
}

impl PackedA {
    /// The instruction-set path the matrix is packed for (its panel widths).
    pub(crate) fn isa(&self) -> Isa {
        self.isa
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A small deterministic generator (xorshift) of values in [-1, 1); the convolution's
    /// tests use it too.
    pub(crate) struct Gen(pub(crate) u64);
    impl Gen {
        pub(crate) fn next(&mut self) -> f32 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        }
        pub(crate) fn vec(&mut self, n: usize) -> Vec<f32> {
            (0..n).map(|_| self.next()).collect()
        }
    }

    /// `alpha·A·B + bias_scale·bias + beta·C` in f64, element by element.
    #[allow(clippy::too_many_arguments)]
    fn reference(
        a: &MatView<'_, f32>,
        b: &MatView<'_, f32>,
        ep: &Epilogue<'_>,
        c0: &[f32],
        ldc: usize,
    ) -> Vec<f32> {
        let mut c = c0.to_vec();
        for i in 0..a.rows {
            for j in 0..b.cols {
                let mut s = 0.0f64;
                for p in 0..a.cols {
                    s += a.at(i, p) as f64 * b.at(p, j) as f64;
                }
                let mut v = ep.alpha as f64 * s;
                match ep.bias {
                    Bias::PerColumn(x) => v += ep.bias_scale as f64 * x[j] as f64,
                    Bias::PerRow(x) => v += ep.bias_scale as f64 * x[i] as f64,
                    Bias::None => {}
                }
                if ep.beta != 0.0 {
                    v += ep.beta as f64 * c[i * ldc + j] as f64;
                }
                c[i * ldc + j] = v as f32;
            }
        }
        c
    }

    fn assert_close(got: &[f32], want: &[f32], k: usize, what: &str) {
        assert_eq!(got.len(), want.len());
        let tol = 1e-5 * (k as f32 + 4.0);
        for (idx, (g, w)) in got.iter().zip(want).enumerate() {
            assert!(
                (g - w).abs() <= tol * (1.0 + w.abs()) || (g.is_nan() && w.is_nan()),
                "{what}: element {idx}: got {g}, want {w}"
            );
        }
    }

    /// Which ISA paths this CPU runs; prints a reason for each it skips.
    fn paths() -> Vec<Isa> {
        let mut out = Vec::new();
        for isa in [Isa::Avx512, Isa::Avx2] {
            if isa.available() {
                out.push(isa);
            } else {
                println!("skipping the {isa:?} path: this CPU does not support it");
            }
        }
        out
    }

    /// Shapes covering every tile height of both paths (one block of each height up to 15,
    /// blocks of 9 and 8, 14 and 13, 10, 10 and 9), every column tail of both paths, `k` around
    /// the block depth, and the empty cases.
    fn shapes() -> Vec<(usize, usize, usize)> {
        let mut s = Vec::new();
        for m in (0..=15).chain([17, 27, 29]) {
            for n in [0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 50] {
                for k in [0, 1, 3, 17] {
                    s.push((m, n, k));
                }
            }
        }
        for k in [KC - 1, KC, KC + 1, 2 * KC + 5] {
            s.push((7, 37, k));
        }
        s
    }

    /// A strided matrix: rows `rs` apart, columns `cs` apart, after `off` unused elements.
    fn strided(g: &mut Gen, rows: usize, cols: usize, transposed: bool) -> (Vec<f32>, usize, usize, usize) {
        let off = 3;
        let (rs, cs) = if transposed { (1, rows + 2) } else { (cols + 3, 1) };
        let len = off + rows.max(1) * rs.max(1) + cols.max(1) * cs.max(1);
        (g.vec(len), off, rs, cs)
    }

    fn epilogues<'a>(bias_n: &'a [f32], bias_m: &'a [f32]) -> Vec<Epilogue<'a>> {
        vec![
            Epilogue::PLAIN,
            Epilogue { alpha: 0.5, beta: 0.0, bias: Bias::PerColumn(bias_n), bias_scale: 1.0 },
            Epilogue { alpha: 1.0, beta: 1.0, bias: Bias::None, bias_scale: 1.0 },
            Epilogue { alpha: -2.0, beta: 0.25, bias: Bias::PerRow(bias_m), bias_scale: 3.0 },
            Epilogue { alpha: 1.0, beta: -1.5, bias: Bias::PerColumn(bias_n), bias_scale: 0.5 },
        ]
    }

    #[test]
    fn packed_b_matches_the_reference_on_every_path_and_tail() {
        let mut g = Gen(0x9e37_79b9_7f4a_7c15);
        for isa in paths() {
            for (m, n, k) in shapes() {
                for a_t in [false, true] {
                    let (ad, aoff, ars, acs) = strided(&mut g, m, k, a_t);
                    let (bd, boff, brs, bcs) = strided(&mut g, k, n, !a_t);
                    let a = MatView::new("t", &ad, aoff, m, k, ars, acs).unwrap();
                    let b = MatView::new("t", &bd, boff, k, n, brs, bcs).unwrap();
                    let packed = PackedB::pack("t", isa, b).unwrap();
                    let (bias_n, bias_m) = (g.vec(n), g.vec(m));
                    for ep in epilogues(&bias_n, &bias_m) {
                        let ldc = n + 5;
                        let c0 = g.vec(m * ldc + 2);
                        let want = reference(&a, &b, &ep, &c0, ldc);
                        let mut c = c0.clone();
                        gemm_packed_b("t", a, &packed, &ep, &mut c, ldc).unwrap();
                        assert_close(&c, &want, k, &format!("{isa:?} B {m}x{n}x{k} a_t={a_t} {ep:?}"));
                    }
                }
            }
        }
    }

    #[test]
    fn packed_a_matches_the_reference_on_every_path_and_tail() {
        let mut g = Gen(0x2545_f491_4f6c_dd1d);
        for isa in paths() {
            for (m, n, k) in shapes() {
                let (ad, aoff, ars, acs) = strided(&mut g, m, k, true);
                let (bd, boff, brs, _) = strided(&mut g, k, n, false);
                let a = MatView::new("t", &ad, aoff, m, k, ars, acs).unwrap();
                // Exactly as long as the last element of `B` requires, so a read past a
                // partial panel would leave the buffer (and trip the sanitizer or Miri).
                let b_len = if k == 0 || n == 0 { bd.len() } else { boff + (k - 1) * brs + n };
                let b = MatView::new("t", &bd[..b_len], boff, k, n, brs, 1).unwrap();
                let packed = PackedA::pack("t", isa, a).unwrap();
                let (bias_n, bias_m) = (g.vec(n), g.vec(m));
                for ep in epilogues(&bias_n, &bias_m) {
                    let ldc = n + 1;
                    let c0 = g.vec(m * ldc);
                    let want = reference(&a, &b, &ep, &c0, ldc);
                    let mut c = c0.clone();
                    gemm_packed_a("t", &packed, b, &ep, &mut c, ldc).unwrap();
                    assert_close(&c, &want, k, &format!("{isa:?} A {m}x{n}x{k} {ep:?}"));
                }
            }
        }
    }

    #[test]
    fn wide_products_pack_the_left_operand_for_every_tile_height() {
        let mut g = Gen(0x5851_f42d_4c95_7f2d);
        for isa in paths() {
            // Enough panels to pack `A` per call, the last one partial.
            let n = PACK_A_MIN_PANELS * isa.nr() + 3;
            for m in (1..=15).chain([27, 29, 64]) {
                for k in [3, KC + 1, 2 * KC + 5] {
                    let (ad, aoff, ars, acs) = strided(&mut g, m, k, m % 2 == 0);
                    let (bd, bias_n, bias_m) = (g.vec(k * n), g.vec(n), g.vec(m));
                    let a = MatView::new("t", &ad, aoff, m, k, ars, acs).unwrap();
                    let b = MatView::new("t", &bd, 0, k, n, n, 1).unwrap();
                    let packed = PackedB::pack("t", isa, b).unwrap();
                    for ep in epilogues(&bias_n, &bias_m).into_iter().step_by(2) {
                        let c0 = g.vec(m * n);
                        let want = reference(&a, &b, &ep, &c0, n);
                        let mut c = c0.clone();
                        gemm_packed_b("t", a, &packed, &ep, &mut c, n).unwrap();
                        assert_close(&c, &want, k, &format!("{isa:?} {m}x{n}x{k} {ep:?}"));
                    }
                }
            }
        }
    }

    /// The post-ops give the bits of the product followed by the separate ops (the
    /// interpreter's `add`, `gelu` and `relu`: `r + v` or `v + r`, `gelu_erf_f32`, `v` when
    /// `v > 0` or NaN), on every path, for every tile height and column tail, `k` within one
    /// block, beyond it and empty, a left operand read in place or packed, an addend with rows
    /// wider than the output on either side of the sum, and non-finite addends; on one thread
    /// and split across three.
    #[test]
    fn post_ops_give_the_bits_of_the_separate_ops() {
        let mut g = Gen(29);
        let pools: Vec<_> = [1, 3].into_iter().map(|t| rayon::ThreadPoolBuilder::new().num_threads(t).build().unwrap()).collect();
        for isa in paths() {
            let wide = PACK_A_MIN_PANELS * isa.nr() + 3;
            let mut shapes = Vec::new();
            for m in [1, 2, 5, 8, 13, 14, 15, 29] {
                for n in [1, 7, 16, 17, 33, 50] {
                    for k in [0, 3, KC + 1] {
                        shapes.push((m, n, k));
                    }
                }
            }
            // The last: a left operand packed in two bands of rows.
            shapes.extend([(45, wide, 2 * KC + 5), (3, wide, 17), (128, 300, 400), (1000, wide, 1100)]);
            for (m, n, k) in shapes {
                let (ad, aoff, ars, acs) = strided(&mut g, m, k, m % 2 == 1);
                let a = MatView::new("t", &ad, aoff, m, k, ars, acs).unwrap();
                let bd: Vec<f32> = g.vec(k * n).iter().map(|x| x * 3.0).collect();
                let b = MatView::new("t", &bd, 0, k, n, n, 1).unwrap();
                let packed = PackedB::pack("t", isa, b).unwrap();
                let bias = g.vec(n);
                let ep = Epilogue { alpha: 1.0, beta: 0.0, bias: Bias::PerColumn(&bias), bias_scale: 1.0 };
                let ld = n + 3;
                let mut r: Vec<f32> = g.vec(m * ld).iter().map(|x| x * 4.0).collect();
                if r.len() > 9 {
                    r[0] = f32::NAN;
                    r[4] = f32::INFINITY;
                    r[9] = f32::NEG_INFINITY;
                }
                let mut plain = vec![0.0; m * n];
                gemm_packed_b("t", a, &packed, &ep, &mut plain, n).unwrap();
                for act in [Activation::None, Activation::Gelu, Activation::Relu] {
                    for first in [None, Some(true), Some(false)] {
                        let mut want = plain.clone();
                        for i in 0..m {
                            for j in 0..n {
                                let v = &mut want[i * n + j];
                                match first {
                                    // The addend on the left, as the fused sum keeps it.
                                    #[allow(clippy::assign_op_pattern)]
                                    Some(true) => *v = r[i * ld + j] + *v,
                                    Some(false) => *v += r[i * ld + j],
                                    None => {}
                                }
                                match act {
                                    Activation::None => {}
                                    Activation::Gelu => *v = super::super::fastmath::gelu_erf_f32(*v),
                                    Activation::Relu => *v = if *v > 0.0 || v.is_nan() { *v } else { 0.0 },
                                }
                            }
                        }
                        let post = Post { addend: first.map(|first| Addend { data: &r, ld, first }), act };
                        for pool in &pools {
                            let mut got = vec![f32::NAN; m * n];
                            pool.install(|| gemm_packed_b_post("t", a, &packed, &ep, &post, &mut got, n)).unwrap();
                            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                            let what = format!("{isa:?} {m}x{n}x{k} {act:?} {first:?} on {}", pool.current_num_threads());
                            assert_eq!(bits(&got), bits(&want), "{what}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn an_addend_smaller_than_the_output_is_an_error() {
        let Some(isa) = Isa::simd() else {
            println!("skipping: this CPU runs no prepacked path");
            return;
        };
        let d = vec![1.0f32; 64];
        let b = PackedB::pack("t", isa, MatView::new("t", &d, 0, 4, 4, 4, 1).unwrap()).unwrap();
        let a = MatView::new("t", &d, 0, 3, 4, 4, 1).unwrap();
        let mut c = vec![0.0; 12];
        let short = [1.0f32; 11];
        for (data, ld) in [(&short[..], 4), (&d[..], 3)] {
            let post = Post { addend: Some(Addend { data, ld, first: true }), act: Activation::None };
            assert!(gemm_packed_b_post("t", a, &b, &Epilogue::PLAIN, &post, &mut c, 4).is_err(), "ld {ld}");
        }
        let post = Post { addend: Some(Addend { data: &d[..12], ld: 4, first: true }), act: Activation::Gelu };
        assert!(gemm_packed_b_post("t", a, &b, &Epilogue::PLAIN, &post, &mut c, 4).is_ok());
        assert!(post.apply_to("t", 3, 4, &mut c[..11], 4).is_err());
    }

    #[test]
    fn post_ops_after_a_product_give_each_elements_bits() {
        // `apply_to` runs the tiles' vector post-ops over strips; every element must have the
        // bits of the one-element form, whatever the strip's tail, the row stride and the side
        // of the addend.
        let vals = [-7.5f32, -1.0, -0.0, 0.0, 1e-30, 0.3, 1.0, 4.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -3e38];
        for (m, n, ldc) in [(1, 1, 1), (1, 17, 17), (3, 33, 40), (2, 70, 70), (5, 16, 19)] {
            let c0: Vec<f32> = (0..m * ldc).map(|i| vals[i % vals.len()] * (1.0 + i as f32 / 97.0)).collect();
            let r: Vec<f32> = (0..m * (n + 3)).map(|i| vals[(i * 5) % vals.len()] / 3.0).collect();
            for act in [Activation::None, Activation::Gelu, Activation::Relu] {
                for addend in [None, Some(true), Some(false)] {
                    let post = Post { addend: addend.map(|first| Addend { data: &r, ld: n + 3, first }), act };
                    let mut c = c0.clone();
                    post.apply_to("t", m, n, &mut c, ldc).unwrap();
                    for i in 0..m {
                        for j in 0..ldc {
                            let want = if j < n { post.apply(i, j, c0[i * ldc + j]) } else { c0[i * ldc + j] };
                            let got = c[i * ldc + j];
                            assert!(
                                want.to_bits() == got.to_bits() || want.is_nan() && got.is_nan(),
                                "{m}x{n} ld {ldc} {act:?} {addend:?} ({i}, {j}): {got} for {want}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn blocks_of_rows_are_as_even_as_possible() {
        assert_eq!(block_rows(64, 14), 13);
        assert_eq!(block_rows(128, 14), 13);
        assert_eq!(block_rows(32, 14), 11);
        assert_eq!(block_rows(14, 14), 14);
        assert_eq!(block_rows(15, 14), 8);
        assert_eq!(block_rows(5, 8), 5);
        for max in [6, 8, 14] {
            for m in 1..200 {
                let h = block_rows(m, max);
                let blocks = m.div_ceil(h);
                assert!(h <= max && blocks == m.div_ceil(max), "{m} rows by {max}");
                // The last block is at most one row per block shorter than the others.
                assert!(m - (blocks - 1) * h + blocks > h, "{m} rows by {max}");
            }
        }
    }

    #[test]
    fn products_of_two_activations_match_the_reference_in_place_and_packed() {
        let mut g = Gen(0x51af_d7ed_558c_cd21);
        for isa in paths() {
            let mut shapes = shapes();
            // Enough panels that `B` is packed per call even with contiguous columns.
            shapes.push((9, PACK_A_MIN_PANELS * isa.nr() + 5, 20));
            for (m, n, k) in shapes {
                // `B` with contiguous columns (read in place) and transposed (packed per call).
                for b_t in [false, true] {
                    let (ad, aoff, ars, acs) = strided(&mut g, m, k, !b_t);
                    let (bd, boff, brs, bcs) = strided(&mut g, k, n, b_t);
                    let a = MatView::new("t", &ad, aoff, m, k, ars, acs).unwrap();
                    // In place, exactly as long as the last element of `B` requires, so a read
                    // past a partial panel would leave the buffer.
                    let b_len = if b_t || k == 0 || n == 0 { bd.len() } else { boff + (k - 1) * brs + n };
                    let b = MatView::new("t", &bd[..b_len], boff, k, n, brs, bcs).unwrap();
                    let (bias_n, bias_m) = (g.vec(n), g.vec(m));
                    for ep in epilogues(&bias_n, &bias_m) {
                        let ldc = n + 2;
                        let c0 = g.vec(m * ldc);
                        let want = reference(&a, &b, &ep, &c0, ldc);
                        let mut c = c0.clone();
                        gemm_activations("t", isa, a, b, &ep, &mut c, ldc).unwrap();
                        assert_close(&c, &want, k, &format!("{isa:?} AB {m}x{n}x{k} b_t={b_t} {ep:?}"));
                    }
                }
            }
            let d = vec![1.0f32; 16];
            let (a, b) = (MatView::new("t", &d, 0, 2, 3, 3, 1).unwrap(), MatView::new("t", &d, 0, 2, 2, 2, 1).unwrap());
            let mut c = vec![0.0; 4];
            assert!(gemm_activations("t", isa, a, b, &Epilogue::PLAIN, &mut c, 2).is_err());
        }
    }

    #[test]
    fn beta_zero_does_not_read_the_output_and_rows_past_n_are_kept() {
        let mut g = Gen(7);
        for isa in paths() {
            let (m, n, k, ldc) = (5, 19, 9, 23);
            let (ad, bd) = (g.vec(m * k), g.vec(k * n));
            let a = MatView::new("t", &ad, 0, m, k, k, 1).unwrap();
            let b = MatView::new("t", &bd, 0, k, n, n, 1).unwrap();
            let mut c = vec![f32::NAN; m * ldc];
            gemm_packed_b("t", a, &PackedB::pack("t", isa, b).unwrap(), &Epilogue::PLAIN, &mut c, ldc).unwrap();
            for i in 0..m {
                assert!(c[i * ldc..i * ldc + n].iter().all(|v| v.is_finite()), "{isa:?} row {i}");
                assert!(c[i * ldc + n..(i + 1) * ldc].iter().all(|v| v.is_nan()), "{isa:?} padding of row {i} was written");
            }
        }
    }

    #[test]
    fn results_are_the_same_bits_every_time() {
        let mut g = Gen(11);
        for isa in paths() {
            let (m, n, k) = (37, 70, 600);
            let (ad, bd) = (g.vec(m * k), g.vec(k * n));
            let a = MatView::new("t", &ad, 0, m, k, k, 1).unwrap();
            let b = MatView::new("t", &bd, 0, k, n, n, 1).unwrap();
            let packed = PackedB::pack("t", isa, b).unwrap();
            let run = || {
                let mut c = vec![0.0; m * n];
                gemm_packed_b("t", a, &packed, &Epilogue::PLAIN, &mut c, n).unwrap();
                c.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
            };
            let first = run();
            let other = std::thread::scope(|s| s.spawn(run).join().unwrap());
            assert_eq!(first, run());
            assert_eq!(first, other);
        }
    }

    #[test]
    fn products_split_across_threads_are_the_same_bits() {
        let mut g = Gen(13);
        let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        for isa in paths() {
            // Above the split threshold, with a partial last panel and a row tail.
            let (m, n, k) = (45, 300, 1300);
            assert!(m * n * k >= PARALLEL_MIN_FMAS);
            let (ad, bd, bias) = (g.vec(m * k), g.vec(k * n), g.vec(m));
            let a = MatView::new("t", &ad, 0, m, k, k, 1).unwrap();
            let b = MatView::new("t", &bd, 0, k, n, n, 1).unwrap();
            let (pa, pb) = (PackedA::pack("t", isa, a).unwrap(), PackedB::pack("t", isa, b).unwrap());
            let ep = Epilogue { bias: Bias::PerRow(&bias), ..Epilogue::PLAIN };
            let run = || {
                let (mut c1, mut c2) = (vec![0.0; m * n], vec![0.0; m * n]);
                gemm_packed_b("t", a, &pb, &ep, &mut c1, n).unwrap();
                gemm_packed_a("t", &pa, b, &ep, &mut c2, n).unwrap();
                (c1, c2)
            };
            let single = one.install(run);
            let split = pool.install(run);
            assert_eq!(single, split, "{isa:?}");
            let want = reference(&a, &b, &ep, &vec![0.0; m * n], n);
            assert_close(&split.0, &want, k, "threads B");
            assert_close(&split.1, &want, k, "threads A");
        }
    }

    #[test]
    fn left_operands_packed_by_the_team_give_the_bits_of_one_thread() {
        let mut g = Gen(23);
        let pools: Vec<_> =
            [1, 2, 3].into_iter().map(|t| rayon::ThreadPoolBuilder::new().num_threads(t).build().unwrap()).collect();
        for isa in paths() {
            // Wide enough to pack `A` per call and large enough to split, with odd row counts
            // (a short last row panel) and a `k` beyond one block.
            let n = PACK_A_MIN_PANELS * isa.nr() + 3;
            for (m, k) in [(45, 760), (128, 256), (29, 1200)] {
                assert!(m * n * k >= PARALLEL_MIN_FMAS);
                let (ad, aoff, ars, acs) = strided(&mut g, m, k, m % 2 == 0);
                let (bd, bias) = (g.vec(k * n), g.vec(n));
                let a = MatView::new("t", &ad, aoff, m, k, ars, acs).unwrap();
                let b = MatView::new("t", &bd, 0, k, n, n, 1).unwrap();
                let packed = PackedB::pack("t", isa, b).unwrap();
                let ep = Epilogue { bias: Bias::PerColumn(&bias), ..Epilogue::PLAIN };
                let run = || {
                    let mut c = vec![f32::NAN; m * n];
                    gemm_packed_b("t", a, &packed, &ep, &mut c, n).unwrap();
                    c.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                };
                let single = pools[0].install(run);
                // Several calls per width: which thread packs which panel varies from call to
                // call, the result must not.
                for pool in &pools[1..] {
                    for _ in 0..4 {
                        let threads = pool.current_num_threads();
                        assert_eq!(pool.install(run), single, "{isa:?} {m}x{n}x{k} on {threads} threads");
                    }
                }
                let want = reference(&a, &b, &ep, &vec![0.0; m * n], n);
                let got: Vec<f32> = single.iter().map(|&x| f32::from_bits(x)).collect();
                assert_close(&got, &want, k, &format!("{isa:?} {m}x{n}x{k}"));
            }
        }
    }

    #[test]
    fn left_operands_are_packed_whole_or_in_bands() {
        let mut g = Gen(17);
        for isa in paths() {
            let n = PACK_A_MIN_PANELS * isa.nr() + 3;
            // Packed whole (rows in place, then transposed), and a left operand too large to
            // pack at once: two bands of rows, the second partial, with a per-row bias and
            // `beta`, so the offsets of `C` and of the bias in the second band are checked.
            for (m, k, a_t) in [(13, 9, false), (13, 9, true), (1000, 1100, false)] {
                let band = band_rows(isa, m, k).1;
                assert!(m <= band || m < 2 * band && m % band != 0);
                let (ad, aoff, ars, acs) = strided(&mut g, m, k, a_t);
                let (bd, bias) = (g.vec(k * n), g.vec(m));
                let a = MatView::new("t", &ad, aoff, m, k, ars, acs).unwrap();
                let b = MatView::new("t", &bd, 0, k, n, n, 1).unwrap();
                let ep = Epilogue { alpha: 1.0, beta: 0.5, bias: Bias::PerRow(&bias), bias_scale: 2.0 };
                let c0 = g.vec(m * n);
                let want = reference(&a, &b, &ep, &c0, n);
                let mut c = c0.clone();
                gemm_packed_b("t", a, &PackedB::pack("t", isa, b).unwrap(), &ep, &mut c, n).unwrap();
                assert_close(&c, &want, k, &format!("{isa:?} {m}x{n}x{k} a_t={a_t}"));
            }
        }
    }

    #[test]
    fn shape_errors_are_reported() {
        let Some(isa) = Isa::simd() else {
            println!("skipping: this CPU runs no prepacked path");
            return;
        };
        let d = vec![1.0f32; 64];
        let b = PackedB::pack("t", isa, MatView::new("t", &d, 0, 4, 4, 4, 1).unwrap()).unwrap();
        let a = MatView::new("t", &d, 0, 2, 3, 3, 1).unwrap();
        let mut c = vec![0.0; 8];
        assert!(gemm_packed_b("t", a, &b, &Epilogue::PLAIN, &mut c, 4).is_err());
        let a = MatView::new("t", &d, 0, 3, 4, 4, 1).unwrap();
        let mut small = vec![0.0; 11];
        assert!(gemm_packed_b("t", a, &b, &Epilogue::PLAIN, &mut small, 4).is_err());
        let mut c = vec![0.0; 12];
        assert!(gemm_packed_b("t", a, &b, &Epilogue::PLAIN, &mut c, 4).is_ok());
        let short = [1.0f32; 3];
        let ep = Epilogue { bias: Bias::PerColumn(&short), ..Epilogue::PLAIN };
        assert!(gemm_packed_b("t", a, &b, &ep, &mut c, 4).is_err());
        let ep = Epilogue { bias: Bias::PerRow(&short[..2]), ..Epilogue::PLAIN };
        assert!(gemm_packed_b("t", a, &b, &ep, &mut c, 4).is_err());
    }

    #[test]
    fn caller_packed_panels_give_the_bits_of_b_read_in_place() {
        let mut g = Gen(19);
        for isa in paths() {
            let nr = isa.nr();
            for (m, n, k) in shapes() {
                let (ad, aoff, ars, acs) = strided(&mut g, m, k, false);
                let a = MatView::new("t", &ad, aoff, m, k, ars, acs).unwrap();
                let bd = g.vec(k * n);
                let b = MatView::new("t", &bd, 0, k, n, n, 1).unwrap();
                let mut panels = vec![f32::NAN; n.div_ceil(nr) * k * nr];
                pack_into(b, nr, &mut panels);
                let packed = PackedA::pack("t", isa, a).unwrap();
                let (bias_n, bias_m) = (g.vec(n), g.vec(m));
                for ep in epilogues(&bias_n, &bias_m) {
                    let ldc = n + 2;
                    let c0 = g.vec(m * ldc);
                    let (mut want, mut got) = (c0.clone(), c0.clone());
                    gemm_packed_a("t", &packed, b, &ep, &mut want, ldc).unwrap();
                    // SAFETY: `got` holds `m` rows of `ldc` elements and nothing else uses it.
                    unsafe { gemm_packed_a_panels("t", &packed, &panels, n, &ep, got.as_mut_ptr(), ldc).unwrap() };
                    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&got), bits(&want), "{isa:?} {m}x{n}x{k} {ep:?}");
                }
                if n > 0 && k > 0 {
                    let mut c = vec![0.0; m.max(1) * n];
                    // SAFETY: as above.
                    let (short, ep) = (&panels[1..], Epilogue::PLAIN);
                    let short = unsafe { gemm_packed_a_panels("t", &packed, short, n, &ep, c.as_mut_ptr(), n) };
                    assert!(short.is_err(), "{isa:?} {m}x{n}x{k}: short panels accepted");
                }
            }
        }
    }
}
