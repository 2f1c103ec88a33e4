//! Elementwise machinery shared by the unary, binary and comparison kernels: PyTorch's type
//! promotion (`result_type`) and broadcasting maps with a contiguous fast path.

use std::cell::Cell;

use half::{bf16, f16};
use ir::DType;

use crate::tensor::{Element, KernelError, Result, Scalar, Tensor, broadcast_all, for_each_offsets, for_each_row};

/// An operand of an elementwise op: a tensor or a Python scalar.
#[derive(Clone, Copy, Debug)]
pub enum Operand<'a> {
    Tensor(&'a Tensor),
    Scalar(Scalar),
}

/// PyTorch's `torch.result_type` over tensors and scalars: dimensioned tensors take priority
/// over 0-d tensors, which take priority over Python scalars; a lower-priority operand only
/// changes the result if it is of a higher category (bool < integral < floating). A float
/// scalar against integral tensors gives the default dtype `float32`.
pub fn result_type(operands: &[Operand]) -> DType {
    use dialect_aten::infer::{DEFAULT_FLOAT, PromoteArg};
    dialect_aten::infer::result_type(operands.iter().map(|op| match op {
        Operand::Tensor(t) => PromoteArg::Tensor { dtype: t.dtype(), zero_dim: t.dim() == 0 },
        Operand::Scalar(s) => PromoteArg::Scalar(s.wrapped_dtype().category()),
    }))
    .unwrap_or(DEFAULT_FLOAT)
}

/// Float dtype for ops that promote integers to float (`exp`, `div`, …).
pub fn float_result(d: DType) -> DType {
    if d.is_floating() { d } else { DType::F32 }
}

/// Turns an operand into a tensor of `dtype` (scalars become 0-d tensors).
pub fn operand_tensor(op: &str, o: Operand, dtype: DType) -> Result<Tensor> {
    match o {
        Operand::Tensor(t) => t.cast_to(dtype),
        Operand::Scalar(s) => Tensor::scalar_tensor(s, dtype).map_err(|e| e.in_op(op.to_string())),
    }
}

/// The `n` elements of a contiguous view starting at `offset` (empty views may point anywhere).
fn span<T>(src: &[T], offset: usize, n: usize) -> Result<&[T]> {
    if n == 0 {
        return Ok(&[]);
    }
    src.get(offset..offset + n).ok_or_else(|| KernelError::new("elementwise", "view reaches past its storage"))
}

/// Applies `f` to every element, producing a contiguous tensor of `O`.
pub fn map1<I: Element, O: Element>(t: &Tensor, f: impl Fn(I) -> O) -> Result<Tensor> {
    let src = t.storage_slice::<I>()?;
    if t.is_contiguous() {
        let src = span(src, t.offset(), t.numel())?;
        return Tensor::build::<O>(t.sizes(), |out| {
            for (o, &x) in out.iter_mut().zip(src) {
                *o = f(x);
            }
            Ok(())
        });
    }
    Tensor::build::<O>(t.sizes(), |out| {
        let mut i = 0;
        for_each_offsets(t.sizes(), [t.strides()], [t.offset()], |[a]| {
            out[i] = f(src[a]);
            i += 1;
        });
        Ok(())
    })
}

