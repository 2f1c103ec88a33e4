//! The "writing a pass" example of docs/passes.md, compiled and run.

use ir::{Context, Diagnostic, Module, OpId};
use pass::{
    AnalysisManager, Anchor, LogConfig, LogLevel, Pass, PassInfo, PassManager, PassManagerConfig,
    PassOptions, PassResult, default_registry,
};

/// Renames every op called `from` to `to` inside a function.
struct RenameOp {
    from: String,
    to: String,
}

impl Pass for RenameOp {
    fn name(&self) -> &str {
        "rename-op"
    }

    fn description(&self) -> &str {
        "Rename operations"
    }

    fn anchor(&self) -> Anchor {
        Anchor::func()
    }

    fn option_text(&self) -> String {
        format!("from={} to={}", self.from, self.to)
    }

    fn run(
        &mut self,
        _: &Context,
        m: &mut Module,
        func: OpId,
        am: &mut AnalysisManager,
    ) -> Result<PassResult, Diagnostic> {
        let mut changed = false;
        for op in m.nested_ops(func) {
            if m.op_name(op) != self.from {
                continue;
            }
            if !am.may_rewrite() {
                break; // DIALECT_OPT_LIMIT reached.
            }
            pass::log!(
                am,
                LogLevel::Update,
                "renaming '{}' to '{}'",
                self.from,
                self.to
            );
            m.rename_op(op, &self.to);
            changed = true;
        }
        Ok(PassResult::from_changed(changed))
    }
}

fn register(registry: &mut pass::PassRegistry) -> Result<(), String> {
    let options = PassOptions::new()
        .string("from", "", "Op to rename")
        .string("to", "", "New name");
    registry.register(
        PassInfo::new("rename-op", "Rename operations", |opts| {
            let from = opts.get_string("from").unwrap_or_default().to_string();
            let to = opts.get_string("to").unwrap_or_default().to_string();
            if from.is_empty() || to.is_empty() {
                return Err("rename-op needs 'from' and 'to'".into());
            }
            Ok(Box::new(RenameOp { from, to }) as Box<dyn Pass>)
        })
        .anchor(Anchor::func())
        .options(options),
    )
}

#[test]
fn writing_a_pass() -> Result<(), Box<dyn std::error::Error>> {
    let mut ctx = Context::new();
    ctx.set_allow_unregistered(true);
    let mut m = ir::parse_module(
        &ctx,
        r#"module {
  func.func @f(%x: i64) -> i64 {
    %y = "old.neg"(%x) : (i64) -> i64
    func.return %y : i64
  }
}"#,
        "input.ir",
    )?;

    let mut registry = default_registry();
    register(&mut registry)?;
    let config = PassManagerConfig {
        log: LogConfig::parse(">rename-op")?,
        ..PassManagerConfig::default()
    };
    let mut pm = PassManager::parse(
        &registry,
        "func.func(rename-op{from=old.neg to=new.neg}),dce",
        config,
    )?;
    assert_eq!(
        pm.pipeline_text(),
        "builtin.module(func.func(rename-op{from=old.neg to=new.neg}),dce)"
    );

    let mut log = Vec::new();
    let changed = pm.run(&ctx, &mut m, &mut log)?;
    assert!(changed);
    assert!(ir::print_module(&ctx, &m, ir::PrintOptions::default()).contains("\"new.neg\"(%x)"));
    assert_eq!(
        String::from_utf8(log)?,
        "[UPDATE rename-op] renaming 'old.neg' to 'new.neg'\n"
    );
    Ok(())
}
