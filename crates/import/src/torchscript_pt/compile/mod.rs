//! The TorchScript language frontend: compiles the `forward` method of an archive's root module,
//! and everything it calls, into the IR the other importers produce.
//!
//! Calls are inlined: submodule methods (`(self.fc).forward(x)`) and free functions
//! (`__torch__.torch.nn.functional.relu`) compile in place with their parameters bound to the
//! arguments. Module attributes are resolved at compile time against the pickled module tree:
//! submodules stay compile-time references, parameters and buffers become arguments of
//! `@forward` named by their dotted path (`prim.param`/`prim.buffer`), `CONSTANTS.cN` tensors
//! arguments marked `prim.constant`, and other attributes (`training`, `Final` constants)
//! constants. A condition known at compile time (`if self.training:`, `is None` on a value that
//! cannot be None) compiles only the branch it takes, as TorchScript's own emitter does.
//! Control flow becomes `prim.If`/`prim.Loop`: names assigned in a branch and live after it are
//! the `If`'s results, names assigned in a loop body and defined before it are carried.
//! `return`, `break` and `continue` inside branches are compiled by moving the statements after
//! the branch into its other side. List mutation (`append`, `extend`) rebinds the list's name to
//! a new list. The program's result is flattened into leaves with a `prim.out_spec`.

mod call;
mod env;
mod expr;
mod stmt;
mod types;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ir::{Attribute, BlockId, Context, Location, Module, OpId, Type, TypeKind, ValueId};

use super::lang::ast::{FnDef, SourceFile};
use super::{Slot, TorchScriptArchive, Value};
use crate::convert::{check_context, finish_function, insert, name_value, verify_module};
use crate::torchscript::lex::LineIndex;
use crate::treespec::{DictKey, TreeSpec};
use crate::{ImportError, Program, Weights, program};
pub(crate) use env::Sv;
use env::Frame;

/// Compiles the archive's `forward` into a verified program.
pub fn compile(ctx: &Context, archive: &TorchScriptArchive) -> Result<Program, ImportError> {
    check_context(ctx).map_err(|message| ImportError::TorchScriptArchive {
        path: archive.path().to_path_buf(),
        entry: "code/".into(),
        message,
    })?;
    let mut c = Compiler::new(ctx, archive);
    let root_class = archive.root().class.clone();
    let forward = c
        .method(&root_class, "forward")?
        .ok_or_else(|| ImportError::TorchScriptArchive {
            path: archive.path().to_path_buf(),
            entry: "data.pkl".into(),
            message: format!("the root module `{root_class}` has no `forward` method"),
        })?;
    c.compile_forward(forward)
}

/// One parsed source file of `code/`.
struct Src {
    /// The archive path shown in messages (`code/__torch__/m.py`).
    entry: String,
    text: Arc<str>,
    /// Line starts of `text`, for the location of every op compiled from it.
    lines: LineIndex,
    ast: Arc<SourceFile>,
}

/// A function being compiled: where it comes from and what `self` is.
#[derive(Clone)]
pub(crate) struct FnRef {
    file: usize,
    def: Arc<FnDefHolder>,
}

/// A function definition kept alive by the file it came from.
pub(crate) struct FnDefHolder {
    ast: Arc<SourceFile>,
    /// `None`: a free function at this index; `Some(c)`: method `m` of class `c`.
    class: Option<usize>,
    index: usize,
}

impl FnDefHolder {
    fn def(&self) -> &FnDef {
        match self.class {
            None => &self.ast.functions[self.index],
            Some(c) => &self.ast.classes[c].methods[self.index],
        }
    }
}

