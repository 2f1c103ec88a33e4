//! Op coverage: for every ATen op, what the project does with it — declared, run by a kernel
//! (and for which dtypes), planned through an out-variant, decomposed, lowered by the JIT — as
//! `dialect-opt --op-coverage` prints it and `docs/op-coverage.md` records it.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use ir::Context;
use runtime::kernels::probe;
use transforms::lowering::DecompositionTable;

/// What the project does with one op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpCoverage {
    pub name: String,
    /// Whether the op is core ATen (the opset of `run_decompositions()`).
    pub core: bool,
    /// Its own interpreter kernel, with the dtypes a sample call accepts.
    pub kernel: Option<Vec<ir::DType>>,
    /// No kernel of its own, but a mutating op whose functional counterpart runs (the
    /// composite fallback: counterpart, then `copy_`).
    pub via_functional: Option<String>,
    pub out_variant: bool,
    pub decomposition: bool,
    pub jit: bool,
    /// In PyTorch's default export decomposition table.
    pub export_table: bool,
}

impl OpCoverage {
    /// Whether some level runs the op: a kernel, its functional form, or a decomposition.
    pub fn runs(&self) -> bool {
        self.kernel.is_some() || self.via_functional.is_some() || self.decomposition
    }
}

/// The coverage of every op of the aten dialect in `ctx`, sorted by name.
pub fn aten_coverage(ctx: &Context) -> Vec<OpCoverage> {
    let reg = runtime::registry();
    let table = DecompositionTable::core_aten();
    let export: std::collections::HashSet<&str> = dialect_aten::export_decompositions().collect();
    let core: std::collections::HashSet<String> =
        dialect_aten::core_schemas().map(|s| s.op_name()).collect();
    let mut out = Vec::new();
    for s in dialect_aten::schemas() {
        let name = s.op_name();
        let kernel = reg.get(&name).map(|f| probe::accepted_dtypes(s, f));
        let via_functional = if kernel.is_none() && s.is_mutable() {
            dialect_aten::functional_counterpart(ctx, s)
                .ok()
                // The fallback writes back with `copy_`, into a tensor or each tensor of a list.
                .filter(|c| c.written.iter().all(|&i| {
                    use ir::schema::SchemaType;
                    matches!(&s.args[i].ty, SchemaType::Tensor) || matches!(&s.args[i].ty, SchemaType::List { elem, .. } if **elem == SchemaType::Tensor)
                }))
                .filter(|c| reg.contains(&c.op) || table.contains(&c.op))
                .map(|c| c.op)
        } else {
            None
        };
        out.push(OpCoverage {
            core: core.contains(&name),
            kernel,
            via_functional,
            out_variant: runtime::kernels::has_out_variant(&name),
            decomposition: table.contains(&name),
            jit: jit::lowers(ctx, &name),
            export_table: export.contains(name.as_str()),
            name,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// Why an op is neither decomposed nor run, by its kind.
pub fn reason(name: &str) -> &'static str {
    let base = name.trim_start_matches("aten.");
    let has = |k: &str| base.contains(k);
    if has("backward") {
        "autograd op: appears only in training (joint) graphs, which are not run"
    } else if has("sparse") || has("_csr") || has("_csc") || has("_bsr") || has("_bsc") || has("_coo") {
        "sparse layouts are not supported"
    } else if base == "smm" || base.starts_with("sspaddmm") {
        // Both take a sparse first operand; on a dense one PyTorch's CPU kernel refuses the call.
        "sparse layouts are not supported"
    } else if has("quantize") || has("qparams") || has("fbgemm") || has("_prepack") || has("quantized") {
        "quantized tensors are not supported"
    } else if has("cudnn") || has("miopen") || has("cufft") || has("vulkan") || has("_xla") || has("nnpack") || has("mkldnn") {
        "device-specific op"
    } else if base == "chalf" || has("complex32") {
        "complex32 dtype: half-precision complex tensors are not implemented (complex64 and complex128 are)"
    } else if base.starts_with("fft_") || base.starts_with("_fft_") || has("stft") || base.starts_with("linalg_") || base.starts_with("lu") || base.starts_with("_lu") {
        "LAPACK-backed op: LAPACK routines are not implemented"
    } else if has("nested_") {
        "nested tensors are not supported"
    } else if base == "_add_batch_dim" || base == "_remove_batch_dim" {
        "vmap internals: wraps or unwraps functorch's batched tensors while tracing, no tensor computation of an exported graph"
    } else if base == "get_gradients" {
        "distributed autograd: reads the gradients of a distributed autograd context, which a graph run here never has"
    } else if base.starts_with("_test") || base.starts_with("is_") || has("_version") || has("get_device") || has("_has_") || base == "data" {
        "tensor introspection or test op: no tensor computation to run"
    } else if base == "stride.int" {
        "layout query: kernels and the memory plan choose strides, which need not be PyTorch's, so none can be reported truthfully"
    } else if has("lstm") || has("gru") || has("rnn") {
        "recurrent layers: not implemented"
    } else {
        "not implemented yet"
    }
}

fn dtypes(ds: &[ir::DType]) -> String {
    if ds.is_empty() {
        return "not probed".into();
    }
    ds.iter().map(|d| d.mlir_name()).collect::<Vec<_>>().join(" ")
}

fn mark(b: bool) -> &'static str {
    if b { "yes" } else { "—" }
}

/// The report in Markdown: totals, the export decomposition table's coverage, then one row per op.
pub fn report(ctx: &Context) -> String {
    let ops = aten_coverage(ctx);
    let n = ops.len();
    let count = |f: &dyn Fn(&OpCoverage) -> bool| ops.iter().filter(|o| f(o)).count();
    let mut s = String::new();
    let _ = writeln!(s, "# ATen op coverage\n");
    let _ = writeln!(
        s,
        "Generated by `dialect-opt --op-coverage`; `tests/op_coverage.rs` checks that this file is current \
         (regenerate with `BLESS=1 cargo test --release -p integration-tests --test op_coverage`).\n"
    );
    let _ = writeln!(s, "## Totals\n");
    let _ = writeln!(s, "| | ops |\n| --- | ---: |");
    let _ = writeln!(s, "| declared (every schema of PyTorch 2.15's registry) | {n} |");
    let _ = writeln!(s, "| core ATen | {} |", count(&|o| o.core));
    let _ = writeln!(s, "| interpreter kernel | {} |", count(&|o| o.kernel.is_some()));
    let _ = writeln!(s, "| no kernel, mutating: runs as its functional form and `copy_` | {} |", count(&|o| o.via_functional.is_some()));
    let _ = writeln!(s, "| out-variant (planned into the memory plan) | {} |", count(&|o| o.out_variant));
    let _ = writeln!(s, "| decomposition | {} |", count(&|o| o.decomposition));
    let _ = writeln!(s, "| JIT-fusible | {} |", count(&|o| o.jit));
    let _ = writeln!(s, "| runs at every level (kernel, functional form or decomposition) | {} |", count(&|o| o.runs()));
    let _ = writeln!(s, "| core ATen ops that run | {} of {} |\n", count(&|o| o.core && o.runs()), count(&|o| o.core));

    let export: Vec<&OpCoverage> = ops.iter().filter(|o| o.export_table).collect();
    let _ = writeln!(s, "## PyTorch's default export decomposition table\n");
    let _ = writeln!(
        s,
        "`torch.export.default_decompositions()` lists {} aten ops (`dialects/aten/tools/export_decompositions.txt`). \
         Of them {} are decomposed here, {} more run through their functional form (in-place and out= variants, \
         handled from the schema's alias annotations, not one entry per op), {} more have an interpreter kernel \
         (they run at every level and stay aten ops after lowering), and {} do neither:\n",
        export.len(),
        export.iter().filter(|o| o.decomposition).count(),
        export.iter().filter(|o| !o.decomposition && o.via_functional.is_some()).count(),
        export.iter().filter(|o| !o.decomposition && o.via_functional.is_none() && o.kernel.is_some()).count(),
        export.iter().filter(|o| !o.runs()).count(),
    );
    let mut by_reason: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for o in export.iter().filter(|o| !o.runs()) {
        by_reason.entry(reason(&o.name)).or_default().push(&o.name);
    }
    for (r, names) in &by_reason {
        let _ = writeln!(s, "- {r} ({}): {}", names.len(), names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", "));
    }
    let _ = writeln!(s, "\n## Every op\n");
    let _ = writeln!(
        s,
        "Kernel: the dtypes a sample call accepts (`runtime::kernels::probe`; \"not probed\" when the arguments \
         cannot be sampled), or the functional op a mutating op runs as. Export: in the export decomposition table.\n"
    );
    let _ = writeln!(s, "| op | core | kernel | out-variant | decomposition | JIT | export |\n| --- | --- | --- | --- | --- | --- | --- |");
    for o in &ops {
        let kernel = match (&o.kernel, &o.via_functional) {
            (Some(ds), _) => dtypes(ds),
            (None, Some(f)) => format!("as `{f}`"),
            (None, None) => "—".into(),
        };
        let _ = writeln!(
            s,
            "| `{}` | {} | {} | {} | {} | {} | {} |",
            o.name,
            mark(o.core),
            kernel,
            mark(o.out_variant),
            mark(o.decomposition),
            mark(o.jit),
            mark(o.export_table)
        );
    }
    s
}
