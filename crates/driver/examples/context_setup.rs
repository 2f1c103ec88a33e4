//! Measures how long building the tools' context takes (`driver::default_context`, every
//! dialect with its interfaces) and the part of it spent attaching interfaces.
//!
//! Run with `cargo run --release -p driver --example context_setup`.

use std::time::{Duration, Instant};

fn time(n: u32, mut f: impl FnMut()) -> Duration {
    let start = Instant::now();
    for _ in 0..n {
        f();
    }
    start.elapsed() / n
}

fn main() {
    // The first context parses the schema file; later ones reuse the parsed schemas.
    let first = time(1, || drop(driver::default_context()));
    let n = 50;
    let each = time(n, || drop(driver::default_context()));
    let mut ctx = ir::Context::new();
    let attach = time(n, || {
        dialect_aten::family::attach(&mut ctx);
        jit::attach(&mut ctx);
    });
    println!("default_context: first {first:?}, then {each:?} each (mean of {n})");
    println!("attaching the aten and JIT interfaces: {attach:?}");
}