/// Applies `f` to pairs of broadcast elements, producing a contiguous tensor of `O`.
pub fn map2<A: Element, B: Element, O: Element>(
    op: &str,
    a: &Tensor,
    b: &Tensor,
    f: impl Fn(A, B) -> O,
) -> Result<Tensor> {
    let shape = broadcast_all(&[a.sizes(), b.sizes()]).map_err(|e| e.in_op(op.to_string()))?;
    let sa = a.storage_slice::<A>()?;
    let sb = b.storage_slice::<B>()?;
    let n: usize = shape.iter().product();
    let a_full = a.sizes() == shape.as_slice() && a.is_contiguous();
    let b_full = b.sizes() == shape.as_slice() && b.is_contiguous();
    Tensor::build::<O>(&shape, |out| {
        if a_full && b_full {
            let xa = span(sa, a.offset(), n)?;
            let xb = span(sb, b.offset(), n)?;
            for ((o, &x), &y) in out.iter_mut().zip(xa).zip(xb) {
                *o = f(x, y);
            }
        } else if a_full && b.numel() == 1 {
            let y = sb[b.offset()];
            for (o, &x) in out.iter_mut().zip(span(sa, a.offset(), n)?) {
                *o = f(x, y);
            }
        } else if b_full && a.numel() == 1 {
            let x = sa[a.offset()];
            for (o, &y) in out.iter_mut().zip(span(sb, b.offset(), n)?) {
                *o = f(x, y);
            }
        } else {
            let ea = a.expand_to(op, &shape)?;
            let eb = b.expand_to(op, &shape)?;
            let mut i = 0;
            // Row by row: a broadcast operand (stride 0) or a contiguous one (stride 1) along
            // the row gets a loop over a slice or a scalar (an SE block's per-channel scale).
            for_each_row(&shape, [ea.strides(), eb.strides()], [ea.offset(), eb.offset()], |[x, y], len, step| {
                let o = &mut out[i..i + len];
                i += len;
                match step {
                    [1, 1] => {
                        for ((o, &p), &q) in o.iter_mut().zip(&sa[x..x + len]).zip(&sb[y..y + len]) {
                            *o = f(p, q);
                        }
                    }
                    [1, 0] => {
                        let q = sb[y];
                        for (o, &p) in o.iter_mut().zip(&sa[x..x + len]) {
                            *o = f(p, q);
                        }
                    }
                    [0, 1] => {
                        let p = sa[x];
                        for (o, &q) in o.iter_mut().zip(&sb[y..y + len]) {
                            *o = f(p, q);
                        }
                    }
                    [sx, sy] => {
                        for (k, o) in o.iter_mut().enumerate() {
                            *o = f(sa[x + k * sx], sb[y + k * sy]);
                        }
                    }
                }
            });
        }
        Ok(())
    })
}

/// Applies `f` to triples of broadcast elements.
pub fn map3<A: Element, B: Element, C: Element, O: Element>(
    op: &str,
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    f: impl Fn(A, B, C) -> O,
) -> Result<Tensor> {
    let shape = broadcast_all(&[a.sizes(), b.sizes(), c.sizes()]).map_err(|e| e.in_op(op.to_string()))?;
    let (sa, sb, sc) = (a.storage_slice::<A>()?, b.storage_slice::<B>()?, c.storage_slice::<C>()?);
    let ea = a.expand_to(op, &shape)?;
    let eb = b.expand_to(op, &shape)?;
    let ec = c.expand_to(op, &shape)?;
    Tensor::build::<O>(&shape, |out| {
        let mut i = 0;
        for_each_offsets(
            &shape,
            [ea.strides(), eb.strides(), ec.strides()],
            [ea.offset(), eb.offset(), ec.offset()],
            |[x, y, z]| {
                out[i] = f(sa[x], sb[y], sc[z]);
                i += 1;
            },
        );
        Ok(())
    })
}

/// A math function with `f32` and `f64` versions (half types compute in `f32` and round).
pub trait FloatFn: Sync {
    fn f32(&self, x: f32) -> f32;
    fn f64(&self, x: f64) -> f64;
    /// `f32` over a contiguous run (`dst[i] = f32(src[i])`); vectorized functions override it
    /// and must compute the same bits as `f32`.
    fn f32_slice(&self, src: &[f32], dst: &mut [f32]) {
        for (o, &x) in dst.iter_mut().zip(src) {
            *o = self.f32(x);
        }
    }
    /// `f32` in place over a contiguous run.
    fn f32_in_place(&self, data: &mut [f32]) {
        for x in data.iter_mut() {
            *x = self.f32(*x);
        }
    }
}

