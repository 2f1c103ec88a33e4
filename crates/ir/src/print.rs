//! The text printer: MLIR's generic form for every op, and each op's custom form (in `format`).

pub(crate) mod format;

use crate::attributes::{Attribute, write_attr_name, write_f64};
use crate::context::{Context, Traits};
use crate::location::Location;
use crate::module::{BlockId, Module, OpId, RegionId, ValueDef, ValueId};
use crate::types::{Type, TypeKind};
use std::collections::{HashMap, HashSet};
use std::fmt::Write;

/// How to print.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PrintOptions {
    /// Print every op in MLIR's generic form (`"dialect.op"(...)`), as `mlir-opt --mlir-print-op-generic`.
    pub generic: bool,
    /// Print `loc(...)` after each op, as `--mlir-print-debuginfo`.
    pub debug_info: bool,
}

/// Prints a whole module.
pub fn print_module(ctx: &Context, m: &Module, opts: PrintOptions) -> String {
    print_op(ctx, m, m.top(), opts)
}

/// Prints one op and everything nested in it.
pub fn print_op(ctx: &Context, m: &Module, op: OpId, opts: PrintOptions) -> String {
    let mut p = Printer { ctx, m, opts, out: String::new(), indent: 0, names: Namer::default() };
    p.names.push_scope();
    p.op(op);
    p.out.push('\n');
    p.out
}

/// Assigns printed names to values and blocks.
#[derive(Default)]
struct Namer {
    values: HashMap<ValueId, String>,
    blocks: HashMap<BlockId, String>,
    scopes: Vec<Scope>,
}

#[derive(Default)]
struct Scope {
    used: HashSet<String>,
    next_value: usize,
    next_block: usize,
}

fn valid_hint(s: &str) -> bool {
    let mut chars = s.chars();
    let Some(c0) = chars.next() else { return false };
    (c0.is_ascii_alphabetic() || c0 == '_' || c0 == '$' || c0 == '.' || c0 == '-')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '.' | '-'))
}

impl Namer {
    fn push_scope(&mut self) {
        self.scopes.push(Scope::default());
    }

    fn pop_scope(&mut self) {
        self.scopes.pop();
    }

    fn scope(&mut self) -> &mut Scope {
        if self.scopes.is_empty() {
            self.scopes.push(Scope::default());
        }
        let n = self.scopes.len();
        &mut self.scopes[n - 1]
    }

    fn fresh_number(&mut self) -> String {
        let s = self.scope();
        loop {
            let cand = s.next_value.to_string();
            s.next_value += 1;
            if !s.used.contains(&cand) {
                s.used.insert(cand.clone());
                return cand;
            }
        }
    }

    /// Picks `hint` when it is a legal, unused name; otherwise `fallback`-prefixed or a number.
    fn pick(&mut self, hint: Option<&str>, fallback_prefix: Option<&str>) -> String {
        if let Some(h) = hint.filter(|h| valid_hint(h)) {
            let s = self.scope();
            if !s.used.contains(h) {
                s.used.insert(h.to_string());
                return h.to_string();
            }
            // A clashing hint gets a numeric suffix so it stays readable.
            for k in 0.. {
                let cand = format!("{h}_{k}");
                if !s.used.contains(&cand) {
                    s.used.insert(cand.clone());
                    return cand;
                }
            }
        }
        if let Some(prefix) = fallback_prefix {
            let s = self.scope();
            for k in 0.. {
                let cand = format!("{prefix}{k}");
                if !s.used.contains(&cand) {
                    s.used.insert(cand.clone());
                    return cand;
                }
            }
        }
        self.fresh_number()
    }

    fn block_name(&mut self, b: BlockId) -> String {
        if let Some(n) = self.blocks.get(&b) {
            return n.clone();
        }
        let s = self.scope();
        let name = format!("bb{}", s.next_block);
        s.next_block += 1;
        self.blocks.insert(b, name.clone());
        name
    }
}

struct Printer<'a> {
    ctx: &'a Context,
    m: &'a Module,
    opts: PrintOptions,
    out: String,
    indent: usize,
    names: Namer,
}

impl<'a> Printer<'a> {
    fn newline(&mut self) {
        self.out.push('\n');
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
    }