/// The frontend's state while compiling one program.
pub(crate) struct Compiler<'a> {
    ctx: &'a Context,
    archive: &'a TorchScriptArchive,
    files: Vec<Src>,
    /// Files by Python module path (`__torch__.torch.nn.modules.linear`); `None` when absent.
    by_module: HashMap<String, Option<usize>>,
    m: Module,
    entry: BlockId,
    /// Where ops are appended.
    block: BlockId,
    /// The file of the function being compiled, for locations and errors.
    file: usize,
    /// The number each `NumToTensor` result wraps.
    wrapped: HashMap<ValueId, ValueId>,
    /// The attribute of every constant this compiler created.
    consts: HashMap<ValueId, Attribute>,
    /// State arguments by state name, and their attribute (`prim.param`, …).
    state: HashMap<String, ValueId>,
    arg_attrs: Vec<Attribute>,
    arg_types: Vec<Type>,
    weights: Weights,
    /// Scopes of the function being compiled, innermost last.
    frames: Vec<Frame>,
    /// Names of the current function's parameters (list arguments must not be mutated).
    params: Vec<String>,
    /// Nesting of loops in the current function, for `break`/`continue`.
    loops: usize,
    inline_depth: usize,
}

/// The name that carries a function's return value through its branches.
const RET: &str = "$return";
/// The name that carries a loop's "keep going" flag through its body's branches.
const CONT: &str = "$continue";
/// Calls nested deeper than this are taken for recursion.
const MAX_INLINE: usize = 64;

type R<T> = Result<T, ImportError>;

