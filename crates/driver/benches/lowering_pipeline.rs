//! Times the full -O2 pipeline on the `bench_transformer` fixture and on synthetic 1k- and 10k-op graphs.
//!
//! `cargo bench -p driver --bench lowering_pipeline` prints milliseconds per run (the best of
//! several); the target is at most 50 ms per fixture model and time linear in graph size.
//! `PER_PASS=1` adds each pass's time (and its `--verify-each` verification) on the synthetic
//! graphs; `SYNTHETIC=N` times only the synthetic graph of `N` ops (for profiling one size).

use ir::{Attribute, DType, InsertPoint, Module, OperationState, Type};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A function of `n` ops: a chain of linear layers, adds, multiplies by scalars and relus.
fn synthetic(n: usize) -> Module {
    let mut m = Module::new();
    let t = Type::tensor(DType::F32, &[16, 32]);
    let w = Type::tensor(DType::F32, &[32, 32]);
    let (_, entry) = ir::builtin::create_function(&mut m, "forward", &[t.clone(), w.clone()], &[t.clone()]);
    let (x, wv) = (m.block_args(entry)[0], m.block_args(entry)[1]);
    let mut cur = x;
    let half = {
        let op = m.create_op(OperationState::new("prim.Constant").attr("value", Attribute::Dense(ir::DenseAttr::from_f32(&[], &[0.5]).unwrap())).results([Type::tensor(DType::F32, &[])]));
        m.insert_op(op, InsertPoint::End(entry)).unwrap();
        m.results(op)[0]
    };
    for i in 0..n {
        let (name, operands, attrs): (&str, Vec<_>, Vec<(&str, Attribute)>) = match i % 4 {
            0 => ("aten.linear", vec![cur, wv], vec![]),
            1 => ("aten.add.Tensor", vec![cur, x], vec![]),
            2 => ("aten.mul.Tensor", vec![cur, half], vec![]),
            _ => ("aten.relu", vec![cur], vec![]),
        };
        let mut st = OperationState::new(name).operands(operands).results([t.clone()]);
        for (k, v) in attrs {
            st = st.attr(k, v);
        }
        let op = m.create_op(st);
        m.insert_op(op, InsertPoint::End(entry)).unwrap();
        cur = m.results(op)[0];
    }
    let ret = m.create_op(OperationState::new("func.return").operands([cur]));
    m.insert_op(ret, InsertPoint::End(entry)).unwrap();
    m
}

fn time(ctx: &ir::Context, m: &Module, runs: usize) -> Duration {
    let text = driver::pipeline_for_level(2);
    let reg = driver::default_pass_registry();
    let mut times = Vec::new();
    for _ in 0..runs {
        let mut copy = m.clone();
        let mut pm = pass::PassManager::parse(&reg, &text, pass::PassManagerConfig::default()).expect("pipeline parses");
        let t0 = Instant::now();
        pm.run(ctx, &mut copy, &mut Vec::new()).expect("pipeline runs");
        times.push(t0.elapsed());
    }
    // The fastest run: on a shared machine the others measure other processes too.
    times.into_iter().min().unwrap_or_default()
}

/// Times each pass of the -O2 pipeline on its own, in order (to find the expensive ones): the
/// pass and the `--verify-each` verification after it, from the pass manager's timing, each the
/// minimum over `runs` runs of the whole pipeline (the least disturbed by other processes).
fn per_pass(ctx: &ir::Context, m: &Module, runs: usize) -> Vec<(String, f64, f64)> {
    let text = driver::pipeline_for_level(2);
    let inner = text.trim_start_matches("builtin.module(").trim_end_matches(')');
    let passes: Vec<&str> = inner.split(',').collect();
    let reg = driver::default_pass_registry();
    let mut best = vec![(f64::MAX, f64::MAX); passes.len()];
    for _ in 0..runs {
        let mut copy = m.clone();
        for (k, p) in passes.iter().enumerate() {
            let mut pm = pass::PassManager::parse(&reg, &format!("builtin.module({p})"), pass::PassManagerConfig::default()).expect("pass parses");
            pm.run(ctx, &mut copy, &mut Vec::new()).expect("pass runs");
            let rows = pm.timing().rows();
            let ms = |name: &str| rows.iter().filter(|r| r.0 == name).map(|r| r.1.as_secs_f64() * 1e3).sum::<f64>();
            best[k].0 = best[k].0.min(ms(p.split('{').next().unwrap_or(p)));
            best[k].1 = best[k].1.min(ms("(V) verifier"));
        }
    }
    passes.iter().zip(best).map(|(p, (a, b))| (p.to_string(), a, b)).collect()
}

fn main() {
    let ctx = driver::default_context();
    println!("pipeline: {}", driver::pipeline_for_level(2));
    let fx = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/bench");
    // `SYNTHETIC=10000` times only that synthetic graph (for profiling one size).
    let only: Option<usize> = std::env::var("SYNTHETIC").ok().and_then(|s| s.parse().ok());
    let models: &[&str] =
        if only.is_some() { &[] } else { &["bench_transformer", "bench_resnet_tiny", "bench_mlp_b1", "bench_lstm_cell", "bench_pointwise"] };
    for &name in models {
        let p = fx.join(name).join("model.pt2");
        match import::import_file(&ctx, &p, None) {
            Ok(prog) => {
                let ops = prog.module.nested_ops(prog.module.top()).len();
                let d = time(&ctx, &prog.module, 11);
                println!("{name:<20} {ops:>6} ops  {:>9.3} ms", d.as_secs_f64() * 1e3);
                if std::env::var("PER_PASS").is_ok() && name == "bench_transformer" {
                    for (p, ms, verify) in per_pass(&ctx, &prog.module, 11) {
                        println!("    {p:<20} {ms:>9.3} ms   (verifier {verify:>8.3} ms)");
                    }
                }
            }
            Err(e) => println!("{name:<20} skipped: {e}"),
        }
    }
    let sizes = only.map_or(vec![1000, 10000], |n| vec![n]);
    for n in sizes {
        let m = synthetic(n);
        let runs = if n > 5000 { 3 } else { 7 };
        let d = time(&ctx, &m, runs);
        if std::env::var("PER_PASS").is_ok() {
            for (p, ms, verify) in per_pass(&ctx, &m, runs) {
                println!("    {p:<20} {ms:>9.3} ms   (verifier {verify:>8.3} ms)");
            }
        }
        println!("synthetic-{n:<10} {n:>6} ops  {:>9.3} ms  ({:.2} us/op)", d.as_secs_f64() * 1e3, d.as_secs_f64() * 1e6 / n as f64);
    }
}
