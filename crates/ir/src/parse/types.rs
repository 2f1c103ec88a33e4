//! Types: builtin types, function types, aliases and tensor types with dims and encodings.

use super::*;
use crate::dtype::DType;
use crate::types::{Dim, TensorType, Type, TypeKind};

impl<'a> Parser<'a> {
    // ----- types -----

    pub(super) fn parse_type_list_until(&mut self, close: &str) -> PResult<Vec<Type>> {
        let mut out = Vec::new();
        if self.eat(close) {
            return Ok(out);
        }
        loop {
            out.push(self.parse_type()?);
            if !self.eat(",") {
                break;
            }
        }
        self.expect(close)?;
        Ok(out)
    }

    pub(super) fn parse_type(&mut self) -> PResult<Type> {
        self.enter()?;
        let r = self.parse_type_inner();
        self.leave();
        r
    }

    pub(super) fn parse_type_inner(&mut self) -> PResult<Type> {
        self.ws();
        let pos = self.pos;
        if self.eat("(") {
            let inputs = self.parse_type_list_until(")")?;
            self.expect("->")?;
            self.ws();
            let results = if self.peek() == b'(' && !self.looks_like_function_type() {
                self.pos += 1;
                self.parse_type_list_until(")")?
            } else {
                vec![self.parse_type()?]
            };
            return Ok(Type::function(inputs, results));
        }
        if self.peek() == b'!' {
            self.pos += 1;
            let id = self.suffix_id().ok_or_else(|| self.err("expected type name after '!'"))?.to_string();
            let Some((dialect, name)) = id.split_once('.') else {
                return self
                    .type_aliases
                    .get(&id)
                    .cloned()
                    .ok_or_else(|| self.err_at(pos, format!("undefined type alias '!{id}'")));
            };
            if let Some(t) = self.registered_type(dialect, name, pos)? {
                return Ok(t);
            }
            let body = self.opaque_body()?;
            if !self.ctx.is_registered_dialect(dialect) && !self.ctx.allow_unregistered() {
                return Err(self.err_at(
                    pos,
                    format!("type of unregistered dialect '{dialect}' (use --allow-unregistered-dialect)"),
                ));
            }
            return Ok(self.ctx.intern(TypeKind::Opaque { dialect: dialect.into(), name: name.into(), body: body.map(Into::into) }));
        }
        let Some(id) = self.bare_id() else {
            return Err(self.err(format!("expected type{}", self.found())));
        };
        match id {
            "i64" => Ok(self.ctx.intern(TypeKind::Int)),
            "f64" => Ok(self.ctx.intern(TypeKind::Float)),
            "i1" => Ok(self.ctx.intern(TypeKind::Bool)),
            "none" => Ok(self.ctx.intern(TypeKind::None)),
            "tuple" => {
                self.expect("<")?;
                let elems = self.parse_type_list_until(">")?;
                Ok(self.ctx.intern(TypeKind::Tuple(elems)))
            }
            "tensor" => self.parse_tensor_type(pos),
            other => Err(self.err_at(
                pos,
                format!("unknown or unsupported type '{other}' (scalars are i64, f64 and i1; tensors are tensor<...>)"),
            )),
        }
    }

    /// After `tensor`: `<2x?x*xf32, #prim.sym<s0>>`.
    pub(super) fn parse_tensor_type(&mut self, pos: usize) -> PResult<Type> {
        if self.peek() != b'<' {
            return Err(self.err(format!("expected '<' after 'tensor'{}", self.found())));
        }
        self.pos += 1;
        self.ws();
        let mut shape: Option<Vec<Dim>> = Some(Vec::new());
        if self.peek() == b'*' {
            self.pos += 1;
            if self.peek() != b'x' {
                return Err(self.err("expected 'x' after '*' in tensor type"));
            }
            self.pos += 1;
            shape = None;
        } else {
            loop {
                let c = self.peek();
                if c == b'?' {
                    self.pos += 1;
                    if let Some(s) = shape.as_mut() {
                        s.push(Dim::Unknown);
                    }
                } else if c.is_ascii_digit() {
                    let start = self.pos;
                    while self.peek().is_ascii_digit() {
                        self.pos += 1;
                    }
                    // `2xf32`: the digits are a dimension only when an `x` follows.
                    if self.peek() != b'x' {
                        self.pos = start;
                        break;
                    }
                    let n: i64 = self.src[start..self.pos]
                        .parse()
                        .map_err(|_| self.err_at(start, "tensor dimension out of range"))?;
                    if let Some(s) = shape.as_mut() {
                        s.push(Dim::Static(n));
                    }
                } else {
                    break;
                }
                if self.peek() != b'x' {
                    return Err(self.err(format!("expected 'x' in tensor dimension list{}", self.found())));
                }
                self.pos += 1;
            }
        }
        let epos = self.pos;
        let dtype = if self.src[self.pos..].starts_with("!prim.any") {
            self.pos += "!prim.any".len();
            None
        } else {
            let Some(e) = self.bare_id() else {
                return Err(self.err(format!("expected tensor element type{}", self.found())));
            };
            // `complex<f32>`: the element type with its part type.
            let e = if e == "complex" && self.src[self.pos..].starts_with('<') {
                let close = self.src[self.pos..].find('>').map(|i| self.pos + i + 1);
                let Some(close) = close else {
                    return Err(self.err("expected '>' closing the complex element type"));
                };
                let spelled = format!("complex{}", &self.src[self.pos..close]);
                self.pos = close;
                spelled
            } else {
                e.to_string()
            };
            Some(DType::from_mlir_name(&e).ok_or_else(|| self.err_at(epos, format!("unsupported tensor element type '{e}'")))?)
        };
        if self.eat(",") {
            self.ws();
            let ep = self.pos;
            if !self.src[self.pos..].starts_with("#prim.sym<") {
                return Err(self.err_at(ep, "unsupported tensor encoding (only #prim.sym<...> is known)"));
            }
            self.pos += "#prim.sym<".len();
            let mut names = Vec::new();
            loop {
                self.ws();
                if self.peek() == b'?' {
                    self.pos += 1;
                    names.push(None);
                } else if self.peek() == b'"' {
                    names.push(Some(self.string_lit()?));
                } else {
                    let n = self.bare_id().ok_or_else(|| self.err("expected symbol name in #prim.sym"))?;
                    names.push(Some(n.to_string()));
                }
                if !self.eat(",") {
                    break;
                }
            }
            self.expect(">")?;
            let Some(dims) = shape.as_mut() else {
                return Err(self.err_at(ep, "an unranked tensor cannot name symbolic dimensions"));
            };
            let dynamic: Vec<usize> = dims.iter().enumerate().filter(|(_, d)| !d.is_static()).map(|(i, _)| i).collect();
            if dynamic.len() != names.len() {
                return Err(self.err_at(
                    ep,
                    format!("#prim.sym names {} dimension(s) but the tensor has {} dynamic one(s)", names.len(), dynamic.len()),
                ));
            }
            for (i, n) in dynamic.into_iter().zip(names) {
                if let Some(n) = n {
                    dims[i] = Dim::Sym(n.into());
                }
            }
        }
        if !self.eat(">") {
            return Err(self.err(format!("expected '>' to end tensor type{}", self.found())));
        }
        let _ = pos;
        Ok(self.ctx.intern(TypeKind::Tensor(TensorType { dtype, shape })))
    }

}
