//! The aten dialect's e-graph rewrite rules, as data (`rules.egg`), read by the `egraph` crate.

/// The rule file: `[sound]` rules (exact under IEEE arithmetic given their conditions) and
/// `[fast-math]` rules (only with the peephole pass's `fast-math` option).
pub const RULES: &str = include_str!("rules.egg");
