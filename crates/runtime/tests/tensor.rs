//! Tensor storage, views, casts and safetensors round trips.

use ir::DType;
use runtime::io::{load_safetensors_bytes, save_safetensors_bytes};
use runtime::{Scalar, Storage, Tensor};
use std::sync::Arc;

fn t32(v: &[f32], s: &[usize]) -> Tensor {
    Tensor::from_slice(v, s).unwrap()
}

#[test]
fn views_alias_their_base() {
    let base = Tensor::zeros(DType::F32, &[2, 3]).unwrap();
    let col = base.select(1, 1).unwrap();
    col.fill_(Scalar::Float(5.0)).unwrap();
    assert_eq!(base.to_vec_f64(), vec![0.0, 5.0, 0.0, 0.0, 5.0, 0.0]);
    let tr = base.t().unwrap();
    assert!(!tr.is_contiguous());
    tr.slice(0, Some(2), None, 1).unwrap().copy_(&t32(&[7.0, 8.0], &[1, 2])).unwrap();
    assert_eq!(base.to_vec_f64(), vec![0.0, 5.0, 7.0, 0.0, 5.0, 8.0]);
    let v = base.view(&[6]).unwrap();
    assert!(v.shares_storage(&base));
    assert!(base.t().unwrap().view(&[6]).is_err());
    let r = base.t().unwrap().reshape(&[6]).unwrap();
    assert!(!r.shares_storage(&base));
    assert_eq!(r.to_vec_f64(), vec![0.0, 0.0, 5.0, 5.0, 7.0, 8.0]);
}

#[test]
fn slicing_with_steps_and_negative_bounds() {
    let t = Tensor::from_vec((0..10).map(|x| x as i64).collect::<Vec<_>>(), &[10]).unwrap();
    assert_eq!(t.slice(0, Some(1), Some(8), 3).unwrap().to_vec_i64(), vec![1, 4, 7]);
    assert_eq!(t.slice(0, Some(-3), None, 1).unwrap().to_vec_i64(), vec![7, 8, 9]);
    assert_eq!(t.slice(0, Some(-100), Some(100), 4).unwrap().to_vec_i64(), vec![0, 4, 8]);
    assert_eq!(t.slice(0, Some(5), Some(2), 1).unwrap().numel(), 0);
    assert!(t.slice(0, None, None, 0).is_err());
    assert!(t.select(0, 10).is_err());
    assert_eq!(t.select(0, -1).unwrap().item().unwrap(), Scalar::Int(9));
}

#[test]
fn expand_permute_squeeze() {
    let t = t32(&[1.0, 2.0, 3.0], &[3, 1]);
    let e = t.expand(&[2, 3, 4]).unwrap();
    assert_eq!(e.sizes(), &[2, 3, 4]);
    assert_eq!(e.strides(), &[0, 1, 0]);
    assert_eq!(e.contiguous().unwrap().to_vec_f64()[..5], [1.0, 1.0, 1.0, 1.0, 2.0]);
    let err = t.expand(&[3, 2]).unwrap();
    assert_eq!(err.sizes(), &[3, 2]);
    assert!(t.expand(&[4, 2]).is_err());
    let p = Tensor::zeros(DType::F32, &[2, 3, 4]).unwrap().permute(&[2, 0, 1]).unwrap();
    assert_eq!(p.sizes(), &[4, 2, 3]);
    assert_eq!(p.strides(), &[1, 12, 4]);
    assert!(p.permute(&[0, 0, 1]).is_err());
    let s = Tensor::zeros(DType::F32, &[1, 3, 1]).unwrap();
    assert_eq!(s.squeeze_dims(&[0, 1]).unwrap().sizes(), &[3, 1]);
    assert_eq!(s.squeeze().unwrap().sizes(), &[3]);
    assert_eq!(s.unsqueeze(-1).unwrap().sizes(), &[1, 3, 1, 1]);
    assert!(s.unsqueeze(5).is_err());
}

