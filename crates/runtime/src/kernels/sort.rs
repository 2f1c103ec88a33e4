//! Sorting kernels: `sort` (and `.stable`), `argsort` (and `.stable`), `msort` and `topk`.
//!
//! Ordering follows PyTorch: NaN is greater than every number (last in ascending order,
//! first in descending order), and `-0.0 == 0.0`. `stable=True` sorts keep equal elements in
//! input order (descending too). The default (unstable) sort and `topk` follow the
//! algorithms of PyTorch's CPU kernels (introsort; heap or introselect selection), so equal
//! elements come out in the same order as in PyTorch.

use dialect_aten::op;
use std::cmp::Ordering;

use super::linalg::outs;
use super::{Args, KernelRegistry};
use crate::dispatch_dtype;
use crate::tensor::shape::normalize_dim;
use crate::tensor::{KernelError, Result, Tensor};
use crate::value::IValue;

/// Total order with NaN greatest (NaNs equal to each other).
#[inline(always)]
#[allow(clippy::eq_op)]
fn cmp_nan_last<T: PartialOrd>(a: &T, b: &T) -> Ordering {
    match a.partial_cmp(b) {
        Some(o) => o,
        None => {
            let (an, bn) = (a != a, b != b);
            match (an, bn) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => Ordering::Equal,
            }
        }
    }
}

/// How a lane is ordered: a full stable sort, or `topk`'s selection.
#[derive(Clone, Copy, PartialEq, Debug)]
enum LaneOrder {
    Stable,
    /// PyTorch's default (`stable=False`) CPU sort: an introsort.
    Unstable,
    TopK {
        sorted: bool,
    },
}

/// Sorts every lane along `dim`, keeping the first `k` (all when `None`) of each lane.
/// Returns (values, int64 indices), both with `dim` of size `k`.
fn sort_lanes(
    op: &'static str,
    x: &Tensor,
    dim: i64,
    descending: bool,
    k: Option<usize>,
    order: LaneOrder,
) -> Result<(Tensor, Tensor)> {
    let d = normalize_dim(op, dim, x.dim())?;
    let sizes: Vec<usize> = if x.dim() == 0 { vec![1] } else { x.sizes().to_vec() };
    let n = sizes[d];
    let keep = k.unwrap_or(n);
    if keep > n {
        return Err(KernelError::new(op, format!("k ({keep}) is out of range for dimension {d} of size {n}")));
    }
    let outer: usize = sizes[..d].iter().product();
    let inner: usize = sizes[d + 1..].iter().product();
    let mut out_sizes = x.sizes().to_vec();
    if x.dim() > 0 {
        out_sizes[d] = keep;
    }
    let mut indices = vec![0i64; outer * keep * inner];
    let values = dispatch_dtype!(x.dtype(), T => {
        let src = x.to_vec::<T>()?;
        let mut vals: Vec<T> = vec![T::default(); outer * keep * inner];
        let mut lane: Vec<(T, usize)> = Vec::with_capacity(n);
        for o in 0..outer {
            for i in 0..inner {
                lane.clear();
                lane.extend((0..n).map(|j| (src[(o * n + j) * inner + i], j)));
                match order {
                    LaneOrder::Stable if descending => lane.sort_by(|a, b| cmp_nan_last(&b.0, &a.0)),
                    LaneOrder::Stable => lane.sort_by(|a, b| cmp_nan_last(&a.0, &b.0)),
                    LaneOrder::Unstable => {
                        let before = |a: &(T, usize), b: &(T, usize)| {
                            let o = cmp_nan_last(&a.0, &b.0);
                            if descending { o == Ordering::Greater } else { o == Ordering::Less }
                        };
                        select::sort(&mut lane, &before);
                    }
                    LaneOrder::TopK { sorted } => {
                        let before = |a: &(T, usize), b: &(T, usize)| {
                            let o = cmp_nan_last(&a.0, &b.0);
                            if descending { o == Ordering::Greater } else { o == Ordering::Less }
                        };
                        select::top_k(&mut lane, keep, sorted, &before);
                    }
                }
                for (j, &(v, ix)) in lane.iter().take(keep).enumerate() {
                    let p = (o * keep + j) * inner + i;
                    vals[p] = v;
                    indices[p] = ix as i64;
                }
            }
        }
        Tensor::from_vec(vals, &out_sizes)?
    });
    Ok((values, Tensor::from_vec(indices, &out_sizes)?))
}

