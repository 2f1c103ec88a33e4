//! Reduction, creation and shape kernels through the registry.

use ir::DType;
use runtime::{IValue, Tensor, registry};

fn call(op: &str, args: Vec<IValue>) -> Result<Vec<IValue>, runtime::KernelError> {
    registry().call(op, &args)
}

fn one(op: &str, args: Vec<IValue>) -> Tensor {
    call(op, args).unwrap_or_else(|e| panic!("{e}")).remove(0).into_tensor().unwrap()
}

fn tf(v: &[f32], s: &[usize]) -> IValue {
    Tensor::from_slice(v, s).unwrap().into()
}

fn close(a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len(), "{a:?} vs {b:?}");
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()), "{a:?} vs {b:?}");
    }
}

#[test]
fn sums_and_means_over_dims() {
    let x = tf(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let s = one("aten.sum.dim_IntList", vec![x.clone(), IValue::IntList(vec![1]), IValue::Bool(true), IValue::None]);
    assert_eq!((s.sizes(), s.to_vec_f64()), (&[2usize, 1][..], vec![6.0, 15.0]));
    let s = one("aten.sum.dim_IntList", vec![x.clone(), IValue::IntList(vec![]), IValue::Bool(false), IValue::None]);
    assert_eq!((s.dim(), s.to_vec_f64()), (0, vec![21.0]));
    let m = one("aten.mean.dim", vec![x.clone(), IValue::IntList(vec![0]), IValue::Bool(false), IValue::None]);
    assert_eq!(m.to_vec_f64(), vec![2.5, 3.5, 4.5]);
    // int sums widen to int64; mean of ints is an error without dtype
    let i = Tensor::from_vec(vec![i32::MAX, 1], &[2]).unwrap();
    let s = one("aten.sum", vec![i.clone().into(), IValue::None]);
    assert_eq!((s.dtype(), s.to_vec_i64()), (DType::I64, vec![i32::MAX as i64 + 1]));
    assert!(call("aten.mean", vec![i.into(), IValue::None]).is_err());
    let p = one("aten.prod.dim_int", vec![x.clone(), IValue::Int(-1), IValue::Bool(false), IValue::None]);
    assert_eq!(p.to_vec_f64(), vec![6.0, 120.0]);
    // non-contiguous input
    let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap().t().unwrap();
    let s = one("aten.sum.dim_IntList", vec![t.into(), IValue::IntList(vec![1]), IValue::Bool(false), IValue::None]);
    assert_eq!(s.to_vec_f64(), vec![5.0, 7.0, 9.0]);
}

#[test]
fn var_std_correction() {
    let x = tf(&[1.0, 2.0, 3.0, 4.0], &[4]);
    let v = |c: IValue| one("aten.var.correction", vec![x.clone(), IValue::None, c, IValue::Bool(false)]).to_vec_f64();
    close(&v(IValue::None), &[5.0 / 3.0], 1e-6);
    close(&v(IValue::Int(0)), &[1.25], 1e-6);
    close(&v(IValue::Int(2)), &[2.5], 1e-6);
    // correction >= n divides by zero: inf (PyTorch clamps the divisor at 0)
    assert!(v(IValue::Int(4))[0].is_infinite());
    let s = one("aten.std.correction", vec![x, IValue::IntList(vec![0]), IValue::Int(1), IValue::Bool(true)]);
    assert_eq!(s.sizes(), &[1]);
    close(&s.to_vec_f64(), &[(5.0f64 / 3.0).sqrt()], 1e-6);
}

#[test]
fn max_argmax_any() {
    let x = tf(&[3.0, 7.0, 7.0, 1.0, f32::NAN, 0.0], &[2, 3]);
    let r = call("aten.max.dim", vec![x.clone(), IValue::Int(1), IValue::Bool(false)]).unwrap();
    let vals = r[0].as_tensor().unwrap().to_vec_f64();
    assert_eq!(vals[0], 7.0);
    assert!(vals[1].is_nan());
    assert_eq!(r[1].as_tensor().unwrap().to_vec_i64(), vec![1, 1]);
    let am = one("aten.argmax", vec![tf(&[1.0, 5.0, 2.0, 5.0], &[2, 2]), IValue::None, IValue::Bool(false)]);
    assert_eq!((am.dim(), am.to_vec_i64()), (0, vec![1]));
    let amin = one("aten.amin", vec![tf(&[4.0, 2.0, 8.0, 1.0], &[2, 2]), IValue::IntList(vec![0]), IValue::Bool(false)]);
    assert_eq!(amin.to_vec_f64(), vec![4.0, 1.0]);
    let any = one("aten.any.dim", vec![Tensor::from_vec(vec![0i64, 0, 0, 2], &[2, 2]).unwrap().into(), IValue::Int(1), IValue::Bool(false)]);
    assert_eq!((any.dtype(), any.to_vec_i64()), (DType::Bool, vec![0, 1]));
    assert!(call("aten.amax", vec![Tensor::zeros(DType::F32, &[0]).unwrap().into(), IValue::IntList(vec![]), IValue::Bool(false)]).is_err());
}

#[test]
fn softmax_is_stable_for_large_inputs() {
    let x = tf(&[1000.0, 1001.0, 1002.0, -1000.0, -1000.0, -1000.0], &[2, 3]);
    let s = one("aten._softmax", vec![x.clone(), IValue::Int(-1), IValue::Bool(false)]).to_vec_f64();
    close(&s, &[0.09003057, 0.24472847, 0.66524096, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0], 1e-6);
    let l = one("aten._log_softmax", vec![x.clone(), IValue::Int(1), IValue::Bool(false)]).to_vec_f64();
    close(&l[..3], &[-2.40760596, -1.40760596, -0.40760596], 1e-6);
    // along dim 0 (non-last): columns sum to one
    let s0 = one("aten._softmax", vec![x, IValue::Int(0), IValue::Bool(false)]).to_vec_f64();
    close(&[s0[0] + s0[3]], &[1.0], 1e-6);
    let c = one("aten.cumsum", vec![Tensor::from_vec(vec![1i32, 2, 3], &[3]).unwrap().into(), IValue::Int(0), IValue::None]);
    assert_eq!((c.dtype(), c.to_vec_i64()), (DType::I64, vec![1, 3, 6]));
}

#[test]
fn arange_lengths_and_dtypes() {
    let a = |s: IValue, e: IValue, st: IValue| one("aten.arange.start_step", vec![s, e, st, IValue::None]);
    let r = a(IValue::Int(0), IValue::Int(10), IValue::Int(3));
    assert_eq!((r.dtype(), r.to_vec_i64()), (DType::I64, vec![0, 3, 6, 9]));
    let r = a(IValue::Int(10), IValue::Int(0), IValue::Int(-3));
    assert_eq!(r.to_vec_i64(), vec![10, 7, 4, 1]);
    let r = a(IValue::Float(0.0), IValue::Float(1.0), IValue::Float(0.1));
    assert_eq!((r.dtype(), r.numel()), (DType::F32, 10));
    let r = a(IValue::Int(1), IValue::Float(2.5), IValue::Float(0.5));
    assert_eq!(r.to_vec_f64(), vec![1.0, 1.5, 2.0]);
    assert_eq!(a(IValue::Int(5), IValue::Int(5), IValue::Int(1)).numel(), 0);
    assert!(call("aten.arange.start_step", vec![IValue::Int(0), IValue::Int(5), IValue::Int(0), IValue::None]).is_err());
    assert!(call("aten.arange.start_step", vec![IValue::Int(0), IValue::Int(5), IValue::Int(-1), IValue::None]).is_err());
    let f = one("aten.full", vec![IValue::IntList(vec![2]), IValue::Int(3), IValue::None]);
    assert_eq!(f.dtype(), DType::I64);
    let z = one("aten.scalar_tensor", vec![IValue::Int(3), IValue::None]);
    assert_eq!(z.dtype(), DType::F32);
}

#[test]
fn shape_ops() {
    let x = Tensor::from_vec((0..6).map(|v| v as i64).collect::<Vec<_>>(), &[2, 3]).unwrap();
    let c = one("aten.cat", vec![IValue::TensorList(vec![x.clone(), x.clone()]), IValue::Int(1)]);
    assert_eq!(c.sizes(), &[2, 6]);
    assert_eq!(c.to_vec_i64(), vec![0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5]);
    let parts = call("aten.split.Tensor", vec![x.clone().into(), IValue::Int(2), IValue::Int(1)]).unwrap();
    let parts = parts[0].as_tensor_list().unwrap();
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[1].to_vec_i64(), vec![2, 5]);
    assert!(parts[0].shares_storage(&x));
    let f = one("aten.flip", vec![x.clone().into(), IValue::IntList(vec![0, 1])]);
    assert_eq!(f.to_vec_i64(), vec![5, 4, 3, 2, 1, 0]);
    let r = one("aten.roll", vec![x.clone().into(), IValue::IntList(vec![1]), IValue::IntList(vec![1])]);
    assert_eq!(r.to_vec_i64(), vec![2, 0, 1, 5, 3, 4]);
    let rep = one("aten.repeat", vec![x.select(0, 0).unwrap().into(), IValue::IntList(vec![2, 2])]);
    assert_eq!(rep.to_vec_i64(), vec![0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2]);
    let tl = one("aten.tril", vec![x.clone().into(), IValue::Int(0)]);
    assert_eq!(tl.to_vec_i64(), vec![0, 0, 0, 3, 4, 0]);
    let st = one("aten.stack", vec![IValue::TensorList(vec![x.clone(), x.clone()]), IValue::Int(2)]);
    assert_eq!(st.sizes(), &[2, 3, 2]);
    let v = one("aten.view", vec![x.clone().into(), IValue::IntList(vec![3, -1])]);
    assert!(v.shares_storage(&x));
    assert!(call("aten.view", vec![x.t().unwrap().into(), IValue::IntList(vec![6])]).is_err());
    let mixed = one("aten.cat", vec![IValue::TensorList(vec![x.clone(), Tensor::zeros(DType::F32, &[1, 3]).unwrap()]), IValue::Int(0)]);
    assert_eq!(mixed.dtype(), DType::F32);
    assert!(call("aten.cat", vec![IValue::TensorList(vec![x.clone(), Tensor::zeros(DType::I64, &[1, 2]).unwrap()]), IValue::Int(0)]).is_err());
    let es = one("aten.empty_strided", vec![IValue::IntList(vec![2, 3]), IValue::IntList(vec![1, 2]), IValue::None]);
    assert_eq!(es.strides(), &[1, 2]);
}

