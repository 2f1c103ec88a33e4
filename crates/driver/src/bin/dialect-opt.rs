//! `dialect-opt`: the project's `mlir-opt`, over the built-in dialects and passes.

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (ctx, passes) = (driver::default_context(), driver::default_pass_registry());
    let code = driver::opt_main(ctx, &passes, args, &mut std::io::stdout().lock(), &mut std::io::stderr().lock());
    std::process::exit(code);
}