/// Applies a float function to a floating tensor of any float dtype.
pub fn map_float<F: FloatFn>(op: &str, t: &Tensor, f: &F) -> Result<Tensor> {
    match t.dtype() {
        DType::F32 => map_f32_runs(t, f),
        DType::F64 => map1::<f64, f64>(t, |x| f.f64(x)),
        // Widened (exact), computed in `f32`, rounded once: the bits of element by element,
        // with vectorized conversions.
        DType::F16 if t.is_contiguous() => map_half_chunks::<f16, F>(t, f),
        DType::BF16 if t.is_contiguous() => map_half_chunks::<bf16, F>(t, f),
        DType::F16 | DType::BF16 => map_f32_runs(&t.to_dtype(DType::F32)?, f)?.to_dtype(t.dtype()),
        d => Err(KernelError::new(op.to_string(), format!("expected a floating tensor, got {}", d.torch_name()))),
    }
}

/// Elements of a half-precision map widened, computed and rounded at a time, in buffers on
/// the stack.
const HALF_CHUNK: usize = 512;

/// `map_float` on a contiguous `f16`/`bf16` tensor `H`: chunk by chunk, widened into a buffer
/// (exact), computed in `f32` and rounded into the output, so the map costs one pass and one
/// tensor instead of two `f32` tensors and three passes. The same values element by element
/// as widening the whole, computing and rounding once. Split across the intra-op team as
/// the `f32` maps are.
fn map_half_chunks<H: Element, F: FloatFn>(t: &Tensor, f: &F) -> Result<Tensor> {
    let n = t.numel();
    let src = span(t.storage_slice::<H>()?, t.offset(), n)?;
    Tensor::build::<H>(t.sizes(), |out| {
        let run = |src: &[H], out: &mut [H]| {
            let (mut wide, mut done) = ([0f32; HALF_CHUNK], [0f32; HALF_CHUNK]);
            for (s, o) in src.chunks(HALF_CHUNK).zip(out.chunks_mut(HALF_CHUNK)) {
                let (w, d) = (&mut wide[..s.len()], &mut done[..s.len()]);
                // Half ↔ `f32` pairs, which `cast_halves` always converts.
                let widened = crate::tensor::cast_halves(s, w);
                f.f32_slice(w, d);
                let rounded = crate::tensor::cast_halves(&d[..], o);
                debug_assert!(widened && rounded);
            }
        };
        let threads = crate::parallel::threads();
        if threads <= 1 || n < PARALLEL_MIN_ELEMENTS {
            run(src, out);
            return Ok(());
        }
        crate::parallel::for_each_range(out, HALF_CHUNK, threads * 4, |i0, o| run(&src[i0..i0 + o.len()], o));
        Ok(())
    })
}

/// `map_float` on `f32`: the input's contiguous runs (the whole tensor, or rows whose
/// innermost dim has unit stride) go through `f32_slice`; anything else element by element.
fn map_f32_runs<F: FloatFn>(t: &Tensor, f: &F) -> Result<Tensor> {
    Tensor::build::<f32>(t.sizes(), |out| apply_f32_into(t, f, out))
}

/// Contiguous `f32` maps of at least this many elements split across the intra-op team (the
/// JIT's kernels split from the same size).
const PARALLEL_MIN_ELEMENTS: usize = 1 << 14;

