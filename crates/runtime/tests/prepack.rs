//! Products with weights prepacked at compile time (`convolution`, `addmm`, `mm`) and the
//! `bmm`/`convolution` out-variants, run through the executor: the results match the
//! registered kernels called directly, planned and unplanned runs agree bit for bit, and the
//! weights were in fact packed (on CPUs with a prepacked kernel).

mod common;

use common::*;
use runtime::{CompileOptions, IValue, Tensor, Weights};

const PROGRAM: &str = r#"
module {
  func.func @forward(%w: tensor<8x3x3x3xf32> {prim.param = "conv.weight"}, %b: tensor<8xf32> {prim.param = "conv.bias"}, %w2: tensor<6x4x1x1xf32> {prim.param = "conv2.weight"}, %fw: tensor<54x10xf32> {prim.param = "fc.weight"}, %fb: tensor<10xf32> {prim.param = "fc.bias"}, %mw: tensor<10x7xf32> {prim.param = "mm.weight"}, %x: tensor<2x3x5x5xf32> {prim.input = "x"}, %s: tensor<2x7xf32> {prim.input = "s"}, %p: tensor<3x4x5xf32> {prim.input = "p"}, %q: tensor<3x5x6xf32> {prim.input = "q"}, %w3: tensor<4x8x1x1xf32> {prim.param = "conv3.weight"}, %b3: tensor<4xf32> {prim.param = "conv3.bias"}) -> (tensor<2x7xf32>, tensor<3x4x6xf32>, tensor<2x8x5x5xf32>, tensor<2x4x5x5xf32>) {
    %c = aten.convolution %x, %w, %b {dilation = [1 : i64, 1 : i64], groups = 1 : i64, output_padding = [0 : i64, 0 : i64], padding = [1 : i64, 1 : i64], stride = [1 : i64, 1 : i64], transposed = false} : (tensor<2x3x5x5xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<2x8x5x5xf32>
    %r = aten.relu %c : (tensor<2x8x5x5xf32>) -> tensor<2x8x5x5xf32>
    %none = prim.Constant #prim.none : none
    %c3 = aten.convolution %r, %w3, %b3 {dilation = [1 : i64, 1 : i64], groups = 1 : i64, output_padding = [0 : i64, 0 : i64], padding = [0 : i64, 0 : i64], stride = [1 : i64, 1 : i64], transposed = false} : (tensor<2x8x5x5xf32>, tensor<4x8x1x1xf32>, tensor<4xf32>) -> tensor<2x4x5x5xf32>
    %c2 = aten.convolution %r, %w2, %none {dilation = [1 : i64, 1 : i64], groups = 2 : i64, output_padding = [0 : i64, 0 : i64], padding = [0 : i64, 0 : i64], stride = [2 : i64, 2 : i64], transposed = false} : (tensor<2x8x5x5xf32>, tensor<6x4x1x1xf32>, none) -> tensor<2x6x3x3xf32>
    %v = aten.view %c2 {size = [2 : i64, 54 : i64]} : (tensor<2x6x3x3xf32>) -> tensor<2x54xf32>
    %h = aten.addmm %fb, %v, %fw : (tensor<10xf32>, tensor<2x54xf32>, tensor<54x10xf32>) -> tensor<2x10xf32>
    %o = aten.addmm %s, %h, %mw : (tensor<2x7xf32>, tensor<2x10xf32>, tensor<10x7xf32>) -> tensor<2x7xf32>
    %m = aten.bmm %p, %q : (tensor<3x4x5xf32>, tensor<3x5x6xf32>) -> tensor<3x4x6xf32>
    %g = aten.relu %m : (tensor<3x4x6xf32>) -> tensor<3x4x6xf32>
    func.return %o, %g, %r, %c3 : tensor<2x7xf32>, tensor<3x4x6xf32>, tensor<2x8x5x5xf32>, tensor<2x4x5x5xf32>
  }
}
"#;

fn tensor(n: usize, seed: u64, sizes: &[usize]) -> Tensor {
    Tensor::from_slice(&noise(n, seed), sizes).unwrap()
}

fn weights() -> Weights {
    let mut w = Weights::new();
    w.insert("conv.weight", tensor(8 * 27, 21, &[8, 3, 3, 3]));
    w.insert("conv.bias", tensor(8, 22, &[8]));
    w.insert("conv2.weight", tensor(24, 23, &[6, 4, 1, 1]));
    w.insert("fc.weight", tensor(540, 24, &[54, 10]));
    w.insert("fc.bias", tensor(10, 25, &[10]));
    w.insert("mm.weight", tensor(70, 26, &[10, 7]));
    w.insert("conv3.weight", tensor(32, 27, &[4, 8, 1, 1]));
    w.insert("conv3.bias", tensor(4, 28, &[4]));
    w
}

fn inputs(seed: u64) -> Vec<IValue> {
    vec![
        IValue::Tensor(tensor(150, seed, &[2, 3, 5, 5])),
        IValue::Tensor(tensor(14, seed + 1, &[2, 7])),
        IValue::Tensor(tensor(60, seed + 2, &[3, 4, 5])),
        IValue::Tensor(tensor(90, seed + 3, &[3, 5, 6])),
    ]
}

fn call(op: &str, args: Vec<IValue>) -> IValue {
    let f = runtime::registry().get(op).unwrap();
    f(&args).unwrap().remove(0)
}

fn ints(v: &[i64]) -> IValue {
    IValue::IntList(v.to_vec())
}

fn conv(x: IValue, w: Tensor, b: Option<Tensor>, stride: i64, pad: i64, groups: i64) -> IValue {
    let b = b.map(IValue::Tensor).unwrap_or(IValue::None);
    call(
        "aten.convolution",
        vec![x, IValue::Tensor(w), b, ints(&[stride; 2]), ints(&[pad; 2]), ints(&[1, 1]), IValue::Bool(false), ints(&[0, 0]), IValue::Int(groups)],
    )
}

/// The program evaluated by calling each op's registered kernel.
fn reference(w: &Weights, x: &[IValue]) -> Vec<Vec<f64>> {
    let get = |n: &str| w.get(n).unwrap().clone();
    let c = conv(x[0].clone(), get("conv.weight"), Some(get("conv.bias")), 1, 1, 1);
    let r = call("aten.relu", vec![c]);
    let c2 = conv(r.clone(), get("conv2.weight"), None, 2, 0, 2);
    let v = call("aten.view", vec![c2, ints(&[2, 54])]);
    let h = call("aten.addmm", vec![IValue::Tensor(get("fc.bias")), v, IValue::Tensor(get("fc.weight"))]);
    let o = call("aten.addmm", vec![x[1].clone(), h, IValue::Tensor(get("mm.weight"))]);
    let m = call("aten.bmm", vec![x[2].clone(), x[3].clone()]);
    let g = call("aten.relu", vec![m]);
    let c3 = conv(r.clone(), get("conv3.weight"), Some(get("conv3.bias")), 1, 0, 1);
    vec![vals(&o), vals(&g), vals(&r), vals(&c3)]
}

fn prepacking_cpu() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx512f")
            || std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[test]
fn prepacked_products_match_their_kernels_planned_or_not() {
    let w = weights();
    let planned = try_compile(PROGRAM, &w, CompileOptions::default()).unwrap();
    let plain = try_compile(PROGRAM, &w, CompileOptions { memory_plan: false, ..CompileOptions::default() }).unwrap();
    // The three convolutions (3×3; grouped and strided 1×1; 1×1 read without im2col) and both
    // `addmm`s (their `mat2` is a weight); `bmm` has no constant operand.
    let expect = if prepacking_cpu() { 5 } else { 0 };
    if expect == 0 {
        println!("this CPU has no prepacked kernel: checking the plain out-variants only");
    }
    assert_eq!(planned.num_prepacked(), expect);
    assert_eq!(plain.num_prepacked(), expect);
    assert!(planned.num_planned_values() > 0);
    let (mut a, mut b) = (planned.runtime(), plain.runtime());
    for seed in [1u64, 7, 1] {
        let x = inputs(seed * 100);
        let want = reference(&w, &x);
        for _ in 0..2 {
            let ya = a.run(&x).unwrap();
            let yb = b.run(&x).unwrap();
            for (k, want) in want.iter().enumerate() {
                assert_close(&vals(&ya[k]), want);
                assert_eq!(vals(&ya[k]), vals(&yb[k]), "output {k}: planned and unplanned runs differ");
            }
        }
    }
    assert!(a.memory_plan().is_some());
}

/// Batch-1 linear layers with prepacked weights (`addmm` with a bias, `mm` without), of sizes
/// that are not multiples of the vector width and large enough to split across threads.
const BATCH1: &str = r#"
module {
  func.func @forward(%w1: tensor<300x257xf32> {prim.param = "w1"}, %b1: tensor<257xf32> {prim.param = "b1"}, %w2: tensor<257x301xf32> {prim.param = "w2"}, %x: tensor<1x300xf32> {prim.input = "x"}) -> (tensor<1x257xf32>, tensor<1x301xf32>) {
    %h = aten.addmm %b1, %x, %w1 : (tensor<257xf32>, tensor<1x300xf32>, tensor<300x257xf32>) -> tensor<1x257xf32>
    %r = aten.relu %h : (tensor<1x257xf32>) -> tensor<1x257xf32>
    %o = aten.mm %r, %w2 : (tensor<1x257xf32>, tensor<257x301xf32>) -> tensor<1x301xf32>
    func.return %h, %o : tensor<1x257xf32>, tensor<1x301xf32>
  }
}
"#;

#[test]
fn batch1_products_are_the_same_bits_on_one_and_two_threads_and_as_their_kernels() {
    let mut w = Weights::new();
    w.insert("w1", tensor(300 * 257, 31, &[300, 257]));
    w.insert("b1", tensor(257, 32, &[257]));
    w.insert("w2", tensor(257 * 301, 33, &[257, 301]));
    let p = try_compile(BATCH1, &w, CompileOptions::default()).unwrap();
    assert_eq!(p.num_prepacked(), if prepacking_cpu() { 2 } else { 0 });
    let x = vec![IValue::Tensor(tensor(300, 34, &[1, 300]))];
    // The registered kernels (the weights read in place) on one thread.
    let get = |n: &str| IValue::Tensor(w.get(n).unwrap().clone());
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let two = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let want = one.install(|| {
        let h = call("aten.addmm", vec![get("b1"), x[0].clone(), get("w1")]);
        let r = call("aten.relu", vec![h.clone()]);
        let o = call("aten.mm", vec![r, get("w2")]);
        vec![vals(&h), vals(&o)]
    });
    // The same sums in f64, to check the kernels themselves.
    let xs = vals(&x[0]);
    let (w1, b1, w2) = (vals(&get("w1")), vals(&get("b1")), vals(&get("w2")));
    let h: Vec<f64> = (0..257).map(|j| b1[j] + (0..300).map(|p| xs[p] * w1[p * 257 + j]).sum::<f64>()).collect();
    let o: Vec<f64> = (0..301).map(|j| (0..257).map(|p| h[p].max(0.0) * w2[p * 301 + j]).sum::<f64>()).collect();
    assert_close(&want[0], &h);
    assert_close(&want[1], &o);
    for pool in [&one, &two, &one, &two] {
        let got = pool.install(|| {
            let mut rt = p.runtime();
            (0..3).map(|_| rt.run(&x).unwrap()).last().unwrap()
        });
        assert_eq!(vals(&got[0]), want[0], "addmm on {} threads", pool.current_num_threads());
        assert_eq!(vals(&got[1]), want[1], "mm on {} threads", pool.current_num_threads());
    }
}
