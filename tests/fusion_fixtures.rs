//! `fuse-elementwise` on the real programs of `../shared/fixtures`: the LSTM cell (the
//! `torch.export` archives and the TorchScript text) and the `pointwise` export each become
//! exactly one fusion group holding every pointwise op, with the matrix products and views
//! outside; the JIT accepts each group; and the interpreter (which runs a group through its
//! region) still reproduces PyTorch's outputs. Skipped with a reason when the corpus is absent
//! (fails under `CI=true`).

use std::path::{Path, PathBuf};

fn corpus() -> Option<PathBuf> {
    support::required_fixture_dir("")
}

fn run_pipeline(ctx: &ir::Context, m: &mut ir::Module, text: &str) {
    let r = driver::default_pass_registry();
    let mut pm = pass::PassManager::parse(&r, text, pass::PassManagerConfig::default()).expect("pipeline parses");
    let mut sink = Vec::new();
    pm.run(ctx, m, &mut sink).unwrap_or_else(|d| panic!("{text}: {d}"));
}

/// Gives a TorchScript graph's untyped tensor arguments the dtypes and shapes of the recorded
/// inputs of call 0, as TorchScript's profiling executor specializes a graph on what it sees.
fn specialize(m: &mut ir::Module, io: &Path) {
    let tensors: std::collections::HashMap<String, runtime::Tensor> =
        runtime::io::load_safetensors(io).expect("io reads").into_iter().collect();
    let func = m.functions()[0];
    let (mut inputs, results) = ir::builtin::function_signature(m, func).expect("signature");
    let entry = m.entry_block(m.regions(func)[0]).expect("body");
    for (i, a) in m.block_args(entry).to_vec().into_iter().enumerate() {
        let t = &tensors[&format!("call0.in.{i}")];
        let dims: Vec<i64> = t.sizes().iter().map(|&d| d as i64).collect();
        let ty = ir::Type::tensor(t.dtype(), &dims);
        m.set_value_type(a, ty.clone());
        inputs[i] = ty;
    }
    m.set_attr(func, ir::builtin::FUNCTION_TYPE, ir::Attribute::Type(ir::Type::function(inputs, results)));
}

/// The op names directly in the function body and inside each fusion group.
fn layout(m: &ir::Module) -> (Vec<String>, Vec<Vec<String>>, Vec<ir::OpId>) {
    let func = m.functions()[0];
    let body = m.entry_block(m.regions(func)[0]).expect("body");
    let mut outside = Vec::new();
    let mut groups = Vec::new();
    let mut ids = Vec::new();
    for o in m.block_ops(body) {
        if m.op_name(o) == dialect_prim::FUSION_GROUP {
            let b = m.entry_block(m.regions(o)[0]).expect("group body");
            groups.push(m.block_ops(b).into_iter().map(|x| m.op_name(x).to_string()).collect());
            ids.push(o);
        } else {
            outside.push(m.op_name(o).to_string());
        }
    }
    (outside, groups, ids)
}

/// Imports, fuses, checks the layout (one group, every pointwise op inside, nothing else
/// elementwise outside), asks the JIT about the group and compares the outputs with PyTorch's.
fn check(program: &Path, io: &Path, pointwise: usize, torchscript: bool) {
    let ctx = support::context();
    let mut p = import::import_file(&ctx, program, None).expect("imports");
    if torchscript {
        specialize(&mut p.module, io);
        run_pipeline(&ctx, &mut p.module, "builtin.module(shape-propagation)");
    }
    run_pipeline(&ctx, &mut p.module, "builtin.module(fuse-elementwise)");
    ir::verify(&ctx, &p.module).expect("verifies");
    let (outside, groups, ids) = layout(&p.module);
    assert_eq!(groups.len(), 1, "{}: groups {groups:?}, outside {outside:?}", program.display());
    let inside = &groups[0];
    let elementwise = |n: &str| ctx.op_def(n).is_some_and(|d| d.has_trait(ir::Traits::ELEMENTWISE));
    let n_inside = inside.iter().filter(|n| elementwise(n)).count();
    assert!(n_inside >= pointwise, "{}: {inside:?}", program.display());
    assert!(!outside.iter().any(|n| elementwise(n)), "{}: pointwise op left outside: {outside:?}", program.display());
    for n in inside {
        assert!(elementwise(n) || n == "prim.Constant" || n == "prim.Return", "{}: {n} inside the group", program.display());
    }
    assert!(jit::claims(&p.module, ids[0]), "{}: the JIT does not take the group", program.display());
    let compiled = driver::fixture::compile_program(&ctx, &p).expect("compiles");
    let report = driver::fixture::run_fixture(&compiled, io, 0).expect("runs");
    assert!(report.ok(), "{}: {:?}", program.display(), report.outputs.iter().map(|(k, c)| format!("{k} {}", c.text)).collect::<Vec<_>>());
}

#[test]
fn lstm_cell_export_is_one_group() {
    let Some(root) = corpus() else { return };
    for dir in ["export/lstm_cell", "bench/bench_lstm_cell"] {
        for file in ["model.pt2", "core.pt2"] {
            let d = root.join(dir);
            // 3 bias additions per gate (4 gates) and the 9 ops of the cell state.
            check(&d.join(file), &d.join("io.safetensors"), 12 + 9, false);
        }
    }
}

#[test]
fn lstm_cell_torchscript_is_one_group() {
    let Some(root) = corpus() else { return };
    let ts = root.join("torchscript");
    check(&ts.join("lstm_cell.graph.txt"), &ts.join("lstm_cell.io.safetensors"), 12 + 9, true);
}

#[test]
fn pointwise_export_is_one_group() {
    let Some(root) = corpus() else { return };
    let d = root.join("export/pointwise");
    for file in ["model.pt2", "core.pt2"] {
        check(&d.join(file), &d.join("io.safetensors"), 16, false);
    }
}
