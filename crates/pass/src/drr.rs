//! Declarative rewrite rules: a small pattern language, read at registration and compiled into
//! [`RewritePattern`]s that the greedy driver and `canonicalize` apply.
//!
//! One rule per line (`\` at the end of a line continues it; `#` after a space or at the start
//! of a line begins a comment), spelled like the e-graph's rule files (`docs/egraph.md`):
//!
//! ```text
//! transpose-transpose: (toy.transpose (toy.transpose ?x)) => ?x
//! reshape-same-type: (toy.reshape ?x) => ?x if (same-type ?x)
//! scale-scale: (toy.scale (toy.scale ?x factor=?a) factor=?b) => @merge-scales ?x ?a ?b benefit 2
//! ```
//!
//! - The left side is an op pattern, `(name operand... attr=VALUE...)`: operands are variables
//!   `?x` (bound to the value; a variable met twice must be bound to the same value), `_` (any
//!   value) or nested op patterns (the operand is a result of such an op). `attr=?v` binds an
//!   attribute (equal on a repeat), `attr=LITERAL` requires it to equal a literal in the IR's
//!   attribute syntax, written without spaces (`1.0`, `"s"`, `dense<[1.0,2.0]>`).
//! - The right side is a bound variable (the matched op's result becomes it), an op to build,
//!   `(name operand... attr=VALUE... [: ?t])` — the outermost takes the matched op's result
//!   types, a nested one the type of `?t` or else its first operand's —, or `@builder ?v...`, a
//!   native builder registered in [`Natives`], which builds the replacement or declines.
//! - Conditions after `if`: `(same-type ?a ?b)` (`(same-type ?a)`: as the matched op's
//!   result), `(is-tensor ?a)`, `(static-shape ?a)` (a tensor of static sizes), `(float ?a)` (a
//!   tensor of floating dtype), `(attr-eq ?v LITERAL)`, and `(@predicate ?v...)`, a native
//!   predicate of [`Natives`].
//! - `benefit N` at the end orders rules (higher first; default 1).
//!
//! Errors in rule text are [`DrrError`]s located at `file:line:col`; unknown ops, variables
//! and native functions are found when the text is compiled, not when a rule runs.

use crate::rewrite::{PatternRewriter, RewritePattern, RewriteSet};
use ir::{Attribute, Context, Diagnostic, Module, OpId, OperationState, Type, ValueId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// What a variable is bound to while a rule matches.
#[derive(Clone, Debug, PartialEq)]
pub enum Binding {
    Value(ValueId),
    Attr(Attribute),
}

impl Binding {
    pub fn value(&self) -> Option<ValueId> {
        match self {
            Binding::Value(v) => Some(*v),
            Binding::Attr(_) => None,
        }
    }

    pub fn attr(&self) -> Option<&Attribute> {
        match self {
            Binding::Attr(a) => Some(a),
            Binding::Value(_) => None,
        }
    }
}

/// A native predicate: gets the bindings of its arguments, in order.
pub type NativePredicate = Arc<dyn Fn(&Context, &Module, &[Binding]) -> bool + Send + Sync>;

/// A native builder: gets the matched op and the bindings of its arguments; builds the
/// replacement values of the op's results through the rewriter (inserting before the op), or
/// returns `None` having built nothing to decline the match.
pub type NativeBuilder =
    Arc<dyn Fn(&Context, &mut PatternRewriter<'_>, OpId, &[Binding]) -> Result<Option<Vec<ValueId>>, Diagnostic> + Send + Sync>;

/// The native predicates and builders rules may name, registered by the dialect.
#[derive(Clone, Default)]
pub struct Natives {
    predicates: HashMap<String, NativePredicate>,
    builders: HashMap<String, NativeBuilder>,
}

impl Natives {
    pub fn new() -> Natives {
        Natives::default()
    }

    /// Registers `(@name ...)` for conditions.
    pub fn predicate(mut self, name: &str, f: impl Fn(&Context, &Module, &[Binding]) -> bool + Send + Sync + 'static) -> Self {
        self.predicates.insert(name.to_string(), Arc::new(f));
        self
    }

    /// Registers `@name ...` for right sides.
    pub fn builder(
        mut self,
        name: &str,
        f: impl Fn(&Context, &mut PatternRewriter<'_>, OpId, &[Binding]) -> Result<Option<Vec<ValueId>>, Diagnostic> + Send + Sync + 'static,
    ) -> Self {
        self.builders.insert(name.to_string(), Arc::new(f));
        self
    }
}

/// An error in rule text, at a line and column (both from 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DrrError {
    pub file: String,
    pub line: usize,
    pub col: usize,
    pub message: String,
}

impl fmt::Display for DrrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: {}", self.file, self.line, self.col, self.message)
    }
}

