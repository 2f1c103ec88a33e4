//! Decompositions of the creation and rearrangement ops `torch.export` leaves: `linspace` and
//! `logspace` in every overload (a tensor bound read as a number, as PyTorch reads it),
//! `unfold_copy`, `_chunk_cat`, `pad_sequence`, `combinations`, the reshapes `_reshape_alias`,
//! `_reshape_from_tensor` and `_shape_as_tensor`, the masked indexing ops
//! `_unsafe_masked_index` and `_unsafe_masked_index_put_accumulate`, the copies `_to_cpu` and
//! `to_dense`, `bernoulli`, `_saturate_weight_to_fp16`, `flatten_dense_tensors` and
//! `unflatten_dense_tensors`; and the ops that return a number about their operands (`item`,
//! `result_type`, `promote_types`, `can_cast`, `_is_zerotensor`, `output_nr`,
//! `retains_grad`), folded to constants where the types decide them.

use super::composite::{f, static_shape};
use super::decompose::{DecompResult, DecompositionTable, cast, input, one, rank_of};
use super::rewrite::{Arg, OpBuilder, Size};
use super::stacking::{int, ints, tensor_list};
use dialect_aten::infer::{DEFAULT_FLOAT, PromoteArg, ScalarVal, result_type};
use dialect_aten::op;
use dialect_prim::kinds;
use ir::{Attribute, DType, DTypeCategory, DenseAttr, OpId, ValueId};

/// Adds the creation decompositions to `t`.
pub(super) fn add(t: &mut DecompositionTable) {
    for o in [op::LINSPACE_SCALAR_TENSOR, op::LINSPACE_TENSOR_SCALAR, op::LINSPACE_TENSOR_TENSOR] {
        t.insert(o, linspace);
    }
    for o in [op::LOGSPACE, op::LOGSPACE_SCALAR_TENSOR, op::LOGSPACE_TENSOR_SCALAR, op::LOGSPACE_TENSOR_TENSOR] {
        t.insert(o, logspace);
    }
    t.insert(op::ITEM, |b, op| {
        let x = input(b, op, "self")?;
        one(b.call(op::_LOCAL_SCALAR_DENSE, &[x.into()]))
    })
    .insert(op::UNFOLD_COPY, unfold_copy)
    .insert(op::_CHUNK_CAT, chunk_cat)
    .insert(op::PAD_SEQUENCE, pad_sequence)
    .insert(op::COMBINATIONS, combinations)
    .insert(op::_RESHAPE_ALIAS, |b, op| {
        let x = input(b, op, "self")?;
        let (size, stride) = b.with_args(op, |a| (a.constant("size"), a.constant("stride")))?;
        let (Some(size), Some(stride)) = (size, stride) else {
            return Err("_reshape_alias: size and stride must be constant".into());
        };
        one(b.call(op::AS_STRIDED, &[x.into(), Arg::A(size), Arg::A(stride)]))
    })
    .insert(op::_RESHAPE_FROM_TENSOR, reshape_from_tensor)
    .insert(op::_SHAPE_AS_TENSOR, shape_as_tensor)
    .insert(op::_UNSAFE_MASKED_INDEX, masked_index)
    .insert(op::_UNSAFE_MASKED_INDEX_PUT_ACCUMULATE, masked_index_put_accumulate)
    .insert(op::_TO_CPU, |b, op| {
        let mut copies = Vec::new();
        for t in tensor_list(b, op, "tensors")? {
            copies.push(b.call(op::CLONE, &[t.into()])?);
        }
        one(b.list(copies))
    })
    .insert(op::TO_DENSE, |b, op| {
        // Every tensor here is strided, so the dense form is a copy (of the given dtype).
        let x = input(b, op, "self")?;
        let dtype = b.with_args(op, |a| a.dtype("dtype"))?.ok_or("to_dense: dtype must be constant")?;
        let c = b.call(op::CLONE, &[x.into()])?;
        match dtype {
            Some(d) => one(cast(b, c, d)),
            None => one(Ok(c)),
        }
    })
    .insert(op::BERNOULLI, bernoulli)
    .insert(op::_SATURATE_WEIGHT_TO_FP16, saturate_to_fp16)
    .insert(op::FLATTEN_DENSE_TENSORS, |b, op| {
        let ts = tensor_list(b, op, "tensors")?;
        let mut flat = Vec::new();
        for t in &ts {
            flat.push(b.call(op::RESHAPE, &[(*t).into(), ints(&[-1])])?);
        }
        if let [one_tensor] = flat[..] {
            return one(b.call(op::CLONE, &[one_tensor.into()]));
        }
        let l = b.list(flat)?;
        one(b.call(op::CAT, &[l.into(), int(0)]))
    })
    .insert(op::UNFLATTEN_DENSE_TENSORS, unflatten_dense_tensors)
    .insert(op::RESULT_TYPE_TENSOR, |b, op| result_type_of(b, op, &["tensor", "other"]))
    .insert(op::RESULT_TYPE_SCALAR, |b, op| result_type_of(b, op, &["tensor", "other"]))
    .insert(op::RESULT_TYPE_SCALAR_TENSOR, |b, op| result_type_of(b, op, &["scalar", "tensor"]))
    .insert(op::RESULT_TYPE_SCALAR_SCALAR, |b, op| result_type_of(b, op, &["scalar1", "scalar2"]))
    .insert(op::PROMOTE_TYPES, |b, op| {
        let (x, y) = b.with_args(op, |a| (a.dtype("type1"), a.dtype("type2")))?;
        let (Some(Some(x)), Some(Some(y))) = (x, y) else { return Err("promote_types: both dtypes must be constant".into()) };
        one(b.constant(kinds::dtype(DType::promote(x, y))))
    })
    .insert(op::CAN_CAST, |b, op| {
        let (from, to) = b.with_args(op, |a| (a.dtype("from_"), a.dtype("to")))?;
        let (Some(Some(from)), Some(Some(to))) = (from, to) else { return Err("can_cast: both dtypes must be constant".into()) };
        one(b.constant(Attribute::Bool(can_cast(from, to))))
    })
    // No tensor of this runtime is a zero tensor, is produced by an autograd node (so its
    // output number is 0), or retains its gradient: there is no autograd.
    .insert(op::_IS_ZEROTENSOR, |b, _| one(b.constant(Attribute::Bool(false))))
    .insert(op::OUTPUT_NR, |b, _| one(b.constant(Attribute::Int(0))))
    .insert(op::RETAINS_GRAD, |b, _| one(b.constant(Attribute::Bool(false))));
}

