//! ATen operator schemas: the data model of `FunctionSchema` strings, their parser and printer.
//!
//! A schema is one line of PyTorch's own syntax, for example
//! `aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor`. It names an
//! operator (namespace, name, overload), its arguments with types, defaults and alias
//! annotations (`Tensor(a!)` marks an argument that the operator writes), and its returns.
//! [`parse_schema`] turns the text into a [`FunctionSchema`]; its `Display` prints PyTorch's
//! canonical spelling back, so `parse_schema(s)?.to_string() == s` for every canonical line.
//!
//! Alias annotations drive alias analysis: [`FunctionSchema::arg_is_written`],
//! [`FunctionSchema::is_mutable`], [`FunctionSchema::returns_alias_of`].

mod parse;
mod print;

pub use parse::{parse_default, parse_schema, parse_type};

/// An error in a schema string, with the 1-based column (in characters) where it was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("column {column}: {message}")]
pub struct SchemaError {
    /// The 1-based column of the offending character.
    pub column: usize,
    /// What was wrong.
    pub message: String,
}

/// A parsed operator schema.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionSchema {
    /// The namespace before `::` (`aten`); empty when the schema has none.
    pub namespace: String,
    /// The operator name (`add`).
    pub name: String,
    /// The overload name (`Tensor`); empty for the default overload.
    pub overload: String,
    /// The arguments in order; kwarg-only arguments come last.
    pub args: Vec<Argument>,
    /// The returns in order.
    pub returns: Vec<Return>,
    /// The argument list ends with `...`.
    pub is_vararg: bool,
    /// The return list ends with `...`.
    pub is_varret: bool,
}

/// One argument of a schema: `Type(alias) name=default`.
#[derive(Debug, Clone, PartialEq)]
pub struct Argument {
    /// The argument's name.
    pub name: String,
    /// The argument's type, alias annotations removed.
    pub ty: SchemaType,
    /// The default value, if any.
    pub default: Option<DefaultValue>,
    /// The argument follows the `*` marker and can only be passed by keyword.
    pub kwarg_only: bool,
    /// The alias annotation, if any.
    pub alias: Option<AliasInfo>,
}

/// One return of a schema: `Type(alias) [name]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Return {
    /// The return's name, for named returns such as `(Tensor values, Tensor indices)`.
    pub name: Option<String>,
    /// The return's type, alias annotations removed.
    pub ty: SchemaType,
    /// The alias annotation, if any.
    pub alias: Option<AliasInfo>,
}

/// A type in a schema.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SchemaType {
    /// `Tensor`.
    Tensor,
    /// `int`.
    Int,
    /// `SymInt`.
    SymInt,
    /// `float`.
    Float,
    /// `SymFloat`.
    SymFloat,
    /// `bool`.
    Bool,
    /// `SymBool`.
    SymBool,
    /// `str`.
    Str,
    /// `complex`.
    Complex,
    /// `number`.
    Number,
    /// `Scalar`.
    Scalar,
    /// `ScalarType`.
    ScalarType,
    /// `Layout`.
    Layout,
    /// `Device`.
    Device,
    /// `MemoryFormat`.
    MemoryFormat,
    /// `Generator`.
    Generator,
    /// `Storage`.
    Storage,
    /// `Stream`.
    Stream,
    /// `Dimname`.
    Dimname,
    /// `QScheme`.
    QScheme,
    /// `Any`.
    Any,
    /// `AnyEnumType`.
    AnyEnumType,
    /// `NoneType`.
    NoneType,
    /// A type variable such as `t`, `tVal` or `t1` (any name starting with a lowercase letter
    /// that is not a builtin type).
    Var(String),
    /// A TorchScript class, `__torch__.torch.classes.rnn.CellParamsBase`.
    Class(String),
    /// `T[]`, or `T[N]` with a fixed size.
    List {
        /// The element type.
        elem: Box<SchemaType>,
        /// The fixed size of `T[N]`.
        size: Option<usize>,
    },
    /// `T?`.
    Optional(Box<SchemaType>),
    /// `(T1, T2, ...)`.
    Tuple(Vec<SchemaType>),
    /// `Dict(K, V)`.
    Dict(Box<SchemaType>, Box<SchemaType>),
    /// `Future(T)`.
    Future(Box<SchemaType>),
    /// `Await(T)`.
    Await(Box<SchemaType>),
    /// `RRef(T)`.
    RRef(Box<SchemaType>),
    /// `Union(T1, T2, ...)`.
    Union(Vec<SchemaType>),
}

