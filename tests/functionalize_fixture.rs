//! `functionalize` on an imported program: the `buffer_mutation` fixture's functionalized
//! `model.pt2` has the result signature of its `core.pt2`.

use ir::{Attribute, Context};
use std::path::PathBuf;

fn run(ctx: &Context, m: &mut ir::Module, pipeline: &str) -> Result<bool, ir::Diagnostic> {
    let mut pm = pass::PassManager::parse(&transforms::pass_registry(), pipeline, pass::PassManagerConfig::default())
        .map_err(|e| ir::Diagnostic::error(ir::Location::Unknown, e.to_string()))?;
    pm.run(ctx, m, &mut Vec::new())
}

/// The result attribute dictionaries of `@forward`.
fn result_attrs(m: &ir::Module) -> Vec<Attribute> {
    let f = m.function("forward").expect("has @forward");
    m.attr(f, ir::builtin::RES_ATTRS).and_then(Attribute::as_array).map(<[_]>::to_vec).unwrap_or_default()
}

fn fixtures() -> Option<PathBuf> {
    let dir = support::shared_fixtures().join("export/buffer_mutation");
    if dir.is_dir() {
        return Some(dir);
    }
    let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    assert!(!ci, "CI is set but the shared fixtures are missing at {}", dir.display());
    println!("skipping: the shared fixtures are missing at {}", dir.display());
    None
}

#[test]
fn buffer_mutation_fixture_matches_the_core_graph_signature() {
    let Some(dir) = fixtures() else { return };
    let ctx = transforms::context();
    let mut program = import::import_file(&ctx, &dir.join("model.pt2"), None).expect("model.pt2 imports");
    let core = import::import_file(&ctx, &dir.join("core.pt2"), None).expect("core.pt2 imports");
    let changed = run(&ctx, &mut program.module, "func.func(functionalize)").expect("functionalizes");
    assert!(changed);
    ir::verify(&ctx, &program.module).expect("functionalized IR verifies");
    let text = ir::print_module(&ctx, &program.module, ir::PrintOptions::default());
    assert!(!text.contains("aten.add_"), "in-place op left:\n{text}");
    let got = result_attrs(&program.module);
    let want = result_attrs(&core.module);
    let mutation = |attrs: &[Attribute]| -> Vec<String> {
        attrs
            .iter()
            .filter_map(|d| d.dict_get("prim.buffer_mutation").and_then(Attribute::as_str).map(str::to_string))
            .collect()
    };
    assert_eq!(mutation(&got), mutation(&want), "buffer mutations:\n{text}");
    assert_eq!(mutation(&got), vec!["count".to_string()]);
    assert_eq!(got.len(), want.len());
    // The buffer's new value comes first, as in torch.export's signature.
    assert!(got[0].dict_get("prim.buffer_mutation").is_some());
}
