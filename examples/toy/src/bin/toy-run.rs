//! `toy-run`: the project's run tool with the toy dialect, its passes and its kernel; `-O1` and
//! up lower toy to ATen (`toy-to-aten`) before the level's pipeline.

// [doc:toy-run]
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let context = match toy::context() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("toy-run: {e}");
            std::process::exit(1);
        }
    };
    let (passes, kernels) = (toy::pass_registry(), toy::kernel_registry());
    let tool = driver::RunTool { context, passes: &passes, kernels: &kernels, lowering: vec![toy::lowering::PASS.to_string()] };
    // Unlocked: the `toy.print` kernel writes to standard output while the tool runs.
    let code = driver::run_main_with(tool, args, &mut std::io::stdout(), &mut std::io::stderr());
    std::process::exit(code);
}
// [/doc:toy-run]
