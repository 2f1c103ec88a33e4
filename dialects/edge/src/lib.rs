//! The edge dialect: EXIR's functional, explicitly typed operator set.
//!
//! Every op is a core-ATen op renamed `edge.<name>.<overload>` (`edge.add.Tensor`, `edge.mm`),
//! declared from the same schema line as its aten counterpart: the schemas under the
//! "Core ATen" header of the aten dialect's data file, minus those that write an argument
//! (`Tensor(a!)`). The edge verifier adds to the schema checks what makes the stage *Edge*:
//!
//! - every tensor operand and result has a known dtype;
//! - no implicit type promotion: the tensor operands of elementwise arithmetic share the
//!   result's dtype, comparisons compare tensors of one dtype, floating unary ops take and give
//!   the same floating dtype, and Python scalars are never of a higher category
//!   (bool < integral < floating) than the tensors they combine with;
//! - no mutation (no schema with a `!` alias annotation is declared).
//!
//! Casts are explicit `edge._to_copy` ops with a `dtype` attribute; `lower-to-edge` inserts them.

mod verify;

pub use verify::{PromotionRule, promotion_rule, verify_edge_op};

use ir::OpRef;
use ir::schema::FunctionSchema;
use std::collections::HashMap;
use std::sync::OnceLock;

/// The dialect's name.
pub const DIALECT: &str = "edge";

/// The core-ATen schemas the Edge operator set is made of (functional ones only).
pub fn core_schemas() -> &'static [FunctionSchema] {
    static CELL: OnceLock<Vec<FunctionSchema>> = OnceLock::new();
    CELL.get_or_init(|| {
        dialect_aten::core_schemas()
            .filter(|s| !s.is_mutable() && s.args.iter().all(|a| a.alias.as_ref().is_none_or(|x| !x.is_written())))
            .cloned()
            .collect()
    })
}

/// Edge op name → the ATen op it mirrors, for every op of the Edge operator set.
fn mirrors() -> &'static HashMap<String, OpRef> {
    static CELL: OnceLock<HashMap<String, OpRef>> = OnceLock::new();
    CELL.get_or_init(|| {
        core_schemas()
            .iter()
            .filter_map(|s| {
                let aten = dialect_aten::op::by_name(&s.op_name())?;
                Some((edge_name_of(s), aten))
            })
            .collect()
    })
}

/// The name an Edge op is declared under: the schema's, in the Edge dialect.
fn edge_name_of(s: &FunctionSchema) -> String {
    if s.overload.is_empty() { format!("{DIALECT}.{}", s.name) } else { format!("{DIALECT}.{}.{}", s.name, s.overload) }
}

/// The Edge op that mirrors the aten op `aten_op`, if it is in the Edge operator set.
pub fn edge_name(aten_op: &str) -> Option<String> {
    static CELL: OnceLock<HashMap<&'static str, String>> = OnceLock::new();
    CELL.get_or_init(|| mirrors().iter().map(|(e, a)| (a.name(), e.clone())).collect()).get(aten_op).cloned()
}

/// The ATen op that the Edge op `edge_op` mirrors (what its kernels and interfaces are).
pub fn aten_op(edge_op: &str) -> Option<OpRef> {
    mirrors().get(edge_op).copied()
}

/// The ATen op `name` is or mirrors: an aten op's handle, or an Edge op's ATen op.
pub fn as_aten(name: &str) -> Option<OpRef> {
    dialect_aten::op::by_name(name).or_else(|| aten_op(name))
}

/// Registers the edge dialect and its ops.
pub fn register(ctx: &mut ir::Context) {
    ctx.register_dialect(DIALECT, "EXIR's Edge dialect: functional core-ATen ops with explicit dtypes.");
    let rules = verify::rules();
    for s in core_schemas() {
        let aten = dialect_aten::ops::definition(s);
        let Some(mirrored) = dialect_aten::op::by_name(&aten.name) else { continue };
        let mut def = aten.clone().mirroring(mirrored);
        def.name = edge_name_of(s);
        def.summary = format!("Edge `{}`: core ATen with explicit dtypes.", s.qualified_name());
        let schema_check = aten.verify.clone();
        def.verify = None;
        let def = def.verifier(move |ctx, m, op| {
            if let Some(f) = &schema_check {
                f(ctx, m, op)?;
            }
            verify_edge_op(ctx, m, op)
        });
        if let Some(&rule) = rules.get(&mirrored) {
            ctx.attach(&def.name, rule);
        }
        // Names come from distinct schema lines; a second registration is skipped.
        let _ = ctx.register_op(def);
    }
}
