//! Fuzz target `ir_text`: the oracle `support::fuzz::run("ir_text", …)` on every input.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(violation) = support::fuzz::run("ir_text", data) {
        panic!("{violation}");
    }
});
