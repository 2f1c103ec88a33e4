//! The pass manager: nested anchors, verification after each pass, failures naming the pass,
//! analysis caching and invalidation, and the rewrite limit.

mod common;

use common::{SAMPLE, count, ctx, parse};
use ir::{Context, Diagnostic, Module, OpId, OperationState};
use pass::{
    Analysis, AnalysisManager, Anchor, OptLimits, Pass, PassInfo, PassManager, PassManagerConfig,
    PassRegistry, PassResult, PreservedAnalyses, default_registry,
};
use std::cell::RefCell;
use std::rc::Rc;

/// Records the anchors it runs on.
struct Trace {
    name: &'static str,
    seen: Rc<RefCell<Vec<String>>>,
}

impl Pass for Trace {
    fn name(&self) -> &str {
        self.name
    }

    fn run(
        &mut self,
        _: &Context,
        m: &mut Module,
        op: OpId,
        _: &mut AnalysisManager,
    ) -> Result<PassResult, Diagnostic> {
        let sym = m
            .attr(op, "sym_name")
            .and_then(|a| a.as_str())
            .unwrap_or("-")
            .to_string();
        self.seen
            .borrow_mut()
            .push(format!("{}:{}@{sym}", self.name, m.op_name(op)));
        Ok(PassResult::unchanged())
    }
}

#[test]
fn nested_pipelines_run_on_each_function_in_order() {
    let c = ctx();
    let mut m = parse(&c, SAMPLE);
    let seen = Rc::new(RefCell::new(Vec::new()));
    let mut pm = PassManager::new(PassManagerConfig::default());
    pm.add_pass(Box::new(Trace {
        name: "a",
        seen: seen.clone(),
    }))
    .unwrap();
    let f = pm.nest("func.func");
    f.add_pass(Box::new(Trace {
        name: "b",
        seen: seen.clone(),
    }))
    .unwrap();
    f.add_pass(Box::new(Trace {
        name: "c",
        seen: seen.clone(),
    }))
    .unwrap();
    pm.add_pass(Box::new(Trace {
        name: "d",
        seen: seen.clone(),
    }))
    .unwrap();
    assert_eq!(pm.pipeline_text(), "builtin.module(a,func.func(b,c),d)");
    let mut out = Vec::new();
    assert!(!pm.run(&c, &mut m, &mut out).unwrap());
    assert_eq!(
        *seen.borrow(),
        [
            "a:builtin.module@-",
            "b:func.func@f",
            "c:func.func@f",
            "b:func.func@g",
            "c:func.func@g",
            "d:builtin.module@-"
        ]
    );
}

#[test]
fn parsed_pipeline_runs_registered_passes() {
    let c = ctx();
    let mut m = parse(&c, SAMPLE);
    let r = default_registry();
    let mut pm = PassManager::parse(
        &r,
        "builtin.module(func.func(dce),verify)",
        PassManagerConfig::default(),
    )
    .unwrap();
    assert_eq!(pm.pipeline_text(), "builtin.module(func.func(dce),verify)");
    let changed = pm.run(&c, &mut m, &mut Vec::new()).unwrap();
    assert!(changed);
    // The dead add of @f and both dead ops of @g are gone; the print and what it uses stay.
    assert_eq!(count(&m, "test.add"), 2);
    assert_eq!(count(&m, "test.neg"), 2);
    assert_eq!(count(&m, "test.print"), 1);
}

#[test]
fn dce_never_erases_side_effects_and_reaches_a_fixed_point() {
    let c = ctx();
    let src = r#"
module {
  func.func @f(%x: i64) {
    %a = "test.add"(%x, %x) : (i64, i64) -> i64
    %b = "test.neg"(%a) : (i64) -> i64
    %c = "test.neg"(%b) : (i64) -> i64
    %k = "test.const"() {value = 1 : i64} : () -> i64
    "test.print"(%k) : (i64) -> ()
    %u = "other.op"(%x) : (i64) -> i64
    func.return
  }
}
"#;
    let mut m = parse(&c, src);
    let mut pm =
        PassManager::parse(&default_registry(), "dce", PassManagerConfig::default()).unwrap();
    pm.run(&c, &mut m, &mut Vec::new()).unwrap();
    assert_eq!(count(&m, "test.add") + count(&m, "test.neg"), 0);
    assert_eq!(count(&m, "test.const"), 1);
    assert_eq!(count(&m, "test.print"), 1);
    assert_eq!(
        count(&m, "other.op"),
        1,
        "unregistered ops are never assumed pure"
    );
    assert_eq!(count(&m, "func.return"), 1);
}

/// Fails on any function containing `test.print`.
struct RejectPrint;

impl Pass for RejectPrint {
    fn name(&self) -> &str {
        "reject-print"
    }

    fn anchor(&self) -> Anchor {
        Anchor::func()
    }

