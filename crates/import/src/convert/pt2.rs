//! `torch.export` programs (`.pt2`) to IR: the graph becomes `func.func @forward`, its state
//! becomes [`Weights`] read lazily from the archive. One file because it is one conversion:
//! every node kind is converted by the same state (`Cx`), in the graph's order.

use dialect_aten::op;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use ir::schema::SchemaType;
use ir::{
    Attribute, BlockId, Context, Dim, Location, Module, OperationState, TensorType, Type, TypeKind,
    ValueId,
};

use super::{
    Arg, aten_schema, target_op_name, check_context, device_attr, dtype_of, emit_aten,
    finish_function, insert, join_types, layout_code, memory_format_code, name_value,
    srepr_to_text, symint_op, trace_location, type_of_schema, verify_module,
};
use crate::ImportError;
use crate::program::{self, Program, Weight, Weights};
use crate::treespec::TreeSpec;
use crate::pt2::Pt2Archive;
use crate::pt2::schema::{
    Argument, ExportedProgram, Graph, InputSpec, Node, OptionalTensorArgument, OutputSpec,
    SymBoolArgument, SymExpr, SymFloatArgument, SymInt, SymIntArgument,
};

/// Imports an open `.pt2` archive: converts its program and indexes its weights, which stay in
/// the archive (shared through the `Arc`) until first read.
pub fn import(ctx: &Context, archive: Arc<Pt2Archive>) -> Result<Program, ImportError> {
    let path = archive.path().to_path_buf();
    let module = convert_program(ctx, archive.program(), &path)?;
    let mut weights = Weights::new();
    for (name, info) in archive.weights().chain(archive.constants()) {
        let dtype = dtype_of(info.dtype).ok_or_else(|| {
            program::weight_error(
                &path,
                name,
                format!("unsupported dtype {}", info.dtype.torch_name()),
            )
        })?;
        let to_i64 = |v: &[u64]| {
            v.iter()
                .map(|&x| i64::try_from(x))
                .collect::<Result<Vec<_>, _>>()
        };
        let (Ok(sizes), Ok(strides), Ok(offset)) = (
            to_i64(&info.sizes),
            to_i64(&info.strides),
            i64::try_from(info.storage_offset),
        ) else {
            return Err(program::weight_error(&path, name, "sizes out of range"));
        };
        let w = Weight {
            dtype,
            sizes,
            strides,
            storage_offset: offset,
            source: program::pt2_source(&archive, name),
        };
        weights
            .insert(name, w)
            .map_err(|e| program::weight_error(&path, name, e))?;
    }
    Ok(Program { module, weights })
}