fn sort(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::SORT, args, 1)?;
    let (v, i) = sort_lanes(
        a.op,
        a.tensor(0)?,
        a.opt_int(1)?.unwrap_or(-1),
        a.opt_bool(2)?.unwrap_or(false),
        None,
        LaneOrder::Unstable,
    )?;
    Ok(outs([v, i]))
}

/// `sort.stable(self, *, stable, dim=-1, descending=False)`.
fn sort_stable(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::SORT_STABLE, args, 1)?;
    let (v, i) = sort_lanes(
        a.op,
        a.tensor(0)?,
        a.opt_int(2)?.unwrap_or(-1),
        a.opt_bool(3)?.unwrap_or(false),
        None,
        if a.opt_bool(1)?.unwrap_or(false) { LaneOrder::Stable } else { LaneOrder::Unstable },
    )?;
    Ok(outs([v, i]))
}

fn argsort(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::ARGSORT, args, 1)?;
    let (_, i) = sort_lanes(
        a.op,
        a.tensor(0)?,
        a.opt_int(1)?.unwrap_or(-1),
        a.opt_bool(2)?.unwrap_or(false),
        None,
        LaneOrder::Unstable,
    )?;
    Ok(outs([i]))
}

/// `argsort.stable(self, *, stable, dim=-1, descending=False)`.
fn argsort_stable(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::ARGSORT_STABLE, args, 1)?;
    let (_, i) = sort_lanes(
        a.op,
        a.tensor(0)?,
        a.opt_int(2)?.unwrap_or(-1),
        a.opt_bool(3)?.unwrap_or(false),
        None,
        if a.opt_bool(1)?.unwrap_or(false) { LaneOrder::Stable } else { LaneOrder::Unstable },
    )?;
    Ok(outs([i]))
}

fn msort(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::MSORT, args, 1)?;
    let (v, _) = sort_lanes(a.op, a.tensor(0)?, 0, false, None, LaneOrder::Unstable)?;
    Ok(outs([v]))
}

fn topk(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::TOPK.name();
    let a = Args::new(OP, args, 2)?;
    let x = a.tensor(0)?;
    let k = a.int(1)?;
    let k = usize::try_from(k).map_err(|_| KernelError::new(OP, format!("k ({k}) must be non-negative")))?;
    let largest = a.opt_bool(3)?.unwrap_or(true);
    let sorted = a.opt_bool(4)?.unwrap_or(true);
    let (v, i) = sort_lanes(OP, x, a.opt_int(2)?.unwrap_or(-1), largest, Some(k), LaneOrder::TopK { sorted })?;
    Ok(outs([v, i]))
}

/// `topk`'s selection, done the way PyTorch's CPU kernel does it so that ties come out in
/// the same order: a partial sort (heap select, then heap sort) when `k · 64 <= n`,
/// otherwise an introselect of the k-th element followed by an introsort of the ones before
/// it (the algorithms of the GNU C++ library, which PyTorch's Linux builds use). `before(a, b)`
/// is the strict order ("a comes first").
mod select {
    type Before<'f, E> = &'f dyn Fn(&E, &E) -> bool;

    pub(super) fn top_k<E: Copy>(v: &mut [E], k: usize, sorted: bool, before: Before<'_, E>) {
        let n = v.len();
        if k == 0 || n == 0 {
            return;
        }
        if k * 64 <= n {
            heap_select(v, k, before);
            sort_heap(&mut v[..k], before);
        } else {
            nth_element(v, k - 1, before);
            if sorted {
                introsort(&mut v[..k - 1], before);
            }
        }
    }

    fn lg(n: usize) -> usize {
        (usize::BITS - 1 - n.leading_zeros()) as usize
    }

    fn adjust_heap<E: Copy>(v: &mut [E], mut hole: usize, len: usize, value: E, before: Before<'_, E>) {
        let top = hole;
        let mut child = hole;
        while child < (len - 1) / 2 {
            child = 2 * (child + 1);
            if before(&v[child], &v[child - 1]) {
                child -= 1;
            }
            v[hole] = v[child];
            hole = child;
        }
        if len.is_multiple_of(2) && child == (len - 2) / 2 {
            child = 2 * (child + 1);
            v[hole] = v[child - 1];
            hole = child - 1;
        }
        // Push `value` up from `hole` towards `top`.
        while hole > top {
            let parent = (hole - 1) / 2;
            if !before(&v[parent], &value) {
                break;
            }
            v[hole] = v[parent];
            hole = parent;
        }
        v[hole] = value;
    }

