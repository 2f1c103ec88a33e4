//! Reading the entries of a `torch.jit.save` archive: the pickles, the version, the `code/`
//! sources with their `.debug_pkl` tables, `extra/`; and the table of tensor storages, each a
//! byte range of the memory map, located (never read) as the pickles refer to them.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::path::Path;

use super::pickle::{self, Storage, Value};
use crate::ImportError;
use crate::mapped::{EntryReader, MapBytes, prefixes_of};

/// Where the storages of each pickle live, relative to the top-level folder.
pub(super) const DATA_DIR: &str = "data/";
pub(super) const CONSTANTS_DIR: &str = "constants/";

/// One tensor storage: its entry and its bytes' range in the map.
pub(super) struct StorageSlot {
    pub entry: String,
    pub range: Range<usize>,
}

/// What an archive holds, decoded but not yet interpreted as a module.
pub(super) struct Entries {
    pub prefix: String,
    pub data: Value,
    pub constants: Value,
    pub version: u64,
    pub sources: BTreeMap<String, String>,
    pub debug_pkl: BTreeMap<String, Vec<u8>>,
    pub extra: BTreeMap<String, Vec<u8>>,
    pub storages: Vec<StorageSlot>,
}

/// Reads every entry the loader needs and unpickles `data.pkl` and `constants.pkl`.
pub(super) fn read(path: &Path, map: &MapBytes) -> Result<Entries, ImportError> {
    let mut zip = map.zip(path)?;
    let prefix = match &prefixes_of(&zip, "data.pkl")[..] {
        [] => {
            return Err(ImportError::MissingEntry {
                path: path.to_path_buf(),
                entry: "data.pkl".into(),
            });
        }
        [one] => one.clone(),
        several => {
            return Err(ImportError::TorchScriptArchive {
                path: path.to_path_buf(),
                entry: "data.pkl".into(),
                message: format!("several top-level folders hold one: {several:?}"),
            });
        }
    };
    let names: Vec<String> = zip.file_names().map(str::to_owned).collect();
    let mut reader = EntryReader {
        path,
        map,
        zip: &mut zip,
    };

    let version_entry = [format!("{prefix}version"), format!("{prefix}.data/version")]
        .into_iter()
        .find(|e| names.contains(e))
        .ok_or_else(|| ImportError::MissingEntry {
            path: path.to_path_buf(),
            entry: format!("{prefix}version"),
        })?;
    let version = text(&mut reader, &version_entry)?;
    let version = version.trim().parse().map_err(|_| ImportError::TorchScriptArchive {
        path: path.to_path_buf(),
        entry: version_entry.clone(),
        message: format!("`{}` is not a version number", version.trim()),
    })?;
    let byteorder_entry = format!("{prefix}byteorder");
    if names.contains(&byteorder_entry) {
        let order = text(&mut reader, &byteorder_entry)?;
        if order.trim() != "little" {
            return Err(ImportError::TorchScriptArchive {
                path: path.to_path_buf(),
                entry: byteorder_entry,
                message: format!("byte order `{}` is not supported (only little-endian)", order.trim()),
            });
        }
    }

    let mut sources = BTreeMap::new();
    let mut debug_pkl = BTreeMap::new();
    let mut extra = BTreeMap::new();
    for name in &names {
        let Some(rest) = name.strip_prefix(&prefix) else { continue };
        if name.ends_with('/') {
            continue;
        }
        if let Some(file) = rest.strip_prefix("code/") {
            if let Some(py) = file.strip_suffix(".debug_pkl") {
                debug_pkl.insert(py.to_owned(), reader.read(name)?.into_owned());
            } else if file.ends_with(".py") {
                sources.insert(file.to_owned(), text(&mut reader, name)?);
            }
        } else if let Some(file) = rest.strip_prefix("extra/") {
            extra.insert(file.to_owned(), reader.read(name)?.into_owned());
        }
    }

    let mut table = StorageTable::default();
    let mut unpickle = |reader: &mut EntryReader<'_>, file: &str, dir: &str| -> Result<Value, ImportError> {
        let entry = format!("{prefix}{file}");
        let bytes = reader.read(&entry)?.into_owned();
        let storage_dir = format!("{prefix}{dir}");
        pickle::unpickle(&bytes, &mut |s| table.resolve(reader, &storage_dir, s)).map_err(|e| {
            ImportError::Pickle {
                path: path.to_path_buf(),
                entry,
                offset: e.offset,
                message: e.message,
            }
        })
    };
    let data = unpickle(&mut reader, "data.pkl", DATA_DIR)?;
    let constants = unpickle(&mut reader, "constants.pkl", CONSTANTS_DIR)?;
    Ok(Entries {
        prefix,
        data,
        constants,
        version,
        sources,
        debug_pkl,
        extra,
        storages: table.slots,
    })
}

/// An entry that must be UTF-8 text.
fn text(reader: &mut EntryReader<'_>, entry: &str) -> Result<String, ImportError> {
    let bytes = reader.read(entry)?.into_owned();
    String::from_utf8(bytes).map_err(|_| crate::mapped::bad_entry(reader.path, entry, "not UTF-8 text"))
}

/// The storages the pickles referred to, each located once.
#[derive(Default)]
struct StorageTable {
    slots: Vec<StorageSlot>,
    by_entry: HashMap<String, usize>,
}

impl StorageTable {
    /// Checks the storage a persistent id names and returns its index: the entry must exist,
    /// be stored uncompressed and hold the bytes the pickle declares.
    fn resolve(&mut self, reader: &mut EntryReader<'_>, dir: &str, storage: &Storage) -> Result<usize, String> {
        let entry = format!("{dir}{}", storage.key);
        let elem = storage.dtype.size_bytes() as u64;
        let needed = storage
            .numel
            .checked_mul(elem)
            .filter(|&n| n <= usize::MAX as u64)
            .ok_or_else(|| format!("storage `{entry}` declares {} elements, too many to address", storage.numel))?;
        let index = match self.by_entry.get(&entry) {
            Some(&index) => index,
            None => {
                let Some(zip_index) = reader.zip.index_for_name(&entry) else {
                    return Err(format!("storage `{entry}` is not in the archive"));
                };
                let (_, range) = reader.locate(zip_index, &entry).map_err(|e| match e {
                    ImportError::BadEntry { reason, .. } => format!("storage `{entry}`: {reason}"),
                    other => other.to_string(),
                })?;
                let Some(range) = range else {
                    return Err(format!(
                        "storage `{entry}` is compressed; tensor data must be stored uncompressed"
                    ));
                };
                self.slots.push(StorageSlot {
                    entry: entry.clone(),
                    range,
                });
                self.by_entry.insert(entry.clone(), self.slots.len() - 1);
                self.slots.len() - 1
            }
        };
        let held = self.slots[index].range.len() as u64;
        if held < needed {
            return Err(format!(
                "storage `{entry}` holds {held} bytes, but the pickle declares {} elements of {elem} bytes ({needed} bytes)",
                storage.numel
            ));
        }
        Ok(index)
    }
}
