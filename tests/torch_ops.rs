//! Ops checked against PyTorch's results, one data directory per family: `tests/data/recurrent/`
//! (the recurrent layers and cells, which run through their decompositions) and
//! `tests/data/linalg/` (the linear-algebra kernels and decompositions), `tests/data/selection/`
//! (`where(condition)`, `isin`, `split_with_sizes_copy`, `mvlgamma` and their kin),
//! `tests/data/creation/` (`linspace`/`logspace` overloads, `_chunk_cat`, `pad_sequence`,
//! `combinations`, masked indexing and the other creation and rearrangement ops torch.export
//! leaves), `tests/data/householder/` (rank and pseudo-inverse with tolerance tensors,
//! `orgqr`), `tests/data/packed/` (`_pad_packed_sequence`, `lstm.data` and the other
//! recurrent layers over packed batches) and
//! `tests/data/accumulation/` (sums, means and products over many `bf16`/`f16`
//! elements, whose results show that they accumulate in `f32`), and the ops of PyTorch's
//! export decomposition table that run here through decompositions or kernels of their own:
//! `einsum/`, `quantile/`, `gathering/` (`repeat_interleave` by a tensor, `embedding_bag`,
//! `max_unpool`), `sampling/` (grid sampling, affine grids, the attention and weight-norm ops
//! returning intermediates), `special/` (`i0`, `polygamma`, incomplete gamma, `matrix_exp`),
//! `margin_loss/`, `ctc/`, `conv_forms/`, `gradient/`, `antialias/` (the antialiased resizes),
//! `histogram/` (`histogramdd`), `ldl/` (the LDLᵀ factorization and solve), `sobol_prune/`
//! (`_sobol_engine_draw`, `_rowwise_prune`) and
//! `complex/` (complex tensors, the Fourier transforms, `stft`/`istft`, `linalg_eigvals`; its
//! `complex128` tensors are stored as their real views and its eigenvalues compared sorted). Each directory's
//! `make.py` writes `cases.json` (the op with its attributes, its operands as input indices —
//! a list of indices is one `Tensor[]` operand — and its number of results) and
//! `io.safetensors` (random inputs and PyTorch 2.15's results). Every case runs at `-O0` and
//! through the `-O2` pipeline; where PyTorch refuses the call (`"error": true`), both runs must
//! fail. Results determined only up to sign (eigenvectors, singular vectors: `"up_to_sign"`)
//! are compared after each column or row is given the sign of its largest entry.

use runtime::Tensor;
use support::torch_case::{Operand, check_levels, program};

/// Runs every case of `tests/data/<dir>` and returns how many there were; panics listing the
/// runs that differ from PyTorch.
fn check_dir(dir: &str, atol: f64, rtol: f64) -> usize {
    let (cases, tensors) = support::torch_case::load(dir);
    let ctx = driver::default_context();
    let mut failures = Vec::new();
    for case in &cases {
        let name = case["name"].as_str().expect("name");
        let op = case["op"].as_str().expect("op");
        let n = case["inputs"].as_u64().expect("inputs") as usize;
        // complex128 tensors are stored as their real views (safetensors has no complex128).
        let c128 = |key: &str, i: usize| case[key].as_array().is_some_and(|l| l.iter().any(|v| v.as_u64() == Some(i as u64)));
        let inputs: Vec<Tensor> = (0..n)
            .map(|i| {
                let t = tensors[&format!("{name}.in.{i}")].clone();
                if c128("c128_in", i) { runtime::kernels::complex::view_as_complex("load", &t).expect("a complex128 input") } else { t }
            })
            .collect();
        let index = |v: &serde_json::Value| v.as_u64().expect("an input index") as usize;
        let operands: Vec<Operand> = match case["operands"].as_array() {
            Some(os) => os
                .iter()
                .map(|o| match o.as_array() {
                    Some(l) => Operand::List(l.iter().map(index).collect()),
                    None => Operand::Tensor(index(o)),
                })
                .collect(),
            None => (0..n).map(Operand::Tensor).collect(),
        };
        let outputs = case["outputs"].as_u64().unwrap_or(1) as usize;
        let src = if case["tail_list"].as_bool().unwrap_or(false) {
            program_tail_list(op, &inputs, &operands, outputs)
        } else {
            program(op, &inputs, &operands, outputs, case["list_out"].as_bool().unwrap_or(false))
        };
        let signs = |i: usize| case["up_to_sign"][i.to_string()].as_str().map(|m| m == "columns");
        let want: Option<Vec<Tensor>> = (!case["error"].as_bool().unwrap_or(false))
            .then(|| (0..outputs).map(|i| with_signs(&tensors[&format!("{name}.out.{i}")], signs(i))).collect());
        let sorted = case["sorted"].as_bool().unwrap_or(false);
        let adjust = |i: usize, t: &Tensor| {
            let t = &if sorted { sort_complex(t) } else { t.clone() };
            if c128("c128_out", i) && t.dtype() == ir::DType::C128 {
                runtime::kernels::complex::view_as_real("compare", t).expect("a complex128 result")
            } else {
                with_signs(t, signs(i))
            }
        };
        failures.extend(check_levels(&ctx, name, &src, &inputs, want.as_deref(), atol, rtol, &adjust));
    }
    assert!(failures.is_empty(), "{} of {} runs differ from PyTorch:\n{}", failures.len(), 2 * cases.len(), failures.join("\n"));
    cases.len()
}

