//! Decompositions of the recurrent layers (`lstm.input`, `gru.input`, `rnn_tanh.input`,
//! `rnn_relu.input`) and their cells (`lstm_cell`, `gru_cell`, `rnn_tanh_cell`,
//! `rnn_relu_cell`) into matrix products and elementwise gates, unrolled over the time
//! dimension, which must be static.
//!
//! The layers follow PyTorch's CPU layout and arithmetic: the parameters come as one flat list,
//! per layer and then per direction `w_ih, w_hh[, b_ih, b_hh][, w_hr]` (`w_hr` projects an
//! LSTM's hidden state), the gates are stacked in PyTorch's order (LSTM `i, f, g, o`; GRU
//! `r, z, n`), the input projection of a whole sequence is one product computed before the
//! steps, and the reverse direction of a bidirectional layer reads the sequence backwards and
//! writes its outputs after the forward direction's along the feature axis.

use super::composite::static_shape;
use super::decompose::{DecompResult, DecompositionTable, input, opt_input, rank_of};
use super::rewrite::OpBuilder;
use super::stacking::{int, ints, tensor_list};
use dialect_aten::family::RecurrentCell as Cell;
use dialect_aten::op;
use ir::{OpId, ValueId};


/// Adds the recurrent layers' and cells' decompositions to `t`.
pub(super) fn add(t: &mut DecompositionTable) {
    t.insert(op::LSTM_INPUT, |b, op| layer(b, op, Cell::Lstm))
        .insert(op::GRU_INPUT, |b, op| layer(b, op, Cell::Gru))
        .insert(op::RNN_TANH_INPUT, |b, op| layer(b, op, Cell::RnnTanh))
        .insert(op::RNN_RELU_INPUT, |b, op| layer(b, op, Cell::RnnRelu))
        .insert(op::LSTM_CELL, |b, op| cell_op(b, op, Cell::Lstm))
        .insert(op::GRU_CELL, |b, op| cell_op(b, op, Cell::Gru))
        .insert(op::RNN_TANH_CELL, |b, op| cell_op(b, op, Cell::RnnTanh))
        .insert(op::RNN_RELU_CELL, |b, op| cell_op(b, op, Cell::RnnRelu));
}

/// One direction's parameters of one layer.
struct Params {
    w_ih: ValueId,
    w_hh: ValueId,
    b_ih: Option<ValueId>,
    b_hh: Option<ValueId>,
    w_hr: Option<ValueId>,
}

/// `x · wᵀ (+ bias)` for a 2-d `x`.
fn linear2d(b: &mut OpBuilder, x: ValueId, w: ValueId, bias: Option<ValueId>) -> Result<ValueId, String> {
    let wt = b.call(op::PERMUTE, &[w.into(), ints(&[1, 0])])?;
    match bias {
        Some(bias) => b.call(op::ADDMM, &[bias.into(), x.into(), wt.into()]),
        None => b.call(op::MM, &[x.into(), wt.into()]),
    }
}

/// Gate `k` of `n` stacked along the last axis of `g` (`[…, n·h]`).
fn gate(b: &mut OpBuilder, g: ValueId, k: i64, h: i64) -> Result<ValueId, String> {
    b.call(op::SLICE_TENSOR, &[g.into(), int(-1), int(k * h), int((k + 1) * h)])
}

fn mul(b: &mut OpBuilder, x: ValueId, y: ValueId) -> Result<ValueId, String> {
    b.call(op::MUL_TENSOR, &[x.into(), y.into()])
}

fn add2(b: &mut OpBuilder, x: ValueId, y: ValueId) -> Result<ValueId, String> {
    b.call(op::ADD_TENSOR, &[x.into(), y.into()])
}

