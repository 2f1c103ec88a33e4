//! Tests of the rule reader, the engine and the fusion pass on parsed IR.

use egraph::{FuseElementwise, Peephole, RuleLibrary};
use ir::{Context, Module};

fn ctx() -> Context {
    let mut c = Context::new();
    dialect_prim::register(&mut c);
    dialect_aten::register(&mut c);
    c
}

fn parse(ctx: &Context, text: &str) -> Module {
    match ir::parse_module(ctx, text, "test.ir") {
        Ok(m) => m,
        Err(e) => panic!("parse error: {e:?}"),
    }
}

fn peephole(opts: &str) -> Peephole {
    let lib = RuleLibrary::standard().expect("the aten rule file reads");
    let mut o = Peephole::options();
    o.parse(opts).expect("options parse");
    Peephole::with_options(&lib, &o).expect("pass builds")
}

#[test]
fn aten_rule_file_has_thirty_sound_rules() {
    let lib = RuleLibrary::standard().expect("reads");
    let sound = &lib.sets()["aten.sound"];
    assert!(sound.len() >= 30, "{} sound rules", sound.len());
    assert!(lib.sets()["aten.fast-math"].len() >= 5);
}

#[test]
fn rule_errors_are_values() {
    let mut lib = RuleLibrary::new();
    for (text, want) in [
        ("r: (aten.neg ?x => ?x", "missing ')'"),
        ("r: (aten.neg ?x) => ?y", "rule 'r'"),
        ("r: (aten.neg ?x) => ?x if (nope ?x)", "unknown condition 'nope'"),
        ("r: (aten.neg ?x) => @nope ?x", "unknown applier '@nope'"),
        ("r (aten.neg ?x) => ?x", "expected 'name: lhs => rhs'"),
        ("r: ?x => ?x", "left-hand side"),
        ("r: (aten.neg ?x) ?x", "expected '=>'"),
        ("r: (aten.neg (const abc)) => ?x", "bad literal"),
    ] {
        let e = lib.add_rules("t", "t.egg", text).expect_err(text);
        assert!(e.to_string().contains(want), "{text}: {e}");
    }
    lib.add_rules("t", "t.egg", "[s]\nok: (aten.neg (aten.neg ?x)) => ?x").expect("reads");
    assert!(lib.add_rules("t", "t.egg", "[s]\nok: (aten.neg ?x) => ?x").is_err(), "duplicate name");
}

#[test]
fn user_rule_file_for_another_dialect() {
    // A user's dialect ships its own rule file and condition.
    let mut lib = RuleLibrary::new();
    lib.add_condition("always", |_, _, _| true);
    lib.add_rules("toy", "toy.egg", "[sound]\ntranspose-twice: (toy.transpose (toy.transpose ?x)) => ?x if (always ?x)").expect("reads");
    let mut o = Peephole::options();
    o.parse("rules=toy").expect("options");
    let p = Peephole::with_options(&lib, &o).expect("builds");
    assert_eq!(p.rules().len(), 1);
    let mut o = Peephole::options();
    o.parse("rules=nope").expect("options");
    assert!(Peephole::with_options(&lib, &o).is_err());
}

const CHAIN: &str = r#"
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = aten.neg %x : tensor<4xf32>
  %b = aten.neg %a : tensor<4xf32>
  %c = prim.Constant dense<1.0> : tensor<f32>
  %d = aten.mul.Tensor %b, %c : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %e = aten.relu %d : tensor<4xf32>
  func.return %e : tensor<4xf32>
}
"#;

#[test]
fn peephole_rewrites_and_verifies() {
    let ctx = ctx();
    let mut m = parse(&ctx, CHAIN);
    let top = m.top();
    let reports = peephole("").rewrite(&ctx, &mut m, top, None).expect("runs");
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].stop, "saturated");
    ir::verify(&ctx, &m).expect("verifies");
    let text = ir::print_module(&ctx, &m, ir::PrintOptions::default());
    assert!(!text.contains("aten.neg") && !text.contains("aten.mul"), "{text}");
    assert!(text.contains("aten.relu %x"), "{text}");
}