/// Writes `f(t)` (an `f32` tensor of any layout) into `out`, row-major, which must hold
/// `t.numel()` elements. Contiguous inputs of many elements are split across threads.
pub(crate) fn apply_f32_into<F: FloatFn>(t: &Tensor, f: &F, out: &mut [f32]) -> Result<()> {
    let src = t.storage_slice::<f32>()?;
    let n = t.numel();
    if out.len() != n {
        return Err(KernelError::new("elementwise", "output size does not match"));
    }
    if t.is_contiguous() {
        let src = span(src, t.offset(), n)?;
        let threads = crate::parallel::threads();
        if threads <= 1 || n < PARALLEL_MIN_ELEMENTS {
            f.f32_slice(src, out);
            return Ok(());
        }
        // Element by element, so the split does not change any result; chunks are whole
        // multiples of 16 elements (64-byte lines).
        crate::parallel::for_each_range(out, 16, threads * 4, |i0, o| f.f32_slice(&src[i0..i0 + o.len()], o));
        return Ok(());
    }
    if t.dim() >= 1 && t.strides()[t.dim() - 1] == 1 && n > 0 {
        let inner = t.sizes()[t.dim() - 1];
        let outer = &t.sizes()[..t.dim() - 1];
        let outer_strides = &t.strides()[..t.dim() - 1];
        let mut row = 0;
        let mut bad = false;
        for_each_offsets(outer, [outer_strides], [t.offset()], |[o]| {
            match src.get(o..o + inner) {
                Some(s) => f.f32_slice(s, &mut out[row..row + inner]),
                None => bad = true,
            }
            row += inner;
        });
        if bad {
            return Err(KernelError::new("elementwise", "view reaches past its storage"));
        }
        return Ok(());
    }
    let mut i = 0;
    let mut bad = false;
    for_each_offsets(t.sizes(), [t.strides()], [t.offset()], |[o]| {
        match src.get(o) {
            Some(&x) => out[i] = f.f32(x),
            None => bad = true,
        }
        i += 1;
    });
    if bad {
        return Err(KernelError::new("elementwise", "view reaches past its storage"));
    }
    Ok(())
}

/// Writes `f(t)` (an `f64` tensor of any layout) into `out`, row-major.
pub(crate) fn apply_f64_into<F: FloatFn>(t: &Tensor, f: &F, out: &mut [f64]) -> Result<()> {
    let src = t.storage_slice::<f64>()?;
    if out.len() != t.numel() {
        return Err(KernelError::new("elementwise", "output size does not match"));
    }
    let mut i = 0;
    let mut bad = false;
    for_each_offsets(t.sizes(), [t.strides()], [t.offset()], |[o]| {
        match src.get(o) {
            Some(&x) => out[i] = f.f64(x),
            None => bad = true,
        }
        i += 1;
    });
    if bad {
        return Err(KernelError::new("elementwise", "view reaches past its storage"));
    }
    Ok(())
}

/// A binary function with float versions; integer version returns `None` for an error
/// (integer division by zero).
pub trait BinaryFn: Sync {
    fn f32(&self, a: f32, b: f32) -> f32;
    fn f64(&self, a: f64, b: f64) -> f64;
    /// Integer version on values widened to `i64`; `bits` is the width of the element type
    /// (results are truncated back to it, so wrapping arithmetic comes out right).
    fn int(&self, a: i64, b: i64, bits: u32) -> Option<i64>;
    /// Bool version; by default the integer version on 0/1 read back as `!= 0`.
    fn boolean(&self, a: bool, b: bool) -> Option<bool> {
        self.int(a as i64, b as i64, 1).map(|v| v != 0)
    }
}

/// Computes `f` over two tensors of the same dtype `ct`, except that for `f16`/`bf16` either
/// side may be an `f32` 0-d tensor (a scalar kept at `f32` precision, as PyTorch does).
pub fn apply_binary<F: BinaryFn>(op: &str, a: &Tensor, b: &Tensor, ct: DType, f: &F) -> Result<Tensor> {
    let err = Cell::new(false);
    let out = match ct {
        DType::F32 => map2::<f32, f32, f32>(op, a, b, |x, y| f.f32(x, y)),
        DType::F64 => map2::<f64, f64, f64>(op, a, b, |x, y| f.f64(x, y)),
        DType::F16 => half_binary::<f16, F>(op, a, b, f),
        DType::BF16 => half_binary::<bf16, F>(op, a, b, f),
        DType::Bool => map2::<bool, bool, bool>(op, a, b, |x, y| {
            f.boolean(x, y).unwrap_or_else(|| {
                err.set(true);
                false
            })
        }),
        DType::U8 => int_binary::<u8, F>(op, a, b, f, &err),
        DType::I8 => int_binary::<i8, F>(op, a, b, f, &err),
        DType::I16 => int_binary::<i16, F>(op, a, b, f, &err),
        DType::I32 => int_binary::<i32, F>(op, a, b, f, &err),
        DType::I64 => int_binary::<i64, F>(op, a, b, f, &err),
        DType::C64 | DType::C128 => Err(crate::kernels::complex::refuse(op, ct)),
    }?;
    if err.get() {
        return Err(KernelError::new(op.to_string(), "ZeroDivisionError: integer division by zero"));
    }
    Ok(out)
}

