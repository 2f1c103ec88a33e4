//! The custom directives every context has: `func.func`'s signature and body, and `module`'s optional name.

use super::{CustomDirective, OpParser, OpPrinter, ParsedOp};
use crate::attributes::Attribute;
use crate::builtin::{ARG_ATTRS, FUNCTION_TYPE, RES_ATTRS, SYM_NAME};
use crate::context::Context;
use crate::diag::Diagnostic;
use crate::module::{Module, OpId};
use std::sync::Arc;

pub(crate) fn register(ctx: &mut Context) {
    ctx.register_custom_directive("FunctionSignature", Arc::new(FunctionSignature));
    ctx.register_custom_directive("FunctionBody", Arc::new(FunctionBody));
    ctx.register_custom_directive("ModuleName", Arc::new(ModuleName));
}

/// `[private] @name(%arg: T {attrs}, ...) -> (R {attrs})`: the symbol, visibility, function type
/// and argument and result attributes. It names the entry block's arguments, and opens the
/// naming scope [`FunctionBody`] closes.
struct FunctionSignature;

/// `{ body }` of a function whose entry arguments [`FunctionSignature`] named; nothing for a declaration.
struct FunctionBody;

/// `module @name`: a symbol name accepted on input; printed as the `sym_name` attribute.
struct ModuleName;

impl CustomDirective for FunctionSignature {
    fn expressible(&self, _: &Context, m: &Module, op: OpId) -> bool {
        let Some((inputs, _)) = crate::builtin::function_signature(m, op) else { return false };
        let [region] = m.regions(op) else { return false };
        matches!(m.attr(op, SYM_NAME), Some(Attribute::Str(_)))
            && m.operands(op).is_empty()
            && m.results(op).is_empty()
            && m.region_blocks(*region).first().is_none_or(|&b| m.block_args(b).len() == inputs.len())
    }

    fn print(&self, p: &mut OpPrinter<'_, '_>, op: OpId) {
        p.function_signature(op);
    }

    fn parse(&self, p: &mut OpParser<'_, '_>, st: &mut ParsedOp) -> Result<(), Diagnostic> {
        p.function_signature(st)
    }

    fn attributes(&self) -> &[&str] {
        &[SYM_NAME, FUNCTION_TYPE, ARG_ATTRS, RES_ATTRS, "sym_visibility"]
    }
}

impl CustomDirective for FunctionBody {
    fn expressible(&self, _: &Context, m: &Module, op: OpId) -> bool {
        m.regions(op).len() == 1
    }

    fn print(&self, p: &mut OpPrinter<'_, '_>, op: OpId) {
        p.function_body(op);
    }

    fn parse(&self, p: &mut OpParser<'_, '_>, st: &mut ParsedOp) -> Result<(), Diagnostic> {
        p.function_body(st)
    }
}

impl CustomDirective for ModuleName {
    fn expressible(&self, _: &Context, m: &Module, op: OpId) -> bool {
        m.operands(op).is_empty() && m.results(op).is_empty()
    }

    fn print(&self, _: &mut OpPrinter<'_, '_>, _: OpId) {}

    fn parse(&self, p: &mut OpParser<'_, '_>, st: &mut ParsedOp) -> Result<(), Diagnostic> {
        if p.eat("@") {
            let name = p.symbol_name()?;
            st.add_attr(SYM_NAME, Attribute::str(&name));
        }
        Ok(())
    }
}