#[test]
fn opt_limit_stops_rewrites() {
    let ctx = ctx();
    let mut m = parse(&ctx, CHAIN);
    let top = m.top();
    let reports = peephole("").rewrite(&ctx, &mut m, top, Some(0)).expect("runs");
    assert_eq!(reports[0].replaced, 0);
    let text = ir::print_module(&ctx, &m, ir::PrintOptions::default());
    assert!(text.contains("aten.neg"), "{text}");
}

#[test]
fn writes_keep_fresh_values_fresh() {
    // y = x * 1 is a fresh tensor; y.add_() must not start writing into x.
    let ctx = ctx();
    let text = r#"
func.func @f(%x: tensor<4xf32>, %z: tensor<4xf32>) -> tensor<4xf32> {
  %c = prim.Constant dense<1.0> : tensor<f32>
  %y = aten.mul.Tensor %x, %c : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %w = aten.add_.Tensor %y, %z : tensor<4xf32>
  func.return %x : tensor<4xf32>
}
"#;
    let mut m = parse(&ctx, text);
    let top = m.top();
    peephole("").rewrite(&ctx, &mut m, top, None).expect("runs");
    let out = ir::print_module(&ctx, &m, ir::PrintOptions::default());
    assert!(out.contains("aten.mul.Tensor"), "{out}");
}

#[test]
fn fusion_of_the_lstm_cell() {
    let ctx = ctx();
    let text = include_str!("../../../examples/lstm_cell.ir");
    let mut m = parse(&ctx, text);
    let top = m.top();
    let groups = FuseElementwise::default().fuse(&ctx, &mut m, top).expect("fuses");
    ir::verify(&ctx, &m).expect("verifies");
    assert_eq!(groups.len(), 1, "{groups:?}");
    let g = &groups[0];
    // Three bias additions per gate (the chunk distributed over them) and the cell's nine ops.
    assert_eq!(g.ops.len(), 12 + 9, "{:?}", g.ops);
    assert_eq!(g.inputs, 4 * 4 + 1, "four slices per gate and cx");
    assert_eq!(g.outputs, 2);
    let text = ir::print_module(&ctx, &m, ir::PrintOptions::default());
    assert!(!text.contains("aten.chunk") && !text.contains("prim.ListUnpack"), "{text}");
    assert_eq!(text.matches("aten.slice.Tensor").count(), 16, "{text}");
    assert_eq!(text.matches("aten.mm").count(), 2, "{text}");

    // Without the distribution the chunk splits the pointwise ops in two groups.
    let mut m = parse(&ctx, include_str!("../../../examples/lstm_cell.ir"));
    let top = m.top();
    let mut fuse = FuseElementwise::default();
    fuse.distribute_splits = false;
    let groups = fuse.fuse(&ctx, &mut m, top).expect("fuses");
    assert_eq!(groups.iter().map(|g| g.ops.len()).collect::<Vec<_>>(), vec![3, 9]);
}

/// A chain of `n` alternating additions and multiplications of two distinct values: each op
/// gains its commuted twin, so the e-graph about doubles.
fn commuting_chain(n: usize) -> String {
    let t = "tensor<8xf32>";
    let mut s = format!("func.func @f(%x: {t}, %y: {t}) -> {t} {{\n");
    let mut prev = ("%x".to_string(), "%y".to_string());
    for i in 0..n {
        let op = if i % 2 == 0 { "aten.add.Tensor" } else { "aten.mul.Tensor" };
        s.push_str(&format!("  %v{i} = {op} {}, {} : {t}\n", prev.0, prev.1));
        prev = (prev.1, format!("%v{i}"));
    }
    s.push_str(&format!("  func.return {} : {t}\n}}\n", prev.1));
    s
}

