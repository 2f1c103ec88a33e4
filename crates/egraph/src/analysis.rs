//! The e-class analysis: each class's type (dtype and shape) and, when it is a constant, its
//! value. Constant folding happens here: a class whose operands are all constants gets the
//! folded constant as an extra e-node.

use crate::lang::{ANY_ATTRS, AttrIndex, Node, Scalar};
use egg::{Analysis, DidMerge, EGraph, Id};
use indexmap::IndexSet;
use ir::module::NamedAttr;
use dialect_aten::op;
use ir::{DType, Dim, OpRef, TensorType, Type, TypeKind};

/// The e-graph type used throughout this crate.
pub type Graph = EGraph<Node, Facts>;

/// What the analysis knows about one e-class.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Data {
    /// The type of the class's value, when known (always known for classes of the input IR).
    pub ty: Option<Type>,
    /// The value of every element, when the class is a splat constant.
    pub konst: Option<Scalar>,
}

/// The analysis: interned types and attribute sets referenced by e-nodes, and whether
/// constants are folded.
#[derive(Clone, Debug)]
pub struct Facts {
    /// Types of constants (`Node::Const::ty` indexes this set).
    pub types: IndexSet<Type>,
    /// Attribute sets of operations (`Node::Op::attrs` indexes this set; index 0 is the empty set).
    pub attrs: IndexSet<Vec<NamedAttr>>,
    /// Whether to fold operations over constants.
    pub fold: bool,
    /// Whether nothing in the function writes memory, so a value may be replaced by an alias
    /// of another (the `no-writes` condition of rule files).
    pub no_writes: bool,
}

impl Default for Facts {
    fn default() -> Self {
        Facts::new(true)
    }
}

impl Facts {
    pub fn new(fold: bool) -> Facts {
        let mut attrs = IndexSet::new();
        attrs.insert(Vec::new());
        Facts { types: IndexSet::new(), attrs, fold, no_writes: true }
    }

    /// Interns a type for a `Const` node.
    pub fn type_index(&mut self, ty: &Type) -> u32 {
        self.types.insert_full(ty.clone()).0 as u32
    }

    /// Interns an attribute set (sorted by name) for an `Op` node; `None` when the table is
    /// full (an [`AttrIndex`] per set, [`ANY_ATTRS`] excluded).
    pub fn attr_index(&mut self, attrs: Vec<NamedAttr>) -> Option<AttrIndex> {
        if let Some(i) = self.attrs.get_index_of(&attrs) {
            return AttrIndex::try_from(i).ok();
        }
        let i = AttrIndex::try_from(self.attrs.len()).ok().filter(|&i| i != ANY_ATTRS)?;
        self.attrs.insert(attrs);
        Some(i)
    }

    pub fn type_at(&self, i: u32) -> Option<&Type> {
        self.types.get_index(i as usize)
    }

    pub fn attrs_at(&self, i: AttrIndex) -> &[NamedAttr] {
        self.attrs.get_index(i as usize).map(Vec::as_slice).unwrap_or(&[])
    }
}

impl Analysis<Node> for Facts {
    type Data = Data;

    fn make(egraph: &mut Graph, enode: &Node, _id: Id) -> Data {
        match enode {
            Node::Const { ty, value } => Data { ty: egraph.analysis.type_at(*ty).cloned(), konst: Some(*value) },
            Node::Leaf(_) | Node::Proj { .. } => Data::default(),
            Node::Op { name, args, .. } => {
                // One class lookup per operand: its type and its constant together.
                let mut tys: smallvec::SmallVec<[Option<&Type>; 3]> = smallvec::SmallVec::new();
                let mut ks: smallvec::SmallVec<[Option<Scalar>; 3]> = smallvec::SmallVec::new();
                for a in args {
                    let d = &egraph[*a].data;
                    tys.push(d.ty.as_ref());
                    ks.push(d.konst);
                }
                let ty = infer_type(name.as_str(), &tys);
                let konst = match &ty {
                    Some(t) if egraph.analysis.fold && ks.iter().all(Option::is_some) => {
                        let ks: smallvec::SmallVec<[Scalar; 3]> = ks.into_iter().flatten().collect();
                        fold(name.as_str(), &ks, t)
                    }
                    _ => None,
                };
                Data { ty, konst }
            }
        }
    }

    fn merge(&mut self, a: &mut Data, b: Data) -> DidMerge {
        let mut changed_a = false;
        let mut b_has_more = false;
        match (&a.ty, b.ty) {
            (None, Some(t)) => {
                a.ty = Some(t);
                changed_a = true;
            }
            (Some(_), None) => b_has_more = true,
            _ => {}
        }
        match (a.konst, b.konst) {
            (None, Some(k)) => {
                a.konst = Some(k);
                changed_a = true;
            }
            (Some(_), None) => b_has_more = true,
            // Two different constants can only meet under rules that are not exact (fast
            // math); the first one is kept.
            _ => {}
        }
        DidMerge(changed_a, b_has_more)
    }

