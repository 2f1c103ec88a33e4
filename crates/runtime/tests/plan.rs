//! Memory-planner tests: group assignment, slab reuse, planned and unplanned runs agreeing,
//! re-planning when dynamic shapes outgrow their groups.

mod common;

use common::*;
use runtime::plan::{Interval, assign_groups};
use runtime::{CompileOptions, IValue, Tensor};

fn iv(start: usize, end: usize) -> Interval {
    Interval { start, end }
}

#[test]
fn values_with_disjoint_lifetimes_share_a_group() {
    // A chain: each value is read by the next instruction only.
    let plan = assign_groups(&[iv(0, 1), iv(1, 2), iv(2, 3), iv(3, 4)], &[100, 100, 100, 100]);
    assert_eq!(plan.groups.len(), 2);
    assert_eq!(plan.group_of, vec![Some(0), Some(1), Some(0), Some(1)]);
    assert_eq!(plan.slab_bytes, 256);
    assert_eq!(plan.unshared_bytes, 400);
}

#[test]
fn groups_are_sized_by_their_largest_member_and_aligned() {
    let plan = assign_groups(&[iv(0, 1), iv(2, 3), iv(0, 3)], &[10, 300, 0]);
    // The zero-sized value needs no storage.
    assert_eq!(plan.group_of[2], None);
    assert_eq!(plan.groups.len(), 1);
    assert_eq!(plan.groups[0].size, 300);
    assert_eq!(plan.slab_bytes, 320);
    let plan = assign_groups(&[iv(0, 5), iv(1, 2), iv(3, 4)], &[64, 32, 200]);
    assert_eq!(plan.groups.len(), 2);
    assert!(plan.groups.iter().all(|g| g.offset % 64 == 0));
    // Members of one group never overlap.
    let ints = [iv(0, 5), iv(1, 2), iv(3, 4)];
    for g in &plan.groups {
        for (i, &a) in g.members.iter().enumerate() {
            for &b in &g.members[i + 1..] {
                assert!(!ints[a].overlaps(&ints[b]));
            }
        }
    }
}

#[test]
fn mlp_is_planned_after_the_first_run() {
    let p = compile_ok(MLP, &mlp_weights());
    assert_eq!(p.num_planned_values(), 5);
    let mut rt = p.runtime();
    let xs = noise(4 * 8, 9);
    let x = t(&xs, &[4, 8]);
    let want = mlp_reference(&xs, 4);
    assert!(rt.memory_plan().is_none());
    for _ in 0..3 {
        let out = rt.run(std::slice::from_ref(&x)).unwrap();
        assert_close(&vals(&out[0]), &want);
    }
    let plan = rt.memory_plan().unwrap();
    // h (4x16) and h2, r2 (4x8) share one group; r (4x16) and a (4x8) the other.
    assert_eq!(plan.groups.len(), 2);
    assert_eq!(plan.slab_bytes, 512);
    assert_eq!(plan.unshared_bytes, 2 * 256 + 3 * 128);
    // A second runtime adopts the plan the first one made: planned from its first run.
    let mut rt2 = p.runtime();
    let out = rt2.run(std::slice::from_ref(&x)).unwrap();
    assert!(rt2.memory_plan().is_some());
    assert_close(&vals(&out[0]), &want);
}

#[test]
fn planned_and_unplanned_runs_agree_exactly() {
    let planned = compile_ok(MLP, &mlp_weights());
    let plain = try_compile(MLP, &mlp_weights(), CompileOptions { memory_plan: false, ..CompileOptions::default() }).unwrap();
    assert_eq!(plain.num_planned_values(), 0);
    let (mut a, mut b) = (planned.runtime(), plain.runtime());
    for seed in 0..4 {
        let x = t(&noise(3 * 8, seed), &[3, 8]);
        for _ in 0..2 {
            let ya = a.run(std::slice::from_ref(&x)).unwrap();
            let yb = b.run(std::slice::from_ref(&x)).unwrap();
            assert_eq!(vals(&ya[0]), vals(&yb[0]));
        }
    }
}

