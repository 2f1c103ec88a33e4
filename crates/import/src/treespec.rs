//! Pytree specs: how a program's flat inputs and outputs nest, read from every spelling the
//! importers meet (PyTorch's serialized JSON, PyTorch's printed `TreeSpec(...)`, this project's
//! own spelling) into one [`TreeSpec`].

use std::fmt;

use ir::Attribute;

/// How deeply a spec may nest before it is refused (a guard against unbounded recursion).
const MAX_DEPTH: usize = 256;

/// A pytree spec: how a runtime rebuilds nested inputs or outputs from the flat list.
///
/// Spelled `*` for a leaf, `None`, `(a, b)` for a tuple (`(a,)` for one element), `[a, b]` for a
/// list, `{"k": a, 3: b}` for a dict (string keys as JSON strings, integer keys bare), and
/// `<"type", "context">(a, b)` for any other node type, with PyTorch's type name and context.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TreeSpec {
    Leaf,
    None,
    Tuple(Vec<TreeSpec>),
    List(Vec<TreeSpec>),
    Dict(Vec<(DictKey, TreeSpec)>),
    Other {
        ty: String,
        context: String,
        children: Vec<TreeSpec>,
    },
}

/// A key of a dict node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DictKey {
    Str(String),
    Int(i64),
}

impl TreeSpec {
    /// Number of leaves.
    pub fn num_leaves(&self) -> usize {
        match self {
            TreeSpec::Leaf => 1,
            TreeSpec::None => 0,
            TreeSpec::Tuple(c) | TreeSpec::List(c) | TreeSpec::Other { children: c, .. } => {
                c.iter().map(TreeSpec::num_leaves).sum()
            }
            TreeSpec::Dict(items) => items.iter().map(|(_, s)| s.num_leaves()).sum(),
        }
    }

    /// Reads PyTorch's serialized treespec (`treespec_dumps`: `[1, {"type": …, "context": …,
    /// "children_spec": […]}]`).
    pub fn from_pytorch_json(text: &str) -> Result<TreeSpec, String> {
        let v: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let node = match &v {
            serde_json::Value::Array(items) if items.len() == 2 => {
                if items[0].as_i64() != Some(1) {
                    return Err(format!("unsupported treespec protocol {}", items[0]));
                }
                &items[1]
            }
            _ => return Err("expected `[protocol, spec]`".into()),
        };
        Self::from_json_node(node, 0)
    }

    fn from_json_node(node: &serde_json::Value, depth: usize) -> Result<TreeSpec, String> {
        if depth > MAX_DEPTH {
            return Err("treespec nests too deeply".into());
        }
        let ty = node.get("type").ok_or("treespec node without `type`")?;
        let children = match node.get("children_spec") {
            Some(serde_json::Value::Array(c)) => c
                .iter()
                .map(|c| Self::from_json_node(c, depth + 1))
                .collect::<Result<Vec<_>, _>>()?,
            _ => Vec::new(),
        };
        let context = match node.get("context") {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(serde_json::Value::Null) | None => "null".to_string(),
            Some(other) => other.to_string(),
        };
        let ty = match ty {
            serde_json::Value::Null => return Ok(TreeSpec::Leaf),
            serde_json::Value::String(s) => s.as_str(),
            other => return Err(format!("treespec type {other} is not a string")),
        };
        Ok(match ty {
            "builtins.tuple" => TreeSpec::Tuple(children),
            "builtins.list" => TreeSpec::List(children),
            "builtins.NoneType" => TreeSpec::None,
            "builtins.dict" | "collections.OrderedDict" => {
                let keys: serde_json::Value =
                    serde_json::from_str(&context).map_err(|e| format!("dict context: {e}"))?;
                let keys = keys.as_array().ok_or("dict context is not a list")?;
                if keys.len() != children.len() {
                    return Err(format!(
                        "dict has {} keys but {} children",
                        keys.len(),
                        children.len()
                    ));
                }
                let mut items = Vec::new();
                for (k, c) in keys.iter().zip(children) {
                    let key = match k {
                        serde_json::Value::String(s) => DictKey::Str(s.clone()),
                        serde_json::Value::Number(n) => {
                            DictKey::Int(n.as_i64().ok_or("dict key is not an integer")?)
                        }
                        other => return Err(format!("unsupported dict key {other}")),
                    };
                    items.push((key, c));
                }
                TreeSpec::Dict(items)
            }
            _ => TreeSpec::Other {
                ty: ty.to_string(),
                context,
                children,
            },
        })
    }

