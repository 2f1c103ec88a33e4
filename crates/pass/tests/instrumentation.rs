//! Instrumentation: IR printing before/after passes, after changes, tree dumps, timing,
//! `DIALECT_LOG` logging, and failure reproducers.

mod common;

use common::{SAMPLE, count, ctx, parse};
use pass::{
    Anchor, LogConfig, LogLevel, OptLimits, Pass, PassInfo, PassManager, PassManagerConfig,
    PassRegistry, Reproducer, default_registry,
};
use std::path::PathBuf;

fn run(pipeline: &str, config: PassManagerConfig) -> (String, Result<bool, ir::Diagnostic>) {
    run_with(&default_registry(), pipeline, config)
}

fn run_with(
    r: &PassRegistry,
    pipeline: &str,
    config: PassManagerConfig,
) -> (String, Result<bool, ir::Diagnostic>) {
    let c = ctx();
    let mut m = parse(&c, SAMPLE);
    let mut pm = PassManager::parse(r, pipeline, config).unwrap();
    let mut out = Vec::new();
    let res = pm.run(&c, &mut m, &mut out);
    (String::from_utf8(out).unwrap(), res)
}

fn headers(out: &str) -> Vec<&str> {
    out.lines()
        .filter(|l| l.starts_with("// -----//"))
        .collect()
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pass-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn print_ir_after_change_skips_passes_that_change_nothing() {
    let config = PassManagerConfig {
        print_ir_after_change: true,
        ..PassManagerConfig::default()
    };
    let (out, res) = run("verify,func.func(dce),verify,dce", config);
    assert!(res.unwrap());
    // `dce` changes @f and @g; the module-level `dce` afterwards finds nothing.
    assert_eq!(
        headers(&out),
        [
            "// -----// IR Dump After dce ('func.func' operation: @f) //----- //",
            "// -----// IR Dump After dce ('func.func' operation: @g) //----- //",
        ]
    );
    assert!(!out.contains("%dead"), "{out}");
}

#[test]
fn print_ir_before_and_after_selected_passes() {
    let config = PassManagerConfig {
        print_ir_before: vec!["dce".into()],
        print_ir_after: vec!["verify".into()],
        ..PassManagerConfig::default()
    };
    let (out, res) = run("dce,verify", config);
    res.unwrap();
    assert_eq!(
        headers(&out),
        [
            "// -----// IR Dump Before dce ('builtin.module' operation) //----- //",
            "// -----// IR Dump After verify ('builtin.module' operation) //----- //",
        ]
    );
    let config = PassManagerConfig {
        print_ir_after_all: true,
        print_ir_module_scope: true,
        ..PassManagerConfig::default()
    };
    let (out, _) = run("func.func(dce,verify)", config);
    assert_eq!(headers(&out).len(), 4);
    // Module scope prints the whole module even for function passes.
    assert_eq!(out.matches("module {").count(), 4, "{out}");
}

#[test]
fn print_ir_pass_writes_to_the_instrumentation_output() {
    let (out, res) = run(
        "func.func(print-ir{label=\"at start\"})",
        PassManagerConfig::default(),
    );
    assert!(!res.unwrap());
    assert_eq!(
        out.matches("// -----// IR Dump at start //----- //")
            .count(),
        2
    );
    assert!(out.contains("func.func @f"), "{out}");
    assert!(out.contains("func.func @g"), "{out}");
}

#[test]
fn tree_dir_gets_one_file_per_pass_per_anchor() {
    let dir = temp_dir("tree");
    let config = PassManagerConfig {
        print_ir_tree_dir: Some(dir.clone()),
        ..PassManagerConfig::default()
    };
    let (_, res) = run("func.func(dce,verify),verify", config);
    res.unwrap();
    let mut files = Vec::new();
    collect(&dir, &dir, &mut files);
    files.sort();
    assert_eq!(
        files,
        [
            "builtin_module/0_verify.ir",
            "builtin_module/func_func_f/0_dce.ir",
            "builtin_module/func_func_f/1_verify.ir",
            "builtin_module/func_func_g/0_dce.ir",
            "builtin_module/func_func_g/1_verify.ir",
        ]
    );
    let f = std::fs::read_to_string(dir.join("builtin_module/func_func_f/0_dce.ir")).unwrap();
    assert!(f.starts_with("func.func @f"), "{f}");
    assert!(!f.contains("%dead"), "{f}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn collect(root: &std::path::Path, d: &std::path::Path, out: &mut Vec<String>) {
    for e in std::fs::read_dir(d).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            collect(root, &p, out);
        } else {
            out.push(
                p.strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/"),
            );
        }
    }
}

