//! Command-line tools: `dialect-opt`, `dialect-run` and `filecheck`, as libraries the thin binaries call.

pub mod alloc;
pub mod opt;
pub mod run;

use ir::Context;

/// A context with every dialect this project ships registered, and the interfaces the crates
/// above the dialects attach to their ops (the JIT's lowerings).
pub fn default_context() -> Context {
    let mut ctx = Context::new();
    dialect_prim::register(&mut ctx);
    dialect_aten::register(&mut ctx);
    dialect_toy::register(&mut ctx);
    dialect_edge::register(&mut ctx);
    dialect_backend::register(&mut ctx);
    jit::attach(&mut ctx);
    ctx
}

/// The passes every tool offers.
pub fn default_pass_registry() -> pass::PassRegistry {
    let mut r = pass::default_registry();
    transforms::register_passes(&mut r);
    egraph::register_passes(&mut r);
    r
}

/// The pass pipeline of `-O<level>` over every pass the tools offer: at `-O2` it forms fusion
/// groups (`fuse-elementwise`) before partitioning.
pub fn pipeline_for_level(level: u32) -> String {
    transforms::lowering::pipeline_text_for(&default_pass_registry(), level, &mut Vec::new())
}

/// Rewrites LLVM-style single-dash long options (`-split-input-file`) to `--split-input-file`,
/// so command lines written for `mlir-opt` work unchanged. `-o` and other one-letter flags stay.
pub fn normalize_llvm_flags(args: impl IntoIterator<Item = String>) -> Vec<String> {
    args.into_iter()
        .enumerate()
        .map(|(i, a)| {
            let long_single_dash = i > 0
                && a.starts_with('-')
                && !a.starts_with("--")
                && a.len() > 2
                && a.as_bytes()[1].is_ascii_alphabetic()
                && !a.starts_with("-o");
            if long_single_dash { format!("-{a}") } else { a }
        })
        .collect()
}
