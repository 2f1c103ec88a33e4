//! Normalization kernels: layer/batch/group/RMS norm against hand-computed values, returned
//! statistics, in-place running-stat updates and errors.

use ir::DType;
use runtime::{IValue, Tensor, registry};

fn t(data: &[f32], sizes: &[usize]) -> Tensor {
    Tensor::from_slice(data, sizes).unwrap()
}

fn ints(v: &[i64]) -> IValue {
    IValue::IntList(v.to_vec())
}

fn opt(t: Option<&Tensor>) -> IValue {
    t.map_or(IValue::None, |t| IValue::Tensor(t.clone()))
}

fn call(op: &str, args: Vec<IValue>) -> Vec<Tensor> {
    registry()
        .call(op, &args)
        .unwrap_or_else(|e| panic!("{op}: {e}"))
        .into_iter()
        .map(|v| v.into_tensor().unwrap())
        .collect()
}

fn call_err(op: &str, args: Vec<IValue>) -> String {
    match registry().call(op, &args) {
        Ok(_) => panic!("{op} should fail"),
        Err(e) => e.to_string(),
    }
}

fn close(got: &Tensor, want: &[f64], sizes: &[usize]) {
    assert_eq!(got.sizes(), sizes);
    let g = got.to_vec_f64();
    assert_eq!(g.len(), want.len(), "{g:?}");
    for (i, (a, b)) in g.iter().zip(want).enumerate() {
        assert!((a - b).abs() <= 1e-5 * b.abs().max(1.0), "element {i}: {a} vs {b} in {g:?}");
    }
}

#[test]
fn native_layer_norm_outputs_and_stats() {
    // Rows [1,2,3] and [2,4,6]: means 2 and 4, variances 2/3 and 8/3.
    let x = t(&[1., 2., 3., 2., 4., 6.], &[2, 3]);
    let eps = 1e-5f64;
    let r1 = 1.0 / (2.0f64 / 3.0 + eps).sqrt();
    let r2 = 1.0 / (8.0f64 / 3.0 + eps).sqrt();
    let r = call(
        "aten.native_layer_norm",
        vec![x.clone().into(), ints(&[3]), IValue::None, IValue::None, IValue::Float(eps)],
    );
    close(&r[0], &[-r1, 0., r1, -2. * r2, 0., 2. * r2], &[2, 3]);
    close(&r[1], &[2., 4.], &[2, 1]);
    close(&r[2], &[r1, r2], &[2, 1]);
    let w = t(&[1., 2., 3.], &[3]);
    let b = t(&[0., 1., 0.], &[3]);
    let r = call(
        "aten.layer_norm",
        vec![x.into(), ints(&[3]), opt(Some(&w)), opt(Some(&b)), IValue::Float(eps), IValue::Bool(true)],
    );
    close(&r[0], &[-r1, 1., 3. * r1, -2. * r2, 1., 6. * r2], &[2, 3]);
}

#[test]
fn layer_norm_over_two_dims_f64_and_errors() {
    let x = Tensor::from_slice(&[1.0f64, 3.0, 5.0, 7.0], &[1, 2, 2]).unwrap();
    let r = call(
        "aten.native_layer_norm",
        vec![x.clone().into(), ints(&[2, 2]), IValue::None, IValue::None, IValue::Float(0.0)],
    );
    assert_eq!(r[0].dtype(), DType::F64);
    let s = 5.0f64.sqrt();
    close(&r[0], &[-3. / s, -1. / s, 1. / s, 3. / s], &[1, 2, 2]);
    close(&r[1], &[4.], &[1, 1, 1]);
    let e =
        call_err("aten.native_layer_norm", vec![x.into(), ints(&[3]), IValue::None, IValue::None, IValue::Float(0.0)]);
    assert!(e.starts_with("aten.native_layer_norm:") && e.contains("normalized_shape"), "{e}");
    let xi = Tensor::from_slice(&[1i64, 2], &[2]).unwrap();
    let e =
        call_err("aten.native_layer_norm", vec![xi.into(), ints(&[2]), IValue::None, IValue::None, IValue::Float(0.0)]);
    assert!(e.contains("floating-point"), "{e}");
}

