//! Backend partitions run by the interpreter: `backend.partition` ops are flattened at compile
//! time into the block that holds them.
//!
//! A partition's region is isolated: its block arguments stand for the partition's operands and
//! its `backend.return` gives the partition's results. Flattening substitutes the operands for
//! the block arguments, moves the body's ops before the partition, substitutes the returned
//! values for the partition's results and erases the partition. The program keeps its meaning
//! and the interpreter sees one straight-line block again, so liveness and the memory plan work
//! across partition boundaries. Every partition is run this way whichever backend claimed it:
//! the interpreter is the fallback of every backend, and an op it has no kernel for still fails
//! at compile time with its name and location.

use ir::{Module, OpId, WalkOrder};

use crate::exec::{ExecError, loc_string};

/// The backend ops the interpreter runs: partitions, their terminator, and fused kernels
/// defined inline (run like fusion groups: a kernel's region is its semantics).
pub(crate) use dialect_backend::{KERNEL, PARTITION, RETURN};

/// Whether function `func` of `m` holds any partition.
pub(crate) fn has_partitions(m: &Module, func: OpId) -> bool {
    let mut found = false;
    m.walk(func, WalkOrder::PreOrder, &mut |op| found |= m.op_name(op) == PARTITION);
    found
}

/// Flattens every partition nested in `func` (outermost first).
pub(crate) fn flatten_partitions(m: &mut Module, func: OpId) -> Result<(), ExecError> {
    let mut parts = Vec::new();
    m.walk(func, WalkOrder::PreOrder, &mut |op| {
        if m.op_name(op) == PARTITION {
            parts.push(op);
        }
    });
    for p in parts {
        flatten_one(m, p)?;
    }
    Ok(())
}

fn flatten_one(m: &mut Module, p: OpId) -> Result<(), ExecError> {
    let bad = |m: &Module, what: &str| ExecError::Unsupported {
        what: format!("a `{PARTITION}` {what}"),
        loc: loc_string(m.loc(p)),
    };
    let region = match m.regions(p) {
        [r] => *r,
        _ => return Err(bad(m, "without exactly one region")),
    };
    let block = match m.region_blocks(region) {
        [b] => *b,
        _ => return Err(bad(m, "whose region does not have exactly one block")),
    };
    let operands = m.operands(p).to_vec();
    let block_args = m.block_args(block).to_vec();
    if operands.len() != block_args.len() {
        return Err(bad(m, &format!("with {} operand(s) for {} block argument(s)", operands.len(), block_args.len())));
    }
    for (&arg, &v) in block_args.iter().zip(&operands) {
        m.replace_all_uses(arg, v);
    }
    let ops = m.block_ops(block);
    let Some((&ret, body)) = ops.split_last() else { return Err(bad(m, "with an empty body")) };
    if m.op_name(ret) != RETURN {
        return Err(bad(m, &format!("whose body ends with `{}` instead of `{RETURN}`", m.op_name(ret))));
    }
    let returned = m.operands(ret).to_vec();
    let results = m.results(p).to_vec();
    if returned.len() != results.len() {
        return Err(bad(m, &format!("returning {} value(s) for {} result(s)", returned.len(), results.len())));
    }
    for &op in body {
        m.move_before(op, p).map_err(|e| bad(m, &format!("whose body cannot be moved out: {e}")))?;
    }
    for (&r, &v) in results.iter().zip(&returned) {
        m.replace_all_uses(r, v);
    }
    m.erase_op(p).map_err(|e| bad(m, &format!("that cannot be erased: {e}")))
}
