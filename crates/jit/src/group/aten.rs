//! The aten ops the JIT lowers by its own rules (those without an attached `JitLowering`):
//! arithmetic with PyTorch's promotion, division modes, comparisons, logical and bitwise ops,
//! `where`, `addcmul`, `masked_fill`, clamping and the shape-keeping unary ops, each expanded
//! into primitive nodes as the interpreter's kernels compute it. Each op is listed by handle
//! with the rule that lowers it ([`RULES`]); an overload not listed has no JIT lowering.

use super::*;
use dialect_aten::op;
use dialect_prim::kinds::Attr as PA;
use ir::OpRef;
use std::collections::HashMap;
use std::sync::OnceLock;

/// How an aten op of [`RULES`] lowers.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Rule {
    /// `a + alpha * b`; `Sub` and `Rsub` negate `alpha` (and swap the operands).
    Add,
    Sub,
    Rsub,
    /// Arithmetic in the promoted dtype; `true` computes integers in the default float dtype.
    Arith(Binary, bool),
    /// `div` with a `rounding_mode` argument.
    DivMode,
    /// Integer-aware division and remainders.
    IntDiv(Binary),
    Compare(Cmp),
    /// `logical_and`/`or`/`xor`: both operands as bool.
    Logical(Binary),
    LogicalNot,
    BitwiseNot,
    /// `bitwise_and`/`or`/`xor`: integers and bools, floats refused.
    Bitwise(Binary),
    Where,
    Addcmul,
    MaskedFill,
    Clamp,
    ClampMin,
    ClampMax,
    Neg,
    Abs,
    Relu,
    Square,
    /// `floor`, `ceil`, `round`, `trunc`: the identity on integers.
    Rounding(Unary),
    Gelu,
    Silu,
    PowTensorScalar,
    PowTensorTensor,
    /// A cast to the dtype argument (`_to_copy`, `to.dtype`).
    Cast,
    TypeAs,
    /// The operand itself (`clone`, `alias`, `detach`, …).
    Same,
    ScalarTensor,
}