/// One step of a cell from the input's projection `xw` (`x·w_ihᵀ + b_ih`) and the previous
/// state `(h, c)`; returns the new `(h, c)` (`c` only for an LSTM). The arithmetic is in
/// PyTorch's order: the hidden projection plus the input's, the LSTM's cell state
/// `f·c + i·g`, the GRU's `(h − n)·z + n`.
fn step(b: &mut OpBuilder, cell: Cell, p: &Params, hidden: i64, xw: ValueId, h: ValueId, c: Option<ValueId>) -> Result<(ValueId, Option<ValueId>), String> {
    let hw = linear2d(b, h, p.w_hh, p.b_hh)?;
    match cell {
        Cell::Lstm => {
            let g = add2(b, hw, xw)?;
            let i = gate(b, g, 0, hidden)?;
            let f = gate(b, g, 1, hidden)?;
            let gg = gate(b, g, 2, hidden)?;
            let o = gate(b, g, 3, hidden)?;
            let i = b.call(op::SIGMOID, &[i.into()])?;
            let f = b.call(op::SIGMOID, &[f.into()])?;
            let gg = b.call(op::TANH, &[gg.into()])?;
            let o = b.call(op::SIGMOID, &[o.into()])?;
            let c = c.ok_or("lstm: the cell state is missing")?;
            let fc = mul(b, f, c)?;
            let ig = mul(b, i, gg)?;
            let c2 = add2(b, fc, ig)?;
            let tc = b.call(op::TANH, &[c2.into()])?;
            let mut h2 = mul(b, o, tc)?;
            if let Some(w_hr) = p.w_hr {
                h2 = linear2d(b, h2, w_hr, None)?;
            }
            Ok((h2, Some(c2)))
        }
        Cell::Gru => {
            let (xr, xz, xn) = (gate(b, xw, 0, hidden)?, gate(b, xw, 1, hidden)?, gate(b, xw, 2, hidden)?);
            let (hr, hz, hn) = (gate(b, hw, 0, hidden)?, gate(b, hw, 1, hidden)?, gate(b, hw, 2, hidden)?);
            let r = add2(b, xr, hr)?;
            let r = b.call(op::SIGMOID, &[r.into()])?;
            let z = add2(b, xz, hz)?;
            let z = b.call(op::SIGMOID, &[z.into()])?;
            let rn = mul(b, hn, r)?;
            let n = add2(b, xn, rn)?;
            let n = b.call(op::TANH, &[n.into()])?;
            let d = b.call(op::SUB_TENSOR, &[h.into(), n.into()])?;
            let dz = mul(b, d, z)?;
            Ok((add2(b, dz, n)?, None))
        }
        Cell::RnnTanh | Cell::RnnRelu => {
            let s = add2(b, hw, xw)?;
            let act = if cell == Cell::RnnTanh { op::TANH } else { op::RELU };
            Ok((b.call(act, &[s.into()])?, None))
        }
    }
}

/// The hidden size of a cell from its hidden-to-hidden weight (`[gates·hidden, proj or hidden]`).
fn hidden_size(b: &OpBuilder, cell: Cell, w_hh: ValueId) -> Result<i64, String> {
    let s = static_shape(b, w_hh, cell.name())?;
    match s[..] {
        [rows, _] if rows % cell.gates() as i64 == 0 => Ok(rows / cell.gates() as i64),
        _ => Err(format!("{}: w_hh must be a 2-d [{}·hidden, hidden] matrix, got {s:?}", cell.name(), cell.gates())),
    }
}

/// `lstm_cell(x, [h, c], w_ih, w_hh, b_ih?, b_hh?) -> (h', c')`, `gru_cell`/`rnn_*_cell(x, h, …) -> h'`
/// on 2-d (`[batch, features]`) inputs.
fn cell_op(b: &mut OpBuilder, op: OpId, cell: Cell) -> DecompResult {
    let x = input(b, op, "input")?;
    let (h, c) = if cell == Cell::Lstm {
        match tensor_list(b, op, "hx")?[..] {
            [h, c] => (h, Some(c)),
            _ => return Err("lstm_cell: hx must hold h and c".into()),
        }
    } else {
        (input(b, op, "hx")?, None)
    };
    if rank_of(b, x)? != 2 || rank_of(b, h)? != 2 {
        return Err(format!("{}_cell: expects 2-d (batch × features) input and state", cell.name()));
    }
    let p = Params {
        w_ih: input(b, op, "w_ih")?,
        w_hh: input(b, op, "w_hh")?,
        b_ih: opt_input(b, op, "b_ih")?,
        b_hh: opt_input(b, op, "b_hh")?,
        w_hr: None,
    };
    let hidden = hidden_size(b, cell, p.w_hh)?;
    let xw = linear2d(b, x, p.w_ih, p.b_ih)?;
    let (h2, c2) = step(b, cell, &p, hidden, xw, h, c)?;
    Ok(Some(std::iter::once(h2).chain(c2).collect()))
}

