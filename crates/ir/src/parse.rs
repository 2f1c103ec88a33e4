//! The text parser: MLIR's generic form, the custom forms of registered ops, aliases and locations.

use crate::attributes::{Attribute, DenseAttr};
use crate::builtin::{ARG_ATTRS, FUNC, FUNCTION_TYPE, MODULE, RES_ATTRS, SYM_NAME};
use crate::context::{Context, Syntax};
use crate::diag::Diagnostic;
use crate::dtype::DType;
use crate::location::Location;
use crate::module::{BlockId, InsertPoint, Module, OpId, OperationState, RegionId, ValueId};
use crate::types::{Dim, TensorType, Type, TypeKind};
use std::collections::HashMap;
use std::sync::Arc;

/// Parses a whole file into a module. Top-level ops other than a single `module` are wrapped in one.
pub fn parse_module(ctx: &Context, source: &str, filename: &str) -> Result<Module, Diagnostic> {
    parse_module_with_offset(ctx, source, filename, 0)
}

/// Like [`parse_module`], with reported line numbers shifted by `line_offset` (for split input files).
pub fn parse_module_with_offset(ctx: &Context, source: &str, filename: &str, line_offset: u32) -> Result<Module, Diagnostic> {
    let mut p = Parser::new(ctx, source, filename, line_offset);
    p.parse_top()?;
    Ok(p.m)
}

/// Parses a type on its own (e.g. from a command-line option).
pub fn parse_type(ctx: &Context, text: &str) -> Result<Type, Diagnostic> {
    let mut p = Parser::new(ctx, text, "<type>", 0);
    p.ws();
    let t = p.parse_type()?;
    p.ws();
    if !p.eof() {
        return Err(p.err("unexpected text after type"));
    }
    Ok(t)
}

/// Parses an attribute on its own.
pub fn parse_attribute(ctx: &Context, text: &str) -> Result<Attribute, Diagnostic> {
    let mut p = Parser::new(ctx, text, "<attribute>", 0);
    p.ws();
    let a = p.parse_attr()?;
    p.ws();
    if !p.eof() {
        return Err(p.err("unexpected text after attribute"));
    }
    Ok(a)
}

type PResult<T> = Result<T, Diagnostic>;

/// Names visible in one region nesting level.
#[derive(Default)]
struct Scope {
    /// A defined name and its values (several for `%x:2`).
    defs: HashMap<String, Vec<ValueId>>,
    /// Uses seen before their definition: name (with `#i`) -> placeholder and where it was used.
    forward: HashMap<String, (ValueId, Location)>,
    /// Values of this scope are invisible to nested isolated scopes.
    isolated: bool,
}

/// An operand reference before its type is known.
struct OperandRef {
    name: String,
    index: Option<usize>,
    loc: Location,
}

struct Parser<'a> {
    ctx: &'a Context,
    src: &'a str,
    bytes: &'a [u8],
    pos: usize,
    file: Arc<str>,
    line_offset: u32,
    line_starts: Vec<usize>,
    m: Module,
    scopes: Vec<Scope>,
    type_aliases: HashMap<String, Type>,
    attr_aliases: HashMap<String, Attribute>,
    loc_aliases: HashMap<String, Location>,
    /// Explicit `loc(#alias)` uses resolved after the whole file (aliases may follow their use).
    pending_loc_aliases: Vec<(OpId, String, Location)>,
    /// Ops whose location is their position in this file, so a later `loc(...)` may replace it.
    depth: usize,
}

const MAX_DEPTH: usize = 256;

fn is_id_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_id_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'.' | b'-')
}

fn is_suffix_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'.' | b'-')
}

