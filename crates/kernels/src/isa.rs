//! The instruction set the kernels run on, the one place that asks the CPU what it has.
//!
//! [`Isa::host`] is the best path this CPU runs, detected once. The process runs at most the
//! ISA named by the environment variable `DIALECT_ISA` (`generic`, `avx2` or `avx512`), so every
//! path can be tested and timed on a host that has a better one; a value above the host's is
//! capped at the host's. An unknown value is not a panic: [`from_env`] returns it as an
//! [`IsaError`] (the command-line tools report it and stop), and [`Isa::current`] prints the
//! same message once on standard error and runs the host's best path.
//!
//! A thread can lower its ISA further for the duration of a closure ([`with`]); the intra-op
//! team ([`crate::parallel`]) runs a job's tasks under its caller's ISA, so a kernel that
//! splits its work runs one path on every thread. Tests use it to run each kernel once per
//! ISA the host supports ([`Isa::supported`]).
//!
//! Every kernel chooses its path by asking [`Isa::current`] (or takes an `Isa` its caller got
//! there): nothing else in the project calls `is_x86_feature_detected!`.

use std::cell::Cell;
use std::fmt;
use std::sync::OnceLock;

/// The name of the environment variable that caps the ISA.
pub const ENV: &str = "DIALECT_ISA";

/// An instruction-set path of the kernels, ordered from the least to the most capable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Isa {
    /// Portable code compiled for the baseline target (SSE2 on x86-64): no intrinsics, no
    /// packed GEMM (the runtime's general GEMM multiplies).
    Generic,
    /// AVX2 with FMA and F16C: 8 `f32` lanes.
    Avx2,
    /// AVX-512F (with AVX2 and FMA, which every AVX-512 CPU has): 16 `f32` lanes.
    Avx512,
}

/// `DIALECT_ISA` named no ISA.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{ENV}={0:?} is not an instruction set: use generic, avx2 or avx512")]
pub struct IsaError(pub String);

impl Isa {
    /// Every ISA, least capable first.
    pub const ALL: [Isa; 3] = [Isa::Generic, Isa::Avx2, Isa::Avx512];

    /// The ISA's name as `DIALECT_ISA` spells it.
    pub const fn name(self) -> &'static str {
        match self {
            Isa::Generic => "generic",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
        }
    }

    /// The ISA named `s` (as [`Isa::name`] spells it, in any case).
    pub fn parse(s: &str) -> Result<Isa, IsaError> {
        Isa::ALL
            .into_iter()
            .find(|i| i.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| IsaError(s.to_string()))
    }

    /// The best ISA this CPU runs, detected on the first call.
    pub fn host() -> Isa {
        static HOST: OnceLock<Isa> = OnceLock::new();
        *HOST.get_or_init(detect)
    }

    /// The ISA the process runs: the host's, capped by `DIALECT_ISA` (an unknown value is
    /// reported once on standard error and ignored).
    pub fn process() -> Isa {
        static PROCESS: OnceLock<Isa> = OnceLock::new();
        *PROCESS.get_or_init(|| match from_env() {
            Ok(cap) => cap.map_or(Isa::host(), |c| c.min(Isa::host())),
            Err(e) => {
                eprintln!("warning: {e}; running {}", Isa::host());
                Isa::host()
            }
        })
    }

    /// The ISA kernels called on this thread run: the process's, or lower inside [`with`].
    #[inline]
    pub fn current() -> Isa {
        OVERRIDE.with(Cell::get).unwrap_or_else(Isa::process)
    }

    /// Whether a kernel called on this thread may run this path: it is no better than
    /// [`Isa::current`].
    #[inline]
    pub fn available(self) -> bool {
        self <= Isa::current()
    }

    /// [`Isa::current`] when it has vector kernels (the packed GEMM's microkernels), `None`
    /// on the generic path.
    #[inline]
    pub fn simd() -> Option<Isa> {
        Some(Isa::current()).filter(|&i| i != Isa::Generic)
    }

    /// Every ISA this thread may run, least capable first: what a test runs each kernel on.
    pub fn supported() -> Vec<Isa> {
        Isa::ALL.into_iter().filter(|i| i.available()).collect()
    }
}

impl fmt::Display for Isa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The cap `DIALECT_ISA` sets: `None` when it is unset or empty, an error when it names no ISA.
pub fn from_env() -> Result<Option<Isa>, IsaError> {
    match std::env::var(ENV) {
        Ok(v) if v.trim().is_empty() => Ok(None),
        Ok(v) => Isa::parse(&v).map(Some),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(v)) => Err(IsaError(v.to_string_lossy().into_owned())),
    }
}

thread_local! {
    /// The ISA [`with`] set on this thread, if any.
    static OVERRIDE: Cell<Option<Isa>> = const { Cell::new(None) };
}

/// Runs `f` with [`Isa::current`] lowered to `isa` on this thread (never raised above the
/// process's ISA), and restores the thread's previous ISA afterwards, also when `f` panics.
pub fn with<R>(isa: Isa, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Isa>);
    impl Drop for Restore {
        fn drop(&mut self) {
            OVERRIDE.with(|o| o.set(self.0));
        }
    }
    let isa = isa.min(Isa::current());
    let _restore = Restore(OVERRIDE.with(|o| o.replace(Some(isa))));
    f()
}

fn detect() -> Isa {
    #[cfg(target_arch = "x86_64")]
    {
        // F16C with AVX2 (every AVX2 CPU has it): the AVX2 post-ops round through `f16`.
        let avx2 = std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") && std::is_x86_feature_detected!("f16c");
        if avx2 && std::is_x86_feature_detected!("avx512f") {
            return Isa::Avx512;
        }
        if avx2 {
            return Isa::Avx2;
        }
    }
    Isa::Generic
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_unknown_names_are_errors() {
        for isa in Isa::ALL {
            assert_eq!(Isa::parse(isa.name()), Ok(isa));
            assert_eq!(Isa::parse(&isa.name().to_uppercase()), Ok(isa));
        }
        let e = Isa::parse("sse9").unwrap_err();
        assert!(e.to_string().contains("\"sse9\" is not an instruction set"), "{e}");
    }

    #[test]
    fn with_lowers_the_isa_and_restores_it() {
        let outer = Isa::current();
        with(Isa::Generic, || {
            assert_eq!(Isa::current(), Isa::Generic);
            assert_eq!(Isa::simd(), None);
            // A nested call never raises the ISA.
            with(Isa::Avx512, || assert_eq!(Isa::current(), Isa::Generic));
            assert_eq!(Isa::supported(), vec![Isa::Generic]);
        });
        assert_eq!(Isa::current(), outer);
        let _ = std::panic::catch_unwind(|| with(Isa::Generic, || panic!("unwinds")));
        assert_eq!(Isa::current(), outer);
    }

    #[test]
    fn the_process_runs_at_most_the_host() {
        assert!(Isa::process() <= Isa::host());
        assert_eq!(Isa::supported().first(), Some(&Isa::Generic));
        assert_eq!(Isa::supported().last(), Some(&Isa::current()));
    }
}
