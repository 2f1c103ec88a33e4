//! Opening a `.pt2` zip archive: locating the program, parsing it, indexing weights lazily.

use std::collections::HashMap;
use std::io::{Cursor, Read};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use serde::Deserialize;
use zip::ZipArchive;

use super::schema::{ExportedProgram, InputSpec, PayloadConfig, ScalarType, SchemaVersion, SymInt};
use crate::ImportError;
use crate::mapped::{EntryReader, MapBytes, bytes_needed, prefixes_of};

/// The schema major version this reader understands.
const SUPPORTED_MAJOR: i64 = 8;

const MODEL_JSON: &str = "models/model.json";
const WEIGHTS_DIR: &str = "data/weights/";
const WEIGHTS_CONFIG: &str = "data/weights/model_weights_config.json";
const CONSTANTS_DIR: &str = "data/constants/";
const CONSTANTS_CONFIG: &str = "data/constants/model_constants_config.json";

/// Where a stored tensor comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PayloadKind {
    /// A parameter (`is_param` in the weights config).
    Parameter,
    /// A buffer, persistent or not, stored with the weights.
    Buffer,
    /// A lifted tensor constant from `data/constants/`.
    Constant,
}

/// Layout of one stored tensor: its storage file and the view of it the program uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WeightInfo {
    pub kind: PayloadKind,
    pub dtype: ScalarType,
    pub sizes: Vec<u64>,
    /// Element strides; never negative.
    pub strides: Vec<u64>,
    /// Offset of the first element, in elements.
    pub storage_offset: u64,
    pub requires_grad: bool,
    /// Length of the storage file in bytes (at least what sizes, strides and offset reach).
    pub byte_len: u64,
    /// Name of the archive entry holding the storage.
    pub entry: String,
}

impl WeightInfo {
    /// Number of elements of the view.
    pub fn numel(&self) -> u64 {
        self.sizes.iter().product()
    }

    /// Whether the view is the whole storage laid out row-major from offset zero.
    pub fn is_contiguous(&self) -> bool {
        let mut expected = 1u64;
        for (size, stride) in self.sizes.iter().zip(&self.strides).rev() {
            if *size != 1 && *stride != expected {
                return false;
            }
            expected *= size;
        }
        self.storage_offset == 0
    }
}

/// One payload: what it is, and how to reach its bytes.
struct Payload {
    name: String,
    info: WeightInfo,
    /// Index of the entry in the zip directory.
    index: usize,
    /// Byte range in the map when the entry is stored uncompressed.
    stored: Option<Range<usize>>,
    /// Inflated bytes of a compressed entry, filled on first access.
    inflated: OnceLock<Vec<u8>>,
}

/// An open `.pt2` archive.
///
/// Opening parses the JSON program and the payload configs and checks every stored tensor
/// against the size of its file, but reads no tensor bytes: the file is memory-mapped, entries
/// stored uncompressed are borrowed from the map, and compressed entries are inflated on first
/// access and cached. Pickled entries (sample inputs, custom objects) are never read.
pub struct Pt2Archive {
    path: PathBuf,
    map: MapBytes,
    zip: Mutex<ZipArchive<Cursor<MapBytes>>>,
    prefix: String,
    program: ExportedProgram,
    payloads: Vec<Payload>,
    by_name: HashMap<String, usize>,
    pickled: Vec<String>,
}

impl std::fmt::Debug for Pt2Archive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pt2Archive")
            .field("path", &self.path)
            .field("prefix", &self.prefix)
            .field("payloads", &self.payloads.len())
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct VersionProbe {
    #[serde(default)]
    schema_version: Option<SchemaVersion>,
}

impl Pt2Archive {
    /// Opens the archive at `path`, parses its program and indexes its weights.
    pub fn open(path: impl AsRef<Path>) -> Result<Pt2Archive, ImportError> {
        let path = path.as_ref().to_path_buf();
        let map = MapBytes::map(&path)?;
        Pt2Archive::from_map(path, map)
    }

    /// Opens an archive held in memory (`torch.export.save` into a buffer). `name` stands for
    /// the file's path in messages.
    pub fn from_bytes(name: impl Into<PathBuf>, bytes: impl Into<Arc<[u8]>>) -> Result<Pt2Archive, ImportError> {
        Pt2Archive::from_map(name.into(), MapBytes::Owned(bytes.into()))
    }

