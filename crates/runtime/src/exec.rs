//! The executor: compile a module once into an immutable, shareable [`CompiledProgram`]; run it
//! through cheap per-thread [`Runtime`]s.
//!
//! [`compile`] finds `func.func @forward` (or the function named in [`CompileOptions`]), binds
//! its parameters, buffers and lifted constants by name from [`Weights`] (their tensors are
//! shared read-only by every runtime; each runtime owns a copy of the buffers, which are
//! mutable state), and linearizes the body (`crate::interp`), failing with every op that has
//! no kernel named with its location. A [`Runtime`] validates its inputs against the
//! function's signature, picks a specialization (input dtypes and shapes, the ArgumentSpec
//! idea) whose memory plan (`crate::plan`) it keeps, runs, writes buffer mutations back into
//! its state, and returns the user outputs flat ([`Runtime::run`]) or nested as the program's
//! output pytree says ([`Runtime::run_tree`]).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, RwLock};

use ir::{Attribute, Context, DType, Dim, Location, Module, Type, TypeKind};

use crate::fusion::{FusionCompiler, FusionDecision};
use crate::interp::linearize::{LinearizeOptions, linearize};
use crate::interp::out::Meta;
use crate::interp::partition;
use crate::interp::run::Frame;
use crate::interp::{Function, Reg};
use crate::kernels::{KernelRegistry, registry};
use crate::plan::{Interval, MemoryPlan, PlanState};
use crate::tensor::Tensor;
use crate::value::IValue;

// ------------------------------------------------------------------------------------------
// Errors
// ------------------------------------------------------------------------------------------

/// An op that has no kernel, with its source location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MissingKernel {
    pub op: String,
    pub loc: String,
}

/// Errors of compiling and running programs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExecError {
    /// Ops without a kernel (all of them, in program order).
    NoKernel(Vec<MissingKernel>),
    /// An op, attribute or type the executor does not handle.
    Unsupported { what: String, loc: String },
    /// An op's operands and attributes do not fit its schema.
    Bind { op: String, loc: String, message: String },
    /// The module has no such function.
    MissingFunction(String),
    /// A parameter, buffer or constant named by the function is not in the weights.
    MissingWeight { kind: &'static str, name: String },
    /// The number of inputs is wrong.
    InputCount { expected: usize, got: usize },
    /// An input does not fit the function's signature (or the program's specializations).
    Input { name: String, index: usize, message: String },
    /// A kernel failed.
    Kernel { op: String, loc: String, message: String },
    /// A structural op failed at run time (a list of the wrong length, a bad condition, ...).
    Runtime { op: String, loc: String, message: String },
    /// The program raised an exception (`prim.RaiseException`).
    Raised { message: String, loc: String },
}

impl fmt::Display for ExecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExecError::NoKernel(ms) => {
                for (i, m) in ms.iter().enumerate() {
                    if i > 0 {
                        f.write_str("\n")?;
                    }
                    write!(f, "`{}` at {}: no kernel", m.op, m.loc)?;
                }
                Ok(())
            }
            ExecError::Unsupported { what, loc } => write!(f, "{what} at {loc}: not supported by the interpreter"),
            ExecError::Bind { op, loc, message } => write!(f, "`{op}` at {loc}: {message}"),
            ExecError::MissingFunction(name) => write!(f, "the module has no function `@{name}`"),
            ExecError::MissingWeight { kind, name } => write!(f, "{kind} '{name}' is not in the weights"),
            ExecError::InputCount { expected, got } => write!(f, "expected {expected} input(s), got {got}"),
            ExecError::Input { name, index, message } => write!(f, "input '{name}' (#{index}): {message}"),
            ExecError::Kernel { op, loc, message } => write!(f, "`{op}` at {loc}: {message}"),
            ExecError::Runtime { op, loc, message } => write!(f, "`{op}` at {loc}: {message}"),
            ExecError::Raised { message, loc } => write!(f, "exception raised at {loc}: {message}"),
        }
    }
}

impl std::error::Error for ExecError {}

