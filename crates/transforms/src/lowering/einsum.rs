//! The decomposition of `einsum`: each operand's repeated subscripts become `diagonal`s, the
//! subscripts no later operand or the output needs are summed out, and the operands are
//! contracted left to right, each pair as one `bmm` over its shared subscripts (batch
//! subscripts first, the shared ones the output still needs), then the result is permuted into
//! the output's order. Ellipses broadcast right-aligned, as the operands' sizes of 1 do.

use super::composite::static_shape;
use super::decompose::{DecompResult, DecompositionTable, one};
use super::rewrite::{Arg, OpBuilder};
use super::stacking::{int, ints, tensor_list};
use super::tensor_ops::permute;
use dialect_aten::op;
use ir::{OpId, ValueId};

/// Adds the `einsum` decomposition to `t`.
pub(super) fn add(t: &mut DecompositionTable) {
    t.insert(op::EINSUM, einsum);
}

/// Label ids: `A`–`Z` are 0–25, `a`–`z` 26–51 (the order of the implicit output), and the
/// ellipsis dimensions 52 onwards, right-aligned across the operands.
const ELLIPSIS: usize = 52;

/// One subscript list of the equation: its labels, and where its ellipsis is (as a label index).
struct Subscripts {
    labels: Vec<usize>,
    ellipsis: Option<usize>,
}

fn parse_subscripts(s: &str) -> Result<Subscripts, String> {
    let mut labels = Vec::new();
    let mut ellipsis = None;
    let cs: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        if c == '.' {
            if i + 2 >= cs.len() || cs[i + 1] != '.' || cs[i + 2] != '.' {
                return Err("einsum(): found '.' for operand that is not part of any ellipsis".into());
            }
            if ellipsis.is_some() {
                return Err("einsum(): found more than one ellipsis in a subscript list".into());
            }
            ellipsis = Some(labels.len());
            i += 3;
            continue;
        }
        labels.push(match c {
            'A'..='Z' => c as usize - 'A' as usize,
            'a'..='z' => c as usize - 'a' as usize + 26,
            _ => return Err(format!("einsum(): invalid subscript given in the equation: '{c}'")),
        });
        i += 1;
    }
    Ok(Subscripts { labels, ellipsis })
}

/// An operand on its way through the contraction: its value, one label per dimension, sizes.
#[derive(Clone)]
struct Term {
    x: ValueId,
    labels: Vec<usize>,
    sizes: Vec<i64>,
}