#[test]
fn outputs_are_fresh_each_run() {
    let p = compile_ok(MLP, &mlp_weights());
    let mut rt = p.runtime();
    let x1 = t(&noise(16, 5), &[2, 8]);
    let x2 = t(&noise(16, 6), &[2, 8]);
    let first = rt.run(std::slice::from_ref(&x1)).unwrap();
    let keep = vals(&first[0]);
    for _ in 0..3 {
        rt.run(std::slice::from_ref(&x2)).unwrap();
    }
    assert_eq!(vals(&first[0]), keep, "an earlier output was overwritten");
}

#[test]
fn dynamic_shapes_that_outgrow_the_plan_replan() {
    // Without specialization one plan serves every batch size and grows when needed.
    let opts = CompileOptions { specialize: false, ..CompileOptions::default() };
    let p = try_compile(MLP, &mlp_weights(), opts).unwrap();
    let mut rt = p.runtime();
    let mut slabs = Vec::new();
    for rows in [2usize, 2, 6, 6, 3, 6] {
        let xs = noise(rows * 8, rows as u64);
        let out = rt.run(&[IValue::Tensor(Tensor::from_slice(&xs, &[rows, 8]).unwrap())]).unwrap();
        assert_close(&vals(&out[0]), &mlp_reference(&xs, rows));
        slabs.push(rt.memory_plan().map(|p| p.slab_bytes).unwrap_or(0));
    }
    assert_eq!(rt.num_specializations(), 1);
    // Planned for 2 rows, grown for 6 rows, never shrunk.
    assert_eq!(slabs, vec![256, 256, 768, 768, 768, 768]);
}

/// Runs `src` planned and unplanned on the same inputs, several times (the plan is installed
/// after the first run); every output must agree exactly. Returns the planned program.
fn agree_with_unplanned(src: &str, weights: &runtime::Weights, inputs: &[Vec<IValue>]) -> runtime::CompiledProgram {
    let planned = try_compile(src, weights, CompileOptions::default()).unwrap();
    let plain = try_compile(src, weights, CompileOptions { memory_plan: false, ..CompileOptions::default() }).unwrap();
    let (mut a, mut b) = (planned.runtime(), plain.runtime());
    for x in inputs {
        for _ in 0..3 {
            let ya = a.run(x).unwrap();
            let yb = b.run(x).unwrap();
            assert_eq!(ya.len(), yb.len());
            for (k, (u, v)) in ya.iter().zip(&yb).enumerate() {
                assert_eq!(vals(u), vals(v), "output {k}");
            }
        }
    }
    assert!(a.memory_plan().is_some());
    planned
}

/// A planned value read through views after later values of its size were made: its slab
/// region must stay reserved until the last read of a view, not its own last read.
const VIEW_OUTLIVES_BASE: &str = r#"
module {
  func.func @forward(%x: tensor<4x8xf32> {prim.input = "x"}) -> tensor<4x8xf32> {
    %a = aten.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %v = aten.permute %a {dims = [1 : i64, 0 : i64]} : (tensor<4x8xf32>) -> tensor<8x4xf32>
    %b = aten.add.Tensor %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %c = aten.mul.Tensor %b, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %d = aten.sub.Tensor %c, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %w = aten.permute %v {dims = [1 : i64, 0 : i64]} : (tensor<8x4xf32>) -> tensor<4x8xf32>
    %e = aten.add.Tensor %d, %w : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    func.return %e : tensor<4x8xf32>
  }
}
"#;

