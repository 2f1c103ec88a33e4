//! Printing an op in its assembly format, and the printer interface custom directives write through.

use super::{Printer, short_type_form, write_untyped_literal};
use crate::attributes::Attribute;
use crate::builtin::{ARG_ATTRS, RES_ATTRS, SYM_NAME};
use crate::context::Traits;
use crate::format::{AssemblyFormat, Element, closes, opens};
use crate::module::{Module, OpId, RegionId, ValueId};
use crate::types::{Type, TypeKind};
use std::fmt::Write;

/// What a custom directive prints through: text, operands, types, attributes and regions of the
/// op being printed, with the printer's value names and indentation.
pub struct OpPrinter<'p, 'a> {
    p: &'p mut Printer<'a>,
}

impl OpPrinter<'_, '_> {
    /// The module being printed.
    pub fn module(&self) -> &Module {
        self.p.m
    }

    pub fn write(&mut self, s: &str) {
        self.p.out.push_str(s);
    }

    /// Prints a reference to a value (`%x`, `%3#1`).
    pub fn print_operand(&mut self, v: ValueId) {
        let r = self.p.value_ref(v);
        self.p.out.push_str(&r);
    }

    pub fn print_type(&mut self, t: &Type) {
        let _ = write!(self.p.out, "{t}");
    }

    pub fn print_attribute(&mut self, a: &Attribute) {
        let _ = write!(self.p.out, "{a}");
    }

    /// Prints a region as `{...}`, labelling its entry block when it has arguments.
    pub fn print_region(&mut self, r: RegionId) {
        let isolated = self.p.m.region(r).parent.is_some_and(|op| self.p.ctx.has_trait(self.p.m.op_name(op), Traits::ISOLATED_FROM_ABOVE));
        self.p.region(r, isolated, true, false);
    }

    /// `[vis] @name(%arg: T {attrs}, ...) -> (R {attrs})`; opens the function's naming scope.
    pub(crate) fn function_signature(&mut self, op: OpId) {
        let p = &mut *self.p;
        let (Some(Attribute::Str(sym)), Some((inputs, results))) =
            (p.m.attr(op, SYM_NAME).cloned(), crate::builtin::function_signature(p.m, op))
        else {
            return;
        };
        let Some(&region) = p.m.regions(op).first() else { return };
        let blocks = p.m.region_blocks(region).to_vec();
        let arg_attrs = p.m.attr(op, ARG_ATTRS).and_then(Attribute::as_array).map(<[_]>::to_vec);
        let res_attrs = p.m.attr(op, RES_ATTRS).and_then(Attribute::as_array).map(<[_]>::to_vec);
        if let Some(Attribute::Str(vis)) = p.m.attr(op, "sym_visibility") {
            let _ = write!(p.out, "{vis} ");
        }
        p.out.push('@');
        crate::types::write_sym_name(&mut p.out, &sym).ok();
        p.out.push('(');
        if p.ctx.has_trait(p.m.op_name(op), Traits::ISOLATED_FROM_ABOVE) {
            p.names.push_scope();
        }
        for (i, t) in inputs.iter().enumerate() {
            if i > 0 {
                p.out.push_str(", ");
            }
            if let Some(&b) = blocks.first() {
                let a = p.m.block_args(b)[i];
                let n = p.define_block_arg(a, true);
                let _ = write!(p.out, "{n}: ");
            }
            let _ = write!(p.out, "{t}");
            if let Some(Attribute::Dict(d)) = arg_attrs.as_ref().and_then(|a| a.get(i)) {
                if !d.is_empty() {
                    let _ = write!(p.out, " {}", Attribute::Dict(d.clone()));
                }
            }
        }
        p.out.push(')');
        let any_res_attrs =
            res_attrs.as_ref().is_some_and(|a| a.iter().any(|d| matches!(d, Attribute::Dict(x) if !x.is_empty())));
        if !results.is_empty() {
            p.out.push_str(" -> ");
            let paren = results.len() > 1 || any_res_attrs || matches!(results[0].kind(), TypeKind::Function { .. });
            if paren {
                p.out.push('(');
            }
            for (i, t) in results.iter().enumerate() {
                if i > 0 {
                    p.out.push_str(", ");
                }
                let _ = write!(p.out, "{t}");
                if let Some(Attribute::Dict(d)) = res_attrs.as_ref().and_then(|a| a.get(i)) {
                    if !d.is_empty() {
                        let _ = write!(p.out, " {}", Attribute::Dict(d.clone()));
                    }
                }
            }
            if paren {
                p.out.push(')');
            }
        }
    }

