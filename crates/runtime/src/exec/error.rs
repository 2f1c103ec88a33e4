//! What compiling or running a program can fail with.

use std::fmt;

use ir::Location;


/// An op that has no kernel, with its source location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MissingKernel {
    pub op: String,
    pub loc: String,
}

/// Errors of compiling and running programs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExecError {
    /// Ops without a kernel (all of them, in program order).
    NoKernel(Vec<MissingKernel>),
    /// An op, attribute or type the executor does not handle.
    Unsupported { what: String, loc: String },
    /// An op's operands and attributes do not fit its schema.
    Bind { op: String, loc: String, message: String },
    /// The module has no such function.
    MissingFunction(String),
    /// A parameter, buffer or constant named by the function is not in the weights.
    MissingWeight { kind: &'static str, name: String },
    /// The number of inputs is wrong.
    InputCount { expected: usize, got: usize },
    /// An input does not fit the function's signature (or the program's specializations).
    Input { name: String, index: usize, message: String },
    /// A kernel failed.
    Kernel { op: String, loc: String, message: String },
    /// A structural op failed at run time (a list of the wrong length, a bad condition, ...).
    Runtime { op: String, loc: String, message: String },
    /// The program raised an exception (`prim.RaiseException`).
    Raised { message: String, loc: String },
    /// The composite fallback failed to rewrite an op without a kernel.
    Fallback { loc: String, message: String },
}

impl fmt::Display for ExecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExecError::NoKernel(ms) => {
                for (i, m) in ms.iter().enumerate() {
                    if i > 0 {
                        f.write_str("\n")?;
                    }
                    write!(f, "`{}` at {}: no kernel and no decomposition", m.op, m.loc)?;
                }
                Ok(())
            }
            ExecError::Unsupported { what, loc } => write!(f, "{what} at {loc}: not supported by the interpreter"),
            ExecError::Bind { op, loc, message } => write!(f, "`{op}` at {loc}: {message}"),
            ExecError::MissingFunction(name) => write!(f, "the module has no function `@{name}`"),
            ExecError::MissingWeight { kind, name } => write!(f, "{kind} '{name}' is not in the weights"),
            ExecError::InputCount { expected, got } => write!(f, "expected {expected} input(s), got {got}"),
            ExecError::Input { name, index, message } => write!(f, "input '{name}' (#{index}): {message}"),
            ExecError::Kernel { op, loc, message } => write!(f, "`{op}` at {loc}: {message}"),
            ExecError::Runtime { op, loc, message } => write!(f, "`{op}` at {loc}: {message}"),
            ExecError::Raised { message, loc } => write!(f, "exception raised at {loc}: {message}"),
            ExecError::Fallback { loc, message } => write!(f, "{loc}: {message}"),
        }
    }
}

impl std::error::Error for ExecError {}

impl ExecError {
    /// The ops without kernels, when that is the error.
    pub fn missing_kernels(&self) -> &[MissingKernel] {
        match self {
            ExecError::NoKernel(ms) => ms,
            _ => &[],
        }
    }
}

/// A location as `file:line:col` (or its name), for messages.
pub(crate) fn loc_string(loc: &Location) -> String {
    if let Some((file, line, col)) = loc.file_line_col() {
        return format!("{file}:{line}:{col}");
    }
    match loc {
        Location::Unknown => "unknown location".into(),
        Location::Name { name, .. } => name.to_string(),
        other => other.to_string(),
    }
}