impl std::error::Error for DrrError {}

/// A token of rule text with its position.
#[derive(Clone, Debug)]
struct Tok {
    text: String,
    line: usize,
    col: usize,
}

/// The logical lines of rule text (continuations joined), as tokens.
fn tokenize(text: &str) -> Vec<Vec<Tok>> {
    let mut rules = Vec::new();
    let mut cur: Vec<Tok> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let mut word: Option<Tok> = None;
        let mut continued = false;
        let chars: Vec<char> = raw.chars().collect();
        let flush = |word: &mut Option<Tok>, cur: &mut Vec<Tok>| cur.extend(word.take());
        let mut k = 0;
        while k < chars.len() {
            let c = chars[k];
            let col = k + 1;
            if c == '#' && word.is_none() {
                break;
            }
            if c == '\\' && chars[k + 1..].iter().all(|c| c.is_whitespace()) {
                continued = true;
                break;
            }
            if c.is_whitespace() || c == '(' || c == ')' {
                flush(&mut word, &mut cur);
                if !c.is_whitespace() {
                    cur.push(Tok { text: c.to_string(), line, col });
                }
            } else {
                // A literal may hold parentheses inside angle brackets: `dense<...>` has none in
                // practice, so only whitespace and parentheses end a word.
                match &mut word {
                    Some(w) => w.text.push(c),
                    None => word = Some(Tok { text: c.to_string(), line, col }),
                }
            }
            k += 1;
        }
        flush(&mut word, &mut cur);
        if !continued && !cur.is_empty() {
            rules.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        rules.push(cur);
    }
    rules
}

/// An operand position of an op pattern.
#[derive(Clone, Debug)]
enum Arg {
    Var(String),
    Any,
    Op(OpPat),
}

/// An attribute value in a pattern: a variable or a literal.
#[derive(Clone, Debug)]
enum AttrVal {
    Var(String),
    Lit(Attribute),
}

#[derive(Clone, Debug)]
struct OpPat {
    name: String,
    args: Vec<Arg>,
    attrs: Vec<(String, AttrVal)>,
    /// `: ?t` on a built op: the type of `?t` gives its result type.
    type_of: Option<String>,
}

enum Result_ {
    Var(String),
    Op(OpPat),
    Native(NativeBuilder, Vec<String>),
}

enum Cond {
    SameType(String, Option<String>),
    IsTensor(String),
    StaticShape(String),
    Float(String),
    AttrEq(String, Attribute),
    Native(NativePredicate, Vec<String>),
}

/// A compiled rule: a [`RewritePattern`] rooted at its left side's op.
pub struct DrrPattern {
    name: String,
    lhs: OpPat,
    rhs: Result_,
    conds: Vec<Cond>,
    benefit: u16,
}

impl fmt::Debug for DrrPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DrrPattern").field("name", &self.name).field("root", &self.lhs.name).field("benefit", &self.benefit).finish()
    }
}

/// What a variable holds, as the left side binds it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum VarKind {
    Value,
    Attr,
}

struct Parser<'a> {
    ctx: &'a Context,
    file: &'a str,
    toks: Vec<Tok>,
    pos: usize,
    end: (usize, usize),
    vars: HashMap<String, VarKind>,
}

impl<'a> Parser<'a> {
    fn err_at(&self, t: &Tok, message: impl Into<String>) -> DrrError {
        DrrError { file: self.file.to_string(), line: t.line, col: t.col, message: message.into() }
    }

