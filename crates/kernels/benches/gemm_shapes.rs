//! The host's `f32` FMA peak on one core, and the prepacked GEMM's rate on the products of
//! real convolutions (`m` output channels × `k = cin·kh·kw` × `n` output positions), through
//! the entry point the convolution uses: a prepacked filter as `A` and `B` already in column
//! panels, multiplied one panel at a time (`gemm_packed_a_panels` on each `k × nr` panel, as
//! `conv/packed.rs` does after packing it), as one call over every panel, and with `B` read
//! in place (`gemm_packed_a`, as a 1×1 convolution multiplies its input). Then 3×3
//! convolutions of unit stride through the rows of their zero-padded input
//! (`gemm_packed_a_rows_post`, one call per output row, as `conv/packed.rs` `by_rows` does).
//!
//! `cargo bench -p kernels --bench gemm_shapes [-- name...]`, one thread. Prints the median
//! and best GFLOPS of each product and their share of the measured peak.

mod common;

use std::arch::x86_64::*;

use common::time;

use kernels::gemm::{Bias, Epilogue, PackedA, Post, gemm_packed_a, gemm_packed_a_panels, gemm_packed_a_rows_post};
use kernels::mat::MatView;
use kernels::Isa;

/// Eight-lane multiply-adds in 10 independent chains (more than latency × units, 4 × 2 on
/// Zen 3), `reps` steps of each: the core's FMA throughput with no loads at all.
#[target_feature(enable = "avx2,fma")]
unsafe fn fma_chains(reps: usize, seed: f32) -> f32 {
    let (x, y) = (_mm256_set1_ps(seed), _mm256_set1_ps(0.999_9));
    let mut acc = [_mm256_set1_ps(1.0); 10];
    for _ in 0..reps {
        for a in acc.iter_mut() {
            *a = _mm256_fmadd_ps(*a, y, x);
        }
    }
    let mut s = _mm256_setzero_ps();
    for a in acc {
        s = _mm256_add_ps(s, a);
    }
    _mm256_cvtss_f32(s)
}

/// [`fma_chains`] with sixteen-lane multiply-adds: the AVX-512 path's peak (two 512-bit FMA
/// units on most AVX-512 Xeons, one on some).
#[target_feature(enable = "avx512f")]
unsafe fn fma_chains_avx512(reps: usize, seed: f32) -> f32 {
    let (x, y) = (_mm512_set1_ps(seed), _mm512_set1_ps(0.999_9));
    let mut acc = [_mm512_set1_ps(1.0); 10];
    for _ in 0..reps {
        for a in acc.iter_mut() {
            *a = _mm512_fmadd_ps(*a, y, x);
        }
    }
    _mm512_reduce_add_ps(acc.iter().fold(_mm512_setzero_ps(), |s, &a| _mm512_add_ps(s, a)))
}

fn noise(len: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        })
        .collect()
}

/// `B` (`k × n`) in the column panels of `nr` that the convolution packs.
fn panels(b: &[f32], k: usize, n: usize, nr: usize) -> Vec<f32> {
    let mut out = vec![0.0; n.div_ceil(nr) * k * nr];
    for jp in 0..n.div_ceil(nr) {
        for p in 0..k {
            for j in 0..nr.min(n - jp * nr) {
                out[(jp * k + p) * nr + j] = b[p * n + jp * nr + j];
            }
        }
    }
    out
}

