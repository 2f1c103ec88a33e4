//! The `shape-propagation` pass: refines result types with the aten inference functions.
//!
//! Ops are visited in program order (nested regions included), so each op sees its operands'
//! refined types. A result type is replaced by the merge of what it says and what inference
//! finds ([`dialect_aten::infer::refine`]); nothing certain is ever dropped. Structural prim
//! ops (lists, tuples) follow their operands, and function result types follow the returned
//! values. Inputs that contradict each other (an impossible broadcast) are an error naming the
//! op; with `strict=true`, so is an annotated type that contradicts the inferred one.

use dialect_aten::infer::{Ranges, infer_op_with, refine};
use ir::{Attribute, Context, Diagnostic, Module, OpId, Type, TypeKind, WalkOrder};
use pass::{AnalysisManager, Pass, PassOptions, PassResult};

/// What one propagation run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PropagationStats {
    /// Values whose type became more specific.
    pub refined: usize,
}

/// Propagates shapes and dtypes through every op nested in `root`.
pub fn propagate_shapes(ctx: &Context, m: &mut Module, root: OpId, strict: bool) -> Result<PropagationStats, Diagnostic> {
    let ranges = Ranges::of_module(m);
    let mut ops = Vec::new();
    m.walk(root, WalkOrder::PreOrder, &mut |o| ops.push(o));
    let mut stats = PropagationStats::default();
    for op in ops {
        let name = m.op_name(op);
        let inferred: Option<Vec<Type>> = if name == dialect_prim::LIST_CONSTRUCT {
            list_type(m, op).map(|t| vec![t])
        } else if name == dialect_prim::TUPLE_CONSTRUCT {
            Some(vec![Type::tuple(m.operands(op).iter().map(|&v| m.value_type(v).clone()).collect())])
        } else if name == dialect_prim::LIST_UNPACK {
            match m.operands(op).first().map(|&l| m.value_type(l).kind().clone()) {
                Some(TypeKind::List(e)) => Some(vec![e; m.results(op).len()]),
                _ => None,
            }
        } else if name == dialect_prim::TUPLE_INDEX {
            let i = m.attr(op, "index").and_then(Attribute::as_int).unwrap_or(-1);
            match m.operands(op).first().map(|&t| m.value_type(t).kind().clone()) {
                Some(TypeKind::Tuple(es)) => usize::try_from(i).ok().and_then(|i| es.get(i).cloned()).map(|t| vec![t]),
                _ => None,
            }
        } else if name == dialect_prim::TUPLE_UNPACK {
            match m.operands(op).first().map(|&t| m.value_type(t).kind().clone()) {
                Some(TypeKind::Tuple(es)) => Some(es),
                _ => None,
            }
        } else if ctx.op_def(name).is_some_and(|d| d.schema.is_some()) {
            infer_op_with(ctx, m, op, &ranges)
                .map_err(|e| Diagnostic::error(m.loc(op).clone(), format!("'{name}' op shape inference failed: {e}")))?
        } else {
            None
        };
        let Some(types) = inferred else { continue };
        let structural = name.starts_with("prim.");
        for (&r, t) in m.results(op).to_vec().iter().zip(&types) {
            let old = m.value_type(r).clone();
            if !refinable(ctx, m, r) {
                continue;
            }
            if structural {
                // Structural ops' verifiers want exact types: they follow their operands.
                if *t != old {
                    m.set_value_type(r, t.clone());
                    stats.refined += 1;
                }
                continue;
            }
            let new = match refine(&old, t) {
                Ok(n) => n,
                Err(e) if strict => {
                    return Err(Diagnostic::error(
                        m.loc(op).clone(),
                        format!("'{}' op result type {old} contradicts inference: {e}", m.op_name(op)),
                    ));
                }
                Err(_) => continue,
            };
            if new != old {
                m.set_value_type(r, new);
                stats.refined += 1;
            }
        }
    }
    if stats.refined > 0 {
        update_signatures(m, root);
    }
    Ok(stats)
}