    /// The body of a function, whose entry arguments the signature named; closes its naming scope.
    pub(crate) fn function_body(&mut self, op: OpId) {
        let p = &mut *self.p;
        if let Some(&region) = p.m.regions(op).first() {
            if !p.m.region_blocks(region).is_empty() {
                p.region_body(region, false, true);
            }
        }
        if p.ctx.has_trait(p.m.op_name(op), Traits::ISOLATED_FROM_ABOVE) {
            p.names.pop_scope();
        }
    }
}

impl Printer<'_> {
    /// Prints `op` (after its results and name) in `format`, which the caller checked it fits.
    pub(super) fn formatted_op(&mut self, op: OpId, format: &AssemblyFormat) {
        let skip: Vec<String> = format.printed_attrs(self.ctx).into_iter().map(str::to_string).collect();
        let mut open = false;
        self.format_elements(op, format.elements(), &skip, &mut open);
    }

    /// Prints elements, each after a space unless it is closing punctuation or follows opening
    /// punctuation; an element that prints nothing takes no space either.
    fn format_elements(&mut self, op: OpId, elements: &[Element], skip: &[String], open: &mut bool) {
        for e in elements {
            if let Element::Optional { elements, anchor } = e {
                if AssemblyFormat::present(self.m, op, &elements[*anchor]) {
                    self.format_elements(op, elements, skip, open);
                }
                continue;
            }
            let mark = self.out.len();
            if !*open && !closes(e) {
                self.out.push(' ');
            }
            let start = self.out.len();
            self.format_element(op, e, skip);
            if self.out.len() == start {
                self.out.truncate(mark);
            } else {
                *open = opens(e);
            }
        }
    }

    fn format_element(&mut self, op: OpId, e: &Element, skip: &[String]) {
        let isolated = || self.ctx.has_trait(self.m.op_name(op), Traits::ISOLATED_FROM_ABOVE);
        match e {
            Element::Literal(s) => self.out.push_str(s),
            Element::Operands => {
                let operands = self.m.operands(op).to_vec();
                self.operand_list(&operands);
            }
            Element::Operand { index, .. } => {
                let r = self.value_ref(self.m.operands(op)[*index]);
                self.out.push_str(&r);
            }
            Element::Attr(a) => {
                if let Some(v) = self.m.attr(op, a) {
                    let _ = write!(self.out, "{v}");
                }
            }
            Element::UntypedAttr(a) => {
                if let Some(v) = self.m.attr(op, a).cloned() {
                    write_untyped_literal(&mut self.out, &v);
                }
            }
            Element::AttrDict { keyword } => {
                let skip: Vec<&str> = skip.iter().map(String::as_str).collect();
                self.attr_dict_body(op, &skip, *keyword);
            }
            Element::OperandTypes => {
                let tys = self.operand_types(op);
                self.type_list(tys);
            }
            Element::ResultTypes => {
                let tys = self.result_types(op);
                self.type_list(tys);
            }
            Element::FunctionalType => self.functional_type(op),
            Element::SameOrFunctionalType => {
                let ins = self.operand_types(op);
                let outs = self.result_types(op);
                if short_type_form(&ins, &outs) {
                    let _ = write!(self.out, "{}", outs[0]);
                } else {
                    self.functional_type(op);
                }
            }
            Element::Regions => self.region_list(op),
            Element::Region(i) => {
                let (r, isolated) = (self.m.regions(op)[*i], isolated());
                self.region(r, isolated, false, false);
            }
            Element::Custom(name) => {
                if let Some(d) = self.ctx.custom_directive(name).cloned() {
                    d.print(&mut OpPrinter { p: self }, op);
                }
            }
            Element::Optional { .. } => {}
        }
    }
}
