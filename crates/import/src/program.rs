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
    /// A byte range of a zip archive's bytes (a TorchScript archive's storage).
    Shared { bytes: crate::mapped::MapBytes, range: Range<usize> },
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
            Source::Shared { bytes, range } => Ok(&bytes.as_ref()[range.clone()]),
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
