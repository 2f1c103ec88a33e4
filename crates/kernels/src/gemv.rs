//! Batch-1 `f32` matrix-vector products: `y = x·B` for one row `x` of `k` values and a `k × n`
//! matrix `B` whose rows are contiguous — a constant weight prepacked into the column panels of
//! `crate::gemm` ([`PackedB`]), or a matrix read in place (`linalg`'s matrix-vector shapes).
//!
//! The outputs are computed a block of up to [`GROUPS`] groups of 16 columns at a time: the
//! block's sums stay in vector registers while the loop streams the block's columns of `B` over
//! all of `k`, one multiply-add per group and step against the broadcast `x[p]`, and are stored
//! once at the end. Every output's sum is `fma(x[k-1], b[k-1], … fma(x[0], b[0], 0))`, in this
//! order, on every path (AVX-512F, AVX2 with FMA, and the portable loop with or without FMA), so
//! the result is the same bits whatever the path, the blocking or the number of threads.
//!
//! Products of at least [`PARALLEL_MIN_FMAS`] multiply-adds split their column groups across
//! the intra-op team with a pinned assignment ([`crate::parallel::for_each_pinned`]): thread `t`
//! computes the same columns on every call, so when a program runs the same products again each
//! core finds its share of the weights where it left them, in its own L2.

use crate::gemm::{Bias, Epilogue, PackedB};
use crate::isa::Isa;
use crate::{Error, Result};

/// Most groups of 16 columns a block keeps in vector registers: eight accumulators cover the
/// four-cycle latency of a multiply-add on two FMA ports, and leave registers for the broadcast.
pub const GROUPS: usize = 8;

/// Columns per group: one 512-bit vector of `f32`.
pub(crate) const LANES: usize = 16;

/// Products with at least this many multiply-adds (a 256 KiB matrix) split their columns across
/// the intra-op team.
pub const PARALLEL_MIN_FMAS: usize = 1 << 16;

/// Where the columns of a `k × n` matrix lie in a buffer: element `(p, j)` is at
/// `off + (j / width)·panel + p·rs + j % width`. A matrix read in place is one panel as wide as
/// it is; a [`PackedB`] is panels of its path's width, `k × width` each.
#[derive(Clone, Copy, Debug)]
pub struct Columns<'a> {
    pub(crate) data: &'a [f32],
    pub(crate) off: usize,
    pub(crate) k: usize,
    pub(crate) n: usize,
    pub(crate) rs: usize,
    pub(crate) width: usize,
    pub(crate) panel: usize,
}

impl<'a> Columns<'a> {
    /// A `k × n` matrix with contiguous rows `rs` elements apart, from `data[off]`.
    pub fn in_place(op: &'static str, data: &'a [f32], off: usize, k: usize, n: usize, rs: usize) -> Result<Self> {
        Columns { data, off, k, n, rs, width: n.max(1), panel: 0 }.checked(op)
    }

    /// A prepacked right operand.
    pub fn packed(op: &'static str, b: &'a PackedB) -> Result<Self> {
        let (data, k, n, width) = b.panels();
        Columns { data, off: 0, k, n, rs: width, width, panel: k * width }.checked(op)
    }

    pub fn rows(&self) -> usize {
        self.k
    }

    pub fn cols(&self) -> usize {
        self.n
    }

    /// The offset of row 0 of the group of columns from `j` (`j % 16 == 0`).
    fn group_start(&self, j: usize) -> usize {
        self.off + (j / self.width) * self.panel + j % self.width
    }

    /// Checks that every group of 16 columns lies inside one panel and that the last row of each
    /// lies inside the buffer, which is what the kernels read.
    fn checked(self, op: &'static str) -> Result<Self> {
        if !self.width.is_multiple_of(LANES) && self.width < self.n {
            return Err(Error::new(op, "internal error: column panels not a whole number of vector groups"));
        }
        if self.k > 0 {
            for j in (0..self.n).step_by(LANES) {
                let lanes = LANES.min(self.n - j);
                let last = (self.k - 1)
                    .checked_mul(self.rs)
                    .and_then(|r| r.checked_add(self.group_start(j)))
                    .and_then(|r| r.checked_add(lanes));
                if last.is_none_or(|l| l > self.data.len()) {
                    return Err(Error::new(op, "matrix view exceeds its storage"));
                }
            }
        }
        Ok(self)
    }
}

/// `y[j] = alpha·Σ_p x[p]·B[p, j] + bias_scale·bias + beta·y[j]` for `j < n`, on the fastest
/// path of this CPU and split across the intra-op team when the product is large enough. With
/// `beta == 0`, `y` is not read.
pub fn gemv(op: &'static str, x: &[f32], b: Columns<'_>, ep: &Epilogue<'_>, y: &mut [f32]) -> Result<()> {
    let threads = crate::parallel::threads();
    let tasks = if b.k.saturating_mul(b.n) >= PARALLEL_MIN_FMAS { threads } else { 1 };
    gemv_on(op, Isa::current(), tasks, x, b, ep, y)
}

