//! Packed sequences: `_pad_packed_sequence`, which unpacks the time-major rows of a packed
//! batch into a padded tensor, and the recurrent layers over packed batches (`lstm.data`,
//! `gru.data`, `rnn_tanh.data`, `rnn_relu.data`). Their shapes and steps depend on the values
//! of `batch_sizes` (a CPU int64 tensor known only when the program runs), so they are kernels
//! rather than decompositions.

use super::{Args, KernelRegistry};
use crate::tensor::{KernelError, Result, Tensor};
use crate::value::IValue;
use dialect_aten::family::RecurrentCell as Cell;
use dialect_aten::op;

/// `_pad_packed_sequence(data, batch_sizes, batch_first, padding_value, total_length) ->
/// (output, lengths)`: step `t` of the packed batch is the next `batch_sizes[t]` rows of `data`
/// (the sequences still running at `t`, longest first); `output` is `[T, B, *]` (`[B, T, *]`
/// with `batch_first`) filled with `padding_value` past each sequence's end, `T` being the
/// number of steps or `total_length` when that is positive, and `lengths` (int64) is each
/// sequence's number of steps.
fn k_pad_packed_sequence(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::_PAD_PACKED_SEQUENCE, args, 5)?;
    let err = |m: String| KernelError::new(a.op, m);
    let data = a.tensor(0)?;
    let bs_t = a.tensor(1)?;
    if bs_t.dtype() != ir::DType::I64 || bs_t.dim() != 1 {
        return Err(err(format!("batch_sizes must be a 1-d int64 tensor, got {} of shape {:?}", bs_t.dtype().torch_name(), bs_t.sizes())));
    }
    let bs = bs_t.to_vec_i64();
    let (batch_first, padding, total_length) = (a.bool(2)?, a.scalar(3)?, a.int(4)?);
    let Some(&batch) = bs.first() else { return Err(err("batch_sizes must not be empty".into())) };
    if bs.iter().any(|&b| b <= 0) || bs.windows(2).any(|w| w[1] > w[0]) {
        return Err(err(format!("batch_sizes must be positive and non-increasing, got {bs:?}")));
    }
    let rows: i64 = bs.iter().sum();
    if data.dim() == 0 || data.sizes()[0] as i64 != rows {
        return Err(err(format!("data has shape {:?} where batch_sizes {bs:?} packs {rows} rows", data.sizes())));
    }
    let steps = bs.len();
    let len = if total_length > 0 {
        if (total_length as usize) < steps {
            return Err(err(format!(
                "Expected total_length to be at least the length of the longest sequence in input, but got total_length={total_length} and max sequence length being {steps}"
            )));
        }
        total_length as usize
    } else {
        steps
    };
    let mut shape = vec![len, batch as usize];
    shape.extend_from_slice(&data.sizes()[1..]);
    let out = Tensor::full(data.dtype(), &shape, padding)?;
    let mut offset = 0i64;
    for (t, &b) in bs.iter().enumerate() {
        let dst = out.select(0, t as i64)?.narrow(0, 0, b as usize)?;
        dst.copy_(&data.narrow(0, offset, b as usize)?)?;
        offset += b;
    }
    let lengths: Vec<i64> = (0..batch).map(|i| bs.iter().filter(|&&b| b > i).count() as i64).collect();
    let lengths = Tensor::from_vec(lengths, &[batch as usize])?;
    let out = if batch_first { out.transpose(0, 1)?.contiguous()? } else { out };
    Ok(vec![IValue::Tensor(out), IValue::Tensor(lengths)])
}

/// A row-major matrix read as `f64`.
struct Mat {
    rows: usize,
    cols: usize,
    v: Vec<f64>,
}

impl Mat {
    fn of(op: &str, t: &Tensor, rows: Option<usize>, cols: Option<usize>) -> Result<Mat> {
        let bad = || KernelError::new(op.to_string(), format!("a parameter of shape {:?} does not fit the layer", t.sizes()));
        let (r, c) = match t.sizes() {
            [r, c] => (*r, *c),
            [r] => (*r, 1),
            _ => return Err(bad()),
        };
        if rows.is_some_and(|x| x != r) || cols.is_some_and(|x| x != c) {
            return Err(bad());
        }
        Ok(Mat { rows: r, cols: c, v: t.to_vec_f64() })
    }

