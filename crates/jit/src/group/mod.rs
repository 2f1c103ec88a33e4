//! Lowering a `prim.FusionGroup` body to a typed dataflow graph of primitive operations.
//!
//! Each aten op is expanded into primitive nodes with PyTorch's type promotion made explicit
//! (casts to the compute dtype, scalars turned into constants of that dtype), following the
//! runtime's interpreter kernels, which are the reference. The graph is module-independent: a
//! [`Group`] can be built once from the IR and specialized to many input specs.

use std::collections::HashMap;
use std::sync::OnceLock;

use dialect_aten::{ArgSource, bind_args};
use ir::schema::FunctionSchema;
use ir::{Attribute, Context, DType, Module, OpId, ValueId};
use runtime::Scalar;

use crate::error::JitError;
use crate::lowering::{JitLowering, Lower, Lowerings};
use crate::spec::KernelSpec;

mod aten;

/// Index of a node in [`Graph::nodes`].
pub type NodeId = usize;

/// A compile-time constant, already converted to its node's dtype.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Const {
    Bool(bool),
    Int(i64),
    Float(f64),
}

/// Unary primitive operations; operand and result share the node's dtype.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Unary {
    Neg,
    Abs,
    Relu,
    Floor,
    Ceil,
    Round,
    Trunc,
    Sqrt,
    Rsqrt,
    Recip,
    Square,
    Not,
    Exp,
    Log,
    Tanh,
    Sigmoid,
    Erf,
    Sin,
    Cos,
    GeluErf,
    GeluTanh,
    Silu,
    /// Float `x.powf(e)` with PyTorch's exact special cases.
    PowF(f64),
    /// Integer power by a non-negative constant (wrapping).
    PowI(u64),
    /// A float function only available as a library call (`tan`, `asin`, …).
    Lib(LibFn),
}

/// Float functions compiled as calls to the same Rust functions the reference kernels use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LibFn {
    Exp2,
    Expm1,
    Log2,
    Log10,
    Log1p,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Asinh,
    Acosh,
    Atanh,
    Erfc,
}

/// Binary primitive operations; operands share a dtype.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Binary {
    Add,
    Sub,
    Mul,
    Div,
    /// NaN-propagating maximum / minimum.
    Max,
    Min,
    And,
    Or,
    Xor,
    /// Integer division rounding toward zero / toward negative infinity; remainders with the
    /// sign of the divisor (`Rem`) or dividend (`Fmod`). Zero divisors raise.
    DivTrunc,
    DivFloor,
    Rem,
    Fmod,
    /// `powf` of two tensors (floats).
    Pow,
    /// Clamp bounds: `if a < b { b } else { a }` and `if a > b { b } else { a }` (NaN `a` stays).
    ClampLo,
    ClampHi,
}

/// Comparisons; the result is bool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// What a node computes.
#[derive(Clone, Debug, PartialEq)]
pub enum NodeKind {
    Input(usize),
    Const(Const),
    /// Converts the operand to the node's dtype with PyTorch's casting rules.
    Cast(NodeId),
    Unary(Unary, NodeId),
    Binary(Binary, NodeId, NodeId),
    Cmp(Cmp, NodeId, NodeId),
    /// `if c { a } else { b }` with a bool condition.
    Select(NodeId, NodeId, NodeId),
    /// `a * b + c` over floats of one dtype, rounded once (a hardware fused multiply-add) where
    /// the target has one, else as a multiply and an add.
    MulAdd(NodeId, NodeId, NodeId),
}

impl NodeKind {
    /// Calls `f` with each node this one reads (a node read twice, twice).
    pub(crate) fn for_each_operand(&self, mut f: impl FnMut(NodeId)) {
        match *self {
            NodeKind::Input(_) | NodeKind::Const(_) => {}
            NodeKind::Cast(a) | NodeKind::Unary(_, a) => f(a),
            NodeKind::Binary(_, a, b) | NodeKind::Cmp(_, a, b) => {
                f(a);
                f(b);
            }
            NodeKind::Select(a, b, c) | NodeKind::MulAdd(a, b, c) => {
                f(a);
                f(b);
                f(c);
            }
        }
    }
}