/// [`gemv`] on a given path, its column groups split into `tasks` pinned tasks.
pub(crate) fn gemv_on(
    op: &'static str,
    path: Isa,
    tasks: usize,
    x: &[f32],
    b: Columns<'_>,
    ep: &Epilogue<'_>,
    y: &mut [f32],
) -> Result<()> {
    if !path.available() {
        return Err(Error::new(op, format!("internal error: the {path} path is not available here")));
    }
    let (k, n) = (b.k, b.n);
    if x.len() != k {
        return Err(Error::new(op, format!("cannot multiply 1x{} and {k}x{n} matrices", x.len())));
    }
    if y.len() < n {
        return Err(Error::new(op, "output buffer is too small"));
    }
    let fin = Finish {
        alpha: ep.alpha,
        beta: ep.beta,
        bias_scale: ep.bias_scale,
        bias: match ep.bias {
            Bias::None => None,
            Bias::PerColumn(v) if v.len() >= n => Some((v, false)),
            Bias::PerRow(v) if !v.is_empty() => Some((v, true)),
            _ => return Err(Error::new(op, "bias is shorter than the output")),
        },
    };
    let groups = n.div_ceil(LANES);
    let tasks = tasks.clamp(1, groups.max(1));
    let out = crate::parallel::SharedOut(y.as_mut_ptr());
    let task = |t: usize| {
        let mut sums = [0.0f32; GROUPS * LANES];
        let (g0, g1) = (groups * t / tasks, groups * (t + 1) / tasks);
        for gb in (g0..g1).step_by(GROUPS) {
            let count = GROUPS.min(g1 - gb);
            let j0 = gb * LANES;
            let cols = (count * LANES).min(n - j0);
            block(path, x, &b, j0, cols, &mut sums);
            // SAFETY: `y` holds `n ≥ j0 + cols` elements (checked above), the bias `n` (or one
            // per row), and the tasks' column ranges are disjoint, so these elements are
            // written by this task alone.
            unsafe { finish(path, &fin, j0, &sums[..cols], out.get()) };
        }
    };
    crate::parallel::for_each_pinned(tasks, task);
    Ok(())
}

/// An [`Epilogue`] whose bias was checked against the output: per column (`false`, at least
/// `n` values) or one value for every column (`true`).
#[derive(Clone, Copy)]
pub(crate) struct Finish<'a> {
    pub(crate) alpha: f32,
    pub(crate) beta: f32,
    pub(crate) bias_scale: f32,
    pub(crate) bias: Option<(&'a [f32], bool)>,
}

impl Finish<'_> {
    /// `alpha·sum + bias_scale·bias + beta·dst`, each product and sum rounded in this order.
    fn scalar(&self, j: usize, sum: f32, dst: &mut f32) {
        let mut v = self.alpha * sum;
        if let Some((bv, per_row)) = self.bias {
            v += self.bias_scale * bv[if per_row { 0 } else { j }];
        }
        if self.beta != 0.0 {
            v += self.beta * *dst;
        }
        *dst = v;
    }
}

/// Writes the outputs `y[j0..j0 + sums.len()]` from their sums through the epilogue; the
/// vector form on the AVX-512 path, with the same operations in the same order (a product is
/// rounded before it is added, as in [`Finish::scalar`]), so the same bits.
///
/// # Safety
/// `y` points at `j0 + sums.len()` writable elements that no one else accesses meanwhile, and a
/// per-column bias has at least that many.
pub(crate) unsafe fn finish(path: Isa, fin: &Finish<'_>, j0: usize, sums: &[f32], y: *mut f32) {
    match path {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the CPU supports AVX-512F (the path was detected or checked available); the
        // rest is the caller's contract.
        Isa::Avx512 => unsafe { crate::x86::avx512::gemv_finish(fin, j0, sums, y) },
        _ => {
            for (i, &s) in sums.iter().enumerate() {
                // SAFETY: element `j0 + i` is in bounds and this caller's alone (contract).
                fin.scalar(j0 + i, s, unsafe { &mut *y.add(j0 + i) });
            }
        }
    }
}

