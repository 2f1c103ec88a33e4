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
// [/doc:handles]

/// Registers the toy dialect's ops (the crate's `register` adds its patterns).
pub fn register_ops(ctx: &mut Context) {
    ctx.register_dialect(DIALECT, "A tiny example tensor language.");
    for def in definitions() {
        // Names below are distinct, so registration only fails if the dialect was registered twice.
        let _ = ctx.register_op(def);
    }
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