/// A node with its dtype and (broadcast) shape.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub kind: NodeKind,
    pub dtype: DType,
    pub shape: Vec<usize>,
    /// The aten op the node came from (for messages).
    pub op: &'static str,
}

/// The typed graph of a group specialized to input dtypes and shapes.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    pub nodes: Vec<Node>,
    pub outputs: Vec<NodeId>,
}

/// A fusion group captured from the IR: the body's ops in order, with their bound arguments.
/// It owns everything it needs, so it outlives the module it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    pub(crate) num_inputs: usize,
    pub(crate) ops: Vec<GroupOp>,
    /// Values returned by `prim.Return`.
    pub(crate) results: Vec<Ref>,
    /// A printable fingerprint of the body, used as part of cache keys.
    pub(crate) key: String,
}

/// A value inside the captured group.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Ref {
    /// Block argument `i`.
    Input(usize),
    /// Result of op `i` of the body.
    Op(usize),
    /// A compile-time argument (attribute, schema default or `prim.Constant`).
    Const(Attribute),
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct GroupOp {
    pub name: String,
    pub args: Vec<Ref>,
    /// The op's lowering interface, when it has one (otherwise the aten rules lower it).
    pub lowering: Option<JitLowering>,
}

pub(crate) fn schema_of(name: &str) -> Option<&'static FunctionSchema> {
    static MAP: OnceLock<HashMap<String, &'static FunctionSchema>> = OnceLock::new();
    MAP.get_or_init(|| dialect_aten::schemas().iter().map(|s| (s.op_name(), s)).collect()).get(name).copied()
}

impl Group {
    /// Captures the body of the `prim.FusionGroup` `op`, lowering ops with the JIT's own rules.
    pub fn from_op(m: &Module, op: OpId) -> Result<Group, JitError> {
        Group::from_op_with(m, op, Lowerings::builtin())
    }

    /// Captures the body of the `prim.FusionGroup` `op`, lowering ops with the lowering
    /// interfaces `ctx` attaches as well as the JIT's own.
    pub fn from_op_in(ctx: &Context, m: &Module, op: OpId) -> Result<Group, JitError> {
        Group::from_op_with(m, op, &Lowerings::of_context(ctx))
    }

    pub(crate) fn from_op_with(m: &Module, op: OpId, lowerings: &Lowerings) -> Result<Group, JitError> {
        if !m.contains_op(op) || m.op_name(op) != dialect_prim::FUSION_GROUP {
            return Err(JitError::Invalid("expected a prim.FusionGroup op".into()));
        }
        let region = *m.regions(op).first().ok_or_else(|| JitError::Invalid("fusion group without a body".into()))?;
        let blocks = m.region_blocks(region);
        if blocks.len() != 1 {
            return Err(JitError::Unsupported("fusion group body must be a single block".into()));
        }
        let block = blocks[0];
        let args = m.block_args(block);
        if args.len() != m.operands(op).len() {
            return Err(JitError::Invalid("body arguments do not match the operands".into()));
        }
        let mut map: HashMap<ValueId, Ref> = HashMap::new();
        for (i, &a) in args.iter().enumerate() {
            if !m.value_type(a).is_tensor() {
                return Err(JitError::Unsupported(format!("input {i} is not a tensor ({})", m.value_type(a))));
            }
            map.insert(a, Ref::Input(i));
        }
        let get = |map: &HashMap<ValueId, Ref>, v: ValueId| {
            map.get(&v).cloned().ok_or_else(|| JitError::Invalid("a value is used outside its scope".into()))
        };
        let mut ops = Vec::new();
        let mut results = None;
        let mut key = format!("{}(", args.len());
        for o in m.block_ops(block) {
            // An Edge op is lowered as the ATen op it mirrors.
            let name = match dialect_edge::aten_op(m.op_name(o)) {
                Some(aten) => aten.name().to_string(),
                None => m.op_name(o).to_string(),
            };
            if name == dialect_prim::RETURN {
                results = Some(m.operands(o).iter().map(|&v| get(&map, v)).collect::<Result<Vec<_>, _>>()?);
                continue;
            }
            if name == dialect_prim::CONSTANT {
                let value = m.attr(o, "value").cloned().ok_or_else(|| JitError::Invalid("prim.Constant without a value".into()))?;
                if let Some(&r) = m.results(o).first() {
                    map.insert(r, Ref::Const(value));
                }
                continue;
            }
            if !m.regions(o).is_empty() {
                return Err(JitError::Unsupported(format!("{name}: ops with regions are not compiled")));
            }
            let lowering = lowerings.get(&name);
            let bound = match (schema_of(&name), lowering) {
                (Some(schema), _) => bind_args(schema, m, o).map_err(|e| JitError::Invalid(format!("{name}: {e}")))?,
                // An op of another dialect with a lowering takes its operands in order.
                (None, Some(_)) => (0..m.operands(o).len()).map(ArgSource::Operand).collect(),
                (None, None) => return Err(JitError::Unsupported(format!("{name}: not an aten op"))),
            };
            let mut refs = Vec::with_capacity(bound.len());
            for b in bound {
                refs.push(match b {
                    ArgSource::Operand(i) => {
                        let v = m.operands(o)[i];
                        get(&map, v)?
                    }
                    ArgSource::Const(a) => Ref::Const(a),
                });
            }
            if m.results(o).len() != 1 {
                return Err(JitError::Unsupported(format!("{name}: ops with {} results are not compiled", m.results(o).len())));
            }
            let idx = ops.len();
            map.insert(m.results(o)[0], Ref::Op(idx));
            key.push_str(&format!("{name}{refs:?};"));
            ops.push(GroupOp { name, args: refs, lowering });
        }
        let results = results.ok_or_else(|| JitError::Invalid("body must end with prim.Return".into()))?;
        if results.is_empty() {
            return Err(JitError::Unsupported("fusion group without results".into()));
        }
        for r in &results {
            if let Ref::Const(_) = r {
                return Err(JitError::Unsupported("a fusion group result is a constant".into()));
            }
        }
        key.push_str(&format!(")->{results:?}"));
        Ok(Group { num_inputs: args.len(), ops, results, key })
    }

