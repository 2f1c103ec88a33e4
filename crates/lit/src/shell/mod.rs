//! lit's internal shell: a small POSIX-like command language run without `/bin/sh`.
//!
//! [`lexer`] splits a line into words and operators, [`parser`] builds a [`Script`], and
//! [`exec`] runs it. [`run`] does all three.

pub mod builtins;
pub mod exec;
pub mod lexer;
pub mod parser;

pub use exec::{CommandTrace, ExecOutput, ShellEnv, execute};
pub use parser::{Script, parse};

/// Parses and runs one command line.
pub fn run(line: &str, env: &mut ShellEnv) -> crate::Result<ExecOutput> {
    Ok(execute(&parse(line)?, env))
}
