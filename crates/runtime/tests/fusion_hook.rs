//! The fusion-compiler hook, with a stand-in compiler: groups are offered at compile time and
//! the decisions recorded; a taken group's instruction calls the kernel (whose outputs are
//! used), a declined group or call runs the region; a single result read only by
//! out-variants gets the memory plan's storage from the second run on.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::*;
use ir::{DType, Module, OpId};
use runtime::{
    CompileOptions, FusionCompiler, FusionKernel, FusionOutcome, IValue, KernelError, OutputAlloc, Tensor, Weights,
};

/// `%r = (x + y) * x` as a fusion group, its result read by an out-variant `mul`.
const PROGRAM: &str = r#"
module {
  func.func @forward(%x: tensor<4xf32> {prim.input = "x"}, %y: tensor<4xf32> {prim.input = "y"}) -> tensor<4xf32> {
    %g = "prim.FusionGroup"(%x, %y) ({
    ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
      %s = aten.add.Tensor %a, %b : tensor<4xf32>
      %m = aten.mul.Tensor %s, %a : tensor<4xf32>
      "prim.Return"(%m) : (tensor<4xf32>) -> ()
    }) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %o = aten.mul.Tensor %g, %y : tensor<4xf32>
    func.return %o : tensor<4xf32>
  }
}
"#;

/// What the stand-in kernel does with a call.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Behaviour {
    /// Computes the group (through the interpreter's kernels) into the storage it is given.
    Run,
    /// Declines every call.
    Decline,
    /// Writes a marker value, so a test can tell its output from the interpreter's.
    Mark(f32),
}

#[derive(Debug)]
struct StandIn {
    behaviour: Behaviour,
    take: bool,
    calls: Arc<AtomicUsize>,
    regions: Arc<AtomicUsize>,
}

impl FusionCompiler for StandIn {
    fn name(&self) -> &str {
        "stand-in"
    }

    fn compile_group(&self, m: &Module, group: OpId) -> Result<Arc<dyn FusionKernel>, String> {
        if !self.take {
            return Err(format!("declined a group of {} operands", m.operands(group).len()));
        }
        Ok(Arc::new(StandInKernel { behaviour: self.behaviour, calls: self.calls.clone(), regions: self.regions.clone() }))
    }
}

#[derive(Debug)]
struct StandInKernel {
    behaviour: Behaviour,
    calls: Arc<AtomicUsize>,
    regions: Arc<AtomicUsize>,
}

impl FusionKernel for StandInKernel {
    fn run(&self, inputs: &[Tensor], alloc: &mut dyn OutputAlloc) -> Result<FusionOutcome, KernelError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let value = match self.behaviour {
            Behaviour::Decline => return Ok(FusionOutcome::Declined("not these inputs".into())),
            Behaviour::Mark(v) => Tensor::from_vec(vec![v; inputs[0].numel()], inputs[0].sizes())?,
            Behaviour::Run => {
                let reg = runtime::registry();
                let (a, b) = (IValue::Tensor(inputs[0].clone()), IValue::Tensor(inputs[1].clone()));
                let s = reg.call("aten.add.Tensor", &[a.clone(), b, IValue::Int(1)])?.remove(0);
                reg.call("aten.mul.Tensor", &[s, a])?.remove(0).into_tensor()?
            }
        };
        let out = alloc.output(0, DType::F32, value.sizes())?;
        if out.storage().is_region() {
            self.regions.fetch_add(1, Ordering::Relaxed);
        }
        out.copy_(&value)?;
        Ok(FusionOutcome::Ran(vec![out]))
    }
}

fn program(behaviour: Behaviour, take: bool) -> (runtime::CompiledProgram, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let regions = Arc::new(AtomicUsize::new(0));
    let fusion = StandIn { behaviour, take, calls: calls.clone(), regions: regions.clone() };
    let opts = CompileOptions { fusion: Some(Arc::new(fusion)), ..Default::default() };
    let p = try_compile(PROGRAM, &Weights::new(), opts).expect("compile");
    (p, calls, regions)
}

fn inputs() -> Vec<IValue> {
    vec![t(&[1.0, 2.0, -1.0, 0.5], &[4]), t(&[3.0, -2.0, 4.0, 2.0], &[4])]
}

/// ((x + y) * x) * y.
const WANT: [f64; 4] = [12.0, -0.0, -12.0, 2.5];

#[test]
fn a_taken_group_runs_its_kernel_and_the_result_is_planned_from_the_second_run() {
    let (p, calls, regions) = program(Behaviour::Run, true);
    assert_eq!(p.fusion_groups().len(), 1);
    assert!(p.fusion_groups()[0].compiled());
    assert_eq!(p.fusion_groups()[0].ops, 2);
    let mut rt = p.runtime();
    for run in 1..=3 {
        let out = rt.run(&inputs()).unwrap();
        assert_eq!(vals(&out[0]), WANT, "run {run}");
    }
    assert_eq!(calls.load(Ordering::Relaxed), 3);
    // The first run observes the size; the later ones write into the slab.
    assert_eq!(regions.load(Ordering::Relaxed), 2);
}

