//! Benchmarks of `egraph-peephole` (conversion, saturation, extraction and write-back): the
//! `bench_transformer` export of `../shared/fixtures` (skipped with a message when absent), a
//! synthetic elementwise graph of 1,500 e-nodes, and synthetic graphs of 1k to 10k ops for the
//! growth (with a per-phase table: the median and the fastest of interleaved rounds over the
//! sizes, and the growth over the 1k graph); and of `fuse-elementwise` over the same graphs.

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

/// Rounds of the growth table: each round runs every size once, so a burst of load on the
/// machine hits all sizes alike rather than one.
const ROUNDS: usize = 9;

/// Prints, per graph size, the median over [`ROUNDS`] interleaved rounds of each phase of
/// `egraph-peephole` (conversion, saturation, extraction with write-back, the whole pass) and of
/// `fuse-elementwise`, with each phase's growth over the smallest graph; then the fastest run
/// of each; and what saturation did at each size (e-nodes, iterations, why it stopped, the node
/// limit it ran under), so that the sizes are compared like for like.
fn phase_table(ctx: &Context, pass: &Peephole, graphs: &[(usize, Module)]) {
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let mut runs: Vec<Vec<[f64; 5]>> = vec![Vec::new(); graphs.len()];
    let mut shape: Vec<String> = vec![String::new(); graphs.len()];
    for _ in 0..ROUNDS {
        for (i, (_, m0)) in graphs.iter().enumerate() {
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
            runs[i].push([sum(|r| r.convert), sum(|r| r.saturate), sum(|r| r.extract), total, fuse]);
            shape[i] = reports
                .iter()
                .map(|r| format!("{} -> {} e-nodes, {} iterations, {} (node limit {})", r.initial_nodes, r.nodes, r.iterations, r.stop, r.node_limit))
                .collect::<Vec<_>>()
                .join("; ");
        }
    }
    let pick = |i: usize, median: bool| -> [f64; 5] {
        let mut out = [0.0; 5];
        for (p, o) in out.iter_mut().enumerate() {
            let mut v: Vec<f64> = runs[i].iter().map(|r| r[p]).collect();
            v.sort_by(f64::total_cmp);
            *o = if median { v[v.len() / 2] } else { v[0] };
        }
        out
    };
    for (median, what) in [(true, "median"), (false, "fastest")] {
        println!(
            "growth: ops | conversion | saturation | extraction | egraph-peephole | fuse-elementwise (ms, {what} of {ROUNDS} interleaved rounds; xN: over {} ops)",
            graphs[0].0
        );
        let base = pick(0, median);
        for (i, (n, _)) in graphs.iter().enumerate() {
            let row = pick(i, median);
            let cells: Vec<String> = row.iter().zip(base).map(|(v, b)| format!("{v:8.2} (x{:4.1})", v / b)).collect();
            println!("growth: {n:6} | {}", cells.join(" | "));
        }
    }
    for ((n, _), s) in graphs.iter().zip(&shape) {
        println!("growth: {n:6} ops: {s}");
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
