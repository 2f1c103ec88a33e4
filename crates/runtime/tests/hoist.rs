//! Values that depend on no program input are computed once, when the program is compiled:
//! a causal mask built from `arange` by a fusion group is hoisted (through the fusion kernel
//! when the compiler took the group, through its body otherwise) and gives the same outputs
//! call after call and from several threads; random values, values some op writes, and
//! values the program returns are computed on every call.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use ir::{DType, Module, OpId};
use runtime::{
    CompileOptions, CompiledProgram, FusionCompiler, FusionKernel, FusionOutcome, IValue, KernelError, OutputAlloc,
    Tensor, Weights,
};

/// `x` with the entries on and below the diagonal zeroed; the mask comes from a fusion group
/// over two views of one `arange`, none of which reads `x`.
const MASKED: &str = r#"
module {
  func.func @forward(%x: tensor<4x4xf32> {prim.input = "x"}) -> tensor<4x4xf32> {
    %r = aten.arange.start_step {start = 0 : i64, end = 4 : i64, step = 1 : i64, dtype = #prim.none, layout = #prim.none, device = #prim.none, pin_memory = #prim.none} : () -> tensor<4xi64>
    %row = aten.unsqueeze %r {dim = 1 : i64} : (tensor<4xi64>) -> tensor<4x1xi64>
    %col = aten.unsqueeze %r {dim = 0 : i64} : (tensor<4xi64>) -> tensor<1x4xi64>
    %m = "prim.FusionGroup"(%row, %col) ({
    ^bb0(%a: tensor<4x1xi64>, %b: tensor<1x4xi64>):
      %d = aten.sub.Tensor %b, %a : (tensor<1x4xi64>, tensor<4x1xi64>) -> tensor<4x4xi64>
      %z = prim.Constant 0 : i64
      %le = aten.le.Scalar %d, %z : (tensor<4x4xi64>, i64) -> tensor<4x4xi1>
      "prim.Return"(%le) : (tensor<4x4xi1>) -> ()
    }) : (tensor<4x1xi64>, tensor<1x4xi64>) -> tensor<4x4xi1>
    %v = prim.Constant 0.0 : f64
    %o = aten.masked_fill.Scalar %x, %m, %v : (tensor<4x4xf32>, tensor<4x4xi1>, f64) -> tensor<4x4xf32>
    func.return %o : tensor<4x4xf32>
  }
}
"#;

/// Takes every group; its kernel computes `b - a <= 0` with the interpreter's kernels and
/// counts its calls.
#[derive(Debug)]
struct Counting {
    calls: Arc<AtomicUsize>,
}

impl FusionCompiler for Counting {
    fn name(&self) -> &str {
        "counting"
    }

    fn compile_group(&self, _: &Module, _: OpId) -> Result<Arc<dyn FusionKernel>, String> {
        Ok(Arc::new(CountingKernel { calls: self.calls.clone() }))
    }
}

#[derive(Debug)]
struct CountingKernel {
    calls: Arc<AtomicUsize>,
}

impl FusionKernel for CountingKernel {
    fn run(&self, inputs: &[Tensor], alloc: &mut dyn OutputAlloc) -> Result<FusionOutcome, KernelError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let reg = runtime::registry();
        let (a, b) = (IValue::Tensor(inputs[0].clone()), IValue::Tensor(inputs[1].clone()));
        let d = reg.call("aten.sub.Tensor", &[b, a, IValue::Int(1)])?.remove(0);
        let le = reg.call("aten.le.Scalar", &[d, IValue::Int(0)])?.remove(0).into_tensor()?;
        let out = alloc.output(0, DType::Bool, le.sizes())?;
        out.copy_(&le)?;
        Ok(FusionOutcome::Ran(vec![out]))
    }
}

fn x() -> Vec<f32> {
    (1..=16).map(|i| i as f32).collect()
}

/// `x` with `x[i][j] = 0` where `j <= i`.
fn masked_reference(x: &[f32]) -> Vec<f64> {
    (0..16).map(|k| if k % 4 <= k / 4 { 0.0 } else { x[k] as f64 }).collect()
}

