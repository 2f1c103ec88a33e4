//! Dialect conversion: a target saying which ops are legal, a type converter, conversion
//! patterns, and the partial and full conversion drivers. Rewrites are applied in place; a
//! failed conversion is not rolled back but reports the first op left illegal.

use crate::rewrite::PatternRewriter;
use ir::{Context, Diagnostic, InsertPoint, Location, Module, OpId, OperationState, Type, ValueId};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Decides legality of one op dynamically.
pub type LegalityFn = Arc<dyn Fn(&Context, &Module, OpId) -> bool + Send + Sync>;

#[derive(Clone)]
enum Legality {
    Legal,
    Illegal,
    Dynamic(LegalityFn),
}

/// What a conversion must reach: legal and illegal dialects and ops. Op entries override
/// dialect entries; ops covered by neither are of unknown legality.
#[derive(Clone, Default)]
pub struct ConversionTarget {
    dialects: HashMap<String, Legality>,
    ops: HashMap<String, Legality>,
}

/// The legality of one op under a target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpLegality {
    Legal,
    /// Marked illegal, or dynamically legal and the check failed.
    Illegal,
    /// Not covered by the target.
    Unknown,
}

impl ConversionTarget {
    pub fn new() -> ConversionTarget {
        ConversionTarget::default()
    }

    pub fn add_legal_dialect(&mut self, dialect: &str) -> &mut Self {
        self.dialects.insert(dialect.to_string(), Legality::Legal);
        self
    }

    pub fn add_illegal_dialect(&mut self, dialect: &str) -> &mut Self {
        self.dialects.insert(dialect.to_string(), Legality::Illegal);
        self
    }

    pub fn add_dynamically_legal_dialect(
        &mut self,
        dialect: &str,
        f: impl Fn(&Context, &Module, OpId) -> bool + Send + Sync + 'static,
    ) -> &mut Self {
        self.dialects
            .insert(dialect.to_string(), Legality::Dynamic(Arc::new(f)));
        self
    }

    pub fn add_legal_op(&mut self, op: &str) -> &mut Self {
        self.ops.insert(op.to_string(), Legality::Legal);
        self
    }

    pub fn add_illegal_op(&mut self, op: &str) -> &mut Self {
        self.ops.insert(op.to_string(), Legality::Illegal);
        self
    }

    pub fn add_dynamically_legal_op(
        &mut self,
        op: &str,
        f: impl Fn(&Context, &Module, OpId) -> bool + Send + Sync + 'static,
    ) -> &mut Self {
        self.ops
            .insert(op.to_string(), Legality::Dynamic(Arc::new(f)));
        self
    }

    pub fn legality(&self, ctx: &Context, m: &Module, op: OpId) -> OpLegality {
        let name = m.op_name(op);
        let dialect = name.split('.').next().unwrap_or("");
        match self.ops.get(name).or_else(|| self.dialects.get(dialect)) {
            None => OpLegality::Unknown,
            Some(Legality::Legal) => OpLegality::Legal,
            Some(Legality::Illegal) => OpLegality::Illegal,
            Some(Legality::Dynamic(f)) => {
                if f(ctx, m, op) {
                    OpLegality::Legal
                } else {
                    OpLegality::Illegal
                }
            }
        }
    }
}

/// Maps a type to its converted form; `None` when this conversion does not apply.
pub type TypeConversionFn = Arc<dyn Fn(&Context, &Type) -> Option<Type> + Send + Sync>;

/// Builds an op converting `input` to type `to` (one operand, one result).
pub type MaterializationFn = Arc<
    dyn Fn(&Context, &Module, ValueId, &Type, &Location) -> Option<OperationState> + Send + Sync,
>;

/// Converts types, and builds casts between original and converted values.
#[derive(Clone, Default)]
pub struct TypeConverter {
    conversions: Vec<TypeConversionFn>,
    source: Vec<MaterializationFn>,
    target: Vec<MaterializationFn>,
}

impl TypeConverter {
    pub fn new() -> TypeConverter {
        TypeConverter::default()
    }

