//! The context: registered dialects and operation definitions, and the type interner.

use crate::attributes::Attribute;
use crate::format::{AssemblyFormat, CustomDirective, FormatError};
use crate::interface::{Interfaces, OpRef};
use crate::module::{Module, OpId};
use crate::schema::FunctionSchema;
use crate::types::{Type, TypeKind};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex};

/// Properties of an operation that passes rely on.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Traits(u32);

impl Traits {
    /// No side effects: may be removed when unused, and deduplicated.
    pub const PURE: Traits = Traits(1);
    /// Operand order does not matter.
    pub const COMMUTATIVE: Traits = Traits(1 << 1);
    /// Applies a scalar function to each element (with broadcasting).
    pub const ELEMENTWISE: Traits = Traits(1 << 2);
    /// Ends a block.
    pub const TERMINATOR: Traits = Traits(1 << 3);
    /// Regions may not use values defined outside the op.
    pub const ISOLATED_FROM_ABOVE: Traits = Traits(1 << 4);
    /// All tensor operands and results have the same shape.
    pub const SAME_OPERANDS_AND_RESULT_SHAPE: Traits = Traits(1 << 5);
    /// Blocks of the op's regions need no terminator.
    pub const NO_TERMINATOR: Traits = Traits(1 << 6);
    /// Defines a symbol (`sym_name`) in the enclosing symbol table.
    pub const SYMBOL: Traits = Traits(1 << 7);
    /// Produces a constant (its folded value is its `value` attribute).
    pub const CONSTANT_LIKE: Traits = Traits(1 << 8);

    pub const NONE: Traits = Traits(0);

    const NAMES: [(Traits, &'static str); 9] = [
        (Traits::PURE, "pure"),
        (Traits::COMMUTATIVE, "commutative"),
        (Traits::ELEMENTWISE, "elementwise"),
        (Traits::TERMINATOR, "terminator"),
        (Traits::ISOLATED_FROM_ABOVE, "isolated-from-above"),
        (Traits::SAME_OPERANDS_AND_RESULT_SHAPE, "same-operands-and-result-shape"),
        (Traits::NO_TERMINATOR, "no-terminator"),
        (Traits::SYMBOL, "symbol"),
        (Traits::CONSTANT_LIKE, "constant-like"),
    ];

    pub fn contains(self, other: Traits) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for Traits {
    type Output = Traits;
    fn bitor(self, rhs: Traits) -> Traits {
        Traits(self.0 | rhs.0)
    }
}

impl fmt::Debug for Traits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> =
            Traits::NAMES.iter().filter(|(t, _)| self.contains(*t)).map(|(_, n)| *n).collect();
        write!(f, "[{}]", names.join(", "))
    }
}

/// How many operands, results or regions an op takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arity {
    Exact(usize),
    AtLeast(usize),
    Range(usize, usize),
}

impl Arity {
    pub fn admits(self, n: usize) -> bool {
        match self {
            Arity::Exact(k) => n == k,
            Arity::AtLeast(k) => n >= k,
            Arity::Range(lo, hi) => n >= lo && n <= hi,
        }
    }
}

impl fmt::Display for Arity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arity::Exact(k) => write!(f, "{k}"),
            Arity::AtLeast(k) => write!(f, "at least {k}"),
            Arity::Range(lo, hi) => write!(f, "between {lo} and {hi}"),
        }
    }
}

/// What kind of value an attribute must hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttrKind {
    Any,
    Int,
    Float,
    Bool,
    Str,
    Type,
    Array,
    Dict,
    Dense,
    SymbolRef,
}

impl AttrKind {
    pub fn admits(self, a: &Attribute) -> bool {
        matches!(
            (self, a),
            (AttrKind::Any, _)
                | (AttrKind::Int, Attribute::Int(_) | Attribute::SizedInt { .. })
                | (AttrKind::Float, Attribute::Float(_) | Attribute::SizedFloat { .. })
                | (AttrKind::Bool, Attribute::Bool(_))
                | (AttrKind::Str, Attribute::Str(_))
                | (AttrKind::Type, Attribute::Type(_))
                | (AttrKind::Array, Attribute::Array(_))
                | (AttrKind::Dict, Attribute::Dict(_))
                | (AttrKind::Dense, Attribute::Dense(_))
                | (AttrKind::SymbolRef, Attribute::SymbolRef(_))
        )
    }
}

