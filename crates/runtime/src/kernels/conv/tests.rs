//! Tests of the convolution kernels against convolution by definition, on every ISA path.

use super::*;
use ::kernels::testing::Gen;
use ::kernels::gemm::Addend;

/// The column matrix by definition: row `c·K + k`, column `r·ow + xo`.
fn naive_columns(x: &[f32], g: &Geometry, channels: usize, r0: usize, r1: usize) -> Vec<f32> {
    let [ki, kj, kk] = g.kernel;
    let [id, ih, iw] = g.input;
    let [_, oh, ow] = g.output;
    let mut out = Vec::new();
    for c in 0..channels {
        for a in 0..ki {
            for b in 0..kj {
                for e in 0..kk {
                    for r in r0..r1 {
                        for xo in 0..ow {
                            let iz = (r / oh * g.stride[0] + a * g.dilation[0]) as isize - g.pad_lo[0] as isize;
                            let iy = (r % oh * g.stride[1] + b * g.dilation[1]) as isize - g.pad_lo[1] as isize;
                            let ix = (xo * g.stride[2] + e * g.dilation[2]) as isize - g.pad_lo[2] as isize;
                            let inside = (0..id as isize).contains(&iz)
                                && (0..ih as isize).contains(&iy)
                                && (0..iw as isize).contains(&ix);
                            out.push(if inside {
                                x[((c * id + iz as usize) * ih + iy as usize) * iw + ix as usize]
                            } else {
                                0.0
                            });
                        }
                    }
                }
            }
        }
    }
    out
}

fn geometry3(
    input: [usize; 3],
    kernel: [usize; 3],
    stride: [usize; 3],
    pad: [usize; 3],
    dil: [usize; 3],
) -> Geometry {
    let output: [usize; 3] =
        std::array::from_fn(|i| (input[i] + 2 * pad[i] - dil[i] * (kernel[i] - 1) - 1) / stride[i] + 1);
    Geometry {
        n: 1,
        cin: 2,
        cout: 1,
        groups: 1,
        input,
        kernel,
        output,
        stride,
        pad_lo: pad,
        dilation: dil,
        transposed: false,
    }
}

/// Every band of every geometry, merged runs ("same" convolutions) and per-row copies
/// alike, matches the definition exactly, including bands that start and end inside a
/// plane of a 3-d output and positions that an earlier band's garbage occupied.
#[test]
fn column_bands_match_the_definition() {
    let cases = [
        // 3×3, padding 1, stride 1: rows merge; 5×5 with padding 2; dilated 3×3 with
        // padding 2 (each also "same").
        geometry3([1, 7, 6], [1, 3, 3], [1, 1, 1], [0, 1, 1], [1, 1, 1]),
        geometry3([1, 6, 9], [1, 5, 5], [1, 1, 1], [0, 2, 2], [1, 1, 1]),
        geometry3([1, 8, 5], [1, 3, 3], [1, 1, 1], [0, 2, 2], [1, 2, 2]),
        // 3-d "same": runs stop at each plane's last row.
        geometry3([3, 4, 5], [3, 3, 3], [1, 1, 1], [1, 1, 1], [1, 1, 1]),
        // Not merged: strided, unpadded, padded only along rows, padding wider than taps.
        geometry3([1, 9, 9], [1, 3, 3], [1, 2, 2], [0, 1, 1], [1, 1, 1]),
        geometry3([1, 6, 7], [1, 3, 3], [1, 1, 1], [0, 0, 0], [1, 1, 1]),
        geometry3([1, 6, 7], [1, 3, 2], [1, 1, 1], [0, 1, 0], [1, 1, 1]),
        geometry3([1, 3, 4], [1, 2, 2], [1, 1, 1], [0, 3, 3], [1, 1, 1]),
    ];
    for g in &cases {
        let channels = g.cin;
        let x: Vec<f32> = (0..channels * g.in_numel()).map(|i| i as f32 + 1.0).collect();
        let rows = g.output[0] * g.output[1];
        for band in 1..=rows {
            let per = channels * g.kernel_numel() * band * g.output[2];
            // A tile full of garbage: every element must be written.
            let mut col = vec![f32::NAN; per];
            let mut r0 = 0;
            while r0 < rows {
                let r1 = (r0 + band).min(rows);
                let len = channels * g.kernel_numel() * (r1 - r0) * g.output[2];
                im2col_rows(&x, g, channels, r0, r1, &mut col[..len]);
                let want = naive_columns(&x, g, channels, r0, r1);
                assert!(
                    col[..len].iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{g:?}, rows {r0}..{r1}"
                );
                r0 = r1;
            }
        }
    }
}

