//! Soak: every model of `../shared/zoo` (`model.pt2`, as users export it) compiled once at
//! `-O2` (every pass verified after it runs, fusion groups run by the JIT) and called from four
//! threads at once, each with a runtime of its own and kernels one thread wide. Every call of
//! every thread must give outputs bit-identical to a single-threaded run; the allocations a
//! call makes on its thread must be the same number every call, and all freed by the time its
//! outputs are dropped; and the process's resident memory must not grow once the calls are
//! under way. Each thread makes 2,000 calls (`SOAK_CALLS` sets another number; about six
//! minutes on two cores for the whole zoo). Skips with a reason when the zoo is absent (fails
//! under `CI=true`).

#[path = "../crates/runtime/tests/common/counting.rs"]
mod counting;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use counting::{Counting, count, net};
use driver::fixture;
use runtime::{CompileOptions, IValue, Tensor};

#[global_allocator]
static GLOBAL: Counting = Counting;

const THREADS: usize = 4;

fn calls_per_thread() -> usize {
    std::env::var("SOAK_CALLS").ok().and_then(|s| s.parse().ok()).unwrap_or(2000)
}

/// Outputs as raw bits, so equality is exact (and NaN-safe).
fn bits(outs: &[IValue]) -> Result<Vec<Vec<u64>>, String> {
    outs.iter()
        .map(|v| v.as_tensor().map(|t| t.to_vec_f64().iter().map(|x| x.to_bits()).collect()).map_err(|e| e.to_string()))
        .collect()
}

/// The resident set of this process, in bytes.
fn rss() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: usize = statm.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    pages * 4096
}

/// What one model's soak measured.
struct Soak {
    per_call_allocs: usize,
    rss_settled: usize,
    rss_end: usize,
    seconds: f64,
}

fn soak(model: &Path, calls: usize) -> Result<Soak, String> {
    let ctx = driver::default_context();
    let mut program = import::import_file(&ctx, &model.join("model.pt2"), None).map_err(|e| e.to_string())?;
    let registry = driver::default_pass_registry();
    let config = pass::PassManagerConfig { verify_each: true, ..pass::PassManagerConfig::default() };
    let mut pm = pass::PassManager::parse(&registry, &driver::pipeline_for_level(2), config).map_err(|e| e.to_string())?;
    pm.run(&ctx, &mut program.module, &mut Vec::new()).map_err(|d| format!("-O2: {d}"))?;
    let weights = fixture::weights_from_import(&program.weights)?;
    let jit = Arc::new(jit::Jit::default());
    let options = CompileOptions { fusion: Some(jit as Arc<dyn runtime::FusionCompiler>), ..CompileOptions::default() };
    let compiled = Arc::new(runtime::compile(&program.module, &ctx, &weights, options).map_err(|e| e.to_string())?);

    let io_path = model.join("io.safetensors");
    let meta = fixture::read_meta(&io_path)?;
    let io: HashMap<String, Tensor> = runtime::io::load_safetensors(&io_path).map_err(|e| e.to_string())?.into_iter().collect();
    let inputs = fixture::fixture_inputs(&io, &meta, 0, compiled.input_names().len())?;

    // The single-threaded reference (kernels one thread wide too), and what a settled call
    // allocates.
    let (expected, per_call_allocs) = kernels::parallel::with_threads(1, || -> Result<_, String> {
        let mut rt = compiled.runtime();
        let mut out = Vec::new();
        rt.run_into(&inputs, &mut out).map_err(|e| e.to_string())?;
        let expected = bits(&fixture::flatten(out.drain(..).collect()))?;
        rt.run_into(&inputs, &mut out).map_err(|e| e.to_string())?;
        out.clear();
        let (r, allocs) = count(|| rt.run_into(&inputs, &mut out));
        r.map_err(|e| e.to_string())?;
        Ok((expected, allocs))
    })?;

    let done = Arc::new(AtomicUsize::new(0));
    let total = THREADS * calls;
    let start = Instant::now();
    let handles: Vec<_> = (0..THREADS)
        .map(|_| {
            let (compiled, inputs, expected, done) = (Arc::clone(&compiled), inputs.clone(), expected.clone(), Arc::clone(&done));
            // Each caller computes its calls alone (kernels one thread wide), as a server
            // with a thread per request runs: the four callers are the parallelism.
            std::thread::spawn(move || kernels::parallel::with_threads(1, || -> Result<(), String> {
                let mut rt = compiled.runtime();
                let mut out = Vec::new();
                for call in 0..calls {
                    // A call and the end of its outputs: what it allocates it must also free.
                    let (checked, kept) = net(|| -> Result<(), String> {
                        let (r, allocs) = count(|| rt.run_into(&inputs, &mut out));
                        r.map_err(|e| e.to_string())?;
                        // The first call of a runtime sizes its memory plan; from the second
                        // on, every call allocates what the settled single-threaded call did.
                        if call > 0 && allocs != per_call_allocs {
                            return Err(format!("call {call} allocated {allocs} times, a settled call {per_call_allocs}"));
                        }
                        // Draining keeps `out`'s buffer, as the settled call had it.
                        if bits(&fixture::flatten(out.drain(..).collect()))? != expected {
                            return Err(format!("call {call}: outputs differ from the single-threaded run"));
                        }
                        Ok(())
                    });
                    checked?;
                    if call > 0 && kept != 0 {
                        return Err(format!("call {call} left {kept} allocations behind"));
                    }
                    done.fetch_add(1, Ordering::Relaxed);
                }
                Ok(())
            }))
        })
        .collect();
    // The resident set once a quarter of the calls are done (every runtime settled), and its
    // highest value from there to the end.
    let mut rss_settled = 0;
    let mut rss_end = 0;
    while handles.iter().any(|h| !h.is_finished()) {
        let n = done.load(Ordering::Relaxed);
        if n >= total / 4 {
            let now = rss();
            if rss_settled == 0 {
                rss_settled = now;
            }
            rss_end = rss_end.max(now);
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    for (k, h) in handles.into_iter().enumerate() {
        h.join().map_err(|_| format!("thread {k} panicked"))?.map_err(|e| format!("thread {k}: {e}"))?;
    }
    if rss_settled == 0 {
        rss_settled = rss();
    }
    rss_end = rss_end.max(rss());
    Ok(Soak { per_call_allocs, rss_settled, rss_end, seconds: start.elapsed().as_secs_f64() })
}

#[test]
fn every_zoo_model_runs_from_four_threads_without_drift() {
    let Some(models) = support::required_zoo_models() else { return };
    let calls = calls_per_thread();
    // Growth allowed in the resident set after the calls settle: the allocator's arenas may
    // take a few pages as threads interleave, but a leak of even one small tensor a call
    // would exceed it over the calls of a run.
    const SLACK: usize = 4 << 20;
    let mut failures = Vec::new();
    for model in &models {
        let name = model.file_name().and_then(|n| n.to_str()).unwrap_or("?").to_string();
        match soak(model, calls) {
            Ok(s) => {
                let growth = s.rss_end.saturating_sub(s.rss_settled);
                println!(
                    "{name}: {THREADS} threads x {calls} calls in {:.1} s, bit-identical; {} allocations a call; resident {:.1} MiB settled, {:.1} MiB at most after (+{:.2} MiB)",
                    s.seconds,
                    s.per_call_allocs,
                    s.rss_settled as f64 / 1048576.0,
                    s.rss_end as f64 / 1048576.0,
                    growth as f64 / 1048576.0
                );
                if growth > SLACK {
                    failures.push(format!("{name}: resident memory grew by {growth} bytes after the calls settled"));
                }
            }
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
