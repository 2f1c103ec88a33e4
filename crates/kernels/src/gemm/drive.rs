//! The walk over a product's tiles: column panels split across the intra-op team, blocks of
//! `k`, row blocks, and the dispatch of each tile to the microkernel of its ISA and row count.

use super::*;
use crate::mat::MatView;
#[cfg(target_arch = "x86_64")]
use crate::x86::{avx2, avx512};

/// The operands of one product in the microkernel's terms. Row block `ib` of `A` (rows
/// `ib·mr..`) starts at `a + ib·a_blk`, its rows `rsa` apart and its columns `csa` apart;
/// column panel `jp` of `B` starts at `b + jp·b_pnl`, its rows `rsb` apart (or, with
/// `b_rows`, row `p` at `b_rows[p]` from there) and its columns contiguous.
#[derive(Clone, Copy)]
pub(crate) struct Raw {
    pub(crate) m: usize,
    pub(crate) n: usize,
    pub(crate) k: usize,
    /// Rows per block of `A` (the last block may have fewer).
    pub(crate) mr: usize,
    /// Whether `A` is in row panels of `mr` (`rsa == 1`, `csa == mr`), which the tiles read
    /// with one pointer; otherwise they keep one pointer per row.
    pub(crate) a_packed: bool,
    pub(crate) a: *const f32,
    pub(crate) a_blk: usize,
    pub(crate) rsa: usize,
    pub(crate) csa: usize,
    pub(crate) b: *const f32,
    pub(crate) b_pnl: usize,
    pub(crate) rsb: usize,
    /// The offset of each of `B`'s `k` rows from its panel's start, or null when row `p` is at
    /// `p·rsb`: the input of a stride-1 convolution read in place, each row of the column
    /// matrix a run of a zero-padded input row ([`gemm_packed_a_rows_post`]), read by tiles
    /// over a packed `A` only.
    pub(crate) b_rows: *const usize,
    /// Whether `B` is read in place, so its last, partial panel must be loaded with masks (a
    /// [`PackedB`] is padded, and its panels lie one after the other, which is what lets a
    /// tile prefetch the slice read next).
    pub(crate) b_tail_masked: bool,
}

/// One tile's worth of pointers and sizes.
#[derive(Clone, Copy)]
pub(crate) struct Tile {
    pub(crate) k: usize,
    pub(crate) a: *const f32,
    pub(crate) rsa: usize,
    pub(crate) csa: usize,
    pub(crate) b: *const f32,
    pub(crate) rsb: usize,
    /// The offsets of this tile's rows of `B` from `b` (`k` of them), or null when they are
    /// `rsb` apart.
    pub(crate) b_rows: *const usize,
    /// The first of `pf_lines` cache lines of `B` to prefetch into L2, one per step of `k`:
    /// this tile's share of the slice of `B` that the next block of tiles reads.
    pub(crate) pf: *const f32,
    pub(crate) pf_lines: usize,
    /// Valid columns of the tile (`≤ nr`).
    pub(crate) cols: usize,
    pub(crate) c: *mut f32,
    pub(crate) ldc: usize,
    /// Whether this is the first block of `k` (the epilogue applies) or a later one (adds).
    pub(crate) first: bool,
    pub(crate) alpha: f32,
    pub(crate) beta: f32,
    /// `bias[j0]` for a per-column bias, null otherwise.
    pub(crate) bias_col: *const f32,
    /// `bias[i0]` for a per-row bias, null otherwise.
    pub(crate) bias_row: *const f32,
    pub(crate) bias_scale: f32,
    /// An activation the tile applies to its results as it stores them (a whole tile
    /// on its last block of `k`, see [`drive_panels`]); `None` otherwise.
    pub(crate) act: Activation,
    /// The roundings through `f16` around `act` that the tile applies with it.
    pub(crate) half: HalfRounding,
    /// Row blocks of `R` rows the call computes one after another over the same slice of `B`
    /// (more than one only for whole tiles over a packed `A`, [`Walk::run_blocks`]):
    /// block `q` reads `A` from `a + q·a_blk`, stores `C` from `c + q·R·ldc`, its per-row
    /// bias from `bias_row + q·R`, and prefetches from `pf + q·pf_blk`.
    pub(crate) blocks: usize,
    pub(crate) a_blk: usize,
    pub(crate) pf_blk: usize,
    /// With `blocks > 1`, the offset from each row of `C` a block stores of the line it
    /// fetches for writing first ([`C_AHEAD_PANELS`]), or 0 for none.
    pub(crate) c_ahead: usize,
}

