//! Prints the IR an input file imports to: `cargo run -p import --example import_print -- FILE [--generic] [--loc]`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.iter().find(|a| !a.starts_with("--")) else {
        eprintln!("usage: import_print FILE [--generic] [--loc] [--time]");
        return ExitCode::FAILURE;
    };
    let mut ctx = ir::Context::new();
    dialect_prim::register(&mut ctx);
    dialect_aten::register(&mut ctx);
    let start = Instant::now();
    let program = match import::import_file(&ctx, &PathBuf::from(path), None) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let elapsed = start.elapsed();
    let opts = ir::PrintOptions {
        generic: args.iter().any(|a| a == "--generic"),
        debug_info: args.iter().any(|a| a == "--loc"),
    };
    print!("{}", ir::print_module(&ctx, &program.module, opts));
    for (name, w) in program.weights.iter() {
        println!(
            "// weight {name}: {:?} {:?} strides {:?} offset {}",
            w.dtype, w.sizes, w.strides, w.storage_offset
        );
    }
    if args.iter().any(|a| a == "--time") {
        eprintln!("imported in {elapsed:?}");
    }
    ExitCode::SUCCESS
}
