//! The syntax tree of TorchScript source. Every node keeps the byte offset it starts at in its
//! file, from which diagnostics compute line and column.

/// One `code/…py` file: its classes and free functions, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceFile {
    pub classes: Vec<ClassDef>,
    pub functions: Vec<FnDef>,
}

/// `class Name(Base):` and its body.
#[derive(Clone, Debug, PartialEq)]
pub struct ClassDef {
    pub name: String,
    pub base: Option<Expr>,
    /// `name : Type` and `name : Final[T] = value` declarations, in order.
    pub attributes: Vec<AttrDecl>,
    /// `__parameters__ = [...]`, `__buffers__ = [...]`, `__annotations__["0"] = T` and other
    /// class-level assignments.
    pub assignments: Vec<(Expr, Expr)>,
    pub methods: Vec<FnDef>,
    pub at: usize,
}

/// A typed class attribute, with its value when it is a constant (`Final[int] = 8`).
#[derive(Clone, Debug, PartialEq)]
pub struct AttrDecl {
    pub name: String,
    pub ty: Expr,
    pub value: Option<Expr>,
    pub at: usize,
}

/// `def name(params) -> ret:` and its body.
#[derive(Clone, Debug, PartialEq)]
pub struct FnDef {
    pub name: String,
    pub params: Vec<Param>,
    pub ret: Option<Expr>,
    pub body: Vec<Stmt>,
    pub at: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: String,
    pub ty: Option<Expr>,
    pub default: Option<Expr>,
    pub at: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub at: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    Expr(Expr),
    /// `a = b = value`: every target gets the value.
    Assign { targets: Vec<Expr>, value: Expr },
    /// `a : T = value`.
    AnnAssign { target: Expr, ty: Expr, value: Option<Expr> },
    /// `a += value`; `op` is the binary operator (`+`).
    AugAssign { target: Expr, op: BinOp, value: Expr },
    If { cond: Expr, then: Vec<Stmt>, orelse: Vec<Stmt> },
    For { target: Expr, iter: Expr, body: Vec<Stmt> },
    While { cond: Expr, body: Vec<Stmt> },
    Return(Option<Expr>),
    Break,
    Continue,
    Pass,
    Raise(Option<Expr>),
    Assert { cond: Expr, msg: Option<Expr> },
    Del(Vec<Expr>),
    /// A statement kind the language knows but this compiler refuses (`with`, `try`,
    /// `global`, a nested `def`, `lambda`): named in the error.
    Unsupported(&'static str),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub at: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    Pow,
    MatMul,
    BitAnd,
    BitOr,
    BitXor,
    LShift,
    RShift,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Is,
    IsNot,
    In,
    NotIn,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    Neg,
    Pos,
    Not,
    Invert,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Name(String),
    Int(i64),
    Float(f64),
    Str(String),
    Bool(bool),
    None,
    /// `...`: the placeholder body of a declaration.
    Ellipsis,
    Tuple(Vec<Expr>),
    List(Vec<Expr>),
    Dict(Vec<(Expr, Expr)>),
    Attribute(Box<Expr>, String),
    Call { func: Box<Expr>, args: Vec<Expr>, kwargs: Vec<(String, Expr)> },
    Subscript(Box<Expr>, Box<Expr>),
    /// `a:b:c` inside a subscript; absent parts are `None`.
    Slice(Option<Box<Expr>>, Option<Box<Expr>>, Option<Box<Expr>>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    Unary(UnaryOp, Box<Expr>),
    /// `a < b < c` as `[(Lt, b), (Lt, c)]` after `a`.
    Compare(Box<Expr>, Vec<(CmpOp, Expr)>),
    /// `and` (true) or `or` (false) over two operands.
    BoolOp(bool, Box<Expr>, Box<Expr>),
    IfExp { cond: Box<Expr>, then: Box<Expr>, orelse: Box<Expr> },
    /// An expression kind the compiler refuses (`lambda`, a comprehension, `*args`).
    Unsupported(&'static str),
}

impl Expr {
    /// The dotted name this expression spells (`torch.nn.functional.relu`), if it is one.
    pub fn dotted(&self) -> Option<String> {
        match &self.kind {
            ExprKind::Name(n) => Some(n.clone()),
            ExprKind::Attribute(base, a) => Some(format!("{}.{a}", base.dotted()?)),
            _ => None,
        }
    }
}