    /// The printed reference to a value (`%x`, `%3#1`), naming it on first sight.
    fn value_ref(&mut self, v: ValueId) -> String {
        if !self.m.contains_value(v) {
            return "%<<deleted>>".into();
        }
        if let ValueDef::Result { op, index } = self.m.value_def(v) {
            let results = self.m.results(op);
            if results.len() > 1 {
                let base = self.group_name(op);
                return format!("%{base}#{index}");
            }
        }
        if let Some(n) = self.names.values.get(&v) {
            return format!("%{n}");
        }
        let hint = self.m.value_name(v).map(str::to_string);
        let name = self.names.pick(hint.as_deref(), None);
        self.names.values.insert(v, name.clone());
        format!("%{name}")
    }

    fn group_name(&mut self, op: OpId) -> String {
        let first = self.m.results(op)[0];
        if let Some(n) = self.names.values.get(&first) {
            return n.clone();
        }
        let hint = self.m.value_name(first).map(str::to_string);
        let name = self.names.pick(hint.as_deref(), None);
        self.names.values.insert(first, name.clone());
        name
    }

    fn define_block_arg(&mut self, v: ValueId, entry_of_func: bool) -> String {
        let hint = self.m.value_name(v).map(str::to_string);
        let name = self.names.pick(hint.as_deref(), if entry_of_func { Some("arg") } else { None });
        self.names.values.insert(v, name.clone());
        format!("%{name}")
    }

    fn results_prefix(&mut self, op: OpId) {
        let results = self.m.results(op);
        match results.len() {
            0 => {}
            1 => {
                let r = self.value_ref(results[0]);
                let _ = write!(self.out, "{r} = ");
            }
            n => {
                let base = self.group_name(op);
                let _ = write!(self.out, "%{base}:{n} = ");
            }
        }
    }