#[test]
fn timing_report_has_a_row_per_pass() {
    let config = PassManagerConfig {
        timing: true,
        ..PassManagerConfig::default()
    };
    let c = ctx();
    let mut m = parse(&c, SAMPLE);
    let mut pm = PassManager::parse(
        &default_registry(),
        "func.func(dce,canonicalize),verify",
        config,
    )
    .unwrap();
    let mut out = Vec::new();
    pm.run(&c, &mut m, &mut out).unwrap();
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains("... Execution time report ..."), "{out}");
    assert!(out.contains("  Total Execution Time: "), "{out}");
    assert!(
        out.contains("  -----Wall Time-----  ----Runs----  ----Name----\n"),
        "{out}"
    );
    let row = |name: &str| {
        out.lines()
            .find(|l| l.ends_with(&format!("  {name}")))
            .unwrap_or_else(|| panic!("{name}: {out}"))
            .to_string()
    };
    for (name, runs) in [
        ("dce", 2),
        ("canonicalize", 2),
        ("verify", 1),
        ("(V) verifier", 5),
    ] {
        let r = row(name);
        let fields: Vec<&str> = r.split_whitespace().collect();
        assert!(fields[1].starts_with('(') && r.contains("%)"), "{r}");
        assert!(r.contains(&format!(" {runs}  {name}")), "{r}");
    }
    assert!(row("Total").contains("(100.0%)"), "{out}");
    let rows: Vec<(&str, usize)> = pm
        .timing()
        .rows()
        .iter()
        .map(|r| (r.0.as_str(), r.2))
        .collect();
    assert_eq!(
        rows,
        [
            ("dce", 2),
            ("(V) verifier", 5),
            ("canonicalize", 2),
            ("verify", 1)
        ]
    );
}

#[test]
fn log_env_value_is_parsed() {
    let l = LogConfig::parse("dce:>cse:>>canonicalize").unwrap();
    assert_eq!(l.level("dce"), Some(LogLevel::Dump));
    assert_eq!(l.level("cse"), Some(LogLevel::Update));
    assert_eq!(l.level("canonicalize"), Some(LogLevel::Debug));
    assert_eq!(l.level("inline"), None);
    assert!(l.enabled("cse", LogLevel::Dump));
    assert!(l.enabled("cse", LogLevel::Update));
    assert!(!l.enabled("cse", LogLevel::Debug));
    assert!(LogConfig::parse("").unwrap().is_empty());
    assert!(
        LogConfig::parse("::dce:")
            .unwrap()
            .enabled("dce", LogLevel::Dump)
    );
    assert_eq!(
        LogConfig::parse(">>>dce").unwrap_err(),
        "DIALECT_LOG: too many '>' (3) before 'dce'; at most two"
    );
    assert_eq!(
        LogConfig::parse("a b").unwrap_err(),
        "DIALECT_LOG: invalid pass name 'a b'"
    );
}

#[test]
fn opt_limit_env_value_is_parsed() {
    let o = OptLimits::parse("cse=3:dce=10").unwrap();
    assert_eq!(o.limit("cse"), Some(3));
    assert_eq!(o.limit("dce"), Some(10));
    assert_eq!(o.limit("canonicalize"), None);
    assert!(OptLimits::parse("").unwrap().is_empty());
    assert_eq!(
        OptLimits::parse("cse").unwrap_err(),
        "DIALECT_OPT_LIMIT: expected 'pass=N', found 'cse'"
    );
    assert_eq!(
        OptLimits::parse("cse=-1").unwrap_err(),
        "DIALECT_OPT_LIMIT: expected a non-negative count for 'cse', found '-1'"
    );
}

#[test]
fn passes_log_at_the_enabled_level() {
    let config = PassManagerConfig {
        log: LogConfig::parse(">dce").unwrap(),
        ..PassManagerConfig::default()
    };
    let (out, res) = run("func.func(dce)", config);
    res.unwrap();
    assert!(out.contains("[UPDATE dce] erasing 'test.add'\n"), "{out}");
    assert!(out.contains("[DUMP dce] erased 1 op(s)\n"), "{out}");
    assert!(out.contains("[DUMP dce] erased 2 op(s)\n"), "{out}");
    let config = PassManagerConfig {
        log: LogConfig::parse("dce").unwrap(),
        ..PassManagerConfig::default()
    };
    let (out, _) = run("func.func(dce)", config);
    assert!(!out.contains("UPDATE"), "{out}");
    assert!(out.contains("[DUMP dce]"), "{out}");
    let (out, _) = run("func.func(dce)", PassManagerConfig::default());
    assert!(out.is_empty(), "{out}");
}