#[test]
fn views_keep_their_planned_base_alive() {
    let inputs: Vec<Vec<IValue>> = (0..3).map(|s| vec![t(&noise(32, 40 + s), &[4, 8])]).collect();
    let p = agree_with_unplanned(VIEW_OUTLIVES_BASE, &runtime::Weights::new(), &inputs);
    // relu (read through both permutes until the last add), add, mul, sub.
    assert_eq!(p.num_planned_values(), 4);
    assert!(p.planned_lifetimes().contains(&iv(0, 6)), "{:?}", p.planned_lifetimes());
    let mut rt = p.runtime();
    for x in &inputs {
        let xs = vals(&x[0]);
        let want: Vec<f64> = xs.iter().map(|&v| (2.0 * v) * (2.0 * v) - v + v.max(0.0)).collect();
        for _ in 0..2 {
            assert_close(&vals(&rt.run(x).unwrap()[0]), &want);
        }
    }
}

/// The q/k/v pattern: a planned value split into views that are cloned at different times,
/// with values of the same size made in between.
const SPLIT_VIEWS: &str = r#"
module {
  func.func @forward(%x: tensor<4x12xf32> {prim.input = "x"}) -> (tensor<4x4xf32>, tensor<4x12xf32>) {
    %a = aten.relu %x : (tensor<4x12xf32>) -> tensor<4x12xf32>
    %s = aten.split_with_sizes %a {dim = 1 : i64, split_sizes = [4 : i64, 4 : i64, 4 : i64]} : (tensor<4x12xf32>) -> !prim.list<tensor<4x4xf32>>
    %p:3 = prim.ListUnpack %s : (!prim.list<tensor<4x4xf32>>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>)
    %q = aten.clone %p#0 : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %f = aten.add.Tensor %x, %x : (tensor<4x12xf32>, tensor<4x12xf32>) -> tensor<4x12xf32>
    %g = aten.mul.Tensor %f, %f : (tensor<4x12xf32>, tensor<4x12xf32>) -> tensor<4x12xf32>
    %r = aten.clone %p#2 : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %k = aten.permute %p#1 {dims = [1 : i64, 0 : i64]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %kc = aten.clone %k : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %h = aten.mul.Tensor %q, %r : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %o = aten.add.Tensor %h, %kc : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %o2 = aten.relu %g : (tensor<4x12xf32>) -> tensor<4x12xf32>
    func.return %o, %o2 : tensor<4x4xf32>, tensor<4x12xf32>
  }
}
"#;

#[test]
fn values_split_into_views_stay_reserved_until_the_last_view_is_read() {
    let inputs: Vec<Vec<IValue>> = (0..3).map(|s| vec![t(&noise(48, 50 + s), &[4, 12])]).collect();
    let p = agree_with_unplanned(SPLIT_VIEWS, &runtime::Weights::new(), &inputs);
    // relu (through the split, until the clone of the transposed middle part), the three clones, add, mul, and mul.
    assert_eq!(p.num_planned_values(), 7, "{:?}", p.planned_lifetimes());
    assert!(p.planned_lifetimes().contains(&iv(0, 8)), "{:?}", p.planned_lifetimes());
    let mut rt = p.runtime();
    for x in &inputs {
        let xs = vals(&x[0]);
        let a = |i: usize, j: usize| xs[i * 12 + j].max(0.0);
        let mut want = Vec::new();
        for i in 0..4 {
            for j in 0..4 {
                want.push(a(i, j) * a(i, 8 + j) + a(j, 4 + i));
            }
        }
        let want2: Vec<f64> = xs.iter().map(|&v| (2.0 * v) * (2.0 * v)).collect();
        for _ in 0..2 {
            let out = rt.run(x).unwrap();
            assert_close(&vals(&out[0]), &want);
            assert_close(&vals(&out[1]), &want2);
        }
    }
}

/// A view of a planned value that is returned: the value must not be planned (the output
/// would otherwise point into the slab and change on the next run).
const VIEW_RETURNED: &str = r#"
module {
  func.func @forward(%x: tensor<4x8xf32> {prim.input = "x"}) -> (tensor<32xf32>, tensor<4x8xf32>) {
    %a = aten.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %v = aten.view %a {size = [32 : i64]} : (tensor<4x8xf32>) -> tensor<32xf32>
    %b = aten.add.Tensor %a, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %c = aten.mul.Tensor %b, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    func.return %v, %c : tensor<32xf32>, tensor<4x8xf32>
  }
}
"#;

