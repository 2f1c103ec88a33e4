//! Conversion of the reader models into verified IR, and the pieces the three converters share.
//!
//! Each converter walks its format's graph in order and emits ops at the end of a block. Calls
//! of ATen operators go through [`emit_aten`], which decides for every schema argument whether
//! it becomes an operand or an attribute so that `dialect_aten::bind_args` maps them back
//! exactly.

pub mod fx;
pub mod pt2;
mod sym;
pub mod torchscript;

use dialect_aten::op;
use std::sync::Arc;

use ir::schema::{FunctionSchema, SchemaType};
use ir::{
    Attribute, BlockId, Context, DType, Location, Module, OpId, OperationState, TensorType, Type,
    TypeKind, ValueId,
};

use crate::pt2::schema::{Layout, MemoryFormat, ScalarType};

pub use sym::srepr_to_text;

/// The value of one operator argument before it is emitted.
#[derive(Clone, Debug)]
pub(crate) enum Arg {
    /// An SSA value (a tensor, a SymInt, a list built earlier).
    Value(ValueId),
    /// A constant.
    Const(Attribute),
    /// A list whose elements may be values.
    List(Vec<Arg>),
}

/// Creates an op at the end of `block`.
pub(crate) fn insert(m: &mut Module, block: BlockId, st: OperationState) -> OpId {
    let op = m.create_op(st);
    // A fresh op appended to an existing block cannot fail.
    let _ = m.insert_op(op, ir::InsertPoint::End(block));
    op
}

/// Checks that the context knows the dialects the importers emit.
pub(crate) fn check_context(ctx: &Context) -> Result<(), String> {
    for (op, dialect) in [
        (dialect_prim::CONSTANT, "prim"),
        (op::ADD_TENSOR.name(), "aten"),
    ] {
        if ctx.op_def(op).is_none() {
            return Err(format!(
                "the context does not register the `{dialect}` dialect"
            ));
        }
    }
    Ok(())
}

/// The IR op name of an ATen overload: `aten.add.Tensor`, or `aten.relu` for `default`.
pub(crate) fn aten_op_name(name: &str, overload: &str) -> String {
    if overload.is_empty() || overload == "default" {
        format!("aten.{name}")
    } else {
        format!("aten.{name}.{overload}")
    }
}

/// The op name of a `torch.ops.<namespace>.<op>.<overload>` target (`torch.ops.aten.add.Tensor`
/// → `aten.add.Tensor`, `torch.ops.mylib.foo.default` → `mylib.foo`); `None` for other targets
/// and for higher-order ops, which are not operators with a schema.
pub(crate) fn target_op_name(target: &str) -> Option<String> {
    let rest = target.strip_prefix("torch.ops.")?;
    let (ns, rest) = rest.split_once('.')?;
    if ns == "higher_order" || ns.is_empty() {
        return None;
    }
    let (op, overload) = rest.rsplit_once('.').unwrap_or((rest, "default"));
    Some(if overload.is_empty() || overload == "default" { format!("{ns}.{op}") } else { format!("{ns}.{op}.{overload}") })
}

/// The schema of a registered op (ATen, or an op a library declared).
pub(crate) fn aten_schema(ctx: &Context, op_name: &str) -> Option<Arc<FunctionSchema>> {
    ctx.op_def(op_name).and_then(|d| d.schema.clone())
}

/// The IR dtype of an export `ScalarType`.
pub(crate) fn dtype_of(st: ScalarType) -> Option<DType> {
    Some(match st {
        ScalarType::Uint8 => DType::U8,
        ScalarType::Int8 => DType::I8,
        ScalarType::Int16 => DType::I16,
        ScalarType::Int32 => DType::I32,
        ScalarType::Int64 => DType::I64,
        ScalarType::Float16 => DType::F16,
        ScalarType::Float32 => DType::F32,
        ScalarType::Float64 => DType::F64,
        ScalarType::Bool => DType::Bool,
        ScalarType::BFloat16 => DType::BF16,
        ScalarType::ComplexFloat => DType::C64,
        ScalarType::ComplexDouble => DType::C128,
        _ => return None,
    })
}

