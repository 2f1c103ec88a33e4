//! Elementwise kernels through the registry: promotion, broadcasting, sign rules, in-place.

use ir::DType;
use runtime::{IValue, Scalar, Tensor, registry};

fn call(op: &str, args: Vec<IValue>) -> Result<Vec<IValue>, runtime::KernelError> {
    registry().call(op, &args)
}

fn one(op: &str, args: Vec<IValue>) -> Tensor {
    call(op, args).unwrap_or_else(|e| panic!("{e}")).remove(0).into_tensor().unwrap()
}

fn ti(v: &[i64], s: &[usize]) -> IValue {
    Tensor::from_slice(v, s).unwrap().into()
}

fn tf(v: &[f32], s: &[usize]) -> IValue {
    Tensor::from_slice(v, s).unwrap().into()
}

#[test]
fn type_promotion_with_python_scalars() {
    // int tensor + float scalar -> float32
    let r = one("aten.add.Tensor", vec![ti(&[1, 2], &[2]), IValue::Float(0.5), IValue::Int(1)]);
    assert_eq!(r.dtype(), DType::F32);
    assert_eq!(r.to_vec_f64(), vec![1.5, 2.5]);
    // int32 tensor * int scalar stays int32
    let i32t: IValue = Tensor::from_vec(vec![3i32, 4], &[2]).unwrap().into();
    assert_eq!(one("aten.mul.Scalar", vec![i32t.clone(), IValue::Int(2)]).dtype(), DType::I32);
    // f16 tensor + f64 0-d tensor stays f16 (0-d tensors rank below dimensioned ones)
    let h: IValue = Tensor::from_vec(vec![half::f16::from_f32(1.0)], &[1]).unwrap().into();
    let z: IValue = Tensor::scalar_tensor(Scalar::Float(0.25), DType::F64).unwrap().into();
    assert_eq!(one("aten.add.Tensor", vec![h, z, IValue::Int(1)]).dtype(), DType::F16);
    // int32 tensor + int64 tensor -> int64
    assert_eq!(one("aten.add.Tensor", vec![i32t, ti(&[1, 1], &[2]), IValue::Int(1)]).dtype(), DType::I64);
    // bool tensor + int scalar -> int64; bool + bool stays bool (logical or)
    let b: IValue = Tensor::from_vec(vec![true, false], &[2]).unwrap().into();
    let r = one("aten.add.Tensor", vec![b.clone(), IValue::Int(1), IValue::Int(1)]);
    assert_eq!((r.dtype(), r.to_vec_i64()), (DType::I64, vec![2, 1]));
    let r = one("aten.add.Tensor", vec![b.clone(), b.clone(), IValue::Int(1)]);
    assert_eq!((r.dtype(), r.to_vec_i64()), (DType::Bool, vec![1, 0]));
    assert!(call("aten.sub.Tensor", vec![b.clone(), b, IValue::Int(1)]).is_err());
    // true division of ints gives float32
    let r = one("aten.div.Tensor", vec![ti(&[7, -7], &[2]), ti(&[2, 2], &[2])]);
    assert_eq!((r.dtype(), r.to_vec_f64()), (DType::F32, vec![3.5, -3.5]));
    // float alpha with int tensors is an error
    assert!(call("aten.add.Tensor", vec![ti(&[1], &[1]), ti(&[1], &[1]), IValue::Float(0.5)]).is_err());
}

#[test]
fn broadcasting_and_errors() {
    let r = one("aten.sub.Tensor", vec![tf(&[10.0, 20.0], &[2, 1]), tf(&[1.0, 2.0, 3.0], &[3]), IValue::Int(2)]);
    assert_eq!(r.sizes(), &[2, 3]);
    assert_eq!(r.to_vec_f64(), vec![8.0, 6.0, 4.0, 18.0, 16.0, 14.0]);
    let e = call("aten.add.Tensor", vec![tf(&[1.0; 6], &[3, 2]), tf(&[1.0; 8], &[4, 2]), IValue::Int(1)]).unwrap_err();
    assert!(e.to_string().contains("[3, 2]") && e.to_string().contains("[4, 2]"), "{e}");
}

