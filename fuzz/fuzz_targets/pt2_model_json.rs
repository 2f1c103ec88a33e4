//! Fuzz target `pt2_model_json`: the oracle `support::fuzz::run("pt2_model_json", …)` on every input.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(violation) = support::fuzz::run("pt2_model_json", data) {
        panic!("{violation}");
    }
});
