//! Executor tests: weights and state, buffer mutation across calls, output nesting, input
//! validation and specialization guards.

mod common;

use common::*;
use runtime::{CompileOptions, ExecError, GuardPolicy, IValue, Tensor, Weights};

const STATEFUL: &str = r#"
module {
  func.func @forward(%w: tensor<3xf32> {prim.param = "scale"}, %b: tensor<1xf32> {prim.buffer = "count"}, %x: tensor<3xf32> {prim.input = "x"}) -> (tensor<1xf32> {prim.buffer_mutation = "count"}, tensor<3xf32> {prim.output = "out"}) {
    %one = prim.Constant 1 : i64
    %a = aten.add.Scalar %b, %one : (tensor<1xf32>, i64) -> tensor<1xf32>
    %m = aten.mul.Tensor %x, %a : (tensor<3xf32>, tensor<1xf32>) -> tensor<3xf32>
    %r = aten.mul.Tensor %m, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    func.return %a, %r : tensor<1xf32>, tensor<3xf32>
  }
}
"#;

fn stateful_weights() -> Weights {
    let mut w = Weights::new();
    w.insert("scale", Tensor::from_slice(&[1.0f32, 10.0, 100.0], &[3]).unwrap());
    w.insert_bytes("count", ir::DType::F32, &[1], &0.0f32.to_le_bytes()).unwrap();
    w
}

#[test]
fn buffer_mutation_is_seen_by_the_next_call() {
    let p = try_compile(STATEFUL, &stateful_weights(), CompileOptions::default()).unwrap();
    assert_eq!(p.input_names(), ["x"]);
    assert_eq!(p.num_outputs(), 1);
    let mut rt = p.runtime();
    let x = t(&[1.0, 2.0, 3.0], &[3]);
    let out1 = rt.run(std::slice::from_ref(&x)).unwrap();
    assert_close(&vals(&out1[0]), &[1.0, 20.0, 300.0]);
    let out2 = rt.run(std::slice::from_ref(&x)).unwrap();
    assert_close(&vals(&out2[0]), &[2.0, 40.0, 600.0]);
    assert_close(&vals(rt.buffer("count").unwrap()), &[2.0]);
    // Each runtime owns its buffers: a fresh one starts from the initial state.
    let mut rt2 = p.runtime();
    assert_close(&vals(&rt2.run(std::slice::from_ref(&x)).unwrap()[0]), &[1.0, 20.0, 300.0]);
    rt.reset_state();
    assert_close(&vals(&rt.run(&[x]).unwrap()[0]), &[1.0, 20.0, 300.0]);
}

#[test]
fn a_mutated_user_input_is_written_back_into_the_callers_tensor() {
    // A Dynamo graph updating a module's buffer, exported: the buffer is a user input, and its
    // new value a `prim.input_mutation` result rather than a user output.
    let src = r#"
module {
  func.func @forward(%x: tensor<3xf32> {prim.input = "x"}, %c: tensor<1xf32> {prim.input = "count"}) -> (tensor<1xf32> {prim.input_mutation = "count"}, tensor<3xf32> {prim.output = "out"}) {
    %one = prim.Constant 1 : i64
    %a = aten.add.Scalar %c, %one : (tensor<1xf32>, i64) -> tensor<1xf32>
    %m = aten.mul.Tensor %x, %a : (tensor<3xf32>, tensor<1xf32>) -> tensor<3xf32>
    func.return %a, %m : tensor<1xf32>, tensor<3xf32>
  }
}
"#;
    let p = try_compile(src, &Weights::new(), CompileOptions::default()).unwrap();
    assert_eq!(p.input_names(), ["x", "count"]);
    assert_eq!(p.num_outputs(), 1);
    let mut rt = p.runtime();
    let x = t(&[1.0, 2.0, 3.0], &[3]);
    let count = t(&[0.0], &[1]);
    let inputs = [x, count.clone()];
    let out1 = rt.run(&inputs).unwrap();
    assert_eq!(out1.len(), 1);
    assert_close(&vals(&out1[0]), &[1.0, 2.0, 3.0]);
    assert_close(&vals(&count), &[1.0]);
    let out2 = rt.run(&inputs).unwrap();
    assert_close(&vals(&out2[0]), &[2.0, 4.0, 6.0]);
    assert_close(&vals(&count), &[2.0]);
}

