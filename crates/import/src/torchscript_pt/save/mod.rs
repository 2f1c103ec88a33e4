//! Saving a [`Program`] as a TorchScript archive that `torch.jit.load` accepts: the module tree
//! of its state (one class per submodule path, so `layers.0.weight` loads back under the same
//! dotted name), `forward` as TorchScript source (`emit`), the state and tensor constants as
//! protocol-2 pickles (`pickler`) and raw storages, in a zip whose records are aligned (`zip`).
//!
//! The output is a function of the program alone: the same program gives the same bytes
//! (fixed timestamps, a serialization id derived from the contents, a fixed order of records,
//! classes and attributes), and names in the code are the IR's names made identifiers, so that
//! saving a program read back from such an archive gives the same code.

mod emit;
mod overload;
pub mod pickler;
mod zip;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ir::{Attribute, DType};

use super::pickle::{Dict, Object, Storage, Tensor, Value};
use crate::program::{ATTR_BUFFER, ATTR_BUFFER_MUTATION, ATTR_CONSTANT, ATTR_INPUT, ATTR_INPUT_MUTATION, ATTR_PARAM, ATTR_PARAM_MUTATION};
use crate::{ImportError, Program, Weight};
use emit::{ArgRole, ResultRole};

/// The Python module of the saved classes: `code/__torch__/dialect.py`.
pub const CODE_MODULE: &str = "dialect";
/// The root class, `__torch__.dialect.Program`; a submodule's class is named after its path.
pub const ROOT_CLASS: &str = "Program";
/// The archive format version written (`.data/version`): the newest operator version of
/// PyTorch 2.15, so that the loader applies no operator upgraders to the code.
pub const FORMAT_VERSION: u64 = 10;

/// Saves `program` at `path` through `outfile` (a regular file is replaced atomically, so a
/// failure leaves no partial archive); the file's stem names the archive's top-level folder.
pub fn save(ctx: &ir::Context, program: &Program, path: &Path) -> Result<(), ImportError> {
    let stem = path.file_stem().and_then(|s| s.to_str()).filter(|s| !s.is_empty() && *s != "-").unwrap_or("archive");
    let bytes = to_bytes(ctx, program, stem)?;
    outfile::write(path, &bytes)?;
    Ok(())
}

