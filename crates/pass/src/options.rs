//! Typed pass options: their declarations, their values, and MLIR's `{name=value other=value}` syntax.

use std::fmt;

/// The type of a pass option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionKind {
    Bool,
    Int,
    Float,
    String,
    /// A comma-separated list of strings, `a,b,c`.
    List,
}

impl fmt::Display for OptionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OptionKind::Bool => "bool",
            OptionKind::Int => "int",
            OptionKind::Float => "float",
            OptionKind::String => "string",
            OptionKind::List => "list",
        })
    }
}

/// The value of a pass option.
#[derive(Clone, Debug, PartialEq)]
pub enum OptionValue {
    Bool(bool),
    Int(i64),
    Float(f64),
    String(String),
    List(Vec<String>),
}

impl OptionValue {
    pub fn kind(&self) -> OptionKind {
        match self {
            OptionValue::Bool(_) => OptionKind::Bool,
            OptionValue::Int(_) => OptionKind::Int,
            OptionValue::Float(_) => OptionKind::Float,
            OptionValue::String(_) => OptionKind::String,
            OptionValue::List(_) => OptionKind::List,
        }
    }

    /// Parses the text of a value (already unquoted where it was quoted) as `kind`.
    pub fn parse(kind: OptionKind, text: &str) -> Result<OptionValue, String> {
        match kind {
            OptionKind::Bool => match text {
                "true" | "1" | "on" => Ok(OptionValue::Bool(true)),
                "false" | "0" | "off" => Ok(OptionValue::Bool(false)),
                _ => Err(format!("expected 'true' or 'false', found '{text}'")),
            },
            OptionKind::Int => text
                .parse::<i64>()
                .map(OptionValue::Int)
                .map_err(|_| format!("expected an integer, found '{text}'")),
            OptionKind::Float => text
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .map(OptionValue::Float)
                .ok_or_else(|| format!("expected a number, found '{text}'")),
            OptionKind::String => Ok(OptionValue::String(text.to_string())),
            OptionKind::List => Ok(OptionValue::List(split_list(text))),
        }
    }
}

/// Splits `a,b,"c,d"` at top-level commas, unquoting quoted items; an empty text is an empty list.
fn split_list(text: &str) -> Vec<String> {
    if text.is_empty() {
        return Vec::new();
    }
    let mut items = Vec::new();
    let mut cur = String::new();
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' if quoted => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            ',' if !quoted => items.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    items.push(cur);
    items
}

/// Whether a string must be quoted to survive the option syntax.
fn needs_quotes(s: &str) -> bool {
    s.is_empty()
        || s.chars().any(|c| {
            c.is_whitespace() || matches!(c, '{' | '}' | '"' | '\'' | ',' | '=' | '(' | ')' | '\\')
        })
}

fn write_quoted(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    if !needs_quotes(s) {
        return f.write_str(s);
    }
    f.write_str("\"")?;
    for c in s.chars() {
        if c == '"' || c == '\\' {
            f.write_str("\\")?;
        }
        write!(f, "{c}")?;
    }
    f.write_str("\"")
}

/// The canonical spelling, which [`OptionValue::parse`] reads back (after unquoting).
impl fmt::Display for OptionValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OptionValue::Bool(b) => write!(f, "{b}"),
            OptionValue::Int(i) => write!(f, "{i}"),
            OptionValue::Float(v) => write!(f, "{v}"),
            OptionValue::String(s) => write_quoted(f, s),
            OptionValue::List(items) => {
                for (i, s) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write_quoted(f, s)?;
                }
                Ok(())
            }
        }
    }
}

/// The declaration of one option.
#[derive(Clone, Debug, PartialEq)]
pub struct OptionSpec {
    pub name: String,
    pub kind: OptionKind,
    pub default: OptionValue,
    pub help: String,
}

/// An error in option text: a message and the byte offset in that text where it applies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionError {
    pub offset: usize,
    pub message: String,
}

impl fmt::Display for OptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at column {}", self.message, self.offset + 1)
    }
}

