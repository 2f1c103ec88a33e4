//! The project's own program archive (`.dar`): a zip holding the module as text IR and each
//! weight's raw bytes, laid out so the weights can be memory-mapped in place.
//!
//! Entries, in this order, all stored uncompressed with a fixed timestamp (1980-01-01) and
//! permissions, so that saving the same program twice gives the same bytes:
//!
//! - `manifest.json`: `{"format": "dialect-program-archive", "version": 1, "program":
//!   "program.ir", "weights": [{"name", "dtype", "sizes", "strides", "offset", "file"}]}`, with
//!   dtypes spelled as in the IR (`f32`, `i64`, `i1`, …) and the offset in elements;
//! - `program.ir`: the module in the generic form with locations, which re-parses exactly;
//! - `weights/<n>.bin`: the n-th weight's whole storage, little-endian, its data starting at a
//!   multiple of 64 bytes in the file.

use std::fs::File;
use std::io::{Cursor, Write};
use std::path::Path;
use std::sync::Arc;

use memmap2::Mmap;
use serde::{Deserialize, Serialize};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, ZipArchive, ZipWriter};

use crate::ImportError;
use crate::program::{self, Program, Weight, Weights};

/// The `format` field of the manifest.
pub const FORMAT: &str = "dialect-program-archive";
/// The manifest version this code writes and reads.
pub const VERSION: u32 = 1;
/// Alignment of weight data within the archive file, in bytes.
pub const ALIGNMENT: u16 = 64;

const MANIFEST: &str = "manifest.json";
const PROGRAM: &str = "program.ir";

#[derive(Serialize, Deserialize)]
struct Manifest {
    format: String,
    version: u32,
    program: String,
    weights: Vec<WeightEntry>,
}

#[derive(Serialize, Deserialize)]
struct WeightEntry {
    name: String,
    dtype: String,
    sizes: Vec<i64>,
    strides: Vec<i64>,
    offset: i64,
    file: String,
}