/// Geometries covering the cases the column panels distinguish: runs of a panel that
/// span several output rows (rows shorter than a panel, a panel ending mid-row), rows
/// wholly in the padding, strides and dilations along every dim, 3-d and 1-d outputs,
/// and a kernel row wider than the masked path keeps pieces for.
fn panel_geometries() -> Vec<Geometry> {
    vec![
        geometry3([1, 7, 6], [1, 3, 3], [1, 1, 1], [0, 1, 1], [1, 1, 1]),
        geometry3([1, 6, 40], [1, 3, 3], [1, 1, 1], [0, 1, 1], [1, 1, 1]),
        geometry3([1, 5, 64], [1, 3, 3], [1, 1, 1], [0, 1, 1], [1, 1, 1]),
        geometry3([1, 6, 9], [1, 5, 5], [1, 1, 1], [0, 2, 2], [1, 1, 1]),
        geometry3([1, 8, 35], [1, 3, 3], [1, 1, 1], [0, 2, 2], [1, 2, 2]),
        geometry3([3, 4, 5], [3, 3, 3], [1, 1, 1], [1, 1, 1], [1, 1, 1]),
        geometry3([1, 9, 37], [1, 3, 3], [1, 2, 2], [0, 1, 1], [1, 1, 1]),
        // Stride 2 with output rows a multiple of 16 long: every panel in one output row.
        geometry3([1, 5, 64], [1, 3, 3], [1, 2, 2], [0, 1, 1], [1, 1, 1]),
        geometry3([1, 6, 66], [1, 3, 3], [1, 2, 2], [0, 0, 0], [1, 1, 1]),
        geometry3([5, 9, 9], [2, 3, 3], [2, 1, 2], [1, 0, 1], [2, 1, 1]),
        geometry3([1, 6, 7], [1, 3, 3], [1, 1, 1], [0, 0, 0], [1, 1, 1]),
        geometry3([1, 6, 7], [1, 3, 2], [1, 1, 1], [0, 1, 0], [1, 1, 1]),
        geometry3([1, 3, 4], [1, 2, 2], [1, 1, 1], [0, 3, 3], [1, 1, 1]),
        geometry3([1, 1, 70], [1, 1, 5], [1, 1, 1], [0, 0, 2], [1, 1, 3]),
        geometry3([1, 4, 1], [1, 3, 1], [1, 1, 1], [0, 1, 0], [1, 1, 1]),
        geometry3([1, 3, 20], [1, 1, 19], [1, 1, 1], [0, 0, 9], [1, 1, 1]),
    ]
}

/// Every panel of every geometry, for both panel widths and with the masked rows and
/// without, on every ISA the host runs (AVX-512 for 32-wide panels, AVX2 for 16-wide ones,
/// the scalar rows otherwise), is the column matrix's block by definition, zero past its
/// last column: the same bits on every path. Every element of the panel is written (it
/// starts as NaN).
#[test]
fn column_panels_match_the_definition() {
    for isa in Isa::supported() {
        ::kernels::isa::with(isa, || panels_match_the_definition(isa));
    }
}

fn panels_match_the_definition(isa: Isa) {
    for g in &panel_geometries() {
        let channels = g.cin;
        let x: Vec<f32> = (0..channels * g.in_numel()).map(|i| i as f32 + 1.0).collect();
        let rows = g.output[0] * g.output[1];
        let lout = g.out_numel();
        let col = naive_columns(&x, g, channels, 0, rows);
        let k = channels * g.kernel_numel();
        for nr in [16, 32] {
            for masked in [false, true] {
                let plan = PanelPlan::new(g, nr, masked);
                for j0 in (0..lout).step_by(nr) {
                    let cols = nr.min(lout - j0);
                    let mut panel = vec![f32::NAN; k * nr];
                    plan.pack(&x, channels, j0, cols, &mut panel);
                    for r in 0..k {
                        for j in 0..nr {
                            let want = if j < cols { col[r * lout + j0 + j] } else { 0.0 };
                            let got = panel[r * nr + j];
                            assert!(
                                got.to_bits() == want.to_bits(),
                                "{isa} {g:?} nr={nr} masked={masked} panel at {j0}: row {r} column {j}: got {got}, want {want}"
                            );
                        }
                    }
                }
            }
        }
    }
}

