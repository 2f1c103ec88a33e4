//! `histogramdd`: the D-dimensional histogram of the points of an `[..., D]` input, with bin
//! counts per dim (evenly spaced edges over a range, given or taken from the data) or explicit
//! edge tensors, optional per-point weights and density normalization. Returns the histogram
//! and the edges of each dim.
//!
//! Computed in the input's dtype (`f32` or `f64`, the dtypes PyTorch's CPU kernel accepts):
//! evenly spaced edges are `linspace` in that dtype, a point is binned by division with a
//! search of the neighbouring edges (explicit edges: a binary search), points outside the
//! outer edges are dropped, and the last bin of each dim includes its right edge.

use dialect_aten::op;
use ir::DType;

use super::linalg::Real;
use super::{Args, KernelRegistry};
use crate::tensor::{Element, KernelError, Result, Tensor};
use crate::value::IValue;

/// How a point's bin along one dim is found.
#[derive(Clone, Copy, PartialEq)]
enum Search {
    /// Evenly spaced edges: division, then a search of the edges around the estimate.
    Linear,
    /// Explicit edges: a binary search of all of them.
    Binary,
}

/// The index of the first element of `edges` greater than `v` (C++'s `upper_bound`, with its
/// exact sequence of comparisons, so unsorted edges behave as they do in PyTorch; a NaN `v`
/// compares as not less than any edge).
#[allow(clippy::neg_cmp_op_on_partial_ord)]
fn upper_bound<T: Real>(edges: &[T], v: T) -> usize {
    let (mut first, mut count) = (0usize, edges.len());
    while count > 0 {
        let step = count / 2;
        let it = first + step;
        if !(v < edges[it]) {
            first = it + 1;
            count -= step + 1;
        } else {
            count = step;
        }
    }
    first
}

/// `steps` evenly spaced values from `start` to `end` computed in `T`, the first half counted
/// up from `start` and the second half down from `end` (PyTorch's `linspace`).
fn linspace<T: Real>(start: f64, end: f64, steps: usize) -> Vec<T> {
    let (s, e) = (T::of(start), T::of(end));
    if steps == 1 {
        return vec![s];
    }
    let step = (e - s) / T::of((steps - 1) as f64);
    let half = steps / 2;
    (0..steps).map(|i| if i < half { s + step * T::of(i as f64) } else { e - step * T::of((steps - i - 1) as f64) }).collect()
}

/// The histogram of the `n × d` points `x` over `edges` (one sorted list per dim).
fn histogram<T: Real>(x: &[T], n: usize, edges: &[Vec<T>], weight: Option<&[T]>, density: bool, search: Search) -> Vec<T> {
    let d = edges.len();
    let bins: Vec<usize> = edges.iter().map(|e| e.len() - 1).collect();
    let total: usize = bins.iter().product();
    let mut strides = vec![1usize; d];
    for k in (0..d.saturating_sub(1)).rev() {
        strides[k] = strides[k + 1] * bins[k + 1];
    }
    let mut hist = vec![T::ZERO; total];
    'points: for i in 0..n {
        let mut at = 0usize;
        for (k, e) in edges.iter().enumerate() {
            let v = x[i * d + k];
            let (lo, hi) = (e[0], e[e.len() - 1]);
            if !(v >= lo && v <= hi) {
                continue 'points;
            }
            let last = e.len() - 1;
            let mut pos = match search {
                Search::Binary => upper_bound(e, v) as i64 - 1,
                Search::Linear => {
                    let guess = ((v - lo) * T::of(last as f64) / (hi - lo)).to_f64() as i64;
                    let from = (guess - 1).max(0) as usize;
                    let to = ((guess + 2).max(0) as usize).min(e.len()).max(from);
                    (from + upper_bound(&e[from..to], v)) as i64 - 1
                }
            };
            if pos == last as i64 {
                pos -= 1;
            }
            // Unsorted explicit edges can place a point in no bin; PyTorch reads out of bounds.
            if pos < 0 || pos as usize >= bins[k] {
                continue 'points;
            }
            at += strides[k] * pos as usize;
        }
        hist[at] += weight.map_or(T::ONE, |w| w[i]);
    }
    if density {
        let mut sum = T::ZERO;
        for &h in &hist {
            sum += h;
        }
        for h in &mut hist {
            *h = *h / sum;
        }
        for (k, e) in edges.iter().enumerate() {
            for (j, h) in hist.iter_mut().enumerate() {
                let b = (j / strides[k]) % bins[k];
                *h = *h / (e[b + 1] - e[b]);
            }
        }
    }
    hist
}

/// The bins of `histogramdd`: counts per dim or explicit edge tensors.
enum Bins {
    Counts(Vec<i64>),
    Edges(Vec<Tensor>),
}

