//! The `shape-propagation` pass: refines result types with the aten inference functions.
//!
//! Ops are visited in program order (nested regions included), so each op sees its operands'
//! refined types. A result type is replaced by the merge of what it says and what inference
//! finds ([`dialect_aten::infer::refine`]); nothing certain is ever dropped. Structural prim
//! ops (lists, tuples) follow their operands, and function result types follow the returned
//! values. A `prim.If` result becomes what its two branches yield in common; a `prim.Loop`'s
//! carried values start as the initial values' types and are generalized by what the body
//! yields until nothing changes (the body is refined again from its annotations each round).
//! Inputs that contradict each other (an impossible broadcast) are an error naming the op; with
//! `strict=true`, so is an annotated type that contradicts the inferred one.

use dialect_prim::kinds::{Kind as PK, TypeExt as _};
use dialect_aten::infer::{Ranges, ShapeInference, infer_op_with, join, refine};
use ir::{Attribute, Context, Diagnostic, Module, OpId, Type, ValueId, WalkOrder};
use std::collections::HashSet;
use pass::{AnalysisManager, Pass, PassOptions, PassResult};

/// What one propagation run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PropagationStats {
    /// Values whose type became more specific.
    pub refined: usize,
}

/// Propagates shapes and dtypes through every op nested in `root`.
pub fn propagate_shapes(ctx: &Context, m: &mut Module, root: OpId, strict: bool) -> Result<PropagationStats, Diagnostic> {
    let mut p = Propagator { ctx, ranges: Ranges::of_module(m), referenced: referenced_symbols(m), strict, stats: PropagationStats::default() };
    p.nested(m, root)?;
    if p.stats.refined > 0 {
        update_signatures(m, root);
    }
    Ok(p.stats)
}

/// The most iterations a loop's carried types are refined for before they fall back to their
/// annotations. Each iteration makes some carried type strictly more general, and a type can be
/// generalized only a few times (dtype, rank, each size), so real programs converge in two or three.
const MAX_LOOP_ITERATIONS: usize = 8;

struct Propagator<'a> {
    ctx: &'a Context,
    ranges: Ranges,
    /// Symbols some op refers to (called functions, `cond` branches): their signatures are fixed.
    referenced: HashSet<String>,
    strict: bool,
    stats: PropagationStats,
}

