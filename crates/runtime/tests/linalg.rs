//! Matrix-product kernels: hand-computed cases, strided operands, dtypes and errors.

mod common;

use common::noise;
use half::{bf16, f16};
use ir::DType;
use runtime::{IValue, Tensor, registry};

fn t(data: &[f32], sizes: &[usize]) -> Tensor {
    Tensor::from_slice(data, sizes).unwrap()
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

fn close(got: &Tensor, want: &[f64], sizes: &[usize]) {
    assert_eq!(got.sizes(), sizes);
    let g = got.to_vec_f64();
    assert_eq!(g.len(), want.len());
    for (i, (a, b)) in g.iter().zip(want).enumerate() {
        assert!((a - b).abs() <= 1e-4 * b.abs().max(1.0), "element {i}: {a} vs {b}");
    }
}

fn naive(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
        }
    }
    c
}


#[test]
fn mm_small() {
    let a = t(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
    let b = t(&[7., 8., 9., 10., 11., 12.], &[3, 2]);
    let c = call("aten.mm", vec![a.into(), b.into()]);
    close(&c, &[58., 64., 139., 154.], &[2, 2]);
}

#[test]
fn mm_transposed_operands_without_copy() {
    // a is stored 3x2 and used as its transpose (2x3).
    let a = t(&[1., 4., 2., 5., 3., 6.], &[3, 2]).t().unwrap();
    let b = t(&[7., 9., 11., 8., 10., 12.], &[2, 3]).t().unwrap();
    assert!(!a.is_contiguous() && !b.is_contiguous());
    let c = call("aten.mm", vec![a.into(), b.into()]);
    close(&c, &[58., 64., 139., 154.], &[2, 2]);
}

#[test]
fn mm_matches_naive_on_larger_shapes_and_vector_paths() {
    for &(m, k, n) in &[(1, 37, 29), (29, 37, 1), (17, 64, 33), (1, 512, 64), (64, 1, 5), (3, 0, 4)] {
        let a = noise(m * k, 1);
        let b = noise(k * n, 2);
        let want = naive(
            &a.iter().map(|&x| x as f64).collect::<Vec<_>>(),
            &b.iter().map(|&x| x as f64).collect::<Vec<_>>(),
            m,
            k,
            n,
        );
        let c = call("aten.mm", vec![t(&a, &[m, k]).into(), t(&b, &[k, n]).into()]);
        close(&c, &want, &[m, n]);
        // The same with b given as the transpose of an n×k matrix (the `linear` layout).
        let bt: Vec<f32> = (0..n * k).map(|i| b[(i % k) * n + i / k]).collect();
        let btv = t(&bt, &[n, k]).t().unwrap();
        let c = call("aten.mm", vec![t(&a, &[m, k]).into(), btv.into()]);
        close(&c, &want, &[m, n]);
        // And a given as a transposed view (column-major).
        let at: Vec<f32> = (0..m * k).map(|i| a[(i % m) * k + i / m]).collect();
        let atv = t(&at, &[k, m]).t().unwrap();
        let c = call("aten.mm", vec![atv.into(), t(&b, &[k, n]).into()]);
        close(&c, &want, &[m, n]);
    }
}

#[test]
fn mm_f64_and_ints() {
    let a = Tensor::from_slice(&[1.5f64, -2.0, 0.25, 4.0], &[2, 2]).unwrap();
    let c = call("aten.mm", vec![a.clone().into(), a.into()]);
    assert_eq!(c.dtype(), DType::F64);
    close(&c, &[1.75, -11.0, 1.375, 15.5], &[2, 2]);
    let a = Tensor::from_slice(&[1i64, 2, 3, 4], &[2, 2]).unwrap();
    let c = call("aten.mm", vec![a.clone().into(), a.into()]);
    assert_eq!(c.dtype(), DType::I64);
    assert_eq!(c.to_vec_i64(), vec![7, 10, 15, 22]);
    let a = Tensor::from_slice(&[100i8, 2, 3, 4], &[2, 2]).unwrap();
    let c = call("aten.mm", vec![a.clone().into(), a.into()]);
    // 100*100 + 2*3 = 10006 wraps to 10006 mod 256 = 22.
    assert_eq!(c.to_vec_i64()[0], 22);
}

#[test]
fn mm_half_types_compute_in_f32() {
    let a =
        Tensor::from_slice(&[f16::from_f32(1.0), f16::from_f32(2.0), f16::from_f32(3.0), f16::from_f32(4.0)], &[2, 2])
            .unwrap();
    let c = call("aten.mm", vec![a.clone().into(), a.into()]);
    assert_eq!(c.dtype(), DType::F16);
    assert_eq!(c.to_vec_f64(), vec![7., 10., 15., 22.]);
    let a = Tensor::from_slice(&[bf16::from_f32(1.0), bf16::from_f32(2.0)], &[1, 2]).unwrap();
    let b = Tensor::from_slice(&[bf16::from_f32(3.0), bf16::from_f32(4.0)], &[2, 1]).unwrap();
    let c = call("aten.mm", vec![a.into(), b.into()]);
    assert_eq!(c.dtype(), DType::BF16);
    assert_eq!(c.to_vec_f64(), vec![11.]);
}

#[test]
fn mm_errors_name_the_op() {
    let e = call_err("aten.mm", vec![t(&[1., 2.], &[1, 2]).into(), t(&[1., 2., 3.], &[3, 1]).into()]);
    assert!(e.starts_with("aten.mm:") && e.contains("cannot"), "{e}");
    let e = call_err("aten.mm", vec![t(&[1., 2.], &[2]).into(), t(&[1., 2.], &[2, 1]).into()]);
    assert!(e.contains("2-D"), "{e}");
    let b = Tensor::from_slice(&[1.0f64, 2.0], &[2, 1]).unwrap();
    let e = call_err("aten.mm", vec![t(&[1., 2.], &[1, 2]).into(), b.into()]);
    assert!(e.contains("dtype"), "{e}");
    let bl = Tensor::from_slice(&[true, false], &[1, 2]).unwrap();
    let e = call_err("aten.mm", vec![bl.clone().into(), bl.t().unwrap().into()]);
    assert!(e.contains("bool"), "{e}");
}

#[test]
fn addmm_beta_alpha_and_broadcast_bias() {
    let bias = t(&[1., 2.], &[2]);
    let a = t(&[1., 2., 3., 4.], &[2, 2]);
    let b = t(&[1., 0., 0., 1.], &[2, 2]);
    let c = call(
        "aten.addmm",
        vec![bias.clone().into(), a.clone().into(), b.clone().into(), IValue::Float(0.5), IValue::Int(2)],
    );
    close(&c, &[2.5, 5., 6.5, 9.], &[2, 2]);
    // beta = 0 ignores NaNs in self.
    let nan = t(&[f32::NAN, f32::NAN], &[2]);
    let c = call("aten.addmm", vec![nan.into(), a.into(), b.into(), IValue::Int(0), IValue::Int(1)]);
    close(&c, &[1., 2., 3., 4.], &[2, 2]);
}

#[test]
fn bmm_and_baddbmm() {
    let a = t(&[1., 2., 3., 4., 5., 6., 7., 8.], &[2, 2, 2]);
    let eye = t(&[1., 0., 0., 1., 2., 0., 0., 2.], &[2, 2, 2]);
    let c = call("aten.bmm", vec![a.clone().into(), eye.clone().into()]);
    close(&c, &[1., 2., 3., 4., 10., 12., 14., 16.], &[2, 2, 2]);
    // A permuted batch operand: [2,2,2] viewed with dims (1,0,2).
    let p = a.permute(&[1, 0, 2]).unwrap();
    let c = call("aten.bmm", vec![p.into(), eye.clone().into()]);
    close(&c, &[1., 2., 5., 6., 6., 8., 14., 16.], &[2, 2, 2]);
    let s = t(&[1.], &[1]);
    let c = call("aten.baddbmm", vec![s.into(), a.into(), eye.into(), IValue::Int(1), IValue::Int(1)]);
    close(&c, &[2., 3., 4., 5., 11., 13., 15., 17.], &[2, 2, 2]);
}

#[test]
fn mv_addmv_dot() {
    let m = t(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
    let v = t(&[1., 0., -1.], &[3]);
    close(&call("aten.mv", vec![m.clone().into(), v.clone().into()]), &[-2., -2.], &[2]);
    let s = t(&[10., 20.], &[2]);
    let c = call("aten.addmv", vec![s.into(), m.clone().into(), v.clone().into(), IValue::Int(1), IValue::Int(3)]);
    close(&c, &[4., 14.], &[2]);
    // mv with a transposed matrix.
    let mt = m.t().unwrap();
    close(&call("aten.mv", vec![mt.into(), t(&[1., 1.], &[2]).into()]), &[5., 7., 9.], &[3]);
    let d = call("aten.dot", vec![v.clone().into(), t(&[3., 4., 5.], &[3]).into()]);
    close(&d, &[-2.], &[]);
    let e = call_err("aten.dot", vec![v.into(), t(&[3., 4.], &[2]).into()]);
    assert!(e.starts_with("aten.dot:"), "{e}");
}

#[test]
fn matmul_all_rank_combinations() {
    let v = t(&[1., 2.], &[2]);
    let m = t(&[1., 2., 3., 4.], &[2, 2]);
    close(&call("aten.matmul", vec![v.clone().into(), v.clone().into()]), &[5.], &[]);
    close(&call("aten.matmul", vec![m.clone().into(), v.clone().into()]), &[5., 11.], &[2]);
    close(&call("aten.matmul", vec![v.clone().into(), m.clone().into()]), &[7., 10.], &[2]);
    // Broadcast batch: [3,1,2,2] x [2,2,2] -> [3,2,2,2].
    let a = t(&(0..12).map(|x| x as f32).collect::<Vec<_>>(), &[3, 1, 2, 2]);
    let b = t(&[1., 0., 0., 1., 0., 1., 1., 0.], &[2, 2, 2]);
    let c = call("aten.matmul", vec![a.into(), b.into()]);
    assert_eq!(c.sizes(), &[3, 2, 2, 2]);
    let g = c.to_vec_f64();
    assert_eq!(&g[0..8], &[0., 1., 2., 3., 1., 0., 3., 2.]);
    assert_eq!(&g[16..24], &[8., 9., 10., 11., 9., 8., 11., 10.]);
    // N-d x 1-d.
    let a = t(&(0..8).map(|x| x as f32).collect::<Vec<_>>(), &[2, 2, 2]);
    close(&call("aten.matmul", vec![a.into(), v.into()]), &[2., 8., 14., 20.], &[2, 2]);
}

#[test]
fn linear_with_and_without_bias() {
    let x = t(&[1., 2., 3., 4., 5., 6.], &[1, 2, 3]);
    let w = t(&[1., 0., 0., 0., 1., 1.], &[2, 3]);
    let b = t(&[0.5, -0.5], &[2]);
    let y = call("aten.linear", vec![x.clone().into(), w.clone().into(), b.into()]);
    close(&y, &[1.5, 4.5, 4.5, 10.5], &[1, 2, 2]);
    let y = call("aten.linear", vec![x.clone().into(), w.into(), IValue::None]);
    close(&y, &[1., 5., 4., 11.], &[1, 2, 2]);
    // Batch-1 (matrix-vector path) at a realistic width agrees with the naive product.
    let k = 512;
    let xs = noise(k, 3);
    let ws = noise(k * 64, 4);
    let y = call("aten.linear", vec![t(&xs, &[1, k]).into(), t(&ws, &[64, k]).into()]);
    let want: Vec<f64> = (0..64).map(|j| (0..k).map(|p| xs[p] as f64 * ws[j * k + p] as f64).sum()).collect();
    close(&y, &want, &[1, 64]);
    let e = call_err("aten.linear", vec![x.into(), t(&[1., 2.], &[1, 2]).into()]);
    assert!(e.starts_with("aten.linear:"), "{e}");
}

/// Attention's batched products take their operands as transposed views; with enough work
/// their batch entries are split across threads, and the result must not depend on it.
#[test]
fn bmm_of_transposed_views_is_the_same_bits_on_any_number_of_threads() {
    let (batch, m, k, n) = (6, 70, 48, 90);
    // `a` is `[batch, m, k]` read through a transpose of `[batch, k, m]`; `b` is `[batch, k, n]`
    // read through a transpose of `[batch, n, k]` (columns not contiguous: packed per call).
    let at = t(&noise(batch * k * m, 21), &[batch, k, m]);
    let bt = t(&noise(batch * n * k, 22), &[batch, n, k]);
    let a = at.transpose(1, 2).unwrap();
    let b = bt.transpose(1, 2).unwrap();
    assert!(batch * m * k * n >= 1 << 20, "large enough to be split");
    let run = || call("aten.bmm", vec![IValue::Tensor(a.clone()), IValue::Tensor(b.clone())]);
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap().install(run);
    let three = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap().install(run);
    let bits = |t: &Tensor| t.to_vec_f64().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&one), bits(&three));
    let (ad, bd) = (at.to_vec_f64(), bt.to_vec_f64());
    let mut want = Vec::with_capacity(batch * m * n);
    for bi in 0..batch {
        for i in 0..m {
            for j in 0..n {
                want.push((0..k).map(|p| ad[(bi * k + p) * m + i] * bd[(bi * n + j) * k + p]).sum::<f64>());
            }
        }
    }
    close(&one, &want, &[batch, m, n]);
}