/// A declared attribute of an op.
#[derive(Clone, Debug)]
pub struct AttrSpec {
    pub name: &'static str,
    pub kind: AttrKind,
    pub required: bool,
}

/// A per-op verification hook: returns a message describing the first problem.
pub type VerifyFn = Arc<dyn Fn(&Context, &Module, OpId) -> Result<(), String> + Send + Sync>;

/// Named assembly formats for the common shapes of custom ("pretty") syntax; each stands for a
/// format string (see [`Syntax::format`] and [`crate::format`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax {
    /// `%r = dialect.op %a, %b {attrs} : (A, B) -> R`, regions as `({...})` after the operands.
    Default,
    /// `%r = dialect.op <literal> : T`: the `value` attribute, typed by the result.
    Constant,
    /// `%r = dialect.op %cond -> (T) { ... } else { ... }`.
    IfElse,
    /// `func.func @name(%arg: T) -> R { ... }`.
    Function,
    /// `func.return %a : T`.
    Return,
    /// `module { ... }`.
    Module,
}

/// The dialect an op named `name` belongs to, registered or not: its namespace, what precedes
/// the first `.` (`prim` for `prim.Constant`, `aten` for `aten.add.Tensor`).
pub fn dialect_namespace(name: &str) -> &str {
    name.split('.').next().unwrap_or("")
}

/// The definition of an operation: its signature, traits, hooks and documentation.
#[derive(Clone)]
pub struct OpDef {
    pub name: String,
    pub summary: String,
    pub traits: Traits,
    pub operands: Arity,
    pub results: Arity,
    pub regions: Arity,
    pub attrs: Vec<AttrSpec>,
    pub verify: Option<VerifyFn>,
    /// The custom syntax: a checked assembly format, or why the declared one is malformed
    /// (reported by [`Context::register_op`]).
    format: Result<Arc<AssemblyFormat>, FormatError>,
    /// The ATen schema an op was declared from, if any.
    pub schema: Option<Arc<FunctionSchema>>,
    /// The op this one mirrors (an Edge op's ATen op): it computes the same function, so it
    /// runs the same kernels and has the same interfaces unless it is given its own.
    pub mirrors: Option<OpRef>,
}

impl OpDef {
    pub fn new(name: impl Into<String>) -> OpDef {
        OpDef {
            name: name.into(),
            summary: String::new(),
            traits: Traits::NONE,
            operands: Arity::AtLeast(0),
            results: Arity::AtLeast(0),
            regions: Arity::Exact(0),
            attrs: Vec::new(),
            verify: None,
            format: AssemblyFormat::of_syntax(Syntax::Default),
            schema: None,
            mirrors: None,
        }
    }

    pub fn summary(mut self, s: impl Into<String>) -> Self {
        self.summary = s.into();
        self
    }

    pub fn traits(mut self, t: Traits) -> Self {
        self.traits = self.traits | t;
        self
    }

    pub fn operands(mut self, a: Arity) -> Self {
        self.operands = a;
        self
    }

    pub fn results(mut self, a: Arity) -> Self {
        self.results = a;
        self
    }

    pub fn regions(mut self, a: Arity) -> Self {
        self.regions = a;
        self
    }

    pub fn attr(mut self, name: &'static str, kind: AttrKind, required: bool) -> Self {
        self.attrs.push(AttrSpec { name, kind, required });
        self
    }

    /// Gives the op one of the named formats.
    pub fn syntax(mut self, s: Syntax) -> Self {
        self.format = AssemblyFormat::of_syntax(s);
        self
    }

    /// Gives the op a custom syntax written in the format language (see [`crate::format`]). A
    /// malformed format makes [`Context::register_op`] fail; [`OpDef::try_assembly_format`]
    /// reports it at once.
    pub fn assembly_format(mut self, format: &str) -> Self {
        self.format = AssemblyFormat::parse(format).map(Arc::new);
        self
    }

    /// Like [`OpDef::assembly_format`], returning the format's error at once.
    pub fn try_assembly_format(self, format: &str) -> Result<Self, FormatError> {
        let def = self.assembly_format(format);
        def.format.clone()?;
        Ok(def)
    }

    /// The op's assembly format, when it is well formed.
    pub fn format(&self) -> Option<&Arc<AssemblyFormat>> {
        self.format.as_ref().ok()
    }

    pub fn schema(mut self, s: FunctionSchema) -> Self {
        self.schema = Some(Arc::new(s));
        self
    }