#[test]
fn in_place_buffer_update_persists() {
    // The un-functionalized form: `self.count.add_(1)` with no mutation output.
    let src = r#"
module {
  func.func @forward(%b: tensor<1xf32> {prim.buffer = "count"}, %x: tensor<3xf32> {prim.input = "x"}) -> tensor<3xf32> {
    %one = prim.Constant 1 : i64
    %a = aten.add_.Scalar %b, %one : (tensor<1xf32>, i64) -> tensor<1xf32>
    %m = aten.mul.Tensor %x, %a : (tensor<3xf32>, tensor<1xf32>) -> tensor<3xf32>
    func.return %m : tensor<3xf32>
  }
}
"#;
    let p = try_compile(src, &stateful_weights(), CompileOptions::default()).unwrap();
    let mut rt = p.runtime();
    let x = t(&[1.0, 2.0, 3.0], &[3]);
    assert_close(&vals(&rt.run(std::slice::from_ref(&x)).unwrap()[0]), &[1.0, 2.0, 3.0]);
    assert_close(&vals(&rt.run(std::slice::from_ref(&x)).unwrap()[0]), &[2.0, 4.0, 6.0]);
    // The shared initial weights were not touched.
    let mut rt2 = p.runtime();
    assert_close(&vals(&rt2.run(&[x]).unwrap()[0]), &[1.0, 2.0, 3.0]);
}

#[test]
fn missing_weight_is_a_compile_error() {
    let err = try_compile(STATEFUL, &Weights::new(), CompileOptions::default()).unwrap_err();
    assert_eq!(err.to_string(), "parameter 'scale' is not in the weights");
}

#[test]
fn outputs_follow_the_out_spec() {
    check_nested_outputs("TreeSpec(dict, ['sum', 'pair'], [*, TreeSpec(tuple, None, [*, TreeSpec(list, None, [*, *])])])");
}

/// The spelling the `.pt2` importer writes nests the outputs as PyTorch's printed one does.
#[test]
fn outputs_follow_the_importers_out_spec() {
    check_nested_outputs("{\"sum\": *, \"pair\": (*, [*, *])}");
}

/// Runs a program of four outputs whose module declares `spec` (the outputs nested as
/// `{"sum": *, "pair": (*, [*, *])}`) and checks the nesting.
fn check_nested_outputs(spec: &str) {
    let head = format!("module attributes {{prim.out_spec = {}}} {{", ir::Attribute::str(spec));
    let src = head + r#"
  func.func @forward(%x: tensor<2xf32>, %y: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
    %a = aten.add.Tensor %x, %y : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %m = aten.mul.Tensor %x, %y : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %s = aten.sub.Tensor %x, %y : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %r = aten.relu %s : (tensor<2xf32>) -> tensor<2xf32>
    func.return %a, %m, %s, %r : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
  }
}
"#;
    let p = compile_ok(&src, &Weights::new());
    let mut rt = p.runtime();
    let tree = rt.run_tree(&[t(&[1.0, 5.0], &[2]), t(&[3.0, 2.0], &[2])]).unwrap();
    assert_close(&vals(tree.get("sum").unwrap().value().unwrap()), &[4.0, 7.0]);
    let pair = tree.get("pair").unwrap();
    assert_close(&vals(pair.index(0).unwrap().value().unwrap()), &[3.0, 10.0]);
    let list = pair.index(1).unwrap();
    assert!(matches!(list, runtime::Outputs::List(xs) if xs.len() == 2));
    assert_close(&vals(list.index(1).unwrap().value().unwrap()), &[0.0, 3.0]);
    assert_eq!(tree.leaves().len(), 4);
}