/// The sums of the `cols ≤ GROUPS·16` columns from `j0` (`j0 % 16 == 0`) into `sums[..cols]`.
fn block(path: Isa, x: &[f32], b: &Columns<'_>, j0: usize, cols: usize, sums: &mut [f32; GROUPS * LANES]) {
    let count = cols.div_ceil(LANES);
    let mut starts = [0usize; GROUPS];
    for (g, s) in starts[..count].iter_mut().enumerate() {
        *s = b.group_start(j0 + g * LANES);
    }
    let last = cols - (count - 1) * LANES;
    match path {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => {
            macro_rules! by_count {
                ($($g:literal)*) => {
                    match count {
                        // SAFETY: the CPU supports AVX-512F (the path was detected or checked
                        // available), `Columns::checked` put every group's rows inside `b.data`,
                        // and `x` has `k` elements.
                        $($g => unsafe { crate::x86::avx512::gemv_block::<$g>(x, b, &starts, last, sums) },)*
                        _ => unreachable!("a block has 1 to {GROUPS} groups"),
                    }
                };
            }
            by_count!(1 2 3 4 5 6 7 8)
        }
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => {
            // Whole groups four at a time in registers; a partial last group in the loop
            // compiled for FMA. Each output's chain is the same either way.
            let whole = if last == LANES { count } else { count - 1 };
            for g0 in (0..whole).step_by(4) {
                let (st, out) = (&starts[g0..whole.min(g0 + 4)], &mut sums[g0 * LANES..]);
                // SAFETY: the CPU supports AVX2 and FMA (the path was detected or checked
                // available); `st` are starts of whole groups, whose rows `Columns::checked`
                // put inside `b.data`; `x` has `k` elements; `out` holds the groups' sums.
                unsafe {
                    match st.len() {
                        1 => crate::x86::avx2::gemv_block::<1>(x, b, st, out),
                        2 => crate::x86::avx2::gemv_block::<2>(x, b, st, out),
                        3 => crate::x86::avx2::gemv_block::<3>(x, b, st, out),
                        _ => crate::x86::avx2::gemv_block::<4>(x, b, st, out),
                    }
                }
            }
            if whole < count {
                let mut part = [0.0; GROUPS * LANES];
                // SAFETY: the CPU supports AVX2 and FMA (as above).
                unsafe { block_fma(x, b, &starts[whole..count], last, &mut part) };
                sums[whole * LANES..whole * LANES + last].copy_from_slice(&part[..last]);
            }
        }
        _ => block_portable(x, b, &starts[..count], last, sums),
    }
}

/// The portable block compiled for AVX2 and FMA (a partial group on the AVX2 path).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn block_fma(x: &[f32], b: &Columns<'_>, starts: &[usize], last: usize, sums: &mut [f32; GROUPS * LANES]) {
    block_portable(x, b, starts, last, sums)
}