#[test]
fn batch_norm_inference_uses_running_stats() {
    let x = t(&[1., 2., 3., 4.], &[1, 2, 2]);
    let rm = t(&[1., 2.], &[2]);
    let rv = t(&[4., 1.], &[2]);
    let w = t(&[2., 1.], &[2]);
    let b = t(&[0., 10.], &[2]);
    let r = call(
        "aten._native_batch_norm_legit_no_training",
        vec![
            x.clone().into(),
            opt(Some(&w)),
            opt(Some(&b)),
            rm.clone().into(),
            rv.clone().into(),
            IValue::Float(0.1),
            IValue::Float(0.0),
        ],
    );
    close(&r[0], &[0., 1., 11., 12.], &[1, 2, 2]);
    assert_eq!(r[1].sizes(), &[0]);
    assert_eq!(r[2].sizes(), &[0]);
    let r = call(
        "aten.batch_norm",
        vec![
            x.into(),
            opt(Some(&w)),
            opt(Some(&b)),
            rm.into(),
            rv.into(),
            IValue::Bool(false),
            IValue::Float(0.1),
            IValue::Float(0.0),
            IValue::Bool(false),
        ],
    );
    close(&r[0], &[0., 1., 11., 12.], &[1, 2, 2]);
}

#[test]
fn batch_norm_training_updates_running_stats_in_place() {
    // Channel 0 values {1, 3, 5, 7}: mean 4, biased var 5, unbiased 20/3.
    // Channel 1 values {2, 4, 2, 4}: mean 3, biased var 1, unbiased 4/3.
    let x = t(&[1., 3., 2., 4., 5., 7., 2., 4.], &[2, 2, 2]);
    let rm = t(&[0., 0.], &[2]);
    let rv = t(&[1., 1.], &[2]);
    let r = call(
        "aten._native_batch_norm_legit",
        vec![
            x.clone().into(),
            IValue::None,
            IValue::None,
            rm.clone().into(),
            rv.clone().into(),
            IValue::Bool(true),
            IValue::Float(0.5),
            IValue::Float(0.0),
        ],
    );
    let s = 5.0f64.sqrt();
    close(&r[0], &[-3. / s, -1. / s, -1., 1., 1. / s, 3. / s, -1., 1.], &[2, 2, 2]);
    close(&r[1], &[4., 3.], &[2]);
    close(&r[2], &[1. / s, 1.], &[2]);
    close(&rm, &[2., 1.5], &[2]);
    close(&rv, &[0.5 + 0.5 * 20. / 3., 0.5 + 0.5 * 4. / 3.], &[2]);
    // The functional variant returns new stats and leaves its inputs alone.
    let rm2 = t(&[0., 0.], &[2]);
    let rv2 = t(&[1., 1.], &[2]);
    let r = call(
        "aten._native_batch_norm_legit_functional",
        vec![
            x.clone().into(),
            IValue::None,
            IValue::None,
            rm2.clone().into(),
            rv2.clone().into(),
            IValue::Bool(true),
            IValue::Float(0.5),
            IValue::Float(1.0),
        ],
    );
    close(&r[3], &[2., 1.5], &[2]);
    close(&rm2, &[0., 0.], &[2]);
    // No running stats at all.
    let r = call(
        "aten._native_batch_norm_legit.no_stats",
        vec![x.into(), IValue::None, IValue::None, IValue::Bool(true), IValue::Float(0.1), IValue::Float(1.0)],
    );
    close(&r[1], &[4., 3.], &[2]);
    close(&r[2], &[1. / 6.0f64.sqrt(), 1. / 2.0f64.sqrt()], &[2]);
}

#[test]
fn batch_norm_errors() {
    let x = t(&[1., 2.], &[1, 2]);
    let e = call_err(
        "aten.native_batch_norm",
        vec![
            x.clone().into(),
            IValue::None,
            IValue::None,
            IValue::None,
            IValue::None,
            IValue::Bool(true),
            IValue::Float(0.1),
            IValue::Float(1e-5),
        ],
    );
    assert!(e.starts_with("aten.native_batch_norm:") && e.contains("more than 1 value"), "{e}");
    let e = call_err(
        "aten.native_batch_norm",
        vec![
            x.into(),
            opt(Some(&t(&[1., 2., 3.], &[3]))),
            IValue::None,
            IValue::None,
            IValue::None,
            IValue::Bool(true),
            IValue::Float(0.1),
            IValue::Float(1e-5),
        ],
    );
    assert!(e.contains("weight"), "{e}");
}