impl<'a> Parser<'a> {
    fn new(ctx: &'a Context, src: &'a str, filename: &str, line_offset: u32) -> Parser<'a> {
        let mut line_starts = vec![0];
        for (i, b) in src.bytes().enumerate() {
            if b == b'\n' {
                line_starts.push(i + 1);
            }
        }
        Parser {
            ctx,
            src,
            bytes: src.as_bytes(),
            pos: 0,
            file: filename.into(),
            line_offset,
            line_starts,
            m: Module::new(),
            scopes: Vec::new(),
            type_aliases: HashMap::new(),
            attr_aliases: HashMap::new(),
            loc_aliases: HashMap::new(),
            pending_loc_aliases: Vec::new(),
            depth: 0,
        }
    }

    // ----- positions and errors -----

    fn loc_at(&self, pos: usize) -> Location {
        let line = self.line_starts.partition_point(|&s| s <= pos);
        let start = self.line_starts[line - 1];
        let col = self.src[start..pos.min(self.src.len())].chars().count() + 1;
        Location::File { file: self.file.clone(), line: line as u32 + self.line_offset, col: col as u32 }
    }

    fn here(&self) -> Location {
        self.loc_at(self.pos)
    }

    fn err(&self, msg: impl Into<String>) -> Diagnostic {
        Diagnostic::error(self.here(), msg)
    }

    fn err_at(&self, pos: usize, msg: impl Into<String>) -> Diagnostic {
        Diagnostic::error(self.loc_at(pos), msg)
    }

    // ----- characters -----

    fn eof(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    fn peek(&self) -> u8 {
        self.bytes.get(self.pos).copied().unwrap_or(0)
    }

    fn peek_at(&self, k: usize) -> u8 {
        self.bytes.get(self.pos + k).copied().unwrap_or(0)
    }

    /// Skips whitespace and `//` comments.
    fn ws(&mut self) {
        loop {
            while self.pos < self.bytes.len() && self.bytes[self.pos].is_ascii_whitespace() {
                self.pos += 1;
            }
            if self.bytes[self.pos..].starts_with(b"//") {
                while self.pos < self.bytes.len() && self.bytes[self.pos] != b'\n' {
                    self.pos += 1;
                }
            } else {
                break;
            }
        }
    }

    fn eat(&mut self, s: &str) -> bool {
        self.ws();
        if self.bytes[self.pos..].starts_with(s.as_bytes()) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    /// Eats a keyword: `s` not followed by an identifier character.
    fn eat_kw(&mut self, s: &str) -> bool {
        self.ws();
        if self.bytes[self.pos..].starts_with(s.as_bytes())
            && !self.bytes.get(self.pos + s.len()).copied().is_some_and(is_id_char)
        {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, s: &str) -> PResult<()> {
        if self.eat(s) {
            Ok(())
        } else {
            Err(self.err(format!("expected '{s}'{}", self.found())))
        }
    }

    fn found(&self) -> String {
        if self.eof() {
            ", found end of input".into()
        } else {
            let rest = &self.src[self.pos..];
            let tok: String = rest.chars().take_while(|c| !c.is_whitespace()).take(20).collect();
            format!(", found '{tok}'")
        }
    }

    fn bare_id(&mut self) -> Option<&'a str> {
        self.ws();
        let start = self.pos;
        if !is_id_start(self.peek()) {
            return None;
        }
        while is_id_char(self.peek()) {
            self.pos += 1;
        }
        Some(&self.src[start..self.pos])
    }

    /// A suffix identifier after `%`, `^`, `#`, `!` or `@`: letters, digits and `_$.-`.
    fn suffix_id(&mut self) -> Option<&'a str> {
        let start = self.pos;
        while is_suffix_char(self.peek()) {
            self.pos += 1;
        }
        if self.pos == start { None } else { Some(&self.src[start..self.pos]) }
    }

    fn string_lit(&mut self) -> PResult<String> {
        self.ws();
        let start = self.pos;
        if self.peek() != b'"' {
            return Err(self.err(format!("expected string literal{}", self.found())));
        }
        self.pos += 1;
        let mut bytes = Vec::new();
        loop {
            match self.peek() {
                0 if self.eof() => return Err(self.err_at(start, "unterminated string literal")),
                b'\n' => return Err(self.err_at(start, "unterminated string literal")),
                b'"' => {
                    self.pos += 1;
                    break;
                }
                b'\\' => {
                    let c = self.peek_at(1);
                    match c {
                        b'"' | b'\\' => {
                            bytes.push(c);
                            self.pos += 2;
                        }
                        b'n' => {
                            bytes.push(b'\n');
                            self.pos += 2;
                        }
                        b't' => {
                            bytes.push(b'\t');
                            self.pos += 2;
                        }
                        _ => {
                            let hex = self.src.get(self.pos + 1..self.pos + 3).unwrap_or("");
                            let v = u8::from_str_radix(hex, 16)
                                .map_err(|_| self.err("invalid escape sequence in string literal"))?;
                            bytes.push(v);
                            self.pos += 3;
                        }
                    }
                }
                c => {
                    bytes.push(c);
                    self.pos += 1;
                }
            }
        }
        String::from_utf8(bytes).map_err(|_| self.err_at(start, "string literal is not valid UTF-8"))
    }

    /// A number token: returns its text (sign included) and whether it is a float.
    fn number_text(&mut self) -> Option<(&'a str, bool)> {
        self.ws();
        let start = self.pos;
        if matches!(self.peek(), b'-' | b'+') {
            self.pos += 1;
        }
        if !self.peek().is_ascii_digit() {
            self.pos = start;
            return None;
        }
        if self.peek() == b'0' && matches!(self.peek_at(1), b'x' | b'X') && self.peek_at(2).is_ascii_hexdigit() {
            self.pos += 2;
            while self.peek().is_ascii_hexdigit() {
                self.pos += 1;
            }
            return Some((&self.src[start..self.pos], false));
        }
        while self.peek().is_ascii_digit() {
            self.pos += 1;
        }
        let mut float = false;
        if self.peek() == b'.' {
            float = true;
            self.pos += 1;
            while self.peek().is_ascii_digit() {
                self.pos += 1;
            }
            if matches!(self.peek(), b'e' | b'E') {
                let save = self.pos;
                self.pos += 1;
                if matches!(self.peek(), b'+' | b'-') {
                    self.pos += 1;
                }
                if self.peek().is_ascii_digit() {
                    while self.peek().is_ascii_digit() {
                        self.pos += 1;
                    }
                } else {
                    self.pos = save;
                }
            }
        }
        Some((&self.src[start..self.pos], float))
    }

    fn parse_i64(&self, text: &str, pos: usize) -> PResult<i64> {
        let (neg, digits) = match text.strip_prefix('-') {
            Some(d) => (true, d),
            None => (false, text.strip_prefix('+').unwrap_or(text)),
        };
        let mag: u64 = if let Some(h) = digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
            u64::from_str_radix(h, 16).map_err(|_| self.err_at(pos, "integer literal out of range"))?
        } else {
            digits.parse().map_err(|_| self.err_at(pos, "integer literal out of range"))?
        };
        if neg {
            if mag > i64::MAX as u64 + 1 {
                return Err(self.err_at(pos, "integer literal out of range for i64"));
            }
            Ok((mag as i64).wrapping_neg())
        } else {
            i64::try_from(mag).map_err(|_| self.err_at(pos, "integer literal out of range for i64"))
        }
    }

    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err("nesting too deep"));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    // ----- top level -----

    fn parse_top(&mut self) -> PResult<()> {
        self.scopes.push(Scope { isolated: true, ..Scope::default() });
        let body = self.m.body();
        loop {
            self.ws();
            if self.eof() {
                break;
            }
            match self.peek() {
                b'#' if self.is_alias_definition() => self.parse_attr_alias_def()?,
                b'!' if self.is_alias_definition() => self.parse_type_alias_def()?,
                _ => {
                    self.parse_operation(body)?;
                }
            }
        }
        self.close_scope()?;
        for (op, name, use_loc) in std::mem::take(&mut self.pending_loc_aliases) {
            let loc = self
                .loc_aliases
                .get(&name)
                .cloned()
                .ok_or_else(|| Diagnostic::error(use_loc, format!("undefined location alias '#{name}'")))?;
            self.m.set_loc(op, loc);
        }
        self.unwrap_single_module()
    }

    /// `#name = ...` or `!name = ...` at the top level.
    fn is_alias_definition(&self) -> bool {
        let mut k = self.pos + 1;
        while k < self.bytes.len() && is_suffix_char(self.bytes[k]) {
            k += 1;
        }
        while k < self.bytes.len() && (self.bytes[k] == b' ' || self.bytes[k] == b'\t') {
            k += 1;
        }
        k < self.bytes.len() && self.bytes[k] == b'='
    }

    fn parse_attr_alias_def(&mut self) -> PResult<()> {
        let start = self.pos;
        self.pos += 1;
        let name = self.suffix_id().ok_or_else(|| self.err("expected alias name"))?.to_string();
        self.expect("=")?;
        if self.attr_aliases.contains_key(&name) || self.loc_aliases.contains_key(&name) {
            return Err(self.err_at(start, format!("redefinition of attribute alias '#{name}'")));
        }
        if self.eat_kw("loc") {
            let loc = self.parse_loc_body(None)?;
            self.loc_aliases.insert(name, loc);
        } else {
            let a = self.parse_attr()?;
            self.attr_aliases.insert(name, a);
        }
        Ok(())
    }

    fn parse_type_alias_def(&mut self) -> PResult<()> {
        let start = self.pos;
        self.pos += 1;
        let name = self.suffix_id().ok_or_else(|| self.err("expected alias name"))?.to_string();
        self.expect("=")?;
        if self.type_aliases.contains_key(&name) {
            return Err(self.err_at(start, format!("redefinition of type alias '!{name}'")));
        }
        let t = self.parse_type()?;
        self.type_aliases.insert(name, t);
        Ok(())
    }

    /// A file holding exactly one `module` op becomes that module.
    fn unwrap_single_module(&mut self) -> PResult<()> {
        let body = self.m.body();
        let ops = self.m.block_ops(body);
        if ops.len() != 1 || self.m.op_name(ops[0]) != MODULE {
            return Ok(());
        }
        let inner = ops[0];
        let top = self.m.top();
        let inner_region = self.m.regions(inner)[0];
        let top_region = self.m.regions(top)[0];
        // Swap the outer module's empty body for the inner module's body.
        self.m.detach_op(inner);
        let inner_blocks = self.m.region_blocks(inner_region).to_vec();
        if inner_blocks.len() != 1 {
            return Err(Diagnostic::error(self.m.loc(inner).clone(), "'builtin.module' expects one block"));
        }
        let attrs = self.m.attributes(inner).to_vec();
        let loc = self.m.loc(inner).clone();
        let holder = self.m.create_op(OperationState::new(MODULE).regions(1));
        let holder_region = self.m.regions(holder)[0];
        self.m.take_region_blocks(top_region, holder_region);
        self.m.take_region_blocks(inner_region, top_region);
        for (k, v) in attrs {
            self.m.set_attr(top, &k, v);
        }
        self.m.set_loc(top, loc);
        // Both are detached, unused shells now.
        let _ = self.m.erase_op(inner);
        let _ = self.m.erase_op(holder);
        Ok(())
    }

    // ----- SSA scopes -----

    fn open_scope(&mut self, isolated: bool) {
        self.scopes.push(Scope { isolated, ..Scope::default() });
    }

    /// Closes a scope; unresolved forward references move outwards unless the scope is isolated.
    fn close_scope(&mut self) -> PResult<()> {
        let Some(scope) = self.scopes.pop() else { return Ok(()) };
        let mut pending: Vec<(String, (ValueId, Location))> = scope.forward.into_iter().collect();
        pending.sort_by_key(|(_, (_, l))| l.file_line_col().map(|(_, a, b)| (a, b)));
        if let Some((name, (_, loc))) = pending.first() {
            if scope.isolated || self.scopes.is_empty() {
                return Err(Diagnostic::error(loc.clone(), format!("use of undeclared SSA value name '%{name}'")));
            }
        }
        if let Some(parent) = self.scopes.last_mut() {
            for (k, v) in pending {
                parent.forward.entry(k).or_insert(v);
            }
        }
        Ok(())
    }

    fn lookup(&self, name: &str) -> Option<&Vec<ValueId>> {
        for s in self.scopes.iter().rev() {
            if let Some(v) = s.defs.get(name) {
                return Some(v);
            }
            if s.isolated {
                break;
            }
        }
        None
    }

    /// Resolves an operand reference with its (now known) type.
    fn resolve(&mut self, r: &OperandRef, ty: &Type) -> PResult<ValueId> {
        let found = self.lookup(&r.name).cloned();
        let v = match found {
            Some(vals) => {
                let i = r.index.unwrap_or(0);
                if r.index.is_none() && vals.len() > 1 {
                    return Err(Diagnostic::error(
                        r.loc.clone(),
                        format!("'%{}' has {} results: refer to one as '%{}#N'", r.name, vals.len(), r.name),
                    ));
                }
                *vals.get(i).ok_or_else(|| {
                    Diagnostic::error(
                        r.loc.clone(),
                        format!("result number {i} of '%{}' out of range (it has {})", r.name, vals.len()),
                    )
                })?
            }
            None => {
                let key = match r.index {
                    Some(i) => format!("{}#{i}", r.name),
                    None => r.name.clone(),
                };
                if let Some((v, _)) = self.find_forward(&key) {
                    v
                } else {
                    let v = self.m.create_placeholder(ty.clone());
                    if let Some(s) = self.scopes.last_mut() {
                        s.forward.insert(key, (v, r.loc.clone()));
                    }
                    v
                }
            }
        };
        if self.m.value_type(v) != ty {
            return Err(Diagnostic::error(
                r.loc.clone(),
                format!(
                    "use of value '%{}' expects different type than prior uses: '{ty}' vs '{}'",
                    r.name,
                    self.m.value_type(v)
                ),
            ));
        }
        Ok(v)
    }

    fn find_forward(&self, key: &str) -> Option<(ValueId, Location)> {
        for s in self.scopes.iter().rev() {
            if let Some(f) = s.forward.get(key) {
                return Some(f.clone());
            }
            if s.isolated {
                break;
            }
        }
        None
    }

    /// Defines `%name` (a group of values for `%name:N`) in the innermost scope.
    fn define(&mut self, name: &str, values: Vec<ValueId>, loc: &Location) -> PResult<()> {
        let scope_len = self.scopes.len();
        let redefined = self.scopes.last().is_some_and(|s| s.defs.contains_key(name));
        if redefined {
            return Err(Diagnostic::error(loc.clone(), format!("redefinition of SSA value '%{name}'")));
        }
        // Resolve forward references made in this scope or nested (non-isolated) ones.
        let keys: Vec<(String, ValueId)> = if values.len() == 1 {
            vec![(name.to_string(), values[0])]
        } else {
            values.iter().enumerate().map(|(i, &v)| (format!("{name}#{i}"), v)).collect()
        };
        for (key, v) in keys {
            let mut idx = scope_len;
            while idx > 0 {
                idx -= 1;
                if let Some((ph, use_loc)) = self.scopes[idx].forward.remove(&key) {
                    if self.m.value_type(ph) != self.m.value_type(v) {
                        return Err(Diagnostic::error(
                            use_loc,
                            format!(
                                "definition of '%{name}' has type '{}' but prior uses expect '{}'",
                                self.m.value_type(v),
                                self.m.value_type(ph)
                            ),
                        ));
                    }
                    self.m.replace_all_uses(ph, v);
                    self.m.remove_placeholder(ph);
                    break;
                }
                if idx + 1 == scope_len && self.scopes[idx].isolated {
                    break;
                }
            }
        }
        if !name.chars().all(|c| c.is_ascii_digit()) {
            if let Some(&first) = values.first() {
                self.m.set_value_name(first, Some(name));
            }
        }
        if let Some(s) = self.scopes.last_mut() {
            s.defs.insert(name.to_string(), values);
        }
        Ok(())
    }

    // ----- operations -----

    /// `%a, %b:2 = op ...` — returns (name, count) pairs.
    fn parse_result_list(&mut self) -> PResult<Vec<(String, usize, Location)>> {
        let mut out = Vec::new();
        self.ws();
        if self.peek() != b'%' {
            return Ok(out);
        }
        loop {
            self.ws();
            let loc = self.here();
            if !self.eat("%") {
                return Err(self.err("expected SSA result name"));
            }
            let name = self.suffix_id().ok_or_else(|| self.err("expected SSA value name after '%'"))?.to_string();
            let mut count = 1;
            if self.peek() == b':' && self.peek_at(1).is_ascii_digit() {
                self.pos += 1;
                let p = self.pos;
                let (t, _) = self.number_text().ok_or_else(|| self.err("expected result count"))?;
                count = self.parse_i64(t, p)? as usize;
                if count == 0 {
                    return Err(self.err_at(p, "expected a result count of at least 1"));
                }
            }
            out.push((name, count, loc));
            if !self.eat(",") {
                break;
            }
        }
        self.expect("=")?;
        Ok(out)
    }

    fn parse_operation(&mut self, block: BlockId) -> PResult<OpId> {
        self.enter()?;
        self.ws();
        let start = self.pos;
        let results = self.parse_result_list()?;
        self.ws();
        let op = if self.peek() == b'"' {
            self.parse_generic_op(start)?
        } else {
            self.parse_custom_op(start)?
        };
        // Trailing location.
        if self.eat_kw("loc") {
            let loc = self.parse_loc_body(Some(op))?;
            self.m.set_loc(op, loc);
        }
        let total: usize = results.iter().map(|r| r.1).sum();
        let actual = self.m.results(op).len();
        if !results.is_empty() || actual > 0 {
            if total != actual {
                return Err(self.err_at(
                    start,
                    format!(
                        "operation '{}' defines {actual} result(s) but {total} name(s) were given",
                        self.m.op_name(op)
                    ),
                ));
            }
        }
        let mut k = 0;
        for (name, count, loc) in results {
            let vals = self.m.results(op)[k..k + count].to_vec();
            k += count;
            self.define(&name, vals, &loc)?;
        }
        // Ops are linked in after they are complete so nested scopes never see them half-built.
        if self.m.insert_op(op, InsertPoint::End(block)).is_err() {
            return Err(self.err_at(start, "internal error: operation was already placed"));
        }
        self.leave();
        Ok(op)
    }

    fn check_registered(&self, name: &str, pos: usize) -> PResult<()> {
        if self.ctx.op_def(name).is_some() {
            return Ok(());
        }
        let dialect = name.split('.').next().unwrap_or("");
        if self.ctx.is_registered_dialect(dialect) && !name.contains('.') {
            return Err(self.err_at(pos, format!("operation name '{name}' needs a dialect prefix")));
        }
        if self.ctx.is_registered_dialect(dialect) {
            return Err(self.err_at(pos, format!("unregistered operation '{name}' found in dialect ('{dialect}')")));
        }
        if !self.ctx.allow_unregistered() {
            return Err(self.err_at(
                pos,
                format!(
                    "operation '{name}' of unregistered dialect '{dialect}' (use --allow-unregistered-dialect to accept it)"
                ),
            ));
        }
        Ok(())
    }

    fn parse_operand_refs(&mut self) -> PResult<Vec<OperandRef>> {
        let mut out = Vec::new();
        loop {
            self.ws();
            if self.peek() != b'%' {
                break;
            }
            out.push(self.parse_operand_ref()?);
            if !self.eat(",") {
                break;
            }
        }
        Ok(out)
    }

    fn parse_operand_ref(&mut self) -> PResult<OperandRef> {
        self.ws();
        let loc = self.here();
        self.expect("%")?;
        let name = self.suffix_id().ok_or_else(|| self.err("expected SSA value name after '%'"))?.to_string();
        let mut index = None;
        if self.peek() == b'#' {
            self.pos += 1;
            let p = self.pos;
            let (t, _) = self.number_text().ok_or_else(|| self.err("expected result number after '#'"))?;
            index = Some(self.parse_i64(t, p)? as usize);
        }
        Ok(OperandRef { name, index, loc })
    }

    /// `"name"(%a, %b) <{props}> ({regions}) {attrs} : (A, B) -> R`.
    fn parse_generic_op(&mut self, start: usize) -> PResult<OpId> {
        let name_pos = self.pos;
        let name = self.string_lit()?;
        self.check_registered(&name, name_pos)?;
        let loc = self.loc_at(start);
        self.expect("(")?;
        let refs = self.parse_operand_refs()?;
        self.expect(")")?;
        if self.eat("[") {
            return Err(self.err("successor lists are not supported: regions here hold structured control flow only"));
        }
        let mut attrs: Vec<(Arc<str>, Attribute)> = Vec::new();
        if self.eat("<{") {
            self.pos -= 1;
            attrs.extend(self.parse_attr_dict_body()?);
            self.expect(">")?;
        }
        let isolated = self.ctx.has_trait(&name, crate::context::Traits::ISOLATED_FROM_ABOVE);
        let holder = self.m.create_op(OperationState::new(MODULE));
        if self.eat("(") {
            loop {
                self.ws();
                if self.peek() != b'{' {
                    return Err(self.err(format!("expected '{{' to begin a region{}", self.found())));
                }
                let r = self.m.add_region(holder);
                self.parse_region(r, isolated, &[])?;
                if !self.eat(",") {
                    break;
                }
            }
            self.expect(")")?;
        }
        self.ws();
        if self.peek() == b'{' {
            attrs.extend(self.parse_attr_dict_body()?);
        }
        self.expect(":")?;
        let tpos = self.pos;
        let fty = self.parse_type()?;
        let TypeKind::Function { inputs, results } = fty.kind().clone() else {
            return Err(self.err_at(tpos, "expected a function type '(inputs) -> results'"));
        };
        if inputs.len() != refs.len() {
            return Err(self.err_at(
                tpos,
                format!("expected {} operand type(s) but had {}", refs.len(), inputs.len()),
            ));
        }
        self.finish_op(&name, &refs, &inputs, results, attrs, holder, loc)
    }

    #[allow(clippy::too_many_arguments)]
    fn finish_op(
        &mut self,
        name: &str,
        refs: &[OperandRef],
        operand_types: &[Type],
        result_types: Vec<Type>,
        attrs: Vec<(Arc<str>, Attribute)>,
        holder: OpId,
        loc: Location,
    ) -> PResult<OpId> {
        let mut operands = Vec::with_capacity(refs.len());
        for (r, t) in refs.iter().zip(operand_types) {
            operands.push(self.resolve(r, t)?);
        }
        let op = self.m.create_op(OperationState {
            name: name.into(),
            operands,
            result_types,
            attributes: attrs,
            num_regions: 0,
            loc,
        });
        for r in self.m.regions(holder).to_vec() {
            let nr = self.m.add_region(op);
            self.m.take_region_blocks(r, nr);
            // A module always has its body block, even when written as an empty region.
            if name == MODULE && self.m.region_blocks(nr).is_empty() {
                self.m.append_block(nr, &[]);
            }
        }
        let _ = self.m.erase_op(holder);
        Ok(op)
    }

    fn parse_custom_op(&mut self, start: usize) -> PResult<OpId> {
        let name_pos = self.pos;
        let raw = self.bare_id().ok_or_else(|| self.err(format!("expected operation name{}", self.found())))?;
        let name = match raw {
            "module" => MODULE.to_string(),
            "return" => crate::builtin::RETURN.to_string(),
            "func" => FUNC.to_string(),
            other => other.to_string(),
        };
        let Some(def) = self.ctx.op_def(&name).cloned() else {
            self.check_registered(&name, name_pos)?;
            return Err(self.err_at(
                name_pos,
                format!("custom op '{name}' is unknown: ops of unregistered dialects must use the generic form"),
            ));
        };
        let loc = self.loc_at(start);
        match def.syntax {
            Syntax::Default => self.parse_default_op(&name, loc, def.has_trait(crate::context::Traits::ISOLATED_FROM_ABOVE)),
            Syntax::Constant => self.parse_constant_op(&name, loc),
            Syntax::IfElse => self.parse_if_op(&name, loc),
            Syntax::Function => self.parse_func_op(loc),
            Syntax::Return => self.parse_return_op(&name, loc),
            Syntax::Module => self.parse_module_op(loc),
        }
    }

    fn parse_default_op(&mut self, name: &str, loc: Location, isolated: bool) -> PResult<OpId> {
        let refs = self.parse_operand_refs()?;
        let holder = self.m.create_op(OperationState::new(MODULE));
        if self.eat("(") {
            loop {
                let r = self.m.add_region(holder);
                self.parse_region(r, isolated, &[])?;
                if !self.eat(",") {
                    break;
                }
            }
            self.expect(")")?;
        }
        let mut attrs = Vec::new();
        self.ws();
        if self.peek() == b'{' {
            attrs = self.parse_attr_dict_body()?;
        }
        self.expect(":")?;
        let tpos = self.pos;
        let ty = self.parse_type()?;
        let (inputs, results) = match ty.kind() {
            TypeKind::Function { inputs, results } => (inputs.clone(), results.clone()),
            _ => (vec![ty.clone(); refs.len()], vec![ty.clone()]),
        };
        if inputs.len() != refs.len() {
            return Err(self.err_at(tpos, format!("expected {} operand type(s) but had {}", refs.len(), inputs.len())));
        }
        self.finish_op(name, &refs, &inputs, results, attrs, holder, loc)
    }

    fn parse_constant_op(&mut self, name: &str, loc: Location) -> PResult<OpId> {
        let vpos = self.pos;
        let lit = self.parse_untyped_literal()?;
        let mut attrs = Vec::new();
        self.ws();
        if self.peek() == b'{' {
            attrs = self.parse_attr_dict_body()?;
        }
        self.expect(":")?;
        let ty = self.parse_type()?;
        let value = self.type_literal(lit, &ty, vpos)?;
        attrs.push(("value".into(), value));
        let holder = self.m.create_op(OperationState::new(MODULE));
        self.finish_op(name, &[], &[], vec![ty], attrs, holder, loc)
    }

    fn parse_if_op(&mut self, name: &str, loc: Location) -> PResult<OpId> {
        let cond = self.parse_operand_ref()?;
        let mut results = Vec::new();
        if self.eat("->") {
            self.expect("(")?;
            results = self.parse_type_list_until(")")?;
        }
        let holder = self.m.create_op(OperationState::new(MODULE));
        let then_r = self.m.add_region(holder);
        self.parse_region(then_r, false, &[])?;
        if !self.eat_kw("else") {
            return Err(self.err(format!("expected 'else' region{}", self.found())));
        }
        let else_r = self.m.add_region(holder);
        self.parse_region(else_r, false, &[])?;
        let mut attrs = Vec::new();
        self.ws();
        if self.peek() == b'{' {
            attrs = self.parse_attr_dict_body()?;
        }
        self.finish_op(name, &[cond], &[Type::bool()], results, attrs, holder, loc)
    }

    fn parse_return_op(&mut self, name: &str, loc: Location) -> PResult<OpId> {
        let refs = self.parse_operand_refs()?;
        let mut types = Vec::new();
        if !refs.is_empty() {
            self.expect(":")?;
            for i in 0..refs.len() {
                if i > 0 {
                    self.expect(",")?;
                }
                types.push(self.parse_type()?);
            }
        }
        let mut attrs = Vec::new();
        self.ws();
        if self.peek() == b'{' {
            attrs = self.parse_attr_dict_body()?;
        }
        let holder = self.m.create_op(OperationState::new(MODULE));
        self.finish_op(name, &refs, &types, vec![], attrs, holder, loc)
    }

    fn parse_module_op(&mut self, loc: Location) -> PResult<OpId> {
        let mut attrs = Vec::new();
        self.ws();
        if self.peek() == b'@' {
            self.pos += 1;
            let n = self.symbol_name()?;
            attrs.push((SYM_NAME.into(), Attribute::str(&n)));
        }
        if self.eat_kw("attributes") {
            attrs.extend(self.parse_attr_dict_body()?);
        }
        let holder = self.m.create_op(OperationState::new(MODULE));
        let r = self.m.add_region(holder);
        self.parse_region(r, true, &[])?;
        if self.m.region_blocks(r).is_empty() {
            self.m.append_block(r, &[]);
        }
        self.finish_op(MODULE, &[], &[], vec![], attrs, holder, loc)
    }

    fn symbol_name(&mut self) -> PResult<String> {
        if self.peek() == b'"' {
            self.string_lit()
        } else {
            Ok(self.suffix_id().ok_or_else(|| self.err("expected symbol name"))?.to_string())
        }
    }

    /// `func.func [private] @name(%a: T {attrs}, ...) -> (R {attrs}) [attributes {...}] [{ body }]`.
    fn parse_func_op(&mut self, loc: Location) -> PResult<OpId> {
        let mut attrs: Vec<(Arc<str>, Attribute)> = Vec::new();
        if let Some(vis) = ["private", "public", "nested"].into_iter().find(|v| self.eat_kw(v)) {
            attrs.push(("sym_visibility".into(), Attribute::str(vis)));
        }
        self.ws();
        if !self.eat("@") {
            return Err(self.err(format!("expected '@' and a function name{}", self.found())));
        }
        let sym = self.symbol_name()?;
        self.expect("(")?;
        let mut args: Vec<(Option<(String, Location)>, Type)> = Vec::new();
        let mut arg_attrs = Vec::new();
        self.ws();
        if !self.eat(")") {
            loop {
                self.ws();
                let name = if self.peek() == b'%' {
                    let l = self.here();
                    self.pos += 1;
                    let n = self.suffix_id().ok_or_else(|| self.err("expected argument name"))?.to_string();
                    self.expect(":")?;
                    Some((n, l))
                } else {
                    None
                };
                let t = self.parse_type()?;
                self.ws();
                let d = if self.peek() == b'{' { self.parse_attr_dict_body()? } else { Vec::new() };
                arg_attrs.push(Attribute::dict(d));
                if self.eat_kw("loc") {
                    let _ = self.parse_loc_body(None)?;
                }
                args.push((name, t));
                if !self.eat(",") {
                    break;
                }
            }
            self.expect(")")?;
        }
        let mut results = Vec::new();
        let mut res_attrs = Vec::new();
        if self.eat("->") {
            self.ws();
            let paren = self.peek() == b'(' && !self.looks_like_function_type();
            if paren {
                self.pos += 1;
                self.ws();
                if !self.eat(")") {
                    loop {
                        results.push(self.parse_type()?);
                        self.ws();
                        let d = if self.peek() == b'{' { self.parse_attr_dict_body()? } else { Vec::new() };
                        res_attrs.push(Attribute::dict(d));
                        if !self.eat(",") {
                            break;
                        }
                    }
                    self.expect(")")?;
                }
            } else {
                results.push(self.parse_type()?);
                res_attrs.push(Attribute::dict(Vec::new()));
            }
        }
        if self.eat_kw("attributes") {
            attrs.extend(self.parse_attr_dict_body()?);
        }
        let inputs: Vec<Type> = args.iter().map(|(_, t)| t.clone()).collect();
        attrs.push((SYM_NAME.into(), Attribute::str(&sym)));
        attrs.push((FUNCTION_TYPE.into(), Attribute::Type(Type::function(inputs.clone(), results))));
        if arg_attrs.iter().any(|a| matches!(a, Attribute::Dict(d) if !d.is_empty())) {
            attrs.push((ARG_ATTRS.into(), Attribute::array(arg_attrs)));
        }
        if res_attrs.iter().any(|a| matches!(a, Attribute::Dict(d) if !d.is_empty())) {
            attrs.push((RES_ATTRS.into(), Attribute::array(res_attrs)));
        }
        let holder = self.m.create_op(OperationState::new(MODULE));
        let r = self.m.add_region(holder);
        self.ws();
        if self.peek() == b'{' {
            let named: Vec<(String, Location, Type)> = args
                .iter()
                .filter_map(|(n, t)| n.as_ref().map(|(n, l)| (n.clone(), l.clone(), t.clone())))
                .collect();
            if named.len() != args.len() {
                return Err(self.err("a function with a body needs named arguments ('%name: type')"));
            }
            self.parse_region(r, true, &named)?;
        }
        self.finish_op(FUNC, &[], &[], vec![], attrs, holder, loc)
    }

    /// Whether the text at the cursor is `(...) -> ...` (a function type) rather than a parenthesized list.
    fn looks_like_function_type(&self) -> bool {
        let mut depth = 0i32;
        let mut k = self.pos;
        while k < self.bytes.len() {
            match self.bytes[k] {
                b'(' | b'<' | b'[' | b'{' => depth += 1,
                b')' | b'>' | b']' | b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        let rest = self.src[k + 1..].trim_start();
                        return rest.starts_with("->");
                    }
                }
                _ => {}
            }
            k += 1;
        }
        false
    }

    /// `{ [^bb0(%a: T):] ops ^bb1: ops }`. `entry_args` pre-declares the entry block's arguments.
    fn parse_region(&mut self, r: RegionId, isolated: bool, entry_args: &[(String, Location, Type)]) -> PResult<()> {
        self.enter()?;
        self.expect("{")?;
        self.open_scope(isolated);
        let mut block_names: HashMap<String, usize> = HashMap::new();
        let mut current: Option<BlockId> = None;
        if !entry_args.is_empty() {
            let types: Vec<Type> = entry_args.iter().map(|a| a.2.clone()).collect();
            let b = self.m.append_block(r, &types);
            for (i, (n, l, _)) in entry_args.iter().enumerate() {
                let v = self.m.block_args(b)[i];
                self.define(n, vec![v], l)?;
            }
            current = Some(b);
        }
        loop {
            self.ws();
            if self.eat("}") {
                break;
            }
            if self.eof() {
                return Err(self.err("expected '}' to end the region"));
            }
            if self.peek() == b'^' {
                let lpos = self.pos;
                self.pos += 1;
                let label = self.suffix_id().ok_or_else(|| self.err("expected block name"))?.to_string();
                if block_names.insert(label.clone(), 0).is_some() {
                    return Err(self.err_at(lpos, format!("redefinition of block '^{label}'")));
                }
                let mut args = Vec::new();
                if self.eat("(") {
                    self.ws();
                    if !self.eat(")") {
                        loop {
                            self.ws();
                            let l = self.here();
                            self.expect("%")?;
                            let n = self.suffix_id().ok_or_else(|| self.err("expected argument name"))?.to_string();
                            self.expect(":")?;
                            let t = self.parse_type()?;
                            if self.eat_kw("loc") {
                                let _ = self.parse_loc_body(None)?;
                            }
                            args.push((n, l, t));
                            if !self.eat(",") {
                                break;
                            }
                        }
                        self.expect(")")?;
                    }
                }
                self.expect(":")?;
                // An entry block pre-declared from a signature may not be relabeled with arguments.
                let reuse_entry = current.is_some_and(|b| self.m.block_len(b) == 0 && self.m.region_blocks(r).len() == 1)
                    && entry_args.is_empty();
                let b = match current {
                    Some(b) if reuse_entry && self.m.block_args(b).is_empty() => b,
                    _ => self.m.append_block(r, &[]),
                };
                for (n, l, t) in args {
                    let v = self.m.add_block_arg(b, t);
                    self.define(&n, vec![v], &l)?;
                }
                current = Some(b);
                continue;
            }
            let b = match current {
                Some(b) => b,
                None => {
                    let b = self.m.append_block(r, &[]);
                    current = Some(b);
                    b
                }
            };
            self.parse_operation(b)?;
        }
        self.close_scope()?;
        self.leave();
        Ok(())
    }

    // ----- attributes -----

    /// `{a = 1 : i64, b, "c d" = "x"}` -> sorted, duplicates rejected.
    fn parse_attr_dict_body(&mut self) -> PResult<Vec<(Arc<str>, Attribute)>> {
        self.expect("{")?;
        let mut out: Vec<(Arc<str>, Attribute)> = Vec::new();
        self.ws();
        if self.eat("}") {
            return Ok(out);
        }
        loop {
            self.ws();
            let kpos = self.pos;
            let key = if self.peek() == b'"' {
                self.string_lit()?
            } else {
                self.bare_id().ok_or_else(|| self.err(format!("expected attribute name{}", self.found())))?.to_string()
            };
            let value = if self.eat("=") { self.parse_attr()? } else { Attribute::Unit };
            if out.iter().any(|(k, _)| **k == *key) {
                return Err(self.err_at(kpos, format!("duplicate key '{key}' in dictionary attribute")));
            }
            out.push((key.into(), value));
            if !self.eat(",") {
                break;
            }
        }
        self.expect("}")?;
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    fn parse_attr(&mut self) -> PResult<Attribute> {
        self.enter()?;
        let r = self.parse_attr_inner();
        self.leave();
        r
    }

    fn parse_attr_inner(&mut self) -> PResult<Attribute> {
        self.ws();
        let pos = self.pos;
        match self.peek() {
            b'"' => Ok(Attribute::Str(self.string_lit()?.into())),
            b'[' => {
                self.pos += 1;
                let mut items = Vec::new();
                self.ws();
                if !self.eat("]") {
                    loop {
                        items.push(self.parse_attr()?);
                        if !self.eat(",") {
                            break;
                        }
                    }
                    self.expect("]")?;
                }
                Ok(Attribute::array(items))
            }
            b'{' => Ok(Attribute::Dict(self.parse_attr_dict_body()?.into())),
            b'@' => {
                self.pos += 1;
                Ok(Attribute::SymbolRef(self.symbol_name()?.into()))
            }
            b'#' => self.parse_hash_attr(),
            b'-' | b'+' | b'0'..=b'9' => {
                let lit = self.parse_untyped_literal()?;
                if self.eat(":") {
                    let t = self.parse_type()?;
                    self.type_literal(lit, &t, pos)
                } else {
                    match lit {
                        Literal::Int(text) => Ok(Attribute::Int(self.parse_i64(&text, pos)?)),
                        Literal::Float(text) => Ok(Attribute::float(self.parse_f64(&text, pos)?)),
                        _ => Err(self.err_at(pos, "expected a number")),
                    }
                }
            }
            _ => {
                if self.eat_kw("unit") {
                    return Ok(Attribute::Unit);
                }
                if self.eat_kw("true") {
                    return Ok(Attribute::Bool(true));
                }
                if self.eat_kw("false") {
                    return Ok(Attribute::Bool(false));
                }
                if self.src[self.pos..].starts_with("dense<") {
                    let lit = self.parse_untyped_literal()?;
                    self.expect(":")?;
                    let t = self.parse_type()?;
                    return self.type_literal(lit, &t, pos);
                }
                if self.src[self.pos..].starts_with("dense_resource<") {
                    return Err(self.err("'dense_resource' attributes are not supported; use 'dense'"));
                }
                // Anything else must be a type used as an attribute.
                let t = self.parse_type().map_err(|_| self.err_at(pos, format!("expected attribute value{}", self.found_at(pos))))?;
                Ok(Attribute::Type(t))
            }
        }
    }

    fn found_at(&self, pos: usize) -> String {
        let rest = &self.src[pos.min(self.src.len())..];
        if rest.is_empty() {
            return ", found end of input".into();
        }
        let tok: String = rest.chars().take_while(|c| !c.is_whitespace()).take(20).collect();
        format!(", found '{tok}'")
    }

    /// `#prim.none`, `#prim.dtype<f32>`, `#prim.device<"cpu">`, `#alias`, `#dialect.name<body>`.
    fn parse_hash_attr(&mut self) -> PResult<Attribute> {
        let pos = self.pos;
        self.pos += 1;
        let id = self.suffix_id().ok_or_else(|| self.err("expected attribute name after '#'"))?.to_string();
        let Some((dialect, name)) = id.split_once('.') else {
            return self
                .attr_aliases
                .get(&id)
                .cloned()
                .ok_or_else(|| self.err_at(pos, format!("undefined attribute alias '#{id}'")));
        };
        match (dialect, name) {
            ("prim", "none") => Ok(Attribute::None),
            ("prim", "dtype") => {
                self.expect("<")?;
                let p = self.pos;
                let n = self.bare_id().unwrap_or("");
                let d = DType::from_mlir_name(n).ok_or_else(|| self.err_at(p, format!("unknown dtype '{n}'")))?;
                self.expect(">")?;
                Ok(Attribute::DType(d))
            }
            ("prim", "device") => {
                self.expect("<")?;
                let s = self.string_lit()?;
                self.expect(">")?;
                Ok(Attribute::Device(s.into()))
            }
            _ => {
                let body = self.opaque_body()?;
                if !self.ctx.is_registered_dialect(dialect) && !self.ctx.allow_unregistered() {
                    return Err(self.err_at(
                        pos,
                        format!("attribute of unregistered dialect '{dialect}' (use --allow-unregistered-dialect)"),
                    ));
                }
                Ok(Attribute::Opaque { dialect: dialect.into(), name: name.into(), body: body.map(Into::into) })
            }
        }
    }

    /// A balanced `<...>` body, returned raw; `None` when there is none.
    fn opaque_body(&mut self) -> PResult<Option<String>> {
        if self.peek() != b'<' {
            return Ok(None);
        }
        let start = self.pos;
        let mut depth = 0i32;
        loop {
            match self.peek() {
                0 if self.eof() => return Err(self.err_at(start, "unbalanced '<' in dialect attribute or type")),
                b'<' | b'(' | b'[' | b'{' => depth += 1,
                b'>' | b')' | b']' | b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        self.pos += 1;
                        break;
                    }
                }
                b'"' => {
                    self.string_lit()?;
                    continue;
                }
                _ => {}
            }
            self.pos += 1;
        }
        Ok(Some(self.src[start + 1..self.pos - 1].to_string()))
    }

    fn parse_f64(&self, text: &str, pos: usize) -> PResult<f64> {
        text.parse::<f64>().map_err(|_| self.err_at(pos, format!("invalid float literal '{text}'")))
    }

    fn parse_untyped_literal(&mut self) -> PResult<Literal> {
        self.ws();
        let pos = self.pos;
        if let Some((t, is_float)) = self.number_text() {
            return Ok(if is_float { Literal::Float(t.to_string()) } else { Literal::Int(t.to_string()) });
        }
        if self.src[self.pos..].starts_with("dense<") {
            self.pos += "dense<".len();
            let body = self.parse_dense_body()?;
            self.expect(">")?;
            return Ok(Literal::Dense(body));
        }
        if self.eat_kw("true") {
            return Ok(Literal::Attr(Attribute::Bool(true)));
        }
        if self.eat_kw("false") {
            return Ok(Literal::Attr(Attribute::Bool(false)));
        }
        let _ = pos;
        Ok(Literal::Attr(self.parse_attr()?))
    }

    /// Gives a literal its type (`1 : i64`, `1.5 : f64`, `0x7FF0000000000000 : f64`, `dense<...> : tensor<...>`).
    fn type_literal(&self, lit: Literal, ty: &Type, pos: usize) -> PResult<Attribute> {
        match (lit, ty.kind()) {
            (Literal::Int(t), TypeKind::Int) => Ok(Attribute::Int(self.parse_i64(&t, pos)?)),
            (Literal::Int(t), TypeKind::Float) => {
                if t.starts_with("0x") || t.starts_with("0X") {
                    let bits = u64::from_str_radix(&t[2..], 16)
                        .map_err(|_| self.err_at(pos, "hexadecimal float literal out of range"))?;
                    Ok(Attribute::float(f64::from_bits(bits)))
                } else {
                    Ok(Attribute::float(self.parse_f64(&t, pos)?))
                }
            }
            (Literal::Float(t), TypeKind::Float) => Ok(Attribute::float(self.parse_f64(&t, pos)?)),
            (Literal::Int(t), TypeKind::Bool) => match t.as_str() {
                "0" => Ok(Attribute::Bool(false)),
                "1" => Ok(Attribute::Bool(true)),
                _ => Err(self.err_at(pos, "an i1 literal must be 0 or 1")),
            },
            (Literal::Dense(body), TypeKind::Tensor(tt)) => self.build_dense(body, tt, pos),
            (Literal::Attr(a), _) => {
                if let Some(vt) = a.value_type() {
                    if vt != *ty && !matches!(a, Attribute::DType(_)) {
                        return Err(self.err_at(pos, format!("{} literal does not have type '{ty}'", a.kind_name())));
                    }
                }
                Ok(a)
            }
            (Literal::Int(_) | Literal::Float(_), TypeKind::Tensor(_)) => {
                Err(self.err_at(pos, "a tensor constant needs 'dense<...>'"))
            }
            (_, _) => Err(self.err_at(
                pos,
                format!("literal cannot have type '{ty}' (integer attributes are i64, float attributes f64)"),
            )),
        }
    }

    fn parse_dense_body(&mut self) -> PResult<DenseBody> {
        self.ws();
        if self.peek() == b'"' {
            let p = self.pos;
            let s = self.string_lit()?;
            let hex = s.strip_prefix("0x").ok_or_else(|| self.err_at(p, "dense hex data must start with '0x'"))?;
            if hex.len() % 2 != 0 {
                return Err(self.err_at(p, "dense hex data has an odd number of digits"));
            }
            let mut bytes = Vec::with_capacity(hex.len() / 2);
            for i in (0..hex.len()).step_by(2) {
                let b = u8::from_str_radix(&hex[i..i + 2], 16).map_err(|_| self.err_at(p, "invalid hex digit in dense data"))?;
                bytes.push(b);
            }
            return Ok(DenseBody::Hex(bytes));
        }
        if self.peek() == b'>' {
            return Ok(DenseBody::List(Vec::new()));
        }
        self.parse_dense_elem()
    }

    fn parse_dense_elem(&mut self) -> PResult<DenseBody> {
        self.enter()?;
        self.ws();
        let r = if self.eat("[") {
            let mut items = Vec::new();
            self.ws();
            if !self.eat("]") {
                loop {
                    items.push(self.parse_dense_elem()?);
                    if !self.eat(",") {
                        break;
                    }
                }
                self.expect("]")?;
            }
            Ok(DenseBody::List(items))
        } else if self.eat_kw("true") {
            Ok(DenseBody::Scalar("1".into(), self.pos))
        } else if self.eat_kw("false") {
            Ok(DenseBody::Scalar("0".into(), self.pos))
        } else {
            let p = self.pos;
            match self.number_text() {
                Some((t, _)) => Ok(DenseBody::Scalar(t.to_string(), p)),
                None => Err(self.err(format!("expected dense element{}", self.found()))),
            }
        };
        self.leave();
        r
    }

    fn build_dense(&self, body: DenseBody, tt: &TensorType, pos: usize) -> PResult<Attribute> {
        let (Some(dtype), Some(dims)) = (tt.dtype, tt.static_dims()) else {
            return Err(self.err_at(pos, "a dense attribute needs a static shape and a known dtype"));
        };
        let n: i64 = dims.iter().product();
        let mut bytes = Vec::with_capacity(n as usize * dtype.size_bytes());
        match body {
            DenseBody::Hex(b) => bytes = b,
            DenseBody::Scalar(text, p) => {
                for _ in 0..n.max(0) {
                    self.push_element(&mut bytes, dtype, &text, p)?;
                }
            }
            DenseBody::List(items) => {
                self.flatten_dense(&items, &dims, 0, dtype, &mut bytes, pos)?;
                if dims.is_empty() {
                    return Err(self.err_at(pos, "a rank-0 dense attribute takes a single element"));
                }
            }
        }
        DenseAttr::new(dtype, &dims, bytes.into())
            .map(Attribute::Dense)
            .map_err(|e| self.err_at(pos, e))
    }

    fn flatten_dense(&self, items: &[DenseBody], dims: &[i64], depth: usize, dtype: DType, out: &mut Vec<u8>, pos: usize) -> PResult<()> {
        let Some(&want) = dims.get(depth) else {
            return Err(self.err_at(pos, "dense literal is nested deeper than the tensor's rank"));
        };
        if items.len() as i64 != want {
            return Err(self.err_at(
                pos,
                format!("dense literal has {} elements in dimension {depth}, but the type says {want}", items.len()),
            ));
        }
        for it in items {
            match it {
                DenseBody::List(sub) => self.flatten_dense(sub, dims, depth + 1, dtype, out, pos)?,
                DenseBody::Scalar(text, p) => {
                    if depth + 1 != dims.len() {
                        return Err(self.err_at(*p, "dense literal is not nested as deeply as the tensor's rank"));
                    }
                    self.push_element(out, dtype, text, *p)?
                }
                DenseBody::Hex(_) => return Err(self.err_at(pos, "hex data cannot be nested")),
            }
        }
        Ok(())
    }

    fn push_element(&self, out: &mut Vec<u8>, dtype: DType, text: &str, p: usize) -> PResult<()> {
        let hex_bits = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X"));
        match dtype {
            DType::F32 => {
                let v = match hex_bits {
                    Some(h) => f32::from_bits(u32::from_str_radix(h, 16).map_err(|_| self.err_at(p, "bad f32 bits"))?),
                    None => text.parse::<f32>().map_err(|_| self.err_at(p, format!("invalid f32 literal '{text}'")))?,
                };
                out.extend(v.to_le_bytes());
            }
            DType::F64 => {
                let v = match hex_bits {
                    Some(h) => f64::from_bits(u64::from_str_radix(h, 16).map_err(|_| self.err_at(p, "bad f64 bits"))?),
                    None => self.parse_f64(text, p)?,
                };
                out.extend(v.to_le_bytes());
            }
            DType::F16 | DType::BF16 => {
                let h = hex_bits.ok_or_else(|| self.err_at(p, "f16/bf16 dense elements must be given as hex data"))?;
                let v = u16::from_str_radix(h, 16).map_err(|_| self.err_at(p, "bad 16-bit float bits"))?;
                out.extend(v.to_le_bytes());
            }
            _ => {
                let v = self.parse_i64(text, p)?;
                let fits = match dtype {
                    DType::Bool => v == 0 || v == 1,
                    DType::U8 => (0..=255).contains(&v),
                    DType::I8 => (-128..=127).contains(&v),
                    DType::I16 => (i16::MIN as i64..=i16::MAX as i64).contains(&v),
                    DType::I32 => (i32::MIN as i64..=i32::MAX as i64).contains(&v),
                    _ => true,
                };
                if !fits {
                    return Err(self.err_at(p, format!("value {v} does not fit in {dtype}")));
                }
                let le = v.to_le_bytes();
                out.extend(&le[..dtype.size_bytes()]);
            }
        }
        Ok(())
    }

    // ----- types -----

    fn parse_type_list_until(&mut self, close: &str) -> PResult<Vec<Type>> {
        let mut out = Vec::new();
        if self.eat(close) {
            return Ok(out);
        }
        loop {
            out.push(self.parse_type()?);
            if !self.eat(",") {
                break;
            }
        }
        self.expect(close)?;
        Ok(out)
    }

    fn parse_type(&mut self) -> PResult<Type> {
        self.enter()?;
        let r = self.parse_type_inner();
        self.leave();
        r
    }

    fn parse_type_inner(&mut self) -> PResult<Type> {
        self.ws();
        let pos = self.pos;
        if self.eat("(") {
            let inputs = self.parse_type_list_until(")")?;
            self.expect("->")?;
            self.ws();
            let results = if self.peek() == b'(' && !self.looks_like_function_type() {
                self.pos += 1;
                self.parse_type_list_until(")")?
            } else {
                vec![self.parse_type()?]
            };
            return Ok(Type::function(inputs, results));
        }
        if self.peek() == b'!' {
            self.pos += 1;
            let id = self.suffix_id().ok_or_else(|| self.err("expected type name after '!'"))?.to_string();
            let Some((dialect, name)) = id.split_once('.') else {
                return self
                    .type_aliases
                    .get(&id)
                    .cloned()
                    .ok_or_else(|| self.err_at(pos, format!("undefined type alias '!{id}'")));
            };
            return match (dialect, name) {
                ("prim", "str") => Ok(self.ctx.intern(TypeKind::Str)),
                ("prim", "device") => Ok(self.ctx.intern(TypeKind::Device)),
                ("prim", "any") => Ok(self.ctx.intern(TypeKind::Any)),
                ("prim", "list") => {
                    self.expect("<")?;
                    let e = self.parse_type()?;
                    self.expect(">")?;
                    Ok(self.ctx.intern(TypeKind::List(e)))
                }
                ("prim", "optional") => {
                    self.expect("<")?;
                    let e = self.parse_type()?;
                    self.expect(">")?;
                    Ok(self.ctx.intern(TypeKind::Optional(e)))
                }
                ("prim", other) => Err(self.err_at(pos, format!("unknown prim type '!prim.{other}'"))),
                _ => {
                    let body = self.opaque_body()?;
                    if !self.ctx.is_registered_dialect(dialect) && !self.ctx.allow_unregistered() {
                        return Err(self.err_at(
                            pos,
                            format!("type of unregistered dialect '{dialect}' (use --allow-unregistered-dialect)"),
                        ));
                    }
                    Ok(self.ctx.intern(TypeKind::Opaque {
                        dialect: dialect.into(),
                        name: name.into(),
                        body: body.map(Into::into),
                    }))
                }
            };
        }
        let Some(id) = self.bare_id() else {
            return Err(self.err(format!("expected type{}", self.found())));
        };
        match id {
            "i64" => Ok(self.ctx.intern(TypeKind::Int)),
            "f64" => Ok(self.ctx.intern(TypeKind::Float)),
            "i1" => Ok(self.ctx.intern(TypeKind::Bool)),
            "none" => Ok(self.ctx.intern(TypeKind::None)),
            "tuple" => {
                self.expect("<")?;
                let elems = self.parse_type_list_until(">")?;
                Ok(self.ctx.intern(TypeKind::Tuple(elems)))
            }
            "tensor" => self.parse_tensor_type(pos),
            other => Err(self.err_at(
                pos,
                format!("unknown or unsupported type '{other}' (scalars are i64, f64 and i1; tensors are tensor<...>)"),
            )),
        }
    }

    /// After `tensor`: `<2x?x*xf32, #prim.sym<s0>>`.
    fn parse_tensor_type(&mut self, pos: usize) -> PResult<Type> {
        if self.peek() != b'<' {
            return Err(self.err(format!("expected '<' after 'tensor'{}", self.found())));
        }
        self.pos += 1;
        self.ws();
        let mut shape: Option<Vec<Dim>> = Some(Vec::new());
        if self.peek() == b'*' {
            self.pos += 1;
            if self.peek() != b'x' {
                return Err(self.err("expected 'x' after '*' in tensor type"));
            }
            self.pos += 1;
            shape = None;
        } else {
            loop {
                let c = self.peek();
                if c == b'?' {
                    self.pos += 1;
                    if let Some(s) = shape.as_mut() {
                        s.push(Dim::Unknown);
                    }
                } else if c.is_ascii_digit() {
                    let start = self.pos;
                    while self.peek().is_ascii_digit() {
                        self.pos += 1;
                    }
                    // `2xf32`: the digits are a dimension only when an `x` follows.
                    if self.peek() != b'x' {
                        self.pos = start;
                        break;
                    }
                    let n: i64 = self.src[start..self.pos]
                        .parse()
                        .map_err(|_| self.err_at(start, "tensor dimension out of range"))?;
                    if let Some(s) = shape.as_mut() {
                        s.push(Dim::Static(n));
                    }
                } else {
                    break;
                }
                if self.peek() != b'x' {
                    return Err(self.err(format!("expected 'x' in tensor dimension list{}", self.found())));
                }
                self.pos += 1;
            }
        }
        let epos = self.pos;
        let dtype = if self.src[self.pos..].starts_with("!prim.any") {
            self.pos += "!prim.any".len();
            None
        } else {
            let Some(e) = self.bare_id() else {
                return Err(self.err(format!("expected tensor element type{}", self.found())));
            };
            Some(DType::from_mlir_name(e).ok_or_else(|| self.err_at(epos, format!("unsupported tensor element type '{e}'")))?)
        };
        if self.eat(",") {
            self.ws();
            let ep = self.pos;
            if !self.src[self.pos..].starts_with("#prim.sym<") {
                return Err(self.err_at(ep, "unsupported tensor encoding (only #prim.sym<...> is known)"));
            }
            self.pos += "#prim.sym<".len();
            let mut names = Vec::new();
            loop {
                self.ws();
                if self.peek() == b'?' {
                    self.pos += 1;
                    names.push(None);
                } else if self.peek() == b'"' {
                    names.push(Some(self.string_lit()?));
                } else {
                    let n = self.bare_id().ok_or_else(|| self.err("expected symbol name in #prim.sym"))?;
                    names.push(Some(n.to_string()));
                }
                if !self.eat(",") {
                    break;
                }
            }
            self.expect(">")?;
            let Some(dims) = shape.as_mut() else {
                return Err(self.err_at(ep, "an unranked tensor cannot name symbolic dimensions"));
            };
            let dynamic: Vec<usize> = dims.iter().enumerate().filter(|(_, d)| !d.is_static()).map(|(i, _)| i).collect();
            if dynamic.len() != names.len() {
                return Err(self.err_at(
                    ep,
                    format!("#prim.sym names {} dimension(s) but the tensor has {} dynamic one(s)", names.len(), dynamic.len()),
                ));
            }
            for (i, n) in dynamic.into_iter().zip(names) {
                if let Some(n) = n {
                    dims[i] = Dim::Sym(n.into());
                }
            }
        }
        if !self.eat(">") {
            return Err(self.err(format!("expected '>' to end tensor type{}", self.found())));
        }
        let _ = pos;
        Ok(self.ctx.intern(TypeKind::Tensor(TensorType { dtype, shape })))
    }

    // ----- locations -----

    /// After `loc`: `(unknown)`, `("file":1:2)`, `("name"(...))`, `(fused[...])`, `(#alias)`.
    fn parse_loc_body(&mut self, op: Option<OpId>) -> PResult<Location> {
        self.expect("(")?;
        self.ws();
        let loc = if self.peek() == b'#' {
            let p = self.here();
            self.pos += 1;
            let name = self.suffix_id().ok_or_else(|| self.err("expected location alias name"))?.to_string();
            match (self.loc_aliases.get(&name), op) {
                (Some(l), _) => l.clone(),
                (None, Some(op)) => {
                    self.pending_loc_aliases.push((op, name, p));
                    Location::Unknown
                }
                (None, None) => return Err(Diagnostic::error(p, format!("undefined location alias '#{name}'"))),
            }
        } else {
            self.parse_loc_inner()?
        };
        self.expect(")")?;
        Ok(loc)
    }

    fn parse_loc_inner(&mut self) -> PResult<Location> {
        self.enter()?;
        self.ws();
        let r = if self.eat_kw("unknown") {
            Ok(Location::Unknown)
        } else if self.eat_kw("fused") {
            if self.peek() == b'<' {
                self.parse_attr_inner_skip_angle()?;
            }
            self.expect("[")?;
            let mut items = Vec::new();
            self.ws();
            if !self.eat("]") {
                loop {
                    items.push(self.parse_loc_inner()?);
                    if !self.eat(",") {
                        break;
                    }
                }
                self.expect("]")?;
            }
            Ok(Location::Fused(items.into()))
        } else if self.eat_kw("callsite") {
            self.expect("(")?;
            let callee = self.parse_loc_inner()?;
            if !self.eat_kw("at") {
                return Err(self.err("expected 'at' in callsite location"));
            }
            let caller = self.parse_loc_inner()?;
            self.expect(")")?;
            Ok(Location::fuse([callee, caller]))
        } else if self.peek() == b'"' {
            let s = self.string_lit()?;
            if self.peek() == b':' && self.peek_at(1).is_ascii_digit() {
                self.pos += 1;
                let p = self.pos;
                let (l, _) = self.number_text().ok_or_else(|| self.err("expected line number"))?;
                let line = self.parse_i64(l, p)?;
                let mut col = 0;
                if self.peek() == b':' {
                    self.pos += 1;
                    let p = self.pos;
                    let (c, _) = self.number_text().ok_or_else(|| self.err("expected column number"))?;
                    col = self.parse_i64(c, p)?;
                }
                let (Ok(line), Ok(col)) = (u32::try_from(line), u32::try_from(col)) else {
                    return Err(self.err_at(p, "line or column out of range"));
                };
                Ok(Location::File { file: s.into(), line, col })
            } else if self.eat("(") {
                let child = self.parse_loc_inner()?;
                self.expect(")")?;
                Ok(Location::Name { name: s.into(), child: Some(Arc::new(child)) })
            } else {
                Ok(Location::Name { name: s.into(), child: None })
            }
        } else if self.peek() == b'#' {
            self.pos += 1;
            let name = self.suffix_id().ok_or_else(|| self.err("expected location alias name"))?.to_string();
            self.loc_aliases.get(&name).cloned().ok_or_else(|| self.err(format!("undefined location alias '#{name}'")))
        } else {
            Err(self.err(format!("expected location{}", self.found())))
        };
        self.leave();
        r
    }

    fn parse_attr_inner_skip_angle(&mut self) -> PResult<()> {
        self.opaque_body().map(|_| ())
    }
}

enum Literal {
    Int(String),
    Float(String),
    Dense(DenseBody),
    Attr(Attribute),
}

enum DenseBody {
    Hex(Vec<u8>),
    Scalar(String, usize),
    List(Vec<DenseBody>),
}
