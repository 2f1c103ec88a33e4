//! The declarative rule language: rules compile against a context, match nested ops with
//! bound and repeated variables, check type, attribute and native conditions, build their
//! results, and report errors in rule text at line:col.

use ir::{Arity, AttrKind, Attribute, Context, OpDef, OperationState, PrintOptions, Traits};
use pass::drr::{self, Binding, Natives};
use pass::{GreedyConfig, RewriteSet, apply_patterns_greedily};

fn context() -> Context {
    let mut ctx = Context::new();
    ctx.register_dialect("t", "Test ops.");
    let pure = |name: &str, n: usize| OpDef::new(name).traits(Traits::PURE).operands(Arity::Exact(n)).results(Arity::Exact(1));
    for def in [
        pure("t.neg", 1),
        pure("t.add", 2),
        pure("t.cast", 1),
        pure("t.scale", 1).attr("factor", AttrKind::Float, true),
    ] {
        ctx.register_op(def).unwrap();
    }
    ctx
}

fn natives() -> Natives {
    Natives::new()
        .predicate("rank-one", |_, m, args| {
            args[0].value().and_then(|v| m.value_type(v).as_tensor().and_then(|t| t.rank())) == Some(1)
        })
        .builder("merge-scales", |_, rw, op, args| {
            let (Some(x), Some(a), Some(b)) = (args[0].value(), args[1].attr().and_then(Attribute::as_float), args[2].attr().and_then(Attribute::as_float)) else {
                return Ok(None);
            };
            let ty = rw.module().value_type(rw.module().results(op)[0]).clone();
            let v = rw.create_value(OperationState::new("t.scale").operands([x]).results([ty]).attr("factor", Attribute::float(a * b)))?;
            Ok(Some(vec![v]))
        })
}

/// Applies `rules` greedily to `func` and returns the printed function body.
fn apply(rules: &str, body: &str) -> String {
    let ctx = context();
    let mut set = RewriteSet::new();
    drr::add_rules(&mut set, &ctx, "rules.drr", rules, &natives()).unwrap_or_else(|e| panic!("{e}"));
    let mut m = ir::parse_module(&ctx, body, "in.ir").unwrap_or_else(|d| panic!("{d}"));
    let top = m.top();
    apply_patterns_greedily(&ctx, &mut m, top, &set, &GreedyConfig::default()).unwrap();
    ir::verify(&ctx, &m).unwrap();
    ir::print_module(&ctx, &m, PrintOptions::default())
}

const F32: &str = "tensor<4xf32>";

fn func(ops: &str, ret: &str) -> String {
    format!("func.func @f(%a: {F32}, %b: {F32}, %i: tensor<4xi64>) -> {F32} {{\n{ops}  func.return %{ret} : {F32}\n}}\n")
}

#[test]
fn nested_ops_match_and_the_result_is_a_bound_value() {
    let out = apply("neg-neg: (t.neg (t.neg ?x)) => ?x", &func("  %n = t.neg %a : tensor<4xf32>\n  %m = t.neg %n : tensor<4xf32>\n", "m"));
    assert!(out.contains("func.return %a"), "{out}");
    assert!(!out.contains("t.neg"), "{out}");
}

#[test]
fn a_repeated_variable_requires_equal_values() {
    let rules = "add-self: (t.add ?x ?x) => (t.scale ?x factor=2.0)";
    let same = apply(rules, &func("  %s = t.add %a, %a : tensor<4xf32>\n", "s"));
    assert!(same.contains("t.scale %a {factor = 2.0"), "{same}");
    let different = apply(rules, &func("  %s = t.add %a, %b : tensor<4xf32>\n", "s"));
    assert!(different.contains("t.add %a, %b"), "{different}");
}

#[test]
fn type_conditions_decide_whether_a_rule_fires() {
    let rules = "cast-same: (t.cast ?x) => ?x if (same-type ?x) (is-tensor ?x) (static-shape ?x) (float ?x)";
    let fires = apply(rules, &func("  %c = t.cast %a : tensor<4xf32>\n", "c"));
    assert!(!fires.contains("t.cast"), "{fires}");
    let kept = apply(rules, &func("  %c = t.cast %i : (tensor<4xi64>) -> tensor<4xf32>\n", "c"));
    assert!(kept.contains("t.cast %i"), "{kept}");
}

