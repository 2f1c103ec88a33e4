//! Fuzz target `pt2_archive`: the oracle `support::fuzz::run("pt2_archive", …)` on every input.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(violation) = support::fuzz::run("pt2_archive", data) {
        panic!("{violation}");
    }
});
