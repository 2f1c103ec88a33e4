//! Which dtypes a kernel accepts, found by calling it on small sample arguments (what the op
//! coverage report lists).
//!
//! For each dtype of [`PROBED`], the kernel is called with every tensor argument a 2×3 tensor of
//! ones in that dtype and the other arguments taken from their schema defaults or, lacking one,
//! from a few small sample values (ints 1, 0, 2; int lists `[2, 3]`, `[1]`, `[0, 1]`; …). A dtype
//! is accepted when one of these calls succeeds. A kernel whose arguments cannot be sampled
//! (a required generator, a string naming a mode) reports no dtype: the report says "not probed"
//! rather than guessing.

use ir::DType;
use ir::schema::{FunctionSchema, SchemaType};

use super::KernelFn;
use crate::interp::convert::attr_for_schema;
use crate::tensor::{Scalar, Tensor};
use crate::value::IValue;

/// The dtypes probed, in report order.
pub const PROBED: [DType; 8] = [DType::F32, DType::F64, DType::F16, DType::BF16, DType::I64, DType::I32, DType::U8, DType::Bool];

/// Sample argument sets tried per dtype.
const VARIANTS: usize = 3;

/// The dtypes of [`PROBED`] for which a sample call of `f` (a kernel of `schema`) succeeds.
pub fn accepted_dtypes(schema: &FunctionSchema, f: KernelFn) -> Vec<DType> {
    PROBED
        .into_iter()
        .filter(|&d| {
            (0..VARIANTS).any(|v| {
                let Some(args) = sample_args(schema, d, v) else { return false };
                // A kernel that panics on a sample is counted as refusing it. The sample values
                // are fresh and dropped afterwards, so nothing observes a half-done call.
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&args).is_ok())).unwrap_or(false)
            })
        })
        .collect()
}

fn sample_args(schema: &FunctionSchema, dtype: DType, variant: usize) -> Option<Vec<IValue>> {
    schema.args.iter().map(|a| sample(&a.ty, a.default.as_ref(), dtype, variant)).collect()
}

fn ones(dtype: DType) -> Option<Tensor> {
    Tensor::full(dtype, &[2, 3], Scalar::Int(1)).ok()
}

fn sample(ty: &SchemaType, default: Option<&ir::schema::DefaultValue>, dtype: DType, variant: usize) -> Option<IValue> {
    use SchemaType as S;
    if let Some(d) = default {
        // Variant 0 keeps every default; the others also vary defaulted ints.
        let keep = variant == 0 || !matches!(ty.unwrap_optional(), S::Int | S::SymInt);
        if keep {
            let attr = dialect_aten::default_attribute(d, ty)?;
            return attr_for_schema(&attr, ty).ok();
        }
    }
    Some(match ty {
        S::Optional(inner) => match inner.as_ref() {
            S::Tensor => IValue::Tensor(ones(dtype)?),
            _ => IValue::None,
        },
        S::Tensor => IValue::Tensor(ones(dtype)?),
        S::Int | S::SymInt => IValue::Int([1, 0, 2][variant % 3]),
        S::Float | S::SymFloat => IValue::Float(0.5),
        S::Bool | S::SymBool => IValue::Bool(false),
        S::Scalar | S::Number => IValue::Int(1),
        S::ScalarType => IValue::ScalarType(dtype),
        S::Layout => IValue::Layout(0),
        S::MemoryFormat => IValue::MemoryFormat(0),
        S::Device => IValue::Device("cpu".into()),
        S::List { elem, .. } => match elem.as_ref() {
            S::Tensor => IValue::TensorList(vec![ones(dtype)?, ones(dtype)?]),
            S::Optional(t) if matches!(t.as_ref(), S::Tensor) => IValue::OptionalTensorList(vec![Some(ones(dtype)?)]),
            S::Int | S::SymInt => IValue::IntList([vec![2, 3], vec![1], vec![0, 1]][variant % 3].clone()),
            S::Float | S::SymFloat => IValue::FloatList(vec![1.0, 1.0]),
            S::Bool => IValue::BoolList(vec![false, false]),
            _ => return None,
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use dialect_aten::op;

    fn schema(name: &str) -> FunctionSchema {
        dialect_aten::schemas().iter().find(|s| s.op_name() == name).cloned().expect(name)
    }

    #[test]
    fn elementwise_kernels_take_every_dtype_they_are_written_for() {
        let reg = super::super::registry();
        let add = accepted_dtypes(&schema(op::ADD_TENSOR.name()), reg.get(op::ADD_TENSOR.name()).unwrap());
        assert!(add.contains(&DType::F32) && add.contains(&DType::I64) && add.contains(&DType::BF16), "{add:?}");
        let bmm = accepted_dtypes(&schema(op::BMM.name()), reg.get(op::BMM.name()).unwrap());
        assert!(!bmm.contains(&DType::F32), "bmm takes 3-d tensors; the 2-d samples must be refused: {bmm:?}");
    }
}
