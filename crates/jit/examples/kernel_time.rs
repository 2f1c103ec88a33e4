//! Time of the `bench_pointwise` kernel alone on 1024×4096 inputs (or `rows`×4096), outputs
//! allocated once outside the timed region
//! (`cargo run --release -p jit --example kernel_time [iters] [rows]`):
//! prints the compile time and the median and minimum time per call on the calling thread.

use std::time::Instant;

use jit::{KernelSpec, RunOptions};
use runtime::Tensor;

mod common;

use common::POINTWISE;

/// Deterministic, roughly standard-normal values (sum of uniforms from an LCG).
fn normal(n: usize, mut seed: u64) -> Vec<f32> {
    let mut next = move || {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (seed >> 40) as f32 / (1u64 << 24) as f32
    };
    (0..n).map(|_| (0..12).map(|_| next()).sum::<f32>() - 6.0).collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let iters: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(30);
    let t = Instant::now();
    let _jit = jit::Jit::default();
    println!("ISA detection (jit::Jit::default()): {:.3} ms", t.elapsed().as_secs_f64() * 1e3);
    let (m, g) = common::group(POINTWISE)?;
    let rows: usize = std::env::args().nth(2).and_then(|a| a.parse().ok()).unwrap_or(1024);
    let cols = 4096;
    let x = Tensor::from_vec(normal(rows * cols, 1), &[rows, cols])?;
    let y = Tensor::from_vec(normal(rows * cols, 2), &[rows, cols])?;
    let ins = [x, y];
    let k = jit::compile(&m, g, &KernelSpec::of(&ins))?;
    let out = [Tensor::zeros(ir::DType::F32, &[rows, cols])?];
    let inline = RunOptions { parallel_threshold: usize::MAX, ..RunOptions::default() };
    k.run_into_with(&ins, &out, inline)?;
    let mut ts: Vec<f64> = (0..iters)
        .map(|_| {
            let t = Instant::now();
            let r = k.run_into_with(&ins, &out, inline);
            let dt = t.elapsed().as_secs_f64() * 1e3;
            r.map(|_| dt)
        })
        .collect::<Result<_, _>>()?;
    ts.sort_by(f64::total_cmp);
    println!(
        "compile {:.3} ms; kernel on {rows}x{cols}: median {:.2} ms, min {:.2} ms ({iters} calls)",
        k.compile_time().as_secs_f64() * 1e3,
        ts[ts.len() / 2],
        ts[0]
    );
    Ok(())
}