    fn err_here(&self, message: impl Into<String>) -> DrrError {
        match self.toks.get(self.pos) {
            Some(t) => self.err_at(t, message),
            None => DrrError { file: self.file.to_string(), line: self.end.0, col: self.end.1, message: message.into() },
        }
    }

    fn peek(&self) -> Option<&str> {
        self.toks.get(self.pos).map(|t| t.text.as_str())
    }

    fn next(&mut self, what: &str) -> Result<Tok, DrrError> {
        let t = self.toks.get(self.pos).cloned().ok_or_else(|| self.err_here(format!("expected {what}, found the end of the rule")))?;
        self.pos += 1;
        Ok(t)
    }

    fn expect(&mut self, text: &str) -> Result<Tok, DrrError> {
        let t = self.next(&format!("'{text}'"))?;
        if t.text != text {
            return Err(self.err_at(&t, format!("expected '{text}', found '{}'", t.text)));
        }
        Ok(t)
    }

    fn literal(&self, t: &Tok, text: &str) -> Result<Attribute, DrrError> {
        ir::parse_attribute(self.ctx, text).map_err(|d| self.err_at(t, format!("bad attribute literal '{text}': {}", d.message)))
    }

    fn var_name(&self, t: &Tok) -> Result<String, DrrError> {
        let name = &t.text[1..];
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return Err(self.err_at(t, format!("bad variable '{}'", t.text)));
        }
        Ok(name.to_string())
    }

    /// Declares (left side) or checks (right side, conditions) a variable of `kind`.
    fn use_var(&mut self, t: &Tok, kind: VarKind, binding: bool) -> Result<String, DrrError> {
        let name = self.var_name(t)?;
        match self.vars.get(&name) {
            Some(&k) if k != kind => {
                let (is, want) = if k == VarKind::Value { ("a value", "an attribute") } else { ("an attribute", "a value") };
                Err(self.err_at(t, format!("'?{name}' is {is}, but {want} is needed here")))
            }
            Some(_) => Ok(name),
            None if binding => {
                self.vars.insert(name.clone(), kind);
                Ok(name)
            }
            None => Err(self.err_at(t, format!("'?{name}' is not bound by the left side"))),
        }
    }

    /// `(name arg... attr=V... [: ?t])` after its `(`; `lhs` says which side it is on.
    fn op(&mut self, lhs: bool) -> Result<OpPat, DrrError> {
        let nt = self.next("an op name")?;
        let Some(def) = self.ctx.op_def(&nt.text) else {
            return Err(self.err_at(&nt, format!("unknown op '{}'", nt.text)));
        };
        let mut pat = OpPat { name: nt.text.clone(), args: Vec::new(), attrs: Vec::new(), type_of: None };
        loop {
            let t = self.next("')'")?;
            match t.text.as_str() {
                ")" => break,
                "(" => pat.args.push(Arg::Op(self.op(lhs)?)),
                "_" if lhs => pat.args.push(Arg::Any),
                ":" if !lhs => {
                    let v = self.next("a variable after ':'")?;
                    if !v.text.starts_with('?') {
                        return Err(self.err_at(&v, "expected a variable after ':'"));
                    }
                    pat.type_of = Some(self.use_var(&v, VarKind::Value, false)?);
                }
                s if s.starts_with('?') => pat.args.push(Arg::Var(self.use_var(&t, VarKind::Value, lhs)?)),
                s if s.contains('=') => {
                    let (name, value) = s.split_once('=').unwrap_or((s, ""));
                    if name.is_empty() || value.is_empty() {
                        return Err(self.err_at(&t, format!("expected attr=VALUE, found '{s}'")));
                    }
                    let value = if value.starts_with('?') {
                        let vt = Tok { text: value.to_string(), line: t.line, col: t.col + name.len() + 1 };
                        AttrVal::Var(self.use_var(&vt, VarKind::Attr, lhs)?)
                    } else {
                        AttrVal::Lit(self.literal(&t, value)?)
                    };
                    pat.attrs.push((name.to_string(), value));
                }
                s => return Err(self.err_at(&t, format!("unexpected '{s}' in an op pattern"))),
            }
        }
        if !def.operands.admits(pat.args.len()) {
            return Err(self.err_at(&nt, format!("'{}' cannot have {} operand(s)", nt.text, pat.args.len())));
        }
        Ok(pat)
    }

    fn cond(&mut self, natives: &Natives) -> Result<Cond, DrrError> {
        self.expect("(")?;
        let nt = self.next("a condition")?;
        let mut args = Vec::new();
        while self.peek().is_some_and(|p| p != ")") {
            args.push(self.next("an argument")?);
        }
        self.expect(")")?;
        let value = |p: &mut Self, i: usize| -> Result<String, DrrError> {
            let t = args.get(i).ok_or_else(|| p.err_at(&nt, format!("'{}' needs an argument #{}", nt.text, i + 1)))?;
            p.use_var(t, VarKind::Value, false)
        };
        let arity = |p: &Self, lo: usize, hi: usize| -> Result<(), DrrError> {
            if args.len() < lo || args.len() > hi {
                return Err(p.err_at(&nt, format!("'{}' takes {lo}..={hi} argument(s), found {}", nt.text, args.len())));
            }
            Ok(())
        };
        let c = match nt.text.as_str() {
            "same-type" => {
                arity(self, 1, 2)?;
                let b = if args.len() == 2 { Some(value(self, 1)?) } else { None };
                Cond::SameType(value(self, 0)?, b)
            }
            "is-tensor" => {
                arity(self, 1, 1)?;
                Cond::IsTensor(value(self, 0)?)
            }
            "static-shape" => {
                arity(self, 1, 1)?;
                Cond::StaticShape(value(self, 0)?)
            }
            "float" => {
                arity(self, 1, 1)?;
                Cond::Float(value(self, 0)?)
            }
            "attr-eq" => {
                arity(self, 2, 2)?;
                let v = self.use_var(&args[0], VarKind::Attr, false)?;
                Cond::AttrEq(v, self.literal(&args[1], &args[1].text)?)
            }
            s if s.starts_with('@') => {
                let f = natives.predicates.get(&s[1..]).ok_or_else(|| self.err_at(&nt, format!("no native predicate '{s}' is registered")))?;
                let f = f.clone();
                let mut names = Vec::new();
                for a in &args {
                    names.push(self.any_var(a)?);
                }
                Cond::Native(f, names)
            }
            s => return Err(self.err_at(&nt, format!("unknown condition '{s}'"))),
        };
        Ok(c)
    }

    /// A bound variable of either kind.
    fn any_var(&mut self, t: &Tok) -> Result<String, DrrError> {
        if !t.text.starts_with('?') {
            return Err(self.err_at(t, format!("expected a variable, found '{}'", t.text)));
        }
        let name = self.var_name(t)?;
        if !self.vars.contains_key(&name) {
            return Err(self.err_at(t, format!("'?{name}' is not bound by the left side")));
        }
        Ok(name)
    }

    fn rule(&mut self, natives: &Natives) -> Result<DrrPattern, DrrError> {
        let head = self.next("a rule name")?;
        let name = match head.text.strip_suffix(':') {
            Some(n) if !n.is_empty() => n.to_string(),
            _ => return Err(self.err_at(&head, format!("expected 'name:' to start a rule, found '{}'", head.text))),
        };
        self.expect("(")?;
        let lhs = self.op(true)?;
        self.expect("=>")?;
        let t = self.next("the rule's result")?;
        let rhs = match t.text.as_str() {
            "(" => Result_::Op(self.op(false)?),
            s if s.starts_with('?') => Result_::Var(self.use_var(&t, VarKind::Value, false)?),
            s if s.starts_with('@') => {
                let f = natives.builders.get(&s[1..]).ok_or_else(|| self.err_at(&t, format!("no native builder '{s}' is registered")))?;
                let f = f.clone();
                let mut args = Vec::new();
                while self.peek().is_some_and(|p| p.starts_with('?')) {
                    let a = self.next("a variable")?;
                    args.push(self.any_var(&a)?);
                }
                Result_::Native(f, args)
            }
            s => return Err(self.err_at(&t, format!("expected a variable, an op or @builder, found '{s}'"))),
        };
        let mut conds = Vec::new();
        if self.peek() == Some("if") {
            self.pos += 1;
            if self.peek() != Some("(") {
                return Err(self.err_here("expected a condition after 'if'"));
            }
            while self.peek() == Some("(") {
                conds.push(self.cond(natives)?);
            }
        }
        let mut benefit = 1;
        if self.peek() == Some("benefit") {
            self.pos += 1;
            let b = self.next("a benefit")?;
            benefit = b.text.parse().map_err(|_| self.err_at(&b, format!("benefit must be 0..=65535, found '{}'", b.text)))?;
        }
        if self.pos < self.toks.len() {
            return Err(self.err_here(format!("unexpected '{}' after the rule", self.toks[self.pos].text)));
        }
        Ok(DrrPattern { name, lhs, rhs, conds, benefit })
    }
}