    pub fn num_inputs(&self) -> usize {
        self.num_inputs
    }

    pub fn num_outputs(&self) -> usize {
        self.results.len()
    }

    /// Op names of the body in order.
    pub fn op_names(&self) -> Vec<&str> {
        self.ops.iter().map(|o| o.name.as_str()).collect()
    }

    /// Builds the typed graph for inputs of the given spec.
    pub fn graph(&self, spec: &KernelSpec) -> Result<Graph, JitError> {
        if spec.inputs.len() != self.num_inputs {
            return Err(JitError::Guard(format!("expected {} inputs, got {}", self.num_inputs, spec.inputs.len())));
        }
        let mut b = Builder { g: Graph::default() };
        let mut vals: Vec<NodeId> = Vec::new();
        let mut inputs = Vec::new();
        for (i, s) in spec.inputs.iter().enumerate() {
            check_dtype("input", s.dtype)?;
            if s.strides.len() != s.sizes.len() {
                return Err(JitError::Guard(format!("input {i}: {} strides for {} sizes", s.strides.len(), s.sizes.len())));
            }
            inputs.push(b.push(NodeKind::Input(i), s.dtype, s.sizes.clone(), "input"));
        }
        for op in &self.ops {
            let args: Vec<Arg> = op
                .args
                .iter()
                .map(|r| match r {
                    Ref::Input(i) => Arg::Node(inputs[*i]),
                    Ref::Op(i) => Arg::Node(vals[*i]),
                    Ref::Const(a) => Arg::Attr(a.clone()),
                })
                .collect();
            let n = match op.lowering {
                Some(l) => b.lower_with(&op.name, l, &args)?,
                None => b.lower(&op.name, &args)?,
            };
            vals.push(n);
        }
        for r in &self.results {
            let n = match r {
                Ref::Input(i) => inputs[*i],
                Ref::Op(i) => vals[*i],
                Ref::Const(_) => return Err(JitError::Unsupported("a result is a constant".into())),
            };
            b.g.outputs.push(n);
        }
        Ok(b.g)
    }
}

fn check_dtype(op: &str, d: DType) -> Result<(), JitError> {
    match d {
        DType::Bool | DType::I32 | DType::I64 | DType::F32 | DType::F64 => Ok(()),
        d => Err(JitError::unsupported_dtype(op, d)),
    }
}