impl ExecError {
    /// The ops without kernels, when that is the error.
    pub fn missing_kernels(&self) -> &[MissingKernel] {
        match self {
            ExecError::NoKernel(ms) => ms,
            _ => &[],
        }
    }
}

/// A location as `file:line:col` (or its name), for messages.
pub(crate) fn loc_string(loc: &Location) -> String {
    if let Some((file, line, col)) = loc.file_line_col() {
        return format!("{file}:{line}:{col}");
    }
    match loc {
        Location::Unknown => "unknown location".into(),
        Location::Name { name, .. } => name.to_string(),
        other => other.to_string(),
    }
}

// ------------------------------------------------------------------------------------------
// Weights and options
// ------------------------------------------------------------------------------------------

/// Named tensors a program binds its parameters, buffers and lifted constants to.
#[derive(Clone, Debug, Default)]
pub struct Weights {
    tensors: HashMap<String, Tensor>,
}

impl Weights {
    pub fn new() -> Weights {
        Weights::default()
    }

    /// Adds (or replaces) a tensor.
    pub fn insert(&mut self, name: impl Into<String>, t: Tensor) {
        self.tensors.insert(name.into(), t);
    }

    /// Adds a tensor from little-endian bytes (converted once, here).
    pub fn insert_bytes(&mut self, name: impl Into<String>, dtype: DType, sizes: &[usize], bytes: &[u8]) -> Result<(), crate::tensor::KernelError> {
        self.insert(name, Tensor::from_bytes(dtype, sizes, bytes)?);
        Ok(())
    }

    pub fn get(&self, name: &str) -> Option<&Tensor> {
        self.tensors.get(name)
    }

    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    /// Names, sorted.
    pub fn names(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.tensors.keys().map(String::as_str).collect();
        v.sort_unstable();
        v
    }
}

impl FromIterator<(String, Tensor)> for Weights {
    fn from_iter<I: IntoIterator<Item = (String, Tensor)>>(iter: I) -> Weights {
        Weights { tensors: iter.into_iter().collect() }
    }
}

/// What to do when inputs match no specialization and no new one may be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GuardPolicy {
    /// Make a new specialization, evicting the least recently made one past the limit.
    Respecialize,
    /// Fail with an error naming the first input that differs.
    Error,
}

/// How to compile and run a program.
#[derive(Clone, Debug)]
pub struct CompileOptions {
    /// The function to run.
    pub function: String,
    /// Plan intermediates into a reused slab (out-variants for the ops that have one).
    pub memory_plan: bool,
    /// Specialize on input dtypes and shapes; when off, one plan serves every shape and grows as needed.
    pub specialize: bool,
    /// Most specializations a runtime keeps.
    pub max_specializations: usize,
    pub on_guard_failure: GuardPolicy,
    /// Check inputs against the signature before running.
    pub validate_inputs: bool,
    /// Compiles `prim.FusionGroup`s to native kernels (the `jit` crate provides one); `None`
    /// interprets every group's region.
    pub fusion: Option<Arc<dyn FusionCompiler>>,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            function: "forward".into(),
            memory_plan: true,
            specialize: true,
            max_specializations: 8,
            on_guard_failure: GuardPolicy::Respecialize,
            validate_inputs: true,
            fusion: None,
        }
    }
}

// ------------------------------------------------------------------------------------------
// Output trees
// ------------------------------------------------------------------------------------------

/// The nesting of a program's outputs (its pytree spec).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutSpec {
    /// One flat output.
    Leaf,
    /// Python `None` (no flat output).
    None,
    Tuple(Vec<OutSpec>),
    List(Vec<OutSpec>),
    Dict(Vec<(String, OutSpec)>),
}

impl OutSpec {
    /// Number of flat outputs.
    pub fn num_leaves(&self) -> usize {
        match self {
            OutSpec::Leaf => 1,
            OutSpec::None => 0,
            OutSpec::Tuple(xs) | OutSpec::List(xs) => xs.iter().map(OutSpec::num_leaves).sum(),
            OutSpec::Dict(xs) => xs.iter().map(|(_, x)| x.num_leaves()).sum(),
        }
    }