/// Compiles rule text against the ops of `ctx` and the native functions of `natives`.
pub fn compile(ctx: &Context, file: &str, text: &str, natives: &Natives) -> Result<Vec<DrrPattern>, DrrError> {
    let mut out: Vec<DrrPattern> = Vec::new();
    for toks in tokenize(text) {
        let end = toks.last().map(|t| (t.line, t.col + t.text.chars().count())).unwrap_or((1, 1));
        let first = toks[0].clone();
        let mut p = Parser { ctx, file, toks, pos: 0, end, vars: HashMap::new() };
        let rule = p.rule(natives)?;
        if out.iter().any(|r| r.name == rule.name) {
            return Err(p.err_at(&first, format!("a rule named '{}' is already defined", rule.name)));
        }
        out.push(rule);
    }
    Ok(out)
}

/// [`compile`]s rule text and adds its rules to `set`.
pub fn add_rules(set: &mut RewriteSet, ctx: &Context, file: &str, text: &str, natives: &Natives) -> Result<(), DrrError> {
    for rule in compile(ctx, file, text, natives)? {
        set.add_pattern(rule);
    }
    Ok(())
}

type Bindings = HashMap<String, Binding>;

fn bind(b: &mut Bindings, name: &str, v: Binding) -> bool {
    match b.get(name) {
        Some(old) => *old == v,
        None => {
            b.insert(name.to_string(), v);
            true
        }
    }
}