/// The prepacked convolution (column panels, or the input itself for 1×1 stride-1 ones)
/// agrees with the general one on batches, groups, strides, padding, dilation, 1×1 and
/// odd sizes, with and without bias; and gives the same bits on one thread and on three,
/// with the panels split across the team.
#[test]
fn prepacked_convolution_matches_the_general_one_on_any_thread_count() {
    let Some(isa) = Isa::simd() else {
        println!("skipping: this CPU runs no prepacked path");
        return;
    };
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let three = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
    let mut rng = Gen(0x51_7cc1_b727_220a);
    // (n, cin, cout, groups, input, kernel, stride, pad, dilation)
    type Case = (usize, usize, usize, usize, [usize; 3], [usize; 3], [usize; 3], [usize; 3], [usize; 3]);
    let cases: [Case; 11] = [
        // Filters larger than a group of `A` (panels packed a few at a time; a 1×1 product
        // walked group by group).
        (1, 64, 160, 1, [1, 13, 13], [1, 3, 3], [1, 1, 1], [0, 1, 1], [1, 1, 1]),
        (1, 300, 200, 1, [1, 9, 9], [1, 1, 1], [1, 1, 1], [0, 0, 0], [1, 1, 1]),
        (1, 3, 32, 1, [1, 64, 64], [1, 3, 3], [1, 1, 1], [0, 1, 1], [1, 1, 1]),
        (2, 8, 12, 2, [1, 13, 21], [1, 3, 3], [1, 1, 1], [0, 1, 1], [1, 1, 1]),
        (3, 4, 9, 1, [1, 11, 10], [1, 3, 3], [1, 2, 2], [0, 1, 1], [1, 1, 1]),
        (2, 6, 6, 3, [1, 9, 33], [1, 3, 5], [1, 1, 1], [0, 2, 2], [1, 2, 1]),
        (2, 5, 7, 1, [1, 6, 50], [1, 1, 1], [1, 1, 1], [0, 0, 0], [1, 1, 1]),
        (1, 5, 7, 1, [1, 6, 50], [1, 1, 1], [1, 2, 2], [0, 0, 0], [1, 1, 1]),
        (2, 4, 5, 1, [4, 5, 6], [3, 3, 3], [1, 1, 1], [1, 1, 1], [1, 1, 1]),
        (1, 2, 3, 1, [1, 1, 97], [1, 1, 7], [1, 1, 3], [0, 0, 3], [1, 1, 1]),
        (1, 32, 32, 1, [1, 64, 64], [1, 3, 3], [1, 1, 1], [0, 1, 1], [1, 1, 1]),
    ];
    for (n, cin, cout, groups, input, kernel, stride, pad, dil) in cases {
        let g = Geometry { n, cin, cout, groups, ..geometry3(input, kernel, stride, pad, dil) };
        let x = rng.vec(n * cin * g.in_numel());
        let mut wsizes = vec![cout, cin / groups];
        wsizes.extend(kernel);
        let wd = rng.vec(wsizes.iter().product());
        let wt = Tensor::from_vec(wd.clone(), &wsizes).unwrap();
        let filter = PackedFilter::pack("t", isa, &wt, groups).unwrap();
        let bias = rng.vec(cout);
        for b in [None, Some(&bias[..])] {
            let len = n * cout * g.out_numel();
            let mut want = vec![0.0f32; len];
            conv_compute("t", &g, &x, &wd, b, &mut want).unwrap();
            let run = |pool: &rayon::ThreadPool| {
                let mut got = vec![f32::NAN; len];
                pool.install(|| conv_compute_packed("t", &g, &x, &filter, b, &Post::NONE, &mut got)).unwrap();
                got
            };
            let (single, split) = (run(&one), run(&three));
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&single), bits(&split), "{g:?} bias={}", b.is_some());
            let k = (cin / groups * g.kernel_numel()) as f32;
            for (i, (s, w)) in single.iter().zip(&want).enumerate() {
                assert!((s - w).abs() <= 1e-5 * (k + 4.0) * (1.0 + w.abs()), "{g:?} element {i}: got {s}, want {w}");
            }
        }
    }
}

