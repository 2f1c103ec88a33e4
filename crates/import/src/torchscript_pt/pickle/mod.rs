//! A safe unpickler for the pickles TorchScript archives hold (`data.pkl`, `constants.pkl`,
//! `*.debug_pkl`): protocol 2 as PyTorch writes it, plus the related opcodes of protocols 0–4
//! a writer could emit. Nothing is ever executed: a `GLOBAL` is resolved against a fixed
//! allow-list and the few callables on it are interpreted here as data constructors.
//!
//! Decoding is a loop over opcodes with no recursion. Values are built in an arena (so that a
//! memoized list appended to later is one list, as in Python), then turned into an immutable
//! [`Value`] tree whose shared parts are shared by `Arc`, so the result is never larger than
//! the arena, itself bounded by the input's length. A value nesting deeper than
//! [`MAX_NESTING`] or containing itself is refused, which keeps dropping, comparing and
//! printing values (the only recursive code) far from the end of the stack.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

mod args;
mod globals;
mod value;

use args::{long_from_bytes, parse_index, parse_int, raw_unicode_unescape, string_node, unquote};
use globals::Global;
pub use value::{Dict, List, Object, Storage, Tensor, Value};

/// How deeply values may nest.
pub const MAX_NESTING: usize = crate::error::MAX_NESTING;

/// The most parts (scalars and tuples) one dict key may have.
const MAX_KEY_PARTS: usize = 4096;

/// Why a pickle was refused, and the byte offset of the opcode at fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PickleError {
    pub offset: u64,
    pub message: String,
}

impl fmt::Display for PickleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte offset {}", self.message, self.offset)
    }
}

impl std::error::Error for PickleError {}

/// Decodes `data`. `storages` is asked about every persistent id; it checks that the storage
/// exists and is large enough, and returns its index (or says what is wrong).
pub fn unpickle(
    data: &[u8],
    storages: &mut dyn FnMut(&Storage) -> Result<usize, String>,
) -> Result<Value, PickleError> {
    Machine {
        data,
        pos: 0,
        op_start: 0,
        nodes: Vec::new(),
        stack: Vec::new(),
        marks: Vec::new(),
        memo: HashMap::new(),
        storages,
    }
    .run()
}

/// Decodes a pickle that may not refer to storages (a `.debug_pkl`).
pub fn unpickle_plain(data: &[u8]) -> Result<Value, PickleError> {
    unpickle(data, &mut |_| Err("a persistent id where none is expected".into()))
}

type Id = usize;

/// A node of the arena: containers refer to their elements by id.
enum Node {
    /// A value without parts: a scalar, a string, a storage or a tensor.
    Leaf(Value),
    Tuple(Vec<Id>),
    List { items: Vec<Id>, ty: Option<String> },
    Dict(DictNode),
    Global(Global),
    Object { class: Arc<str>, state: Option<Id> },
}

#[derive(Default)]
struct DictNode {
    entries: Vec<(Id, Id)>,
    index: HashMap<Key, usize>,
    ty: Option<String>,
}

/// A dict key as Python compares it: by value for numbers, strings, bytes and tuples of those,
/// by identity for anything else hashable.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Key {
    None,
    Int(i64),
    Float(u64),
    Str(Arc<str>),
    Bytes(Arc<[u8]>),
    Tuple(Vec<Key>),
    Identity(Id),
}

/// The decoding state.
struct Machine<'a, 'f> {
    data: &'a [u8],
    pos: usize,
    op_start: usize,
    nodes: Vec<Node>,
    stack: Vec<Id>,
    /// Stack lengths at each `MARK`.
    marks: Vec<usize>,
    memo: HashMap<u64, Id>,
    storages: &'f mut dyn FnMut(&Storage) -> Result<usize, String>,
}

type R<T> = Result<T, String>;

impl Machine<'_, '_> {
    fn run(mut self) -> Result<Value, PickleError> {
        loop {
            self.op_start = self.pos;
            match self.step() {
                Ok(false) => {}
                Ok(true) => {
                    let top = self.pop().map_err(|m| self.error(m))?;
                    return self.materialize(top).map_err(|m| self.error(m));
                }
                Err(message) => return Err(self.error(message)),
            }
        }
    }

