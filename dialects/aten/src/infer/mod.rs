//! Shape and dtype inference of aten ops: broadcasting, PyTorch's type promotion, symbolic dims.
//!
//! [`infer_op`] computes the result types of one op from its operand types and constant
//! arguments, reading arguments through the schema binding ([`crate::bind_args`]), so it works
//! for any op declared from an ATen schema (the `edge` dialect reuses it with its own names).
//! Results it cannot decide come back as less specific types (`tensor<*x!prim.any>`), never as
//! guesses; conflicts between inputs (an impossible broadcast, a view whose sizes do not divide
//! the element count) are errors.
//!
//! Symbolic dimensions are [`Dim::Sym`] names (`s0`) or product expressions (`2*s0`,
//! `s0*s1`); [`Ranges`] carries the module's `prim.range_constraints` and decides broadcasting
//! between a symbol and another size when the symbol is known not to be 1.

mod args;
mod dims;
mod promote;
mod refine;
mod families;
mod rules;
mod shapes;
mod split;

pub use args::*;
pub use dims::*;
pub use promote::*;
pub use refine::*;
use dialect_prim::kinds::{Kind as PK, TypeExt as _};
use families::head_of;
use rules::*;
pub use shapes::*;
pub use split::*;

use crate::signature::{ArgSource, bind_args};
use ir::schema::FunctionSchema;
use ir::{
    Attribute, Context, DType, DTypeCategory, Dim, Module, OpId, TensorType, Type, ValueId,
};
use std::collections::HashMap;

/// The module attribute holding range constraints: `{s0 = [lo, hi]}` (`hi` may be absent).
pub const RANGE_CONSTRAINTS: &str = "prim.range_constraints";

/// The default floating dtype (`torch.get_default_dtype()`).
pub const DEFAULT_FLOAT: DType = DType::F32;

/// The shape and dtype inference interface of an op, attached with [`Context::attach`]. The
/// aten dialect attaches it to the families it declares ([`crate::family`]); a user's op
/// attaches it to be inferred by the same passes. Ops without it are inferred by the rules of
/// their ATen schema name, when they have a schema.
#[derive(Clone, Copy)]
pub enum ShapeInference {
    /// A unary op computed in floating point: the result has the shape of the operand (`self`,
    /// or the first operand of an op without a schema) and its dtype when floating, the
    /// default float dtype otherwise.
    FloatUnary,
    /// Computed by a function; `Ok(None)` when it cannot decide.
    Custom(fn(&Context, &Module, OpId, &Ranges) -> Result<Option<Vec<Type>>, String>),
}

impl ShapeInference {
    fn infer(
        self,
        ctx: &Context,
        m: &Module,
        op: OpId,
        r: &Ranges,
    ) -> Result<Option<Vec<Type>>, String> {
        match self {
            ShapeInference::FloatUnary => {
                let s = match ctx.op_def(m.op_name(op)).and_then(|d| d.schema.clone()) {
                    Some(schema) => self_or(&Args::bind(ctx, m, op, &schema)?),
                    None => m
                        .operands(op)
                        .first()
                        .and_then(|&v| m.value_type(v).as_tensor().cloned()),
                };
                Ok(s.map(|s| vec![tensor(s.dtype.map(float_result), s.shape)]))
            }
            ShapeInference::Custom(f) => f(ctx, m, op, r),
        }
    }
}

/// The inferred result types of `op`, or `None` when no rule covers it: its
/// [`ShapeInference`] when it has one, else the rules of its ATen schema (aten and edge ops).
pub fn infer_op(ctx: &Context, m: &Module, op: OpId) -> Result<Option<Vec<Type>>, String> {
    infer_op_with(ctx, m, op, &Ranges::of_module(m))
}

