//! Output trees: the nesting of a program's outputs (its pytree spec) and the nested outputs.


use ir::Attribute;

use crate::value::IValue;

/// The nesting of a program's outputs (its pytree spec).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutSpec {
    /// One flat output.
    Leaf,
    /// Python `None` (no flat output).
    None,
    Tuple(Vec<OutSpec>),
    List(Vec<OutSpec>),
    Dict(Vec<(String, OutSpec)>),
}

impl OutSpec {
    /// Number of flat outputs.
    pub fn num_leaves(&self) -> usize {
        match self {
            OutSpec::Leaf => 1,
            OutSpec::None => 0,
            OutSpec::Tuple(xs) | OutSpec::List(xs) => xs.iter().map(OutSpec::num_leaves).sum(),
            OutSpec::Dict(xs) => xs.iter().map(|(_, x)| x.num_leaves()).sum(),
        }
    }

    /// Parses PyTorch's printed `TreeSpec(...)` form (`TreeSpec(dict, ['a', 'b'], [*, *])`), or `*`.
    pub fn parse_treespec(text: &str) -> Result<OutSpec, String> {
        let mut p = SpecParser { s: text.as_bytes(), i: 0 };
        let spec = p.spec()?;
        p.ws();
        if p.i != p.s.len() {
            return Err(format!("unexpected text at offset {} of the output spec", p.i));
        }
        Ok(spec)
    }

    /// Reads the `prim.out_spec` attribute: a `TreeSpec(...)` string, or nested arrays
    /// (tuples) and dictionaries with `unit`/`*` leaves.
    pub fn from_attribute(a: &Attribute) -> Result<OutSpec, String> {
        match a {
            Attribute::Str(s) => OutSpec::parse_treespec(s),
            Attribute::Unit => Ok(OutSpec::Leaf),
            Attribute::None => Ok(OutSpec::None),
            Attribute::Array(items) => Ok(OutSpec::Tuple(items.iter().map(OutSpec::from_attribute).collect::<Result<_, _>>()?)),
            Attribute::Dict(items) => {
                let kind = items.iter().find(|(k, _)| &**k == "type").and_then(|(_, v)| v.as_str());
                let children = items.iter().find(|(k, _)| &**k == "children").and_then(|(_, v)| v.as_array());
                if let (Some(kind), Some(children)) = (kind, children) {
                    let cs = children.iter().map(OutSpec::from_attribute).collect::<Result<Vec<_>, _>>()?;
                    return Ok(match kind {
                        "list" => OutSpec::List(cs),
                        "dict" => {
                            let keys = items
                                .iter()
                                .find(|(k, _)| &**k == "keys")
                                .and_then(|(_, v)| v.as_array())
                                .ok_or("a dict output spec needs `keys`")?;
                            let keys: Vec<String> = keys.iter().map(|k| k.as_str().map(str::to_string).unwrap_or_else(|| k.to_string())).collect();
                            OutSpec::Dict(keys.into_iter().zip(cs).collect())
                        }
                        _ => OutSpec::Tuple(cs),
                    });
                }
                Ok(OutSpec::Dict(
                    items.iter().map(|(k, v)| Ok((k.to_string(), OutSpec::from_attribute(v)?))).collect::<Result<_, String>>()?,
                ))
            }
            other => Err(format!("unsupported output spec attribute {other}")),
        }
    }

    pub(super) fn build(&self, leaves: &mut std::vec::IntoIter<IValue>) -> Outputs {
        match self {
            OutSpec::Leaf => Outputs::Value(leaves.next().unwrap_or(IValue::None)),
            OutSpec::None => Outputs::None,
            OutSpec::Tuple(xs) => Outputs::Tuple(xs.iter().map(|x| x.build(leaves)).collect()),
            OutSpec::List(xs) => Outputs::List(xs.iter().map(|x| x.build(leaves)).collect()),
            OutSpec::Dict(xs) => Outputs::Dict(xs.iter().map(|(k, x)| (k.clone(), x.build(leaves))).collect()),
        }
    }
}