/// Argument `name` as bound: its operand, its constant, or the schema default.
fn given(b: &OpBuilder, op: OpId, name: &str) -> Result<Arg, String> {
    b.with_args(op, |a| match a.value(name) {
        Some(v) => Arg::V(v),
        None => a.constant(name).map(Arg::A).unwrap_or(Arg::Default),
    })
}

/// A `Scalar` bound of `linspace`/`logspace`: a tensor bound read as its one element (PyTorch
/// reads it with `item()`), any other argument as given.
fn bound(b: &mut OpBuilder, op: OpId, name: &str, what: &str) -> Result<Arg, String> {
    match given(b, op, name)? {
        Arg::V(v) if b.tensor(v).is_some() => {
            if let Some(r) = b.rank(v).filter(|&r| r != 0) {
                return Err(format!("{what} only supports 0-dimensional start and end tensors, but got a tensor with {r} dimensions"));
            }
            Ok(Arg::V(b.call(op::_LOCAL_SCALAR_DENSE, &[v.into()])?))
        }
        other => Ok(other),
    }
}

/// `linspace` with a tensor bound: the default overload of the bounds' numbers.
fn linspace(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let (start, end) = (bound(b, op, "start", "linspace")?, bound(b, op, "end", "linspace")?);
    let steps = given(b, op, "steps")?;
    let dtype = b.with_args(op, |a| a.constant("dtype"))?.unwrap_or_else(kinds::none);
    one(b.call(op::LINSPACE, &[start, end, steps, Arg::A(dtype)]))
}