    /// Parses PyTorch's printed `TreeSpec(...)` form (`TreeSpec(dict, ['a', 'b'], [*, *])`), or `*`.
    pub fn parse_treespec(text: &str) -> Result<OutSpec, String> {
        let mut p = SpecParser { s: text.as_bytes(), i: 0 };
        let spec = p.spec()?;
        p.ws();
        if p.i != p.s.len() {
            return Err(format!("unexpected text at offset {} of the output spec", p.i));
        }
        Ok(spec)
    }

    /// Reads the `prim.out_spec` attribute: a `TreeSpec(...)` string, or nested arrays
    /// (tuples) and dictionaries with `unit`/`*` leaves.
    pub fn from_attribute(a: &Attribute) -> Result<OutSpec, String> {
        match a {
            Attribute::Str(s) => OutSpec::parse_treespec(s),
            Attribute::Unit => Ok(OutSpec::Leaf),
            Attribute::None => Ok(OutSpec::None),
            Attribute::Array(items) => Ok(OutSpec::Tuple(items.iter().map(OutSpec::from_attribute).collect::<Result<_, _>>()?)),
            Attribute::Dict(items) => {
                let kind = items.iter().find(|(k, _)| &**k == "type").and_then(|(_, v)| v.as_str());
                let children = items.iter().find(|(k, _)| &**k == "children").and_then(|(_, v)| v.as_array());
                if let (Some(kind), Some(children)) = (kind, children) {
                    let cs = children.iter().map(OutSpec::from_attribute).collect::<Result<Vec<_>, _>>()?;
                    return Ok(match kind {
                        "list" => OutSpec::List(cs),
                        "dict" => {
                            let keys = items
                                .iter()
                                .find(|(k, _)| &**k == "keys")
                                .and_then(|(_, v)| v.as_array())
                                .ok_or("a dict output spec needs `keys`")?;
                            let keys: Vec<String> = keys.iter().map(|k| k.as_str().map(str::to_string).unwrap_or_else(|| k.to_string())).collect();
                            OutSpec::Dict(keys.into_iter().zip(cs).collect())
                        }
                        _ => OutSpec::Tuple(cs),
                    });
                }
                Ok(OutSpec::Dict(
                    items.iter().map(|(k, v)| Ok((k.to_string(), OutSpec::from_attribute(v)?))).collect::<Result<_, String>>()?,
                ))
            }
            other => Err(format!("unsupported output spec attribute {other}")),
        }
    }

    fn build(&self, leaves: &mut std::vec::IntoIter<IValue>) -> Outputs {
        match self {
            OutSpec::Leaf => Outputs::Value(leaves.next().unwrap_or(IValue::None)),
            OutSpec::None => Outputs::None,
            OutSpec::Tuple(xs) => Outputs::Tuple(xs.iter().map(|x| x.build(leaves)).collect()),
            OutSpec::List(xs) => Outputs::List(xs.iter().map(|x| x.build(leaves)).collect()),
            OutSpec::Dict(xs) => Outputs::Dict(xs.iter().map(|(k, x)| (k.clone(), x.build(leaves))).collect()),
        }
    }
}

struct SpecParser<'a> {
    s: &'a [u8],
    i: usize,
}

