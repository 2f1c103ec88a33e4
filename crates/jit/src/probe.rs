//! Whether the JIT lowers an op: the op is lowered on its own, over sample inputs, by the same
//! code that lowers fusion groups (what the op coverage report lists as JIT-fusible).

use dialect_aten::default_attribute;
use ir::schema::SchemaType;
use ir::{Attribute, Context, DType};

use crate::group::{Arg, Builder};
use crate::lowering::JitLowering;

/// Whether the JIT lowers `name` (an op of `ctx`) for `f32` tensor operands: every tensor
/// argument an input node, every other argument its schema default or, lacking one, a small
/// number.
pub fn lowers(ctx: &Context, name: &str) -> bool {
    let name = ctx.mirrored(name);
    let Some(schema) = ctx.op_def(name).and_then(|d| d.schema.clone()) else { return false };
    if schema.returns.len() != 1 || schema.is_mutable() {
        return false;
    }
    let mut b = Builder::new();
    let mut args = Vec::with_capacity(schema.args.len());
    for (i, a) in schema.args.iter().enumerate() {
        let arg = match (a.ty.unwrap_optional(), &a.default) {
            (SchemaType::Tensor, None) => Arg::Node(b.input(i, DType::F32, vec![4])),
            (_, Some(d)) => match default_attribute(d, &a.ty) {
                Some(attr) => Arg::Attr(attr),
                None => return false,
            },
            (SchemaType::Scalar | SchemaType::Number | SchemaType::Float, None) => Arg::Attr(Attribute::float(0.5)),
            (SchemaType::Int, None) => Arg::Attr(Attribute::Int(1)),
            (SchemaType::Bool, None) => Arg::Attr(Attribute::Bool(false)),
            _ => return false,
        };
        args.push(arg);
    }
    match ctx.interface::<JitLowering>(name) {
        Some(&l) => b.lower_with(name, l, &args).is_ok(),
        None => b.lower(name, &args).is_ok(),
    }
}
