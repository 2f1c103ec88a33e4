//! Where splitting a kernel across threads starts to pay: the `bench_pointwise` kernel run
//! inline and split into chunks on two threads (the intra-op team, as wide as the 2-thread rayon
//! pool it is called from), for growing element counts
//! (`cargo run --release -p jit --example cutover`). Outputs are allocated once, outside the
//! timed region.

use std::time::Instant;

use jit::{KernelSpec, RunOptions};
use runtime::Tensor;

mod common;

use common::POINTWISE;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (m, g) = common::group(POINTWISE)?;
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build()?;
    let chunk = RunOptions::default().chunk;
    println!("| elements | inline µs | 2 threads, chunks of {chunk} µs |");
    println!("| --- | --- | --- |");
    for rows in [1usize, 2, 4, 8, 16, 32, 64, 128] {
        let n = rows * 4096;
        let x = Tensor::from_vec((0..n).map(|i| ((i % 97) as f32 - 48.0) / 16.0).collect::<Vec<_>>(), &[rows, 4096])?;
        let ins = [x.clone(), x];
        let k = jit::compile(&m, g, &KernelSpec::of(&ins))?;
        let out = [Tensor::zeros(ir::DType::F32, &[rows, 4096])?];
        let time = |opts: RunOptions| -> Result<f64, Box<dyn std::error::Error>> {
            let mut ts = Vec::new();
            for _ in 0..41 {
                let t = Instant::now();
                pool.install(|| k.run_into_with(&ins, &out, opts))?;
                ts.push(t.elapsed().as_secs_f64() * 1e6);
            }
            ts.sort_by(f64::total_cmp);
            Ok(ts[20])
        };
        let inline = time(RunOptions { parallel_threshold: usize::MAX, chunk })?;
        let split = time(RunOptions { parallel_threshold: 0, chunk })?;
        println!("| {n} | {inline:.0} | {split:.0} |");
    }
    Ok(())
}