const TYPED: &str = r#"
module attributes {prim.range_constraints = {s0 = [2, 8]}} {
  func.func @forward(%x: tensor<?x4xf32, #prim.sym<s0>> {prim.input = "x"}, %y: tensor<?x4xf32, #prim.sym<s0>> {prim.input = "y"}) -> tensor<?x4xf32, #prim.sym<s0>> {
    %a = aten.add.Tensor %x, %y : (tensor<?x4xf32, #prim.sym<s0>>, tensor<?x4xf32, #prim.sym<s0>>) -> tensor<?x4xf32, #prim.sym<s0>>
    func.return %a : tensor<?x4xf32, #prim.sym<s0>>
  }
}
"#;

fn zeros(d: ir::DType, s: &[usize]) -> IValue {
    IValue::Tensor(Tensor::zeros(d, s).unwrap())
}

#[test]
fn inputs_are_validated_by_name() {
    let p = compile_ok(TYPED, &Weights::new());
    let mut rt = p.runtime();
    let f32 = ir::DType::F32;
    let ok = rt.run(&[zeros(f32, &[3, 4]), zeros(f32, &[3, 4])]);
    assert!(ok.is_ok(), "{ok:?}");
    let e = |r: Result<Vec<IValue>, ExecError>| r.unwrap_err().to_string();
    assert_eq!(e(rt.run(&[zeros(f32, &[3, 4])])), "expected 2 input(s), got 1");
    assert_eq!(
        e(rt.run(&[zeros(ir::DType::I64, &[3, 4]), zeros(f32, &[3, 4])])),
        "input 'x' (#0): expected f32, got i64"
    );
    assert_eq!(
        e(rt.run(&[zeros(f32, &[3, 4]), zeros(f32, &[3, 4, 1])])),
        "input 'y' (#1): expected rank 2, got rank 3 (shape [3, 4, 1])"
    );
    assert_eq!(
        e(rt.run(&[zeros(f32, &[3, 5]), zeros(f32, &[3, 5])])),
        "input 'x' (#0): dimension 1 must be 4, got 5 (shape [3, 5])"
    );
    assert_eq!(
        e(rt.run(&[zeros(f32, &[9, 4]), zeros(f32, &[9, 4])])),
        "input 'x' (#0): dimension 0 (s0) is 9, outside the range [2, 8]"
    );
    assert_eq!(
        e(rt.run(&[zeros(f32, &[3, 4]), zeros(f32, &[2, 4])])),
        "input 'y' (#1): dimension 0 (s0) is 2, but s0 is 3 in input 'x'"
    );
    assert_eq!(e(rt.run(&[IValue::Int(1), zeros(f32, &[2, 4])])), "input 'x' (#0): expected a tensor, got int");
}

#[test]
fn specializations_follow_input_shapes() {
    let p = compile_ok(TYPED, &Weights::new());
    let mut rt = p.runtime();
    let f32 = ir::DType::F32;
    for n in [2, 3, 2, 3] {
        let x = IValue::Tensor(Tensor::full(f32, &[n, 4], runtime::Scalar::Float(1.0)).unwrap());
        let out = rt.run(&[x.clone(), x]).unwrap();
        assert_eq!(out[0].as_tensor().unwrap().sizes(), &[n, 4]);
        assert!(vals(&out[0]).iter().all(|&v| v == 2.0));
    }
    assert_eq!(rt.num_specializations(), 2);

    // With one specialization and the error policy, another shape is refused by name.
    let opts = CompileOptions { max_specializations: 1, on_guard_failure: GuardPolicy::Error, ..CompileOptions::default() };
    let p = try_compile(TYPED, &Weights::new(), opts).unwrap();
    let mut rt = p.runtime();
    rt.run(&[zeros(f32, &[2, 4]), zeros(f32, &[2, 4])]).unwrap();
    let err = rt.run(&[zeros(f32, &[3, 4]), zeros(f32, &[3, 4])]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "input 'x' (#0): f32[3, 4] does not match the specialization f32[2, 4] (at most 1 specialization(s))"
    );
}
