//! Benchmarks of `egraph-peephole` (conversion, saturation, extraction and write-back): the
//! `bench_transformer` export of `../shared/fixtures` (skipped with a message when absent), a
//! synthetic elementwise graph of 1,500 e-nodes, and synthetic graphs of 1k to 10k ops for the
//! growth (with a per-phase table: the fastest of a few runs of each size, and its growth over
//! the 1k graph); and of `fuse-elementwise` over the same graphs.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use egraph::{FuseElementwise, Peephole, RuleLibrary};
use ir::{Context, Module};
use std::fmt::Write;

/// Ops of the synthetic graph whose initial e-graph has 1,500 e-nodes.
const SYNTHETIC_1500: usize = 1_497;

fn ctx() -> Context {
    let mut c = Context::new();
    dialect_prim::register(&mut c);
    dialect_aten::register(&mut c);
    c
}

/// A function of about `n` elementwise ops over two inputs: layers of mixed unary and binary
/// ops, with constants and rewritable patterns (x*1, neg(neg x), x/2) sprinkled in.
pub fn synthetic(n: usize) -> String {
    let mut s = String::from("func.func @f(%x: tensor<64x64xf32>, %y: tensor<64x64xf32>) -> tensor<64x64xf32> {\n");
    s.push_str("  %one = prim.Constant dense<1.0> : tensor<f32>\n  %two = prim.Constant dense<2.0> : tensor<f32>\n");
    let t = "tensor<64x64xf32>";
    let mut vals = vec!["%x".to_string(), "%y".to_string()];
    for i in 0..n {
        let a = vals[vals.len() - 1].clone();
        let b = vals[(i * 7 + 3) % vals.len()].clone();
        let v = format!("%v{i}");
        let line = match i % 8 {
            0 => format!("  {v} = aten.add.Tensor {a}, {b} : {t}\n"),
            1 => format!("  {v} = aten.mul.Tensor {a}, %one : ({t}, tensor<f32>) -> {t}\n"),
            2 => format!("  {v} = aten.neg {a} : {t}\n"),
            3 => format!("  {v} = aten.neg {a} : {t}\n"),
            4 => format!("  {v} = aten.mul.Tensor {a}, {b} : {t}\n"),
            5 => format!("  {v} = aten.div.Tensor {a}, %two : ({t}, tensor<f32>) -> {t}\n"),
            6 => format!("  {v} = aten.tanh {a} : {t}\n"),
            _ => format!("  {v} = aten.sub.Tensor {a}, {b} : {t}\n"),
        };
        s.push_str(&line);
        vals.push(v);
    }
    let _ = writeln!(s, "  func.return {} : {t}\n}}", vals[vals.len() - 1]);
    s
}

/// Times the pass on fresh copies of `m0`.
fn run_peephole(b: &mut criterion::Bencher, ctx: &Context, pass: &Peephole, m0: &Module) {
    b.iter_batched(
        || m0.clone(),
        |mut m| {
            let top = m.top();
            pass.rewrite(ctx, &mut m, top, None).map(|r| r.len()).unwrap_or(0)
        },
        criterion::BatchSize::LargeInput,
    )
}

fn bench(c: &mut Criterion) {
    let ctx = ctx();
    let lib = RuleLibrary::standard().expect("rules");
    let pass = Peephole::with_options(&lib, &Peephole::options()).expect("pass");
    let mut group = c.benchmark_group("egraph-peephole");
    group.sample_size(10);
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/bench/bench_transformer/model.pt2");
    if fixture.is_file() {
        match import::import_file(&ctx, &fixture, None) {
            Ok(p) => {
                let m0 = p.module;
                group.bench_function("bench_transformer", |b| run_peephole(b, &ctx, &pass, &m0));
            }
            Err(e) => println!("bench_transformer: import failed: {e}"),
        }
    } else {
        println!("skipped bench_transformer: {} is absent", fixture.display());
    }
    // The synthetic graph whose e-graph starts with 1,500 e-nodes (ops, two leaves, two constants).
    let text = synthetic(SYNTHETIC_1500);
    if let Ok(m0) = ir::parse_module(&ctx, &text, "bench.ir") {
        let mut m = m0.clone();
        let top = m.top();
        if let Ok(r) = pass.rewrite(&ctx, &mut m, top, None) {
            let r = &r[0];
            println!("synthetic-1500: {} -> {} e-nodes, {} iterations, {}", r.initial_nodes, r.nodes, r.iterations, r.stop);
        }
        group.bench_function("synthetic-1500-enodes", |b| run_peephole(b, &ctx, &pass, &m0));
    }
    // Growth with the size of the graph: near-linear under the default limits.
    let mut graphs = Vec::new();
    for n in SIZES {
        let text = synthetic(n);
        let Ok(m0) = ir::parse_module(&ctx, &text, "bench.ir") else { return };
        graphs.push((n, m0));
    }
    phase_table(&ctx, &pass, &graphs);
    for (n, m0) in &graphs {
        group.bench_with_input(BenchmarkId::from_parameter(n), n, |b, _| run_peephole(b, &ctx, &pass, m0));
    }
    group.finish();
    let mut group = c.benchmark_group("fuse-elementwise");
    group.sample_size(10);
    for (n, m0) in &graphs {
        group.bench_with_input(BenchmarkId::from_parameter(n), n, |b, _| {
            b.iter_batched(
                || m0.clone(),
                |mut m: Module| {
                    let top = m.top();
                    FuseElementwise::default().fuse(&ctx, &mut m, top).map(|g| g.len()).unwrap_or(0)
                },
                criterion::BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

/// Sizes of the synthetic graphs for the growth.
const SIZES: [usize; 4] = [1_000, 2_000, 5_000, 10_000];

/// Prints, per graph size, the fastest of five runs of each phase of `egraph-peephole`
/// (conversion, saturation, extraction with write-back, the whole pass) and of
/// `fuse-elementwise`, with each phase's growth over the smallest graph.
fn phase_table(ctx: &Context, pass: &Peephole, graphs: &[(usize, Module)]) {
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let mut base: Option<[f64; 5]> = None;
    println!("growth: ops | conversion | saturation | extraction | egraph-peephole | fuse-elementwise (ms, fastest of 5; xN: over {} ops)", graphs[0].0);
    for (n, m0) in graphs {
        let mut best = [f64::INFINITY; 5];
        for _ in 0..5 {
            let mut m = m0.clone();
            let top = m.top();
            let t = std::time::Instant::now();
            let Ok(reports) = pass.rewrite(ctx, &mut m, top, None) else { return };
            let total = ms(t.elapsed());
            let mut m = m0.clone();
            let top = m.top();
            let t = std::time::Instant::now();
            let _ = FuseElementwise::default().fuse(ctx, &mut m, top);
            let fuse = ms(t.elapsed());
            let sum = |f: fn(&egraph::RunReport) -> std::time::Duration| reports.iter().map(|r| ms(f(r))).sum::<f64>();
            let row = [sum(|r| r.convert), sum(|r| r.saturate), sum(|r| r.extract), total, fuse];
            for (b, v) in best.iter_mut().zip(row) {
                *b = b.min(v);
            }
        }
        let base = *base.get_or_insert(best);
        let cells: Vec<String> = best.iter().zip(base).map(|(v, b)| format!("{v:8.2} (x{:4.1})", v / b)).collect();
        println!("growth: {n:6} | {}", cells.join(" | "));
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