impl SpecParser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.eat(c) { Ok(()) } else { Err(format!("expected '{}' at offset {} of the output spec", c as char, self.i)) }
    }

    fn word(&mut self) -> String {
        self.ws();
        let start = self.i;
        while self.i < self.s.len() && (self.s[self.i].is_ascii_alphanumeric() || b"_.".contains(&self.s[self.i])) {
            self.i += 1;
        }
        String::from_utf8_lossy(&self.s[start..self.i]).into_owned()
    }

    fn string(&mut self) -> Result<String, String> {
        self.ws();
        let q = *self.s.get(self.i).ok_or("unexpected end of the output spec")?;
        if q != b'\'' && q != b'"' {
            // A non-string key (an int): read the word.
            return Ok(self.word());
        }
        self.i += 1;
        let start = self.i;
        while self.i < self.s.len() && self.s[self.i] != q {
            self.i += 1;
        }
        let out = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
        self.expect(q)?;
        Ok(out)
    }

    fn spec(&mut self) -> Result<OutSpec, String> {
        if self.eat(b'*') {
            return Ok(OutSpec::Leaf);
        }
        let w = self.word();
        if w == "None" {
            return Ok(OutSpec::None);
        }
        if w != "TreeSpec" {
            return Err(format!("expected `TreeSpec` or `*` in the output spec, found `{w}`"));
        }
        self.expect(b'(')?;
        let kind = self.word();
        self.expect(b',')?;
        // The context: None, or a list of keys.
        let mut keys = Vec::new();
        if self.eat(b'[') {
            if !self.eat(b']') {
                loop {
                    keys.push(self.string()?);
                    if self.eat(b']') {
                        break;
                    }
                    self.expect(b',')?;
                }
            }
        } else {
            let _ = self.word();
        }
        self.expect(b',')?;
        self.expect(b'[')?;
        let mut children = Vec::new();
        if !self.eat(b']') {
            loop {
                children.push(self.spec()?);
                if self.eat(b']') {
                    break;
                }
                self.expect(b',')?;
            }
        }
        self.expect(b')')?;
        Ok(match kind.rsplit('.').next().unwrap_or("") {
            "list" => OutSpec::List(children),
            "dict" | "OrderedDict" => OutSpec::Dict(keys.into_iter().zip(children).collect()),
            "NoneType" => OutSpec::None,
            _ => OutSpec::Tuple(children),
        })
    }
}

/// Outputs nested as the program's output spec says.
#[derive(Clone, Debug)]
pub enum Outputs {
    Value(IValue),
    None,
    Tuple(Vec<Outputs>),
    List(Vec<Outputs>),
    Dict(Vec<(String, Outputs)>),
}

impl Outputs {
    /// The value of a leaf.
    pub fn value(&self) -> Option<&IValue> {
        match self {
            Outputs::Value(v) => Some(v),
            _ => None,
        }
    }

    /// Element `i` of a tuple or list.
    pub fn index(&self, i: usize) -> Option<&Outputs> {
        match self {
            Outputs::Tuple(xs) | Outputs::List(xs) => xs.get(i),
            _ => None,
        }
    }

    /// Entry `key` of a dict.
    pub fn get(&self, key: &str) -> Option<&Outputs> {
        match self {
            Outputs::Dict(xs) => xs.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The leaves, flattened in order.
    pub fn leaves(&self) -> Vec<&IValue> {
        let mut out = Vec::new();
        fn walk<'a>(o: &'a Outputs, out: &mut Vec<&'a IValue>) {
            match o {
                Outputs::Value(v) => out.push(v),
                Outputs::None => {}
                Outputs::Tuple(xs) | Outputs::List(xs) => xs.iter().for_each(|x| walk(x, out)),
                Outputs::Dict(xs) => xs.iter().for_each(|(_, x)| walk(x, out)),
            }
        }
        walk(self, &mut out);
        out
    }
}

// ------------------------------------------------------------------------------------------
// Compiled programs
// ------------------------------------------------------------------------------------------

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
enum OutputRole {
    /// User output `i` (its position among the user outputs).
    User(usize),
    /// Written back into buffer `k` of the runtime's state.
    Mutation(usize),
}

/// Range constraints of symbolic sizes: name → (min, max).
type Ranges = HashMap<String, (i64, Option<i64>)>;

struct Inner {
    func: Function,
    /// (argument register, signature type, name) of each user input, in order.
    user_inputs: Vec<(Reg, Type, String)>,
    /// (argument register, name, initial value) of each buffer.
    buffers: Vec<(Reg, String, Tensor)>,
    outputs: Vec<OutputRole>,
    n_user_outputs: usize,
    out_spec: OutSpec,
    args: Vec<InputInfo>,
    ranges: Ranges,
    intervals: Vec<Interval>,
    options: CompileOptions,
    /// What the fusion compiler made of each fusion group.
    fusion: Vec<FusionDecision>,
    /// Memory plans other runtimes have made, by specialization key.
    shared_plans: RwLock<Vec<(SpecKey, Arc<MemoryPlan>, Vec<Option<Meta>>)>>,
}

/// A compiled program: immutable, `Send + Sync`, shared by any number of [`Runtime`]s.
#[derive(Clone)]
pub struct CompiledProgram {
    inner: Arc<Inner>,
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

fn dict_str<'a>(d: Option<&'a Attribute>, key: &str) -> Option<&'a str> {
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

