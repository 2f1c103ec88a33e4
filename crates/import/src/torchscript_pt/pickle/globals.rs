//! The allow-list of globals and what the allowed callables build: tensors from persistent
//! storages, ordered dicts, TorchScript's typed lists and type tags, and objects of
//! TorchScript classes. Anything else a pickle names is refused by name.

use std::sync::Arc;

use ir::DType;

use super::{DictNode, Id, Machine, Node, R, Storage, Tensor, Value};

/// The callables and classes of the allow-list.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Global {
    RebuildTensorV2,
    OrderedDict,
    StorageType(DType),
    BuildList(&'static str, ListCheck),
    RestoreTypeTag,
    /// A TorchScript class, by its qualified name.
    Class(Arc<str>),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum ListCheck {
    Int,
    Float,
    Bool,
    Tensor,
}

impl Global {
    pub(super) fn resolve(module: &str, name: &str) -> Option<Global> {
        Some(match (module, name) {
            ("torch._utils", "_rebuild_tensor_v2") => Global::RebuildTensorV2,
            ("collections", "OrderedDict") => Global::OrderedDict,
            ("torch", storage) => Global::StorageType(storage_dtype(storage)?),
            ("torch.jit._pickle", "build_intlist") => Global::BuildList("List[int]", ListCheck::Int),
            ("torch.jit._pickle", "build_doublelist") => Global::BuildList("List[float]", ListCheck::Float),
            ("torch.jit._pickle", "build_boollist") => Global::BuildList("List[bool]", ListCheck::Bool),
            ("torch.jit._pickle", "build_tensorlist") => Global::BuildList("List[Tensor]", ListCheck::Tensor),
            ("torch.jit._pickle", "restore_type_tag") => Global::RestoreTypeTag,
            (m, n) if (m == "__torch__" || m.starts_with("__torch__.")) && is_identifier(n) => {
                Global::Class(format!("{m}.{n}").into())
            }
            _ => return None,
        })
    }

    pub(super) fn name(&self) -> String {
        match self {
            Global::RebuildTensorV2 => "torch._utils._rebuild_tensor_v2".into(),
            Global::OrderedDict => "collections.OrderedDict".into(),
            Global::StorageType(d) => format!("torch.{}", storage_name(*d)),
            Global::BuildList(ty, _) => format!("torch.jit._pickle.build_{}list", list_word(ty)),
            Global::RestoreTypeTag => "torch.jit._pickle.restore_type_tag".into(),
            Global::Class(c) => c.to_string(),
        }
    }
}

fn list_word(ty: &str) -> &'static str {
    match ty {
        "List[int]" => "int",
        "List[float]" => "double",
        "List[bool]" => "bool",
        _ => "tensor",
    }
}

const STORAGES: [(&str, DType); 10] = [
    ("FloatStorage", DType::F32),
    ("DoubleStorage", DType::F64),
    ("HalfStorage", DType::F16),
    ("BFloat16Storage", DType::BF16),
    ("LongStorage", DType::I64),
    ("IntStorage", DType::I32),
    ("ShortStorage", DType::I16),
    ("CharStorage", DType::I8),
    ("ByteStorage", DType::U8),
    ("BoolStorage", DType::Bool),
];

fn storage_dtype(name: &str) -> Option<DType> {
    STORAGES.iter().find(|(n, _)| *n == name).map(|(_, d)| *d)
}

