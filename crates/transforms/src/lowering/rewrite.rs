//! A builder of aten ops for lowerings: schema-positional arguments, inferred result types.

use dialect_aten::op;
use dialect_aten::infer::{Args, Ranges, infer_op_with, refine};
use ir::schema::SchemaType;
use ir::{Attribute, Context, DType, Dim, InsertPoint, Location, Module, OpId, OpRef, OperationState, TensorType, Type, ValueId};

/// One argument of an op being built, in schema order.
#[derive(Clone, Debug)]
pub enum Arg {
    /// A value passed as an operand.
    V(ValueId),
    /// A constant passed as the attribute named after the schema argument.
    A(Attribute),
    /// The schema default.
    Default,
}

impl From<ValueId> for Arg {
    fn from(v: ValueId) -> Arg {
        Arg::V(v)
    }
}

/// The arguments of `op` in its schema's order, as the builder takes them: each operand and
/// each constant attribute where the schema puts it (what an op rebuilt with other operands,
/// or under another name, is called with).
pub fn schema_args(ctx: &Context, m: &Module, op: OpId) -> Result<Vec<Arg>, String> {
    let schema = ctx.op_def(m.op_name(op)).and_then(|d| d.schema.clone()).ok_or("no schema")?;
    let operands = m.operands(op);
    dialect_aten::signature::bind_args(&schema, m, op)
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|s| match s {
            dialect_aten::signature::ArgSource::Operand(i) => {
                operands.get(i).copied().map(Arg::V).ok_or_else(|| format!("operand {i} is missing"))
            }
            dialect_aten::signature::ArgSource::Const(a) => Ok(Arg::A(a)),
        })
        .collect()
}

/// One size of a size list: a constant, or dimension `dim` of a tensor value.
#[derive(Clone, Debug)]
pub enum Size {
    Static(i64),
    Of(ValueId, usize),
}

/// Creates ops before an anchor op, giving each the types shape inference finds.
pub struct OpBuilder<'a> {
    pub ctx: &'a Context,
    pub m: &'a mut Module,
    pub ranges: &'a Ranges,
    ip: InsertPoint,
    loc: Location,
    /// The ops created so far.
    pub created: Vec<OpId>,
}

fn default_result_type(t: &SchemaType) -> Type {
    match t.unwrap_optional() {
        SchemaType::Tensor => Type::unknown_tensor(),
        SchemaType::Int | SchemaType::SymInt => Type::int(),
        SchemaType::Float | SchemaType::SymFloat => Type::float(),
        SchemaType::Bool | SchemaType::SymBool => Type::bool(),
        SchemaType::List { elem, .. } => dialect_prim::kinds::list(default_result_type(elem)),
        _ => dialect_prim::kinds::any_type(),
    }
}