/// c10's `Layout` code (what the aten dialect's defaults use).
pub(crate) fn layout_code(l: Layout) -> i64 {
    match l {
        Layout::Strided | Layout::Unknown => 0,
        Layout::SparseCoo => 1,
        Layout::SparseCsr => 2,
        Layout::Mkldnn => 3,
        Layout::SparseCsc => 4,
        Layout::SparseBsr => 5,
        Layout::SparseBsc => 6,
    }
}

/// c10's `MemoryFormat` code (what the aten dialect's defaults use).
pub(crate) fn memory_format_code(f: MemoryFormat) -> i64 {
    match f {
        MemoryFormat::ContiguousFormat | MemoryFormat::Unknown => 0,
        MemoryFormat::PreserveFormat => 1,
        MemoryFormat::ChannelsLast => 2,
        MemoryFormat::ChannelsLast3d => 3,
    }
}

/// `#prim.device<"cpu">`, `#prim.device<"cuda:0">`.
pub(crate) fn device_attr(kind: &str, index: Option<i64>) -> Attribute {
    match index {
        Some(i) => dialect_prim::kinds::device(&format!("{kind}:{i}")),
        None => dialect_prim::kinds::device(kind),
    }
}

/// The type of a value of schema type `t` when nothing more is known.
pub(crate) fn type_of_schema(t: &SchemaType) -> Type {
    match t {
        SchemaType::Tensor => Type::unknown_tensor(),
        SchemaType::Int
        | SchemaType::SymInt
        | SchemaType::ScalarType
        | SchemaType::Layout
        | SchemaType::MemoryFormat => Type::int(),
        SchemaType::Float | SchemaType::SymFloat => Type::float(),
        SchemaType::Bool | SchemaType::SymBool => Type::bool(),
        SchemaType::Str => dialect_prim::kinds::str_type(),
        SchemaType::Device => dialect_prim::kinds::device_type(),
        SchemaType::NoneType => Type::none(),
        SchemaType::List { elem, .. } => dialect_prim::kinds::list(type_of_schema(elem)),
        SchemaType::Optional(e) => dialect_prim::kinds::optional(type_of_schema(e)),
        SchemaType::Tuple(items) => Type::tuple(items.iter().map(type_of_schema).collect()),
        _ => dialect_prim::kinds::any_type(),
    }
}

/// The most precise type that every one of `types` has: itself when all agree; otherwise a
/// tensor type keeping what they share (dtype, rank, equal dims), or `!prim.any`.
pub(crate) fn join_types(types: &[Type]) -> Type {
    let Some(first) = types.first() else {
        return Type::unknown_tensor();
    };
    if types.iter().all(|t| t == first) {
        return first.clone();
    }
    let tensors: Option<Vec<&TensorType>> = types.iter().map(Type::as_tensor).collect();
    let Some(tensors) = tensors else {
        return dialect_prim::kinds::any_type();
    };
    let dtype = tensors[0]
        .dtype
        .filter(|d| tensors.iter().all(|t| t.dtype == Some(*d)));
    let shape = match &tensors[0].shape {
        Some(s0) if tensors.iter().all(|t| t.rank() == Some(s0.len())) => Some(
            (0..s0.len())
                .map(|i| {
                    let d = &s0[i];
                    if tensors
                        .iter()
                        .all(|t| t.shape.as_ref().is_some_and(|s| &s[i] == d))
                    {
                        d.clone()
                    } else {
                        ir::Dim::Unknown
                    }
                })
                .collect(),
        ),
        _ => None,
    };
    Type::tensor_of(TensorType { dtype, shape })
}

/// The result type of `prim.Constant` holding `a`.
pub(crate) fn const_type(a: &Attribute) -> Type {
    match a {
        Attribute::Array(items) => {
            let elems: Vec<Type> = items.iter().map(const_type).collect();
            if elems.is_empty() {
                dialect_prim::kinds::list(Type::int())
            } else {
                dialect_prim::kinds::list(join_types(&elems))
            }
        }
        other => dialect_prim::kinds::constant_type(other).unwrap_or_else(dialect_prim::kinds::any_type),
    }
}

/// `prim.Constant` of `a`.
pub(crate) fn constant(m: &mut Module, block: BlockId, a: Attribute, loc: &Location) -> ValueId {
    let ty = const_type(&a);
    let op = insert(
        m,
        block,
        OperationState::new(dialect_prim::CONSTANT)
            .attr("value", a)
            .results([ty])
            .loc(loc.clone()),
    );
    m.results(op)[0]
}

