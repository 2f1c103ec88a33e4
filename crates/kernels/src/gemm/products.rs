//! The entry points of the packed GEMM: products with a prepacked right or left operand, and
//! products of two activations (packed per call when that pays).

use crate::mat::MatView;
use super::*;

/// Products with a prepacked `B` of at least this many column panels pack `A` first, into
/// the row panels [`PackedA`] uses. Every panel of `B` reads all of `A`; read in place, the
/// rows of a row block are the row stride apart, which for the power-of-two widths of neural
/// networks puts them in a few cache sets, so `A` falls out of L1 between panels. Packing
/// costs about one panel's multiply-adds, and measured on the products of the benchmark
/// programs (`benches/gemm.rs`) it paid from 24 panels on (`64 × 512 · 512 × 2048`: 64 panels,
/// −5 %; `128 × 256 · 256 × 768`: 24 panels, −2 %; `· 256 × 1024`: 32 panels, −3 %) and
/// lost below (8 panels, `· 256 × 256` and `128 × 1024 · 1024 × 256`: +10 % and +6 %).
pub(crate) const PACK_A_MIN_PANELS: usize = 16;

/// Most elements of `A` packed at once (4 MiB): larger left operands are packed and
/// multiplied a band of rows at a time.
pub(crate) const A_PACK_MAX: usize = 1 << 20;

thread_local! {
    /// The packed left operand of [`gemm_packed_b`], kept per thread across calls. It is taken
    /// out while a product runs, so a product started on the same thread meanwhile (a rayon
    /// worker stealing work) finds it empty and allocates its own.
    static A_SCRATCH: std::cell::Cell<Vec<f32>> = const { std::cell::Cell::new(Vec::new()) };
}

