//! Convolution kernels: hand-computed cases and a cross-check against a direct-loop reference
//! on pseudo-random shapes (1/2/3-d, stride, padding, dilation, groups, transposed).

use ir::DType;
use runtime::{IValue, Tensor, registry};

fn t(data: &[f32], sizes: &[usize]) -> Tensor {
    Tensor::from_slice(data, sizes).unwrap()
}

fn ints(v: &[i64]) -> IValue {
    IValue::IntList(v.to_vec())
}

fn call(op: &str, args: Vec<IValue>) -> Tensor {
    let mut r = registry().call(op, &args).unwrap_or_else(|e| panic!("{op}: {e}"));
    r.remove(0).into_tensor().unwrap()
}

fn call_err(op: &str, args: Vec<IValue>) -> String {
    match registry().call(op, &args) {
        Ok(_) => panic!("{op} should fail"),
        Err(e) => e.to_string(),
    }
}

fn close(got: &Tensor, want: &[f64], sizes: &[usize], tol: f64) {
    assert_eq!(got.sizes(), sizes);
    let g = got.to_vec_f64();
    assert_eq!(g.len(), want.len());
    for (i, (a, b)) in g.iter().zip(want).enumerate() {
        assert!((a - b).abs() <= tol * b.abs().max(1.0), "element {i}: {a} vs {b}");
    }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() as usize) % (hi - lo + 1)
    }
    fn vals(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| (self.next() % 2000) as f32 / 1000.0 - 1.0).collect()
    }
}

#[allow(clippy::too_many_arguments)]
fn conv_args(
    x: Tensor,
    w: Tensor,
    b: Option<Tensor>,
    s: &[i64],
    p: &[i64],
    d: &[i64],
    tr: bool,
    op: &[i64],
    g: i64,
) -> Vec<IValue> {
    vec![
        x.into(),
        w.into(),
        b.map_or(IValue::None, IValue::Tensor),
        ints(s),
        ints(p),
        ints(d),
        IValue::Bool(tr),
        ints(op),
        IValue::Int(g),
    ]
}

