//! Command-line tools: `dialect-opt`, `dialect-run` and `filecheck`, as libraries the thin binaries call.
//!
//! [`opt_main`] and [`run_main`] are the tools with the dialects, passes and kernels supplied by
//! the caller, so a dialect kept in its own crate builds its own `-opt` and `-run` tools on them
//! (as `examples/toy` does) without changing this crate.

pub mod alloc;
pub mod fixture;
pub mod opt;
pub mod pipeline;
pub mod run;

use ir::Context;

/// A context with every dialect this project ships registered, and the interfaces the crates
/// above the dialects attach to their ops (the JIT's lowerings).
pub fn default_context() -> Context {
    let mut ctx = Context::new();
    dialect_prim::register(&mut ctx);
    dialect_aten::register(&mut ctx);
    dialect_edge::register(&mut ctx);
    dialect_backend::register(&mut ctx);
    jit::attach(&mut ctx);
    ctx
}

/// [`default_context`] with the operators of the op libraries at `paths` declared
/// (`--op-library`: one schema per line, [`dialect_aten::register_library`]).
pub fn context_with_libraries(paths: &[std::path::PathBuf]) -> Result<Context, String> {
    declare_libraries(default_context(), paths)
}

/// `ctx` with the operators of the op libraries at `paths` declared.
pub fn declare_libraries(mut ctx: Context, paths: &[std::path::PathBuf]) -> Result<Context, String> {
    for p in paths {
        let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
        dialect_aten::register_library(&mut ctx, &text, &p.display().to_string()).map_err(|e| e.to_string())?;
    }
    Ok(ctx)
}

/// Parses a tool's arguments with `command`: errors go to `stderr` (exit code 2), `--help` and
/// `--version` to `stdout` (exit code 0); `Err` holds the exit code.
pub fn parse_args<T: clap::FromArgMatches>(
    command: clap::Command,
    args: Vec<String>,
    stdout: &mut dyn std::io::Write,
    stderr: &mut dyn std::io::Write,
) -> Result<T, i32> {
    match command.try_get_matches_from(args).and_then(|m| T::from_arg_matches(&m)) {
        Ok(o) => Ok(o),
        Err(e) if e.use_stderr() => {
            let _ = write!(stderr, "{e}");
            Err(2)
        }
        Err(e) => {
            let _ = write!(stdout, "{e}");
            Err(0)
        }
    }
}

pub mod coverage;
pub use opt::opt_main;
pub use pipeline::{pipeline_for_level, pipeline_stages};
pub use run::{RunTool, run_main, run_main_with};

/// The passes every tool offers: the pass manager's own, `transforms`' (`canonicalize` with
/// its patterns among them), `egraph`'s and `default-pipeline`.
pub fn default_pass_registry() -> pass::PassRegistry {
    let mut r = pass::PassRegistry::new();
    pass::register_builtin_passes(&mut r);
    transforms::register_passes(&mut r);
    egraph::register_passes(&mut r);
    pipeline::register(&mut r);
    r
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