    fn modify(egraph: &mut Graph, id: Id) {
        let data = &egraph[id].data;
        let (Some(ty), Some(value)) = (data.ty.clone(), data.konst) else { return };
        if egraph[id].nodes.iter().any(|n| matches!(n, Node::Const { .. })) {
            return;
        }
        let ty = egraph.analysis.type_index(&ty);
        let c = egraph.add(Node::Const { ty, value });
        egraph.union(id, c);
    }
}

/// Unary ops whose result has the operand's type for floating operands.
pub const UNARY_FLOAT: &[OpRef] = &[
    op::EXP, op::LOG, op::SIGMOID, op::TANH, op::SQRT, op::RSQRT, op::SIN, op::COS, op::RECIPROCAL, op::GELU, op::SILU,
    op::ERF, op::LOG1P, op::EXPM1, op::LOG2, op::FLOOR, op::CEIL, op::ROUND, op::TRUNC,
];

/// Whether `name` is one of `family`'s ops.
fn is_in(family: &[OpRef], name: &str) -> bool {
    family.iter().any(|o| o.is(name))
}

/// Unary ops whose result has the operand's type for every dtype.
pub const UNARY_ANY: &[OpRef] = &[op::NEG, op::ABS, op::RELU, op::CLONE, op::ALIAS, op::CLAMP, op::POSITIVE];

/// Binary arithmetic with broadcasting and type promotion.
pub const BINARY: &[OpRef] = &[op::ADD_TENSOR, op::SUB_TENSOR, op::MUL_TENSOR, op::MAXIMUM, op::MINIMUM];

/// Comparisons with broadcasting, producing bool.
pub const COMPARE: &[OpRef] = &[op::EQ_TENSOR, op::NE_TENSOR, op::LT_TENSOR, op::LE_TENSOR, op::GT_TENSOR, op::GE_TENSOR];

fn tensor(t: Option<&Type>) -> Option<&TensorType> {
    t?.as_tensor()
}

/// Broadcasts shapes (NumPy rules). Dims that are not static must be equal to be combined.
pub fn broadcast_shapes(shapes: &[&[Dim]]) -> Option<Vec<Dim>> {
    broadcast_dims(shapes).map(smallvec::SmallVec::into_vec)
}

/// [`broadcast_shapes`] inline up to rank 6: the analysis broadcasts the operands of every
/// binary e-node it makes, and the result is usually an operand's own shape, so nothing needs
/// to be kept.
fn broadcast_dims(shapes: &[&[Dim]]) -> Option<smallvec::SmallVec<[Dim; 6]>> {
    let rank = shapes.iter().map(|s| s.len()).max()?;
    let mut out = smallvec::SmallVec::with_capacity(rank);
    for i in 0..rank {
        let mut d = Dim::Static(1);
        for s in shapes {
            let k = rank - s.len();
            if i < k {
                continue;
            }
            let e = &s[i - k];
            d = match (&d, e) {
                (Dim::Static(1), _) => e.clone(),
                (_, Dim::Static(1)) => d,
                (a, b) if a == b && !matches!(a, Dim::Unknown) => d,
                _ => return None,
            };
        }
        out.push(d);
    }
    Some(out)
}

/// PyTorch's result dtype for tensor operands: dimensioned tensors take precedence over
/// zero-dimensional ones of the same or a lower category.
pub fn promote_tensors(ts: &[&TensorType]) -> Option<DType> {
    let mut dims: Option<DType> = None;
    let mut zeros: Option<DType> = None;
    for t in ts {
        let d = t.dtype?;
        let slot = if t.rank()? == 0 { &mut zeros } else { &mut dims };
        *slot = Some(slot.map_or(d, |s| DType::promote(s, d)));
    }
    match (dims, zeros) {
        (Some(a), Some(z)) if z.category() > a.category() => Some(z),
        (Some(a), _) => Some(a),
        (None, z) => z,
    }
}