/// The archive of `program`, its records under the folder `name`.
pub fn to_bytes(ctx: &ir::Context, program: &Program, name: &str) -> Result<Vec<u8>, ImportError> {
    let path = PathBuf::from(format!("{name}.pt"));
    let fail = |entry: &str, message: String| ImportError::TorchScriptArchive { path: path.clone(), entry: entry.into(), message };
    if name.is_empty() || name.contains(['/', '\\']) {
        return Err(fail("", format!("`{name}` cannot name the archive's folder")));
    }
    let m = &program.module;
    let func = program.forward().ok_or_else(|| fail("", "the program has no `func.func @forward`".into()))?;
    let (in_types, out_types) =
        ir::builtin::function_signature(m, func).ok_or_else(|| fail("", "`forward` has no function type".into()))?;
    let attrs_of = |key: &str, n: usize| -> Vec<Attribute> {
        let mut v = m.attr(func, key).and_then(Attribute::as_array).map(<[Attribute]>::to_vec).unwrap_or_default();
        v.resize(n, Attribute::Unit);
        v
    };
    let arg_attrs = attrs_of(ir::builtin::ARG_ATTRS, in_types.len());
    let res_attrs = attrs_of(ir::builtin::RES_ATTRS, out_types.len());
    let block_args = m.regions(func).first().and_then(|&r| m.entry_block(r)).map(|b| m.block_args(b).to_vec()).unwrap_or_default();
    let text = |a: &Attribute, key: &str| a.dict_get(key).and_then(Attribute::as_str).map(str::to_owned);
    let weight = |state: &str| -> Result<&Weight, ImportError> {
        program.weights.get(state).ok_or_else(|| ImportError::UnknownWeight { path: path.clone(), name: state.into() })
    };

    // The arguments: state goes into the module tree or the constants table.
    let mut root = Node::default();
    let mut constants: Vec<TensorData> = Vec::new();
    let mut roles = Vec::with_capacity(in_types.len());
    for (i, a) in arg_attrs.iter().enumerate() {
        let role = if let Some(s) = text(a, ATTR_PARAM) {
            ArgRole::State(root.insert(&s, Kind::Parameter, weight(&s)?).map_err(|e| fail("data.pkl", e))?)
        } else if let Some(s) = text(a, ATTR_BUFFER) {
            ArgRole::State(root.insert(&s, Kind::Buffer, weight(&s)?).map_err(|e| fail("data.pkl", e))?)
        } else if let Some(s) = text(a, ATTR_CONSTANT) {
            constants.push(TensorData::from_weight(weight(&s)?, false)?);
            ArgRole::State(format!("CONSTANTS.c{}", constants.len() - 1))
        } else {
            let name = text(a, ATTR_INPUT)
                .or_else(|| block_args.get(i).and_then(|&v| m.value_name(v)).map(str::to_owned))
                .unwrap_or_else(|| format!("arg{i}"));
            ArgRole::Input(name)
        };
        roles.push(role);
    }
    let find = |key: &str, name: &str| {
        arg_attrs.iter().position(|a| text(a, key).as_deref() == Some(name)).ok_or_else(|| {
            fail("", format!("result `{key} = \"{name}\"` names no argument of `forward` with that attribute"))
        })
    };
    let mut results = Vec::with_capacity(out_types.len());
    for a in &res_attrs {
        results.push(if let Some(s) = text(a, ATTR_BUFFER_MUTATION) {
            ResultRole::Mutation(find(ATTR_BUFFER, &s)?)
        } else if let Some(s) = text(a, ATTR_PARAM_MUTATION) {
            ResultRole::Mutation(find(ATTR_PARAM, &s)?)
        } else if let Some(s) = text(a, ATTR_INPUT_MUTATION) {
            ResultRole::Mutation(find(ATTR_INPUT, &s)?)
        } else {
            ResultRole::Output
        });
    }

    // Classes: the root, then each submodule in the order its path first appears.
    let mut classes = Vec::new();
    root.name_classes(ROOT_CLASS, &mut classes);
    let qualified = |class: &str| format!("__torch__.{CODE_MODULE}.{class}");
    let method = emit::forward(ctx, m, func, &qualified(ROOT_CLASS), &roles, &results, constants.len())
        .map_err(|e| ImportError::Convert { path: path.clone(), at: e.at, message: e.message })?;
    for d in &method.dense_constants {
        let dims: Vec<i64> = d.dims();
        constants.push(TensorData {
            dtype: d.dtype(),
            sizes: dims,
            bytes: d.data().to_vec(),
            requires_grad: false,
        });
    }
    let mut source = String::new();
    root.write_classes(&qualified, &method.text, &mut source);

    // The records, in a fixed order.
    let mut data_storages = Vec::new();
    let data = root.value(&qualified, &mut data_storages).map_err(|e| fail("data.pkl", e))?;
    let data_pkl = pickler::pickle(&data).map_err(|e| fail("data.pkl", e))?;
    let mut constant_storages = Vec::new();
    let constant_values = constants
        .iter()
        .map(|t| t.value(&mut constant_storages))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| fail("constants.pkl", e))?;
    let constants_pkl = pickler::pickle(&Value::Tuple(constant_values.into())).map_err(|e| fail("constants.pkl", e))?;

    let mut records: Vec<(String, Vec<u8>)> = Vec::new();
    for (key, bytes) in data_storages {
        records.push((format!("{name}/data/{key}"), bytes));
    }
    records.push((format!("{name}/data.pkl"), data_pkl));
    records.push((format!("{name}/code/__torch__/{CODE_MODULE}.py"), source.into_bytes()));
    records.push((format!("{name}/constants.pkl"), constants_pkl));
    for (key, bytes) in constant_storages {
        records.push((format!("{name}/constants/{key}"), bytes));
    }
    records.push((format!("{name}/.data/version"), format!("{FORMAT_VERSION}\n").into_bytes()));
    records.push((format!("{name}/byteorder"), b"little".to_vec()));
    let id = serialization_id(&records);
    records.push((format!("{name}/.data/serialization_id"), id.into_bytes()));

    let mut zip = zip::ZipBuilder::new();
    for (entry, bytes) in &records {
        zip.add(entry, bytes).map_err(|e| fail(entry, e))?;
    }
    zip.finish().map_err(|e| fail("", e))
}

/// 40 decimal digits derived from the records (two 64-bit FNV-1a hashes of names and bytes),
/// so that the same contents always carry the same id.
fn serialization_id(records: &[(String, Vec<u8>)]) -> String {
    let mut a: u64 = 0xcbf2_9ce4_8422_2325;
    let mut b: u64 = 0x6c62_272e_07bb_0142;
    let mut feed = |bytes: &[u8]| {
        for &x in bytes {
            a = (a ^ u64::from(x)).wrapping_mul(0x0000_0100_0000_01b3);
            b = (b ^ u64::from(x)).wrapping_mul(0x0000_0100_0000_01b3).rotate_left(5);
        }
    };
    for (name, bytes) in records {
        feed(name.as_bytes());
        feed(&(bytes.len() as u64).to_le_bytes());
        feed(bytes);
    }
    format!("{a:020}{b:020}")
}

/// A tensor to be written: contiguous elements, little-endian.
struct TensorData {
    dtype: DType,
    sizes: Vec<i64>,
    bytes: Vec<u8>,
    requires_grad: bool,
}

impl TensorData {
    fn from_weight(w: &Weight, requires_grad: bool) -> Result<TensorData, ImportError> {
        Ok(TensorData { dtype: w.dtype, sizes: w.sizes.clone(), bytes: w.contiguous_bytes()?, requires_grad })
    }

