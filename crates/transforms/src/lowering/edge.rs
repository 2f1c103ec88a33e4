//! The `lower-to-edge` pass: aten ops become Edge ops, with implicit type promotion made explicit.
//!
//! Each `aten.<op>` in the Edge operator set is renamed `edge.<op>`; before an op whose
//! operands PyTorch would promote, each tensor operand of another dtype than the computation
//! dtype gets an explicit `edge._to_copy {dtype}` (integer inputs of floating ops such as `exp`
//! or true division included). An aten op outside the set is an error naming it and its
//! location (`strict=true`, the default) or stays as it is (`strict=false`, for backends that
//! run it anyway). Ops that compute no tensor (scalar and SymInt ops such as `aten.size.int`)
//! stay aten ops in either mode. `verify-edge` checks that a module is entirely Edge.

use dialect_prim::kinds::{Kind as PK, TypeExt as _};
use dialect_aten::infer::{Args, PromoteArg, float_result, result_type};
use dialect_aten::op;
use dialect_edge::{PromotionRule, edge_name, promotion_rule};
use ir::{Context, DType, Diagnostic, InsertPoint, Module, OpId, OperationState, TensorType, Type, ValueId, WalkOrder};
use pass::{AnalysisManager, Pass, PassOptions, PassResult};

/// Ops that stay what they are in an Edge program.
fn is_structural(name: &str) -> bool {
    [dialect_prim::DIALECT, ir::builtin::FUNC_DIALECT, ir::builtin::DIALECT, dialect_backend::DIALECT].contains(&ir::dialect_namespace(name))
}

/// Whether an op computes no tensor: scalar and SymInt arithmetic and queries of TorchScript
/// programs (`aten.size.int`, `aten.lt.int`, `aten.add.int`). Like EXIR's symbolic-size ops,
/// they stay aten ops even in strict mode; runtimes run them as they are.
fn is_scalar_op(m: &Module, op: OpId) -> bool {
    fn holds_tensor(t: &Type) -> bool {
        match t.pk() {
            PK::Tensor(_) | PK::Any => true,
            PK::List(e) | PK::Optional(e) => holds_tensor(e),
            PK::Tuple(items) => items.iter().any(holds_tensor),
            _ => false,
        }
    }
    let results = m.results(op);
    !results.is_empty() && !results.iter().any(|&r| holds_tensor(m.value_type(r)))
}

/// What one lowering did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EdgeStats {
    pub lowered: usize,
    pub casts: usize,
    /// Ops left outside the Edge set (non-strict mode).
    pub left: usize,
}

/// Lowers every aten op nested in `root` to the Edge dialect.
pub fn lower_to_edge(ctx: &Context, m: &mut Module, root: OpId, strict: bool) -> Result<EdgeStats, Diagnostic> {
    let mut ops = Vec::new();
    m.walk(root, WalkOrder::PreOrder, &mut |o| ops.push(o));
    let mut stats = EdgeStats::default();
    for op in ops {
        if op == root || !m.contains_op(op) {
            continue;
        }
        let name = m.op_name(op).to_string();
        if strict && (name == dialect_prim::IF || name == dialect_prim::LOOP) {
            control_flow_has_dtypes(m, op)?;
        }
        if is_structural(&name) || is_edge(ctx, &name) {
            continue;
        }
        let is_aten = ctx.op_def(&name).is_some_and(|d| d.dialect() == dialect_aten::DIALECT);
        let target = if is_aten { edge_name(&name) } else { None };
        let Some(target) = target.filter(|t| ctx.op_def(t).is_some()) else {
            if strict && !is_scalar_op(m, op) {
                let why = if is_aten {
                    "is not in the Edge operator set (decompose it to core ATen first)"
                } else {
                    "is not an aten op and cannot be lowered to Edge"
                };
                return Err(Diagnostic::error(m.loc(op).clone(), format!("'{name}' op {why}")));
            }
            stats.left += 1;
            continue;
        };
        stats.casts += make_promotion_explicit(ctx, m, op, &target)?;
        m.rename_op(op, &target);
        stats.lowered += 1;
    }
    Ok(stats)
}

