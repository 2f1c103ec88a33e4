//! Interpreter tests: IR text programs (prim + aten) compiled and run (linearization, control flow, containers, errors).

mod common;

use common::*;
use runtime::{CompileOptions, ExecError, IValue, Tensor, Weights};

fn run1(src: &str, inputs: &[IValue]) -> Vec<IValue> {
    let p = compile_ok(src, &Weights::new());
    let mut rt = p.runtime();
    rt.run(inputs).unwrap_or_else(|e| panic!("run failed: {e}"))
}

#[test]
fn arithmetic_chain() {
    let src = r#"
module {
  func.func @forward(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %a = aten.add.Tensor %x, %y {alpha = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %b = aten.mul.Tensor %a, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %c = aten.sub.Tensor %b, %y : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %d = aten.relu %c : (tensor<2x3xf32>) -> tensor<2x3xf32>
    func.return %d : tensor<2x3xf32>
  }
}
"#;
    let x = [1.0f32, -2.0, 3.0, 0.5, -1.0, 2.0];
    let y = [0.5f32, 1.0, -1.0, 2.0, 3.0, -0.5];
    let out = run1(src, &[t(&x, &[2, 3]), t(&y, &[2, 3])]);
    let want: Vec<f64> = x
        .iter()
        .zip(&y)
        .map(|(&x, &y)| (((x + 2.0 * y) * x - y) as f64).max(0.0))
        .collect();
    assert_close(&vals(&out[0]), &want);
}

#[test]
fn constants_and_repeated_operands() {
    let src = r#"
module {
  func.func @forward(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
    %k = prim.Constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
    %a = aten.mul.Tensor %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %b = aten.add.Tensor %a, %k : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    func.return %b, %a : tensor<3xf32>, tensor<3xf32>
  }
}
"#;
    let out = run1(src, &[t(&[1.0, 2.0, 3.0], &[3])]);
    assert_close(&vals(&out[0]), &[2.0, 6.0, 12.0]);
    assert_close(&vals(&out[1]), &[1.0, 4.0, 9.0]);
}

const IF_SRC: &str = r#"
module {
  func.func @forward(%x: tensor<2xf32>, %c: i1) -> tensor<2xf32> {
    %y = aten.add.Tensor %x, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %r = prim.If %c -> (tensor<2xf32>) {
      %z = aten.mul.Tensor %y, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      prim.Yield %z : tensor<2xf32>
    } else {
      prim.Yield %x : tensor<2xf32>
    }
    func.return %r : tensor<2xf32>
  }
}
"#;

#[test]
fn if_takes_either_branch() {
    let p = compile_ok(IF_SRC, &Weights::new());
    let mut rt = p.runtime();
    let out = rt.run(&[t(&[1.0, 3.0], &[2]), IValue::Bool(true)]).unwrap();
    assert_close(&vals(&out[0]), &[2.0, 18.0]);
    let out = rt.run(&[t(&[1.0, 3.0], &[2]), IValue::Bool(false)]).unwrap();
    assert_close(&vals(&out[0]), &[1.0, 3.0]);
}

/// `for i in range(n): if not cond: break; x = x * 2 + i` with TorchScript's loop form.
const LOOP_SRC: &str = r#"
module {
  func.func @forward(%x: tensor<2xf32>, %n: i64, %limit: i64) -> (tensor<2xf32>, i64) {
    %true = prim.Constant true : i1
    %zero = prim.Constant 0 : i64
    %r:2 = "prim.Loop"(%n, %true, %x, %zero) ({
    ^bb0(%i: i64, %acc: tensor<2xf32>, %count: i64):
      %two = prim.Constant 2 : i64
      %d = aten.mul.Scalar %acc, %two : (tensor<2xf32>, i64) -> tensor<2xf32>
      %e = aten.add.Scalar %d, %i : (tensor<2xf32>, i64) -> tensor<2xf32>
      %one = prim.Constant 1 : i64
      %c2 = prim.add %count, %one : (i64, i64) -> i64
      %go = prim.lt %c2, %limit : (i64, i64) -> i1
      prim.Yield %go, %e, %c2 : i1, tensor<2xf32>, i64
    }) : (i64, i1, tensor<2xf32>, i64) -> (tensor<2xf32>, i64)
    func.return %r#0, %r#1 : tensor<2xf32>, i64
  }
}
"#;

#[test]
fn loop_stops_at_trip_count_or_condition() {
    let p = compile_ok(LOOP_SRC, &Weights::new());
    let mut rt = p.runtime();
    // Trip count 3 reached first: x -> 2x+0 -> 4x+1 -> 8x+4.
    let out = rt.run(&[t(&[1.0, 2.0], &[2]), IValue::Int(3), IValue::Int(100)]).unwrap();
    assert_close(&vals(&out[0]), &[12.0, 20.0]);
    assert!(matches!(out[1], IValue::Int(3)));
    // Condition false after two iterations.
    let out = rt.run(&[t(&[1.0, 2.0], &[2]), IValue::Int(10), IValue::Int(2)]).unwrap();
    assert_close(&vals(&out[0]), &[5.0, 9.0]);
    assert!(matches!(out[1], IValue::Int(2)));
    // Zero trips: the initial values.
    let out = rt.run(&[t(&[1.0, 2.0], &[2]), IValue::Int(0), IValue::Int(5)]).unwrap();
    assert_close(&vals(&out[0]), &[1.0, 2.0]);
    assert!(matches!(out[1], IValue::Int(0)));
}

#[test]
fn tuples_and_lists() {
    let src = r#"
module {
  func.func @forward(%x: tensor<2x2xf32>, %y: tensor<2x2xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>, i64) {
    %l = prim.ListConstruct %x, %y : (tensor<2x2xf32>, tensor<2x2xf32>) -> !prim.list<tensor<2x2xf32>>
    %cat = aten.cat %l : (!prim.list<tensor<2x2xf32>>) -> tensor<4x2xf32>
    %tup = prim.TupleConstruct %x, %y : (tensor<2x2xf32>, tensor<2x2xf32>) -> tuple<tensor<2x2xf32>, tensor<2x2xf32>>
    %a, %b = prim.TupleUnpack %tup : (tuple<tensor<2x2xf32>, tensor<2x2xf32>>) -> (tensor<2x2xf32>, tensor<2x2xf32>)
    %s = aten.sub.Tensor %b, %a : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
    %three = prim.Constant 3 : i64
    %four = prim.Constant 4 : i64
    %il = prim.ListConstruct %three, %four : (i64, i64) -> !prim.list<i64>
    %p, %q = prim.ListUnpack %il : (!prim.list<i64>) -> (i64, i64)
    %m = prim.mul %p, %q : (i64, i64) -> i64
    func.return %cat, %s, %m : tensor<4x2xf32>, tensor<2x2xf32>, i64
  }
}
"#;
    let p = compile_ok(src, &Weights::new());
    let mut rt = p.runtime();
    let x = t(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let y = t(&[10.0, 20.0, 30.0, 40.0], &[2, 2]);
    match rt.run(&[x.clone(), y.clone()]) {
        Ok(out) => {
            assert_close(&vals(&out[0]), &[1.0, 2.0, 3.0, 4.0, 10.0, 20.0, 30.0, 40.0]);
            assert_close(&vals(&out[1]), &[9.0, 18.0, 27.0, 36.0]);
            assert!(matches!(out[2], IValue::Int(12)));
        }
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn in_place_ops_write_through_views() {
    // x.select(0, 1).add_(1): the write lands in the base tensor.
    let src = r#"
module {
  func.func @forward(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>) {
    %c = aten.clone %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %row = aten.select.int %c {dim = 0 : i64, index = 1 : i64} : (tensor<2x3xf32>) -> tensor<3xf32>
    %one = prim.Constant 1.0 : f64
    %w = aten.add_.Scalar %row, %one : (tensor<3xf32>, f64) -> tensor<3xf32>
    func.return %c, %w : tensor<2x3xf32>, tensor<3xf32>
  }
}
"#;
    let x = t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let out = run1(src, &[x.clone()]);
    assert_close(&vals(&out[0]), &[1.0, 2.0, 3.0, 5.0, 6.0, 7.0]);
    assert_close(&vals(&out[1]), &[5.0, 6.0, 7.0]);
    // The input itself is untouched (the clone was written).
    assert_close(&vals(&x), &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
}

#[test]
fn fusion_group_runs_its_body() {
    let src = r#"
module {
  func.func @forward(%x: tensor<2xf32>, %y: tensor<2xf32>) -> tensor<2xf32> {
    %r = "prim.FusionGroup"(%x, %y) ({
    ^bb0(%a: tensor<2xf32>, %b: tensor<2xf32>):
      %s = aten.add.Tensor %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      %m = aten.mul.Tensor %s, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      prim.Return %m : tensor<2xf32>
    }) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    func.return %r : tensor<2xf32>
  }
}
"#;
    let out = run1(src, &[t(&[1.0, 2.0], &[2]), t(&[3.0, 4.0], &[2])]);
    assert_close(&vals(&out[0]), &[4.0, 12.0]);
}

#[test]
fn missing_kernel_is_a_compile_error_with_location() {
    let src = r#"
module {
  func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {
    %y = aten.relu %x : (tensor<2xf32>) -> tensor<2xf32> loc("model.py":11:2)
    %z = aten.tanh %y : (tensor<2xf32>) -> tensor<2xf32> loc("model.py":12:4)
    func.return %z : tensor<2xf32>
  }
}
"#;
    // A registry with only `relu`: `tanh` has no kernel.
    let mut reg = runtime::KernelRegistry::new();
    reg.register("aten.relu", runtime::registry().get("aten.relu").unwrap());
    let (c, m) = parse(src);
    let err = runtime::compile_with_registry(&m, &c, &Weights::new(), CompileOptions::default(), &reg).unwrap_err();
    assert_eq!(err.to_string(), "`aten.tanh` at model.py:12:4: no kernel and no decomposition");
    assert_eq!(err.missing_kernels().len(), 1);
}

#[test]
fn kernel_errors_name_the_op_and_location() {
    let src = r#"
module {
  func.func @forward(%x: tensor<2x3xf32>, %y: tensor<4x5xf32>) -> tensor<2x5xf32> {
    %z = aten.mm %x, %y : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32> loc("model.py":7:8)
    func.return %z : tensor<2x5xf32>
  }
}
"#;
    let p = compile_ok(src, &Weights::new());
    let mut rt = p.runtime();
    let x = IValue::Tensor(Tensor::zeros(ir::DType::F32, &[2, 3]).unwrap());
    let y = IValue::Tensor(Tensor::zeros(ir::DType::F32, &[4, 5]).unwrap());
    let err = rt.run(&[x, y]).unwrap_err();
    assert!(matches!(&err, ExecError::Kernel { op, loc, .. } if op == "aten.mm" && loc == "model.py:7:8"), "{err}");
}

#[test]
fn raise_exception_is_an_error() {
    let src = r#"
module {
  func.func @forward(%c: i1) -> i64 {
    %r = prim.If %c -> (i64) {
      %msg = prim.Constant "boom" : !prim.str
      "prim.RaiseException"(%msg) : (!prim.str) -> ()
      %u = prim.Uninitialized : i64
      prim.Yield %u : i64
    } else {
      %one = prim.Constant 1 : i64
      prim.Yield %one : i64
    }
    func.return %r : i64
  }
}
"#;
    let p = compile_ok(src, &Weights::new());
    let mut rt = p.runtime();
    assert!(matches!(rt.run(&[IValue::Bool(false)]).unwrap()[0], IValue::Int(1)));
    let err = rt.run(&[IValue::Bool(true)]).unwrap_err();
    assert!(matches!(&err, ExecError::Raised { message, .. } if message == "boom"), "{err}");
}

#[test]
fn symint_arithmetic_follows_python() {
    let src = r#"
module {
  func.func @forward(%a: i64, %b: i64) -> (i64, i64, i1) {
    %q = prim.floordiv %a, %b : (i64, i64) -> i64
    %r = prim.mod %a, %b : (i64, i64) -> i64
    %c = prim.ge %a, %b : (i64, i64) -> i1
    func.return %q, %r, %c : i64, i64, i1
  }
}
"#;
    let out = run1(src, &[IValue::Int(-7), IValue::Int(2)]);
    assert!(matches!(out[0], IValue::Int(-4)));
    assert!(matches!(out[1], IValue::Int(1)));
    assert!(matches!(out[2], IValue::Bool(false)));
    let p = compile_ok(src, &Weights::new());
    let err = p.runtime().run(&[IValue::Int(1), IValue::Int(0)]).unwrap_err();
    assert!(err.to_string().contains("division by zero"), "{err}");
}

/// Profiling times each top-level op of every call: an `If` as one op with its branch, the
/// results as last seen, nothing before profiling starts, and nothing once it stops.
#[test]
fn profiling_times_each_top_level_op_of_every_call() {
    let p = compile_ok(IF_SRC, &Weights::new());
    let mut rt = p.runtime();
    let x = t(&[1.0, 3.0], &[2]);
    rt.run(&[x.clone(), IValue::Bool(true)]).unwrap();
    assert!(rt.profile().is_empty(), "profiling is off by default");
    rt.set_profiling(true);
    for _ in 0..3 {
        let out = rt.run(&[x.clone(), IValue::Bool(true)]).unwrap();
        assert_close(&vals(&out[0]), &[2.0, 18.0]);
    }
    let ops = rt.profile();
    let names: Vec<&str> = ops.iter().map(|o| o.op.as_str()).collect();
    assert_eq!(names, ["aten.add.Tensor", "prim.If"]);
    assert!(ops.iter().all(|o| o.calls == 3), "{ops:?}");
    assert!(ops.iter().all(|o| !o.total.is_zero()), "{ops:?}");
    assert_eq!(ops[0].result, "f32[2]");
    assert_eq!(ops[1].result, "f32[2]");
    assert_eq!(ops.iter().map(|o| o.index).collect::<Vec<_>>(), [0, 1]);
    // Turning it on again starts over; off, the runtime keeps nothing.
    rt.set_profiling(true);
    assert!(rt.profile().iter().all(|o| o.calls == 0 && o.total.is_zero()));
    rt.set_profiling(false);
    rt.run(&[x, IValue::Bool(false)]).unwrap();
    assert!(rt.profile().is_empty());
}
