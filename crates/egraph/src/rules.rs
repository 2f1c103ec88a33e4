//! Rewrite rules as data: the rule-file reader, named Rust conditions and appliers, and the
//! library of rule sets the passes draw from.
//!
//! A rule file holds one rule per line (`\` at the end of a line continues it; `#` starts a
//! comment) under `[set]` headers naming the rule set:
//!
//! ```text
//! [sound]
//! mul-one: (aten.mul.Tensor ?x (const 1.0)) => ?x if (same-type ?x)
//! mul-two: (aten.mul.Tensor ?x (const 2.0)) <=> (aten.add.Tensor ?x ?x) if (same-type ?x)
//! permute-permute: (aten.permute (aten.permute ?x)) => @compose-permute ?x
//! ```
//!
//! See `docs/egraph.md` for the full syntax.

use crate::analysis::{Facts, Graph, dtype_of};
use crate::lang::{Node, Scalar};
use egg::{Applier, ENodeOrVar, Id, Pattern, PatternAst, RecExpr, Rewrite, Subst, Symbol, Var};
use ir::{Attribute, DType, Type, TypeKind};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// A named condition: gets the e-graph, the matched class and the classes of its arguments.
pub type ConditionFn = Arc<dyn Fn(&Graph, Id, &[Id]) -> bool + Send + Sync>;

/// A named applier: gets the e-graph, the matched class and the classes of its arguments, and
/// returns classes equal to the matched one (which the engine unions with it).
pub type ApplierFn = Arc<dyn Fn(&mut Graph, Id, &[Id]) -> Vec<Id> + Send + Sync>;

/// An error in a rule file, with its line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct RuleError {
    pub file: String,
    pub line: usize,
    pub message: String,
}

/// An s-expression of a rule file.
#[derive(Clone, Debug, PartialEq)]
enum Sexp {
    Atom(String),
    List(Vec<Sexp>),
}

fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in text.chars() {
        if c == '(' || c == ')' || c.is_whitespace() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            if !c.is_whitespace() {
                out.push(c.to_string());
            }
        } else {
            cur.push(c);
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn parse_sexp(tokens: &[String], pos: &mut usize) -> Result<Sexp, String> {
    let Some(t) = tokens.get(*pos) else { return Err("unexpected end of rule".into()) };
    *pos += 1;
    match t.as_str() {
        "(" => {
            let mut items = Vec::new();
            loop {
                match tokens.get(*pos).map(String::as_str) {
                    None => return Err("missing ')'".into()),
                    Some(")") => {
                        *pos += 1;
                        return Ok(Sexp::List(items));
                    }
                    Some(_) => items.push(parse_sexp(tokens, pos)?),
                }
            }
        }
        ")" => Err("unexpected ')'".into()),
        _ => Ok(Sexp::Atom(t.clone())),
    }
}

/// Parses a literal of `(const V)`: a number, `true`/`false`, `inf`, `-inf`, `nan`.
pub fn parse_literal(s: &str) -> Option<Scalar> {
    match s {
        "true" => return Some(Scalar::Bool(true)),
        "false" => return Some(Scalar::Bool(false)),
        _ => {}
    }
    if !s.contains(['.', 'e', 'E', 'n', 'i']) {
        if let Ok(i) = s.parse::<i64>() {
            return Some(Scalar::Int(i));
        }
    }
    s.parse::<f64>().ok().map(Scalar::float)
}

/// Whether a class's constant equals a literal exactly: same value, and for floats the same
/// bit pattern (so `0.0` does not match `-0.0`). Integer literals match integral constants and
/// floats of that value; a float literal never matches an integer `-0.0`.
pub fn const_matches(k: Scalar, lit: Scalar) -> bool {
    match (k, lit) {
        (Scalar::Float(a), Scalar::Float(b)) => a == b,
        (Scalar::Float(a), Scalar::Int(i)) => a == (i as f64).to_bits(),
        (Scalar::Int(a), Scalar::Int(b)) => a == b,
        (Scalar::Int(a), Scalar::Float(b)) => (a as f64).to_bits() == b,
        (Scalar::Bool(a), Scalar::Bool(b)) => a == b,
        _ => false,
    }
}

/// The right-hand side of a rule.
#[derive(Clone, Debug)]
enum Rhs {
    Var(Var),
    Const(Scalar),
    Op(Symbol, Vec<Rhs>),
}

/// A rule as read from a file: its name and the parts the engine turns into an egg rewrite.
#[derive(Clone)]
pub struct RuleSpec {
    pub name: String,
    /// The rule text, for listings.
    pub text: String,
    lhs: PatternAst<Node>,
    rhs: RhsKind,
    conditions: Vec<(String, ConditionFn, Vec<Var>)>,
    consts: Vec<(Var, Scalar)>,
}

#[derive(Clone)]
enum RhsKind {
    Pattern(Rhs),
    Applier(ApplierFn, Vec<Var>),
}

impl std::fmt::Debug for RuleSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.name, self.text)
    }
}

