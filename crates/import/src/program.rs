//! The imported unit: a verified module holding `func.func @forward`, and its lazily read weights.
//!
//! The attribute names below are the conventions every importer follows and the runtime and
//! tools rely on; `docs/import.md` describes them with examples.

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::Mmap;

use crate::ImportError;
use crate::pt2::Pt2Archive;

/// Name of the program's function.
pub const FORWARD: &str = "forward";

/// Argument attribute: the argument is the parameter of this state name.
pub const ATTR_PARAM: &str = "prim.param";
/// Argument attribute: the argument is the buffer of this state name.
pub const ATTR_BUFFER: &str = "prim.buffer";
/// Argument attribute beside [`ATTR_BUFFER`]: `false` when the buffer is not persistent.
pub const ATTR_PERSISTENT: &str = "prim.persistent";
/// Argument attribute: the argument is the lifted tensor constant of this name.
pub const ATTR_CONSTANT: &str = "prim.constant";
/// Argument attribute: the argument is the user input of this name.
pub const ATTR_INPUT: &str = "prim.input";
/// Result attribute: the result is the user output of this name.
pub const ATTR_OUTPUT: &str = "prim.output";
/// Result attribute: the result is the new value of this buffer.
pub const ATTR_BUFFER_MUTATION: &str = "prim.buffer_mutation";
/// Result attribute: the result is the new value of this parameter.
pub const ATTR_PARAM_MUTATION: &str = "prim.param_mutation";
/// Result attribute: the result is the new value of this user input.
pub const ATTR_INPUT_MUTATION: &str = "prim.input_mutation";
/// Module attribute: the output pytree spec in the [`TreeSpec`] spelling.
pub const ATTR_OUT_SPEC: &str = "prim.out_spec";
/// Module attribute: the input pytree spec in the [`TreeSpec`] spelling.
pub const ATTR_IN_SPEC: &str = "prim.in_spec";
/// Module attribute: `{s0 = [min, max]}`, `[min]` when unbounded above.
pub const ATTR_RANGE_CONSTRAINTS: &str = "prim.range_constraints";
/// Module attribute: the export schema version, `"8.20"`.
pub const ATTR_SCHEMA_VERSION: &str = "prim.schema_version";
/// Op attribute: the `nn.Module` stack the node was traced in.
pub const ATTR_NN_MODULE_STACK: &str = "prim.nn_module_stack";
/// Op attribute: the Python function the node came from.
pub const ATTR_TORCH_FN: &str = "prim.torch_fn";

/// An imported program: the module and the state its `@forward` arguments refer to.
#[derive(Debug)]
pub struct Program {
    pub module: ir::Module,
    pub weights: Weights,
}

impl Program {
    /// The `func.func @forward` op.
    pub fn forward(&self) -> Option<ir::OpId> {
        self.module.function(FORWARD)
    }
}

/// Where the bytes of one weight live; nothing is read until [`Weight::storage`] is called.
#[derive(Clone)]
pub(crate) enum Source {
    /// An entry of an open `.pt2` archive, by state name.
    Pt2 {
        archive: Arc<Pt2Archive>,
        name: String,
    },
    /// A byte range of a memory-mapped file of this project's archive.
    Mapped { map: Arc<Mmap>, range: Range<usize> },
    /// Bytes held in memory (built by tools and tests).
    Owned(Arc<[u8]>),
}

/// One parameter, buffer or constant: a strided view of a little-endian storage.
#[derive(Clone)]
pub struct Weight {
    pub dtype: ir::DType,
    pub sizes: Vec<i64>,
    /// Element strides.
    pub strides: Vec<i64>,
    /// Offset of the first element in the storage, in elements.
    pub storage_offset: i64,
    pub(crate) source: Source,
}

impl fmt::Debug for Weight {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Weight")
            .field("dtype", &self.dtype)
            .field("sizes", &self.sizes)
            .field("strides", &self.strides)
            .field("storage_offset", &self.storage_offset)
            .finish_non_exhaustive()
    }
}

impl Weight {
    /// A weight over bytes held in memory, laid out as `sizes`/`strides` from `storage_offset`.
    pub fn from_bytes(
        dtype: ir::DType,
        sizes: Vec<i64>,
        strides: Vec<i64>,
        storage_offset: i64,
        bytes: Arc<[u8]>,
    ) -> Result<Weight, String> {
        let w = Weight {
            dtype,
            sizes,
            strides,
            storage_offset,
            source: Source::Owned(bytes.clone()),
        };
        let needed = w
            .bytes_needed()
            .ok_or("sizes, strides or offset are invalid")?;
        if (bytes.len() as u64) < needed {
            return Err(format!(
                "needs {needed} bytes but {} are given",
                bytes.len()
            ));
        }
        Ok(w)
    }

    /// A contiguous weight over bytes held in memory.
    pub fn contiguous(
        dtype: ir::DType,
        sizes: Vec<i64>,
        bytes: Arc<[u8]>,
    ) -> Result<Weight, String> {
        let strides = contiguous_strides(&sizes);
        Weight::from_bytes(dtype, sizes, strides, 0, bytes)
    }

    /// Number of elements of the view.
    pub fn numel(&self) -> i64 {
        self.sizes.iter().product()
    }

