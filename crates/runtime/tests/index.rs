//! Indexing kernels: gather/scatter family, advanced indexing and index_put, structured
//! scatters, masks, and out-of-range index errors.

use ir::DType;
use runtime::{IValue, Tensor, registry};

fn t(data: &[f32], sizes: &[usize]) -> Tensor {
    Tensor::from_slice(data, sizes).unwrap()
}

fn i64s(data: &[i64], sizes: &[usize]) -> Tensor {
    Tensor::from_slice(data, sizes).unwrap()
}

fn arange(n: usize, sizes: &[usize]) -> Tensor {
    t(&(0..n).map(|v| v as f32).collect::<Vec<_>>(), sizes)
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

fn same(got: &Tensor, want: &[f64], sizes: &[usize]) {
    assert_eq!(got.sizes(), sizes, "{:?}", got.to_vec_f64());
    let g = got.to_vec_f64();
    assert_eq!(g.len(), want.len());
    for (i, (a, b)) in g.iter().zip(want).enumerate() {
        assert!(
            (a - b).abs() <= 1e-6 * b.abs().max(1.0) || (a.is_nan() && b.is_nan()),
            "element {i}: {a} vs {b} in {g:?}"
        );
    }
}

fn idx_list(ts: Vec<Option<Tensor>>) -> IValue {
    IValue::OptionalTensorList(ts)
}

#[test]
fn embedding_and_index_select() {
    let w = t(&[0., 0., 1., 1., 2., 2.], &[3, 2]);
    let r = call(
        "aten.embedding",
        vec![
            w.clone().into(),
            i64s(&[2, 0], &[1, 2]).into(),
            IValue::Int(-1),
            IValue::Bool(false),
            IValue::Bool(false),
        ],
    );
    same(&r, &[2., 2., 0., 0.], &[1, 2, 2]);
    let e = call_err("aten.embedding", vec![w.into(), i64s(&[3], &[1]).into()]);
    assert!(
        e.starts_with("aten.embedding:") && e.contains("index 3 is out of bounds for dimension 0 with size 3"),
        "{e}"
    );
    let x = t(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
    let r = call("aten.index_select", vec![x.clone().into(), IValue::Int(1), i64s(&[2, 0], &[2]).into()]);
    same(&r, &[3., 1., 6., 4.], &[2, 2]);
    // Non-contiguous self.
    let r = call("aten.index_select", vec![x.t().unwrap().into(), IValue::Int(0), i64s(&[1], &[1]).into()]);
    same(&r, &[2., 5.], &[1, 2]);
    let e = call_err("aten.index_select", vec![x.clone().into(), IValue::Int(0), i64s(&[-1], &[1]).into()]);
    assert!(e.contains("index -1 is out of bounds"), "{e}");
    let e = call_err("aten.index_select", vec![x.into(), IValue::Int(0), t(&[0.], &[1]).into()]);
    assert!(e.contains("integer"), "{e}");
}

#[test]
fn gather_and_take() {
    let x = t(&[1., 2., 3., 4.], &[2, 2]);
    let r = call(
        "aten.gather",
        vec![x.clone().into(), IValue::Int(1), i64s(&[0, 0, 1, 0], &[2, 2]).into(), IValue::Bool(false)],
    );
    same(&r, &[1., 1., 4., 3.], &[2, 2]);
    // Transposed input: logical [[1, 3], [2, 4]].
    let r = call("aten.gather", vec![x.t().unwrap().into(), IValue::Int(0), i64s(&[1, 0], &[1, 2]).into()]);
    same(&r, &[2., 3.], &[1, 2]);
    let e = call_err("aten.gather", vec![x.clone().into(), IValue::Int(1), i64s(&[2], &[1, 1]).into()]);
    assert!(e.starts_with("aten.gather:") && e.contains("index 2 is out of bounds for dimension 1 with size 2"), "{e}");
    let r = call("aten.take", vec![x.clone().into(), i64s(&[3, -4], &[1, 2]).into()]);
    same(&r, &[4., 1.], &[1, 2]);
    let e = call_err("aten.take", vec![x.into(), i64s(&[4], &[1]).into()]);
    assert!(e.contains("index 4"), "{e}");
}

#[test]
fn scatter_src_value_add() {
    let z = t(&[0.; 6], &[2, 3]);
    let r = call(
        "aten.scatter.src",
        vec![z.clone().into(), IValue::Int(1), i64s(&[2, 0], &[1, 2]).into(), t(&[9., 8., 7.], &[1, 3]).into()],
    );
    same(&r, &[8., 0., 9., 0., 0., 0.], &[2, 3]);
    let r = call(
        "aten.scatter.value",
        vec![z.clone().into(), IValue::Int(0), i64s(&[1, 0, 1], &[1, 3]).into(), IValue::Float(5.0)],
    );
    same(&r, &[0., 5., 0., 5., 0., 5.], &[2, 3]);
    let r = call(
        "aten.scatter_add",
        vec![t(&[0.; 3], &[3]).into(), IValue::Int(0), i64s(&[0, 0, 2], &[3]).into(), t(&[1., 2., 3.], &[3]).into()],
    );
    same(&r, &[3., 0., 3.], &[3]);
    let r = call(
        "aten.scatter.reduce",
        vec![
            t(&[2.; 3], &[3]).into(),
            IValue::Int(0),
            i64s(&[0, 0], &[2]).into(),
            t(&[3., 4.], &[2]).into(),
            IValue::from("multiply"),
        ],
    );
    same(&r, &[24., 2., 2.], &[3]);
    let e = call_err(
        "aten.scatter.src",
        vec![z.into(), IValue::Int(1), i64s(&[3], &[1, 1]).into(), t(&[1.], &[1, 1]).into()],
    );
    assert!(
        e.starts_with("aten.scatter.src:") && e.contains("index 3 is out of bounds for dimension 1 with size 3"),
        "{e}"
    );
}

fn scatter_reduce(x: Tensor, src: Tensor, reduce: &str, include_self: bool) -> Tensor {
    call(
        "aten.scatter_reduce.two",
        vec![
            x.into(),
            IValue::Int(0),
            i64s(&[0, 0, 1, 3], &[4]).into(),
            src.into(),
            IValue::from(reduce),
            IValue::Bool(include_self),
        ],
    )
}

#[test]
fn scatter_reduce_all_modes() {
    let x = t(&[1., 2., 3., 4.], &[4]);
    let s = t(&[5., 6., 7., 8.], &[4]);
    same(&scatter_reduce(x.clone(), s.clone(), "sum", true), &[12., 9., 3., 12.], &[4]);
    same(&scatter_reduce(x.clone(), s.clone(), "sum", false), &[11., 7., 3., 8.], &[4]);
    same(&scatter_reduce(x.clone(), s.clone(), "prod", true), &[30., 14., 3., 32.], &[4]);
    same(&scatter_reduce(x.clone(), s.clone(), "mean", true), &[4., 4.5, 3., 6.], &[4]);
    same(&scatter_reduce(x.clone(), s.clone(), "mean", false), &[5.5, 7., 3., 8.], &[4]);
    same(&scatter_reduce(x.clone(), s.clone(), "amax", true), &[6., 7., 3., 8.], &[4]);
    same(&scatter_reduce(x.clone(), s.clone(), "amin", true), &[1., 2., 3., 4.], &[4]);
    same(&scatter_reduce(x.clone(), s, "amin", false), &[5., 7., 3., 8.], &[4]);
    let nan = t(&[f32::NAN, 0., 0., 0.], &[4]);
    same(&scatter_reduce(x, nan, "amax", true), &[f64::NAN, 2., 3., 4.], &[4]);
    // Integer mean floors.
    let xi = i64s(&[1, 2, 3, 4], &[4]);
    let si = i64s(&[5, 6, 7, -8], &[4]);
    let r = scatter_reduce(xi, si, "mean", true);
    assert_eq!(r.dtype(), DType::I64);
    assert_eq!(r.to_vec_i64(), vec![4, 4, 3, -2]);
    // Bool sum is a logical or, prod a logical and.
    let xb = Tensor::from_slice(&[false, true, false, true], &[4]).unwrap();
    let sb = Tensor::from_slice(&[true, false, false, false], &[4]).unwrap();
    let r = scatter_reduce(xb.clone(), sb.clone(), "sum", true);
    assert_eq!(r.to_vec_i64(), vec![1, 1, 0, 1]);
    let r = scatter_reduce(xb, sb, "prod", true);
    assert_eq!(r.to_vec_i64(), vec![0, 0, 0, 0]);
    let e = call_err(
        "aten.scatter_reduce.two",
        vec![
            t(&[0.], &[1]).into(),
            IValue::Int(0),
            i64s(&[0], &[1]).into(),
            t(&[0.], &[1]).into(),
            IValue::from("median"),
        ],
    );
    assert!(e.contains("median"), "{e}");
}

#[test]
fn index_tensor_advanced_indexing() {
    let x = arange(12, &[3, 4]);
    let r = call("aten.index.Tensor", vec![x.clone().into(), idx_list(vec![Some(i64s(&[2, 0], &[2]))])]);
    same(&r, &[8., 9., 10., 11., 0., 1., 2., 3.], &[2, 4]);
    let r = call("aten.index.Tensor", vec![x.clone().into(), idx_list(vec![None, Some(i64s(&[1, 3], &[2]))])]);
    same(&r, &[1., 3., 5., 7., 9., 11.], &[3, 2]);
    let r = call(
        "aten.index.Tensor",
        vec![x.clone().into(), idx_list(vec![Some(i64s(&[0, 2], &[2])), Some(i64s(&[1, 3], &[2]))])],
    );
    same(&r, &[1., 11.], &[2]);
    // Broadcast [2,1] with [2] -> [2,2]; negative indices wrap.
    let r = call(
        "aten.index.Tensor",
        vec![x.clone().into(), idx_list(vec![Some(i64s(&[0, -1], &[2, 1])), Some(i64s(&[1, 3], &[2]))])],
    );
    same(&r, &[1., 3., 9., 11.], &[2, 2]);
    // Non-adjacent indexed dims move the broadcast dims first.
    let y = arange(24, &[2, 3, 4]);
    let r = call(
        "aten.index.Tensor",
        vec![y.clone().into(), idx_list(vec![Some(i64s(&[0, 1], &[2])), None, Some(i64s(&[0, 3], &[2]))])],
    );
    same(&r, &[0., 4., 8., 15., 19., 23.], &[2, 3]);
    // Adjacent indexed dims after a full slice stay in place.
    let r =
        call("aten.index.Tensor", vec![y.into(), idx_list(vec![None, Some(i64s(&[2], &[1])), Some(i64s(&[1], &[1]))])]);
    same(&r, &[9., 21.], &[2, 1]);
    // Boolean masks.
    let m = Tensor::from_slice(&[true, false, true], &[3]).unwrap();
    let r = call("aten.index.Tensor", vec![x.clone().into(), idx_list(vec![Some(m)])]);
    same(&r, &[0., 1., 2., 3., 8., 9., 10., 11.], &[2, 4]);
    let m2 = Tensor::from_slice(
        &[false, true, false, false, false, false, false, false, false, false, false, true],
        &[3, 4],
    )
    .unwrap();
    let r = call("aten.index.Tensor", vec![x.clone().into(), idx_list(vec![Some(m2)])]);
    same(&r, &[1., 11.], &[2]);
    let e = call_err("aten.index.Tensor", vec![x.clone().into(), idx_list(vec![Some(i64s(&[3], &[1]))])]);
    assert!(
        e.starts_with("aten.index.Tensor:") && e.contains("index 3 is out of bounds for dimension 0 with size 3"),
        "{e}"
    );
    let e = call_err(
        "aten.index.Tensor",
        vec![x.into(), idx_list(vec![Some(i64s(&[0, 1], &[2])), Some(i64s(&[0, 1, 2], &[3]))])],
    );
    assert!(e.contains("broadcast"), "{e}");
}

#[test]
fn index_put_assign_and_accumulate() {
    let z = t(&[0.; 3], &[3]);
    let ix = || idx_list(vec![Some(i64s(&[0, 2, 0], &[3]))]);
    let r = call("aten.index_put", vec![z.clone().into(), ix(), t(&[1., 2., 3.], &[3]).into(), IValue::Bool(true)]);
    same(&r, &[4., 0., 2.], &[3]);
    let r = call("aten.index_put", vec![z.clone().into(), ix(), t(&[1., 2., 3.], &[3]).into(), IValue::Bool(false)]);
    same(&r, &[3., 0., 2.], &[3]);
    let r = call("aten.index_put", vec![z.clone().into(), ix(), t(&[5.], &[1]).into()]);
    same(&r, &[5., 0., 5.], &[3]);
    // Input untouched (functional).
    same(&z, &[0., 0., 0.], &[3]);
    let z2 = t(&[0.; 6], &[2, 3]);
    let r = call(
        "aten.index_put",
        vec![
            z2.into(),
            idx_list(vec![None, Some(i64s(&[1], &[1]))]),
            t(&[7., 8.], &[2, 1]).into(),
            IValue::Bool(false),
        ],
    );
    same(&r, &[0., 7., 0., 0., 8., 0.], &[2, 3]);
    let e = call_err("aten.index_put", vec![z.into(), idx_list(vec![Some(i64s(&[5], &[1]))]), t(&[1.], &[1]).into()]);
    assert!(e.starts_with("aten.index_put:") && e.contains("index 5"), "{e}");
}

#[test]
fn index_add_copy_fill() {
    let z = t(&[0.; 6], &[2, 3]);
    let r = call(
        "aten.index_add",
        vec![
            z.clone().into(),
            IValue::Int(1),
            i64s(&[0, 2], &[2]).into(),
            t(&[1., 2., 3., 4.], &[2, 2]).into(),
            IValue::Int(2),
        ],
    );
    same(&r, &[2., 0., 4., 6., 0., 8.], &[2, 3]);
    let r = call(
        "aten.index_copy",
        vec![z.clone().into(), IValue::Int(0), i64s(&[1], &[1]).into(), t(&[1., 2., 3.], &[1, 3]).into()],
    );
    same(&r, &[0., 0., 0., 1., 2., 3.], &[2, 3]);
    let r = call(
        "aten.index_fill.int_Scalar",
        vec![z.into(), IValue::Int(1), i64s(&[-1], &[1]).into(), IValue::Float(9.0)],
    );
    same(&r, &[0., 0., 9., 0., 0., 9.], &[2, 3]);
}

#[test]
fn masked_and_structured_scatters() {
    let m = Tensor::from_slice(&[true, false, true, true], &[4]).unwrap();
    let r = call(
        "aten.masked_scatter",
        vec![t(&[0.; 4], &[4]).into(), m.clone().into(), t(&[1., 2., 3., 4.], &[4]).into()],
    );
    same(&r, &[1., 0., 2., 3.], &[4]);
    let e = call_err("aten.masked_scatter", vec![t(&[0.; 4], &[4]).into(), m.into(), t(&[1., 2.], &[2]).into()]);
    assert!(e.starts_with("aten.masked_scatter:") && e.contains("source"), "{e}");
    let r = call(
        "aten.select_scatter",
        vec![t(&[0.; 4], &[2, 2]).into(), t(&[1., 2.], &[2]).into(), IValue::Int(0), IValue::Int(1)],
    );
    same(&r, &[0., 0., 1., 2.], &[2, 2]);
    let e = call_err(
        "aten.select_scatter",
        vec![t(&[0.; 4], &[2, 2]).into(), t(&[1., 2., 3.], &[3]).into(), IValue::Int(0), IValue::Int(1)],
    );
    assert!(e.contains("size"), "{e}");
    let e = call_err(
        "aten.select_scatter",
        vec![t(&[0.; 4], &[2, 2]).into(), t(&[1., 2.], &[2]).into(), IValue::Int(0), IValue::Int(2)],
    );
    assert!(e.contains("index 2"), "{e}");
    let r = call(
        "aten.slice_scatter",
        vec![
            t(&[0.; 4], &[4]).into(),
            t(&[1., 1.], &[2]).into(),
            IValue::Int(0),
            IValue::Int(1),
            IValue::None,
            IValue::Int(2),
        ],
    );
    same(&r, &[0., 1., 0., 1.], &[4]);
    let r = call(
        "aten.diagonal_scatter",
        vec![t(&[0.; 4], &[2, 2]).into(), t(&[1., 2.], &[2]).into(), IValue::Int(0), IValue::Int(0), IValue::Int(1)],
    );
    same(&r, &[1., 0., 0., 2.], &[2, 2]);
}

#[test]
fn nonzero_coordinates() {
    let x = t(&[0., 1., 1., 0.], &[2, 2]);
    let r = call("aten.nonzero", vec![x.into()]);
    assert_eq!(r.dtype(), DType::I64);
    assert_eq!(r.sizes(), &[2, 2]);
    assert_eq!(r.to_vec_i64(), vec![0, 1, 1, 0]);
}

#[test]
fn unsafe_and_hacked_twin_variants_share_the_kernels() {
    let x = arange(4, &[4]);
    let r = call("aten._unsafe_index.Tensor", vec![x.clone().into(), idx_list(vec![Some(i64s(&[3, 1], &[2]))])]);
    same(&r, &[3., 1.], &[2]);
    let list = IValue::TensorList(vec![i64s(&[0], &[1])]);
    let r = call(
        "aten.index_put.hacked_twin",
        vec![x.clone().into(), list.clone(), t(&[9.], &[1]).into(), IValue::Bool(true)],
    );
    same(&r, &[9., 1., 2., 3.], &[4]);
    let r = call("aten._unsafe_index_put", vec![x.clone().into(), list, t(&[9.], &[1]).into(), IValue::Bool(false)]);
    same(&r, &[9., 1., 2., 3.], &[4]);
    let e = call_err("aten._unsafe_index.Tensor", vec![x.into(), idx_list(vec![Some(i64s(&[4], &[1]))])]);
    assert!(e.starts_with("aten._unsafe_index.Tensor:") && e.contains("index 4"), "{e}");
}