/// `logspace(start, end, steps, base)`: `base ** linspace(start, end, steps)`, the exponents and
/// powers computed in `f64` (as PyTorch computes them) and rounded to the dtype once.
fn logspace(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let (start, end) = (bound(b, op, "start", "logspace")?, bound(b, op, "end", "logspace")?);
    let steps = given(b, op, "steps")?;
    let base = b.with_args(op, |a| a.float("base"))?.unwrap_or(10.0);
    let dtype = b.with_args(op, |a| a.dtype("dtype"))?.ok_or("logspace: dtype must be constant")?.unwrap_or(DEFAULT_FLOAT);
    // An integral result takes the bounds as integers of its type first, truncated.
    let (start, end) = if dtype.is_floating() { (start, end) } else { (truncated(b, start)?, truncated(b, end)?) };
    let lin = b.call(op::LINSPACE, &[start, end, steps, Arg::A(kinds::dtype(DType::F64))])?;
    let p = b.call(op::POW_SCALAR, &[f(base), lin.into()])?;
    one(cast(b, p, dtype))
}

/// A number argument truncated toward zero to an integer.
fn truncated(b: &mut OpBuilder, a: Arg) -> Result<Arg, String> {
    Ok(match a {
        Arg::A(Attribute::Float(x)) => Arg::A(Attribute::Int(x.get().trunc() as i64)),
        Arg::V(v) => Arg::V(b.call(op::TS_INT_SCALAR, &[v.into()])?),
        other => other,
    })
}

/// `unfold_copy(x, d, size, step)`: the windows `x[…, i·step .. i·step + size, …]` of dimension
/// `d`, that dimension becoming the window index and a new last dimension the position in the
/// window; gathered with one `index_select` of every window's indices.
fn unfold_copy(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "self")?;
    let (d, size, step) = b.with_args(op, |a| (a.int("dimension"), a.int("size"), a.int("step")))?;
    let (Some(d), Some(size), Some(step)) = (d, size, step) else {
        return Err("unfold_copy: dimension, size and step must be constant".into());
    };
    let s = static_shape(b, x, "unfold_copy")?;
    if s.is_empty() {
        return Err("unfold_copy of a 0-d tensor is not supported".into());
    }
    let r = s.len() as i64;
    let d = if d < 0 { d + r } else { d };
    if d < 0 || d >= r {
        return Err(format!("unfold_copy: dimension {d} is out of range for a tensor of dimension {r}"));
    }
    let du = d as usize;
    if size > s[du] {
        return Err(format!("maximum size for tensor at dimension {d} is {} but size is {size}", s[du]));
    }
    if size < 0 {
        return Err(format!("size is {size} but must be >= 0"));
    }
    if step <= 0 {
        return Err(format!("step is {step} but must be > 0"));
    }
    let count = (s[du] - size) / step + 1;
    let idx: Vec<i64> = (0..count).flat_map(|i| (0..size).map(move |j| i * step + j)).collect();
    let idx = b.constant(Attribute::Dense(DenseAttr::from_i64(&[idx.len() as i64], &idx)?))?;
    let picked = b.call(op::INDEX_SELECT, &[x.into(), int(d), idx.into()])?;
    let mut shape = s.clone();
    shape.splice(du..=du, [count, size]);
    let windows = b.call(op::RESHAPE, &[picked.into(), ints(&shape)])?;
    // The position in the window last.
    let mut perm: Vec<i64> = (0..=r).filter(|&i| i != d + 1).collect();
    perm.push(d + 1);
    let moved = b.call(op::PERMUTE, &[windows.into(), ints(&perm)])?;
    one(b.call(op::CLONE, &[moved.into(), Arg::A(Attribute::Int(0))]))
}