/// The aten ops the JIT lowers by its own rules, by handle.
const RULES: &[(OpRef, Rule)] = &[
    (op::ADD_TENSOR, Rule::Add),
    (op::ADD_SCALAR, Rule::Add),
    (op::SUB_TENSOR, Rule::Sub),
    (op::SUB_SCALAR, Rule::Sub),
    (op::RSUB_TENSOR, Rule::Rsub),
    (op::RSUB_SCALAR, Rule::Rsub),
    (op::MUL_TENSOR, Rule::Arith(Binary::Mul, false)),
    (op::MUL_SCALAR, Rule::Arith(Binary::Mul, false)),
    (op::DIV_TENSOR, Rule::Arith(Binary::Div, true)),
    (op::DIV_SCALAR, Rule::Arith(Binary::Div, true)),
    (op::DIV_TENSOR_MODE, Rule::DivMode),
    (op::DIV_SCALAR_MODE, Rule::DivMode),
    (op::FLOOR_DIVIDE, Rule::IntDiv(Binary::DivFloor)),
    (op::FLOOR_DIVIDE_SCALAR, Rule::IntDiv(Binary::DivFloor)),
    (op::REMAINDER_TENSOR, Rule::IntDiv(Binary::Rem)),
    (op::REMAINDER_SCALAR, Rule::IntDiv(Binary::Rem)),
    (op::REMAINDER_SCALAR_TENSOR, Rule::IntDiv(Binary::Rem)),
    (op::FMOD_TENSOR, Rule::IntDiv(Binary::Fmod)),
    (op::FMOD_SCALAR, Rule::IntDiv(Binary::Fmod)),
    (op::MAXIMUM, Rule::Arith(Binary::Max, false)),
    (op::MINIMUM, Rule::Arith(Binary::Min, false)),
    (op::EQ_TENSOR, Rule::Compare(Cmp::Eq)),
    (op::EQ_SCALAR, Rule::Compare(Cmp::Eq)),
    (op::NE_TENSOR, Rule::Compare(Cmp::Ne)),
    (op::NE_SCALAR, Rule::Compare(Cmp::Ne)),
    (op::LT_TENSOR, Rule::Compare(Cmp::Lt)),
    (op::LT_SCALAR, Rule::Compare(Cmp::Lt)),
    (op::LE_TENSOR, Rule::Compare(Cmp::Le)),
    (op::LE_SCALAR, Rule::Compare(Cmp::Le)),
    (op::GT_TENSOR, Rule::Compare(Cmp::Gt)),
    (op::GT_SCALAR, Rule::Compare(Cmp::Gt)),
    (op::GE_TENSOR, Rule::Compare(Cmp::Ge)),
    (op::GE_SCALAR, Rule::Compare(Cmp::Ge)),
    (op::LOGICAL_AND, Rule::Logical(Binary::And)),
    (op::LOGICAL_OR, Rule::Logical(Binary::Or)),
    (op::LOGICAL_XOR, Rule::Logical(Binary::Xor)),
    (op::LOGICAL_NOT, Rule::LogicalNot),
    (op::BITWISE_NOT, Rule::BitwiseNot),
    (op::BITWISE_AND_TENSOR, Rule::Bitwise(Binary::And)),
    (op::BITWISE_AND_SCALAR, Rule::Bitwise(Binary::And)),
    (op::BITWISE_AND_SCALAR_TENSOR, Rule::Bitwise(Binary::And)),
    (op::BITWISE_OR_TENSOR, Rule::Bitwise(Binary::Or)),
    (op::BITWISE_OR_SCALAR, Rule::Bitwise(Binary::Or)),
    (op::BITWISE_OR_SCALAR_TENSOR, Rule::Bitwise(Binary::Or)),
    (op::BITWISE_XOR_TENSOR, Rule::Bitwise(Binary::Xor)),
    (op::BITWISE_XOR_SCALAR, Rule::Bitwise(Binary::Xor)),
    (op::BITWISE_XOR_SCALAR_TENSOR, Rule::Bitwise(Binary::Xor)),
    (op::WHERE_SELF, Rule::Where),
    (op::WHERE_SCALAR, Rule::Where),
    (op::WHERE_SCALAROTHER, Rule::Where),
    (op::WHERE_SCALARSELF, Rule::Where),
    (op::ADDCMUL, Rule::Addcmul),
    (op::MASKED_FILL_SCALAR, Rule::MaskedFill),
    (op::MASKED_FILL_TENSOR, Rule::MaskedFill),
    (op::CLAMP, Rule::Clamp),
    (op::CLAMP_MIN, Rule::ClampMin),
    (op::CLAMP_MAX, Rule::ClampMax),
    (op::NEG, Rule::Neg),
    (op::ABS, Rule::Abs),
    (op::RELU, Rule::Relu),
    (op::SQUARE, Rule::Square),
    (op::FLOOR, Rule::Rounding(Unary::Floor)),
    (op::CEIL, Rule::Rounding(Unary::Ceil)),
    (op::ROUND, Rule::Rounding(Unary::Round)),
    (op::TRUNC, Rule::Rounding(Unary::Trunc)),
    (op::FIX, Rule::Rounding(Unary::Trunc)),
    (op::GELU, Rule::Gelu),
    (op::SILU, Rule::Silu),
    (op::POW_TENSOR_SCALAR, Rule::PowTensorScalar),
    (op::POW_TENSOR_TENSOR, Rule::PowTensorTensor),
    (op::_TO_COPY, Rule::Cast),
    (op::TO_DTYPE, Rule::Cast),
    (op::TYPE_AS, Rule::TypeAs),
    (op::CLONE, Rule::Same),
    (op::ALIAS, Rule::Same),
    (op::DETACH, Rule::Same),
    (op::CONTIGUOUS, Rule::Same),
    (op::LIFT_FRESH_COPY, Rule::Same),
    (op::SCALAR_TENSOR, Rule::ScalarTensor),
];

/// The rule of the op named `name`, if [`RULES`] lists it.
fn rule(name: &str) -> Option<Rule> {
    static BY_NAME: OnceLock<HashMap<&'static str, Rule>> = OnceLock::new();
    BY_NAME
        .get_or_init(|| RULES.iter().map(|&(o, r)| (o.name(), r)).collect())
        .get(name)
        .copied()
}

