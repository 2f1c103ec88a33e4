//! The prepacked `f32` GEMM on the products of the benchmark programs, in GFLOPS: the two
//! `64 × 512 · 512 × 2048` products of `bench_lstm_cell`, the linear layers of
//! `bench_transformer` (`128 × 256` activations by `256 × 768`, `256 × 256`, `256 × 1024`,
//! and `128 × 1024` by `1024 × 256`, with their bias) and the 3×3 convolutions of
//! `bench_resnet_tiny` (through the column tile). Each product is a one-instruction program
//! whose weight is a parameter, so it runs exactly as in a compiled program: prepacked at
//! compile time, its result in planned storage (a one-element sum of its first row is the
//! program's output, so no fresh result is zero-filled per call).
//!
//! `cargo bench -p runtime --bench gemm [-- name...]`, one thread. Compare with the core's
//! peak of 512-bit FMA (two FMA units: 32 `f32` multiply-adds a cycle, 190–205 GFLOPS measured
//! on the development machine).

use std::time::Instant;

#[path = "../tests/common/mod.rs"]
mod common;

use common::{context, noise};
use runtime::{CompileOptions, IValue, Tensor, Weights, compile};


fn tensor(sizes: &[usize], seed: u64) -> Tensor {
    Tensor::from_slice(&noise(sizes.iter().product(), seed), sizes).unwrap()
}

fn ty(sizes: &[usize]) -> String {
    let dims: Vec<String> = sizes.iter().map(|d| d.to_string()).collect();
    format!("tensor<{}xf32>", dims.join("x"))
}

/// One benchmarked product: a program, its weights and inputs, and its multiply-adds.
struct Case {
    name: String,
    src: String,
    weights: Weights,
    inputs: Vec<IValue>,
    fmas: usize,
}

/// The tail every program ends with: the sum of the first row of the product `%y` (`rows`
/// rows of `cols`), so the product itself is an intermediate value in planned storage.
fn tail(y: &str, yt: &str, cols: usize) -> String {
    let row = ty(&[cols]);
    format!(
        "    %r = aten.select.int {y} {{dim = 0 : i64, index = 0 : i64}} : ({yt}) -> {row}\n    \
         %s = aten.sum %r : ({row}) -> tensor<f32>\n    func.return %s : tensor<f32>\n  }}\n}}\n"
    )
}

/// `x[m×k] · w[k×n]` (`mm`), or `b + x·w` (`addmm`) with a bias.
fn linear(name: &str, m: usize, k: usize, n: usize, bias: bool) -> Case {
    let (xt, wt, yt, bt) = (ty(&[m, k]), ty(&[k, n]), ty(&[m, n]), ty(&[n]));
    let mut src = format!("module {{\n  func.func @forward(%w: {wt} {{prim.param = \"w\"}}, ");
    if bias {
        src += &format!("%b: {bt} {{prim.param = \"b\"}}, ");
    }
    src += &format!("%x: {xt} {{prim.input = \"x\"}}) -> tensor<f32> {{\n");
    if bias {
        src += &format!("    %y = aten.addmm %b, %x, %w : ({bt}, {xt}, {wt}) -> {yt}\n");
    } else {
        src += &format!("    %y = aten.mm %x, %w : ({xt}, {wt}) -> {yt}\n");
    }
    src += &tail("%y", &yt, n);
    let mut weights = Weights::new();
    weights.insert("w", tensor(&[k, n], 1));
    if bias {
        weights.insert("b", tensor(&[n], 2));
    }
    Case { name: format!("{name} {m}x{k}x{n}"), src, weights, inputs: vec![IValue::Tensor(tensor(&[m, k], 3))], fmas: m * n * k }
}