/// The list type of a `prim.ListConstruct`: its elements' common type, `!prim.any` when they differ.
fn list_type(m: &Module, op: OpId) -> Option<Type> {
    let old = m.value_type(m.results(op)[0]).clone();
    let TypeKind::List(_) = old.kind() else { return None };
    let ops = m.operands(op);
    let first = m.value_type(*ops.first()?).clone();
    if !first.is_tensor() {
        return None;
    }
    if ops.iter().all(|&v| *m.value_type(v) == first) { Some(Type::list(first)) } else { Some(Type::list(Type::any())) }
}

/// Whether every user of `v` accepts a more specific type: ops checked against a schema,
/// returns (the signature follows) and the structural ops this pass recomputes.
fn refinable(ctx: &Context, m: &Module, v: ir::ValueId) -> bool {
    m.uses(v).iter().all(|u| {
        let n = m.op_name(u.op);
        ctx.op_def(n).is_some_and(|d| d.schema.is_some())
            || n == ir::builtin::RETURN && m.parent_op(u.op).is_some_and(|f| !is_referenced(m, f))
            || matches!(
                n,
                dialect_prim::LIST_CONSTRUCT
                    | dialect_prim::TUPLE_CONSTRUCT
                    | dialect_prim::LIST_UNPACK
                    | dialect_prim::TUPLE_UNPACK
                    | dialect_prim::TUPLE_INDEX
            )
    })
}

/// Whether some op refers to function `f` by symbol (a call or a `cond` branch).
fn is_referenced(m: &Module, f: OpId) -> bool {
    let Some(name) = m.attr(f, ir::builtin::SYM_NAME).and_then(Attribute::as_str) else { return false };
    let mut found = false;
    m.walk(m.top(), WalkOrder::PreOrder, &mut |o| {
        if !found && o != f {
            found = m.attributes(o).iter().any(|(_, a)| refers_to(a, name));
        }
    });
    found
}

fn refers_to(a: &Attribute, name: &str) -> bool {
    match a {
        Attribute::SymbolRef(s) => &**s == name,
        Attribute::Array(items) => items.iter().any(|i| refers_to(i, name)),
        Attribute::Dict(items) => items.iter().any(|(_, i)| refers_to(i, name)),
        _ => false,
    }
}

/// Function result types follow the values their `func.return` gives.
fn update_signatures(m: &mut Module, root: OpId) {
    let mut funcs = Vec::new();
    m.walk(root, WalkOrder::PreOrder, &mut |o| {
        if m.op_name(o) == ir::builtin::FUNC {
            funcs.push(o);
        }
    });
    for f in funcs {
        let Some((inputs, results)) = ir::builtin::function_signature(m, f) else { continue };
        let Some(entry) = m.regions(f).first().and_then(|&r| m.entry_block(r)) else { continue };
        let Some(ret) = m.last_op(entry).filter(|&o| m.op_name(o) == ir::builtin::RETURN) else { continue };
        let given: Vec<Type> = m.operands(ret).iter().map(|&v| m.value_type(v).clone()).collect();
        if given.len() != results.len() || given == results {
            continue;
        }
        m.set_attr(f, ir::builtin::FUNCTION_TYPE, Attribute::Type(Type::function(inputs, given)));
    }
}

/// The `shape-propagation` pass.
pub struct ShapePropagation {
    strict: bool,
    options: String,
}

impl ShapePropagation {
    pub fn options() -> PassOptions {
        PassOptions::new().bool("strict", false, "Fail when an annotated type contradicts the inferred one")
    }

    pub fn with_options(o: &PassOptions) -> ShapePropagation {
        ShapePropagation { strict: o.get_bool("strict").unwrap_or(false), options: o.to_option_text() }
    }
}

impl Pass for ShapePropagation {
    fn name(&self) -> &str {
        "shape-propagation"
    }

    fn description(&self) -> &str {
        "Refine tensor result types (dtype, shape, symbolic dims) with the aten inference functions"
    }

    fn option_text(&self) -> String {
        self.options.clone()
    }

    fn run(&mut self, ctx: &Context, m: &mut Module, op: OpId, am: &mut AnalysisManager) -> Result<PassResult, Diagnostic> {
        let s = propagate_shapes(ctx, m, op, self.strict)?;
        pass::log!(am, pass::LogLevel::Dump, "refined {} value type(s)", s.refined);
        Ok(PassResult::from_changed(s.refined > 0))
    }
}
