//! Times the full -O2 pipeline on the `bench_transformer` fixture and on synthetic 1k- and 10k-op graphs.
//!
//! `cargo bench -p transforms --bench lowering_pipeline` prints milliseconds per run (median of
//! several); the target is at most 50 ms per fixture model and time linear in graph size.

use ir::{Attribute, DType, InsertPoint, Module, OperationState, Type};
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn context() -> ir::Context {
    let mut ctx = ir::Context::new();
    dialect_prim::register(&mut ctx);
    dialect_aten::register(&mut ctx);
    dialect_edge::register(&mut ctx);
    dialect_backend::register(&mut ctx);
    ctx
}

fn registry() -> pass::PassRegistry {
    let mut r = pass::default_registry();
    transforms::register_passes(&mut r);
    r
}

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
    let text = transforms::lowering::pipeline_text(2);
    let reg = registry();
    let mut times = Vec::new();
    for _ in 0..runs {
        let mut copy = m.clone();
        let mut pm = pass::PassManager::parse(&reg, &text, pass::PassManagerConfig::default()).expect("pipeline parses");
        let t0 = Instant::now();
        pm.run(ctx, &mut copy, &mut Vec::new()).expect("pipeline runs");
        times.push(t0.elapsed());
    }
    times.sort();
    times[times.len() / 2]
}

/// Times each pass of the -O2 pipeline on its own, in order (to find the expensive ones).
fn per_pass(ctx: &ir::Context, m: &Module) {
    let text = transforms::lowering::pipeline_text(2);
    let inner = text.trim_start_matches("builtin.module(").trim_end_matches(')');
    let reg = registry();
    let mut copy = m.clone();
    for p in inner.split(',') {
        let mut pm = pass::PassManager::parse(&reg, &format!("builtin.module({p})"), pass::PassManagerConfig::default()).expect("pass parses");
        let t0 = Instant::now();
        pm.run(ctx, &mut copy, &mut Vec::new()).expect("pass runs");
        println!("    {p:<20} {:>9.3} ms", t0.elapsed().as_secs_f64() * 1e3);
    }
}

fn main() {
    let ctx = context();
    println!("pipeline: {}", transforms::lowering::pipeline_text(2));
    let fx = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/bench");
    for name in ["bench_transformer", "bench_resnet_tiny", "bench_mlp_b1", "bench_lstm_cell", "bench_pointwise"] {
        let p = fx.join(name).join("model.pt2");
        match import::import_file(&ctx, &p, None) {
            Ok(prog) => {
                let ops = prog.module.nested_ops(prog.module.top()).len();
                let d = time(&ctx, &prog.module, 11);
                println!("{name:<20} {ops:>6} ops  {:>9.3} ms", d.as_secs_f64() * 1e3);
            }
            Err(e) => println!("{name:<20} skipped: {e}"),
        }
    }
    for n in [1000, 10000] {
        let m = synthetic(n);
        let runs = if n > 5000 { 3 } else { 7 };
        let d = time(&ctx, &m, runs);
        if std::env::var("PER_PASS").is_ok() {
            per_pass(&ctx, &m);
        }
        println!("synthetic-{n:<10} {n:>6} ops  {:>9.3} ms  ({:.2} us/op)", d.as_secs_f64() * 1e3, d.as_secs_f64() * 1e6 / n as f64);
    }
}