impl Propagator<'_> {
    /// Every op of every block of every region of `op`, in program order.
    fn nested(&mut self, m: &mut Module, op: OpId) -> Result<(), Diagnostic> {
        for r in m.regions(op).to_vec() {
            for b in m.region_blocks(r).to_vec() {
                for o in m.block_ops(b) {
                    self.op(m, o)?;
                }
            }
        }
        Ok(())
    }

    fn set(&mut self, m: &mut Module, v: ValueId, t: Type) {
        if *m.value_type(v) != t {
            m.set_value_type(v, t);
            self.stats.refined += 1;
        }
    }

    fn op(&mut self, m: &mut Module, op: OpId) -> Result<(), Diagnostic> {
        let name = m.op_name(op);
        if name == dialect_prim::IF {
            return self.if_op(m, op);
        }
        if name == dialect_prim::LOOP {
            return self.loop_op(m, op);
        }
        let inferred: Option<Vec<Type>> = if name == dialect_prim::LIST_CONSTRUCT {
            list_type(m, op).map(|t| vec![t])
        } else if name == dialect_prim::TUPLE_CONSTRUCT {
            Some(vec![Type::tuple(m.operands(op).iter().map(|&v| m.value_type(v).clone()).collect())])
        } else if name == dialect_prim::LIST_UNPACK {
            match m.operands(op).first().map(|&l| m.value_type(l).pk()) {
                Some(PK::List(e)) => Some(vec![e.clone(); m.results(op).len()]),
                _ => None,
            }
        } else if name == dialect_prim::TUPLE_INDEX {
            let i = m.attr(op, "index").and_then(Attribute::as_int).unwrap_or(-1);
            match m.operands(op).first().map(|&t| m.value_type(t).pk()) {
                Some(PK::Tuple(es)) => usize::try_from(i).ok().and_then(|i| es.get(i).cloned()).map(|t| vec![t]),
                _ => None,
            }
        } else if name == dialect_prim::TUPLE_UNPACK {
            match m.operands(op).first().map(|&t| m.value_type(t).pk()) {
                Some(PK::Tuple(es)) => Some(es.to_vec()),
                _ => None,
            }
        } else if self.inferred(name) {
            infer_op_with(self.ctx, m, op, &self.ranges)
                .map_err(|e| Diagnostic::error(m.loc(op).clone(), format!("'{name}' op shape inference failed: {e}")))?
        } else {
            None
        };
        if let Some(types) = inferred {
            self.refine_results(m, op, &types)?;
        }
        self.nested(m, op)
    }

    fn refine_results(&mut self, m: &mut Module, op: OpId, types: &[Type]) -> Result<(), Diagnostic> {
        let structural = ir::dialect_namespace(m.op_name(op)) == dialect_prim::DIALECT;
        for (&r, t) in m.results(op).to_vec().iter().zip(types) {
            let old = m.value_type(r).clone();
            if !self.refinable(m, r) {
                continue;
            }
            if structural {
                // Structural ops' verifiers want exact types: they follow their operands.
                self.set(m, r, t.clone());
                continue;
            }
            let new = match refine(&old, t) {
                Ok(n) => n,
                Err(e) if self.strict => {
                    return Err(Diagnostic::error(
                        m.loc(op).clone(),
                        format!("'{}' op result type {old} contradicts inference: {e}", m.op_name(op)),
                    ));
                }
                Err(_) => continue,
            };
            self.set(m, r, new);
        }
        Ok(())
    }

    /// `prim.If`: both branches first, then each result becomes what the two yielded values have
    /// in common, when that says more than the result's type.
    fn if_op(&mut self, m: &mut Module, op: OpId) -> Result<(), Diagnostic> {
        self.nested(m, op)?;
        let yields: Vec<Vec<Type>> = m.regions(op).iter().map(|&r| region_yields(m, r)).collect();
        let [then, els] = yields.as_slice() else { return Ok(()) };
        for (i, &r) in m.results(op).to_vec().iter().enumerate() {
            let (Some(a), Some(b)) = (then.get(i), els.get(i)) else { continue };
            let Some(j) = join(a, b) else { continue };
            if dialect_prim::type_refines(&j, m.value_type(r)) && self.refinable(m, r) {
                self.set(m, r, j);
            }
        }
        Ok(())
    }

    /// `prim.Loop`: the carried types start as the initial values' and are generalized by what
    /// the body yields until the body gives nothing new; the body's types are recomputed from
    /// its annotations on each round. A carried value whose argument or result cannot take a
    /// more specific type keeps its annotation.
    fn loop_op(&mut self, m: &mut Module, op: OpId) -> Result<(), Diagnostic> {
        let Some(body) = m.regions(op).first().and_then(|&r| m.entry_block(r)) else { return Ok(()) };
        let args: Vec<ValueId> = m.block_args(body).iter().skip(1).copied().collect();
        let results = m.results(op).to_vec();
        let inits: Vec<ValueId> = m.operands(op).iter().skip(2).copied().collect();
        if args.len() != results.len() || inits.len() != results.len() {
            // The verifier names the mismatch; refine only the body.
            return self.nested(m, op);
        }
        let annotated: Vec<Type> = args.iter().map(|&a| m.value_type(a).clone()).collect();
        let free: Vec<bool> = args.iter().zip(&results).map(|(&a, &r)| self.refinable(m, a) && self.refinable(m, r)).collect();
        let saved = body_types(m, op);
        let initial: Vec<Type> = (0..args.len())
            .map(|k| {
                let t = m.value_type(inits[k]).clone();
                if free[k] && dialect_prim::type_refines(&t, &annotated[k]) { t } else { annotated[k].clone() }
            })
            .collect();
        let mut carried = initial;
        self.seed_empty_lists(m, op, &args, &inits, &free, &saved, &mut carried)?;
        let mut converged = false;
        let refined_before = self.stats.refined;
        for _ in 0..MAX_LOOP_ITERATIONS {
            restore(m, &saved);
            for (&a, t) in args.iter().zip(&carried) {
                m.set_value_type(a, t.clone());
            }
            self.nested(m, op)?;
            let yielded = region_yields(m, m.regions(op)[0]);
            let mut next = carried.clone();
            for k in 0..args.len() {
                if !free[k] {
                    continue;
                }
                let widened = yielded.get(k + 1).and_then(|y| join(&carried[k], y));
                next[k] = match widened {
                    Some(j) if dialect_prim::type_refines(&j, &annotated[k]) => j,
                    _ => annotated[k].clone(),
                };
            }
            if next == carried {
                converged = true;
                break;
            }
            carried = next;
        }
        if !converged {
            restore(m, &saved);
            carried = annotated.clone();
            self.nested(m, op)?;
        }
        // Only the final types count as refinements, measured against the types before the pass.
        self.stats.refined = refined_before;
        for (k, t) in carried.into_iter().enumerate() {
            m.set_value_type(args[k], t.clone());
            self.set(m, results[k], t);
        }
        let after = body_types(m, op);
        self.stats.refined += saved.iter().zip(&after).filter(|((_, a), (_, b))| a != b).count();
        Ok(())
    }

    /// A carried list that starts empty (`prim.ListConstruct` of nothing) takes the element type
    /// of what one iteration appends to it (`xs = aten.add.t(xs, [x])`, what `xs.append(x)`
    /// compiles to): an empty list has no element to contradict it. The empty list is retyped to
    /// match, and the fixed point that follows checks that every iteration agrees.
    #[allow(clippy::too_many_arguments)]
    fn seed_empty_lists(
        &mut self,
        m: &mut Module,
        op: OpId,
        args: &[ValueId],
        inits: &[ValueId],
        free: &[bool],
        saved: &[(ValueId, Type)],
        carried: &mut [Type],
    ) -> Result<(), Diagnostic> {
        let empty = |m: &Module, v: ValueId| {
            m.defining_op(v).is_some_and(|d| m.op_name(d) == dialect_prim::LIST_CONSTRUCT && m.operands(d).is_empty())
        };
        let candidates: Vec<usize> = (0..args.len()).filter(|&k| free[k] && empty(m, inits[k]) && self.refinable(m, inits[k])).collect();
        if candidates.is_empty() {
            return Ok(());
        }
        restore(m, saved);
        for (&a, t) in args.iter().zip(carried.iter()) {
            m.set_value_type(a, t.clone());
        }
        self.nested(m, op)?;
        let Some(body) = m.regions(op).first().and_then(|&r| m.entry_block(r)) else { return Ok(()) };
        let Some(term) = m.last_op(body) else { return Ok(()) };
        let yields = m.operands(term).to_vec();
        for k in candidates {
            let Some(&y) = yields.get(k + 1) else { continue };
            let Some(def) = m.defining_op(y) else { continue };
            if m.op_name(def) != dialect_aten::op::ADD_T.name() || m.operands(def).first() != Some(&args[k]) {
                continue;
            }
            let Some(&appended) = m.operands(def).get(1) else { continue };
            let t = m.value_type(appended).clone();
            if matches!(t.pk(), PK::List(e) if e.as_tensor().is_some_and(|e| e.dtype.is_some()))
                && dialect_prim::type_refines(&t, &carried[k])
            {
                carried[k] = t.clone();
                self.set(m, inits[k], t);
            }
        }
        Ok(())
    }

    /// Whether `name`'s results are inferred: it has an ATen schema or a [`ShapeInference`].
    fn inferred(&self, name: &str) -> bool {
        self.ctx.op_def(name).is_some_and(|d| d.schema.is_some()) || self.ctx.interface::<ShapeInference>(name).is_some()
    }

    /// Whether every user of `v` accepts a more specific type: ops checked against a schema,
    /// returns (the signature follows), the structural ops this pass recomputes, and the
    /// operands of control flow (a branch or an iteration may yield a refinement).
    fn refinable(&self, m: &Module, v: ValueId) -> bool {
        m.uses(v).iter().all(|u| {
            let n = m.op_name(u.op);
            self.inferred(n)
                || n == ir::builtin::RETURN && m.parent_op(u.op).is_some_and(|f| !self.is_referenced(m, f))
                || n == dialect_prim::YIELD && m.parent_op(u.op).is_some_and(|p| matches!(m.op_name(p), dialect_prim::IF | dialect_prim::LOOP))
                || n == dialect_prim::LOOP && u.index >= 2
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

    fn is_referenced(&self, m: &Module, f: OpId) -> bool {
        m.attr(f, ir::builtin::SYM_NAME).and_then(Attribute::as_str).is_some_and(|n| self.referenced.contains(n))
    }
}

/// The types the terminator of region `r`'s entry block passes on.
fn region_yields(m: &Module, r: ir::RegionId) -> Vec<Type> {
    m.entry_block(r).and_then(|b| m.last_op(b)).map(|t| m.operands(t).iter().map(|&v| m.value_type(v).clone()).collect()).unwrap_or_default()
}

/// The types of every value defined inside `op` (block arguments, op results), in walk order.
fn body_types(m: &Module, op: OpId) -> Vec<(ValueId, Type)> {
    let mut out = Vec::new();
    let visit_block = |m: &Module, b: ir::BlockId, out: &mut Vec<(ValueId, Type)>| {
        for &a in m.block_args(b) {
            out.push((a, m.value_type(a).clone()));
        }
    };
    for &r in m.regions(op) {
        for &b in m.region_blocks(r) {
            visit_block(m, b, &mut out);
        }
    }
    m.walk(op, WalkOrder::PreOrder, &mut |o| {
        if o == op {
            return;
        }
        for &r in m.results(o) {
            out.push((r, m.value_type(r).clone()));
        }
        for &reg in m.regions(o) {
            for &b in m.region_blocks(reg) {
                for &a in m.block_args(b) {
                    out.push((a, m.value_type(a).clone()));
                }
            }
        }
    });
    out
}

fn restore(m: &mut Module, saved: &[(ValueId, Type)]) {
    for (v, t) in saved {
        m.set_value_type(*v, t.clone());
    }
}

/// The list type of a `prim.ListConstruct`: its elements' common type, `!prim.any` when they differ.
fn list_type(m: &Module, op: OpId) -> Option<Type> {
    let old = m.value_type(m.results(op)[0]).clone();
    let PK::List(_) = old.pk() else { return None };
    let ops = m.operands(op);
    let first = m.value_type(*ops.first()?).clone();
    if !first.is_tensor() {
        return None;
    }
    if ops.iter().all(|&v| *m.value_type(v) == first) { Some(dialect_prim::kinds::list(first)) } else { Some(dialect_prim::kinds::list(dialect_prim::kinds::any_type())) }
}

/// The symbols some op refers to (a call's callee, a `cond` branch).
fn referenced_symbols(m: &Module) -> HashSet<String> {
    let mut out = HashSet::new();
    m.walk(m.top(), WalkOrder::PreOrder, &mut |o| {
        for (_, a) in m.attributes(o).iter() {
            collect_refs(a, &mut out);
        }
    });
    out
}

fn collect_refs(a: &Attribute, out: &mut HashSet<String>) {
    match a {
        Attribute::SymbolRef(s) => {
            out.insert(s.to_string());
        }
        Attribute::Array(items) => items.iter().for_each(|i| collect_refs(i, out)),
        Attribute::Dict(items) => items.iter().for_each(|(_, i)| collect_refs(i, out)),
        _ => {}
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