impl SchemaType {
    /// The builtin types spelled by a single word, with their spelling.
    pub const BUILTINS: [(&'static str, SchemaType); 23] = [
        ("Tensor", SchemaType::Tensor),
        ("int", SchemaType::Int),
        ("SymInt", SchemaType::SymInt),
        ("float", SchemaType::Float),
        ("SymFloat", SchemaType::SymFloat),
        ("bool", SchemaType::Bool),
        ("SymBool", SchemaType::SymBool),
        ("str", SchemaType::Str),
        ("complex", SchemaType::Complex),
        ("number", SchemaType::Number),
        ("Scalar", SchemaType::Scalar),
        ("ScalarType", SchemaType::ScalarType),
        ("Layout", SchemaType::Layout),
        ("Device", SchemaType::Device),
        ("MemoryFormat", SchemaType::MemoryFormat),
        ("Generator", SchemaType::Generator),
        ("Storage", SchemaType::Storage),
        ("Stream", SchemaType::Stream),
        ("Dimname", SchemaType::Dimname),
        ("QScheme", SchemaType::QScheme),
        ("Any", SchemaType::Any),
        ("AnyEnumType", SchemaType::AnyEnumType),
        ("NoneType", SchemaType::NoneType),
    ];

    /// `T?` of this type.
    pub fn optional(self) -> SchemaType {
        SchemaType::Optional(Box::new(self))
    }

    /// `T[]` of this type.
    pub fn list(self) -> SchemaType {
        SchemaType::List {
            elem: Box::new(self),
            size: None,
        }
    }

    /// The type inside `T?`, or the type itself.
    pub fn unwrap_optional(&self) -> &SchemaType {
        match self {
            SchemaType::Optional(inner) => inner,
            other => other,
        }
    }

    /// Whether this is `Tensor`, `Tensor?`, or a (possibly optional) list of those.
    pub fn contains_tensor(&self) -> bool {
        match self {
            SchemaType::Tensor => true,
            SchemaType::Optional(inner) => inner.contains_tensor(),
            SchemaType::List { elem, .. } => elem.contains_tensor(),
            _ => false,
        }
    }
}

/// An alias annotation: `(a)`, `(a!)`, `(a|b)`, `(a -> *)`, `(*)`.
///
/// `before` holds the alias sets the value belongs to when the operator is called, `after` the
/// sets after it returns (equal to `before` when the annotation has no `->`). The wildcard set
/// is spelled `"*"`. For a list, `contained` annotates the elements (`Tensor(a)[]`) while the
/// outer sets annotate the list itself (`t[](a!)`); an annotation that only annotates elements
/// has empty outer sets.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct AliasInfo {
    /// The alias sets on entry.
    pub before: Vec<String>,
    /// The alias sets on exit.
    pub after: Vec<String>,
    /// The value is written (`!`).
    pub is_write: bool,
    /// The annotation of a list's elements.
    pub contained: Option<Box<AliasInfo>>,
}

impl AliasInfo {
    /// The wildcard alias set.
    pub const WILDCARD: &'static str = "*";

    /// An annotation `(set)` or `(set!)` for a single set.
    pub fn set(name: &str, is_write: bool) -> AliasInfo {
        AliasInfo {
            before: vec![name.to_string()],
            after: vec![name.to_string()],
            is_write,
            contained: None,
        }
    }

    /// Whether this annotation or the annotation of the elements writes.
    pub fn is_written(&self) -> bool {
        self.is_write || self.contained.as_ref().is_some_and(|c| c.is_written())
    }

    /// Whether the outer annotation is printed (it has sets or a write mark).
    pub fn has_outer(&self) -> bool {
        !self.before.is_empty() || !self.after.is_empty() || self.is_write
    }

    /// The named (non-wildcard) sets on entry, of this annotation and its elements.
    pub fn named_sets(&self) -> impl Iterator<Item = &str> {
        let inner: Box<dyn Iterator<Item = &str>> = match &self.contained {
            Some(c) => Box::new(c.named_sets()),
            None => Box::new(std::iter::empty()),
        };
        self.before
            .iter()
            .map(String::as_str)
            .filter(|s| *s != Self::WILDCARD)
            .chain(inner)
    }
}

/// A default value, kept in a form that prints back in PyTorch's spelling.
#[derive(Debug, Clone, PartialEq)]
pub enum DefaultValue {
    /// `None`.
    None,
    /// `True` or `False`.
    Bool(bool),
    /// An integer: `0`, `-100`.
    Int(i64),
    /// A floating-point number: `1.`, `1e-08`, `inf`, `-inf`, `nan`. Printed like C's `%.17g`
    /// with a trailing `.` when the result looks like an integer.
    Float(f64),
    /// A string, unescaped; printed in double quotes with escapes.
    Str(String),
    /// A list: `[0, 1]`, `[]`.
    List(Vec<DefaultValue>),
    /// A bare identifier such as `contiguous_format` or `long`, printed verbatim.
    Ident(String),
}

/// An operator name in the project's spelling: `aten.add.Tensor`, or `aten.relu` for the
/// default overload.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OpName {
    /// The namespace (`aten`).
    pub namespace: String,
    /// The operator name (`add`).
    pub name: String,
    /// The overload (`Tensor`); empty for the default overload.
    pub overload: String,
}