#[test]
fn integer_division_sign_rules() {
    let a = ti(&[7, -7, 7, -7], &[4]);
    let b = ti(&[2, 2, -2, -2], &[4]);
    assert_eq!(one("aten.remainder.Tensor", vec![a.clone(), b.clone()]).to_vec_i64(), vec![1, 1, -1, -1]);
    assert_eq!(one("aten.fmod.Tensor", vec![a.clone(), b.clone()]).to_vec_i64(), vec![1, -1, 1, -1]);
    assert_eq!(one("aten.floor_divide", vec![a.clone(), b.clone()]).to_vec_i64(), vec![3, -4, -4, 3]);
    let trunc = one("aten.div.Tensor_mode", vec![a.clone(), b.clone(), "trunc".into()]);
    assert_eq!((trunc.dtype(), trunc.to_vec_i64()), (DType::I64, vec![3, -3, -3, 3]));
    let fa = tf(&[7.0, -7.0, 7.0, -7.0], &[4]);
    let fb = tf(&[2.0, 2.0, -2.0, -2.0], &[4]);
    assert_eq!(one("aten.remainder.Tensor", vec![fa.clone(), fb.clone()]).to_vec_f64(), vec![1.0, 1.0, -1.0, -1.0]);
    assert_eq!(one("aten.fmod.Tensor", vec![fa.clone(), fb.clone()]).to_vec_f64(), vec![1.0, -1.0, 1.0, -1.0]);
    assert_eq!(one("aten.div.Tensor_mode", vec![fa, fb, "floor".into()]).to_vec_f64(), vec![3.0, -4.0, -4.0, 3.0]);
    // integer division by zero is an error, not a panic
    let e = call("aten.remainder.Tensor", vec![a.clone(), ti(&[0, 1, 1, 1], &[4])]).unwrap_err();
    assert!(e.to_string().contains("division by zero"), "{e}");
    assert!(call("aten.div.Tensor_mode", vec![a, ti(&[0], &[1]), "floor".into()]).is_err());
    // float division by zero follows IEEE
    let r = one("aten.div.Tensor", vec![tf(&[1.0, -1.0], &[2]), tf(&[0.0], &[1])]);
    assert_eq!(r.to_vec_f64(), vec![f64::INFINITY, f64::NEG_INFINITY]);
}

#[test]
fn integer_overflow_wraps() {
    let a: IValue = Tensor::from_vec(vec![i32::MAX, 100], &[2]).unwrap().into();
    let r = one("aten.add.Scalar", vec![a.clone(), IValue::Int(1), IValue::Int(1)]);
    assert_eq!(r.to_vec_i64(), vec![i32::MIN as i64, 101]);
    let u: IValue = Tensor::from_vec(vec![250u8, 3], &[2]).unwrap().into();
    assert_eq!(one("aten.add.Scalar", vec![u.clone(), IValue::Int(10), IValue::Int(1)]).to_vec_i64(), vec![4, 13]);
    assert_eq!(one("aten.neg", vec![ti(&[i64::MIN], &[1])]).to_vec_i64(), vec![i64::MIN]);
    assert_eq!(one("aten.mul.Tensor", vec![a.clone(), a]).to_vec_i64(), vec![1, 10000]);
}

