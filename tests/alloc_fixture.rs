//! Steady-state allocations of real fixture programs (`export/mlp`, `export/lstm_cell`,
//! torch.export core ATen), counted by a global allocator around `run_into`.
//!
//! After the first run sizes the memory plan, the count per run must be constant and small:
//! the input handles, the fresh outputs and the kernels that have no out-variant, never one
//! allocation per planned intermediate. The test also checks that the planner placed the
//! intermediates (a plan with shared storage exists) and that running without a plan
//! allocates more. Skips with a reason when `../shared/fixtures` is absent (fails under `CI=true`).

#[path = "../crates/runtime/tests/common/counting.rs"]
mod counting;

use std::collections::HashMap;
use std::path::PathBuf;

use counting::{Counting, count};
use driver::fixture;
use runtime::{CompileOptions, IValue, Tensor};

#[global_allocator]
static GLOBAL: Counting = Counting;


fn corpus() -> Option<PathBuf> {
    support::fixture_dir("export")
}

/// What one fixture allocates.
struct Counts {
    first: usize,
    steady: Vec<usize>,
    unplanned: usize,
    planned_values: usize,
    slab_bytes: usize,
    unshared_bytes: usize,
}

fn measure(name: &str) -> Result<Counts, String> {
    let dir = corpus().ok_or("corpus missing")?.join(name);
    let ctx = support::context();
    let imported = import::import_file(&ctx, &dir.join("core.pt2"), None).map_err(|e| format!("{name}: {e}"))?;
    let weights = fixture::weights_from_import(&imported.weights)?;
    let io_path = dir.join("io.safetensors");
    let meta = fixture::read_meta(&io_path)?;
    let io: HashMap<String, Tensor> =
        runtime::io::load_safetensors(&io_path).map_err(|e| e.to_string())?.into_iter().collect();

    let program = runtime::compile(&imported.module, &ctx, &weights, CompileOptions::default()).map_err(|e| e.to_string())?;
    let inputs = fixture::fixture_inputs(&io, &meta, 0, program.input_names().len())?;
    let mut rt = program.runtime();
    let mut out: Vec<IValue> = Vec::with_capacity(4);
    let (r, first) = count(|| rt.run_into(&inputs, &mut out));
    r.map_err(|e| e.to_string())?;
    // The second run is the first on the installed plan.
    rt.run_into(&inputs, &mut out).map_err(|e| e.to_string())?;
    let mut steady = Vec::new();
    for _ in 0..10 {
        let (r, n) = count(|| rt.run_into(&inputs, &mut out));
        r.map_err(|e| e.to_string())?;
        steady.push(n);
    }
    // The steady-state outputs still match PyTorch.
    let (rtol, atol) = (meta.rtol.unwrap_or(1e-4), meta.atol.unwrap_or(1e-5));
    for (i, v) in fixture::flatten(out.clone()).iter().enumerate() {
        let want = io.get(&format!("out.{i}")).ok_or_else(|| format!("{name}: out.{i} missing"))?;
        let c = fixture::compare(v, want, rtol, atol);
        if !c.ok {
            return Err(format!("{name} out.{i}: {}", c.text));
        }
    }
    let plan = rt.memory_plan().ok_or_else(|| format!("{name}: no memory plan after {} runs", steady.len() + 2))?;
    let (slab_bytes, unshared_bytes) = (plan.slab_bytes, plan.unshared_bytes);

    let plain = runtime::compile(&imported.module, &ctx, &weights, CompileOptions { memory_plan: false, ..Default::default() })
        .map_err(|e| e.to_string())?;
    let mut prt = plain.runtime();
    prt.run_into(&inputs, &mut out).map_err(|e| e.to_string())?;
    let (r, unplanned) = count(|| prt.run_into(&inputs, &mut out));
    r.map_err(|e| e.to_string())?;
    Ok(Counts { first, steady, unplanned, planned_values: program.num_planned_values(), slab_bytes, unshared_bytes })
}

fn check(name: &str, max_steady: usize) -> Result<(), String> {
    let c = measure(name)?;
    println!(
        "{name}: first run {} allocations, steady state {:?} per run, without a plan {}; {} planned values in a {} byte slab ({} bytes unshared)",
        c.first, c.steady, c.unplanned, c.planned_values, c.slab_bytes, c.unshared_bytes
    );
    assert!(c.steady.iter().all(|&n| n == c.steady[0]), "{name}: allocations per run vary: {:?}", c.steady);
    assert!(c.steady[0] <= max_steady, "{name}: {} allocations per steady-state run (at most {max_steady})", c.steady[0]);
    assert!(c.planned_values > 0, "{name}: no intermediate is planned");
    assert!(c.slab_bytes > 0 && c.slab_bytes <= c.unshared_bytes, "{name}: slab {} bytes, unshared {}", c.slab_bytes, c.unshared_bytes);
    assert!(c.unplanned > c.steady[0], "{name}: the plan saves nothing ({} vs {})", c.unplanned, c.steady[0]);
    Ok(())
}

fn skip() -> Result<bool, String> {
    if corpus().is_some() {
        return Ok(false);
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        return Err("CI=true but ../shared/fixtures/export is missing".into());
    }
    println!("skipped: ../shared/fixtures/export is absent");
    Ok(true)
}

#[test]
fn mlp_fixture_steady_state_allocations() -> Result<(), String> {
    if skip()? {
        return Ok(());
    }
    // Measured: 18 per run (59 without a plan); 2 planned values.
    check("mlp", 20)
}

#[test]
fn lstm_cell_fixture_steady_state_allocations() -> Result<(), String> {
    if skip()? {
        return Ok(());
    }
    // Measured: 102 per run (203 without a plan); 6 planned values. Most of what is left comes
    // from ops without an out-variant (sigmoid, tanh: storage, `Arc`, sizes, strides and the
    // kernel's result vector each) and from views (permute, split_with_sizes).
    check("lstm_cell", 110)
}