/// `prim.ListConstruct` of `elems`; the element type is their common type (`default` when empty).
pub(crate) fn list_construct(
    m: &mut Module,
    block: BlockId,
    elems: &[ValueId],
    default: Type,
    loc: &Location,
) -> ValueId {
    let types: Vec<Type> = elems.iter().map(|&v| m.value_type(v).clone()).collect();
    let elem = if types.is_empty() {
        default
    } else if types.iter().all(|t| *t == types[0]) {
        types[0].clone()
    } else {
        dialect_prim::kinds::any_type()
    };
    let op = insert(
        m,
        block,
        OperationState::new(dialect_prim::LIST_CONSTRUCT)
            .operands(elems.iter().copied())
            .results([dialect_prim::kinds::list(elem)])
            .loc(loc.clone()),
    );
    m.results(op)[0]
}

/// A 0-dim tensor holding a scalar, as PyTorch wraps a number passed for a `Tensor` argument:
/// `aten.scalar_tensor` with dtype `i64` for ints, `f64` for floats, `i1` for bools.
pub(crate) fn scalar_tensor(
    m: &mut Module,
    block: BlockId,
    s: Arg,
    loc: &Location,
) -> Result<ValueId, String> {
    let (dtype, st) = match &s {
        Arg::Value(v) => {
            let d = match m.value_type(*v).kind() {
                TypeKind::Int => DType::I64,
                TypeKind::Float => DType::F64,
                TypeKind::Bool => DType::Bool,
                _ => {
                    return Err(format!(
                        "a value of type {} cannot stand for a tensor",
                        m.value_type(*v)
                    ));
                }
            };
            (d, OperationState::new(op::SCALAR_TENSOR).operands([*v]))
        }
        Arg::Const(a) => {
            let d = match a {
                Attribute::Int(_) => DType::I64,
                Attribute::Float(_) => DType::F64,
                Attribute::Bool(_) => DType::Bool,
                other => {
                    return Err(format!(
                        "a {} constant cannot stand for a tensor",
                        other.kind_name()
                    ));
                }
            };
            (
                d,
                OperationState::new(op::SCALAR_TENSOR).attr("s", a.clone()),
            )
        }
        Arg::List(_) => return Err("a list cannot stand for a tensor".into()),
    };
    let st = st
        .attr("dtype", dialect_prim::kinds::dtype(dtype))
        .results([Type::tensor(dtype, &[])])
        .loc(loc.clone());
    let op = insert(m, block, st);
    Ok(m.results(op)[0])
}

/// Whether schema type `t` is a (possibly optional) list whose elements hold tensors.
fn is_tensor_list(t: &SchemaType) -> bool {
    matches!(t.unwrap_optional(), SchemaType::List { elem, .. } if elem.contains_tensor())
}

/// Whether a list of `len` elements may be an attribute for schema type `t` (`int[2]` takes 2 or 1).
fn fits_fixed_size(t: &SchemaType, len: usize) -> bool {
    match t.unwrap_optional() {
        SchemaType::List { size: Some(n), .. } => len == *n || len == 1,
        _ => true,
    }
}

/// Turns an argument into one value (materializing constants and lists).
fn materialize(
    m: &mut Module,
    block: BlockId,
    a: Arg,
    ty: &SchemaType,
    loc: &Location,
) -> Result<ValueId, String> {
    match a {
        Arg::Value(v) => {
            if matches!(ty.unwrap_optional(), SchemaType::Tensor)
                && !m.value_type(v).is_tensor()
                && !matches!(m.value_type(v).kind(), TypeKind::None)
            {
                return scalar_tensor(m, block, Arg::Value(v), loc);
            }
            Ok(v)
        }
        Arg::Const(Attribute::Array(items)) if is_tensor_list(ty) => materialize(
            m,
            block,
            Arg::List(items.iter().cloned().map(Arg::Const).collect()),
            ty,
            loc,
        ),
        Arg::Const(c) => {
            if matches!(ty.unwrap_optional(), SchemaType::Tensor) && c != dialect_prim::kinds::none() {
                return scalar_tensor(m, block, Arg::Const(c), loc);
            }
            Ok(constant(m, block, c, loc))
        }
        Arg::List(items) => {
            let elem_ty = match ty.unwrap_optional() {
                SchemaType::List { elem, .. } => elem.as_ref().clone(),
                _ => SchemaType::Any,
            };
            let mut vals = Vec::with_capacity(items.len());
            for i in items {
                vals.push(materialize(m, block, i, &elem_ty, loc)?);
            }
            Ok(list_construct(
                m,
                block,
                &vals,
                type_of_schema(elem_ty.unwrap_optional()),
                loc,
            ))
        }
    }
}

