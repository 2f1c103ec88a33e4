//! The packed GEMM against an `f64` reference on every ISA path, tail and epilogue, and its
//! bits against themselves across runs, threads and layouts.

use super::*;
use crate::mat::MatView;
pub(crate) use crate::testing::Gen;

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
            for act in ACTIVATIONS {
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
                                Activation::Clamp(lo, hi) => *v = if v.is_nan() { *v } else { v.clamp(lo, hi) },
                                Activation::Hardswish => {
                                    let t = *v + 3.0;
                                    *v *= if t.is_nan() { t } else { t.clamp(0.0, 6.0) } / 6.0;
                                }
                                Activation::HardswishProductFirst => {
                                    let t = *v + 3.0;
                                    *v = *v * if t.is_nan() { t } else { t.clamp(0.0, 6.0) } / 6.0;
                                }
                            }
                        }
                    }
                    let post = Post { addend: first.map(|first| Addend { data: &r, ld, first }), act, ..Post::NONE };
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

/// Every kind of activation, clamps with bounds on either side of zero.
const ACTIVATIONS: [Activation; 7] = [
    Activation::None,
    Activation::Gelu,
    Activation::Relu,
    Activation::Clamp(0.0, 6.0),
    Activation::Clamp(-1.0, 0.5),
    Activation::Hardswish,
    Activation::HardswishProductFirst,
];

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
        let post = Post { addend: Some(Addend { data, ld, first: true }), act: Activation::None, ..Post::NONE };
        assert!(gemm_packed_b_post("t", a, &b, &Epilogue::PLAIN, &post, &mut c, 4).is_err(), "ld {ld}");
    }
    let post = Post { addend: Some(Addend { data: &d[..12], ld: 4, first: true }), act: Activation::Gelu, ..Post::NONE };
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
        for act in ACTIVATIONS {
            for addend in [None, Some(true), Some(false)] {
                let post = Post { addend: addend.map(|first| Addend { data: &r, ld: n + 3, first }), act, ..Post::NONE };
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
fn in_place_products_split_from_their_own_threshold_with_the_same_bits() {
    let mut g = Gen(17);
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    for isa in paths() {
        // A 1×1 convolution's shape, split only by the in-place threshold.
        let (m, n, k) = (48, 196, 48);
        assert!((IN_PLACE_PARALLEL_MIN_FMAS..PARALLEL_MIN_FMAS).contains(&(m * n * k)));
        let (ad, bd, bias) = (g.vec(m * k), g.vec(k * n), g.vec(m));
        let a = MatView::new("t", &ad, 0, m, k, k, 1).unwrap();
        let b = MatView::new("t", &bd, 0, k, n, n, 1).unwrap();
        let pa = PackedA::pack("t", isa, a).unwrap();
        let ep = Epilogue { bias: Bias::PerRow(&bias), ..Epilogue::PLAIN };
        let post = Post { addend: None, act: Activation::Relu, ..Post::NONE };
        let run = || {
            let mut c = vec![0.0; m * n];
            gemm_packed_a_post("t", &pa, b, &ep, &post, &mut c, n).unwrap();
            c
        };
        assert_eq!(one.install(run), pool.install(run), "{isa:?}");
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

/// A left operand too large to stay in L2 while every panel passes over it is walked a group
/// of row blocks at a time across the panels (`drive_panels`): every tile is the one the
/// panel-by-panel order runs, so the results are its bits.
#[test]
fn large_left_operands_walked_in_groups_give_the_bits_of_panel_order() {
    // One thread: a split product gives each thread its own panels, walked on their own.
    crate::parallel::with_threads(1, large_left_operands_on_one_thread);
}

fn large_left_operands_on_one_thread() {
    let mut g = Gen(23);
    for isa in paths() {
        let nr = isa.nr();
        for (m, n, k) in [(200usize, 40usize, 300usize), (301, 100, 600), (150, 33, 2 * KC + 3)] {
            let panels = n.div_ceil(nr);
            assert!(super::drive::panel_group(m, k, nr, panels) > 1, "{m}x{n}x{k} is not walked in groups");
            let a = g.vec(m * k);
            let packed = PackedA::pack("t", isa, MatView::new("t", &a, 0, m, k, k, 1).unwrap()).unwrap();
            let bd = g.vec(k * n);
            let b = MatView::new("t", &bd, 0, k, n, n, 1).unwrap();
            let mut pb = vec![f32::NAN; panels * k * nr];
            pack_into(b, nr, &mut pb);
            let bias = g.vec(m);
            let ep = Epilogue { bias: Bias::PerRow(&bias), beta: 0.5, ..Epilogue::PLAIN };
            let post = Post { act: Activation::Relu, ..Post::NONE };
            let c0 = g.vec(m * n);
            let (mut whole, mut in_place, mut by_panel) = (c0.clone(), c0.clone(), c0.clone());
            // SAFETY: each output holds `m` rows of `n` elements and nothing else uses it.
            unsafe { gemm_packed_a_panels_post("t", &packed, &pb, n, &ep, &post, whole.as_mut_ptr(), n).unwrap() };
            gemm_packed_a_post("t", &packed, b, &ep, &post, &mut in_place, n).unwrap();
            for p in 0..panels {
                let cols = nr.min(n - p * nr);
                let panel = &pb[p * k * nr..(p + 1) * k * nr];
                // SAFETY: columns `p·nr..` of `m` rows of `n` elements, inside `by_panel`.
                unsafe { gemm_packed_a_panels_post("t", &packed, panel, cols, &ep, &post, by_panel.as_mut_ptr().add(p * nr), n).unwrap() };
            }
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&whole), bits(&by_panel), "{isa:?} {m}x{n}x{k}: packed panels");
            assert_eq!(bits(&in_place), bits(&by_panel), "{isa:?} {m}x{n}x{k}: in place");
        }
    }
}

/// A right operand read in place by a product with many row blocks is copied slice by slice
/// into packed panels before its tiles read it (`drive_panels`): the results are the bits of
/// the same operand packed by the caller, on every column tail, across blocks of `k`, with
/// rows that do not start on cache lines, on one thread and split across two.
#[test]
fn in_place_operands_copied_slice_by_slice_give_the_bits_of_caller_packed_panels() {
    let mut g = Gen(29);
    for isa in paths() {
        let (mr, nr) = (isa.mr(), isa.nr());
        let m = super::drive::PACK_SLICE_MIN_BLOCKS * mr + 5;
        for (n, k) in [(nr + 1, 16), (3 * nr + 7, KC + 9), (2 * nr, 5), (nr - 3, 40)] {
            let a = g.vec(m * k);
            let packed = PackedA::pack("t", isa, MatView::new("t", &a, 0, m, k, k, 1).unwrap()).unwrap();
            // Rows `n + 3` apart, after one unused element.
            let rs = n + 3;
            let bd = g.vec(1 + k * rs);
            let b = MatView::new("t", &bd, 1, k, n, rs, 1).unwrap();
            let panels = n.div_ceil(nr);
            let mut pb = vec![f32::NAN; panels * k * nr];
            pack_into(b, nr, &mut pb);
            let bias = g.vec(m);
            let ep = Epilogue { bias: Bias::PerRow(&bias), beta: 0.25, ..Epilogue::PLAIN };
            let post = Post { act: Activation::Relu, ..Post::NONE };
            let c0 = g.vec(m * n);
            let mut want = c0.clone();
            // SAFETY: `want` holds `m` rows of `n` elements and nothing else uses it.
            unsafe { gemm_packed_a_panels_post("t", &packed, &pb, n, &ep, &post, want.as_mut_ptr(), n).unwrap() };
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            for threads in [1, 2] {
                let mut got = c0.clone();
                crate::parallel::with_threads(threads, || gemm_packed_a_post("t", &packed, b, &ep, &post, &mut got, n).unwrap());
                assert_eq!(bits(&got), bits(&want), "{isa:?} {m}x{n}x{k} on {threads} thread(s)");
            }
        }
    }
}

/// A right operand whose rows lie at their own offsets, in any order, read in place by the
/// tiles of every vector path, gives the bits of the same rows packed into column panels, on
/// every shape, tail and epilogue; a row past the end of the operand is an error.
#[test]
fn rows_at_their_own_offsets_give_the_bits_of_the_same_rows_packed() {
    let mut g = Gen(23);
    for (isa, (m, n, k)) in paths().into_iter().flat_map(|isa| shapes().into_iter().map(move |s| (isa, s))) {
        let nr = isa.nr();
        let (ad, aoff, ars, acs) = strided(&mut g, m, k, false);
        let a = MatView::new("t", &ad, aoff, m, k, ars, acs).unwrap();
        let packed = PackedA::pack("t", isa, a).unwrap();
        // Row `p` at `q·(n + 3) + q % 2` for `q` the `p`-th of a shuffled order (the phases of
        // a strided convolution's input come out of order): gaps of varying width between the
        // rows, and the furthest one in the middle.
        let rows: Vec<usize> = (0..k).map(|p| (p * 7 + k / 2) % k).map(|q| q * (n + 3) + q % 2).collect();
        let bd = g.vec(rows.iter().max().map_or(0, |r| r + n));
        let dense: Vec<f32> = rows.iter().flat_map(|&r| bd[r..r + n].iter().copied()).collect();
        let mut panels = vec![f32::NAN; n.div_ceil(nr) * k * nr];
        pack_into(MatView::new("t", &dense, 0, k, n, n, 1).unwrap(), nr, &mut panels);
        let (bias_n, bias_m) = (g.vec(n), g.vec(m));
        for ep in epilogues(&bias_n, &bias_m) {
            let ldc = n + 2;
            let c0 = g.vec(m * ldc);
            let (mut want, mut got) = (c0.clone(), c0.clone());
            // SAFETY: `want` and `got` hold `m` rows of `ldc` elements and nothing else uses them.
            unsafe {
                gemm_packed_a_panels("t", &packed, &panels, n, &ep, want.as_mut_ptr(), ldc).unwrap();
                gemm_packed_a_rows_post("t", &packed, &bd, &rows, n, &ep, &Post::NONE, got.as_mut_ptr(), ldc).unwrap();
            }
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "{isa} {m}x{n}x{k} {ep:?}");
        }
        if n > 0 && k > 0 {
            let mut c = vec![0.0; m.max(1) * n];
            // SAFETY: as above; the operand is one element short of its last row.
            let short = unsafe { gemm_packed_a_rows_post("t", &packed, &bd[..bd.len() - 1], &rows, n, &Epilogue::PLAIN, &Post::NONE, c.as_mut_ptr(), n) };
            assert!(short.is_err(), "{isa} {m}x{n}x{k}: a row past the end accepted");
        }
    }
}
