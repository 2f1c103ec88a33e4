//! Fuzz target `safetensors`: the oracle `support::fuzz::run("safetensors", …)` on every input.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(violation) = support::fuzz::run("safetensors", data) {
        panic!("{violation}");
    }
});