#[test]
fn attributes_bind_compare_and_carry_into_results() {
    let one = "scale-one: (t.scale ?x factor=?f) => ?x if (attr-eq ?f 1.0)";
    assert!(!apply(one, &func("  %s = t.scale %a {factor = 1.0} : tensor<4xf32>\n", "s")).contains("t.scale"));
    assert!(apply(one, &func("  %s = t.scale %a {factor = 3.0} : tensor<4xf32>\n", "s")).contains("t.scale %a {factor = 3.0"));
    let literal = "neg-scale: (t.neg (t.scale ?x factor=-1.0)) => ?x";
    assert!(apply(literal, &func("  %s = t.scale %a {factor = -1.0} : tensor<4xf32>\n  %n = t.neg %s : tensor<4xf32>\n", "n")).contains("func.return %a"));
    let repeated = "same-factors: (t.add (t.scale ?x factor=?f) (t.scale ?y factor=?f)) => (t.scale (t.add ?x ?y) factor=?f)";
    let body = "  %s = t.scale %a {factor = 2.0} : tensor<4xf32>\n  %u = t.scale %b {factor = 2.0} : tensor<4xf32>\n  %r = t.add %s, %u : tensor<4xf32>\n";
    let out = apply(repeated, &func(body, "r"));
    assert!(out.contains("t.add %a, %b"), "{out}");
}

#[test]
fn native_predicates_and_builders_run() {
    let rules = "merge: (t.scale (t.scale ?x factor=?a) factor=?b) => @merge-scales ?x ?a ?b if (@rank-one ?x) benefit 3";
    let body = "  %s = t.scale %a {factor = 2.0} : tensor<4xf32>\n  %u = t.scale %s {factor = 4.0} : tensor<4xf32>\n";
    let out = apply(rules, &func(body, "u"));
    assert!(out.contains("t.scale %a {factor = 8.0"), "{out}");
    assert_eq!(out.matches("t.scale").count(), 1, "{out}");
    let ctx = context();
    let rules = drr::compile(&ctx, "r", rules, &natives()).unwrap();
    assert_eq!(pass::RewritePattern::benefit(&rules[0]), 3);
    assert_eq!(pass::RewritePattern::root(&rules[0]), Some("t.scale"));
}

#[test]
fn rules_span_lines_and_skip_comments() {
    let rules = "# Negation.\nneg-neg: (t.neg \\\n  (t.neg ?x)) => ?x  # twice\n\n";
    let ctx = context();
    assert_eq!(drr::compile(&ctx, "r", rules, &natives()).unwrap().len(), 1);
}

#[test]
fn errors_are_located() {
    let ctx = context();
    let cases = [
        ("a: (t.nope ?x) => ?x", "r:1:5: unknown op 't.nope'"),
        ("a: (t.neg ?x) => ?y", "r:1:18: '?y' is not bound by the left side"),
        ("\n  a: (t.neg ?x) ?x", "r:2:17: expected '=>', found '?x'"),
        ("a: (t.neg ?x ?y) => ?x", "r:1:5: 't.neg' cannot have 2 operand(s)"),
        ("a: (t.neg ?x) => ?x if (wobbly ?x)", "r:1:25: unknown condition 'wobbly'"),
        ("a: (t.neg ?x) => @nothing ?x", "r:1:18: no native builder '@nothing' is registered"),
        ("a: (t.scale ?x factor=?f) => ?f", "r:1:30: '?f' is an attribute, but a value is needed here"),
        ("a: (t.scale ?x factor=dense<) => ?x", "r:1:16: bad attribute literal 'dense<'"),
        ("a: (t.neg ?x) => ?x benefit lots", "r:1:29: benefit must be 0..=65535, found 'lots'"),
        ("a: (t.neg ?x", "r:1:13: expected ')', found the end of the rule"),
        ("(t.neg ?x) => ?x", "r:1:1: expected 'name:' to start a rule, found '('"),
        ("a: (t.neg ?x) => ?x\na: (t.neg ?y) => ?y", "r:2:1: a rule named 'a' is already defined"),
    ];
    for (text, want) in cases {
        let e = drr::compile(&ctx, "r", text, &natives()).unwrap_err().to_string();
        assert!(e.starts_with(want), "{text:?}: got {e:?}, want {want:?}");
    }
}

#[test]
fn garbage_never_panics() {
    let ctx = context();
    let text = "a: (t.add (t.neg ?x) ?x) => (t.scale ?x factor=?f : ?x) if (same-type ?x ?x) (@rank-one ?x) benefit 2";
    // Every prefix of a rule, and every single character dropped, is an error or a rule.
    for i in 0..text.len() {
        let _ = drr::compile(&ctx, "r", &text[..i], &natives());
        let dropped = format!("{}{}", &text[..i], &text[i + 1..]);
        let _ = drr::compile(&ctx, "r", &dropped, &natives());
    }
    let _: Option<Binding> = None;
}