/// A 3×3 convolution with padding 1 and a bias over a `cin × hw × hw` image.
fn conv3x3(name: &str, cin: usize, cout: usize, hw: usize) -> Case {
    let (xt, wt, bt, yt) = (ty(&[1, cin, hw, hw]), ty(&[cout, cin, 3, 3]), ty(&[cout]), ty(&[1, cout, hw, hw]));
    let mut src = format!(
        "module {{\n  func.func @forward(%w: {wt} {{prim.param = \"w\"}}, %b: {bt} {{prim.param = \"b\"}}, %x: {xt} {{prim.input = \"x\"}}) -> tensor<f32> {{\n    \
         %y = aten.convolution %x, %w, %b {{dilation = [1 : i64, 1 : i64], groups = 1 : i64, output_padding = [0 : i64, 0 : i64], padding = [1 : i64, 1 : i64], stride = [1 : i64, 1 : i64], transposed = false}} : ({xt}, {wt}, {bt}) -> {yt}\n"
    );
    // The first row of the first image's first channel.
    let rt = ty(&[cout, hw, hw]);
    let ct = ty(&[hw, hw]);
    src += &format!("    %y0 = aten.select.int %y {{dim = 0 : i64, index = 0 : i64}} : ({yt}) -> {rt}\n");
    src += &format!("    %y1 = aten.select.int %y0 {{dim = 0 : i64, index = 0 : i64}} : ({rt}) -> {ct}\n");
    src += &tail("%y1", &ct, hw);
    let mut weights = Weights::new();
    weights.insert("w", tensor(&[cout, cin, 3, 3], 4));
    weights.insert("b", tensor(&[cout], 5));
    Case {
        name: format!("{name} {cout}x{}x{}", cin * 9, hw * hw),
        src,
        weights,
        inputs: vec![IValue::Tensor(tensor(&[1, cin, hw, hw], 6))],
        fmas: cout * cin * 9 * hw * hw,
    }
}

/// Median and fastest time of one call, in seconds, over calls filling about `budget` seconds.
fn time(case: &Case, budget: f64) -> Result<(f64, f64), String> {
    let ctx = context();
    let module = ir::parse_module(&ctx, &case.src, "gemm.ir").map_err(|d| d.render("gemm.ir", &case.src))?;
    let program = compile(&module, &ctx, &case.weights, CompileOptions::default()).map_err(|e| e.to_string())?;
    if program.num_prepacked() == 0 {
        return Err("this CPU has no prepacked kernel".into());
    }
    let mut rt = program.runtime();
    let mut out = Vec::new();
    let start = Instant::now();
    let mut warm = 0;
    while warm < 3 || start.elapsed().as_secs_f64() < budget / 10.0 {
        rt.run_into(&case.inputs, &mut out).map_err(|e| e.to_string())?;
        warm += 1;
    }
    let per = start.elapsed().as_secs_f64() / warm as f64;
    let calls = ((budget / per) as usize).clamp(5, 100_000);
    let mut times = Vec::with_capacity(calls);
    for _ in 0..calls {
        let t = Instant::now();
        rt.run_into(&case.inputs, &mut out).map_err(|e| e.to_string())?;
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    Ok((times[times.len() / 2], times[0]))
}

fn main() {
    let wanted: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let cases = [
        linear("lstm mm", 64, 512, 2048, false),
        linear("transformer qkv", 128, 256, 768, true),
        linear("transformer out", 128, 256, 256, true),
        linear("transformer ff1", 128, 256, 1024, true),
        linear("transformer ff2", 128, 1024, 256, true),
        conv3x3("resnet conv", 32, 32, 64),
        conv3x3("resnet stem", 3, 32, 64),
    ];
    rayon::ThreadPoolBuilder::new().num_threads(1).build_global().unwrap();
    println!("{:<34} {:>10} {:>10} {:>10} {:>10}", "product (m x k x n)", "median us", "min us", "GFLOPS med", "GFLOPS max");
    for case in &cases {
        if !wanted.is_empty() && !wanted.iter().any(|w| case.name.contains(w.as_str())) {
            continue;
        }
        match time(case, 1.0) {
            Ok((med, min)) => {
                let gf = |t: f64| 2.0 * case.fmas as f64 / t / 1e9;
                println!("{:<34} {:>10.1} {:>10.1} {:>10.1} {:>10.1}", case.name, med * 1e6, min * 1e6, gf(med), gf(min));
            }
            Err(e) => println!("{:<34} skipped: {e}", case.name),
        }
    }
}
