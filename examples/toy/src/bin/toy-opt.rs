//! `toy-opt`: the project's opt tool with the toy dialect and its passes.

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let ctx = match toy::context() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("toy-opt: {e}");
            std::process::exit(1);
        }
    };
    let passes = toy::pass_registry();
    let code = driver::opt_main(ctx, &passes, args, &mut std::io::stdout().lock(), &mut std::io::stderr().lock());
    std::process::exit(code);
}
