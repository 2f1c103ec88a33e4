//! A zip archive read through one memory map (or bytes held in memory), shared by the `.pt2` and
//! TorchScript `.pt` readers: entries stored uncompressed are borrowed from the map without
//! copying, compressed ones are inflated and checked by `zipread`.

use std::borrow::Cow;
use std::fs::File;
use std::io::{Cursor, Read, Seek};
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use memmap2::Mmap;
use zip::{CompressionMethod, ZipArchive};

use crate::ImportError;

/// The archive's bytes, shared by the archive handle and the zip reader: a memory-mapped
/// file, or bytes handed over in memory (a program serialized by PyTorch in the same process).
#[derive(Clone)]
pub(crate) enum MapBytes {
    Mapped(Arc<Mmap>),
    Owned(Arc<[u8]>),
}

impl AsRef<[u8]> for MapBytes {
    fn as_ref(&self) -> &[u8] {
        match self {
            MapBytes::Mapped(m) => m,
            MapBytes::Owned(b) => b,
        }
    }
}

impl MapBytes {
    /// Maps the file at `path`.
    pub(crate) fn map(path: &Path) -> Result<MapBytes, ImportError> {
        let io_err = |source| ImportError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(io_err)?;
        // SAFETY: the map is only read. Like every reader of a memory-mapped file, this assumes
        // no other process truncates or rewrites the archive while it is open.
        let map = unsafe { Mmap::map(&file) }.map_err(io_err)?;
        Ok(MapBytes::Mapped(Arc::new(map)))
    }

    /// Opens the zip directory of the bytes. PyTorch writes archives that start at offset 0; a
    /// directory found further in is a nested zip showing through a truncated outer archive.
    pub(crate) fn zip(&self, path: &Path) -> Result<ZipArchive<Cursor<MapBytes>>, ImportError> {
        let not_zip = |reason: String| ImportError::NotZip {
            path: path.to_path_buf(),
            reason,
        };
        let zip = ZipArchive::new(Cursor::new(self.clone())).map_err(|e| not_zip(e.to_string()))?;
        if zip.offset() != 0 {
            return Err(not_zip(format!(
                "no zip directory for the whole file (an archive starts at byte {})",
                zip.offset()
            )));
        }
        Ok(zip)
    }
}

/// The top-level folders (with their trailing slash, or empty for the root) that hold an entry
/// called `marker`, such as `models/model.json` or `data.pkl`.
pub(crate) fn prefixes_of<R: Read + Seek>(zip: &ZipArchive<R>, marker: &str) -> Vec<String> {
    zip.file_names()
        .filter_map(|name| {
            let prefix = name.strip_suffix(marker)?;
            let folder = prefix.strip_suffix('/').unwrap_or(prefix);
            (prefix.is_empty() || (prefix.ends_with('/') && !folder.contains('/')))
                .then(|| prefix.to_owned())
        })
        .collect()
}

/// Reads entries while an archive is opened, borrowing stored ones from the map.
pub(crate) struct EntryReader<'a> {
    pub path: &'a Path,
    pub map: &'a MapBytes,
    pub zip: &'a mut ZipArchive<Cursor<MapBytes>>,
}

impl EntryReader<'_> {
    /// Uncompressed length of entry `index` and, when stored, its byte range in the map.
    pub(crate) fn locate(
        &mut self,
        index: usize,
        entry: &str,
    ) -> Result<(u64, Option<Range<usize>>), ImportError> {
        let path = self.path;
        let file = self
            .zip
            .by_index_raw(index)
            .map_err(|e| bad_entry(path, entry, e))?;
        let size = file.size();
        if file.compression() != CompressionMethod::Stored || file.encrypted() {
            return Ok((size, None));
        }
        let start = file.data_start();
        let end = start.checked_add(file.compressed_size());
        let map_len = self.map.as_ref().len() as u64;
        match end {
            Some(end) if end <= map_len && file.compressed_size() == size => {
                Ok((size, Some(start as usize..end as usize)))
            }
            _ => Err(bad_entry(
                path,
                entry,
                "entry data runs past the end of the file",
            )),
        }
    }

    /// The bytes of the entry called `entry`: borrowed when stored, inflated otherwise.
    pub(crate) fn read(&mut self, entry: &str) -> Result<Cow<'_, [u8]>, ImportError> {
        let Some(index) = self.zip.index_for_name(entry) else {
            return Err(ImportError::MissingEntry {
                path: self.path.to_path_buf(),
                entry: entry.to_owned(),
            });
        };
        self.read_index(index, entry)
    }

    /// The bytes of entry `index`, called `entry` in messages.
    pub(crate) fn read_index(&mut self, index: usize, entry: &str) -> Result<Cow<'_, [u8]>, ImportError> {
        let path = self.path;
        if let (_, Some(range)) = self.locate(index, entry)? {
            return Ok(Cow::Borrowed(&self.map.as_ref()[range]));
        }
        let file = self
            .zip
            .by_index(index)
            .map_err(|e| bad_entry(path, entry, e))?;
        let out = crate::zipread::read_entry(file).map_err(|e| bad_entry(path, entry, e))?;
        Ok(Cow::Owned(out))
    }
}

pub(crate) fn bad_entry(path: &Path, entry: &str, reason: impl ToString) -> ImportError {
    ImportError::BadEntry {
        path: path.to_path_buf(),
        entry: entry.to_owned(),
        reason: reason.to_string(),
    }
}

/// Bytes a strided view of `elem`-byte elements reaches in its storage, or `None` on overflow.
pub(crate) fn bytes_needed(sizes: &[u64], strides: &[u64], offset: u64, elem: usize) -> Option<u64> {
    if sizes.contains(&0) {
        return Some(0);
    }
    let mut last = offset;
    for (size, stride) in sizes.iter().zip(strides) {
        last = last.checked_add((size - 1).checked_mul(*stride)?)?;
    }
    last.checked_add(1)?.checked_mul(elem as u64)
}
