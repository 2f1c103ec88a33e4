//! The single entry point for tools: pick the format of a file and import it.

use std::path::Path;
use std::sync::Arc;

use crate::{ImportError, Program, Weights};

/// An input format of [`import_file`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A `torch.export.save` archive (`.pt2`).
    Pt2,
    /// FX graph text (`.fx.txt`, `.fx`).
    Fx,
    /// TorchScript IR text (`.graph.txt`, `.ts`).
    TorchScript,
    /// A `torch.jit.save` archive (`.pt`): its code compiled by the TorchScript frontend.
    TorchScriptArchive,
    /// This project's program archive (`.dar`).
    Archive,
    /// Text IR (`.ir`, `.mlir`); the program has no weights.
    Ir,
}

impl Format {
    /// The names [`Format::from_name`] accepts, for messages.
    pub const NAMES: &'static str = "pt2, fx, torchscript, pt, archive, ir";

    /// The format called `name` (`pt2`, `fx`, `torchscript`, `pt`, `archive`, `ir`).
    pub fn from_name(name: &str) -> Option<Format> {
        Some(match name {
            "pt2" => Format::Pt2,
            "fx" => Format::Fx,
            "torchscript" | "ts" => Format::TorchScript,
            "pt" | "jit" => Format::TorchScriptArchive,
            "archive" | "dar" => Format::Archive,
            "ir" | "mlir" => Format::Ir,
            _ => return None,
        })
    }

    /// The format a file name implies, by its extension.
    pub fn from_path(path: &Path) -> Option<Format> {
        let name = path.file_name()?.to_str()?;
        let ends = |s: &str| name.len() > s.len() && name.ends_with(s);
        Some(if ends(".pt2") {
            Format::Pt2
        } else if ends(".fx.txt") || ends(".fx") {
            Format::Fx
        } else if ends(".graph.txt") || ends(".ts") {
            Format::TorchScript
        } else if ends(".pt") || ends(".pth") {
            Format::TorchScriptArchive
        } else if ends(".dar") {
            Format::Archive
        } else if ends(".ir") || ends(".mlir") {
            Format::Ir
        } else {
            return None;
        })
    }
}

/// Imports the program in the file at `path`, in `format` or the one its extension implies.
///
/// The context must register the `prim` and `aten` dialects. The returned module is verified.
pub fn import_file(
    ctx: &ir::Context,
    path: &Path,
    format: Option<Format>,
) -> Result<Program, ImportError> {
    let format = match format.or_else(|| Format::from_path(path)) {
        Some(f) => f,
        None => {
            return Err(ImportError::UnknownFormat {
                path: path.to_path_buf(),
            });
        }
    };
    match format {
        Format::Pt2 => {
            let archive = crate::pt2::Pt2Archive::open(path)?;
            crate::convert::pt2::import(ctx, Arc::new(archive))
        }
        Format::Archive => crate::archive::load(ctx, path),
        Format::TorchScriptArchive => {
            let archive = crate::torchscript_pt::load(path)?;
            crate::torchscript_pt::compile::compile(ctx, &archive)
        }
        Format::Fx | Format::TorchScript | Format::Ir => {
            let text = std::fs::read_to_string(path).map_err(|source| ImportError::Io {
                path: path.to_path_buf(),
                source,
            })?;
            import_text(ctx, path, &text, format)
        }
    }
}

/// Imports a program held in memory: the bytes of a `.pt2` archive (as `torch.export.save`
/// writes into a buffer), or FX, TorchScript or IR text. `name` stands for the file in
/// messages. A program archive (`.dar`) is read from its file only, which it maps.
pub fn import_bytes(
    ctx: &ir::Context,
    name: &Path,
    bytes: Arc<[u8]>,
    format: Format,
) -> Result<Program, ImportError> {
    match format {
        Format::Pt2 => {
            let archive = crate::pt2::Pt2Archive::from_bytes(name, bytes)?;
            crate::convert::pt2::import(ctx, Arc::new(archive))
        }
        Format::TorchScriptArchive => {
            let archive = crate::torchscript_pt::TorchScriptArchive::from_bytes(name, bytes)?;
            crate::torchscript_pt::compile::compile(ctx, &archive)
        }
        Format::Archive => Err(ImportError::UnsupportedInMemory {
            path: name.to_path_buf(),
            format: "program archive",
        }),
        Format::Fx | Format::TorchScript | Format::Ir => {
            let text = std::str::from_utf8(&bytes).map_err(|e| ImportError::Io {
                path: name.to_path_buf(),
                source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
            })?;
            import_text(ctx, name, text, format)
        }
    }
}

/// Imports FX, TorchScript or IR text; `path` names it in messages.
fn import_text(ctx: &ir::Context, path: &Path, text: &str, format: Format) -> Result<Program, ImportError> {
    let parse_error = |error| ImportError::Parse {
        path: path.to_path_buf(),
        error,
    };
    let module = match format {
        Format::Fx => {
            let graph = crate::fx::parse(text).map_err(parse_error)?;
            crate::convert::fx::convert_graph(ctx, &graph, path)?
        }
        Format::TorchScript => {
            let graph = crate::torchscript::parse(text).map_err(parse_error)?;
            crate::convert::torchscript::convert_graph(ctx, &graph, path)?
        }
        _ => {
            let name = path.to_string_lossy();
            let module =
                ir::parse_module(ctx, text, &name).map_err(|d| ImportError::IrSyntax {
                    path: path.to_path_buf(),
                    message: {
                        let text = d.to_string();
                        let rest = text.strip_prefix(name.as_ref()).unwrap_or(&text);
                        rest.strip_prefix(':').unwrap_or(rest).to_string()
                    },
                })?;
            ir::verify(ctx, &module).map_err(|d| ImportError::Verify {
                path: path.to_path_buf(),
                message: d.to_string(),
            })?;
            module
        }
    };
    Ok(Program {
        module,
        weights: Weights::new(),
    })
}
