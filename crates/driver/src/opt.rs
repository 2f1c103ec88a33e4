//! `dialect-opt`: parse (or import) a program, verify it, run a pass pipeline, print it — like `mlir-opt`.

use crate::{default_context, write_atomically};
use clap::Parser;
use ir::diag::check_expected;
use ir::split::split_input;
use ir::{Context, Diagnostic, PrintOptions, parse::parse_module_with_offset, print_module, verify};
use std::io::{Read, Write};
use std::path::PathBuf;

/// Command-line options of `dialect-opt`.
#[derive(Parser, Debug, Clone)]
#[command(name = "dialect-opt", about = "Parse, verify, transform and print programs in the project's IR (like mlir-opt).")]
pub struct OptArgs {
    /// Input file (`-` for standard input).
    #[arg(default_value = "-")]
    pub input: String,
    /// Output file (standard output by default). Written only when everything succeeded.
    #[arg(short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Split the input at `// -----` lines and process each chunk on its own.
    #[arg(long)]
    pub split_input_file: bool,
    /// Check diagnostics against `expected-error`/`expected-warning`/`expected-note` comments.
    #[arg(long)]
    pub verify_diagnostics: bool,
    /// Print every op in the generic form.
    #[arg(long, visible_alias = "mlir-print-op-generic")]
    pub print_op_generic: bool,
    /// Print op locations.
    #[arg(long, visible_alias = "mlir-print-debuginfo")]
    pub print_debuginfo: bool,
    /// Accept ops, types and attributes of dialects that are not registered.
    #[arg(long)]
    pub allow_unregistered_dialect: bool,
    /// The pass pipeline to run, e.g. `builtin.module(func.func(cse))`.
    #[arg(long, value_name = "PIPELINE")]
    pub pass_pipeline: Option<String>,
    /// Skip the verifier after parsing (for inspecting invalid IR).
    #[arg(long)]
    pub no_verify: bool,
    /// List the registered dialects and exit.
    #[arg(long)]
    pub show_dialects: bool,
    /// List the ops of a dialect with their summaries and exit.
    #[arg(long, value_name = "DIALECT")]
    pub list_ops: Option<String>,
}

/// Runs `dialect-opt` with the given arguments; returns the process exit code.
pub fn main_with_args(args: Vec<String>, stdout: &mut dyn Write, stderr: &mut dyn Write) -> i32 {
    let args = crate::normalize_llvm_flags(args);
    let opts = match OptArgs::try_parse_from(args) {
        Ok(o) => o,
        Err(e) => {
            let _ = write!(stderr, "{e}");
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    let mut ctx = default_context();
    ctx.set_allow_unregistered(opts.allow_unregistered_dialect);
    if opts.show_dialects {
        let mut names: Vec<_> = ctx.dialects().map(|d| (d.name.clone(), d.summary.clone())).collect();
        names.sort();
        let _ = writeln!(stdout, "Available Dialects:");
        for (n, s) in names {
            let _ = writeln!(stdout, "  {n:<10} {s}");
        }
        return 0;
    }
    if let Some(d) = &opts.list_ops {
        let ops = ctx.ops_of_dialect(d);
        if ops.is_empty() {
            let _ = writeln!(stderr, "dialect-opt: no registered dialect '{d}'");
            return 1;
        }
        for name in ops {
            let summary = ctx.op_def(name).map(|d| d.summary.clone()).unwrap_or_default();
            let _ = writeln!(stdout, "{name}  {summary}");
        }
        return 0;
    }
    let (name, source) = match read_input(&opts.input) {
        Ok(x) => x,
        Err(e) => {
            let _ = writeln!(stderr, "dialect-opt: {e}");
            return 1;
        }
    };
    let chunks = if opts.split_input_file {
        split_input(&source)
    } else {
        vec![ir::split::Chunk { text: &source, line_offset: 0 }]
    };
    let print = PrintOptions { generic: opts.print_op_generic, debug_info: opts.print_debuginfo };
    let mut outputs = Vec::new();
    let mut failed = false;
    for chunk in &chunks {
        let result = process_chunk(&ctx, &opts, &name, chunk.text, chunk.line_offset, print);
        match result {
            Ok(text) => outputs.push(text),
            Err(diags) => {
                if opts.verify_diagnostics {
                    if let Err(problems) = check_expected(&name, chunk.text, chunk.line_offset, &diags) {
                        for p in problems {
                            let _ = writeln!(stderr, "{p}");
                        }
                        failed = true;
                    }
                } else {
                    for d in &diags {
                        let _ = write!(stderr, "{}", d.render(&name, &source));
                    }
                    failed = true;
                }
                continue;
            }
        }
        if opts.verify_diagnostics {
            if let Err(problems) = check_expected(&name, chunk.text, chunk.line_offset, &[]) {
                for p in problems {
                    let _ = writeln!(stderr, "{p}");
                }
                failed = true;
            }
        }
    }
    if failed {
        return 1;
    }
    let text = outputs.join("// -----\n");
    match &opts.output {
        Some(path) if path.as_os_str() != "-" => {
            if let Err(e) = write_atomically(path, text.as_bytes()) {
                let _ = writeln!(stderr, "dialect-opt: cannot write '{}': {e}", path.display());
                return 1;
            }
        }
        _ => {
            let _ = stdout.write_all(text.as_bytes());
        }
    }
    0
}

fn read_input(input: &str) -> Result<(String, String), String> {
    if input == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).map_err(|e| format!("cannot read standard input: {e}"))?;
        return Ok(("<stdin>".into(), s));
    }
    let bytes = std::fs::read(input).map_err(|e| format!("cannot read '{input}': {e}"))?;
    let s = String::from_utf8(bytes).map_err(|e| format!("'{input}' is not UTF-8 text (byte {})", e.utf8_error().valid_up_to()))?;
    Ok((input.to_string(), s))
}

/// Parses, verifies, transforms and prints one chunk; on failure returns its diagnostics.
fn process_chunk(
    ctx: &Context,
    opts: &OptArgs,
    name: &str,
    text: &str,
    line_offset: u32,
    print: PrintOptions,
) -> Result<String, Vec<Diagnostic>> {
    let m = parse_module_with_offset(ctx, text, name, line_offset).map_err(|d| vec![d])?;
    if !opts.no_verify {
        verify(ctx, &m).map_err(|d| vec![d])?;
    }
    if let Some(p) = &opts.pass_pipeline {
        return Err(vec![Diagnostic::error(ir::Location::Unknown, format!("cannot run pipeline '{p}': no passes are registered"))]);
    }
    Ok(print_module(ctx, &m, print))
}