    /// Declares the op that this one mirrors (see [`OpDef::mirrors`]).
    pub fn mirroring(mut self, op: OpRef) -> Self {
        self.mirrors = Some(op);
        self
    }

    pub fn verifier(
        mut self,
        f: impl Fn(&Context, &Module, OpId) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.verify = Some(Arc::new(f));
        self
    }

    pub fn dialect(&self) -> &str {
        dialect_namespace(&self.name)
    }

    pub fn has_trait(&self, t: Traits) -> bool {
        self.traits.contains(t)
    }
}

impl fmt::Debug for OpDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpDef")
            .field("name", &self.name)
            .field("traits", &self.traits)
            .field("operands", &self.operands)
            .field("results", &self.results)
            .field("regions", &self.regions)
            .finish()
    }
}

/// A registered dialect.
#[derive(Clone, Debug)]
pub struct DialectInfo {
    pub name: String,
    pub summary: String,
}

/// Errors from registering dialects and ops.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RegistryError {
    #[error("operation '{0}' is already registered")]
    DuplicateOp(String),
    #[error("operation '{op}' belongs to dialect '{dialect}', which is not registered")]
    UnknownDialect { op: String, dialect: String },
    #[error("assembly format of operation '{op}', {error}")]
    Format { op: String, error: FormatError },
    #[error("type or attribute kind '{0}' is already registered")]
    DuplicateKind(String),
    #[error("type or attribute kind '{kind}' belongs to dialect '{dialect}', which is not registered")]
    KindOfUnknownDialect { kind: String, dialect: String },
}

/// Registered dialects and operations, and interned types. Shared read-only once built.
pub struct Context {
    dialects: HashMap<String, DialectInfo>,
    ops: HashMap<String, Arc<OpDef>>,
    allow_unregistered: bool,
    types: Mutex<HashSet<Type>>,
    interfaces: Interfaces,
    kinds: crate::extension::KindRegistry,
    directives: HashMap<String, Arc<dyn CustomDirective>>,
}

impl Default for Context {
    fn default() -> Self {
        Context::new()
    }
}

impl Context {
    /// A context with the builtin dialects (`builtin`, `func`) registered.
    pub fn new() -> Context {
        let mut ctx = Context {
            dialects: HashMap::new(),
            ops: HashMap::new(),
            allow_unregistered: false,
            types: Mutex::new(HashSet::new()),
            interfaces: Interfaces::default(),
            kinds: Default::default(),
            directives: HashMap::new(),
        };
        crate::format::register_builtin_directives(&mut ctx);
        crate::builtin::register(&mut ctx);
        ctx
    }

    pub(crate) fn kinds(&self) -> &crate::extension::KindRegistry {
        &self.kinds
    }

    pub(crate) fn kinds_mut(&mut self) -> &mut crate::extension::KindRegistry {
        &mut self.kinds
    }

    pub fn register_dialect(&mut self, name: &str, summary: &str) {
        self.dialects
            .entry(name.to_string())
            .or_insert_with(|| DialectInfo { name: name.to_string(), summary: summary.to_string() });
    }

    pub fn register_op(&mut self, def: OpDef) -> Result<(), RegistryError> {
        let dialect = def.dialect().to_string();
        if !self.dialects.contains_key(&dialect) {
            return Err(RegistryError::UnknownDialect { op: def.name.clone(), dialect });
        }
        if self.ops.contains_key(&def.name) {
            return Err(RegistryError::DuplicateOp(def.name.clone()));
        }
        self.check_format(&def)?;
        self.ops.insert(def.name.clone(), Arc::new(def));
        Ok(())
    }

    /// Registers a definition shared with other contexts (a dialect that declares thousands of
    /// ops builds their definitions once per process and registers the same ones in each).
    pub fn register_shared(&mut self, def: Arc<OpDef>) -> Result<(), RegistryError> {
        if !self.dialects.contains_key(def.dialect()) {
            return Err(RegistryError::UnknownDialect { op: def.name.clone(), dialect: def.dialect().to_string() });
        }
        if self.ops.contains_key(&def.name) {
            return Err(RegistryError::DuplicateOp(def.name.clone()));
        }
        self.check_format(&def)?;
        self.ops.insert(def.name.clone(), def);
        Ok(())
    }

    /// Checks an op's format: well formed, its custom directives registered, its fixed types valid.
    fn check_format(&self, def: &OpDef) -> Result<(), RegistryError> {
        let error = match &def.format {
            Ok(f) => match f.check_in(self) {
                Ok(()) => return Ok(()),
                Err(e) => e,
            },
            Err(e) => e.clone(),
        };
        Err(RegistryError::Format { op: def.name.clone(), error })
    }

