//! Runtimes: specializations on input dtypes and shapes, their memory plans, and running a
//! program.

use super::*;
use super::program::{Inner, OutputRole};
use std::sync::Arc;

use ir::{DType, Dim, Type, TypeKind};

use crate::interp::run::Frame;
use crate::interp::Reg;
use crate::plan::{MemoryPlan, PlanState};
use crate::value::IValue;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum KeyEntry {
    Tensor(DType, Vec<usize>),
    Other,
}

/// Input dtypes and shapes (the ArgumentSpec of the JIT).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct SpecKey(Option<Vec<KeyEntry>>);

impl SpecKey {
    pub(super) fn of(inputs: &[IValue], specialize: bool) -> SpecKey {
        if !specialize {
            return SpecKey(None);
        }
        SpecKey(Some(
            inputs
                .iter()
                .map(|v| match v {
                    IValue::Tensor(t) => KeyEntry::Tensor(t.dtype(), t.sizes().to_vec()),
                    _ => KeyEntry::Other,
                })
                .collect(),
        ))
    }

    /// Whether the inputs satisfy this key's guards (no allocation).
    pub(super) fn matches(&self, inputs: &[IValue]) -> bool {
        let Some(entries) = &self.0 else { return true };
        entries.len() == inputs.len()
            && entries.iter().zip(inputs).all(|(e, v)| match (e, v) {
                (KeyEntry::Tensor(d, s), IValue::Tensor(t)) => *d == t.dtype() && s.as_slice() == t.sizes(),
                (KeyEntry::Other, IValue::Tensor(_)) => false,
                (KeyEntry::Other, _) => true,
                _ => false,
            })
    }

    /// Why `inputs` fail the guards, naming the first differing input.
    pub(super) fn mismatch(&self, inputs: &[IValue], names: &[(Reg, Type, String)]) -> Option<(usize, String, String)> {
        let entries = self.0.as_ref()?;
        for (i, (e, v)) in entries.iter().zip(inputs).enumerate() {
            let name = names.get(i).map(|(_, _, n)| n.clone()).unwrap_or_default();
            match (e, v) {
                (KeyEntry::Tensor(d, s), IValue::Tensor(t)) if *d != t.dtype() || s.as_slice() != t.sizes() => {
                    return Some((
                        i,
                        name,
                        format!(
                            "{}{:?} does not match the specialization {}{:?}",
                            t.dtype().mlir_name(),
                            t.sizes(),
                            d.mlir_name(),
                            s
                        ),
                    ));
                }
                _ => {}
            }
        }
        None
    }
}

pub(super) struct LocalSpec {
    pub(super) key: SpecKey,
    pub(super) plan: PlanState,
}

// ------------------------------------------------------------------------------------------
// Runtimes
// ------------------------------------------------------------------------------------------

/// One thread's instance of a compiled program: registers, buffers (state) and memory plans.
/// Cheap to make; not shared between threads (it is `Send`, so it may move to one).
pub struct Runtime {
    pub(super) prog: Arc<Inner>,
    pub(super) frame: Frame,
    pub(super) state: Vec<IValue>,
    pub(super) specs: Vec<LocalSpec>,
    pub(super) current: Option<usize>,
    /// Scratch for symbolic size bindings during validation.
    pub(super) syms: Vec<(Arc<str>, usize, usize)>,
    /// Per-op times of the calls since [`Runtime::set_profiling`] turned profiling on.
    pub(super) profile: Option<super::profile::Profile>,
}

pub(super) fn dtype_name(d: DType) -> &'static str {
    d.mlir_name()
}

impl Runtime {
    /// Runs the program; returns the user outputs, flat (pytree leaves in order).
    pub fn run(&mut self, inputs: &[IValue]) -> Result<Vec<IValue>, ExecError> {
        let mut out = Vec::new();
        self.run_into(inputs, &mut out)?;
        Ok(out)
    }

    /// Runs the program, nesting the outputs as the program's output spec says.
    pub fn run_tree(&mut self, inputs: &[IValue]) -> Result<Outputs, ExecError> {
        let flat = self.run(inputs)?;
        Ok(super::outputs::build(&self.prog.out_spec, &mut flat.into_iter()))
    }