/// `C[m×n]` (rows `ldc` apart) `= alpha·A·B + bias + beta·C`, with `B` prepacked.
pub fn gemm_packed_b(
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
pub fn gemm_packed_b_post(
    op: &'static str,
    a: MatView<'_, f32>,
    b: &PackedB,
    ep: &Epilogue<'_>,
    post: &Post<'_>,
    c: &mut [f32],
    ldc: usize,
) -> Result<()> {
    if a.cols != b.k {
        return Err(Error::new(op, format!("cannot multiply {}x{} and {}x{} matrices", a.rows, a.cols, b.k, b.n)));
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
        b_rows: std::ptr::null(),
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

/// `C[m×n]` (rows `ldc` apart) `= alpha·A·B + bias + beta·C`, with `A` prepacked; `B` must
/// have unit column stride.
pub fn gemm_packed_a(
    op: &'static str,
    a: &PackedA,
    b: MatView<'_, f32>,
    ep: &Epilogue<'_>,
    c: &mut [f32],
    ldc: usize,
) -> Result<()> {
    gemm_packed_a_post(op, a, b, ep, &Post::NONE, c, ldc)
}

/// [`gemm_packed_a`] followed by `post` on every result, applied tile by tile.
pub fn gemm_packed_a_post(
    op: &'static str,
    a: &PackedA,
    b: MatView<'_, f32>,
    ep: &Epilogue<'_>,
    post: &Post<'_>,
    c: &mut [f32],
    ldc: usize,
) -> Result<()> {
    if b.rows != a.k {
        return Err(Error::new(op, format!("cannot multiply {}x{} and {}x{} matrices", a.m, a.k, b.rows, b.cols)));
    }
    if b.cs != 1 && b.cols > 1 {
        return Err(Error::new(op, "internal error: the right operand of a prepacked product needs unit column stride"));
    }
    let (m, n, k) = (a.m, b.cols, a.k);
    check_addend(op, m, n, post)?;
    if settled_post(op, (m, n, k), ep, post, c, ldc)? {
        return Ok(());
    }
    let nr = a.isa.nr();
    // SAFETY: `MatView::new` checked that every element of `b` lies inside its storage.
    let b_ptr = unsafe { b.data.as_ptr().add(b.off) };
    let raw = times_packed_a(a, n, b_ptr, nr, b.rs, std::ptr::null(), true);
    // SAFETY: the packed panels hold `ceil(m/mr)·k·mr` elements; `B`'s row `p < k` columns
    // `j0..j0+nr` are read whole only when `j0 + nr ≤ n` (the last partial panel is masked),
    // inside its storage; `c` holds `m` rows of `ldc ≥ n`, the addend of `post` as many
    // (`check_addend`); `a.isa` was available at packing.
    unsafe { drive_split(a.isa, &raw, None, ep, post, c.as_mut_ptr(), ldc, IN_PLACE_PARALLEL_MIN_FMAS) };
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
pub fn gemm_activations(
    op: &'static str,
    isa: Isa,
    a: MatView<'_, f32>,
    b: MatView<'_, f32>,
    ep: &Epilogue<'_>,
    c: &mut [f32],
    ldc: usize,
) -> Result<()> {
    if a.cols != b.rows {
        return Err(Error::new(op, format!("cannot multiply {}x{} and {}x{} matrices", a.rows, a.cols, b.rows, b.cols)));
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
            b_rows: std::ptr::null(),
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
pub unsafe fn gemm_packed_a_panels(
    op: &'static str,
    a: &PackedA,
    b: &[f32],
    n: usize,
    ep: &Epilogue<'_>,
    c: *mut f32,
    ldc: usize,
) -> Result<()> {
    // SAFETY: forwarded.
    unsafe { gemm_packed_a_panels_post(op, a, b, n, ep, &Post::NONE, c, ldc) }
}

/// [`gemm_packed_a_panels`] followed by `post` on every result, applied tile by tile.
///
/// # Safety
/// As [`gemm_packed_a_panels`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm_packed_a_panels_post(
    op: &'static str,
    a: &PackedA,
    b: &[f32],
    n: usize,
    ep: &Epilogue<'_>,
    post: &Post<'_>,
    c: *mut f32,
    ldc: usize,
) -> Result<()> {
    let (m, k, nr) = (a.m, a.k, a.isa.nr());
    if checked_len(op, &[n.div_ceil(nr), k, nr])? > b.len() {
        return Err(Error::new(op, "internal error: the column panels are shorter than the product needs"));
    }
    check_output(op, m, n, ldc, ep, post)?;
    if m == 0 || n == 0 {
        return Ok(());
    }
    if k == 0 {
        for i in 0..m {
            // SAFETY: row `i < m` of `C` is valid for `n ≤ ldc` elements (caller's contract).
            let row = unsafe { std::slice::from_raw_parts_mut(c.add(i * ldc), n) };
            epilogue_only(1, n, &Epilogue { bias: bias_from(ep.bias, i), ..*ep }, row, n);
            post.rows_from(i).apply_to(op, 1, n, row, n)?;
        }
        return Ok(());
    }
    let raw = times_packed_a(a, n, b.as_ptr(), k * nr, nr, std::ptr::null(), false);
    // SAFETY: the packed panels of `A` hold `ceil(m/mr)·k·mr` elements and `b` holds
    // `ceil(n/nr)·k·nr` (checked above); `c` holds `m` rows of `ldc ≥ n` (caller's contract);
    // `a.isa` was available when `A` was packed; the addend of `post` covers `m` rows of `n`
    // (`check_addend`).
    unsafe { drive(a.isa, &raw, None, ep, post, c, ldc) };
    Ok(())
}

/// `C[m×n]` (rows `ldc` apart) `= alpha·A·B + bias + beta·C` followed by `post`, with `A`
/// prepacked and `B` read in place with its rows at their own offsets: row `p`,
/// columns `j`, is `b[rows[p] + j]`. A stride-1 convolution's column matrix, one output row
/// at a time, is such a `B` over a zero-padded copy of its input (row `c·K + tap` the run of
/// the padded input that the tap reads), so nothing is packed per call. Every tile computes
/// the sums of [`gemm_packed_a_panels_post`] in the same order: the results are its bits.
///
/// Products split across the team by their callers only (one call is one convolution row).
///
/// # Safety
/// As [`gemm_packed_a_panels`] (every row of `B`, wherever it starts, must be readable for `n`
/// elements inside `b`, which is checked).
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm_packed_a_rows_post(
    op: &'static str,
    a: &PackedA,
    b: &[f32],
    rows: &[usize],
    n: usize,
    ep: &Epilogue<'_>,
    post: &Post<'_>,
    c: *mut f32,
    ldc: usize,
) -> Result<()> {
    // SAFETY: forwarded.
    unsafe { rows_post(op, a, b, rows, n, ep, post, c, ldc, usize::MAX) }
}

/// [`gemm_packed_a_rows_post`] for one product over a whole image (a convolution's output
/// rows as one run of columns): split by column panels across the intra-op team when it is
/// large enough, as [`gemm_packed_a_post`] splits. Must not be called from inside a task of
/// the team.
///
/// # Safety
/// As [`gemm_packed_a_rows_post`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm_packed_a_rows_split_post(
    op: &'static str,
    a: &PackedA,
    b: &[f32],
    rows: &[usize],
    n: usize,
    ep: &Epilogue<'_>,
    post: &Post<'_>,
    c: *mut f32,
    ldc: usize,
) -> Result<()> {
    // SAFETY: forwarded.
    unsafe { rows_post(op, a, b, rows, n, ep, post, c, ldc, IN_PLACE_PARALLEL_MIN_FMAS) }
}

/// [`gemm_packed_a_rows_post`], split across the team from `split_min` multiply-adds.
///
/// # Safety
/// As [`gemm_packed_a_rows_post`].
#[allow(clippy::too_many_arguments)]
unsafe fn rows_post(
    op: &'static str,
    a: &PackedA,
    b: &[f32],
    rows: &[usize],
    n: usize,
    ep: &Epilogue<'_>,
    post: &Post<'_>,
    c: *mut f32,
    ldc: usize,
    split_min: usize,
) -> Result<()> {
    let (m, k) = (a.m, a.k);
    if rows.len() != k || rows.iter().max().is_some_and(|&r| r.checked_add(n).is_none_or(|end| end > b.len())) {
        return Err(Error::new(op, "internal error: a row of the right operand lies outside it"));
    }
    if k == 0 {
        // SAFETY: forwarded; an empty sum reads no row of `B`.
        return unsafe { gemm_packed_a_panels_post(op, a, &[], n, ep, post, c, ldc) };
    }
    check_output(op, m, n, ldc, ep, post)?;
    if m == 0 || n == 0 {
        return Ok(());
    }
    let raw = times_packed_a(a, n, b.as_ptr(), a.isa.nr(), 0, rows.as_ptr(), true);
    // SAFETY: the packed panels of `A` hold `ceil(m/mr)·k·mr` elements; row `p < k` of `B`,
    // columns `j0..j0+nr`, is read whole only when `j0 + nr ≤ n` (the last partial panel is
    // masked), inside `b` (checked above); `c` holds `m` rows of `ldc ≥ n` (caller's
    // contract); `a.isa` was available when `A` was packed; the addend of `post` covers
    // `m` rows of `n` (`check_addend`).
    unsafe { drive_split(a.isa, &raw, None, ep, post, c, ldc, split_min) };
    Ok(())
}

/// The operands of the prepacked `a` times a `B` of `n` columns at `b`: column panels `b_pnl`
/// apart, rows `rsb` apart (or at the offsets `b_rows`), a last partial panel loaded with masks
/// when `b_tail_masked`.
fn times_packed_a(a: &PackedA, n: usize, b: *const f32, b_pnl: usize, rsb: usize, b_rows: *const usize, b_tail_masked: bool) -> Raw {
    Raw {
        m: a.m,
        n,
        k: a.k,
        mr: a.mr,
        a_packed: true,
        a: a.buf.slice().as_ptr(),
        a_blk: a.mr * a.k,
        rsa: 1,
        csa: a.mr,
        b,
        b_pnl,
        rsb,
        b_rows,
        b_tail_masked,
    }
}

/// The checks of a product into a `C` given by pointer: rows of at least `n` elements, a bias
/// and an addend that cover the `m × n` result.
fn check_output(op: &'static str, m: usize, n: usize, ldc: usize, ep: &Epilogue<'_>, post: &Post<'_>) -> Result<()> {
    if m > 0 && n > 0 && ldc < n {
        return Err(Error::new(op, "output buffer is too small"));
    }
    check_bias(op, m, n, ep)?;
    check_addend(op, m, n, post)
}