    fn from_map(path: PathBuf, map: MapBytes) -> Result<Pt2Archive, ImportError> {
        let mut zip = map.zip(&path)?;
        let prefix = find_prefix(&path, &zip)?;
        let mut reader = EntryReader {
            path: &path,
            map: &map,
            zip: &mut zip,
        };

        let model_entry = format!("{prefix}{MODEL_JSON}");
        let model_bytes = reader.read(&model_entry)?;
        let probe: VersionProbe = parse_json(&path, &model_entry, &model_bytes)?;
        if let Some(v) = probe.schema_version
            && v.major != SUPPORTED_MAJOR
        {
            return Err(ImportError::UnsupportedSchemaVersion {
                path,
                major: v.major,
                minor: v.minor,
            });
        }
        let program: ExportedProgram = parse_json(&path, &model_entry, &model_bytes)?;
        drop(model_bytes);

        let mut table = PayloadTable::default();
        for (config, dir, kind) in [
            (WEIGHTS_CONFIG, WEIGHTS_DIR, ConfigKind::Weights),
            (CONSTANTS_CONFIG, CONSTANTS_DIR, ConfigKind::Constants),
        ] {
            let entry = format!("{prefix}{config}");
            // An archive without any state may omit the configs; `check_signature` catches
            // programs that need state the archive lacks.
            if reader.zip.index_for_name(&entry).is_none() {
                continue;
            }
            let bytes = reader.read(&entry)?;
            let parsed: PayloadConfig = parse_json(&path, &entry, &bytes)?;
            table.add(&mut reader, &entry, &format!("{prefix}{dir}"), parsed, kind)?;
        }
        table.check_signature(&path, &program)?;
        Ok(Pt2Archive {
            path,
            map,
            zip: Mutex::new(zip),
            prefix,
            program,
            payloads: table.payloads,
            by_name: table.by_name,
            pickled: table.pickled,
        })
    }

    /// Path the archive was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The deserialized program.
    pub fn program(&self) -> &ExportedProgram {
        &self.program
    }

    /// The top-level folder of the archive, with its trailing slash (e.g. `model/`).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Parameters and buffers (the weights config), in file order.
    pub fn weights(&self) -> impl Iterator<Item = (&str, &WeightInfo)> {
        self.payloads
            .iter()
            .filter(|p| p.info.kind != PayloadKind::Constant)
            .map(|p| (p.name.as_str(), &p.info))
    }

    /// Lifted tensor constants (the constants config), in file order.
    pub fn constants(&self) -> impl Iterator<Item = (&str, &WeightInfo)> {
        self.payloads
            .iter()
            .filter(|p| p.info.kind == PayloadKind::Constant)
            .map(|p| (p.name.as_str(), &p.info))
    }

    /// Names of pickled payloads, which this reader lists but never reads.
    pub fn pickled_payloads(&self) -> impl Iterator<Item = &str> {
        self.pickled.iter().map(String::as_str)
    }

    /// Layout of the weight or constant called `name` (its state-dict or constant name).
    pub fn weight_info(&self, name: &str) -> Option<&WeightInfo> {
        self.by_name.get(name).map(|&i| &self.payloads[i].info)
    }

    /// Raw little-endian storage bytes of the weight or constant called `name`.
    ///
    /// The slice is the whole storage file; apply [`WeightInfo::storage_offset`], sizes and
    /// strides to view it. Uncompressed entries are borrowed from the memory map; compressed
    /// ones are inflated once and cached.
    pub fn weight_bytes(&self, name: &str) -> Result<&[u8], ImportError> {
        let Some(&i) = self.by_name.get(name) else {
            if self.pickled.iter().any(|p| p == name) {
                return Err(ImportError::PickledPayload {
                    path: self.path.clone(),
                    name: name.into(),
                });
            }
            return Err(ImportError::UnknownWeight {
                path: self.path.clone(),
                name: name.into(),
            });
        };
        let payload = &self.payloads[i];
        if let Some(range) = &payload.stored {
            return Ok(&self.map.as_ref()[range.clone()]);
        }
        if let Some(bytes) = payload.inflated.get() {
            return Ok(bytes);
        }
        let bytes = self.inflate(payload)?;
        Ok(payload.inflated.get_or_init(|| bytes))
    }

