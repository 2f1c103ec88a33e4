//! The greedy driver on the small `test` dialect: folding with materialized constants,
//! patterns, dead-op removal, iteration caps, and `canonicalize` using a rewrite set.

mod common;

use common::{SAMPLE, count, ctx, parse, print, rewrites};
use ir::{Context, Diagnostic, OpId, OperationState};
use pass::{
    GreedyConfig, PassManager, PassManagerConfig, PatternRewriter, RewritePattern, RewriteSet,
    apply_patterns_greedily, registry_with_rewrites,
};
use std::sync::Arc;

#[test]
fn folds_patterns_and_dead_ops_reach_a_fixed_point() {
    let c = ctx();
    let mut m = parse(&c, SAMPLE);
    let f = m.function("f").unwrap();
    let r = apply_patterns_greedily(&c, &mut m, f, &rewrites(), &GreedyConfig::default()).unwrap();
    assert!(r.changed && r.converged, "{r:?}");
    ir::verify(&c, &m).unwrap();
    let text = print(&c, &m);
    // 2 + 3 folded to 5; neg(neg(d)) became d; the dead add and the unused constants are gone.
    assert!(
        text.contains("\"test.const\"() {value = 5 : i64} : () -> i64"),
        "{text}"
    );
    assert!(!text.contains("value = 2"), "{text}");
    let fbody: Vec<String> = m
        .nested_ops(f)
        .into_iter()
        .map(|o| m.op_name(o).to_string())
        .collect();
    assert_eq!(
        fbody,
        ["test.const", "test.add", "test.print", "func.return"]
    );
    // @g was not the root and is untouched.
    assert_eq!(count(&m, "test.neg"), 1);
}

#[test]
fn fold_to_an_existing_value() {
    let c = ctx();
    let src = r#"
module {
  func.func @f(%x: i64) -> i64 {
    %z = "test.const"() {value = 0 : i64} : () -> i64
    %a = "test.add"(%x, %z) : (i64, i64) -> i64
    %b = "test.add"(%z, %a) : (i64, i64) -> i64
    func.return %b : i64
  }
}
"#;
    let mut m = parse(&c, src);
    let f = m.function("f").unwrap();
    apply_patterns_greedily(&c, &mut m, f, &rewrites(), &GreedyConfig::default()).unwrap();
    let ops: Vec<String> = m
        .nested_ops(f)
        .into_iter()
        .map(|o| m.op_name(o).to_string())
        .collect();
    assert_eq!(ops, ["func.return"]);
    let ret = m.nested_ops(f)[0];
    assert_eq!(
        m.operand(ret, 0),
        Some(m.block_args(m.entry_block(m.regions(f)[0]).unwrap())[0])
    );
}

#[test]
fn without_a_materializer_constants_do_not_fold() {
    let c = ctx();
    let mut set = RewriteSet::new();
    set.add_folder("test.add", |_, _, _, consts| match consts {
        [Some(ir::Attribute::Int(a)), Some(ir::Attribute::Int(b))] => {
            Some(vec![pass::FoldResult::Attr(ir::Attribute::Int(a + b))])
        }
        _ => None,
    });
    let mut m = parse(&c, SAMPLE);
    let f = m.function("f").unwrap();
    apply_patterns_greedily(&c, &mut m, f, &set, &GreedyConfig::default()).unwrap();
    assert!(print(&c, &m).contains("value = 2"));
}

/// Rewrites `test.neg` into `test.neg` forever.
struct Spin;

impl RewritePattern for Spin {
    fn root(&self) -> Option<&str> {
        Some("test.neg")
    }

    fn match_and_rewrite(
        &self,
        _: &Context,
        rw: &mut PatternRewriter<'_>,
        op: OpId,
    ) -> Result<bool, Diagnostic> {
        let m = rw.module();
        let st = OperationState::new("test.neg")
            .operands([m.operands(op)[0]])
            .results([m.value_type(m.results(op)[0]).clone()]);
        rw.replace_op_with(op, st)?;
        Ok(true)
    }
}