impl Tile {
    /// Row block `q` of a call of [`Tile::blocks`] blocks of `rows` rows: the tile moved down
    /// `q` blocks. With [`Tile::c_ahead`], the lines of `C` that block stores that far on are
    /// fetched for writing first.
    #[inline(always)]
    pub(crate) fn enter_block(&self, rows: usize, q: usize) -> Tile {
        let mut tb = *self;
        if q > 0 {
            tb.a = self.a.wrapping_add(q * self.a_blk);
            tb.c = self.c.wrapping_add(q * rows * self.ldc);
            tb.pf = self.pf.wrapping_add(q * self.pf_blk);
            if !self.bias_row.is_null() {
                tb.bias_row = self.bias_row.wrapping_add(q * rows);
            }
        }
        if self.c_ahead != 0 {
            for i in 0..rows {
                prefetch_write(tb.c.wrapping_add(i * self.ldc + self.c_ahead));
            }
        }
        tb
    }
}

/// The post-ops of one tile, applied to it once its last block of `k` is stored.
pub(crate) struct PostTile {
    /// Valid columns of the tile (`≤ nr`).
    pub(crate) cols: usize,
    pub(crate) c: *mut f32,
    pub(crate) ldc: usize,
    /// The addend's element `(i0, j0)` (its rows `add_ld` apart), null without one.
    pub(crate) addend: *const f32,
    pub(crate) add_ld: usize,
    pub(crate) add_first: bool,
    pub(crate) act: Activation,
    pub(crate) half: HalfRounding,
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
pub(crate) unsafe fn drive(isa: Isa, raw: &Raw, pack: Option<&PackA<'_>>, ep: &Epilogue<'_>, post: &Post<'_>, c: *mut f32, ldc: usize) {
    // SAFETY: forwarded.
    unsafe { drive_split(isa, raw, pack, ep, post, c, ldc, PARALLEL_MIN_FMAS) }
}

/// [`drive`], splitting products of at least `split_min` multiply-adds across the team.
///
/// # Safety
/// As [`drive`].
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn drive_split(
    isa: Isa,
    raw: &Raw,
    pack: Option<&PackA<'_>>,
    ep: &Epilogue<'_>,
    post: &Post<'_>,
    c: *mut f32,
    ldc: usize,
    split_min: usize,
) {
    let panels = raw.n.div_ceil(isa.nr());
    let threads = crate::parallel::threads();
    let fmas = raw.m.saturating_mul(raw.n).saturating_mul(raw.k);
    if threads <= 1 || panels < 2 || fmas < split_min {
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
/// about a microsecond when a worker is awake, against ~40 µs of work at this size. At 2
/// threads on a Zen 3 host (medians of 200–400 calls, thresholds 2²³, 2²¹ and 2²⁰ alternated,
/// two rounds): with 2²³, the 1×1 convolutions of squeezenet (3–6 M multiply-adds each, a
/// sixth of its work) ran on one thread while the other spun; 2²¹ took squeezenet from
/// 11.4–11.5 ms to 10.3–10.5, mobilenet_v3_small from 4.8–5.5 to 4.1–4.6 and
/// bench_transformer from 2.5–2.6 to 1.8–2.1, with bench_resnet_tiny and bench_lstm_cell
/// within the noise; 2²⁰ was no better and slowed the LSTM cell's products.
pub(crate) const PARALLEL_MIN_FMAS: usize = 1 << 21;

/// [`PARALLEL_MIN_FMAS`] of a prepacked `A` times a `B` read in place, a 1×1 convolution:
/// such a product has no packing of `B` to share out and no weight to keep in one core's
/// cache, and the small networks' are all smaller than 2²¹ (shufflenet_v2_x0_5's 1×1
/// convolutions have about 2¹⁹ multiply-adds each, and ran on one thread of two).
pub(crate) const IN_PLACE_PARALLEL_MIN_FMAS: usize = 1 << 18;

impl Raw {
    /// Depth of the blocks of `k`: one block up to [`KC_ONE_BLOCK`], past that `k` split as
    /// evenly as possible into blocks of at most [`KC`]. A short last block would cost a pass over `C` for little work, and over rows
    /// of `B` at their own offsets (read unaligned, a line more a step than a packed panel's)
    /// two blocks of [`KC`] touched the whole L1 each (48 KiB a core on the AVX-512 Xeon with
    /// 32-wide rows): `gemm_shapes` on the Xeon (AVX-512, best of one run each), a 3×3
    /// convolution of 64 × 64 channels at 56 × 56 (`k` 576) ran at 49 % of the FMA peak in
    /// blocks of 256, 256 and 64, at 73–75 % in three of 192 (68 → 75 % on the AVX2 path).
    pub(crate) fn kc(&self) -> usize {
        if self.k <= KC_ONE_BLOCK { self.k } else { block_rows(self.k, KC) }
    }
}

/// Deepest `k` a product runs as one block, past [`KC`]: a second block would add to `C`
/// again for little work. 32 channels' 3 × 3 taps (288) had run as two blocks of 144; over
/// rows of `B` read in place (ResNet's 32 × 32 at 64 × 64, `gemm_shapes`, Zen 5, AVX-512)
/// 86 → 91 % of the FMA peak, as a packed slice (SqueezeNet's 128 × 288 expansion at
/// 27 × 27) 88 → 94 % (best of a run). Every product blocks `k` this way, so the paths that
/// compute one convolution keep giving the same bits.
const KC_ONE_BLOCK: usize = 320;

// SAFETY: `Raw` only reads through its pointers, and the operands are not written while a
// product runs.
unsafe impl Sync for Raw {}

/// Runs the tiles of column panels `panels` of a product.
///
/// # Safety
/// As [`drive`], with `panels` within `0..ceil(n / nr)`.
pub(crate) unsafe fn drive_panels(
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
    let has_post = !post.is_none();
    let prefetch_c = raw.m.saturating_mul(ldc).saturating_mul(std::mem::size_of::<f32>()) >= C_PREFETCH_MIN_BYTES;
    // The last panel of a `B` read in place, when it has more than half a panel's columns,
    // ends at column `n` instead of starting at a multiple of `nr`: it overlaps the panel
    // before and recomputes some of its columns, but its tiles load and store whole vectors
    // (masked loads on every step and masked stores, microcoded on AMD cores, cost such a
    // tile more than the columns it repeats). A recomputed column is the same operations in
    // the same order, so the same bits; it is stored again only where no tile adds to `C`
    // (one block of `k`, `beta` zero) and by the thread that owns the panel before.
    debug_assert!(!raw.b_tail_masked || raw.b_pnl == nr, "a B read in place has its panels nr apart");
    let kc = raw.kc();
    let total = raw.n.div_ceil(nr);
    let tail = raw.n % nr;
    let last_at = (raw.b_tail_masked
        && raw.n > nr
        && 2 * tail > nr
        && raw.k <= kc
        && ep.beta == 0.0
        && panels.end == total
        && panels.len() >= 2)
        .then(|| raw.n - nr);
    let w = Walk { isa, raw, ep, post, c, ldc, bias_col, bias_row, has_post, prefetch_c, last_at };
    let blocks = raw.m.div_ceil(mr);
    let group = group_blocks(raw, panels.len(), nr);
    // A `B` read in place whose slices meet enough row blocks is copied slice by slice into
    // a packed panel first (see [`PACK_SLICE_MIN_BLOCKS`]); the copy is the tiles' `B`.
    let mut scratch = if raw.b_tail_masked && raw.b_rows.is_null() && blocks >= PACK_SLICE_MIN_BLOCKS {
        let mut buf = SLICE_SCRATCH.take();
        let start = aligned_start(&mut buf, kc * nr);
        Some((buf, start))
    } else {
        None
    };
    let mut slice = |jp: usize, pc: usize, kb: usize| -> *const f32 {
        let Some((buf, start)) = scratch.as_mut() else { return std::ptr::null() };
        let dst = &mut buf[*start..*start + kb * nr];
        let j0 = w.panel_start(jp);
        let cols = nr.min(raw.n - j0);
        // SAFETY: rows `pc..pc + kb` of `B`, columns `j0..j0 + cols`, are inside its storage
        // (caller's contract), and nothing writes `B` while the product runs.
        let data = unsafe { std::slice::from_raw_parts(raw.b.add(j0 + pc * raw.rsb), (kb - 1) * raw.rsb + cols) };
        pack_into(MatView { data, off: 0, rows: kb, cols, rs: raw.rsb, cs: 1 }, nr, dst);
        dst.as_ptr()
    };
    if group >= blocks {
        // Panel by panel, so a packed `B` is read front to back in one stream; within a
        // panel, block by block of `k`, each block reused by every row block of `A`.
        for jp in panels {
            let mut pc = 0;
            while pc < raw.k {
                let kb = kc.min(raw.k - pc);
                // A packed `B` is one stream, the slice after this one (of this panel or the
                // next) being read next. Its lines are prefetched into L2 while this slice is
                // in use, shared evenly by the row blocks, so the first tile of each slice
                // does not wait for memory (a weight larger than L2 is read from memory on
                // every call). Addresses past the end of `B` are only hints: prefetches do
                // not fault.
                let b = raw.b.wrapping_add(jp * raw.b_pnl + pc * raw.rsb);
                let (next, lines) =
                    if raw.b_tail_masked { (b, 0) } else { (b.wrapping_add(kb * nr), (kb * nr / 16).div_ceil(blocks)) };
                let packed = slice(jp, pc, kb);
                // SAFETY: forwarded, for tiles inside the product.
                unsafe { w.run_blocks(jp, pc, kb, 0..blocks, next, lines, packed) };
                pc += kb;
            }
        }
        if let Some((buf, _)) = scratch {
            SLICE_SCRATCH.set(buf);
        }
        return;
    }
    // `A` is too large to stay in L2 while every panel passes over it: block by block of
    // `k`, a group of row blocks of `A` that fits L2 meets every panel's slice of `B` (which
    // fits there too) before the next group is read, so `A` comes from memory once a call,
    // not once a panel. Every tile is the same as in the order above, so are the results.
    let mut pc = 0;
    while pc < raw.k {
        let kb = kc.min(raw.k - pc);
        for g0 in (0..blocks).step_by(group) {
            for jp in panels.clone() {
                let packed = slice(jp, pc, kb);
                // SAFETY: as above.
                unsafe { w.run_blocks(jp, pc, kb, g0..(g0 + group).min(blocks), raw.b, 0, packed) };
            }
        }
        pc += kb;
    }
    if let Some((buf, _)) = scratch {
        SLICE_SCRATCH.set(buf);
    }
}

thread_local! {
    /// The packed slice of a `B` read in place ([`drive_panels`]), kept per thread across
    /// calls and taken out while a product runs.
    static SLICE_SCRATCH: std::cell::Cell<Vec<f32>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Row blocks a product needs for [`drive_panels`] to copy each slice of a `B` read in place
/// into a packed panel before its tiles read it.
pub(crate) const PACK_SLICE_MIN_BLOCKS: usize = 24;

/// Bytes of `A` a group of row blocks may span in the blocked order of [`drive_panels`]: a
/// quarter of the smallest L2 the vector paths meet (512 KiB a core on Zen 3), so the group
/// and the slice of `B` it meets stay there together.
const A_GROUP_BYTES: usize = 128 << 10;

/// Bytes of the slice of `B` (one block of `k`, every panel) that the blocked order keeps in
/// L2 while the groups of `A` pass over it.
const B_SLICE_BYTES: usize = 192 << 10;

/// Column panels of `B` (of `nr` columns, `k` rows) that the blocked order of
/// [`drive_panels`] can pass over a group of `A`'s `m` rows at once: `panels` capped by
/// [`B_SLICE_BYTES`], or one when `A` stays in L2 on its own.
pub(crate) fn panel_group(m: usize, k: usize, nr: usize, panels: usize) -> usize {
    let row_bytes = KC.min(k) * std::mem::size_of::<f32>();
    if m * row_bytes <= A_GROUP_BYTES {
        return 1;
    }
    (B_SLICE_BYTES / (row_bytes * nr)).clamp(1, panels.max(1))
}

/// Row blocks of `A` that [`drive_panels`] runs over every panel before going on: all of
/// them (the panel-by-panel order) unless `A`'s block of `k` is larger than
/// [`A_GROUP_BYTES`], there are several panels, and a slice of `B` across them fits
/// [`B_SLICE_BYTES`].
fn group_blocks(raw: &Raw, panels: usize, nr: usize) -> usize {
    let blocks = raw.m.div_ceil(raw.mr);
    if panels < 2 || panel_group(raw.m, raw.k, nr, panels) < panels {
        return blocks;
    }
    (A_GROUP_BYTES / (raw.mr * KC.min(raw.k) * std::mem::size_of::<f32>())).max(1)
}

/// What every tile of one [`drive_panels`] call shares.
struct Walk<'w> {
    isa: Isa,
    raw: &'w Raw,
    ep: &'w Epilogue<'w>,
    post: &'w Post<'w>,
    c: *mut f32,
    ldc: usize,
    bias_col: *const f32,
    bias_row: *const f32,
    has_post: bool,
    /// Whether tiles fetch their output lines ahead ([`C_AHEAD_PANELS`]): for outputs of at
    /// least [`C_PREFETCH_MIN_BYTES`].
    prefetch_c: bool,
    /// The first column of the last panel when it is moved to end at `n` (see
    /// [`drive_panels`]).
    last_at: Option<usize>,
}

impl Walk<'_> {
    /// The first column of panel `jp`.
    #[inline(always)]
    fn panel_start(&self, jp: usize) -> usize {
        let j0 = jp * self.isa.nr();
        match self.last_at {
            Some(at) if j0 > at => at,
            _ => j0,
        }
    }

    /// One tile: rows `ib·mr..` of column panel `jp`, over the block of `kb` steps of `k`
    /// from `pc`, prefetching `lines` lines of `B` from `next` (see [`drive_panels`]); `B`'s
    /// slice is `packed` (rows `nr` apart) unless that is null.
    ///
    /// # Safety
    /// As [`drive`], for a tile inside the product.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn run(&self, jp: usize, pc: usize, kb: usize, ib: usize, next: *const f32, lines: usize, packed: *const f32) {
        // SAFETY: forwarded.
        unsafe { self.run_n(jp, pc, kb, ib, 1, next, lines, packed) }
    }

    /// The tiles of row blocks `ibs` of column panel `jp` over the block of `kb` steps of `k`
    /// from `pc`, as [`Walk::run`] runs each: for `k` of at most [`MULTI_BLOCK_MAX_K`], the
    /// whole tiles of a panel over a packed `A` go to the microkernel in one call, which
    /// walks the row blocks itself (the walk and the call cost such a tile about as much as
    /// a third of its multiply-adds).
    ///
    /// # Safety
    /// As [`drive`], for row blocks inside the product.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn run_blocks(&self, jp: usize, pc: usize, kb: usize, ibs: std::ops::Range<usize>, next: *const f32, lines: usize, packed: *const f32) {
        let raw = self.raw;
        let nr = self.isa.nr();
        let last = pc + kb == raw.k;
        // The blocks of `mr` rows from the first (all of them but a shorter last one).
        let whole = (raw.m / raw.mr).min(ibs.end).saturating_sub(ibs.start);
        let together = raw.a_packed
            && kb <= MULTI_BLOCK_MAX_K
            && whole >= 2
            && raw.n - self.panel_start(jp) >= nr
            && (!self.has_post || !last || (self.post.addend.is_none() && in_register(self.post.act)));
        let mut ib = ibs.start;
        if together {
            // SAFETY: forwarded, for `whole` blocks of `mr` rows inside the product.
            unsafe { self.run_n(jp, pc, kb, ib, whole, next, lines, packed) };
            ib += whole;
        }
        for ib in ib..ibs.end {
            // SAFETY: forwarded.
            unsafe { self.run(jp, pc, kb, ib, next, lines, packed) };
        }
    }