#[test]
fn as_strided_checks_bounds() {
    let t = Tensor::zeros(DType::F32, &[6]).unwrap();
    let w = t.as_strided(&[2, 2], &[1, 2], Some(1)).unwrap();
    assert_eq!(w.offsets().collect::<Vec<_>>(), vec![1, 3, 2, 4]);
    assert!(t.as_strided(&[2, 3], &[3, 1], Some(1)).is_err());
}

#[test]
fn casts_follow_pytorch() {
    let f = t32(&[-2.7, 2.7, 300.0, -0.5], &[4]);
    assert_eq!(f.to_dtype(DType::I64).unwrap().to_vec_i64(), vec![-2, 2, 300, 0]);
    // Wider-than-type values wrap through int32, as PyTorch on x86.
    assert_eq!(f.to_dtype(DType::I8).unwrap().to_vec_i64(), vec![-2, 2, 44, 0]);
    assert_eq!(f.to_dtype(DType::Bool).unwrap().to_vec_i64(), vec![1, 1, 1, 1]);
    // NaN to int64 is PyTorch's (x86) INT64_MIN.
    let nan = t32(&[f32::NAN], &[1]);
    assert_eq!(nan.to_dtype(DType::I64).unwrap().to_vec_i64(), vec![i64::MIN]);
    let h = f.to_dtype(DType::F16).unwrap();
    assert_eq!(h.to_vec_f64()[0], -2.69921875);
    assert_eq!(Tensor::from_vec(vec![300i64, -1], &[2]).unwrap().to_dtype(DType::U8).unwrap().to_vec_i64(), vec![44, 255]);
}

#[test]
fn errors_instead_of_panics() {
    assert!(Tensor::from_vec(vec![1.0f32, 2.0], &[3]).is_err());
    assert!(Tensor::from_bytes(DType::F32, &[2], &[0u8; 7]).is_err());
    assert!(Tensor::from_bytes(DType::Bool, &[1], &[2u8]).is_err());
    let t = Tensor::zeros(DType::F32, &[2]).unwrap();
    assert!(t.view(&[-1, -1]).is_err());
    assert!(t.view(&[3]).is_err());
    assert!(t.item().is_err());
    assert!(t.as_slice::<i64>().is_err());
    assert!(t.size(2).is_err());
}

#[test]
fn slab_regions_back_tensors() {
    let slab = Arc::new(Storage::zeroed(256).unwrap());
    let a = Tensor::from_storage(Arc::new(Storage::region(&slab, 0, 64).unwrap()), DType::F32, &[4, 4], &[4, 1], 0).unwrap();
    let b = Tensor::from_storage(Arc::new(Storage::region(&slab, 64, 64).unwrap()), DType::F32, &[16], &[1], 0).unwrap();
    a.fill_(Scalar::Float(1.0)).unwrap();
    b.fill_(Scalar::Float(2.0)).unwrap();
    assert_eq!(a.to_vec_f64(), vec![1.0; 16]);
    assert!(!a.may_overlap(&b));
    assert!(Tensor::from_storage(Arc::new(Storage::region(&slab, 0, 64).unwrap()), DType::F32, &[17], &[1], 0).is_err());
}

#[test]
fn safetensors_round_trip() {
    let a = Tensor::from_vec(vec![1.5f32, -2.0, 3.0, 4.0], &[2, 2]).unwrap().t().unwrap();
    let b = Tensor::from_vec(vec![true, false], &[2]).unwrap();
    let c = Tensor::from_vec(vec![half::bf16::from_f32(0.5)], &[]).unwrap();
    let bytes = save_safetensors_bytes(&[("a".into(), a.clone()), ("b".into(), b), ("c".into(), c)]).unwrap();
    let back = load_safetensors_bytes(&bytes).unwrap();
    let get = |n: &str| back.iter().find(|(k, _)| k == n).unwrap().1.clone();
    assert_eq!(get("a").to_vec_f64(), a.to_vec_f64());
    assert_eq!(get("b").dtype(), DType::Bool);
    assert_eq!(get("c").dtype(), DType::BF16);
    assert_eq!(get("c").sizes(), &[] as &[usize]);
    assert!(load_safetensors_bytes(b"garbage").is_err());
}

