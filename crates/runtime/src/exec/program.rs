//! Compiled programs: binding a function's arguments, linearizing its body, and what a
//! compiled program tells about itself.

use super::*;
use super::runtime::SpecKey;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, RwLock};

use ir::{Attribute, Context, Module, Type};

use crate::fusion::FusionDecision;
use crate::interp::linearize::{LinearizeOptions, linearize};
use crate::interp::out::Meta;
use crate::interp::partition;
use crate::interp::run::Frame;
use crate::interp::{Function, Reg};
use crate::kernels::{KernelRegistry, registry};
use crate::plan::{Interval, MemoryPlan};
use crate::tensor::Tensor;
use crate::value::IValue;

/// Where a function argument's value comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InputKind {
    /// A user input, by name.
    User,
    Parameter,
    Buffer,
    Constant,
}

/// One argument of the compiled function.
#[derive(Clone, Debug)]
pub struct InputInfo {
    pub name: String,
    pub kind: InputKind,
    pub ty: Type,
}

#[derive(Clone, Debug)]
pub(super) enum OutputRole {
    /// User output `i` (its position among the user outputs).
    User(usize),
    /// Written back into buffer `k` of the runtime's state.
    Mutation(usize),
    /// The new value of user input `i`, copied into the caller's tensor after the run (what
    /// PyTorch's exported program does for an input it mutates in place).
    InputMutation(usize),
}

/// Range constraints of symbolic sizes: name → (min, max).
pub(super) type Ranges = HashMap<String, (i64, Option<i64>)>;

pub(super) struct Inner {
    pub(super) func: Function,
    /// (argument register, signature type, name) of each user input, in order.
    pub(super) user_inputs: Vec<(Reg, Type, String)>,
    /// (argument register, name, initial value) of each buffer.
    pub(super) buffers: Vec<(Reg, String, Tensor)>,
    pub(super) outputs: Vec<OutputRole>,
    pub(super) n_user_outputs: usize,
    pub(super) out_spec: OutSpec,
    pub(super) args: Vec<InputInfo>,
    pub(super) ranges: Ranges,
    pub(super) intervals: Vec<Interval>,
    pub(super) options: CompileOptions,
    /// What the fusion compiler made of each fusion group.
    pub(super) fusion: Vec<FusionDecision>,
    /// Memory plans other runtimes have made, by specialization key.
    pub(super) shared_plans: RwLock<Vec<(SpecKey, Arc<MemoryPlan>, Vec<Option<Meta>>)>>,
}

/// A compiled program: immutable, `Send + Sync`, shared by any number of [`Runtime`]s.
#[derive(Clone)]
pub struct CompiledProgram {
    pub(super) inner: Arc<Inner>,
}

impl fmt::Debug for CompiledProgram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompiledProgram")
            .field("inputs", &self.inner.user_inputs.iter().map(|(_, t, n)| format!("{n}: {t}")).collect::<Vec<_>>())
            .field("registers", &self.inner.func.num_regs)
            .field("planned_values", &self.inner.intervals.len())
            .finish()
    }
}

pub(super) fn dict_str<'a>(d: Option<&'a Attribute>, key: &str) -> Option<&'a str> {
    d?.dict_get(key)?.as_str()
}

/// Compiles function `options.function` of `module` (with the kernels of the built-in registry).
pub fn compile(module: &Module, ctx: &Context, weights: &Weights, options: CompileOptions) -> Result<CompiledProgram, ExecError> {
    compile_with_registry(module, ctx, weights, options, registry())
}

