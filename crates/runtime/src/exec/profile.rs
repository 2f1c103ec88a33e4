//! Per-op timing of a runtime's calls: where a program's time goes, op by op, as ONNX
//! Runtime's session profiling and PyTorch's profiler tell it.
//!
//! With profiling on ([`Runtime::set_profiling`]), every instruction of the program's top
//! level is timed on each call (a `prim.If` or `prim.Loop` with everything it runs, a fusion
//! group as one kernel call); [`Runtime::profile`] reads the totals. Wall time on the calling
//! thread: an op that splits its work across the intra-op team counts until the team is
//! done. The clock is read twice an op (tens of nanoseconds), which the totals include.

use std::time::Duration;

use super::runtime::Runtime;
use crate::interp::{Block, Instr, Kind};
use crate::value::IValue;

/// One top-level instruction's share of the profiled calls.
#[derive(Clone, Debug, PartialEq)]
pub struct OpProfile {
    /// Position in the program's top-level instructions.
    pub index: usize,
    /// The op (`edge.convolution`), a fusion group with the ops it fuses
    /// (`prim.FusionGroup(mul, add, sigmoid)`), or the control-flow op.
    pub op: String,
    /// Where the op came from (the source location the importer recorded).
    pub location: String,
    /// Its first result as last seen: `f32[1, 64, 55, 55]`, or the value's kind.
    pub result: String,
    /// Profiled calls that ran it.
    pub calls: u64,
    /// Its time over those calls.
    pub total: Duration,
}

/// The running totals of one runtime.
#[derive(Clone, Debug, Default)]
pub(crate) struct Profile {
    pub(crate) stats: Vec<OpStat>,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct OpStat {
    pub(crate) calls: u64,
    pub(crate) nanos: u64,
    pub(crate) result: Option<String>,
}

impl Profile {
    pub(crate) fn new(instrs: usize) -> Profile {
        Profile { stats: vec![OpStat::default(); instrs] }
    }
}

/// How a profile names a result value.
pub(crate) fn describe(v: &IValue) -> String {
    match v {
        IValue::Tensor(t) => format!("{}{:?}", t.dtype().mlir_name(), t.sizes()),
        IValue::TensorList(ts) => format!("{} tensors", ts.len()),
        IValue::None => "none".into(),
        IValue::Int(i) => format!("int {i}"),
        IValue::Float(d) => format!("float {d}"),
        IValue::Bool(b) => format!("bool {b}"),
        IValue::Tuple(items) | IValue::List(items) => match items.first() {
            Some(first) => format!("{} ({} values)", describe(first), items.len()),
            None => "()".into(),
        },
        other => other.kind().to_string(),
    }
}

/// The name a profile gives an instruction.
fn op_name(ins: &Instr) -> String {
    match &ins.kind {
        Kind::Fusion { body, .. } => format!("{}({})", ins.name, fused(body)),
        _ => ins.name.to_string(),
    }
}

/// The ops of a fusion group's body by their short names, nested groups in parentheses, the
/// first few of a long one.
fn fused(b: &Block) -> String {
    const SHOWN: usize = 6;
    let mut names: Vec<String> = b
        .instrs
        .iter()
        .filter(|i| !matches!(i.kind, Kind::ListConstruct(_) | Kind::TupleConstruct))
        .map(|i| {
            let short = i.name.split_once('.').map_or(&*i.name, |(_, op)| op);
            match &i.kind {
                Kind::Fusion { body, .. } => format!("{short}({})", fused(body)),
                _ => short.to_string(),
            }
        })
        .collect();
    if names.len() > SHOWN {
        let n = names.len();
        names.truncate(SHOWN);
        names.push(format!("… {n} ops"));
    }
    names.join(", ")
}

impl Runtime {
    /// Starts (or stops) timing each top-level op of every call, clearing what was collected.
    pub fn set_profiling(&mut self, on: bool) {
        self.profile = on.then(|| Profile::new(self.prog.func.body.instrs.len()));
    }

    /// What the profiled calls so far spent in each top-level op, in program order (empty
    /// unless profiling is on).
    pub fn profile(&self) -> Vec<OpProfile> {
        let Some(p) = &self.profile else { return Vec::new() };
        self.prog
            .func
            .body
            .instrs
            .iter()
            .zip(&p.stats)
            .enumerate()
            .map(|(index, (ins, s))| OpProfile {
                index,
                op: op_name(ins),
                location: super::loc_string(&ins.loc),
                result: s.result.clone().unwrap_or_else(|| "-".into()),
                calls: s.calls,
                total: Duration::from_nanos(s.nanos),
            })
            .collect()
    }
}
