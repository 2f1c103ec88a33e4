//! The fixture corpus through the `-O2` pipeline: every exported program (`model.pt2` and
//! `core.pt2`) of `../shared/fixtures/{export,bench}` whose io was saved, and every TorchScript
//! program of `../shared/fixtures/torchscript` for each of its recorded calls, is imported, run
//! through the `-O2` pipeline (functionalized, decomposed, optimized, lowered to Edge, fused
//! into `prim.FusionGroup`s and partitioned), compiled twice — fusion groups interpreted, and
//! fusion groups run by the JIT — and each compiled program is compared with PyTorch's outputs
//! within the fixture's tolerance (both calls of stateful programs such as
//! `buffer_mutation`). Every one must match through both backends. Skips with a reason when
//! the corpus is absent (fails under `CI=true`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

fn corpus() -> Option<PathBuf> {
    support::required_fixture_dir("")
}

/// Runs the pipeline of `level`; returns the names of the ops left, sorted and deduplicated.
fn lower(ctx: &ir::Context, module: &mut ir::Module, level: u32) -> Result<Vec<String>, String> {
    let registry = driver::default_pass_registry();
    let text = driver::pipeline_for_level(level);
    // Every pass of the pipeline is followed by the verifier, so a pass that leaves invalid IR
    // fails here by name.
    let config = pass::PassManagerConfig { verify_each: true, ..pass::PassManagerConfig::default() };
    let mut pm = pass::PassManager::parse(&registry, &text, config).map_err(|e| format!("pipeline: {e}"))?;
    let mut sink = Vec::new();
    pm.run(ctx, module, &mut sink).map_err(|d| format!("-O{level}: {d}"))?;
    let mut names = Vec::new();
    module.walk(module.top(), ir::WalkOrder::PreOrder, &mut |op| names.push(module.op_name(op).to_string()));
    names.sort();
    names.dedup();
    Ok(names)
}

/// Gives the untyped tensor arguments of a TorchScript graph the dtype and shape of the call's
/// recorded inputs, as TorchScript's profiling executor specializes a graph on the inputs it
/// sees: Edge needs known dtypes, which a TorchScript graph does not state.
fn specialize_on_inputs(m: &mut ir::Module, io: &Path, call: usize) -> Result<(), String> {
    let tensors: std::collections::HashMap<String, runtime::Tensor> =
        runtime::io::load_safetensors(io).map_err(|e| format!("{}: {e}", io.display()))?.into_iter().collect();
    let func = m.function("forward").or_else(|| m.functions().first().copied()).ok_or("no function")?;
    let (mut inputs, results) = ir::builtin::function_signature(m, func).ok_or("no function type")?;
    let entry = m.regions(func).first().and_then(|&r| m.entry_block(r)).ok_or("no body")?;
    let args = m.block_args(entry).to_vec();
    let attrs: Vec<ir::Attribute> = m.attr(func, ir::builtin::ARG_ATTRS).and_then(|a| a.as_array()).map(<[_]>::to_vec).unwrap_or_default();
    let mut user = 0;
    for (i, &a) in args.iter().enumerate() {
        let marked = attrs.get(i).is_some_and(|d| ["prim.param", "prim.buffer", "prim.constant"].iter().any(|k| d.dict_get(k).is_some()));
        if marked {
            continue;
        }
        let t = tensors.get(&format!("call{call}.in.{user}")).or_else(|| tensors.get(&format!("in.{user}")));
        user += 1;
        let (Some(t), true) = (t, m.value_type(a).is_tensor()) else { continue };
        let dims: Vec<i64> = t.sizes().iter().map(|&d| d as i64).collect();
        let ty = ir::Type::tensor(t.dtype(), &dims);
        m.set_value_type(a, ty.clone());
        if let Some(slot) = inputs.get_mut(i) {
            *slot = ty;
        }
    }
    m.set_attr(func, ir::builtin::FUNCTION_TYPE, ir::Attribute::Type(ir::Type::function(inputs, results)));
    Ok(())
}

/// The backends a lowered fixture runs through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Backend {
    Interp,
    Jit,
}

/// Fusion groups of the fixtures through the JIT.
#[derive(Default)]
struct FusionCount {
    groups: usize,
    compiled: usize,
    declined: Vec<String>,
}