/// An argument of an aten op during lowering.
#[derive(Clone, Debug)]
pub(crate) enum Arg {
    Node(NodeId),
    Attr(Attribute),
}

/// A tensor node or a Python scalar: what PyTorch's type promotion sees.
#[derive(Clone, Copy, Debug)]
enum Operand {
    Node(NodeId),
    Scalar(Scalar),
}

pub(crate) struct Builder {
    g: Graph,
}


pub(crate) fn float_result(d: DType) -> DType {
    if d.is_floating() { d } else { DType::F32 }
}

/// The constant `s` converted to `dtype` as the runtime converts scalars (`Scalar::to_element`).
fn scalar_to(s: Scalar, dtype: DType) -> Const {
    match dtype {
        DType::Bool => Const::Bool(s.to_element::<bool>()),
        DType::I32 => Const::Int(s.to_element::<i32>() as i64),
        DType::I64 => Const::Int(s.to_element::<i64>()),
        DType::F32 => Const::Float(s.to_element::<f32>() as f64),
        _ => Const::Float(s.to_element::<f64>()),
    }
}

fn attr_scalar(a: &Attribute) -> Option<Scalar> {
    match a {
        Attribute::Bool(b) => Some(Scalar::Bool(*b)),
        Attribute::Int(i) => Some(Scalar::Int(*i)),
        Attribute::Float(f) => Some(Scalar::Float(f.get())),
        _ => None,
    }
}

fn broadcast(op: &str, a: &[usize], b: &[usize]) -> Result<Vec<usize>, JitError> {
    runtime::tensor::broadcast_shapes(a, b).map_err(|e| JitError::Invalid(format!("{op}: {}", e.message)))
}

impl Builder {
    /// An empty graph.
    pub(crate) fn new() -> Builder {
        Builder { g: Graph::default() }
    }

    /// Input `i` of the graph.
    pub(crate) fn input(&mut self, i: usize, dtype: DType, shape: Vec<usize>) -> NodeId {
        self.push(NodeKind::Input(i), dtype, shape, "input")
    }

    fn push(&mut self, kind: NodeKind, dtype: DType, shape: Vec<usize>, op: &'static str) -> NodeId {
        self.g.nodes.push(Node { kind, dtype, shape, op });
        self.g.nodes.len() - 1
    }

    fn node(&self, n: NodeId) -> &Node {
        &self.g.nodes[n]
    }

    pub(crate) fn dtype(&self, n: NodeId) -> DType {
        self.g.nodes[n].dtype
    }

    fn shape(&self, n: NodeId) -> Vec<usize> {
        self.g.nodes[n].shape.clone()
    }

    /// PyTorch's `result_type` over tensors and scalars (as `runtime::kernels::elementwise`).
    fn result_type(&self, ops: &[Operand]) -> DType {
        use dialect_aten::infer::{DEFAULT_FLOAT, PromoteArg};
        dialect_aten::infer::result_type(ops.iter().map(|o| match o {
            Operand::Node(n) => PromoteArg::Tensor { dtype: self.dtype(*n), zero_dim: self.node(*n).shape.is_empty() },
            Operand::Scalar(s) => PromoteArg::Scalar(s.wrapped_dtype().category()),
        }))
        .unwrap_or(DEFAULT_FLOAT)
    }

    pub(crate) fn constant(&mut self, c: Const, dtype: DType, op: &'static str) -> NodeId {
        self.push(NodeKind::Const(c), dtype, vec![], op)
    }

    /// Converts node `n` to `dtype` (no node when it already has it).
    pub(crate) fn cast(&mut self, n: NodeId, dtype: DType, op: &'static str) -> Result<NodeId, JitError> {
        check_dtype(op, dtype)?;
        if self.dtype(n) == dtype {
            return Ok(n);
        }
        if let NodeKind::Const(c) = self.node(n).kind
            && self.node(n).shape.is_empty()
        {
            let s = match c {
                Const::Bool(b) => Scalar::Bool(b),
                Const::Int(i) => Scalar::Int(i),
                Const::Float(f) => Scalar::Float(f),
            };
            // Tensor-to-tensor casts of constants use `cast`, which for these dtypes agrees with
            // the scalar conversion (floats via f64, ints wrapping, bool as != 0).
            return Ok(self.constant(scalar_to(s, dtype), dtype, op));
        }
        let shape = self.shape(n);
        Ok(self.push(NodeKind::Cast(n), dtype, shape, op))
    }

