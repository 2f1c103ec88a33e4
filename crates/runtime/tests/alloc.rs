//! Steady-state allocation count: a counting global allocator around runs of the MLP.
//!
//! After the first run (which sizes the plan) every intermediate lives in the reused slab.
//! What is left per run is fixed by the API, not by the model: the output, which is fresh by
//! design (its buffer, the storage's `Arc` and the tensor's layout). Copying the input handle
//! into its register allocates nothing (a tensor's sizes and strides are one shared `Arc`).
//! The test pins that count and checks that it does not grow with the model.

mod common;


use common::*;
use common::counting::{Counting, count};
use runtime::IValue;

#[global_allocator]
static GLOBAL: Counting = Counting;


/// Allocations per steady-state run of the MLP: 3 for the fresh output (buffer, storage `Arc`,
/// layout). Where the CPU has the prepacked GEMM's instructions, the products (`addmm`, `mm`)
/// multiply with weights packed when the program was compiled, so they pack (and allocate)
/// nothing per call; elsewhere `matrixmultiply` allocates one packing buffer per product.
const STEADY_STATE_ALLOCS: usize = 3;
const PACKING_ALLOCS_WITHOUT_PREPACK: usize = 2;

#[test]
fn steady_state_runs_allocate_only_the_output() {
    let p = compile_ok(MLP, &mlp_weights());
    let mut rt = p.runtime();
    let xs = noise(4 * 8, 11);
    let x = [t(&xs, &[4, 8])];
    let want = mlp_reference(&xs, 4);
    let mut out: Vec<IValue> = Vec::with_capacity(1);
    let (_, first) = count(|| rt.run_into(&x, &mut out).unwrap());
    let (_, second) = count(|| rt.run_into(&x, &mut out).unwrap());
    let mut steady = Vec::new();
    for _ in 0..5 {
        let (_, n) = count(|| rt.run_into(&x, &mut out).unwrap());
        steady.push(n);
    }
    assert_close(&vals(&out[0]), &want);
    println!("allocations: first run {first}, second {second}, steady state {steady:?}");
    assert!(steady.iter().all(|&n| n == steady[0]), "{steady:?}");
    let expected = if p.num_prepacked() > 0 {
        STEADY_STATE_ALLOCS
    } else {
        STEADY_STATE_ALLOCS + PACKING_ALLOCS_WITHOUT_PREPACK
    };
    assert_eq!(steady[0], expected, "steady-state allocations per run");

    // Unplanned, every intermediate allocates.
    let plain = try_compile(MLP, &mlp_weights(), runtime::CompileOptions { memory_plan: false, ..Default::default() }).unwrap();
    let mut rt = plain.runtime();
    rt.run_into(&x, &mut out).unwrap();
    let (_, unplanned) = count(|| rt.run_into(&x, &mut out).unwrap());
    println!("allocations without a memory plan: {unplanned}");
    assert!(unplanned > steady[0] + 5 * 3, "{unplanned}");
}

/// The same without matrix products: no GEMM packing buffers.
const ELEMENTWISE: &str = r#"
module {
  func.func @forward(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %a = aten.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %b = aten.mul.Tensor %a, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %c = aten.sub.Tensor %b, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %d = aten.add.Tensor %c, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %e = aten.relu %d : (tensor<4x8xf32>) -> tensor<4x8xf32>
    func.return %e : tensor<4x8xf32>
  }
}
"#;

#[test]
fn elementwise_steady_state_allocates_input_handle_and_output_only() {
    let p = compile_ok(ELEMENTWISE, &runtime::Weights::new());
    let mut rt = p.runtime();
    let x = [t(&noise(32, 3), &[4, 8])];
    let mut out = Vec::with_capacity(1);
    rt.run_into(&x, &mut out).unwrap();
    rt.run_into(&x, &mut out).unwrap();
    let (_, n) = count(|| rt.run_into(&x, &mut out).unwrap());
    println!("elementwise steady state: {n}");
    // The fresh output: its buffer, the storage's Arc and the layout.
    assert_eq!(n, 3);
}

/// Slices of an intermediate (the pieces of a split gate matrix) and `clone`s of them: a slice
/// is a view whose layout is kept from the previous call, so it allocates nothing.
const SLICES: &str = r#"
module {
  func.func @forward(%x: tensor<4x8xf32>) -> tensor<2x4xf32> {
    %a = aten.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %s0 = aten.slice.Tensor %a {dim = 1 : i64, end = 4 : i64, start = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x4xf32>
    %s1 = aten.slice.Tensor %a {dim = -1 : i64, end = 100 : i64, start = -4 : i64} : (tensor<4x8xf32>) -> tensor<4x4xf32>
    %c0 = aten.clone %s0 : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %c1 = aten.clone %s1 : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %m = aten.mul.Tensor %c0, %c1 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %s2 = aten.slice.Tensor %m {dim = 0 : i64, start = 1 : i64, step = 2 : i64} : (tensor<4x4xf32>) -> tensor<2x4xf32>
    %o = aten.clone %s2 : (tensor<2x4xf32>) -> tensor<2x4xf32>
    func.return %o : tensor<2x4xf32>
  }
}
"#;

#[test]
fn slices_allocate_nothing_in_steady_state() {
    let p = compile_ok(SLICES, &runtime::Weights::new());
    let mut rt = p.runtime();
    let xs = noise(32, 5);
    let x = [t(&xs, &[4, 8])];
    // Rows 1 and 3 of relu(x)[:, :4] * relu(x)[:, 4:].
    let a = |i: usize, j: usize| xs[i * 8 + j].max(0.0);
    let want: Vec<f64> = (0..8).map(|e| f64::from(a(1 + 2 * (e / 4), e % 4) * a(1 + 2 * (e / 4), 4 + e % 4))).collect();
    let mut out = Vec::with_capacity(1);
    rt.run_into(&x, &mut out).unwrap();
    rt.run_into(&x, &mut out).unwrap();
    let (_, n) = count(|| rt.run_into(&x, &mut out).unwrap());
    assert_close(&vals(&out[0]), &want);
    println!("slices steady state: {n}");
    // The fresh output only: its buffer, the storage's Arc and the layout.
    assert_eq!(n, 3);
}