impl Builder {
    /// Lowers one aten op with arguments in schema order.
    pub(crate) fn lower(&mut self, name: &str, args: &[Arg]) -> Result<NodeId, JitError> {
        let op: &'static str = intern(name);
        let bad = |m: &str| JitError::Invalid(format!("{op}: {m}"));
        let arg = |i: usize| args.get(i).cloned().unwrap_or(Arg::Attr(dialect_prim::kinds::none()));
        let tensor = |i: usize| match arg(i) {
            Arg::Node(n) => Ok(n),
            Arg::Attr(a) => Err(bad(&format!("argument {i} must be a tensor, got {}", a.kind_name()))),
        };
        let operand = |i: usize| -> Result<Operand, JitError> {
            match arg(i) {
                Arg::Node(n) => Ok(Operand::Node(n)),
                Arg::Attr(a) => attr_scalar(&a)
                    .map(Operand::Scalar)
                    .ok_or_else(|| bad(&format!("argument {i} must be a tensor or a number, got {}", a.kind_name()))),
            }
        };
        let opt_scalar = |i: usize| -> Result<Option<Scalar>, JitError> {
            match arg(i) {
                Arg::Attr(a) if dialect_prim::kinds::is_none(&a) => Ok(None),
                Arg::Attr(a) => attr_scalar(&a).map(Some).ok_or_else(|| bad(&format!("argument {i} must be a number"))),
                Arg::Node(_) => Err(JitError::Unsupported(format!("{op}: a scalar argument computed at run time"))),
            }
        };
        let scalar_or = |i: usize, d: Scalar| -> Result<Scalar, JitError> { Ok(opt_scalar(i)?.unwrap_or(d)) };
        let Some(rule) = rule(name) else {
            return Err(JitError::Unsupported(format!("{op}: no JIT lowering")));
        };
        match rule {
            Rule::Add | Rule::Sub | Rule::Rsub => {
                let (mut a, mut b) = (operand(0)?, operand(1)?);
                if rule == Rule::Rsub {
                    std::mem::swap(&mut a, &mut b);
                }
                let mut alpha = scalar_or(2, Scalar::Int(1))?;
                if rule != Rule::Add {
                    let is_bool = |o: &Operand| match o {
                        Operand::Node(n) => self.dtype(*n) == DType::Bool,
                        Operand::Scalar(s) => matches!(s, Scalar::Bool(_)),
                    };
                    if is_bool(&a) && is_bool(&b) || self.result_type(&[a, b]) == DType::Bool {
                        return Err(bad("subtraction with two bool tensors is not supported"));
                    }
                    // PyTorch refuses a bool operand on either side, even with a number.
                    if is_bool(&a) || is_bool(&b) {
                        return Err(bad("subtraction with a bool tensor is not supported"));
                    }
                    alpha = match alpha {
                        Scalar::Float(f) => Scalar::Float(-f),
                        s => Scalar::Int(s.to_i64().wrapping_neg()),
                    };
                }
                self.add(op, a, b, alpha)
            }
            Rule::Arith(bop, int_to_float) => {
                self.arith(op, operand(0)?, operand(1)?, bop, int_to_float)
            }
            Rule::DivMode => {
                let mode = match arg(2) {
                    Arg::Attr(Attribute::Str(s)) => Some(s.to_string()),
                    Arg::Attr(a) if dialect_prim::kinds::is_none(&a) => None,
                    _ if name.ends_with("_mode") => return Err(bad("rounding_mode must be a string")),
                    _ => None,
                };
                let (a, b) = (operand(0)?, operand(1)?);
                match mode.as_deref() {
                    None => self.arith(op, a, b, Binary::Div, true),
                    Some("trunc") => {
                        let ct = self.result_type(&[a, b]);
                        if ct.is_floating() {
                            let q = self.arith(op, a, b, Binary::Div, false)?;
                            Ok(self.unary(Unary::Trunc, q, op))
                        } else {
                            self.int_div(op, a, b, Binary::DivTrunc)
                        }
                    }
                    Some("floor") => self.int_div(op, a, b, Binary::DivFloor),
                    Some(m) => Err(bad(&format!("rounding_mode must be None, 'trunc' or 'floor', got '{m}'"))),
                }
            }
            Rule::IntDiv(bop) => self.int_div(op, operand(0)?, operand(1)?, bop),
            Rule::Compare(c) => {
                let (a, b) = (operand(0)?, operand(1)?);
                let ct = self.result_type(&[a, b]);
                let (x, y) = (self.operand(a, ct, op)?, self.operand(b, ct, op)?);
                self.cmp(c, x, y, op)
            }
            Rule::Logical(bop) => {
                let x = self.cast(tensor(0)?, DType::Bool, op)?;
                let y = self.cast(tensor(1)?, DType::Bool, op)?;
                self.binary(bop, x, y, op)
            }
            Rule::LogicalNot => {
                let t = tensor(0)?;
                let d = self.dtype(t);
                let zero = self.constant(scalar_to(Scalar::Int(0), d), d, op);
                self.cmp(Cmp::Eq, t, zero, op)
            }
            Rule::BitwiseNot if self.dtype(tensor(0)?) == DType::Bool => {
                let t = tensor(0)?;
                Ok(self.unary(Unary::Not, t, op))
            }
            Rule::BitwiseNot => {
                // `!x` on integers is `x ^ -1`.
                let t = tensor(0)?;
                let d = self.dtype(t);
                if d.is_floating() {
                    return Err(bad(&format!("not implemented for {}", d.torch_name())));
                }
                let ones = self.constant(scalar_to(Scalar::Int(-1), d), d, op);
                self.binary(Binary::Xor, t, ones, op)
            }
            Rule::Bitwise(bop) => {
                // Integers bitwise, bools as masks, floats refused (as the reference kernels do).
                let (a, b) = (operand(0)?, operand(1)?);
                let ct = self.result_type(&[a, b]);
                if ct.is_floating() {
                    return Err(bad(&format!("not implemented for {}", ct.torch_name())));
                }
                let (x, y) = (self.operand(a, ct, op)?, self.operand(b, ct, op)?);
                self.binary(bop, x, y, op)
            }
            Rule::Where => {
                let c = self.cast(tensor(0)?, DType::Bool, op)?;
                let (a, b) = (operand(1)?, operand(2)?);
                let rt = self.result_type(&[a, b]);
                let (x, y) = (self.operand(a, rt, op)?, self.operand(b, rt, op)?);
                self.select(c, x, y, op)
            }
            Rule::Addcmul => {
                // self + value * (tensor1 * tensor2). Value 1 over floats of one dtype is a
                // fused multiply-add (one rounding where the target has FMA); otherwise as the
                // interpreter: the product in the dtype of the two factors, then the sum in the
                // dtype of all three.
                let (s, t1, t2) = (tensor(0)?, tensor(1)?, tensor(2)?);
                let value = scalar_or(3, Scalar::Int(1))?;
                let rt = self.result_type(&[Operand::Node(s), Operand::Node(t1), Operand::Node(t2)]);
                if rt.is_floating() && value.to_f64() == 1.0 && [s, t1, t2].iter().all(|&n| self.dtype(n) == rt) {
                    return self.mul_add(t1, t2, s, op);
                }
                let p = self.arith(op, Operand::Node(t1), Operand::Node(t2), Binary::Mul, false)?;
                let (s, p) = (self.cast(s, rt, op)?, self.cast(p, rt, op)?);
                self.add(op, Operand::Node(s), Operand::Node(p), value)
            }
            Rule::MaskedFill => {
                let t = tensor(0)?;
                let mask = tensor(1)?;
                if self.dtype(mask) != DType::Bool {
                    return Err(bad("expected a bool mask"));
                }
                let value = match arg(2) {
                    Arg::Attr(a) => attr_scalar(&a).ok_or_else(|| bad("value must be a number"))?,
                    Arg::Node(n) => match self.node(n).kind {
                        NodeKind::Const(Const::Bool(b)) if self.node(n).shape.is_empty() => Scalar::Bool(b),
                        NodeKind::Const(Const::Int(i)) if self.node(n).shape.is_empty() => Scalar::Int(i),
                        NodeKind::Const(Const::Float(f)) if self.node(n).shape.is_empty() => Scalar::Float(f),
                        _ => return Err(JitError::Unsupported(format!("{op}: a fill value computed at run time"))),
                    },
                };
                let shape = broadcast(op, &self.shape(t), &self.shape(mask))?;
                if shape != self.shape(t) {
                    return Err(bad("mask cannot be broadcast to self"));
                }
                let d = self.dtype(t);
                let v = self.constant(scalar_to(value, d), d, op);
                self.select(mask, v, t, op)
            }
            Rule::Clamp | Rule::ClampMin | Rule::ClampMax => {
                let t = tensor(0)?;
                let (lo, hi) = match rule {
                    Rule::Clamp => (opt_scalar(1)?, opt_scalar(2)?),
                    Rule::ClampMin => (opt_scalar(1)?, None),
                    _ => (None, opt_scalar(1)?),
                };
                self.clamp(op, t, lo, hi)
            }
            Rule::Neg => {
                let t = tensor(0)?;
                if self.dtype(t) == DType::Bool {
                    return Err(bad("negation on a bool tensor is not supported"));
                }
                Ok(self.unary(Unary::Neg, t, op))
            }
            Rule::Abs => {
                let t = tensor(0)?;
                if self.dtype(t) == DType::Bool {
                    return Ok(t);
                }
                Ok(self.unary(Unary::Abs, t, op))
            }
            Rule::Relu => {
                let t = tensor(0)?;
                if self.dtype(t) == DType::Bool {
                    return Err(bad("not supported on bool tensors"));
                }
                Ok(self.unary(Unary::Relu, t, op))
            }
            Rule::Square => {
                let mut t = tensor(0)?;
                if self.dtype(t) == DType::Bool {
                    t = self.cast(t, DType::I64, op)?;
                }
                Ok(self.unary(Unary::Square, t, op))
            }
            Rule::Rounding(u) => {
                let t = tensor(0)?;
                if !self.dtype(t).is_floating() {
                    return Ok(t);
                }
                Ok(self.unary(u, t, op))
            }
            Rule::Gelu | Rule::Silu => {
                let t = tensor(0)?;
                if !self.dtype(t).is_floating() {
                    return Err(bad(&format!("not implemented for {}", self.dtype(t).torch_name())));
                }
                let u = if rule == Rule::Silu {
                    Unary::Silu
                } else {
                    match arg(1) {
                        Arg::Attr(Attribute::Str(s)) if &*s == "tanh" => Unary::GeluTanh,
                        Arg::Attr(Attribute::Str(s)) if &*s == "none" => Unary::GeluErf,
                        Arg::Attr(a) if dialect_prim::kinds::is_none(&a) => Unary::GeluErf,
                        _ => return Err(bad("approximate must be 'none' or 'tanh'")),
                    }
                };
                Ok(self.unary(u, t, op))
            }
            Rule::PowTensorScalar => {
                let t = tensor(0)?;
                let e = opt_scalar(1)?.ok_or_else(|| bad("exponent must be a number"))?;
                let rt = self.result_type(&[Operand::Node(t), Operand::Scalar(e)]);
                if !rt.is_floating() && e.to_i64() < 0 && !e.is_floating() {
                    return Err(bad("integers to negative integer powers are not allowed"));
                }
                let x = self.cast(t, rt, op)?;
                if rt.is_floating() {
                    Ok(self.unary(Unary::PowF(e.to_f64()), x, op))
                } else if rt == DType::Bool {
                    Err(JitError::unsupported_dtype(op, rt))
                } else {
                    let k = match scalar_to(e, rt) {
                        Const::Int(k) => k,
                        _ => 0,
                    };
                    if k < 0 {
                        return Err(JitError::Unsupported(format!("{op}: negative integer exponent")));
                    }
                    Ok(self.unary(Unary::PowI(k as u64), x, op))
                }
            }
            Rule::PowTensorTensor => {
                let (a, b) = (operand(0)?, operand(1)?);
                let rt = self.result_type(&[a, b]);
                if !rt.is_floating() {
                    return Err(JitError::Unsupported(format!("{op}: integer powers of tensors")));
                }
                self.arith(op, a, b, Binary::Pow, false)
            }
            Rule::Cast | Rule::TypeAs | Rule::Same => {
                let t = tensor(0)?;
                let d = match rule {
                    Rule::Cast => match arg(1) {
                        Arg::Attr(a) => match dialect_prim::kinds::attr(&a) {
                            PA::DType(d) => d,
                            PA::Other(Attribute::Int(c)) => {
                                DType::from_scalar_type_code(*c).ok_or_else(|| bad(&format!("unknown dtype code {c}")))?
                            }
                            PA::None => self.dtype(t),
                            _ => return Err(bad("dtype must be a constant")),
                        },
                        _ => return Err(bad("dtype must be a constant")),
                    },
                    Rule::TypeAs => self.dtype(tensor(1)?),
                    _ => self.dtype(t),
                };
                self.cast(t, d, op)
            }
            Rule::ScalarTensor => {
                let s = opt_scalar(0)?.ok_or_else(|| bad("s must be a number"))?;
                let d = match arg(1) {
                    Arg::Attr(a) => match dialect_prim::kinds::attr(&a) {
                        PA::DType(d) => d,
                        PA::Other(Attribute::Int(c)) => DType::from_scalar_type_code(*c).ok_or_else(|| bad("unknown dtype"))?,
                        _ => DType::F32,
                    },
                    _ => DType::F32,
                };
                check_dtype(op, d)?;
                Ok(self.constant(scalar_to(s, d), d, op))
            }
        }
    }