    /// Parses a spec written in the spelling [`TreeSpec`]'s `Display` writes or in PyTorch's
    /// printed form (`TreeSpec(dict, ['a', 'b'], [*, *])`, as `str(spec)` gives it); the two
    /// may nest inside each other.
    pub fn parse(text: &str) -> Result<TreeSpec, String> {
        let mut p = SpecParser {
            s: text.as_bytes(),
            pos: 0,
            depth: 0,
        };
        let spec = p.spec()?;
        p.ws();
        if p.pos != p.s.len() {
            return Err(format!("unexpected text at offset {}", p.pos));
        }
        Ok(spec)
    }

    /// Reads a spec attribute (`prim.out_spec`, `prim.in_spec`): a string in either spelling
    /// [`TreeSpec::parse`] reads, `unit` for a leaf, `#prim.none`, an array for a tuple, or a
    /// dictionary, either `{type = "list" | "dict" | …, children = [...], keys = [...]}` or one
    /// whose entries are the dict's items.
    pub fn from_attribute(a: &Attribute) -> Result<TreeSpec, String> {
        Self::from_attribute_at(a, 0)
    }

    fn from_attribute_at(a: &Attribute, depth: usize) -> Result<TreeSpec, String> {
        if depth > MAX_DEPTH {
            return Err("spec nests too deeply".into());
        }
        let child = |a: &Attribute| Self::from_attribute_at(a, depth + 1);
        match a {
            Attribute::Str(s) => TreeSpec::parse(s),
            Attribute::Unit => Ok(TreeSpec::Leaf),
            a if dialect_prim::kinds::is_none(a) => Ok(TreeSpec::None),
            Attribute::Array(items) => Ok(TreeSpec::Tuple(
                items.iter().map(child).collect::<Result<_, _>>()?,
            )),
            Attribute::Dict(items) => {
                let field = |name: &str| items.iter().find(|(k, _)| &**k == name).map(|(_, v)| v);
                let kind = field("type").and_then(Attribute::as_str);
                let children = field("children").and_then(Attribute::as_array);
                let (Some(kind), Some(children)) = (kind, children) else {
                    return Ok(TreeSpec::Dict(
                        items
                            .iter()
                            .map(|(k, v)| Ok((DictKey::Str(k.to_string()), child(v)?)))
                            .collect::<Result<_, String>>()?,
                    ));
                };
                let children = children.iter().map(child).collect::<Result<Vec<_>, _>>()?;
                Ok(match kind {
                    "list" => TreeSpec::List(children),
                    "dict" => {
                        let keys = field("keys")
                            .and_then(Attribute::as_array)
                            .ok_or("a dict spec needs `keys`")?;
                        if keys.len() != children.len() {
                            return Err(format!(
                                "dict spec has {} keys but {} children",
                                keys.len(),
                                children.len()
                            ));
                        }
                        let keys = keys.iter().map(|k| match k {
                            Attribute::Int(i) => DictKey::Int(*i),
                            k => DictKey::Str(k.as_str().map(str::to_string).unwrap_or_else(|| k.to_string())),
                        });
                        TreeSpec::Dict(keys.zip(children).collect())
                    }
                    _ => TreeSpec::Tuple(children),
                })
            }
            other => Err(format!("unsupported spec attribute {other}")),
        }
    }
}

fn write_json_string(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    f.write_str(&serde_json::Value::String(s.to_string()).to_string())
}

fn write_children(f: &mut fmt::Formatter<'_>, c: &[TreeSpec]) -> fmt::Result {
    for (i, s) in c.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{s}")?;
    }
    Ok(())
}

impl fmt::Display for TreeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TreeSpec::Leaf => f.write_str("*"),
            TreeSpec::None => f.write_str("None"),
            TreeSpec::Tuple(c) => {
                f.write_str("(")?;
                write_children(f, c)?;
                if c.len() == 1 {
                    f.write_str(",")?;
                }
                f.write_str(")")
            }
            TreeSpec::List(c) => {
                f.write_str("[")?;
                write_children(f, c)?;
                f.write_str("]")
            }
            TreeSpec::Dict(items) => {
                f.write_str("{")?;
                for (i, (k, s)) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    match k {
                        DictKey::Str(k) => write_json_string(f, k)?,
                        DictKey::Int(k) => write!(f, "{k}")?,
                    }
                    write!(f, ": {s}")?;
                }
                f.write_str("}")
            }
            TreeSpec::Other {
                ty,
                context,
                children,
            } => {
                f.write_str("<")?;
                write_json_string(f, ty)?;
                f.write_str(", ")?;
                write_json_string(f, context)?;
                f.write_str(">(")?;
                write_children(f, children)?;
                f.write_str(")")
            }
        }
    }
}

