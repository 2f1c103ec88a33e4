//! A tiny `test` dialect and helpers shared by the pass tests.
#![allow(dead_code)]

use ir::{
    Arity, AttrKind, Attribute, Context, Module, OpDef, OperationState, PrintOptions, Traits,
};
use pass::{FoldResult, PatternRewriter, RewritePattern, RewriteSet};

/// A context with the `test` dialect: `test.const` (pure, constant-like), `test.add`,
/// `test.neg` (pure), `test.print` (side effects), `test.cast` (pure); other dialects allowed.
pub fn ctx() -> Context {
    let mut c = Context::new();
    c.set_allow_unregistered(true);
    c.register_dialect("test", "Ops for pass tests.");
    let defs = [
        OpDef::new("test.const")
            .traits(Traits::PURE | Traits::CONSTANT_LIKE)
            .operands(Arity::Exact(0))
            .results(Arity::Exact(1))
            .attr("value", AttrKind::Any, true),
        OpDef::new("test.add")
            .traits(Traits::PURE | Traits::COMMUTATIVE)
            .operands(Arity::Exact(2))
            .results(Arity::Exact(1)),
        OpDef::new("test.neg")
            .traits(Traits::PURE)
            .operands(Arity::Exact(1))
            .results(Arity::Exact(1)),
        OpDef::new("test.cast")
            .traits(Traits::PURE)
            .operands(Arity::Exact(1))
            .results(Arity::Exact(1)),
        OpDef::new("test.print")
            .operands(Arity::AtLeast(0))
            .results(Arity::Exact(0)),
    ];
    for d in defs {
        c.register_op(d).unwrap();
    }
    c
}

pub fn parse(c: &Context, src: &str) -> Module {
    let m = ir::parse_module(c, src, "input.ir")
        .unwrap_or_else(|d| panic!("{}", d.render("input.ir", src)));
    ir::verify(c, &m).unwrap_or_else(|d| panic!("{}", d.render("input.ir", src)));
    m
}

pub fn print(c: &Context, m: &Module) -> String {
    ir::print_module(
        c,
        m,
        PrintOptions {
            generic: true,
            debug_info: false,
        },
    )
}

/// Counts ops named `name` in the module.
pub fn count(m: &Module, name: &str) -> usize {
    m.nested_ops(m.top())
        .into_iter()
        .filter(|&o| m.op_name(o) == name)
        .count()
}

/// Two functions: constants that fold, a dead add, a neg-neg pair, and a side-effecting print.
pub const SAMPLE: &str = r#"
module {
  func.func @f(%x: i64) -> i64 {
    %a = "test.const"() {value = 2 : i64} : () -> i64
    %b = "test.const"() {value = 3 : i64} : () -> i64
    %c = "test.add"(%a, %b) : (i64, i64) -> i64
    %d = "test.add"(%c, %x) : (i64, i64) -> i64
    %dead = "test.add"(%x, %x) : (i64, i64) -> i64
    %n1 = "test.neg"(%d) : (i64) -> i64
    %n2 = "test.neg"(%n1) : (i64) -> i64
    "test.print"(%n2) : (i64) -> ()
    func.return %n2 : i64
  }
  func.func @g(%y: i64) -> i64 {
    %u = "test.add"(%y, %y) : (i64, i64) -> i64
    %v = "test.neg"(%u) : (i64) -> i64
    func.return %y : i64
  }
}
"#;

/// `neg(neg(x))` → `x`.
pub struct NegNeg;

impl RewritePattern for NegNeg {
    fn root(&self) -> Option<&str> {
        Some("test.neg")
    }

    fn match_and_rewrite(
        &self,
        _: &Context,
        rw: &mut PatternRewriter<'_>,
        op: ir::OpId,
    ) -> Result<bool, ir::Diagnostic> {
        let m = rw.module();
        let Some(inner) = m.operand(op, 0).and_then(|v| m.defining_op(v)) else {
            return Ok(false);
        };
        if m.op_name(inner) != "test.neg" {
            return Ok(false);
        }
        let Some(x) = m.operand(inner, 0) else {
            return Ok(false);
        };
        rw.replace_op(op, &[x])?;
        Ok(true)
    }
}

/// Folds `test.add` of two constants, and `x + 0` to `x`; materializes `test.const`.
pub fn rewrites() -> RewriteSet {
    let mut s = RewriteSet::new();
    s.add_folder("test.add", |_, m, op, consts| match consts {
        [Some(Attribute::Int(a)), Some(Attribute::Int(b))] => {
            Some(vec![FoldResult::Attr(Attribute::Int(a.wrapping_add(*b)))])
        }
        [_, Some(Attribute::Int(0))] => Some(vec![FoldResult::Value(m.operand(op, 0)?)]),
        [Some(Attribute::Int(0)), _] => Some(vec![FoldResult::Value(m.operand(op, 1)?)]),
        _ => None,
    });
    s.add_materializer("test", |_, value, ty, loc| {
        Some(
            OperationState::new("test.const")
                .attr("value", value.clone())
                .results([ty.clone()])
                .loc(loc.clone()),
        )
    });
    s.add_pattern(NegNeg);
    s
}
