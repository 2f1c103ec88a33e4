//! `test-alias-analysis`: prints what [`AliasDb`] concludes about a function, for lit tests.
//!
//! For each function it writes to the instrumentation output (stderr in `dialect-opt`):
//!
//! ```text
//! alias-analysis @f
//! alias %a %r: may
//! alias %a %b: no
//! writes aten.add_.Tensor %a1: %a, %r
//! move %x before %y: refused
//! ```
//!
//! Pairs cover the named values of mutable type, in program order. `writes` lists each op that
//! writes (nested writes count for the enclosing op) and the named values it may write. An op
//! carrying `test.move_before = "y"` or `test.move_after = "y"` asks whether it may move just
//! before (after) the op defining `%y`.

use super::alias::{AliasDb, is_mutable_type};
use ir::{Attribute, Context, Diagnostic, Module, OpId, ValueId, WalkOrder};
use pass::AnalysisManager;
use std::fmt::Write as _;

fn name(m: &Module, v: ValueId) -> Option<String> {
    m.value_name(v).map(|n| format!("%{n}"))
}

/// Writes the report of `func`; changes nothing.
pub fn run_test_alias(ctx: &Context, m: &mut Module, func: OpId, am: &mut AnalysisManager) -> Result<usize, Diagnostic> {
    let db = am.get::<AliasDb>(ctx, m, func)?;
    let mut values = Vec::new();
    let mut ops = Vec::new();
    m.walk(func, WalkOrder::PreOrder, &mut |o| ops.push(o));
    for &o in &ops {
        for &r in m.regions(o) {
            for &b in m.region_blocks(r) {
                values.extend(m.block_args(b).iter().copied());
            }
        }
        if o != func {
            values.extend(m.results(o).iter().copied());
        }
    }
    let named: Vec<(ValueId, String)> = values
        .into_iter()
        .filter(|&v| is_mutable_type(m.value_type(v)))
        .filter_map(|v| name(m, v).map(|n| (v, n)))
        .collect();
    let fname = m.attr(func, ir::builtin::SYM_NAME).and_then(Attribute::as_str).unwrap_or("?").to_string();
    let mut out = format!("alias-analysis @{fname}\n");
    for (i, (a, an)) in named.iter().enumerate() {
        for (b, bn) in &named[i + 1..] {
            let verdict = if db.may_alias(*a, *b) { "may" } else { "no" };
            let _ = writeln!(out, "alias {an} {bn}: {verdict}");
        }
    }
    for &o in &ops[1..] {
        if !db.is_mutable_op(o) {
            continue;
        }
        let written: Vec<&str> = named.iter().filter(|(v, _)| db.writes_value(o, *v)).map(|(_, n)| n.as_str()).collect();
        let label = m.results(o).first().and_then(|&r| name(m, r)).map(|n| format!(" {n}")).unwrap_or_default();
        let _ = writeln!(out, "writes {}{label}: {}", m.op_name(o), written.join(", "));
    }
    for &o in &ops[1..] {
        for (key, before) in [("test.move_before", true), ("test.move_after", false)] {
            let Some(target_name) = m.attr(o, key).and_then(Attribute::as_str) else { continue };
            let target = named
                .iter()
                .chain(std::iter::empty())
                .find(|(_, n)| n.trim_start_matches('%') == target_name)
                .and_then(|(v, _)| m.defining_op(*v))
                .or_else(|| find_named_op(m, &ops, target_name));
            let who = m.results(o).first().and_then(|&r| name(m, r)).unwrap_or_else(|| m.op_name(o).to_string());
            let verdict = match target {
                Some(t) if before => db.move_before_topologically_valid(m, o, t),
                Some(t) => db.move_after_topologically_valid(m, o, t),
                None => false,
            };
            let _ = writeln!(
                out,
                "move {who} {} %{target_name}: {}",
                if before { "before" } else { "after" },
                if verdict { "valid" } else { "refused" }
            );
        }
    }
    am.output().push_str(&out);
    Ok(0)
}

/// The op whose first result is named `n` (for values of immutable type).
fn find_named_op(m: &Module, ops: &[OpId], n: &str) -> Option<OpId> {
    ops.iter().copied().find(|&o| m.results(o).first().is_some_and(|&r| m.value_name(r) == Some(n)))
}