/// Checks conditions and builds the right-hand side for one match.
struct RuleApplier {
    rhs: RhsKind,
    conditions: Vec<(ConditionFn, Vec<Var>)>,
    consts: Vec<(Var, Scalar)>,
}

fn lookup(subst: &Subst, vars: &[Var]) -> Option<Vec<Id>> {
    vars.iter().map(|v| subst.get(*v).copied()).collect()
}

impl RuleApplier {
    fn check(&self, egraph: &Graph, eclass: Id, subst: &Subst) -> bool {
        for (v, lit) in &self.consts {
            let Some(id) = subst.get(*v) else { return false };
            match egraph[*id].data.konst {
                Some(k) if const_matches(k, *lit) => {}
                _ => return false,
            }
        }
        self.conditions.iter().all(|(f, vars)| lookup(subst, vars).is_some_and(|ids| f(egraph, eclass, &ids)))
    }
}

/// Builds `rhs`; `None` when it cannot be typed (a constant of unknown type).
fn build(egraph: &mut Graph, rhs: &Rhs, subst: &Subst, root: Id, top: bool) -> Option<Id> {
    match rhs {
        Rhs::Var(v) => subst.get(*v).copied(),
        Rhs::Const(value) => {
            let root_ty = egraph[root].data.ty.clone()?;
            let ty = if top {
                root_ty
            } else {
                Type::tensor(dtype_of(&root_ty)?, &[])
            };
            let value = convert_scalar(*value, dtype_of(&ty)?)?;
            let ty = egraph.analysis.type_index(&ty);
            Some(egraph.add(Node::Const { ty, value }))
        }
        Rhs::Op(name, args) => {
            let mut ids = Vec::with_capacity(args.len());
            for a in args {
                ids.push(build(egraph, a, subst, root, false)?);
            }
            Some(egraph.add(Node::Op { name: *name, attrs: 0, args: ids.into() }))
        }
    }
}

/// A literal as a constant of `dtype`, when exactly representable.
pub fn convert_scalar(v: Scalar, dtype: DType) -> Option<Scalar> {
    match dtype {
        DType::Bool => match v {
            Scalar::Bool(b) => Some(Scalar::Bool(b)),
            _ => None,
        },
        d if d.is_floating() => {
            let f = v.as_f64();
            let exact = match d {
                DType::F32 => (f as f32 as f64).to_bits() == f.to_bits() || f.is_nan(),
                DType::F64 => true,
                _ => false,
            };
            exact.then_some(Scalar::float(f))
        }
        _ => match v {
            Scalar::Int(i) => Some(Scalar::Int(i)),
            _ => None,
        },
    }
}

impl Applier<Node, Facts> for RuleApplier {
    fn apply_one(&self, egraph: &mut Graph, eclass: Id, subst: &Subst, _: Option<&PatternAst<Node>>, _: Symbol) -> Vec<Id> {
        if !self.check(egraph, eclass, subst) {
            return Vec::new();
        }
        let ids = match &self.rhs {
            RhsKind::Pattern(rhs) => build(egraph, rhs, subst, eclass, true).into_iter().collect(),
            RhsKind::Applier(f, vars) => match lookup(subst, vars) {
                Some(args) => f(egraph, eclass, &args),
                None => Vec::new(),
            },
        };
        let mut changed = Vec::new();
        for id in ids {
            if egraph.union(eclass, id) {
                changed.push(egraph.find(eclass));
            }
        }
        changed
    }
}