/// The function applying `op` to `operands` for an op returning `(Tensor, Tensor[])`
/// (`histogramdd`): its `outputs` results are the tensor and then the list's elements.
fn program_tail_list(op: &str, inputs: &[Tensor], operands: &[Operand], outputs: usize) -> String {
    const ANY: &str = "tensor<*x!prim.any>";
    let list = format!("!prim.list<{ANY}>");
    // The two-result call, rewritten so its second result is unpacked into the rest.
    let two = program(op, inputs, operands, 2, false);
    let rest: Vec<String> = (1..outputs).map(|i| format!("%r{i}")).collect();
    let anys = vec![ANY; outputs].join(", ");
    let mut body = String::new();
    let mut params = String::new();
    for line in two.lines() {
        if let Some(p) = line.strip_prefix("func.func @f(") {
            params = p.split_once(") -> ").map(|(p, _)| p.to_string()).unwrap_or_default();
        } else if line.trim_start().starts_with("%r0, %r1 = ") {
            let call = line.trim_start().trim_start_matches("%r0, %r1 = ");
            let call = call.replace(&format!("-> ({ANY}, {ANY})"), &format!("-> ({ANY}, {list})"));
            body += &format!("  %r0, %o = {call}\n");
            if !rest.is_empty() {
                let rest_types = vec![ANY; rest.len()].join(", ");
                body += &format!("  {} = prim.ListUnpack %o : ({list}) -> ({rest_types})\n", rest.join(", "));
            }
        } else if line.starts_with("  %") {
            body += line;
            body += "\n";
        }
    }
    let results: Vec<String> = (0..outputs).map(|i| format!("%r{i}")).collect();
    format!("func.func @f({params}) -> ({anys}) {{\n{body}  func.return {} : {anys}\n}}\n", results.join(", "))
}

/// Each row of the complex `t` (its last dim) sorted by real part (rounded to 6 decimals, so
/// that rounding does not split the two members of a conjugate pair), then imaginary part: the
/// order `make.py` gives PyTorch's eigenvalues, which a different but equally valid QR iteration
/// may converge to in another order.
fn sort_complex(t: &Tensor) -> Tensor {
    let parts = runtime::kernels::complex::view_as_real("sort", t).expect("a complex tensor").to_vec_f64();
    let n = t.sizes().last().copied().unwrap_or(1).max(1);
    let mut out = Vec::with_capacity(parts.len());
    for row in parts.chunks(2 * n) {
        let mut pairs: Vec<(f64, f64)> = row.chunks(2).map(|p| (p[0], p[1])).collect();
        pairs.sort_by(|a, b| ((a.0 * 1e6).round(), a.1).partial_cmp(&((b.0 * 1e6).round(), b.1)).unwrap_or(std::cmp::Ordering::Equal));
        out.extend(pairs.into_iter().flat_map(|(r, i)| [r, i]));
    }
    let mut sizes = t.sizes().to_vec();
    sizes.push(2);
    let real = Tensor::from_vec(out, &sizes).and_then(|r| r.to_dtype(t.dtype().to_real())).expect("parts");
    runtime::kernels::complex::view_as_complex("sort", &real).expect("a complex tensor")
}

/// `t` with each column (`Some(true)`) or row (`Some(false)`) of its matrices given the sign
/// of its largest entry; `t` itself for `None`.
fn with_signs(t: &Tensor, columns: Option<bool>) -> Tensor {
    let Some(columns) = columns else { return t.clone() };
    let s = t.sizes();
    let (rows, cols) = (s[s.len() - 2], s[s.len() - 1]);
    let mut v = t.to_vec_f64();
    for m in v.chunks_mut((rows * cols).max(1)) {
        let (lines, len) = if columns { (cols, rows) } else { (rows, cols) };
        for l in 0..lines {
            let at = |k: usize| if columns { k * cols + l } else { l * cols + k };
            let big = (0..len).map(at).fold(0.0f64, |b, i| if m[i].abs() > b.abs() { m[i] } else { b });
            if big < 0.0 {
                (0..len).map(at).for_each(|i| m[i] = -m[i]);
            }
        }
    }
    Tensor::from_vec(v, s).and_then(|r| r.to_dtype(t.dtype())).expect("a tensor of the same shape")
}

