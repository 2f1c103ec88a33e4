//! Convolution as GEMM per (batch, group) over a column matrix built band by band: the path of
//! every dtype and of filters that are not prepacked.

use super::*;

/// One image's product for one group: the group's input channels `xg` times its filter into
/// its `cout/groups` output channels `out` (leading dimension `g.out_numel()`). A 1×1 stride-1
/// convolution multiplies the input itself; the others go band after band of `band` output
/// rows through the column tile `col`. `f(b, c)` multiplies the filter by `b` into `c`.
#[allow(clippy::too_many_arguments)]
pub(super) fn group_product<T: ConvElem>(
    op: &'static str,
    g: &Geometry,
    xg: &[T],
    direct: bool,
    band: usize,
    col: &mut [T],
    out: &mut [T],
    mut f: impl FnMut(MatView<'_, T>, &mut [T]) -> Result<()>,
) -> Result<()> {
    let (cin_g, cout_g) = (g.cin / g.groups, g.cout / g.groups);
    let (k, lout) = (g.kernel_numel(), g.out_numel());
    if direct {
        return f(MatView::new(op, xg, 0, cin_g, lout, lout, 1)?, out);
    }
    if cout_g == 0 {
        return Ok(());
    }
    let [od, oh, ow] = g.output;
    let rows = od * oh;
    let mut r0 = 0;
    while r0 < rows {
        let r1 = (r0 + band).min(rows);
        let cols = (r1 - r0) * ow;
        let tile = &mut col[..cin_g * k * cols];
        im2col_rows(xg, g, cin_g, r0, r1, tile);
        let b = MatView::new(op, tile, 0, cin_g * k, cols, cols, 1)?;
        f(b, &mut out[r0 * ow..(cout_g - 1) * lout + r1 * ow])?;
        r0 = r1;
    }
    Ok(())
}

/// Runs the convolution described by `g` over contiguous input, weight and optional bias,
/// writing the contiguous `[N, Cout, out...]` result into `out`.
pub(crate) fn conv_compute<T: ConvElem>(
    op: &'static str,
    g: &Geometry,
    x: &[T],
    w: &[T],
    bias: Option<&[T]>,
    out: &mut [T],
) -> Result<()> {
    let (cin_g, cout_g) = (g.cin / g.groups, g.cout / g.groups);
    let k = g.kernel_numel();
    let (lin, lout) = (g.in_numel(), g.out_numel());
    if let Some(done) = depthwise::try_depthwise(op, g, x, w, bias, out) {
        return done;
    }
    if let Some(b) = bias {
        for (i, chunk) in out.chunks_mut(lout.max(1)).enumerate() {
            chunk.fill(b[i % g.cout]);
        }
    }
    let beta = if bias.is_some() { T::ONE } else { T::ZERO };
    if !g.transposed {
        let (direct, band) = (g.direct(), g.band());
        let mut col = if direct { Vec::new() } else { vec![T::ZERO; cin_g * k * band * g.output[2]] };
        for n in 0..g.n {
            for grp in 0..g.groups {
                let xg = &x[(n * g.cin + grp * cin_g) * lin..(n * g.cin + (grp + 1) * cin_g) * lin];
                let a = MatView::new(op, w, grp * cout_g * cin_g * k, cout_g, cin_g * k, cin_g * k, 1)?;
                let o = (n * g.cout + grp * cout_g) * lout;
                group_product(op, g, xg, direct, band, &mut col, &mut out[o..o + cout_g * lout], |b, c| {
                    T::gemm(op, a, b, beta, c, lout)
                })?;
            }
        }
    } else {
        // weight: [Cin, Cout/groups, k...]; per group a [cin_g, cout_g·K] matrix.
        let mut col = vec![T::ZERO; cout_g * k * lin];
        for n in 0..g.n {
            for grp in 0..g.groups {
                let xg = &x[(n * g.cin + grp * cin_g) * lin..(n * g.cin + (grp + 1) * cin_g) * lin];
                let b = MatView::new(op, xg, 0, cin_g, lin, lin, 1)?;
                let wg = MatView::new(op, w, grp * cin_g * cout_g * k, cin_g, cout_g * k, cout_g * k, 1)?;
                T::gemm(op, wg.t(), b, T::ZERO, &mut col, lin)?;
                let o = (n * g.cout + grp * cout_g) * lout;
                col2im(&col, g, cout_g, &mut out[o..o + cout_g * lout]);
            }
        }
    }
    Ok(())
}
