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
