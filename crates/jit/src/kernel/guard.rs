//! The guard a kernel runs before each call: inputs and outputs against the specialization,
//! every address inside its storage.

use super::*;

use runtime::Tensor;

use crate::error::JitError;
use crate::spec::holds;

impl Kernel {
    /// Checks inputs and outputs; returns the base address of each (inputs, then outputs).
    pub(super) fn guard(&self, inputs: &[Tensor], outputs: &[Tensor]) -> Result<Vec<usize>, JitError> {
        if inputs.len() != self.spec.inputs.len() {
            return Err(JitError::Guard(format!("expected {} inputs, got {}", self.spec.inputs.len(), inputs.len())));
        }
        if outputs.len() != self.outputs.len() {
            return Err(JitError::Guard(format!("expected {} outputs, got {}", self.outputs.len(), outputs.len())));
        }
        let mut ptrs = Vec::with_capacity(inputs.len() + outputs.len());
        for (i, (t, s)) in inputs.iter().zip(&self.spec.inputs).enumerate() {
            if !s.matches(t) {
                return Err(JitError::Guard(format!(
                    "input {i}: {} {:?} strides {:?}, specialized to {} {:?} strides {:?}",
                    t.dtype().torch_name(),
                    t.sizes(),
                    t.strides(),
                    s.dtype.torch_name(),
                    s.sizes,
                    s.strides
                )));
            }
            ptrs.push(base_address(t, "input", i)?);
            // The code reads an alias at its distance from the input it is an alias of; the
            // address is that of the input's own first element, whose bounds were just checked.
            if let Some(a) = s.alias
                && !holds(inputs, i, a)
            {
                return Err(JitError::Guard(format!(
                    "input {i}: specialized to view the storage of input {} at {} bytes from it",
                    a.of, a.bytes
                )));
            }
        }
        for (i, (t, (d, s))) in outputs.iter().zip(&self.outputs).enumerate() {
            if t.dtype() != *d || t.sizes() != s.as_slice() || !t.is_contiguous() {
                return Err(JitError::Guard(format!(
                    "output {i}: expected a contiguous {} tensor of shape {s:?}, got {} {:?}",
                    d.torch_name(),
                    t.dtype().torch_name(),
                    t.sizes()
                )));
            }
            for (j, x) in inputs.iter().enumerate() {
                if t.numel() > 0 && x.numel() > 0 && t.may_overlap(x) {
                    return Err(JitError::Guard(format!("output {i} overlaps input {j}")));
                }
            }
            for (j, o) in outputs.iter().enumerate().take(i) {
                if t.numel() > 0 && o.numel() > 0 && t.may_overlap(o) {
                    return Err(JitError::Guard(format!("output {i} overlaps output {j}")));
                }
            }
            ptrs.push(base_address(t, "output", i)?);
        }
        Ok(ptrs)
    }
}

/// The address of a tensor's first element, after checking that every element it spans lies
/// inside its storage.
/// `kind` and `index` name the tensor in errors (formatted only then: this runs on every call).
pub(super) fn base_address(t: &Tensor, kind: &str, index: usize) -> Result<usize, JitError> {
    let es = t.dtype().size_bytes();
    let nbytes = t.storage().nbytes();
    if t.numel() > 0 {
        let mut last = t.offset();
        for (&s, &st) in t.sizes().iter().zip(t.strides()) {
            last = s
                .checked_sub(1)
                .and_then(|k| k.checked_mul(st))
                .and_then(|k| k.checked_add(last))
                .ok_or_else(|| JitError::Guard(format!("{kind} {index}: strides overflow")))?;
        }
        let end = last.checked_add(1).and_then(|k| k.checked_mul(es));
        if end.is_none_or(|e| e > nbytes) {
            return Err(JitError::Guard(format!("{kind} {index}: view exceeds its storage")));
        }
    }
    Ok(t.storage().as_ptr() as usize + t.offset() * es)
}

/// Strides of an input of shape `sizes`/`strides` read over the iteration space `shape`.
pub(super) fn expand_strides(sizes: &[usize], strides: &[usize], shape: &[usize]) -> Option<Vec<usize>> {
    if sizes.len() > shape.len() {
        return None;
    }
    let lead = shape.len() - sizes.len();
    let mut out = vec![0; shape.len()];
    for (d, &n) in shape.iter().enumerate().skip(lead) {
        let (s, st) = (sizes[d - lead], strides[d - lead]);
        if s == n {
            out[d] = if n == 1 { 0 } else { st };
        } else if s == 1 {
            out[d] = 0;
        } else {
            return None;
        }
    }
    Some(out)
}

pub(super) fn broadcast_into(s: &[usize], shape: &[usize]) -> Option<()> {
    let st = vec![0; s.len()];
    expand_strides(s, &st, shape).map(|_| ())
}
