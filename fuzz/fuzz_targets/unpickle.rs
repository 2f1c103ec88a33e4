//! Fuzz target `unpickle`: the oracle `support::fuzz::run("unpickle", …)` on every input.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(violation) = support::fuzz::run("unpickle", data) {
        panic!("{violation}");
    }
});