    /// [`Walk::run`] for `count` consecutive row blocks from `ib`, in one call of the
    /// microkernel when `count > 1` (whole tiles over a packed `A` whose post-ops the
    /// tile applies, [`Walk::run_blocks`]).
    ///
    /// # Safety
    /// As [`Walk::run`].
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn run_n(&self, jp: usize, pc: usize, kb: usize, ib: usize, count: usize, next: *const f32, lines: usize, packed: *const f32) {
        let Walk { isa, raw, ep, post, c, ldc, bias_col, bias_row, has_post, .. } = *self;
        let (mr, nr) = (raw.mr, isa.nr());
        let j0 = self.panel_start(jp);
        let cols = nr.min(raw.n - j0);
        let masked = raw.b_tail_masked && cols < nr && packed.is_null();
        let indirect = !raw.b_rows.is_null();
        // A `B` read in place has its panels `nr` apart (`b_pnl == nr`), so a moved last
        // panel starts at its first column.
        let panel = if j0 == jp * nr { jp * raw.b_pnl } else { j0 };
        let (b, rsb) = if packed.is_null() {
            (raw.b.wrapping_add(panel + if indirect { 0 } else { pc * raw.rsb }), raw.rsb)
        } else {
            (packed, nr)
        };
        let i0 = ib * mr;
        let rows = mr.min(raw.m - i0);
        // SAFETY (all offsets below): in bounds by the caller's contract.
        let mut t = unsafe {
            Tile {
                k: kb,
                a: raw.a.add(ib * raw.a_blk + pc * raw.csa),
                rsa: raw.rsa,
                csa: raw.csa,
                b,
                rsb,
                b_rows: if indirect { raw.b_rows.add(pc) } else { raw.b_rows },
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
                act: Activation::None,
                half: HalfRounding::NONE,
                blocks: count,
                a_blk: raw.a_blk,
                pf_blk: lines * 16,
                c_ahead: 0,
            }
        };
        let mut p = (has_post && pc + kb == raw.k).then(|| post.tile(t.c, ldc, i0, j0, cols));
        // A whole tile applies a short activation without an addend in registers as it
        // stores its results: read back as post-ops, the just-stored tile cost a ReLU after
        // a small-`k` convolution (AVX2, Zen 3) about a quarter of the product's time. The
        // AVX-512 tiles do so for a partial panel too (their masked stores are cheap; with
        // AVX2 a partial tile stores through a slower path without it).
        if let Some(q) = &p
            && (cols == nr || isa == Isa::Avx512)
            && q.addend.is_null()
            && in_register(q.act)
        {
            t.act = q.act;
            t.half = q.half;
            p = None;
        }
        debug_assert!(count == 1 || (p.is_none() && rows == mr && cols == nr && raw.a_packed));
        if count > 1 {
            if self.prefetch_c && pc + kb == raw.k {
                t.c_ahead = C_AHEAD_PANELS * nr;
            }
            // SAFETY: forwarded; the caller passes only whole blocks inside the product.
            unsafe { tile(isa, rows, masked, raw.a_packed, &t) };
            return;
        }
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
        if self.prefetch_c && pc + kb == raw.k {
            // The lines of `C` this row block stores [`C_AHEAD_PANELS`] panels on are fetched
            // for writing now: an output larger than L2 is otherwise read in from memory
            // one partial line at a time by the tile's stores, and they wait for it.
            for i in 0..rows {
                prefetch_write(t.c.wrapping_add(i * ldc + C_AHEAD_PANELS * nr));
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
}

/// Whether a tile applies `act` to its results in registers.
fn in_register(act: Activation) -> bool {
    matches!(act, Activation::None | Activation::Relu | Activation::Clamp(..) | Activation::Hardswish | Activation::HardswishProductFirst)
}

/// Deepest block of `k` whose whole tiles [`Walk::run_blocks`] passes to the microkernel
/// several row blocks at a time.
pub(crate) const MULTI_BLOCK_MAX_K: usize = 64;

/// Dispatches one tile to the kernel instance for its row count, masking and reading of `A`.
///
/// # Safety
/// As [`drive`]; `rows` is in `1..=isa.mr()` for a packed `A`, `1..=isa.mr_in_place()`
/// otherwise.
#[allow(unused_variables)]
pub(crate) unsafe fn tile(isa: Isa, rows: usize, masked: bool, a_packed: bool, t: &Tile) {
    #[cfg(target_arch = "x86_64")]
    {
        // The last row count also takes the rows it does not list; its masked instance is
        // exact for unmasked tiles too (a packed `B` is padded, and the masks cover `cols`).
        macro_rules! by_rows {
            ($m:ident :: $f:ident, $packed:literal, $($r:literal)*; $last:literal) => {
                // SAFETY: forwarded from the caller.
                unsafe {
                    match (rows, masked) {
                        $(($r, false) => $m::$f::<$r, false, $packed>(t),
                        ($r, true) => $m::$f::<$r, true, $packed>(t),)*
                        ($last, false) => $m::$f::<$last, false, $packed>(t),
                        _ => $m::$f::<$last, true, $packed>(t),
                    }
                }
            };
        }
        debug_assert!(rows >= 1 && rows <= if a_packed { isa.mr() } else { isa.mr_in_place() });
        debug_assert!(isa.mr() <= MAX_MR && isa.mr_in_place() <= isa.mr());
        // A last panel of at most half a panel's columns runs the tiles of one vector a row.
        let narrow = 2 * t.cols <= isa.nr();
        if !t.b_rows.is_null() {
            // Rows of `B` at their own offsets: tiles over a packed `A` only.
            debug_assert!(a_packed);
            match (isa, narrow) {
                (Isa::Avx512, true) => by_rows!(avx512::tile_avx512_narrow_rows, true, 1 2 3 4 5 6 7 8 9 10 11 12 13; 14),
                (Isa::Avx512, false) => by_rows!(avx512::tile_avx512_rows, true, 1 2 3 4 5 6 7 8 9 10 11 12 13; 14),
                (Isa::Avx2, true) => by_rows!(avx2::tile_avx2_narrow_rows, true, 1 2 3 4 5; 6),
                (Isa::Avx2, false) => by_rows!(avx2::tile_avx2_rows, true, 1 2 3 4 5; 6),
                (Isa::Generic, _) => unreachable!("packing refuses the generic path"),
            }
            return;
        }
        match (isa, a_packed) {
            (Isa::Avx512, true) if narrow => by_rows!(avx512::tile_avx512_narrow, true, 1 2 3 4 5 6 7 8 9 10 11 12 13; 14),
            (Isa::Avx512, false) if narrow => by_rows!(avx512::tile_avx512_narrow, false, 1 2 3 4 5 6 7; 8),
            (Isa::Avx512, true) => by_rows!(avx512::tile_avx512, true, 1 2 3 4 5 6 7 8 9 10 11 12 13; 14),
            (Isa::Avx512, false) => by_rows!(avx512::tile_avx512, false, 1 2 3 4 5 6 7; 8),
            (Isa::Avx2, true) if narrow => by_rows!(avx2::tile_avx2_narrow, true, 1 2 3 4 5; 6),
            (Isa::Avx2, false) if narrow => by_rows!(avx2::tile_avx2_narrow, false, 1 2 3 4 5; 6),
            (Isa::Avx2, true) => by_rows!(avx2::tile_avx2, true, 1 2 3 4 5; 6),
            (Isa::Avx2, false) => by_rows!(avx2::tile_avx2, false, 1 2 3 4 5; 6),
            (Isa::Generic, _) => unreachable!("packing refuses the generic path"),
        }
    }
}

/// A hint to fetch the cache line holding `p` into L1 (it never faults, whatever `p` is).
#[inline(always)]
pub fn prefetch_l1(p: *const f32) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch does not access memory architecturally and never faults.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Column panels ahead of a tile whose lines of `C` it fetches for writing.
const C_AHEAD_PANELS: usize = 2;

/// Outputs of at least this many bytes (half the smallest L2 the vector paths meet) have their
/// lines fetched ahead for writing; a smaller one stays in cache from call to call, and the
/// prefetches would only cost the tiles of small products their issue slots.
const C_PREFETCH_MIN_BYTES: usize = 256 << 10;

/// A hint to fetch the cache line holding `p` for writing (it never faults, whatever `p` is).
#[inline(always)]
pub fn prefetch_write(p: *mut f32) {
    // `prefetchw` by hand: the intrinsic's write hint needs the `prfchw` feature enabled in
    // the caller, and is a plain read prefetch otherwise. CPUs without the instruction
    // (Intel's before Broadwell) run it as a no-op.
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch does not access memory architecturally and never faults.
    unsafe {
        std::arch::asm!("prefetchw [{p}]", p = in(reg) p, options(nostack, preserves_flags, readonly))
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
pub(crate) unsafe fn post_tile(isa: Isa, rows: usize, p: &PostTile) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: forwarded from the caller.
    unsafe {
        match isa {
            // The post-ops round through `f16` in registers.
            Isa::Avx2 => avx2::post_avx2(p, rows),
            Isa::Avx512 => avx512::post_avx512(p, rows),
            Isa::Generic => unreachable!("post-ops run in tiles only on a vector path"),
        }
    }
}
