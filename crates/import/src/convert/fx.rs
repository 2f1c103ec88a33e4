//! FX graph text to IR.
//!
//! FX text carries no types and no graph signature: tensors get `tensor<*x!prim.any>`, SymInts
//! (results of `sym_size.int` and `operator.*`) get `i64`, and placeholders become plain
//! arguments named after the placeholder, without `prim.param`/`prim.input` attributes (the text
//! cannot tell parameters from inputs). Argument kinds come from the operator schema, so the bare
//! word `floor` for a `str` argument is a string and `cpu` for a `Device` is a device. `cond`
//! subgraphs are not printed in FX text; each is declared as a private function without a body
//! and called from the regions of the `prim.If`.

use dialect_prim::kinds::{Kind as PK, TypeExt as _};
use dialect_aten::op;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use ir::schema::{FunctionSchema, SchemaType};
use ir::{
    Attribute, BlockId, Context, DType, Location, Module, OperationState, Type, ValueId,
};

use super::{
    Arg, aten_schema, target_op_name, check_context, device_attr, dtype_of, emit_aten, insert,
    layout_code, memory_format_code, name_value, symint_op, type_of_schema, verify_module,
};
use crate::ImportError;
use crate::fx::{FxArg, FxGraph, FxNode, FxOp};

/// Converts an FX graph to a verified module holding `func.func @forward`.
pub fn convert_graph(ctx: &Context, graph: &FxGraph, path: &Path) -> Result<Module, ImportError> {
    check_context(ctx).map_err(|message| ImportError::Convert {
        path: path.to_path_buf(),
        at: "graph".into(),
        message,
    })?;
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut cx = Cx {
        ctx,
        path,
        file,
        m: Module::new(),
        values: HashMap::new(),
        subgraphs: HashMap::new(),
        getitem_max: HashMap::new(),
        declared: HashMap::new(),
    };

    // How far the graph indexes each multi-output node decides how many results it unpacks.
    for n in &graph.nodes {
        if n.op == FxOp::CallFunction
            && is_getitem(&n.target)
            && let (Some(FxArg::Node(src)), Some(FxArg::Int(i))) = (n.args.first(), n.args.get(1))
        {
            let e = cx.getitem_max.entry(src.clone()).or_insert(0);
            *e = (*e).max(*i + 1);
        }
    }

    let placeholders: Vec<&FxNode> = graph
        .nodes
        .iter()
        .filter(|n| n.op == FxOp::Placeholder)
        .collect();
    let arg_types = vec![Type::unknown_tensor(); placeholders.len()];
    let (func, entry) =
        ir::builtin::create_function(&mut cx.m, crate::program::FORWARD, &arg_types, &[]);
    for (i, n) in placeholders.iter().enumerate() {
        let v = cx.m.block_args(entry)[i];
        name_value(&mut cx.m, v, &n.name);
        cx.values.insert(n.name.clone(), Val::One(v));
    }
    for n in &graph.nodes {
        match n.op {
            FxOp::Placeholder => {}
            FxOp::GetAttr => {
                cx.subgraphs.insert(n.name.clone(), n.target.clone());
            }
            FxOp::CallFunction => cx.call(n, entry)?,
            FxOp::CallMethod | FxOp::CallModule => {
                return Err(cx.err(
                    n.line,
                    format!("`{}` nodes are not supported", n.op.as_str()),
                ));
            }
        }
    }
    let items = match &graph.output {
        FxArg::Tuple(items) | FxArg::List(items) => items.clone(),
        other => vec![other.clone()],
    };
    let loc = cx.loc("output", graph.output_line);
    let mut results = Vec::new();
    for item in &items {
        let v = match cx.arg(item, &SchemaType::Any, graph.output_line)? {
            Arg::Value(v) => v,
            Arg::Const(c) => super::constant(&mut cx.m, entry, c, &loc),
            Arg::List(_) => {
                return Err(cx.err(graph.output_line, "a list cannot be a graph output"));
            }
        };
        results.push(v);
    }
    let arg_types: Vec<Type> =
        cx.m.block_args(entry)
            .iter()
            .map(|&a| cx.m.value_type(a).clone())
            .collect();
    let result_types: Vec<Type> = results
        .iter()
        .map(|&v| cx.m.value_type(v).clone())
        .collect();
    insert(
        &mut cx.m,
        entry,
        OperationState::new(ir::builtin::RETURN)
            .operands(results)
            .loc(loc),
    );
    cx.m.set_attr(
        func,
        ir::builtin::FUNCTION_TYPE,
        Attribute::Type(Type::function(arg_types, result_types)),
    );
    let m = cx.m;
    verify_module(ctx, &m).map_err(|message| ImportError::Verify {
        path: path.to_path_buf(),
        message,
    })?;
    Ok(m)
}

