//! Verifiers of the backend ops.

use ir::{Attribute, Context, Module, OpId, Type, TypeKind};

type R = Result<(), String>;

fn types(m: &Module, vals: &[ir::ValueId]) -> Vec<Type> {
    vals.iter().map(|&v| m.value_type(v).clone()).collect()
}

fn list(ts: &[Type]) -> String {
    ts.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", ")
}

/// `backend.partition` and `backend.kernel`: one block taking the operands, ending in `backend.return`.
pub fn region_op(_: &Context, m: &Module, op: OpId) -> R {
    let r = m.regions(op)[0];
    let [b] = m.region_blocks(r) else {
        return Err(format!("body must have exactly one block, found {}", m.region_blocks(r).len()));
    };
    let args = types(m, m.block_args(*b));
    let operands = types(m, m.operands(op));
    if args != operands {
        return Err(format!("body block takes ({}) but the operands are ({})", list(&args), list(&operands)));
    }
    let Some(last) = m.last_op(*b).filter(|&l| m.op_name(l) == crate::RETURN) else {
        return Err("body must end with 'backend.return'".into());
    };
    let got = types(m, m.operands(last));
    let results = types(m, m.results(op));
    if got != results {
        return Err(format!("body returns ({}) but the op's results are ({})", list(&got), list(&results)));
    }
    if m.attr(op, crate::BACKEND_ATTR).and_then(Attribute::as_str).is_some_and(str::is_empty) {
        return Err("backend name must not be empty".into());
    }
    Ok(())
}

pub fn return_op(_: &Context, m: &Module, op: OpId) -> R {
    match m.parent_op(op).map(|p| m.op_name(p)) {
        Some(crate::PARTITION) | Some(crate::KERNEL) => Ok(()),
        _ => Err("expects parent op 'backend.partition' or 'backend.kernel'".into()),
    }
}

pub fn call(_: &Context, m: &Module, op: OpId) -> R {
    if m.attr(op, "kernel").and_then(Attribute::as_str).is_some_and(str::is_empty) {
        return Err("kernel name must not be empty".into());
    }
    Ok(())
}

pub fn alloc(_: &Context, m: &Module, op: OpId) -> R {
    let t = m.value_type(m.results(op)[0]);
    if !t.is_tensor() {
        return Err(format!("result must be a tensor, found {t}"));
    }
    for &v in m.operands(op) {
        if *m.value_type(v).kind() != TypeKind::Int {
            return Err(format!("dynamic sizes must be i64, found {}", m.value_type(v)));
        }
    }
    for k in ["size", "offset"] {
        if m.attr(op, k).and_then(Attribute::as_int).is_some_and(|v| v < 0) {
            return Err(format!("'{k}' must not be negative"));
        }
    }
    Ok(())
}

pub fn out_call(_: &Context, m: &Module, op: OpId) -> R {
    let outs = m.attr(op, "outs").and_then(Attribute::as_int).unwrap_or(1);
    let operands = m.operands(op);
    let n = usize::try_from(outs).ok().filter(|&n| n >= 1 && n <= operands.len()).ok_or_else(|| {
        format!("'outs' is {outs}, but there are {} operand(s)", operands.len())
    })?;
    let bufs = types(m, &operands[operands.len() - n..]);
    let results = types(m, m.results(op));
    if bufs != results {
        return Err(format!("results ({}) must have the types of the out buffers ({})", list(&results), list(&bufs)));
    }
    if let Some(t) = bufs.iter().find(|t| !t.is_tensor()) {
        return Err(format!("out buffers must be tensors, found {t}"));
    }
    Ok(())
}