/// Like [`compile`], with the kernels of `reg`.
pub fn compile_with_registry(
    module: &Module,
    ctx: &Context,
    weights: &Weights,
    options: CompileOptions,
    reg: &KernelRegistry,
) -> Result<CompiledProgram, ExecError> {
    // Ops without a kernel become ops with one where a functional counterpart or a
    // decomposition exists (PyTorch's composite fallback); the caller's module is left as it is.
    let has_kernel = |name: &str| crate::interp::linearize::has_kernel(reg, ctx, name);
    let rewritten;
    let module = if transforms::lowering::needs_fallback(ctx, module, module.top(), &options.decompositions, &has_kernel) {
        let mut m = module.clone();
        let top = m.top();
        transforms::lowering::composite_fallback(ctx, &mut m, top, &options.decompositions, &has_kernel)
            .map_err(|d| ExecError::Fallback { loc: loc_string(&d.loc), message: d.message.clone() })?;
        rewritten = m;
        &rewritten
    } else {
        module
    };
    let func = match module.function(&options.function) {
        Some(f) => f,
        None => match module.functions().as_slice() {
            [only] if options.function == "forward" => *only,
            _ => return Err(ExecError::MissingFunction(options.function.clone())),
        },
    };
    let (in_types, _) = ir::builtin::function_signature(module, func).ok_or_else(|| ExecError::Unsupported {
        what: "a function without a function type".into(),
        loc: loc_string(module.loc(func)),
    })?;
    let arg_attrs: Vec<Attribute> =
        module.attr(func, ir::builtin::ARG_ATTRS).and_then(Attribute::as_array).map(<[Attribute]>::to_vec).unwrap_or_default();
    let res_attrs: Vec<Attribute> =
        module.attr(func, ir::builtin::RES_ATTRS).and_then(Attribute::as_array).map(<[Attribute]>::to_vec).unwrap_or_default();
    let entry_args: Vec<ir::ValueId> = module
        .regions(func)
        .first()
        .and_then(|&r| module.entry_block(r))
        .map(|b| module.block_args(b).to_vec())
        .unwrap_or_default();

    let mutated: std::collections::HashSet<&str> = res_attrs.iter().filter_map(|d| dict_str(Some(d), "prim.buffer_mutation")).collect();
    let mut frozen: Vec<Option<IValue>> = vec![None; in_types.len()];
    let mut unmutated = Vec::new();
    let mut args = Vec::new();
    let mut buffer_args: Vec<(usize, String, Tensor)> = Vec::new();
    let mut user_args: Vec<(usize, String)> = Vec::new();
    for (i, ty) in in_types.iter().enumerate() {
        let d = arg_attrs.get(i);
        let lookup = |kind: &'static str, name: &str| {
            weights.get(name).cloned().ok_or_else(|| ExecError::MissingWeight { kind, name: name.to_string() })
        };
        let (name, kind) = if let Some(n) = dict_str(d, "prim.param") {
            frozen[i] = Some(IValue::Tensor(lookup("parameter", n)?));
            (n.to_string(), InputKind::Parameter)
        } else if let Some(n) = dict_str(d, "prim.constant") {
            frozen[i] = Some(IValue::Tensor(lookup("constant", n)?));
            (n.to_string(), InputKind::Constant)
        } else if let Some(n) = dict_str(d, "prim.buffer") {
            let t = lookup("buffer", n)?;
            // A buffer no result mutates keeps its initial value on every call: it is frozen
            // like a parameter (an inference batch norm's running statistics), so what it
            // alone determines is computed once.
            if !mutated.contains(n) {
                unmutated.push((i, t.clone()));
            }
            buffer_args.push((i, n.to_string(), t));
            (n.to_string(), InputKind::Buffer)
        } else {
            let n = dict_str(d, "prim.input")
                .map(str::to_string)
                .or_else(|| entry_args.get(i).and_then(|&v| module.value_name(v)).map(str::to_string))
                .unwrap_or_else(|| format!("arg{i}"));
            user_args.push((i, n.clone()));
            (n, InputKind::User)
        };
        args.push(InputInfo { name, kind, ty: ty.clone() });
    }

    // Backend partitions run inline: a copy of the module with them flattened is linearized.
    let flat;
    let body_module = if partition::has_partitions(module, func) {
        let mut copy = module.clone();
        partition::flatten_partitions(&mut copy, func)?;
        flat = copy;
        &flat
    } else {
        module
    };
    // Buffers are frozen only in a program that writes no memory in place (an in-place
    // update of a buffer without a mutation output keeps its state in the buffer itself);
    // partitions are flattened first, so their bodies are what is checked.
    if transforms::opt::alias::is_effect_free(ctx, body_module, func) {
        for (i, t) in unmutated {
            frozen[i] = Some(IValue::Tensor(t));
        }
    }
    let (function, arg_regs, fusion) = linearize(
        body_module,
        ctx,
        func,
        &frozen,
        reg,
        LinearizeOptions { out_variants: options.memory_plan, fusion: options.fusion.as_deref() },
    )?;
    let reg_of = |i: usize| arg_regs.get(i).copied().unwrap_or(0);
    let user_inputs = user_args.iter().map(|(i, n)| (reg_of(*i), in_types[*i].clone(), n.clone())).collect();
    let buffers: Vec<(Reg, String, Tensor)> =
        buffer_args.into_iter().map(|(i, n, t)| (reg_of(i), n, t)).collect();

    let n_results = function.body.results.len();
    let mut outputs = Vec::with_capacity(n_results);
    for k in 0..n_results {
        let d = res_attrs.get(k);
        match (dict_str(d, "prim.buffer_mutation"), dict_str(d, "prim.input_mutation")) {
            (Some(name), _) => {
                let b = buffers.iter().position(|(_, n, _)| n == name).ok_or_else(|| ExecError::MissingWeight {
                    kind: "mutated buffer",
                    name: name.to_string(),
                })?;
                outputs.push(OutputRole::Mutation(b));
            }
            (None, Some(name)) => {
                let i = user_args.iter().position(|(_, n)| n == name).ok_or_else(|| ExecError::MissingWeight {
                    kind: "mutated user input",
                    name: name.to_string(),
                })?;
                outputs.push(OutputRole::InputMutation(i));
            }
            (None, None) => {
                let i = outputs.iter().filter(|o| matches!(o, OutputRole::User(_))).count();
                outputs.push(OutputRole::User(i));
            }
        }
    }
    let n_user = outputs.iter().filter(|o| matches!(o, OutputRole::User(_))).count();
    let top = module.top();
    let out_spec = match module.attr(top, "prim.out_spec").or_else(|| module.attr(func, "prim.out_spec")) {
        // A spec that does not parse or does not fit leaves the outputs as a flat tuple
        // (`run` is unaffected; `run_tree` then nests one level).
        Some(a) => match OutSpec::from_attribute(a) {
            Ok(s) if s.num_leaves() == n_user => s,
            _ => OutSpec::Tuple(vec![OutSpec::Leaf; n_user]),
        },
        None => OutSpec::Tuple(vec![OutSpec::Leaf; n_user]),
    };
    let ranges = module
        .attr(top, "prim.range_constraints")
        .or_else(|| module.attr(func, "prim.range_constraints"))
        .map(parse_ranges)
        .unwrap_or_default();
    let intervals = function.candidates.iter().map(|c| Interval { start: c.def, end: c.last }).collect();
    Ok(CompiledProgram {
        inner: Arc::new(Inner {
            func: function,
            user_inputs,
            buffers,
            outputs,
            n_user_outputs: n_user,
            out_spec,
            args,
            ranges,
            intervals,
            options,
            fusion,
            shared_plans: RwLock::new(Vec::new()),
        }),
    })
}

