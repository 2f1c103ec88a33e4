//! Per-kernel compile time: compiles the `bench_pointwise` group, a two-op group and the
//! bench_lstm_cell group repeatedly and prints the median and quartiles
//! (`cargo run --release -p jit --example compile_time [N]`).
//! With `CRANELIFT_TIMING=1` it also prints where Cranelift spent the time (its own pass
//! timings, summed over all the compiles of a group); with `KERNEL_RUNS=N`, the median time of
//! N runs of each kernel on one thread.

use std::time::{Duration, Instant};

use jit::KernelSpec;
use runtime::Tensor;

mod common;

use common::{LSTM_CELL, POINTWISE, lstm_inputs};

const SMALL: &str = r#"
%x = "test.source"() : () -> tensor<64x512xf32>
%y = "test.source"() : () -> tensor<64x512xf32>
%r = "prim.FusionGroup"(%x, %y) ({
^bb0(%a: tensor<64x512xf32>, %b: tensor<64x512xf32>):
  %s = "aten.add.Tensor"(%a, %b) : (tensor<64x512xf32>, tensor<64x512xf32>) -> tensor<64x512xf32>
  %t = "aten.relu"(%s) : (tensor<64x512xf32>) -> tensor<64x512xf32>
  "prim.Return"(%t) : (tensor<64x512xf32>) -> ()
}) : (tensor<64x512xf32>, tensor<64x512xf32>) -> tensor<64x512xf32>
"#;

fn measure(name: &str, text: &str, rows: usize, cols: usize, n: usize) -> Result<(), Box<dyn std::error::Error>> {
    let inputs = if text == LSTM_CELL {
        lstm_inputs()?
    } else {
        let x = Tensor::zeros(ir::DType::F32, &[rows, cols])?;
        vec![x.clone(), x]
    };
    let (m, g) = common::group(text)?;
    let spec = KernelSpec::of(&inputs);
    let _ = cranelift_codegen::timing::take_current();
    let mut times: Vec<Duration> = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let k = jit::compile(&m, g, &spec)?;
        times.push(t.elapsed());
        drop(k);
    }
    times.sort();
    let q = |f: f64| times[((times.len() - 1) as f64 * f) as usize].as_secs_f64() * 1e3;
    println!("{name}: median {:.3} ms (p25 {:.3}, p75 {:.3}) over {n} compiles", q(0.5), q(0.25), q(0.75));
    if std::env::var_os("CRANELIFT_TIMING").is_some() {
        println!("{}", cranelift_codegen::timing::take_current());
    }
    if let Some(runs) = std::env::var("KERNEL_RUNS").ok().and_then(|v| v.parse::<usize>().ok()) {
        // The kernel's own run time on the compiled inputs, on this thread, outputs reused.
        let k = jit::compile(&m, g, &spec)?;
        let outs = k.outputs().iter().map(|(d, s)| Tensor::zeros(*d, s)).collect::<Result<Vec<_>, _>>()?;
        let inline = jit::RunOptions { parallel_threshold: usize::MAX, ..Default::default() };
        let mut rt: Vec<Duration> = (0..runs.max(1))
            .map(|_| {
                let t = Instant::now();
                let _ = k.run_into_with(&inputs, &outs, inline);
                t.elapsed()
            })
            .collect();
        rt.sort();
        let q = |f: f64| rt[((rt.len() - 1) as f64 * f) as usize].as_secs_f64() * 1e6;
        println!("  run: median {:.1} us (p10 {:.1}) over {} runs", q(0.5), q(0.1), rt.len());
    }
    if let Some(big_rows) = std::env::var("RUN_ROWS").ok().and_then(|v| v.parse::<usize>().ok()) {
        let x = Tensor::from_vec((0..big_rows * cols).map(|i| ((i % 97) as f32 - 48.0) / 16.0).collect::<Vec<_>>(), &[big_rows, cols])?;
        let ins = [x.clone(), x];
        let k = jit::compile(&m, g, &KernelSpec::of(&ins))?;
        let mut rt: Vec<Duration> = (0..10)
            .map(|_| {
                let t = Instant::now();
                let _ = k.run(&ins);
                t.elapsed()
            })
            .collect();
        rt.sort();
        println!("  run on {big_rows}x{cols}: median {:.3} ms", rt[5].as_secs_f64() * 1e3);
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(50);
    measure("bench_pointwise (16 ops)", POINTWISE, 8, 4096, n)?;
    // 2^22 elements: the body runs in phases (see `fission`).
    measure("bench_pointwise (16 ops), 1024x4096, fissioned", POINTWISE, 1024, 4096, n)?;
    measure("add + relu (2 ops)", SMALL, 64, 512, n)?;
    measure("bench_lstm_cell (21 ops, 17 inputs)", LSTM_CELL, 64, 512, n)?;
    Ok(())
}