fn compile_with(src: &str, fusion: Option<Arc<dyn FusionCompiler>>) -> CompiledProgram {
    try_compile(src, &Weights::new(), CompileOptions { fusion, ..Default::default() }).expect("compile")
}

fn run_once(p: &CompiledProgram, inputs: &[IValue]) -> Vec<IValue> {
    p.runtime().run(inputs).expect("run")
}

#[test]
fn a_mask_from_constants_is_computed_once_through_the_interpreted_group() {
    let p = compile_with(MASKED, None);
    // arange, both unsqueezes and the group; only the masked fill runs per call.
    assert_eq!(p.num_hoisted(), 4);
    assert_eq!(p.num_instructions(), 1);
    let mut rt = p.runtime();
    for call in 0..3 {
        let out = rt.run(&[t(&x(), &[4, 4])]).unwrap();
        assert_eq!(vals(&out[0]), masked_reference(&x()), "call {call}");
    }
}

#[test]
fn a_hoisted_group_runs_its_fusion_kernel_once_at_compile_time() {
    let calls = Arc::new(AtomicUsize::new(0));
    let p = compile_with(MASKED, Some(Arc::new(Counting { calls: calls.clone() })));
    assert!(p.fusion_groups()[0].compiled());
    assert_eq!(calls.load(Ordering::Relaxed), 1, "the kernel computes the hoisted group when the program is compiled");
    assert_eq!(p.num_hoisted(), 4);
    let mut rt = p.runtime();
    for call in 0..3 {
        let out = rt.run(&[t(&x(), &[4, 4])]).unwrap();
        assert_eq!(vals(&out[0]), masked_reference(&x()), "call {call}");
    }
    assert_eq!(calls.load(Ordering::Relaxed), 1, "no call runs the hoisted group again");
}