/// The block kernel in portable code: the same sums, in the same order, as the vector kernel.
#[inline(always)]
fn block_portable(x: &[f32], b: &Columns<'_>, starts: &[usize], last: usize, sums: &mut [f32; GROUPS * LANES]) {
    let mut acc = [[0.0f32; LANES]; GROUPS];
    let count = starts.len();
    for (p, &xp) in x.iter().enumerate() {
        for (g, (&s, a)) in starts.iter().zip(acc.iter_mut()).enumerate() {
            let lanes = if g + 1 == count { last } else { LANES };
            let row = &b.data[s + p * b.rs..s + p * b.rs + lanes];
            for (av, &bv) in a.iter_mut().zip(row) {
                *av = xp.mul_add(bv, *av);
            }
        }
    }
    for (g, a) in acc[..count].iter().enumerate() {
        let lanes = if g + 1 == count { last } else { LANES };
        sums[g * LANES..g * LANES + lanes].copy_from_slice(&a[..lanes]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mat::MatView;
    use crate::testing::Gen;

    /// The sums in the documented order, one output at a time.
    fn reference(x: &[f32], b: &[f32], n: usize, ep: &Epilogue<'_>, y0: &[f32]) -> Vec<f32> {
        (0..n)
            .map(|j| {
                let s = x.iter().enumerate().fold(0.0f32, |acc, (p, &xp)| xp.mul_add(b[p * n + j], acc));
                let mut v = ep.alpha * s;
                match ep.bias {
                    Bias::PerColumn(bv) => v += ep.bias_scale * bv[j],
                    Bias::PerRow(bv) => v += ep.bias_scale * bv[0],
                    Bias::None => {}
                }
                if ep.beta != 0.0 {
                    v += ep.beta * y0[j];
                }
                v
            })
            .collect()
    }

    fn bits(v: &[f32]) -> Vec<u32> {
        v.iter().map(|f| f.to_bits()).collect()
    }

    #[test]
    fn every_path_layout_and_split_gives_the_reference_bits() {
        let mut g = Gen(0x9e37_79b9_7f4a_7c15);
        // Odd sizes (k, n not multiples of 16), a partial last block, a single column.
        for (k, n) in [(1, 1), (3, 17), (37, 129), (64, 160), (100, 255), (512, 512), (5, 300)] {
            let x = g.vec(k);
            let rs = n + 3;
            let stored = g.vec(k * rs + 2);
            let dense: Vec<f32> = (0..k).flat_map(|p| stored[1 + p * rs..1 + p * rs + n].to_vec()).collect();
            let bias = g.vec(n);
            let y0 = g.vec(n);
            let eps = [
                Epilogue::PLAIN,
                Epilogue { alpha: 1.0, beta: 0.0, bias: Bias::PerColumn(&bias), bias_scale: 1.0 },
                Epilogue { alpha: -0.5, beta: 2.0, bias: Bias::PerColumn(&bias), bias_scale: 0.25 },
                Epilogue { alpha: 2.0, beta: 1.0, bias: Bias::PerRow(&bias[..1]), bias_scale: 3.0 },
                // Factors whose products round: a fused multiply-add anywhere in the epilogue
                // would change some bits.
                Epilogue { alpha: 0.3, beta: 0.7, bias: Bias::PerColumn(&bias), bias_scale: 1.1 },
                Epilogue { alpha: 1.3, beta: -0.9, bias: Bias::PerRow(&bias[n - 1..]), bias_scale: 0.7 },
            ];
            let view = MatView::new("test", &dense, 0, k, n, n, 1).unwrap();
            let packs: Vec<PackedB> = [Isa::Avx512, Isa::Avx2]
                .into_iter()
                .filter(|i| i.available())
                .map(|i| PackedB::pack("test", i, view).unwrap())
                .collect();
            let mut layouts = vec![Columns::in_place("test", &stored, 1, k, n, rs).unwrap()];
            layouts.extend(packs.iter().map(|p| Columns::packed("test", p).unwrap()));
            for ep in &eps {
                let want = reference(&x, &dense, n, ep, &y0);
                for cols in &layouts {
                    for path in Isa::supported() {
                        for tasks in [1, 2, 3, 7] {
                            let mut y = y0.clone();
                            gemv_on("test", path, tasks, &x, *cols, ep, &mut y).unwrap();
                            assert_eq!(bits(&y), bits(&want), "{k}x{n} {path:?} {tasks} tasks {ep:?} {cols:?}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn one_and_two_threads_give_the_same_bits() {
        let mut g = Gen(17);
        let (k, n) = (300, 257);
        assert!(k * n >= PARALLEL_MIN_FMAS);
        let (x, b, bias) = (g.vec(k), g.vec(k * n), g.vec(n));
        let cols = Columns::in_place("test", &b, 0, k, n, n).unwrap();
        let ep = Epilogue { alpha: 1.0, beta: 0.0, bias: Bias::PerColumn(&bias), bias_scale: 1.0 };
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                let mut y = vec![0.0f32; n];
                gemv("test", &x, cols, &ep, &mut y).unwrap();
                bits(&y)
            })
        };
        let want = bits(&reference(&x, &b, n, &ep, &[]));
        for threads in [1, 2, 1, 2] {
            assert_eq!(run(threads), want, "{threads} threads");
        }
    }

    #[test]
    fn beta_zero_does_not_read_the_output() {
        let x = [1.0f32, 2.0];
        let b = [1.0f32, 2.0, 3.0, 4.0];
        let cols = Columns::in_place("test", &b, 0, 2, 2, 2).unwrap();
        for path in Isa::supported() {
            let mut y = [f32::NAN; 2];
            gemv_on("test", path, 1, &x, cols, &Epilogue::PLAIN, &mut y).unwrap();
            assert_eq!(y, [7.0, 10.0]);
        }
    }

    #[test]
    fn an_empty_sum_gives_the_epilogue_alone() {
        let bias = [1.5f32, -2.0, 0.5];
        let cols = Columns::in_place("test", &[], 0, 0, 3, 3).unwrap();
        let mut y = [f32::NAN; 3];
        let ep = Epilogue { alpha: 1.0, beta: 0.0, bias: Bias::PerColumn(&bias), bias_scale: 2.0 };
        gemv("test", &[], cols, &ep, &mut y).unwrap();
        assert_eq!(y, [3.0, -4.0, 1.0]);
    }

    #[test]
    fn bad_operands_are_errors() {
        let b = [0.0f32; 12];
        // The last row runs past the buffer.
        assert!(Columns::in_place("test", &b, 1, 3, 4, 4).is_err());
        let cols = Columns::in_place("test", &b, 0, 3, 4, 4).unwrap();
        let mut y = [0.0f32; 4];
        let e = gemv("test", &[1.0; 2], cols, &Epilogue::PLAIN, &mut y).unwrap_err();
        assert!(e.message.contains("cannot multiply"), "{e}");
        assert!(gemv("test", &[1.0; 3], cols, &Epilogue::PLAIN, &mut y[..3]).is_err());
        let short = [1.0f32; 2];
        let ep = Epilogue { bias: Bias::PerColumn(&short), ..Epilogue::PLAIN };
        assert!(gemv("test", &[1.0; 3], cols, &ep, &mut y).is_err());
    }
}
