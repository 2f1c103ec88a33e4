//! Sorting kernels: stable ascending/descending sorts, NaN ordering, argsort, topk and errors.

use ir::DType;
use runtime::{IValue, Tensor, registry};

fn t(data: &[f32], sizes: &[usize]) -> Tensor {
    Tensor::from_slice(data, sizes).unwrap()
}

fn call(op: &str, args: Vec<IValue>) -> Vec<Tensor> {
    registry()
        .call(op, &args)
        .unwrap_or_else(|e| panic!("{op}: {e}"))
        .into_iter()
        .map(|v| v.into_tensor().unwrap())
        .collect()
}

fn vals(t: &Tensor) -> Vec<String> {
    t.to_vec_f64().iter().map(|v| format!("{v}")).collect()
}

#[test]
fn sort_ascending_descending_stable() {
    let x = t(&[3., 1., 2., 1.], &[4]);
    let r = call("aten.sort", vec![x.clone().into(), IValue::Int(-1), IValue::Bool(false)]);
    assert_eq!(r[0].to_vec_f64(), vec![1., 1., 2., 3.]);
    assert_eq!(r[1].dtype(), DType::I64);
    assert_eq!(r[1].to_vec_i64(), vec![1, 3, 2, 0]);
    let r = call("aten.sort", vec![x.into(), IValue::Int(0), IValue::Bool(true)]);
    assert_eq!(r[0].to_vec_f64(), vec![3., 2., 1., 1.]);
    assert_eq!(r[1].to_vec_i64(), vec![0, 2, 1, 3]);
}

#[test]
fn sort_nan_is_greatest() {
    let x = t(&[f32::NAN, 1., f32::NAN, -1.], &[4]);
    let r = call("aten.sort", vec![x.clone().into(), IValue::Int(0), IValue::Bool(false)]);
    assert_eq!(vals(&r[0]), vec!["-1", "1", "NaN", "NaN"]);
    assert_eq!(r[1].to_vec_i64(), vec![3, 1, 0, 2]);
    let r = call("aten.sort", vec![x.clone().into(), IValue::Int(0), IValue::Bool(true)]);
    assert_eq!(vals(&r[0]), vec!["NaN", "NaN", "1", "-1"]);
    assert_eq!(r[1].to_vec_i64(), vec![0, 2, 1, 3]);
    let r = call("aten.topk", vec![x.into(), IValue::Int(2), IValue::Int(0), IValue::Bool(true), IValue::Bool(true)]);
    assert_eq!(vals(&r[0]), vec!["NaN", "NaN"]);
}

#[test]
fn sort_along_dim0_of_noncontiguous_and_ints() {
    // Logical [[4, 1], [2, 3]] from a transposed view.
    let x = Tensor::from_slice(&[4i64, 2, 1, 3], &[2, 2]).unwrap().t().unwrap();
    let r = call("aten.sort", vec![x.clone().into(), IValue::Int(0), IValue::Bool(false)]);
    assert_eq!(r[0].dtype(), DType::I64);
    assert_eq!(r[0].to_vec_i64(), vec![2, 1, 4, 3]);
    assert_eq!(r[1].to_vec_i64(), vec![1, 0, 0, 1]);
    let r = call("aten.argsort", vec![x.clone().into(), IValue::Int(1), IValue::Bool(true)]);
    assert_eq!(r[0].to_vec_i64(), vec![0, 1, 1, 0]);
    let r = call("aten.sort.stable", vec![x.into(), IValue::Bool(true), IValue::Int(-1), IValue::Bool(false)]);
    assert_eq!(r[0].to_vec_i64(), vec![1, 4, 2, 3]);
    let b = Tensor::from_slice(&[true, false, true, false], &[4]).unwrap();
    let r = call("aten.sort", vec![b.into(), IValue::Int(0), IValue::Bool(false)]);
    assert_eq!(r[0].to_vec_i64(), vec![0, 0, 1, 1]);
    assert_eq!(r[1].to_vec_i64(), vec![1, 3, 0, 2]);
}