/// Imports and lowers a fixture program to `-O2`; checks the lowered form.
fn lowered(ctx: &ir::Context, program: &Path, io: &Path, call: usize) -> Result<import::Program, String> {
    let mut p = import::import_file(ctx, program, None).map_err(|e| format!("import: {e}"))?;
    if program.to_string_lossy().ends_with(".graph.txt") {
        specialize_on_inputs(&mut p.module, io, call)?;
    }
    let ops = lower(ctx, &mut p.module, 2)?;
    // Scalar and SymInt computations (`aten.size.int`, `aten.lt.int`) stay aten ops, as EXIR
    // leaves them; every tensor op must be Edge.
    let aten: Vec<&String> = ops.iter().filter(|n| n.starts_with("aten.") && !n.ends_with(".int") && !n.ends_with(".float")).collect();
    if !aten.is_empty() {
        return Err(format!("aten ops remain after -O2: {aten:?}"));
    }
    if !ops.iter().any(|n| n == "backend.partition") {
        return Err("no backend.partition after -O2".into());
    }
    Ok(p)
}

/// Runs a lowered fixture through one backend and compares with PyTorch.
fn check(
    ctx: &ir::Context,
    p: &import::Program,
    io: &Path,
    call: usize,
    backend: Backend,
    jit: &Arc<jit::Jit>,
    count: &mut FusionCount,
) -> Result<String, String> {
    let fusion = match backend {
        Backend::Interp => None,
        Backend::Jit => Some(jit.clone() as Arc<dyn runtime::FusionCompiler>),
    };
    let compiled = driver::fixture::compile_program_with(ctx, p, runtime::CompileOptions { fusion, ..Default::default() })?;
    if backend == Backend::Jit {
        for g in compiled.fusion_groups() {
            count.groups += 1;
            match &g.declined {
                None => count.compiled += 1,
                Some(reason) => count.declined.push(format!("{} ({} ops): {reason}", g.loc, g.ops)),
            }
        }
    }
    let report = driver::fixture::run_fixture(&compiled, io, call)?;
    let lines: Vec<String> = report.outputs.iter().map(|(k, c)| format!("{k} {}", c.text)).collect();
    if !report.ok() {
        return Err(lines.join("; "));
    }
    steady_state_runs_agree(&compiled, io, call)?;
    Ok(lines.join("; "))
}

/// Runs a stateless program four times on one runtime: from the second run on, planned
/// intermediates (fusion-group results among them) live in the memory plan's slab; every
/// run's outputs must equal the first run's, bit for bit.
fn steady_state_runs_agree(compiled: &runtime::CompiledProgram, io: &Path, call: usize) -> Result<(), String> {
    let meta = driver::fixture::read_meta(io)?;
    if meta.calls.unwrap_or(1) > 1 {
        return Ok(());
    }
    let tensors: std::collections::HashMap<String, runtime::Tensor> =
        runtime::io::load_safetensors(io).map_err(|e| format!("{}: {e}", io.display()))?.into_iter().collect();
    let inputs = driver::fixture::fixture_inputs(&tensors, &meta, call, compiled.input_names().len())?;
    let mut rt = compiled.runtime();
    let bits = |outs: Vec<runtime::IValue>| -> Vec<Vec<u64>> {
        driver::fixture::flatten(outs)
            .iter()
            .map(|v| v.as_tensor().map(|t| t.to_vec_f64().iter().map(|x| x.to_bits()).collect()).unwrap_or_default())
            .collect()
    };
    let first = bits(rt.run(&inputs).map_err(|e| e.to_string())?);
    for run in 2..=4 {
        if bits(rt.run(&inputs).map_err(|e| e.to_string())?) != first {
            return Err(format!("run {run} differs from the first run"));
        }
    }
    Ok(())
}

