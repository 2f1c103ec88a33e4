//! The toy dialect's ops: their handles, definitions (traits, arity, attributes, syntax) and
//! verifiers, all in this one file.
//!
//! `toy` is a tiny tensor language in the spirit of MLIR's tutorial: constants, elementwise
//! `add`/`mul`, `scale` by a constant factor, `transpose`, `reshape` and a side-effecting
//! `print`. `docs/dialects.md` walks through this file.

use ir::{Arity, AttrKind, Context, Module, OpDef, OpId, OpRef, Syntax, Traits, TypeKind};

pub const DIALECT: &str = "toy";

// [doc:handles]
pub const CONSTANT: OpRef = OpRef::new("toy.constant");
pub const ADD: OpRef = OpRef::new("toy.add");
pub const MUL: OpRef = OpRef::new("toy.mul");
pub const SCALE: OpRef = OpRef::new("toy.scale");
pub const TRANSPOSE: OpRef = OpRef::new("toy.transpose");
pub const RESHAPE: OpRef = OpRef::new("toy.reshape");
pub const PRINT: OpRef = OpRef::new("toy.print");
pub const STRUCT: OpRef = OpRef::new("toy.struct");
pub const FIELD: OpRef = OpRef::new("toy.field");
pub const FILL: OpRef = OpRef::new("toy.fill");
// [/doc:handles]

