//! The real `export/lstm_cell` fixture (torch.export, core ATen) shared by four threads: one
//! `CompiledProgram`, one runtime per thread, 1,000 runs each. Every run of every thread gives
//! bit-identical outputs, equal to a single-threaded run, which itself matches PyTorch's
//! recorded outputs. Skips with a reason when `../shared/fixtures` is absent (fails under `CI=true`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use driver::fixture;
use runtime::{IValue, Tensor};

const THREADS: usize = 4;
const RUNS: usize = 1000;

fn fixture_dir() -> Option<PathBuf> {
    support::fixture_dir("export/lstm_cell")
}

/// Outputs as raw bits, so equality is exact (and NaN-safe).
fn bits(outs: &[IValue]) -> Result<Vec<Vec<u64>>, String> {
    outs.iter()
        .map(|v| v.as_tensor().map(|t| t.to_vec_f64().iter().map(|x| x.to_bits()).collect()).map_err(|e| e.to_string()))
        .collect()
}

#[test]
fn four_threads_run_the_lstm_cell_fixture_identically() -> Result<(), String> {
    let Some(dir) = fixture_dir() else {
        if std::env::var("CI").as_deref() == Ok("true") {
            return Err("CI=true but ../shared/fixtures/export/lstm_cell is missing".into());
        }
        println!("skipped: ../shared/fixtures/export/lstm_cell is absent");
        return Ok(());
    };
    let ctx = support::context();
    let imported = import::import_file(&ctx, &dir.join("core.pt2"), None).map_err(|e| e.to_string())?;
    let program = Arc::new(fixture::compile_program(&ctx, &imported)?);

    let io_path = dir.join("io.safetensors");
    let meta = fixture::read_meta(&io_path)?;
    let io: HashMap<String, Tensor> =
        runtime::io::load_safetensors(&io_path).map_err(|e| e.to_string())?.into_iter().collect();
    let inputs = fixture::fixture_inputs(&io, &meta, 0, program.input_names().len())?;

    // Single-threaded reference run, checked against PyTorch's outputs.
    let single = fixture::flatten(program.runtime().run(&inputs).map_err(|e| e.to_string())?);
    let (rtol, atol) = (meta.rtol.unwrap_or(1e-4), meta.atol.unwrap_or(1e-5));
    for (i, v) in single.iter().enumerate() {
        let want = io.get(&format!("out.{i}")).ok_or_else(|| format!("out.{i} missing from the io file"))?;
        let c = fixture::compare(v, want, rtol, atol);
        assert!(c.ok, "out.{i}: {}", c.text);
    }
    let expected = bits(&single)?;
    assert_eq!(expected.len(), 2, "the LSTM cell returns (h, c)");

    let handles: Vec<_> = (0..THREADS)
        .map(|_| {
            let program = Arc::clone(&program);
            let inputs = inputs.clone();
            std::thread::spawn(move || -> Result<Vec<Vec<Vec<u64>>>, String> {
                let mut rt = program.runtime();
                let mut out = Vec::new();
                let mut results = Vec::with_capacity(RUNS);
                for _ in 0..RUNS {
                    rt.run_into(&inputs, &mut out).map_err(|e| e.to_string())?;
                    results.push(bits(&fixture::flatten(std::mem::take(&mut out)))?);
                }
                Ok(results)
            })
        })
        .collect();
    for (k, h) in handles.into_iter().enumerate() {
        let results = h.join().map_err(|_| format!("thread {k} panicked"))??;
        assert_eq!(results.len(), RUNS);
        for (i, r) in results.iter().enumerate() {
            assert!(*r == expected, "thread {k}, run {i}: the outputs differ from the single-threaded run");
        }
    }
    println!("{THREADS} threads x {RUNS} runs: all outputs bit-identical to the single-threaded run");
    Ok(())
}