fn cases(root: &Path) -> Vec<(String, PathBuf, PathBuf, usize)> {
    let mut cases = Vec::new();
    for group in ["export", "bench"] {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join(group)).into_iter().flatten().flatten().map(|e| e.path()).collect();
        dirs.sort();
        for d in dirs {
            let meta = std::fs::read_to_string(d.join("meta.json")).unwrap_or_default();
            if meta.contains("\"io_saved\": false") {
                continue;
            }
            for file in ["model.pt2", "core.pt2"] {
                let name = format!("{group}/{}/{file}", d.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default());
                cases.push((name, d.join(file), d.join("io.safetensors"), 0));
            }
        }
    }
    let ts = root.join("torchscript");
    let mut graphs: Vec<PathBuf> = std::fs::read_dir(&ts)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".graph.txt"))
        .collect();
    graphs.sort();
    for g in graphs {
        let stem = g.file_name().map(|n| n.to_string_lossy().trim_end_matches(".graph.txt").to_string()).unwrap_or_default();
        let io = ts.join(format!("{stem}.io.safetensors"));
        let calls = driver::fixture::read_meta(&io).map(|m| m.scalar_calls.len()).unwrap_or(0);
        for call in 0..calls.max(1) {
            cases.push((format!("torchscript/{stem} call {call}"), g.clone(), io.clone(), call));
        }
    }
    cases
}

#[test]
fn every_public_fixture_matches_pytorch_at_o2_through_both_backends() {
    let Some(root) = corpus() else { return };
    let ctx = driver::default_context();
    let cases = cases(&root);
    let jit = Arc::new(jit::Jit::default());
    let mut count = FusionCount::default();
    let mut failures = Vec::new();
    let mut runs = 0;
    for (name, program, io, call) in &cases {
        let p = match lowered(&ctx, program, io, *call) {
            Ok(p) => p,
            Err(e) => {
                println!("FAIL  {name:<40} {e}");
                failures.push(name.clone());
                continue;
            }
        };
        for backend in [Backend::Interp, Backend::Jit] {
            runs += 1;
            match check(&ctx, &p, io, *call, backend, &jit, &mut count) {
                Ok(detail) => println!("ok    {name:<40} {backend:<6?} {detail}"),
                Err(e) => {
                    println!("FAIL  {name:<40} {backend:<6?} {e}");
                    failures.push(format!("{name} ({backend:?})"));
                }
            }
        }
    }
    let stats = jit.stats();
    let mut times = jit.compile_times();
    times.sort();
    let median = times.get(times.len() / 2).copied().unwrap_or_default();
    println!(
        "{} fixture programs lowered; {runs} runs (interpreter and JIT), {} failed",
        cases.len(),
        failures.len()
    );
    println!(
        "fusion groups through the JIT: {} ({} compiled, {} declined); kernels: {} compiled (median {:?}), {} failed specializations; cache: {} hits, {} misses; calls: {} native, {} interpreted",
        count.groups,
        count.compiled,
        count.declined.len(),
        stats.cache.kernels,
        median,
        stats.cache.failures,
        stats.cache.hits,
        stats.cache.misses,
        stats.native_calls,
        stats.interpreted_calls
    );
    for d in &count.declined {
        println!("declined: {d}");
    }
    assert!(cases.len() >= 49, "only {} fixture programs found", cases.len());
    assert!(failures.is_empty(), "fixtures not matching PyTorch at -O2: {failures:?}");
    // The corpus has elementwise chains (pointwise, lstm_cell, ffn, …): the JIT must have run
    // native code for them.
    assert!(count.compiled > 0 && stats.native_calls > 0, "the JIT ran no fusion group");
}

#[test]
fn buffer_mutation_at_o2_matches_over_two_calls_through_the_jit() {
    let Some(root) = corpus() else { return };
    let ctx = driver::default_context();
    let dir = root.join("export/buffer_mutation");
    let mut p = import::import_file(&ctx, &dir.join("model.pt2"), None).expect("import");
    lower(&ctx, &mut p.module, 2).expect("-O2");
    let jit: Arc<dyn runtime::FusionCompiler> = Arc::new(jit::Jit::default());
    let compiled =
        driver::fixture::compile_program_with(&ctx, &p, runtime::CompileOptions { fusion: Some(jit), ..Default::default() })
            .expect("compile");
    let report = driver::fixture::run_fixture(&compiled, &dir.join("io.safetensors"), 0).expect("run");
    assert!(report.outputs.iter().any(|(k, _)| k.starts_with("call2.")), "no second call compared: {:?}", report.outputs);
    assert!(report.ok(), "{:?}", report.outputs);
}