/// `_chunk_cat(tensors, dim, num_chunks)`: each tensor padded with zeros along `dim` to a
/// multiple of `num_chunks`, viewed as `[…, num_chunks, -1]`, and the views concatenated
/// along `dim + 1`.
fn chunk_cat(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let ts = tensor_list(b, op, "tensors")?;
    let (dim, chunks) = b.with_args(op, |a| (a.int("dim"), a.int("num_chunks")))?;
    let (Some(dim), Some(chunks)) = (dim, chunks) else { return Err("_chunk_cat: dim and num_chunks must be constant".into()) };
    if chunks < 1 {
        return Err(format!("_chunk_cat expects a positive num_chunks, got {chunks}"));
    }
    let ranks = ts.iter().map(|&t| rank_of(b, t)).collect::<Result<Vec<_>, _>>()?;
    let r0 = ranks[0] as i64;
    let dim = if ranks.iter().all(|&r| r == ranks[0]) && dim < 0 { dim + r0 } else { dim };
    if dim < 0 || ranks.iter().any(|&r| dim >= r as i64) {
        return Err(format!("_chunk_cat expects a dim ({dim}) within every input tensor's dimensions, non-negative when they differ in rank"));
    }
    let d = dim as usize;
    let mut parts = Vec::new();
    for &t in &ts {
        let s = static_shape(b, t, "_chunk_cat")?;
        if s.contains(&0) {
            return Err("_chunk_cat expects non-empty tensors".into());
        }
        if b.dtype(t) != b.dtype(ts[0]) {
            return Err("_chunk_cat expects all input tensors with the same dtype".into());
        }
        if s.len() <= d || s[..d] != static_shape(b, ts[0], "_chunk_cat")?[..d] {
            return Err("_chunk_cat expects the tensors to have the same sizes before dim and at least dim + 1 dimensions".into());
        }
        let padded_len = (s[d] + chunks - 1) / chunks * chunks;
        let mut v = t;
        if padded_len != s[d] {
            let mut pad = vec![0; 2 * (s.len() - d - 1)];
            pad.extend([0, padded_len - s[d]]);
            v = b.call(op::CONSTANT_PAD_ND, &[v.into(), ints(&pad), Arg::A(Attribute::Int(0))])?;
        }
        let mut view: Vec<i64> = s[..d].to_vec();
        view.extend([chunks, -1]);
        parts.push(b.call(op::RESHAPE, &[v.into(), ints(&view)])?);
    }
    let l = b.list(parts)?;
    one(b.call(op::CAT, &[l.into(), int(dim + 1)]))
}

/// `pad_sequence`: the sequences (dim 0 their length) padded to the longest with the padding
/// value, on the right or the left, and stacked along dim 1 (dim 0 with `batch_first`), in the
/// first sequence's dtype.
fn pad_sequence(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let seqs = tensor_list(b, op, "sequences")?;
    let (batch_first, value, side) =
        b.with_args(op, |a| (a.bool("batch_first"), a.float("padding_value"), a.constant("padding_side")))?;
    let left = match side.as_ref().and_then(Attribute::as_str) {
        None | Some("right") => false,
        Some("left") => true,
        Some(other) => return Err(format!("pad_sequence: padding_side must be 'left' or 'right', got '{other}'")),
    };
    let dtype = b.dtype(seqs[0]).ok_or("pad_sequence: the first sequence's dtype is unknown")?;
    let shapes: Vec<Vec<i64>> = seqs.iter().map(|&s| static_shape(b, s, "pad_sequence")).collect::<Result<_, _>>()?;
    if shapes.iter().any(|s| s.is_empty()) {
        return Err("pad_sequence: every sequence must have at least one dimension".into());
    }
    let longest = shapes.iter().map(|s| s[0]).max().unwrap_or(0);
    let mut padded = Vec::new();
    for (&s, shape) in seqs.iter().zip(&shapes) {
        if shape[1..] != shapes[0][1..] {
            return Err(format!("pad_sequence: the sequences' trailing sizes differ ({:?} and {:?})", &shapes[0][1..], &shape[1..]));
        }
        let s = cast(b, s, dtype)?;
        let extra = longest - shape[0];
        let mut pad = vec![0; 2 * (shape.len() - 1)];
        pad.extend(if left { [extra, 0] } else { [0, extra] });
        padded.push(b.call(op::CONSTANT_PAD_ND, &[s.into(), ints(&pad), f(value.unwrap_or(0.0))])?);
    }
    let l = b.list(padded)?;
    one(b.call(op::STACK, &[l.into(), int(if batch_first.unwrap_or(false) { 0 } else { 1 })]))
}

