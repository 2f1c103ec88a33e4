//! The specialization key of a kernel: dtypes, sizes and strides of its inputs.

use ir::DType;
use runtime::Tensor;

/// Layout of one input tensor as the kernel is specialized to it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorSpec {
    pub dtype: DType,
    pub sizes: Vec<usize>,
    /// Strides in elements; 0 for broadcast (expanded) dimensions.
    pub strides: Vec<usize>,
}

impl TensorSpec {
    /// The spec of `t` (its offset is not part of the spec: it is passed at run time).
    pub fn of(t: &Tensor) -> TensorSpec {
        TensorSpec { dtype: t.dtype(), sizes: t.sizes().to_vec(), strides: t.strides().to_vec() }
    }

    /// A contiguous tensor of `dtype` and `sizes`.
    pub fn contiguous(dtype: DType, sizes: &[usize]) -> TensorSpec {
        TensorSpec { dtype, sizes: sizes.to_vec(), strides: runtime::tensor::contiguous_strides(sizes) }
    }

    pub fn numel(&self) -> usize {
        self.sizes.iter().product()
    }
}

/// What a kernel is specialized to: one [`TensorSpec`] per input, in operand order.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct KernelSpec {
    pub inputs: Vec<TensorSpec>,
}

impl KernelSpec {
    /// The spec of a list of input tensors.
    pub fn of(inputs: &[Tensor]) -> KernelSpec {
        KernelSpec { inputs: inputs.iter().map(TensorSpec::of).collect() }
    }
}