/// [`infer_op`] with the range constraints already read.
pub fn infer_op_with(
    ctx: &Context,
    m: &Module,
    op: OpId,
    r: &Ranges,
) -> Result<Option<Vec<Type>>, String> {
    if let Some(i) = ctx.interface_of::<ShapeInference>(m, op)
        && let Some(types) = i.infer(ctx, m, op, r)?
    {
        return Ok(Some(types));
    }
    let Some(schema) = ctx.op_def(m.op_name(op)).and_then(|d| d.schema.clone()) else {
        return Ok(None);
    };
    // An Edge op is inferred as the ATen op it mirrors; an op of another dialect with a
    // schema but no `ShapeInference` of its own has no rule here.
    let name = ctx.mirrored(m.op_name(op));
    let (Some(this), Some(head)) = (crate::op::by_name(name), head_of(name)) else {
        return Ok(None);
    };
    let a = Args::bind(ctx, m, op, &schema)?;
    // List concatenation keeps the element type both lists share.
    if this == crate::op::ADD_T {
        let (Some(x), Some(y)) = (a.value("a"), a.value("b")) else { return Ok(None) };
        let (tx, ty) = (m.value_type(x), m.value_type(y));
        return Ok((tx == ty && matches!(tx.pk(), PK::List(_))).then(|| vec![tx.clone()]));
    }
    infer_key(this, head, &a, r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(d: &[i64]) -> Vec<Dim> {
        d.iter().map(|&x| Dim::Static(x)).collect()
    }

    #[test]
    fn broadcasting() {
        let r = Ranges::default();
        assert_eq!(
            broadcast_shapes(&st(&[2, 1, 4]), &st(&[3, 1]), &r).unwrap(),
            st(&[2, 3, 4])
        );
        assert!(
            broadcast_shapes(&st(&[2, 3]), &st(&[4]), &r)
                .unwrap_err()
                .contains("cannot broadcast")
        );
        let s0 = Dim::sym("s0");
        assert_eq!(
            broadcast_shapes(&[s0.clone(), Dim::Static(4)], &st(&[1, 4]), &r).unwrap(),
            vec![s0.clone(), Dim::Static(4)]
        );
        assert_eq!(
            broadcast_shapes(&[s0.clone()], &st(&[5]), &r).unwrap(),
            st(&[5])
        );
        let mut rr = Ranges::default();
        rr.insert("s0", 2, Some(4));
        assert!(broadcast_shapes(&[s0.clone()], &st(&[5]), &rr).is_err());
        assert_eq!(
            broadcast_shapes(&[s0.clone()], &[Dim::sym("s1")], &rr).unwrap(),
            vec![s0]
        );
    }

    #[test]
    fn promotion() {
        use DTypeCategory::*;
        let t = |d, z| PromoteArg::Tensor {
            dtype: d,
            zero_dim: z,
        };
        assert_eq!(
            result_type(&[t(DType::I32, false), PromoteArg::Scalar(Floating)]),
            Some(DType::F32)
        );
        assert_eq!(
            result_type(&[t(DType::I32, false), PromoteArg::Scalar(Integral)]),
            Some(DType::I32)
        );
        assert_eq!(
            result_type(&[t(DType::Bool, false), PromoteArg::Scalar(Integral)]),
            Some(DType::I64)
        );
        assert_eq!(
            result_type(&[t(DType::F16, false), PromoteArg::Scalar(Floating)]),
            Some(DType::F16)
        );
        assert_eq!(
            result_type(&[t(DType::F32, false), t(DType::F64, true)]),
            Some(DType::F32)
        );
        assert_eq!(
            result_type(&[t(DType::I64, false), t(DType::F64, true)]),
            Some(DType::F64)
        );
        assert_eq!(
            result_type(&[t(DType::I32, false), t(DType::I64, false)]),
            Some(DType::I64)
        );
        assert_eq!(
            result_type(&[t(DType::U8, false), t(DType::I8, false)]),
            Some(DType::I16)
        );
    }

    #[test]
    fn symbolic_arithmetic() {
        let s0 = Dim::sym("s0");
        assert_eq!(dim_mul(&Dim::Static(2), &s0), Dim::sym("2*s0"));
        assert_eq!(dim_mul(&s0, &Dim::Static(2)), Dim::sym("2*s0"));
        assert_eq!(
            dim_mul(&Dim::sym("2*s0"), &Dim::sym("s1")),
            Dim::sym("2*s0*s1")
        );
        assert_eq!(
            dim_div_exact(&Dim::sym("4*s0"), &Dim::Static(4)),
            Some(s0.clone())
        );
        assert_eq!(
            dim_div_exact(&Dim::sym("4*s0*s1"), &Dim::sym("s1")),
            Some(Dim::sym("4*s0"))
        );
        assert_eq!(dim_div_exact(&Dim::sym("3*s0"), &Dim::Static(2)), None);
        assert_eq!(
            view_shape(Some(&[s0.clone(), Dim::Static(4)]), &[Dim::Static(-1)]).unwrap(),
            vec![Dim::sym("4*s0")]
        );
        assert_eq!(
            view_shape(
                Some(&[Dim::Static(2), s0.clone(), Dim::Static(4)]),
                &[Dim::Static(-1), Dim::Static(4)]
            )
            .unwrap(),
            vec![Dim::sym("2*s0"), Dim::Static(4)]
        );
        assert!(view_shape(Some(&st(&[2, 3])), &st(&[4, -1])).is_err());
    }

    #[test]
    fn refinement() {
        let old = Type::tensor_of(TensorType {
            dtype: None,
            shape: Some(vec![Dim::Unknown, Dim::Static(3)]),
        });
        let new = Type::tensor(DType::F32, &[2, 3]);
        assert_eq!(refine(&old, &new).unwrap(), new);
        assert!(
            refine(
                &Type::tensor(DType::F32, &[2]),
                &Type::tensor(DType::F32, &[3])
            )
            .is_err()
        );
        assert!(
            refine(
                &Type::tensor(DType::F32, &[2]),
                &Type::tensor(DType::I64, &[2])
            )
            .is_err()
        );
    }
}