/// `combinations(x, r)`: the `r`-tuples of the elements of the vector `x` with increasing (or,
/// with replacement, non-decreasing) indices, in lexicographic order, as the rows of a
/// `[count, r]` tensor; `r = 0` gives an empty vector.
fn combinations(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "self")?;
    let (r, repl) = b.with_args(op, |a| (a.int("r"), a.bool("with_replacement")))?;
    let (r, repl) = (r.unwrap_or(2), repl.unwrap_or(false));
    let s = static_shape(b, x, "combinations")?;
    let [n] = s[..] else { return Err(format!("Expect a 1D vector, but got shape {s:?}")) };
    if r < 0 {
        return Err(format!("Expect a non-negative number, but got {r}"));
    }
    if r == 0 {
        return one(b.call(op::NEW_ZEROS, &[x.into(), ints(&[0])]));
    }
    let r = r as usize;
    let mut cols: Vec<Vec<i64>> = vec![Vec::new(); r];
    let mut tuple: Vec<i64> = Vec::with_capacity(r);
    tuples(n, r, repl, &mut tuple, &mut cols, 1 << 22)?;
    let mut picked = Vec::new();
    for c in &cols {
        let idx = DenseAttr::from_i64(&[c.len() as i64], c)?;
        let idx = b.constant(Attribute::Dense(idx))?;
        picked.push(b.call(op::INDEX_SELECT, &[x.into(), int(0), idx.into()])?);
    }
    let l = b.list(picked)?;
    one(b.call(op::STACK, &[l.into(), int(1)]))
}

/// Appends to `cols` (one column per position) every tuple extending `prefix` to length `r`
/// with indices below `n`, increasing (`repl`: non-decreasing); an error past `limit` tuples.
fn tuples(n: i64, r: usize, repl: bool, prefix: &mut Vec<i64>, cols: &mut [Vec<i64>], limit: usize) -> Result<(), String> {
    if prefix.len() == r {
        if cols[0].len() >= limit {
            return Err(format!("combinations: more than {limit} combinations"));
        }
        for (c, &i) in cols.iter_mut().zip(prefix.iter()) {
            c.push(i);
        }
        return Ok(());
    }
    let from = match prefix.last() {
        Some(&l) if repl => l,
        Some(&l) => l + 1,
        None => 0,
    };
    for i in from..n {
        prefix.push(i);
        tuples(n, r, repl, prefix, cols, limit)?;
        prefix.pop();
    }
    Ok(())
}

/// `_reshape_from_tensor(x, shape)`: `x` reshaped to the values of the 1-d integer tensor
/// `shape`, read when the program runs.
fn reshape_from_tensor(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let (x, shape) = (input(b, op, "self")?, input(b, op, "shape")?);
    let s = static_shape(b, shape, "_reshape_from_tensor")?;
    let [len] = s[..] else { return Err(format!("_reshape_from_tensor: shape must be a 1-d tensor, got shape {s:?}")) };
    let mut sizes = Vec::new();
    for i in 0..len {
        let e = b.call(op::SELECT_INT, &[shape.into(), int(0), int(i)])?;
        sizes.push(b.call(op::_LOCAL_SCALAR_DENSE, &[e.into()])?);
    }
    let l = b.list(sizes)?;
    one(b.call(op::RESHAPE, &[x.into(), l.into()]))
}

/// `_shape_as_tensor(x)`: the sizes of `x` as a 1-d int64 tensor.
fn shape_as_tensor(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let x = input(b, op, "self")?;
    let sizes = b.sizes_of(x).ok_or("_shape_as_tensor: the rank is unknown")?;
    let statics: Option<Vec<i64>> = sizes.iter().map(|s| if let Size::Static(n) = s { Some(*n) } else { None }).collect();
    if let Some(v) = statics {
        let d = DenseAttr::from_i64(&[v.len() as i64], &v)?;
        let c = b.constant(Attribute::Dense(d))?;
        // A copy, so that the constant is never the value a caller may write.
        return one(b.call(op::CLONE, &[c.into()]));
    }
    let mut elems = Vec::new();
    for s in sizes {
        let n = match s {
            Size::Static(n) => Arg::A(Attribute::Int(n)),
            Size::Of(v, i) => Arg::V(b.call(op::SYM_SIZE_INT, &[v.into(), int(i as i64)])?),
        };
        elems.push(b.call(op::SCALAR_TENSOR, &[n, Arg::A(kinds::dtype(DType::I64))])?);
    }
    let l = b.list(elems)?;
    one(b.call(op::STACK, &[l.into(), int(0)]))
}