impl<'a> Compiler<'a> {
    fn new(ctx: &'a Context, archive: &'a TorchScriptArchive) -> Compiler<'a> {
        let mut m = Module::new();
        let (_, entry) = ir::builtin::create_function(&mut m, program::FORWARD, &[], &[]);
        Compiler {
            ctx,
            archive,
            files: Vec::new(),
            by_module: HashMap::new(),
            m,
            entry,
            block: entry,
            file: 0,
            consts: HashMap::new(),
            wrapped: HashMap::new(),
            state: HashMap::new(),
            arg_attrs: Vec::new(),
            arg_types: Vec::new(),
            weights: Weights::new(),
            frames: Vec::new(),
            params: Vec::new(),
            loops: 0,
            inline_depth: 0,
        }
    }

    fn path(&self) -> &Path {
        self.archive.path()
    }

    /// The file holding Python module `module`, parsed on first use.
    fn file_of(&mut self, module: &str) -> R<Option<usize>> {
        if let Some(f) = self.by_module.get(module) {
            return Ok(*f);
        }
        let key = format!("{}.py", module.replace('.', "/"));
        let found = match self.archive.sources().get(&key) {
            None => None,
            Some(text) => {
                let entry = format!("code/{key}");
                let ast = super::lang::parse(text)
                    .map_err(|e| source_error(self.path(), &entry, text, e.line, e.col, e.message, None))?;
                self.files.push(Src { entry, text: Arc::from(text.as_str()), lines: LineIndex::new(text), ast: Arc::new(ast) });
                Some(self.files.len() - 1)
            }
        };
        self.by_module.insert(module.to_owned(), found);
        Ok(found)
    }

    /// Splits `a.b.Name` into the file of `a.b` and `Name`.
    fn split_qualified(&mut self, qualified: &str) -> R<Option<(usize, String)>> {
        let Some((module, name)) = qualified.rsplit_once('.') else { return Ok(None) };
        Ok(self.file_of(module)?.map(|f| (f, name.to_owned())))
    }

    /// The class definition `qualified` names: its file and index.
    fn class(&mut self, qualified: &str) -> R<Option<(usize, usize)>> {
        Ok(self
            .split_qualified(qualified)?
            .and_then(|(f, name)| self.files[f].ast.classes.iter().position(|c| c.name == name).map(|c| (f, c))))
    }

    /// Method `name` of class `qualified`.
    fn method(&mut self, qualified: &str, name: &str) -> R<Option<FnRef>> {
        let Some((f, c)) = self.class(qualified)? else { return Ok(None) };
        let ast = self.files[f].ast.clone();
        Ok(ast.classes[c].methods.iter().position(|d| d.name == name).map(|index| FnRef {
            file: f,
            def: Arc::new(FnDefHolder { ast, class: Some(c), index }),
        }))
    }

    /// The free function `qualified` names.
    fn function(&mut self, qualified: &str) -> R<Option<FnRef>> {
        let Some((f, name)) = self.split_qualified(qualified)? else { return Ok(None) };
        let ast = self.files[f].ast.clone();
        Ok(ast.functions.iter().position(|d| d.name == name).map(|index| FnRef {
            file: f,
            def: Arc::new(FnDefHolder { ast, class: None, index }),
        }))
    }

    /// An error at byte offset `at` of the current file.
    pub(crate) fn err(&self, at: usize, message: impl Into<String>) -> ImportError {
        let Some(src) = self.files.get(self.file) else {
            return ImportError::TorchScriptArchive {
                path: self.path().to_path_buf(),
                entry: "code/".into(),
                message: message.into(),
            };
        };
        let (line, col) = src.lines.position(&src.text, at);
        let note = super::debug::original_location(self.archive, &src.entry, at);
        source_error(self.path(), &src.entry, &src.text, line, col, message.into(), note)
    }

    /// The location of byte offset `at` of the current file.
    pub(crate) fn loc(&self, at: usize) -> Location {
        match self.files.get(self.file) {
            Some(src) => {
                let (line, col) = src.lines.position(&src.text, at);
                Location::file(&src.entry, line as u32, col as u32)
            }
            None => Location::default(),
        }
    }

    /// Appends a function argument for state (`prim.param` …) or a user input.
    fn add_arg(&mut self, ty: Type, attr: &str, name: &str) -> ValueId {
        let v = self.m.add_block_arg(self.entry, ty.clone());
        self.arg_types.push(ty);
        self.arg_attrs.push(Attribute::dict(vec![(Arc::from(attr), Attribute::str(name))]));
        name_value(&mut self.m, v, &name.replace('.', "_"));
        v
    }

    /// The argument holding the tensor state `name` (`fc1.weight`), added on first use.
    fn state_arg(&mut self, name: &str, attr: &str, tensor: &super::Tensor, at: usize) -> R<ValueId> {
        if let Some(&v) = self.state.get(name) {
            return Ok(v);
        }
        let view = self.archive.tensor_view(tensor)?;
        let sizes: Vec<i64> = view.sizes.iter().map(|&s| s as i64).collect();
        let weight = self.archive.weight(tensor).map_err(|e| self.err(at, format!("state `{name}`: {e}")))?;
        self.weights.insert(name, weight).map_err(|e| self.err(at, e))?;
        let v = self.add_arg(Type::tensor(view.dtype, &sizes), attr, name);
        self.state.insert(name.to_owned(), v);
        Ok(v)
    }

    /// Compiles the root `forward` and finishes the program.
    fn compile_forward(mut self, forward: FnRef) -> R<Program> {
        let def = forward.def.clone();
        let def = def.def();
        self.file = forward.file;
        self.frames.push(Frame::default());
        let params = def.params.get(1..).unwrap_or_default();
        if def.params.first().is_none_or(|p| p.name != "self") {
            return Err(self.err(def.at, "`forward` must take `self` first"));
        }
        self.frames[0].set("self", Sv::Module(Vec::new()));
        for p in params {
            let ty = match &p.ty {
                Some(t) => self.value_type(t)?,
                None => Type::unknown_tensor(),
            };
            let v = self.add_arg(ty, program::ATTR_INPUT, &p.name);
            name_value(&mut self.m, v, &p.name);
            self.frames[0].set(&p.name, Sv::Val(v));
        }
        self.params = params.iter().map(|p| p.name.clone()).collect();
        let result = self.body(&def.body, def.at)?;
        let mut leaves = Vec::new();
        let spec = self.flatten(&result, &mut leaves, def.at)?;
        let func = self.m.function(program::FORWARD).ok_or_else(|| self.err(def.at, "no function"))?;
        let (types, attrs) = (std::mem::take(&mut self.arg_types), std::mem::take(&mut self.arg_attrs));
        finish_function(&mut self.m, func, self.entry, types, leaves, attrs);
        self.sweep(func);
        let top = self.m.top();
        self.m.set_attr(top, program::ATTR_OUT_SPEC, Attribute::str(&spec.to_string()));
        verify_module(self.ctx, &self.m).map_err(|message| ImportError::Verify { path: self.path().to_path_buf(), message })?;
        Ok(Program { module: self.m, weights: self.weights })
    }

    /// The leaves of a program result and its tree spec: tuples, lists and dicts built in the
    /// program are taken apart; anything else is one leaf.
    fn flatten(&mut self, sv: &Sv, leaves: &mut Vec<ValueId>, at: usize) -> R<TreeSpec> {
        match sv {
            Sv::Dict(items) => {
                let mut children = Vec::new();
                for (k, v) in items {
                    let key = match k {
                        Attribute::Str(s) => DictKey::Str(s.to_string()),
                        Attribute::Int(i) => DictKey::Int(*i),
                        other => return Err(self.err(at, format!("a dict output keyed by {}", other.kind_name()))),
                    };
                    children.push((key, self.flatten(v, leaves, at)?));
                }
                Ok(TreeSpec::Dict(children))
            }
            Sv::Val(v) => {
                let v = *v;
                if let Some(items) = self.construct_items(v, dialect_prim::TUPLE_CONSTRUCT) {
                    let children = items.iter().map(|&i| self.flatten(&Sv::Val(i), leaves, at)).collect::<R<_>>()?;
                    return Ok(TreeSpec::Tuple(children));
                }
                if let Some(items) = self.construct_items(v, dialect_prim::LIST_CONSTRUCT) {
                    let children = items.iter().map(|&i| self.flatten(&Sv::Val(i), leaves, at)).collect::<R<_>>()?;
                    return Ok(TreeSpec::List(children));
                }
                match self.m.value_type(v).kind().clone() {
                    TypeKind::Tuple(items) => {
                        let parts = self.tuple_items(v, items.len(), at)?;
                        let children = parts.iter().map(|&i| self.flatten(&Sv::Val(i), leaves, at)).collect::<R<_>>()?;
                        Ok(TreeSpec::Tuple(children))
                    }
                    TypeKind::None => Ok(TreeSpec::None),
                    _ => {
                        leaves.push(v);
                        Ok(TreeSpec::Leaf)
                    }
                }
            }
            other => Err(self.err(at, format!("the program returns {}, which is not a value", other.describe()))),
        }
    }

    /// Erases the constants, containers and placeholders compiling left unused.
    fn sweep(&mut self, func: OpId) {
        const PURE: &[&str] = &[
            dialect_prim::CONSTANT,
            dialect_prim::LIST_CONSTRUCT,
            dialect_prim::TUPLE_CONSTRUCT,
            dialect_prim::TUPLE_UNPACK,
            dialect_prim::LIST_UNPACK,
            dialect_prim::TUPLE_INDEX,
            dialect_prim::UNINITIALIZED,
        ];
        self.prune_loops(func);
        loop {
            let dead: Vec<OpId> = self
                .m
                .nested_ops(func)
                .into_iter()
                .filter(|&op| PURE.contains(&self.m.op_name(op)) && self.m.results(op).iter().all(|&r| !self.m.has_uses(r)))
                .collect();
            if dead.is_empty() {
                return;
            }
            for op in dead {
                let _ = self.m.erase_op(op);
            }
        }
    }

    /// Drops the values a `prim.Loop` carries that neither its body reads nor anything after
    /// it uses: the flag of a `while` loop rebound in its body is one (the condition is
    /// evaluated anew, not read from the carried value).
    fn prune_loops(&mut self, func: OpId) {
        let loops: Vec<OpId> = self.m.nested_ops(func).into_iter().filter(|&o| self.m.op_name(o) == dialect_prim::LOOP).collect();
        for op in loops {
            let Some(body) = self.m.regions(op).first().and_then(|&r| self.m.entry_block(r)) else { continue };
            let args = self.m.block_args(body).to_vec();
            let results = self.m.results(op).to_vec();
            let dead: Vec<usize> = (0..results.len())
                .filter(|&k| args.get(k + 1).is_some_and(|&a| !self.m.has_uses(a)) && !self.m.has_uses(results[k]))
                .collect();
            if dead.is_empty() {
                continue;
            }
            let Some(term) = self.m.last_op(body) else { continue };
            let keep = |k: usize| !dead.contains(&k);
            let yields: Vec<ValueId> = self.m.operands(term).iter().enumerate().filter(|&(i, _)| i == 0 || keep(i - 1)).map(|(_, &v)| v).collect();
            self.m.set_operands(term, yields);
            for &k in dead.iter().rev() {
                let _ = self.m.erase_block_arg(body, k + 1);
            }
            let operands: Vec<ValueId> = self.m.operands(op).iter().enumerate().filter(|&(i, _)| i < 2 || keep(i - 2)).map(|(_, &v)| v).collect();
            let kept: Vec<usize> = (0..results.len()).filter(|&k| keep(k)).collect();
            let st = ir::OperationState::new(dialect_prim::LOOP)
                .operands(operands)
                .results(kept.iter().map(|&k| self.m.value_type(results[k]).clone()))
                .regions(1)
                .loc(self.m.loc(op).clone());
            let new = self.m.create_op(st);
            // Inserting a fresh op before one that is in a block cannot fail.
            let _ = self.m.insert_op(new, ir::InsertPoint::Before(op));
            let (old_r, new_r) = (self.m.regions(op)[0], self.m.regions(new)[0]);
            self.m.take_region_blocks(old_r, new_r);
            let new_results = self.m.results(new).to_vec();
            for (&k, &v) in kept.iter().zip(&new_results) {
                if let Some(name) = self.m.value_name(results[k]).map(str::to_owned) {
                    name_value(&mut self.m, v, &name);
                }
                self.m.replace_all_uses(results[k], v);
            }
            let _ = self.m.erase_op(op);
        }
    }

    /// The operands of `v`'s defining op when it is `kind` (a tuple or list built here).
    pub(crate) fn construct_items(&self, v: ValueId, kind: &str) -> Option<Vec<ValueId>> {
        let op = self.m.defining_op(v)?;
        (self.m.op_name(op) == kind).then(|| self.m.operands(op).to_vec())
    }

    /// Appends an op at the end of the current block.
    pub(crate) fn push(&mut self, st: ir::OperationState) -> OpId {
        insert(&mut self.m, self.block, st)
    }

    /// The state of attribute `name` of the module at `path`.
    fn module_at(&self, path: &[String]) -> Option<&'a super::Module> {
        let mut m = self.archive.root();
        for p in path {
            m = m.submodule(p)?;
        }
        Some(m)
    }

    /// What `module.name` is: a submodule, a state argument, a constant.
    pub(crate) fn module_attr(&mut self, path: &[String], name: &str, at: usize) -> R<Sv> {
        let module = self.module_at(path).ok_or_else(|| self.err(at, format!("no submodule `{}`", path.join("."))))?;
        let dotted = |n: &str| if path.is_empty() { n.to_owned() } else { format!("{}.{n}", path.join(".")) };
        match module.get(name) {
            Some(Slot::Submodule(_)) => {
                let mut p = path.to_vec();
                p.push(name.to_owned());
                Ok(Sv::Module(p))
            }
            Some(Slot::Parameter(Value::Tensor(t))) => Ok(Sv::Val(self.state_arg(&dotted(name), program::ATTR_PARAM, t, at)?)),
            Some(Slot::Buffer(Value::Tensor(t))) => Ok(Sv::Val(self.state_arg(&dotted(name), program::ATTR_BUFFER, t, at)?)),
            Some(Slot::Parameter(_) | Slot::Buffer(_)) => Ok(Sv::Val(self.constant(dialect_prim::kinds::none(), at))),
            Some(Slot::Plain(Value::Tensor(t))) => Ok(Sv::Val(self.state_arg(&dotted(name), program::ATTR_CONSTANT, t, at)?)),
            Some(Slot::Plain(v)) => {
                let a = pickled_constant(v).ok_or_else(|| {
                    self.err(at, format!("attribute `{}` holds {}, which the compiler cannot use", dotted(name), v.kind()))
                })?;
                Ok(Sv::Val(self.constant(a, at)))
            }
            None => {
                // A `Final` class constant is declared in the class, not stored in the object.
                let class = module.class.clone();
                if let Some((f, c)) = self.class(&class)? {
                    let ast = self.files[f].ast.clone();
                    if let Some(decl) = ast.classes[c].attributes.iter().find(|a| a.name == name) {
                        if let Some(value) = &decl.value {
                            let saved = std::mem::replace(&mut self.file, f);
                            let r = self.expr(value);
                            self.file = saved;
                            return r;
                        }
                    }
                    if ast.classes[c].methods.iter().any(|d| d.name == name) {
                        return Ok(Sv::Method(Box::new(Sv::Module(path.to_vec())), name.to_owned()));
                    }
                }
                Err(self.err(at, format!("module `{}` ({class}) has no attribute `{name}`", if path.is_empty() { "self".to_owned() } else { path.join(".") })))
            }
        }
    }

    /// The class name of the module at `path`.
    pub(crate) fn module_class(&self, path: &[String]) -> Option<String> {
        self.module_at(path).map(|m| m.class.clone())
    }

    /// The submodule names of the module at `path`, in order.
    pub(crate) fn submodules(&self, path: &[String]) -> Vec<String> {
        self.module_at(path)
            .map(|m| m.attributes.iter().filter(|a| matches!(a.slot, Slot::Submodule(_))).map(|a| a.name.clone()).collect())
            .unwrap_or_default()
    }

    /// `CONSTANTS.cN`.
    pub(crate) fn archive_constant(&mut self, name: &str, at: usize) -> R<Sv> {
        let index = name
            .strip_prefix('c')
            .and_then(|n| n.parse::<usize>().ok())
            .ok_or_else(|| self.err(at, format!("`CONSTANTS.{name}` is not a constant's name")))?;
        let archive = self.archive;
        match archive.constants().get(index) {
            Some(Value::Tensor(t)) => Ok(Sv::Val(self.state_arg(&format!("CONSTANTS.{name}"), program::ATTR_CONSTANT, t, at)?)),
            Some(other) => match pickled_constant(other) {
                Some(a) => Ok(Sv::Val(self.constant(a, at))),
                None => Err(self.err(at, format!("`CONSTANTS.{name}` holds {}", other.kind()))),
            },
            None => Err(self.err(at, format!("the archive has {} constants; `CONSTANTS.{name}` is not one", archive.constants().len()))),
        }
    }
}