    let mut frozen: Vec<Option<IValue>> = vec![None; in_types.len()];
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
            buffer_args.push((i, n.to_string(), lookup("buffer", n)?));
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
        match dict_str(d, "prim.buffer_mutation") {
            Some(name) => {
                let b = buffers.iter().position(|(_, n, _)| n == name).ok_or_else(|| ExecError::MissingWeight {
                    kind: "mutated buffer",
                    name: name.to_string(),
                })?;
                outputs.push(OutputRole::Mutation(b));
            }
            None => {
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
fn parse_ranges(a: &Attribute) -> Ranges {
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
        Runtime { prog: inner, frame, state, specs: Vec::new(), current: None, syms: Vec::new() }
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

// ------------------------------------------------------------------------------------------
// Specializations
// ------------------------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq, Eq)]
enum KeyEntry {
    Tensor(DType, Vec<usize>),
    Other,
}

/// Input dtypes and shapes (the ArgumentSpec of the JIT).
#[derive(Clone, Debug, PartialEq, Eq)]
struct SpecKey(Option<Vec<KeyEntry>>);

impl SpecKey {
    fn of(inputs: &[IValue], specialize: bool) -> SpecKey {
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
    fn matches(&self, inputs: &[IValue]) -> bool {
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
    fn mismatch(&self, inputs: &[IValue], names: &[(Reg, Type, String)]) -> Option<(usize, String, String)> {
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

struct LocalSpec {
    key: SpecKey,
    plan: PlanState,
}

// ------------------------------------------------------------------------------------------
// Runtimes
// ------------------------------------------------------------------------------------------

/// One thread's instance of a compiled program: registers, buffers (state) and memory plans.
/// Cheap to make; not shared between threads (it is `Send`, so it may move to one).
pub struct Runtime {
    prog: Arc<Inner>,
    frame: Frame,
    state: Vec<IValue>,
    specs: Vec<LocalSpec>,
    current: Option<usize>,
    /// Scratch for symbolic size bindings during validation.
    syms: Vec<(Arc<str>, usize, usize)>,
}

fn dtype_name(d: DType) -> &'static str {
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
        Ok(self.prog.out_spec.build(&mut flat.into_iter()))
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
        let result = self.frame.run_block(&prog.func.body, &mut local.plan);
        if let Err(e) = result {
            self.frame.reset(&prog.func);
            return Err(e);
        }
        outputs.resize(prog.n_user_outputs, IValue::None);
        let state = &mut self.state;
        self.frame.emit_results(&prog.func.body, |k, v| match prog.outputs.get(k) {
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

    fn select_spec(&mut self, prog: &Inner, inputs: &[IValue]) -> Result<usize, ExecError> {
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

    fn validate(&mut self, prog: &Inner, inputs: &[IValue]) -> Result<(), ExecError> {
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

fn is_identifier(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn treespec_parses() {
        let s = OutSpec::parse_treespec("TreeSpec(dict, ['sum', 'pair'], [*,\n  TreeSpec(tuple, None, [*,\n    TreeSpec(list, None, [*,\n      *])])])").unwrap();
        assert_eq!(s.num_leaves(), 4);
        assert!(matches!(&s, OutSpec::Dict(xs) if xs[0].0 == "sum"));
    }

    #[test]
    fn compiled_program_is_send_sync() {
        fn check<T: Send + Sync>() {}
        check::<CompiledProgram>();
        fn send<T: Send>() {}
        send::<Runtime>();
    }
}