/// Reads `{s0 = [min, max]}` (max may be missing or negative for unbounded).
pub(super) fn parse_ranges(a: &Attribute) -> Ranges {
    let mut out = Ranges::new();
    if let Attribute::Dict(items) = a {
        for (k, v) in items.iter() {
            let bounds = v.as_int_array().unwrap_or_default();
            if let Some(&lo) = bounds.first() {
                let hi = bounds.get(1).copied().filter(|&h| h >= 0);
                out.insert(k.to_string(), (lo, hi));
            }
        }
    }
    out
}

impl CompiledProgram {
    /// A new runtime over this program: registers, argument buffers, and a copy of the buffers.
    pub fn runtime(&self) -> Runtime {
        let inner = self.inner.clone();
        let frame = Frame::new(&inner.func);
        let state = inner.buffers.iter().map(|(_, _, t)| IValue::Tensor(t.deep_clone().unwrap_or_else(|_| t.clone()))).collect();
        Runtime { prog: inner, frame, state, specs: Vec::new(), current: None, syms: Vec::new(), profile: None }
    }

    /// The function's arguments: user inputs, parameters, buffers and constants, in order.
    pub fn arguments(&self) -> &[InputInfo] {
        &self.inner.args
    }

    /// Names of the user inputs, in order.
    pub fn input_names(&self) -> Vec<&str> {
        self.inner.user_inputs.iter().map(|(_, _, n)| n.as_str()).collect()
    }

    /// Number of flat user outputs.
    pub fn num_outputs(&self) -> usize {
        self.inner.outputs.iter().filter(|o| matches!(o, OutputRole::User(_))).count()
    }

    pub fn out_spec(&self) -> &OutSpec {
        &self.inner.out_spec
    }

    /// Number of values the memory planner may place in the slab.
    pub fn num_planned_values(&self) -> usize {
        self.inner.intervals.len()
    }

    /// Lifetimes of the planned values, in instruction indices of the top-level block.
    pub fn planned_lifetimes(&self) -> &[Interval] {
        &self.inner.intervals
    }

    /// Every `prim.FusionGroup` of the program, in order, with whether the fusion compiler of
    /// [`CompileOptions::fusion`] took it (empty when none was set).
    pub fn fusion_groups(&self) -> &[FusionDecision] {
        &self.inner.fusion
    }

    /// Number of instructions of the top-level block.
    pub fn num_instructions(&self) -> usize {
        self.inner.func.body.instrs.len()
    }

    /// Number of ops that depend on no program input and were computed once, when the program
    /// was compiled, instead of on every call (views and transposes of weights, masks and
    /// index tensors built from constants, fusion groups over constants); their results are
    /// immutable constants shared by every runtime.
    pub fn num_hoisted(&self) -> usize {
        self.inner.func.hoisted
    }

    /// Number of top-level instructions whose constant matrix operand (a weight of `mm`/`addmm`,
    /// a convolution's filter) was packed for the prepacked GEMM when the program was compiled;
    /// 0 on CPUs without a prepacked kernel.
    pub fn num_prepacked(&self) -> usize {
        let packed = |i: &crate::interp::Instr| matches!(i.kind, crate::interp::Kind::Kernel { packed: Some(_), .. });
        self.inner.func.body.instrs.iter().filter(|i| packed(i)).count()
    }
}