pub(super) struct SpecParser<'a> {
    pub(super) s: &'a [u8],
    pub(super) i: usize,
}

impl SpecParser<'_> {
    pub(super) fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    pub(super) fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    pub(super) fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.eat(c) { Ok(()) } else { Err(format!("expected '{}' at offset {} of the output spec", c as char, self.i)) }
    }

    pub(super) fn word(&mut self) -> String {
        self.ws();
        let start = self.i;
        while self.i < self.s.len() && (self.s[self.i].is_ascii_alphanumeric() || b"_.".contains(&self.s[self.i])) {
            self.i += 1;
        }
        String::from_utf8_lossy(&self.s[start..self.i]).into_owned()
    }

    pub(super) fn string(&mut self) -> Result<String, String> {
        self.ws();
        let q = *self.s.get(self.i).ok_or("unexpected end of the output spec")?;
        if q != b'\'' && q != b'"' {
            // A non-string key (an int): read the word.
            return Ok(self.word());
        }
        self.i += 1;
        let start = self.i;
        while self.i < self.s.len() && self.s[self.i] != q {
            self.i += 1;
        }
        let out = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
        self.expect(q)?;
        Ok(out)
    }

    pub(super) fn spec(&mut self) -> Result<OutSpec, String> {
        if self.eat(b'*') {
            return Ok(OutSpec::Leaf);
        }
        let w = self.word();
        if w == "None" {
            return Ok(OutSpec::None);
        }
        if w != "TreeSpec" {
            return Err(format!("expected `TreeSpec` or `*` in the output spec, found `{w}`"));
        }
        self.expect(b'(')?;
        let kind = self.word();
        self.expect(b',')?;
        // The context: None, or a list of keys.
        let mut keys = Vec::new();
        if self.eat(b'[') {
            if !self.eat(b']') {
                loop {
                    keys.push(self.string()?);
                    if self.eat(b']') {
                        break;
                    }
                    self.expect(b',')?;
                }
            }
        } else {
            let _ = self.word();
        }
        self.expect(b',')?;
        self.expect(b'[')?;
        let mut children = Vec::new();
        if !self.eat(b']') {
            loop {
                children.push(self.spec()?);
                if self.eat(b']') {
                    break;
                }
                self.expect(b',')?;
            }
        }
        self.expect(b')')?;
        Ok(match kind.rsplit('.').next().unwrap_or("") {
            "list" => OutSpec::List(children),
            "dict" | "OrderedDict" => OutSpec::Dict(keys.into_iter().zip(children).collect()),
            "NoneType" => OutSpec::None,
            _ => OutSpec::Tuple(children),
        })
    }
}

/// Outputs nested as the program's output spec says.
#[derive(Clone, Debug)]
pub enum Outputs {
    Value(IValue),
    None,
    Tuple(Vec<Outputs>),
    List(Vec<Outputs>),
    Dict(Vec<(String, Outputs)>),
}

impl Outputs {
    /// The value of a leaf.
    pub fn value(&self) -> Option<&IValue> {
        match self {
            Outputs::Value(v) => Some(v),
            _ => None,
        }
    }

    /// Element `i` of a tuple or list.
    pub fn index(&self, i: usize) -> Option<&Outputs> {
        match self {
            Outputs::Tuple(xs) | Outputs::List(xs) => xs.get(i),
            _ => None,
        }
    }

    /// Entry `key` of a dict.
    pub fn get(&self, key: &str) -> Option<&Outputs> {
        match self {
            Outputs::Dict(xs) => xs.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The leaves, flattened in order.
    pub fn leaves(&self) -> Vec<&IValue> {
        let mut out = Vec::new();
        fn walk<'a>(o: &'a Outputs, out: &mut Vec<&'a IValue>) {
            match o {
                Outputs::Value(v) => out.push(v),
                Outputs::None => {}
                Outputs::Tuple(xs) | Outputs::List(xs) => xs.iter().for_each(|x| walk(x, out)),
                Outputs::Dict(xs) => xs.iter().for_each(|(_, x)| walk(x, out)),
            }
        }
        walk(self, &mut out);
        out
    }
}