/// What a node defines.
#[derive(Clone)]
enum Val {
    One(ValueId),
    /// The results of an op with several returns, picked by `getitem`.
    Many(Vec<ValueId>),
    /// A `Tensor[]` result, unpacked at the first `getitem`.
    List {
        list: ValueId,
        unpacked: Option<Vec<ValueId>>,
    },
}

struct Cx<'a> {
    ctx: &'a Context,
    path: &'a Path,
    file: String,
    m: Module,
    values: HashMap<String, Val>,
    /// `get_attr` node name to the submodule it names.
    subgraphs: HashMap<String, String>,
    /// One past the largest `getitem` index used on each node.
    getitem_max: HashMap<String, i64>,
    /// Declared subgraph functions and their types.
    declared: HashMap<String, Type>,
}

fn is_getitem(target: &str) -> bool {
    matches!(target, "operator.getitem" | "_operator.getitem")
}

impl Cx<'_> {
    fn err(&self, line: usize, message: impl Into<String>) -> ImportError {
        ImportError::ConvertAt {
            path: self.path.to_path_buf(),
            line,
            col: 1,
            message: message.into(),
        }
    }

    fn loc(&self, name: &str, line: usize) -> Location {
        Location::Name {
            name: name.into(),
            child: Some(Arc::new(Location::file(&self.file, line as u32, 1))),
        }
    }

    fn value(&self, name: &str, line: usize) -> Result<ValueId, ImportError> {
        match self.values.get(name) {
            Some(Val::One(v)) => Ok(*v),
            Some(Val::List { list, .. }) => Ok(*list),
            Some(Val::Many(_)) => Err(self.err(
                line,
                format!("`{name}` has several results; pick one with getitem"),
            )),
            None => Err(ImportError::UndefinedValue {
                path: self.path.to_path_buf(),
                at: format!("line {line}"),
                name: name.into(),
            }),
        }
    }

    fn define(&mut self, name: &str, v: Val, line: usize) -> Result<(), ImportError> {
        if self.values.insert(name.to_string(), v).is_some() {
            return Err(ImportError::DuplicateValue {
                path: self.path.to_path_buf(),
                at: format!("line {line}"),
                name: name.into(),
            });
        }
        Ok(())
    }

    /// An FX argument as an argument of schema type `t`.
    fn arg(&self, a: &FxArg, t: &SchemaType, line: usize) -> Result<Arg, ImportError> {
        let t = t.unwrap_optional();
        Ok(match a {
            FxArg::Node(n) => Arg::Value(self.value(n, line)?),
            FxArg::None => Arg::Const(dialect_prim::kinds::none()),
            FxArg::Bool(b) => Arg::Const(Attribute::Bool(*b)),
            FxArg::Int(i) => match t {
                SchemaType::Float | SchemaType::SymFloat => Arg::Const(Attribute::float(*i as f64)),
                _ => Arg::Const(Attribute::Int(*i)),
            },
            FxArg::Float(f) => Arg::Const(Attribute::float(*f)),
            FxArg::Str(s) => Arg::Const(Attribute::str(s)),
            FxArg::Dtype(st) => Arg::Const(dialect_prim::kinds::dtype(dtype_of(*st).ok_or_else(|| {
                self.err(line, format!("unsupported dtype {}", st.torch_name()))
            })?)),
            FxArg::Layout(l) => Arg::Const(Attribute::Int(layout_code(*l))),
            FxArg::MemoryFormat(f) => Arg::Const(Attribute::Int(memory_format_code(*f))),
            FxArg::Device { kind, index } => Arg::Const(device_attr(kind, *index)),
            FxArg::Word(w) => match t {
                SchemaType::Device => Arg::Const(dialect_prim::kinds::device(w.as_str().into())),
                SchemaType::ScalarType => Arg::Const(dialect_prim::kinds::dtype(
                    DType::from_torch_name(w)
                        .ok_or_else(|| self.err(line, format!("`{w}` is not a dtype")))?,
                )),
                SchemaType::Str | SchemaType::Any | SchemaType::Var(_) => {
                    Arg::Const(Attribute::str(w))
                }
                other => {
                    return Err(self.err(line, format!("`{w}` is not a value of type {other}")));
                }
            },
            FxArg::Tuple(items) | FxArg::List(items) => {
                let elem = match t {
                    SchemaType::List { elem, .. } => elem.as_ref().clone(),
                    _ => SchemaType::Any,
                };
                Arg::List(
                    items
                        .iter()
                        .map(|i| self.arg(i, &elem, line))
                        .collect::<Result<_, _>>()?,
                )
            }
            FxArg::BigInt(s) => {
                return Err(self.err(line, format!("integer {s} does not fit in 64 bits")));
            }
            FxArg::Dict(_) => return Err(self.err(line, "dict arguments are not supported")),
            FxArg::Call { func, .. } => {
                return Err(self.err(line, format!("`{func}(…)` arguments are not supported")));
            }
        })
    }

    fn call(&mut self, n: &FxNode, block: BlockId) -> Result<(), ImportError> {
        let loc = self.loc(&n.name, n.line);
        let target = n.target.as_str();
        if let Some(op_name) = target_op_name(target) {
            let Some(schema) = aten_schema(self.ctx, &op_name) else {
                return Err(ImportError::UnknownTarget {
                    path: self.path.to_path_buf(),
                    node: n.name.clone(),
                    target: target.into(),
                });
            };
            return self.aten(n, block, &op_name, &schema, &loc);
        }
        if is_getitem(target) {
            return self.getitem(n, block, &loc);
        }
        if target == "torch.ops.higher_order.cond" {
            return self.cond(n, block, &loc);
        }
        let Some(prim) = symint_op(target) else {
            return Err(ImportError::UnknownTarget {
                path: self.path.to_path_buf(),
                node: n.name.clone(),
                target: target.into(),
            });
        };
        if n.args.len() != 2 || !n.kwargs.is_empty() {
            return Err(self.err(n.line, format!("`{target}` takes 2 positional arguments")));
        }
        let mut operands = Vec::new();
        for a in &n.args {
            let v = match self.arg(a, &SchemaType::Int, n.line)? {
                Arg::Value(v) => v,
                Arg::Const(c @ Attribute::Int(_)) => super::constant(&mut self.m, block, c, &loc),
                _ => return Err(self.err(n.line, format!("`{target}` takes integers"))),
            };
            if self.m.value_type(v).pk() != PK::Int {
                return Err(self.err(
                    n.line,
                    format!("`{target}` takes integers, given {}", self.m.value_type(v)),
                ));
            }
            operands.push(v);
        }
        let compare = dialect_prim::SYMINT_COMPARE.iter().any(|(p, _)| *p == prim);
        let ty = if compare { Type::bool() } else { Type::int() };
        let op = insert(
            &mut self.m,
            block,
            OperationState::new(prim)
                .operands(operands)
                .results([ty])
                .loc(loc),
        );
        let r = self.m.results(op)[0];
        name_value(&mut self.m, r, &n.name);
        self.define(&n.name, Val::One(r), n.line)
    }

    fn aten(
        &mut self,
        n: &FxNode,
        block: BlockId,
        op_name: &str,
        schema: &FunctionSchema,
        loc: &Location,
    ) -> Result<(), ImportError> {
        let mut args: Vec<Option<Arg>> = vec![None; schema.args.len()];
        if n.args.len() > schema.args.len() {
            return Err(self.err(
                n.line,
                format!(
                    "{} arguments given, `{}` takes {}",
                    n.args.len(),
                    schema.qualified_name(),
                    schema.args.len()
                ),
            ));
        }
        for (i, a) in n.args.iter().enumerate() {
            args[i] = Some(self.arg(a, &schema.args[i].ty, n.line)?);
        }
        for (k, a) in &n.kwargs {
            let Some(i) = schema.args.iter().position(|s| &s.name == k) else {
                return Err(self.err(
                    n.line,
                    format!("`{}` has no argument `{k}`", schema.qualified_name()),
                ));
            };
            if args[i].is_some() {
                return Err(self.err(n.line, format!("argument `{k}` is given twice")));
            }
            args[i] = Some(self.arg(a, &schema.args[i].ty, n.line)?);
        }
        while matches!(args.last(), Some(None)) {
            args.pop();
        }
        let types: Vec<Type> = schema
            .returns
            .iter()
            .map(|r| type_of_schema(&r.ty))
            .collect();
        let op = emit_aten(
            &mut self.m,
            block,
            op_name,
            schema,
            args,
            types,
            loc,
            Vec::new(),
        )
        .map_err(|e| self.err(n.line, e))?;
        let results = self.m.results(op).to_vec();
        let val = match results.as_slice() {
            [r] if matches!(schema.returns[0].ty, SchemaType::List { .. }) => Val::List {
                list: *r,
                unpacked: None,
            },
            [r] => Val::One(*r),
            _ => Val::Many(results.clone()),
        };
        if let [r] = results.as_slice() {
            name_value(&mut self.m, *r, &n.name);
        }
        self.define(&n.name, val, n.line)
    }

    fn getitem(&mut self, n: &FxNode, block: BlockId, loc: &Location) -> Result<(), ImportError> {
        let (Some(FxArg::Node(src)), Some(FxArg::Int(i))) = (n.args.first(), n.args.get(1)) else {
            return Err(self.err(n.line, "getitem takes a node and an integer index"));
        };
        let Some(val) = self.values.get(src).cloned() else {
            return Err(ImportError::UndefinedValue {
                path: self.path.to_path_buf(),
                at: format!("line {}", n.line),
                name: src.clone(),
            });
        };
        let items = match val {
            Val::Many(vs) => vs,
            Val::List {
                unpacked: Some(vs), ..
            } => vs,
            Val::List {
                list,
                unpacked: None,
            } => {
                let count = self.getitem_max.get(src).copied().unwrap_or(0).max(0) as usize;
                let elem = match self.m.value_type(list).pk() {
                    PK::List(e) => e.clone(),
                    _ => Type::unknown_tensor(),
                };
                let op = insert(
                    &mut self.m,
                    block,
                    OperationState::new(dialect_prim::LIST_UNPACK)
                        .operands([list])
                        .results(vec![elem; count])
                        .loc(loc.clone()),
                );
                let vs = self.m.results(op).to_vec();
                self.values.insert(
                    src.clone(),
                    Val::List {
                        list,
                        unpacked: Some(vs.clone()),
                    },
                );
                vs
            }
            Val::One(_) => {
                return Err(self.err(
                    n.line,
                    format!("`{src}` has a single result; getitem cannot index it"),
                ));
            }
        };
        let Some(&v) = usize::try_from(*i).ok().and_then(|i| items.get(i)) else {
            return Err(self.err(
                n.line,
                format!(
                    "index {i} out of range for `{src}` with {} results",
                    items.len()
                ),
            ));
        };
        if self.m.value_name(v).is_none() {
            name_value(&mut self.m, v, &n.name);
        }
        self.define(&n.name, Val::One(v), n.line)
    }

    /// `cond(pred, true_graph, false_graph, operands)`: `prim.If` calling the two subgraphs,
    /// declared as private functions since FX text does not print their bodies.
    fn cond(&mut self, n: &FxNode, block: BlockId, loc: &Location) -> Result<(), ImportError> {
        let [pred, tg, fg, ops] = n.args.as_slice() else {
            return Err(self.err(n.line, "cond takes 4 arguments"));
        };
        let mut names = Vec::new();
        for g in [tg, fg] {
            let FxArg::Node(g) = g else {
                return Err(self.err(n.line, "cond branches must be get_attr nodes"));
            };
            let Some(sub) = self.subgraphs.get(g) else {
                return Err(self.err(n.line, format!("`{g}` is not a get_attr node")));
            };
            names.push(sub.clone());
        }
        let pred = match self.arg(pred, &SchemaType::Any, n.line)? {
            Arg::Value(v) => v,
            Arg::Const(c @ Attribute::Bool(_)) => super::constant(&mut self.m, block, c, loc),
            _ => return Err(self.err(n.line, "cond predicate must be a tensor or a bool")),
        };
        let pred = match self.m.value_type(pred).pk() {
            PK::Bool => pred,
            PK::Tensor(_) => {
                let op = insert(
                    &mut self.m,
                    block,
                    OperationState::new(op::_LOCAL_SCALAR_DENSE)
                        .operands([pred])
                        .results([Type::bool()])
                        .loc(loc.clone()),
                );
                self.m.results(op)[0]
            }
            _ => return Err(self.err(n.line, "cond predicate must be a tensor or a bool")),
        };
        let operands: Vec<ValueId> = match self.arg(ops, &SchemaType::Any, n.line)? {
            Arg::List(items) => items
                .into_iter()
                .map(|a| match a {
                    Arg::Value(v) => Ok(v),
                    _ => Err(self.err(n.line, "cond operands must be nodes")),
                })
                .collect::<Result<_, _>>()?,
            _ => return Err(self.err(n.line, "cond operands must be a tuple of nodes")),
        };
        let count = self.getitem_max.get(&n.name).copied().unwrap_or(1).max(1) as usize;
        let inputs: Vec<Type> = operands
            .iter()
            .map(|&v| self.m.value_type(v).clone())
            .collect();
        let outputs = vec![Type::unknown_tensor(); count];
        let fty = Type::function(inputs, outputs.clone());
        for name in &names {
            match self.declared.get(name) {
                Some(t) if *t != fty => {
                    return Err(self.err(
                        n.line,
                        format!("subgraph `{name}` is called with different types"),
                    ));
                }
                Some(_) => {}
                None => {
                    let decl = OperationState::new(ir::builtin::FUNC)
                        .attr(ir::builtin::SYM_NAME, Attribute::str(name))
                        .attr(ir::builtin::FUNCTION_TYPE, Attribute::Type(fty.clone()))
                        .attr("sym_visibility", Attribute::str("private"))
                        .regions(1);
                    let body = self.m.body();
                    insert(&mut self.m, body, decl);
                    self.declared.insert(name.clone(), fty.clone());
                }
            }
        }
        let if_op = insert(
            &mut self.m,
            block,
            OperationState::new(dialect_prim::IF)
                .operands([pred])
                .results(outputs.clone())
                .regions(2)
                .loc(loc.clone()),
        );
        for (i, name) in names.iter().enumerate() {
            let region = self.m.regions(if_op)[i];
            let b = self.m.append_block(region, &[]);
            let call = insert(
                &mut self.m,
                b,
                OperationState::new(ir::builtin::CALL)
                    .attr("callee", Attribute::SymbolRef(name.as_str().into()))
                    .operands(operands.iter().copied())
                    .results(outputs.clone())
                    .loc(loc.clone()),
            );
            let rs = self.m.results(call).to_vec();
            insert(
                &mut self.m,
                b,
                OperationState::new(dialect_prim::YIELD)
                    .operands(rs)
                    .loc(loc.clone()),
            );
        }
        let results = self.m.results(if_op).to_vec();
        self.define(&n.name, Val::Many(results), n.line)
    }
}
