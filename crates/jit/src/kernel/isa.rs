//! The host ISA: built once per process (and once more with the single-pass register
//! allocator), and what it offers.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};

use crate::error::JitError;

/// The host ISA, built once per process, and how long building it took.
static ISA: OnceLock<(Result<OwnedTargetIsa, String>, Duration)> = OnceLock::new();

/// The host ISA with the single-pass register allocator, built by the first kernel that uses
/// it (see [`isa_for`]).
static QUICK_ISA: OnceLock<Result<OwnedTargetIsa, String>> = OnceLock::new();

pub(super) fn isa() -> Result<OwnedTargetIsa, JitError> {
    ISA.get_or_init(|| build_isa(false)).0.clone().map_err(JitError::Codegen)
}

/// The ISA a kernel is compiled with. A body fissioned with every cut calling a block routine
/// keeps only loads, stores, calls and cheap arithmetic for Cranelift, so the single-pass
/// allocator (a fraction of the backtracking one's time) serves it where compile time weighs
/// most: below [`fission::MIN_ELEMENTS`], where only the routines make fission pay (the LSTM
/// cell's gates run as fast either way). Larger kernels run long enough for the backtracking
/// allocator's code to earn its time back (bench_pointwise's kernel, 4Mi elements, is 9 %
/// slower with single-pass allocation), and every other body needs it for its spill-free
/// inline polynomials.
pub(super) fn isa_for(quick: bool) -> Result<OwnedTargetIsa, JitError> {
    if quick {
        QUICK_ISA.get_or_init(|| build_isa(true).0).clone().map_err(JitError::Codegen)
    } else {
        isa()
    }
}

pub(super) fn build_isa(single_pass: bool) -> (Result<OwnedTargetIsa, String>, Duration) {
    let start = Instant::now();
    let isa = (|| {
        let mut fb = settings::builder();
        // No mid-end optimizer: the code generator emits what it means to run where it should
        // run (see `codegen::Hoist`), and skipping the e-graph pass saves a third of the
        // compile time with kernels as fast as before.
        fb.set("opt_level", "none").map_err(|e| e.to_string())?;
        if single_pass {
            fb.set("regalloc_algorithm", "single_pass").map_err(|e| e.to_string())?;
        }
        // The IR verifier runs in debug builds (tests); release builds skip its cost.
        let verify = if cfg!(debug_assertions) { "true" } else { "false" };
        fb.set("enable_verifier", verify).map_err(|e| e.to_string())?;
        fb.set("is_pic", "false").map_err(|e| e.to_string())?;
        fb.set("use_colocated_libcalls", "false").map_err(|e| e.to_string())?;
        let mut ib = cranelift_native::builder().map_err(|e| e.to_string())?;
        crate::block::cap_flags(&mut ib)?;
        ib.finish(settings::Flags::new(fb)).map_err(|e| e.to_string())
    })();
    (isa, start.elapsed())
}

/// Builds the host ISA now (once per process) rather than in the first compilation; an error
/// is reported by that compilation. Returns the time this call spent building it: zero when
/// an earlier call (or compilation) already had.
pub(crate) fn detect_isa() -> Duration {
    let mut built = None;
    ISA.get_or_init(|| {
        let r = build_isa(false);
        built = Some(r.1);
        r
    });
    built.unwrap_or_default()
}

/// Whether the host ISA has FMA (detected by `cranelift_native`).
pub(super) fn has_fma() -> bool {
    isa().is_ok_and(|isa| isa.isa_flags().iter().any(|f| f.name == "has_fma" && f.as_bool() == Some(true)))
}
