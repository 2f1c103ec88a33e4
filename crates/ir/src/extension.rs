//! Types and attributes a dialect defines: a definition per kind with parse, print and verify
//! hooks, the parameter storage a value of the kind carries, and the parser a hook reads with.
//!
//! A dialect type is spelled `!dialect.name` followed by whatever its print hook writes (usually
//! `<...>`), a dialect attribute `#dialect.name...`; both are also legal in MLIR's generic form,
//! where an unregistered dialect's `<...>` body is kept opaque. A value holds its definition, so
//! it prints without a context, and compares and hashes by its dialect, name and parameters, so
//! the context's interner shares equal ones.

use crate::attributes::Attribute;
use crate::context::{Context, RegistryError};
use crate::diag::Diagnostic;
use crate::types::Type;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// Reads a kind's parameters after its `!dialect.name` / `#dialect.name`.
pub type ParseParamsFn = fn(&mut DialectParser<'_, '_>) -> Result<Vec<Attribute>, Diagnostic>;
/// Writes what follows `!dialect.name` / `#dialect.name` for the given parameters.
pub type PrintParamsFn = fn(&[Attribute], &mut dyn fmt::Write) -> fmt::Result;
/// Checks parameters; returns a sentence naming the first problem.
pub type VerifyParamsFn = fn(&[Attribute]) -> Result<(), String>;

/// The definition of one type or attribute kind of a dialect.
#[derive(Clone)]
pub struct KindDef {
    pub dialect: Arc<str>,
    pub name: Arc<str>,
    pub summary: String,
    pub parse: ParseParamsFn,
    pub print: PrintParamsFn,
    pub verify: Option<VerifyParamsFn>,
}

impl KindDef {
    pub fn new(dialect: &str, name: &str, parse: ParseParamsFn, print: PrintParamsFn) -> KindDef {
        KindDef { dialect: dialect.into(), name: name.into(), summary: String::new(), parse, print, verify: None }
    }

    pub fn summary(mut self, s: impl Into<String>) -> Self {
        self.summary = s.into();
        self
    }

    pub fn verifier(mut self, f: VerifyParamsFn) -> Self {
        self.verify = Some(f);
        self
    }

    /// `dialect.name`.
    pub fn full_name(&self) -> String {
        format!("{}.{}", self.dialect, self.name)
    }
}

impl fmt::Debug for KindDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KindDef({}.{})", self.dialect, self.name)
    }
}

/// A value of a dialect-defined type or attribute kind: its definition and its parameters
/// (types ride as [`Attribute::Type`]).
#[derive(Clone)]
pub struct DialectValue {
    def: Arc<KindDef>,
    params: Arc<[Attribute]>,
}

impl DialectValue {
    /// A value of `def` with `params`, checked by the kind's verifier.
    pub fn new(def: &Arc<KindDef>, params: Vec<Attribute>) -> Result<DialectValue, String> {
        if let Some(v) = def.verify {
            v(&params).map_err(|e| format!("invalid {}: {e}", def.full_name()))?;
        }
        Ok(DialectValue { def: def.clone(), params: params.into() })
    }

    /// A value whose parameters the caller guarantees satisfy the kind's verifier (a dialect's
    /// own constructors, which build only valid parameters).
    pub fn trusted(def: &Arc<KindDef>, params: Vec<Attribute>) -> DialectValue {
        DialectValue { def: def.clone(), params: params.into() }
    }

    pub fn def(&self) -> &Arc<KindDef> {
        &self.def
    }

    pub fn dialect(&self) -> &str {
        &self.def.dialect
    }

    pub fn name(&self) -> &str {
        &self.def.name
    }

    pub fn params(&self) -> &[Attribute] {
        &self.params
    }

    /// Whether this is a value of kind `dialect.name`.
    pub fn is(&self, dialect: &str, name: &str) -> bool {
        &*self.def.dialect == dialect && &*self.def.name == name
    }

    /// Writes the spelling after the sigil: `dialect.name` and the print hook's text.
    pub(crate) fn write_body(&self, f: &mut dyn fmt::Write) -> fmt::Result {
        write!(f, "{}.{}", self.def.dialect, self.def.name)?;
        (self.def.print)(&self.params, f)
    }
}

impl PartialEq for DialectValue {
    fn eq(&self, other: &Self) -> bool {
        self.def.dialect == other.def.dialect && self.def.name == other.def.name && self.params == other.params
    }
}

impl Eq for DialectValue {}

impl Hash for DialectValue {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.def.dialect.hash(state);
        self.def.name.hash(state);
        self.params.hash(state);
    }
}