/// Direct-loop convolution over row-major buffers, 1 to 3 spatial dims.
#[allow(clippy::too_many_arguments)]
fn reference(
    x: &[f32],
    xs: &[usize],
    w: &[f32],
    ws: &[usize],
    b: Option<&[f32]>,
    s: &[usize],
    p: &[usize],
    dl: &[usize],
    transposed: bool,
    opad: &[usize],
    g: usize,
) -> (Vec<f64>, Vec<usize>) {
    let d = xs.len() - 2;
    let (n, cin) = (xs[0], xs[1]);
    let cout = if transposed { ws[1] * g } else { ws[0] };
    let (cin_g, cout_g) = (cin / g, cout / g);
    let osz: Vec<usize> = (0..d)
        .map(|i| {
            if transposed {
                (xs[2 + i] - 1) * s[i] + dl[i] * (ws[2 + i] - 1) + opad[i] + 1 - 2 * p[i]
            } else {
                (xs[2 + i] + 2 * p[i] - dl[i] * (ws[2 + i] - 1) - 1) / s[i] + 1
            }
        })
        .collect();
    let mut out_sizes = vec![n, cout];
    out_sizes.extend(&osz);
    let onum: usize = osz.iter().product();
    let inum: usize = xs[2..].iter().product();
    let knum: usize = ws[2..].iter().product();
    let unravel = |mut i: usize, dims: &[usize]| -> Vec<usize> {
        let mut r = vec![0; dims.len()];
        for k in (0..dims.len()).rev() {
            r[k] = i % dims[k];
            i /= dims[k];
        }
        r
    };
    let ravel = |idx: &[usize], dims: &[usize]| idx.iter().zip(dims).fold(0, |acc, (&i, &dd)| acc * dd + i);
    let mut out = vec![0f64; n * cout * onum];
    for bi in 0..n {
        for co in 0..cout {
            for o in 0..onum {
                out[(bi * cout + co) * onum + o] = b.map_or(0.0, |b| b[co] as f64);
            }
        }
    }
    for bi in 0..n {
        for grp in 0..g {
            for ci in 0..cin_g {
                for co in 0..cout_g {
                    for kk in 0..knum {
                        let kidx = unravel(kk, &ws[2..]);
                        let wv = if transposed {
                            w[((grp * cin_g + ci) * cout_g + co) * knum + kk]
                        } else {
                            w[((grp * cout_g + co) * cin_g + ci) * knum + kk]
                        } as f64;
                        if transposed {
                            for ii in 0..inum {
                                let iidx = unravel(ii, &xs[2..]);
                                let pos: Vec<isize> = (0..d)
                                    .map(|q| (iidx[q] * s[q] + kidx[q] * dl[q]) as isize - p[q] as isize)
                                    .collect();
                                if pos.iter().zip(&osz).all(|(&v, &l)| v >= 0 && (v as usize) < l) {
                                    let pu: Vec<usize> = pos.iter().map(|&v| v as usize).collect();
                                    let xv = x[(bi * cin + grp * cin_g + ci) * inum + ii] as f64;
                                    out[(bi * cout + grp * cout_g + co) * onum + ravel(&pu, &osz)] += xv * wv;
                                }
                            }
                        } else {
                            for o in 0..onum {
                                let oidx = unravel(o, &osz);
                                let pos: Vec<isize> = (0..d)
                                    .map(|q| (oidx[q] * s[q] + kidx[q] * dl[q]) as isize - p[q] as isize)
                                    .collect();
                                if pos.iter().zip(&xs[2..]).all(|(&v, &l)| v >= 0 && (v as usize) < l) {
                                    let pu: Vec<usize> = pos.iter().map(|&v| v as usize).collect();
                                    let xv = x[(bi * cin + grp * cin_g + ci) * inum + ravel(&pu, &xs[2..])] as f64;
                                    out[(bi * cout + grp * cout_g + co) * onum + o] += xv * wv;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    (out, out_sizes)
}

#[test]
fn conv1d_hand_computed() {
    let x = t(&[1., 2., 3., 4.], &[1, 1, 4]);
    let w = t(&[1., 1.], &[1, 1, 2]);
    let y = call("aten.convolution", conv_args(x.clone(), w.clone(), None, &[1], &[0], &[1], false, &[0], 1));
    close(&y, &[3., 5., 7.], &[1, 1, 3], 1e-6);
    // stride 2, padding 1, bias 10: padded [0,1,2,3,4,0] -> windows at 0,2,4.
    let b = t(&[10.], &[1]);
    let y = call("aten.convolution", conv_args(x.clone(), w.clone(), Some(b), &[2], &[1], &[1], false, &[0], 1));
    close(&y, &[11., 15., 14.], &[1, 1, 3], 1e-6);
    // dilation 2: x[i] + x[i+2].
    let y = call("aten.convolution", conv_args(x, w, None, &[1], &[0], &[2], false, &[0], 1));
    close(&y, &[4., 6.], &[1, 1, 2], 1e-6);
}

#[test]
fn conv2d_groups_hand_computed() {
    // Two channels, groups=2 (depthwise): each channel convolved with its own 1x1 weight.
    let x = t(&[1., 2., 3., 4., 5., 6., 7., 8.], &[1, 2, 2, 2]);
    let w = t(&[2., -1.], &[2, 1, 1, 1]);
    let y = call("aten.convolution", conv_args(x, w, None, &[1, 1], &[0, 0], &[1, 1], false, &[0, 0], 2));
    close(&y, &[2., 4., 6., 8., -5., -6., -7., -8.], &[1, 2, 2, 2], 1e-6);
}

#[test]
fn conv_transpose1d_hand_computed() {
    // Each input scatters the kernel at stride 2: [1,1,1] at 0 and 2*[1,1,1] at 2.
    let x = t(&[1., 2.], &[1, 1, 2]);
    let w = t(&[1., 1., 1.], &[1, 1, 3]);
    let y = call("aten.convolution", conv_args(x.clone(), w.clone(), None, &[2], &[0], &[1], true, &[0], 1));
    close(&y, &[1., 1., 3., 2., 2.], &[1, 1, 5], 1e-6);
    // padding 1 trims one from each side; output_padding 1 adds one at the end.
    let y = call("aten.convolution", conv_args(x, w, None, &[2], &[1], &[1], true, &[1], 1));
    close(&y, &[1., 3., 2., 2.], &[1, 1, 4], 1e-6);
}

#[test]
fn conv_matches_direct_reference_on_random_shapes() {
    let mut rng = Rng(42);
    for case in 0..120 {
        let d = 1 + case % 3;
        let transposed = case % 4 == 3;
        let g = [1, 1, 2, 3][rng.range(0, 3)];
        let cin = g * rng.range(1, 3);
        let cout = g * rng.range(1, 3);
        let n = rng.range(1, 2);
        let k: Vec<usize> = (0..d).map(|_| rng.range(1, 3)).collect();
        let s: Vec<usize> = (0..d).map(|_| rng.range(1, 3)).collect();
        let dl: Vec<usize> = (0..d).map(|_| rng.range(1, 2)).collect();
        let p: Vec<usize> = (0..d).map(|i| rng.range(0, (dl[i] * (k[i] - 1)).min(2))).collect();
        let sp: Vec<usize> = (0..d).map(|i| rng.range(dl[i] * (k[i] - 1) + 1, dl[i] * (k[i] - 1) + 6)).collect();
        let opad: Vec<usize> = (0..d).map(|i| if transposed { rng.range(0, s[i].max(dl[i]) - 1) } else { 0 }).collect();
        let mut xs = vec![n, cin];
        xs.extend(&sp);
        let mut ws = if transposed { vec![cin, cout / g] } else { vec![cout, cin / g] };
        ws.extend(&k);
        let x = rng.vals(xs.iter().product());
        let w = rng.vals(ws.iter().product());
        let b = if case % 2 == 0 { Some(rng.vals(cout)) } else { None };
        let (want, sizes) = reference(&x, &xs, &w, &ws, b.as_deref(), &s, &p, &dl, transposed, &opad, g);
        let i = |v: &[usize]| v.iter().map(|&x| x as i64).collect::<Vec<_>>();
        let args = conv_args(
            t(&x, &xs),
            t(&w, &ws),
            b.as_ref().map(|b| t(b, &[cout])),
            &i(&s),
            &i(&p),
            &i(&dl),
            transposed,
            &i(&opad),
            g as i64,
        );
        let y = call("aten.convolution", args);
        close(&y, &want, &sizes, 1e-4);
    }
}

#[test]
fn conv_f64_noncontiguous_and_unbatched() {
    let mut rng = Rng(7);
    let x: Vec<f32> = rng.vals(2 * 3 * 5 * 4);
    let w: Vec<f32> = rng.vals(4 * 3 * 2 * 2);
    let (want, sizes) =
        reference(&x, &[2, 3, 5, 4], &w, &[4, 3, 2, 2], None, &[1, 1], &[1, 0], &[1, 1], false, &[0, 0], 1);
    // Input given as a permuted (channels-last) view of the same values.
    let nhwc: Vec<f64> = {
        let mut v = vec![0f64; x.len()];
        for n in 0..2 {
            for c in 0..3 {
                for h in 0..5 {
                    for ww in 0..4 {
                        v[((n * 5 + h) * 4 + ww) * 3 + c] = x[((n * 3 + c) * 5 + h) * 4 + ww] as f64;
                    }
                }
            }
        }
        v
    };
    let xv = Tensor::from_slice(&nhwc, &[2, 5, 4, 3]).unwrap().permute(&[0, 3, 1, 2]).unwrap();
    let wv = Tensor::from_slice(&w.iter().map(|&v| v as f64).collect::<Vec<_>>(), &[4, 3, 2, 2]).unwrap();
    let y = call("aten.convolution", conv_args(xv, wv.clone(), None, &[1, 1], &[1, 0], &[1, 1], false, &[0, 0], 1));
    assert_eq!(y.dtype(), DType::F64);
    close(&y, &want, &sizes, 1e-9);
    // Unbatched [C, H, W] input through conv2d.
    let x0 = Tensor::from_slice(&x[..60].iter().map(|&v| v as f64).collect::<Vec<_>>(), &[3, 5, 4]).unwrap();
    let y = call(
        "aten.conv2d",
        vec![x0.into(), wv.into(), IValue::None, ints(&[1, 1]), ints(&[1, 0]), ints(&[1, 1]), IValue::Int(1)],
    );
    close(&y, &want[..want.len() / 2], &sizes[1..], 1e-9);
}

#[test]
fn integer_convolution_wraps_like_pytorch() {
    let x = Tensor::from_slice(&[1i64, 2, 3, 4], &[1, 1, 4]).unwrap();
    let w = Tensor::from_slice(&[1i64, -1], &[1, 1, 2]).unwrap();
    let b = Tensor::from_slice(&[10i64], &[1]).unwrap();
    let y = call("aten.convolution", conv_args(x.clone(), w.clone(), Some(b), &[1], &[0], &[1], false, &[0], 1));
    assert_eq!(y.dtype(), DType::I64);
    assert_eq!(y.to_vec_i64(), vec![9, 9, 9]);
    let y = call("aten.convolution", conv_args(x, w, None, &[2], &[0], &[1], true, &[0], 1));
    assert_eq!(y.to_vec_i64(), vec![1, -1, 2, -2, 3, -3, 4, -4]);
    let x8 = Tensor::from_slice(&[100i8, 100], &[1, 1, 2]).unwrap();
    let w8 = Tensor::from_slice(&[1i8, 1], &[1, 1, 2]).unwrap();
    let y = call("aten.convolution", conv_args(x8, w8, None, &[1], &[0], &[1], false, &[0], 1));
    assert_eq!(y.dtype(), DType::I8);
    assert_eq!(y.to_vec_i64(), vec![-56]);
}

#[test]
fn conv2d_same_padding_and_conv_transpose2d() {
    // "same" with an even kernel pads one extra at the end.
    let x = t(&[1., 2., 3., 4.], &[1, 1, 1, 4]);
    let w = t(&[1., 1.], &[1, 1, 1, 2]);
    let y = call(
        "aten.conv2d.padding",
        vec![
            x.clone().into(),
            w.clone().into(),
            IValue::None,
            ints(&[1, 1]),
            IValue::from("same"),
            ints(&[1, 1]),
            IValue::Int(1),
        ],
    );
    close(&y, &[3., 5., 7., 4.], &[1, 1, 1, 4], 1e-6);
    let y = call(
        "aten.conv_transpose2d.input",
        vec![
            x.into(),
            w.into(),
            IValue::None,
            ints(&[1, 2]),
            ints(&[0, 0]),
            ints(&[0, 0]),
            IValue::Int(1),
            ints(&[1, 1]),
        ],
    );
    close(&y, &[1., 1., 2., 2., 3., 3., 4., 4.], &[1, 1, 1, 8], 1e-6);
}

#[test]
fn conv_errors_name_the_op() {
    let x = t(&[0.; 12], &[1, 3, 4]);
    let w = t(&[0.; 4], &[1, 2, 2]);
    let e = call_err("aten.convolution", conv_args(x.clone(), w, None, &[1], &[0], &[1], false, &[0], 1));
    assert!(e.starts_with("aten.convolution:") && e.contains("channels"), "{e}");
    let w = t(&[0.; 15], &[1, 3, 5]);
    let e = call_err("aten.convolution", conv_args(x.clone(), w.clone(), None, &[1], &[0], &[1], false, &[0], 1));
    assert!(e.contains("larger"), "{e}");
    let e = call_err("aten.convolution", conv_args(x.clone(), w.clone(), None, &[0], &[0], &[1], false, &[0], 1));
    assert!(e.contains("stride"), "{e}");
    let xb = Tensor::from_slice(&[false; 12], &[1, 3, 4]).unwrap();
    let wb = Tensor::from_slice(&[false; 3], &[1, 3, 1]).unwrap();
    let e = call_err("aten.convolution", conv_args(xb, wb, None, &[1], &[0], &[1], false, &[0], 1));
    assert!(e.contains("bool"), "{e}");
    let e = call_err("aten.convolution", conv_args(x, t(&[0.; 3], &[3, 1, 1]), None, &[2], &[0], &[1], true, &[2], 1));
    assert!(e.contains("output padding"), "{e}");
}

#[test]
fn im2col_and_col2im_round_trip() {
    // 1x1x3x3 image, 2x2 blocks at stride 1: 4 blocks of 4 taps.
    let x = t(&(1..=9).map(|v| v as f32).collect::<Vec<_>>(), &[1, 1, 3, 3]);
    let cols = call("aten.im2col", vec![x.into(), ints(&[2, 2]), ints(&[1, 1]), ints(&[0, 0]), ints(&[1, 1])]);
    close(&cols, &[1., 2., 4., 5., 2., 3., 5., 6., 4., 5., 7., 8., 5., 6., 8., 9.], &[1, 4, 4], 1e-6);
    // Folding sums overlapping taps: the centre is covered by all four blocks.
    let img = call(
        "aten.col2im",
        vec![cols.into(), ints(&[3, 3]), ints(&[2, 2]), ints(&[1, 1]), ints(&[0, 0]), ints(&[1, 1])],
    );
    close(&img, &[1., 4., 3., 8., 20., 12., 7., 16., 9.], &[1, 1, 3, 3], 1e-6);
    // Padding adds zero taps; integers work too.
    let xi = Tensor::from_slice(&[1i64, 2], &[1, 1, 2]).unwrap();
    let c = call("aten.im2col", vec![xi.into(), ints(&[1, 2]), ints(&[1, 1]), ints(&[0, 1]), ints(&[1, 1])]);
    assert_eq!(c.sizes(), &[2, 3]);
    assert_eq!(c.to_vec_i64(), vec![0, 1, 2, 1, 2, 0]);
    let e = call_err(
        "aten.col2im",
        vec![t(&[0.; 8], &[1, 4, 2]).into(), ints(&[3, 3]), ints(&[2, 2]), ints(&[1, 1]), ints(&[0, 0]), ints(&[1, 1])],
    );
    assert!(e.starts_with("aten.col2im:") && e.contains("sliding blocks"), "{e}");
}

#[test]
fn absurd_conv_arguments_are_errors_not_panics() {
    let x = t(&[0.; 4], &[1, 1, 4]);
    let w = t(&[0.; 2], &[1, 1, 2]);
    let e =
        call_err("aten.convolution", conv_args(x.clone(), w.clone(), None, &[i64::MAX], &[0], &[1], false, &[0], 1));
    assert!(e.contains("out of range"), "{e}");
    let e =
        call_err("aten.convolution", conv_args(x.clone(), w.clone(), None, &[1], &[i64::MAX], &[1], false, &[0], 1));
    assert!(e.contains("out of range"), "{e}");
    let cols = t(&[0.; 4], &[1, 4, 1]);
    let e = call_err(
        "aten.col2im",
        vec![
            cols.into(),
            ints(&[1 << 30, 1 << 30]),
            ints(&[2, 2]),
            ints(&[1, 1]),
            ints(&[0, 0]),
            ints(&[1 << 30, 1 << 30]),
        ],
    );
    assert!(!e.is_empty());
}