fn match_op(m: &Module, op: OpId, pat: &OpPat, b: &mut Bindings) -> bool {
    if m.op_name(op) != pat.name || m.operands(op).len() != pat.args.len() {
        return false;
    }
    for (name, want) in &pat.attrs {
        let Some(a) = m.attr(op, name) else { return false };
        let ok = match want {
            AttrVal::Lit(l) => a == l,
            AttrVal::Var(v) => bind(b, v, Binding::Attr(a.clone())),
        };
        if !ok {
            return false;
        }
    }
    for (&v, arg) in m.operands(op).iter().zip(&pat.args) {
        let ok = match arg {
            Arg::Any => true,
            Arg::Var(n) => bind(b, n, Binding::Value(v)),
            Arg::Op(sub) => m.defining_op(v).is_some_and(|d| match_op(m, d, sub, b)),
        };
        if !ok {
            return false;
        }
    }
    true
}

impl DrrPattern {
    /// The rule's name (before the `:`).
    pub fn rule_name(&self) -> &str {
        &self.name
    }

    fn holds(&self, ctx: &Context, m: &Module, root: OpId, b: &Bindings) -> bool {
        let ty = |n: &str| b.get(n).and_then(Binding::value).map(|v| m.value_type(v));
        self.conds.iter().all(|c| match c {
            Cond::SameType(a, Some(o)) => ty(a).is_some() && ty(a) == ty(o),
            Cond::SameType(a, None) => m.results(root).first().is_some_and(|&r| ty(a) == Some(m.value_type(r))),
            Cond::IsTensor(a) => ty(a).is_some_and(Type::is_tensor),
            Cond::StaticShape(a) => ty(a).and_then(|t| t.as_tensor()).is_some_and(|t| t.static_dims().is_some()),
            Cond::Float(a) => ty(a).and_then(|t| t.as_tensor()).and_then(|t| t.dtype).is_some_and(|d| d.is_floating()),
            Cond::AttrEq(a, lit) => b.get(a).and_then(Binding::attr) == Some(lit),
            Cond::Native(f, args) => {
                let vals: Vec<Binding> = args.iter().filter_map(|n| b.get(n).cloned()).collect();
                f(ctx, m, &vals)
            }
        })
    }

