//! Which dtypes a kernel accepts, found by calling it on small sample arguments (what the op
//! coverage report lists).
//!
//! For each dtype of [`PROBED`], the kernel is called with every tensor argument a tensor of
//! ones in that dtype, of one of the [`SHAPES`] (matrices, a batch of square matrices, an image
//! batch), and the other arguments taken from their schema defaults or, lacking one, from a few
//! small sample values (ints 1, 0, 2; int lists `[2, 3]`, `[1]`, `[0, 1]`; …). A dtype is
//! accepted when one of these calls succeeds. A kernel whose arguments cannot be sampled
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

/// Sample argument sets tried per dtype and tensor shape.
const VARIANTS: usize = 3;

/// The shapes of the sample tensors: elementwise and reduction ops take the first, products of
/// two operands the second, linear algebra (with 2 on the diagonals) and batched products the
/// third, convolutions and pooling the fourth.
const SHAPES: [&[usize]; 4] = [&[2, 3], &[3, 3], &[2, 3, 3], &[1, 2, 4, 4]];

/// The dtypes of [`PROBED`] for which a sample call of `f` (a kernel of `schema`) succeeds.
pub fn accepted_dtypes(schema: &FunctionSchema, f: KernelFn) -> Vec<DType> {
    PROBED
        .into_iter()
        .filter(|&d| {
            (0..VARIANTS * SHAPES.len()).any(|v| {
                let Some(args) = sample_args(schema, d, v % VARIANTS, SHAPES[v / VARIANTS]) else { return false };
                // A kernel that panics on a sample is counted as refusing it. The sample values
                // are fresh and dropped afterwards, so nothing observes a half-done call.
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&args).is_ok())).unwrap_or(false)
            })
        })
        .collect()
}

fn sample_args(schema: &FunctionSchema, dtype: DType, variant: usize, shape: &[usize]) -> Option<Vec<IValue>> {
    schema.args.iter().map(|a| sample(&a.ty, a.default.as_ref(), dtype, variant, shape)).collect()
}

/// Ones of `shape` in `dtype`, with 2 on the diagonal of square matrices (each then symmetric
/// positive-definite, so factorizations and solves accept it).
fn sample_tensor(dtype: DType, shape: &[usize]) -> Option<Tensor> {
    let n = *shape.last()?;
    if shape.len() < 2 || shape[shape.len() - 2] != n {
        return Tensor::full(dtype, shape, Scalar::Int(1)).ok();
    }
    let data: Vec<f64> = (0..shape.iter().product()).map(|i: usize| if i % (n * n) % (n + 1) == 0 { 2.0 } else { 1.0 }).collect();
    Tensor::from_vec(data, shape).and_then(|t| t.to_dtype(dtype)).ok()
}

fn sample(ty: &SchemaType, default: Option<&ir::schema::DefaultValue>, dtype: DType, variant: usize, shape: &[usize]) -> Option<IValue> {
    let ones = |dtype| sample_tensor(dtype, shape);
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
        assert!(bmm.contains(&DType::F32) && bmm.contains(&DType::F64), "bmm takes the 3-d samples: {bmm:?}");
        let mm = accepted_dtypes(&schema(op::MM.name()), reg.get(op::MM.name()).unwrap());
        assert!(mm.contains(&DType::F32), "mm takes the square samples: {mm:?}");
        let conv = accepted_dtypes(&schema(op::CONV2D.name()), reg.get(op::CONV2D.name()).unwrap());
        assert!(conv.contains(&DType::F32), "conv2d takes the image batch: {conv:?}");
        let solve = accepted_dtypes(&schema(op::LINALG_SOLVE.name()), reg.get(op::LINALG_SOLVE.name()).unwrap());
        assert_eq!(solve, [DType::F32, DType::F64], "square batches are solved in f32 and f64 only");
    }
}