    /// An operand as a node of `dtype` (scalars become constants).
    fn operand(&mut self, o: Operand, dtype: DType, op: &'static str) -> Result<NodeId, JitError> {
        match o {
            Operand::Node(n) => self.cast(n, dtype, op),
            Operand::Scalar(s) => Ok(self.constant(scalar_to(s, dtype), dtype, op)),
        }
    }

    fn shape_of(&self, o: Operand) -> Vec<usize> {
        match o {
            Operand::Node(n) => self.shape(n),
            Operand::Scalar(_) => vec![],
        }
    }

    pub(crate) fn unary(&mut self, u: Unary, a: NodeId, op: &'static str) -> NodeId {
        let (d, s) = (self.dtype(a), self.shape(a));
        self.push(NodeKind::Unary(u, a), d, s, op)
    }

    pub(crate) fn binary(&mut self, bop: Binary, a: NodeId, b: NodeId, op: &'static str) -> Result<NodeId, JitError> {
        let s = broadcast(op, &self.shape(a), &self.shape(b))?;
        let d = self.dtype(a);
        Ok(self.push(NodeKind::Binary(bop, a, b), d, s, op))
    }

    fn cmp(&mut self, c: Cmp, a: NodeId, b: NodeId, op: &'static str) -> Result<NodeId, JitError> {
        let s = broadcast(op, &self.shape(a), &self.shape(b))?;
        Ok(self.push(NodeKind::Cmp(c, a, b), DType::Bool, s, op))
    }

    fn select(&mut self, c: NodeId, a: NodeId, b: NodeId, op: &'static str) -> Result<NodeId, JitError> {
        let s = broadcast(op, &broadcast(op, &self.shape(c), &self.shape(a))?, &self.shape(b))?;
        let d = self.dtype(a);
        Ok(self.push(NodeKind::Select(c, a, b), d, s, op))
    }

    fn mul_add(&mut self, a: NodeId, b: NodeId, c: NodeId, op: &'static str) -> Result<NodeId, JitError> {
        let s = broadcast(op, &broadcast(op, &self.shape(a), &self.shape(b))?, &self.shape(c))?;
        let d = self.dtype(c);
        Ok(self.push(NodeKind::MulAdd(a, b, c), d, s, op))
    }

    /// Lowers one op through its lowering interface.
    pub(crate) fn lower_with(&mut self, name: &str, lowering: JitLowering, args: &[Arg]) -> Result<NodeId, JitError> {
        let op: &'static str = intern(name);
        let mut tensors = Vec::with_capacity(args.len());
        for (i, a) in args.iter().enumerate() {
            match a {
                Arg::Node(n) => tensors.push(*n),
                // Schema defaults and attributes the lowering does not read.
                Arg::Attr(_) if matches!(lowering, JitLowering::FloatUnary(_)) && i > 0 => {}
                Arg::Attr(a) => {
                    return Err(JitError::Invalid(format!("{op}: argument {i} must be a tensor, got {}", a.kind_name())));
                }
            }
        }
        match lowering {
            JitLowering::FloatUnary(u) => {
                let t = *tensors.first().ok_or_else(|| JitError::Invalid(format!("{op}: argument 0 must be a tensor")))?;
                let d = float_result(self.dtype(t));
                let x = self.cast(t, d, op)?;
                Ok(self.unary(u, x, op))
            }
            JitLowering::Custom(f) => f(&mut Lower { b: self, op }, &tensors),
        }
    }
}

/// Interns an op name as a static string (op names come from a fixed data file).
fn intern(name: &str) -> &'static str {
    static NAMES: OnceLock<std::sync::Mutex<HashMap<String, &'static str>>> = OnceLock::new();
    let m = NAMES.get_or_init(Default::default);
    let mut g = match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    if let Some(s) = g.get(name) {
        return s;
    }
    let s: &'static str = Box::leak(name.to_string().into_boxed_str());
    g.insert(name.to_string(), s);
    s
}