    fn error(&self, message: String) -> PickleError {
        PickleError {
            offset: self.op_start as u64,
            message,
        }
    }

    fn take(&mut self, n: usize) -> R<&[u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.data.len());
        let Some(end) = end else {
            return Err(format!(
                "the pickle ends inside an opcode ({n} bytes wanted, {} left)",
                self.data.len() - self.pos
            ));
        };
        let bytes = &self.data[self.pos..end];
        self.pos = end;
        Ok(bytes)
    }

    fn fixed<const N: usize>(&mut self) -> R<[u8; N]> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn u8(&mut self) -> R<u8> {
        Ok(self.fixed::<1>()?[0])
    }

    fn u32(&mut self) -> R<u32> {
        Ok(u32::from_le_bytes(self.fixed()?))
    }

    fn i32(&mut self) -> R<i32> {
        Ok(i32::from_le_bytes(self.fixed()?))
    }

    fn u64(&mut self) -> R<u64> {
        Ok(u64::from_le_bytes(self.fixed()?))
    }

    /// A length read as `len`, which must fit in what is left of the input.
    fn counted(&mut self, len: u64) -> R<&[u8]> {
        let n = usize::try_from(len).map_err(|_| format!("length {len} is too large"))?;
        self.take(n)
    }

    /// A text argument, up to its newline.
    fn line(&mut self) -> R<&str> {
        let rest = &self.data[self.pos..];
        let Some(n) = rest.iter().position(|&b| b == b'\n') else {
            return Err("the pickle ends inside a line argument".into());
        };
        let line = &rest[..n];
        self.pos += n + 1;
        std::str::from_utf8(line).map_err(|_| "a line argument is not UTF-8".into())
    }

    fn push(&mut self, node: Node) {
        self.nodes.push(node);
        self.stack.push(self.nodes.len() - 1);
    }

    fn pop(&mut self) -> R<Id> {
        if self.stack.len() <= self.marks.last().copied().unwrap_or(0) {
            return Err("stack underflow".into());
        }
        self.stack.pop().ok_or_else(|| "stack underflow".into())
    }

    fn top(&self) -> R<Id> {
        match self.stack.last() {
            Some(&id) if self.stack.len() > self.marks.last().copied().unwrap_or(0) => Ok(id),
            _ => Err("stack underflow".into()),
        }
    }

    /// The items pushed since the last `MARK`, which is removed.
    fn pop_mark(&mut self) -> R<Vec<Id>> {
        let mark = self.marks.pop().ok_or("no MARK to pop to")?;
        Ok(self.stack.split_off(mark))
    }

    /// The memo index argument of a PUT or GET opcode (`MEMOIZE`: the next free index).
    fn memo_index(&mut self, op: u8) -> R<u64> {
        match op {
            b'p' | b'g' => parse_index(self.line()?),
            b'q' | b'h' => Ok(self.u8()?.into()),
            b'r' | b'j' => Ok(self.u32()?.into()),
            _ => Ok(self.memo.len() as u64),
        }
    }

    fn memo_put(&mut self, index: u64) -> R<()> {
        let id = self.top()?;
        self.memo.insert(index, id);
        Ok(())
    }

    fn memo_get(&mut self, index: u64) -> R<()> {
        let id = *self.memo.get(&index).ok_or_else(|| format!("memo entry {index} is not set"))?;
        self.stack.push(id);
        Ok(())
    }

    fn int(&self, id: Id) -> Option<i64> {
        match self.nodes[id] {
            Node::Leaf(Value::Int(i)) => Some(i),
            _ => None,
        }
    }

    fn str(&self, id: Id) -> Option<&Arc<str>> {
        match &self.nodes[id] {
            Node::Leaf(Value::Str(s)) => Some(s),
            _ => None,
        }
    }

    fn describe(&self, id: Id) -> String {
        match &self.nodes[id] {
            Node::Leaf(v) => v.kind(),
            Node::Tuple(_) => "a tuple".into(),
            Node::List { .. } => "a list".into(),
            Node::Dict(_) => "a dict".into(),
            Node::Global(g) => format!("`{}`", g.name()),
            Node::Object { class, .. } => format!("an object of `{class}`"),
        }
    }

    /// Executes one opcode; `true` at `STOP`.
    fn step(&mut self) -> R<bool> {
        let op = self.u8().map_err(|_| "the pickle ends before its STOP opcode".to_string())?;
        match op {
            b'.' => return Ok(true),
            0x80 => {
                let proto = self.u8()?;
                if proto > 4 {
                    return Err(format!("unsupported pickle protocol {proto}"));
                }
            }
            0x95 => {
                // FRAME: a length hint for buffered readers; the frame's opcodes follow.
                self.take(8)?;
            }
            b'(' => self.marks.push(self.stack.len()),
            b'0' => {
                self.pop()?;
            }
            b'1' => {
                self.pop_mark()?;
            }
            b'2' => {
                let id = self.top()?;
                self.stack.push(id);
            }
            b'N' => self.push(Node::Leaf(Value::None)),
            0x88 => self.push(Node::Leaf(Value::Bool(true))),
            0x89 => self.push(Node::Leaf(Value::Bool(false))),
            b'I' => {
                let node = match self.line()? {
                    "01" => Node::Leaf(Value::Bool(true)),
                    "00" => Node::Leaf(Value::Bool(false)),
                    text => Node::Leaf(Value::Int(parse_int(text)?)),
                };
                self.push(node);
            }
            b'L' => {
                let text = self.line()?;
                let value = parse_int(text.strip_suffix('L').unwrap_or(text))?;
                self.push(Node::Leaf(Value::Int(value)));
            }
            b'J' => {
                let v = self.i32()?;
                self.push(Node::Leaf(Value::Int(v.into())));
            }
            b'K' => {
                let v = self.u8()?;
                self.push(Node::Leaf(Value::Int(v.into())));
            }
            b'M' => {
                let v = u16::from_le_bytes(self.fixed()?);
                self.push(Node::Leaf(Value::Int(v.into())));
            }
            0x8a => {
                let n = self.u8()?;
                let v = long_from_bytes(self.take(n.into())?)?;
                self.push(Node::Leaf(Value::Int(v)));
            }
            0x8b => {
                let n = self.i32()?;
                let n = u64::try_from(n).map_err(|_| format!("negative LONG4 length {n}"))?;
                let v = long_from_bytes(self.counted(n)?)?;
                self.push(Node::Leaf(Value::Int(v)));
            }
            b'F' => {
                let text = self.line()?;
                let v: f64 = text.trim().parse().map_err(|_| format!("`{text}` is not a float"))?;
                self.push(Node::Leaf(Value::Float(v)));
            }
            b'G' => {
                let v = f64::from_be_bytes(self.fixed()?);
                self.push(Node::Leaf(Value::Float(v)));
            }
            b'S' => {
                let text = self.line()?.to_owned();
                let bytes = unquote(&text)?;
                self.push(string_node(bytes));
            }
            b'T' => {
                let n = self.i32()?;
                let n = u64::try_from(n).map_err(|_| format!("negative BINSTRING length {n}"))?;
                let bytes = self.counted(n)?.to_vec();
                self.push(string_node(bytes));
            }
            b'U' => {
                let n = self.u8()?;
                let bytes = self.take(n.into())?.to_vec();
                self.push(string_node(bytes));
            }
            b'V' => {
                let text = raw_unicode_unescape(self.line()?)?;
                self.push(Node::Leaf(Value::Str(text.into())));
            }
            b'X' | 0x8c | 0x8d => {
                let n = match op {
                    b'X' => self.u32()?.into(),
                    0x8c => self.u8()?.into(),
                    _ => self.u64()?,
                };
                let bytes = self.counted(n)?;
                let text = std::str::from_utf8(bytes).map_err(|_| "a unicode string is not UTF-8".to_string())?;
                let node = Node::Leaf(Value::Str(text.into()));
                self.push(node);
            }
            b'B' | b'C' | 0x8e => {
                let n = match op {
                    b'B' => self.u32()?.into(),
                    b'C' => self.u8()?.into(),
                    _ => self.u64()?,
                };
                let bytes: Arc<[u8]> = self.counted(n)?.into();
                self.push(Node::Leaf(Value::Bytes(bytes)));
            }
            b')' => self.push(Node::Tuple(Vec::new())),
            b't' => {
                let items = self.pop_mark()?;
                self.tuple(items)?;
            }
            0x85..=0x87 => {
                let n = usize::from(op - 0x84);
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.pop()?);
                }
                items.reverse();
                self.tuple(items)?;
            }
            b']' => self.push(Node::List { items: Vec::new(), ty: None }),
            b'l' => {
                let items = self.pop_mark()?;
                self.push(Node::List { items, ty: None });
            }
            b'a' => {
                let item = self.pop()?;
                let list = self.top()?;
                self.append(list, vec![item])?;
            }
            b'e' => {
                let items = self.pop_mark()?;
                let list = self.top()?;
                self.append(list, items)?;
            }
            b'}' => self.push(Node::Dict(DictNode::default())),
            b'd' => {
                let items = self.pop_mark()?;
                self.push(Node::Dict(DictNode::default()));
                let dict = self.top()?;
                self.set_items(dict, items)?;
            }
            b's' => {
                let value = self.pop()?;
                let key = self.pop()?;
                let dict = self.top()?;
                self.set_items(dict, vec![key, value])?;
            }
            b'u' => {
                let items = self.pop_mark()?;
                let dict = self.top()?;
                self.set_items(dict, items)?;
            }
            b'p' | b'q' | b'r' | 0x94 => {
                let index = self.memo_index(op)?;
                self.memo_put(index)?;
            }
            b'g' | b'h' | b'j' => {
                let index = self.memo_index(op)?;
                self.memo_get(index)?;
            }
            b'c' => {
                let module = self.line()?.to_owned();
                let name = self.line()?.to_owned();
                self.global(&module, &name)?;
            }
            0x93 => {
                let name = self.pop()?;
                let module = self.pop()?;
                let (Some(module), Some(name)) = (self.str(module).cloned(), self.str(name).cloned()) else {
                    return Err("STACK_GLOBAL needs two strings".into());
                };
                self.global(&module, &name)?;
            }
            b'R' => {
                let args = self.pop()?;
                let callable = self.pop()?;
                self.reduce(callable, args)?;
            }
            0x81 => {
                let args = self.pop()?;
                let class = self.pop()?;
                self.new_object(class, args)?;
            }
            b'b' => {
                let state = self.pop()?;
                let object = self.top()?;
                match &mut self.nodes[object] {
                    Node::Object { state: slot, .. } => *slot = Some(state),
                    _ => return Err(format!("BUILD on {}", self.describe(object))),
                }
            }
            b'Q' => {
                let pid = self.pop()?;
                self.persistent(pid)?;
            }
            b'P' => {
                self.line()?;
                return Err("a persistent id must be a tuple, not a string".into());
            }
            b'i' | b'o' => return Err(format!("opcode {} (building an instance by class name) is not supported", op_name(op))),
            0x82..=0x84 => return Err("extension registry opcodes are not supported".into()),
            0x8f | 0x90 | 0x91 => return Err("sets are not supported".into()),
            0x92 => return Err("opcode NEWOBJ_EX is not supported".into()),
            _ => return Err(format!("unknown opcode 0x{op:02x}")),
        }
        Ok(false)
    }

    fn tuple(&mut self, items: Vec<Id>) -> R<()> {
        self.push(Node::Tuple(items));
        Ok(())
    }

    fn append(&mut self, list: Id, items: Vec<Id>) -> R<()> {
        let what = self.describe(list);
        match &mut self.nodes[list] {
            Node::List { items: existing, .. } => {
                existing.extend(items);
                Ok(())
            }
            _ => Err(format!("APPEND to {what}")),
        }
    }

    /// Sets `items` (key, value, key, value, …) in the dict `dict`.
    fn set_items(&mut self, dict: Id, items: Vec<Id>) -> R<()> {
        if items.len() % 2 != 0 {
            return Err("SETITEMS with an odd number of items".into());
        }
        if !matches!(self.nodes[dict], Node::Dict(_)) {
            return Err(format!("SETITEM on {}", self.describe(dict)));
        }
        for pair in items.chunks(2) {
            let key = self.key(pair[0], 0, &mut { MAX_KEY_PARTS })?;
            let Node::Dict(d) = &mut self.nodes[dict] else { unreachable!() };
            match d.index.get(&key) {
                Some(&at) => d.entries[at].1 = pair[1],
                None => {
                    d.index.insert(key, d.entries.len());
                    d.entries.push((pair[0], pair[1]));
                }
            }
        }
        Ok(())
    }

    /// The key of node `id`; `budget` bounds the parts a key may have, so that a tuple whose
    /// parts are shared many times over cannot take exponential time to compare.
    fn key(&self, id: Id, depth: usize, budget: &mut usize) -> R<Key> {
        if depth > MAX_NESTING {
            return Err(format!("a dict key nests deeper than {MAX_NESTING} levels"));
        }
        *budget = budget.checked_sub(1).ok_or("a dict key has too many parts")?;
        Ok(match &self.nodes[id] {
            Node::Leaf(Value::None) => Key::None,
            Node::Leaf(Value::Bool(b)) => Key::Int((*b).into()),
            Node::Leaf(Value::Int(i)) => Key::Int(*i),
            Node::Leaf(Value::Float(f)) if f.fract() == 0.0 && f.abs() < 9.2e18 => Key::Int(*f as i64),
            Node::Leaf(Value::Float(f)) => Key::Float(f.to_bits()),
            Node::Leaf(Value::Str(s)) => Key::Str(s.clone()),
            Node::Leaf(Value::Bytes(b)) => Key::Bytes(b.clone()),
            Node::Tuple(items) => Key::Tuple(
                items
                    .iter()
                    .map(|&i| self.key(i, depth + 1, budget))
                    .collect::<R<_>>()?,
            ),
            Node::List { .. } | Node::Dict(_) => {
                return Err(format!("{} cannot be a dict key", self.describe(id)));
            }
            _ => Key::Identity(id),
        })
    }

    /// The value of node `root`, built without recursion; shared nodes become shared values.
    fn materialize(&self, root: Id) -> R<Value> {
        let mut done: HashMap<Id, (Value, usize)> = HashMap::new();
        let mut open: HashSet<Id> = HashSet::new();
        let mut work = vec![(root, false)];
        while let Some((id, expanded)) = work.pop() {
            if done.contains_key(&id) {
                continue;
            }
            let children = self.children(id);
            if !expanded && !children.is_empty() {
                if !open.insert(id) {
                    return Err(format!("{} contains itself", self.describe(id)));
                }
                work.push((id, true));
                work.extend(children.iter().filter(|c| !done.contains_key(c)).map(|&c| (c, false)));
                continue;
            }
            let get = |c: &Id| done.get(c).map(|(v, _)| v.clone()).unwrap_or(Value::None);
            let depth = 1 + children.iter().map(|c| done.get(c).map_or(0, |(_, d)| *d)).max().unwrap_or(0);
            if depth > MAX_NESTING {
                return Err(format!("values nest deeper than {MAX_NESTING} levels"));
            }
            let value = match &self.nodes[id] {
                Node::Leaf(v) => v.clone(),
                Node::Tuple(items) => Value::Tuple(items.iter().map(get).collect()),
                Node::List { items, ty } => Value::List(Arc::new(List {
                    items: items.iter().map(get).collect(),
                    ty: ty.clone(),
                })),
                Node::Dict(d) => Value::Dict(Arc::new(Dict {
                    entries: d.entries.iter().map(|(k, v)| (get(k), get(v))).collect(),
                    ty: d.ty.clone(),
                })),
                Node::Global(g) => Value::Global(g.name().into()),
                Node::Object { class, state } => Value::Object(Arc::new(Object {
                    class: class.to_string(),
                    state: state.as_ref().map(get),
                })),
            };
            open.remove(&id);
            done.insert(id, (value, depth));
        }
        done.remove(&root).map(|(v, _)| v).ok_or_else(|| "nothing was built".into())
    }

    fn children(&self, id: Id) -> Vec<Id> {
        match &self.nodes[id] {
            Node::Tuple(items) | Node::List { items, .. } => items.clone(),
            Node::Dict(d) => d.entries.iter().flat_map(|&(k, v)| [k, v]).collect(),
            Node::Object { state: Some(s), .. } => vec![*s],
            _ => Vec::new(),
        }
    }
}

fn op_name(op: u8) -> &'static str {
    match op {
        b'i' => "INST",
        _ => "OBJ",
    }
}

#[cfg(test)]
mod tests;
