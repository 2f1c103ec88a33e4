//! `dialect-opt`: parse (or import) a program, verify it, run a pass pipeline, print it — like `mlir-opt`.

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
    /// The pass pipeline to run, e.g. `builtin.module(func.func(canonicalize),dce)`. Each
    /// registered pass also has a flag of its own (`--dce`, `--canonicalize`), appended in order.
    #[arg(long, value_name = "PIPELINE")]
    pub pass_pipeline: Option<String>,
    /// Print the pipeline that will run, in canonical form, to standard error.
    #[arg(long)]
    pub dump_pass_pipeline: bool,
    /// List the registered passes with their options and exit.
    #[arg(long)]
    pub list_passes: bool,
    /// Verify the IR after each pass.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub verify_each: bool,
    /// Print the IR before the named passes.
    #[arg(long, value_delimiter = ',', value_name = "PASSES")]
    pub print_ir_before: Vec<String>,
    /// Print the IR before every pass.
    #[arg(long, visible_alias = "mlir-print-ir-before-all")]
    pub print_ir_before_all: bool,
    /// Print the IR after the named passes.
    #[arg(long, value_delimiter = ',', value_name = "PASSES")]
    pub print_ir_after: Vec<String>,
    /// Print the IR after every pass.
    #[arg(long, visible_alias = "mlir-print-ir-after-all")]
    pub print_ir_after_all: bool,
    /// Print the IR after a pass only when the pass changed it.
    #[arg(long, visible_alias = "mlir-print-ir-after-change")]
    pub print_ir_after_change: bool,
    /// Print the IR after a pass that failed.
    #[arg(long, visible_alias = "mlir-print-ir-after-failure")]
    pub print_ir_after_failure: bool,
    /// Print the whole module when printing IR around passes, not just the pass's anchor op.
    #[arg(long, visible_alias = "mlir-print-ir-module-scope")]
    pub print_ir_module_scope: bool,
    /// Write the IR after each pass into a tree of files under this directory.
    #[arg(long, value_name = "DIR")]
    pub print_ir_tree_dir: Option<PathBuf>,
    /// Print a table of the time spent in each pass.
    #[arg(long, visible_alias = "mlir-timing")]
    pub timing: bool,
    /// Print the statistics the passes report (counters such as rewrites applied), per pass,
    /// after the pipeline ran.
    #[arg(long, visible_alias = "mlir-pass-statistics")]
    pub pass_statistics: bool,
    /// When a pass fails, write its input IR and the pipeline to this file (re-run with `--run-reproducer`).
    #[arg(long, value_name = "FILE")]
    pub reproducer: Option<PathBuf>,
    /// Treat the input as a reproducer: run the pipeline named in its `// configuration:` line.
    #[arg(long)]
    pub run_reproducer: bool,
    /// The input format: pt2, fx, torchscript, archive or ir (default: from the file extension;
    /// text IR when it says nothing).
    #[arg(long, value_name = "FORMAT")]
    pub import: Option<String>,
    /// Also save the (transformed) program, with its weights, as a program archive (`.dar`).
    #[arg(long, value_name = "FILE")]
    pub emit_archive: Option<PathBuf>,
    /// Also save the (transformed) program, with its weights, as a TorchScript archive (`.pt`)
    /// that `torch.jit.load` reads; the file's stem names the archive's top-level folder.
    #[arg(long, value_name = "FILE")]
    pub emit_torchscript: Option<PathBuf>,
    /// Skip the verifier after parsing (for inspecting invalid IR).
    #[arg(long)]
    pub no_verify: bool,
    /// List the registered dialects and exit.
    #[arg(long)]
    pub show_dialects: bool,
    /// Declare the operators of an op library: a file of schemas, one per line
    /// (`mylib::foo(Tensor x) -> Tensor`), for programs that use custom operators. Repeatable.
    #[arg(long, value_name = "FILE")]
    pub op_library: Vec<PathBuf>,
    /// Print the coverage of every ATen op (declared, kernel and its dtypes, out-variant,
    /// decomposition, JIT-fusible), as `docs/op-coverage.md` records it, and exit.
    #[arg(long)]
    pub op_coverage: bool,
    /// List the ops of a dialect with their summaries and exit.
    #[arg(long, value_name = "DIALECT")]
    pub list_ops: Option<String>,
}