fn archive_err(path: &Path, message: impl Into<String>) -> ImportError {
    ImportError::Archive {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// Saves `program` to `path` through `outfile`: a regular file is replaced atomically, so a
/// failure never leaves a partial archive at `path`; a device or FIFO is written in place.
pub fn save(ctx: &ir::Context, program: &Program, path: &Path) -> Result<(), ImportError> {
    let text = ir::print_module(
        ctx,
        &program.module,
        ir::PrintOptions {
            generic: true,
            debug_info: true,
        },
    );
    let mut entries = Vec::new();
    let mut blobs: Vec<(String, &[u8])> = Vec::new();
    for (i, (name, w)) in program.weights.iter().enumerate() {
        let bytes = w.storage()?;
        let needed = w
            .bytes_needed()
            .ok_or_else(|| archive_err(path, format!("weight `{name}` has an invalid layout")))?;
        if (bytes.len() as u64) < needed {
            return Err(archive_err(
                path,
                format!(
                    "weight `{name}` needs {needed} bytes but its storage holds {}",
                    bytes.len()
                ),
            ));
        }
        let file = format!("weights/{i}.bin");
        entries.push(WeightEntry {
            name: name.to_string(),
            dtype: w.dtype.mlir_name().to_string(),
            sizes: w.sizes.clone(),
            strides: w.strides.clone(),
            offset: w.storage_offset,
            file: file.clone(),
        });
        blobs.push((file, bytes));
    }
    let manifest = Manifest {
        format: FORMAT.into(),
        version: VERSION,
        program: PROGRAM.into(),
        weights: entries,
    };
    let manifest =
        serde_json::to_vec_pretty(&manifest).map_err(|e| archive_err(path, e.to_string()))?;

    outfile::write_with(path, |sink| write_zip(sink, path, &manifest, text.as_bytes(), &blobs))
}

fn write_zip(
    sink: &mut outfile::Sink,
    path: &Path,
    manifest: &[u8],
    program: &[u8],
    blobs: &[(String, &[u8])],
) -> Result<(), ImportError> {
    let io = |source: std::io::Error| ImportError::Output(outfile::OutputError::Io {
        path: path.to_path_buf(),
        source,
    });
    let zerr = |e: zip::result::ZipError| archive_err(path, e.to_string());
    let mut zip = ZipWriter::new(std::io::BufWriter::new(sink));
    let base = SimpleFileOptions::default()
        .compression_method(CompressionMethod::Stored)
        .last_modified_time(DateTime::default())
        .unix_permissions(0o644);
    zip.start_file(MANIFEST, base).map_err(zerr)?;
    zip.write_all(manifest).map_err(io)?;
    zip.start_file(PROGRAM, base).map_err(zerr)?;
    zip.write_all(program).map_err(io)?;
    for (name, bytes) in blobs {
        let large = bytes.len() as u64 >= u32::MAX as u64;
        zip.start_file(
            name.as_str(),
            base.with_alignment(ALIGNMENT).large_file(large),
        )
        .map_err(zerr)?;
        zip.write_all(bytes).map_err(io)?;
    }
    let mut w = zip.finish().map_err(zerr)?;
    w.flush().map_err(io)
}

/// The memory map shared by the zip reader and the weights.
#[derive(Clone)]
struct MapBytes(Arc<Mmap>);

impl AsRef<[u8]> for MapBytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// Loads a program archive: parses and verifies the module; the weights stay in the mapped
/// file until used.
pub fn load(ctx: &ir::Context, path: &Path) -> Result<Program, ImportError> {
    let io = |source| ImportError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(io)?;
    // SAFETY: the map is only read; like any reader of a mapped file, this assumes the archive
    // is not truncated or rewritten while the program is alive (saving renames a new file over
    // the path instead of rewriting it).
    let map = Arc::new(unsafe { Mmap::map(&file) }.map_err(io)?);
    let mut zip =
        ZipArchive::new(Cursor::new(MapBytes(map.clone()))).map_err(|e| ImportError::NotZip {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
    let manifest = read_entry(path, &mut zip, MANIFEST)?;
    let manifest: Manifest = serde_json::from_slice(&manifest).map_err(|e| ImportError::Json {
        path: path.to_path_buf(),
        entry: MANIFEST.into(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })?;
    if manifest.format != FORMAT {
        return Err(archive_err(
            path,
            format!("not a program archive (format `{}`)", manifest.format),
        ));
    }
    if manifest.version != VERSION {
        return Err(archive_err(
            path,
            format!(
                "unsupported archive version {} (this reader supports {VERSION})",
                manifest.version
            ),
        ));
    }
    let text = read_entry(path, &mut zip, &manifest.program)?;
    let text = String::from_utf8(text)
        .map_err(|_| archive_err(path, format!("`{}` is not UTF-8", manifest.program)))?;
    let module = ir::parse_module(ctx, &text, &manifest.program)
        .map_err(|d| archive_err(path, format!("`{}`: {d}", manifest.program)))?;
    ir::verify(ctx, &module).map_err(|d| ImportError::Verify {
        path: path.to_path_buf(),
        message: d.to_string(),
    })?;

    let mut weights = Weights::new();
    for e in manifest.weights {
        let dtype = ir::DType::from_mlir_name(&e.dtype).ok_or_else(|| {
            program::weight_error(path, &e.name, format!("unknown dtype `{}`", e.dtype))
        })?;
        let Some(index) = zip.index_for_name(&e.file) else {
            return Err(ImportError::WeightMissing {
                path: path.to_path_buf(),
                name: e.name,
                entry: e.file,
            });
        };
        let raw = zip
            .by_index_raw(index)
            .map_err(|err| archive_err(path, format!("`{}`: {err}", e.file)))?;
        if raw.compression() != CompressionMethod::Stored
            || raw.encrypted()
            || raw.compressed_size() != raw.size()
        {
            return Err(archive_err(
                path,
                format!("`{}` must be stored uncompressed", e.file),
            ));
        }
        let start = raw.data_start();
        let end = start
            .checked_add(raw.size())
            .filter(|&end| end <= map.len() as u64);
        let Some(end) = end else {
            return Err(archive_err(
                path,
                format!("`{}` runs past the end of the file", e.file),
            ));
        };
        drop(raw);
        let w = Weight {
            dtype,
            sizes: e.sizes,
            strides: e.strides,
            storage_offset: e.offset,
            source: program::mapped(&map, start as usize..end as usize),
        };
        let needed = w.bytes_needed().ok_or_else(|| {
            program::weight_error(path, &e.name, "invalid sizes, strides or offset")
        })?;
        if needed > end - start {
            return Err(ImportError::WeightTooShort {
                path: path.to_path_buf(),
                name: e.name,
                entry: e.file,
                needed,
                actual: end - start,
            });
        }
        weights
            .insert(&e.name, w)
            .map_err(|m| program::weight_error(path, &e.name, m))?;
    }
    Ok(Program { module, weights })
}

fn read_entry(
    path: &Path,
    zip: &mut ZipArchive<Cursor<MapBytes>>,
    name: &str,
) -> Result<Vec<u8>, ImportError> {
    let f = zip.by_name(name).map_err(|_| ImportError::MissingEntry {
        path: path.to_path_buf(),
        entry: name.into(),
    })?;
    crate::zipread::read_entry(f).map_err(|reason| ImportError::BadEntry {
        path: path.to_path_buf(),
        entry: name.into(),
        reason,
    })
}
