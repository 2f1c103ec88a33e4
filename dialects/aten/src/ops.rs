//! Op declarations built from the schema data file.

use ir::schema::{FunctionSchema, parse_schema, registry_lines};
use crate::op;
use ir::{OpDef, OpRef, Syntax, Traits};
use std::sync::OnceLock;

/// The schema data file: one ATen schema per line.
pub const SCHEMAS: &str = include_str!("schemas.txt");

/// Names of the elementwise ops (one per line; `#` comments).
const ELEMENTWISE: &str = include_str!("../tools/elementwise_core_ops.txt");

/// Elementwise ops outside the core list that behave the same way.
const EXTRA_ELEMENTWISE: &[&str] = &[
    "gelu",
    "silu",
    "hardswish",
    "hardsigmoid",
    "relu6",
    "mish",
    "leaky_relu",
    "elu",
    "hardtanh",
    "softplus",
    "rsub",
    "masked_fill",
    "where",
    "lerp",
    "clamp_min",
    "clamp_max",
    "_to_copy",
    "erfinv",
    "nan_to_num",
    "addcmul",
];

/// Commutative binary ops.
const COMMUTATIVE: &[OpRef] = &[
    op::ADD_TENSOR,
    op::MUL_TENSOR,
    op::MAXIMUM,
    op::MINIMUM,
    op::EQ_TENSOR,
    op::NE_TENSOR,
    op::LOGICAL_AND,
    op::LOGICAL_OR,
    op::LOGICAL_XOR,
    op::BITWISE_AND_TENSOR,
    op::BITWISE_OR_TENSOR,
    op::BITWISE_XOR_TENSOR,
    op::FMAX,
    op::FMIN,
    op::HYPOT,
];

/// Ops whose results depend on a random generator: never pure.
const RANDOM: &[&str] = &[
    "rand",
    "randn",
    "randint",
    "randperm",
    "bernoulli",
    "native_dropout",
    "dropout",
    "normal",
    "uniform",
    "multinomial",
    "rand_like",
    "randn_like",
    "randint_like",
    "exponential",
    "geometric",
    "cauchy",
    "log_normal",
    "random",
];

/// The ops of PyTorch's default export decomposition table (`tools/export_decompositions.txt`).
pub fn export_decompositions() -> impl Iterator<Item = &'static str> {
    include_str!("../tools/export_decompositions.txt").lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#'))
}

/// The schemas the registry tags core (the data file's `core ` lines).
pub fn core_schemas() -> impl Iterator<Item = &'static FunctionSchema> {
    static CELL: OnceLock<Vec<FunctionSchema>> = OnceLock::new();
    CELL.get_or_init(|| registry_lines(SCHEMAS).filter(|l| l.core).filter_map(|l| parse_schema(l.schema).ok()).collect()).iter()
}

/// The parsed schemas of the data file (parsed once).
pub fn schemas() -> &'static [FunctionSchema] {
    static CELL: OnceLock<Vec<FunctionSchema>> = OnceLock::new();
    CELL.get_or_init(|| {
        // Every line is checked by the data file's own test; a line that fails to parse is skipped here.
        registry_lines(SCHEMAS)
            .filter_map(|l| parse_schema(l.schema).ok())
            .collect()
    })
}

fn is_elementwise(name: &str) -> bool {
    static SET: OnceLock<std::collections::HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| {
        ELEMENTWISE
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .chain(EXTRA_ELEMENTWISE.iter().copied())
            .collect()
    })
    .contains(name)
}

/// The op definition for one schema.
pub fn definition(s: &FunctionSchema) -> OpDef {
    let name = s.op_name();
    let mut traits = Traits::NONE;
    if !s.is_mutable() && !RANDOM.contains(&s.name.as_str()) && !s.name.starts_with('_')
        || is_pure_underscore(s)
    {
        traits = traits | Traits::PURE;
    }
    if is_elementwise(&crate::mutation::base_name(&s.name)) && s.returns.len() == 1 {
        traits = traits | Traits::ELEMENTWISE;
    }
    if COMMUTATIVE.iter().any(|o| o.is(&name)) {
        traits = traits | Traits::COMMUTATIVE;
    }
    let summary = format!("ATen `{}`.", s.qualified_name());
    OpDef::new(name)
        .summary(summary)
        .traits(traits)
        .syntax(Syntax::Default)
        .schema(s.clone())
        .verifier(crate::verify::verify_aten)
}

/// Underscore-prefixed ops that are still free of side effects.
fn is_pure_underscore(s: &FunctionSchema) -> bool {
    !s.is_mutable()
        && matches!(
            s.name.as_str(),
            "_softmax"
                | "_log_softmax"
                | "_to_copy"
                | "_unsafe_view"
                | "_native_batch_norm_legit_no_training"
                | "_adaptive_avg_pool2d"
                | "_adaptive_avg_pool3d"
                | "_cdist_forward"
                | "_pdist_forward"
                | "_embedding_bag"
                | "_local_scalar_dense"
                | "_log_softmax_backward_data"
                | "_softmax_backward_data"
                | "_safe_softmax"
                | "_upsample_nearest_exact2d"
                | "_scaled_dot_product_flash_attention_for_cpu"
                | "_native_batch_norm_legit"
        )
}

/// Definitions of every op in the data file.
pub fn definitions() -> Vec<OpDef> {
    schemas().iter().map(definition).collect()
}

/// [`definitions`], built once per process and shared by every context that registers them.
pub fn shared_definitions() -> &'static [std::sync::Arc<OpDef>] {
    static CELL: OnceLock<Vec<std::sync::Arc<OpDef>>> = OnceLock::new();
    CELL.get_or_init(|| schemas().iter().map(|s| std::sync::Arc::new(definition(s))).collect())
}