struct SpecParser<'a> {
    s: &'a [u8],
    pos: usize,
    depth: usize,
}

impl SpecParser<'_> {
    fn ws(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.s.get(self.pos) == Some(&c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!("expected `{}` at offset {}", c as char, self.pos))
        }
    }

    fn string(&mut self) -> Result<String, String> {
        self.ws();
        let start = self.pos;
        if self.s.get(self.pos) != Some(&b'"') {
            return Err(format!("expected a string at offset {start}"));
        }
        self.pos += 1;
        while self.pos < self.s.len() && self.s[self.pos] != b'"' {
            if self.s[self.pos] == b'\\' {
                self.pos += 1;
            }
            self.pos += 1;
        }
        self.pos += 1;
        let text = self
            .s
            .get(start..self.pos.min(self.s.len()))
            .ok_or("unterminated string")?;
        let text = std::str::from_utf8(text).map_err(|e| e.to_string())?;
        serde_json::from_str(text).map_err(|e| format!("bad string at offset {start}: {e}"))
    }

    /// Comma-separated specs up to `close`, allowing a trailing comma.
    fn children(&mut self, close: u8) -> Result<Vec<TreeSpec>, String> {
        let mut out = Vec::new();
        if self.eat(close) {
            return Ok(out);
        }
        loop {
            out.push(self.spec()?);
            if self.eat(close) {
                return Ok(out);
            }
            self.expect(b',')?;
            if self.eat(close) {
                return Ok(out);
            }
        }
    }

    /// The rest of PyTorch's printed node after `TreeSpec`: `(type, context, [children])`,
    /// where the context is `None`, a list of keys, or any other Python value, kept as its text.
    fn pytorch_node(&mut self) -> Result<TreeSpec, String> {
        self.expect(b'(')?;
        self.ws();
        let start = self.pos;
        while self.pos < self.s.len()
            && (self.s[self.pos].is_ascii_alphanumeric() || b"_.".contains(&self.s[self.pos]))
        {
            self.pos += 1;
        }
        if self.pos == start {
            return Err(format!("expected a type name at offset {start}"));
        }
        let ty = String::from_utf8_lossy(&self.s[start..self.pos]).into_owned();
        self.expect(b',')?;
        let context = self.python_value()?;
        self.expect(b',')?;
        self.expect(b'[')?;
        let children = self.children(b']')?;
        self.expect(b')')?;
        Ok(match ty.rsplit('.').next().unwrap_or_default() {
            "tuple" => TreeSpec::Tuple(children),
            "list" => TreeSpec::List(children),
            "NoneType" => TreeSpec::None,
            "dict" | "OrderedDict" | "defaultdict" => {
                let keys = python_keys(context.trim())?;
                if keys.len() != children.len() {
                    return Err(format!(
                        "dict has {} keys but {} children",
                        keys.len(),
                        children.len()
                    ));
                }
                TreeSpec::Dict(keys.into_iter().zip(children).collect())
            }
            _ => TreeSpec::Other {
                ty,
                context: context.trim().to_string(),
                children,
            },
        })
    }

    /// The text of one Python value up to the next `,` or `)` outside brackets and quotes.
    fn python_value(&mut self) -> Result<String, String> {
        self.ws();
        let start = self.pos;
        let mut depth = 0usize;
        let mut quote = None;
        while let Some(&c) = self.s.get(self.pos) {
            match quote {
                Some(q) => {
                    if c == b'\\' {
                        self.pos += 1;
                    } else if c == q {
                        quote = None;
                    }
                }
                None => match c {
                    b'\'' | b'"' => quote = Some(c),
                    b'[' | b'(' | b'{' => depth += 1,
                    b']' | b')' | b'}' if depth > 0 => depth -= 1,
                    b',' | b')' if depth == 0 => break,
                    _ => {}
                },
            }
            self.pos += 1;
        }
        if quote.is_some() || depth > 0 || self.pos == start {
            return Err(format!("expected a context value at offset {start}"));
        }
        std::str::from_utf8(&self.s[start..self.pos])
            .map(str::to_string)
            .map_err(|e| e.to_string())
    }

    fn spec(&mut self) -> Result<TreeSpec, String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err("spec nests too deeply".into());
        }
        self.ws();
        let r = match self.s.get(self.pos) {
            Some(b'*') => {
                self.pos += 1;
                Ok(TreeSpec::Leaf)
            }
            Some(b'T') if self.s[self.pos..].starts_with(b"TreeSpec") => {
                self.pos += "TreeSpec".len();
                self.pytorch_node()
            }
            Some(b'L') if self.s[self.pos..].starts_with(b"LeafSpec()") => {
                self.pos += "LeafSpec()".len();
                Ok(TreeSpec::Leaf)
            }
            Some(b'N') if self.s[self.pos..].starts_with(b"None") => {
                self.pos += 4;
                Ok(TreeSpec::None)
            }
            Some(b'(') => {
                self.pos += 1;
                self.children(b')').map(TreeSpec::Tuple)
            }
            Some(b'[') => {
                self.pos += 1;
                self.children(b']').map(TreeSpec::List)
            }
            Some(b'{') => {
                self.pos += 1;
                let mut items = Vec::new();
                if !self.eat(b'}') {
                    loop {
                        self.ws();
                        let key =
                            if self.s.get(self.pos) == Some(&b'"') {
                                DictKey::Str(self.string()?)
                            } else {
                                let start = self.pos;
                                if self.s.get(self.pos) == Some(&b'-') {
                                    self.pos += 1;
                                }
                                while self.pos < self.s.len() && self.s[self.pos].is_ascii_digit() {
                                    self.pos += 1;
                                }
                                let t = std::str::from_utf8(&self.s[start..self.pos])
                                    .map_err(|e| e.to_string())?;
                                DictKey::Int(t.parse().map_err(|_| {
                                    format!("expected a dict key at offset {start}")
                                })?)
                            };
                        self.expect(b':')?;
                        items.push((key, self.spec()?));
                        if self.eat(b'}') {
                            break;
                        }
                        self.expect(b',')?;
                    }
                }
                Ok(TreeSpec::Dict(items))
            }
            Some(b'<') => {
                self.pos += 1;
                let ty = self.string()?;
                self.expect(b',')?;
                let context = self.string()?;
                self.expect(b'>')?;
                self.expect(b'(')?;
                let children = self.children(b')')?;
                Ok(TreeSpec::Other {
                    ty,
                    context,
                    children,
                })
            }
            _ => Err(format!("expected a spec at offset {}", self.pos)),
        };
        self.depth -= 1;
        r
    }
}


