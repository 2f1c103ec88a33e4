//! The FX text syntax tree.

use crate::pt2::schema::{Layout, MemoryFormat, ScalarType};

/// A whole graph: nodes in order and the value the output node returns.
#[derive(Clone, Debug, PartialEq)]
pub struct FxGraph {
    pub nodes: Vec<FxNode>,
    /// Argument of the output node (usually a tuple). Node names in it are [`FxArg::Node`].
    pub output: FxArg,
    /// 1-based line of the `return` statement.
    pub output_line: usize,
}

impl FxGraph {
    /// The node called `name`.
    pub fn node(&self, name: &str) -> Option<&FxNode> {
        self.nodes.iter().find(|n| n.name == name)
    }
}

/// Opcode of an FX node. The output node is not a node here: see [`FxGraph::output`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FxOp {
    Placeholder,
    GetAttr,
    CallFunction,
    CallMethod,
    CallModule,
}

impl FxOp {
    /// The opcode as FX spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            FxOp::Placeholder => "placeholder",
            FxOp::GetAttr => "get_attr",
            FxOp::CallFunction => "call_function",
            FxOp::CallMethod => "call_method",
            FxOp::CallModule => "call_module",
        }
    }
}

/// One `%name : [num_users=N] = op[target=…](args = …, kwargs = …)` line.
#[derive(Clone, Debug, PartialEq)]
pub struct FxNode {
    pub name: String,
    pub op: FxOp,
    /// Target as printed: `torch.ops.aten.add.Tensor`, `operator.getitem`, a placeholder's name.
    pub target: String,
    pub args: Vec<FxArg>,
    /// Keyword arguments in order. A placeholder's default value is the kwarg `default`.
    pub kwargs: Vec<(String, FxArg)>,
    pub num_users: Option<usize>,
    /// Type annotation printed between `:` and `[num_users…]`, if any.
    pub type_annotation: Option<String>,
    /// 1-based source line.
    pub line: usize,
}

/// An argument value.
#[derive(Clone, Debug, PartialEq)]
pub enum FxArg {
    /// `%name`, or a bare node name in the `return` statement.
    Node(String),
    None,
    Bool(bool),
    Int(i64),
    /// An integer literal beyond the range of `i64`, kept as text.
    BigInt(String),
    Float(f64),
    /// A quoted string literal (`'abc'` or `"abc"`), unescaped.
    Str(String),
    /// `torch.float32` and the other dtypes.
    Dtype(ScalarType),
    /// `torch.strided` and the other layouts.
    Layout(Layout),
    /// `torch.contiguous_format` and the other memory formats.
    MemoryFormat(MemoryFormat),
    /// `device(type='cpu', index=0)`.
    Device {
        kind: String,
        index: Option<i64>,
    },
    /// Any other bare word, such as an unquoted string (`floor`) or a device (`cpu`).
    Word(String),
    Tuple(Vec<FxArg>),
    List(Vec<FxArg>),
    Dict(Vec<(FxArg, FxArg)>),
    /// `name(args, key=value)`, such as `slice(None, 2, None)`.
    Call {
        func: String,
        args: Vec<FxArg>,
        kwargs: Vec<(String, FxArg)>,
    },
}

impl FxArg {
    /// The node name when this argument is a node reference.
    pub fn as_node(&self) -> Option<&str> {
        match self {
            FxArg::Node(name) => Some(name),
            _ => None,
        }
    }
}