/// A prepacked convolution with post-ops (a residual on either side, each activation) gives
/// every element the bits of the convolution followed by the one-element post-ops, on the
/// column-panel, 1×1 and depthwise paths, on one thread and on three.
#[test]
fn post_ops_of_a_prepacked_convolution_give_each_elements_bits() {
    let Some(isa) = Isa::simd() else {
        println!("skipping: this CPU runs no prepacked path");
        return;
    };
    let pools = [1, 3].map(|t| rayon::ThreadPoolBuilder::new().num_threads(t).build().unwrap());
    let mut rng = Gen(0x0e_91_10_6e);
    // (n, cin, cout, groups, input, kernel, stride, pad): panels, grouped panels, 1×1 direct,
    // depthwise.
    type Case = (usize, usize, usize, usize, [usize; 3], [usize; 3], [usize; 3], [usize; 3]);
    let cases: [Case; 4] = [
        (2, 5, 20, 1, [1, 17, 19], [1, 3, 3], [1, 2, 2], [0, 1, 1]),
        (1, 8, 12, 2, [1, 13, 21], [1, 3, 3], [1, 1, 1], [0, 1, 1]),
        (2, 6, 19, 1, [1, 7, 9], [1, 1, 1], [1, 1, 1], [0, 0, 0]),
        (2, 24, 24, 24, [1, 15, 13], [1, 3, 3], [1, 1, 1], [0, 1, 1]),
    ];
    let acts = [
        Activation::None,
        Activation::Relu,
        Activation::Clamp(0.0, 6.0),
        Activation::Hardswish,
        Activation::HardswishProductFirst,
        Activation::Gelu,
    ];
    for (n, cin, cout, groups, input, kernel, stride, pad) in cases {
        let g = Geometry { n, cin, cout, groups, ..geometry3(input, kernel, stride, pad, [1, 1, 1]) };
        let x: Vec<f32> = rng.vec(n * cin * g.in_numel()).iter().map(|v| v * 4.0).collect();
        let mut wsizes = vec![cout, cin / groups];
        wsizes.extend(kernel);
        let wt = Tensor::from_vec(rng.vec(wsizes.iter().product()), &wsizes).unwrap();
        let filter = PackedFilter::pack("t", isa, &wt, groups).unwrap();
        let bias = rng.vec(cout);
        let len = n * cout * g.out_numel();
        let mut plain = vec![f32::NAN; len];
        conv_compute_packed("t", &g, &x, &filter, Some(&bias), &Post::NONE, &mut plain).unwrap();
        let mut r: Vec<f32> = rng.vec(len).iter().map(|v| v * 4.0).collect();
        r[3] = f32::NAN;
        for act in acts {
            for first in [None, Some(true), Some(false)] {
                let post = Post { addend: first.map(|first| Addend { data: &r, ld: g.out_numel(), first }), act, ..Post::NONE };
                for pool in &pools {
                    let mut got = vec![f32::NAN; len];
                    pool.install(|| conv_compute_packed("t", &g, &x, &filter, Some(&bias), &post, &mut got)).unwrap();
                    for (e, (&got, &v)) in got.iter().zip(&plain).enumerate() {
                        let want = post.apply(e / g.out_numel(), e % g.out_numel(), v);
                        assert!(
                            got.to_bits() == want.to_bits() || got.is_nan() && want.is_nan(),
                            "{g:?} {act:?} {first:?} element {e}: got {got}, want {want}"
                        );
                    }
                }
            }
        }
    }
}

/// The pixel-major convolution gives the bits of the channel-major one, with every kind
/// of post-op (a residual on either side, an activation, roundings through `f16`), batches,
/// partial panels of channels and of positions, on every vector path and thread count.
#[test]
fn pixel_major_products_give_the_bits_of_channel_major_ones() {
    let pools = [1, 3].map(|t| rayon::ThreadPoolBuilder::new().num_threads(t).build().unwrap());
    let mut rng = Gen(0x9e_3779_b97f);
    // (n, cin, cout, input, kernel, stride, pad, dilation): direct 1×1 products (the input
    // read in place) and others through their column matrix.
    type Case = (usize, usize, usize, [usize; 3], [usize; 3], [usize; 3], [usize; 3], [usize; 3]);
    let one = [1, 1, 1];
    let cases: [Case; 10] = [
        (1, 96, 576, [1, 7, 7], one, one, [0; 3], one),
        // A result large enough to be copied into planes by the team.
        (1, 16, 256, [1, 13, 13], [1, 3, 3], one, [0, 1, 1], one),
        (2, 37, 70, [1, 5, 3], one, one, [0; 3], one),
        (1, 300, 40, [1, 13, 13], one, one, [0; 3], one),
        (3, 8, 17, [1, 1, 1], one, one, [0; 3], one),
        (1, 16, 48, [2, 3, 4], one, one, [0; 3], one),
        (1, 48, 192, [1, 13, 13], [1, 3, 3], one, [0, 1, 1], one),
        (2, 20, 40, [1, 14, 15], [1, 3, 3], [1, 2, 2], [0, 1, 1], one),
        (1, 9, 33, [1, 9, 11], [1, 3, 3], one, [0, 2, 2], [1, 2, 2]),
        (1, 30, 64, [1, 14, 14], one, [1, 2, 2], [0; 3], one),
    ];
    for isa in Isa::supported().into_iter().filter(|&i| i != Isa::Generic) {
        ::kernels::isa::with(isa, || {
            for (n, cin, cout, input, kernel, stride, pad, dil) in cases {
                let g = Geometry { n, cin, cout, ..geometry3(input, kernel, stride, pad, dil) };
                let x: Vec<f32> = rng.vec(n * cin * g.in_numel()).iter().map(|v| v * 4.0).collect();
                let k = cin * g.kernel_numel();
                let wd = rng.vec(cout * k);
                let mut wsizes = vec![cout, cin];
                wsizes.extend(kernel);
                let wt = Tensor::from_vec(wd.clone(), &wsizes).unwrap();
                let channel_major = PackedFilter::pack("t", isa, &wt, 1).unwrap();
                let transposed = pack_pixel_major("t", isa, &wd, cout, k).unwrap();
                let pixel_major = PackedFilter { groups: 1, per_group: Vec::new(), depthwise: None, pixel_major: Some(transposed) };
                let bias = rng.vec(cout);
                let len = n * cout * g.out_numel();
                let mut r: Vec<f32> = rng.vec(len).iter().map(|v| v * 4.0).collect();
                r[1] = f32::NAN;
                let halves = [HalfRounding::NONE, HalfRounding { product: true, result: true }];
                for (act, half, first) in [
                    (Activation::None, halves[0], None),
                    (Activation::Hardswish, halves[0], None),
                    (Activation::Relu, halves[1], None),
                    (Activation::Relu, halves[0], Some(true)),
                    (Activation::Clamp(0.0, 6.0), halves[1], Some(false)),
                ] {
                    let post = Post { addend: first.map(|first| Addend { data: &r, ld: g.out_numel(), first }), act, half };
                    let mut want = vec![f32::NAN; len];
                    conv_compute_packed("t", &g, &x, &channel_major, Some(&bias), &post, &mut want).unwrap();
                    for pool in &pools {
                        let mut got = vec![f32::NAN; len];
                        pool.install(|| conv_compute_packed("t", &g, &x, &pixel_major, Some(&bias), &post, &mut got)).unwrap();
                        for (e, (&got, &want)) in got.iter().zip(&want).enumerate() {
                            assert!(
                                got.to_bits() == want.to_bits() || got.is_nan() && want.is_nan(),
                                "{isa} {g:?} {act:?} {first:?} element {e}: got {got}, want {want}"
                            );
                        }
                    }
                }
            }
        });
    }
}