/// The indices of a `Tensor?[]` argument, each tensor clamped into `[lo(size), size - 1]` of the
/// dimension it indexes; absent ones (`None`) as they are.
fn clamped_indices(b: &mut OpBuilder, op: OpId, x: ValueId, lo: fn(i64) -> i64, what: &str) -> Result<ValueId, String> {
    let idx = tensor_list(b, op, "indices")?;
    let s = static_shape(b, x, what)?;
    if idx.len() > s.len() {
        return Err(format!("{what}: too many indices for a tensor of dimension {}", s.len()));
    }
    let mut out = Vec::new();
    for (i, v) in idx.into_iter().enumerate() {
        if b.tensor(v).is_none() {
            out.push(v);
            continue;
        }
        if let Some(d) = b.dtype(v).filter(|d| !matches!(d, DType::I64 | DType::I32)) {
            return Err(format!("{what}: expected indices to be long or int, got {}", d.torch_name()));
        }
        out.push(b.call(op::CLAMP, &[v.into(), int(lo(s[i])), int(s[i] - 1)])?);
    }
    b.list(out)
}

fn check_mask(b: &OpBuilder, mask: ValueId, what: &str) -> Result<(), String> {
    match b.dtype(mask) {
        Some(DType::Bool) | None => Ok(()),
        Some(d) => Err(format!("{what}: expected mask to be bool, got {}", d.torch_name())),
    }
}

/// `_unsafe_masked_index(x, mask, indices, fill)`: `x[indices]` where `mask` holds, `fill`
/// elsewhere; the indices are clamped into range first (masked-off ones may be out of range).
fn masked_index(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let (x, mask) = (input(b, op, "self")?, input(b, op, "mask")?);
    check_mask(b, mask, "_unsafe_masked_index")?;
    let fill = b.with_args(op, |a| a.constant("fill"))?.ok_or("_unsafe_masked_index: fill must be constant")?;
    if static_shape(b, x, "_unsafe_masked_index")?.contains(&0) {
        // Nothing to read: the result, of the indexing's shape, is all `fill`.
        let l = tensor_list(b, op, "indices")?;
        let idx = b.list(l)?;
        let shaped = b.call(op::_UNSAFE_INDEX_TENSOR, &[x.into(), idx.into()]);
        let shaped = shaped.map_err(|e| format!("_unsafe_masked_index of an empty tensor: {e}"))?;
        return one(b.call(op::FULL_LIKE, &[shaped.into(), Arg::A(fill)]));
    }
    let idx = clamped_indices(b, op, x, |_| 0, "_unsafe_masked_index")?;
    let picked = b.call(op::_UNSAFE_INDEX_TENSOR, &[x.into(), idx.into()])?;
    let off = b.call(op::LOGICAL_NOT, &[mask.into()])?;
    one(b.call(op::MASKED_FILL_SCALAR, &[picked.into(), off.into(), Arg::A(fill)]))
}

/// `_unsafe_masked_index_put_accumulate(x, mask, indices, values)`: `x` with `values` added at
/// `indices` where `mask` holds; the indices are clamped into range first.
fn masked_index_put_accumulate(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let what = "_unsafe_masked_index_put_accumulate";
    let (x, mask, values) = (input(b, op, "self")?, input(b, op, "mask")?, input(b, op, "values")?);
    check_mask(b, mask, what)?;
    if static_shape(b, x, what)?.contains(&0) {
        return one(b.call(op::CLONE, &[x.into()]));
    }
    let idx = clamped_indices(b, op, x, |s| -s, what)?;
    let off = b.call(op::LOGICAL_NOT, &[mask.into()])?;
    let v = b.call(op::MASKED_FILL_SCALAR, &[values.into(), off.into(), Arg::A(Attribute::Int(0))])?;
    one(b.call(op::_UNSAFE_INDEX_PUT, &[x.into(), idx.into(), v.into(), Arg::A(Attribute::Bool(true))]))
}