    /// `out += self · x`.
    fn mul_add(&self, x: &[f64], out: &mut [f64]) {
        for (i, o) in out.iter_mut().enumerate().take(self.rows) {
            *o += self.v[i * self.cols..(i + 1) * self.cols].iter().zip(x).map(|(w, x)| w * x).sum::<f64>();
        }
    }
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// `lstm.data(data, batch_sizes, [h0, c0], params, has_biases, num_layers, dropout, train,
/// bidirectional) -> (output, h_n, c_n)`, and `gru.data`/`rnn_*.data(…, hx, …) -> (output, h_n)`:
/// the layer over a packed batch, in PyTorch's parameter order (per layer and direction `w_ih,
/// w_hh[, b_ih, b_hh][, w_hr]`) and gate order (LSTM `i, f, g, o`; GRU `r, z, n`). At step `t`
/// the first `batch_sizes[t]` sequences advance; the reverse direction starts each sequence at
/// its own last step. Computed in `f64`, rounded to the data's dtype.
fn packed_layer(op: &'static str, cell: Cell, args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op, args, 9)?;
    let err = |m: String| KernelError::new(op, m);
    let data = a.tensor(0)?;
    let bs = a.tensor(1)?;
    if bs.dtype() != ir::DType::I64 || bs.dim() != 1 {
        return Err(err("batch_sizes must be a 1-d int64 tensor".into()));
    }
    let bs: Vec<usize> = bs.to_vec_i64().iter().map(|&b| usize::try_from(b).unwrap_or(0)).collect();
    if bs.is_empty() || bs.contains(&0) || bs.windows(2).any(|w| w[1] > w[0]) {
        return Err(err(format!("batch_sizes must be positive and non-increasing, got {bs:?}")));
    }
    let (h0, c0) = if cell == Cell::Lstm {
        match &a.tensor_list(2)?[..] {
            [h, c] => (h.clone(), Some(c.clone())),
            _ => return Err(err("hx must hold h0 and c0".into())),
        }
    } else {
        (a.tensor(2)?.clone(), None)
    };
    let params = a.tensor_list(3)?;
    let (has_biases, layers, dropout, train, bidir) = (a.bool(4)?, a.int(5)?, a.float(6)?, a.bool(7)?, a.bool(8)?);
    if train && dropout > 0.0 && layers > 1 {
        return Err(err("dropout between layers in training mode draws random masks, which is not supported".into()));
    }
    let dirs = if bidir { 2 } else { 1 };
    let layers = usize::try_from(layers).ok().filter(|&l| l >= 1).ok_or_else(|| err(format!("num_layers must be positive, got {layers}")))?;
    if params.len() % (layers * dirs) != 0 {
        return Err(err(format!("{} parameters do not split into {layers} layer(s) of {dirs} direction(s)", params.len())));
    }
    let per = params.len() / (layers * dirs);
    let with_proj = match (per, has_biases) {
        (4, true) | (2, false) => false,
        (5, true) | (3, false) if cell == Cell::Lstm => true,
        _ => return Err(err(format!("{per} parameters per layer and direction do not match has_biases = {has_biases}"))),
    };
    let rows: usize = bs.iter().sum();
    let [n, features] = data.sizes() else { return Err(err(format!("data must be 2-d, got shape {:?}", data.sizes()))) };
    if *n != rows {
        return Err(err(format!("data has {n} rows where batch_sizes packs {rows}")));
    }
    let batch = bs[0];
    let g = cell.gates();
    let mut x = data.to_vec_f64();
    let mut width = *features;
    let (h0v, c0v) = (h0.to_vec_f64(), c0.as_ref().map(|c| c.to_vec_f64()));
    let (mut h_n, mut c_n) = (Vec::new(), Vec::new());
    let mut out_width = 0;
    // Each step's first row.
    let starts: Vec<usize> = bs.iter().scan(0, |o, &b| { let s = *o; *o += b; Some(s) }).collect();
    for l in 0..layers {
        let mut hidden = 0;
        let mut outs: Vec<Vec<f64>> = Vec::new();
        for d in 0..dirs {
            let w = &params[(l * dirs + d) * per..(l * dirs + d + 1) * per];
            let w_hh = Mat::of(op, &w[1], None, None)?;
            if w_hh.rows % g != 0 {
                return Err(err(format!("w_hh of shape [{}, {}] does not stack {g} gates", w_hh.rows, w_hh.cols)));
            }
            let h = w_hh.rows / g;
            let w_ih = Mat::of(op, &w[0], Some(g * h), Some(width))?;
            let b_ih = if has_biases { Mat::of(op, &w[2], Some(g * h), Some(1))?.v } else { vec![0.0; g * h] };
            let b_hh = if has_biases { Mat::of(op, &w[3], Some(g * h), Some(1))?.v } else { vec![0.0; g * h] };
            let w_hr = if with_proj { Some(Mat::of(op, &w[per - 1], None, Some(h))?) } else { None };
            let hout = w_hr.as_ref().map_or(h, |p| p.rows);
            if w_hh.cols != hout {
                return Err(err(format!("w_hh has {} columns where the hidden state has {hout}", w_hh.cols)));
            }
            hidden = hout;
            let k = l * dirs + d;
            if h0.sizes() != [layers * dirs, batch, hout] || c0.as_ref().is_some_and(|c| c.sizes() != [layers * dirs, batch, h]) {
                return Err(err(format!("the initial state of shape {:?} does not fit {} layer(s) and direction(s), batch {batch}, hidden {hout}", h0.sizes(), layers * dirs)));
            }
            let mut hs: Vec<Vec<f64>> = (0..batch).map(|b| h0v[(k * batch + b) * hout..(k * batch + b + 1) * hout].to_vec()).collect();
            let mut cs: Vec<Vec<f64>> = match &c0v {
                Some(c) => (0..batch).map(|b| c[(k * batch + b) * h..(k * batch + b + 1) * h].to_vec()).collect(),
                None => Vec::new(),
            };
            let mut y = vec![0.0; rows * hout];
            let order: Vec<usize> = if d == 0 { (0..bs.len()).collect() } else { (0..bs.len()).rev().collect() };
            for t in order {
                for b in 0..bs[t] {
                    let row = starts[t] + b;
                    let xr = &x[row * width..(row + 1) * width];
                    let mut gi = b_ih.clone();
                    w_ih.mul_add(xr, &mut gi);
                    let mut gh = b_hh.clone();
                    w_hh.mul_add(&hs[b], &mut gh);
                    let new_h: Vec<f64> = match cell {
                        Cell::Lstm => {
                            let c = &mut cs[b];
                            let mut o = vec![0.0; h];
                            for j in 0..h {
                                let s = |q: usize| gi[q * h + j] + gh[q * h + j];
                                let (i, f, gg, og) = (sigmoid(s(0)), sigmoid(s(1)), s(2).tanh(), sigmoid(s(3)));
                                c[j] = f * c[j] + i * gg;
                                o[j] = og * c[j].tanh();
                            }
                            match &w_hr {
                                Some(p) => {
                                    let mut r = vec![0.0; hout];
                                    p.mul_add(&o, &mut r);
                                    r
                                }
                                None => o,
                            }
                        }
                        Cell::Gru => (0..h)
                            .map(|j| {
                                let r = sigmoid(gi[j] + gh[j]);
                                let z = sigmoid(gi[h + j] + gh[h + j]);
                                let nn = (gi[2 * h + j] + r * gh[2 * h + j]).tanh();
                                (hs[b][j] - nn) * z + nn
                            })
                            .collect(),
                        Cell::RnnTanh => (0..h).map(|j| (gi[j] + gh[j]).tanh()).collect(),
                        Cell::RnnRelu => (0..h).map(|j| (gi[j] + gh[j]).max(0.0)).collect(),
                    };
                    y[row * hout..(row + 1) * hout].copy_from_slice(&new_h);
                    hs[b] = new_h;
                }
            }
            h_n.extend(hs.into_iter().flatten());
            c_n.extend(cs.into_iter().flatten());
            outs.push(y);
        }
        // The directions' outputs side by side along the features.
        out_width = hidden * dirs;
        x = (0..rows).flat_map(|r| outs.iter().flat_map(move |y| y[r * hidden..(r + 1) * hidden].iter().copied())).collect();
        width = out_width;
    }
    let dtype = data.dtype();
    let hidden = out_width / dirs;
    let mut r = vec![
        IValue::Tensor(Tensor::from_vec(x, &[rows, out_width])?.to_dtype(dtype)?),
        IValue::Tensor(Tensor::from_vec(h_n, &[layers * dirs, batch, hidden])?.to_dtype(dtype)?),
    ];
    if cell == Cell::Lstm {
        let ch = c_n.len() / (layers * dirs * batch).max(1);
        r.push(IValue::Tensor(Tensor::from_vec(c_n, &[layers * dirs, batch, ch])?.to_dtype(dtype)?));
    }
    Ok(r)
}

pub fn register(r: &mut KernelRegistry) {
    r.register(op::_PAD_PACKED_SEQUENCE, k_pad_packed_sequence);
    r.register(op::LSTM_DATA, |a| packed_layer(op::LSTM_DATA.name(), Cell::Lstm, a));
    r.register(op::GRU_DATA, |a| packed_layer(op::GRU_DATA.name(), Cell::Gru, a));
    r.register(op::RNN_TANH_DATA, |a| packed_layer(op::RNN_TANH_DATA.name(), Cell::RnnTanh, a));
    r.register(op::RNN_RELU_DATA, |a| packed_layer(op::RNN_RELU_DATA.name(), Cell::RnnRelu, a));
}
