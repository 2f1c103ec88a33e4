//! PyTorch's type promotion: the result dtype of tensors and Python numbers combined.

use super::*;

/// One participant of type promotion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PromoteArg {
    /// A tensor of known dtype; `zero_dim` for a 0-d tensor (lower priority than dimensioned ones).
    Tensor { dtype: DType, zero_dim: bool },
    /// A Python number of this category (`bool`, `int`, `float`).
    Scalar(DTypeCategory),
}

pub(super) fn combine_categories(higher: Option<DType>, lower: Option<DType>) -> Option<DType> {
    let Some(h) = higher else { return lower };
    let Some(l) = lower else { return Some(h) };
    if h.is_complex() {
        return Some(h);
    }
    if l.is_complex() {
        // A complex 0-d tensor or number lifts a floating tensor to the complex type of its
        // dtype; below floating the complex dtype itself wins.
        return Some(if h.is_floating() { h.to_complex().unwrap_or(l) } else { l });
    }
    if h.is_floating() {
        return Some(h);
    }
    if h == DType::Bool || l.is_floating() {
        return Some(DType::promote(h, l));
    }
    Some(h)
}

/// PyTorch's `result_type`: dimensioned tensors, then 0-d tensors, then Python scalars; a lower
/// group only matters when it is of a higher category (bool < integral < floating).
pub fn result_type<A: std::borrow::Borrow<PromoteArg>>(
    args: impl IntoIterator<Item = A>,
) -> Option<DType> {
    let (mut dim, mut zero, mut wrapped): (Option<DType>, Option<DType>, Option<DType>) =
        (None, None, None);
    let up =
        |slot: &mut Option<DType>, d: DType| *slot = Some(slot.map_or(d, |s| DType::promote(s, d)));
    for a in args {
        match *a.borrow() {
            PromoteArg::Tensor {
                dtype,
                zero_dim: false,
            } => up(&mut dim, dtype),
            PromoteArg::Tensor {
                dtype,
                zero_dim: true,
            } => up(&mut zero, dtype),
            PromoteArg::Scalar(c) => up(
                &mut wrapped,
                match c {
                    DTypeCategory::Bool => DType::Bool,
                    DTypeCategory::Integral => DType::I64,
                    DTypeCategory::Floating => DEFAULT_FLOAT,
                    DTypeCategory::Complex => DType::C64,
                },
            ),
        }
    }
    combine_categories(dim, combine_categories(zero, wrapped))
}

/// The dtype of an op that computes in floating point (`exp`, true division): integral and
/// bool inputs give the default float dtype.
pub fn float_result(d: DType) -> DType {
    if d.is_floating() || d.is_complex() { d } else { DEFAULT_FLOAT }
}
