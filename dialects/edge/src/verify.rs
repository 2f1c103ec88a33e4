//! The Edge verifier: explicit dtypes and no implicit type promotion.

use dialect_aten::infer::Args;
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

const SAME: &[&str] = &[
    "add", "sub", "mul", "div", "remainder", "fmod", "pow", "maximum", "minimum", "atan2", "bitwise_and", "bitwise_or",
    "bitwise_xor", "clamp", "where", "hardtanh", "leaky_relu", "neg", "abs", "relu", "ceil", "floor", "round",
    "trunc", "sign", "bitwise_not", "masked_scatter", "fill", "scatter", "scatter_add", "scatter_reduce",
    "index_put", "slice_scatter", "select_scatter", "elu", "gelu",
];

const COMPARE: &[&str] = &["eq", "ne", "lt", "le", "gt", "ge"];

const FLOAT_UNARY: &[&str] = &[
    "exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "tanh", "sigmoid", "sqrt", "rsqrt", "erf",
    "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "reciprocal",
];

/// The promotion rule of an edge (or aten) op name.
pub fn promotion_rule(op_name: &str) -> PromotionRule {
    let rest = op_name.split_once('.').map(|(_, r)| r).unwrap_or(op_name);
    let base = rest.split('.').next().unwrap_or(rest);
    if COMPARE.contains(&base) {
        PromotionRule::Compare
    } else if FLOAT_UNARY.contains(&base) {
        PromotionRule::FloatUnary
    } else if SAME.contains(&base) {
        PromotionRule::SameAsResult
    } else {
        PromotionRule::Free
    }
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
    let rule = promotion_rule(m.op_name(op));
    if rule == PromotionRule::Free {
        return Ok(());
    }
    let Some(schema) = ctx.op_def(m.op_name(op)).and_then(|d| d.schema.clone()) else { return Ok(()) };
    let args = Args::bind(m, op, &schema)?;
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
        } else if matches!(a.ty.unwrap_optional(), ir::schema::SchemaType::Scalar | ir::schema::SchemaType::Number) {
            if let Some(s) = args.scalar(&a.name) {
                scalars.push((a.name.clone(), s.category()));
            }
        }
    }
    let operand_dtype = tensor_dtype.as_ref().map(|(_, d)| *d);
    match rule {
        PromotionRule::SameAsResult | PromotionRule::FloatUnary => {
            if let (Some(d), Some(r)) = (operand_dtype, result) {
                if d != r {
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