    /// Adds a conversion; later conversions are tried first.
    pub fn add_conversion(
        &mut self,
        f: impl Fn(&Context, &Type) -> Option<Type> + Send + Sync + 'static,
    ) -> &mut Self {
        self.conversions.push(Arc::new(f));
        self
    }

    /// Adds a builder of casts from a converted value back to its original type, used for uses
    /// of replaced values by ops that were not converted.
    pub fn add_source_materialization(
        &mut self,
        f: impl Fn(&Context, &Module, ValueId, &Type, &Location) -> Option<OperationState>
        + Send
        + Sync
        + 'static,
    ) -> &mut Self {
        self.source.push(Arc::new(f));
        self
    }

    /// Adds a builder of casts from an original value to its converted type, used by
    /// [`ConversionRewriter::convert_value`].
    pub fn add_target_materialization(
        &mut self,
        f: impl Fn(&Context, &Module, ValueId, &Type, &Location) -> Option<OperationState>
        + Send
        + Sync
        + 'static,
    ) -> &mut Self {
        self.target.push(Arc::new(f));
        self
    }

    /// The converted type; with no conversions registered every type converts to itself.
    pub fn convert_type(&self, ctx: &Context, t: &Type) -> Option<Type> {
        if self.conversions.is_empty() {
            return Some(t.clone());
        }
        self.conversions.iter().rev().find_map(|f| f(ctx, t))
    }

    /// Whether `t` is already in converted form.
    pub fn is_legal(&self, ctx: &Context, t: &Type) -> bool {
        self.convert_type(ctx, t).as_ref() == Some(t)
    }

    fn materialize(
        list: &[MaterializationFn],
        ctx: &Context,
        m: &Module,
        v: ValueId,
        to: &Type,
        loc: &Location,
    ) -> Option<OperationState> {
        list.iter().rev().find_map(|f| f(ctx, m, v, to, loc))
    }
}

/// A pattern that rewrites an op into legal ops.
pub trait ConversionPattern {
    fn name(&self) -> &str {
        std::any::type_name::<Self>()
    }

    /// The op name this pattern converts; `None` for any op.
    fn root(&self) -> Option<&str>;

    fn benefit(&self) -> u16 {
        1
    }

    /// Rewrites `op`, whose current operands are `operands`, and returns `true`; or returns
    /// `false` having changed nothing.
    fn match_and_rewrite(
        &self,
        ctx: &Context,
        rw: &mut ConversionRewriter<'_, '_>,
        op: OpId,
        operands: &[ValueId],
    ) -> Result<bool, Diagnostic>;
}

/// A [`PatternRewriter`] that also knows the type converter and records type-changing replacements.
pub struct ConversionRewriter<'m, 'c> {
    rw: PatternRewriter<'m>,
    converter: &'c TypeConverter,
    ctx: &'c Context,
    created: Vec<OpId>,
    /// Replacement values whose type differs from the value they replaced: (new value, old type).
    retyped: Vec<(ValueId, Type)>,
}

impl<'m, 'c> ConversionRewriter<'m, 'c> {
    pub fn module(&self) -> &Module {
        self.rw.module()
    }

    /// Direct access for edits the rewriter has no method for.
    pub fn module_mut(&mut self) -> &mut Module {
        self.rw.module_mut()
    }

    pub fn type_converter(&self) -> &TypeConverter {
        self.converter
    }

    /// The converted form of `t`.
    pub fn convert_type(&self, t: &Type) -> Option<Type> {
        self.converter.convert_type(self.ctx, t)
    }

    pub fn set_insertion_point(&mut self, ip: InsertPoint) {
        self.rw.set_insertion_point(ip);
    }

    /// Creates an op at the insertion point (before the op being converted, unless moved).
    pub fn create(&mut self, state: OperationState) -> Result<OpId, Diagnostic> {
        let op = self.rw.create(state)?;
        self.created.push(op);
        Ok(op)
    }

    pub fn create_value(&mut self, state: OperationState) -> Result<ValueId, Diagnostic> {
        let op = self.create(state)?;
        self.rw
            .module()
            .result(op, 0)
            .ok_or_else(|| Diagnostic::error(Location::Unknown, "created op has no result"))
    }