/// The keys of a dict node in PyTorch's printed form: `['a', "b", 3]` (Python string reprs and
/// integers), or `None` for no keys.
fn python_keys(text: &str) -> Result<Vec<DictKey>, String> {
    if text == "None" {
        return Ok(Vec::new());
    }
    let inner = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .ok_or_else(|| format!("dict keys `{text}` are not a list"))?;
    let mut keys = Vec::new();
    let mut rest = inner.trim_start();
    while !rest.is_empty() {
        let (key, after) = match rest.as_bytes()[0] {
            q @ (b'\'' | b'"') => {
                let mut out = String::new();
                let mut chars = rest[1..].char_indices();
                let end = loop {
                    match chars.next() {
                        Some((i, c)) if c as u32 == q as u32 => break i + 2,
                        Some((_, '\\')) => match chars.next() {
                            Some((_, 'n')) => out.push('\n'),
                            Some((_, 't')) => out.push('\t'),
                            Some((_, c)) => out.push(c),
                            None => return Err(format!("unterminated key in `{text}`")),
                        },
                        Some((_, c)) => out.push(c),
                        None => return Err(format!("unterminated key in `{text}`")),
                    }
                };
                (DictKey::Str(out), &rest[end..])
            }
            _ => {
                let end = rest.find(',').unwrap_or(rest.len());
                let word = rest[..end].trim();
                let key = word
                    .parse()
                    .map_err(|_| format!("unsupported dict key `{word}` in `{text}`"))?;
                (DictKey::Int(key), &rest[end..])
            }
        };
        keys.push(key);
        rest = after.trim_start();
        match rest.strip_prefix(',') {
            Some(r) => rest = r.trim_start(),
            None if rest.is_empty() => {}
            None => return Err(format!("expected `,` between dict keys in `{text}`")),
        }
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_spelling_round_trips() {
        for s in [
            "*",
            "None",
            "(*,)",
            "(*, [*, *])",
            "{\"sum\": *, \"pair\": (*, [*, *])}",
            "{1: *}",
            "<\"x.Point\", \"[\\\"a\\\"]\">(*, *)",
            "()",
        ] {
            let spec = TreeSpec::parse(s).unwrap();
            assert_eq!(spec.to_string(), s);
        }
        assert!(TreeSpec::parse("(*").is_err());
        assert!(TreeSpec::parse("{x: *}").is_err());
    }

    #[test]
    fn pytorch_json_spec() {
        let j = r#"[1, {"type": "builtins.dict", "context": "[\"sum\", \"pair\"]", "children_spec": [{"type": null, "context": null, "children_spec": []}, {"type": "builtins.tuple", "context": "null", "children_spec": [{"type": null, "context": null, "children_spec": []}, {"type": "builtins.list", "context": "null", "children_spec": [{"type": null, "context": null, "children_spec": []}, {"type": null, "context": null, "children_spec": []}]}]}]}]"#;
        let spec = TreeSpec::from_pytorch_json(j).unwrap();
        assert_eq!(spec.to_string(), "{\"sum\": *, \"pair\": (*, [*, *])}");
        assert_eq!(spec.num_leaves(), 4);
    }

    #[test]
    fn pytorch_printed_spec() {
        let spec = TreeSpec::parse(
            "TreeSpec(dict, ['sum', 'pair'], [*,\n  TreeSpec(tuple, None, [*,\n    TreeSpec(list, None, [*,\n      *])])])",
        )
        .unwrap();
        assert_eq!(spec.to_string(), "{\"sum\": *, \"pair\": (*, [*, *])}");
        assert_eq!(spec.num_leaves(), 4);
        // A model's output class keeps its name and context; its children are its fields.
        let spec = TreeSpec::parse("TreeSpec(CausalLMOutputWithPast, ['logits'], [*])").unwrap();
        assert_eq!(
            spec,
            TreeSpec::Other {
                ty: "CausalLMOutputWithPast".into(),
                context: "['logits']".into(),
                children: vec![TreeSpec::Leaf],
            }
        );
        let spec = TreeSpec::parse("TreeSpec(collections.OrderedDict, [\"it's\", 3], [*, LeafSpec()])").unwrap();
        assert_eq!(
            spec,
            TreeSpec::Dict(vec![(DictKey::Str("it's".into()), TreeSpec::Leaf), (DictKey::Int(3), TreeSpec::Leaf)])
        );
        assert_eq!(TreeSpec::parse("TreeSpec(NoneType, None, [])").unwrap(), TreeSpec::None);
        for bad in [
            "TreeSpec(dict, ['a'], [*, *])",
            "TreeSpec(tuple, None, [*)",
            "TreeSpec(, None, [])",
            "TreeSpec(dict, ['a, [*])",
            "TreeSpec(dict, [x], [*])",
            "TreeSpec(tuple, None, [*]) *",
        ] {
            assert!(TreeSpec::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn both_spellings_read_alike() {
        let printed = TreeSpec::parse("TreeSpec(tuple, None, [*, TreeSpec(list, None, [*, *])])").unwrap();
        let own = TreeSpec::parse("(*, [*, *])").unwrap();
        assert_eq!(printed, own);
        let attr = Attribute::str("(*, [*, *])");
        assert_eq!(TreeSpec::from_attribute(&attr).unwrap(), own);
    }

    #[test]
    fn spec_attributes() {
        let a = Attribute::Array(vec![Attribute::Unit, dialect_prim::kinds::none(), Attribute::str("[*]")].into());
        assert_eq!(
            TreeSpec::from_attribute(&a).unwrap(),
            TreeSpec::Tuple(vec![TreeSpec::Leaf, TreeSpec::None, TreeSpec::List(vec![TreeSpec::Leaf])])
        );
        let d = Attribute::dict(vec![
            ("children".into(), Attribute::Array(vec![Attribute::Unit, Attribute::Unit].into())),
            ("keys".into(), Attribute::Array(vec![Attribute::str("a"), Attribute::Int(2)].into())),
            ("type".into(), Attribute::str("dict")),
        ]);
        assert_eq!(
            TreeSpec::from_attribute(&d).unwrap(),
            TreeSpec::Dict(vec![(DictKey::Str("a".into()), TreeSpec::Leaf), (DictKey::Int(2), TreeSpec::Leaf)])
        );
        assert!(TreeSpec::from_attribute(&Attribute::Int(1)).is_err());
        assert!(TreeSpec::from_attribute(&Attribute::str("TreeSpec(")).is_err());
    }
}
