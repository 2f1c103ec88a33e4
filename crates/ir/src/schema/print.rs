//! Printing schemas back in PyTorch's canonical spelling.

use std::fmt::{self, Display, Formatter, Write};

use super::{AliasInfo, Argument, DefaultValue, FunctionSchema, OpName, Return, SchemaType};

impl Display for FunctionSchema {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(&self.qualified_name())?;
        f.write_char('(')?;
        let mut first = true;
        let mut separator = |f: &mut Formatter<'_>| {
            if !std::mem::take(&mut first) {
                f.write_str(", ")?;
            }
            Ok::<(), fmt::Error>(())
        };
        let mut in_kwargs = false;
        for arg in &self.args {
            if arg.kwarg_only && !in_kwargs {
                in_kwargs = true;
                separator(f)?;
                f.write_char('*')?;
            }
            separator(f)?;
            write!(f, "{arg}")?;
        }
        if self.is_vararg {
            separator(f)?;
            f.write_str("...")?;
        }
        f.write_str(") -> ")?;
        match (self.returns.as_slice(), self.is_varret) {
            ([single], false) => {
                let text = single.to_string();
                // A lone tuple type needs the return-list parentheses to stay unambiguous.
                if text.starts_with('(') {
                    write!(f, "({text})")
                } else {
                    f.write_str(&text)
                }
            }
            ([], true) => f.write_str("..."),
            (returns, varret) => {
                f.write_char('(')?;
                for (i, r) in returns.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{r}")?;
                }
                if varret {
                    f.write_str(if returns.is_empty() { "..." } else { ", ..." })?;
                }
                f.write_char(')')
            }
        }
    }
}

impl Display for Argument {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write_annotated(f, &self.ty, self.alias.as_ref())?;
        write!(f, " {}", self.name)?;
        if let Some(default) = &self.default {
            write!(f, "={default}")?;
        }
        Ok(())
    }
}

impl Display for Return {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write_annotated(f, &self.ty, self.alias.as_ref())?;
        if let Some(name) = &self.name {
            write!(f, " {name}")?;
        }
        Ok(())
    }
}

/// A type with its alias annotation in the canonical places: `Tensor(a)[]` for the elements of
/// a list, `t[](a!)` for the list itself, `t(a)?` before an optional's `?`.
fn write_annotated(
    f: &mut Formatter<'_>,
    ty: &SchemaType,
    alias: Option<&AliasInfo>,
) -> fmt::Result {
    let Some(alias) = alias else {
        return write!(f, "{ty}");
    };
    let (inner, optional) = match ty {
        SchemaType::Optional(inner) => (&**inner, true),
        other => (other, false),
    };
    match (inner, &alias.contained) {
        (SchemaType::List { elem, size }, Some(contained)) => {
            write!(f, "{elem}{contained}")?;
            write_list_suffix(f, *size)?;
        }
        _ => write!(f, "{inner}")?,
    }
    if alias.has_outer() {
        write_sets(f, alias)?;
    }
    if optional {
        f.write_char('?')?;
    }
    Ok(())
}

fn write_list_suffix(f: &mut Formatter<'_>, size: Option<usize>) -> fmt::Result {
    match size {
        Some(n) => write!(f, "[{n}]"),
        None => f.write_str("[]"),
    }
}

/// The outer sets of an annotation: `(a)`, `(a!)`, `(a -> *)`.
fn write_sets(f: &mut Formatter<'_>, alias: &AliasInfo) -> fmt::Result {
    write!(f, "({}", alias.before.join("|"))?;
    if alias.is_write {
        f.write_char('!')?;
    }
    if alias.after != alias.before {
        write!(f, " -> {}", alias.after.join("|"))?;
    }
    f.write_char(')')
}

impl Display for AliasInfo {
    /// The outer annotation, or the elements' annotation when there is no outer one.
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match &self.contained {
            Some(contained) if !self.has_outer() => write!(f, "{contained}"),
            _ => write_sets(f, self),
        }
    }
}

