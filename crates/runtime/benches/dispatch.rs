//! Interpreter dispatch overhead: long chains of tiny ops, reported per op.
//!
//! Each program is a straight chain of `N` ops whose operands are one-element tensors (or
//! integers), so the kernel's arithmetic is negligible and the time per call divided by `N` is
//! what the interpreter spends moving arguments, dispatching and retiring values. Criterion
//! reports the time of one call over the whole chain with `Throughput::Elements(N)`, i.e. the
//! per-op cost is the reported time divided by `N` (printed as "elem/s").

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use runtime::{CompileOptions, IValue, Tensor, Weights, compile};

/// Ops per chain.
const N: usize = 1000;

fn context() -> ir::Context {
    let mut c = ir::Context::new();
    dialect_prim::register(&mut c);
    dialect_aten::register(&mut c);
    c
}

/// `x1 = x0 + y; x2 = x1 + y; …` over one-element f32 tensors.
fn tensor_chain(n: usize) -> String {
    let ty = "tensor<1xf32>";
    let mut s = format!("module {{\n  func.func @forward(%x0: {ty} {{prim.input = \"x\"}}, %y: {ty} {{prim.input = \"y\"}}) -> {ty} {{\n");
    for i in 0..n {
        s += &format!("    %x{} = aten.add.Tensor %x{i}, %y : ({ty}, {ty}) -> {ty}\n", i + 1);
    }
    s += &format!("    func.return %x{n} : {ty}\n  }}\n}}\n");
    s
}

/// The same chain over SymInt arithmetic (`prim.add` on `i64`).
fn int_chain(n: usize) -> String {
    let mut s = String::from("module {\n  func.func @forward(%x0: i64 {prim.input = \"x\"}, %y: i64 {prim.input = \"y\"}) -> i64 {\n");
    for i in 0..n {
        s += &format!("    %x{} = prim.add %x{i}, %y : i64\n", i + 1);
    }
    s += &format!("    func.return %x{n} : i64\n  }}\n}}\n");
    s
}

fn program(text: &str, options: CompileOptions) -> Result<runtime::CompiledProgram, String> {
    let ctx = context();
    let module = ir::parse_module(&ctx, text, "chain.ir").map_err(|d| d.render("chain.ir", text))?;
    compile(&module, &ctx, &Weights::new(), options).map_err(|e| e.to_string())
}

fn bench_chain(c: &mut Criterion, name: &str, text: &str, inputs: Vec<IValue>, options: CompileOptions) {
    let p = match program(text, options) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{name}: {e}");
            return;
        }
    };
    let mut rt = p.runtime();
    let mut out = Vec::new();
    if let Err(e) = rt.run_into(&inputs, &mut out) {
        eprintln!("{name}: {e}");
        return;
    }
    let mut g = c.benchmark_group("dispatch");
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function(name, |b| {
        b.iter(|| {
            let r = rt.run_into(&inputs, &mut out);
            std::hint::black_box(&r);
        })
    });
    g.finish();
}

fn dispatch(c: &mut Criterion) {
    let one = |v: f32| Tensor::from_slice(&[v], &[1]).map(IValue::Tensor);
    let (Ok(x), Ok(y)) = (one(0.5), one(0.25)) else {
        eprintln!("cannot make the inputs");
        return;
    };
    let tensors = tensor_chain(N);
    bench_chain(c, "aten.add.Tensor x1000 (planned)", &tensors, vec![x.clone(), y.clone()], CompileOptions::default());
    let unplanned = CompileOptions { memory_plan: false, ..Default::default() };
    bench_chain(c, "aten.add.Tensor x1000 (unplanned)", &tensors, vec![x, y], unplanned);
    bench_chain(c, "prim.add x1000", &int_chain(N), vec![IValue::Int(1), IValue::Int(2)], CompileOptions::default());
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).warm_up_time(std::time::Duration::from_millis(500)).measurement_time(std::time::Duration::from_secs(3));
    targets = dispatch
}
criterion_main!(benches);