/// Checks that every tensor a `prim.If` or `prim.Loop` produces has one known dtype. Edge has no
/// value whose dtype depends on the branch taken or the iteration count; the error names what
/// differs when the branches (the initial value and the body) disagree.
fn control_flow_has_dtypes(m: &Module, op: OpId) -> Result<(), Diagnostic> {
    let dtype = |v: ValueId| m.value_type(v).as_tensor().and_then(|t| t.dtype);
    let yielded = |r: usize, k: usize| {
        let b = m.regions(op).get(r).and_then(|&r| m.entry_block(r))?;
        let t = m.last_op(b)?;
        m.operands(t).get(k).copied()
    };
    let is_loop = m.op_name(op) == dialect_prim::LOOP;
    for (i, &r) in m.results(op).iter().enumerate() {
        if !m.value_type(r).is_tensor() || dtype(r).is_some() {
            continue;
        }
        let why = if is_loop {
            // Shape propagation generalized the carried type: with a known initial dtype, some
            // iteration of the body gives another one.
            match m.operands(op).get(i + 2).copied().and_then(dtype) {
                Some(d) => format!(
                    "result #{i} is {d} on entry but the loop body changes its dtype; Edge needs one dtype per value (cast it in the body)"
                ),
                None => format!("result #{i} has no known dtype; Edge needs explicit dtypes (run shape-propagation first)"),
            }
        } else {
            match (yielded(0, i).and_then(dtype), yielded(1, i).and_then(dtype)) {
                (Some(x), Some(y)) if x != y => format!(
                    "result #{i} is {x} from the then-branch but {y} from the else-branch; Edge needs one dtype per value (cast one of them)"
                ),
                _ => format!("result #{i} has no known dtype; Edge needs explicit dtypes (run shape-propagation first)"),
            }
        };
        return Err(Diagnostic::error(m.loc(op).clone(), format!("'{}' op {why}", m.op_name(op))));
    }
    Ok(())
}

/// Inserts `edge._to_copy` casts before `op` so that its operands need no implicit promotion.
fn make_promotion_explicit(ctx: &Context, m: &mut Module, op: OpId, target: &str) -> Result<usize, Diagnostic> {
    let rule = promotion_rule(ctx, target);
    if rule == PromotionRule::Free {
        return Ok(0);
    }
    let Some(schema) = ctx.op_def(m.op_name(op)).and_then(|d| d.schema.clone()) else { return Ok(0) };
    let err = |m: &Module, e: String| Diagnostic::error(m.loc(op).clone(), format!("'{}' op {e}", m.op_name(op)));
    // The operands to unify: (operand index, dtype) of each non-mask tensor argument.
    let (tensors, compute) = {
        let a = Args::bind(ctx, m, op, &schema).map_err(|e| err(m, e))?;
        let mut tensors: Vec<(usize, DType)> = Vec::new();
        let mut pargs = Vec::new();
        for (i, arg) in schema.args.iter().enumerate() {
            // `alpha` scales an operand but takes no part in promotion (`bool + bool` is bool).
            if matches!(arg.name.as_str(), "condition" | "mask" | "index" | "indices" | "alpha") {
                continue;
            }
            if let Some(t) = a.tensor(&arg.name) {
                let Some(d) = t.dtype else {
                    return Err(err(m, format!("operand '{}' has no known dtype; run shape-propagation first", arg.name)));
                };
                let Some(k) = a.operand_index_at(i) else { continue };
                tensors.push((k, d));
                pargs.push(PromoteArg::Tensor { dtype: d, zero_dim: t.rank() == Some(0) });
            } else if let Some(s) = a.scalar(&arg.name) {
                if matches!(arg.ty.unwrap_optional(), ir::schema::SchemaType::Scalar | ir::schema::SchemaType::Number) {
                    pargs.push(PromoteArg::Scalar(s.category()));
                }
            }
        }
        let Some(mut compute) = result_type(&pargs) else { return Ok(0) };
        let result = m.results(op).first().and_then(|&r| m.value_type(r).as_tensor()).and_then(|t| t.dtype);
        match rule {
            PromotionRule::FloatUnary => compute = float_result(compute),
            PromotionRule::SameAsResult => {
                // True division and other floating results: compute in the result's dtype.
                if let Some(r) = result.filter(|r| r.is_floating() && !compute.is_floating() && !compute.is_complex()) {
                    compute = r;
                }
            }
            _ => {}
        }
        (tensors, compute)
    };
    let mut casts = 0;
    for (k, d) in tensors {
        // A complex operand is never cast to a real dtype here: that would drop its imaginary
        // part before an op that reads whole complex numbers (`abs`).
        if d == compute || (d.is_complex() && !compute.is_complex()) {
            continue;
        }
        let v = m.operands(op)[k];
        let c = cast(m, v, compute, InsertPoint::Before(op));
        m.set_operand(op, k, c).map_err(|e| err(m, e.to_string()))?;
        casts += 1;
    }
    Ok(casts)
}