fn einsum(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let eq = b.with_args(op, |a| a.constant("equation"))?.ok_or("einsum: the equation must be constant")?;
    let eq: String = eq.as_str().ok_or("einsum: the equation must be a string")?.chars().filter(|c| !c.is_whitespace()).collect();
    let xs = tensor_list(b, op, "tensors")?;
    let (lhs, rhs) = match eq.split_once("->") {
        Some((l, r)) => (l, Some(r)),
        None => (eq.as_str(), None),
    };
    let terms: Vec<&str> = lhs.split(',').collect();
    if terms.len() != xs.len() {
        return Err(format!("einsum(): {} operands were given but the equation has subscripts for {}", xs.len(), terms.len()));
    }
    let dtype = b.dtype(xs[0]);
    if xs.iter().any(|&x| b.dtype(x) != dtype) {
        return Err("einsum(): the operands must all have the same dtype".into());
    }
    // Each operand's labels, its ellipsis expanded into right-aligned ellipsis labels.
    let mut parsed = Vec::new();
    let mut n_ell = 0usize;
    for (k, (&x, t)) in xs.iter().zip(&terms).enumerate() {
        let s = parse_subscripts(t)?;
        let sizes = static_shape(b, x, "einsum")?;
        let e = match s.ellipsis {
            Some(_) if sizes.len() >= s.labels.len() => sizes.len() - s.labels.len(),
            None if sizes.len() == s.labels.len() => 0,
            _ => {
                return Err(format!(
                    "einsum(): the number of subscripts in the equation ({}) does not match the number of dimensions ({}) for operand {k}{}",
                    s.labels.len(),
                    sizes.len(),
                    if s.ellipsis.is_some() { "" } else { " and no ellipsis was given" }
                ));
            }
        };
        n_ell = n_ell.max(e);
        parsed.push((x, s, sizes, e));
    }
    let mut ops: Vec<Term> = Vec::new();
    for (x, s, sizes, e) in parsed {
        let mut labels = s.labels.clone();
        if let Some(at) = s.ellipsis {
            let ell: Vec<usize> = (0..e).map(|j| ELLIPSIS + n_ell - e + j).collect();
            labels.splice(at..at, ell);
        }
        ops.push(Term { x, labels, sizes });
    }
    // The output labels.
    let out: Vec<usize> = match rhs {
        Some(r) => {
            let s = parse_subscripts(r)?;
            let mut labels = s.labels.clone();
            if let Some(at) = s.ellipsis {
                labels.splice(at..at, (0..n_ell).map(|j| ELLIPSIS + j));
            }
            for (i, l) in labels.iter().enumerate() {
                if labels[..i].contains(l) {
                    return Err(format!("einsum(): output subscript {} appears more than once in the output", label_char(*l)));
                }
                if !ops.iter().any(|t| t.labels.contains(l)) {
                    return Err(format!("einsum(): output subscript {} does not appear in the equation for any input operand", label_char(*l)));
                }
            }
            labels
        }
        None => {
            let mut labels: Vec<usize> = (0..n_ell).map(|j| ELLIPSIS + j).collect();
            for l in 0..ELLIPSIS {
                let count: usize = ops.iter().map(|t| t.labels.iter().filter(|&&x| x == l).count()).sum();
                if count == 1 {
                    labels.push(l);
                }
            }
            labels
        }
    };
    // The size of every label, broadcast over the operands.
    let mut size_of = std::collections::BTreeMap::<usize, i64>::new();
    for t in &ops {
        for (&l, &n) in t.labels.iter().zip(&t.sizes) {
            let e = size_of.entry(l).or_insert(n);
            if *e == 1 {
                *e = n;
            } else if n != 1 && n != *e {
                return Err(format!("einsum(): operands do not broadcast with remapped shapes: subscript {} has sizes {} and {n}", label_char(l), *e));
            }
        }
    }
    for t in ops.iter_mut() {
        diagonals(b, t)?;
    }
    let mut acc: Option<Term> = None;
    for i in 0..ops.len() {
        // The labels the output or a later operand needs.
        let mut keep = out.clone();
        for t in &ops[i + 1..] {
            keep.extend(&t.labels);
        }
        let t = ops[i].clone();
        let a = match acc.take() {
            None => t,
            Some(a) => contract(b, a, t, &keep, &size_of)?,
        };
        acc = Some(sum_out(b, a, &keep, None)?);
    }
    let a = acc.ok_or("einsum(): at least one operand is needed")?;
    let a = sum_out(b, a, &out, None)?;
    // Permute into the output order.
    let perm: Vec<i64> = out.iter().map(|l| a.labels.iter().position(|x| x == l).map(|p| p as i64).ok_or("einsum(): an output subscript was lost")).collect::<Result<_, _>>()?;
    if perm.iter().enumerate().all(|(i, &p)| p == i as i64) {
        // An equation that leaves its operand as it is still gives a tensor of its own.
        if xs.contains(&a.x) {
            return one(b.call(op::CLONE, &[a.x.into()]));
        }
        return Ok(Some(vec![a.x]));
    }
    one(permute(b, a.x, &perm))
}

fn label_char(l: usize) -> String {
    match l {
        0..=25 => ((b'A' + l as u8) as char).to_string(),
        26..=51 => ((b'a' + (l - 26) as u8) as char).to_string(),
        _ => "...".into(),
    }
}

/// Takes the diagonal over every repeated label of `t`, so each label appears once.
fn diagonals(b: &mut OpBuilder, t: &mut Term) -> Result<(), String> {
    loop {
        let mut pair = None;
        'find: for i in 0..t.labels.len() {
            for j in i + 1..t.labels.len() {
                if t.labels[i] == t.labels[j] {
                    pair = Some((i, j));
                    break 'find;
                }
            }
        }
        let Some((i, j)) = pair else { return Ok(()) };
        if t.sizes[i] != t.sizes[j] {
            return Err(format!(
                "einsum(): subscript {} is repeated for an operand but the sizes don't match, {} != {}",
                label_char(t.labels[i]),
                t.sizes[i],
                t.sizes[j]
            ));
        }
        t.x = b.call(op::DIAGONAL, &[t.x.into(), int(0), int(i as i64), int(j as i64)])?;
        let (l, s) = (t.labels[i], t.sizes[i]);
        t.labels.remove(j);
        t.labels.remove(i);
        t.sizes.remove(j);
        t.sizes.remove(i);
        t.labels.push(l);
        t.sizes.push(s);
    }
}