#[test]
fn group_norm_native_and_wrapper() {
    // N=1, C=4, HxW=1, 2 groups: {1,3} and {10,20}.
    let x = t(&[1., 3., 10., 20.], &[1, 4, 1]);
    let w = t(&[1., 2., 1., 1.], &[4]);
    let r = call(
        "aten.native_group_norm",
        vec![
            x.clone().into(),
            opt(Some(&w)),
            IValue::None,
            IValue::Int(1),
            IValue::Int(4),
            IValue::Int(1),
            IValue::Int(2),
            IValue::Float(0.0),
        ],
    );
    close(&r[0], &[-1., 2., -1., 1.], &[1, 4, 1]);
    close(&r[1], &[2., 15.], &[1, 2]);
    close(&r[2], &[1., 0.2], &[1, 2]);
    let r = call(
        "aten.group_norm",
        vec![x.into(), IValue::Int(2), opt(Some(&w)), IValue::None, IValue::Float(0.0), IValue::Bool(true)],
    );
    close(&r[0], &[-1., 2., -1., 1.], &[1, 4, 1]);
    let e = call_err("aten.group_norm", vec![t(&[0.; 3], &[1, 3]).into(), IValue::Int(2)]);
    assert!(e.contains("divisible"), "{e}");
}

#[test]
fn rms_norm_with_weight() {
    let x = t(&[3., 4.], &[1, 2]);
    let w = t(&[1., 2.], &[2]);
    let r = call("aten.rms_norm", vec![x.into(), ints(&[2]), opt(Some(&w)), IValue::Float(0.0)]);
    let rms = (12.5f64).sqrt();
    close(&r[0], &[3. / rms, 8. / rms], &[1, 2]);
}

/// An `f32` layer norm with rows long enough to be split across threads, a row length that
/// leaves partial vectors and spans two blocks of the statistics (300), a large mean beside a
/// small spread in some rows (where a mean summed naively in `f32` would be off by about
/// 1e-3): one thread and three give the same bits, and the statistics and outputs match the
/// definition in `f64` within `f32` sums over 16 lanes — the mean within 4e-6 of the row's
/// spread around its first element (plus its own rounding to `f32`), `rstd` within 4e-6
/// relative, each output within the error its mean and `rstd` carry plus 2e-6.
#[test]
fn f32_layer_norm_matches_the_definition_on_any_number_of_threads() {
    let (rows, n) = (64, 300);
    let x: Vec<f32> =
        (0..rows * n).map(|i| 1000.0 * ((i / n) % 3) as f32 + ((i * 7919) % 1009) as f32 / 100.0 - 5.0).collect();
    let w: Vec<f32> = (0..n).map(|j| 0.5 + (j % 7) as f32 * 0.25).collect();
    let b: Vec<f32> = (0..n).map(|j| (j % 5) as f32 - 2.0).collect();
    assert!(rows * n >= 1 << 14, "large enough to be split");
    let (xt, wt, bt) = (t(&x, &[rows, n]), t(&w, &[n]), t(&b, &[n]));
    let run = || {
        let args = vec![xt.clone().into(), ints(&[n as i64]), opt(Some(&wt)), opt(Some(&bt)), IValue::Float(1e-5)];
        call("aten.native_layer_norm", args).iter().map(|r| r.to_vec_f64()).collect::<Vec<_>>()
    };
    let single = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap().install(run);
    let split = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap().install(run);
    let bits = |v: &[Vec<f64>]| v.iter().flatten().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&single), bits(&split));
    for (r, row) in x.chunks(n).enumerate() {
        let mean = row.iter().map(|&v| v as f64).sum::<f64>() / n as f64;
        let var = row.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n as f64;
        let rstd = 1.0 / (var + 1e-5).sqrt();
        let spread = row.iter().map(|&v| (v - row[0]).abs() as f64).fold(0.0, f64::max);
        let (got_mean, got_rstd) = (single[1][r], single[2][r]);
        let mean_tol = 4e-6 * spread + f32::EPSILON as f64 * mean.abs();
        assert!((got_mean - mean).abs() <= mean_tol, "mean of row {r}: {got_mean} vs {mean}");
        assert!((got_rstd - rstd).abs() <= 4e-6 * rstd, "rstd of row {r}: {got_rstd} vs {rstd}");
        for (j, &v) in row.iter().enumerate() {
            let want = (v as f64 - mean) * rstd * w[j] as f64 + b[j] as f64;
            let got = single[0][r * n + j];
            let carried = (got_mean - mean).abs() * rstd * w[j] as f64 + 4e-6 * (want - b[j] as f64).abs();
            let tol = 2e-6 * want.abs().max(1.0) + carried;
            assert!((got - want).abs() <= tol, "row {r}, element {j}: {got} vs {want}");
        }
    }
}
