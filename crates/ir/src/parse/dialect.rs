//! What the parse hooks of dialect types and attributes reach of the parser, and the reading of
//! `!dialect.name` / `#dialect.name` through a registered kind.

use super::*;
use crate::extension::{DialectParser, DialectValue, KindDef};
use crate::types::TypeKind;

/// The parser as [`DialectParser`] holds it.
pub(crate) type ParserHandle<'a> = Parser<'a>;

impl<'a> Parser<'a> {
    pub(crate) fn hook_ctx(&self) -> &Context {
        self.ctx
    }

    pub(crate) fn hook_error(&self, msg: String) -> Diagnostic {
        self.err(msg)
    }

    pub(crate) fn hook_mark(&mut self) -> usize {
        self.ws();
        self.pos
    }

    pub(crate) fn hook_error_at(&self, pos: usize, msg: String) -> Diagnostic {
        self.err_at(pos.min(self.src.len()), msg)
    }

    pub(crate) fn hook_eat(&mut self, s: &str) -> bool {
        self.eat(s)
    }

    pub(crate) fn hook_expect(&mut self, s: &str) -> PResult<()> {
        self.expect(s)
    }

    pub(crate) fn hook_peek_is(&mut self, s: &str) -> bool {
        self.ws();
        self.src[self.pos..].starts_with(s)
    }

    pub(crate) fn hook_type(&mut self) -> PResult<Type> {
        self.parse_type()
    }

    pub(crate) fn hook_attribute(&mut self) -> PResult<Attribute> {
        self.parse_attr()
    }

    pub(crate) fn hook_integer(&mut self) -> PResult<i64> {
        let p = self.pos;
        match self.number_text() {
            Some((t, false)) => self.parse_i64(t, p),
            _ => Err(self.err(format!("expected an integer{}", self.found()))),
        }
    }

    pub(crate) fn hook_string(&mut self) -> PResult<String> {
        self.string_lit()
    }

    pub(crate) fn hook_keyword(&mut self) -> PResult<String> {
        match self.bare_id() {
            Some(k) => Ok(k.to_string()),
            None => Err(self.err(format!("expected an identifier{}", self.found()))),
        }
    }

    /// Reads the parameters of a registered kind through its hook, then checks them.
    fn dialect_value(&mut self, def: &Arc<KindDef>, pos: usize) -> PResult<DialectValue> {
        let params = {
            let mut dp = DialectParser { p: self };
            (def.parse)(&mut dp)?
        };
        DialectValue::new(def, params).map_err(|e| self.err_at(pos, e))
    }

    /// `!dialect.name...` of a registered type kind; `None` when no kind of that name is registered.
    pub(super) fn registered_type(&mut self, dialect: &str, name: &str, pos: usize) -> PResult<Option<Type>> {
        let Some(def) = self.ctx.type_def(dialect, name).cloned() else {
            if self.ctx.defines_types(dialect) {
                return Err(self.err_at(pos, format!("unknown type '!{dialect}.{name}' in dialect '{dialect}'")));
            }
            return Ok(None);
        };
        let v = self.dialect_value(&def, pos)?;
        Ok(Some(self.ctx.intern(TypeKind::Dialect(v))))
    }

    /// `#dialect.name...` of a registered attribute kind; `None` when none of that name is registered.
    pub(super) fn registered_attr(&mut self, dialect: &str, name: &str, pos: usize) -> PResult<Option<Attribute>> {
        let Some(def) = self.ctx.attr_def(dialect, name).cloned() else {
            if self.ctx.defines_attrs(dialect) {
                return Err(self.err_at(pos, format!("unknown attribute '#{dialect}.{name}' in dialect '{dialect}'")));
            }
            return Ok(None);
        };
        Ok(Some(Attribute::Dialect(self.dialect_value(&def, pos)?)))
    }
}