impl RuleSpec {
    /// The egg rewrite of this rule.
    pub fn rewrite(&self) -> Result<Rewrite<Node, Facts>, String> {
        let applier = RuleApplier {
            rhs: self.rhs.clone(),
            conditions: self.conditions.iter().map(|(_, f, v)| (f.clone(), v.clone())).collect(),
            consts: self.consts.clone(),
        };
        Rewrite::new(self.name.as_str(), Pattern::new(self.lhs.clone()), applier).map_err(|e| format!("rule '{}': {e}", self.name))
    }
}

/// Named conditions and appliers available to rule files, and the rule sets read so far.
#[derive(Clone, Default)]
pub struct RuleLibrary {
    conditions: HashMap<String, ConditionFn>,
    appliers: HashMap<String, ApplierFn>,
    /// Rule sets by name (`aten.sound`, `aten.fast-math`).
    sets: BTreeMap<String, Vec<RuleSpec>>,
}

impl RuleLibrary {
    /// A library with the built-in conditions and appliers and no rules.
    pub fn new() -> RuleLibrary {
        let mut lib = RuleLibrary::default();
        crate::builtins::register(&mut lib);
        lib
    }

    /// The built-in library: [`RuleLibrary::new`] plus the aten dialect's rule file, read into
    /// the sets `aten.sound` and `aten.fast-math`.
    pub fn standard() -> Result<RuleLibrary, RuleError> {
        let mut lib = RuleLibrary::new();
        lib.add_rules("aten", "dialects/aten/src/rules.egg", dialect_aten::rules::RULES)?;
        Ok(lib)
    }

    pub fn add_condition(&mut self, name: &str, f: impl Fn(&Graph, Id, &[Id]) -> bool + Send + Sync + 'static) {
        self.conditions.insert(name.to_string(), Arc::new(f));
    }

    pub fn add_applier(&mut self, name: &str, f: impl Fn(&mut Graph, Id, &[Id]) -> Vec<Id> + Send + Sync + 'static) {
        self.appliers.insert(name.to_string(), Arc::new(f));
    }