/// A pass's declared options together with the values given to them.
///
/// Declare with the builder methods, fill with [`PassOptions::parse`], read with the typed getters
/// (which fall back to the declared default).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PassOptions {
    specs: Vec<OptionSpec>,
    values: Vec<Option<OptionValue>>,
}

impl PassOptions {
    pub fn new() -> PassOptions {
        PassOptions::default()
    }

    /// Declares an option; a later declaration of the same name replaces the earlier one.
    pub fn declare(mut self, name: &str, default: OptionValue, help: &str) -> Self {
        let spec = OptionSpec {
            name: name.to_string(),
            kind: default.kind(),
            default,
            help: help.to_string(),
        };
        match self.specs.iter().position(|s| s.name == name) {
            Some(i) => {
                self.specs[i] = spec;
                self.values[i] = None;
            }
            None => {
                self.specs.push(spec);
                self.values.push(None);
            }
        }
        self
    }

    pub fn bool(self, name: &str, default: bool, help: &str) -> Self {
        self.declare(name, OptionValue::Bool(default), help)
    }

    pub fn int(self, name: &str, default: i64, help: &str) -> Self {
        self.declare(name, OptionValue::Int(default), help)
    }

    pub fn float(self, name: &str, default: f64, help: &str) -> Self {
        self.declare(name, OptionValue::Float(default), help)
    }

    pub fn string(self, name: &str, default: &str, help: &str) -> Self {
        self.declare(name, OptionValue::String(default.to_string()), help)
    }

    pub fn list(self, name: &str, default: &[&str], help: &str) -> Self {
        self.declare(
            name,
            OptionValue::List(default.iter().map(|s| s.to_string()).collect()),
            help,
        )
    }

    pub fn specs(&self) -> &[OptionSpec] {
        &self.specs
    }

    /// The value of an option: the one given, else the default; `None` for an undeclared name.
    pub fn get(&self, name: &str) -> Option<&OptionValue> {
        let i = self.specs.iter().position(|s| s.name == name)?;
        Some(self.values[i].as_ref().unwrap_or(&self.specs[i].default))
    }

    /// Whether a value was given explicitly.
    pub fn is_set(&self, name: &str) -> bool {
        self.specs
            .iter()
            .position(|s| s.name == name)
            .is_some_and(|i| self.values[i].is_some())
    }