/// How one schema argument is emitted.
enum Emit {
    Operand(ValueId),
    Attr(Attribute),
    Omit,
}

/// Emits a call of the aten op `op_name` with `args` given per schema argument (`None` when
/// omitted). Tensors and values become operands, constants become attributes named after the
/// argument, lists holding values become `prim.ListConstruct` operands; an omitted argument
/// before an operand is given its default as an attribute so that operands bind in order.
#[allow(clippy::too_many_arguments)]
pub(crate) fn emit_aten(
    m: &mut Module,
    block: BlockId,
    op_name: &str,
    schema: &FunctionSchema,
    args: Vec<Option<Arg>>,
    results: Vec<Type>,
    loc: &Location,
    metadata: Vec<(&str, Attribute)>,
) -> Result<OpId, String> {
    if args.len() > schema.args.len() {
        return Err(format!(
            "{} argument(s) given but `{}` takes {}",
            args.len(),
            schema.qualified_name(),
            schema.args.len()
        ));
    }
    // A number passed for a `Tensor` argument is a "wrapped number" in PyTorch: it takes part in
    // type promotion as a Python scalar, not as a 0-dim tensor. The sibling overload taking a
    // `Scalar` there (`mul.Tensor` → `mul.Scalar`) has exactly those semantics, so use it.
    if let Some(sibling) = scalar_overload(m, schema, &args) {
        let name = sibling.op_name();
        return emit_aten(m, block, &name, sibling, args, results, loc, metadata);
    }
    let mut emits = Vec::with_capacity(schema.args.len());
    for (i, sarg) in schema.args.iter().enumerate() {
        let given = args.get(i).cloned().flatten();
        let e = match given {
            None => Emit::Omit,
            // The aten verifier holds `int[N]` attributes to N (or 1) elements, while PyTorch
            // takes any length there; other lengths travel as a list operand.
            Some(Arg::Const(Attribute::Array(items)))
                if !fits_fixed_size(&sarg.ty, items.len()) =>
            {
                Emit::Operand(
                    materialize(
                        m,
                        block,
                        Arg::List(items.iter().cloned().map(Arg::Const).collect()),
                        &sarg.ty,
                        loc,
                    )
                    .map_err(|e| format!("argument `{}`: {e}", sarg.name))?,
                )
            }
            Some(Arg::Const(c))
                if !matches!(sarg.ty.unwrap_optional(), SchemaType::Tensor)
                    && !is_tensor_list(&sarg.ty) =>
            {
                Emit::Attr(c)
            }
            Some(Arg::Const(c)) if dialect_prim::kinds::is_none(&c) => Emit::Attr(c),
            Some(Arg::List(items))
                if !is_tensor_list(&sarg.ty)
                    && fits_fixed_size(&sarg.ty, items.len())
                    && items.iter().all(|a| matches!(a, Arg::Const(_))) =>
            {
                Emit::Attr(Attribute::array(
                    items
                        .into_iter()
                        .filter_map(|a| if let Arg::Const(c) = a { Some(c) } else { None })
                        .collect(),
                ))
            }
            Some(a) => Emit::Operand(
                materialize(m, block, a, &sarg.ty, loc)
                    .map_err(|e| format!("argument `{}`: {e}", sarg.name))?,
            ),
        };
        emits.push(e);
    }
    // A default the aten verifier would reject (`int[2] stride=[]`) is passed explicitly.
    for (sarg, e) in schema.args.iter().zip(emits.iter_mut()) {
        if let (Emit::Omit, Some(d)) = (&*e, &sarg.default)
            && let Some(Attribute::Array(items)) = dialect_aten::default_attribute(d, &sarg.ty)
            && !fits_fixed_size(&sarg.ty, items.len())
        {
            let list = Arg::List(items.iter().cloned().map(Arg::Const).collect());
            *e = Emit::Operand(materialize(m, block, list, &sarg.ty, loc)?);
        }
    }
    let last_operand = emits.iter().rposition(|e| matches!(e, Emit::Operand(_)));
    let mut st = OperationState::new(op_name)
        .results(results)
        .loc(loc.clone());
    for (i, (sarg, e)) in schema.args.iter().zip(emits).enumerate() {
        match e {
            Emit::Operand(v) => st = st.operands([v]),
            Emit::Attr(a) => st = st.attr(&sarg.name, a),
            Emit::Omit if last_operand.is_some_and(|l| i < l) => {
                let a = match &sarg.default {
                    Some(d) => dialect_aten::default_attribute(d, &sarg.ty).ok_or_else(|| {
                        format!("default of argument `{}` cannot be represented", sarg.name)
                    })?,
                    None if matches!(sarg.ty, SchemaType::Optional(_)) => dialect_prim::kinds::none(),
                    None => return Err(format!("argument `{}` is missing", sarg.name)),
                };
                st = st.attr(&sarg.name, a);
            }
            Emit::Omit => {
                if sarg.default.is_none() && !matches!(sarg.ty, SchemaType::Optional(_)) {
                    return Err(format!("argument `{}` is missing", sarg.name));
                }
            }
        }
    }
    for (k, v) in metadata {
        st = st.attr(k, v);
    }
    Ok(insert(m, block, st))
}

