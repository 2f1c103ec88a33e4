//! Type annotations (`Optional[List[Tensor]]`, `Tuple[int, int]`, `Final[int]`) as IR types.

use dialect_prim::kinds::{Kind as PK, TypeExt as _};
use ir::{Type};

use super::{Compiler, R};
use crate::torchscript_pt::lang::ast::{Expr, ExprKind};

/// What an annotation denotes.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Ann {
    /// A type IR values have.
    Ty(Type),
    /// `Dict[K, V]`: dicts exist only at compile time.
    Dict,
    /// `number` (TorchScript's `Scalar`).
    Number,
    /// A TorchScript class, by qualified name.
    Class(String),
}

impl Compiler<'_> {
    /// The annotation `e` spells.
    pub(crate) fn annotation(&mut self, e: &Expr) -> R<Ann> {
        let bad = |c: &Self, what: String| c.err(e.at, format!("unsupported type annotation {what}"));
        match &e.kind {
            ExprKind::None => Ok(Ann::Ty(Type::none())),
            ExprKind::Name(_) | ExprKind::Attribute(..) => {
                let name = e.dotted().unwrap_or_default();
                Ok(Ann::Ty(match name.as_str() {
                    "Tensor" | "torch.Tensor" => Type::unknown_tensor(),
                    "int" | "SymInt" | "ScalarType" | "Layout" | "MemoryFormat" => Type::int(),
                    "float" | "SymFloat" => Type::float(),
                    "bool" | "SymBool" => Type::bool(),
                    "str" => dialect_prim::kinds::str_type(),
                    "NoneType" => Type::none(),
                    "Device" | "torch.device" => dialect_prim::kinds::device_type(),
                    "Any" => dialect_prim::kinds::any_type(),
                    "number" | "Scalar" => return Ok(Ann::Number),
                    n if n.starts_with("__torch__.") => return Ok(Ann::Class(n.to_owned())),
                    other => return Err(bad(self, format!("`{other}`"))),
                }))
            }
            ExprKind::Subscript(head, index) => {
                let head_name = head.dotted().unwrap_or_default();
                let args: Vec<&Expr> = match &index.kind {
                    ExprKind::Tuple(items) => items.iter().collect(),
                    _ => vec![&**index],
                };
                let one = |c: &mut Self| -> R<Type> {
                    match args.as_slice() {
                        [a] => c.value_type(a),
                        _ => Err(bad(c, format!("`{head_name}[…]` with {} arguments", args.len()))),
                    }
                };
                Ok(match head_name.as_str() {
                    "List" => Ann::Ty(dialect_prim::kinds::list(one(self)?)),
                    "Optional" => Ann::Ty(optional(one(self)?)),
                    "Final" => return match args.as_slice() {
                        [a] => self.annotation(a),
                        _ => Err(bad(self, "`Final` with several arguments".into())),
                    },
                    "Tuple" => {
                        if let [Expr { kind: ExprKind::Tuple(t), .. }] = args.as_slice()
                            && t.is_empty()
                        {
                            return Ok(Ann::Ty(Type::tuple(Vec::new())));
                        }
                        Ann::Ty(Type::tuple(args.iter().map(|a| self.value_type(a)).collect::<R<_>>()?))
                    }
                    "Dict" => Ann::Dict,
                    "Union" => {
                        // `Union[T, None]` is `Optional[T]`; other unions have no IR type.
                        let types = args.iter().map(|a| self.annotation(a)).collect::<R<Vec<_>>>()?;
                        let some: Vec<&Type> = types
                            .iter()
                            .filter_map(|t| match t {
                                Ann::Ty(t) if t.pk() != PK::None => Some(t),
                                _ => None,
                            })
                            .collect();
                        match some.as_slice() {
                            [t] if types.len() == 2 => Ann::Ty(optional((*t).clone())),
                            _ => Ann::Ty(dialect_prim::kinds::any_type()),
                        }
                    }
                    other => return Err(bad(self, format!("`{other}[…]`"))),
                })
            }
            _ => Err(bad(self, "that is not a type".into())),
        }
    }

    /// The IR type of an annotation that must describe values.
    pub(crate) fn value_type(&mut self, e: &Expr) -> R<Type> {
        match self.annotation(e)? {
            Ann::Ty(t) => Ok(t),
            Ann::Number => Ok(dialect_prim::kinds::any_type()),
            Ann::Dict => Err(self.err(e.at, "dict values are supported only as literals built in the program")),
            Ann::Class(c) => Err(self.err(e.at, format!("values of class `{c}` are not supported"))),
        }
    }
}

/// `Optional[t]`, which is `t` itself when `t` may already be None.
pub(crate) fn optional(t: Type) -> Type {
    match t.pk() {
        PK::Optional(_) | PK::None | PK::Any => t,
        _ => dialect_prim::kinds::optional(t),
    }
}
