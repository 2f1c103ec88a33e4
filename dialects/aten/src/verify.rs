//! The verifier every aten op shares: operands, attributes and results against the schema.

use crate::signature::{ArgSource, attr_matches, bind_args, result_matches, value_matches};
use ir::{Context, Module, OpId};

pub fn verify_aten(ctx: &Context, m: &Module, op: OpId) -> Result<(), String> {
    let Some(schema) = ctx.op_def(m.op_name(op)).and_then(|d| d.schema.clone()) else {
        return Err("has no schema".into());
    };
    if !m.regions(op).is_empty() {
        return Err("takes no regions".into());
    }
    let binding = bind_args(&schema, m, op).map_err(|e| e.to_string())?;
    for (arg, src) in schema.args.iter().zip(&binding) {
        match src {
            ArgSource::Operand(i) => {
                let t = m.value_type(m.operands(op)[*i]);
                if !value_matches(&arg.ty, t) {
                    return Err(format!(
                        "operand #{i} ('{}') has type {t}, but the schema expects {}",
                        arg.name, arg.ty
                    ));
                }
            }
            ArgSource::Const(a) => {
                if !attr_matches(&arg.ty, a) {
                    return Err(format!(
                        "attribute '{}' is {} ({a}), but the schema expects {}",
                        arg.name,
                        a.kind_name(),
                        arg.ty
                    ));
                }
            }
        }
    }
    let results = m.results(op);
    if !schema.is_varret && results.len() != schema.returns.len() {
        return Err(format!(
            "expected {} result(s), but found {}",
            schema.returns.len(),
            results.len()
        ));
    }
    for (i, (r, &v)) in schema.returns.iter().zip(results).enumerate() {
        let t = m.value_type(v);
        if !result_matches(&r.ty, t) {
            return Err(format!(
                "result #{i} has type {t}, but the schema returns {}",
                r.ty
            ));
        }
    }
    Ok(())
}
