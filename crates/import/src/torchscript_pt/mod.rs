//! TorchScript archives written by `torch.jit.save` (`.pt`): the module object and its state,
//! the tensor constants, the `code/` sources and their debug tables, read without executing
//! anything and without reading tensor bytes (storages stay in the memory-mapped file).
//!
//! [`load`] is the entry point. The module tree is [`Module`]: each object's attributes in
//! pickle order, sorted into submodules, parameters, buffers and plain attributes by the
//! `__parameters__`/`__buffers__` lists its class declares in `code/` (the only thing read
//! from the sources here; compiling them is the TorchScript frontend's job).

mod archive;
pub mod compile;
mod debug;
pub mod lang;
pub mod pickle;
pub mod save;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ir::DType;

use crate::ImportError;
use crate::mapped::MapBytes;
pub use pickle::{Dict, List, Object, PickleError, Storage, Tensor, Value};

/// Opens the archive at `path` and loads its module.
pub fn load(path: impl AsRef<Path>) -> Result<TorchScriptArchive, ImportError> {
    let path = path.as_ref().to_path_buf();
    let map = MapBytes::map(&path)?;
    TorchScriptArchive::from_map(path, map)
}

/// A loaded TorchScript archive.
pub struct TorchScriptArchive {
    path: PathBuf,
    map: MapBytes,
    prefix: String,
    root: Module,
    data: Value,
    constants: Arc<[Value]>,
    version: u64,
    sources: BTreeMap<String, String>,
    debug_pkl: BTreeMap<String, Vec<u8>>,
    extra: BTreeMap<String, Vec<u8>>,
    storages: Vec<archive::StorageSlot>,
}

impl std::fmt::Debug for TorchScriptArchive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TorchScriptArchive")
            .field("path", &self.path)
            .field("root", &self.root.class)
            .field("storages", &self.storages.len())
            .finish_non_exhaustive()
    }
}

/// A module object: its class and its attributes in pickle order.
#[derive(Clone, Debug, PartialEq)]
pub struct Module {
    /// The qualified class name, `__torch__.torch.nn.modules.linear.Linear`.
    pub class: String,
    pub attributes: Vec<Attribute>,
}

/// One attribute of a module.
#[derive(Clone, Debug, PartialEq)]
pub struct Attribute {
    pub name: String,
    pub slot: Slot,
}

/// What an attribute is, by its class's declarations.
#[derive(Clone, Debug, PartialEq)]
pub enum Slot {
    Submodule(Module),
    /// Listed in `__parameters__`: a tensor, or `None` (a `Linear` without bias).
    Parameter(Value),
    /// Listed in `__buffers__`: a tensor or `None`.
    Buffer(Value),
    /// Anything else (`training`, `Final` constants, typed attributes, objects of other classes).
    Plain(Value),
}

impl Module {
    /// The attribute called `name`.
    pub fn get(&self, name: &str) -> Option<&Slot> {
        self.attributes.iter().find(|a| a.name == name).map(|a| &a.slot)
    }

    /// The submodule called `name`.
    pub fn submodule(&self, name: &str) -> Option<&Module> {
        match self.get(name) {
            Some(Slot::Submodule(m)) => Some(m),
            _ => None,
        }
    }

    /// Every parameter tensor of the tree, by its dotted path (`fc1.weight`), in order.
    pub fn named_parameters(&self) -> Vec<(String, &Tensor)> {
        self.named(|s| matches!(s, Slot::Parameter(_)))
    }

    /// Every buffer tensor of the tree, by its dotted path, in order.
    pub fn named_buffers(&self) -> Vec<(String, &Tensor)> {
        self.named(|s| matches!(s, Slot::Buffer(_)))
    }

    fn named(&self, want: fn(&Slot) -> bool) -> Vec<(String, &Tensor)> {
        let mut out = Vec::new();
        let mut work = vec![(String::new(), self)];
        while let Some((prefix, module)) = work.pop() {
            let mut subs = Vec::new();
            for a in &module.attributes {
                match &a.slot {
                    Slot::Submodule(m) => subs.push((format!("{prefix}{}.", a.name), m)),
                    Slot::Parameter(Value::Tensor(t)) | Slot::Buffer(Value::Tensor(t)) if want(&a.slot) => {
                        out.push((format!("{prefix}{}", a.name), &**t));
                    }
                    _ => {}
                }
            }
            // Depth first, in attribute order.
            work.extend(subs.into_iter().rev());
        }
        out
    }
}

/// A tensor's bytes as the archive holds them: little-endian elements of `dtype`, viewed from
/// `offset` (in elements) with `sizes` and `strides` (in elements) within `storage`.
#[derive(Clone, Copy, Debug)]
pub struct TensorView<'a> {
    pub dtype: DType,
    pub sizes: &'a [u64],
    pub strides: &'a [u64],
    pub offset: u64,
    /// The whole storage (`numel` elements as the pickle declares), borrowed from the map.
    pub storage: &'a [u8],
}

