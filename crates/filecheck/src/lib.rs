//! An LLVM-compatible FileCheck: checks a text (typically a tool's output)
//! against the `CHECK:` directives of a check file.
//!
//! ```
//! let config = filecheck::Config::default();
//! let checks = "CHECK: add [[X:%[0-9]+]]\nCHECK-NEXT: ret [[X]]\n";
//! let input = "add %1, %2\nret %1\n";
//! assert!(filecheck::check(checks, "test.ir", input, "<stdin>", &config).is_ok());
//! ```
//!
//! The supported directives are `CHECK`, `-NEXT`, `-SAME`, `-NOT`, `-DAG`,
//! `-LABEL`, `-EMPTY`, `-COUNT-n` and `COM:`; patterns take literal text,
//! `{{regex}}`, string variables (`[[V:re]]`, `[[V]]`) and numeric ones
//! (`[[#%x,N:]]`, `[[#N+1]]`). Failures render as LLVM renders them.
//! [`main_with_args`] is the whole command-line tool.

mod cli;
mod color;
mod config;
mod defines;
mod dump;
mod error;
mod numeric;
mod parse;
mod pattern;
mod run;
mod source;

pub use cli::{main_with_args, main_with_io};
pub use config::{Config, DumpFilter, DumpInput};
pub use error::FileCheckError;

/// A parsed check file, reusable across inputs.
#[derive(Debug, Clone)]
pub struct CheckFile {
    program: parse::Program,
    allow_empty: bool,
    dump_input: DumpInput,
    dump_filter: Option<DumpFilter>,
    dump_context: usize,
    paint: color::Paint,
}

/// The result of a passing run: the `-v` remarks, if any, rendered.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Report {
    remarks: String,
}

impl Report {
    /// The rendered remarks (empty unless `Config::verbose`).
    pub fn remarks(&self) -> &str {
        &self.remarks
    }
}

impl CheckFile {
    /// Parses the directives of `check_text`; `check_name` is the file name
    /// used in diagnostics.
    pub fn parse(check_text: &str, check_name: &str, config: &Config) -> Result<CheckFile, FileCheckError> {
        let program = parse::parse(check_text, check_name, config)?;
        Ok(CheckFile {
            program,
            allow_empty: config.allow_empty,
            dump_input: config.dump_input,
            dump_filter: config.dump_filter,
            dump_context: config.dump_context,
            paint: color::Paint::new(config.color),
        })
    }

    /// Checks `input`; `input_name` is the name used in diagnostics
    /// (`<stdin>` for standard input).
    pub fn run(&self, input: &str, input_name: &str) -> Result<Report, FileCheckError> {
        self.run_owned(input.to_string(), input_name)
    }

    /// [`CheckFile::run`] on an input the caller gives up, which saves a
    /// copy of it.
    pub fn run_owned(&self, input: String, input_name: &str) -> Result<Report, FileCheckError> {
        if input.is_empty() && !self.allow_empty {
            return Err(FileCheckError::EmptyInput(input_name.to_string()));
        }
        let text = if self.program.canonicalize { source::canonicalize(input) } else { source::strip_crlf(&input) };
        let outcome = run::run(&self.program, text, input_name);
        let mut rendered = source::render(&outcome.sources, &outcome.diagnostics, self.paint);
        if self.dump_input == DumpInput::Always || (!outcome.passed && self.dump_input == DumpInput::Fail) {
            let filter = self.dump_filter.unwrap_or(if self.dump_input == DumpInput::Always {
                DumpFilter::All
            } else {
                DumpFilter::Error
            });
            let check_name = &outcome.sources.get(self.program.check_file).name;
            rendered.push_str(&format!(
                "\nInput file: {input_name}\nCheck file: {check_name}\n\n-dump-input=help explains the following input dump.\n\n"
            ));
            let input = outcome.sources.get(outcome.input);
            let style = dump::Style { filter, context: self.dump_context, verbose: self.program.verbose, paint: self.paint };
            rendered.push_str(&dump::render(input, &outcome.dump, style));
        }
        if outcome.passed { Ok(Report { remarks: rendered }) } else { Err(FileCheckError::CheckFailed(rendered)) }
    }
}

/// Checks `input` against the directives in `check_text` in one call.
pub fn check(check_text: &str, check_name: &str, input: &str, input_name: &str, config: &Config) -> Result<(), FileCheckError> {
    CheckFile::parse(check_text, check_name, config)?.run(input, input_name).map(|_| ())
}