    /// Runs the program, replacing the contents of `outputs` with the flat user outputs
    /// (reusing its capacity).
    pub fn run_into(&mut self, inputs: &[IValue], outputs: &mut Vec<IValue>) -> Result<(), ExecError> {
        outputs.clear();
        let prog = self.prog.clone();
        if inputs.len() != prog.user_inputs.len() {
            return Err(ExecError::InputCount { expected: prog.user_inputs.len(), got: inputs.len() });
        }
        if prog.options.validate_inputs {
            self.validate(&prog, inputs)?;
        }
        let spec = self.select_spec(&prog, inputs)?;
        for ((r, _, _), v) in prog.user_inputs.iter().zip(inputs) {
            if let Some(slot) = self.frame.regs.get_mut(*r as usize) {
                *slot = v.clone();
            }
        }
        for ((r, _, _), v) in prog.buffers.iter().zip(&self.state) {
            if let Some(slot) = self.frame.regs.get_mut(*r as usize) {
                *slot = v.clone();
            }
        }
        let Some(local) = self.specs.get_mut(spec) else {
            return Err(ExecError::Runtime { op: "runtime".into(), loc: "unknown location".into(), message: "lost specialization".into() });
        };
        let result = match &mut self.profile {
            Some(p) => self.frame.run_block_profiled(&prog.func.body, &mut local.plan, &mut p.stats),
            None => self.frame.run_block(&prog.func.body, &mut local.plan),
        };
        if let Err(e) = result {
            self.frame.reset(&prog.func);
            return Err(e);
        }
        outputs.resize(prog.n_user_outputs, IValue::None);
        let state = &mut self.state;
        let mut input_writes: Vec<(usize, IValue)> = Vec::new();
        self.frame.emit_results(&prog.func.body, |k, v| match prog.outputs.get(k) {
            Some(OutputRole::InputMutation(i)) => input_writes.push((*i, v)),
            Some(OutputRole::User(i)) => {
                if let Some(o) = outputs.get_mut(*i) {
                    *o = v;
                }
            }
            Some(OutputRole::Mutation(b)) => {
                if let Some(s) = state.get_mut(*b) {
                    *s = v;
                }
            }
            None => {}
        });
        for (i, v) in input_writes {
            if let (Some(IValue::Tensor(dst)), IValue::Tensor(src)) = (inputs.get(i), &v) {
                dst.copy_(src).map_err(|e| ExecError::Input {
                    name: prog.user_inputs.get(i).map(|(_, _, n)| n.clone()).unwrap_or_default(),
                    index: i,
                    message: format!("writing back the program's in-place update: {e}"),
                })?;
            }
        }
        if prog.options.memory_plan && local.plan.needs_plan() {
            local.plan.install(&prog.intervals, None);
            if let Some((p, metas)) = local.plan.snapshot() {
                if let Ok(mut shared) = prog.shared_plans.write() {
                    shared.retain(|(k, _, _)| *k != local.key);
                    shared.push((local.key.clone(), p, metas));
                    let max = prog.options.max_specializations.max(1);
                    if shared.len() > max {
                        let extra = shared.len() - max;
                        shared.drain(..extra);
                    }
                }
            }
        }
        Ok(())
    }

    /// The runtime's current value of buffer `name`.
    pub fn buffer(&self, name: &str) -> Option<&IValue> {
        let i = self.prog.buffers.iter().position(|(_, n, _)| n == name)?;
        self.state.get(i)
    }

    /// Restores every buffer to the program's initial value.
    pub fn reset_state(&mut self) {
        self.state = self.prog.buffers.iter().map(|(_, _, t)| IValue::Tensor(t.deep_clone().unwrap_or_else(|_| t.clone()))).collect();
    }

    /// Number of specializations this runtime holds.
    pub fn num_specializations(&self) -> usize {
        self.specs.len()
    }

    /// The memory plan of the current specialization, once made.
    pub fn memory_plan(&self) -> Option<&MemoryPlan> {
        self.specs.get(self.current?)?.plan.plan().map(|p| &**p)
    }