    /// Whether the view is row-major from offset zero.
    pub fn is_contiguous(&self) -> bool {
        self.storage_offset == 0
            && self
                .sizes
                .iter()
                .zip(&self.strides)
                .zip(contiguous_strides(&self.sizes))
                .all(|((&size, &stride), want)| size == 1 || stride == want)
    }

    /// Bytes of storage the view reaches, or `None` when sizes, strides or offset are negative
    /// or overflow.
    pub fn bytes_needed(&self) -> Option<u64> {
        if self.sizes.len() != self.strides.len() || self.storage_offset < 0 {
            return None;
        }
        if self.sizes.contains(&0) {
            return Some(0);
        }
        let mut last = self.storage_offset as u64;
        for (&size, &stride) in self.sizes.iter().zip(&self.strides) {
            if size < 0 || stride < 0 {
                return None;
            }
            last = last.checked_add((size as u64 - 1).checked_mul(stride as u64)?)?;
        }
        last.checked_add(1)?
            .checked_mul(self.dtype.size_bytes() as u64)
    }

    /// The whole storage, little-endian; read (or mapped) on first use.
    pub fn storage(&self) -> Result<&[u8], ImportError> {
        match &self.source {
            Source::Pt2 { archive, name } => archive.weight_bytes(name),
            Source::Mapped { map, range } => Ok(&map[range.clone()]),
            Source::Owned(bytes) => Ok(bytes),
        }
    }

    /// The elements of the view in row-major order, as little-endian bytes.
    pub fn contiguous_bytes(&self) -> Result<Vec<u8>, ImportError> {
        let storage = self.storage()?;
        let elem = self.dtype.size_bytes();
        let bad = || ImportError::InvalidWeight {
            path: PathBuf::new(),
            name: String::new(),
            reason: "view reaches past its storage".into(),
        };
        let needed = self.bytes_needed().ok_or_else(bad)?;
        if (storage.len() as u64) < needed {
            return Err(bad());
        }
        if self.is_contiguous() {
            return Ok(storage[..self.numel().max(0) as usize * elem].to_vec());
        }
        let n = self.numel().max(0) as usize;
        let mut out = Vec::with_capacity(n * elem);
        let rank = self.sizes.len();
        let mut index = vec![0i64; rank];
        for _ in 0..n {
            let off: i64 = self.storage_offset
                + index
                    .iter()
                    .zip(&self.strides)
                    .map(|(i, s)| i * s)
                    .sum::<i64>();
            let start = off as usize * elem;
            out.extend_from_slice(&storage[start..start + elem]);
            for d in (0..rank).rev() {
                index[d] += 1;
                if index[d] < self.sizes[d] {
                    break;
                }
                index[d] = 0;
            }
        }
        Ok(out)
    }
}

/// Row-major strides of `sizes`.
pub fn contiguous_strides(sizes: &[i64]) -> Vec<i64> {
    let mut strides = vec![1i64; sizes.len()];
    for i in (0..sizes.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * sizes[i + 1].max(1);
    }
    strides
}

/// The weights of a program by state name, in a fixed order (the order they were added).
#[derive(Clone, Debug, Default)]
pub struct Weights {
    entries: Vec<(String, Weight)>,
    index: HashMap<String, usize>,
}

impl Weights {
    pub fn new() -> Weights {
        Weights::default()
    }

    /// Adds a weight; a second weight of the same name is refused.
    pub fn insert(&mut self, name: &str, weight: Weight) -> Result<(), String> {
        if self.index.contains_key(name) {
            return Err(format!("duplicate weight `{name}`"));
        }
        self.index.insert(name.to_string(), self.entries.len());
        self.entries.push((name.to_string(), weight));
        Ok(())
    }

    pub fn get(&self, name: &str) -> Option<&Weight> {
        self.index.get(name).map(|&i| &self.entries[i].1)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Names and weights in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Weight)> {
        self.entries.iter().map(|(n, w)| (n.as_str(), w))
    }
}

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
        if depth > 256 {
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

    /// Parses the spelling [`TreeSpec`]'s `Display` writes.
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

    fn spec(&mut self) -> Result<TreeSpec, String> {
        self.depth += 1;
        if self.depth > 256 {
            return Err("spec nests too deeply".into());
        }
        self.ws();
        let r = match self.s.get(self.pos) {
            Some(b'*') => {
                self.pos += 1;
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

/// Opens the file for a weight table entry of this project's archive (used by `archive`).
pub(crate) fn mapped(map: &Arc<Mmap>, range: Range<usize>) -> Source {
    Source::Mapped {
        map: map.clone(),
        range,
    }
}

/// The source of a weight stored in an open `.pt2` archive.
pub(crate) fn pt2_source(archive: &Arc<Pt2Archive>, name: &str) -> Source {
    Source::Pt2 {
        archive: archive.clone(),
        name: name.to_string(),
    }
}

/// A path for errors about weights that came from `path`.
pub(crate) fn weight_error(path: &Path, name: &str, reason: impl Into<String>) -> ImportError {
    ImportError::InvalidWeight {
        path: path.to_path_buf(),
        name: name.to_string(),
        reason: reason.into(),
    }
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
}
