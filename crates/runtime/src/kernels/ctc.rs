//! `ctc_loss` (both overloads: lengths as int lists or as tensors): the connectionist temporal
//! classification loss, the negative log of the probability summed over every alignment of
//! each target with its input (the forward recursion over the target with blanks between and
//! around its labels, in log space, in `f64`), reduced per `reduction`: none, the mean of the
//! losses each divided by its target length (at least 1), or the sum. `zero_infinity` turns an
//! impossible alignment's infinite loss into 0.

use super::linalg::outs;
use super::{Args, KernelRegistry};
use crate::tensor::{KernelError, Result, Tensor};
use crate::value::IValue;
use dialect_aten::op;

fn lse(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY {
        return b;
    }
    if b == f64::NEG_INFINITY {
        return a;
    }
    let m = a.max(b);
    m + ((a - m).exp() + (b - m).exp()).ln()
}

/// The negative log-likelihood of `target` given `t_len` steps of the `[T, C]` log-probabilities
/// `lp` (row stride `c`).
fn nll(lp: &[f64], c: usize, t_len: usize, target: &[i64], blank: i64) -> f64 {
    let l = target.len();
    let ext: Vec<i64> = (0..2 * l + 1).map(|s| if s % 2 == 0 { blank } else { target[s / 2] }).collect();
    if t_len == 0 {
        return if l == 0 { 0.0 } else { f64::INFINITY };
    }
    let at = |t: usize, k: i64| lp[t * c + k as usize];
    let mut alpha = vec![f64::NEG_INFINITY; ext.len()];
    alpha[0] = at(0, blank);
    if l > 0 {
        alpha[1] = at(0, ext[1]);
    }
    for t in 1..t_len {
        let prev = alpha.clone();
        for s in 0..ext.len() {
            let mut a = prev[s];
            if s > 0 {
                a = lse(a, prev[s - 1]);
            }
            if s > 1 && ext[s] != blank && ext[s] != ext[s - 2] {
                a = lse(a, prev[s - 2]);
            }
            alpha[s] = if a == f64::NEG_INFINITY { a } else { a + at(t, ext[s]) };
        }
    }
    let last = alpha[2 * l];
    let ll = if l > 0 { lse(last, alpha[2 * l - 1]) } else { last };
    -ll
}

fn ctc_loss(args: &[IValue], tensors: bool) -> Result<Vec<IValue>> {
    let a = Args::new(if tensors { op::CTC_LOSS_TENSOR } else { op::CTC_LOSS_INTLIST }, args, 4)?;
    let err = |m: String| KernelError::new(a.op, m);
    let (lp, targets) = (a.tensor(0)?, a.tensor(1)?);
    let lengths = |i: usize| -> Result<Vec<i64>> { if tensors { Ok(a.tensor(i)?.to_vec_i64()) } else { a.int_list(i) } };
    let (in_lens, tgt_lens) = (lengths(2)?, lengths(3)?);
    let blank = a.opt_int(4)?.unwrap_or(0);
    let reduction = a.opt_int(5)?.unwrap_or(1);
    let zero_inf = a.opt_bool(6)?.unwrap_or(false);
    let dt = lp.dtype();
    if !dt.is_floating() {
        return Err(err(format!("\"ctc_loss_cpu\" not implemented for '{}'", dt.torch_name())));
    }
    let batched = lp.dim() == 3;
    if !batched && lp.dim() != 2 {
        return Err(err(format!("log_probs must be 2-D or 3-D, got shape {:?}", lp.sizes())));
    }
    let (t_max, n, c) = if batched { (lp.sizes()[0], lp.sizes()[1], lp.sizes()[2]) } else { (lp.sizes()[0], 1, lp.sizes()[1]) };
    if blank < 0 || blank as usize >= c {
        return Err(err("blank must be in label range".into()));
    }
    if in_lens.len() != n || tgt_lens.len() != n {
        return Err(err(format!("input_lengths and target_lengths must have {n} entries, got {} and {}", in_lens.len(), tgt_lens.len())));
    }
    let tg = targets.to_vec_i64();
    let concatenated = targets.dim() == 1 && batched || !batched;
    let lpv = lp.to_vec_f64();
    let mut losses = Vec::with_capacity(n);
    let mut offset = 0usize;
    for b in 0..n {
        let (tl, ll) = (in_lens[b], tgt_lens[b]);
        if tl < 0 || tl as usize > t_max {
            return Err(err(format!("Expected input_lengths to have value at most {t_max}, but got value {tl}")));
        }
        if ll < 0 {
            return Err(err(format!("target length {ll} is negative")));
        }
        let ll = ll as usize;
        let tgt: Vec<i64> = if concatenated {
            let s = tg.get(offset..offset + ll).ok_or_else(|| err(format!("the targets hold fewer than {} labels", offset + ll)))?.to_vec();
            offset += ll;
            s
        } else {
            let s = targets.sizes()[1];
            if ll > s {
                return Err(err(format!("Expected tensor to have size at least {ll} at dimension 1, but got size {s}")));
            }
            tg[b * s..b * s + ll].to_vec()
        };
        if let Some(&bad) = tgt.iter().find(|&&k| k < 0 || k as usize >= c || k == blank) {
            return Err(err(format!("target label {bad} is out of range or is the blank")));
        }
        // This sample's `[T, C]` rows.
        let rows: Vec<f64> = (0..t_max).flat_map(|t| (0..c).map(move |k| (t, k))).map(|(t, k)| lpv[(t * n + b) * c + k]).collect();
        let mut v = nll(&rows, c, tl as usize, &tgt, blank);
        if zero_inf && v == f64::INFINITY {
            v = 0.0;
        }
        losses.push((v, ll));
    }
    let out = match reduction {
        0 => {
            let shape: Vec<usize> = if batched { vec![n] } else { vec![] };
            Tensor::from_vec(losses.iter().map(|l| l.0).collect::<Vec<f64>>(), &shape)?
        }
        1 => {
            let m = losses.iter().map(|(v, l)| v / (*l).max(1) as f64).sum::<f64>() / n as f64;
            Tensor::from_vec(vec![m], &[])?
        }
        2 => Tensor::from_vec(vec![losses.iter().map(|l| l.0).sum::<f64>()], &[])?,
        r => return Err(err(format!("reduction must be 0, 1 or 2, got {r}"))),
    };
    Ok(outs([out.to_dtype(dt)?]))
}

pub fn register(r: &mut KernelRegistry) {
    r.register(op::CTC_LOSS_INTLIST, |args| ctc_loss(args, false));
    r.register(op::CTC_LOSS_TENSOR, |args| ctc_loss(args, true));
}