impl<'a> OpBuilder<'a> {
    /// A builder inserting before `anchor`, with its location.
    pub fn before(ctx: &'a Context, m: &'a mut Module, ranges: &'a Ranges, anchor: OpId) -> OpBuilder<'a> {
        let loc = m.loc(anchor).clone();
        OpBuilder { ctx, m, ranges, ip: InsertPoint::Before(anchor), loc, created: Vec::new() }
    }

    pub fn module(&self) -> &Module {
        self.m
    }

    pub fn ctx(&self) -> &Context {
        self.ctx
    }

    /// The arguments of `op` bound to its schema; `f` reads what it needs.
    pub fn with_args<T>(&self, op: OpId, f: impl FnOnce(&Args) -> T) -> Result<T, String> {
        let schema = self
            .ctx
            .op_def(self.m.op_name(op))
            .and_then(|d| d.schema.clone())
            .ok_or_else(|| format!("'{}' has no schema", self.m.op_name(op)))?;
        let a = Args::bind(self.ctx, self.m, op, &schema)?;
        Ok(f(&a))
    }

    pub fn tensor(&self, v: ValueId) -> Option<TensorType> {
        self.m.value_type(v).as_tensor().cloned()
    }

    pub fn shape(&self, v: ValueId) -> Option<Vec<Dim>> {
        self.tensor(v).and_then(|t| t.shape)
    }

    pub fn rank(&self, v: ValueId) -> Option<usize> {
        self.shape(v).map(|s| s.len())
    }

    pub fn dtype(&self, v: ValueId) -> Option<DType> {
        self.tensor(v).and_then(|t| t.dtype)
    }

    fn insert(&mut self, st: OperationState) -> Result<OpId, String> {
        let op = self.m.create_op(st.loc(self.loc.clone()));
        self.m.insert_op(op, self.ip).map_err(|e| e.to_string())?;
        self.created.push(op);
        Ok(op)
    }

    /// Creates `name` (`aten.mm`, `edge.add.Tensor`) with schema-positional arguments and
    /// returns its results, typed by shape inference.
    pub fn call_n(&mut self, name: impl AsRef<str>, args: &[Arg]) -> Result<Vec<ValueId>, String> {
        let name = name.as_ref();
        let schema = self.ctx.op_def(name).and_then(|d| d.schema.clone()).ok_or_else(|| format!("unknown op '{name}'"))?;
        if args.len() > schema.args.len() {
            return Err(format!("'{name}' takes {} argument(s), {} given", schema.args.len(), args.len()));
        }
        let last_value = args.iter().rposition(|a| matches!(a, Arg::V(_)));
        let mut st = OperationState::new(name);
        for (i, (a, sa)) in args.iter().zip(&schema.args).enumerate() {
            match a {
                Arg::V(v) => st = st.operands([*v]),
                Arg::A(attr) => st = st.attr(&sa.name, attr.clone()),
                Arg::Default if last_value.is_some_and(|l| i < l) => {
                    let d = match &sa.default {
                        Some(d) => dialect_aten::default_attribute(d, &sa.ty).ok_or_else(|| format!("no default for '{}'", sa.name))?,
                        None => dialect_prim::kinds::none(),
                    };
                    st = st.attr(&sa.name, d);
                }
                Arg::Default => {}
            }
        }
        st = st.results(schema.returns.iter().map(|r| default_result_type(&r.ty)));
        let op = self.insert(st)?;
        match infer_op_with(self.ctx, self.m, op, self.ranges) {
            Ok(Some(types)) => {
                for (&r, t) in self.m.results(op).to_vec().iter().zip(types) {
                    if let Ok(nt) = refine(self.m.value_type(r), &t) {
                        self.m.set_value_type(r, nt);
                    }
                }
            }
            Ok(None) => {}
            Err(e) => return Err(format!("'{name}': {e}")),
        }
        Ok(self.m.results(op).to_vec())
    }

    /// [`OpBuilder::call_n`] for a single-result op (`aten.` is prefixed when missing).
    pub fn call(&mut self, name: impl AsRef<str>, args: &[Arg]) -> Result<ValueId, String> {
        let name = name.as_ref();
        let full = if name.contains('.') && self.ctx.op_def(name).is_some() { name.to_string() } else { format!("aten.{name}") };
        self.call_n(&full, args)?.first().copied().ok_or_else(|| format!("'{full}' has no result"))
    }

    /// A `prim.Constant` of an int, float or bool.
    pub fn constant(&mut self, a: Attribute) -> Result<ValueId, String> {
        let ty = dialect_prim::kinds::constant_type(&a).ok_or("constant has no value type")?;
        let op = self.insert(OperationState::new(dialect_prim::CONSTANT).attr("value", a).results([ty]))?;
        Ok(self.m.results(op)[0])
    }

    /// A `prim.ListConstruct` of `elems`: a list of their type, or of `!prim.any` when they differ
    /// (tensors of different shapes).
    pub fn list(&mut self, elems: Vec<ValueId>) -> Result<ValueId, String> {
        let mut elem = elems.first().map(|&e| self.m.value_type(e).clone()).unwrap_or_else(Type::int);
        if elems.iter().any(|&e| *self.m.value_type(e) != elem) {
            elem = dialect_prim::kinds::any_type();
        }
        let op = self.insert(OperationState::new(dialect_prim::LIST_CONSTRUCT).operands(elems).results([dialect_prim::kinds::list(elem)]))?;
        Ok(self.m.results(op)[0])
    }

    /// The `n` elements of the list `list`, by a `prim.ListUnpack` (each of the list's element type).
    pub fn unpack(&mut self, list: ValueId, n: usize) -> Result<Vec<ValueId>, String> {
        let elem = dialect_prim::kinds::as_list(self.m.value_type(list)).cloned().ok_or("not a list")?;
        let st = OperationState::new(dialect_prim::LIST_UNPACK).operands([list]).results(vec![elem; n]);
        let op = self.insert(st)?;
        Ok(self.m.results(op).to_vec())
    }

    /// A size-list argument: an int array attribute when every size is static, else a
    /// `prim.ListConstruct` of constants and `aten.sym_size.int` values.
    pub fn sizes(&mut self, sizes: &[Size]) -> Result<Arg, String> {
        let resolved: Vec<Size> = sizes
            .iter()
            .map(|s| match s {
                Size::Of(v, i) => match self.shape(*v).and_then(|sh| sh.get(*i).cloned()) {
                    Some(Dim::Static(n)) => Size::Static(n),
                    _ => s.clone(),
                },
                other => other.clone(),
            })
            .collect();
        if resolved.iter().all(|s| matches!(s, Size::Static(_))) {
            let v: Vec<i64> = resolved.iter().map(|s| if let Size::Static(n) = s { *n } else { 0 }).collect();
            return Ok(Arg::A(Attribute::ints(&v)));
        }
        let mut elems = Vec::new();
        for s in resolved {
            elems.push(match s {
                Size::Static(n) => self.constant(Attribute::Int(n))?,
                Size::Of(v, i) => self.call(op::SYM_SIZE_INT, &[Arg::V(v), Arg::A(Attribute::Int(i as i64))])?,
            });
        }
        let op = self.insert(OperationState::new(dialect_prim::LIST_CONSTRUCT).operands(elems).results([dialect_prim::kinds::list(Type::int())]))?;
        Ok(Arg::V(self.m.results(op)[0]))
    }

    /// The sizes of `v` as [`Size`]s (static where known).
    pub fn sizes_of(&self, v: ValueId) -> Option<Vec<Size>> {
        let sh = self.shape(v)?;
        Some(sh.iter().enumerate().map(|(i, d)| d.as_static().map(Size::Static).unwrap_or(Size::Of(v, i))).collect())
    }
}

/// Views that keep their input's layout (a squeezed permute is still strided).
const LAYOUT_KEEPING_VIEWS: &[OpRef] = &[op::SQUEEZE, op::UNSQUEEZE, op::VIEW, op::ALIAS, op::DETACH, op::_UNSAFE_VIEW];

/// Views whose result may be strided however their input is laid out.
const STRIDED_VIEWS: &[OpRef] = &[
    op::PERMUTE,
    op::TRANSPOSE_INT,
    op::T,
    op::EXPAND,
    op::SLICE_TENSOR,
    op::SELECT_INT,
    op::AS_STRIDED,
    op::DIAGONAL,
    op::NARROW,
    op::SPLIT_TENSOR,
    op::SPLIT_WITH_SIZES,
    op::CHUNK,
    op::UNBIND_INT,
    op::MOVEDIM_INT,
    op::SWAPAXES,
    op::NUMPY_T,
    op::MT,
    op::EXPAND_AS,
    op::UNFOLD,
];

/// Whether the op `name` (or the ATen op it mirrors) is a view of [`LAYOUT_KEEPING_VIEWS`]
/// (`Some(true)`) or of [`STRIDED_VIEWS`] (`Some(false)`), any overload of them.
fn view_layout(ctx: &Context, name: &str) -> Option<bool> {
    static MAP: std::sync::OnceLock<std::collections::HashMap<&'static str, bool>> = std::sync::OnceLock::new();
    let map = MAP.get_or_init(|| {
        let keeping = dialect_aten::family::members(LAYOUT_KEEPING_VIEWS).into_iter().map(|o| (o.name(), true));
        let strided = dialect_aten::family::members(STRIDED_VIEWS).into_iter().map(|o| (o.name(), false));
        keeping.chain(strided).collect()
    });
    map.get(ctx.mirrored(name)).copied()
}

/// Whether a value is known to be laid out contiguously (so `view` applies to it directly).
pub fn is_contiguous_producer(ctx: &Context, m: &Module, v: ValueId) -> bool {
    match m.defining_op(v) {
        // A function's arguments are taken to be contiguous; a value carried around a loop (an
        // argument of its body) may be a view.
        None => m.value_block(v).and_then(|b| m.block_parent_op(b)).is_none_or(|o| m.op_name(o) == ir::builtin::FUNC),
        Some(d) => {
            let name = m.op_name(d);
            // Control flow returns whatever its regions yield, views included.
            if matches!(name, dialect_prim::IF | dialect_prim::LOOP) {
                return false;
            }
            match view_layout(ctx, name) {
                Some(true) => m.operands(d).first().is_none_or(|&x| is_contiguous_producer(ctx, m, x)),
                Some(false) => false,
                None => name != dialect_prim::LIST_UNPACK,
            }
        }
    }
}
