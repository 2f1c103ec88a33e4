//! TorchScript IR text to IR.
//!
//! TorchScript passes every argument as a value, so every aten argument is an operand. The text
//! names the operator but not its overload: the overload is the schema of that name whose
//! argument types accept the given values, preferring exact matches over conversions (an `int`
//! to `int` costs nothing, to `float` or `Scalar` a little). `prim::If`/`prim::Loop` become
//! `prim.If`/`prim.Loop` with their blocks as regions; `# file:line:col` comments become
//! locations; value names (`%x.1`) are kept as printed names.

use dialect_prim::kinds::{Kind as PK, TypeExt as _};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use ir::{
    Attribute, BlockId, Context, DType, Dim, Location, Module, OperationState, TensorType, Type,
    ValueId,
};

use super::{
    aten_op_name, check_context, finish_function, insert, join_types, name_value, verify_module,
};
use crate::ImportError;
use crate::program;
use crate::torchscript::{TsAttr, TsBlock, TsGraph, TsNode, TsType};

/// Converts a TorchScript graph to a verified module holding `func.func @forward`.
pub fn convert_graph(ctx: &Context, graph: &TsGraph, path: &Path) -> Result<Module, ImportError> {
    check_context(ctx).map_err(|message| ImportError::Convert {
        path: path.to_path_buf(),
        at: "graph".into(),
        message,
    })?;
    let mut cx = Cx {
        ctx,
        path,
        m: Module::new(),
        values: HashMap::new(),
        constants: HashMap::new(),
    };
    let mut arg_types = Vec::new();
    let mut arg_attrs = Vec::new();
    for (name, t) in &graph.inputs {
        arg_types.push(cx.ty(t, 1)?);
        let user_name = strip_suffix(name);
        arg_attrs.push(Attribute::dict(vec![(
            Arc::from(program::ATTR_INPUT),
            Attribute::str(user_name),
        )]));
    }
    let (func, entry) = ir::builtin::create_function(&mut cx.m, program::FORWARD, &arg_types, &[]);
    for (i, (name, _)) in graph.inputs.iter().enumerate() {
        let v = cx.m.block_args(entry)[i];
        name_value(&mut cx.m, v, name);
        cx.define(name, v, 1)?;
    }
    cx.block_body(&graph.body, entry)?;
    let mut results = Vec::new();
    for r in &graph.body.returns {
        results.push(cx.value(r, 1)?);
    }
    finish_function(&mut cx.m, func, entry, arg_types, results, arg_attrs);
    let m = cx.m;
    verify_module(ctx, &m).map_err(|message| ImportError::Verify {
        path: path.to_path_buf(),
        message,
    })?;
    Ok(m)
}

/// `x.1` → `x`: the Python name behind a TorchScript debug name.
fn strip_suffix(name: &str) -> &str {
    match name.rsplit_once('.') {
        Some((base, n)) if !base.is_empty() && n.chars().all(|c| c.is_ascii_digit()) => base,
        _ => name,
    }
}

struct Cx<'a> {
    ctx: &'a Context,
    path: &'a Path,
    m: Module,
    values: HashMap<String, ValueId>,
    /// The attribute of each `prim.Constant` result (for `prim::TupleIndex`).
    constants: HashMap<ValueId, Attribute>,
}

