//! The `filecheck` binary: LLVM's FileCheck, implemented by the `filecheck` crate.

fn main() {
    let code = filecheck::main_with_io(
        std::env::args(),
        &mut std::io::stdin().lock(),
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    );
    std::process::exit(code);
}