/// A causally masked softmax (half of each row `-inf`), with rows long enough to be split
/// across threads and a length that leaves a partial vector: every row matches the definition
/// in `f64`, masked entries are exactly 0, and one thread and three give the same bits.
#[test]
fn masked_softmax_rows_match_the_definition_on_any_number_of_threads() {
    let (rows, n) = (300, 77);
    let mut x = Vec::with_capacity(rows * n);
    for r in 0..rows {
        for j in 0..n {
            let v = ((r * 31 + j * 17) % 101) as f32 / 10.0 - 5.0;
            x.push(if j > r % n { f32::NEG_INFINITY } else { v });
        }
    }
    assert!(rows * n >= 1 << 14, "large enough to be split");
    let t = tf(&x, &[rows, n]);
    let run = || one("aten._softmax", vec![t.clone(), IValue::Int(-1), IValue::Bool(false)]).to_vec_f64();
    let single = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap().install(run);
    let split = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap().install(run);
    assert_eq!(
        single.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        split.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
    let mut want = Vec::with_capacity(rows * n);
    for row in x.chunks(n) {
        let m = row.iter().fold(f64::NEG_INFINITY, |a, &v| a.max(v as f64));
        let s: f64 = row.iter().map(|&v| (v as f64 - m).exp()).sum();
        want.extend(row.iter().map(|&v| (v as f64 - m).exp() / s));
    }
    close(&single, &want, 1e-6);
    for (got, &v) in single.iter().zip(&x) {
        if v == f32::NEG_INFINITY {
            assert_eq!(*got, 0.0);
        }
    }
}