/// `lstm.input(x, [h0, c0], params, has_biases, num_layers, dropout, train, bidirectional,
/// batch_first) -> (output, h_n, c_n)`; the others take one `hx` and return `(output, h_n)`.
fn layer(b: &mut OpBuilder, op: OpId, cell: Cell) -> DecompResult {
    let name = cell.name();
    let mut x = input(b, op, "input")?;
    let (mut h0, mut c0) = if cell == Cell::Lstm {
        match tensor_list(b, op, "hx")?[..] {
            [h, c] => (h, Some(c)),
            _ => return Err("lstm: hx must hold h0 and c0".into()),
        }
    } else {
        (input(b, op, "hx")?, None)
    };
    let params = tensor_list(b, op, "params")?;
    let (has_biases, layers, dropout, train, bidir, batch_first) = b.with_args(op, |a| {
        (a.bool("has_biases"), a.int("num_layers"), a.float("dropout"), a.bool("train"), a.bool("bidirectional"), a.bool("batch_first"))
    })?;
    let missing = |what: &str| format!("{name}: '{what}' must be constant");
    let has_biases = has_biases.ok_or_else(|| missing("has_biases"))?;
    let layers = layers.ok_or_else(|| missing("num_layers"))?;
    let bidir = bidir.ok_or_else(|| missing("bidirectional"))?;
    let batch_first = batch_first.unwrap_or(false);
    if train.unwrap_or(false) && dropout.unwrap_or(0.0) > 0.0 && layers > 1 {
        return Err(format!("{name}: dropout between layers in training mode draws random masks, which is not supported"));
    }
    let dirs = if bidir { 2 } else { 1 };
    if layers < 1 || params.len() % (layers as usize * dirs) != 0 {
        return Err(format!("{name}: {} parameters do not split into {layers} layer(s) of {dirs} direction(s)", params.len()));
    }
    let per = params.len() / (layers as usize * dirs);
    let with_proj = match (per, has_biases) {
        (4, true) | (2, false) => false,
        (5, true) | (3, false) if cell == Cell::Lstm => true,
        _ => return Err(format!("{name}: {per} parameters per layer and direction do not match has_biases = {has_biases}")),
    };
    // An unbatched sequence (`[T, features]`) runs as a batch of one.
    let unbatched = match rank_of(b, x)? {
        2 => true,
        3 => false,
        r => return Err(format!("{name}: expects a 2-d or 3-d input, got {r}-d")),
    };
    if unbatched {
        x = b.call(op::UNSQUEEZE, &[x.into(), int(1)])?;
        h0 = b.call(op::UNSQUEEZE, &[h0.into(), int(1)])?;
        if let Some(c) = c0 {
            c0 = Some(b.call(op::UNSQUEEZE, &[c.into(), int(1)])?);
        }
    } else if batch_first {
        x = b.call(op::PERMUTE, &[x.into(), ints(&[1, 0, 2])])?;
    }
    let [steps, batch, _] = static_shape(b, x, name)?[..] else { return Err(format!("{name}: the input must be 3-d")) };
    let (mut h_n, mut c_n) = (Vec::new(), Vec::new());
    for l in 0..layers as usize {
        let mut outs = Vec::new();
        for d in 0..dirs {
            let base = (l * dirs + d) * per;
            let w = &params[base..base + per];
            let p = Params {
                w_ih: w[0],
                w_hh: w[1],
                b_ih: has_biases.then(|| w[2]),
                b_hh: has_biases.then(|| w[3]),
                w_hr: with_proj.then(|| w[per - 1]),
            };
            let hidden = hidden_size(b, cell, p.w_hh)?;
            let k = (l * dirs + d) as i64;
            let mut h = b.call(op::SELECT_INT, &[h0.into(), int(0), int(k)])?;
            let mut c = match c0 {
                Some(c0) => Some(b.call(op::SELECT_INT, &[c0.into(), int(0), int(k)])?),
                None => None,
            };
            // The input's projection for every step at once, as `[T·B, gates·hidden]`.
            let features = static_shape(b, x, name)?[2];
            let flat = b.call(op::RESHAPE, &[x.into(), ints(&[steps * batch, features])])?;
            let xw = linear2d(b, flat, p.w_ih, p.b_ih)?;
            let xw = b.call(op::RESHAPE, &[xw.into(), ints(&[steps, batch, cell.gates() as i64 * hidden])])?;
            let mut ys = vec![None; steps as usize];
            for s in 0..steps {
                let t = if d == 0 { s } else { steps - 1 - s };
                let xt = b.call(op::SELECT_INT, &[xw.into(), int(0), int(t)])?;
                (h, c) = step(b, cell, &p, hidden, xt, h, c)?;
                ys[t as usize] = Some(b.call(op::UNSQUEEZE, &[h.into(), int(0)])?);
            }
            let ys: Vec<ValueId> = ys.into_iter().flatten().collect();
            let l_ = b.list(ys)?;
            outs.push(b.call(op::CAT, &[l_.into(), int(0)])?);
            h_n.push(b.call(op::UNSQUEEZE, &[h.into(), int(0)])?);
            if let Some(c) = c {
                c_n.push(b.call(op::UNSQUEEZE, &[c.into(), int(0)])?);
            }
        }
        x = if outs.len() == 1 {
            outs[0]
        } else {
            let l_ = b.list(outs)?;
            b.call(op::CAT, &[l_.into(), int(2)])?
        };
    }
    let stack = |b: &mut OpBuilder, v: Vec<ValueId>| -> Result<ValueId, String> {
        let l_ = b.list(v)?;
        let s = b.call(op::CAT, &[l_.into(), int(0)])?;
        if unbatched { b.call(op::SQUEEZE_DIM, &[s.into(), int(1)]) } else { Ok(s) }
    };
    let out = if unbatched {
        b.call(op::SQUEEZE_DIM, &[x.into(), int(1)])?
    } else if batch_first {
        b.call(op::PERMUTE, &[x.into(), ints(&[1, 0, 2])])?
    } else {
        x
    };
    let mut results = vec![out, stack(b, h_n)?];
    if cell == Cell::Lstm {
        results.push(stack(b, c_n)?);
    }
    Ok(Some(results))
}
