//! The depthwise convolutions of the small networks (`mobilenet_v3_small`,
//! `shufflenet_v2_x0_5`, at 224 × 224), one image, one thread, on every vector path this CPU
//! runs: `kernels::depthwise::depthwise` with the plane copy, the tiles and the rows copied
//! out, as a convolution node runs it.
//!
//! `cargo bench -p kernels --bench depthwise_shapes [-- name...]`. Prints the median and best
//! microseconds a call and the best GFLOPS (two per multiply-add) of each path.

mod common;

use common::time;
use kernels::Isa;
use kernels::depthwise::{Depthwise, depthwise};
use kernels::gemm::Activation;

fn main() {
    let wanted: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    // (name, channels, input side, kernel, stride)
    let shapes: &[(&str, usize, usize, usize, usize)] = &[
        ("mb 16 112 3 s2", 16, 112, 3, 2),
        ("mb 72 56 3 s2", 72, 56, 3, 2),
        ("mb 88 28 3", 88, 28, 3, 1),
        ("mb 96 28 5 s2", 96, 28, 5, 2),
        ("mb 240 14 5", 240, 14, 5, 1),
        ("mb 144 14 5", 144, 14, 5, 1),
        ("mb 288 14 5 s2", 288, 14, 5, 2),
        ("mb 576 7 5", 576, 7, 5, 1),
        ("sh 24 56 3 s2", 24, 56, 3, 2),
        ("sh 24 28 3", 24, 28, 3, 1),
        ("sh 48 14 3", 48, 14, 3, 1),
        ("sh 96 7 3", 96, 7, 3, 1),
    ];
    let isas: Vec<Isa> = [Isa::Avx512, Isa::Avx2].into_iter().filter(|i| i.available()).collect();
    println!("{:<16} {:>6} {:>10} {:>10} {:>8}", "convolution", "isa", "us med", "us best", "GF best");
    kernels::parallel::with_threads(1, || {
        for &(name, c, side, k, s) in shapes {
            if !wanted.is_empty() && !wanted.iter().any(|w| name.contains(w.as_str())) {
                continue;
            }
            let pad = k / 2;
            let o = (side + 2 * pad - k) / s + 1;
            let d = Depthwise { channels: c, input: [side, side], output: [o, o], kernel: [k, k], stride: [s, s], pad: [pad, pad], dilation: [1, 1] };
            let x: Vec<f32> = (0..c * side * side).map(|i| (i % 97) as f32 * 0.01 - 0.4).collect();
            let w: Vec<f32> = (0..c * k * k).map(|i| (i % 13) as f32 * 0.05 - 0.3).collect();
            let bias: Vec<f32> = (0..c).map(|i| i as f32 * 0.001).collect();
            let mut out = vec![0.0f32; c * o * o];
            let flops = 2.0 * (c * o * o * k * k) as f64;
            for &isa in &isas {
                let (med, best) = time(0.4, || depthwise("bench", isa, &d, 1, &x, &w, Some(&bias), Activation::Relu, &mut out).unwrap());
                println!("{:<16} {:>6} {:>10.1} {:>10.1} {:>8.1}", name, isa.to_string(), med * 1e6, best * 1e6, flops / best / 1e9);
            }
        }
    });
}