/// Where a convolution is computed pixel-major: few positions and many channels, not the
/// reverse, nor where the lanes' gain is too small to pay for the copy, nor where the column
/// matrix would be too large.
#[test]
fn pixel_major_products_run_where_positions_fill_lanes_poorly() {
    for isa in [Isa::Avx512, Isa::Avx2] {
        assert!(pixel_major_pays(isa, 49, 96, 576), "{isa}");
        assert!(pixel_major_pays(isa, 49, 576, 96), "{isa}");
        assert!(!pixel_major_pays(isa, 3136, 64, 64), "{isa}");
        assert!(!pixel_major_pays(isa, 196, 40, 240), "{isa}");
        assert!(!pixel_major_pays(isa, 49, 96, 20), "{isa}");
    }
    assert!(pixel_major_pays(Isa::Avx512, 169, 512, 1000));
    assert!(pixel_major_applies(Isa::Avx512, 169, 48 * 9, 192));
    assert!(!pixel_major_applies(Isa::Avx512, 49, 1 << 15, 576));
    assert!(!pixel_major_pays(Isa::Generic, 49, 96, 576));
}

/// Depthwise convolutions (the direct kernel, with and without a prepacked filter) agree with
/// the per-group GEMM path (run in `f64`) on strides 1 and 2, 3×3 and 5×5 kernels, odd
/// widths, padding, dilation and 1-d inputs, with and without bias, on every ISA path.
#[test]
fn depthwise_convolution_matches_the_gemm_path_on_every_isa() {
    let mut rng = Gen(0xd3_97_11);
    // (n, channels, input, kernel, stride, pad, dilation)
    type Case = (usize, usize, [usize; 3], [usize; 3], [usize; 3], [usize; 3], [usize; 3]);
    let cases: [Case; 7] = [
        (1, 8, [1, 17, 19], [1, 3, 3], [1, 1, 1], [0, 1, 1], [1, 1, 1]),
        (2, 5, [1, 15, 13], [1, 3, 3], [1, 2, 2], [0, 1, 1], [1, 1, 1]),
        (1, 3, [1, 14, 14], [1, 5, 5], [1, 1, 1], [0, 2, 2], [1, 1, 1]),
        (1, 4, [1, 29, 31], [1, 5, 5], [1, 2, 2], [0, 2, 2], [1, 1, 1]),
        (1, 2, [1, 9, 11], [1, 3, 3], [1, 1, 1], [0, 2, 2], [1, 2, 2]),
        (2, 3, [1, 1, 40], [1, 1, 3], [1, 1, 2], [0, 0, 1], [1, 1, 1]),
        (1, 16, [1, 7, 7], [1, 3, 3], [1, 1, 1], [0, 1, 1], [1, 1, 1]),
    ];
    for (n, c, input, kernel, stride, pad, dil) in cases {
        let g = Geometry { n, cin: c, cout: c, groups: c, ..geometry3(input, kernel, stride, pad, dil) };
        assert!(g.depthwise().is_some(), "{g:?}");
        let x = rng.vec(n * c * g.in_numel());
        let wsizes = [c, 1, kernel[1], kernel[2]];
        let wd = rng.vec(wsizes.iter().product());
        let bias = rng.vec(c);
        let widen = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<_>>();
        for b in [None, Some(&bias[..])] {
            let len = n * c * g.out_numel();
            let mut want = vec![0.0f64; len];
            conv_compute("t", &g, &widen(&x), &widen(&wd), b.map(widen).as_deref(), &mut want).unwrap();
            for isa in Isa::supported() {
                ::kernels::isa::with(isa, || {
                    let mut got = vec![f32::NAN; len];
                    conv_compute("t", &g, &x, &wd, b, &mut got).unwrap();
                    let mut runs = vec![got];
                    if let Some(simd) = Isa::simd() {
                        let wt = Tensor::from_vec(wd.clone(), &wsizes).unwrap();
                        let filter = PackedFilter::pack("t", simd, &wt, c).unwrap();
                        let mut packed = vec![f32::NAN; len];
                        conv_compute_packed("t", &g, &x, &filter, b, &Post::NONE, &mut packed).unwrap();
                        runs.push(packed);
                    }
                    for got in runs {
                        for (i, (s, w)) in got.iter().zip(&want).enumerate() {
                            assert!((*s as f64 - w).abs() <= 1e-5 * (1.0 + w.abs()), "{isa} {g:?} element {i}: got {s}, want {w}");
                        }
                    }
                });
            }
        }
    }
}