fn int_binary<T: Element, F: BinaryFn>(op: &str, a: &Tensor, b: &Tensor, f: &F, err: &Cell<bool>) -> Result<Tensor> {
    let bits = (T::DTYPE.size_bytes() * 8) as u32;
    map2::<T, T, T>(op, a, b, |x, y| match f.int(x.to_i64(), y.to_i64(), bits) {
        Some(v) => T::from_i64(v),
        None => {
            err.set(true);
            T::default()
        }
    })
}

/// A binary op on half-precision operands (or a half tensor and an `f32` scalar): both
/// widened to `f32` (exact), the op in `f32`, each result rounded once to `H` — the bits of
/// converting element by element. Two `H` tensors go row by row of the broadcast result (a
/// per-channel scale is a scalar along its rows), [`HALF_CHUNK`] elements at a time widened
/// into buffers on the stack, computed and rounded into the result: one pass and one tensor,
/// where widening both whole cost two `f32` tensors, zero-filled, and three passes.
fn half_binary<H: Element, F: BinaryFn>(op: &str, a: &Tensor, b: &Tensor, f: &F) -> Result<Tensor> {
    if a.dtype() != H::DTYPE || b.dtype() != H::DTYPE {
        let (a, b) = (a.cast_to(DType::F32)?, b.cast_to(DType::F32)?);
        return map2::<f32, f32, f32>(op, &a, &b, |x, y| f.f32(x, y))?.to_dtype(H::DTYPE);
    }
    let shape = broadcast_all(&[a.sizes(), b.sizes()]).map_err(|e| e.in_op(op.to_string()))?;
    let (ea, eb) = (a.expand_to(op, &shape)?, b.expand_to(op, &shape)?);
    let (sa, sb) = (a.storage_slice::<H>()?, b.storage_slice::<H>()?);
    Tensor::build::<H>(&shape, |out| {
        let (mut wa, mut wb) = ([0f32; HALF_CHUNK], [0f32; HALF_CHUNK]);
        let (mut i, mut inside) = (0, true);
        for_each_row(&shape, [ea.strides(), eb.strides()], [ea.offset(), eb.offset()], |[x, y], len, [sx, sy]| {
            let row = &mut out[i..i + len];
            i += len;
            for (c, o) in row.chunks_mut(HALF_CHUNK).enumerate() {
                let (k, n) = (c * HALF_CHUNK, o.len());
                inside &= widen_run(sa, x + k * sx, sx, &mut wa[..n]) && widen_run(sb, y + k * sy, sy, &mut wb[..n]);
                for (p, &q) in wa[..n].iter_mut().zip(&wb[..n]) {
                    *p = f.f32(*p, q);
                }
                // `f32` → half, which `cast_halves` always converts.
                let rounded = crate::tensor::cast_halves(&wa[..n], o);
                debug_assert!(rounded);
            }
        });
        if !inside {
            return Err(KernelError::new(op.to_string(), "view reaches past its storage"));
        }
        Ok(())
    })
}

/// Widens `dst.len()` elements of `src` from `start`, `step` apart (0: one element broadcast),
/// into `dst`; `false` when one lies past `src`.
fn widen_run<H: Element>(src: &[H], start: usize, step: usize, dst: &mut [f32]) -> bool {
    match step {
        0 => src.get(start).map(|v| dst.fill(v.to_f32())).is_some(),
        1 => src.get(start..start + dst.len()).is_some_and(|s| crate::tensor::cast_halves(s, dst)),
        _ => dst.iter_mut().enumerate().all(|(k, d)| src.get(start + k * step).map(|v| *d = v.to_f32()).is_some()),
    }
}