#[test]
fn opt_limit_is_reported_in_the_log() {
    let config = PassManagerConfig {
        log: LogConfig::parse("dce").unwrap(),
        opt_limits: OptLimits::parse("dce=1").unwrap(),
        ..PassManagerConfig::default()
    };
    let (out, _) = run("func.func(dce)", config);
    assert!(
        out.contains("[DUMP dce] optimization limit reached for 'dce'\n"),
        "{out}"
    );
}

/// Fails on functions containing `test.print`.
struct RejectPrint;

impl Pass for RejectPrint {
    fn name(&self) -> &str {
        "reject-print"
    }

    fn anchor(&self) -> Anchor {
        Anchor::func()
    }

    fn option_text(&self) -> String {
        "strict=true".into()
    }

    fn run(
        &mut self,
        _: &ir::Context,
        m: &mut ir::Module,
        op: ir::OpId,
        _: &mut pass::AnalysisManager,
    ) -> Result<pass::PassResult, ir::Diagnostic> {
        match m
            .nested_ops(op)
            .into_iter()
            .find(|&o| m.op_name(o) == "test.print")
        {
            Some(p) => Err(ir::Diagnostic::error(
                m.loc(p).clone(),
                "prints are not allowed",
            )),
            None => Ok(pass::PassResult::unchanged()),
        }
    }
}

fn registry() -> PassRegistry {
    let mut r = default_registry();
    r.register(
        PassInfo::new("reject-print", "Fail on prints", |_| {
            Ok(Box::new(RejectPrint) as Box<dyn Pass>)
        })
        .anchor(Anchor::func())
        .options(pass::PassOptions::new().bool("strict", false, "unused")),
    )
    .unwrap();
    r
}

#[test]
fn failure_writes_a_reproducer_that_reruns() {
    let dir = temp_dir("repro");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("repro.ir");
    let config = PassManagerConfig {
        reproducer_path: Some(path.clone()),
        print_ir_after_failure: true,
        ..PassManagerConfig::default()
    };
    let (out, res) = run_with(
        &registry(),
        "func.func(dce,reject-print{strict=true}),verify",
        config,
    );
    let e = res.unwrap_err();
    assert_eq!(
        e.message,
        "pass 'reject-print' failed: prints are not allowed"
    );
    let note = &e.notes[0].message;
    assert!(
        note.starts_with("reproducer written to ")
            && note.contains("dialect-opt --run-reproducer "),
        "{note}"
    );
    assert_eq!(
        headers(&out),
        ["// -----// IR Dump After reject-print Failed ('func.func' operation: @f) //----- //"]
    );

    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with("// configuration: --pass-pipeline='builtin.module(func.func(reject-print{strict=true}))'\n"),
        "{text}"
    );
    let repro = Reproducer::parse(&text).unwrap();
    assert_eq!(
        repro.pipeline,
        "builtin.module(func.func(reject-print{strict=true}))"
    );
    // The IR is the failing pass's input: after `dce` ran on @f, before it ran on @g.
    let c = ctx();
    let mut m = parse(&c, &repro.ir);
    assert_eq!(count(&m, "test.add"), 3);
    // The whole file is also plain IR.
    parse(&c, &text);
    // Re-running the reproducer fails the same way.
    let mut pm =
        PassManager::parse(&registry(), &repro.pipeline, PassManagerConfig::default()).unwrap();
    let e2 = pm.run(&c, &mut m, &mut Vec::new()).unwrap_err();
    assert_eq!(e2.message, e.message);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn reproducer_text_round_trips() {
    let r = Reproducer::new("builtin.module(x{name='a b'})", "module {\n}\n");
    let text = r.to_text("error: it broke\nsecond line");
    assert_eq!(
        text,
        "// configuration: --pass-pipeline='builtin.module(x{name='\\''a b'\\''})'\n// error: it broke\n// second line\nmodule {\n}\n"
    );
    assert_eq!(Reproducer::parse(&text).unwrap(), r);
    assert_eq!(
        Reproducer::parse("// configuration: --pass-pipeline=\"dce,cse\" --other\nmodule {}\n")
            .unwrap(),
        Reproducer::new("dce,cse", "module {}\n")
    );
    assert!(
        Reproducer::parse("module {}")
            .unwrap_err()
            .starts_with("not a reproducer")
    );
    assert!(Reproducer::parse("// configuration: --pass-pipeline='dce\nmodule {}").is_err());
}
