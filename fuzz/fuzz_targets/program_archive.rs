//! Fuzz target `program_archive`: the oracle `support::fuzz::run("program_archive", …)` on every input.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(violation) = support::fuzz::run("program_archive", data) {
        panic!("{violation}");
    }
});