    fn run(
        &mut self,
        _: &Context,
        m: &mut Module,
        op: OpId,
        _: &mut AnalysisManager,
    ) -> Result<PassResult, Diagnostic> {
        match m
            .nested_ops(op)
            .into_iter()
            .find(|&o| m.op_name(o) == "test.print")
        {
            Some(p) => Err(Diagnostic::error(
                m.loc(p).clone(),
                "prints are not allowed",
            )),
            None => Ok(PassResult::unchanged()),
        }
    }
}

/// Puts a `func.return` at the start of each function, which the verifier rejects.
struct BreakIr;

impl Pass for BreakIr {
    fn name(&self) -> &str {
        "break-ir"
    }

    fn run(
        &mut self,
        _: &Context,
        m: &mut Module,
        op: OpId,
        _: &mut AnalysisManager,
    ) -> Result<PassResult, Diagnostic> {
        let body = m.entry_block(m.regions(op)[0]).unwrap();
        let r = m.create_op(OperationState::new("func.return"));
        m.insert_op(r, ir::InsertPoint::Start(body)).unwrap();
        Ok(PassResult::changed())
    }
}

pub fn test_registry() -> PassRegistry {
    let mut r = default_registry();
    r.register(
        PassInfo::new("reject-print", "Fail on prints", |_| {
            Ok(Box::new(RejectPrint) as Box<dyn Pass>)
        })
        .anchor(Anchor::func()),
    )
    .unwrap();
    r.register(
        PassInfo::new("break-ir", "Produce invalid IR", |_| {
            Ok(Box::new(BreakIr) as Box<dyn Pass>)
        })
        .anchor(Anchor::func()),
    )
    .unwrap();
    r
}

#[test]
fn failure_stops_the_pipeline_and_names_the_pass() {
    let c = ctx();
    let mut m = parse(&c, SAMPLE);
    let seen = Rc::new(RefCell::new(Vec::new()));
    let mut pm = PassManager::parse(
        &test_registry(),
        "reject-print",
        PassManagerConfig::default(),
    )
    .unwrap();
    assert_eq!(
        pm.pipeline_text(),
        "builtin.module(func.func(reject-print))"
    );
    pm.add_pass(Box::new(Trace {
        name: "after",
        seen: seen.clone(),
    }))
    .unwrap();
    let e = pm.run(&c, &mut m, &mut Vec::new()).unwrap_err();
    assert_eq!(
        e.message,
        "pass 'reject-print' failed: prints are not allowed"
    );
    assert!(seen.borrow().is_empty());
}

#[test]
fn verify_each_catches_invalid_ir() {
    let c = ctx();
    let mut m = parse(&c, SAMPLE);
    let mut pm = PassManager::parse(
        &test_registry(),
        "func.func(break-ir)",
        PassManagerConfig::default(),
    )
    .unwrap();
    let e = pm.run(&c, &mut m, &mut Vec::new()).unwrap_err();
    assert_eq!(
        e.message,
        "pass 'break-ir' produced invalid IR: 'func.return' op must be the last operation in the parent block"
    );

    // Without verification the broken IR goes through.
    let mut m = parse(&c, SAMPLE);
    let config = PassManagerConfig {
        verify_each: false,
        ..PassManagerConfig::default()
    };
    let mut pm = PassManager::parse(&test_registry(), "func.func(break-ir)", config).unwrap();
    assert!(pm.run(&c, &mut m, &mut Vec::new()).unwrap());
    assert!(ir::verify(&c, &m).is_err());
}

#[test]
fn passes_refuse_the_wrong_anchor() {
    let mut pm = PassManager::new(PassManagerConfig::default());
    let e = pm
        .nest("test.container")
        .add_pass(Box::new(RejectPrint))
        .unwrap_err();
    assert_eq!(
        e,
        "pass 'reject-print' runs on 'func.func' ops and cannot be scheduled on 'test.container'"
    );
    // On the module, a function pass nests implicitly.
    pm.add_pass(Box::new(RejectPrint)).unwrap();
    assert_eq!(
        pm.pipeline_text(),
        "builtin.module(test.container(),func.func(reject-print))"
    );
}