fn histogramdd(op: &'static str, a: &Args, bins: Bins) -> Result<Vec<IValue>> {
    let x = a.tensor(0)?;
    let range = if a.get(2).is_none() { None } else { Some(a.float_list(2)?) };
    let weight = a.opt_tensor(3)?;
    let density = if a.get(4).is_none() { false } else { a.bool(4)? };
    let dt = x.dtype();
    if !matches!(dt, DType::F32 | DType::F64) {
        return Err(KernelError::new(op, format!("not implemented for dtype {}", dt.torch_name())));
    }
    if x.dim() < 2 {
        return Err(KernelError::new(op, format!("input tensor should have at least 2 dimensions, got {}", x.dim())));
    }
    let d = x.sizes()[x.dim() - 1];
    let n = x.numel().checked_div(d).unwrap_or_else(|| x.sizes()[..x.dim() - 1].iter().product());
    let nbins = match &bins {
        Bins::Counts(c) => c.len(),
        Bins::Edges(e) => e.len(),
    };
    if nbins != d {
        return Err(KernelError::new(
            op,
            format!("the number of bins ({nbins}) must equal the innermost dimension of the input ({d})"),
        ));
    }
    if let Some(w) = weight {
        if w.dtype() != dt {
            return Err(KernelError::new(op, "input and weight tensors must have the same dtype"));
        }
        if w.sizes() != &x.sizes()[..x.dim() - 1] {
            return Err(KernelError::new(
                op,
                format!("weight of shape {:?} must have the input's shape {:?} without its innermost dim", w.sizes(), x.sizes()),
            ));
        }
    }
    let xc = x.contiguous()?;
    let wc = weight.map(|w| w.contiguous()).transpose()?;
    super::linalg::with_real!(op, dt, T => {
        let xs = xc.as_slice::<T>()?;
        let ws = match &wc {
            Some(w) => Some(w.as_slice::<T>()?),
            None => None,
        };
        let (edges, search): (Vec<Vec<T>>, Search) = match &bins {
            Bins::Counts(counts) => {
                if let Some((k, c)) = counts.iter().enumerate().find(|(_, c)| **c <= 0) {
                    return Err(KernelError::new(op, format!("bins must be > 0, but got {c} for dimension {k}")));
                }
                let (mut lo, mut hi) = (vec![0.0f64; d], vec![1.0f64; d]);
                match &range {
                    Some(r) => {
                        if r.len() != 2 * d {
                            return Err(KernelError::new(op, format!("range must have {} elements for a {d}-dimensional histogram, got {}", 2 * d, r.len())));
                        }
                        for k in 0..d {
                            (lo[k], hi[k]) = (r[2 * k], r[2 * k + 1]);
                        }
                    }
                    None if n > 0 => {
                        for k in 0..d {
                            let (mut mn, mut mx) = (xs[k], xs[k]);
                            for i in 0..n {
                                let v = xs[i * d + k];
                                if v.is_nan() || mn.is_nan() {
                                    mn = T::NAN;
                                    mx = T::NAN;
                                } else {
                                    if v < mn { mn = v; }
                                    if v > mx { mx = v; }
                                }
                            }
                            (lo[k], hi[k]) = (mn.to_f64(), mx.to_f64());
                        }
                    }
                    None => {}
                }
                for k in 0..d {
                    if !lo[k].is_finite() || !hi[k].is_finite() {
                        return Err(KernelError::new(op, format!("dimension {k}'s range [{}, {}] is not finite", lo[k], hi[k])));
                    }
                    if lo[k] > hi[k] {
                        return Err(KernelError::new(op, format!("min should not exceed max, got min {} max {} for dimension {k}", lo[k], hi[k])));
                    }
                    if lo[k] == hi[k] {
                        lo[k] -= 0.5;
                        hi[k] += 0.5;
                    }
                }
                let edges = (0..d).map(|k| linspace::<T>(lo[k], hi[k], counts[k] as usize + 1)).collect();
                (edges, Search::Linear)
            }
            Bins::Edges(ts) => {
                let mut edges = Vec::with_capacity(d);
                for (k, t) in ts.iter().enumerate() {
                    if t.dtype() != dt {
                        return Err(KernelError::new(op, format!("input and bins tensors must have the same dtype, got bins for dimension {k} of dtype {}", t.dtype().torch_name())));
                    }
                    if t.dim() != 1 {
                        return Err(KernelError::new(op, format!("bins tensor should have one dimension, got {} for dimension {k}", t.dim())));
                    }
                    if t.numel() < 2 {
                        return Err(KernelError::new(op, format!("bins tensor for dimension {k} needs at least 2 edges, got {}", t.numel())));
                    }
                    edges.push(t.to_vec::<T>()?);
                }
                (edges, Search::Binary)
            }
        };
        let hist = histogram(xs, n, &edges, ws, density, search);
        let shape: Vec<usize> = edges.iter().map(|e| e.len() - 1).collect();
        let hist = Tensor::from_vec(hist, &shape)?;
        let edge_tensors = edges.into_iter().map(|e| { let len = e.len(); Tensor::from_vec(e, &[len]) }).collect::<Result<Vec<_>>>()?;
        Ok(vec![IValue::Tensor(hist), IValue::TensorList(edge_tensors)])
    })
}

/// `histogramdd(self, int[] bins, range?, weight?, density)`.
fn k_histogramdd(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::HISTOGRAMDD, args, 2)?;
    histogramdd(a.op, &a, Bins::Counts(a.int_list(1)?))
}

/// `histogramdd.int_bins(self, int bins, ...)`: the same count in every dim.
fn k_histogramdd_int_bins(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::HISTOGRAMDD_INT_BINS, args, 2)?;
    let x = a.tensor(0)?;
    let d = if x.dim() == 0 { 0 } else { x.sizes()[x.dim() - 1] };
    histogramdd(a.op, &a, Bins::Counts(vec![a.int(1)?; d]))
}

/// `histogramdd.TensorList_bins(self, Tensor[] bins, ...)`: explicit edges (`range` is unused).
fn k_histogramdd_tensors(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::HISTOGRAMDD_TENSORLIST_BINS, args, 2)?;
    histogramdd(a.op, &a, Bins::Edges(a.tensor_list(1)?))
}

pub fn register(r: &mut KernelRegistry) {
    r.register(op::HISTOGRAMDD, k_histogramdd);
    r.register(op::HISTOGRAMDD_INT_BINS, k_histogramdd_int_bins);
    r.register(op::HISTOGRAMDD_TENSORLIST_BINS, k_histogramdd_tensors);
}
