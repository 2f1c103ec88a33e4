//! Operations and regions: the generic form, and the dispatch of custom forms to their assembly format.

use super::*;
use crate::attributes::Attribute;
use crate::builtin::{FUNC, MODULE};
use crate::location::Location;
use crate::module::{BlockId, InsertPoint, OpId, OperationState, RegionId};
use crate::types::{Type, TypeKind};
use std::collections::HashMap;
use std::sync::Arc;

impl<'a> Parser<'a> {
    // ----- operations -----

    /// `%a, %b:2 = op ...` — returns (name, count) pairs.
    pub(super) fn parse_result_list(&mut self) -> PResult<Vec<(String, usize, Location)>> {
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

    pub(super) fn parse_operation(&mut self, block: BlockId) -> PResult<OpId> {
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

    pub(super) fn check_registered(&self, name: &str, pos: usize) -> PResult<()> {
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

    pub(super) fn parse_operand_refs(&mut self) -> PResult<Vec<OperandRef>> {
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

    pub(super) fn parse_operand_ref(&mut self) -> PResult<OperandRef> {
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
    pub(super) fn parse_generic_op(&mut self, start: usize) -> PResult<OpId> {
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
    pub(super) fn finish_op(
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

    pub(super) fn parse_custom_op(&mut self, start: usize) -> PResult<OpId> {
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
        let Some(format) = def.format() else {
            return Err(self.err_at(name_pos, format!("operation '{name}' has no valid assembly format")));
        };
        let loc = self.loc_at(start);
        self.parse_formatted_op(&name, format, loc)
    }

    pub(super) fn symbol_name(&mut self) -> PResult<String> {
        if self.peek() == b'"' {
            self.string_lit()
        } else {
            Ok(self.suffix_id().ok_or_else(|| self.err("expected symbol name"))?.to_string())
        }
    }

    /// Whether the text at the cursor is `(...) -> ...` (a function type) rather than a parenthesized list.
    pub(super) fn looks_like_function_type(&self) -> bool {
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
    pub(super) fn parse_region(&mut self, r: RegionId, isolated: bool, entry_args: &[(String, Location, Type)]) -> PResult<()> {
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

}