/// Makes both operands tensors for computing in `ct` (scalars next to a half tensor stay f32).
pub fn binary_operands(op: &str, a: Operand, b: Operand, ct: DType) -> Result<(Tensor, Tensor)> {
    let scalar_dtype = if matches!(ct, DType::F16 | DType::BF16) { DType::F32 } else { ct };
    let conv = |o: Operand| match o {
        Operand::Scalar(_) => operand_tensor(op, o, scalar_dtype),
        Operand::Tensor(_) => operand_tensor(op, o, ct),
    };
    Ok((conv(a)?, conv(b)?))
}

/// A comparison with float and integer versions.
pub trait CompareFn: Sync {
    fn f64(&self, a: f64, b: f64) -> bool;
    fn f32(&self, a: f32, b: f32) -> bool;
    fn int(&self, a: i64, b: i64) -> bool;
}

/// Compares two tensors of dtype `ct` (half types compare in `f32`), giving a bool tensor.
pub fn apply_compare<F: CompareFn>(op: &str, a: &Tensor, b: &Tensor, ct: DType, f: &F) -> Result<Tensor> {
    match ct {
        DType::F64 => map2::<f64, f64, bool>(op, a, b, |x, y| f.f64(x, y)),
        DType::F32 => map2::<f32, f32, bool>(op, a, b, |x, y| f.f32(x, y)),
        DType::F16 | DType::BF16 => {
            let a = a.cast_to(DType::F32)?;
            let b = b.cast_to(DType::F32)?;
            map2::<f32, f32, bool>(op, &a, &b, |x, y| f.f32(x, y))
        }
        d => crate::dispatch_dtype!(d, T => map2::<T, T, bool>(op, a, b, |x, y| f.int(x.to_i64(), y.to_i64()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A map whose `f32` rounding differs from its `f64` one, so any path that computed in
    /// another precision would show.
    struct Curve;
    impl FloatFn for Curve {
        fn f32(&self, x: f32) -> f32 {
            x * 0.7 + (x * x) / 3.0
        }
        fn f64(&self, x: f64) -> f64 {
            x * 0.7 + (x * x) / 3.0
        }
    }

    #[test]
    fn long_half_casts_split_across_threads_convert_each_element() {
        let n = (1 << 14) * 3 + 5;
        let xs: Vec<f32> = (0..n).map(|i| ((i * 7919) % 100_003) as f32 * 1.37e-3 - 60.0).collect();
        let t = Tensor::from_vec(xs.clone(), &[n]).unwrap();
        for threads in [1, 2] {
            let (h, b) = crate::parallel::with_threads(threads, || (t.to_dtype(DType::F16).unwrap(), t.to_dtype(DType::BF16).unwrap()));
            let (h, b) = (h.as_slice::<f16>().unwrap(), b.as_slice::<bf16>().unwrap());
            for (i, &x) in xs.iter().enumerate() {
                assert_eq!(h[i].to_bits(), f16::from_f32(x).to_bits(), "f16 element {i}, {threads} threads");
                assert_eq!(b[i].to_bits(), bf16::from_f32(x).to_bits(), "bf16 element {i}, {threads} threads");
            }
            let hs = Tensor::from_vec(h.to_vec(), &[n]).unwrap();
            let back = crate::parallel::with_threads(threads, || hs.to_dtype(DType::F32).unwrap());
            for (i, (&w, &v)) in back.as_slice::<f32>().unwrap().iter().zip(h).enumerate() {
                assert_eq!(w.to_bits(), v.to_f32().to_bits(), "widened element {i}, {threads} threads");
            }
        }
    }

    /// Half-precision binary ops give each element the bits of widening both operands,
    /// computing in `f32` and rounding once: same shapes, a per-channel scale broadcast along
    /// rows, a row broadcast down a column, a transposed view, and a half tensor with an `f32`
    /// scalar; rows longer than a chunk.
    #[test]
    fn half_binary_ops_round_each_f32_result_once() {
        struct Curve2;
        impl BinaryFn for Curve2 {
            fn f32(&self, a: f32, b: f32) -> f32 {
                a * 0.7 + b / 3.0
            }
            fn f64(&self, a: f64, b: f64) -> f64 {
                a * 0.7 + b / 3.0
            }
            fn int(&self, _: i64, _: i64, _: u32) -> Option<i64> {
                None
            }
        }
        fn check<H: Element>(from: fn(f32) -> H) {
            let vals = |n: usize, seed: usize| -> Vec<H> { (0..n).map(|i| from(((i * 7919 + seed) % 4001) as f32 * 0.01 - 20.0)).collect() };
            let t = |n: usize, seed: usize, sizes: &[usize]| Tensor::from_vec(vals(n, seed), sizes).unwrap();
            let x = t(3 * 700, 1, &[3, 700]);
            let cases = [
                (x.clone(), t(3 * 700, 2, &[3, 700])),
                (x.clone(), t(3, 3, &[3, 1])),
                (t(3, 4, &[3, 1]), t(700, 5, &[1, 700])),
                (x.transpose(0, 1).unwrap(), t(700 * 3, 6, &[700, 3])),
                (x.clone(), Tensor::from_vec(vec![2.5f32], &[]).unwrap()),
            ];
            for (a, b) in cases {
                let got = apply_binary("test", &a, &b, H::DTYPE, &Curve2).unwrap();
                let want = map2::<f32, f32, f32>("test", &a.cast_to(DType::F32).unwrap(), &b.cast_to(DType::F32).unwrap(), |p, q| Curve2.f32(p, q)).unwrap();
                assert_eq!(got.sizes(), want.sizes());
                for (i, (g, w)) in got.as_slice::<H>().unwrap().iter().zip(want.as_slice::<f32>().unwrap()).enumerate() {
                    assert_eq!(g.to_f32().to_bits(), from(*w).to_f32().to_bits(), "{:?} {:?} * {:?}: element {i}", H::DTYPE, a.sizes(), b.sizes());
                }
            }
            let short = Tensor::from_vec(vals(2, 7), &[2]).unwrap();
            assert!(apply_binary("test", &x, &short, H::DTYPE, &Curve2).is_err(), "shapes that do not broadcast");
        }
        check::<f16>(f16::from_f32);
        check::<bf16>(bf16::from_f32);
    }

    #[test]
    fn half_maps_round_each_f32_result_once() {
        // Past the size that splits across threads, and not a whole number of chunks.
        let n = PARALLEL_MIN_ELEMENTS * 2 + 37;
        let xs: Vec<f32> = (0..n).map(|i| ((i * 7919) % 4001) as f32 * 0.01 - 20.0).collect();
        for threads in [1, 2] {
            let h: Vec<f16> = xs.iter().map(|&x| f16::from_f32(x)).collect();
            let t = Tensor::from_vec(h.clone(), &[n]).unwrap();
            let got = crate::parallel::with_threads(threads, || map_float("test", &t, &Curve)).unwrap();
            for (i, (&x, &g)) in h.iter().zip(got.as_slice::<f16>().unwrap()).enumerate() {
                assert_eq!(g.to_bits(), f16::from_f32(Curve.f32(x.to_f32())).to_bits(), "f16 element {i}, {threads} threads");
            }
            let b: Vec<bf16> = xs.iter().map(|&x| bf16::from_f32(x)).collect();
            let t = Tensor::from_vec(b.clone(), &[n]).unwrap();
            let got = crate::parallel::with_threads(threads, || map_float("test", &t, &Curve)).unwrap();
            for (i, (&x, &g)) in b.iter().zip(got.as_slice::<bf16>().unwrap()).enumerate() {
                assert_eq!(g.to_bits(), bf16::from_f32(Curve.f32(x.to_f32())).to_bits(), "bf16 element {i}, {threads} threads");
            }
        }
    }
}