/// Registers the toy dialect: its type and attribute kinds, then its ops (the crate's
/// `register` adds its patterns).
pub fn register_ops(ctx: &mut Context) -> Result<(), String> {
    ctx.register_dialect(DIALECT, "A tiny example tensor language.");
    crate::types::register(ctx)?;
    for def in definitions() {
        ctx.register_op(def).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The toy ops.
pub fn definitions() -> Vec<OpDef> {
    vec![
        // [doc:ops]
        OpDef::new(CONSTANT.name())
            .summary("A constant tensor: `%c = toy.constant dense<[1.0, 2.0]> : tensor<2xf64>`.")
            .traits(Traits::PURE | Traits::CONSTANT_LIKE)
            .operands(Arity::Exact(0))
            .results(Arity::Exact(1))
            .attr("value", AttrKind::Dense, true)
            .syntax(Syntax::Constant)
            .verifier(verify_constant),
        OpDef::new(ADD.name())
            .summary("Elementwise addition of two tensors of the same shape.")
            .traits(Traits::PURE | Traits::ELEMENTWISE | Traits::COMMUTATIVE | Traits::SAME_OPERANDS_AND_RESULT_SHAPE)
            .operands(Arity::Exact(2))
            .results(Arity::Exact(1))
            .verifier(verify_tensors),
        // [/doc:ops]
        OpDef::new(MUL.name())
            .summary("Elementwise multiplication of two tensors of the same shape.")
            .traits(Traits::PURE | Traits::ELEMENTWISE | Traits::COMMUTATIVE | Traits::SAME_OPERANDS_AND_RESULT_SHAPE)
            .operands(Arity::Exact(2))
            .results(Arity::Exact(1))
            .verifier(verify_tensors),
        // [doc:scale]
        OpDef::new(SCALE.name())
            .summary("Multiplies every element by the constant `factor`.")
            .traits(Traits::PURE | Traits::ELEMENTWISE | Traits::SAME_OPERANDS_AND_RESULT_SHAPE)
            .operands(Arity::Exact(1))
            .results(Arity::Exact(1))
            .attr("factor", AttrKind::Float, true)
            .verifier(verify_tensors),
        // [/doc:scale]
        OpDef::new(TRANSPOSE.name())
            .summary("Swaps the two dimensions of a rank-2 tensor.")
            .traits(Traits::PURE)
            .operands(Arity::Exact(1))
            .results(Arity::Exact(1))
            .verifier(verify_transpose),
        OpDef::new(RESHAPE.name())
            .summary("Reshapes a tensor to the static shape of its result.")
            .traits(Traits::PURE)
            .operands(Arity::Exact(1))
            .results(Arity::Exact(1))
            .verifier(verify_reshape),
        OpDef::new(PRINT.name())
            .summary("Prints a tensor; has a side effect, so it is never removed.")
            .operands(Arity::Exact(1))
            .results(Arity::Exact(0))
            .syntax(Syntax::Return)
            .verifier(verify_tensors),
        // [doc:formats]
        OpDef::new(STRUCT.name())
            .summary("Packs tensors into a `!toy.struct`.")
            .traits(Traits::PURE)
            .operands(Arity::AtLeast(1))
            .results(Arity::Exact(1))
            .assembly_format("operands attr-dict `:` functional-type(operands, results)")
            .verifier(verify_struct),
        OpDef::new(FIELD.name())
            .summary("Field `index` of a `!toy.struct`.")
            .traits(Traits::PURE)
            .operands(Arity::Exact(1))
            .results(Arity::Exact(1))
            .attr("index", AttrKind::Int, true)
            .assembly_format("operands `[` $index `]` attr-dict `:` type(operands) `->` type(results)")
            .verifier(verify_field),
        OpDef::new(FILL.name())
            .summary("A tensor of `shape` (a `#toy.shape`) filled with `value`.")
            .traits(Traits::PURE)
            .operands(Arity::Exact(0))
            .results(Arity::Exact(1))
            .attr("value", AttrKind::Float, true)
            .attr("shape", AttrKind::Any, true)
            .assembly_format("$value `,` $shape attr-dict `:` type(results)")
            .verifier(verify_fill),
        // [/doc:formats]
    ]
}

// [doc:verifier]
fn verify_constant(_: &Context, m: &Module, op: OpId) -> Result<(), String> {
    let Some(d) = m.attr(op, "value").and_then(|a| a.as_dense()) else {
        return Err("requires a dense 'value'".into());
    };
    let t = m.value_type(m.results(op)[0]);
    if t.as_tensor() != Some(d.tensor_type()) {
        return Err(format!("result type {t} does not match the value's type {}", d.tensor_type()));
    }
    Ok(())
}

// [/doc:verifier]

// [doc:struct-verifiers]
fn verify_struct(_: &Context, m: &Module, op: OpId) -> Result<(), String> {
    let t = m.value_type(m.results(op)[0]);
    let fields = crate::types::struct_fields(t).ok_or_else(|| format!("result must be a !toy.struct, found {t}"))?;
    let operands: Vec<_> = m.operands(op).iter().map(|&v| m.value_type(v).clone()).collect();
    if fields != operands {
        return Err(format!("operand types must be the struct's fields, found {}", list(&operands)));
    }
    Ok(())
}

fn verify_field(_: &Context, m: &Module, op: OpId) -> Result<(), String> {
    let s = m.value_type(m.operands(op)[0]);
    let fields = crate::types::struct_fields(s).ok_or_else(|| format!("operand must be a !toy.struct, found {s}"))?;
    let index = m.attr(op, "index").and_then(|a| a.as_int()).unwrap_or(-1);
    let field = usize::try_from(index).ok().and_then(|i| fields.get(i));
    let field = field.ok_or_else(|| format!("index {index} is out of range for a struct of {} field(s)", fields.len()))?;
    let r = m.value_type(m.results(op)[0]);
    if r != field {
        return Err(format!("result type {r} must be field {index}'s type {field}"));
    }
    Ok(())
}

fn verify_fill(_: &Context, m: &Module, op: OpId) -> Result<(), String> {
    let shape = m.attr(op, "shape").ok_or("requires a 'shape'")?;
    let dims = crate::types::shape_dims(shape).ok_or_else(|| format!("'shape' must be a #toy.shape, found {shape}"))?;
    let r = m.value_type(m.results(op)[0]);
    let t = r.as_tensor().ok_or_else(|| format!("result must be a tensor, found {r}"))?;
    if t.static_dims().as_deref() != Some(&dims[..]) || !t.dtype.is_some_and(|d| d.is_floating()) {
        return Err(format!("result type {r} must be a float tensor of shape {shape}"));
    }
    Ok(())
}
// [/doc:struct-verifiers]

fn list(types: &[ir::Type]) -> String {
    types.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", ")
}

fn verify_tensors(_: &Context, m: &Module, op: OpId) -> Result<(), String> {
    for &v in m.operands(op).iter().chain(m.results(op)) {
        if !m.value_type(v).is_tensor() {
            return Err(format!("expects tensors, found {}", m.value_type(v)));
        }
    }
    Ok(())
}

fn verify_transpose(c: &Context, m: &Module, op: OpId) -> Result<(), String> {
    verify_tensors(c, m, op)?;
    let (Some(a), Some(r)) = (
        m.value_type(m.operands(op)[0]).as_tensor().cloned(),
        m.value_type(m.results(op)[0]).as_tensor().cloned(),
    ) else {
        return Ok(());
    };
    if let (Some(ad), Some(rd)) = (&a.shape, &r.shape) {
        if ad.len() != 2 {
            return Err(format!("expects a rank-2 operand, found rank {}", ad.len()));
        }
        if rd.len() != 2 || rd[0] != ad[1] || rd[1] != ad[0] {
            return Err(format!("result shape must be the operand's transposed: expected {}x{}", ad[1], ad[0]));
        }
    }
    if a.dtype != r.dtype {
        return Err("result dtype must match the operand's".into());
    }
    Ok(())
}

fn verify_reshape(c: &Context, m: &Module, op: OpId) -> Result<(), String> {
    verify_tensors(c, m, op)?;
    let a = m.value_type(m.operands(op)[0]);
    let r = m.value_type(m.results(op)[0]);
    let (TypeKind::Tensor(a), TypeKind::Tensor(r)) = (a.kind(), r.kind()) else { return Ok(()) };
    let Some(out) = r.num_elements() else { return Err("result must have a static shape".into()) };
    if let Some(n) = a.num_elements() {
        if n != out {
            return Err(format!("cannot reshape {n} elements into {out}"));
        }
    }
    Ok(())
}
