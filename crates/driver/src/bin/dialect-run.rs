//! `dialect-run`: import, compile, run, compare and benchmark programs.

#[global_allocator]
static ALLOC: driver::alloc::Counting = driver::alloc::Counting;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let code = driver::run::main_with_args(args, &mut std::io::stdout().lock(), &mut std::io::stderr().lock());
    std::process::exit(code);
}