    pub(super) fn select_spec(&mut self, prog: &Inner, inputs: &[IValue]) -> Result<usize, ExecError> {
        if let Some(c) = self.current {
            if self.specs.get(c).is_some_and(|s| s.key.matches(inputs)) {
                return Ok(c);
            }
        }
        if let Some(i) = self.specs.iter().position(|s| s.key.matches(inputs)) {
            self.current = Some(i);
            return Ok(i);
        }
        let max = prog.options.max_specializations.max(1);
        if self.specs.len() >= max {
            if prog.options.on_guard_failure == GuardPolicy::Error {
                let mismatch = self.specs.first().and_then(|s| s.key.mismatch(inputs, &prog.user_inputs));
                let (index, name, message) = mismatch.unwrap_or((0, String::new(), "inputs match no specialization".into()));
                return Err(ExecError::Input {
                    name,
                    index,
                    message: format!("{message} (at most {max} specialization(s))"),
                });
            }
            self.specs.remove(0);
        }
        let key = SpecKey::of(inputs, prog.options.specialize);
        let mut plan = PlanState::new(prog.intervals.len());
        if prog.options.memory_plan {
            let shared = prog
                .shared_plans
                .read()
                .ok()
                .and_then(|s| s.iter().find(|(k, _, _)| *k == key).map(|(_, p, m)| (p.clone(), m.clone())));
            if let Some(shared) = shared {
                plan.install(&prog.intervals, Some(shared));
            }
        }
        self.specs.push(LocalSpec { key, plan });
        let i = self.specs.len() - 1;
        self.current = Some(i);
        Ok(i)
    }

    pub(super) fn validate(&mut self, prog: &Inner, inputs: &[IValue]) -> Result<(), ExecError> {
        self.syms.clear();
        for (index, ((_, ty, name), v)) in prog.user_inputs.iter().zip(inputs).enumerate() {
            let fail = |message: String| ExecError::Input { name: name.clone(), index, message };
            match ty.kind() {
                TypeKind::Tensor(tt) => {
                    let IValue::Tensor(t) = v else {
                        return Err(fail(format!("expected a tensor, got {}", v.kind())));
                    };
                    if let Some(d) = tt.dtype {
                        if d != t.dtype() {
                            return Err(fail(format!("expected {}, got {}", dtype_name(d), dtype_name(t.dtype()))));
                        }
                    }
                    let Some(dims) = &tt.shape else { continue };
                    if dims.len() != t.dim() {
                        return Err(fail(format!("expected rank {}, got rank {} (shape {:?})", dims.len(), t.dim(), t.sizes())));
                    }
                    for (k, (d, &size)) in dims.iter().zip(t.sizes()).enumerate() {
                        match d {
                            Dim::Static(n) if *n != size as i64 => {
                                return Err(fail(format!("dimension {k} must be {n}, got {size} (shape {:?})", t.sizes())));
                            }
                            Dim::Sym(s) if is_identifier(s) => {
                                if let Some((lo, hi)) = prog.ranges.get(&**s) {
                                    let sz = size as i64;
                                    if sz < *lo || hi.is_some_and(|h| sz > h) {
                                        let hi = hi.map(|h| h.to_string()).unwrap_or_else(|| "inf".into());
                                        return Err(fail(format!(
                                            "dimension {k} ({s}) is {size}, outside the range [{lo}, {hi}]"
                                        )));
                                    }
                                }
                                match self.syms.iter().find(|(n, _, _)| n == s) {
                                    Some((_, bound, from)) if *bound != size => {
                                        let other = prog.user_inputs.get(*from).map(|(_, _, n)| n.as_str()).unwrap_or("?");
                                        return Err(fail(format!(
                                            "dimension {k} ({s}) is {size}, but {s} is {bound} in input '{other}'"
                                        )));
                                    }
                                    Some(_) => {}
                                    None => self.syms.push((s.clone(), size, index)),
                                }
                            }
                            _ => {}
                        }
                    }
                }
                TypeKind::Int if !matches!(v, IValue::Int(_)) => return Err(fail(format!("expected int, got {}", v.kind()))),
                TypeKind::Float if !matches!(v, IValue::Float(_) | IValue::Int(_)) => {
                    return Err(fail(format!("expected float, got {}", v.kind())));
                }
                TypeKind::Bool if !matches!(v, IValue::Bool(_)) => return Err(fail(format!("expected bool, got {}", v.kind()))),
                _ => {}
            }
        }
        Ok(())
    }
}

pub(super) fn is_identifier(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    pub(super) fn compiled_program_is_send_sync() {
        fn check<T: Send + Sync>() {}
        check::<CompiledProgram>();
        fn send<T: Send>() {}
        send::<Runtime>();
    }
}
