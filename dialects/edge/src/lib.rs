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

use ir::schema::{FunctionSchema, parse_schema};
use std::sync::OnceLock;

/// The dialect's name.
pub const DIALECT: &str = "edge";

/// The core-ATen schemas the Edge operator set is made of (functional ones only).
pub fn core_schemas() -> &'static [FunctionSchema] {
    static CELL: OnceLock<Vec<FunctionSchema>> = OnceLock::new();
    CELL.get_or_init(|| {
        let mut out = Vec::new();
        let mut in_core = false;
        for line in dialect_aten::SCHEMAS.lines() {
            let l = line.trim();
            if let Some(h) = l.strip_prefix('#') {
                let h = h.trim();
                if h.starts_with("Core ATen") {
                    in_core = true;
                } else if !h.is_empty() && in_core && !h.starts_with("Schemas") && !h.starts_with("Generated") {
                    in_core = h.starts_with("Core");
                }
                continue;
            }
            if !in_core || l.is_empty() {
                continue;
            }
            // Lines that fail to parse are reported by the aten data file's own test.
            if let Ok(s) = parse_schema(l) {
                if !s.is_mutable() && s.args.iter().all(|a| a.alias.as_ref().is_none_or(|x| !x.is_written())) {
                    out.push(s);
                }
            }
        }
        out
    })
}

/// The aten names of the Edge operator set (`aten.add.Tensor`), for constant-time lookup.
fn core_names() -> &'static std::collections::HashSet<String> {
    static CELL: OnceLock<std::collections::HashSet<String>> = OnceLock::new();
    CELL.get_or_init(|| core_schemas().iter().map(|s| s.op_name()).collect())
}

/// `aten.add.Tensor` → `edge.add.Tensor`, for ops in the Edge operator set.
pub fn edge_name(aten_op: &str) -> Option<String> {
    let rest = aten_op.strip_prefix("aten.")?;
    core_names().contains(aten_op).then(|| format!("{DIALECT}.{rest}"))
}

/// `edge.add.Tensor` → `aten.add.Tensor` (what a runtime's kernel registry is keyed by).
pub fn aten_name(edge_op: &str) -> Option<String> {
    edge_op.strip_prefix("edge.").map(|rest| format!("aten.{rest}"))
}

/// Registers the edge dialect and its ops.
pub fn register(ctx: &mut ir::Context) {
    ctx.register_dialect(DIALECT, "EXIR's Edge dialect: functional core-ATen ops with explicit dtypes.");
    for s in core_schemas() {
        let aten = dialect_aten::ops::definition(s);
        let Some(rest) = aten.name.strip_prefix("aten.") else { continue };
        let mut def = aten.clone();
        def.name = format!("{DIALECT}.{rest}");
        def.summary = format!("Edge `{}`: core ATen with explicit dtypes.", s.qualified_name());
        let schema_check = aten.verify.clone();
        def.verify = None;
        let def = def.verifier(move |ctx, m, op| {
            if let Some(f) = &schema_check {
                f(ctx, m, op)?;
            }
            verify_edge_op(ctx, m, op)
        });
        // Names come from distinct schema lines; a second registration is skipped.
        let _ = ctx.register_op(def);
    }
}