    fn operand_list(&mut self, operands: &[ValueId]) {
        for (i, &v) in operands.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            let r = self.value_ref(v);
            self.out.push_str(&r);
        }
    }

    fn type_list(&mut self, tys: impl IntoIterator<Item = Type>) {
        for (i, t) in tys.into_iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            let _ = write!(self.out, "{t}");
        }
    }

    fn operand_types(&self, op: OpId) -> Vec<Type> {
        self.m.operands(op).iter().map(|&v| self.m.value_type(v).clone()).collect()
    }

    fn result_types(&self, op: OpId) -> Vec<Type> {
        self.m.results(op).iter().map(|&v| self.m.value_type(v).clone()).collect()
    }

    fn functional_type(&mut self, op: OpId) {
        let ins = self.operand_types(op);
        let outs = self.result_types(op);
        let _ = write!(self.out, "{}", Type::function(ins, outs));
    }

    /// ` {attrs}` of the generic form, nothing when there are none.
    fn attr_dict(&mut self, op: OpId) {
        if !self.m.attributes(op).is_empty() {
            self.out.push(' ');
            self.attr_dict_body(op, &[], false);
        }
    }

    /// `{attrs}` (`attributes {attrs}` with `keyword`) but for those in `skip`; nothing when none are left.
    fn attr_dict_body(&mut self, op: OpId, skip: &[&str], keyword: bool) {
        let attrs: Vec<_> =
            self.m.attributes(op).iter().filter(|(k, _)| !skip.contains(&&**k)).cloned().collect();
        if attrs.is_empty() {
            return;
        }
        if keyword {
            self.out.push_str("attributes ");
        }
        let _ = write!(self.out, "{}", Attribute::Dict(attrs.into()));
    }

    fn loc_suffix(&mut self, loc: &Location) {
        if self.opts.debug_info {
            let _ = write!(self.out, " loc({loc})");
        }
    }

    fn op(&mut self, op: OpId) {
        let name = self.m.op_name(op).to_string();
        let format = match self.ctx.op_def(&name).and_then(|d| d.format()) {
            Some(f) if !self.opts.generic && f.expressible(self.ctx, self.m, op) => Some(f.clone()),
            _ => None,
        };
        match format {
            Some(f) => {
                self.results_prefix(op);
                // Builtin ops print without their dialect prefix (`module`).
                self.out.push_str(name.strip_prefix("builtin.").unwrap_or(&name));
                self.formatted_op(op, &f);
            }
            None => self.generic_op(op),
        }
        let loc = self.m.loc(op).clone();
        self.loc_suffix(&loc);
    }

    /// `({...}, {...})`: all regions of `op`, entry blocks labelled when they have arguments;
    /// nothing when it has none.
    fn region_list(&mut self, op: OpId) {
        let isolated = self.ctx.has_trait(self.m.op_name(op), Traits::ISOLATED_FROM_ABOVE);
        let regions = self.m.regions(op).to_vec();
        if regions.is_empty() {
            return;
        }
        self.out.push('(');
        for (i, &r) in regions.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.region(r, isolated, true, false);
        }
        self.out.push(')');
    }

    fn generic_op(&mut self, op: OpId) {
        self.results_prefix(op);
        let name = self.m.op_name(op).to_string();
        crate::attributes::write_escaped_string(&mut self.out, &name).ok();
        self.out.push('(');
        let operands = self.m.operands(op).to_vec();
        self.operand_list(&operands);
        self.out.push(')');
        if !self.m.regions(op).is_empty() {
            self.out.push(' ');
            self.region_list(op);
        }
        self.attr_dict(op);
        self.out.push_str(" : ");
        self.functional_type(op);
    }

    /// Prints `{ blocks }`. `isolated` opens a fresh naming scope; `always_label` prints the entry
    /// block's label even without arguments.
    fn region(&mut self, r: RegionId, isolated: bool, label_entry_args: bool, always_label: bool) {
        if isolated {
            self.names.push_scope();
        }
        let blocks = self.m.region_blocks(r).to_vec();
        self.out.push('{');
        self.indent += 1;
        let in_module = self.m.region(r).parent.is_some_and(|p| self.m.op_name(p) == crate::builtin::MODULE);
        for (i, &b) in blocks.iter().enumerate() {
            let args = self.m.block_args(b).to_vec();
            // An empty entry block keeps its label so it is not read back as an empty region.
            let empty_entry = i == 0 && args.is_empty() && self.m.block_len(b) == 0 && !in_module;
            let label = i > 0 || always_label || empty_entry || (label_entry_args && !args.is_empty());
            if label {
                self.block_header(b, &args);
            }
            self.block_ops(b);
        }
        self.indent -= 1;
        self.newline();
        self.out.push('}');
        if isolated {
            self.names.pop_scope();
        }
    }

    /// A function body: entry block arguments were already named in the signature.
    fn region_body(&mut self, r: RegionId, _isolated: bool, _skip_entry_label: bool) {
        let blocks = self.m.region_blocks(r).to_vec();
        self.out.push('{');
        self.indent += 1;
        for (i, &b) in blocks.iter().enumerate() {
            if i > 0 {
                let args = self.m.block_args(b).to_vec();
                self.block_header(b, &args);
            }
            self.block_ops(b);
        }
        self.indent -= 1;
        self.newline();
        self.out.push('}');
    }

    fn block_header(&mut self, b: BlockId, args: &[ValueId]) {
        let label = self.names.block_name(b);
        // Block labels sit one level out from the ops they hold, as MLIR prints them.
        self.out.push('\n');
        for _ in 0..self.indent.saturating_sub(1) {
            self.out.push_str("  ");
        }
        let _ = write!(self.out, "^{label}");
        if !args.is_empty() {
            self.out.push('(');
            for (i, &a) in args.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                let n = self.define_block_arg(a, false);
                let _ = write!(self.out, "{n}: {}", self.m.value_type(a));
            }
            self.out.push(')');
        }
        self.out.push(':');
    }

    fn block_ops(&mut self, b: BlockId) {
        for o in self.m.block_ops(b) {
            self.newline();
            self.op(o);
        }
    }
}

/// Whether `: T` stands for the op's whole type: one result, at least one operand, all the same type.
pub(crate) fn short_type_form(ins: &[Type], outs: &[Type]) -> bool {
    outs.len() == 1
        && !ins.is_empty()
        && ins.iter().all(|t| *t == outs[0])
        && !matches!(outs[0].kind(), TypeKind::Function { .. })
}

/// Writes a constant's value without the type suffix its type annotation makes redundant.
pub(crate) fn write_untyped_literal(out: &mut String, value: &Attribute) {
    match value {
        Attribute::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Attribute::Float(f) => {
            let _ = write_f64(out, f.get());
        }
        Attribute::Dense(d) => {
            let s = d.to_string();
            // Strip the trailing ` : tensor<...>`: the op's result type says it.
            let body = s.rsplit_once(" : ").map(|(b, _)| b.to_string()).unwrap_or(s);
            out.push_str(&body);
        }
        other => {
            let _ = write!(out, "{other}");
        }
    }
}

/// Writes an attribute dictionary key.
pub fn attr_key(out: &mut String, k: &str) {
    let _ = write_attr_name(out, k);
}
