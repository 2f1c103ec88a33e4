//! Fuzz target `torchscript_source`: the oracle `support::fuzz::run("torchscript_source", …)` on
//! every input (the TorchScript source of an archive's root module, parsed and compiled).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(violation) = support::fuzz::run("torchscript_source", data) {
        panic!("{violation}");
    }
});