/// The result type of an op the engine knows, from its operand types.
pub fn infer_type(name: &str, args: &[Option<&Type>]) -> Option<Type> {
    let unary_float = is_in(UNARY_FLOAT, name);
    if unary_float || is_in(UNARY_ANY, name) {
        let t = tensor(*args.first()?)?;
        if unary_float && !t.dtype?.is_floating() {
            return None;
        }
        // The operand's own type (shared, not copied).
        return args.first().copied().flatten().cloned();
    }
    let div = op::DIV_TENSOR.is(name);
    let select = op::WHERE_SELF.is(name);
    let compare = is_in(COMPARE, name);
    if div || compare || select || is_in(BINARY, name) || op::ADDCMUL.is(name) {
        let ts: Option<smallvec::SmallVec<[&TensorType; 3]>> = args.iter().map(|a| tensor(*a)).collect();
        let ts = ts?;
        let shapes: Option<smallvec::SmallVec<[&[Dim]; 3]>> = ts.iter().map(|t| t.shape.as_deref()).collect();
        let shape = broadcast_dims(&shapes?)?;
        let dtype = if compare {
            DType::Bool
        } else if select {
            promote_tensors(ts.get(1..)?)?
        } else {
            let d = promote_tensors(&ts)?;
            if div && !d.is_floating() { DType::F32 } else { d }
        };
        // An operand's type when it is the result's (shared, not copied: the common case).
        if let Some(i) = ts.iter().position(|t| t.dtype == Some(dtype) && t.shape.as_deref() == Some(shape.as_slice())) {
            return args[i].cloned();
        }
        return Some(Type::tensor_of(TensorType::new(dtype, shape.into_vec())));
    }
    None
}

/// The dtype of a type (tensors) or of a TorchScript scalar.
pub fn dtype_of(t: &Type) -> Option<DType> {
    match t.kind() {
        TypeKind::Tensor(tt) => tt.dtype,
        TypeKind::Float => Some(DType::F64),
        TypeKind::Int => Some(DType::I64),
        TypeKind::Bool => Some(DType::Bool),
        _ => None,
    }
}

/// Rounds an f64 to the precision of `dtype`; `None` for dtypes folding does not handle.
fn round_to(v: f64, dtype: DType) -> Option<Scalar> {
    match dtype {
        DType::F64 => Some(Scalar::float(v)),
        DType::F32 => Some(Scalar::float(v as f32 as f64)),
        _ => None,
    }
}

fn wrap_int(v: i64, dtype: DType) -> Option<Scalar> {
    match dtype {
        DType::I64 => Some(Scalar::Int(v)),
        DType::I32 => Some(Scalar::Int(v as i32 as i64)),
        _ => None,
    }
}

/// Folds an op over splat constants, exactly as IEEE arithmetic in the result dtype would
/// compute it (operations on f32 values computed in f64 and rounded once are correctly rounded
/// for `+ - * /`). Returns `None` when unsure: NaN results, signed-zero corner cases,
/// transcendental functions, narrow dtypes.
pub fn fold(name: &str, ks: &[Scalar], ty: &Type) -> Option<Scalar> {
    let o = op::by_name(name)?;
    let dtype = dtype_of(ty)?;
    let ints = ks.iter().all(|k| matches!(k, Scalar::Int(_)));
    let out = if dtype.is_floating() {
        let v: Vec<f64> = ks.iter().map(|k| k.as_f64()).collect();
        let r = match (o, v.as_slice()) {
            (op::NEG, [a]) => -a,
            (op::ABS, [a]) => a.abs(),
            (op::ADD_TENSOR, [a, b]) => a + b,
            (op::SUB_TENSOR, [a, b]) => a - b,
            (op::MUL_TENSOR, [a, b]) => a * b,
            (op::DIV_TENSOR, [a, b]) => a / b,
            (op::RELU, [a]) if *a != 0.0 => a.max(0.0),
            (op::MAXIMUM, [a, b]) if *a != 0.0 || *b != 0.0 => a.max(*b),
            (op::MINIMUM, [a, b]) if *a != 0.0 || *b != 0.0 => a.min(*b),
            _ => return None,
        };
        if r.is_nan() || v.iter().any(|x| x.is_nan()) {
            return None;
        }
        // Operands of a narrower float type are exact in f64 already; the result is rounded once.
        round_to(r, dtype)?
    } else if dtype.is_integral() && ints {
        let v: Vec<i64> = ks.iter().map(|k| if let Scalar::Int(i) = k { *i } else { 0 }).collect();
        let r = match (o, v.as_slice()) {
            (op::NEG, [a]) => a.wrapping_neg(),
            (op::ABS, [a]) => a.wrapping_abs(),
            (op::RELU, [a]) => (*a).max(0),
            (op::ADD_TENSOR, [a, b]) => a.wrapping_add(*b),
            (op::SUB_TENSOR, [a, b]) => a.wrapping_sub(*b),
            (op::MUL_TENSOR, [a, b]) => a.wrapping_mul(*b),
            (op::MAXIMUM, [a, b]) => *a.max(b),
            (op::MINIMUM, [a, b]) => *a.min(b),
            _ => return None,
        };
        wrap_int(r, dtype)?
    } else {
        return None;
    };
    Some(out)
}
