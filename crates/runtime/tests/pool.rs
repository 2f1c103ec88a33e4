//! Pooling kernels: hand-computed max/avg/adaptive pooling, ceil mode, padding, dilation,
//! NaN handling, integer inputs, the max-pool backward and argument errors.

use ir::DType;
use runtime::{IValue, Tensor, registry};

fn t(data: &[f32], sizes: &[usize]) -> Tensor {
    Tensor::from_slice(data, sizes).unwrap()
}

fn ints(v: &[i64]) -> IValue {
    IValue::IntList(v.to_vec())
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

fn same(got: &Tensor, want: &[f64], sizes: &[usize]) {
    assert_eq!(got.sizes(), sizes);
    let g = got.to_vec_f64();
    assert_eq!(g.len(), want.len(), "{g:?}");
    for (i, (a, b)) in g.iter().zip(want).enumerate() {
        assert!(
            (a - b).abs() <= 1e-6 * b.abs().max(1.0) || (a.is_nan() && b.is_nan()),
            "element {i}: {a} vs {b} in {g:?}"
        );
    }
}

fn max2d(x: Tensor, k: &[i64], s: &[i64], p: &[i64], d: &[i64], ceil: bool) -> Vec<Tensor> {
    call("aten.max_pool2d_with_indices", vec![x.into(), ints(k), ints(s), ints(p), ints(d), IValue::Bool(ceil)])
}

#[test]
fn max_pool2d_basic_and_indices() {
    let x = t(&(0..16).map(|v| v as f32).collect::<Vec<_>>(), &[1, 1, 4, 4]);
    let r = max2d(x, &[2, 2], &[2, 2], &[0, 0], &[1, 1], false);
    same(&r[0], &[5., 7., 13., 15.], &[1, 1, 2, 2]);
    assert_eq!(r[1].dtype(), DType::I64);
    assert_eq!(r[1].to_vec_i64(), vec![5, 7, 13, 15]);
}

#[test]
fn max_pool_ceil_mode_padding_dilation() {
    let x = t(&[1., 5., 2., 4., 3.], &[1, 1, 1, 5]);
    let r = max2d(x.clone(), &[1, 2], &[1, 2], &[0, 0], &[1, 1], true);
    same(&r[0], &[5., 4., 3.], &[1, 1, 1, 3]);
    assert_eq!(r[1].to_vec_i64(), vec![1, 3, 4]);
    let r = max2d(x.clone(), &[1, 2], &[1, 2], &[0, 0], &[1, 1], false);
    same(&r[0], &[5., 4.], &[1, 1, 1, 2]);
    let r = max2d(x.clone(), &[1, 2], &[1, 1], &[0, 1], &[1, 2], false);
    same(&r[0], &[5., 2., 5., 3., 4.], &[1, 1, 1, 5]);
    assert_eq!(r[1].to_vec_i64(), vec![1, 2, 1, 4, 3]);
    // Empty stride defaults to the kernel size; unbatched 3-D input.
    let r = call(
        "aten.max_pool2d",
        vec![
            x.squeeze_dims(&[0]).unwrap().into(),
            ints(&[1, 2]),
            ints(&[]),
            ints(&[0]),
            ints(&[1]),
            IValue::Bool(false),
        ],
    );
    same(&r[0], &[5., 4.], &[1, 1, 2]);
}

#[test]
fn max_pool_nan_wins_and_latest_nan_index() {
    let x = t(&[1., f32::NAN, 3., f32::NAN], &[1, 1, 1, 4]);
    let r = max2d(x, &[1, 4], &[1, 4], &[0, 0], &[1, 1], false);
    assert!(r[0].to_vec_f64()[0].is_nan());
    assert_eq!(r[1].to_vec_i64(), vec![3]);
}

#[test]
fn max_pool_int_noncontiguous_and_3d() {
    // A transposed int64 view: logical [[1, 3], [2, 4]].
    let x = Tensor::from_slice(&[1i64, 2, 3, 4], &[1, 1, 2, 2]).unwrap().transpose(2, 3).unwrap();
    let r = max2d(x, &[1, 2], &[1, 2], &[0, 0], &[1, 1], false);
    assert_eq!(r[0].dtype(), DType::I64);
    assert_eq!(r[0].to_vec_i64(), vec![3, 4]);
    assert_eq!(r[1].to_vec_i64(), vec![1, 3]);
    let x = t(&(0..8).map(|v| v as f32).collect::<Vec<_>>(), &[1, 2, 2, 2]);
    let r = call(
        "aten.max_pool3d_with_indices",
        vec![x.into(), ints(&[2, 2, 2]), ints(&[]), ints(&[0]), ints(&[1]), IValue::Bool(false)],
    );
    same(&r[0], &[7.], &[1, 1, 1, 1]);
    assert_eq!(r[1].to_vec_i64(), vec![7]);
}

#[test]
fn max_pool_backward_scatters_to_indices() {
    let x = t(&[1., 5., 2., 4., 3.], &[1, 1, 1, 5]);
    let r = max2d(x.clone(), &[1, 2], &[1, 1], &[0, 1], &[1, 2], false);
    let g = t(&[1., 2., 3., 4., 5.], &[1, 1, 1, 5]);
    let gi = call(
        "aten.max_pool2d_with_indices_backward",
        vec![
            g.into(),
            x.into(),
            ints(&[1, 2]),
            ints(&[1, 1]),
            ints(&[0, 1]),
            ints(&[1, 2]),
            IValue::Bool(false),
            r[1].clone().into(),
        ],
    );
    // Indices [1, 2, 1, 4, 3]: position 1 gets 1+3.
    same(&gi[0], &[0., 4., 2., 5., 4.], &[1, 1, 1, 5]);
}

fn avg2d(x: Tensor, k: &[i64], s: &[i64], p: &[i64], ceil: bool, include_pad: bool, div: Option<i64>) -> Tensor {
    call(
        "aten.avg_pool2d",
        vec![
            x.into(),
            ints(k),
            ints(s),
            ints(p),
            IValue::Bool(ceil),
            IValue::Bool(include_pad),
            div.map_or(IValue::None, IValue::Int),
        ],
    )
    .remove(0)
}

#[test]
fn avg_pool2d_padding_modes_and_divisor() {
    let x = t(&[1., 2., 3., 4.], &[1, 1, 2, 2]);
    let r = avg2d(x.clone(), &[2, 2], &[1, 1], &[1, 1], false, true, None);
    same(&r, &[0.25, 0.75, 0.5, 1., 2.5, 1.5, 0.75, 1.75, 1.], &[1, 1, 3, 3]);
    let r = avg2d(x.clone(), &[2, 2], &[1, 1], &[1, 1], false, false, None);
    same(&r, &[1., 1.5, 2., 2., 2.5, 3., 3., 3.5, 4.], &[1, 1, 3, 3]);
    let r = avg2d(x, &[2, 2], &[1, 1], &[1, 1], false, true, Some(2));
    same(&r, &[0.5, 1.5, 1., 2., 5., 3., 1.5, 3.5, 2.], &[1, 1, 3, 3]);
}

#[test]
fn avg_pool_ceil_mode_and_1d_3d() {
    let x = t(&[1., 2., 3., 4., 5.], &[1, 1, 1, 5]);
    let r = avg2d(x.clone(), &[1, 2], &[1, 2], &[0, 0], true, true, None);
    same(&r, &[1.5, 3.5, 5.], &[1, 1, 1, 3]);
    let r = call(
        "aten.avg_pool1d",
        vec![
            t(&[1., 2., 3., 4., 5.], &[1, 5]).into(),
            ints(&[2]),
            ints(&[2]),
            ints(&[0]),
            IValue::Bool(false),
            IValue::Bool(true),
        ],
    );
    same(&r[0], &[1.5, 3.5], &[1, 2]);
    let x3 = t(&(0..8).map(|v| v as f32).collect::<Vec<_>>(), &[1, 1, 2, 2, 2]);
    let r = call(
        "aten.avg_pool3d",
        vec![x3.into(), ints(&[2, 2, 2]), ints(&[]), ints(&[0]), IValue::Bool(false), IValue::Bool(true), IValue::None],
    );
    same(&r[0], &[3.5], &[1, 1, 1, 1, 1]);
}

#[test]
fn avg_pool_integers_truncate_and_f64() {
    let x = Tensor::from_slice(&[-3i64, 0, 7, 2], &[1, 1, 1, 4]).unwrap();
    let r = avg2d(x, &[1, 2], &[1, 2], &[0, 0], false, true, None);
    assert_eq!(r.dtype(), DType::I64);
    assert_eq!(r.to_vec_i64(), vec![-1, 4]);
    let x = Tensor::from_slice(&[1.0f64, 2.0], &[1, 1, 1, 2]).unwrap();
    let r = avg2d(x, &[1, 2], &[1, 2], &[0, 0], false, true, None);
    assert_eq!(r.dtype(), DType::F64);
    same(&r, &[1.5], &[1, 1, 1, 1]);
}

#[test]
fn adaptive_pools() {
    let x = t(&(0..9).map(|v| v as f32).collect::<Vec<_>>(), &[1, 1, 3, 3]);
    let r = call("aten._adaptive_avg_pool2d", vec![x.clone().into(), ints(&[2, 2])]);
    same(&r[0], &[2., 3., 5., 6.], &[1, 1, 2, 2]);
    let r = call("aten.adaptive_avg_pool2d", vec![x.clone().into(), ints(&[1, 1])]);
    same(&r[0], &[4.], &[1, 1, 1, 1]);
    let r = call("aten.adaptive_avg_pool1d", vec![t(&[1., 2., 3., 4., 5.], &[1, 1, 5]).into(), ints(&[3])]);
    same(&r[0], &[1.5, 3., 4.5], &[1, 1, 3]);
    let x3 = t(&(0..8).map(|v| v as f32).collect::<Vec<_>>(), &[1, 2, 2, 2]);
    let r = call("aten._adaptive_avg_pool3d", vec![x3.into(), ints(&[1, 1, 2])]);
    same(&r[0], &[3., 4.], &[1, 1, 1, 2]);
    let r = call("aten.adaptive_max_pool2d", vec![x.into(), ints(&[2, 2])]);
    same(&r[0], &[4., 5., 7., 8.], &[1, 1, 2, 2]);
    assert_eq!(r[1].to_vec_i64(), vec![4, 5, 7, 8]);
}

#[test]
fn pool_errors_name_the_op() {
    let x = t(&[0.; 4], &[1, 1, 2, 2]);
    let e = call_err(
        "aten.max_pool2d_with_indices",
        vec![x.clone().into(), ints(&[2, 2]), ints(&[1, 1]), ints(&[2, 2]), ints(&[1, 1]), IValue::Bool(false)],
    );
    assert!(e.starts_with("aten.max_pool2d_with_indices:") && e.contains("pad"), "{e}");
    let e = call_err(
        "aten.avg_pool2d",
        vec![
            x.clone().into(),
            ints(&[3, 3]),
            ints(&[1, 1]),
            ints(&[0, 0]),
            IValue::Bool(false),
            IValue::Bool(true),
            IValue::None,
        ],
    );
    assert!(e.starts_with("aten.avg_pool2d:") && e.contains("too small"), "{e}");
    let e = call_err(
        "aten.avg_pool2d",
        vec![
            x.clone().into(),
            ints(&[1, 1]),
            ints(&[1, 1]),
            ints(&[0, 0]),
            IValue::Bool(false),
            IValue::Bool(true),
            IValue::Int(0),
        ],
    );
    assert!(e.contains("divisor"), "{e}");
    let e = call_err("aten.max_pool2d_with_indices", vec![t(&[0.; 2], &[2]).into(), ints(&[1, 1])]);
    assert!(e.contains("3-D or 4-D"), "{e}");
}

#[test]
fn absurd_pool_arguments_are_errors_not_panics() {
    let x = t(&[0.; 4], &[1, 1, 2, 2]);
    let e = call_err("aten._adaptive_avg_pool2d", vec![x.clone().into(), ints(&[1 << 30, 1 << 30])]);
    assert!(!e.is_empty());
    let e = call_err("aten.adaptive_max_pool2d", vec![x.clone().into(), ints(&[1 << 30, 1 << 30])]);
    assert!(!e.is_empty());
    let e = call_err(
        "aten.max_pool2d_with_indices",
        vec![x.into(), ints(&[2, 2]), ints(&[i64::MAX, 1]), ints(&[0, 0]), ints(&[1, 1]), IValue::Bool(true)],
    );
    assert!(e.contains("out of range"), "{e}");
}

/// `max_poolNd` (values alone, computed row by row) gives the bits of the values of
/// `max_poolNd_with_indices` (computed tap by tap) for every geometry: kernel, stride,
/// padding, dilation and ceil mode, on every ISA path, with NaNs and signed zeros among the
/// inputs (the first maximum of a window wins, and a NaN anywhere in it is the result).
#[test]
fn values_alone_match_values_with_indices() {
    let plane = [2usize, 3, 9, 14];
    let n: usize = plane.iter().product();
    let data: Vec<f32> = (0..n)
        .map(|i| match (i * 7919) % 61 {
            0 => f32::NAN,
            1..=5 => 0.0,
            6..=10 => -0.0,
            v => ((v * 31) % 17) as f32 - 8.0,
        })
        .collect();
    let x = t(&data, &plane);
    let xi = Tensor::from_slice(&data.iter().map(|&v| if v.is_nan() { 7 } else { v as i64 }).collect::<Vec<_>>(), &plane).unwrap();
    for isa in kernels::Isa::supported() {
        for (k, s, p, d) in [
            ([3, 3], [2, 2], [0, 0], [1, 1]),
            ([3, 3], [2, 2], [1, 1], [1, 1]),
            ([2, 2], [2, 2], [0, 0], [1, 1]),
            ([3, 3], [1, 1], [1, 1], [1, 1]),
            ([2, 3], [1, 2], [1, 1], [1, 1]),
            ([3, 2], [3, 1], [1, 0], [2, 1]),
            ([3, 3], [2, 3], [1, 1], [2, 2]),
            ([5, 4], [2, 3], [2, 2], [1, 1]),
            ([1, 1], [1, 1], [0, 0], [1, 1]),
            ([4, 5], [3, 4], [1, 2], [1, 1]),
        ] {
            for ceil in [false, true] {
                for x in [&x, &xi] {
                    let args = || vec![x.clone().into(), ints(&k), ints(&s), ints(&p), ints(&d), IValue::Bool(ceil)];
                    let (alone, with) = kernels::isa::with(isa, || {
                        (call("aten.max_pool2d", args()), call("aten.max_pool2d_with_indices", args()))
                    });
                    assert_eq!(alone[0].sizes(), with[0].sizes());
                    let bits = |t: &Tensor| t.to_vec_f64().iter().map(|v| if v.is_nan() { u64::MAX } else { v.to_bits() }).collect::<Vec<_>>();
                    assert_eq!(bits(&alone[0]), bits(&with[0]), "{isa:?} k {k:?} s {s:?} p {p:?} d {d:?} ceil {ceil} {:?}", x.dtype());
                }
            }
        }
    }
}