    /// Builds `pat` before the matched op; `types` are its result types when given.
    fn build(&self, rw: &mut PatternRewriter<'_>, pat: &OpPat, b: &Bindings, types: Option<Vec<Type>>) -> Result<Vec<ValueId>, Diagnostic> {
        let mut operands = Vec::new();
        for a in &pat.args {
            match a {
                Arg::Var(n) => operands.push(value_of(b, n)?),
                Arg::Op(sub) => {
                    let vs = self.build(rw, sub, b, None)?;
                    operands.push(*vs.first().ok_or_else(|| internal(&self.name, "a nested op has no result"))?);
                }
                Arg::Any => return Err(internal(&self.name, "'_' on the right side")),
            }
        }
        let types = match (types, &pat.type_of) {
            (Some(t), _) => t,
            (None, Some(n)) => vec![rw.module().value_type(value_of(b, n)?).clone()],
            (None, None) => {
                let first = operands.first().ok_or_else(|| internal(&self.name, "a nested op without operands needs ': ?t'"))?;
                vec![rw.module().value_type(*first).clone()]
            }
        };
        let mut state = OperationState::new(&pat.name).operands(operands).results(types);
        for (name, v) in &pat.attrs {
            let a = match v {
                AttrVal::Lit(l) => l.clone(),
                AttrVal::Var(n) => b.get(n).and_then(Binding::attr).cloned().ok_or_else(|| internal(&self.name, "an attribute variable is unbound"))?,
            };
            state = state.attr(name, a);
        }
        let op = rw.create(state)?;
        Ok(rw.module().results(op).to_vec())
    }
}

fn value_of(b: &Bindings, n: &str) -> Result<ValueId, Diagnostic> {
    b.get(n).and_then(Binding::value).ok_or_else(|| internal(n, "a value variable is unbound"))
}

fn internal(what: &str, message: &str) -> Diagnostic {
    Diagnostic::error(ir::Location::Unknown, format!("rule '{what}': {message}"))
}

impl RewritePattern for DrrPattern {
    fn name(&self) -> &str {
        &self.name
    }

    fn root(&self) -> Option<&str> {
        Some(&self.lhs.name)
    }

    fn benefit(&self) -> u16 {
        self.benefit
    }

    fn match_and_rewrite(&self, ctx: &Context, rw: &mut PatternRewriter<'_>, op: OpId) -> Result<bool, Diagnostic> {
        let mut b = Bindings::new();
        if !match_op(rw.module(), op, &self.lhs, &mut b) || !self.holds(ctx, rw.module(), op, &b) {
            return Ok(false);
        }
        let new = match &self.rhs {
            Result_::Var(n) => vec![value_of(&b, n)?],
            Result_::Op(pat) => {
                let types = rw.module().results(op).iter().map(|&r| rw.module().value_type(r).clone()).collect();
                self.build(rw, pat, &b, Some(types))?
            }
            Result_::Native(f, args) => {
                let vals: Vec<Binding> = args.iter().filter_map(|n| b.get(n).cloned()).collect();
                match f(ctx, rw, op, &vals)? {
                    Some(v) => v,
                    None => return Ok(false),
                }
            }
        };
        if rw.module().results(op).iter().any(|r| new.contains(r)) {
            // The rule would replace the op with itself (a variable bound to its own result).
            return Ok(false);
        }
        rw.replace_op(op, &new)?;
        Ok(true)
    }
}