    /// Reads a rule file; its `[set]` sections become rule sets named `prefix.set`.
    pub fn add_rules(&mut self, prefix: &str, file: &str, text: &str) -> Result<(), RuleError> {
        let mut set = "default".to_string();
        let mut pending = String::new();
        let mut start = 0;
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim_end();
            if pending.is_empty() {
                start = i + 1;
            }
            if let Some(stripped) = line.strip_suffix('\\') {
                pending.push_str(stripped);
                pending.push(' ');
                continue;
            }
            pending.push_str(line);
            let full = std::mem::take(&mut pending);
            let full = full.trim();
            if full.is_empty() {
                continue;
            }
            let err = |message: String| RuleError { file: file.to_string(), line: start, message };
            if let Some(name) = full.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
                set = name.trim().to_string();
                continue;
            }
            let specs = self.parse_rule(full).map_err(err)?;
            for spec in &specs {
                spec.rewrite().map_err(err)?;
            }
            let key = format!("{prefix}.{set}");
            let entry = self.sets.entry(key).or_default();
            for spec in specs {
                if entry.iter().any(|r| r.name == spec.name) {
                    return Err(err(format!("rule '{}' is defined twice", spec.name)));
                }
                entry.push(spec);
            }
        }
        if !pending.trim().is_empty() {
            return Err(RuleError { file: file.to_string(), line: start, message: "rule continues past the end of the file".into() });
        }
        Ok(())
    }

    /// The rule sets, by name.
    pub fn sets(&self) -> &BTreeMap<String, Vec<RuleSpec>> {
        &self.sets
    }

    /// The rules of the named sets; a name without a dot selects every set of that prefix
    /// except `fast-math` ones.
    pub fn select(&self, names: &[String], fast_math: bool) -> Result<Vec<&RuleSpec>, String> {
        let mut out = Vec::new();
        for n in names {
            let mut found = false;
            for (k, rules) in &self.sets {
                let (prefix, set) = k.split_once('.').unwrap_or((k.as_str(), ""));
                let take = if n.contains('.') { k == n } else { prefix == n && (set != "fast-math" || fast_math) };
                if take {
                    found = true;
                    out.extend(rules.iter());
                }
            }
            if !found {
                let known: Vec<&str> = self.sets.keys().map(String::as_str).collect();
                return Err(format!("unknown rule set '{n}' (known: {})", known.join(", ")));
            }
        }
        Ok(out)
    }

    fn parse_rule(&self, line: &str) -> Result<Vec<RuleSpec>, String> {
        let (name, body) = line.split_once(':').ok_or("expected 'name: lhs => rhs'")?;
        let name = name.trim();
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(format!("bad rule name '{name}'"));
        }
        let tokens = tokenize(body);
        let mut pos = 0;
        let lhs = parse_sexp(&tokens, &mut pos)?;
        let arrow = tokens.get(pos).ok_or("expected '=>' or '<=>'")?.clone();
        pos += 1;
        if arrow != "=>" && arrow != "<=>" {
            return Err(format!("expected '=>' or '<=>', found '{arrow}'"));
        }
        // The right-hand side: a pattern, or `@applier ?args...`.
        let mut applier: Option<(String, Vec<String>)> = None;
        let rhs = if tokens.get(pos).is_some_and(|t| t.starts_with('@')) {
            let a = tokens[pos][1..].to_string();
            pos += 1;
            let mut args = Vec::new();
            while let Some(t) = tokens.get(pos).filter(|t| t.starts_with('?')) {
                args.push(t.clone());
                pos += 1;
            }
            applier = Some((a, args));
            None
        } else {
            Some(parse_sexp(&tokens, &mut pos)?)
        };
        let mut conds: Vec<(String, Vec<String>)> = Vec::new();
        if pos < tokens.len() {
            if tokens[pos] != "if" {
                return Err(format!("expected 'if' or the end of the rule, found '{}'", tokens[pos]));
            }
            pos += 1;
            while pos < tokens.len() {
                match parse_sexp(&tokens, &mut pos)? {
                    Sexp::List(items) => {
                        let mut it = items.into_iter();
                        let Some(Sexp::Atom(c)) = it.next() else { return Err("a condition starts with its name".into()) };
                        let args = it
                            .map(|s| match s {
                                Sexp::Atom(a) if a.starts_with('?') => Ok(a),
                                _ => Err(format!("arguments of condition '{c}' must be variables")),
                            })
                            .collect::<Result<Vec<_>, _>>()?;
                        conds.push((c, args));
                    }
                    Sexp::Atom(a) => return Err(format!("expected '(condition ?args)', found '{a}'")),
                }
            }
        }
        let text = body.trim().to_string();
        let mut out = vec![self.make_spec(name, &text, &lhs, rhs.as_ref(), applier.as_ref(), &conds)?];
        if arrow == "<=>" {
            let Some(rhs) = rhs else { return Err("'<=>' needs a pattern on both sides".into()) };
            out.push(self.make_spec(&format!("{name}-rev"), &text, &rhs, Some(&lhs), None, &conds)?);
        }
        Ok(out)
    }

    fn make_spec(
        &self,
        name: &str,
        text: &str,
        lhs: &Sexp,
        rhs: Option<&Sexp>,
        applier: Option<&(String, Vec<String>)>,
        conds: &[(String, Vec<String>)],
    ) -> Result<RuleSpec, String> {
        let mut ast: RecExpr<ENodeOrVar<Node>> = RecExpr::default();
        let mut consts = Vec::new();
        if matches!(lhs, Sexp::Atom(_)) {
            return Err("the left-hand side must be an operation".into());
        }
        lhs_to_ast(lhs, &mut ast, &mut consts)?;
        let var = |s: &str| s.parse::<Var>().map_err(|e| format!("bad variable '{s}': {e}"));
        let rhs = match (rhs, applier) {
            (Some(r), _) => RhsKind::Pattern(rhs_tree(r)?),
            (None, Some((a, args))) => {
                let f = self.appliers.get(a).ok_or_else(|| format!("unknown applier '@{a}'"))?.clone();
                RhsKind::Applier(f, args.iter().map(|s| var(s)).collect::<Result<_, _>>()?)
            }
            (None, None) => return Err("missing right-hand side".into()),
        };
        let bound: Vec<Var> = ast.as_ref().iter().filter_map(|n| if let ENodeOrVar::Var(v) = n { Some(*v) } else { None }).collect();
        let mut used = Vec::new();
        if let RhsKind::Pattern(r) = &rhs {
            rhs_vars(r, &mut used);
        }
        if let RhsKind::Applier(_, vs) = &rhs {
            used.extend(vs.iter().copied());
        }
        for (_, args) in conds {
            for a in args {
                used.push(var(a)?);
            }
        }
        if let Some(v) = used.iter().find(|v| !bound.contains(v)) {
            return Err(format!("rule '{name}': variable {v} is not bound by the left-hand side"));
        }
        let mut conditions = Vec::new();
        for (c, args) in conds {
            let f = self.conditions.get(c).ok_or_else(|| format!("unknown condition '{c}'"))?.clone();
            conditions.push((c.clone(), f, args.iter().map(|s| var(s)).collect::<Result<_, _>>()?));
        }
        Ok(RuleSpec { name: name.to_string(), text: text.to_string(), lhs: ast, rhs, conditions, consts })
    }
}

