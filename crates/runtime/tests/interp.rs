//! Interpolation kernels: nearest / nearest-exact / linear / bicubic upsampling with sizes and
//! scale factors, `align_corners`, and `grid_sampler_2d` modes and padding.

use runtime::{IValue, Tensor, registry};

fn t(data: &[f32], sizes: &[usize]) -> Tensor {
    Tensor::from_slice(data, sizes).unwrap()
}

fn ints(v: &[i64]) -> IValue {
    IValue::IntList(v.to_vec())
}

fn floats(v: &[f64]) -> IValue {
    IValue::FloatList(v.to_vec())
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
    assert_eq!(g.len(), want.len(), "{g:?}");
    for (i, (a, b)) in g.iter().zip(want).enumerate() {
        assert!((a - b).abs() <= 1e-6 * b.abs().max(1.0), "element {i}: {a} vs {b} in {g:?}");
    }
}

#[test]
fn nearest_doubling_and_fractional_scales() {
    let x = t(&[1., 2., 3., 4.], &[1, 1, 2, 2]);
    let r = call("aten.upsample_nearest2d.vec", vec![x.clone().into(), ints(&[4, 4]), IValue::None]);
    close(&r, &[1., 1., 2., 2., 1., 1., 2., 2., 3., 3., 4., 4., 3., 3., 4., 4.], &[1, 1, 4, 4]);
    let r = call("aten.upsample_nearest2d.vec", vec![x.into(), IValue::None, floats(&[1.0, 2.0])]);
    close(&r, &[1., 1., 2., 2., 3., 3., 4., 4.], &[1, 1, 2, 4]);
    let y = t(&[1., 2., 3.], &[1, 1, 3]);
    close(
        &call("aten.upsample_nearest1d", vec![y.clone().into(), ints(&[4]), IValue::None]),
        &[1., 1., 2., 3.],
        &[1, 1, 4],
    );
    close(
        &call("aten._upsample_nearest_exact1d", vec![y.clone().into(), ints(&[4]), IValue::None]),
        &[1., 2., 2., 3.],
        &[1, 1, 4],
    );
    // An explicit scale overrides the size ratio: 1/3 per step from scale 3.
    close(
        &call("aten.upsample_nearest1d", vec![y.into(), ints(&[4]), IValue::Float(3.0)]),
        &[1., 1., 1., 2.],
        &[1, 1, 4],
    );
    let xi = Tensor::from_slice(&[7i64, 9], &[1, 1, 2]).unwrap();
    let r = call("aten.upsample_nearest1d.vec", vec![xi.into(), ints(&[4]), IValue::None]);
    assert_eq!(r.to_vec_i64(), vec![7, 7, 9, 9]);
}

#[test]
fn linear_align_corners() {
    let x = t(&[0., 1.], &[1, 1, 1, 2]);
    let r =
        call("aten.upsample_bilinear2d.vec", vec![x.clone().into(), ints(&[1, 4]), IValue::Bool(false), IValue::None]);
    close(&r, &[0., 0.25, 0.75, 1.], &[1, 1, 1, 4]);
    let r =
        call("aten.upsample_bilinear2d.vec", vec![x.clone().into(), ints(&[1, 4]), IValue::Bool(true), IValue::None]);
    close(&r, &[0., 1. / 3., 2. / 3., 1.], &[1, 1, 1, 4]);
    let r =
        call("aten.upsample_bilinear2d", vec![x.into(), ints(&[1, 4]), IValue::Bool(true), IValue::None, IValue::None]);
    close(&r, &[0., 1. / 3., 2. / 3., 1.], &[1, 1, 1, 4]);
    // 2-D: the centre of a 2x2 image upsampled to 3x3 with aligned corners is the mean.
    let y = t(&[1., 2., 3., 4.], &[1, 1, 2, 2]);
    let r = call("aten.upsample_bilinear2d.vec", vec![y.into(), IValue::None, IValue::Bool(true), floats(&[1.5, 1.5])]);
    close(&r, &[1., 1.5, 2., 2., 2.5, 3., 3., 3.5, 4.], &[1, 1, 3, 3]);
    let z = Tensor::from_slice(&[0.0f64, 2.0], &[1, 1, 2]).unwrap();
    close(
        &call("aten.upsample_linear1d", vec![z.into(), ints(&[3]), IValue::Bool(true), IValue::None]),
        &[0., 1., 2.],
        &[1, 1, 3],
    );
    let w = t(&[0., 8.], &[1, 1, 2, 1, 1]);
    close(
        &call("aten.upsample_trilinear3d.vec", vec![w.into(), ints(&[3, 1, 1]), IValue::Bool(true), IValue::None]),
        &[0., 4., 8.],
        &[1, 1, 3, 1, 1],
    );
}