/// Converts a deserialized program to a verified module (`path` only names the input in errors).
pub fn convert_program(
    ctx: &Context,
    program: &ExportedProgram,
    path: &Path,
) -> Result<Module, ImportError> {
    let err = |at: &str, message: String| ImportError::Convert {
        path: path.to_path_buf(),
        at: at.to_string(),
        message,
    };
    check_context(ctx).map_err(|e| err("program", e))?;
    let gm = &program.graph_module;
    let graph = &gm.graph;
    let mut cx = Cx {
        ctx,
        path,
        m: Module::new(),
        scopes: vec![HashMap::new()],
    };

    // Arguments: one per graph input, described by the input spec at the same position.
    let specs = &gm.signature.input_specs;
    if specs.len() != graph.inputs.len() {
        return Err(err(
            "signature",
            format!(
                "{} input specs for {} graph inputs",
                specs.len(),
                graph.inputs.len()
            ),
        ));
    }
    let mut arg_types = Vec::new();
    let mut arg_names = Vec::new();
    let mut arg_attrs = Vec::new();
    for (input, spec) in graph.inputs.iter().zip(specs) {
        let (name, ty) = cx.input_type(graph, input)?;
        let attrs: Vec<(Arc<str>, Attribute)> = match spec {
            InputSpec::Parameter(p) => vec![(
                program::ATTR_PARAM.into(),
                Attribute::str(&p.parameter_name),
            )],
            InputSpec::Buffer(b) => {
                let mut v = vec![(program::ATTR_BUFFER.into(), Attribute::str(&b.buffer_name))];
                if !b.persistent {
                    v.push((program::ATTR_PERSISTENT.into(), Attribute::Bool(false)));
                }
                v
            }
            InputSpec::TensorConstant(c) => vec![(
                program::ATTR_CONSTANT.into(),
                Attribute::str(&c.tensor_constant_name),
            )],
            InputSpec::UserInput(_) | InputSpec::ConstantInput(_) => {
                vec![(program::ATTR_INPUT.into(), Attribute::str(&name))]
            }
            InputSpec::CustomObj(_) => {
                return Err(err(&name, "custom object inputs are not supported".into()));
            }
            InputSpec::Token(_) => {
                return Err(err(&name, "effect token inputs are not supported".into()));
            }
        };
        arg_types.push(ty);
        arg_names.push(name);
        arg_attrs.push(Attribute::dict(attrs));
    }
    let (func, entry) = ir::builtin::create_function(&mut cx.m, program::FORWARD, &arg_types, &[]);
    for (i, name) in arg_names.iter().enumerate() {
        let v = cx.m.block_args(entry)[i];
        name_value(&mut cx.m, v, name);
        cx.define(name, v, "graph inputs")?;
    }

    cx.convert_nodes(graph, entry)?;

    // Results: one per graph output, described by the output spec at the same position.
    let out_specs = &gm.signature.output_specs;
    if out_specs.len() != graph.outputs.len() {
        return Err(err(
            "signature",
            format!(
                "{} output specs for {} graph outputs",
                out_specs.len(),
                graph.outputs.len()
            ),
        ));
    }
    let mut results = Vec::new();
    let mut res_attrs = Vec::new();
    for (out, spec) in graph.outputs.iter().zip(out_specs) {
        let v = cx.output_value(out, entry, &Location::Unknown, "graph outputs")?;
        let out_name = match out {
            Argument::AsTensor(t) => t.name.clone(),
            Argument::AsSymInt(SymIntArgument::AsName(n)) => n.clone(),
            _ => String::new(),
        };
        let attr = match spec {
            OutputSpec::UserOutput(_) | OutputSpec::LossOutput(_) => {
                (program::ATTR_OUTPUT, out_name)
            }
            OutputSpec::BufferMutation(b) => (program::ATTR_BUFFER_MUTATION, b.buffer_name.clone()),
            OutputSpec::ParameterMutation(p) => {
                (program::ATTR_PARAM_MUTATION, p.parameter_name.clone())
            }
            OutputSpec::UserInputMutation(u) => {
                (program::ATTR_INPUT_MUTATION, u.user_input_name.clone())
            }
            OutputSpec::GradientToParameter(_) | OutputSpec::GradientToUserInput(_) => {
                return Err(err(
                    "graph outputs",
                    "gradient outputs of joint graphs are not supported".into(),
                ));
            }
            OutputSpec::Token(_) => {
                return Err(err(
                    "graph outputs",
                    "effect token outputs are not supported".into(),
                ));
            }
        };
        results.push(v);
        res_attrs.push(Attribute::dict(vec![(
            attr.0.into(),
            Attribute::str(&attr.1),
        )]));
    }
    finish_function(&mut cx.m, func, entry, arg_types, results, arg_attrs);
    if !res_attrs.is_empty() {
        cx.m.set_attr(func, ir::builtin::RES_ATTRS, Attribute::array(res_attrs));
    }

    // Module attributes.
    let mut m = cx.m;
    let top = m.top();
    m.set_attr(
        top,
        program::ATTR_SCHEMA_VERSION,
        Attribute::str(&format!(
            "{}.{}",
            program.schema_version.major, program.schema_version.minor
        )),
    );
    let mut ranges = Vec::new();
    for (sym, rc) in &program.range_constraints {
        let lo = rc.min_val.map(Attribute::Int).unwrap_or(dialect_prim::kinds::none());
        let hi = rc.max_val.filter(|&v| v < i64::MAX - 1).map(Attribute::Int);
        let mut bounds = vec![lo];
        bounds.extend(hi);
        ranges.push((Arc::from(sym.as_str()), Attribute::array(bounds)));
    }
    m.set_attr(
        top,
        program::ATTR_RANGE_CONSTRAINTS,
        Attribute::dict(ranges),
    );
    if let Some(sig) = gm
        .module_call_graph
        .iter()
        .find(|e| e.fqn.is_empty())
        .and_then(|e| e.signature.as_ref())
    {
        for (attr, text) in [
            (program::ATTR_IN_SPEC, &sig.in_spec),
            (program::ATTR_OUT_SPEC, &sig.out_spec),
        ] {
            let spec = TreeSpec::from_pytorch_json(text)
                .map_err(|e| err("module call graph", format!("bad pytree spec: {e}")))?;
            m.set_attr(top, attr, Attribute::str(&spec.to_string()));
        }
    }
    verify_module(ctx, &m).map_err(|message| ImportError::Verify {
        path: path.to_path_buf(),
        message,
    })?;
    Ok(m)
}

