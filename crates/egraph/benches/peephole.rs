//! Benchmarks of `egraph-peephole` (conversion, saturation, extraction and write-back): the
//! `bench_transformer` export of `../shared/fixtures` (skipped with a message when absent), a
//! synthetic elementwise graph of 1,500 e-nodes, and synthetic graphs of 1k to 10k ops for the
//! growth; and of `fuse-elementwise`.

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
    for n in [1_000usize, 2_500, 5_000, 10_000] {
        let text = synthetic(n);
        let Ok(m0) = ir::parse_module(&ctx, &text, "bench.ir") else { return };
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| run_peephole(b, &ctx, &pass, &m0));
    }
    group.finish();
    let text = synthetic(1_000);
    let Ok(m0) = ir::parse_module(&ctx, &text, "bench.ir") else { return };
    c.bench_function("fuse-elementwise/1000", |b| {
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

criterion_group!(benches, bench);
criterion_main!(benches);
