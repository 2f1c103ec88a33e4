//! Golden tests against PyTorch's own outputs: the `export/pointwise` and `export/reductions`
//! programs of the fixture corpus, re-created op by op from their `core.fx.txt` and run
//! through the kernel registry (until the importer and interpreter exist).

use std::path::{Path, PathBuf};

use runtime::io::load_safetensors;
use runtime::{IValue, Tensor, registry};

fn fixture_dir(name: &str) -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/export").join(name);
    if dir.join("io.safetensors").exists() {
        return Some(dir);
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("fixture {} is missing and CI=true", dir.display());
    }
    eprintln!("skipping: fixture {} not found (../shared is absent)", dir.display());
    None
}

/// Reads `rtol`/`atol` from meta.json (a flat search; the file is PyTorch-generated).
fn tolerance(dir: &Path) -> (f64, f64) {
    let meta = std::fs::read_to_string(dir.join("meta.json")).unwrap_or_default();
    let num = |key: &str, default: f64| -> f64 {
        meta.find(&format!("\"{key}\""))
            .and_then(|i| {
                let rest = &meta[i + key.len() + 2..];
                let rest = rest.trim_start().strip_prefix(':')?.trim_start();
                let end = rest.find([',', '\n', '}']).unwrap_or(rest.len());
                rest[..end].trim().parse().ok()
            })
            .unwrap_or(default)
    };
    (num("rtol", 1e-4), num("atol", 1e-5))
}

fn io(dir: &Path) -> Vec<(String, Tensor)> {
    load_safetensors(dir.join("io.safetensors")).unwrap()
}

fn get(io: &[(String, Tensor)], name: &str) -> Tensor {
    io.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("{name} missing")).1.clone()
}

fn call(op: &str, args: Vec<IValue>) -> Tensor {
    registry().call(op, &args).unwrap_or_else(|e| panic!("{e}")).remove(0).into_tensor().unwrap()
}

fn assert_close(name: &str, got: &Tensor, want: &Tensor, rtol: f64, atol: f64) {
    assert_eq!(got.sizes(), want.sizes(), "{name}: shape");
    assert_eq!(got.dtype(), want.dtype(), "{name}: dtype");
    for (i, (g, w)) in got.to_vec_f64().iter().zip(want.to_vec_f64()).enumerate() {
        let ok = (g - w).abs() <= atol + rtol * w.abs() || (g.is_nan() && w.is_nan());
        assert!(ok, "{name}[{i}]: got {g}, want {w}");
    }
}

#[test]
fn pointwise_matches_pytorch() {
    let Some(dir) = fixture_dir("pointwise") else { return };
    let (rtol, atol) = tolerance(&dir);
    let io = io(&dir);
    let x: IValue = get(&io, "in.0").into();
    let y: IValue = get(&io, "in.1").into();
    let one = IValue::Int(1);
    let mul = call("aten.mul.Tensor", vec![x.clone(), y.clone()]);
    let add = call("aten.add.Tensor", vec![mul.into(), IValue::Float(1.0), one.clone()]);
    let sigmoid = call("aten.sigmoid", vec![add.into()]);
    let sub = call("aten.sub.Tensor", vec![x.clone(), y.clone(), one.clone()]);
    let tanh = call("aten.tanh", vec![sub.into()]);
    let mul_1 = call("aten.mul.Tensor", vec![sigmoid.into(), tanh.into()]);
    let relu = call("aten.relu", vec![mul_1.into()]);
    let exp = call("aten.exp", vec![x.clone()]);
    let clamp = call("aten.clamp", vec![exp.into(), IValue::None, IValue::Float(10.0)]);
    let add_1 = call("aten.add.Tensor", vec![relu.into(), clamp.into(), one.clone()]);
    let gt = call("aten.gt.Scalar", vec![add_1.clone().into(), IValue::Float(1.0)]);
    let neg = call("aten.neg", vec![add_1.clone().into()]);
    let where_ = call("aten.where.self", vec![gt.into(), add_1.into(), neg.into()]);
    let abs_1 = call("aten.abs", vec![y.clone()]);
    let add_2 = call("aten.add.Tensor", vec![abs_1.into(), IValue::Float(2.0), one]);
    let div = call("aten.div.Tensor", vec![where_.into(), add_2.into()]);
    assert_close("out.0", &div, &get(&io, "out.0"), rtol, atol);
}

#[test]
fn reductions_match_pytorch() {
    let Some(dir) = fixture_dir("reductions") else { return };
    let (rtol, atol) = tolerance(&dir);
    let io = io(&dir);
    let x: IValue = get(&io, "in.0").into();
    let f = IValue::Bool(false);
    let outs = [
        call("aten._softmax", vec![x.clone(), IValue::Int(-1), f.clone()]),
        call("aten._log_softmax", vec![x.clone(), IValue::Int(1), f.clone()]),
        call("aten.sum.dim_IntList", vec![x.clone(), IValue::IntList(vec![1]), IValue::Bool(true), IValue::None]),
        call("aten.mean.dim", vec![x.clone(), IValue::IntList(vec![0, 2]), f.clone(), IValue::None]),
        call("aten.amax", vec![x.clone(), IValue::IntList(vec![-1]), f.clone()]),
        call("aten.var.correction", vec![x.clone(), IValue::IntList(vec![0]), IValue::Int(1), f.clone()]),
        call("aten.argmax", vec![x.clone(), IValue::Int(2), f]),
    ];
    for (i, got) in outs.iter().enumerate() {
        let name = format!("out.{i}");
        assert_close(&name, got, &get(&io, &name), rtol, atol);
    }
}