/// The attribute of a pickled plain value the program may read as a constant.
fn pickled_constant(v: &Value) -> Option<Attribute> {
    Some(match v {
        Value::None => dialect_prim::kinds::none(),
        Value::Bool(b) => Attribute::Bool(*b),
        Value::Int(i) => Attribute::Int(*i),
        Value::Float(f) => Attribute::float(*f),
        Value::Str(s) => Attribute::str(s),
        Value::List(l) => Attribute::array(l.items.iter().map(pickled_constant).collect::<Option<Vec<_>>>()?),
        Value::Tuple(t) => Attribute::array(t.iter().map(pickled_constant).collect::<Option<Vec<_>>>()?),
        _ => return None,
    })
}

/// An error in `entry` of the archive at `line:col`, showing the line and a caret, and the
/// original source location when the debug table maps it.
fn source_error(
    path: &Path,
    entry: &str,
    text: &str,
    line: usize,
    col: usize,
    message: String,
    note: Option<String>,
) -> ImportError {
    let source = text.lines().nth(line.saturating_sub(1)).unwrap_or("");
    let mut excerpt = format!("  {source}\n  {}^", " ".repeat(col.saturating_sub(1)));
    if let Some(n) = note {
        excerpt.push_str(&format!("\nnote: compiled from {n}"));
    }
    ImportError::TorchScriptSource { path: PathBuf::from(path), entry: entry.to_owned(), line, col, message, excerpt }
}
