//! Attributes: dictionaries, literals, `#dialect` attributes and dense elements.

use super::*;
use crate::attributes::{Attribute, DenseAttr, FloatType, IntType};
use crate::dtype::DType;
use crate::types::{TensorType, Type, TypeKind};
use std::sync::Arc;

impl<'a> Parser<'a> {
    // ----- attributes -----

    /// `{a = 1 : i64, b, "c d" = "x"}` -> sorted, duplicates rejected.
    pub(super) fn parse_attr_dict_body(&mut self) -> PResult<Vec<(Arc<str>, Attribute)>> {
        self.expect("{")?;
        let mut out: Vec<(Arc<str>, Attribute)> = Vec::new();
        self.ws();
        if self.eat("}") {
            return Ok(out);
        }
        loop {
            self.ws();
            let kpos = self.pos;
            let key = if self.peek() == b'"' {
                self.string_lit()?
            } else {
                self.bare_id().ok_or_else(|| self.err(format!("expected attribute name{}", self.found())))?.to_string()
            };
            let value = if self.eat("=") { self.parse_attr()? } else { Attribute::Unit };
            if out.iter().any(|(k, _)| **k == *key) {
                return Err(self.err_at(kpos, format!("duplicate key '{key}' in dictionary attribute")));
            }
            out.push((key.into(), value));
            if !self.eat(",") {
                break;
            }
        }
        self.expect("}")?;
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    pub(super) fn parse_attr(&mut self) -> PResult<Attribute> {
        self.enter()?;
        let r = self.parse_attr_inner();
        self.leave();
        r
    }

    pub(super) fn parse_attr_inner(&mut self) -> PResult<Attribute> {
        self.ws();
        let pos = self.pos;
        match self.peek() {
            b'"' => Ok(Attribute::Str(self.string_lit()?.into())),
            b'[' => {
                self.pos += 1;
                let mut items = Vec::new();
                self.ws();
                if !self.eat("]") {
                    loop {
                        items.push(self.parse_attr()?);
                        if !self.eat(",") {
                            break;
                        }
                    }
                    self.expect("]")?;
                }
                Ok(Attribute::array(items))
            }
            b'{' => Ok(Attribute::Dict(self.parse_attr_dict_body()?.into())),
            b'@' => {
                self.pos += 1;
                Ok(Attribute::SymbolRef(self.symbol_name()?.into()))
            }
            b'#' => self.parse_hash_attr(),
            b'-' | b'+' | b'0'..=b'9' => {
                let lit = self.parse_untyped_literal()?;
                if self.eat(":") {
                    if let Some(width) = self.sized_scalar_type() {
                        return self.sized_literal(lit, width, pos);
                    }
                    let t = self.parse_type()?;
                    self.type_literal(lit, &t, pos)
                } else {
                    match lit {
                        Literal::Int(text) => Ok(Attribute::Int(self.parse_i64(&text, pos)?)),
                        Literal::Float(text) => Ok(Attribute::float(self.parse_f64(&text, pos)?)),
                        _ => Err(self.err_at(pos, "expected a number")),
                    }
                }
            }
            _ => {
                if self.eat_kw("unit") {
                    return Ok(Attribute::Unit);
                }
                if self.eat_kw("true") {
                    return Ok(Attribute::Bool(true));
                }
                if self.eat_kw("false") {
                    return Ok(Attribute::Bool(false));
                }
                if self.src[self.pos..].starts_with("dense<") {
                    let lit = self.parse_untyped_literal()?;
                    self.expect(":")?;
                    let t = self.parse_type()?;
                    return self.type_literal(lit, &t, pos);
                }
                if self.src[self.pos..].starts_with("dense_resource<") {
                    return Err(self.err("'dense_resource' attributes are not supported; use 'dense'"));
                }
                // Anything else must be a type used as an attribute.
                let t = self.parse_type().map_err(|_| self.err_at(pos, format!("expected attribute value{}", self.found_at(pos))))?;
                Ok(Attribute::Type(t))
            }
        }
    }

    /// After a literal's `:`, a builtin scalar type that is not a value type of this IR (`i8`,
    /// `i16`, `i32`, `index`, `f16`, `bf16`, `f32`), consumed; `None` (nothing consumed) otherwise.
    pub(super) fn sized_scalar_type(&mut self) -> Option<SizedScalar> {
        self.ws();
        let save = self.pos;
        let width = match self.bare_id() {
            Some("i8") => SizedScalar::Int(IntType::I8),
            Some("i16") => SizedScalar::Int(IntType::I16),
            Some("i32") => SizedScalar::Int(IntType::I32),
            Some("index") => SizedScalar::Int(IntType::Index),
            Some("f16") => SizedScalar::Float(FloatType::F16),
            Some("bf16") => SizedScalar::Float(FloatType::BF16),
            Some("f32") => SizedScalar::Float(FloatType::F32),
            _ => {
                self.pos = save;
                return None;
            }
        };
        Some(width)
    }

    /// `3 : i32`, `1.5 : f16`, `0x7F80 : bf16`: a literal of a builtin width other than i64/f64/i1.
    pub(super) fn sized_literal(&self, lit: Literal, width: SizedScalar, pos: usize) -> PResult<Attribute> {
        let hex = |t: &str| t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")).map(str::to_string);
        match (lit, width) {
            (Literal::Int(t), SizedScalar::Int(ty)) => {
                let v = match hex(&t) {
                    Some(h) => i128::from_str_radix(&h, 16),
                    None => t.parse::<i128>(),
                }
                .map_err(|_| self.err_at(pos, format!("invalid integer literal '{t}'")))?;
                Attribute::integer(v, Some(ty))
                    .ok_or_else(|| self.err_at(pos, format!("integer {t} does not fit in {}", ty.name())))
            }
            (Literal::Int(t) | Literal::Float(t), SizedScalar::Float(ty)) => {
                let bits = match hex(&t) {
                    Some(h) => u32::from_str_radix(&h, 16).ok().filter(|_| h.len() <= ty.hex_digits()).ok_or_else(|| {
                        self.err_at(pos, format!("hexadecimal literal '{t}' does not fit the bits of {}", ty.name()))
                    })?,
                    None => ty.parse_decimal(&t).ok_or_else(|| self.err_at(pos, format!("invalid float literal '{t}'")))?,
                };
                Ok(Attribute::SizedFloat { bits, ty })
            }
            (Literal::Float(_), SizedScalar::Int(ty)) => {
                Err(self.err_at(pos, format!("a float literal cannot have the integer type {}", ty.name())))
            }
            (_, SizedScalar::Int(ty)) => Err(self.err_at(pos, format!("expected an integer literal of type {}", ty.name()))),
            (_, SizedScalar::Float(ty)) => Err(self.err_at(pos, format!("expected a float literal of type {}", ty.name()))),
        }
    }

    pub(super) fn found_at(&self, pos: usize) -> String {
        let rest = &self.src[pos.min(self.src.len())..];
        if rest.is_empty() {
            return ", found end of input".into();
        }
        let tok: String = rest.chars().take_while(|c| !c.is_whitespace()).take(20).collect();
        format!(", found '{tok}'")
    }

    /// `#alias`, `#dialect.name...` of a registered kind (through its hook), or `#dialect.name<body>` kept opaque.
    pub(super) fn parse_hash_attr(&mut self) -> PResult<Attribute> {
        let pos = self.pos;
        self.pos += 1;
        let id = self.suffix_id().ok_or_else(|| self.err("expected attribute name after '#'"))?.to_string();
        let Some((dialect, name)) = id.split_once('.') else {
            return self
                .attr_aliases
                .get(&id)
                .cloned()
                .ok_or_else(|| self.err_at(pos, format!("undefined attribute alias '#{id}'")));
        };
        if let Some(a) = self.registered_attr(dialect, name, pos)? {
            return Ok(a);
        }
        let body = self.opaque_body()?;
        if !self.ctx.is_registered_dialect(dialect) && !self.ctx.allow_unregistered() {
            return Err(self.err_at(
                pos,
                format!("attribute of unregistered dialect '{dialect}' (use --allow-unregistered-dialect)"),
            ));
        }
        Ok(Attribute::Opaque { dialect: dialect.into(), name: name.into(), body: body.map(Into::into) })
    }

    /// A balanced `<...>` body, returned raw; `None` when there is none.
    pub(super) fn opaque_body(&mut self) -> PResult<Option<String>> {
        if self.peek() != b'<' {
            return Ok(None);
        }
        let start = self.pos;
        let mut depth = 0i32;
        loop {
            match self.peek() {
                0 if self.eof() => return Err(self.err_at(start, "unbalanced '<' in dialect attribute or type")),
                b'<' | b'(' | b'[' | b'{' => depth += 1,
                b'>' | b')' | b']' | b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        self.pos += 1;
                        break;
                    }
                }
                b'"' => {
                    self.string_lit()?;
                    continue;
                }
                _ => {}
            }
            self.pos += 1;
        }
        Ok(Some(self.src[start + 1..self.pos - 1].to_string()))
    }

    pub(super) fn parse_f64(&self, text: &str, pos: usize) -> PResult<f64> {
        text.parse::<f64>().map_err(|_| self.err_at(pos, format!("invalid float literal '{text}'")))
    }

    pub(super) fn parse_untyped_literal(&mut self) -> PResult<Literal> {
        self.ws();
        let pos = self.pos;
        if let Some((t, is_float)) = self.number_text() {
            return Ok(if is_float { Literal::Float(t.to_string()) } else { Literal::Int(t.to_string()) });
        }
        if self.src[self.pos..].starts_with("dense<") {
            self.pos += "dense<".len();
            let body = self.parse_dense_body()?;
            self.expect(">")?;
            return Ok(Literal::Dense(body));
        }
        if self.eat_kw("true") {
            return Ok(Literal::Attr(Attribute::Bool(true)));
        }
        if self.eat_kw("false") {
            return Ok(Literal::Attr(Attribute::Bool(false)));
        }
        let _ = pos;
        Ok(Literal::Attr(self.parse_attr()?))
    }

    /// Gives a literal its type (`1 : i64`, `1.5 : f64`, `0x7FF0000000000000 : f64`, `dense<...> : tensor<...>`).
    pub(super) fn type_literal(&self, lit: Literal, ty: &Type, pos: usize) -> PResult<Attribute> {
        match (lit, ty.kind()) {
            (Literal::Int(t), TypeKind::Int) => Ok(Attribute::Int(self.parse_i64(&t, pos)?)),
            (Literal::Int(t), TypeKind::Float) => {
                if t.starts_with("0x") || t.starts_with("0X") {
                    let bits = u64::from_str_radix(&t[2..], 16)
                        .map_err(|_| self.err_at(pos, "hexadecimal float literal out of range"))?;
                    Ok(Attribute::float(f64::from_bits(bits)))
                } else {
                    Ok(Attribute::float(self.parse_f64(&t, pos)?))
                }
            }
            (Literal::Float(t), TypeKind::Float) => Ok(Attribute::float(self.parse_f64(&t, pos)?)),
            (Literal::Int(t), TypeKind::Bool) => match t.as_str() {
                "0" => Ok(Attribute::Bool(false)),
                "1" => Ok(Attribute::Bool(true)),
                _ => Err(self.err_at(pos, "an i1 literal must be 0 or 1")),
            },
            (Literal::Dense(body), TypeKind::Tensor(tt)) => self.build_dense(body, tt, pos),
            (Literal::Attr(a), _) => {
                if let Some(vt) = a.value_type() {
                    if vt != *ty {
                        return Err(self.err_at(pos, format!("{} literal does not have type '{ty}'", a.kind_name())));
                    }
                }
                Ok(a)
            }
            (Literal::Int(_) | Literal::Float(_), TypeKind::Tensor(_)) => {
                Err(self.err_at(pos, "a tensor constant needs 'dense<...>'"))
            }
            (_, _) => Err(self.err_at(
                pos,
                format!("literal cannot have type '{ty}' (integer attributes are i64, float attributes f64)"),
            )),
        }
    }

    pub(super) fn parse_dense_body(&mut self) -> PResult<DenseBody> {
        self.ws();
        if self.peek() == b'"' {
            let p = self.pos;
            let s = self.string_lit()?;
            let hex = s.strip_prefix("0x").ok_or_else(|| self.err_at(p, "dense hex data must start with '0x'"))?;
            if hex.len() % 2 != 0 {
                return Err(self.err_at(p, "dense hex data has an odd number of digits"));
            }
            let mut bytes = Vec::with_capacity(hex.len() / 2);
            for i in (0..hex.len()).step_by(2) {
                let b = u8::from_str_radix(&hex[i..i + 2], 16).map_err(|_| self.err_at(p, "invalid hex digit in dense data"))?;
                bytes.push(b);
            }
            return Ok(DenseBody::Hex(bytes));
        }
        if self.peek() == b'>' {
            return Ok(DenseBody::List(Vec::new()));
        }
        self.parse_dense_elem()
    }

    pub(super) fn parse_dense_elem(&mut self) -> PResult<DenseBody> {
        self.enter()?;
        self.ws();
        let r = if self.eat("[") {
            let mut items = Vec::new();
            self.ws();
            if !self.eat("]") {
                loop {
                    items.push(self.parse_dense_elem()?);
                    if !self.eat(",") {
                        break;
                    }
                }
                self.expect("]")?;
            }
            Ok(DenseBody::List(items))
        } else if self.eat_kw("true") {
            Ok(DenseBody::Scalar("1".into(), self.pos))
        } else if self.eat_kw("false") {
            Ok(DenseBody::Scalar("0".into(), self.pos))
        } else {
            let p = self.pos;
            match self.number_text() {
                Some((t, _)) => Ok(DenseBody::Scalar(t.to_string(), p)),
                None => Err(self.err(format!("expected dense element{}", self.found()))),
            }
        };
        self.leave();
        r
    }

    pub(super) fn build_dense(&self, body: DenseBody, tt: &TensorType, pos: usize) -> PResult<Attribute> {
        let (Some(dtype), Some(dims)) = (tt.dtype, tt.static_dims()) else {
            return Err(self.err_at(pos, "a dense attribute needs a static shape and a known dtype"));
        };
        let n: i64 = dims.iter().product();
        let mut bytes = Vec::with_capacity(n as usize * dtype.size_bytes());
        match body {
            DenseBody::Hex(b) => bytes = b,
            DenseBody::Scalar(text, p) => {
                for _ in 0..n.max(0) {
                    self.push_element(&mut bytes, dtype, &text, p)?;
                }
            }
            DenseBody::List(items) => {
                self.flatten_dense(&items, &dims, 0, dtype, &mut bytes, pos)?;
                if dims.is_empty() {
                    return Err(self.err_at(pos, "a rank-0 dense attribute takes a single element"));
                }
            }
        }
        DenseAttr::new(dtype, &dims, bytes.into())
            .map(Attribute::Dense)
            .map_err(|e| self.err_at(pos, e))
    }

    pub(super) fn flatten_dense(&self, items: &[DenseBody], dims: &[i64], depth: usize, dtype: DType, out: &mut Vec<u8>, pos: usize) -> PResult<()> {
        let Some(&want) = dims.get(depth) else {
            return Err(self.err_at(pos, "dense literal is nested deeper than the tensor's rank"));
        };
        if items.len() as i64 != want {
            return Err(self.err_at(
                pos,
                format!("dense literal has {} elements in dimension {depth}, but the type says {want}", items.len()),
            ));
        }
        for it in items {
            match it {
                DenseBody::List(sub) => self.flatten_dense(sub, dims, depth + 1, dtype, out, pos)?,
                DenseBody::Scalar(text, p) => {
                    if depth + 1 != dims.len() {
                        return Err(self.err_at(*p, "dense literal is not nested as deeply as the tensor's rank"));
                    }
                    self.push_element(out, dtype, text, *p)?
                }
                DenseBody::Hex(_) => return Err(self.err_at(pos, "hex data cannot be nested")),
            }
        }
        Ok(())
    }

    pub(super) fn push_element(&self, out: &mut Vec<u8>, dtype: DType, text: &str, p: usize) -> PResult<()> {
        let hex_bits = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X"));
        match dtype {
            DType::F32 => {
                let v = match hex_bits {
                    Some(h) => f32::from_bits(u32::from_str_radix(h, 16).map_err(|_| self.err_at(p, "bad f32 bits"))?),
                    None => text.parse::<f32>().map_err(|_| self.err_at(p, format!("invalid f32 literal '{text}'")))?,
                };
                out.extend(v.to_le_bytes());
            }
            DType::F64 => {
                let v = match hex_bits {
                    Some(h) => f64::from_bits(u64::from_str_radix(h, 16).map_err(|_| self.err_at(p, "bad f64 bits"))?),
                    None => self.parse_f64(text, p)?,
                };
                out.extend(v.to_le_bytes());
            }
            DType::F16 | DType::BF16 => {
                let h = hex_bits.ok_or_else(|| self.err_at(p, "f16/bf16 dense elements must be given as hex data"))?;
                let v = u16::from_str_radix(h, 16).map_err(|_| self.err_at(p, "bad 16-bit float bits"))?;
                out.extend(v.to_le_bytes());
            }
            _ => {
                let v = self.parse_i64(text, p)?;
                let fits = match dtype {
                    DType::Bool => v == 0 || v == 1,
                    DType::U8 => (0..=255).contains(&v),
                    DType::I8 => (-128..=127).contains(&v),
                    DType::I16 => (i16::MIN as i64..=i16::MAX as i64).contains(&v),
                    DType::I32 => (i32::MIN as i64..=i32::MAX as i64).contains(&v),
                    _ => true,
                };
                if !fits {
                    return Err(self.err_at(p, format!("value {v} does not fit in {dtype}")));
                }
                let le = v.to_le_bytes();
                out.extend(&le[..dtype.size_bytes()]);
            }
        }
        Ok(())
    }

}

/// A builtin scalar type of an attribute literal other than i64, f64 and i1.
#[derive(Clone, Copy)]
pub(super) enum SizedScalar {
    Int(IntType),
    Float(FloatType),
}

pub(super) enum Literal {
    Int(String),
    Float(String),
    Dense(DenseBody),
    Attr(Attribute),
}

pub(super) enum DenseBody {
    Hex(Vec<u8>),
    Scalar(String, usize),
    List(Vec<DenseBody>),
}