#[test]
fn topk_largest_smallest() {
    let x = t(&[1., 5., 3., 5., 2., 0.], &[2, 3]);
    let r = call(
        "aten.topk",
        vec![x.clone().into(), IValue::Int(2), IValue::Int(1), IValue::Bool(true), IValue::Bool(true)],
    );
    assert_eq!(r[0].sizes(), &[2, 2]);
    assert_eq!(r[0].to_vec_f64(), vec![5., 3., 5., 2.]);
    assert_eq!(r[1].to_vec_i64(), vec![1, 2, 0, 1]);
    let r = call(
        "aten.topk",
        vec![x.clone().into(), IValue::Int(1), IValue::Int(0), IValue::Bool(false), IValue::Bool(true)],
    );
    assert_eq!(r[0].to_vec_f64(), vec![1., 2., 0.]);
    assert_eq!(r[1].to_vec_i64(), vec![0, 1, 1]);
    let e = registry().call("aten.topk", &[x.into(), IValue::Int(4)]).unwrap_err().to_string();
    assert!(e.starts_with("aten.topk:") && e.contains("k (4)"), "{e}");
}

#[test]
fn msort_sorts_dim0() {
    let x = t(&[3., 1., 2., 0.], &[2, 2]);
    let r = call("aten.msort", vec![x.into()]);
    assert_eq!(r[0].to_vec_f64(), vec![2., 0., 3., 1.]);
}

#[test]
fn topk_ties_follow_pytorch_selection_order() {
    // Index orders PyTorch 2.15 produced for these lanes (k = 3, largest).
    for (lane, want) in [
        (vec![-8i64, 5, 1, -4, 9, 1, -1, 6, 9, -7], vec![8i64, 4, 7]),
        (vec![9, 7, 2, -6, -5, -4, 2, 9, 7, 4], vec![0, 7, 8]),
        (vec![-5, -1, 8, -3, -1, 8, -6, -8, 5, 8], vec![5, 9, 2]),
    ] {
        let x = Tensor::from_slice(&lane, &[10]).unwrap();
        let r =
            call("aten.topk", vec![x.into(), IValue::Int(3), IValue::Int(0), IValue::Bool(true), IValue::Bool(true)]);
        assert_eq!(r[1].to_vec_i64(), want, "{lane:?}");
    }
}

#[test]
fn topk_on_long_lanes_uses_the_heap_path() {
    // k * 64 <= n: partial sort. Values must be the k largest, sorted, with matching indices.
    let data: Vec<f32> = (0..1000).map(|i| ((i * 7919) % 1000) as f32 / 7.0).collect();
    let x = t(&data, &[1000]);
    let r = call("aten.topk", vec![x.into(), IValue::Int(5), IValue::Int(0), IValue::Bool(true), IValue::Bool(true)]);
    let (v, i) = (r[0].to_vec_f64(), r[1].to_vec_i64());
    let mut sorted: Vec<f32> = data.clone();
    sorted.sort_by(|a, b| b.partial_cmp(a).unwrap());
    assert_eq!(v, sorted[..5].iter().map(|&x| x as f64).collect::<Vec<_>>());
    for (val, idx) in v.iter().zip(&i) {
        assert_eq!(data[*idx as usize] as f64, *val);
    }
}

#[test]
fn stable_flag_keeps_ties_in_order_on_long_lanes() {
    let x = Tensor::from_slice(&[true; 40], &[40]).unwrap();
    let r = call("aten.sort.stable", vec![x.clone().into(), IValue::Bool(true), IValue::Int(0), IValue::Bool(false)]);
    assert_eq!(r[1].to_vec_i64(), (0..40).collect::<Vec<i64>>());
    // The default sort is an introsort: a permutation, not necessarily the identity.
    let r = call("aten.sort", vec![x.into(), IValue::Int(0), IValue::Bool(false)]);
    let mut idx = r[1].to_vec_i64();
    idx.sort();
    assert_eq!(idx, (0..40).collect::<Vec<i64>>());
}

#[test]
fn sort_stable_accepts_none_for_stable() {
    let x = t(&[2., 1.], &[2]);
    let r = call("aten.sort.stable", vec![x.into(), IValue::None, IValue::Int(-1), IValue::Bool(true)]);
    assert_eq!(r[0].to_vec_f64(), vec![2., 1.]);
}