#[test]
fn iteration_and_rewrite_caps_report_no_convergence() {
    let c = ctx();
    let mut set = RewriteSet::new();
    set.add_pattern(Spin);
    let mut m = parse(&c, SAMPLE);
    let f = m.function("f").unwrap();
    let config = GreedyConfig {
        max_rewrites: Some(50),
        ..GreedyConfig::default()
    };
    let r = apply_patterns_greedily(&c, &mut m, f, &set, &config).unwrap();
    assert!(!r.converged && r.changed);
    assert_eq!(r.rewrites, 50);
    ir::verify(&c, &m).unwrap();

    // Spin rewrites each op once per visit; it never converges within the iteration cap.
    let mut m = parse(&c, SAMPLE);
    let g = m.function("g").unwrap();
    let config = GreedyConfig {
        max_iterations: 3,
        remove_dead: false,
        ..GreedyConfig::default()
    };
    let r = apply_patterns_greedily(&c, &mut m, g, &set, &config).unwrap_or_else(|e| panic!("{e}"));
    assert!(!r.converged);
    assert_eq!(r.iterations, 3);
    ir::verify(&c, &m).unwrap();
}

/// Returns an error from inside a pattern.
struct Fails;

impl RewritePattern for Fails {
    fn root(&self) -> Option<&str> {
        None
    }

    fn match_and_rewrite(
        &self,
        _: &Context,
        rw: &mut PatternRewriter<'_>,
        op: OpId,
    ) -> Result<bool, Diagnostic> {
        if rw.module().op_name(op) == "test.print" {
            return Err(Diagnostic::error(
                rw.module().loc(op).clone(),
                "pattern failed",
            ));
        }
        Ok(false)
    }
}

#[test]
fn pattern_errors_and_bad_rewrites_are_diagnostics() {
    let c = ctx();
    let mut set = RewriteSet::new();
    set.add_pattern(Fails);
    let mut m = parse(&c, SAMPLE);
    let f = m.function("f").unwrap();
    let e = apply_patterns_greedily(&c, &mut m, f, &set, &GreedyConfig::default()).unwrap_err();
    assert_eq!(e.message, "pattern failed");

    // The rewriter refuses stale ids and mismatched replacements instead of panicking.
    let mut m = parse(&c, SAMPLE);
    let f = m.function("f").unwrap();
    let ops = m.nested_ops(f);
    let (add, print_op) = (ops[2], ops[7]);
    let mut rw = PatternRewriter::new(&mut m, add);
    assert!(
        rw.replace_op(add, &[])
            .unwrap_err()
            .message
            .contains("1 result(s) but 0 replacement")
    );
    assert!(rw.erase_op(add).unwrap_err().message.contains("still has"));
    rw.erase_op(print_op).unwrap();
    assert!(rw.erase_op(print_op).is_err());
    assert!(rw.create(OperationState::new("test.print")).is_ok());
}

#[test]
fn canonicalize_applies_the_registered_rewrites() {
    let c = ctx();
    let mut m = parse(&c, SAMPLE);
    let registry = registry_with_rewrites(Arc::new(rewrites()));
    let mut pm = PassManager::parse(
        &registry,
        "func.func(canonicalize{max-iterations=5})",
        PassManagerConfig::default(),
    )
    .unwrap();
    assert_eq!(
        pm.pipeline_text(),
        "builtin.module(func.func(canonicalize{max-iterations=5}))"
    );
    assert!(pm.run(&c, &mut m, &mut Vec::new()).unwrap());
    assert!(print(&c, &m).contains("value = 5"));
    assert_eq!(count(&m, "test.neg"), 0);
    // @g: its dead add and neg are removed.
    assert_eq!(count(&m, "test.add"), 1);

    // With nothing registered, canonicalize only removes dead pure ops.
    let mut m = parse(&c, SAMPLE);
    let mut pm = PassManager::parse(
        &pass::default_registry(),
        "canonicalize",
        PassManagerConfig::default(),
    )
    .unwrap();
    pm.run(&c, &mut m, &mut Vec::new()).unwrap();
    assert_eq!(count(&m, "test.add"), 2);
    assert_eq!(count(&m, "test.neg"), 2);
    assert!(print(&c, &m).contains("value = 2"));
}

#[test]
fn canonicalize_test_convergence_fails_when_capped() {
    let c = ctx();
    let mut set = RewriteSet::new();
    set.add_pattern(Spin);
    let registry = registry_with_rewrites(Arc::new(set));
    let mut m = parse(&c, SAMPLE);
    let mut pm = PassManager::parse(
        &registry,
        "func.func(canonicalize{max-iterations=2 test-convergence})",
        PassManagerConfig::default(),
    )
    .unwrap();
    let e = pm.run(&c, &mut m, &mut Vec::new()).unwrap_err();
    assert_eq!(
        e.message,
        "pass 'canonicalize' failed: canonicalization did not converge after 2 iterations"
    );
    let e = PassManager::parse(
        &registry,
        "canonicalize{max-iterations=0}",
        PassManagerConfig::default(),
    )
    .err()
    .unwrap();
    assert!(e.message.contains("max-iterations must be positive"), "{e}");
}