thread_local! {
    /// How many times `OpCount` was computed on this thread: per thread, since the tests that
    /// compute it run in parallel and only one of them counts.
    static COMPUTED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Counts the ops under an op, and how many times it was computed.
struct OpCount(usize);

impl Analysis for OpCount {
    fn compute(_: &Context, m: &Module, op: OpId) -> Result<Self, Diagnostic> {
        COMPUTED.set(COMPUTED.get() + 1);
        Ok(OpCount(m.nested_ops(op).len()))
    }
}

/// Reads `OpCount`, then optionally changes the IR (appends a `test.print`), preserving it or not.
struct UseCount {
    name: &'static str,
    mutate: bool,
    preserve: bool,
    counts: Rc<RefCell<Vec<usize>>>,
}

impl Pass for UseCount {
    fn name(&self) -> &str {
        self.name
    }

    fn run(
        &mut self,
        ctx: &Context,
        m: &mut Module,
        op: OpId,
        am: &mut AnalysisManager,
    ) -> Result<PassResult, Diagnostic> {
        let n = am.get::<OpCount>(ctx, m, op)?;
        self.counts.borrow_mut().push(n.0);
        if !self.mutate {
            return Ok(PassResult::unchanged());
        }
        let body = m.entry_block(m.regions(op)[0]).unwrap();
        let ret = m.last_op(body).unwrap();
        let p = m.create_op(OperationState::new("test.print"));
        m.insert_op(p, ir::InsertPoint::Before(ret)).unwrap();
        let preserved = if self.preserve {
            PreservedAnalyses::none().preserve::<OpCount>()
        } else {
            PreservedAnalyses::none()
        };
        Ok(PassResult::new(true, preserved))
    }
}

#[test]
fn analyses_are_cached_until_invalidated() {
    let c = ctx();
    let mut m = parse(&c, SAMPLE);
    let counts = Rc::new(RefCell::new(Vec::new()));
    let p = |name, mutate, preserve| {
        Box::new(UseCount {
            name,
            mutate,
            preserve,
            counts: counts.clone(),
        })
    };
    let mut pm = PassManager::new(PassManagerConfig::default());
    let f = pm.nest("func.func");
    f.add_pass(p("read", false, false)).unwrap();
    f.add_pass(p("read-again", false, false)).unwrap();
    f.add_pass(p("mutate", true, false)).unwrap();
    f.add_pass(p("read-after-mutate", false, false)).unwrap();
    f.add_pass(p("mutate-preserving", true, true)).unwrap();
    f.add_pass(p("read-stale", false, false)).unwrap();
    COMPUTED.set(0);
    pm.run(&c, &mut m, &mut Vec::new()).unwrap();
    // Per function: computed once, reused, recomputed after the invalidating change, then kept
    // (stale, as declared) across the preserving change.
    assert_eq!(COMPUTED.get(), 4);
    assert_eq!(*counts.borrow(), [9, 9, 9, 10, 10, 10, 3, 3, 3, 4, 4, 4]);
}

#[test]
fn invalidation_spares_unrelated_ops() {
    let c = ctx();
    let m = parse(&c, SAMPLE);
    let (f, g) = (m.function("f").unwrap(), m.function("g").unwrap());
    let mut am = AnalysisManager::new();
    am.get::<OpCount>(&c, &m, f).unwrap();
    am.get::<OpCount>(&c, &m, g).unwrap();
    am.get::<OpCount>(&c, &m, m.top()).unwrap();
    // A change in @g invalidates @g and the module (its ancestor), not @f.
    am.invalidate(&m, g, &PreservedAnalyses::none());
    assert!(am.cached::<OpCount>(f).is_some());
    assert!(am.cached::<OpCount>(g).is_none());
    assert!(am.cached::<OpCount>(m.top()).is_none());
    am.invalidate(&m, f, &PreservedAnalyses::all());
    assert!(am.cached::<OpCount>(f).is_some());
    assert!(
        PreservedAnalyses::none()
            .preserve::<OpCount>()
            .is_preserved::<OpCount>()
    );
    assert!(!PreservedAnalyses::none().is_preserved::<OpCount>());
}

#[test]
fn opt_limit_stops_a_pass_after_n_rewrites() {
    let c = ctx();
    let src = r#"
module {
  func.func @f(%x: i64) {
    %a = "test.neg"(%x) : (i64) -> i64
    %b = "test.neg"(%x) : (i64) -> i64
    %c = "test.neg"(%x) : (i64) -> i64
    %d = "test.neg"(%x) : (i64) -> i64
    func.return
  }
  func.func @g(%x: i64) {
    %a = "test.neg"(%x) : (i64) -> i64
    func.return
  }
}
"#;
    let run = |limits: &str, pipeline: &str| {
        let mut m = parse(&c, src);
        let config = PassManagerConfig {
            opt_limits: OptLimits::parse(limits).unwrap(),
            ..PassManagerConfig::default()
        };
        let mut pm = PassManager::parse(&default_registry(), pipeline, config).unwrap();
        pm.run(&c, &mut m, &mut Vec::new()).unwrap();
        count(&m, "test.neg")
    };
    assert_eq!(run("", "dce"), 0);
    assert_eq!(run("dce=3", "dce"), 2);
    // The counter spans the runs of the pass on every function.
    assert_eq!(run("dce=4", "func.func(dce)"), 1);
    assert_eq!(run("dce=0", "dce"), 5);
    assert_eq!(run("canonicalize=2", "canonicalize"), 3);
    assert_eq!(run("cse=1", "dce"), 0);
}