/// Conversion state: the module and the values of the graphs being converted, by name.
struct Cx<'a> {
    ctx: &'a Context,
    path: &'a Path,
    m: Module,
    /// Innermost last: a subgraph of `cond` opens a scope.
    scopes: Vec<HashMap<String, ValueId>>,
}

/// The IR text of a symbolic size.
fn sym_dim(e: &SymExpr) -> Dim {
    Dim::Sym(srepr_to_text(&e.expr_str).into())
}

/// The tensor type recorded for `name` in `graph`.
fn tensor_type(graph: &Graph, name: &str) -> Option<Type> {
    let meta = graph.tensor_values.get(name)?;
    let dims = meta
        .sizes
        .iter()
        .map(|s| match s {
            SymInt::AsInt(n) => Dim::Static(*n),
            SymInt::AsExpr(e) => sym_dim(e),
        })
        .collect();
    Some(Type::tensor_of(TensorType {
        dtype: dtype_of(meta.dtype),
        shape: Some(dims),
    }))
}

impl Cx<'_> {
    fn err(&self, at: &str, message: impl Into<String>) -> ImportError {
        ImportError::Convert {
            path: self.path.to_path_buf(),
            at: at.to_string(),
            message: message.into(),
        }
    }

    fn lookup(&self, name: &str, at: &str) -> Result<ValueId, ImportError> {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.get(name).copied())
            .ok_or_else(|| ImportError::UndefinedValue {
                path: self.path.to_path_buf(),
                at: at.to_string(),
                name: name.to_string(),
            })
    }

    fn define(&mut self, name: &str, v: ValueId, at: &str) -> Result<(), ImportError> {
        if name.is_empty() {
            return Ok(());
        }
        let scope = self.scopes.last_mut().ok_or_else(|| ImportError::Convert {
            path: self.path.to_path_buf(),
            at: at.to_string(),
            message: "no open scope".into(),
        })?;
        if scope.insert(name.to_string(), v).is_some() {
            return Err(ImportError::DuplicateValue {
                path: self.path.to_path_buf(),
                at: at.to_string(),
                name: name.to_string(),
            });
        }
        Ok(())
    }

    /// Name and type of a graph input.
    fn input_type(&self, graph: &Graph, input: &Argument) -> Result<(String, Type), ImportError> {
        Ok(match input {
            Argument::AsTensor(t) => (
                t.name.clone(),
                tensor_type(graph, &t.name).unwrap_or_else(Type::unknown_tensor),
            ),
            Argument::AsSymInt(SymIntArgument::AsName(n)) => (n.clone(), Type::int()),
            Argument::AsSymBool(SymBoolArgument::AsName(n)) => (n.clone(), Type::bool()),
            Argument::AsSymFloat(SymFloatArgument::AsName(n)) => (n.clone(), Type::float()),
            other => {
                return Err(self.err("graph inputs", format!("unsupported graph input {other:?}")));
            }
        })
    }

    /// The value a graph output refers to (materializing constants).
    fn output_value(
        &mut self,
        out: &Argument,
        block: BlockId,
        loc: &Location,
        at: &str,
    ) -> Result<ValueId, ImportError> {
        let a = self.arg(out, at)?;
        match a {
            Arg::Value(v) => Ok(v),
            Arg::Const(c) => Ok(super::constant(&mut self.m, block, c, loc)),
            Arg::List(_) => Err(self.err(at, "a list cannot be a graph output")),
        }
    }

    /// A node input as an argument value.
    fn arg(&self, a: &Argument, at: &str) -> Result<Arg, ImportError> {
        let sym_int = |s: &SymIntArgument| -> Result<Arg, ImportError> {
            Ok(match s {
                SymIntArgument::AsName(n) => Arg::Value(self.lookup(n, at)?),
                SymIntArgument::AsInt(i) => Arg::Const(Attribute::Int(*i)),
            })
        };
        let sym_bool = |s: &SymBoolArgument| -> Result<Arg, ImportError> {
            Ok(match s {
                SymBoolArgument::AsName(n) => Arg::Value(self.lookup(n, at)?),
                SymBoolArgument::AsBool(b) => Arg::Const(Attribute::Bool(*b)),
            })
        };
        let sym_float = |s: &SymFloatArgument| -> Result<Arg, ImportError> {
            Ok(match s {
                SymFloatArgument::AsName(n) => Arg::Value(self.lookup(n, at)?),
                SymFloatArgument::AsFloat(f) => Arg::Const(Attribute::float(*f)),
            })
        };
        let opt_tensor = |o: &OptionalTensorArgument| -> Result<Arg, ImportError> {
            Ok(match o {
                OptionalTensorArgument::AsTensor(t) => Arg::Value(self.lookup(&t.name, at)?),
                OptionalTensorArgument::AsNone(_) => Arg::Const(dialect_prim::kinds::none()),
            })
        };
        Ok(match a {
            Argument::AsNone(_) => Arg::Const(dialect_prim::kinds::none()),
            Argument::AsTensor(t) => Arg::Value(self.lookup(&t.name, at)?),
            Argument::AsTensors(ts) => Arg::List(
                ts.iter()
                    .map(|t| self.lookup(&t.name, at).map(Arg::Value))
                    .collect::<Result<_, _>>()?,
            ),
            Argument::AsInt(i) => Arg::Const(Attribute::Int(*i)),
            Argument::AsInts(v) => Arg::Const(Attribute::ints(v)),
            Argument::AsFloat(f) => Arg::Const(Attribute::float(*f)),
            Argument::AsFloats(v) => Arg::Const(Attribute::array(
                v.iter().map(|&f| Attribute::float(f)).collect(),
            )),
            Argument::AsString(s) => Arg::Const(Attribute::str(s)),
            Argument::AsStrings(v) => Arg::Const(Attribute::array(
                v.iter().map(|s| Attribute::str(s)).collect(),
            )),
            Argument::AsSymInt(s) => sym_int(s)?,
            Argument::AsSymInts(v) => Arg::List(v.iter().map(sym_int).collect::<Result<_, _>>()?),
            Argument::AsScalarType(st) => {
                Arg::Const(dialect_prim::kinds::dtype(dtype_of(*st).ok_or_else(|| {
                    self.err(at, format!("unsupported dtype {}", st.torch_name()))
                })?))
            }
            Argument::AsMemoryFormat(f) => Arg::Const(Attribute::Int(memory_format_code(*f))),
            Argument::AsLayout(l) => Arg::Const(Attribute::Int(layout_code(*l))),
            Argument::AsDevice(d) => Arg::Const(device_attr(&d.kind, d.index)),
            Argument::AsBool(b) => Arg::Const(Attribute::Bool(*b)),
            Argument::AsBools(v) => Arg::Const(Attribute::array(
                v.iter().map(|&b| Attribute::Bool(b)).collect(),
            )),
            Argument::AsSymBool(s) => sym_bool(s)?,
            Argument::AsSymBools(v) => Arg::List(v.iter().map(sym_bool).collect::<Result<_, _>>()?),
            Argument::AsSymFloat(s) => sym_float(s)?,
            Argument::AsSymFloats(v) => {
                Arg::List(v.iter().map(sym_float).collect::<Result<_, _>>()?)
            }
            Argument::AsOptionalTensors(v) => {
                Arg::List(v.iter().map(opt_tensor).collect::<Result<_, _>>()?)
            }
            Argument::AsOptionalTensor(o) => opt_tensor(o)?,
            Argument::AsIntLists(v) => Arg::Const(Attribute::array(
                v.iter().map(|l| Attribute::ints(l)).collect(),
            )),
            other => {
                let kind = format!("{other:?}");
                let kind = kind.split('(').next().unwrap_or("argument").to_string();
                return Err(self.err(at, format!("unsupported argument kind {kind}")));
            }
        })
    }

    fn convert_nodes(&mut self, graph: &Graph, block: BlockId) -> Result<(), ImportError> {
        for node in &graph.nodes {
            self.convert_node(graph, node, block)?;
        }
        Ok(())
    }

    fn convert_node(
        &mut self,
        graph: &Graph,
        node: &Node,
        block: BlockId,
    ) -> Result<(), ImportError> {
        let name = node
            .name
            .clone()
            .or_else(|| first_output_name(node))
            .unwrap_or_default();
        let at = format!("node `{name}`");
        let loc = trace_location(&name, node.stack_trace());
        let mut metadata = Vec::new();
        if let Some(s) = node.nn_module_stack() {
            metadata.push((program::ATTR_NN_MODULE_STACK, Attribute::str(s)));
        }
        if let Some(s) = node.torch_fn() {
            metadata.push((program::ATTR_TORCH_FN, Attribute::str(s)));
        }
        let target = node.target.as_str();
        if let Some(op_name) = target_op_name(target) {
            let Some(schema) = aten_schema(self.ctx, &op_name) else {
                return Err(self.unknown(&name, target));
            };
            return self.convert_aten(graph, node, block, &op_name, &schema, &at, &loc, metadata);
        }
        match target {
            "torch.ops.higher_order.cond" => self.convert_cond(node, block, &at, &loc),
            _ => {
                let Some(prim) = symint_op(target) else {
                    return Err(self.unknown(&name, target));
                };
                self.convert_sym_binary(node, block, prim, &at, &loc)
            }
        }
    }

    fn unknown(&self, node: &str, target: &str) -> ImportError {
        ImportError::UnknownTarget {
            path: self.path.to_path_buf(),
            node: node.to_string(),
            target: target.to_string(),
        }
    }

    /// `operator.add` and friends on SymInts: `prim.add` … producing `i64` (`i1` for comparisons).
    fn convert_sym_binary(
        &mut self,
        node: &Node,
        block: BlockId,
        prim: &str,
        at: &str,
        loc: &Location,
    ) -> Result<(), ImportError> {
        if node.inputs.len() != 2 {
            return Err(self.err(
                at,
                format!(
                    "`{}` takes 2 arguments, given {}",
                    node.target,
                    node.inputs.len()
                ),
            ));
        }
        let mut operands = Vec::new();
        for input in &node.inputs {
            let v = match self.arg(&input.arg, at)? {
                Arg::Value(v) => v,
                Arg::Const(c @ Attribute::Int(_)) => super::constant(&mut self.m, block, c, loc),
                _ => return Err(self.err(at, format!("`{}` takes integers", node.target))),
            };
            if *self.m.value_type(v).kind() != TypeKind::Int {
                return Err(self.err(
                    at,
                    format!(
                        "`{}` takes integers, given {}",
                        node.target,
                        self.m.value_type(v)
                    ),
                ));
            }
            operands.push(v);
        }
        let compare = dialect_prim::SYMINT_COMPARE.iter().any(|(n, _)| *n == prim);
        let ty = if compare { Type::bool() } else { Type::int() };
        let op = insert(
            &mut self.m,
            block,
            OperationState::new(prim)
                .operands(operands)
                .results([ty])
                .loc(loc.clone()),
        );
        let r = self.m.results(op)[0];
        let out = match node.outputs.as_slice() {
            [Argument::AsSymInt(SymIntArgument::AsName(n))]
            | [Argument::AsSymBool(SymBoolArgument::AsName(n))] => n.clone(),
            _ => return Err(self.err(at, "expected one SymInt output")),
        };
        name_value(&mut self.m, r, &out);
        self.define(&out, r, at)
    }

    #[allow(clippy::too_many_arguments)]
    fn convert_aten(
        &mut self,
        graph: &Graph,
        node: &Node,
        block: BlockId,
        op_name: &str,
        schema: &ir::schema::FunctionSchema,
        at: &str,
        loc: &Location,
        metadata: Vec<(&str, Attribute)>,
    ) -> Result<(), ImportError> {
        // Bind node inputs to schema arguments: by name, else by position.
        let mut args: Vec<Option<Arg>> = vec![None; schema.args.len()];
        for (pos, input) in node.inputs.iter().enumerate() {
            let idx = schema
                .args
                .iter()
                .position(|a| a.name == input.name)
                .or_else(|| input.name.is_empty().then_some(pos));
            let Some(idx) = idx.filter(|&i| i < args.len()) else {
                return Err(self.err(
                    at,
                    format!(
                        "`{}` has no argument `{}`",
                        schema.qualified_name(),
                        input.name
                    ),
                ));
            };
            if args[idx].is_some() {
                return Err(self.err(
                    at,
                    format!("argument `{}` is given twice", schema.args[idx].name),
                ));
            }
            args[idx] = Some(self.arg(&input.arg, at)?);
        }
        while matches!(args.last(), Some(None)) {
            args.pop();
        }

        // One result per schema return; a `Tensor[]` return is one list, unpacked below.
        let list_return =
            schema.returns.len() == 1 && matches!(schema.returns[0].ty, SchemaType::List { .. });
        let mut slots: Vec<(String, Type)> = Vec::new();
        let mut unpack: Vec<(String, Type)> = Vec::new();
        if list_return {
            let names: Vec<String> = match node.outputs.as_slice() {
                [Argument::AsTensors(ts)] => ts.iter().map(|t| t.name.clone()).collect(),
                outs => outs
                    .iter()
                    .filter_map(|o| o.as_tensor_name().map(str::to_string))
                    .collect(),
            };
            for n in &names {
                unpack.push((
                    n.clone(),
                    tensor_type(graph, n).unwrap_or_else(Type::unknown_tensor),
                ));
            }
            let elem_types: Vec<Type> = unpack.iter().map(|(_, t)| t.clone()).collect();
            let elem = if elem_types.is_empty() {
                Type::unknown_tensor()
            } else {
                join_types(&elem_types)
            };
            for u in &mut unpack {
                u.1 = elem.clone();
            }
            slots.push((String::new(), dialect_prim::kinds::list(elem)));
        } else {
            let flat: Vec<Option<(String, Option<Type>)>> = node
                .outputs
                .iter()
                .flat_map(|o| -> Vec<Option<(String, Option<Type>)>> {
                    match o {
                        Argument::AsTensor(t) => {
                            vec![Some((t.name.clone(), tensor_type(graph, &t.name)))]
                        }
                        Argument::AsTensors(ts) => ts
                            .iter()
                            .map(|t| Some((t.name.clone(), tensor_type(graph, &t.name))))
                            .collect(),
                        Argument::AsSymInt(SymIntArgument::AsName(n)) => {
                            vec![Some((n.clone(), Some(Type::int())))]
                        }
                        Argument::AsSymBool(SymBoolArgument::AsName(n)) => {
                            vec![Some((n.clone(), Some(Type::bool())))]
                        }
                        Argument::AsSymFloat(SymFloatArgument::AsName(n)) => {
                            vec![Some((n.clone(), Some(Type::float())))]
                        }
                        _ => vec![None],
                    }
                })
                .collect();
            if flat.len() != schema.returns.len() && !schema.is_varret {
                return Err(self.err(
                    at,
                    format!(
                        "{} output(s) for `{}`, which returns {}",
                        flat.len(),
                        schema.qualified_name(),
                        schema.returns.len()
                    ),
                ));
            }
            for (i, f) in flat.into_iter().enumerate() {
                let fallback = || {
                    schema
                        .returns
                        .get(i)
                        .map(|r| type_of_schema(&r.ty))
                        .unwrap_or_else(Type::unknown_tensor)
                };
                match f {
                    Some((n, t)) => slots.push((n, t.unwrap_or_else(fallback))),
                    None => slots.push((String::new(), fallback())),
                }
            }
        }
        let types: Vec<Type> = slots.iter().map(|(_, t)| t.clone()).collect();
        let op = emit_aten(
            &mut self.m,
            block,
            op_name,
            schema,
            args,
            types,
            loc,
            metadata,
        )
        .map_err(|e| self.err(at, e))?;
        let results = self.m.results(op).to_vec();
        for ((n, _), &r) in slots.iter().zip(&results) {
            if !n.is_empty() {
                name_value(&mut self.m, r, n);
                self.define(n, r, at)?;
            }
        }
        if list_return {
            let elem_types: Vec<Type> = unpack.iter().map(|(_, t)| t.clone()).collect();
            let op = insert(
                &mut self.m,
                block,
                OperationState::new(dialect_prim::LIST_UNPACK)
                    .operands([results[0]])
                    .results(elem_types)
                    .loc(loc.clone()),
            );
            let values = self.m.results(op).to_vec();
            for ((n, _), v) in unpack.iter().zip(values) {
                name_value(&mut self.m, v, n);
                self.define(n, v, at)?;
            }
        }
        Ok(())
    }

    /// `torch.ops.higher_order.cond(pred, true_graph, false_graph, operands)`: `prim.If` whose
    /// regions inline the two subgraphs with their inputs bound to the operands.
    fn convert_cond(
        &mut self,
        node: &Node,
        block: BlockId,
        at: &str,
        loc: &Location,
    ) -> Result<(), ImportError> {
        let [pred, t, f, operands] = node.inputs.as_slice() else {
            return Err(self.err(
                at,
                format!("cond takes 4 arguments, given {}", node.inputs.len()),
            ));
        };
        let (Argument::AsGraph(tg), Argument::AsGraph(fg)) = (&t.arg, &f.arg) else {
            return Err(self.err(at, "cond branches must be graphs"));
        };
        let pred_v = match self.arg(&pred.arg, at)? {
            Arg::Value(v) => v,
            Arg::Const(c @ Attribute::Bool(_)) => super::constant(&mut self.m, block, c, loc),
            _ => return Err(self.err(at, "cond predicate must be a tensor or a bool")),
        };
        let pred_v = self.predicate(pred_v, block, loc, at)?;
        let ops: Vec<ValueId> = match self.arg(&operands.arg, at)? {
            Arg::List(items) => items
                .into_iter()
                .map(|a| match a {
                    Arg::Value(v) => Ok(v),
                    _ => Err(self.err(at, "cond operands must be values")),
                })
                .collect::<Result<_, _>>()?,
            Arg::Value(v) => vec![v],
            Arg::Const(_) => return Err(self.err(at, "cond operands must be values")),
        };
        // Outputs: the names the node defines, with types from the branch outputs.
        let out_names: Vec<String> = node
            .outputs
            .iter()
            .flat_map(|o| match o {
                Argument::AsTensor(t) => vec![t.name.clone()],
                Argument::AsTensors(ts) => ts.iter().map(|t| t.name.clone()).collect(),
                _ => vec![String::new()],
            })
            .collect();
        let if_op = insert(
            &mut self.m,
            block,
            OperationState::new(dialect_prim::IF)
                .operands([pred_v])
                .regions(2)
                .loc(loc.clone()),
        );
        let mut branch_types: Vec<Vec<Type>> = Vec::new();
        for (i, g) in [&tg.graph, &fg.graph].into_iter().enumerate() {
            let region = self.m.regions(if_op)[i];
            let b = self.m.append_block(region, &[]);
            if g.inputs.len() != ops.len() {
                return Err(self.err(
                    at,
                    format!(
                        "branch `{}` takes {} inputs but cond passes {}",
                        if i == 0 { &tg.name } else { &fg.name },
                        g.inputs.len(),
                        ops.len()
                    ),
                ));
            }
            self.scopes.push(HashMap::new());
            for (input, &v) in g.inputs.iter().zip(&ops) {
                let (name, _) = self.input_type(g, input)?;
                self.define(&name, v, at)?;
            }
            let r = self.convert_nodes(g, b).and_then(|_| {
                let mut outs = Vec::new();
                for o in &g.outputs {
                    outs.push(self.output_value(o, b, loc, at)?);
                }
                Ok(outs)
            });
            self.scopes.pop();
            let outs = r?;
            branch_types.push(outs.iter().map(|&v| self.m.value_type(v).clone()).collect());
            insert(
                &mut self.m,
                b,
                OperationState::new(dialect_prim::YIELD)
                    .operands(outs)
                    .loc(loc.clone()),
            );
        }
        let (tt, ft) = (&branch_types[0], &branch_types[1]);
        if tt.len() != ft.len() {
            return Err(self.err(
                at,
                format!("cond branches return {} and {} values", tt.len(), ft.len()),
            ));
        }
        if tt != ft {
            return Err(self.err(at, "cond branches return values of different types"));
        }
        if out_names.len() != tt.len() {
            return Err(self.err(
                at,
                format!(
                    "cond has {} outputs but its branches return {}",
                    out_names.len(),
                    tt.len()
                ),
            ));
        }
        // Results are added to the op after the regions are built (their types come from them).
        let results = self.add_results(if_op, tt);
        for (n, v) in out_names.iter().zip(results) {
            if !n.is_empty() {
                name_value(&mut self.m, v, n);
                self.define(n, v, at)?;
            }
        }
        Ok(())
    }

    /// Replaces `op` (without results) by a copy with results of `types`, moving its regions.
    fn add_results(&mut self, op: ir::OpId, types: &[Type]) -> Vec<ValueId> {
        let operands = self.m.operands(op).to_vec();
        let loc = self.m.loc(op).clone();
        let name = self.m.op_name(op).to_string();
        let nregions = self.m.regions(op).len();
        let new = self.m.create_op(
            OperationState::new(&name)
                .operands(operands)
                .results(types.iter().cloned())
                .regions(nregions)
                .loc(loc),
        );
        for i in 0..nregions {
            let (src, dst) = (self.m.regions(op)[i], self.m.regions(new)[i]);
            self.m.take_region_blocks(src, dst);
        }
        let _ = self.m.insert_op(new, ir::InsertPoint::Before(op));
        let _ = self.m.erase_op(op);
        self.m.results(new).to_vec()
    }

    /// An `i1` condition: a bool as it is, a tensor through `aten._local_scalar_dense`.
    fn predicate(
        &mut self,
        v: ValueId,
        block: BlockId,
        loc: &Location,
        at: &str,
    ) -> Result<ValueId, ImportError> {
        match self.m.value_type(v).kind() {
            TypeKind::Bool => Ok(v),
            TypeKind::Tensor(_) => {
                let op = insert(
                    &mut self.m,
                    block,
                    OperationState::new(op::_LOCAL_SCALAR_DENSE)
                        .operands([v])
                        .results([Type::bool()])
                        .loc(loc.clone()),
                );
                Ok(self.m.results(op)[0])
            }
            _ => Err(self.err(
                at,
                format!("cond predicate has type {}", self.m.value_type(v)),
            )),
        }
    }
}

fn first_output_name(node: &Node) -> Option<String> {
    node.outputs.iter().find_map(|o| match o {
        Argument::AsTensor(t) => Some(t.name.clone()),
        Argument::AsTensors(ts) => ts.first().map(|t| t.name.clone()),
        Argument::AsSymInt(SymIntArgument::AsName(n)) => Some(n.clone()),
        _ => None,
    })
}