/// Convolutions read in place over a zero-padded input ([`by_rows`]) give the bits of the
/// column panels ([`by_panels`]) on batches, groups, padding on every side, dilation, strides
/// of 2 and 3 (the input in phases) alone and with dilation, 3-d and 1-d outputs, rows shorter
/// than a tile, with a partial last tile of either width, `K` past one block of `k`, whole
/// planes as one product (3-d ones plane by plane), with and without bias and with post-ops,
/// on one thread and on three.
#[test]
fn rows_of_the_padded_input_give_the_bits_of_the_column_panels() {
    let isas: Vec<Isa> = [Isa::Avx2, Isa::Avx512].into_iter().filter(|isa| isa.available()).collect();
    if isas.is_empty() {
        println!("skipping: the rows of a padded input are read by vector tiles only, and this CPU has neither AVX2 nor AVX-512");
        return;
    }
    let pools = [1, 3].map(|t| rayon::ThreadPoolBuilder::new().num_threads(t).build().unwrap());
    let mut rng = Gen(0x0b_7e_50_11);
    // (n, cin, cout, groups, input, kernel, stride, pad, dilation)
    type Case = (usize, usize, usize, usize, [usize; 3], [usize; 3], [usize; 3], [usize; 3], [usize; 3]);
    let cases: [Case; 18] = [
        (1, 32, 32, 1, [1, 12, 64], [1, 3, 3], [1, 1, 1], [0, 1, 1], [1, 1, 1]),
        (2, 16, 19, 1, [1, 7, 55], [1, 3, 3], [1, 1, 1], [0, 1, 1], [1, 1, 1]),
        (1, 8, 12, 2, [1, 9, 21], [1, 3, 3], [1, 1, 1], [0, 1, 1], [1, 1, 1]),
        (1, 6, 7, 1, [1, 5, 13], [1, 5, 5], [1, 1, 1], [0, 2, 2], [1, 1, 1]),
        (1, 5, 9, 1, [1, 9, 35], [1, 3, 3], [1, 1, 1], [0, 2, 2], [1, 2, 2]),
        (2, 4, 5, 1, [4, 5, 20], [3, 3, 3], [1, 1, 1], [1, 1, 1], [1, 1, 1]),
        (1, 3, 4, 1, [1, 1, 70], [1, 1, 5], [1, 1, 1], [0, 0, 2], [1, 1, 3]),
        (1, 4, 6, 1, [1, 6, 9], [1, 3, 2], [1, 1, 1], [0, 0, 1], [1, 1, 1]),
        (1, 2, 3, 1, [1, 3, 4], [1, 2, 2], [1, 1, 1], [0, 3, 3], [1, 1, 1]),
        // Stride-2 stems (3 input channels, padded and not, odd and even widths), a 7×7
        // stem, a strided 1×1, stride 3, stride with dilation, a 3-d stride.
        (1, 3, 24, 1, [1, 20, 36], [1, 3, 3], [1, 2, 2], [0, 1, 1], [1, 1, 1]),
        (2, 3, 16, 1, [1, 15, 37], [1, 3, 3], [1, 2, 2], [0, 0, 0], [1, 1, 1]),
        (1, 3, 10, 1, [1, 21, 40], [1, 7, 7], [1, 2, 2], [0, 3, 3], [1, 1, 1]),
        (1, 12, 13, 1, [1, 7, 34], [1, 1, 1], [1, 2, 2], [0, 0, 0], [1, 1, 1]),
        (1, 4, 6, 2, [1, 9, 50], [1, 3, 3], [1, 3, 3], [0, 1, 2], [1, 1, 1]),
        (1, 3, 6, 1, [1, 11, 44], [1, 3, 3], [1, 2, 2], [0, 2, 2], [1, 2, 2]),
        (1, 2, 7, 1, [5, 6, 36], [3, 3, 3], [2, 1, 2], [1, 1, 1], [1, 1, 1]),
        // Whole planes as one product on both vector paths (`by_image_applies`), more output
        // channels than a tile has rows, and with dilation.
        (1, 8, 20, 1, [1, 6, 27], [1, 3, 3], [1, 1, 1], [0, 1, 1], [1, 1, 1]),
        (1, 5, 7, 1, [1, 7, 50], [1, 3, 3], [1, 1, 1], [0, 2, 2], [1, 2, 2]),
    ];
    for ((n, cin, cout, groups, input, kernel, stride, pad, dil), &isa) in cases.into_iter().flat_map(|c| isas.iter().map(move |i| (c, i))) {
        let g = Geometry { n, cin, cout, groups, ..geometry3(input, kernel, stride, pad, dil) };
        let x = rng.vec(n * cin * g.in_numel());
        let mut wsizes = vec![cout, cin / groups];
        wsizes.extend(kernel);
        let wt = Tensor::from_vec(rng.vec(wsizes.iter().product()), &wsizes).unwrap();
        let filter = ::kernels::isa::with(isa, || PackedFilter::pack("t", isa, &wt, groups)).unwrap();
        let bias = rng.vec(cout);
        let len = n * cout * g.out_numel();
        let r = rng.vec(len);
        let posts = [
            Post::NONE,
            Post { addend: Some(Addend { data: &r, ld: g.out_numel(), first: false }), act: Activation::Relu, ..Post::NONE },
            Post { addend: None, act: Activation::Hardswish, ..Post::NONE },
        ];
        for (b, post) in [(None, &posts[0]), (Some(&bias[..]), &posts[0]), (Some(&bias[..]), &posts[1]), (None, &posts[2])] {
            let run = |pool: &rayon::ThreadPool, rows: bool| {
                let mut got = vec![f32::NAN; len];
                pool.install(|| {
                    ::kernels::isa::with(isa, || {
                        if rows {
                            by_rows("t", &g, &x, &filter, b, post, &mut got)
                        } else {
                            by_panels("t", &g, &x, &filter, b, post, &mut got)
                        }
                    })
                })
                .unwrap();
                got.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
            };
            let want = run(&pools[0], false);
            for pool in &pools {
                assert_eq!(run(pool, true), want, "{isa} {g:?} bias={} post={post:?}", b.is_some());
            }
        }
    }
}