impl TorchScriptArchive {
    fn from_map(path: PathBuf, map: MapBytes) -> Result<TorchScriptArchive, ImportError> {
        let entries = archive::read(&path, &map)?;
        let data_entry = format!("{}data.pkl", entries.prefix);
        let classes = ClassHeaders::scan(&entries.sources);
        let root = match &entries.data {
            Value::Object(o) => classes.module(o, &path, &data_entry)?,
            other => {
                return Err(ImportError::TorchScriptArchive {
                    path,
                    entry: data_entry,
                    message: format!("the pickle holds {}, not a module object", other.kind()),
                });
            }
        };
        let constants = match &entries.constants {
            Value::Tuple(t) => t.clone(),
            other => {
                return Err(ImportError::TorchScriptArchive {
                    path,
                    entry: format!("{}constants.pkl", entries.prefix),
                    message: format!("the pickle holds {}, not a tuple", other.kind()),
                });
            }
        };
        Ok(TorchScriptArchive {
            path,
            map,
            prefix: entries.prefix,
            root,
            data: entries.data,
            constants,
            version: entries.version,
            sources: entries.sources,
            debug_pkl: entries.debug_pkl,
            extra: entries.extra,
            storages: entries.storages,
        })
    }

    /// Loads an archive held in memory; `name` stands for its path in messages.
    pub fn from_bytes(name: impl Into<PathBuf>, bytes: impl Into<Arc<[u8]>>) -> Result<TorchScriptArchive, ImportError> {
        TorchScriptArchive::from_map(name.into(), MapBytes::Owned(bytes.into()))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The top-level folder of the entries, with its trailing slash (`model/`).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The root module.
    pub fn root(&self) -> &Module {
        &self.root
    }

    /// `data.pkl` as decoded: the root module object.
    pub fn data(&self) -> &Value {
        &self.data
    }

    /// The tensor constants of `constants.pkl` (`CONSTANTS.c0`, `CONSTANTS.c1`, … in the code).
    pub fn constants(&self) -> &[Value] {
        &self.constants
    }

    /// The archive's format version (`version` or `.data/version`).
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The TorchScript sources, by path below `code/` (`__torch__/torch/nn/modules/linear.py`).
    pub fn sources(&self) -> &BTreeMap<String, String> {
        &self.sources
    }

    /// The `.debug_pkl` source-range tables, by the path of the source they describe.
    pub fn debug_pkl(&self) -> &BTreeMap<String, Vec<u8>> {
        &self.debug_pkl
    }

    /// The files of `extra/`, by path below it.
    pub fn extra(&self) -> &BTreeMap<String, Vec<u8>> {
        &self.extra
    }

    /// The entry holding `tensor`'s storage.
    pub fn storage_entry(&self, tensor: &Tensor) -> Option<&str> {
        self.storages.get(tensor.storage.index).map(|s| s.entry.as_str())
    }

    /// `tensor` as a program weight over the archive's bytes (nothing is copied).
    pub fn weight(&self, tensor: &Tensor) -> Result<crate::Weight, ImportError> {
        let view = self.tensor_view(tensor)?;
        let start = view.storage.as_ptr() as usize - self.map.as_ref().as_ptr() as usize;
        let bad = |what: &str| ImportError::InvalidWeight {
            path: self.path.clone(),
            name: tensor.storage.key.clone(),
            reason: format!("{what} does not fit 64 bits"),
        };
        let to_i64 = |v: &[u64]| v.iter().map(|&x| i64::try_from(x).map_err(|_| bad("a size or stride"))).collect::<Result<Vec<_>, _>>();
        Ok(crate::Weight {
            dtype: view.dtype,
            sizes: to_i64(view.sizes)?,
            strides: to_i64(view.strides)?,
            storage_offset: i64::try_from(view.offset).map_err(|_| bad("the storage offset"))?,
            source: crate::program::Source::Shared { bytes: self.map.clone(), range: start..start + view.storage.len() },
        })
    }

    /// The bytes of `tensor`, which must come from this archive.
    pub fn tensor_view<'a>(&'a self, tensor: &'a Tensor) -> Result<TensorView<'a>, ImportError> {
        let storage = &tensor.storage;
        let foreign = || ImportError::TorchScriptArchive {
            path: self.path.clone(),
            entry: storage.key.clone(),
            message: "the tensor's storage is not one of this archive's".into(),
        };
        let slot = self
            .storages
            .get(storage.index)
            .filter(|s| s.entry.ends_with(&format!("/{}", storage.key)))
            .ok_or_else(foreign)?;
        // Loading checked that the storage holds `numel` elements and the view stays inside them.
        let len = (storage.numel as usize)
            .checked_mul(storage.dtype.size_bytes())
            .filter(|&len| len <= slot.range.len())
            .ok_or_else(foreign)?;
        Ok(TensorView {
            dtype: storage.dtype,
            sizes: &tensor.sizes,
            strides: &tensor.strides,
            offset: tensor.offset,
            storage: &self.map.as_ref()[slot.range.start..slot.range.start + len],
        })
    }
}

/// What a class's header in `code/` declares.
#[derive(Debug, Default)]
struct ClassHeader {
    base: String,
    parameters: Vec<String>,
    buffers: Vec<String>,
}

/// Every class header of the sources, by qualified name.
struct ClassHeaders(HashMap<String, ClassHeader>);

impl ClassHeaders {
    /// Reads `class Name(Base):` lines and the `__parameters__`/`__buffers__` lists below them.
    fn scan(sources: &BTreeMap<String, String>) -> ClassHeaders {
        let mut out = HashMap::new();
        for (file, text) in sources {
            let Some(module) = file.strip_suffix(".py") else { continue };
            let module = module.replace('/', ".");
            let mut current: Option<(String, ClassHeader)> = None;
            for line in text.lines() {
                if let Some(rest) = line.strip_prefix("class ") {
                    if let Some((name, header)) = current.take() {
                        out.insert(name, header);
                    }
                    let Some((name, rest)) = rest.split_once('(') else { continue };
                    let base = rest.split_once(')').map_or("", |(b, _)| b);
                    current = Some((
                        format!("{module}.{}", name.trim()),
                        ClassHeader {
                            base: base.trim().to_owned(),
                            ..ClassHeader::default()
                        },
                    ));
                } else if !line.starts_with(' ') && !line.is_empty() {
                    if let Some((name, header)) = current.take() {
                        out.insert(name, header);
                    }
                } else if let Some((_, header)) = &mut current {
                    let line = line.trim();
                    if let Some(list) = line.strip_prefix("__parameters__ = ") {
                        header.parameters = names(list);
                    } else if let Some(list) = line.strip_prefix("__buffers__ = ") {
                        header.buffers = names(list);
                    }
                }
            }
            if let Some((name, header)) = current {
                out.insert(name, header);
            }
        }
        ClassHeaders(out)
    }

