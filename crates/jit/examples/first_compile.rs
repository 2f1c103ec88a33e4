//! The cold start of a process's first kernel: creates a `Jit` (the process's one-time setup),
//! then compiles the bench_lstm_cell group (`lstm`, default) or the bench_pointwise group on
//! 1024×4096 (`pointwise`) N times in this fresh process, printing each compile's time and the
//! minor page faults it took (`cargo run --release -p jit --example first_compile [lstm|pointwise] [N]`).
//! Run it as many short processes (a shell loop, or under `perf record`) to see the first
//! compile of a process against the warm ones that follow it.

use std::time::Instant;

use jit::KernelSpec;
use runtime::Tensor;

mod common;

use common::{LSTM_CELL, POINTWISE, lstm_inputs};

/// Minor page faults of this process so far (0 where `/proc` is not there).
fn minor_faults() -> u64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return 0 };
    // Fields after the command name (which may hold spaces): state is the first, minflt the 8th.
    stat.rfind(')').and_then(|i| stat[i + 1..].split_whitespace().nth(7)).and_then(|f| f.parse().ok()).unwrap_or(0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let which = std::env::args().nth(1).unwrap_or_else(|| "lstm".into());
    let n: usize = std::env::args().nth(2).and_then(|a| a.parse().ok()).unwrap_or(3);
    let jit = jit::Jit::default();
    let (text, inputs) = match which.as_str() {
        "lstm" => (LSTM_CELL, lstm_inputs()?),
        "pointwise" => {
            let x = Tensor::zeros(ir::DType::F32, &[1024, 4096])?;
            (POINTWISE, vec![x.clone(), x])
        }
        other => return Err(format!("unknown group '{other}' (lstm or pointwise)").into()),
    };
    let (m, g) = common::group(text)?;
    let group = jit::Group::from_op(&m, g)?;
    let spec = KernelSpec::of(&inputs);
    let mut line = format!("{which}: setup {:.3} ms; compiles", jit.stats().setup_time.as_secs_f64() * 1e3);
    for _ in 0..n {
        let faults = minor_faults();
        let t = Instant::now();
        let k = group.compile(&spec)?;
        let wall = t.elapsed();
        line += &format!(" {:.3} ms ({} faults, {:.3} ms inside),", wall.as_secs_f64() * 1e3, minor_faults() - faults, k.compile_time().as_secs_f64() * 1e3);
        drop(k);
    }
    println!("{}", line.trim_end_matches(','));
    Ok(())
}