#[test]
fn bicubic_reproduces_linear_ramps_inside() {
    let x = t(&[0., 1., 2., 3.], &[1, 1, 1, 4]);
    let r = call("aten.upsample_bicubic2d.vec", vec![x.into(), ints(&[1, 7]), IValue::Bool(true), IValue::None]);
    let g = r.to_vec_f64();
    assert_eq!(r.sizes(), &[1, 1, 1, 7]);
    assert!((g[2] - 1.0).abs() < 1e-6 && (g[3] - 1.5).abs() < 1e-6 && (g[4] - 2.0).abs() < 1e-6, "{g:?}");
    let c = t(&[5.; 6], &[1, 1, 2, 3]);
    let r =
        call("aten.upsample_bicubic2d", vec![c.into(), ints(&[3, 5]), IValue::Bool(false), IValue::None, IValue::None]);
    close(&r, &[5.; 15], &[1, 1, 3, 5]);
}

fn grid(x: &Tensor, g: &[f32], mode: i64, pad: i64, align: bool) -> Tensor {
    let gt = t(g, &[1, 1, g.len() / 2, 2]);
    call(
        "aten.grid_sampler_2d",
        vec![x.clone().into(), gt.into(), IValue::Int(mode), IValue::Int(pad), IValue::Bool(align)],
    )
}

#[test]
fn grid_sampler_modes_and_padding() {
    let x = t(&[1., 2., 3., 4.], &[1, 1, 2, 2]);
    close(&grid(&x, &[0., 0.], 0, 0, true), &[2.5], &[1, 1, 1, 1]);
    close(&grid(&x, &[0., 0.], 0, 0, false), &[2.5], &[1, 1, 1, 1]);
    close(&grid(&x, &[-1., -1., 1., 1., 1., -1.], 0, 0, true), &[1., 4., 2.], &[1, 1, 1, 3]);
    // Nearest rounds half to even: 0.5 -> 0.
    close(&grid(&x, &[0., 0.], 1, 0, true), &[1.], &[1, 1, 1, 1]);
    // Corner (-1, -1) without aligned corners sits half a pixel outside.
    close(&grid(&x, &[-1., -1.], 0, 0, false), &[0.25], &[1, 1, 1, 1]);
    close(&grid(&x, &[-1., -1.], 0, 1, false), &[1.], &[1, 1, 1, 1]);
    close(&grid(&x, &[-1., -1.], 0, 2, false), &[1.], &[1, 1, 1, 1]);
    let c = t(&[3.; 9], &[1, 1, 3, 3]);
    close(&grid(&c, &[0.1, -0.2], 2, 1, false), &[3.], &[1, 1, 1, 1]);
    let e = call_err(
        "aten.grid_sampler_2d",
        vec![x.into(), t(&[0.; 3], &[1, 1, 1, 3]).into(), IValue::Int(0), IValue::Int(0), IValue::Bool(true)],
    );
    assert!(e.starts_with("aten.grid_sampler_2d:"), "{e}");
}

#[test]
fn upsample_errors_name_the_op() {
    let x = t(&[1., 2.], &[1, 1, 2]);
    let e = call_err("aten.upsample_nearest2d.vec", vec![x.clone().into(), ints(&[2, 2]), IValue::None]);
    assert!(e.starts_with("aten.upsample_nearest2d.vec:") && e.contains("4-D"), "{e}");
    let e = call_err("aten.upsample_nearest1d.vec", vec![x.into(), IValue::None, IValue::None]);
    assert!(e.contains("output_size or scale_factors"), "{e}");
}

#[test]
fn absurd_output_sizes_are_errors_not_panics() {
    let x = t(&[1., 2.], &[1, 1, 2]);
    let e = call_err("aten.upsample_nearest1d", vec![x.clone().into(), ints(&[1 << 62]), IValue::None]);
    assert!(!e.is_empty());
    let y = t(&[1., 2., 3., 4.], &[1, 1, 2, 2]);
    let e = call_err(
        "aten.upsample_bilinear2d.vec",
        vec![y.into(), ints(&[1 << 40, 1 << 40]), IValue::Bool(false), IValue::None],
    );
    assert!(!e.is_empty());
    let e = call_err("aten.upsample_nearest1d.vec", vec![x.into(), ints(&[-3]), IValue::None]);
    assert!(e.contains("negative"), "{e}");
}