/// The rows path is taken where it applies and not elsewhere.
#[test]
fn rows_of_the_padded_input_are_read_where_they_fill_the_tiles() {
    let g = |w: usize, stride: usize| geometry3([1, 8, w], [1, 3, 3], [1, stride, stride], [0, 1, 1], [1, 1, 1]);
    for (w, want) in [(64, true), (56, true), (55, true), (112, true), (8, true), (27, false), (13, false), (7, false), (28, false)] {
        assert_eq!(by_rows_applies(&g(w, 1), Isa::Avx2), want, "width {w}");
    }
    // A strided convolution goes by the width of its output rows too.
    assert!(by_rows_applies(&g(112, 2), Isa::Avx2));
    assert!(!by_rows_applies(&g(14, 2), Isa::Avx2));
    // AVX-512 counts vectors of 16.
    for (w, want) in [(64, true), (112, true), (111, true), (16, true), (56, false), (55, false), (15, false), (28, false)] {
        assert_eq!(by_rows_applies(&g(w, 1), Isa::Avx512), want, "width {w}");
    }
    assert!(!by_rows_applies(&g(64, 1), Isa::Generic));
}

/// Whole planes go as one product where their junk columns idle fewer lanes than rows do,
/// and not with a stride, a residual addend or the generic path.
#[test]
fn whole_planes_are_one_product_where_they_fill_more_lanes_than_rows() {
    let g = |w: usize, stride: usize| geometry3([1, 8, w], [1, 3, 3], [1, stride, stride], [0, 1, 1], [1, 1, 1]);
    let none = Post::NONE;
    for (w, avx2, avx512) in [(55, false, true), (27, true, true), (20, true, true), (64, false, false), (13, false, false), (112, false, false)] {
        assert_eq!(by_image_applies(&g(w, 1), Isa::Avx2, &none), avx2, "width {w} avx2");
        assert_eq!(by_image_applies(&g(w, 1), Isa::Avx512, &none), avx512, "width {w} avx512");
    }
    assert!(!by_image_applies(&g(55, 2), Isa::Avx512, &none));
    assert!(!by_image_applies(&g(55, 1), Isa::Generic, &none));
    let r = vec![0.0; 8 * 55 * 55];
    let residual = Post { addend: Some(Addend { data: &r, ld: 55 * 55, first: false }), ..Post::NONE };
    assert!(!by_image_applies(&g(55, 1), Isa::Avx512, &residual));
}