    fn inflate(&self, payload: &Payload) -> Result<Vec<u8>, ImportError> {
        let bad = |reason: String| ImportError::BadEntry {
            path: self.path.clone(),
            entry: payload.info.entry.clone(),
            reason,
        };
        // A poisoned lock only means another thread panicked mid-read; the archive is intact.
        let mut zip = self.zip.lock().unwrap_or_else(|e| e.into_inner());
        let file = zip
            .by_index(payload.index)
            .map_err(|e| bad(e.to_string()))?;
        // Checked against the directory's size, the `byte_len` recorded when the archive opened.
        crate::zipread::read_entry(file).map_err(bad)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ConfigKind {
    Weights,
    Constants,
}

/// Payloads collected while opening.
#[derive(Default)]
struct PayloadTable {
    payloads: Vec<Payload>,
    by_name: HashMap<String, usize>,
    pickled: Vec<String>,
}

impl PayloadTable {
    fn add(
        &mut self,
        reader: &mut EntryReader<'_>,
        config_entry: &str,
        dir: &str,
        config: PayloadConfig,
        config_kind: ConfigKind,
    ) -> Result<(), ImportError> {
        let path = reader.path;
        for (name, meta) in config.config {
            if self.by_name.contains_key(&name) || self.pickled.contains(&name) {
                return Err(ImportError::DuplicateName {
                    path: path.to_path_buf(),
                    name,
                    entry: config_entry.to_owned(),
                });
            }
            let Some(tensor_meta) = meta.tensor_meta.as_ref().filter(|_| !meta.use_pickle) else {
                self.pickled.push(name);
                continue;
            };
            let invalid = |reason: String| ImportError::InvalidWeight {
                path: path.to_path_buf(),
                name: name.clone(),
                reason,
            };
            let dtype = tensor_meta.dtype;
            let elem = dtype
                .element_size()
                .ok_or_else(|| invalid(format!("unsupported dtype {}", dtype.code())))?;
            let concrete = |what: &str, v: &SymInt| -> Result<u64, ImportError> {
                match v {
                    SymInt::AsInt(i) if *i >= 0 => Ok(*i as u64),
                    SymInt::AsInt(i) => Err(invalid(format!("negative {what} {i}"))),
                    SymInt::AsExpr(e) => Err(invalid(format!("symbolic {what} `{}`", e.expr_str))),
                }
            };
            let sizes = tensor_meta
                .sizes
                .iter()
                .map(|s| concrete("size", s))
                .collect::<Result<Vec<_>, _>>()?;
            let strides = tensor_meta
                .strides
                .iter()
                .map(|s| concrete("stride", s))
                .collect::<Result<Vec<_>, _>>()?;
            if sizes.len() != strides.len() {
                return Err(invalid(format!(
                    "{} sizes but {} strides",
                    sizes.len(),
                    strides.len()
                )));
            }
            let storage_offset = concrete("storage offset", &tensor_meta.storage_offset)?;
            let needed = bytes_needed(&sizes, &strides, storage_offset, elem)
                .ok_or_else(|| invalid("size overflows".to_owned()))?;

            let entry = format!("{dir}{}", meta.path_name);
            let Some(index) = reader.zip.index_for_name(&entry) else {
                return Err(ImportError::WeightMissing {
                    path: path.to_path_buf(),
                    name,
                    entry,
                });
            };
            let (byte_len, stored) = reader.locate(index, &entry)?;
            if byte_len < needed {
                return Err(ImportError::WeightTooShort {
                    path: path.to_path_buf(),
                    name,
                    entry,
                    needed,
                    actual: byte_len,
                });
            }
            let kind = if config_kind == ConfigKind::Constants {
                PayloadKind::Constant
            } else if meta.is_param {
                PayloadKind::Parameter
            } else {
                PayloadKind::Buffer
            };
            let info = WeightInfo {
                kind,
                dtype,
                sizes,
                strides,
                storage_offset,
                requires_grad: tensor_meta.requires_grad,
                byte_len,
                entry,
            };
            self.by_name.insert(name.clone(), self.payloads.len());
            self.payloads.push(Payload {
                name,
                info,
                index,
                stored,
                inflated: OnceLock::new(),
            });
        }
        Ok(())
    }

    /// Every parameter, buffer and tensor constant the signature names must be stored.
    fn check_signature(&self, path: &Path, program: &ExportedProgram) -> Result<(), ImportError> {
        for spec in &program.graph_module.signature.input_specs {
            let name = match spec {
                InputSpec::Parameter(p) => &p.parameter_name,
                InputSpec::Buffer(b) => &b.buffer_name,
                InputSpec::TensorConstant(c) => &c.tensor_constant_name,
                _ => continue,
            };
            if !self.by_name.contains_key(name) && !self.pickled.contains(name) {
                return Err(ImportError::WeightUndeclared {
                    path: path.to_path_buf(),
                    name: name.clone(),
                });
            }
        }
        Ok(())
    }
}

/// Finds the folder that holds `models/model.json`: the archive's top-level folder.
fn find_prefix<R: Read + std::io::Seek>(
    path: &Path,
    zip: &ZipArchive<R>,
) -> Result<String, ImportError> {
    let candidates = prefixes_of(zip, MODEL_JSON);
    match candidates.len() {
        0 => Err(ImportError::MissingModelJson {
            path: path.to_path_buf(),
        }),
        1 => Ok(candidates.into_iter().next().unwrap_or_default()),
        _ => Err(ImportError::AmbiguousModelJson {
            path: path.to_path_buf(),
            entries: candidates
                .iter()
                .map(|p| format!("{p}{MODEL_JSON}"))
                .collect(),
        }),
    }
}

fn parse_json<'a, T: Deserialize<'a>>(
    path: &Path,
    entry: &str,
    bytes: &'a [u8],
) -> Result<T, ImportError> {
    serde_json::from_slice(bytes).map_err(|e| {
        let text = e.to_string();
        let position = format!(" at line {} column {}", e.line(), e.column());
        ImportError::Json {
            path: path.to_path_buf(),
            entry: entry.to_owned(),
            line: e.line(),
            column: e.column(),
            message: text.strip_suffix(&position).unwrap_or(&text).to_owned(),
        }
    })
}