    fn is_module(&self, class: &str) -> bool {
        self.0.get(class).is_some_and(|h| h.base == "Module")
    }

    /// The module tree of `object`.
    fn module(&self, object: &Object, path: &Path, entry: &str) -> Result<Module, ImportError> {
        let err = |message: String| ImportError::TorchScriptArchive {
            path: path.to_path_buf(),
            entry: entry.to_owned(),
            message,
        };
        let class = &object.class;
        let header = self
            .0
            .get(class)
            .ok_or_else(|| err(format!("class `{class}` has no source under `code/`")))?;
        if header.base != "Module" {
            return Err(err(format!("class `{class}` is not a module (its base is `{}`)", header.base)));
        }
        let entries: &[(Value, Value)] = match &object.state {
            None => &[],
            Some(Value::Dict(d)) => &d.entries,
            Some(other) => return Err(err(format!("module `{class}` has {} as its state, not an attribute dict", other.kind()))),
        };
        let mut attributes = Vec::with_capacity(entries.len());
        for (key, value) in entries {
            let Some(name) = key.as_str() else {
                return Err(err(format!("module `{class}` has an attribute whose name is {}", key.kind())));
            };
            let declared = |list: &[String]| list.iter().any(|n| n == name);
            let tensor_or_none = |what: &str| match value {
                Value::Tensor(_) | Value::None => Ok(value.clone()),
                other => Err(err(format!("{what} `{name}` of `{class}` is {}, not a tensor", other.kind()))),
            };
            if let Value::Object(o) = value
                && !self.0.contains_key(&o.class)
            {
                return Err(err(format!("class `{}` has no source under `code/`", o.class)));
            }
            let slot = match value {
                Value::Object(o) if self.is_module(&o.class) => Slot::Submodule(self.module(o, path, entry)?),
                _ if declared(&header.parameters) => Slot::Parameter(tensor_or_none("parameter")?),
                _ if declared(&header.buffers) => Slot::Buffer(tensor_or_none("buffer")?),
                _ => Slot::Plain(value.clone()),
            };
            attributes.push(Attribute {
                name: name.to_owned(),
                slot,
            });
        }
        for name in header.parameters.iter().chain(&header.buffers) {
            if !attributes.iter().any(|a| &a.name == name) {
                return Err(err(format!("`{class}` declares `{name}`, which its state does not hold")));
            }
        }
        Ok(Module {
            class: class.clone(),
            attributes,
        })
    }
}

/// The names of a `["a", "b", ]` list.
fn names(list: &str) -> Vec<String> {
    let inner = list.trim().trim_start_matches('[').trim_end_matches(']');
    inner
        .split(',')
        .map(|n| n.trim().trim_matches('"').trim_matches('\''))
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .collect()
}
