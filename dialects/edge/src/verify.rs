//! The Edge verifier: explicit dtypes and no implicit type promotion.

use dialect_aten::infer::Args;
use dialect_aten::op;
use ir::OpRef;
use ir::{Context, DType, DTypeCategory, Module, OpId, Type};

/// How an op's dtypes must relate in the Edge dialect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PromotionRule {
    /// Tensor operands (but bool masks and conditions) and the result share one dtype; scalars
    /// are of no higher category.
    SameAsResult,
    /// Tensor operands share one dtype, scalars are of no higher category; the result is bool.
    Compare,
    /// A floating unary op: the operand has the result's dtype, which is floating.
    FloatUnary,
    /// No constraint beyond known dtypes (casts, reductions with their own dtype rules, ...).
    Free,
}

/// Ops whose tensor operands and result share one dtype (every overload of each).
const SAME: &[OpRef] = &[
    op::ADD_TENSOR, op::SUB_TENSOR, op::MUL_TENSOR, op::DIV_TENSOR, op::REMAINDER_TENSOR, op::FMOD_TENSOR,
    op::POW_TENSOR_TENSOR, op::MAXIMUM, op::MINIMUM, op::ATAN2, op::BITWISE_AND_TENSOR, op::BITWISE_OR_TENSOR,
    op::BITWISE_XOR_TENSOR, op::CLAMP, op::WHERE_SELF, op::HARDTANH, op::LEAKY_RELU, op::NEG, op::ABS, op::RELU,
    op::CEIL, op::FLOOR, op::ROUND, op::TRUNC, op::SIGN, op::BITWISE_NOT, op::MASKED_SCATTER, op::FILL_SCALAR,
    op::SCATTER_SRC, op::SCATTER_ADD, op::SCATTER_REDUCE_TWO, op::INDEX_PUT, op::SLICE_SCATTER, op::SELECT_SCATTER,
    op::ELU, op::GELU,
];

/// Comparisons (every overload of each).
const COMPARE: &[OpRef] = &[op::EQ_TENSOR, op::NE_TENSOR, op::LT_TENSOR, op::LE_TENSOR, op::GT_TENSOR, op::GE_TENSOR];

/// Floating unary ops (every overload of each).
const FLOAT_UNARY: &[OpRef] = &[
    op::EXP, op::EXPM1, op::LOG, op::LOG1P, op::LOG2, op::LOG10, op::SIN, op::COS, op::TAN, op::TANH, op::SIGMOID,
    op::SQRT, op::RSQRT, op::ERF, op::ASIN, op::ACOS, op::ATAN, op::SINH, op::COSH, op::ASINH, op::ACOSH, op::ATANH,
    op::RECIPROCAL,
];

/// The promotion rule of each aten op in a family above (every overload of a listed op),
/// found once per process.
pub(crate) fn rules() -> &'static std::collections::HashMap<OpRef, PromotionRule> {
    static CELL: std::sync::OnceLock<std::collections::HashMap<OpRef, PromotionRule>> = std::sync::OnceLock::new();
    CELL.get_or_init(|| {
        let mut out = std::collections::HashMap::new();
        for (family, rule) in [
            (SAME, PromotionRule::SameAsResult),
            (FLOAT_UNARY, PromotionRule::FloatUnary),
            (COMPARE, PromotionRule::Compare),
        ] {
            for o in dialect_aten::family::members(family) {
                out.insert(o, rule);
            }
        }
        out
    })
}

/// The promotion rule of an edge (or aten) op.
pub fn promotion_rule(ctx: &Context, op_name: &str) -> PromotionRule {
    ctx.interface::<PromotionRule>(op_name).copied().unwrap_or(PromotionRule::Free)
}

fn dtype_of(t: &Type) -> Option<Option<DType>> {
    t.as_tensor().map(|t| t.dtype)
}

/// Arguments that are bool masks or conditions, exempt from the shared dtype.
fn is_mask(name: &str) -> bool {
    matches!(name, "condition" | "mask" | "index" | "indices")
}

/// Checks one edge op; the message names the offending operand.
pub fn verify_edge_op(ctx: &Context, m: &Module, op: OpId) -> Result<(), String> {
    for (i, &v) in m.operands(op).iter().enumerate() {
        if dtype_of(m.value_type(v)) == Some(None) {
            return Err(format!("operand #{i} has no explicit dtype ({}); run shape-propagation first", m.value_type(v)));
        }
    }
    for (i, &v) in m.results(op).iter().enumerate() {
        if dtype_of(m.value_type(v)) == Some(None) {
            return Err(format!("result #{i} has no explicit dtype ({})", m.value_type(v)));
        }
    }
    let rule = promotion_rule(ctx, m.op_name(op));
    if rule == PromotionRule::Free {
        return Ok(());
    }
    let Some(schema) = ctx.op_def(m.op_name(op)).and_then(|d| d.schema.clone()) else { return Ok(()) };
    let args = Args::bind(ctx, m, op, &schema)?;
    let result = m.results(op).first().and_then(|&r| m.value_type(r).as_tensor()).and_then(|t| t.dtype);
    let mut tensor_dtype: Option<(String, DType)> = None;
    let mut scalars: Vec<(String, DTypeCategory)> = Vec::new();
    for a in &schema.args {
        if is_mask(&a.name) {
            continue;
        }
        if let Some(t) = args.tensor(&a.name) {
            let Some(d) = t.dtype else { continue };
            match &tensor_dtype {
                None => tensor_dtype = Some((a.name.clone(), d)),
                Some((n, e)) if *e != d => {
                    return Err(format!(
                        "implicit type promotion: '{n}' is {e} but '{}' is {d}; insert an explicit edge._to_copy",
                        a.name
                    ));
                }
                _ => {}
            }
        } else if matches!(a.ty.unwrap_optional(), ir::schema::SchemaType::Scalar | ir::schema::SchemaType::Number) && a.name != "alpha" {
            // `alpha` scales an operand but takes no part in promotion.
            if let Some(s) = args.scalar(&a.name) {
                scalars.push((a.name.clone(), s.category()));
            }
        }
    }
    let operand_dtype = tensor_dtype.as_ref().map(|(_, d)| *d);
    match rule {
        PromotionRule::SameAsResult | PromotionRule::FloatUnary => {
            if let (Some(d), Some(r)) = (operand_dtype, result) {
                // A complex operand may give its parts' real dtype (`abs`, `angle`).
                if d != r && !(d.is_complex() && r == d.to_real()) {
                    return Err(format!("implicit type promotion: operands are {d} but the result is {r}"));
                }
            }
            if rule == PromotionRule::FloatUnary && result.is_some_and(|r| !r.is_floating()) {
                return Err(format!(
                    "takes a floating tensor, found {}; cast it with edge._to_copy first",
                    result.map(|r| r.to_string()).unwrap_or_default()
                ));
            }
        }
        PromotionRule::Compare => {
            if let Some(r) = result {
                if r != DType::Bool {
                    return Err(format!("comparison must produce i1, found {r}"));
                }
            }
        }
        PromotionRule::Free => {}
    }
    if let Some(d) = operand_dtype.or(result) {
        for (n, c) in scalars {
            if c > d.category() {
                return Err(format!(
                    "implicit type promotion: scalar '{n}' is {c:?} but the tensors are {d}; cast the tensor explicitly"
                ));
            }
        }
    }
    Ok(())
}
