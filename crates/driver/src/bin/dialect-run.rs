//! `dialect-run`: import, compile, run, compare and benchmark programs, over the built-in
//! dialects, passes and kernels.

#[global_allocator]
static ALLOC: driver::alloc::Counting = driver::alloc::Counting;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (ctx, passes) = (driver::default_context(), driver::default_pass_registry());
    let code = driver::run_main(ctx, &passes, runtime::registry(), args, &mut std::io::stdout().lock(), &mut std::io::stderr().lock());
    std::process::exit(code);
}