/// A convolution pooled band by band ([`conv_pool_packed`]) gives the bits of the convolution
/// then the 3 × 3 stride-2 max pool of its output: strided stems and a 7 × 7 one, unit strides,
/// the pool padded and not, an odd number of convolution rows (the last window's row is
/// padding), several bands a task (each starting with the row before's copy), batches, with and
/// without bias, several post-ops, a NaN; on one thread and on three.
#[test]
fn pooled_bands_give_the_bits_of_the_convolution_then_the_pool() {
    let isas: Vec<Isa> = [Isa::Avx2, Isa::Avx512].into_iter().filter(|isa| isa.available()).collect();
    if isas.is_empty() {
        println!("skipping: pooled convolutions run on the vector paths only, and this CPU has neither AVX2 nor AVX-512");
        return;
    }
    let threads = [1, 3].map(|t| rayon::ThreadPoolBuilder::new().num_threads(t).build().unwrap());
    let mut rng = Gen(0x9001_ed);
    // (n, cin, cout, input, kernel, stride, conv padding, pool padding)
    type Case = (usize, usize, usize, [usize; 3], [usize; 3], [usize; 3], [usize; 3], usize);
    let cases: [Case; 5] = [
        (1, 3, 16, [1, 47, 65], [1, 3, 3], [1, 2, 2], [0, 0, 0], 0),
        (2, 3, 24, [1, 64, 64], [1, 3, 3], [1, 2, 2], [0, 1, 1], 1),
        (1, 4, 64, [1, 66, 64], [1, 3, 3], [1, 2, 2], [0, 1, 1], 1),
        (1, 3, 128, [1, 48, 224], [1, 7, 7], [1, 2, 2], [0, 3, 3], 1),
        (1, 8, 16, [1, 20, 64], [1, 3, 3], [1, 1, 1], [0, 1, 1], 0),
    ];
    for ((n, cin, cout, input, kernel, stride, pad, pool_pad), &isa) in cases.into_iter().flat_map(|c| isas.iter().map(move |i| (c, i))) {
        let g = Geometry { n, cin, cout, ..geometry3(input, kernel, stride, pad, [1, 1, 1]) };
        let [_, oh, ow] = g.output;
        let pooled = [(oh + 2 * pool_pad - 3) / 2 + 1, (ow + 2 * pool_pad - 3) / 2 + 1];
        let mut x = rng.vec(n * cin * g.in_numel());
        x[5] = f32::NAN;
        let mut wsizes = vec![cout, cin];
        wsizes.extend(kernel);
        let wt = Tensor::from_vec(rng.vec(wsizes.iter().product()), &wsizes).unwrap();
        let filter = ::kernels::isa::with(isa, || PackedFilter::pack("t", isa, &wt, 1)).unwrap();
        let bias = rng.vec(cout);
        let posts = [Post { act: Activation::Relu, ..Post::NONE }, Post { act: Activation::Hardswish, ..Post::NONE }, Post::NONE];
        for (b, post) in [(Some(&bias[..]), &posts[0]), (None, &posts[1]), (Some(&bias[..]), &posts[2])] {
            assert!(::kernels::isa::with(isa, || conv_pool_applies(&g, &filter, post, pool_pad, pooled)), "{isa} {g:?}");
            let want = ::kernels::isa::with(isa, || {
                let mut conv = vec![f32::NAN; n * cout * g.out_numel()];
                conv_compute_packed("t", &g, &x, &filter, b, post, &mut conv).unwrap();
                let mut out = vec![f32::NAN; n * cout * pooled[0] * pooled[1]];
                assert!(::kernels::pool::max_pool_3x3s2(&conv, n * cout, [oh, ow], pool_pad, pooled, &mut out, &mut Vec::new()));
                out.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
            });
            for pool in &threads {
                let mut got = vec![f32::NAN; want.len()];
                pool.install(|| ::kernels::isa::with(isa, || conv_pool_packed("t", &g, &x, &filter, b, post, pool_pad, pooled, &mut got))).unwrap();
                let got: Vec<u32> = got.iter().map(|v| v.to_bits()).collect();
                assert_eq!(got, want, "{isa} {g:?} pool padding {pool_pad} bias={} post={post:?}", b.is_some());
            }
        }
        // A partial window (`ceil_mode` past the last row) and a residual are outside the
        // banded path.
        let r = vec![0.0; n * cout * g.out_numel()];
        let residual = Post { addend: Some(Addend { data: &r, ld: g.out_numel(), first: false }), ..Post::NONE };
        ::kernels::isa::with(isa, || {
            assert!(!conv_pool_applies(&g, &filter, &Post::NONE, pool_pad, [oh.div_ceil(2) + pool_pad, pooled[1]]), "{g:?}");
            assert!(!conv_pool_applies(&g, &filter, &residual, pool_pad, pooled), "{g:?}");
        });
    }
}
