//! The builtin ops every context has: `builtin.module`, `func.func`, `func.return`, `func.call`.

use crate::attributes::Attribute;
use crate::context::{Arity, AttrKind, Context, OpDef, Syntax, Traits};
use crate::module::{BlockId, InsertPoint, Module, OpId, OperationState};
use crate::types::{Type, TypeKind};

/// The namespace of the module op.
pub const DIALECT: &str = "builtin";
/// The namespace of functions and their terminators and calls.
pub const FUNC_DIALECT: &str = "func";
pub const MODULE: &str = "builtin.module";
pub const FUNC: &str = "func.func";
pub const RETURN: &str = "func.return";
pub const CALL: &str = "func.call";
pub const SYM_NAME: &str = "sym_name";
pub const FUNCTION_TYPE: &str = "function_type";
pub const ARG_ATTRS: &str = "arg_attrs";
pub const RES_ATTRS: &str = "res_attrs";

pub(crate) fn register(ctx: &mut Context) {
    ctx.register_dialect("builtin", "The top-level module.");
    ctx.register_dialect("func", "Functions, calls and returns.");
    let defs = [
        OpDef::new(MODULE)
            .summary("A top-level container of functions.")
            .traits(Traits::NO_TERMINATOR | Traits::ISOLATED_FROM_ABOVE)
            .operands(Arity::Exact(0))
            .results(Arity::Exact(0))
            .regions(Arity::Exact(1))
            .syntax(Syntax::Module),
        OpDef::new(FUNC)
            .summary("A function: a symbol with a type and a body.")
            .traits(Traits::ISOLATED_FROM_ABOVE | Traits::SYMBOL)
            .operands(Arity::Exact(0))
            .results(Arity::Exact(0))
            .regions(Arity::Exact(1))
            .attr(SYM_NAME, AttrKind::Str, true)
            .attr(FUNCTION_TYPE, AttrKind::Type, true)
            .attr(ARG_ATTRS, AttrKind::Array, false)
            .attr(RES_ATTRS, AttrKind::Array, false)
            .syntax(Syntax::Function)
            .verifier(verify_func),
        OpDef::new(RETURN)
            .summary("Returns from a function.")
            .traits(Traits::TERMINATOR | Traits::PURE)
            .results(Arity::Exact(0))
            .syntax(Syntax::Return)
            .verifier(verify_return),
        OpDef::new(CALL)
            .summary("Calls a function of the module by symbol.")
            .attr("callee", AttrKind::SymbolRef, true)
            .verifier(verify_call),
    ];
    for d in defs {
        // The builtin names are fixed and distinct; registering them into a fresh context cannot clash.
        let _ = ctx.register_op(d);
    }
}

/// The function type of a `func.func`, as (inputs, results).
pub fn function_signature(m: &Module, func: OpId) -> Option<(Vec<Type>, Vec<Type>)> {
    match m.attr(func, FUNCTION_TYPE)?.as_type()?.kind() {
        TypeKind::Function { inputs, results } => Some((inputs.clone(), results.clone())),
        _ => None,
    }
}

/// Creates `func.func @name` at the end of the module body, with an entry block whose
/// arguments have the input types. Returns the op and its entry block.
pub fn create_function(m: &mut Module, name: &str, inputs: &[Type], results: &[Type]) -> (OpId, BlockId) {
    let st = OperationState::new(FUNC)
        .attr(SYM_NAME, Attribute::str(name))
        .attr(FUNCTION_TYPE, Attribute::Type(Type::function(inputs.to_vec(), results.to_vec())))
        .regions(1);
    let f = m.create_op(st);
    let body = m.body();
    // A fresh op inserted at the end of the module body cannot fail.
    let _ = m.insert_op(f, InsertPoint::End(body));
    let region = m.regions(f)[0];
    let entry = m.append_block(region, inputs);
    (f, entry)
}

fn verify_func(_: &Context, m: &Module, op: OpId) -> Result<(), String> {
    let (inputs, results) = function_signature(m, op).ok_or("requires 'function_type' to be a function type")?;
    if let Some(attrs) = m.attr(op, ARG_ATTRS).and_then(Attribute::as_array) {
        if attrs.len() != inputs.len() {
            return Err(format!("expects {} argument attribute dictionaries, found {}", inputs.len(), attrs.len()));
        }
    }
    if let Some(attrs) = m.attr(op, RES_ATTRS).and_then(Attribute::as_array) {
        if attrs.len() != results.len() {
            return Err(format!("expects {} result attribute dictionaries, found {}", results.len(), attrs.len()));
        }
    }
    let region = m.regions(op)[0];
    let Some(entry) = m.entry_block(region) else { return Ok(()) };
    let args = m.block_args(entry);
    if args.len() != inputs.len() {
        return Err(format!("entry block has {} arguments but the function type has {} inputs", args.len(), inputs.len()));
    }
    for (i, (&a, t)) in args.iter().zip(&inputs).enumerate() {
        if m.value_type(a) != t {
            return Err(format!(
                "type of entry block argument #{i} ({}) does not match the function signature ({t})",
                m.value_type(a)
            ));
        }
    }
    Ok(())
}

fn verify_return(_: &Context, m: &Module, op: OpId) -> Result<(), String> {
    let Some(func) = m.parent_op(op).filter(|&p| m.op_name(p) == FUNC) else {
        return Err("expects parent op 'func.func'".into());
    };
    let (_, results) = function_signature(m, func).ok_or("enclosing function has no valid type")?;
    let operands = m.operands(op);
    if operands.len() != results.len() {
        return Err(format!("has {} operands, but enclosing function returns {}", operands.len(), results.len()));
    }
    for (i, (&v, t)) in operands.iter().zip(&results).enumerate() {
        if m.value_type(v) != t {
            return Err(format!(
                "type of return operand {i} ({}) doesn't match function result type ({t})",
                m.value_type(v)
            ));
        }
    }
    Ok(())
}

fn verify_call(_: &Context, m: &Module, op: OpId) -> Result<(), String> {
    let Some(Attribute::SymbolRef(callee)) = m.attr(op, "callee") else {
        return Err("requires a 'callee' symbol reference".into());
    };
    let f = m.function(callee).ok_or_else(|| format!("'{callee}' does not reference a valid function"))?;
    let (inputs, results) = function_signature(m, f).ok_or("callee has no valid type")?;
    let ins: Vec<Type> = m.operands(op).iter().map(|&v| m.value_type(v).clone()).collect();
    let outs: Vec<Type> = m.results(op).iter().map(|&v| m.value_type(v).clone()).collect();
    if ins != inputs || outs != results {
        return Err(format!("operand or result types do not match the signature of '{callee}'"));
    }
    Ok(())
}