/// Runs `dialect-opt` with the given arguments (the built-in dialects and passes); returns the
/// process exit code.
pub fn main_with_args(args: Vec<String>, stdout: &mut dyn Write, stderr: &mut dyn Write) -> i32 {
    opt_main(crate::default_context(), &crate::default_pass_registry(), args, stdout, stderr)
}

/// The tool's name for messages: the file name of `args[0]`, or `fallback` without one.
pub fn tool_name(args: &[String], fallback: &str) -> String {
    args.first()
        .and_then(|a| std::path::Path::new(a).file_stem())
        .and_then(|s| s.to_str())
        .filter(|s| !s.is_empty())
        .unwrap_or(fallback)
        .to_string()
}

/// An `mlir-opt`-style tool over the caller's dialects and passes (MLIR's `MlirOptMain`): parses
/// (or imports) the input, verifies it, runs the pipeline the flags ask for over `passes`, and
/// prints the result. `context` holds the dialects the tool knows (`--op-library` declares more
/// into it); every registered pass also has a flag of its own and is listed by `--list-passes`
/// and `--help`. Messages are prefixed with the file name of `args[0]`. Returns the exit code.
pub fn opt_main(context: Context, passes: &pass::PassRegistry, args: Vec<String>, stdout: &mut dyn Write, stderr: &mut dyn Write) -> i32 {
    let tool = tool_name(&args, "dialect-opt");
    let registry = passes;
    let args = crate::normalize_llvm_flags(args);
    // `--<pass>` and `--<pass>={options}` flags, in order, form a pipeline of their own.
    let (args, pass_flags) = extract_pass_flags(args, registry);
    let command = <OptArgs as clap::CommandFactory>::command()
        .bin_name(tool.clone())
        .after_help(format!("Passes (also flags of their own: --<pass> or --<pass>=\"options\"):\n{}", registry.help_text()));
    let mut opts: OptArgs = match crate::parse_args(command, args, stdout, stderr) {
        Ok(o) => o,
        Err(code) => return code,
    };
    if opts.list_passes {
        let _ = write!(stdout, "{}", registry.help_text());
        return 0;
    }
    if !pass_flags.is_empty() {
        if opts.pass_pipeline.is_some() {
            let _ = writeln!(stderr, "{tool}: use either --pass-pipeline or per-pass flags, not both");
            return 2;
        }
        opts.pass_pipeline = Some(format!("builtin.module({})", pass_flags.join(",")));
    }
    let mut ctx = match crate::declare_libraries(context, &opts.op_library) {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(stderr, "{tool}: {e}");
            return 1;
        }
    };
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
    if opts.op_coverage {
        let _ = write!(stdout, "{}", crate::coverage::report(&ctx));
        return 0;
    }
    if let Some(d) = &opts.list_ops {
        let ops = ctx.ops_of_dialect(d);
        if ops.is_empty() {
            let _ = writeln!(stderr, "{tool}: no registered dialect '{d}'");
            return 1;
        }
        for name in ops {
            let summary = ctx.op_def(name).map(|d| d.summary.clone()).unwrap_or_default();
            let _ = writeln!(stdout, "{name}  {summary}");
        }
        return 0;
    }
    let format = match &opts.import {
        Some(n) => match import::Format::from_name(n) {
            Some(f) => Some(f),
            None => {
                let _ = writeln!(stderr, "{tool}: unknown input format '{n}' (expected one of {})", import::Format::NAMES);
                return 2;
            }
        },
        None if opts.input == "-" => None,
        None => import::Format::from_path(std::path::Path::new(&opts.input)),
    };
    if let Some(f) = format.filter(|f| *f != import::Format::Ir) {
        return run_imported(&ctx, registry, &opts, &tool, f, stdout, stderr);
    }
    let (name, mut source) = match read_input(&opts.input) {
        Ok(x) => x,
        Err(e) => {
            let _ = writeln!(stderr, "{tool}: {e}");
            return 1;
        }
    };
    if opts.run_reproducer {
        match pass::Reproducer::parse(&source) {
            Ok(r) => {
                opts.pass_pipeline = Some(r.pipeline);
                // Keep line numbers: blank out the header instead of dropping it.
                let header_lines = source.len() - r.ir.len();
                source = source[..header_lines].lines().map(|_| "\n").collect::<String>() + &r.ir;
            }
            Err(e) => {
                let _ = writeln!(stderr, "{tool}: {name}: {e}");
                return 1;
            }
        }
    }
    let mut pm = match pass_manager(&opts, registry, &tool, stderr) {
        Ok(pm) => pm,
        Err(code) => return code,
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
        let result = process_chunk(&ctx, &opts, pm.as_mut(), &name, chunk.text, chunk.line_offset, print, stderr);
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
    if opts.emit_archive.is_some() || opts.emit_torchscript.is_some() {
        if chunks.len() != 1 {
            let _ = writeln!(stderr, "{tool}: --emit-archive and --emit-torchscript take a single program, not --split-input-file chunks");
            return 2;
        }
        // Re-parse the printed result: it is exactly the module the passes produced.
        let text = outputs.first().cloned().unwrap_or_default();
        let module = match parse_module_with_offset(&ctx, &text, &name, 0) {
            Ok(m) => m,
            Err(d) => {
                let _ = write!(stderr, "{}", d.render(&name, &text));
                return 1;
            }
        };
        let program = import::Program { module, weights: import::Weights::new() };
        if let Err(code) = save_program(&ctx, &program, &opts, &tool, stderr) {
            return code;
        }
    }
    write_output(&opts, &tool, &outputs.join("// -----\n"), stdout, stderr)
}