impl Display for SchemaType {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let list = |f: &mut Formatter<'_>, types: &[SchemaType]| -> fmt::Result {
            for (i, t) in types.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{t}")?;
            }
            Ok(())
        };
        match self {
            SchemaType::Var(name) | SchemaType::Class(name) => f.write_str(name),
            SchemaType::List { elem, size } => {
                write!(f, "{elem}")?;
                write_list_suffix(f, *size)
            }
            SchemaType::Optional(inner) => write!(f, "{inner}?"),
            SchemaType::Tuple(types) => {
                f.write_char('(')?;
                list(f, types)?;
                f.write_char(')')
            }
            SchemaType::Dict(key, value) => write!(f, "Dict({key}, {value})"),
            SchemaType::Future(t) => write!(f, "Future({t})"),
            SchemaType::Await(t) => write!(f, "Await({t})"),
            SchemaType::RRef(t) => write!(f, "RRef({t})"),
            SchemaType::Union(types) => {
                f.write_str("Union(")?;
                list(f, types)?;
                f.write_char(')')
            }
            builtin => {
                let spelling = SchemaType::BUILTINS
                    .iter()
                    .find(|(_, t)| t == builtin)
                    .map_or("?", |(s, _)| *s);
                f.write_str(spelling)
            }
        }
    }
}

impl Display for DefaultValue {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            DefaultValue::None => f.write_str("None"),
            DefaultValue::Bool(true) => f.write_str("True"),
            DefaultValue::Bool(false) => f.write_str("False"),
            DefaultValue::Int(v) => write!(f, "{v}"),
            DefaultValue::Float(v) => f.write_str(&format_float(*v)),
            DefaultValue::Str(s) => write_quoted(f, s),
            DefaultValue::Ident(s) => f.write_str(s),
            DefaultValue::List(items) => {
                f.write_char('[')?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_char(']')
            }
        }
    }
}

impl Display for OpName {
    /// `aten.add.Tensor`, or `aten.relu` for the default overload.
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if !self.namespace.is_empty() {
            write!(f, "{}.", self.namespace)?;
        }
        f.write_str(&self.name)?;
        if !self.overload.is_empty() {
            write!(f, ".{}", self.overload)?;
        }
        Ok(())
    }
}

/// A string in double quotes with C-style escapes.
fn write_quoted(f: &mut Formatter<'_>, s: &str) -> fmt::Result {
    f.write_char('"')?;
    for c in s.chars() {
        match c {
            '\\' => f.write_str("\\\\")?,
            '\'' => f.write_str("\\'")?,
            '"' => f.write_str("\\\"")?,
            '\n' => f.write_str("\\n")?,
            '\t' => f.write_str("\\t")?,
            '\r' => f.write_str("\\r")?,
            '\u{7}' => f.write_str("\\a")?,
            '\u{8}' => f.write_str("\\b")?,
            '\u{c}' => f.write_str("\\f")?,
            '\u{b}' => f.write_str("\\v")?,
            c if (c as u32) < 0x20 || c as u32 == 0x7f => write!(f, "\\{:03o}", c as u32)?,
            c => f.write_char(c)?,
        }
    }
    f.write_char('"')
}

/// A float as C's `%.17g` prints it, with a `.` appended when the result reads as an integer:
/// `1.`, `0.125`, `1.0000000000000001e-05`, `1e-08`, `-inf`, `nan`.
pub(super) fn format_float(v: f64) -> String {
    if v.is_nan() {
        return "nan".to_string();
    }
    if v.is_infinite() {
        return if v < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    const PRECISION: i32 = 17;
    let scientific = format!("{:.*e}", (PRECISION - 1) as usize, v);
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let mut out = if !(-4..PRECISION).contains(&exponent) {
        let mantissa = strip_zeros(mantissa);
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    } else {
        let decimals = (PRECISION - 1 - exponent).max(0) as usize;
        strip_zeros(&format!("{v:.decimals$}")).to_string()
    };
    if out
        .trim_start_matches('-')
        .bytes()
        .all(|b| b.is_ascii_digit())
    {
        out.push('.');
    }
    out
}

/// Removes trailing zeros after a decimal point, and the point if nothing follows it.
fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}