#[test]
fn the_kernel_output_is_what_the_program_uses() {
    let (p, _, _) = program(Behaviour::Mark(2.0), true);
    let out = p.runtime().run(&inputs()).unwrap();
    // 2 * y, not ((x + y) * x) * y: the instruction used the kernel's result.
    assert_eq!(vals(&out[0]), [6.0, -4.0, 8.0, 4.0]);
}

#[test]
fn a_declined_call_and_a_declined_group_run_the_region() {
    let (p, calls, _) = program(Behaviour::Decline, true);
    assert!(p.fusion_groups()[0].compiled());
    let out = p.runtime().run(&inputs()).unwrap();
    assert_eq!(vals(&out[0]), WANT);
    assert_eq!(calls.load(Ordering::Relaxed), 1);

    let (p, calls, _) = program(Behaviour::Run, false);
    let d = &p.fusion_groups()[0];
    assert!(!d.compiled());
    assert_eq!(d.declined.as_deref(), Some("declined a group of 2 operands"));
    let out = p.runtime().run(&inputs()).unwrap();
    assert_eq!(vals(&out[0]), WANT);
    assert_eq!(calls.load(Ordering::Relaxed), 0);
}

#[test]
fn without_a_fusion_compiler_nothing_is_recorded() {
    let p = compile_ok(PROGRAM, &Weights::new());
    assert!(p.fusion_groups().is_empty());
    assert_eq!(vals(&p.runtime().run(&inputs()).unwrap()[0]), WANT);
}

/// `(x + y) * x` as a fusion group whose result is the program's output.
const RETURNED: &str = r#"
module {
  func.func @forward(%x: tensor<4xf32> {prim.input = "x"}, %y: tensor<4xf32> {prim.input = "y"}) -> tensor<4xf32> {
    %g = "prim.FusionGroup"(%x, %y) ({
    ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
      %s = aten.add.Tensor %a, %b : tensor<4xf32>
      %m = aten.mul.Tensor %s, %a : tensor<4xf32>
      "prim.Return"(%m) : (tensor<4xf32>) -> ()
    }) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    func.return %g : tensor<4xf32>
  }
}
"#;

/// A kernel's fresh output is written again by the next call once the caller has dropped it
/// (`run_into` clears the previous outputs first), and never while the caller still holds it.
#[test]
fn fresh_kernel_outputs_are_reused_only_when_nothing_else_holds_them() {
    let calls = Arc::new(AtomicUsize::new(0));
    let fusion = StandIn { behaviour: Behaviour::Run, take: true, calls: calls.clone(), regions: Arc::new(AtomicUsize::new(0)) };
    let opts = CompileOptions { fusion: Some(Arc::new(fusion)), ..Default::default() };
    let p = try_compile(RETURNED, &Weights::new(), opts).expect("compile");
    let mut rt = p.runtime();
    let want = [4.0, 0.0, -3.0, 1.25];
    let mut out = Vec::new();
    rt.run_into(&inputs(), &mut out).unwrap();
    let first = out[0].as_tensor().unwrap().storage().as_ptr();
    for run in 2..=3 {
        rt.run_into(&inputs(), &mut out).unwrap();
        assert_eq!(vals(&out[0]), want, "run {run}");
        assert_eq!(out[0].as_tensor().unwrap().storage().as_ptr(), first, "run {run} reuses the dropped output");
    }
    // Held by the caller: the next call writes elsewhere and the held values stay.
    let held = rt.run(&inputs()).unwrap();
    let other = [t(&[2.0, 2.0, 2.0, 2.0], &[4]), t(&[1.0, 1.0, 1.0, 1.0], &[4])];
    let next = rt.run(&other).unwrap();
    assert_ne!(next[0].as_tensor().unwrap().storage().as_ptr(), held[0].as_tensor().unwrap().storage().as_ptr());
    assert_eq!(vals(&next[0]), [6.0; 4]);
    assert_eq!(vals(&held[0]), want);
    // A view of an output keeps it from being reused too.
    let view = next[0].as_tensor().unwrap().slice(0, Some(1), None, 1).unwrap();
    drop(next);
    let again = rt.run(&inputs()).unwrap();
    assert_ne!(again[0].as_tensor().unwrap().storage().as_ptr(), view.storage().as_ptr());
    assert_eq!(vals(&IValue::Tensor(view)), [6.0; 3]);
    assert_eq!(vals(&again[0]), want);
    assert_eq!(calls.load(Ordering::Relaxed), 6);
}