#[test]
fn threads_share_the_hoisted_constants() {
    let calls = Arc::new(AtomicUsize::new(0));
    let p = Arc::new(compile_with(MASKED, Some(Arc::new(Counting { calls: calls.clone() }))));
    let handles: Vec<_> = (0..4)
        .map(|k| {
            let p = Arc::clone(&p);
            std::thread::spawn(move || {
                let mut rt = p.runtime();
                for call in 0..50 {
                    let xs: Vec<f32> = x().iter().map(|v| v * (k + call) as f32).collect();
                    let out = rt.run(&[t(&xs, &[4, 4])]).unwrap();
                    assert_eq!(vals(&out[0]), masked_reference(&xs), "thread {k}, call {call}");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(calls.load(Ordering::Relaxed), 1);
}

const FULL: &str = "size = [4 : i64], fill_value = 1.0 : f64, dtype = 6 : i64, layout = #prim.none, device = #prim.none, pin_memory = #prim.none";

/// Dropout of a constant draws a new mask on every call; the constant itself is hoisted.
#[test]
fn random_values_are_not_hoisted() {
    let src = r#"
module {
  func.func @forward(%x: tensor<64xf32> {prim.input = "x"}) -> tensor<64xf32> {
    %f = aten.full {size = [64 : i64], fill_value = 1.0 : f64, dtype = 6 : i64, layout = #prim.none, device = #prim.none, pin_memory = #prim.none} : () -> tensor<64xf32>
    %d:2 = aten.native_dropout %f {p = 0.5 : f64, train = true} : (tensor<64xf32>) -> (tensor<64xf32>, tensor<64xi1>)
    %o = aten.add.Tensor %d#0, %x : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    func.return %o : tensor<64xf32>
  }
}
"#;
    let p = compile_with(src, None);
    assert_eq!(p.num_hoisted(), 1);
    assert_eq!(p.num_instructions(), 2);
    let mut rt = p.runtime();
    let xs = t(&[0.0; 64], &[64]);
    let a = vals(&rt.run(std::slice::from_ref(&xs)).unwrap()[0]);
    let b = vals(&rt.run(std::slice::from_ref(&xs)).unwrap()[0]);
    assert!(a.iter().all(|&v| v == 0.0 || v == 2.0), "{a:?}");
    // Two masks of 64 fair draws agree with probability 2^-64.
    assert_ne!(a, b);
}

/// `empty`'s contents are not a value of the program.
#[test]
fn empty_is_not_hoisted() {
    let src = r#"
module {
  func.func @forward(%x: tensor<4xf32> {prim.input = "x"}) -> tensor<4xf32> {
    %e = aten.empty.memory_format {size = [4 : i64], dtype = 6 : i64, layout = #prim.none, device = #prim.none, pin_memory = #prim.none, memory_format = #prim.none} : () -> tensor<4xf32>
    %o = aten.mul.Tensor %e, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    func.return %o : tensor<4xf32>
  }
}
"#;
    let p = compile_with(src, None);
    assert_eq!(p.num_hoisted(), 0);
    assert_eq!(p.num_instructions(), 2);
}

/// A constant written in place through a view is made on every call: each call sees a fresh
/// `full`, so calls do not accumulate into it.
#[test]
fn a_value_written_through_a_view_is_not_hoisted() {
    let src = format!(
        r#"
module {{
  func.func @forward(%x: tensor<2x2xf32> {{prim.input = "x"}}) -> tensor<4xf32> {{
    %f = aten.full {{{FULL}}} : () -> tensor<4xf32>
    %v = aten.view %f {{size = [2 : i64, 2 : i64]}} : (tensor<4xf32>) -> tensor<2x2xf32>
    %w = aten.add_.Tensor %v, %x : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
    %two = prim.Constant 2.0 : f64
    %o = aten.mul.Scalar %f, %two : (tensor<4xf32>, f64) -> tensor<4xf32>
    func.return %o : tensor<4xf32>
  }}
}}
"#
    );
    let p = compile_with(&src, None);
    assert_eq!(p.num_hoisted(), 0);
    let mut rt = p.runtime();
    for call in 0..3 {
        let out = rt.run(&[t(&[1.0, 2.0, 3.0, 4.0], &[2, 2])]).unwrap();
        assert_eq!(vals(&out[0]), [4.0, 6.0, 8.0, 10.0], "call {call}");
    }
}

/// A program output that depends on no input (and a view of one) is made on every call: a
/// caller that writes into a returned tensor does not change the next call's outputs. The
/// constant the other output reads is hoisted.
#[test]
fn returned_values_are_not_shared_across_calls() {
    let src = format!(
        r#"
module {{
  func.func @forward(%x: tensor<4xf32> {{prim.input = "x"}}) -> (tensor<4xf32>, tensor<2x2xf32>, tensor<4xf32>) {{
    %f = aten.full {{{FULL}}} : () -> tensor<4xf32>
    %r = aten.relu %f : (tensor<4xf32>) -> tensor<4xf32>
    %g = aten.full {{{FULL}}} : () -> tensor<4xf32>
    %v = aten.view %g {{size = [2 : i64, 2 : i64]}} : (tensor<4xf32>) -> tensor<2x2xf32>
    %o = aten.add.Tensor %x, %f : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    func.return %r, %v, %o : tensor<4xf32>, tensor<2x2xf32>, tensor<4xf32>
  }}
}}
"#
    );
    let p = compile_with(&src, None);
    // `%f` only: `%r` is returned, `%g` is returned through its view.
    assert_eq!(p.num_hoisted(), 1);
    let mut rt = p.runtime();
    let xs = [t(&[1.0, 2.0, 3.0, 4.0], &[4])];
    for call in 0..3 {
        let out = rt.run(&xs).unwrap();
        assert_eq!(vals(&out[0]), [1.0; 4], "call {call}");
        assert_eq!(vals(&out[1]), [1.0; 4], "call {call}");
        assert_eq!(vals(&out[2]), [2.0, 3.0, 4.0, 5.0], "call {call}");
        for o in &out[..2] {
            let IValue::Tensor(o) = o else { panic!("{o:?}") };
            o.copy_(&Tensor::from_vec(vec![-7f32; 4], o.sizes()).unwrap()).unwrap();
        }
    }
    let other = run_once(&p, &xs);
    assert_eq!(vals(&other[0]), [1.0; 4]);
}