#[test]
fn node_limit_scales_with_the_input_and_an_explicit_one_overrides() {
    // 60,000 ops grow to about 120,000 e-nodes, past the 100,000 floor of the default limit:
    // the scaled default lets saturation finish; the same number given explicitly stops it.
    // (A generous time limit, so that only the node limit can stop a run early.)
    let ctx = ctx();
    let m0 = parse(&ctx, &commuting_chain(60_000));
    let mut m = m0.clone();
    let top = m.top();
    let r = peephole("time-limit-ms=600000 window=0").rewrite(&ctx, &mut m, top, None).expect("runs");
    assert_eq!(r.len(), 1);
    assert!(r[0].initial_nodes > 60_000, "{}", r[0].initial_nodes);
    assert_eq!(r[0].node_limit, 10 * r[0].initial_nodes);
    assert_eq!(r[0].stop, "saturated");
    assert!(r[0].nodes > 100_000, "{} e-nodes", r[0].nodes);
    assert!(r[0].applied.get("add-comm").is_some_and(|&n| n >= 30_000), "{:?}", r[0].applied);
    let mut m = m0.clone();
    let r = peephole("time-limit-ms=600000 node-limit=100000 window=0").rewrite(&ctx, &mut m, top, None).expect("runs");
    assert_eq!(r[0].node_limit, 100_000);
    // (egg names the size the e-graph had reached when it checked.)
    assert!(r[0].stop.starts_with("node limit"), "{}", r[0].stop);
    // Below the floor the default is the floor.
    let mut m = parse(&ctx, CHAIN);
    let top = m.top();
    let r = peephole("").rewrite(&ctx, &mut m, top, None).expect("runs");
    assert_eq!(r[0].node_limit, 100_000);
}

#[test]
fn attribute_table_is_bounded_and_full_is_a_value() {
    let mut f = egraph::Facts::new(true);
    let set = |i: i64| vec![("min".into(), ir::Attribute::Int(i))];
    // Index 0 is the empty set; every other index up to the one kept for `op*` patterns is free.
    for i in 1..egraph::lang::ANY_ATTRS {
        assert_eq!(f.attr_index(set(i64::from(i))), Some(i));
    }
    assert_eq!(f.attr_index(set(-1)), None);
    assert_eq!(f.attr_index(set(7)), Some(7));
    assert_eq!(f.attr_index(Vec::new()), Some(0));
}

#[test]
fn ops_past_a_full_attribute_table_stay_as_they_are() {
    // One run with more distinct attribute sets than an e-graph indexes: the clamps past the
    // table's end enter as opaque values, and the rewrite over the last one still happens.
    let ctx = ctx();
    let n = usize::from(egraph::lang::ANY_ATTRS) + 4;
    let t = "tensor<4xf32>";
    let mut text = format!("func.func @f(%x: {t}) -> {t} {{\n");
    for i in 0..n {
        text.push_str(&format!("  %c{i} = aten.clamp %x {{min = {i}.0 : f64}} : {t}\n"));
    }
    let last = n - 1;
    text.push_str(&format!("  %a = aten.neg %c{last} : {t}\n  %b = aten.neg %a : {t}\n  func.return %b : {t}\n}}\n"));
    let mut m = parse(&ctx, &text);
    let top = m.top();
    // (One e-graph for the whole run: the default window would keep each table small.)
    let r = peephole("window=0").rewrite(&ctx, &mut m, top, None).expect("runs");
    assert_eq!(r[0].ops, n + 2);
    assert_eq!(r[0].applied.get("neg-neg"), Some(&1), "{:?}", r[0].applied);
    assert_eq!(r[0].replaced, 1);
    ir::verify(&ctx, &m).expect("verifies");
    let out = ir::print_module(&ctx, &m, ir::PrintOptions::default());
    assert!(out.contains(&format!("min = {last}.0")) && !out.contains("aten.neg"), "{}", &out[out.len().saturating_sub(400)..]);
}

#[test]
fn garbage_never_panics() {
    // Any verified input goes through both passes; here, ops the engine does not know.
    let ctx = ctx();
    let text = r#"
func.func @f(%x: tensor<?x4xf32>, %n: i64) -> tensor<?x4xf32> {
  %a = aten.exp %x : tensor<?x4xf32>
  %s = aten.sum %a : (tensor<?x4xf32>) -> tensor<f32>
  %b = aten.div.Tensor %a, %s : (tensor<?x4xf32>, tensor<f32>) -> tensor<?x4xf32>
  %c = prim.mul %n, %n : i64
  func.return %b : tensor<?x4xf32>
}
"#;
    let mut m = parse(&ctx, text);
    let top = m.top();
    peephole("fast-math").rewrite(&ctx, &mut m, top, None).expect("runs");
    FuseElementwise::default().fuse(&ctx, &mut m, top).expect("fuses");
    ir::verify(&ctx, &m).expect("verifies");
}