/// Imports a program (`.pt2`, FX, TorchScript, archive), runs the pipeline, prints it, and
/// optionally saves it as an archive.
fn run_imported(
    ctx: &Context,
    registry: &pass::PassRegistry,
    opts: &OptArgs,
    tool: &str,
    format: import::Format,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> i32 {
    let path = std::path::Path::new(&opts.input);
    let mut program = match import::import_file(ctx, path, Some(format)) {
        Ok(p) => p,
        Err(e) => {
            let _ = writeln!(stderr, "{tool}: {e}");
            return 1;
        }
    };
    let pm = match pass_manager(opts, registry, tool, stderr) {
        Ok(pm) => pm,
        Err(code) => return code,
    };
    if let Some(mut pm) = pm {
        if let Err(d) = pm.run(ctx, &mut program.module, stderr) {
            let _ = writeln!(stderr, "{d}");
            return 1;
        }
    }
    let print = PrintOptions { generic: opts.print_op_generic, debug_info: opts.print_debuginfo };
    let text = print_module(ctx, &program.module, print);
    if let Err(code) = save_program(ctx, &program, opts, tool, stderr) {
        return code;
    }
    write_output(opts, tool, &text, stdout, stderr)
}

/// Writes the files `--emit-archive` and `--emit-torchscript` ask for; `Err` holds the exit
/// code after a printed error (each file is written whole or not at all).
fn save_program(ctx: &Context, program: &import::Program, opts: &OptArgs, tool: &str, stderr: &mut dyn Write) -> Result<(), i32> {
    let report = |stderr: &mut dyn Write, e: import::ImportError| {
        let _ = writeln!(stderr, "{tool}: {e}");
        1
    };
    if let Some(out) = &opts.emit_archive {
        import::archive::save(ctx, program, out).map_err(|e| report(stderr, e))?;
    }
    if let Some(out) = &opts.emit_torchscript {
        import::torchscript_pt::save::save(ctx, program, out).map_err(|e| report(stderr, e))?;
    }
    Ok(())
}

/// The pass manager for `--pass-pipeline` (with the instrumentation flags and the environment
/// variables), or `None` without a pipeline; `Err` holds the exit code after a printed error.
fn pass_manager(opts: &OptArgs, registry: &pass::PassRegistry, tool: &str, stderr: &mut dyn Write) -> Result<Option<pass::PassManager>, i32> {
    let Some(text) = &opts.pass_pipeline else { return Ok(None) };
    let config = pass_config(opts).with_env().map_err(|e| {
        let _ = writeln!(stderr, "{tool}: {e}");
        2
    })?;
    let pm = pass::PassManager::parse(registry, text, config).map_err(|e| {
        let _ = writeln!(stderr, "{tool}: invalid pass pipeline '{text}': {e}");
        2
    })?;
    if opts.dump_pass_pipeline {
        let _ = writeln!(stderr, "{}", pm.pipeline_text());
    }
    Ok(Some(pm))
}

/// Writes the result to `-o` (through `outfile`'s rule) or standard output; returns the exit code.
fn write_output(opts: &OptArgs, tool: &str, text: &str, stdout: &mut dyn Write, stderr: &mut dyn Write) -> i32 {
    match &opts.output {
        Some(path) if path.as_os_str() != "-" => {
            if let Err(e) = outfile::write(path, text.as_bytes()) {
                let _ = writeln!(stderr, "{tool}: {e}");
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
#[allow(clippy::too_many_arguments)]
fn process_chunk(
    ctx: &Context,
    opts: &OptArgs,
    pm: Option<&mut pass::PassManager>,
    name: &str,
    text: &str,
    line_offset: u32,
    print: PrintOptions,
    instrumentation: &mut dyn Write,
) -> Result<String, Vec<Diagnostic>> {
    let mut m = parse_module_with_offset(ctx, text, name, line_offset).map_err(|d| vec![d])?;
    if !opts.no_verify {
        verify(ctx, &m).map_err(|d| vec![d])?;
    }
    if let Some(pm) = pm {
        pm.run(ctx, &mut m, instrumentation).map_err(|d| vec![d])?;
    }
    Ok(print_module(ctx, &m, print))
}

/// The pass manager configuration the flags ask for.
fn pass_config(opts: &OptArgs) -> pass::PassManagerConfig {
    pass::PassManagerConfig {
        verify_each: opts.verify_each,
        print_ir_before: opts.print_ir_before.clone(),
        print_ir_before_all: opts.print_ir_before_all,
        print_ir_after: opts.print_ir_after.clone(),
        print_ir_after_all: opts.print_ir_after_all,
        print_ir_after_change: opts.print_ir_after_change,
        print_ir_after_failure: opts.print_ir_after_failure,
        print_ir_module_scope: opts.print_ir_module_scope,
        print_ir_tree_dir: opts.print_ir_tree_dir.clone(),
        print_options: PrintOptions { generic: opts.print_op_generic, debug_info: opts.print_debuginfo },
        timing: opts.timing,
        pass_statistics: opts.pass_statistics,
        reproducer_path: opts.reproducer.clone(),
        ..pass::PassManagerConfig::default()
    }
}

/// Splits `--<registered pass>[=options]` flags out of the arguments, returning the rest and
/// the pipeline elements (`name` or `name{options}`) in order.
fn extract_pass_flags(args: Vec<String>, registry: &pass::PassRegistry) -> (Vec<String>, Vec<String>) {
    let mut rest = Vec::with_capacity(args.len());
    let mut passes = Vec::new();
    for (i, a) in args.into_iter().enumerate() {
        let flag = a.strip_prefix("--").filter(|_| i > 0);
        let (name, options) = match flag.map(|f| f.split_once('=').unwrap_or((f, ""))) {
            Some((n, o)) => (n, o),
            None => {
                rest.push(a);
                continue;
            }
        };
        if registry.get(name).is_some() {
            let options = options.trim();
            if options.is_empty() {
                passes.push(name.to_string());
            } else if options.starts_with('{') {
                passes.push(format!("{name}{options}"));
            } else {
                passes.push(format!("{name}{{{options}}}"));
            }
        } else {
            rest.push(a);
        }
    }
    (rest, passes)
}