fn main() {
    let wanted: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let isa = Isa::current();
    if isa < Isa::Avx2 {
        println!("no packed GEMM on this CPU ({isa})");
        return;
    }
    let budget = 0.6;
    let reps = 1 << 20;
    let lanes = if isa == Isa::Avx512 { 16 } else { 8 };
    let (med, best) = time(budget, || {
        // SAFETY: the CPU has AVX-512F when `isa` is AVX-512, AVX2 and FMA otherwise (`isa` is
        // at least AVX2).
        std::hint::black_box(unsafe {
            if isa == Isa::Avx512 {
                fma_chains_avx512(reps, std::hint::black_box(1e-3))
            } else {
                fma_chains(reps, std::hint::black_box(1e-3))
            }
        });
    });
    let flops = (reps * 10 * lanes * 2) as f64;
    let peak = flops / best / 1e9;
    println!("isa {isa}; f32 FMA peak of one core: {:.1} GFLOPS (median {:.1})", peak, flops / med / 1e9);
    let shapes: &[(&str, usize, usize, usize)] = &[
        // Operands that stay in L1: the microkernel's own rate, calls included.
        ("l1 6x256x16", 6, 256, 16),
        ("l1 12x256x16", 12, 256, 16),
        ("sq stem", 64, 27, 12321),
        ("sq squeeze", 16, 64, 3025),
        ("sq expand1", 64, 16, 3025),
        ("sq expand3", 64, 144, 3025),
        ("sq squeeze2", 32, 128, 729),
        ("sq expand1b", 128, 32, 729),
        ("sq expand3b", 128, 288, 729),
        ("sq squeeze3", 48, 256, 169),
        ("sq expand1c", 192, 48, 169),
        ("sq expand3c", 192, 432, 169),
        ("sq squeeze4", 64, 384, 169),
        ("sq expand1d", 256, 64, 169),
        ("sq expand3d", 256, 576, 169),
        ("sq classifier", 1000, 512, 169),
        ("mb1x1 a", 16, 16, 3136),
        ("mb1x1 b", 72, 16, 3136),
        ("mb1x1 c", 24, 72, 784),
        ("mb1x1 d", 576, 96, 49),
        ("sh1x1 a", 24, 24, 784),
        ("sh1x1 b", 48, 48, 196),
        ("sh1x1 c", 96, 96, 49),
        ("sh1x1 last", 1024, 192, 49),
    ];
    println!(
        "{:<15} {:>16} {:>9} {:>8} {:>8} {:>6} {:>8} {:>6} {:>8} {:>6}",
        "product", "m x k x n", "us/panel", "GF med", "GF best", "%peak", "GF whole", "%peak", "in place", "%peak"
    );
    kernels::parallel::with_threads(1, || {
        rows_section(isa, budget, peak, &wanted);
        for &(name, m, k, n) in shapes {
            if !wanted.is_empty() && !wanted.iter().any(|w| name.contains(w.as_str())) {
                continue;
            }
            let a = noise(m * k, 1);
            let b = noise(k * n, 2);
            let bias = noise(m, 3);
            let packed = PackedA::pack("bench", isa, MatView::new("bench", &a, 0, m, k, k, 1).unwrap()).unwrap();
            let nr = if isa == Isa::Avx512 { 32 } else { 16 };
            let bp = panels(&b, k, n, nr);
            let mut c = vec![0.0f32; m * n];
            let ep = Epilogue { bias: Bias::PerRow(&bias), ..Epilogue::PLAIN };
            let fl = 2.0 * (m * n * k) as f64;
            let (per_panel, per_panel_best) = time(budget, || {
                for jp in 0..n.div_ceil(nr) {
                    let cols = nr.min(n - jp * nr);
                    // SAFETY: `c` holds `m` rows of `n`; the panel's columns start at `jp·nr`.
                    unsafe {
                        gemm_packed_a_panels("bench", &packed, &bp[jp * k * nr..(jp + 1) * k * nr], cols, &ep, c.as_mut_ptr().add(jp * nr), n)
                            .unwrap()
                    };
                }
            });
            let (_, whole) = time(budget, || {
                // SAFETY: `c` holds `m` rows of `n`.
                unsafe { gemm_packed_a_panels("bench", &packed, &bp, n, &ep, c.as_mut_ptr(), n).unwrap() };
            });
            let bv = MatView::new("bench", &b, 0, k, n, n, 1).unwrap();
            let (_, in_place) = time(budget, || gemm_packed_a("bench", &packed, bv, &ep, &mut c, n).unwrap());
            let gf = |t: f64| fl / t / 1e9;
            println!(
                "{:<15} {:>16} {:>9.1} {:>8.1} {:>8.1} {:>5.0}% {:>8.1} {:>5.0}% {:>8.1} {:>5.0}%",
                name,
                format!("{m}x{k}x{n}"),
                per_panel * 1e6,
                gf(per_panel),
                gf(per_panel_best),
                100.0 * gf(per_panel_best) / peak,
                gf(whole),
                100.0 * gf(whole) / peak,
                gf(in_place),
                100.0 * gf(in_place) / peak
            );
        }
    });
}

/// 3×3 convolutions of unit stride and padding one, `cout × cin`, over an `h × w` input, read
/// in place from the zero-padded input one output row at a time.
fn rows_section(isa: Isa, budget: f64, peak: f64, wanted: &[String]) {
    let convs: &[(&str, usize, usize, usize, usize)] = &[
        ("rows rt 32x32 64x64", 32, 32, 64, 64),
        ("rows sq expand3 55", 64, 16, 55, 55),
        ("rows 64x64 56x56", 64, 64, 56, 56),
    ];
    println!("{:<22} {:>16} {:>8} {:>8} {:>6}", "convolution", "m x k x n", "GF med", "GF best", "%peak");
    for &(name, cout, cin, h, w) in convs {
        if !wanted.is_empty() && !wanted.iter().any(|x| name.contains(x.as_str())) {
            continue;
        }
        let (k, ph, pw) = (cin * 9, h + 2, w + 2);
        let a = noise(cout * k, 1);
        let packed = PackedA::pack("bench", isa, MatView::new("bench", &a, 0, cout, k, k, 1).unwrap()).unwrap();
        let x = noise(cin * ph * pw, 2);
        let offsets: Vec<usize> = (0..k).map(|r| (r / 9) * ph * pw + (r % 9 / 3) * pw + r % 3).collect();
        let bias = noise(cout, 3);
        let ep = Epilogue { bias: Bias::PerRow(&bias), ..Epilogue::PLAIN };
        let mut c = vec![0.0f32; cout * h * w];
        let (med, best) = time(budget, || {
            for y in 0..h {
                // SAFETY: `c` holds `cout` rows of `h·w`; output row `y` starts at `y·w`.
                unsafe {
                    gemm_packed_a_rows_post("bench", &packed, &x[y * pw..], &offsets, w, &ep, &Post::NONE, c.as_mut_ptr().add(y * w), h * w)
                        .unwrap()
                };
            }
        });
        let gf = |t: f64| 2.0 * (cout * k * h * w) as f64 / t / 1e9;
        println!(
            "{:<22} {:>16} {:>8.1} {:>8.1} {:>5.0}%",
            name,
            format!("{cout}x{k}x{}", h * w),
            gf(med),
            gf(best),
            100.0 * gf(best) / peak
        );
    }
}