/// `bernoulli(p)`: 1 where a uniform sample in `[0, 1)` falls below `p`, else 0, in `p`'s dtype.
fn bernoulli(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let p = input(b, op, "self")?;
    let d = b.dtype(p).ok_or("bernoulli: the dtype of p is unknown")?;
    if !d.is_floating() {
        return Err(format!("bernoulli expects a floating-point p, got {}", d.torch_name()));
    }
    let sample_dtype = if d == DType::F64 { DType::F64 } else { DType::F32 };
    let u = b.call(op::RAND_LIKE, &[p.into(), Arg::A(kinds::dtype(sample_dtype))])?;
    let hit = b.call(op::LT_TENSOR, &[u.into(), p.into()])?;
    one(cast(b, hit, d))
}

/// `_saturate_weight_to_fp16(w)`: the `f32` matrix `w` with every element clamped into the
/// finite range of `f16` (±65504).
fn saturate_to_fp16(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let w = input(b, op, "weight")?;
    match b.dtype(w) {
        Some(DType::F32) => {}
        Some(d) => return Err(format!("_saturate_weight_to_fp16 expects a float32 weight, got {}", d.torch_name())),
        None => return Err("_saturate_weight_to_fp16: the weight's dtype is unknown".into()),
    }
    if rank_of(b, w)? != 2 {
        return Err("_saturate_weight_to_fp16 expects a 2-d weight".into());
    }
    one(b.call(op::CLAMP, &[w.into(), f(-65504.0), f(65504.0)]))
}

/// `unflatten_dense_tensors(flat, tensors)`: consecutive pieces of the vector `flat` in the
/// shapes of `tensors`, each a copy; an empty tensor's piece is a new empty tensor of its shape.
fn unflatten_dense_tensors(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let flat = input(b, op, "flat")?;
    let ts = tensor_list(b, op, "tensors")?;
    let mut out = Vec::new();
    let mut offset = 0;
    for t in ts {
        let s = static_shape(b, t, "unflatten_dense_tensors")?;
        let n: i64 = s.iter().product();
        if n == 0 {
            out.push(b.call(op::NEW_ZEROS, &[flat.into(), ints(&s)])?);
            continue;
        }
        let piece = b.call(op::SLICE_TENSOR, &[flat.into(), int(0), int(offset), int(offset + n)])?;
        let shaped = b.call(op::RESHAPE, &[piece.into(), ints(&s)])?;
        out.push(b.call(op::CLONE, &[shaped.into()])?);
        offset += n;
    }
    one(b.list(out))
}

/// The participant of type promotion that argument `name` is: a tensor of known dtype and rank,
/// or a number of known kind.
fn promote_arg(b: &OpBuilder, op: OpId, name: &str) -> Result<PromoteArg, String> {
    if let Some(v) = b.with_args(op, |a| a.value(name))?.filter(|&v| b.tensor(v).is_some()) {
        let dtype = b.dtype(v).ok_or_else(|| format!("result_type: the dtype of '{name}' is unknown"))?;
        let rank = b.rank(v).ok_or_else(|| format!("result_type: the rank of '{name}' is unknown"))?;
        return Ok(PromoteArg::Tensor { dtype, zero_dim: rank == 0 });
    }
    let s = b.with_args(op, |a| a.scalar(name))?.ok_or_else(|| format!("result_type: the kind of the number '{name}' is unknown"))?;
    Ok(PromoteArg::Scalar(match s {
        ScalarVal::Bool(_) => DTypeCategory::Bool,
        ScalarVal::Int(_) => DTypeCategory::Integral,
        ScalarVal::Float(_) => DTypeCategory::Floating,
    }))
}

/// `result_type` of two operands, folded to its dtype.
fn result_type_of(b: &mut OpBuilder, op: OpId, names: &[&str]) -> DecompResult {
    let args = names.iter().map(|n| promote_arg(b, op, n)).collect::<Result<Vec<_>, _>>()?;
    let d = result_type(args).ok_or("result_type: no dtype")?;
    one(b.constant(kinds::dtype(d)))
}

/// PyTorch's `can_cast`: no cast from floating point to an integral type, nor from a non-bool
/// type to bool.
fn can_cast(from: DType, to: DType) -> bool {
    if from.is_floating() && !to.is_floating() {
        return false;
    }
    !(from != DType::Bool && to == DType::Bool)
}