    /// The pickled tensor over a new storage, whose key and bytes are appended to `storages`.
    fn value(&self, storages: &mut Vec<(String, Vec<u8>)>) -> Result<Value, String> {
        let key = storages.len().to_string();
        let sizes = self.sizes.iter().map(|&s| u64::try_from(s).map_err(|_| format!("size {s} is negative"))).collect::<Result<Vec<_>, _>>()?;
        let strides = crate::program::contiguous_strides(&self.sizes).into_iter().map(|s| s as u64).collect();
        let numel = (self.bytes.len() / self.dtype.size_bytes()) as u64;
        storages.push((key.clone(), self.bytes.clone()));
        Ok(Value::Tensor(Arc::new(Tensor {
            storage: Arc::new(Storage { key, dtype: self.dtype, device: "cpu".into(), numel, index: 0 }),
            offset: 0,
            sizes,
            strides,
            requires_grad: self.requires_grad,
        })))
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Parameter,
    Buffer,
}

/// A module of the saved tree: its tensors and submodules, each in the order first named.
#[derive(Default)]
struct Node {
    class: String,
    tensors: Vec<(String, Kind, TensorData)>,
    children: Vec<(String, Node)>,
}

impl Node {
    /// Adds the state `path` (`layers.0.weight`) and returns the expression that reads it.
    fn insert(&mut self, path: &str, kind: Kind, w: &Weight) -> Result<String, String> {
        let parts: Vec<&str> = path.split('.').collect();
        // `training` and `forward` are the class's own; `__x__` names are Python's.
        if parts.iter().any(|p| p.is_empty() || *p == "training" || *p == "forward" || p.starts_with("__")) {
            return Err(format!("state name `{path}` cannot name a module attribute"));
        }
        let (leaf, dirs) = parts.split_last().ok_or_else(|| format!("empty state name `{path}`"))?;
        let mut node = self;
        let mut expr = "self".to_string();
        for d in dirs {
            if node.tensors.iter().any(|(n, ..)| n == d) {
                return Err(format!("`{d}` of `{path}` is both a tensor and a submodule"));
            }
            let i = match node.children.iter().position(|(n, _)| n == d) {
                Some(i) => i,
                None => {
                    node.children.push((d.to_string(), Node::default()));
                    node.children.len() - 1
                }
            };
            expr = emit::attribute(&expr, d);
            node = &mut node.children[i].1;
        }
        if node.tensors.iter().any(|(n, ..)| n == leaf) || node.children.iter().any(|(n, _)| n == leaf) {
            return Err(format!("state `{path}` is named twice"));
        }
        let data = TensorData::from_weight(w, kind == Kind::Parameter).map_err(|e| e.to_string())?;
        node.tensors.push((leaf.to_string(), kind, data));
        Ok(emit::attribute(&expr, leaf))
    }

    /// Gives every node its class name: the root `root`, a submodule `root_<path>`.
    fn name_classes(&mut self, class: &str, taken: &mut Vec<String>) {
        let mut name = class.to_string();
        let mut n = 0;
        while taken.contains(&name) {
            n += 1;
            name = format!("{class}_{n}");
        }
        taken.push(name.clone());
        self.class = name.clone();
        for (child, node) in &mut self.children {
            let part: String = child.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
            node.name_classes(&format!("{name}_{part}"), taken);
        }
    }

    /// The class of this node (with `method` for the root) and those of its submodules.
    fn write_classes(&self, qualified: &dyn Fn(&str) -> String, method: &str, out: &mut String) {
        let list = |kind: Kind| -> String {
            self.tensors.iter().filter(|(_, k, _)| *k == kind).map(|(n, ..)| format!("{}, ", emit::str_literal(n))).collect()
        };
        out.push_str(&format!("class {}(Module):\n", self.class));
        out.push_str(&format!("  __parameters__ = [{}]\n", list(Kind::Parameter)));
        out.push_str(&format!("  __buffers__ = [{}]\n", list(Kind::Buffer)));
        out.push_str("  training : bool\n");
        let annotate = |out: &mut String, name: &str, ty: &str| {
            if emit::is_plain_identifier(name) && !name.starts_with("__") {
                out.push_str(&format!("  {name} : {ty}\n"));
            } else {
                out.push_str(&format!("  __annotations__[{}] = {ty}\n", emit::str_literal(name)));
            }
        };
        for (n, ..) in &self.tensors {
            annotate(out, n, "Tensor");
        }
        for (n, child) in &self.children {
            annotate(out, n, &qualified(&child.class));
        }
        out.push_str(method);
        for (_, child) in &self.children {
            child.write_classes(qualified, "", out);
        }
    }

    /// The pickled module object; storages are appended to `storages` in order.
    fn value(&self, qualified: &dyn Fn(&str) -> String, storages: &mut Vec<(String, Vec<u8>)>) -> Result<Value, String> {
        let mut entries = vec![(Value::Str("training".into()), Value::Bool(false))];
        for (n, _, t) in &self.tensors {
            entries.push((Value::Str(n.as_str().into()), t.value(storages)?));
        }
        for (n, child) in &self.children {
            entries.push((Value::Str(n.as_str().into()), child.value(qualified, storages)?));
        }
        Ok(Value::Object(Arc::new(Object {
            class: qualified(&self.class),
            state: Some(Value::Dict(Arc::new(Dict { entries, ty: None }))),
        })))
    }
}
