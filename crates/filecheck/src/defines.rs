//! Command-line variable definitions (`-DNAME=VALUE`, `-D#%fmt,NAME=EXPR`),
//! checked as LLVM checks them: every definition is shown in a "Global
//! defines" buffer (a numeric one with the block it is read as), so that a
//! mistake is reported at its place there, with the pattern parser's words.

use crate::FileCheckError;
use crate::color::Paint;
use crate::numeric::{EvalError, NumericValue};
use crate::pattern::{self, Names, Vars};
use crate::source::{self, Diagnostic, SourceText, Sources, Span};

/// Where one definition sits in the buffer: its start and length, or no
/// length when it has no `=`.
type Place = (usize, Option<usize>);

/// Builds the buffer LLVM reports command-line definitions in.
fn global_defines_buffer(defines: &[String]) -> (String, Vec<Place>) {
    let mut buffer = String::new();
    let mut places = Vec::new();
    for (index, define) in defines.iter().enumerate() {
        let lead = format!("Global define #{}: ", index + 1);
        match define.find('=') {
            None => places.push((buffer.len(), None)),
            Some(equal) if define.starts_with('#') => {
                buffer.push_str(&lead);
                buffer.push_str(define);
                buffer.push_str(" (parsed as: [[");
                let mut block = define.clone();
                block.replace_range(equal..=equal, ":");
                places.push((buffer.len(), Some(block.len())));
                buffer.push_str(&block);
                buffer.push_str("]])\n");
            }
            Some(_) => {
                buffer.push_str(&lead);
                places.push((buffer.len(), Some(define.len())));
                buffer.push_str(define);
                buffer.push('\n');
            }
        }
    }
    (buffer, places)
}

/// Turns `-D` definitions into the variables a run starts with. Every
/// mistake is reported, in order, before the run gives up.
pub(crate) fn parse_defines(defines: &[String], paint: Paint) -> Result<Vars, FileCheckError> {
    let (buffer, places) = global_defines_buffer(defines);
    let mut sources = Sources::default();
    let file = sources.add(SourceText::new("Global defines", buffer.clone()));
    let mut vars = Vars::default();
    let mut names = Names::default();
    let mut report = String::new();
    let error_at = |report: &mut String, at: usize, message: String| {
        let diagnostic = Diagnostic { blank_after: true, ..Diagnostic::error(Span::point(file, at), message) };
        report.push_str(&source::render(&sources, &[diagnostic], paint));
    };
    for (start, len) in places {
        let Some(len) = len.filter(|&len| len > 0) else {
            error_at(&mut report, start, "missing equal sign in global definition".to_string());
            continue;
        };
        let define = &buffer[start..start + len];
        if let Some(block) = define.strip_prefix('#') {
            let (name, format, expr) = match pattern::parse_numeric_definition(&mut names, block, start + 1) {
                Ok(parsed) => parsed,
                Err(e) => {
                    error_at(&mut report, e.offset, e.message);
                    continue;
                }
            };
            let Some(expr) = expr else {
                error_at(&mut report, start + 1, "missing value in numeric variable definition".to_string());
                continue;
            };
            match expr.eval(&vars.numerics) {
                Ok((value, _)) => {
                    vars.numerics.insert(name, NumericValue { value, format });
                }
                Err(EvalError::Undefined { name, .. }) => report.push_str(&format!("undefined variable: {name}\n")),
                Err(EvalError::Overflow) => report.push_str("overflow error\n"),
            }
        } else {
            let (lhs, value) = define.split_once('=').unwrap_or((define, ""));
            match pattern::parse_string_definition_name(lhs, start) {
                Err(e) => error_at(&mut report, e.offset, e.message),
                Ok(()) if vars.numerics.contains_key(lhs) => {
                    error_at(&mut report, start, format!("numeric variable with name '{lhs}' already exists"));
                }
                Ok(()) => {
                    names.strings.insert(lhs.to_string());
                    vars.strings.insert(lhs.to_string(), value.to_string());
                }
            }
        }
    }
    if report.is_empty() { Ok(vars) } else { Err(FileCheckError::InvalidConfig(report)) }
}
