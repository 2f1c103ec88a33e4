//! Fuzz target `filecheck`: the oracle `support::fuzz::run("filecheck", …)` on every input.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(violation) = support::fuzz::run("filecheck", data) {
        panic!("{violation}");
    }
});