impl fmt::Debug for DialectValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        self.write_body(&mut s)?;
        f.write_str(&s)
    }
}

/// The kinds of one dialect, by name.
type KindTable = std::collections::HashMap<String, Arc<KindDef>>;

/// The type and attribute kinds registered in a context, by dialect, then name.
#[derive(Default, Clone)]
pub(crate) struct KindRegistry {
    types: std::collections::HashMap<String, KindTable>,
    attrs: std::collections::HashMap<String, KindTable>,
}

impl Context {
    /// Registers a type kind of a registered dialect; returns the shared definition values are
    /// built from ([`Type::dialect`]).
    pub fn register_type(&mut self, def: KindDef) -> Result<Arc<KindDef>, RegistryError> {
        self.register_kind(def, false)
    }

    /// Registers an attribute kind of a registered dialect ([`Attribute::dialect`]).
    pub fn register_attr(&mut self, def: KindDef) -> Result<Arc<KindDef>, RegistryError> {
        self.register_kind(def, true)
    }

    /// Registers a definition built once per process and shared by contexts.
    pub fn register_shared_type(&mut self, def: &Arc<KindDef>) -> Result<(), RegistryError> {
        self.insert_kind(def.clone(), false)
    }

    pub fn register_shared_attr(&mut self, def: &Arc<KindDef>) -> Result<(), RegistryError> {
        self.insert_kind(def.clone(), true)
    }

    fn register_kind(&mut self, def: KindDef, attr: bool) -> Result<Arc<KindDef>, RegistryError> {
        let def = Arc::new(def);
        self.insert_kind(def.clone(), attr)?;
        Ok(def)
    }

    fn insert_kind(&mut self, def: Arc<KindDef>, attr: bool) -> Result<(), RegistryError> {
        if !self.is_registered_dialect(&def.dialect) {
            return Err(RegistryError::KindOfUnknownDialect { kind: def.full_name(), dialect: def.dialect.to_string() });
        }
        let kinds = self.kinds_mut();
        let table = if attr { &mut kinds.attrs } else { &mut kinds.types };
        let of_dialect = table.entry(def.dialect.to_string()).or_default();
        if of_dialect.contains_key(&*def.name) {
            return Err(RegistryError::DuplicateKind(def.full_name()));
        }
        of_dialect.insert(def.name.to_string(), def);
        Ok(())
    }

    /// The definition of type kind `dialect.name`, if registered.
    pub fn type_def(&self, dialect: &str, name: &str) -> Option<&Arc<KindDef>> {
        self.kinds().types.get(dialect)?.get(name)
    }

    /// The definition of attribute kind `dialect.name`, if registered.
    pub fn attr_def(&self, dialect: &str, name: &str) -> Option<&Arc<KindDef>> {
        self.kinds().attrs.get(dialect)?.get(name)
    }

    /// The registered type kinds, then attribute kinds, of a dialect, sorted by name.
    pub fn kinds_of_dialect(&self, dialect: &str) -> (Vec<&Arc<KindDef>>, Vec<&Arc<KindDef>>) {
        fn sorted(table: Option<&KindTable>) -> Vec<&Arc<KindDef>> {
            let mut v: Vec<_> = table.into_iter().flat_map(|t| t.values()).collect();
            v.sort_by(|a, b| a.name.cmp(&b.name));
            v
        }
        let k = self.kinds();
        (sorted(k.types.get(dialect)), sorted(k.attrs.get(dialect)))
    }

    /// Whether a dialect defines any type kind (then an unknown `!dialect.x` is an error, not opaque).
    pub fn defines_types(&self, dialect: &str) -> bool {
        self.kinds().types.get(dialect).is_some_and(|t| !t.is_empty())
    }

    /// Whether a dialect defines any attribute kind.
    pub fn defines_attrs(&self, dialect: &str) -> bool {
        self.kinds().attrs.get(dialect).is_some_and(|t| !t.is_empty())
    }
}

impl Type {
    /// A value of a dialect type kind, checked by its verifier.
    pub fn dialect(def: &Arc<KindDef>, params: Vec<Attribute>) -> Result<Type, String> {
        DialectValue::new(def, params).map(|v| Type::new(crate::types::TypeKind::Dialect(v)))
    }

    /// The dialect value, when this is a type of a dialect-defined kind.
    pub fn as_dialect(&self) -> Option<&DialectValue> {
        match self.kind() {
            crate::types::TypeKind::Dialect(v) => Some(v),
            _ => None,
        }
    }