#[test]
fn recurrent_layers_and_cells_match_pytorch() {
    let n = check_dir("recurrent", 1e-5, 1e-5);
    assert!(n >= 15, "only {n} cases");
}

#[test]
fn linear_algebra_matches_pytorch() {
    let n = check_dir("linalg", 1e-4, 1e-4);
    assert!(n >= 75, "only {n} cases");
}

#[test]
fn selection_ops_match_pytorch() {
    let n = check_dir("selection", 1e-5, 1e-5);
    assert!(n >= 12, "only {n} cases");
}

#[test]
fn creation_and_rearrangement_ops_match_pytorch() {
    let n = check_dir("creation", 1e-5, 1e-5);
    assert!(n >= 60, "only {n} cases");
}

#[test]
fn tolerance_tensors_and_householder_products_match_pytorch() {
    let n = check_dir("householder", 1e-4, 1e-4);
    assert!(n >= 18, "only {n} cases");
}

#[test]
fn packed_sequences_and_packed_recurrent_layers_match_pytorch() {
    let n = check_dir("packed", 1e-5, 1e-5);
    assert!(n >= 16, "only {n} cases");
}

/// Summing the 8,192 `bf16` elements of `sum_bf16` one by one in `bf16` gives 512 (and the `f16`
/// case 4,096) where PyTorch, accumulating in `f32`, gives 8,192 (8,208) (`make.py` checks that each case's element-type sum differs by many units in the
/// last place); the results must match PyTorch's to within a fraction of a unit in the last place.
#[test]
fn half_precision_accumulates_in_f32() {
    let n = check_dir("accumulation", 1e-5, 1.0 / 4096.0);
    assert!(n >= 6, "only {n} cases");
}

/// `bernoulli(p)` draws from the runtime's own generator (PyTorch's bit stream cannot be
/// expected, and the runtime's generator takes no seed), so its statistics are checked: at every
/// level and for each float dtype the result has `p`'s shape and dtype, holds only 0 and 1, is 0
/// where `p` is 0 and 1 where it is 1, and elsewhere is 1 about as often as `p` says.
#[test]
fn bernoulli_draws_zeros_and_ones_with_probability_p() {
    let ctx = driver::default_context();
    let n = 20_000;
    let p: Vec<f64> = (0..3 * n).map(|i| [0.0, 1.0, 0.3][i / n]).collect();
    for dtype in [ir::DType::F32, ir::DType::F64, ir::DType::BF16, ir::DType::F16] {
        let input = Tensor::from_vec(p.clone(), &[3, n]).and_then(|t| t.to_dtype(dtype)).expect("p");
        let src = support::torch_case::program("aten.bernoulli", std::slice::from_ref(&input), &[Operand::Tensor(0)], 1, false);
        for level in [0, 2] {
            let out = support::torch_case::run(&ctx, &src, level, std::slice::from_ref(&input)).expect("bernoulli runs");
            let r = &out[0];
            assert_eq!((r.dtype(), r.sizes()), (dtype, input.sizes()), "-O{level} {dtype:?}");
            let v = r.to_vec_f64();
            assert!(v.iter().all(|&x| x == 0.0 || x == 1.0), "-O{level} {dtype:?}: not only zeros and ones");
            assert!(v[..n].iter().all(|&x| x == 0.0), "-O{level} {dtype:?}: a one where p = 0");
            assert!(v[n..2 * n].iter().all(|&x| x == 1.0), "-O{level} {dtype:?}: a zero where p = 1");
            // 20,000 draws of p = 0.3 (p rounded to the dtype): the mean's standard deviation is 0.0032.
            let mean = v[2 * n..].iter().sum::<f64>() / n as f64;
            assert!((mean - 0.3).abs() < 0.02, "-O{level} {dtype:?}: mean {mean} where p = 0.3");
        }
    }
}

/// `tests/data/complex/`: complex tensors (views, conversions, arithmetic), the transform
/// kernels, every `torch.fft` op, `stft` and `istft`, and the calls PyTorch refuses.
#[test]
fn complex_tensors_and_transforms_match_pytorch() {
    let n = check_dir("complex", 1e-4, 1e-4);
    assert!(n >= 400, "only {n} cases");
}

