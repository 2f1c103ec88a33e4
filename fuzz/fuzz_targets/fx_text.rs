//! Fuzz target `fx_text`: the oracle `support::fuzz::run("fx_text", …)` on every input.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(violation) = support::fuzz::run("fx_text", data) {
        panic!("{violation}");
    }
});