/// The IR dtype of a TorchScript scalar type name (`Float`, `Long`, …).
fn ts_dtype(name: &str) -> Option<DType> {
    Some(match name {
        "Float" => DType::F32,
        "Double" => DType::F64,
        "Half" => DType::F16,
        "BFloat16" => DType::BF16,
        "Long" => DType::I64,
        "Int" => DType::I32,
        "Short" => DType::I16,
        "Char" => DType::I8,
        "Byte" => DType::U8,
        "Bool" => DType::Bool,
        _ => return None,
    })
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

    fn value(&self, name: &str, line: usize) -> Result<ValueId, ImportError> {
        self.values
            .get(name)
            .copied()
            .ok_or_else(|| ImportError::UndefinedValue {
                path: self.path.to_path_buf(),
                at: format!("line {line}"),
                name: format!("%{name}"),
            })
    }

    fn define(&mut self, name: &str, v: ValueId, line: usize) -> Result<(), ImportError> {
        if self.values.insert(name.to_string(), v).is_some() {
            return Err(ImportError::DuplicateValue {
                path: self.path.to_path_buf(),
                at: format!("line {line}"),
                name: format!("%{name}"),
            });
        }
        name_value(&mut self.m, v, name);
        Ok(())
    }

    fn ty(&self, t: &TsType, line: usize) -> Result<Type, ImportError> {
        Ok(match t {
            TsType::Tensor(None) => Type::unknown_tensor(),
            TsType::Tensor(Some(tt)) => {
                let dtype =
                    match &tt.dtype {
                        Some(d) => Some(ts_dtype(d).ok_or_else(|| {
                            self.err(line, format!("unsupported tensor type `{d}`"))
                        })?),
                        None => None,
                    };
                let shape = tt
                    .sizes
                    .iter()
                    .map(|d| d.map(Dim::Static).unwrap_or(Dim::Unknown))
                    .collect();
                Type::tensor_of(TensorType {
                    dtype,
                    shape: Some(shape),
                })
            }
            TsType::Named(n) => match n.as_str() {
                "int" | "SymInt" | "ScalarType" | "Layout" | "MemoryFormat" => Type::int(),
                "float" | "SymFloat" => Type::float(),
                "bool" | "SymBool" => Type::bool(),
                "str" => dialect_prim::kinds::str_type(),
                "NoneType" => Type::none(),
                "Device" => dialect_prim::kinds::device_type(),
                "Scalar" | "number" | "Any" => dialect_prim::kinds::any_type(),
                "Tensor" => Type::unknown_tensor(),
                other => return Err(self.err(line, format!("unsupported type `{other}`"))),
            },
            TsType::List(e) => dialect_prim::kinds::list(self.ty(e, line)?),
            TsType::Optional(e) => dialect_prim::kinds::optional(self.ty(e, line)?),
            TsType::Tuple(items) => Type::tuple(
                items
                    .iter()
                    .map(|i| self.ty(i, line))
                    .collect::<Result<_, _>>()?,
            ),
            TsType::Generic { name, .. } => {
                return Err(self.err(line, format!("unsupported type `{name}(…)`")));
            }
        })
    }

    fn block_body(&mut self, b: &TsBlock, block: BlockId) -> Result<(), ImportError> {
        for n in &b.nodes {
            self.node(n, block)?;
        }
        Ok(())
    }

    /// Converts a nested block into `block` of a region, ending it with `prim.Yield`.
    fn nested(
        &mut self,
        b: &TsBlock,
        block: BlockId,
        loc: &Location,
        line: usize,
    ) -> Result<(), ImportError> {
        self.block_body(b, block)?;
        let mut outs = Vec::new();
        for r in &b.returns {
            outs.push(self.value(r, line)?);
        }
        insert(
            &mut self.m,
            block,
            OperationState::new(dialect_prim::YIELD)
                .operands(outs)
                .loc(loc.clone()),
        );
        Ok(())
    }

    fn constant_attr(&self, n: &TsNode, ty: &Type) -> Result<Attribute, ImportError> {
        let value = n.attrs.iter().find(|(k, _)| k == "value").map(|(_, v)| v);
        let bad = |what: &str| {
            self.err(
                n.line,
                format!("constant {what} of type {ty} is not supported"),
            )
        };
        let scalar = |v: &TsAttr, t: &Type| -> Option<Attribute> {
            Some(match (t.pk(), v) {
                (PK::Int, TsAttr::Int(i)) => Attribute::Int(*i),
                (PK::Bool, TsAttr::Int(i)) => Attribute::Bool(*i != 0),
                (PK::Bool, TsAttr::Word(w)) if w == "True" || w == "False" => {
                    Attribute::Bool(w == "True")
                }
                (PK::Float, TsAttr::Float(f)) => Attribute::float(*f),
                (PK::Float, TsAttr::Int(i)) => Attribute::float(*i as f64),
                (PK::Str, TsAttr::Str(s)) => Attribute::str(s),
                (PK::Device, TsAttr::Str(s) | TsAttr::Word(s)) => {
                    dialect_prim::kinds::device(s.as_str().into())
                }
                _ => return None,
            })
        };
        match (value, ty.pk()) {
            (None, PK::None | PK::Optional(_)) => Ok(dialect_prim::kinds::none()),
            (Some(TsAttr::Word(w)), _) if w == "None" => Ok(dialect_prim::kinds::none()),
            (Some(TsAttr::List(items)), PK::List(e)) => Ok(Attribute::array(
                items
                    .iter()
                    .map(|i| scalar(i, e))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| bad("list"))?,
            )),
            (Some(TsAttr::Tensor(_)), _) => Err(bad("tensor")),
            (Some(v), _) => scalar(v, ty).ok_or_else(|| bad(&format!("{v:?}"))),
            (None, _) => Err(bad("without a value")),
        }
    }

    fn node(&mut self, n: &TsNode, block: BlockId) -> Result<(), ImportError> {
        let loc = n
            .loc
            .as_ref()
            .map(|l| Location::file(&l.file, l.line, l.col))
            .unwrap_or_default();
        let out_types: Vec<Type> = n
            .outputs
            .iter()
            .map(|(_, t)| self.ty(t, n.line))
            .collect::<Result<_, _>>()?;
        let mut inputs = Vec::new();
        for i in &n.inputs {
            inputs.push(self.value(i, n.line)?);
        }
        let in_types: Vec<Type> = inputs
            .iter()
            .map(|&v| self.m.value_type(v).clone())
            .collect();
        let mut regions = 0;
        let (name, results): (String, Vec<Type>) = match n.kind.as_str() {
            "prim::Constant" => {
                let [ty] = out_types.as_slice() else {
                    return Err(self.err(n.line, "prim::Constant has one output"));
                };
                let a = self.constant_attr(n, ty)?;
                let op = insert(
                    &mut self.m,
                    block,
                    OperationState::new(dialect_prim::CONSTANT)
                        .attr("value", a.clone())
                        .results([ty.clone()])
                        .loc(loc),
                );
                let v = self.m.results(op)[0];
                self.constants.insert(v, a);
                return self.define(&n.outputs[0].0, v, n.line);
            }
            "prim::If" => {
                if n.blocks.len() != 2 {
                    return Err(self.err(n.line, "prim::If needs two blocks"));
                }
                regions = 2;
                (dialect_prim::IF.into(), out_types.clone())
            }
            "prim::Loop" => {
                if n.blocks.len() != 1 {
                    return Err(self.err(n.line, "prim::Loop needs one block"));
                }
                regions = 1;
                (dialect_prim::LOOP.into(), out_types.clone())
            }
            "prim::ListConstruct" => {
                let elem_ok = |e: &Type| {
                    in_types
                        .iter()
                        .all(|t| t == e || matches!(e.pk(), PK::Optional(x) if x == t))
                };
                let ty = match out_types.as_slice() {
                    [t] if matches!(t.pk(), PK::List(e) if elem_ok(e)) => t.clone(),
                    _ => dialect_prim::kinds::list(if in_types.is_empty() {
                        dialect_prim::kinds::any_type()
                    } else {
                        join_types(&in_types)
                    }),
                };
                let ty = match ty.pk() {
                    PK::List(e) if !elem_ok(e) => dialect_prim::kinds::list(dialect_prim::kinds::any_type()),
                    _ => ty,
                };
                (dialect_prim::LIST_CONSTRUCT.into(), vec![ty])
            }
            "prim::ListUnpack" => {
                let elem = match in_types.as_slice() {
                    [t] => match t.pk() {
                        PK::List(e) => e.clone(),
                        _ => return Err(self.err(n.line, format!("prim::ListUnpack of a {t}"))),
                    },
                    _ => return Err(self.err(n.line, "prim::ListUnpack takes one list")),
                };
                (
                    dialect_prim::LIST_UNPACK.into(),
                    vec![elem; out_types.len()],
                )
            }
            "prim::TupleConstruct" => (
                dialect_prim::TUPLE_CONSTRUCT.into(),
                vec![Type::tuple(in_types.clone())],
            ),
            "prim::TupleUnpack" => match in_types.first().map(dialect_prim::kinds::kind) {
                Some(PK::Tuple(items)) if inputs.len() == 1 => {
                    (dialect_prim::TUPLE_UNPACK.into(), items.to_vec())
                }
                _ => return Err(self.err(n.line, "prim::TupleUnpack takes one tuple")),
            },
            "prim::TupleIndex" => {
                let (Some(&t), Some(idx)) = (
                    inputs.first(),
                    inputs.get(1).and_then(|i| self.constants.get(i)),
                ) else {
                    return Err(self.err(n.line, "prim::TupleIndex needs a constant index"));
                };
                let Some(i) = idx.as_int() else {
                    return Err(self.err(n.line, "prim::TupleIndex needs an integer index"));
                };
                let elem = match self.m.value_type(t).pk() {
                    PK::Tuple(items) => {
                        usize::try_from(i).ok().and_then(|i| items.get(i).cloned())
                    }
                    _ => None,
                }
                .ok_or_else(|| self.err(n.line, format!("tuple index {i} out of range")))?;
                let op = insert(
                    &mut self.m,
                    block,
                    OperationState::new(dialect_prim::TUPLE_INDEX)
                        .operands([t])
                        .attr("index", Attribute::Int(i))
                        .results([elem])
                        .loc(loc),
                );
                let v = self.m.results(op)[0];
                return match n.outputs.first() {
                    Some((name, _)) => self.define(name, v, n.line),
                    None => Ok(()),
                };
            }
            "prim::Uninitialized" => (dialect_prim::UNINITIALIZED.into(), out_types.clone()),
            "prim::RaiseException" => (dialect_prim::RAISE_EXCEPTION.into(), Vec::new()),
            kind => match kind.strip_prefix("aten::") {
                Some(op) => {
                    let schema = match crate::overload::resolve(op, &in_types, &[], true).map(|(s, _)| s) {
                        Ok(s) => s,
                        Err(e) if e.starts_with("unknown") => {
                            let node = n
                                .outputs
                                .first()
                                .map(|(o, _)| format!("%{o}"))
                                .unwrap_or_else(|| format!("line {}", n.line));
                            return Err(ImportError::UnknownTarget {
                                path: self.path.to_path_buf(),
                                node,
                                target: kind.into(),
                            });
                        }
                        Err(e) => return Err(self.err(n.line, e)),
                    };
                    let name = aten_op_name(&schema.name, &schema.overload);
                    if self.ctx.op_def(&name).is_none() {
                        return Err(self.err(n.line, format!("`{name}` is not registered")));
                    }
                    (name, out_types.clone())
                }
                None => {
                    let node = n
                        .outputs
                        .first()
                        .map(|(o, _)| format!("%{o}"))
                        .unwrap_or_else(|| format!("line {}", n.line));
                    return Err(ImportError::UnknownTarget {
                        path: self.path.to_path_buf(),
                        node,
                        target: kind.into(),
                    });
                }
            },
        };
        if results.len() != n.outputs.len() {
            return Err(self.err(
                n.line,
                format!(
                    "`{}` gives {} results but {} are named",
                    n.kind,
                    results.len(),
                    n.outputs.len()
                ),
            ));
        }
        let op = insert(
            &mut self.m,
            block,
            OperationState::new(&name)
                .operands(inputs)
                .results(results)
                .regions(regions)
                .loc(loc.clone()),
        );
        for (i, b) in n.blocks.iter().enumerate().take(regions) {
            let region = self.m.regions(op)[i];
            let param_types: Vec<Type> = b
                .params
                .iter()
                .map(|(_, t)| self.ty(t, n.line))
                .collect::<Result<_, _>>()?;
            let blk = self.m.append_block(region, &param_types);
            for (j, (p, _)) in b.params.iter().enumerate() {
                let v = self.m.block_args(blk)[j];
                self.define(p, v, n.line)?;
            }
            self.nested(b, blk, &loc, n.line)?;
        }
        let rs = self.m.results(op).to_vec();
        for ((o, _), v) in n.outputs.iter().zip(rs) {
            self.define(o, v, n.line)?;
        }
        Ok(())
    }
}