    /// `a + alpha * b` as `runtime::kernels::binary::add` computes it.
    pub(super) fn add(&mut self, op: &'static str, a: Operand, b: Operand, alpha: Scalar) -> Result<NodeId, JitError> {
        let rt = self.result_type(&[a, b]);
        if !rt.is_floating() && alpha.is_floating() {
            return Err(JitError::Invalid(format!(
                "{op}: for integral input tensors, argument alpha must not be a floating point number"
            )));
        }
        let (x, y) = (self.operand(a, rt, op)?, self.operand(b, rt, op)?);
        match rt {
            DType::Bool => {
                if alpha.to_i64() != 0 {
                    self.binary(Binary::Or, x, y, op)
                } else {
                    // `a || false`, with the broadcast shape of both.
                    let f = self.constant(Const::Bool(false), DType::Bool, op);
                    let z = self.binary(Binary::And, y, f, op)?;
                    self.binary(Binary::Or, x, z, op)
                }
            }
            d if d.is_floating() => {
                let al = alpha.to_f64();
                if al == 1.0 {
                    self.binary(Binary::Add, x, y, op)
                } else {
                    let c = if d == DType::F32 { Const::Float(al as f32 as f64) } else { Const::Float(al) };
                    let k = self.constant(c, d, op);
                    let p = self.binary(Binary::Mul, k, y, op)?;
                    self.binary(Binary::Add, x, p, op)
                }
            }
            d => {
                let al = alpha.to_i64();
                if al == 1 {
                    self.binary(Binary::Add, x, y, op)
                } else {
                    let k = self.constant(scalar_to(Scalar::Int(al), d), d, op);
                    let p = self.binary(Binary::Mul, k, y, op)?;
                    self.binary(Binary::Add, x, p, op)
                }
            }
        }
    }

