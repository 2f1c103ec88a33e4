//! Tests of `AliasDb`: queries on small programs, and the side-effect rule `dce` relies on.

use ir::{Context, Module, OpId, ValueId};
use transforms::opt::{AliasDb, alias};

fn parse(ctx: &Context, text: &str) -> Module {
    let m = ir::parse_module(ctx, text, "test.ir").expect("parses");
    ir::verify(ctx, &m).expect("verifies");
    m
}

/// The value named `%name` in the function.
fn value(m: &Module, func: OpId, name: &str) -> ValueId {
    let mut found = None;
    let entry = m.entry_block(m.regions(func)[0]).unwrap();
    for &a in m.block_args(entry) {
        if m.value_name(a) == Some(name) {
            found = Some(a);
        }
    }
    for o in m.nested_ops(func) {
        for &r in m.results(o) {
            if m.value_name(r) == Some(name) {
                found = Some(r);
            }
        }
    }
    found.unwrap_or_else(|| panic!("no value %{name}"))
}

const PROGRAM: &str = r#"
func.func @f(%a: tensor<2x2xf32> {prim.input = "a"}, %b: tensor<2x2xf32> {prim.input = "b"}, %c: i1 {prim.input = "c"}) -> tensor<2xf32> {
  %zero = prim.Constant 0 : i64
  %fresh = aten.neg %a : tensor<2x2xf32>
  %v = aten.select.int %a, %zero {dim = 0} : (tensor<2x2xf32>, i64) -> tensor<2xf32>
  %w = aten.add_.Tensor %a, %b : tensor<2x2xf32>
  %r = prim.If %c -> (tensor<2xf32>) {
    prim.Yield %v : tensor<2xf32>
  } else {
    %rb = aten.select.int %b, %zero {dim = 0} : (tensor<2x2xf32>, i64) -> tensor<2xf32>
    prim.Yield %rb : tensor<2xf32>
  }
  %s = aten.sum %b : (tensor<2x2xf32>) -> tensor<f32>
  func.return %r : tensor<2xf32>
}
"#;

#[test]
fn views_alias_their_base_and_if_results_alias_both_branches() {
    let ctx = transforms::context();
    let m = parse(&ctx, PROGRAM);
    let f = m.function("f").unwrap();
    let db = AliasDb::new(&ctx, &m, f);
    let v = |n| value(&m, f, n);
    assert!(!db.may_alias(v("a"), v("b")), "distinct inputs");
    assert!(db.may_alias(v("a"), v("v")));
    assert!(db.may_alias(v("a"), v("w")), "the in-place result is its input");
    assert!(db.may_alias(v("r"), v("a")) && db.may_alias(v("r"), v("b")));
    assert!(!db.may_alias(v("fresh"), v("a")));
    assert!(!db.may_alias(v("zero"), v("zero")), "integers hold no memory");
    assert!(db.has_writers(v("v")) && db.has_writers(v("r")));
    assert!(!db.has_writers(v("b")) && !db.has_writers(v("fresh")));
    let add = m.defining_op(v("w")).unwrap();
    assert!(db.is_mutable_op(add));
    assert!(db.writes_value(add, v("a")) && !db.writes_value(add, v("b")));
    assert_eq!(db.writers_of(v("a")), vec![add]);
    assert!(!db.writes_to(add).is_empty());
}

#[test]
fn moves_never_cross_a_conflicting_write() {
    let ctx = transforms::context();
    let mut m = parse(&ctx, PROGRAM);
    let f = m.function("f").unwrap();
    let db = AliasDb::new(&ctx, &m, f);
    let op = |m: &Module, n| m.defining_op(value(m, f, n)).unwrap();
    let (fresh, add, iff, sum) = (op(&m, "fresh"), op(&m, "w"), op(&m, "r"), op(&m, "s"));
    // `fresh` reads %a, which the add_ writes: it may not move after it.
    assert!(!db.move_after_topologically_valid(&m, fresh, add));
    // The If reads what add_ wrote (through %v): refused.
    assert!(!db.move_before_topologically_valid(&m, iff, add));
    // Reading only %b, the sum may move before the add_ (which reads %b but does not write it).
    assert!(db.move_before_topologically_valid(&m, sum, add));
    assert!(db.try_move_before(&mut m, sum, add));
    assert_eq!(m.next_op(sum), Some(add));
    ir::verify(&ctx, &m).expect("still verifies");
    // An op cannot move before the definition of its operands.
    let v = op(&m, "v");
    let zero = op(&m, "zero");
    assert!(!db.move_before_topologically_valid(&m, v, zero));
}

#[test]
fn unmarked_arguments_may_alias_and_unknown_ops_write_everything_escaped() {
    let mut ctx = transforms::context();
    ctx.set_allow_unregistered(true);
    let m = parse(
        &ctx,
        r#"
func.func @g(%p: tensor<2xf32>, %q: tensor<2xf32>) -> tensor<2xf32> {
  %t = aten.neg %p : tensor<2xf32>
  %u = aten.exp %p : tensor<2xf32>
  "my.opaque"(%t) : (tensor<2xf32>) -> ()
  func.return %u : tensor<2xf32>
}
"#,
    );
    let f = m.function("g").unwrap();
    let db = AliasDb::new(&ctx, &m, f);
    let v = |n| value(&m, f, n);
    assert!(db.may_alias(v("p"), v("q")));
    assert!(db.is_wildcard(v("p")));
    assert!(db.may_alias(v("t"), v("p")), "escaped into an unknown op");
    assert!(!db.may_alias(v("u"), v("p")));
    assert!(db.has_writers(v("t")) && !db.has_writers(v("u")));
}

#[test]
fn side_effects_follow_purity_and_schema_writes_for_every_aten_op() {
    let ctx = transforms::context();
    let mut checked = 0;
    for def in ctx.ops() {
        let Some(schema) = def.schema.clone() else { continue };
        if schema.is_mutable() {
            assert!(!def.has_trait(ir::Traits::PURE), "{} writes an argument but is PURE", def.name);
        }
        checked += 1;
    }
    assert!(checked > 300);
    let m = parse(&ctx, PROGRAM);
    let f = m.function("f").unwrap();
    for o in m.nested_ops(f) {
        let pure = ctx.has_trait(m.op_name(o), ir::Traits::PURE);
        assert_eq!(alias::has_side_effects(&ctx, &m, o), !pure, "{}", m.op_name(o));
    }
}

#[test]
fn the_analysis_is_cached_by_the_analysis_manager() {
    let ctx = transforms::context();
    let m = parse(&ctx, PROGRAM);
    let f = m.function("f").unwrap();
    let mut am = pass::AnalysisManager::new();
    let a = am.get::<AliasDb>(&ctx, &m, f).unwrap();
    let b = am.get::<AliasDb>(&ctx, &m, f).unwrap();
    assert!(std::rc::Rc::ptr_eq(&a, &b));
    assert_eq!(a.root(), Some(f));
}
