//! `dialect-opt`: the project's `mlir-opt`.

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let code = driver::opt::main_with_args(args, &mut std::io::stdout().lock(), &mut std::io::stderr().lock());
    std::process::exit(code);
}