    /// A binary op computed in the promoted dtype (`int_to_float`: integers promote to f32).
    pub(super) fn arith(&mut self, op: &'static str, a: Operand, b: Operand, bop: Binary, int_to_float: bool) -> Result<NodeId, JitError> {
        let rt = self.result_type(&[a, b]);
        let ct = if int_to_float { float_result(rt) } else { rt };
        let (x, y) = (self.operand(a, ct, op)?, self.operand(b, ct, op)?);
        match (bop, ct) {
            (Binary::Mul, DType::Bool) => self.binary(Binary::And, x, y, op),
            (Binary::Max, DType::Bool) => self.binary(Binary::Or, x, y, op),
            (Binary::Min, DType::Bool) => self.binary(Binary::And, x, y, op),
            (Binary::Div, DType::Bool) => Err(JitError::unsupported_dtype(op, ct)),
            _ => self.binary(bop, x, y, op),
        }
    }

    /// Division with rounding and remainders.
    pub(super) fn int_div(&mut self, op: &'static str, a: Operand, b: Operand, bop: Binary) -> Result<NodeId, JitError> {
        let ct = self.result_type(&[a, b]);
        if ct == DType::Bool {
            return Err(JitError::unsupported_dtype(op, ct));
        }
        let _ = (self.shape_of(a), self.shape_of(b));
        let (x, y) = (self.operand(a, ct, op)?, self.operand(b, ct, op)?);
        self.binary(bop, x, y, op)
    }