/// Ops without a complex form refuse complex operands with an error naming the op and the
/// dtype, at every level, rather than computing on the real parts.
#[test]
fn ops_without_complex_support_refuse_complex_tensors() {
    let ctx = driver::default_context();
    let z = runtime::kernels::complex::view_as_complex("t", &Tensor::from_vec(vec![1.0f32, 2.0, -3.0, 0.5], &[2, 2]).expect("parts"))
        .expect("a complex tensor");
    for op in ["aten.exp", "aten.sum", "aten.sigmoid"] {
        let src = program(op, std::slice::from_ref(&z), &[Operand::Tensor(0)], 1, false);
        for level in [0, 2] {
            let err = support::torch_case::run(&ctx, &src, level, std::slice::from_ref(&z)).expect_err("complex input must be refused");
            let base = op.trim_start_matches("aten.");
            assert!(err.contains(base) && err.contains("complex"), "-O{level} {op}: {err}");
        }
    }
}

#[test]
fn einsum_matches_pytorch() {
    let n = check_dir("einsum", 1e-4, 1e-2);
    assert!(n >= 36, "only {n} cases");
}

#[test]
fn quantiles_match_pytorch() {
    let n = check_dir("quantile", 1e-5, 1e-5);
    assert!(n >= 48, "only {n} cases");
}

#[test]
fn gathering_ops_match_pytorch() {
    let n = check_dir("gathering", 1e-5, 1e-5);
    assert!(n >= 36, "only {n} cases");
}

#[test]
fn sampling_and_attention_intermediates_match_pytorch() {
    let n = check_dir("sampling", 1e-5, 1e-5);
    assert!(n >= 56, "only {n} cases");
}

#[test]
fn special_functions_match_pytorch() {
    let n = check_dir("special", 1e-5, 1e-5);
    assert!(n >= 24, "only {n} cases");
}

#[test]
fn multilabel_margin_loss_matches_pytorch() {
    let n = check_dir("margin_loss", 1e-5, 1e-5);
    assert!(n >= 13, "only {n} cases");
}

#[test]
fn convolution_spellings_match_pytorch() {
    let n = check_dir("conv_forms", 1e-4, 1e-4);
    assert!(n >= 14, "only {n} cases");
}

#[test]
fn gradient_matches_pytorch() {
    let n = check_dir("gradient", 1e-5, 1e-5);
    assert!(n >= 22, "only {n} cases");
}

/// `_upsample_{bilinear,bicubic,lanczos}2d_aa` and their `.vec` forms in `f32`, `f64` and
/// `uint8`; the `uint8` results are PyTorch's fixed-point ones and must match exactly.
#[test]
fn antialiased_resizes_match_pytorch() {
    let n = check_dir("antialias", 1e-5, 1e-5);
    assert!(n >= 99, "only {n} cases");
}

/// `histogramdd` with bin counts, one count for all dims and explicit edges; its results are
/// the histogram and each dim's edges.
#[test]
fn histogramdd_matches_pytorch() {
    let n = check_dir("histogram", 1e-5, 1e-5);
    assert!(n >= 37, "only {n} cases");
}

#[test]
fn sobol_draws_and_rowwise_pruning_match_pytorch() {
    let n = check_dir("sobol_prune", 0.0, 0.0);
    assert!(n >= 22, "only {n} cases");
}

#[test]
fn ctc_loss_matches_pytorch() {
    let n = check_dir("ctc", 1e-5, 1e-5);
    assert!(n >= 13, "only {n} cases");
}

/// The symmetric-indefinite factorization: `LD` and LAPACK's pivots (2×2 blocks included),
/// `info` for singular matrices, and solves with broadcast batches.
#[test]
fn ldl_factorization_and_solve_match_pytorch() {
    let n = check_dir("ldl", 1e-4, 1e-4);
    assert!(n >= 35, "only {n} cases");
}

/// `tests/data/complex/spectrogram/model.pt2`: a `torch.export` program computing a magnitude
/// spectrogram (`stft(...).abs()`) and returning the complex spectrum too, imported and run at
/// `-O0` and `-O2` against PyTorch's outputs (the complex one read from safetensors' `C64`).
#[test]
fn an_exported_spectrogram_matches_pytorch() {
    let dir = support::workspace_root().join("tests/data/complex/spectrogram");
    let ctx = driver::default_context();
    for level in [0, 2] {
        let mut p = import::import_file(&ctx, &dir.join("model.pt2"), None).expect("imports");
        if level > 0 {
            let mut pm = pass::PassManager::parse(&driver::default_pass_registry(), &driver::pipeline_for_level(level), pass::PassManagerConfig::default())
                .expect("the pipeline parses");
            pm.run(&ctx, &mut p.module, &mut Vec::new()).expect("the pipeline runs");
        }
        let weights = driver::fixture::weights_from_import(&p.weights).expect("weights");
        let compiled = runtime::compile(&p.module, &ctx, &weights, runtime::CompileOptions::default()).expect("compiles");
        let report = driver::fixture::run_fixture(&compiled, &dir.join("io.safetensors"), 0).expect("runs");
        assert_eq!(report.outputs.len(), 2, "-O{level}");
        assert!(report.ok(), "-O{level}: {:?}", report.outputs);
    }
}