    pub fn get_bool(&self, name: &str) -> Option<bool> {
        match self.get(name)? {
            OptionValue::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn get_int(&self, name: &str) -> Option<i64> {
        match self.get(name)? {
            OptionValue::Int(i) => Some(*i),
            _ => None,
        }
    }

    pub fn get_float(&self, name: &str) -> Option<f64> {
        match self.get(name)? {
            OptionValue::Float(v) => Some(*v),
            OptionValue::Int(i) => Some(*i as f64),
            _ => None,
        }
    }

    pub fn get_string(&self, name: &str) -> Option<&str> {
        match self.get(name)? {
            OptionValue::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn get_list(&self, name: &str) -> Option<&[String]> {
        match self.get(name)? {
            OptionValue::List(l) => Some(l),
            _ => None,
        }
    }

    /// Sets one option from its text.
    pub fn set(&mut self, name: &str, text: &str) -> Result<(), String> {
        let Some(i) = self.specs.iter().position(|s| s.name == name) else {
            let known: Vec<&str> = self.specs.iter().map(|s| s.name.as_str()).collect();
            return Err(if known.is_empty() {
                format!("unknown option '{name}' (the pass takes no options)")
            } else {
                format!("unknown option '{name}' (known: {})", known.join(", "))
            });
        };
        let v = OptionValue::parse(self.specs[i].kind, text).map_err(|e| {
            format!(
                "bad value for option '{name}' ({}): {e}",
                self.specs[i].kind
            )
        })?;
        self.values[i] = Some(v);
        Ok(())
    }

    /// Parses the text between the braces of `{a=1 b=x,y c}`: space-separated `name=value` entries,
    /// a bare `name` meaning `name=true`; values may be quoted (`"a b"`) or braced (`{a b}`).
    pub fn parse(&mut self, text: &str) -> Result<(), OptionError> {
        let bytes = text.as_bytes();
        let mut i = 0;
        loop {
            while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                i += 1;
            }
            if i >= bytes.len() {
                return Ok(());
            }
            let name_start = i;
            while i < bytes.len() && !bytes[i].is_ascii_whitespace() && bytes[i] != b'=' {
                i += 1;
            }
            let name = &text[name_start..i];
            if name.is_empty() {
                return Err(OptionError {
                    offset: name_start,
                    message: "expected an option name".into(),
                });
            }
            let (value, value_start) = if i < bytes.len() && bytes[i] == b'=' {
                i += 1;
                let start = i;
                let raw = scan_value(text, &mut i).map_err(|message| OptionError {
                    offset: start,
                    message,
                })?;
                let is_list = self
                    .specs
                    .iter()
                    .any(|s| s.name == name && s.kind == OptionKind::List);
                (if is_list { raw } else { unquote(&raw) }, start)
            } else {
                match self.specs.iter().find(|s| s.name == name) {
                    Some(s) if s.kind == OptionKind::Bool => ("true".to_string(), name_start),
                    Some(_) => {
                        return Err(OptionError {
                            offset: name_start,
                            message: format!("option '{name}' needs a value ('{name}=...')"),
                        });
                    }
                    None => (String::new(), name_start),
                }
            };
            self.set(name, &value).map_err(|message| {
                let offset = if message.starts_with("unknown option") {
                    name_start
                } else {
                    value_start
                };
                OptionError { offset, message }
            })?;
        }
    }

    /// The options given explicitly, in declaration order: `a=1 b=x` (empty when none).
    pub fn to_option_text(&self) -> String {
        let mut parts = Vec::new();
        for (s, v) in self.specs.iter().zip(&self.values) {
            if let Some(v) = v {
                parts.push(match v {
                    OptionValue::List(items) if items.is_empty() => format!("{}={{}}", s.name),
                    _ => format!("{}={v}", s.name),
                });
            }
        }
        parts.join(" ")
    }
}

/// Reads one value starting at `*i`: quoted, braced or bare up to whitespace. Returns the value
/// text with outer braces removed; quotes stay, for [`unquote`] or `split_list` to remove.
fn scan_value(text: &str, i: &mut usize) -> Result<String, String> {
    let bytes = text.as_bytes();
    let start = *i;
    if *i < bytes.len() && bytes[*i] == b'{' {
        let mut depth = 0usize;
        let mut quoted = false;
        while *i < bytes.len() {
            match bytes[*i] {
                b'"' => quoted = !quoted,
                b'\\' if quoted => *i += 1,
                b'{' if !quoted => depth += 1,
                b'}' if !quoted => {
                    depth -= 1;
                    if depth == 0 {
                        *i += 1;
                        return Ok(text[start + 1..*i - 1].to_string());
                    }
                }
                _ => {}
            }
            *i += 1;
        }
        return Err("unterminated '{' in option value".into());
    }
    // Bare or quoted segments, up to unquoted whitespace.
    let mut quoted = false;
    while *i < bytes.len() {
        match bytes[*i] {
            b'"' => quoted = !quoted,
            b'\\' if quoted => *i += 1,
            c if c.is_ascii_whitespace() && !quoted => break,
            _ => {}
        }
        *i += 1;
    }
    if quoted {
        return Err("unterminated '\"' in option value".into());
    }
    let raw = &text[start..(*i).min(bytes.len())];
    Ok(raw.to_string())
}

/// Removes the quotes of a value that is one quoted string; other text is returned as it is.
fn unquote(raw: &str) -> String {
    let inner = match raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        Some(inner) if raw.len() >= 2 => inner,
        _ => return raw.to_string(),
    };
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else if c == '"' {
            // Two quoted strings side by side (`"a""b"`) are not one string: keep the text as given.
            return raw.to_string();
        } else {
            out.push(c);
        }
    }
    out
}