    /// `v` in its converted type: `v` itself when its type is legal, else a target
    /// materialization of it inserted at the insertion point.
    pub fn convert_value(&mut self, v: ValueId) -> Result<ValueId, Diagnostic> {
        let m = self.rw.module();
        if !m.contains_value(v) {
            return Err(Diagnostic::error(
                Location::Unknown,
                "value to convert is not in the module",
            ));
        }
        let ty = m.value_type(v).clone();
        let Some(to) = self.convert_type(&ty) else {
            return Err(Diagnostic::error(
                Location::Unknown,
                format!("type {ty} has no conversion"),
            ));
        };
        if to == ty {
            return Ok(v);
        }
        let loc = Location::Unknown;
        let st = TypeConverter::materialize(&self.converter.target, self.ctx, m, v, &to, &loc)
            .ok_or_else(|| {
                Diagnostic::error(
                    Location::Unknown,
                    format!("no target materialization from {ty} to {to}"),
                )
            })?;
        self.create_value(st)
    }

    /// Replaces the results of `op` with `new` and erases it; a replacement of another type
    /// is recorded, so uses left in unconverted ops get a source materialization.
    pub fn replace_op(&mut self, op: OpId, new: &[ValueId]) -> Result<(), Diagnostic> {
        let m = self.rw.module();
        if m.contains_op(op) && m.results(op).len() == new.len() {
            for (&old, &n) in m.results(op).iter().zip(new) {
                if m.contains_value(n) && m.value_type(old) != m.value_type(n) {
                    self.retyped.push((n, m.value_type(old).clone()));
                }
            }
        }
        self.rw.replace_op(op, new)
    }

    /// Creates an op from `state` and replaces `op` with its results.
    pub fn replace_op_with(&mut self, op: OpId, state: OperationState) -> Result<OpId, Diagnostic> {
        let new = self.create(state)?;
        let values = self.rw.module().results(new).to_vec();
        self.replace_op(op, &values)?;
        Ok(new)
    }

    pub fn erase_op(&mut self, op: OpId) -> Result<(), Diagnostic> {
        self.rw.erase_op(op)
    }

    fn changed(&self) -> bool {
        self.rw.changed()
    }
}

/// A set of conversion patterns.
#[derive(Clone, Default)]
pub struct ConversionPatternSet {
    patterns: Vec<Arc<dyn ConversionPattern + Send + Sync>>,
}

impl ConversionPatternSet {
    pub fn new() -> ConversionPatternSet {
        ConversionPatternSet::default()
    }

    pub fn add(&mut self, p: impl ConversionPattern + Send + Sync + 'static) -> &mut Self {
        self.patterns.push(Arc::new(p));
        self
    }

    pub fn len(&self) -> usize {
        self.patterns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }
}

/// What a conversion did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConversionResult {
    /// Pattern applications.
    pub converted: usize,
    /// Source materializations inserted for unconverted users.
    pub materializations: usize,
    /// Ops of unknown legality left in place (partial conversion only).
    pub unknown_left: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Partial,
    Full,
}

/// Converts the illegal ops nested in `root`; ops of unknown legality are converted when a
/// pattern applies and otherwise left. Fails if an op marked illegal remains.
pub fn apply_partial_conversion(
    ctx: &Context,
    m: &mut Module,
    root: OpId,
    target: &ConversionTarget,
    patterns: &ConversionPatternSet,
    converter: &TypeConverter,
) -> Result<ConversionResult, Diagnostic> {
    convert(ctx, m, root, target, patterns, converter, Mode::Partial)
}

/// Converts every op nested in `root` to a legal one; fails naming the first op (in program
/// order) that is not legal afterwards, with its location.
pub fn apply_full_conversion(
    ctx: &Context,
    m: &mut Module,
    root: OpId,
    target: &ConversionTarget,
    patterns: &ConversionPatternSet,
    converter: &TypeConverter,
) -> Result<ConversionResult, Diagnostic> {
    convert(ctx, m, root, target, patterns, converter, Mode::Full)
}

