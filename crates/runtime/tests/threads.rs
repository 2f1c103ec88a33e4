//! One compiled program, many threads: 4 threads × 1,000 runs of an LSTM-cell-like program
//! give identical results, each thread on its own runtime.

mod common;

use std::sync::Arc;

use common::*;
use runtime::{IValue, Tensor, Weights};

/// An LSTM cell: gates = x·Wih + h·Whh + b, split in four, then the cell update.
const LSTM_CELL: &str = r#"
module {
  func.func @forward(%wih: tensor<4x16xf32> {prim.param = "w_ih"}, %whh: tensor<4x16xf32> {prim.param = "w_hh"}, %b: tensor<16xf32> {prim.param = "bias"}, %x: tensor<2x4xf32> {prim.input = "x"}, %h: tensor<2x4xf32> {prim.input = "h"}, %c: tensor<2x4xf32> {prim.input = "c"}) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
    %gx = aten.addmm %b, %x, %wih : (tensor<16xf32>, tensor<2x4xf32>, tensor<4x16xf32>) -> tensor<2x16xf32>
    %gh = aten.mm %h, %whh : (tensor<2x4xf32>, tensor<4x16xf32>) -> tensor<2x16xf32>
    %g = aten.add.Tensor %gx, %gh : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
    %parts = aten.chunk %g {chunks = 4 : i64, dim = 1 : i64} : (tensor<2x16xf32>) -> !prim.list<tensor<2x4xf32>>
    %i, %f, %cc, %o = prim.ListUnpack %parts : (!prim.list<tensor<2x4xf32>>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
    %ig = aten.sigmoid %i : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %fg = aten.sigmoid %f : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %cg = aten.tanh %cc : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %og = aten.sigmoid %o : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %c1 = aten.mul.Tensor %fg, %c : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %c2 = aten.mul.Tensor %ig, %cg : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %cy = aten.add.Tensor %c1, %c2 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %tc = aten.tanh %cy : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %hy = aten.mul.Tensor %og, %tc : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    func.return %hy, %cy : tensor<2x4xf32>, tensor<2x4xf32>
  }
}
"#;

fn weights() -> Weights {
    let mut w = Weights::new();
    w.insert("w_ih", Tensor::from_slice(&noise(64, 21), &[4, 16]).unwrap());
    w.insert("w_hh", Tensor::from_slice(&noise(64, 22), &[4, 16]).unwrap());
    w.insert("bias", Tensor::from_slice(&noise(16, 23), &[16]).unwrap());
    w
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn reference(x: &[f32], h: &[f32], c: &[f32]) -> (Vec<f64>, Vec<f64>) {
    let (wih, whh, b) = (noise(64, 21), noise(64, 22), noise(16, 23));
    let (mut hy, mut cy) = (Vec::new(), Vec::new());
    for r in 0..2 {
        let g: Vec<f64> = (0..16)
            .map(|j| {
                b[j] as f64
                    + (0..4).map(|k| x[r * 4 + k] as f64 * wih[k * 16 + j] as f64 + h[r * 4 + k] as f64 * whh[k * 16 + j] as f64).sum::<f64>()
            })
            .collect();
        for j in 0..4 {
            let (i, f, cc, o) = (sigmoid(g[j]), sigmoid(g[4 + j]), g[8 + j].tanh(), sigmoid(g[12 + j]));
            let cn = f * c[r * 4 + j] as f64 + i * cc;
            cy.push(cn);
            hy.push(o * cn.tanh());
        }
    }
    (hy, cy)
}

#[test]
fn four_threads_share_one_compiled_program() {
    let program = Arc::new(compile_ok(LSTM_CELL, &weights()));
    let (xs, hs, cs) = (noise(8, 31), noise(8, 32), noise(8, 33));
    let inputs = vec![t(&xs, &[2, 4]), t(&hs, &[2, 4]), t(&cs, &[2, 4])];
    // The single-threaded answer, checked against a direct computation.
    let expected: Vec<Vec<f64>> = program.runtime().run(&inputs).unwrap().iter().map(vals).collect();
    let (hy, cy) = reference(&xs, &hs, &cs);
    assert!(expected[0].iter().zip(&hy).all(|(a, b)| (a - b).abs() < 1e-5), "{:?} vs {hy:?}", expected[0]);
    assert!(expected[1].iter().zip(&cy).all(|(a, b)| (a - b).abs() < 1e-5), "{:?} vs {cy:?}", expected[1]);

    let handles: Vec<_> = (0..4)
        .map(|_| {
            let program = Arc::clone(&program);
            let inputs: Vec<IValue> = inputs.clone();
            std::thread::spawn(move || {
                let mut rt = program.runtime();
                let mut out = Vec::new();
                let mut results = Vec::with_capacity(1000);
                for _ in 0..1000 {
                    rt.run_into(&inputs, &mut out).map_err(|e| e.to_string())?;
                    results.push(out.iter().map(vals).collect::<Vec<_>>());
                }
                Ok::<_, String>(results)
            })
        })
        .collect();
    for h in handles {
        let results = h.join().expect("thread panicked").expect("run failed");
        assert_eq!(results.len(), 1000);
        for r in results {
            assert_eq!(r, expected, "a thread's result differs");
        }
    }
}