/// Every rule of the aten rule file has a lit test of it firing (`rule 'NAME' applied` in a
/// positive log check) and one of it not firing (`-NOT: rule 'NAME'`), under lit/egraph.
#[test]
fn every_rule_has_a_firing_and_a_not_firing_lit_test() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../lit/egraph");
    let mut text = String::new();
    for e in std::fs::read_dir(&dir).expect("lit/egraph exists").flatten() {
        if e.path().extension().is_some_and(|x| x == "ir") {
            text.push_str(&std::fs::read_to_string(e.path()).expect("reads"));
        }
    }
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let lib = RuleLibrary::standard().expect("reads");
    let mut missing = Vec::new();
    for set in ["aten.sound", "aten.fast-math"] {
        for rule in &lib.sets()[set] {
            let fires = format!("rule '{}' applied", rule.name);
            let not = format!("rule '{}'", rule.name);
            let has_fire = lines.iter().any(|l| (l.starts_with("// LOG:") || l.starts_with("// LOG-DAG:")) && l.ends_with(&fires));
            let has_not = lines.iter().any(|l| l.starts_with("// ") && l.contains("-NOT: ") && l.ends_with(&not));
            if !has_fire || !has_not {
                missing.push(format!("{set} {} (fires: {has_fire}, not: {has_not})", rule.name));
            }
        }
    }
    assert!(missing.is_empty(), "rules without both lit tests: {missing:#?}");
}

/// `n` negations of `%x` in a row.
fn neg_chain(n: usize) -> String {
    let t = "tensor<8xf32>";
    let mut s = format!("func.func @f(%x: {t}) -> {t} {{\n");
    let mut prev = "%x".to_string();
    for i in 0..n {
        s.push_str(&format!("  %v{i} = aten.neg {prev} : {t}\n"));
        prev = format!("%v{i}");
    }
    s.push_str(&format!("  func.return {prev} : {t}\n}}\n"));
    s
}

#[test]
fn long_runs_are_rewritten_in_windows() {
    let ctx = ctx();
    let m0 = parse(&ctx, &neg_chain(3000));
    let negs = |m: &Module| ir::print_module(&ctx, m, ir::PrintOptions::default()).matches("aten.neg").count();
    // One e-graph for the whole run: 3,000 negations cancel in pairs.
    let mut m = m0.clone();
    let top = m.top();
    let r = peephole("window=0").rewrite(&ctx, &mut m, top, None).expect("runs");
    assert_eq!(r.len(), 1);
    ir::verify(&ctx, &m).expect("verifies");
    assert_eq!(negs(&m), 0);
    // Windows of 1,000 ops (even): each window cancels on its own, later windows reading the
    // earlier ones' results; the program is the same.
    let mut m = m0.clone();
    let r = peephole("window=1000").rewrite(&ctx, &mut m, top, None).expect("runs");
    assert_eq!(r.iter().map(|r| r.ops).collect::<Vec<_>>(), vec![1000, 1000, 1000]);
    ir::verify(&ctx, &m).expect("verifies");
    assert_eq!(negs(&m), 0);
    // Windows of 999 ops (odd): each window leaves one negation, which the next window sees
    // as the op computing its first operand (context one op deep), so the pairs that straddle
    // two windows cancel too.
    let mut m = m0.clone();
    let r = peephole("window=999").rewrite(&ctx, &mut m, top, None).expect("runs");
    assert_eq!(r.len(), 4);
    assert!(r[1].applied.get("neg-neg").is_some_and(|&n| n >= 500), "{:?}", r[1].applied);
    ir::verify(&ctx, &m).expect("verifies");
    // (Negations an earlier window made for a later one to cancel are left dead, for `dce`.)
    let text = ir::print_module(&ctx, &m, ir::PrintOptions::default());
    assert!(text.contains("func.return %x"), "{}", &text[text.len().saturating_sub(300)..]);
    assert!(negs(&m) <= 2, "{}", negs(&m));
    // The default bounds every e-graph.
    let mut m = m0.clone();
    let r = peephole("").rewrite(&ctx, &mut m, top, None).expect("runs");
    assert!(r.iter().all(|r| r.ops <= egraph::engine::WINDOW), "{:?}", r.iter().map(|r| r.ops).collect::<Vec<_>>());
    let lib = RuleLibrary::standard().expect("reads");
    let mut o = Peephole::options();
    o.parse("window=-1").expect("an integer parses");
    assert!(Peephole::with_options(&lib, &o).is_err_and(|e| e.contains("window")));
}
