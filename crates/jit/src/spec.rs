//! The specialization key of a kernel: dtypes, sizes and strides of its inputs, and which
//! inputs are views of one storage at constant distances.

use std::sync::Arc;

use ir::DType;
use runtime::Tensor;

/// Layout of one input tensor as the kernel is specialized to it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorSpec {
    pub dtype: DType,
    pub sizes: Vec<usize>,
    /// Strides in elements; 0 for broadcast (expanded) dimensions.
    pub strides: Vec<usize>,
    /// Set when the kernel addresses this input from an earlier input's pointer (see [`Alias`]).
    pub alias: Option<Alias>,
}

/// An input that views the same storage as an earlier input of the same dtype, sizes and
/// strides, at a constant distance: the kernel reads it through that input's pointer plus
/// `bytes`, so the group's views of one buffer (the gate slices of a product, say) cost one
/// pointer and one address computation between them. A kernel specialized to an alias runs
/// only on inputs that have it (its guard checks the storage and the distance); a kernel
/// without one runs on inputs that happen to share storage as well.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Alias {
    /// The first input of that storage with this layout (itself not an alias).
    pub of: usize,
    /// The distance in bytes from the first element of input `of` to this input's.
    pub bytes: i32,
}

impl TensorSpec {
    /// The spec of `t` on its own (its offset is not part of the spec: it is passed at run time).
    pub fn of(t: &Tensor) -> TensorSpec {
        TensorSpec { dtype: t.dtype(), sizes: t.sizes().to_vec(), strides: t.strides().to_vec(), alias: None }
    }

    /// A contiguous tensor of `dtype` and `sizes`.
    pub fn contiguous(dtype: DType, sizes: &[usize]) -> TensorSpec {
        TensorSpec { dtype, sizes: sizes.to_vec(), strides: runtime::tensor::contiguous_strides(sizes), alias: None }
    }

    pub fn numel(&self) -> usize {
        self.sizes.iter().product()
    }

    /// Whether `t` has this spec's dtype, sizes and strides.
    pub fn matches(&self, t: &Tensor) -> bool {
        t.dtype() == self.dtype && t.sizes() == self.sizes.as_slice() && t.strides() == self.strides.as_slice()
    }
}

/// What a kernel is specialized to: one [`TensorSpec`] per input, in operand order.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct KernelSpec {
    pub inputs: Vec<TensorSpec>,
}

impl KernelSpec {
    /// The spec of a list of input tensors, with the aliases among them.
    pub fn of(inputs: &[Tensor]) -> KernelSpec {
        KernelSpec {
            inputs: inputs
                .iter()
                .enumerate()
                .map(|(k, t)| TensorSpec { alias: alias_of(inputs, k), ..TensorSpec::of(t) })
                .collect(),
        }
    }

    /// Whether a kernel of this spec runs on `inputs`: the same dtypes, sizes and strides, and
    /// every alias of the spec holds between them (storage bounds are checked when it runs).
    pub fn admits(&self, inputs: &[Tensor]) -> bool {
        inputs.len() == self.inputs.len()
            && self.inputs.iter().zip(inputs).all(|(s, t)| s.matches(t))
            && self.inputs.iter().enumerate().all(|(k, s)| s.alias.is_none_or(|a| holds(inputs, k, a)))
    }
}

/// The alias of input `k` among `inputs`: the first earlier input of the same storage, dtype,
/// sizes and strides, if the distance between them fits the kernel's address offsets.
fn alias_of(inputs: &[Tensor], k: usize) -> Option<Alias> {
    let t = &inputs[k];
    if t.numel() == 0 {
        return None;
    }
    let of = inputs[..k].iter().position(|u| {
        Arc::ptr_eq(u.storage(), t.storage()) && u.dtype() == t.dtype() && u.sizes() == t.sizes() && u.strides() == t.strides()
    })?;
    let bytes = (t.offset() as i128 - inputs[of].offset() as i128) * t.dtype().size_bytes() as i128;
    Some(Alias { of, bytes: i32::try_from(bytes).ok()? })
}

/// Whether input `k` of `inputs` is the alias `a` (same storage, at `a.bytes` from input `a.of`).
pub(crate) fn holds(inputs: &[Tensor], k: usize, a: Alias) -> bool {
    let (t, Some(u)) = (&inputs[k], inputs.get(a.of)) else { return false };
    let es = t.dtype().size_bytes() as i128;
    Arc::ptr_eq(u.storage(), t.storage()) && (t.offset() as i128 - u.offset() as i128) * es == a.bytes as i128
}
