//! Errors of every reader in the crate.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// How deeply the text formats may nest values, types and blocks. Real programs stay within
/// a few levels; the bound keeps the recursive-descent parsers (and the code that walks what
/// they build) far from the end of the stack.
pub(crate) const MAX_NESTING: usize = 256;

/// A syntax error in a text format, with a 1-based line and column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub col: usize,
    pub message: String,
}

impl ParseError {
    pub(crate) fn new(line: usize, col: usize, message: impl Into<String>) -> ParseError {
        ParseError {
            line,
            col,
            message: message.into(),
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.col, self.message)
    }
}

impl std::error::Error for ParseError {}

/// Everything that can go wrong while reading an input program.
///
/// Each variant that concerns a file names it, so that the message alone tells the user which
/// input is broken and how.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error(transparent)]
    Output(#[from] outfile::OutputError),
    #[error("{}: cannot read: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{}: not a readable zip archive (truncated or corrupt?): {reason}", path.display())]
    NotZip { path: PathBuf, reason: String },
    #[error("{}: archive has no `models/model.json`", path.display())]
    MissingModelJson { path: PathBuf },
    #[error("{}: archive holds more than one program: {entries:?}", path.display())]
    AmbiguousModelJson { path: PathBuf, entries: Vec<String> },
    #[error("{}: archive entry `{entry}` is missing", path.display())]
    MissingEntry { path: PathBuf, entry: String },
    #[error("{}: cannot read archive entry `{entry}`: {reason}", path.display())]
    BadEntry {
        path: PathBuf,
        entry: String,
        reason: String,
    },
    #[error("{}: {entry}:{line}:{column}: {message}", path.display())]
    Json {
        path: PathBuf,
        entry: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error(
        "{}: unsupported export schema version {major}.{minor} (this reader supports 8.x)",
        path.display()
    )]
    UnsupportedSchemaVersion {
        path: PathBuf,
        major: i64,
        minor: i64,
    },
    #[error("{}: `{name}` is stored in `{entry}`, which the archive does not contain", path.display())]
    WeightMissing {
        path: PathBuf,
        name: String,
        entry: String,
    },
    #[error("{}: the graph signature uses `{name}`, but no payload config declares it", path.display())]
    WeightUndeclared { path: PathBuf, name: String },
    #[error(
        "{}: `{name}` needs {needed} bytes but `{entry}` holds only {actual}",
        path.display()
    )]
    WeightTooShort {
        path: PathBuf,
        name: String,
        entry: String,
        needed: u64,
        actual: u64,
    },
    #[error("{}: `{name}`: {reason}", path.display())]
    InvalidWeight {
        path: PathBuf,
        name: String,
        reason: String,
    },
    #[error("{}: `{name}` is pickled; pickled payloads are never read", path.display())]
    PickledPayload { path: PathBuf, name: String },
    #[error("{}: duplicate name `{name}` in `{entry}`", path.display())]
    DuplicateName {
        path: PathBuf,
        name: String,
        entry: String,
    },
    #[error("{}: no weight or constant named `{name}`", path.display())]
    UnknownWeight { path: PathBuf, name: String },
    #[error("{}:{error}", path.display())]
    Parse { path: PathBuf, error: ParseError },
    #[error("{}: node `{node}`: unknown operator target `{target}`{}", path.display(), unknown_target_hint(target))]
    UnknownTarget {
        path: PathBuf,
        node: String,
        target: String,
    },
    #[error("{}: {at}: `{name}` is used but never defined", path.display())]
    UndefinedValue {
        path: PathBuf,
        at: String,
        name: String,
    },
    #[error("{}: {at}: `{name}` is defined twice", path.display())]
    DuplicateValue {
        path: PathBuf,
        at: String,
        name: String,
    },
    /// A construct the converter does not support or an input that contradicts the schema.
    #[error("{}: {at}: {message}", path.display())]
    Convert {
        path: PathBuf,
        /// The node (`node `add``) or `line:col` where the problem is.
        at: String,
        message: String,
    },
    /// Like [`ImportError::Convert`], at a line and column of a text input.
    #[error("{}:{line}:{col}: {message}", path.display())]
    ConvertAt {
        path: PathBuf,
        line: usize,
        col: usize,
        message: String,
    },
    /// The converted module fails the IR verifier (a converter bug or an unsupported construct).
    #[error("{}: imported IR does not verify: {message}", path.display())]
    Verify { path: PathBuf, message: String },
    /// Text IR that does not parse; `message` starts with `line:col`.
    #[error("{}:{message}", path.display())]
    IrSyntax { path: PathBuf, message: String },
    /// A malformed program archive of this project.
    #[error("{}: {message}", path.display())]
    Archive { path: PathBuf, message: String },
    /// A pickle (`data.pkl`, `constants.pkl`, a `.debug_pkl`) that is malformed or asks for
    /// something the safe unpickler refuses.
    #[error("{}: `{entry}`: {message} at byte offset {offset}", path.display())]
    Pickle {
        path: PathBuf,
        entry: String,
        offset: u64,
        message: String,
    },
    /// A TorchScript archive (`.pt`) whose pickled values do not describe a loadable module.
    #[error("{}: `{entry}`: {message}", path.display())]
    TorchScriptArchive {
        path: PathBuf,
        entry: String,
        message: String,
    },
    /// An error in an archive's TorchScript source (`code/…py`), at a line and column, with
    /// the source line and a caret, and the original Python location where the archive's
    /// debug table maps it.
    #[error("{}: {entry}:{line}:{col}: error: {message}\n{excerpt}", path.display())]
    TorchScriptSource {
        path: PathBuf,
        entry: String,
        line: usize,
        col: usize,
        message: String,
        excerpt: String,
    },
    #[error("{}: cannot tell the input format from the file name; name one ({})", path.display(), crate::Format::NAMES)]
    UnknownFormat { path: PathBuf },

    /// A format that is read from a file only, handed over as bytes.
    #[error("{}: a {format} cannot be read from memory; give its file", path.display())]
    UnsupportedInMemory { path: PathBuf, format: &'static str },
}

/// What to do about an operator the context does not declare: a custom op (a namespace other
/// than `aten`) needs its schema.
fn unknown_target_hint(target: &str) -> String {
    match target.strip_prefix("torch.ops.").and_then(|r| r.split_once('.')) {
        Some((ns, _)) if ns != "aten" && ns != "higher_order" => format!(
            " (`{ns}` is not a registered namespace: declare its operators' schemas with `--op-library FILE`, or `dialect_aten::library::register_library` when embedding)"
        ),
        _ => String::new(),
    }
}
