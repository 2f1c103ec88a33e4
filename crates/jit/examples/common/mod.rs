//! What the examples share: the bench groups' texts, parsing a group, the LSTM cell's inputs.
// Each example uses some of these.
#![allow(dead_code)]

use ir::{Module, OpId};
use runtime::Tensor;

pub const POINTWISE: &str = include_str!("../../tests/data/bench_pointwise.ir");
pub const LSTM_CELL: &str = include_str!("../../tests/data/lstm_cell.ir");

/// The module `text` and its first fusion group (the prim and aten dialects registered,
/// unregistered ops allowed for the test sources).
pub fn group(text: &str) -> Result<(Module, OpId), Box<dyn std::error::Error>> {
    let mut ctx = ir::Context::new();
    dialect_prim::register(&mut ctx);
    dialect_aten::register(&mut ctx);
    ctx.set_allow_unregistered(true);
    let m = ir::parse_module(&ctx, text, "group.ir").map_err(|d| d.to_string())?;
    let g = *jit::find_fusion_groups(&m).first().ok_or("no fusion group")?;
    Ok((m, g))
}

/// The inputs of the bench_lstm_cell group as the runtime passes them: the gate slices are
/// views of two 64x2048 products, the bias slices views of two 2048-vectors.
pub fn lstm_inputs() -> Result<Vec<Tensor>, Box<dyn std::error::Error>> {
    let mm = [Tensor::zeros(ir::DType::F32, &[64, 2048])?, Tensor::zeros(ir::DType::F32, &[64, 2048])?];
    let bias = [Tensor::zeros(ir::DType::F32, &[2048])?, Tensor::zeros(ir::DType::F32, &[2048])?];
    let mut inputs = Vec::new();
    for gate in 0..4 {
        let at = gate as i64 * 512;
        inputs.push(mm[0].narrow(1, at, 512)?);
        inputs.push(mm[1].narrow(1, at, 512)?);
        inputs.push(bias[0].narrow(0, at, 512)?);
        inputs.push(bias[1].narrow(0, at, 512)?);
    }
    inputs.push(Tensor::zeros(ir::DType::F32, &[64, 512])?);
    Ok(inputs)
}
