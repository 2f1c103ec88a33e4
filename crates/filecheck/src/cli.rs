//! The `filecheck` command line: LLVM-style flags (`--flag=value`,
//! `-flag value`, `-DVAR=VALUE`) over [`crate::CheckFile`].

use std::io::{Read, Write};

use crate::{CheckFile, Config, DumpFilter, DumpInput, FileCheckError};

const USAGE: &str = "USAGE: filecheck [options] <check-file>

OPTIONS:
  --check-prefix=<prefix>        Prefix to use from check file (default CHECK), repeatable
  --check-prefixes=<a,b,...>     Several prefixes at once
  --comment-prefixes=<a,b,...>   Comment prefixes (default COM,RUN)
  --input-file=<file>            File to check (default stdin)
  --strict-whitespace            Do not collapse horizontal whitespace
  --match-full-lines             Require patterns to match whole lines
  --ignore-case                  Match case-insensitively
  --implicit-check-not=<pattern> Add an implicit CHECK-NOT everywhere, repeatable
  -D<VAR=VALUE>, -D#<NUM=EXPR>   Define a string or numeric variable
  --allow-empty                  Allow an empty input file
  --allow-unused-prefixes        Allow prefixes that no directive uses
  --enable-var-scope             Forget local variables at each CHECK-LABEL
  --dump-input=<help|always|fail|never>
                                 When to print the annotated input (default fail)
  --dump-input-filter=<all|annotation-full|annotation|error>
                                 Which input lines the dump shows
  --dump-input-context=<N>       Lines of context around each shown line (default 5)
  -v, -vv                        Report matches too (into the dump, if any)
  --allow-deprecated-dag-overlap Accepted; CHECK-DAG matches never overlap
  --color                        Color diagnostics and the dump as LLVM does

Options are also read from the FILECHECK_OPTS environment variable, before
those of the command line.
";

/// What `--dump-input=help` prints: how to read the annotated input dump.
const DUMP_HELP: &str = "The following description was requested by -dump-input=help to
explain the input dump printed by FileCheck.

Options that shape the dump:

  - -dump-input=<value> says when the dump is printed
  - -dump-input-filter=<value> selects the input lines shown
  - -dump-input-context=<N> sets how many lines surround each shown line
  - -v and -vv add annotations for successful matches and more

FILECHECK_OPTS takes the same options, for example:

  $ FILECHECK_OPTS='-dump-input-filter=all -vv' cargo test

How the dump is laid out:

  - L:     input line L; a space at its end stands for the newline
  - T:L    the only result of a pattern of kind T on check-file line L, or
           of the I-th --implicit-check-not pattern when L is impI
  - T:L'N  the N-th result of that pattern
  - ^~~    a good match (shown with -v)
  - !~~    a bad match: CHECK-NEXT on the wrong line, CHECK-NOT found, or a
           CHECK-DAG match discarded for overlapping (-vv)
  - X~~    the range searched when nothing matched: an error for a positive
           pattern, a success for CHECK-NOT (-vv)
  - ?      where a pattern that did not match nearly matched
  - ...    input lines left out by -dump-input-filter and -dump-input-context
  - colors (with -color): green good, red error, magenta near miss, cyan discarded or (-v) unmatched input
";

/// A command-line mistake; exit code 1, as LLVM's option parser exits.
/// Each message follows the program name; an option is named with one dash
/// when its name is one letter, with two otherwise.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum UsageError {
    #[error("Unknown command line argument '{0}'.  Try: '{1} --help'")]
    Unknown(String, String),
    #[error("for the {} option: requires a value!", dashed(.0))]
    MissingValue(String),
    #[error("for the {name} option: '{value}' is invalid value for boolean argument! Try 0 or 1", name = dashed(.0), value = .1)]
    BadValue(String, String),
    #[error("for the {name} option: Cannot find option named '{value}'!", name = dashed(.0), value = .1)]
    NoSuchValue(String, String),
    #[error("for the {name} option: '{value}' value invalid for uint argument!", name = dashed(.0), value = .1)]
    NotUnsigned(String, String),
    #[error("Too many positional arguments specified!\nCan specify at most 1 positional arguments: See: {0} --help")]
    TooManyPositionals(String),
}

/// The exit code of a command-line mistake.
const USAGE_EXIT: i32 = 1;

/// An option's name as LLVM's messages spell it.
fn dashed(name: &str) -> String {
    if name.len() == 1 { format!("-{name}") } else { format!("--{name}") }
}

/// The parsed command line.
#[derive(Debug, Default)]
struct Options {
    config: Config,
    check_file: Option<String>,
    input_file: Option<String>,
    help: bool,
    /// `--dump-input=help` was given; it wins over every other value.
    dump_help: bool,
    /// A `--dump-input` value was given: further ones keep the most verbose.
    dump_given: bool,
    /// A `--dump-input-context` was given: further ones keep the largest.
    context_given: bool,
}

