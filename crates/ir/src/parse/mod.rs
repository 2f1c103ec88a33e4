//! The text parser: MLIR's generic form, the custom forms of registered ops, aliases and locations.
//!
//! This file holds the parser's state and the top level (aliases, the implicit module); the
//! characters and tokens are in `lexer`, SSA names in `scope`, operations and regions in `ops`,
//! custom forms in `format`, then `attributes`, `types` and `locations`.

use crate::attributes::Attribute;
use crate::builtin::MODULE;
use crate::context::Context;
use crate::diag::Diagnostic;
use crate::location::Location;
use crate::module::{Module, OpId, OperationState, ValueId};
use crate::types::Type;
use std::collections::HashMap;
use std::sync::Arc;

mod attributes;
mod dialect;
pub(crate) mod format;
mod lexer;
mod locations;
mod ops;
mod scope;
mod types;

use lexer::is_suffix_char;
pub(crate) use dialect::ParserHandle;

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

pub(crate) struct Parser<'a> {
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

}