/// `t` with the labels outside `keep` (and outside `also`, when given) summed out.
fn sum_out(b: &mut OpBuilder, t: Term, keep: &[usize], also: Option<&[usize]>) -> Result<Term, String> {
    let drop: Vec<usize> = (0..t.labels.len()).filter(|&i| !keep.contains(&t.labels[i]) && !also.is_some_and(|a| a.contains(&t.labels[i]))).collect();
    if drop.is_empty() {
        return Ok(t);
    }
    let dims: Vec<i64> = drop.iter().map(|&i| i as i64).collect();
    let x = b.call(op::SUM_DIM_INTLIST, &[t.x.into(), ints(&dims)])?;
    let labels = (0..t.labels.len()).filter(|i| !drop.contains(i)).map(|i| t.labels[i]).collect();
    let sizes = (0..t.sizes.len()).filter(|i| !drop.contains(i)).map(|i| t.sizes[i]).collect();
    Ok(Term { x, labels, sizes })
}

/// `a` and `b` contracted over their shared labels that `keep` does not hold, as one `bmm`.
fn contract(bd: &mut OpBuilder, a: Term, b: Term, keep: &[usize], size_of: &std::collections::BTreeMap<usize, i64>) -> Result<Term, String> {
    let a = sum_out(bd, a, keep, Some(&b.labels))?;
    let b = sum_out(bd, b, keep, Some(&a.labels))?;
    let shared = |l: &usize| b.labels.contains(l);
    let batch: Vec<usize> = a.labels.iter().copied().filter(|l| shared(l) && keep.contains(l)).collect();
    let summed: Vec<usize> = a.labels.iter().copied().filter(|l| shared(l) && !keep.contains(l)).collect();
    let left: Vec<usize> = a.labels.iter().copied().filter(|l| !shared(l)).collect();
    let right: Vec<usize> = b.labels.iter().copied().filter(|l| !a.labels.contains(l)).collect();
    let size = |l: &usize| size_of.get(l).copied().unwrap_or(1);
    let prod = |ls: &[usize]| ls.iter().map(size).product::<i64>();
    let arrange = |bd: &mut OpBuilder, t: &Term, order: &[usize], rows: i64, cols: i64| -> Result<ValueId, String> {
        let perm: Vec<i64> = order.iter().map(|l| t.labels.iter().position(|x| x == l).unwrap_or(0) as i64).collect();
        let mut x = t.x;
        if perm.iter().enumerate().any(|(i, &p)| p != i as i64) {
            x = permute(bd, x, &perm)?;
        }
        let want: Vec<i64> = order.iter().map(size).collect();
        let have: Vec<i64> = perm.iter().map(|&p| t.sizes[p as usize]).collect();
        if want != have {
            x = bd.call(op::EXPAND, &[x.into(), ints(&want)])?;
        }
        bd.call(op::RESHAPE, &[x.into(), ints(&[prod(&batch), rows, cols])])
    };
    let mut ao = batch.clone();
    ao.extend(&left);
    ao.extend(&summed);
    let mut bo = batch.clone();
    bo.extend(&summed);
    bo.extend(&right);
    let am = arrange(bd, &a, &ao, prod(&left), prod(&summed))?;
    let bm = arrange(bd, &b, &bo, prod(&summed), prod(&right))?;
    let p = bd.call(op::BMM, &[am.into(), bm.into()])?;
    let mut labels = batch.clone();
    labels.extend(&left);
    labels.extend(&right);
    let sizes: Vec<i64> = labels.iter().map(size).collect();
    let x = bd.call(op::RESHAPE, &[p.into(), Arg::A(ir::Attribute::ints(&sizes))])?;
    Ok(Term { x, labels, sizes })
}