/// The overload of `schema`'s op that takes `Scalar` wherever `args` pass a number for a
/// `Tensor` argument, with every other argument and the returns unchanged.
fn scalar_overload(
    m: &Module,
    schema: &FunctionSchema,
    args: &[Option<Arg>],
) -> Option<&'static FunctionSchema> {
    let is_number = |a: &Arg| match a {
        Arg::Const(c) => matches!(
            c,
            Attribute::Int(_) | Attribute::Float(_) | Attribute::Bool(_)
        ),
        Arg::Value(v) => matches!(
            m.value_type(*v).kind(),
            TypeKind::Int | TypeKind::Float | TypeKind::Bool
        ),
        Arg::List(_) => false,
    };
    let numbers: Vec<usize> = schema
        .args
        .iter()
        .zip(args)
        .enumerate()
        .filter(|(_, (sa, a))| sa.ty == SchemaType::Tensor && a.as_ref().is_some_and(is_number))
        .map(|(i, _)| i)
        .collect();
    if numbers.is_empty() {
        return None;
    }
    dialect_aten::schemas().iter().find(|s| {
        s.name == schema.name
            && s.namespace == schema.namespace
            && s.overload != schema.overload
            && s.args.len() == schema.args.len()
            && s.returns.len() == schema.returns.len()
            && s.returns
                .iter()
                .zip(&schema.returns)
                .all(|(a, b)| a.ty == b.ty)
            && s.args
                .iter()
                .zip(&schema.args)
                .enumerate()
                .all(|(i, (a, b))| {
                    a.name == b.name
                        && if numbers.contains(&i) {
                            a.ty == SchemaType::Scalar
                        } else {
                            a.ty == b.ty
                        }
                })
    })
}

/// The prim op for a Python operator on SymInts (`operator.add`, `_operator.floordiv`,
/// `torch.sym_max`), as torch.export records them.
pub(crate) fn symint_op(target: &str) -> Option<&'static str> {
    if target == "torch.sym_max" {
        return Some(dialect_prim::MAX);
    }
    Some(
        match target
            .strip_prefix("_operator.")
            .or_else(|| target.strip_prefix("operator."))?
        {
            "add" => dialect_prim::ADD,
            "sub" => dialect_prim::SUB,
            "mul" => dialect_prim::MUL,
            "floordiv" => dialect_prim::FLOORDIV,
            "mod" => dialect_prim::MOD,
            "eq" => dialect_prim::EQ,
            "ne" => dialect_prim::NE,
            "lt" => dialect_prim::LT,
            "le" => dialect_prim::LE,
            "gt" => dialect_prim::GT,
            "ge" => dialect_prim::GE,
            _ => return None,
        },
    )
}