impl OpName {
    /// Parses `aten.add.Tensor`, `aten.relu`, `aten.addmm.default` (`default` is the empty
    /// overload), `torch.ops.aten.add.Tensor`, and the schema spelling `aten::add.Tensor`.
    pub fn parse(text: &str) -> Result<OpName, SchemaError> {
        parse::parse_op_name(text)
    }

    /// The schema spelling: `aten::add.Tensor`, `aten::relu`.
    pub fn qualified(&self) -> String {
        let mut s = String::new();
        if !self.namespace.is_empty() {
            s.push_str(&self.namespace);
            s.push_str("::");
        }
        s.push_str(&self.name);
        if !self.overload.is_empty() {
            s.push('.');
            s.push_str(&self.overload);
        }
        s
    }
}

impl std::str::FromStr for OpName {
    type Err = SchemaError;
    fn from_str(s: &str) -> Result<OpName, SchemaError> {
        OpName::parse(s)
    }
}

impl std::str::FromStr for FunctionSchema {
    type Err = SchemaError;
    fn from_str(s: &str) -> Result<FunctionSchema, SchemaError> {
        parse_schema(s)
    }
}

impl FunctionSchema {
    /// The project's op name: `aten.add.Tensor`, or `aten.relu` for the default overload.
    pub fn op_name(&self) -> String {
        self.op().to_string()
    }

    /// The operator's name as an [`OpName`].
    pub fn op(&self) -> OpName {
        OpName {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            overload: self.overload.clone(),
        }
    }

    /// The schema spelling of the name: `aten::add.Tensor`.
    pub fn qualified_name(&self) -> String {
        self.op().qualified()
    }

    /// The argument with this name, with its index.
    pub fn arg(&self, name: &str) -> Option<(usize, &Argument)> {
        self.args.iter().enumerate().find(|(_, a)| a.name == name)
    }

    /// Whether argument `index` is written by the operator (`Tensor(a!)`, `Tensor(a!)[]`,
    /// `t[](a!)`). False for an index out of range.
    pub fn arg_is_written(&self, index: usize) -> bool {
        self.args.get(index).is_some_and(Argument::is_written)
    }

    /// Whether the operator writes any of its arguments.
    pub fn is_mutable(&self) -> bool {
        self.args.iter().any(Argument::is_written)
    }

    /// Whether this is an out variant: it writes a kwarg-only argument (`*, Tensor(a!) out`).
    pub fn is_out(&self) -> bool {
        self.args.iter().any(|a| a.kwarg_only && a.is_written())
    }

    /// The indices of the written kwarg-only arguments of an out variant.
    pub fn out_args(&self) -> Vec<usize> {
        (0..self.args.len())
            .filter(|&i| self.args[i].kwarg_only && self.args[i].is_written())
            .collect()
    }

    /// Whether this is an in-place variant: it writes its first argument (`add_.Tensor`,
    /// `relu_`, `__iand__.Tensor`) and is not an out variant.
    pub fn is_inplace(&self) -> bool {
        self.args
            .first()
            .is_some_and(|a| !a.kwarg_only && a.is_written())
            && !self.is_out()
    }

    /// The index of the argument that return `index` aliases: the first argument sharing a
    /// named alias set with it (`-> Tensor(a)` of `Tensor(a) self`, `-> Tensor(a)[]` of
    /// `Tensor(a -> *) self`). Wildcard sets are not matched.
    pub fn returns_alias_of(&self, index: usize) -> Option<usize> {
        let ret = self.returns.get(index)?.alias.as_ref()?;
        let sets: Vec<&str> = ret.named_sets().collect();
        self.args.iter().position(|a| {
            a.alias
                .as_ref()
                .is_some_and(|info| info.named_sets().any(|s| sets.contains(&s)))
        })
    }
}

impl Argument {
    /// Whether the operator writes this argument or its elements.
    pub fn is_written(&self) -> bool {
        self.alias.as_ref().is_some_and(AliasInfo::is_written)
    }
}

impl Return {
    /// Whether the return is annotated as written (`-> Tensor(a!)`).
    pub fn is_written(&self) -> bool {
        self.alias.as_ref().is_some_and(AliasInfo::is_written)
    }
}

/// One schema line of a registry file such as `aten_schemas.txt`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegistryLine<'a> {
    /// The 1-based line number.
    pub line: usize,
    /// The line carries the `core ` tag.
    pub core: bool,
    /// The schema text, tag and surrounding whitespace removed.
    pub schema: &'a str,
}

/// The schema lines of a registry file: blank lines and lines starting with `#` are skipped, a
/// leading `core ` tag is recorded and removed, and surrounding whitespace is trimmed.
pub fn registry_lines(text: &str) -> impl Iterator<Item = RegistryLine<'_>> {
    text.lines().enumerate().filter_map(|(i, raw)| {
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            return None;
        }
        let (core, schema) = match trimmed.strip_prefix("core ") {
            Some(rest) => (true, rest.trim_start()),
            None => (false, trimmed),
        };
        Some(RegistryLine {
            line: i + 1,
            core,
            schema,
        })
    })
}
