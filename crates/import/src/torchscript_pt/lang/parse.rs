//! Recursive-descent parser of TorchScript source into [`SourceFile`]: classes, functions,
//! statements and Python expressions with Python's operator precedence.

use super::ast::*;
use super::lex::{Tok, Token, lex};
use crate::ParseError;
use crate::error::MAX_NESTING;
use crate::torchscript::lex::Lines;

/// Parses one source file.
pub fn parse(text: &str) -> Result<SourceFile, ParseError> {
    let lines = Lines::new(text);
    let toks = lex(text, &lines)?;
    let mut p = Parser { toks, pos: 0, lines, depth: 0 };
    p.file()
}

struct Parser<'a> {
    toks: Vec<Token>,
    pos: usize,
    lines: Lines<'a>,
    depth: usize,
}

type R<T> = Result<T, ParseError>;

const KEYWORDS: &[&str] = &[
    "and", "as", "assert", "break", "class", "continue", "def", "del", "elif", "else", "except", "finally", "for",
    "from", "global", "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return",
    "try", "while", "with", "yield",
];

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos.min(self.toks.len() - 1)].tok
    }

    fn peek_at(&self, k: usize) -> &Tok {
        &self.toks[(self.pos + k).min(self.toks.len() - 1)].tok
    }

    fn at(&self) -> usize {
        self.toks[self.pos.min(self.toks.len() - 1)].at
    }

    fn bump(&mut self) -> Tok {
        let t = self.peek().clone();
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn err(&self, message: impl Into<String>) -> ParseError {
        self.lines.error(self.at(), message)
    }

    fn describe(&self) -> String {
        match self.peek() {
            Tok::Name(n) => format!("`{n}`"),
            Tok::Int(i) => format!("`{i}`"),
            Tok::Float(f) => format!("`{f}`"),
            Tok::Str(_) => "a string".into(),
            Tok::Op(o) => format!("`{o}`"),
            Tok::Newline => "the end of the line".into(),
            Tok::Indent => "an indented block".into(),
            Tok::Dedent => "the end of the block".into(),
            Tok::Eof => "the end of the file".into(),
        }
    }

    fn is_op(&self, op: &str) -> bool {
        matches!(self.peek(), Tok::Op(o) if *o == op)
    }

    fn is_kw(&self, kw: &str) -> bool {
        matches!(self.peek(), Tok::Name(n) if n == kw)
    }

    fn eat_op(&mut self, op: &str) -> bool {
        let yes = self.is_op(op);
        if yes {
            self.bump();
        }
        yes
    }

    fn eat_kw(&mut self, kw: &str) -> bool {
        let yes = self.is_kw(kw);
        if yes {
            self.bump();
        }
        yes
    }

    fn expect_op(&mut self, op: &str) -> R<()> {
        if self.eat_op(op) { Ok(()) } else { Err(self.err(format!("expected `{op}`, found {}", self.describe()))) }
    }

    fn expect_kw(&mut self, kw: &str) -> R<()> {
        if self.eat_kw(kw) { Ok(()) } else { Err(self.err(format!("expected `{kw}`, found {}", self.describe()))) }
    }

    fn name(&mut self) -> R<String> {
        match self.peek() {
            Tok::Name(n) if !KEYWORDS.contains(&n.as_str()) => {
                let n = n.clone();
                self.bump();
                Ok(n)
            }
            _ => Err(self.err(format!("expected a name, found {}", self.describe()))),
        }
    }

    fn newline(&mut self) -> R<()> {
        match self.peek() {
            Tok::Newline => {
                self.bump();
                Ok(())
            }
            Tok::Eof | Tok::Dedent => Ok(()),
            _ => Err(self.err(format!("expected the end of the line, found {}", self.describe()))),
        }
    }

    fn enter(&mut self) -> R<()> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(self.err(format!("nesting deeper than {MAX_NESTING} levels")));
        }
        Ok(())
    }

    fn file(&mut self) -> R<SourceFile> {
        let mut file = SourceFile { classes: Vec::new(), functions: Vec::new() };
        loop {
            match self.peek() {
                Tok::Eof => return Ok(file),
                Tok::Newline => {
                    self.bump();
                }
                Tok::Name(n) if n == "class" => file.classes.push(self.class()?),
                Tok::Name(n) if n == "def" => file.functions.push(self.def()?),
                Tok::Name(n) if n == "import" || n == "from" => {
                    // Imports only name modules the qualified names already spell out.
                    while !matches!(self.peek(), Tok::Newline | Tok::Eof) {
                        self.bump();
                    }
                }
                _ => return Err(self.err(format!("expected `class` or `def` at the top level, found {}", self.describe()))),
            }
        }
    }

    fn class(&mut self) -> R<ClassDef> {
        let at = self.at();
        self.expect_kw("class")?;
        let name = self.name()?;
        let base = if self.eat_op("(") {
            let b = if self.is_op(")") { None } else { Some(self.expr()?) };
            self.expect_op(")")?;
            b
        } else {
            None
        };
        self.expect_op(":")?;
        self.newline()?;
        let mut class = ClassDef { name, base, attributes: Vec::new(), assignments: Vec::new(), methods: Vec::new(), at };
        if !matches!(self.peek(), Tok::Indent) {
            return Err(self.err("expected an indented class body"));
        }
        self.bump();
        loop {
            match self.peek() {
                Tok::Dedent => {
                    self.bump();
                    return Ok(class);
                }
                Tok::Eof => return Ok(class),
                Tok::Newline => {
                    self.bump();
                }
                Tok::Name(n) if n == "def" => class.methods.push(self.def()?),
                Tok::Name(n) if n == "pass" => {
                    self.bump();
                    self.newline()?;
                }
                _ => {
                    let at = self.at();
                    let target = self.expr()?;
                    if self.eat_op(":") {
                        let ExprKind::Name(name) = target.kind else {
                            return Err(self.lines.error(at, "a class attribute declaration needs a plain name"));
                        };
                        let ty = self.expr()?;
                        let value = if self.eat_op("=") { Some(self.expr()?) } else { None };
                        class.attributes.push(AttrDecl { name, ty, value, at });
                    } else if self.eat_op("=") {
                        let value = self.expr()?;
                        class.assignments.push((target, value));
                    } else if matches!(target.kind, ExprKind::Str(_) | ExprKind::Ellipsis) {
                        // A docstring or `...`.
                    } else {
                        return Err(self.err(format!("expected `:` or `=` in the class body, found {}", self.describe())));
                    }
                    self.newline()?;
                }
            }
        }
    }

    fn def(&mut self) -> R<FnDef> {
        let at = self.at();
        self.expect_kw("def")?;
        let name = self.name()?;
        self.expect_op("(")?;
        let mut params = Vec::new();
        while !self.is_op(")") {
            let at = self.at();
            if self.is_op("*") || self.is_op("**") {
                return Err(self.err("variadic parameters (`*args`, `**kwargs`) are not supported"));
            }
            let name = self.name()?;
            let ty = if self.eat_op(":") { Some(self.expr()?) } else { None };
            let default = if self.eat_op("=") { Some(self.expr()?) } else { None };
            params.push(Param { name, ty, default, at });
            if !self.eat_op(",") {
                break;
            }
        }
        self.expect_op(")")?;
        let ret = if self.eat_op("->") { Some(self.expr()?) } else { None };
        self.expect_op(":")?;
        let body = self.suite()?;
        Ok(FnDef { name, params, ret, body, at })
    }

    /// The body after a `:`: an indented block, or simple statements on the same line.
    fn suite(&mut self) -> R<Vec<Stmt>> {
        self.enter()?;
        let out = if matches!(self.peek(), Tok::Newline) {
            self.bump();
            if !matches!(self.peek(), Tok::Indent) {
                return Err(self.err("expected an indented block"));
            }
            self.bump();
            let mut body = Vec::new();
            loop {
                match self.peek() {
                    Tok::Dedent => {
                        self.bump();
                        break;
                    }
                    Tok::Eof => break,
                    Tok::Newline => {
                        self.bump();
                    }
                    _ => body.extend(self.stmt()?),
                }
            }
            body
        } else {
            let mut body = vec![self.simple_stmt()?];
            while self.eat_op(";") {
                if matches!(self.peek(), Tok::Newline | Tok::Eof) {
                    break;
                }
                body.push(self.simple_stmt()?);
            }
            self.newline()?;
            body
        };
        self.depth -= 1;
        Ok(out)
    }

    /// One statement, or the several simple statements of one line.
    fn stmt(&mut self) -> R<Vec<Stmt>> {
        let at = self.at();
        let kind = match self.peek() {
            Tok::Name(n) if n == "if" => {
                self.bump();
                return Ok(vec![self.if_rest(at)?]);
            }
            Tok::Name(n) if n == "for" => {
                self.bump();
                let target = self.target_list()?;
                self.expect_kw("in")?;
                let iter = self.expr_list()?;
                self.expect_op(":")?;
                let body = self.suite()?;
                if self.is_kw("else") {
                    return Err(self.err("`for … else` is not supported"));
                }
                StmtKind::For { target, iter, body }
            }
            Tok::Name(n) if n == "while" => {
                self.bump();
                let cond = self.expr()?;
                self.expect_op(":")?;
                let body = self.suite()?;
                if self.is_kw("else") {
                    return Err(self.err("`while … else` is not supported"));
                }
                StmtKind::While { cond, body }
            }
            Tok::Name(n) if matches!(n.as_str(), "with" | "try" | "def" | "class" | "async") => {
                let what: &'static str = match n.as_str() {
                    "with" => "`with` statement",
                    "try" => "`try` statement",
                    "def" => "nested function definition",
                    "class" => "nested class definition",
                    _ => "`async` statement",
                };
                return Err(self.err(format!("{what} is not supported")));
            }
            _ => {
                let mut s = vec![self.simple_stmt()?];
                while self.eat_op(";") {
                    if matches!(self.peek(), Tok::Newline | Tok::Eof) {
                        break;
                    }
                    s.push(self.simple_stmt()?);
                }
                self.newline()?;
                return Ok(s);
            }
        };
        Ok(vec![Stmt { kind, at }])
    }

    fn if_rest(&mut self, at: usize) -> R<Stmt> {
        let cond = self.expr()?;
        self.expect_op(":")?;
        let then = self.suite()?;
        let orelse = if self.is_kw("elif") {
            let at = self.at();
            self.bump();
            vec![self.if_rest(at)?]
        } else if self.eat_kw("else") {
            self.expect_op(":")?;
            self.suite()?
        } else {
            Vec::new()
        };
        Ok(Stmt { kind: StmtKind::If { cond, then, orelse }, at })
    }

    fn simple_stmt(&mut self) -> R<Stmt> {
        let at = self.at();
        let kind = match self.peek().clone() {
            Tok::Name(n) => match n.as_str() {
                "pass" => {
                    self.bump();
                    StmtKind::Pass
                }
                "break" => {
                    self.bump();
                    StmtKind::Break
                }
                "continue" => {
                    self.bump();
                    StmtKind::Continue
                }
                "return" => {
                    self.bump();
                    if matches!(self.peek(), Tok::Newline | Tok::Eof | Tok::Dedent) || self.is_op(";") {
                        StmtKind::Return(None)
                    } else {
                        StmtKind::Return(Some(self.expr_list()?))
                    }
                }
                "raise" => {
                    self.bump();
                    if matches!(self.peek(), Tok::Newline | Tok::Eof | Tok::Dedent) {
                        StmtKind::Raise(None)
                    } else {
                        let e = self.expr()?;
                        if self.eat_kw("from") {
                            self.expr()?;
                        }
                        StmtKind::Raise(Some(e))
                    }
                }
                "assert" => {
                    self.bump();
                    let cond = self.expr()?;
                    let msg = if self.eat_op(",") { Some(self.expr()?) } else { None };
                    StmtKind::Assert { cond, msg }
                }
                "del" => {
                    self.bump();
                    let mut targets = vec![self.expr()?];
                    while self.eat_op(",") {
                        targets.push(self.expr()?);
                    }
                    StmtKind::Del(targets)
                }
                "global" | "nonlocal" | "import" | "from" | "yield" => {
                    return Err(self.err(format!("`{n}` is not supported")));
                }
                _ => self.expr_stmt()?,
            },
            _ => self.expr_stmt()?,
        };
        Ok(Stmt { kind, at })
    }

    fn expr_stmt(&mut self) -> R<StmtKind> {
        let first = self.expr_list()?;
        if self.eat_op(":") {
            let ty = self.expr()?;
            let value = if self.eat_op("=") { Some(self.expr_list()?) } else { None };
            return Ok(StmtKind::AnnAssign { target: first, ty, value });
        }
        let aug = match self.peek() {
            Tok::Op(o) => match *o {
                "+=" => Some(BinOp::Add),
                "-=" => Some(BinOp::Sub),
                "*=" => Some(BinOp::Mul),
                "/=" => Some(BinOp::Div),
                "//=" => Some(BinOp::FloorDiv),
                "%=" => Some(BinOp::Mod),
                "**=" => Some(BinOp::Pow),
                "&=" => Some(BinOp::BitAnd),
                "|=" => Some(BinOp::BitOr),
                "^=" => Some(BinOp::BitXor),
                "<<=" => Some(BinOp::LShift),
                ">>=" => Some(BinOp::RShift),
                _ => None,
            },
            _ => None,
        };
        if let Some(op) = aug {
            self.bump();
            let value = self.expr_list()?;
            return Ok(StmtKind::AugAssign { target: first, op, value });
        }
        if !self.is_op("=") {
            return Ok(StmtKind::Expr(first));
        }
        let mut targets = vec![first];
        let mut value;
        loop {
            self.expect_op("=")?;
            value = self.expr_list()?;
            if !self.is_op("=") {
                break;
            }
            targets.push(value);
        }
        Ok(StmtKind::Assign { targets, value })
    }

    /// `a, b, = …` targets of `for`: a name or a tuple of them, without the `in` operator.
    fn target_list(&mut self) -> R<Expr> {
        let at = self.at();
        let mut items = vec![self.or_expr()?];
        let mut tuple = false;
        while self.eat_op(",") {
            tuple = true;
            if self.is_kw("in") {
                break;
            }
            items.push(self.or_expr()?);
        }
        Ok(if tuple { Expr { kind: ExprKind::Tuple(items), at } } else { items.remove(0) })
    }

    /// Expressions separated by commas; a trailing comma or several make a tuple.
    fn expr_list(&mut self) -> R<Expr> {
        let at = self.at();
        let first = self.expr()?;
        if !self.is_op(",") {
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat_op(",") {
            if self.ends_list() {
                break;
            }
            items.push(self.expr()?);
        }
        Ok(Expr { kind: ExprKind::Tuple(items), at })
    }

    fn ends_list(&self) -> bool {
        matches!(self.peek(), Tok::Newline | Tok::Eof | Tok::Dedent)
            || ["=", ")", "]", "}", ":", ";"].iter().any(|o| self.is_op(o))
            || matches!(self.peek(), Tok::Op(o) if o.len() >= 2 && o.ends_with('=') && *o != "==" && *o != "!=" && *o != "<=" && *o != ">=")
    }

    fn expr(&mut self) -> R<Expr> {
        self.enter()?;
        let at = self.at();
        let e = if self.is_kw("lambda") {
            Err(self.err("`lambda` is not supported"))
        } else {
            let e = self.or_test()?;
            if self.eat_kw("if") {
                let cond = self.or_test()?;
                self.expect_kw("else")?;
                let orelse = self.expr()?;
                Ok(Expr { kind: ExprKind::IfExp { cond: Box::new(cond), then: Box::new(e), orelse: Box::new(orelse) }, at })
            } else {
                Ok(e)
            }
        };
        self.depth -= 1;
        e
    }

    fn or_test(&mut self) -> R<Expr> {
        let mut l = self.and_test()?;
        while self.is_kw("or") {
            let at = self.at();
            self.bump();
            let r = self.and_test()?;
            l = Expr { kind: ExprKind::BoolOp(false, Box::new(l), Box::new(r)), at };
        }
        Ok(l)
    }

    fn and_test(&mut self) -> R<Expr> {
        let mut l = self.not_test()?;
        while self.is_kw("and") {
            let at = self.at();
            self.bump();
            let r = self.not_test()?;
            l = Expr { kind: ExprKind::BoolOp(true, Box::new(l), Box::new(r)), at };
        }
        Ok(l)
    }

    fn not_test(&mut self) -> R<Expr> {
        if self.is_kw("not") {
            let at = self.at();
            self.bump();
            self.enter()?;
            let e = self.not_test()?;
            self.depth -= 1;
            return Ok(Expr { kind: ExprKind::Unary(UnaryOp::Not, Box::new(e)), at });
        }
        self.comparison()
    }

    fn comparison(&mut self) -> R<Expr> {
        let at = self.at();
        let first = self.or_expr()?;
        let mut rest = Vec::new();
        loop {
            let op = match self.peek() {
                Tok::Op("==") => CmpOp::Eq,
                Tok::Op("!=") => CmpOp::Ne,
                Tok::Op("<") => CmpOp::Lt,
                Tok::Op("<=") => CmpOp::Le,
                Tok::Op(">") => CmpOp::Gt,
                Tok::Op(">=") => CmpOp::Ge,
                Tok::Name(n) if n == "in" => CmpOp::In,
                Tok::Name(n) if n == "is" => {
                    if matches!(self.peek_at(1), Tok::Name(m) if m == "not") {
                        self.bump();
                        CmpOp::IsNot
                    } else {
                        CmpOp::Is
                    }
                }
                Tok::Name(n) if n == "not" && matches!(self.peek_at(1), Tok::Name(m) if m == "in") => {
                    self.bump();
                    CmpOp::NotIn
                }
                _ => break,
            };
            self.bump();
            rest.push((op, self.or_expr()?));
        }
        Ok(if rest.is_empty() { first } else { Expr { kind: ExprKind::Compare(Box::new(first), rest), at } })
    }

    /// Binary operators by precedence, lowest first.
    fn or_expr(&mut self) -> R<Expr> {
        self.binary(0)
    }

    fn binary(&mut self, level: usize) -> R<Expr> {
        const LEVELS: &[&[(&str, BinOp)]] = &[
            &[("|", BinOp::BitOr)],
            &[("^", BinOp::BitXor)],
            &[("&", BinOp::BitAnd)],
            &[("<<", BinOp::LShift), (">>", BinOp::RShift)],
            &[("+", BinOp::Add), ("-", BinOp::Sub)],
            &[("*", BinOp::Mul), ("/", BinOp::Div), ("//", BinOp::FloorDiv), ("%", BinOp::Mod), ("@", BinOp::MatMul)],
        ];
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut l = self.binary(level + 1)?;
        loop {
            let Some(&(_, op)) = LEVELS[level].iter().find(|(s, _)| self.is_op(s)) else { break };
            let at = self.at();
            self.bump();
            let r = self.binary(level + 1)?;
            l = Expr { kind: ExprKind::Binary(op, Box::new(l), Box::new(r)), at };
        }
        Ok(l)
    }

    fn unary(&mut self) -> R<Expr> {
        let at = self.at();
        let op = match self.peek() {
            Tok::Op("-") => UnaryOp::Neg,
            Tok::Op("+") => UnaryOp::Pos,
            Tok::Op("~") => UnaryOp::Invert,
            _ => return self.power(),
        };
        self.bump();
        self.enter()?;
        let e = self.unary()?;
        self.depth -= 1;
        Ok(Expr { kind: ExprKind::Unary(op, Box::new(e)), at })
    }

    fn power(&mut self) -> R<Expr> {
        let base = self.postfix()?;
        if self.is_op("**") {
            let at = self.at();
            self.bump();
            self.enter()?;
            let exp = self.unary()?;
            self.depth -= 1;
            return Ok(Expr { kind: ExprKind::Binary(BinOp::Pow, Box::new(base), Box::new(exp)), at });
        }
        Ok(base)
    }

    fn postfix(&mut self) -> R<Expr> {
        let mut e = self.atom()?;
        let mut links = 0;
        loop {
            let at = self.at();
            let start = e.at;
            if self.eat_op(".") {
                let name = match self.bump() {
                    Tok::Name(n) => n,
                    _ => return Err(self.lines.error(at, "expected an attribute name after `.`")),
                };
                e = Expr { kind: ExprKind::Attribute(Box::new(e), name), at: start };
            } else if self.eat_op("(") {
                let (args, kwargs) = self.call_args()?;
                e = Expr { kind: ExprKind::Call { func: Box::new(e), args, kwargs }, at: start };
            } else if self.eat_op("[") {
                let index = self.subscript()?;
                self.expect_op("]")?;
                e = Expr { kind: ExprKind::Subscript(Box::new(e), Box::new(index)), at: start };
            } else {
                return Ok(e);
            }
            links += 1;
            if links > MAX_NESTING * 16 {
                return Err(self.err("expression too long"));
            }
        }
    }

    fn call_args(&mut self) -> R<(Vec<Expr>, Vec<(String, Expr)>)> {
        let mut args = Vec::new();
        let mut kwargs = Vec::new();
        while !self.is_op(")") {
            if self.is_op("*") || self.is_op("**") {
                return Err(self.err("argument unpacking (`*`, `**`) is not supported"));
            }
            if matches!(self.peek(), Tok::Name(_)) && matches!(self.peek_at(1), Tok::Op("=")) {
                let name = self.name()?;
                self.bump();
                kwargs.push((name, self.expr()?));
            } else {
                if !kwargs.is_empty() {
                    return Err(self.err("a positional argument follows a keyword argument"));
                }
                args.push(self.expr()?);
            }
            if self.is_kw("for") {
                return Err(self.err("generator expressions are not supported"));
            }
            if !self.eat_op(",") {
                break;
            }
        }
        self.expect_op(")")?;
        Ok((args, kwargs))
    }

    /// The inside of `[…]`: an expression, a slice, or a tuple of them.
    fn subscript(&mut self) -> R<Expr> {
        let at = self.at();
        let first = self.slice_item()?;
        if !self.is_op(",") {
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat_op(",") {
            if self.is_op("]") {
                break;
            }
            items.push(self.slice_item()?);
        }
        Ok(Expr { kind: ExprKind::Tuple(items), at })
    }

    fn slice_item(&mut self) -> R<Expr> {
        let at = self.at();
        let bound = |p: &mut Self| -> R<Option<Box<Expr>>> {
            if p.is_op(":") || p.is_op("]") || p.is_op(",") { Ok(None) } else { Ok(Some(Box::new(p.expr()?))) }
        };
        let lower = bound(self)?;
        if !self.eat_op(":") {
            return lower.map(|e| *e).ok_or_else(|| self.err("expected an index"));
        }
        let upper = bound(self)?;
        let step = if self.eat_op(":") { bound(self)? } else { None };
        Ok(Expr { kind: ExprKind::Slice(lower, upper, step), at })
    }

    fn atom(&mut self) -> R<Expr> {
        let at = self.at();
        let kind = match self.bump() {
            Tok::Int(i) => ExprKind::Int(i),
            Tok::Float(f) => ExprKind::Float(f),
            Tok::Str(s) => {
                let mut s = s;
                // Adjacent literals concatenate.
                while let Tok::Str(more) = self.peek() {
                    s.push_str(more);
                    self.bump();
                }
                ExprKind::Str(s)
            }
            Tok::Name(n) => match n.as_str() {
                "True" => ExprKind::Bool(true),
                "False" => ExprKind::Bool(false),
                "None" => ExprKind::None,
                "lambda" => return Err(self.lines.error(at, "`lambda` is not supported")),
                "yield" | "await" => return Err(self.lines.error(at, format!("`{n}` is not supported"))),
                k if KEYWORDS.contains(&k) => return Err(self.lines.error(at, format!("unexpected keyword `{k}`"))),
                _ => ExprKind::Name(n),
            },
            Tok::Op("(") => {
                self.enter()?;
                if self.eat_op(")") {
                    self.depth -= 1;
                    return Ok(Expr { kind: ExprKind::Tuple(Vec::new()), at });
                }
                let first = self.expr()?;
                if self.is_kw("for") {
                    return Err(self.err("generator expressions are not supported"));
                }
                let e = if self.is_op(",") {
                    let mut items = vec![first];
                    while self.eat_op(",") {
                        if self.is_op(")") {
                            break;
                        }
                        items.push(self.expr()?);
                    }
                    Expr { kind: ExprKind::Tuple(items), at }
                } else {
                    first
                };
                self.expect_op(")")?;
                self.depth -= 1;
                return Ok(e);
            }
            Tok::Op("[") => {
                self.enter()?;
                let mut items = Vec::new();
                while !self.is_op("]") {
                    items.push(self.expr()?);
                    if self.is_kw("for") {
                        return Err(self.err("list comprehensions are not supported"));
                    }
                    if !self.eat_op(",") {
                        break;
                    }
                }
                self.expect_op("]")?;
                self.depth -= 1;
                ExprKind::List(items)
            }
            Tok::Op("{") => {
                self.enter()?;
                let mut items = Vec::new();
                while !self.is_op("}") {
                    let k = self.expr()?;
                    if !self.eat_op(":") {
                        return Err(self.err("set literals and comprehensions are not supported"));
                    }
                    let v = self.expr()?;
                    if self.is_kw("for") {
                        return Err(self.err("dict comprehensions are not supported"));
                    }
                    items.push((k, v));
                    if !self.eat_op(",") {
                        break;
                    }
                }
                self.expect_op("}")?;
                self.depth -= 1;
                ExprKind::Dict(items)
            }
            Tok::Op(".") if self.is_op(".") && matches!(self.peek_at(1), Tok::Op(".")) => {
                self.bump();
                self.bump();
                ExprKind::Ellipsis
            }
            _ => {
                self.pos = self.pos.saturating_sub(1);
                return Err(self.err(format!("expected an expression, found {}", self.describe())));
            }
        };
        Ok(Expr { kind, at })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_printed_module() {
        let text = "class M(Module):\n  __parameters__ = [\"weight\", ]\n  weight : Tensor\n  k : Final[int] = 3\n  def forward(self: __torch__.M,\n    x: Tensor,\n    y: Optional[Tensor]=None) -> Tuple[Tensor, int]:\n    a, b, = torch.split(x, 2)\n    if torch.__isnot__(y, None):\n      x0 = unchecked_cast(Tensor, y)\n    elif bool(x):\n      x0 = x\n    else:\n      x0 = -x[0, 1:]\n    for i in range(3):\n      x0 += i\n    return (x0, 1)\ndef f(a: int) -> int:\n  return a * 2 ** 3\n";
        let f = parse(text).unwrap();
        assert_eq!(f.classes.len(), 1);
        assert_eq!(f.functions.len(), 1);
        let c = &f.classes[0];
        assert_eq!(c.attributes.len(), 2);
        assert_eq!(c.assignments.len(), 1);
        let m = &c.methods[0];
        assert_eq!(m.params.len(), 3);
        assert!(m.params[2].default.is_some());
        assert_eq!(m.body.len(), 4);
        assert!(matches!(&m.body[0].kind, StmtKind::Assign { targets, .. } if matches!(targets[0].kind, ExprKind::Tuple(ref t) if t.len() == 2)));
        // `2 ** 3` binds tighter than `*`.
        let StmtKind::Return(Some(e)) = &f.functions[0].body[0].kind else { panic!() };
        assert!(matches!(&e.kind, ExprKind::Binary(BinOp::Mul, _, r) if matches!(r.kind, ExprKind::Binary(BinOp::Pow, _, _))));
    }

    #[test]
    fn errors_are_positioned_and_name_the_construct() {
        let e = parse("def f(x):\n  with x:\n    pass\n").unwrap_err();
        assert_eq!((e.line, e.col), (2, 3));
        assert!(e.message.contains("`with`"), "{e}");
        let e = parse("def f(x):\n  return [a for a in x]\n").unwrap_err();
        assert!(e.message.contains("comprehension"), "{e}");
        let e = parse("def f(x):\n  return (\n").unwrap_err();
        assert!(e.message.contains("unclosed"), "{e}");
        let e = parse("x = 1\n").unwrap_err();
        assert!(e.message.contains("top level"), "{e}");
        let deep = format!("def f(x):\n  return {}x{}\n", "(".repeat(400), ")".repeat(400));
        assert!(parse(&deep).unwrap_err().message.contains("nesting"));
    }
}