#[test]
fn values_whose_views_are_returned_are_not_planned() {
    let p = compile_ok(VIEW_RETURNED, &runtime::Weights::new());
    // Only `b` (read by `mul` alone) is planned.
    assert_eq!(p.num_planned_values(), 1);
    let mut rt = p.runtime();
    let x1 = t(&noise(32, 61), &[4, 8]);
    let first = rt.run(std::slice::from_ref(&x1)).unwrap();
    let keep = vals(&first[0]);
    assert_eq!(keep, vals(&x1).iter().map(|v| v.max(0.0)).collect::<Vec<_>>());
    for s in 0..3 {
        rt.run(&[t(&noise(32, 62 + s), &[4, 8])]).unwrap();
    }
    assert_eq!(vals(&first[0]), keep, "an earlier output was overwritten");
}

/// Out-variants of the norms and softmax, with statistics read and unread.
const NORMS: &str = r#"
module {
  func.func @forward(%w: tensor<8xf32> {prim.param = "w"}, %b: tensor<8xf32> {prim.param = "b"}, %rm: tensor<8xf32> {prim.param = "rm"}, %rv: tensor<8xf32> {prim.param = "rv"}, %w3: tensor<8x3xf32> {prim.param = "w3"}, %x: tensor<2x8x3xf32> {prim.input = "x"}) -> (tensor<2x8x3xf32>, tensor<2x1x1xf32>, tensor<2x3x8xf32>) {
    %p = aten.permute %x {dims = [0 : i64, 2 : i64, 1 : i64]} : (tensor<2x8x3xf32>) -> tensor<2x3x8xf32>
    %c = aten.clone %p : (tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
    %y:3 = aten.native_layer_norm %c, %w, %b {eps = 1.0e-5 : f64, normalized_shape = [8 : i64]} : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>)
    %s = aten._softmax %y#0 {dim = -1 : i64, half_to_float = false} : (tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
    %n:3 = aten.native_layer_norm %x, %w3, %w3 {eps = 1.0e-3 : f64, normalized_shape = [8 : i64, 3 : i64]} : (tensor<2x8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>) -> (tensor<2x8x3xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
    %z:3 = aten._native_batch_norm_legit_no_training %x, %w, %b, %rm, %rv {momentum = 0.1 : f64, eps = 1.0e-5 : f64} : (tensor<2x8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x8x3xf32>, tensor<0xf32>, tensor<0xf32>)
    %r = aten.relu %z#0 : (tensor<2x8x3xf32>) -> tensor<2x8x3xf32>
    %o = aten.add.Tensor %r, %n#0 : (tensor<2x8x3xf32>, tensor<2x8x3xf32>) -> tensor<2x8x3xf32>
    %m = aten.view %y#1 {size = [2 : i64, 3 : i64, 1 : i64]} : (tensor<2x3x1xf32>) -> tensor<2x3x1xf32>
    %mm = aten.add.Tensor %m, %m : (tensor<2x3x1xf32>, tensor<2x3x1xf32>) -> tensor<2x3x1xf32>
    %sm = aten.add.Tensor %s, %mm : (tensor<2x3x8xf32>, tensor<2x3x1xf32>) -> tensor<2x3x8xf32>
    func.return %o, %n#2, %sm : tensor<2x8x3xf32>, tensor<2x1x1xf32>, tensor<2x3x8xf32>
  }
}
"#;

#[test]
fn norm_and_softmax_out_variants_match_their_kernels() {
    let mut w = runtime::Weights::new();
    w.insert("w", Tensor::from_slice(&noise(8, 71), &[8]).unwrap());
    w.insert("b", Tensor::from_slice(&noise(8, 72), &[8]).unwrap());
    w.insert("rm", Tensor::from_slice(&noise(8, 73), &[8]).unwrap());
    let rv: Vec<f32> = noise(8, 74).iter().map(|v| v.abs() + 0.5).collect();
    w.insert("rv", Tensor::from_slice(&rv, &[8]).unwrap());
    w.insert("w3", Tensor::from_slice(&noise(24, 75), &[8, 3]).unwrap());
    let inputs: Vec<Vec<IValue>> = (0..3).map(|s| vec![t(&noise(48, 80 + s), &[2, 8, 3])]).collect();
    let p = agree_with_unplanned(NORMS, &w, &inputs);
    // clone, both layer norms' results, softmax, batch norm, relu and the statistics' sum.
    assert_eq!(p.num_planned_values(), 7, "{:?}", p.planned_lifetimes());
}

/// The -O2 LSTM cell's shape: a product's pieces (slices) read by a fusion group whose results
/// are the program's outputs. The group's results are computed in it (fresh storage), so the
/// sliced value does not escape through them and is planned. `RETURNS_ARG` is the same with a
/// group that returns one of its arguments (a view of the value): that value escapes and
/// stays unplanned.
const GROUP_OVER_SLICES: &str = r#"
module {
  func.func @forward(%x: tensor<4x8xf32> {prim.input = "x"}) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
    %a = aten.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %s0 = aten.slice.Tensor %a {dim = 1 : i64, end = 4 : i64, start = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x4xf32>
    %s1 = aten.slice.Tensor %a {dim = 1 : i64, end = 8 : i64, start = 4 : i64} : (tensor<4x8xf32>) -> tensor<4x4xf32>
    %g:2 = "prim.FusionGroup"(%s0, %s1) ({
    ^bb0(%p: tensor<4x4xf32>, %q: tensor<4x4xf32>):
      %m = aten.mul.Tensor %p, %q : tensor<4x4xf32>
      %n = aten.add.Tensor %m, %p : tensor<4x4xf32>
      "prim.Return"(%n, %m) : (tensor<4x4xf32>, tensor<4x4xf32>) -> ()
    }) : (tensor<4x4xf32>, tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>)
    func.return %g#0, %g#1 : tensor<4x4xf32>, tensor<4x4xf32>
  }
}
"#;

#[test]
fn values_read_by_a_fusion_group_through_slices_are_planned() {
    let inputs: Vec<Vec<IValue>> = (0..3).map(|s| vec![t(&noise(32, 60 + s), &[4, 8])]).collect();
    let p = agree_with_unplanned(GROUP_OVER_SLICES, &runtime::Weights::new(), &inputs);
    // relu, its lifetime ending at the group.
    assert_eq!(p.num_planned_values(), 1, "{:?}", p.planned_lifetimes());
    let mut rt = p.runtime();
    for x in &inputs {
        let xs = vals(&x[0]);
        let a = |i: usize, j: usize| xs[i * 8 + j].max(0.0);
        let m: Vec<f64> = (0..16).map(|e| a(e / 4, e % 4) * a(e / 4, 4 + e % 4)).collect();
        let n: Vec<f64> = (0..16).map(|e| m[e] + a(e / 4, e % 4)).collect();
        for _ in 0..2 {
            let out = rt.run(x).unwrap();
            assert_close(&vals(&out[0]), &n);
            assert_close(&vals(&out[1]), &m);
        }
    }
    let returns_arg = GROUP_OVER_SLICES.replace(r#""prim.Return"(%n, %m)"#, r#""prim.Return"(%n, %q)"#);
    let p = try_compile(&returns_arg, &runtime::Weights::new(), CompileOptions::default()).unwrap();
    assert_eq!(p.num_planned_values(), 0, "{:?}", p.planned_lifetimes());
    let mut rt = p.runtime();
    for x in &inputs {
        let xs = vals(&x[0]);
        let q: Vec<f64> = (0..16).map(|e| xs[e / 4 * 8 + 4 + e % 4].max(0.0)).collect();
        for _ in 0..2 {
            assert_close(&vals(&rt.run(x).unwrap()[1]), &q);
        }
    }
}
