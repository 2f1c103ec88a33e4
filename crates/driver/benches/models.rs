//! The interpreter on the benchmark programs of `../shared/fixtures/bench` (`model.pt2`, as
//! imported, no pass pipeline): median time of one call on the recorded inputs, one thread.
//! The same numbers `dialect-run <model.pt2> --bench --threads 1` prints, in the process
//! itself; compare with `python ../shared/bench/torch_reference.py --threads 1` run in
//! the same minute. `cargo bench -p driver --bench models [-- name...]`.

use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

use driver::fixture;
use runtime::{IValue, Tensor};

fn context() -> ir::Context {
    let mut ctx = ir::Context::new();
    dialect_prim::register(&mut ctx);
    dialect_aten::register(&mut ctx);
    ctx
}

fn bench(dir: &Path, iters: usize) -> Result<f64, String> {
    let ctx = context();
    let program = import::import_file(&ctx, &dir.join("model.pt2"), None).map_err(|e| e.to_string())?;
    let compiled = fixture::compile_program(&ctx, &program)?;
    let io_path = dir.join("io.safetensors");
    let meta = fixture::read_meta(&io_path)?;
    let io: HashMap<String, Tensor> =
        runtime::io::load_safetensors(&io_path).map_err(|e| e.to_string())?.into_iter().collect();
    let inputs = fixture::fixture_inputs(&io, &meta, 0, compiled.input_names().len())?;
    let mut rt = compiled.runtime();
    let mut out: Vec<IValue> = Vec::new();
    for _ in 0..5 {
        rt.run_into(&inputs, &mut out).map_err(|e| e.to_string())?;
    }
    let mut times = Vec::with_capacity(iters);
    for _ in 0..iters {
        let t = Instant::now();
        rt.run_into(&inputs, &mut out).map_err(|e| e.to_string())?;
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2] * 1e6)
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/bench");
    let wanted: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    for name in ["bench_mlp_b1", "bench_lstm_cell", "bench_transformer", "bench_resnet_tiny"] {
        if !wanted.is_empty() && !wanted.iter().any(|w| name.contains(w.as_str())) {
            continue;
        }
        match bench(&root.join(name), 200) {
            Ok(us) => println!("{name:<20} {us:>10.1} us"),
            Err(e) => println!("{name:<20} skipped: {e}"),
        }
    }
}
