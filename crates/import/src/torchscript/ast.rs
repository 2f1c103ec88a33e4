//! The TorchScript IR syntax tree.

/// A graph: its inputs and its body, whose `returns` are the graph outputs.
#[derive(Clone, Debug, PartialEq)]
pub struct TsGraph {
    pub inputs: Vec<(String, TsType)>,
    /// The top-level block; its `params` are empty (the inputs are above).
    pub body: TsBlock,
}

/// A block: parameters, nodes in order, and the values it yields (`-> (…)` or `return (…)`).
#[derive(Clone, Debug, PartialEq)]
pub struct TsBlock {
    pub params: Vec<(String, TsType)>,
    pub nodes: Vec<TsNode>,
    pub returns: Vec<String>,
}

/// One statement `%a : T, %b : T = ns::op[attr=value](%x, %y) # file:line:col`.
#[derive(Clone, Debug, PartialEq)]
pub struct TsNode {
    pub outputs: Vec<(String, TsType)>,
    /// Qualified kind, e.g. `aten::add` or `prim::Constant`.
    pub kind: String,
    pub attrs: Vec<(String, TsAttr)>,
    pub inputs: Vec<String>,
    /// Nested blocks of `prim::If` (two) and `prim::Loop` (one).
    pub blocks: Vec<TsBlock>,
    /// Python source location from the trailing comment.
    pub loc: Option<TsLoc>,
    /// 1-based line of the statement in the IR text.
    pub line: usize,
}

/// A `# file:line:col` source location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TsLoc {
    pub file: String,
    pub line: u32,
    pub col: u32,
}

/// An attribute value of a node, such as `value=1` of `prim::Constant`.
#[derive(Clone, Debug, PartialEq)]
pub enum TsAttr {
    Int(i64),
    Float(f64),
    Str(String),
    /// A bare word, such as a device (`cpu`) or `None`.
    Word(String),
    /// A tensor constant, kept as printed: `{1}` or `<Tensor>`.
    Tensor(String),
    List(Vec<TsAttr>),
}

/// Static type of a value.
#[derive(Clone, Debug, PartialEq)]
pub enum TsType {
    /// `Tensor`, or a specialised tensor type such as `Float(2, 3, strides=[3, 1], …)`.
    Tensor(Option<TsTensorType>),
    /// A named type: `int`, `float`, `bool`, `str`, `NoneType`, `Device`, a class name, ….
    Named(String),
    /// `T[]`.
    List(Box<TsType>),
    /// `T?`.
    Optional(Box<TsType>),
    /// `(T, U)`.
    Tuple(Vec<TsType>),
    /// A parameterised type such as `Dict(str, Tensor)` or `Future(int)`.
    Generic { name: String, args: Vec<TsType> },
}

/// Details of a specialised tensor type. Unknown dimensions (`*`) are `None`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TsTensorType {
    /// Scalar type name as printed (`Float`, `Long`, …); `None` for `Tensor(…)`.
    pub dtype: Option<String>,
    pub sizes: Vec<Option<i64>>,
    pub strides: Option<Vec<Option<i64>>>,
    pub requires_grad: Option<bool>,
    pub device: Option<String>,
}