/// Runs the FileCheck tool. `args` includes the program name first (as
/// `std::env::args()` does); standard input is read only when no
/// `--input-file` is given; `--help` and `--dump-input=help` print to
/// standard output, all else to `stderr`. Returns the process exit code: 0
/// when the checks pass, 1 when they fail, 2 on a usage or check-file error.
pub fn main_with_args(args: impl IntoIterator<Item = String>, stdin: &mut dyn Read, stderr: &mut dyn Write) -> i32 {
    main_with_io(args, stdin, &mut std::io::stdout().lock(), stderr)
}

/// [`main_with_args`] with standard output given too.
pub fn main_with_io(
    args: impl IntoIterator<Item = String>,
    stdin: &mut dyn Read,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> i32 {
    let args: Vec<String> = args.into_iter().collect();
    let program = args.first().map_or("filecheck", |a| a.rsplit('/').next().unwrap_or(a)).to_string();
    // Options from FILECHECK_OPTS come first, so the command line overrides them.
    let env_args: Vec<String> = std::env::var("FILECHECK_OPTS")
        .map(|v| v.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();
    let options = match parse_args(env_args.into_iter().chain(args.iter().skip(1).cloned()), &program) {
        Ok(options) => options,
        Err(errors) => {
            for error in errors {
                let _ = writeln!(stderr, "{program}: {error}");
            }
            return USAGE_EXIT;
        }
    };
    if let Some(code) = check_defines(&options.config.defines, stderr) {
        return code;
    }
    if options.help {
        let _ = write!(stdout, "{USAGE}");
        return 0;
    }
    if options.dump_help {
        let _ = write!(stdout, "{DUMP_HELP}");
        return 0;
    }
    let Some(check_path) = options.check_file.as_deref() else {
        let _ = writeln!(stderr, "<check-file> not specified");
        return 2;
    };
    let check_text = match std::fs::read(check_path) {
        Ok(bytes) => text_of(bytes),
        Err(error) => {
            let _ = writeln!(stderr, "Could not open check file '{check_path}': {error}");
            return 2;
        }
    };
    let (input, input_name) = match options.input_file.as_deref() {
        None | Some("-") => {
            let mut bytes = Vec::new();
            if let Err(error) = stdin.read_to_end(&mut bytes) {
                let _ = writeln!(stderr, "Could not read standard input: {error}");
                return 2;
            }
            (text_of(bytes), "<stdin>".to_string())
        }
        Some(path) => match std::fs::read(path) {
            Ok(bytes) => (text_of(bytes), path.to_string()),
            Err(error) => {
                let _ = writeln!(stderr, "Could not open input file '{path}': {error}");
                return 2;
            }
        },
    };
    let result = CheckFile::parse(&check_text, check_path, &options.config).and_then(|file| file.run_owned(input, &input_name));
    match result {
        Ok(report) => {
            let _ = write!(stderr, "{}", report.remarks());
            0
        }
        Err(error) => {
            let text = error.to_string();
            let _ = write!(stderr, "{text}");
            // A colored report ends with the escape that resets the color.
            if !text.trim_end_matches("\x1b[0m").ends_with('\n') {
                let _ = writeln!(stderr);
            }
            if matches!(error, FileCheckError::EmptyInput(_)) {
                let line: String = args.iter().map(|a| format!(" {a}")).collect();
                let _ = writeln!(stderr, "FileCheck command line: {line}");
            }
            error.exit_code()
        }
    }
}

/// Flags that take a value.
const VALUED: [&str; 8] = [
    "check-prefix",
    "check-prefixes",
    "comment-prefixes",
    "input-file",
    "implicit-check-not",
    "dump-input",
    "dump-input-filter",
    "dump-input-context",
];

/// Reads the options; like LLVM's option parser, it reports every mistake
/// rather than the first.
fn parse_args(args: impl Iterator<Item = String>, program: &str) -> Result<Options, Vec<UsageError>> {
    let mut options = Options::default();
    options.config.dump_input = DumpInput::Fail;
    let mut comment_prefixes: Option<Vec<String>> = None;
    let mut errors = Vec::new();
    let mut positionals = 0;
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        if let Err(error) = parse_arg(&mut options, &mut comment_prefixes, &mut positionals, arg, &mut args, program) {
            errors.push(error);
        }
    }
    if positionals > 1 {
        errors.push(UsageError::TooManyPositionals(program.to_string()));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    if let Some(prefixes) = comment_prefixes {
        options.config.comment_prefixes = prefixes;
    }
    Ok(options)
}

/// Reads one argument (and the value after it, for a valued flag given alone).
fn parse_arg(
    options: &mut Options,
    comment_prefixes: &mut Option<Vec<String>>,
    positionals: &mut usize,
    arg: String,
    args: &mut dyn Iterator<Item = String>,
    program: &str,
) -> Result<(), UsageError> {
    let Some(flag) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')).filter(|f| !f.is_empty()) else {
        *positionals += 1;
        if options.check_file.is_none() {
            options.check_file = Some(arg);
        }
        return Ok(());
    };
    if let Some(define) = flag.strip_prefix('D') {
        // `-D` is a prefix option: its value is never the next argument.
        if define.is_empty() {
            return Err(UsageError::MissingValue("D".to_string()));
        }
        options.config.defines.push(define.to_string());
        return Ok(());
    }
    let (name, inline_value) = match flag.split_once('=') {
        Some((name, value)) => (name, Some(value.to_string())),
        None => (flag, None),
    };
    if VALUED.contains(&name) {
        let value = match inline_value {
            Some(value) => value,
            None => args.next().ok_or_else(|| UsageError::MissingValue(name.to_string()))?,
        };
        apply_valued(options, comment_prefixes, name, value)?;
    } else {
        let value = match inline_value.as_deref() {
            None | Some("true" | "TRUE" | "True" | "1") => true,
            Some("false" | "FALSE" | "False" | "0") => false,
            Some(other) => return Err(UsageError::BadValue(name.to_string(), other.to_string())),
        };
        apply_flag(options, name, value).map_err(|()| UsageError::Unknown(arg.clone(), program.to_string()))?;
    }
    Ok(())
}

/// LLVM's tool checks the shape of each `-D` before anything else: a
/// definition needs an `=` and a name before it. Prints every mistake and
/// returns the exit code when there is one.
fn check_defines(defines: &[String], stderr: &mut dyn Write) -> Option<i32> {
    let mut failed = false;
    for define in defines {
        let problem = match define.find('=') {
            None => "Missing equal sign",
            Some(0) => "Missing variable name",
            Some(_) => continue,
        };
        let _ = writeln!(stderr, "{problem} in command-line definition '-D{define}'");
        failed = true;
    }
    failed.then_some(2)
}

fn split_list(value: &str) -> Vec<String> {
    value.split(',').map(str::to_string).collect()
}

fn apply_valued(options: &mut Options, comments: &mut Option<Vec<String>>, name: &str, value: String) -> Result<(), UsageError> {
    let config = &mut options.config;
    match name {
        "check-prefix" => config.prefixes.push(value),
        "check-prefixes" => config.prefixes.extend(split_list(&value)),
        "comment-prefixes" => comments.get_or_insert_with(Vec::new).extend(split_list(&value)),
        "input-file" => options.input_file = Some(value),
        "implicit-check-not" => config.implicit_check_not.push(value),
        "dump-input" => {
            let when = match value.as_str() {
                "help" => {
                    options.dump_help = true;
                    return Ok(());
                }
                "never" => DumpInput::Never,
                "fail" => DumpInput::Fail,
                "always" => DumpInput::Always,
                _ => return Err(UsageError::NoSuchValue(name.to_string(), value)),
            };
            config.dump_input = if options.dump_given { config.dump_input.max(when) } else { when };
            options.dump_given = true;
        }
        "dump-input-filter" => {
            let filter = match value.as_str() {
                "all" => DumpFilter::All,
                "annotation-full" => DumpFilter::AnnotationFull,
                "annotation" => DumpFilter::Annotation,
                "error" => DumpFilter::Error,
                _ => return Err(UsageError::NoSuchValue(name.to_string(), value)),
            };
            config.dump_filter = Some(config.dump_filter.map_or(filter, |f| f.max(filter)));
        }
        "dump-input-context" => {
            let context = value.parse::<u32>().map_err(|_| UsageError::NotUnsigned(name.to_string(), value))?;
            config.dump_context = if options.context_given { config.dump_context.max(context as usize) } else { context as usize };
            options.context_given = true;
        }
        _ => {}
    }
    Ok(())
}

fn apply_flag(options: &mut Options, name: &str, value: bool) -> Result<(), ()> {
    let config = &mut options.config;
    match name {
        "strict-whitespace" => config.strict_whitespace = value,
        "match-full-lines" => config.match_full_lines = value,
        "ignore-case" => config.ignore_case = value,
        "allow-empty" => config.allow_empty = value,
        "allow-unused-prefixes" => config.allow_unused_prefixes = value,
        "enable-var-scope" => config.enable_var_scope = value,
        "v" => config.verbose = value,
        "vv" => config.very_verbose = value,
        "help" | "h" => options.help = value,
        "allow-deprecated-dag-overlap" => config.allow_deprecated_dag_overlap = value,
        "color" => config.color = value,
        "no-color" => config.color = !value,
        _ => return Err(()),
    }
    Ok(())
}

/// The text of a file: as is when it is UTF-8, with replacement characters
/// for the bytes that are not otherwise.
fn text_of(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}