/// Ends a converted function: returns `results` and records its type and argument attributes.
pub(crate) fn finish_function(
    m: &mut Module,
    func: ir::OpId,
    entry: BlockId,
    arg_types: Vec<Type>,
    results: Vec<ValueId>,
    arg_attrs: Vec<Attribute>,
) {
    let result_types: Vec<Type> = results.iter().map(|&v| m.value_type(v).clone()).collect();
    insert(
        m,
        entry,
        OperationState::new(ir::builtin::RETURN).operands(results),
    );
    m.set_attr(
        func,
        ir::builtin::FUNCTION_TYPE,
        Attribute::Type(Type::function(arg_types, result_types)),
    );
    if !arg_attrs.is_empty() {
        m.set_attr(func, ir::builtin::ARG_ATTRS, Attribute::array(arg_attrs));
    }
}

/// The location of a node from its Python stack trace: `loc("node"("file.py":12:0))` naming the
/// node around the innermost frame outside PyTorch itself (the last frame when all are
/// PyTorch's), or just `loc("node")` without a trace.
pub(crate) fn trace_location(node: &str, stack_trace: Option<&str>) -> Location {
    let frames: Vec<(String, u32)> = stack_trace.map(parse_frames).unwrap_or_default();
    let user = frames
        .iter()
        .find(|(f, _)| is_user_file(f))
        .or_else(|| frames.last());
    let child = user.map(|(f, l)| Arc::new(Location::file(f, *l, 0)));
    if node.is_empty() {
        return child.map(|c| (*c).clone()).unwrap_or_default();
    }
    Location::Name {
        name: node.into(),
        child,
    }
}

/// Whether a frame's file is the user's code rather than PyTorch's or generated code.
fn is_user_file(f: &str) -> bool {
    !(f.starts_with('<')
        || f.starts_with("torch/")
        || f.contains("/torch/")
        || f.contains("site-packages/"))
}

/// `File "x.py", line 12, in f` frames of a Python traceback.
fn parse_frames(trace: &str) -> Vec<(String, u32)> {
    let mut out = Vec::new();
    for line in trace.lines() {
        let Some(rest) = line.trim_start().strip_prefix("File \"") else {
            continue;
        };
        let Some(end) = rest.find('"') else { continue };
        let file = &rest[..end];
        let after = &rest[end + 1..];
        let Some(num) = after
            .trim_start_matches(',')
            .trim_start()
            .strip_prefix("line ")
        else {
            continue;
        };
        let digits: String = num.chars().take_while(char::is_ascii_digit).collect();
        if let Ok(n) = digits.parse() {
            out.push((file.to_string(), n));
        }
    }
    out
}

/// Value names the printer keeps (`%x`, `%x.1`): a letter, `_`, `$`, `.` or `-` first.
pub(crate) fn printable_name(name: &str) -> Option<&str> {
    let mut chars = name.chars();
    let c0 = chars.next()?;
    ((c0.is_ascii_alphabetic() || matches!(c0, '_' | '$' | '.' | '-'))
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '.' | '-')))
    .then_some(name)
}

/// Sets the printed name of `v` when `name` is a valid one.
pub(crate) fn name_value(m: &mut Module, v: ValueId, name: &str) {
    if let Some(n) = printable_name(name) {
        m.set_value_name(v, Some(n));
    }
}

/// Verifies a converted module, describing the first problem.
pub(crate) fn verify_module(ctx: &Context, m: &Module) -> Result<(), String> {
    ir::verify(ctx, m).map_err(|d| d.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_traces_pick_user_frames() {
        let t = "File \"torch/nn/modules/linear.py\", line 134, in forward\n    x\n  File \"model.py\", line 20, in forward\n    y";
        assert_eq!(
            trace_location("", Some(t)),
            Location::file("model.py", 20, 0)
        );
        let t = "File \"fixture_models.py\", line 105, in forward\n  File \"<eval_with_key>.167\", line 10, in forward";
        assert_eq!(
            trace_location("", Some(t)),
            Location::file("fixture_models.py", 105, 0)
        );
        assert_eq!(trace_location("n", None), Location::name("n"));
    }

    #[test]
    fn joins_keep_what_types_share() {
        let a = Type::tensor(DType::F32, &[2, 4]);
        let b = Type::tensor(DType::F32, &[2, 3]);
        assert_eq!(join_types(&[a.clone(), b]).to_string(), "tensor<2x?xf32>");
        assert_eq!(join_types(&[a.clone(), a.clone()]), a);
        assert_eq!(join_types(&[a, Type::int()]), dialect_prim::kinds::any_type());
    }
}