#[test]
fn comparisons_where_clamp() {
    let x = tf(&[-1.0, 0.5, 2.0, f32::NAN], &[4]);
    let gt = one("aten.gt.Scalar", vec![x.clone(), IValue::Float(0.5)]);
    assert_eq!((gt.dtype(), gt.to_vec_i64()), (DType::Bool, vec![0, 0, 1, 0]));
    assert_eq!(one("aten.ne.Tensor", vec![x.clone(), x.clone()]).to_vec_i64(), vec![0, 0, 0, 1]);
    assert_eq!(one("aten.lt.Scalar", vec![ti(&[1, 2, 3], &[3]), IValue::Float(2.5)]).to_vec_i64(), vec![1, 1, 0]);
    let w = one("aten.where.self", vec![gt.into(), x.clone(), IValue::Float(9.0)]);
    assert_eq!(w.to_vec_f64()[..3], [9.0, 9.0, 2.0]);
    let c = one("aten.clamp", vec![x.clone(), IValue::None, IValue::Float(1.0)]).to_vec_f64();
    assert_eq!(c[..3], [-1.0, 0.5, 1.0]);
    assert!(c[3].is_nan());
    let ci = one("aten.clamp", vec![ti(&[-5, 5], &[2]), IValue::Int(-1), IValue::Int(1)]);
    assert_eq!((ci.dtype(), ci.to_vec_i64()), (DType::I64, vec![-1, 1]));
    // float bounds promote an int tensor
    assert_eq!(one("aten.clamp", vec![ti(&[1, 3], &[2]), IValue::Float(1.5), IValue::None]).to_vec_f64(), vec![1.5, 3.0]);
    let ct = one("aten.clamp.Tensor", vec![tf(&[0.0, 5.0], &[2]), tf(&[1.0, 1.0], &[2]), tf(&[3.0], &[1])]);
    assert_eq!(ct.to_vec_f64(), vec![1.0, 3.0]);
    assert!(call("aten.clamp", vec![x, IValue::None, IValue::None]).is_err());
}

#[test]
fn unary_math() {
    let x = tf(&[-1.0, 0.0, 1.0], &[3]);
    let close = |a: Vec<f64>, b: &[f64]| {
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() <= 1e-6 * (1.0 + y.abs()), "{a:?} vs {b:?}");
        }
    };
    close(one("aten.sigmoid", vec![x.clone()]).to_vec_f64(), &[0.2689414213699951, 0.5, 0.7310585786300049]);
    close(one("aten.gelu", vec![x.clone(), "none".into()]).to_vec_f64(), &[-0.15865525393145707, 0.0, 0.8413447460685429]);
    close(one("aten.gelu", vec![x.clone(), "tanh".into()]).to_vec_f64(), &[-0.15880800939172324, 0.0, 0.8411919906082768]);
    close(one("aten.erf", vec![x.clone()]).to_vec_f64(), &[-0.8427007929497149, 0.0, 0.8427007929497149]);
    close(one("aten.erfinv", vec![tf(&[0.5, -0.9], &[2])]).to_vec_f64(), &[0.4769362762044699, -1.1630871536766743]);
    // exp of an int tensor is float32
    let e = one("aten.exp", vec![ti(&[0, 1], &[2])]);
    assert_eq!(e.dtype(), DType::F32);
    // round is half-to-even; decimals supported
    assert_eq!(one("aten.round", vec![tf(&[0.5, 1.5, 2.5, -0.5], &[4])]).to_vec_f64(), vec![0.0, 2.0, 2.0, -0.0]);
    close(one("aten.round.decimals", vec![tf(&[1.2345], &[1]), IValue::Int(2)]).to_vec_f64(), &[1.23]);
    assert_eq!(one("aten.sign", vec![tf(&[-3.0, 0.0, 2.0], &[3])]).to_vec_f64(), vec![-1.0, 0.0, 1.0]);
    assert!(call("aten.neg", vec![Tensor::from_vec(vec![true], &[1]).unwrap().into()]).is_err());
    assert_eq!(one("aten.bitwise_not", vec![ti(&[0, 5], &[2])]).to_vec_i64(), vec![-1, -6]);
    let n = one("aten.nan_to_num", vec![tf(&[f32::NAN, f32::INFINITY], &[2]), IValue::None, IValue::None, IValue::None]);
    assert_eq!(n.to_vec_f64(), vec![0.0, f32::MAX as f64]);
    assert_eq!(one("aten.pow.Tensor_Scalar", vec![ti(&[2, 3], &[2]), IValue::Int(3)]).to_vec_i64(), vec![8, 27]);
    assert!(call("aten.pow.Tensor_Scalar", vec![ti(&[2], &[1]), IValue::Int(-1)]).is_err());
    assert_eq!(one("aten.pow.Scalar", vec![IValue::Int(2), tf(&[0.5, 2.0], &[2])]).to_vec_f64()[1], 4.0);
}

