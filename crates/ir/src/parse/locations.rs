//! Locations: `loc(...)` bodies, fused and named locations, and location aliases.

use super::*;
use crate::diag::Diagnostic;
use crate::location::Location;
use crate::module::OpId;
use std::sync::Arc;

impl<'a> Parser<'a> {
    // ----- locations -----

    /// After `loc`: `(unknown)`, `("file":1:2)`, `("name"(...))`, `(fused[...])`, `(#alias)`.
    pub(super) fn parse_loc_body(&mut self, op: Option<OpId>) -> PResult<Location> {
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

    pub(super) fn parse_loc_inner(&mut self) -> PResult<Location> {
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

    pub(super) fn parse_attr_inner_skip_angle(&mut self) -> PResult<()> {
        self.opaque_body().map(|_| ())
    }
}
