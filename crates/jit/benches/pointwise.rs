//! The `bench_pointwise` chain at 1024×4096 f32: the JIT kernel on 1 and 2 threads against
//! the runtime's interpreter kernels applied op by op, and the compile time of the kernel.

#[path = "../tests/common/mod.rs"]
mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use jit::{KernelSpec, RunOptions};
use runtime::Tensor;

fn inputs() -> (Tensor, Tensor) {
    let mut r = common::Rng(0);
    let n = 1024 * 4096;
    let x = Tensor::from_vec((0..n).map(|_| r.normal() as f32).collect::<Vec<_>>(), &[1024, 4096]).unwrap();
    let y = Tensor::from_vec((0..n).map(|_| r.normal() as f32).collect::<Vec<_>>(), &[1024, 4096]).unwrap();
    (x, y)
}

fn bench(c: &mut Criterion) {
    let (m, g) = common::parse(common::POINTWISE);
    let (x, y) = inputs();
    let ins = [x, y];
    let k = jit::compile(&m, g, &KernelSpec::of(&ins)).unwrap();
    let mut group = c.benchmark_group("bench_pointwise_1024x4096");
    group.sample_size(20);
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        group.bench_function(format!("jit_{threads}t"), |b| b.iter(|| pool.install(|| k.run(&ins).unwrap())));
    }
    group.bench_function("interpreter_kernels_1t", |b| b.iter(|| common::reference(&m, g, &ins).unwrap()));
    group.finish();

    // Cut-over of the parallel split: one kernel on 2 threads forced inline or forced parallel.
    let mut cut = c.benchmark_group("pointwise_cutover");
    cut.sample_size(30);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    for rows in [4usize, 8, 16, 32] {
        let n = rows * 4096;
        let part: Vec<Tensor> = ins.iter().map(|t| t.narrow(0, 0, rows).unwrap()).collect();
        let kr = jit::compile(&m, g, &KernelSpec::of(&part)).unwrap();
        for (name, opts) in [
            ("inline", RunOptions { parallel_threshold: usize::MAX, ..RunOptions::default() }),
            ("parallel", RunOptions { parallel_threshold: 0, chunk: n / 2 }),
        ] {
            cut.bench_function(format!("{n}_{name}"), |b| b.iter(|| pool.install(|| kr.run_with(&part, opts).unwrap())));
        }
    }
    cut.finish();

    let mut comp = c.benchmark_group("compile");
    comp.sample_size(20);
    comp.bench_function("bench_pointwise_kernel", |b| b.iter(|| jit::compile(&m, g, &KernelSpec::of(&ins)).unwrap()));
    comp.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
