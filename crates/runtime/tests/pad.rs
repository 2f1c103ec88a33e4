//! Padding kernels: constant (including negative pads that crop), reflection, replication
//! and circular padding, dtypes and errors.

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

fn check(got: &Tensor, want: &[f64], sizes: &[usize]) {
    assert_eq!(got.sizes(), sizes);
    assert_eq!(got.to_vec_f64(), want);
}

#[test]
fn constant_pad_positive_and_negative() {
    let x = t(&[1., 2., 3.], &[3]);
    check(
        &call("aten.constant_pad_nd", vec![x.clone().into(), ints(&[1, 2]), IValue::Float(9.0)]),
        &[9., 1., 2., 3., 9., 9.],
        &[6],
    );
    let y = t(&[1., 2., 3., 4.], &[2, 2]);
    check(
        &call("aten.constant_pad_nd", vec![y.clone().into(), ints(&[0, 1, 1, 0])]),
        &[0., 0., 0., 1., 2., 0., 3., 4., 0.],
        &[3, 3],
    );
    let z = t(&[1., 2., 3., 4.], &[4]);
    check(
        &call("aten.constant_pad_nd", vec![z.clone().into(), ints(&[-1, 1]), IValue::Int(0)]),
        &[2., 3., 4., 0.],
        &[4],
    );
    check(&call("aten.constant_pad_nd", vec![z.clone().into(), ints(&[-2, -1]), IValue::Int(0)]), &[3.], &[1]);
    // Cropping a transposed view.
    check(
        &call("aten.constant_pad_nd", vec![y.t().unwrap().into(), ints(&[0, -1]), IValue::Int(0)]),
        &[1., 2.],
        &[2, 1],
    );
    let e = call_err("aten.constant_pad_nd", vec![z.clone().into(), ints(&[-3, -2])]);
    assert!(e.starts_with("aten.constant_pad_nd:") && e.contains("invalid output size"), "{e}");
    let e = call_err("aten.constant_pad_nd", vec![z.into(), ints(&[1, 1, 1, 1])]);
    assert!(e.contains("too large"), "{e}");
}

#[test]
fn constant_pad_ints_and_bools() {
    let x = Tensor::from_slice(&[5i64, 6], &[2]).unwrap();
    let r = call("aten.constant_pad_nd", vec![x.into(), ints(&[1, 0]), IValue::Int(-7)]);
    assert_eq!(r.dtype(), DType::I64);
    assert_eq!(r.to_vec_i64(), vec![-7, 5, 6]);
    let b = Tensor::from_slice(&[false], &[1]).unwrap();
    let r = call("aten.constant_pad_nd", vec![b.into(), ints(&[0, 1]), IValue::Bool(true)]);
    assert_eq!(r.dtype(), DType::Bool);
    assert_eq!(r.to_vec_i64(), vec![0, 1]);
}

#[test]
fn reflection_padding() {
    let x = t(&[1., 2., 3., 4.], &[1, 4]);
    check(
        &call("aten.reflection_pad1d", vec![x.clone().into(), ints(&[2, 1])]),
        &[3., 2., 1., 2., 3., 4., 3.],
        &[1, 7],
    );
    let y = t(&[1., 2., 3., 4.], &[1, 2, 2]);
    check(
        &call("aten.reflection_pad2d", vec![y.into(), ints(&[1, 1, 1, 1])]),
        &[4., 3., 4., 3., 2., 1., 2., 1., 4., 3., 4., 3., 2., 1., 2., 1.],
        &[1, 4, 4],
    );
    let z = t(&(0..8).map(|v| v as f32).collect::<Vec<_>>(), &[1, 2, 2, 2]);
    let r = call("aten.reflection_pad3d", vec![z.into(), ints(&[0, 0, 0, 0, 1, 0])]);
    check(&r, &[4., 5., 6., 7., 0., 1., 2., 3., 4., 5., 6., 7.], &[1, 3, 2, 2]);
    let e = call_err("aten.reflection_pad1d", vec![x.into(), ints(&[4, 0])]);
    assert!(e.starts_with("aten.reflection_pad1d:") && e.contains("less than"), "{e}");
}

#[test]
fn replication_and_circular_padding() {
    let y = t(&[1., 2., 3., 4.], &[1, 2, 2]);
    check(
        &call("aten.replication_pad2d", vec![y.clone().into(), ints(&[1, 0, 0, 1])]),
        &[1., 1., 2., 3., 3., 4., 3., 3., 4.],
        &[1, 3, 3],
    );
    check(
        &call("aten.replication_pad1d", vec![t(&[1., 2.], &[1, 2]).into(), ints(&[0, 2])]),
        &[1., 2., 2., 2.],
        &[1, 4],
    );
    let z = t(&[1., 2.], &[1, 1, 1, 2]);
    check(
        &call("aten.replication_pad3d", vec![z.into(), ints(&[1, 0, 0, 0, 0, 1])]),
        &[1., 1., 2., 1., 1., 2.],
        &[1, 2, 1, 3],
    );
    let x = t(&[1., 2., 3.], &[1, 1, 3]);
    check(
        &call("aten.pad", vec![x.clone().into(), ints(&[1, 2]), IValue::from("circular"), IValue::None]),
        &[3., 1., 2., 3., 1., 2.],
        &[1, 1, 6],
    );
    check(
        &call("aten.pad", vec![x.clone().into(), ints(&[1, 0]), IValue::from("constant"), IValue::Float(2.5)]),
        &[2.5, 1., 2., 3.],
        &[1, 1, 4],
    );
    check(
        &call("aten.pad", vec![x.clone().into(), ints(&[1, 1]), IValue::from("reflect"), IValue::None]),
        &[2., 1., 2., 3., 2.],
        &[1, 1, 5],
    );
    let e = call_err("aten.pad", vec![x.into(), ints(&[1, 1]), IValue::from("wrap"), IValue::None]);
    assert!(e.contains("wrap"), "{e}");
    let e = call_err("aten.replication_pad2d", vec![y.into(), ints(&[1, 1])]);
    assert!(e.contains("expected 4 padding values"), "{e}");
}

#[test]
fn absurd_pads_are_errors_not_panics() {
    let x = t(&[1., 2.], &[2]);
    let e = call_err("aten.constant_pad_nd", vec![x.clone().into(), ints(&[0, i64::MAX])]);
    assert!(e.starts_with("aten.constant_pad_nd:"), "{e}");
    let e = call_err("aten.constant_pad_nd", vec![x.into(), ints(&[0, 1 << 62])]);
    assert!(!e.is_empty());
}