    /// Registers a custom directive, usable as `custom<name>` by ops registered after it.
    pub fn register_custom_directive(&mut self, name: &str, directive: Arc<dyn CustomDirective>) {
        self.directives.insert(name.to_string(), directive);
    }

    /// The custom directive registered under `name`.
    pub fn custom_directive(&self, name: &str) -> Option<&Arc<dyn CustomDirective>> {
        self.directives.get(name)
    }

    /// The definition of an op, named by its handle or its name.
    pub fn op_def(&self, name: impl AsRef<str>) -> Option<&Arc<OpDef>> {
        self.ops.get(name.as_ref())
    }

    pub fn is_registered_dialect(&self, name: &str) -> bool {
        self.dialects.contains_key(name)
    }

    pub fn dialects(&self) -> impl Iterator<Item = &DialectInfo> {
        self.dialects.values()
    }

    pub fn ops(&self) -> impl Iterator<Item = &Arc<OpDef>> {
        self.ops.values()
    }

    /// Op names of one dialect, sorted.
    pub fn ops_of_dialect(&self, dialect: &str) -> Vec<&str> {
        let mut v: Vec<&str> = self
            .ops
            .values()
            .filter(|d| d.dialect() == dialect)
            .map(|d| d.name.as_str())
            .collect();
        v.sort_unstable();
        v
    }

    /// Whether ops of unregistered dialects are accepted (as `mlir-opt --allow-unregistered-dialect`).
    pub fn allow_unregistered(&self) -> bool {
        self.allow_unregistered
    }

    pub fn set_allow_unregistered(&mut self, allow: bool) {
        self.allow_unregistered = allow;
    }

    /// Returns the canonical shared instance of a type.
    pub fn intern(&self, kind: TypeKind) -> Type {
        let t = Type::new(kind);
        let Ok(mut set) = self.types.lock() else { return t };
        if let Some(existing) = set.get(&t) {
            return existing.clone();
        }
        set.insert(t.clone());
        t
    }

    pub fn has_trait(&self, op_name: &str, t: Traits) -> bool {
        self.op_def(op_name).is_some_and(|d| d.has_trait(t))
    }

    /// Attaches the interface value `value` to `op` (replacing an earlier value of the same
    /// interface type). Interfaces are attached while the context is built, by the crate that
    /// implements them; the op need not be registered yet.
    pub fn attach<I: std::any::Any + Send + Sync>(&mut self, op: impl AsRef<str>, value: I) {
        self.interfaces.insert(op.as_ref(), value);
    }

    /// The interface `I` of the op named `op`: its own, else that of the op it mirrors.
    pub fn interface<I: std::any::Any + Send + Sync>(&self, op: &str) -> Option<&I> {
        if let Some(i) = self.interfaces.get::<I>(op) {
            return Some(i);
        }
        let mirrored = self.ops.get(op)?.mirrors?;
        self.interfaces.get::<I>(mirrored.name())
    }

    /// The interface `I` of the op `op` of `m` (see [`Context::interface`]).
    pub fn interface_of<I: std::any::Any + Send + Sync>(&self, m: &Module, op: OpId) -> Option<&I> {
        self.interface::<I>(m.op_name(op))
    }

    /// Every op with the interface `I` attached directly, with its value (in no particular order).
    pub fn interfaces<I: std::any::Any + Send + Sync>(&self) -> impl Iterator<Item = (&str, &I)> {
        self.interfaces.all::<I>()
    }

    /// The op of `dialect` that is `op` or mirrors it (`edge.slice.Tensor` for
    /// `aten.slice.Tensor` in `edge`), if the context registers one.
    pub fn mirror_in(&self, dialect: &str, op: OpRef) -> Option<&str> {
        if self.op_def(op).is_some_and(|d| d.dialect() == dialect) {
            return Some(op.name());
        }
        self.ops
            .values()
            .find(|d| d.mirrors == Some(op) && d.dialect() == dialect)
            .map(|d| d.name.as_str())
    }

    /// The op `name` mirrors (an Edge op's ATen op), or `name` itself.
    pub fn mirrored<'a>(&self, name: &'a str) -> &'a str {
        match self.ops.get(name).and_then(|d| d.mirrors) {
            Some(m) => m.name(),
            None => name,
        }
    }
}
