//! Fuzz target `schema`: the oracle `support::fuzz::run("schema", …)` on every input.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(violation) = support::fuzz::run("schema", data) {
        panic!("{violation}");
    }
});