    fn make_heap<E: Copy>(v: &mut [E], before: Before<'_, E>) {
        let len = v.len();
        if len < 2 {
            return;
        }
        let mut parent = (len - 2) / 2;
        loop {
            let value = v[parent];
            adjust_heap(v, parent, len, value, before);
            if parent == 0 {
                return;
            }
            parent -= 1;
        }
    }

    /// Moves the heap top of `v[..len]` to position `result` and re-heaps with the old
    /// `v[result]`.
    fn pop_heap<E: Copy>(v: &mut [E], len: usize, result: usize, before: Before<'_, E>) {
        let value = v[result];
        v[result] = v[0];
        adjust_heap(v, 0, len, value, before);
    }

    fn heap_select<E: Copy>(v: &mut [E], middle: usize, before: Before<'_, E>) {
        make_heap(&mut v[..middle], before);
        for i in middle..v.len() {
            if before(&v[i], &v[0]) {
                pop_heap(v, middle, i, before);
            }
        }
    }

    fn sort_heap<E: Copy>(v: &mut [E], before: Before<'_, E>) {
        let mut last = v.len();
        while last > 1 {
            last -= 1;
            pop_heap(v, last, last, before);
        }
    }

    fn move_median_to_first<E: Copy>(v: &mut [E], a: usize, b: usize, c: usize, before: Before<'_, E>) {
        let m = if before(&v[a], &v[b]) {
            if before(&v[b], &v[c]) {
                b
            } else if before(&v[a], &v[c]) {
                c
            } else {
                a
            }
        } else if before(&v[a], &v[c]) {
            a
        } else if before(&v[b], &v[c]) {
            c
        } else {
            b
        };
        v.swap(0, m);
    }

    /// Partitions `v[1..]` around the pivot `v[0]`; returns the cut.
    fn partition_pivot<E: Copy>(v: &mut [E], before: Before<'_, E>) -> usize {
        let n = v.len();
        move_median_to_first(v, 1, n / 2, n - 1, before);
        let (mut first, mut last) = (1usize, n);
        loop {
            while before(&v[first], &v[0]) {
                first += 1;
            }
            last -= 1;
            while before(&v[0], &v[last]) {
                last -= 1;
            }
            if first >= last {
                return first;
            }
            v.swap(first, last);
            first += 1;
        }
    }

    fn insertion_sort<E: Copy>(v: &mut [E], before: Before<'_, E>) {
        for i in 1..v.len() {
            let val = v[i];
            if before(&val, &v[0]) {
                v.copy_within(0..i, 1);
                v[0] = val;
            } else {
                let mut j = i;
                while before(&val, &v[j - 1]) {
                    v[j] = v[j - 1];
                    j -= 1;
                }
                v[j] = val;
            }
        }
    }

    fn nth_element<E: Copy>(v: &mut [E], nth: usize, before: Before<'_, E>) {
        let (mut first, mut last) = (0usize, v.len());
        if nth >= last {
            return;
        }
        let mut depth = 2 * lg(last);
        while last - first > 3 {
            if depth == 0 {
                heap_select(&mut v[first..last], nth - first + 1, before);
                v.swap(first, nth);
                return;
            }
            depth -= 1;
            let cut = first + partition_pivot(&mut v[first..last], before);
            if cut <= nth {
                first = cut;
            } else {
                last = cut;
            }
        }
        insertion_sort(&mut v[first..last], before);
    }

    /// An unstable sort ordering ties as PyTorch's default CPU sort does.
    pub(super) fn sort<E: Copy>(v: &mut [E], before: Before<'_, E>) {
        introsort(v, before);
    }

    fn introsort<E: Copy>(v: &mut [E], before: Before<'_, E>) {
        if v.len() < 2 {
            return;
        }
        introsort_loop(v, 2 * lg(v.len()), before);
        insertion_sort(v, before);
    }

    fn introsort_loop<E: Copy>(v: &mut [E], mut depth: usize, before: Before<'_, E>) {
        let mut last = v.len();
        while last > 16 {
            if depth == 0 {
                heap_select(&mut v[..last], last, before);
                sort_heap(&mut v[..last], before);
                return;
            }
            depth -= 1;
            let cut = partition_pivot(&mut v[..last], before);
            introsort_loop(&mut v[cut..last], depth, before);
            last = cut;
        }
    }
}

pub fn register(r: &mut KernelRegistry) {
    r.register(op::SORT, sort);
    r.register(op::SORT_STABLE, sort_stable);
    r.register(op::ARGSORT, argsort);
    r.register(op::ARGSORT_STABLE, argsort_stable);
    r.register(op::MSORT, msort);
    r.register(op::TOPK, topk);
}