fn storage_name(dtype: DType) -> &'static str {
    STORAGES.iter().find(|(_, d)| *d == dtype).map_or("?", |(n, _)| n)
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl Machine<'_, '_> {
    pub(super) fn global(&mut self, module: &str, name: &str) -> R<()> {
        let global = Global::resolve(module, name)
            .ok_or_else(|| format!("unsupported pickle global '{module} {name}'"))?;
        self.push(Node::Global(global));
        Ok(())
    }

    fn args(&self, args: Id, callee: &str) -> R<Vec<Id>> {
        match &self.nodes[args] {
            Node::Tuple(items) => Ok(items.clone()),
            _ => Err(format!("the arguments of `{callee}` are {}, not a tuple", self.describe(args))),
        }
    }

    pub(super) fn reduce(&mut self, callable: Id, args: Id) -> R<()> {
        let Node::Global(global) = &self.nodes[callable] else {
            return Err(format!("REDUCE calls {}, which is not callable", self.describe(callable)));
        };
        let global = global.clone();
        let name = global.name();
        let args = self.args(args, &name)?;
        match global {
            Global::RebuildTensorV2 => {
                let tensor = self.rebuild_tensor(&args)?;
                self.push(Node::Leaf(Value::Tensor(Arc::new(tensor))));
            }
            Global::OrderedDict if args.is_empty() => self.push(Node::Dict(DictNode::default())),
            Global::OrderedDict => return Err("`collections.OrderedDict` is called with arguments".into()),
            Global::BuildList(ty, check) => {
                let [list] = args[..] else {
                    return Err(format!("`{name}` takes one argument, not {}", args.len()));
                };
                let Node::List { items, .. } = &self.nodes[list] else {
                    return Err(format!("`{name}` is given {}, not a list", self.describe(list)));
                };
                for &item in items {
                    let ok = match (check, &self.nodes[item]) {
                        (ListCheck::Int, Node::Leaf(Value::Int(_)))
                        | (ListCheck::Float, Node::Leaf(Value::Float(_)))
                        | (ListCheck::Bool, Node::Leaf(Value::Bool(_)))
                        | (ListCheck::Tensor, Node::Leaf(Value::Tensor(_))) => true,
                        _ => false,
                    };
                    if !ok {
                        return Err(format!("`{name}` is given a list holding {}", self.describe(item)));
                    }
                }
                let items = items.clone();
                self.push(Node::List { items, ty: Some(ty.into()) });
            }
            Global::RestoreTypeTag => {
                let [value, ty] = args[..] else {
                    return Err(format!("`{name}` takes two arguments, not {}", args.len()));
                };
                let ty = self.str(ty).ok_or_else(|| format!("the type given to `{name}` is not a string"))?.to_string();
                match &mut self.nodes[value] {
                    Node::List { ty: slot, .. } => *slot = Some(ty),
                    Node::Dict(d) => d.ty = Some(ty),
                    _ => {}
                }
                self.stack.push(value);
            }
            Global::StorageType(_) | Global::Class(_) => {
                return Err(format!("`{name}` cannot be called by REDUCE"));
            }
        }
        Ok(())
    }

    /// `_rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])`.
    fn rebuild_tensor(&self, args: &[Id]) -> R<Tensor> {
        let bad = |what: &str| format!("`torch._utils._rebuild_tensor_v2`: {what}");
        if !(6..=7).contains(&args.len()) {
            return Err(bad(&format!("takes 6 or 7 arguments, not {}", args.len())));
        }
        let Node::Leaf(Value::Storage(storage)) = &self.nodes[args[0]] else {
            return Err(bad(&format!("the storage is {}", self.describe(args[0]))));
        };
        let offset = self.int(args[1]).and_then(|i| u64::try_from(i).ok()).ok_or_else(|| bad("the storage offset is not a non-negative int"))?;
        let sizes = self.int_tuple(args[2]).ok_or_else(|| bad("the sizes are not a tuple of non-negative ints"))?;
        let strides = self.int_tuple(args[3]).ok_or_else(|| bad("the strides are not a tuple of non-negative ints"))?;
        if sizes.len() != strides.len() {
            return Err(bad(&format!("{} sizes but {} strides", sizes.len(), strides.len())));
        }
        let Node::Leaf(Value::Bool(requires_grad)) = self.nodes[args[4]] else {
            return Err(bad("requires_grad is not a bool"));
        };
        match &self.nodes[args[5]] {
            Node::Dict(d) if d.entries.is_empty() => {}
            _ => return Err(bad("backward hooks must be an empty dict")),
        }
        if let Some(&meta) = args.get(6)
            && !matches!(self.nodes[meta], Node::Leaf(Value::None) | Node::Dict(_))
        {
            return Err(bad("the metadata is not a dict"));
        }
        let elem = storage.dtype.size_bytes();
        let needed = crate::mapped::bytes_needed(&sizes, &strides, offset, elem)
            .ok_or_else(|| bad("the view's extent overflows"))?;
        let available = storage.numel.saturating_mul(elem as u64);
        if needed > available {
            return Err(bad(&format!(
                "the view reaches {needed} bytes but storage `{}` declares {} elements ({available} bytes)",
                storage.key, storage.numel
            )));
        }
        Ok(Tensor {
            storage: storage.clone(),
            offset,
            sizes,
            strides,
            requires_grad,
        })
    }

    fn int_tuple(&self, id: Id) -> Option<Vec<u64>> {
        let Node::Tuple(items) = &self.nodes[id] else { return None };
        items.iter().map(|&i| self.int(i).and_then(|v| u64::try_from(v).ok())).collect()
    }

    pub(super) fn new_object(&mut self, class: Id, args: Id) -> R<()> {
        let Node::Global(Global::Class(name)) = &self.nodes[class] else {
            return Err(format!("NEWOBJ of {}, which is not a TorchScript class", self.describe(class)));
        };
        let name = name.clone();
        if !self.args(args, &name)?.is_empty() {
            return Err(format!("NEWOBJ of `{name}` with arguments"));
        }
        self.push(Node::Object { class: name, state: None });
        Ok(())
    }

    /// `('storage', torch.<T>Storage, key, device, numel)`.
    pub(super) fn persistent(&mut self, pid: Id) -> R<()> {
        let bad = || "a persistent id must be ('storage', torch.<T>Storage, key, device, numel)".to_string();
        let Node::Tuple(items) = &self.nodes[pid] else { return Err(bad()) };
        let [tag, ty, key, device, numel] = items[..] else { return Err(bad()) };
        if self.str(tag).map(|s| &**s) != Some("storage") {
            return Err(bad());
        }
        let Node::Global(Global::StorageType(dtype)) = self.nodes[ty] else {
            return Err(format!("the storage type of a persistent id is {}", self.describe(ty)));
        };
        let (Some(key), Some(device)) = (self.str(key), self.str(device)) else { return Err(bad()) };
        let numel = self
            .int(numel)
            .and_then(|n| u64::try_from(n).ok())
            .ok_or_else(|| "a storage's numel is not a non-negative int".to_string())?;
        let mut storage = Storage {
            key: key.to_string(),
            dtype,
            device: device.to_string(),
            numel,
            index: 0,
        };
        storage.index = (self.storages)(&storage)?;
        self.push(Node::Leaf(Value::Storage(Arc::new(storage))));
        Ok(())
    }
}