    /// The parameters, when this is a type of kind `dialect.name`.
    pub fn dialect_params(&self, dialect: &str, name: &str) -> Option<&[Attribute]> {
        self.as_dialect().filter(|v| v.is(dialect, name)).map(DialectValue::params)
    }
}

impl Attribute {
    /// A value of a dialect attribute kind, checked by its verifier.
    pub fn dialect(def: &Arc<KindDef>, params: Vec<Attribute>) -> Result<Attribute, String> {
        DialectValue::new(def, params).map(Attribute::Dialect)
    }

    /// The parameters, when this is an attribute of kind `dialect.name`.
    pub fn dialect_params(&self, dialect: &str, name: &str) -> Option<&[Attribute]> {
        match self {
            Attribute::Dialect(v) if v.is(dialect, name) => Some(v.params()),
            _ => None,
        }
    }
}

/// What a parse hook reads its parameters with: the text right after `!dialect.name` or
/// `#dialect.name`, with errors positioned in the file being parsed.
pub struct DialectParser<'p, 'a> {
    pub(crate) p: &'p mut crate::parse::ParserHandle<'a>,
}

impl DialectParser<'_, '_> {
    pub fn context(&self) -> &Context {
        self.p.hook_ctx()
    }

    /// Consumes `s` (after whitespace) if it comes next.
    pub fn eat(&mut self, s: &str) -> bool {
        self.p.hook_eat(s)
    }

    /// Consumes `s` or fails with "expected 's'".
    pub fn expect(&mut self, s: &str) -> Result<(), Diagnostic> {
        self.p.hook_expect(s)
    }

    /// Whether the next text (after whitespace) is `s`, consuming nothing.
    pub fn peek_is(&mut self, s: &str) -> bool {
        self.p.hook_peek_is(s)
    }

    pub fn parse_type(&mut self) -> Result<Type, Diagnostic> {
        self.p.hook_type()
    }

    pub fn parse_attribute(&mut self) -> Result<Attribute, Diagnostic> {
        self.p.hook_attribute()
    }

    /// A decimal or hex integer, with an optional sign.
    pub fn parse_integer(&mut self) -> Result<i64, Diagnostic> {
        self.p.hook_integer()
    }

    /// A quoted string with MLIR's escapes.
    pub fn parse_string(&mut self) -> Result<String, Diagnostic> {
        self.p.hook_string()
    }

    /// A bare identifier (`f32`, `cpu`, `x`).
    pub fn parse_keyword(&mut self) -> Result<String, Diagnostic> {
        self.p.hook_keyword()
    }

    /// The current position (after whitespace), for [`DialectParser::error_at`].
    pub fn mark(&mut self) -> usize {
        self.p.hook_mark()
    }

    /// An error at a position taken with [`DialectParser::mark`].
    pub fn error_at(&self, mark: usize, msg: impl Into<String>) -> Diagnostic {
        self.p.hook_error_at(mark, msg.into())
    }

    /// An error at the current position.
    pub fn error(&self, msg: impl Into<String>) -> Diagnostic {
        self.p.hook_error(msg.into())
    }

    /// Reads sizes written as a tensor type writes them, `2x3x4`, as MLIR's
    /// `parseDimensionList` does (whitespace around the `x` allowed).
    pub fn parse_dimension_list(&mut self) -> Result<Vec<i64>, Diagnostic> {
        let mut dims = vec![self.parse_integer()?];
        while self.eat("x") {
            dims.push(self.parse_integer()?);
        }
        Ok(dims)
    }

    /// Reads `<p, p, ...>` with `item` for each element; nothing at all reads as no elements.
    pub fn parse_angle_list(
        &mut self,
        mut item: impl FnMut(&mut Self) -> Result<Attribute, Diagnostic>,
    ) -> Result<Vec<Attribute>, Diagnostic> {
        let mut out = Vec::new();
        if !self.eat("<") {
            return Ok(out);
        }
        if self.eat(">") {
            return Ok(out);
        }
        loop {
            out.push(item(self)?);
            if !self.eat(",") {
                break;
            }
        }
        self.expect(">")?;
        Ok(out)
    }
}

/// Writes `<a, b, ...>` (nothing for no parameters): types and attributes in their own spelling.
pub fn print_angle_list(params: &[Attribute], f: &mut dyn fmt::Write) -> fmt::Result {
    if params.is_empty() {
        return Ok(());
    }
    f.write_str("<")?;
    for (i, p) in params.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{p}")?;
    }
    f.write_str(">")
}