    /// `clamp` with scalar bounds, as `runtime::kernels::unary::clamp_scalar`.
    pub(super) fn clamp(&mut self, op: &'static str, t: NodeId, lo: Option<Scalar>, hi: Option<Scalar>) -> Result<NodeId, JitError> {
        if lo.is_none() && hi.is_none() {
            return Err(JitError::Invalid(format!("{op}: at least one of 'min' or 'max' must not be None")));
        }
        let mut ops = vec![Operand::Node(t)];
        ops.extend(lo.map(Operand::Scalar));
        ops.extend(hi.map(Operand::Scalar));
        let rt = self.result_type(&ops);
        if rt == DType::Bool {
            return Err(JitError::unsupported_dtype(op, rt));
        }
        let mut v = self.cast(t, rt, op)?;
        let x = v;
        for (bound, bop) in [(lo, Binary::ClampLo), (hi, Binary::ClampHi)] {
            let Some(s) = bound else { continue };
            let c = scalar_to(s, rt);
            if let Const::Float(f) = c
                && f.is_nan()
            {
                // A NaN bound makes every result NaN (NaN inputs stay NaN too).
                let k = self.constant(c, rt, op);
                let nan_or_x = self.binary(Binary::Add, x, k, op)?;
                return Ok(nan_or_x);
            }
            let k = self.constant(c, rt, op);
            v = self.binary(bop, v, k, op)?;
        }
        Ok(v)
    }
}