/// Creates `edge._to_copy %v {dtype}` at `at`.
pub fn cast(m: &mut Module, v: ValueId, to: DType, at: InsertPoint) -> ValueId {
    let shape = m.value_type(v).as_tensor().and_then(|t| t.shape.clone());
    let loc = match at {
        InsertPoint::Before(o) | InsertPoint::After(o) => m.loc(o).clone(),
        _ => ir::Location::Unknown,
    };
    let st = OperationState::new(edge_name(op::_TO_COPY.name()).unwrap_or_else(|| op::_TO_COPY.name().to_string()))
        .operands([v])
        .attr("dtype", dialect_prim::kinds::dtype(to))
        .results([Type::tensor_of(TensorType { dtype: Some(to), shape })])
        .loc(loc);
    let c = m.create_op(st);
    // A fresh op at a point inside a block cannot fail to insert.
    let _ = m.insert_op(c, at);
    m.results(c)[0]
}

/// Whether `name` is an Edge op: one of the Edge dialect's, or an op of another dialect that
/// declares itself legal in Edge by attaching its [`PromotionRule`].
fn is_edge(ctx: &Context, name: &str) -> bool {
    name.split('.').next() == Some(dialect_edge::DIALECT) || ctx.interface::<PromotionRule>(name).is_some()
}

/// Checks that every op nested in `root` is Edge (or structural) and verifies it.
pub fn verify_edge(ctx: &Context, m: &Module, root: OpId) -> Result<(), Diagnostic> {
    let mut bad = None;
    m.walk(root, WalkOrder::PreOrder, &mut |o| {
        if bad.is_none() && o != root {
            let n = m.op_name(o);
            if !(is_structural(n) || is_edge(ctx, n)) {
                bad = Some(o);
            }
        }
    });
    if let Some(o) = bad {
        return Err(Diagnostic::error(
            m.loc(o).clone(),
            format!("'{}' op is not in the Edge dialect", m.op_name(o)),
        ));
    }
    // Tensor values crossing structural ops must have dtypes too.
    ir::verify_op(ctx, m, root)?;
    let mut missing = None;
    m.walk(root, WalkOrder::PreOrder, &mut |o| {
        if missing.is_none() && ir::dialect_namespace(m.op_name(o)) == dialect_prim::DIALECT {
            for &r in m.results(o) {
                if let PK::Tensor(t) = m.value_type(r).pk() {
                    if t.dtype.is_none() {
                        missing = Some(o);
                    }
                }
            }
        }
    });
    if let Some(o) = missing {
        return Err(Diagnostic::error(m.loc(o).clone(), format!("'{}' op produces a tensor without an explicit dtype", m.op_name(o))));
    }
    Ok(())
}

/// The `lower-to-edge` pass.
pub struct LowerToEdge {
    strict: bool,
    options: String,
}

impl LowerToEdge {
    pub fn options() -> PassOptions {
        PassOptions::new().bool("strict", true, "Fail on an op outside the Edge operator set (else leave it)")
    }

    pub fn with_options(o: &PassOptions) -> LowerToEdge {
        LowerToEdge { strict: o.get_bool("strict").unwrap_or(true), options: o.to_option_text() }
    }
}

impl Pass for LowerToEdge {
    fn name(&self) -> &str {
        "lower-to-edge"
    }

    fn description(&self) -> &str {
        "Lower core ATen ops to the Edge dialect, inserting explicit casts for type promotion"
    }

    fn option_text(&self) -> String {
        self.options.clone()
    }

    fn run(&mut self, ctx: &Context, m: &mut Module, op: OpId, am: &mut AnalysisManager) -> Result<PassResult, Diagnostic> {
        let s = lower_to_edge(ctx, m, op, self.strict)?;
        pass::log!(am, pass::LogLevel::Dump, "lowered {} op(s), inserted {} cast(s), left {}", s.lowered, s.casts, s.left);
        Ok(PassResult::from_changed(s.lowered + s.casts > 0))
    }
}

/// The `verify-edge` pass.
#[derive(Default)]
pub struct VerifyEdge;

impl Pass for VerifyEdge {
    fn name(&self) -> &str {
        "verify-edge"
    }

    fn description(&self) -> &str {
        "Check that the program is in the Edge dialect: core ops, explicit dtypes, no implicit promotion"
    }

    fn run(&mut self, ctx: &Context, m: &mut Module, op: OpId, _: &mut AnalysisManager) -> Result<PassResult, Diagnostic> {
        verify_edge(ctx, m, op)?;
        Ok(PassResult::unchanged())
    }
}