fn lhs_to_ast(s: &Sexp, ast: &mut RecExpr<ENodeOrVar<Node>>, consts: &mut Vec<(Var, Scalar)>) -> Result<Id, String> {
    match s {
        Sexp::Atom(a) if a.starts_with('?') => {
            let v: Var = a.parse().map_err(|e| format!("bad variable '{a}': {e}"))?;
            Ok(ast.add(ENodeOrVar::Var(v)))
        }
        Sexp::Atom(a) => Err(format!("'{a}' must be a variable or in parentheses")),
        Sexp::List(items) => {
            let (head, args) = items.split_first().ok_or("empty '()'")?;
            let Sexp::Atom(op) = head else { return Err("an operation name must come first".into()) };
            if op == "const" {
                let [Sexp::Atom(lit)] = args else { return Err("'const' takes one literal".into()) };
                let value = parse_literal(lit).ok_or_else(|| format!("bad literal '{lit}'"))?;
                let v: Var = format!("?__const{}", consts.len()).parse().map_err(|e| format!("{e}"))?;
                consts.push((v, value));
                return Ok(ast.add(ENodeOrVar::Var(v)));
            }
            let mut ids = Vec::new();
            for a in args {
                ids.push(lhs_to_ast(a, ast, consts)?);
            }
            // `op*` matches the op with any attributes; plain `op` only without non-default ones.
            let (name, attrs) = match op.strip_suffix('*') {
                Some(n) => (n, crate::lang::ANY_ATTRS),
                None => (op.as_str(), 0),
            };
            Ok(ast.add(ENodeOrVar::ENode(Node::Op { name: Symbol::from(name), attrs, args: ids.into() })))
        }
    }
}

fn rhs_vars(r: &Rhs, out: &mut Vec<Var>) {
    match r {
        Rhs::Var(v) => out.push(*v),
        Rhs::Const(_) => {}
        Rhs::Op(_, args) => args.iter().for_each(|a| rhs_vars(a, out)),
    }
}

fn rhs_tree(s: &Sexp) -> Result<Rhs, String> {
    match s {
        Sexp::Atom(a) if a.starts_with('?') => Ok(Rhs::Var(a.parse().map_err(|e| format!("bad variable '{a}': {e}"))?)),
        Sexp::Atom(a) => Err(format!("'{a}' must be a variable or in parentheses")),
        Sexp::List(items) => {
            let (head, args) = items.split_first().ok_or("empty '()'")?;
            let Sexp::Atom(op) = head else { return Err("an operation name must come first".into()) };
            if op == "const" {
                let [Sexp::Atom(lit)] = args else { return Err("'const' takes one literal".into()) };
                return parse_literal(lit).map(Rhs::Const).ok_or_else(|| format!("bad literal '{lit}'"));
            }
            Ok(Rhs::Op(Symbol::from(op.as_str()), args.iter().map(rhs_tree).collect::<Result<_, _>>()?))
        }
    }
}

/// The attributes of a node's interned set, as a lookup.
pub fn attr<'a>(facts: &'a Facts, node: &Node, name: &str) -> Option<&'a Attribute> {
    let Node::Op { attrs, .. } = node else { return None };
    facts.attrs_at(*attrs).iter().find(|(k, _)| &**k == name).map(|(_, v)| v)
}

/// Whether a type is a tensor whose dtype satisfies `f`.
pub fn tensor_dtype_is(t: Option<&Type>, f: impl Fn(DType) -> bool) -> bool {
    match t.map(Type::kind) {
        Some(TypeKind::Tensor(tt)) => tt.dtype.is_some_and(f),
        _ => false,
    }
}