fn convert(
    ctx: &Context,
    m: &mut Module,
    root: OpId,
    target: &ConversionTarget,
    patterns: &ConversionPatternSet,
    converter: &TypeConverter,
    mode: Mode,
) -> Result<ConversionResult, Diagnostic> {
    if !m.contains_op(root) {
        return Err(Diagnostic::error(
            Location::Unknown,
            "conversion root is not in the module",
        ));
    }
    let mut result = ConversionResult::default();
    let mut sorted: Vec<&Arc<dyn ConversionPattern + Send + Sync>> =
        patterns.patterns.iter().collect();
    sorted.sort_by_key(|p| std::cmp::Reverse(p.benefit()));
    let mut worklist: std::collections::VecDeque<OpId> = m.nested_ops(root).into();
    let mut created: HashSet<OpId> = HashSet::new();
    let mut retyped: Vec<(ValueId, Type)> = Vec::new();
    // Each op gets a bounded number of pattern applications across its replacements.
    let cap = 16 * (worklist.len() + 1);
    while let Some(op) = worklist.pop_front() {
        if !m.contains_op(op) || target.legality(ctx, m, op) == OpLegality::Legal {
            continue;
        }
        if result.converted >= cap {
            return Err(Diagnostic::error(
                m.loc(op).clone(),
                format!(
                    "conversion did not terminate: more than {cap} rewrites (patterns may be producing illegal ops forever)"
                ),
            ));
        }
        let name = m.op_name(op).to_string();
        let operands = m.operands(op).to_vec();
        for p in &sorted {
            if p.root().is_some_and(|r| r != name) {
                continue;
            }
            let mut rw = ConversionRewriter {
                rw: PatternRewriter::new(m, op),
                converter,
                ctx,
                created: Vec::new(),
                retyped: Vec::new(),
            };
            let applied = p.match_and_rewrite(ctx, &mut rw, op, &operands)?;
            let changed = rw.changed();
            let new_ops = std::mem::take(&mut rw.created);
            retyped.append(&mut rw.retyped);
            if applied || changed {
                result.converted += 1;
                for o in new_ops {
                    created.insert(o);
                    worklist.push_back(o);
                }
                if m.contains_op(op) {
                    worklist.push_back(op);
                }
                break;
            }
        }
    }
    // Uses of retyped values by ops that were not created by patterns still expect the old type.
    for (v, old_ty) in retyped {
        if !m.contains_value(v) || m.value_type(v) == &old_ty {
            continue;
        }
        let uses: Vec<_> = m
            .uses(v)
            .iter()
            .copied()
            .filter(|u| !created.contains(&u.op))
            .collect();
        for u in uses {
            let loc = m.loc(u.op).clone();
            let Some(st) = TypeConverter::materialize(&converter.source, ctx, m, v, &old_ty, &loc)
            else {
                return Err(Diagnostic::error(
                    loc,
                    format!(
                        "failed to materialize conversion of a {} value back to {old_ty} for its use by '{}'",
                        m.value_type(v),
                        m.op_name(u.op)
                    ),
                ));
            };
            let cast = m.create_op(st);
            m.insert_op(cast, InsertPoint::Before(u.op)).map_err(|e| {
                Diagnostic::error(loc.clone(), format!("cannot insert materialization: {e}"))
            })?;
            let Some(r) = m.result(cast, 0) else {
                return Err(Diagnostic::error(
                    loc,
                    "source materialization has no result",
                ));
            };
            m.set_operand(u.op, u.index, r)
                .map_err(|e| Diagnostic::error(loc.clone(), e.to_string()))?;
            result.materializations += 1;
        }
    }
    for op in m.nested_ops(root) {
        match target.legality(ctx, m, op) {
            OpLegality::Legal => {}
            OpLegality::Unknown if mode == Mode::Partial => result.unknown_left += 1,
            l => {
                let why = if l == OpLegality::Illegal {
                    " that was explicitly marked illegal"
                } else {
                    ""
                };
                return Err(Diagnostic::error(
                    m.loc(op).clone(),
                    format!("failed to legalize operation '{}'{why}", m.op_name(op)),
                ));
            }
        }
    }
    Ok(result)
}