/// The copy behind `clone`/`contiguous` of strided views (merged dims, unit-stride runs,
/// transposed tiles, expanded and stepped dims) against the element-by-element iterator.
#[test]
fn contiguous_copies_of_strided_views_match_the_element_order() {
    let base = Tensor::from_vec((0..2 * 37 * 5 * 19).map(|x| x as f32).collect::<Vec<_>>(), &[2, 37, 5, 19]).unwrap();
    let reference = |t: &Tensor| -> Vec<f32> { t.offsets().map(|o| t.storage_slice::<f32>().unwrap()[o]).collect() };
    let views = [
        base.permute(&[0, 2, 1, 3]).unwrap(),
        base.permute(&[0, 1, 3, 2]).unwrap(),
        base.permute(&[3, 2, 1, 0]).unwrap(),
        base.permute(&[1, 0, 3, 2]).unwrap(),
        base.slice(1, Some(3), Some(30), 2).unwrap().permute(&[0, 1, 3, 2]).unwrap(),
        base.slice(3, Some(1), Some(18), 3).unwrap(),
        base.select(0, 1).unwrap().select(1, 4).unwrap().t().unwrap(),
        base.narrow(0, 1, 1).unwrap().permute(&[0, 3, 1, 2]).unwrap(),
        base.select(0, 1).unwrap().select(1, 2).unwrap().unsqueeze(0).unwrap().expand(&[3, 37, 19]).unwrap(),
        base.view(&[2 * 37 * 5 * 19]).unwrap().as_strided(&[4, 1, 3, 2, 2, 3, 2, 2, 2], &[700, 5, 100, 60, 30, 10, 3, 2, 1], Some(7)).unwrap(),
        base.view(&[2 * 37 * 5 * 19]).unwrap().as_strided(&[2; 9], &[700, 310, 150, 70, 33, 15, 7, 3, 1], Some(5)).unwrap(),
    ];
    for (i, v) in views.iter().enumerate() {
        let want = reference(v);
        let mut got = vec![-1.0f32; v.numel()];
        v.copy_to_slice(&mut got).unwrap();
        assert_eq!(got, want, "view {i}: sizes {:?} strides {:?}", v.sizes(), v.strides());
        assert_eq!(v.contiguous().unwrap().to_vec::<f32>().unwrap(), want, "view {i}");
    }
    let mut short = vec![0.0f32; 3];
    assert!(views[0].copy_to_slice(&mut short).is_err());
    assert!(views[0].copy_to_slice(&mut vec![0.0f64; views[0].numel()]).is_err());
}

/// Large strided copies (a channel shuffle's transpose, a transpose of the last two dims, a
/// strided last dim, a sliced view) split across the team give every element where the
/// definition puts it, on one thread and on three.
#[test]
fn large_strided_copies_are_the_same_on_any_thread_count() {
    let (c, h, w) = (96, 28, 30);
    let data: Vec<f32> = (0..2 * c * h * w).map(|i| i as f32).collect();
    let x = t32(&data, &[2, c, h, w]);
    let views = [
        // [2, c/2, 2, h, w] channel shuffle: view(2, 2, c/2, h, w).transpose(1, 2).
        x.reshape(&[2, 2, c as i64 / 2, h as i64, w as i64]).unwrap().transpose(1, 2).unwrap(),
        x.transpose(2, 3).unwrap(),
        x.slice(3, Some(1), None, 2).unwrap(),
        x.narrow(1, 5, 70).unwrap().permute(&[1, 0, 3, 2]).unwrap(),
    ];
    for v in &views {
        // The definition: each element by its index.
        let sizes = v.sizes().to_vec();
        let n: usize = sizes.iter().product();
        let mut want = Vec::with_capacity(n);
        let mut idx = vec![0usize; sizes.len()];
        for _ in 0..n {
            let off = v.offset() + idx.iter().zip(v.strides()).map(|(i, s)| i * s).sum::<usize>();
            want.push(data[off]);
            for d in (0..idx.len()).rev() {
                idx[d] += 1;
                if idx[d] < sizes[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let got = pool.install(|| v.contiguous().unwrap().to_vec::<f32>().unwrap());
            assert_eq!(got, want, "{threads} threads, sizes {sizes:?} strides {:?}", v.strides());
        }
    }
}
