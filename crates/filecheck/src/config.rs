//! Options of a FileCheck run, mirroring LLVM FileCheck's command-line flags.

pub use crate::dump::{DumpFilter, DumpInput};

/// Options of a FileCheck run. `Config::default()` behaves like `FileCheck`
/// with no flags, except that no input dump is rendered (`--dump-input=never`):
/// the dump is the command line's business, which defaults to `fail`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Check prefixes (`--check-prefix`, `--check-prefixes`); empty means `CHECK`.
    pub prefixes: Vec<String>,
    /// Comment prefixes (`--comment-prefixes`); a line where one appears
    /// before any check prefix is ignored from there on.
    pub comment_prefixes: Vec<String>,
    /// `--strict-whitespace`: do not collapse runs of spaces and tabs.
    pub strict_whitespace: bool,
    /// `--match-full-lines`: every positive pattern must match a whole line.
    pub match_full_lines: bool,
    /// `--ignore-case`.
    pub ignore_case: bool,
    /// `--implicit-check-not`: patterns checked as `CHECK-NOT` everywhere.
    pub implicit_check_not: Vec<String>,
    /// `-D` definitions as written after `-D`: `NAME=VALUE` for string
    /// variables, `#NAME=EXPR` or `#%x,NAME=EXPR` for numeric ones.
    pub defines: Vec<String>,
    /// `--allow-empty`: accept an empty input.
    pub allow_empty: bool,
    /// `--allow-unused-prefixes`: do not fail when a check prefix is never used.
    pub allow_unused_prefixes: bool,
    /// `--enable-var-scope`: variables not starting with `$` are forgotten at
    /// each `CHECK-LABEL`.
    pub enable_var_scope: bool,
    /// `-v`: report every successful positive match as a remark (into the
    /// input dump when one is collected).
    pub verbose: bool,
    /// `-vv`: also report the implicit end-of-input match, CHECK-NOT
    /// patterns not found, and discarded CHECK-DAG matches. Implies `verbose`.
    pub very_verbose: bool,
    /// `--allow-deprecated-dag-overlap`: let the matches of a CHECK-DAG
    /// group overlap.
    pub allow_deprecated_dag_overlap: bool,
    /// `--dump-input`: when to append the annotated input to the report.
    pub dump_input: DumpInput,
    /// `--dump-input-filter`; `None` means `error` for `fail` and `all` for `always`.
    pub dump_filter: Option<DumpFilter>,
    /// `--dump-input-context`: lines shown around each line the filter keeps.
    pub dump_context: usize,
    /// `--color`: diagnostics and the dump with LLVM's ANSI colors.
    pub color: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            prefixes: Vec::new(),
            comment_prefixes: vec!["COM".to_string(), "RUN".to_string()],
            strict_whitespace: false,
            match_full_lines: false,
            ignore_case: false,
            implicit_check_not: Vec::new(),
            defines: Vec::new(),
            allow_empty: false,
            allow_unused_prefixes: false,
            enable_var_scope: false,
            verbose: false,
            very_verbose: false,
            allow_deprecated_dag_overlap: false,
            dump_input: DumpInput::Never,
            dump_filter: None,
            dump_context: 5,
            color: false,
        }
    }
}

impl Config {
    /// The check prefixes in effect (`CHECK` when none were given).
    pub fn check_prefixes(&self) -> Vec<String> {
        if self.prefixes.is_empty() { vec!["CHECK".to_string()] } else { self.prefixes.clone() }
    }
}
