//! Softmax of `f32` rows: each row in three passes (maximum, `exp(x - max)` and its sum,
//! the scaling by the sum's reciprocal), with AVX-512F or AVX2 intrinsics where the ISA has
//! them and the portable row compiled for the current vector width otherwise; the same bits
//! on every path.

use crate::isa::Isa;

/// The rows of `n` elements of `src` softmaxed into `out` (same length), each in three passes
/// compiled for the widest vectors (`wide::widest`): the row maximum over 16 lanes (NaN if any
/// element is NaN), then `exp(x - max)` written and summed over 16 lanes in one pass, then
/// the product with the reciprocal of the sum. With many rows and more than one thread the
/// rows are split across the intra-op team, whole rows per task, so each row's result does
/// not depend on the split.
pub fn rows_into(src: &[f32], n: usize, out: &mut [f32]) {
    let n = n.max(1);
    let rows = |src: &[f32], out: &mut [f32]| rows_serial(src, n, out);
    let count = src.len().min(out.len()) / n;
    let threads = crate::parallel::threads();
    if threads <= 1 || count < 2 || count * n < PARALLEL_MIN {
        rows(src, out);
        return;
    }
    let tasks = (threads * 4).min(count);
    let dst = crate::parallel::SharedOut(out.as_mut_ptr());
    crate::parallel::for_each(tasks, |t| {
        let (r0, r1) = (count * t / tasks, count * (t + 1) / tasks);
        // SAFETY: `out` holds at least `count·n` elements and the tasks' row ranges are disjoint.
        let o = unsafe { std::slice::from_raw_parts_mut(dst.get().add(r0 * n), (r1 - r0) * n) };
        rows(&src[r0 * n..r1 * n], o);
    });
}

/// The rows of `n ≥ 1` elements of `src` softmaxed into `out` on the calling thread, as
/// [`rows_into`] computes each row (the fused attention kernel's rows).
pub fn rows_serial(src: &[f32], n: usize, out: &mut [f32]) {
    let n = n.max(1);
    #[cfg(target_arch = "x86_64")]
    if Isa::Avx512.available() {
        for (row, o) in src.chunks(n).zip(out.chunks_mut(n)) {
            // SAFETY: the CPU has AVX-512F (checked just above).
            unsafe { crate::x86::avx512::softmax_row(row, o) };
        }
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if Isa::Avx2.available() {
        for (row, o) in src.chunks(n).zip(out.chunks_mut(n)) {
            // SAFETY: the CPU has AVX2 (checked just above).
            unsafe { crate::x86::avx2::softmax_row(row, o) };
        }
        return;
    }
    crate::wide::widest(
        #[inline(always)]
        || {
            for (row, o) in src.chunks(n).zip(out.chunks_mut(n)) {
                one_row(row, o);
            }
        },
    )
}

/// Softmaxes of at least this many elements split their rows across threads (as the JIT's
/// kernels split from 16 Ki elements; a row costs about as much per element as a kernel with
/// one `exp`).
const PARALLEL_MIN: usize = 1 << 14;

/// One row of [`rows_into`].
#[inline(always)]
pub(crate) fn one_row(row: &[f32], o: &mut [f32]) {
    const LANES: usize = 16;
    let pick = |a: f32, b: f32| if b > a || b.is_nan() { b } else { a };
    let mut lanes = [f32::NEG_INFINITY; LANES];
    let mut body = row.chunks_exact(LANES);
    for c in &mut body {
        for (l, &x) in lanes.iter_mut().zip(c) {
            *l = pick(*l, x);
        }
    }
    let m = body.remainder().iter().chain(&lanes).copied().fold(f32::NEG_INFINITY, pick);
    let m = if m.is_infinite() { 0.0 } else { m };
    let exp = crate::fastmath::exp_f32;
    let mut sums = [0f32; LANES];
    let mut dst = o.chunks_exact_mut(LANES);
    let mut body = row.chunks_exact(LANES);
    for (d, c) in (&mut dst).zip(&mut body) {
        for ((s, y), &x) in sums.iter_mut().zip(d.iter_mut()).zip(c) {
            let e = exp(x - m);
            *y = e;
            *s += e;
        }
    }
    let mut tail = 0f32;
    for (y, &x) in dst.into_remainder().iter_mut().zip(body.remainder()) {
        let e = exp(x - m);
        *y = e;
        tail += e;
    }
    let inv = 1.0 / (crate::wide::fold_lanes(sums) + tail);
    for y in o.iter_mut() {
        *y *= inv;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa;

    /// Rows of many lengths softmaxed on every ISA this host runs have the generic path's bits.
    #[test]
    fn every_isa_gives_the_bits_of_the_generic_rows() {
        let n = 37;
        let src: Vec<f32> = (0..n * 45).map(|i| ((i * 7919) % 211) as f32 * 0.11 - 9.0).collect();
        let run = |path| {
            let mut out = vec![0f32; src.len()];
            isa::with(path, || rows_into(&src, n, &mut out));
            out.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        };
        let want = run(Isa::Generic);
        for path in Isa::supported() {
            assert_eq!(run(path), want, "{path}");
        }
    }

    /// The AVX-512 and AVX2 rows against the portable one, bit for bit (any NaN for NaN): every length
    /// up to 70 (no full vector, full vectors only, both with a partial one), rows with `-inf`
    /// (a causal mask, all of a row), NaN (one, several), signed zeros (whose maximum the
    /// ordered fold picks), values that under- and overflow `exp`.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx512_and_avx2_rows_match_the_portable_rows() {
        if !Isa::Avx2.available() {
            return;
        }
        let avx512 = Isa::Avx512.available();
        let special = [f32::NEG_INFINITY, f32::NAN, 0.0, -0.0, 100.0, -100.0, f32::INFINITY, 1e-40];
        for n in 0..=70usize {
            for case in 0..14 {
                let src: Vec<f32> = (0..n)
                    .map(|j| match case {
                        0 => (j as f32 * 0.37).sin() * 4.0,
                        1 if j > n / 2 => f32::NEG_INFINITY,
                        2 => f32::NEG_INFINITY,
                        3..=10 if j == (case * 7) % n.max(1) => special[case - 3],
                        11 => 0.0,
                        12 => if j % 3 == 1 { 0.0 } else { -0.0 },
                        13 if j % 5 == 2 => f32::NAN,
                        _ => ((j * 31 + case) % 23) as f32 * 3.5 - 40.0,
                    })
                    .collect();
                let (mut want, mut got) = (vec![0f32; n], vec![0f32; n]);
                crate::wide::compiled_for(Isa::Generic, || one_row(&src, &mut want));
                // NaN payloads may differ with the order of an addition's operands.
                let bits =
                    |v: &[f32]| v.iter().map(|x| if x.is_nan() { u32::MAX } else { x.to_bits() }).collect::<Vec<_>>();
                if avx512 {
                    // SAFETY: the CPU has AVX-512F (checked above).
                    unsafe { crate::x86::avx512::softmax_row(&src, &mut got) };
                    assert_eq!(bits(&got), bits(&want), "n = {n}, case {case}: {src:?}");
                }
                // SAFETY: the CPU has AVX2 (checked above).
                unsafe { crate::x86::avx2::softmax_row(&src, &mut got) };
                assert_eq!(bits(&got), bits(&want), "AVX2, n = {n}, case {case}: {src:?}");
            }
        }
    }
}
