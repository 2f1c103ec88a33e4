//! The values the unpickler returns: an immutable tree whose shared parts are shared by `Arc`.

use std::sync::Arc;

use ir::DType;

/// A decoded pickle value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Arc<str>),
    Bytes(Arc<[u8]>),
    Tuple(Arc<[Value]>),
    List(Arc<List>),
    Dict(Arc<Dict>),
    /// A tensor rebuilt by `torch._utils._rebuild_tensor_v2`.
    Tensor(Arc<Tensor>),
    /// An instance of a TorchScript class (`__torch__.*`), with the state `BUILD` gave it.
    Object(Arc<Object>),
    /// A persistent storage reference not wrapped in a tensor.
    Storage(Arc<Storage>),
    /// An allowed global used as a value rather than called, by its qualified name.
    Global(Arc<str>),
}

/// A list, with the TorchScript type PyTorch tagged it with (`List[int]` from
/// `torch.jit._pickle.build_intlist`, or the type of `restore_type_tag`).
#[derive(Clone, Debug, PartialEq)]
pub struct List {
    pub items: Vec<Value>,
    pub ty: Option<String>,
}

/// A dict in insertion order; a key set twice keeps its first position and its last value.
#[derive(Clone, Debug, PartialEq)]
pub struct Dict {
    pub entries: Vec<(Value, Value)>,
    pub ty: Option<String>,
}

impl Dict {
    /// The value of the string key `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.entries
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(_, v)| v)
    }
}

/// An object of a TorchScript class: `__torch__.<module>.<Class>` and its state (the attribute
/// dict of a module, whatever `__getstate__` returned otherwise; `None` before any `BUILD`).
#[derive(Clone, Debug, PartialEq)]
pub struct Object {
    pub class: String,
    pub state: Option<Value>,
}

/// A persistent id `('storage', torch.<T>Storage, key, device, numel)`, resolved by the caller
/// of [`unpickle`] (who gives it `index`, the position of its bytes in the caller's table).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Storage {
    pub key: String,
    pub dtype: DType,
    pub device: String,
    /// Elements the pickle declares; the storage holds at least `numel × dtype size` bytes.
    pub numel: u64,
    pub index: usize,
}

/// A strided view of a storage; it lies within the `numel` elements its storage declares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tensor {
    pub storage: Arc<Storage>,
    /// Offset of the first element, in elements.
    pub offset: u64,
    pub sizes: Vec<u64>,
    /// Element strides.
    pub strides: Vec<u64>,
    pub requires_grad: bool,
}

impl Value {
    /// What kind of value this is, for messages: `an int`, `an object of `C``.
    pub fn kind(&self) -> String {
        match self {
            Value::None => "None".into(),
            Value::Bool(_) => "a bool".into(),
            Value::Int(_) => "an int".into(),
            Value::Float(_) => "a float".into(),
            Value::Str(_) => "a str".into(),
            Value::Bytes(_) => "bytes".into(),
            Value::Tuple(_) => "a tuple".into(),
            Value::List(_) => "a list".into(),
            Value::Dict(_) => "a dict".into(),
            Value::Tensor(_) => "a tensor".into(),
            Value::Object(o) => format!("an object of `{}`", o.class),
            Value::Storage(_) => "a storage".into(),
            Value::Global(g) => format!("`{g}`"),
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    pub fn as_tuple(&self) -> Option<&[Value]> {
        match self {
            Value::Tuple(t) => Some(t),
            _ => None,
        }
    }

    pub fn as_tensor(&self) -> Option<&Tensor> {
        match self {
            Value::Tensor(t) => Some(t),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&Object> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }

    pub fn as_dict(&self) -> Option<&Dict> {
        match self {
            Value::Dict(d) => Some(d),
            _ => None,
        }
    }
}

