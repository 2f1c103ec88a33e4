//! E-graph rewrite engine and fusion-group formation.
//!
//! [`engine`] turns runs of pure ops into an [`egg`] e-graph over the generic language of
//! [`lang`], with the e-class analysis of [`analysis`] (types and constant folding); rules are
//! data read by [`rules`] (each dialect ships a rule file; `dialects/aten/src/rules.egg`), with
//! named Rust conditions and appliers from [`builtins`]; [`extract`] picks the cheapest DAG
//! under a memory-traffic cost model; the result is written back as IR. The passes are
//! `egraph-peephole` ([`peephole`]) and `fuse-elementwise` ([`fusion`]). See `docs/egraph.md`.

pub mod analysis;
pub mod builtins;
pub mod engine;
pub mod extract;
pub mod fusion;
pub mod lang;
pub mod peephole;
pub mod rules;

pub use analysis::{Data, Facts, Graph};
pub use engine::{EngineConfig, NodeLimit, RunReport, rewrite_run};
pub use extract::Extractor;
pub use fusion::FuseElementwise;
pub use lang::{Node, Scalar};
pub use peephole::Peephole;
pub use rules::{RuleError, RuleLibrary, RuleSpec};

/// Registers `egraph-peephole` (with the standard rule library) and `fuse-elementwise`.
pub fn register_passes(r: &mut pass::PassRegistry) {
    let lib = match RuleLibrary::standard() {
        Ok(l) => std::sync::Arc::new(l),
        // The built-in rule file is checked by this crate's tests; should it fail to read, the
        // pass still registers and reports the error when built.
        Err(e) => {
            let msg = e.to_string();
            let _ = r.register(pass::PassInfo::new(peephole::NAME, peephole::DESCRIPTION, move |_| Err(msg.clone())).options(Peephole::options()));
            fusion::register(r);
            return;
        }
    };
    peephole::register(r, lib);
    fusion::register(r);
}
