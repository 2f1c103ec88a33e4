//! Merging what is known about a value with what inference finds: refinement and join.

use dialect_prim::kinds::{Kind as PK, TypeExt as _};
use super::*;

/// Merges what is known about a value (`old`) with an inferred type (`new`): the more specific
/// of each part. `Err` when they contradict each other (different dtypes, ranks or static sizes).
pub fn refine(old: &Type, new: &Type) -> Result<Type, String> {
    match (old.pk(), new.pk()) {
        (PK::Tensor(o), PK::Tensor(n)) => {
            let dtype = match (o.dtype, n.dtype) {
                (Some(x), Some(y)) if x != y => {
                    return Err(format!("dtype {x} conflicts with inferred {y}"));
                }
                (x, y) => x.or(y),
            };
            let shape = match (&o.shape, &n.shape) {
                (None, s) | (s, None) => s.clone(),
                (Some(x), Some(y)) => {
                    if x.len() != y.len() {
                        return Err(format!(
                            "rank {} conflicts with inferred rank {}",
                            x.len(),
                            y.len()
                        ));
                    }
                    let mut out = Vec::with_capacity(x.len());
                    for (i, (p, q)) in x.iter().zip(y).enumerate() {
                        out.push(match (p, q) {
                            (Dim::Static(a), Dim::Static(b)) if a != b => {
                                return Err(format!(
                                    "size {a} of dimension {i} conflicts with inferred size {b}"
                                ));
                            }
                            (Dim::Static(_), _) => p.clone(),
                            (_, Dim::Static(_)) => q.clone(),
                            (Dim::Sym(_), _) => p.clone(),
                            (Dim::Unknown, _) => q.clone(),
                        });
                    }
                    Some(out)
                }
            };
            Ok(Type::tensor_of(TensorType { dtype, shape }))
        }
        (PK::List(o), PK::List(n)) => Ok(dialect_prim::kinds::list(refine(o, n)?)),
        (PK::Any, _) => Ok(new.clone()),
        _ => Ok(old.clone()),
    }
}

/// What two types have in common (their least upper bound): the type of a value that is one
/// or the other, as a `prim.If` result or a loop-carried value. Differing dtypes, ranks or sizes
/// become unknown; `None` when the two are not the same kind of type (a tensor and an int).
pub fn join(a: &Type, b: &Type) -> Option<Type> {
    if a == b {
        return Some(a.clone());
    }
    match (a.pk(), b.pk()) {
        (PK::Tensor(x), PK::Tensor(y)) => {
            let dtype = if x.dtype == y.dtype { x.dtype } else { None };
            let shape = match (&x.shape, &y.shape) {
                (Some(p), Some(q)) if p.len() == q.len() => Some(
                    p.iter()
                        .zip(q)
                        .map(|(d, e)| if d == e { d.clone() } else { Dim::Unknown })
                        .collect(),
                ),
                _ => None,
            };
            Some(Type::tensor_of(TensorType { dtype, shape }))
        }
        (PK::List(x), PK::List(y)) => Some(dialect_prim::kinds::list(join(x, y)?)),
        (PK::Optional(x), PK::Optional(y)) => Some(dialect_prim::kinds::optional(join(x, y)?)),
        (PK::Tuple(xs), PK::Tuple(ys)) if xs.len() == ys.len() => Some(Type::tuple(
            xs.iter()
                .zip(ys)
                .map(|(x, y)| join(x, y))
                .collect::<Option<Vec<_>>>()?,
        )),
        _ => None,
    }
}