#[test]
fn non_contiguous_inputs() {
    let base = Tensor::from_vec((0..6).map(|x| x as f32).collect::<Vec<_>>(), &[2, 3]).unwrap();
    let t = base.t().unwrap();
    let r = one("aten.mul.Tensor", vec![t.clone().into(), t.clone().into()]);
    assert_eq!(r.to_vec_f64(), vec![0.0, 9.0, 1.0, 16.0, 4.0, 25.0]);
    let e = one("aten.exp", vec![base.slice(1, Some(0), None, 2).unwrap().into()]);
    assert_eq!(e.sizes(), &[2, 2]);
    assert!((e.to_vec_f64()[3] - (5.0f64).exp()).abs() < 1e-4);
}

#[test]
fn in_place_writes_through_views() {
    let base = Tensor::zeros(DType::F32, &[2, 2]).unwrap();
    let row = base.select(0, 1).unwrap();
    let out = one("aten.add_.Tensor", vec![row.clone().into(), tf(&[1.0, 2.0], &[2]), IValue::Int(1)]);
    assert!(out.shares_storage(&base));
    assert_eq!(base.to_vec_f64(), vec![0.0, 0.0, 1.0, 2.0]);
    one("aten.mul_.Scalar", vec![base.clone().into(), IValue::Int(3)]);
    assert_eq!(base.to_vec_f64(), vec![0.0, 0.0, 3.0, 6.0]);
    one("aten.relu_", vec![one("aten.sub_.Scalar", vec![base.clone().into(), IValue::Int(4), IValue::Int(1)]).into()]);
    assert_eq!(base.to_vec_f64(), vec![0.0, 0.0, 0.0, 2.0]);
    one("aten.copy_", vec![base.t().unwrap().into(), tf(&[1.0, 2.0, 3.0, 4.0], &[2, 2])]);
    assert_eq!(base.to_vec_f64(), vec![1.0, 3.0, 2.0, 4.0]);
    // result dtype that cannot be cast back is an error
    let it = Tensor::zeros(DType::I64, &[2]).unwrap();
    assert!(call("aten.div_.Scalar", vec![it.clone().into(), IValue::Int(2)]).is_err());
    one("aten.fill_.Scalar", vec![it.clone().into(), IValue::Int(7)]);
    one("aten.zero_", vec![it.slice(0, Some(1), None, 1).unwrap().into()]);
    assert_eq!(it.to_vec_i64(), vec![7, 0]);
}

/// A contiguous map long enough to be split across threads (with a length that is not a
/// multiple of a vector) gives the same bits as on one thread, and each element is the
/// function of its input alone (compared with the one-element form).
#[test]
fn long_float_maps_are_the_same_bits_on_any_number_of_threads() {
    let n = (1 << 15) + 7;
    let x: Vec<f32> = (0..n).map(|i| ((i * 7919) % 2003) as f32 / 200.0 - 5.0).collect();
    let t = tf(&x, &[n]);
    for op in ["aten.gelu", "aten.exp", "aten.tanh"] {
        let args = if op == "aten.gelu" { vec![t.clone(), IValue::Str("none".into())] } else { vec![t.clone()] };
        let run = || one(op, args.clone()).to_vec_f64();
        let single = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap().install(run);
        let split = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap().install(run);
        assert_eq!(single, split, "{op}");
        for i in [0, 1, 4095, 4096, n / 2, n - 1] {
            let mut a = args.clone();
            a[0] = tf(&x[i..i + 1], &[1]);
            assert_eq!(one(op, a).to_vec_f64()[0].to_bits(), single[i].to_bits(), "{op} element {i}");
        }
    }
}
