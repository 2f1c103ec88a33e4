//! Commands that lit's internal shell implements itself: `echo`, `true`, `false`, `:`,
//! `cat`, `mkdir` and `rm` (`cd`, `env` and `not` are handled by the executor).
//!
//! Builtins run in-process, so tests behave the same on every host, and report problems on
//! their standard error with a non-zero status like the commands they stand for.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Names of the commands in this module.
pub const BUILTINS: [&str; 7] = ["echo", "true", "false", ":", "cat", "mkdir", "rm"];

/// Whether `name` is run by [`run`].
pub fn is_builtin(name: &str) -> bool {
    BUILTINS.contains(&name)
}

/// Runs builtin `args[0]` and returns its exit status.
pub fn run(
    args: &[String],
    cwd: &Path,
    stdin: &mut dyn Read,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> i32 {
    let (name, rest) = match args.split_first() {
        Some((name, rest)) => (name.as_str(), rest),
        None => return 0,
    };
    let result = match name {
        "true" | ":" => Ok(()),
        "false" => return 1,
        "echo" => echo(rest, stdout),
        "cat" => cat(rest, cwd, stdin, stdout),
        "mkdir" => mkdir(rest, cwd),
        "rm" => rm(rest, cwd),
        _ => Err(format!("unknown builtin `{name}`")),
    };
    match result {
        Ok(()) => 0,
        Err(message) => {
            // A failed write to stderr cannot be reported anywhere else.
            let _ = writeln!(stderr, "{name}: {message}");
            1
        }
    }
}

fn echo(args: &[String], stdout: &mut dyn Write) -> Result<(), String> {
    let mut newline = true;
    let mut escapes = false;
    let mut words = args;
    // Leading option words made only of `n`, `e` and `E` are options, as in bash.
    while let Some((first, rest)) = words.split_first() {
        let Some(flags) = first.strip_prefix('-') else {
            break;
        };
        if flags.is_empty() || !flags.chars().all(|c| matches!(c, 'n' | 'e' | 'E')) {
            break;
        }
        for flag in flags.chars() {
            match flag {
                'n' => newline = false,
                'e' => escapes = true,
                _ => escapes = false,
            }
        }
        words = rest;
    }
    let mut text = words.join(" ");
    if escapes {
        match unescape(&text) {
            (unescaped, true) => {
                text = unescaped;
                newline = false;
            }
            (unescaped, false) => text = unescaped,
        }
    }
    if newline {
        text.push('\n');
    }
    // A closed pipe on stdout is not the command's failure (the reader stopped early).
    let _ = stdout.write_all(text.as_bytes());
    Ok(())
}

/// Interprets `echo -e` escapes; the flag says output stopped at `\c`.
fn unescape(text: &str) -> (String, bool) {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('a') => out.push('\x07'),
            Some('b') => out.push('\x08'),
            Some('f') => out.push('\x0c'),
            Some('v') => out.push('\x0b'),
            Some('e') => out.push('\x1b'),
            Some('\\') => out.push('\\'),
            Some('c') => return (out, true),
            Some('0') => {
                let mut value = 0u32;
                for _ in 0..3 {
                    match chars.peek().and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            value = value * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(value).unwrap_or('\u{fffd}'));
            }
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    (out, false)
}

fn cat(
    args: &[String],
    cwd: &Path,
    stdin: &mut dyn Read,
    stdout: &mut dyn Write,
) -> Result<(), String> {
    let files: Vec<&String> = args.iter().collect();
    if let Some(option) = files.iter().find(|a| a.starts_with('-') && a.len() > 1) {
        return Err(format!("unsupported option `{option}`"));
    }
    let copy = |reader: &mut dyn Read, stdout: &mut dyn Write, name: &str| -> Result<(), String> {
        match std::io::copy(reader, stdout) {
            Ok(_) => Ok(()),
            Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            Err(err) => Err(format!("{name}: {err}")),
        }
    };
    if files.is_empty() {
        return copy(stdin, stdout, "-");
    }
    for file in files {
        if file == "-" {
            copy(stdin, stdout, "-")?;
            continue;
        }
        let path = cwd.join(file);
        let mut reader = std::fs::File::open(&path).map_err(|err| format!("{file}: {err}"))?;
        copy(&mut reader, stdout, file)?;
    }
    Ok(())
}

/// Splits leading `-xyz` option words from operands; `--` ends options.
fn options<'a>(args: &'a [String], allowed: &str) -> Result<(Vec<char>, Vec<&'a String>), String> {
    let mut flags = Vec::new();
    let mut operands = Vec::new();
    let mut in_options = true;
    for arg in args {
        if in_options && arg == "--" {
            in_options = false;
        } else if in_options && arg.len() > 1 && arg.starts_with('-') {
            for flag in arg[1..].chars() {
                if !allowed.contains(flag) {
                    return Err(format!("unsupported option `-{flag}`"));
                }
                flags.push(flag);
            }
        } else {
            in_options = false;
            operands.push(arg);
        }
    }
    Ok((flags, operands))
}

fn mkdir(args: &[String], cwd: &Path) -> Result<(), String> {
    let (flags, dirs) = options(args, "p")?;
    if dirs.is_empty() {
        return Err("missing operand".to_string());
    }
    for dir in dirs {
        let path = cwd.join(dir);
        let result = if flags.contains(&'p') {
            std::fs::create_dir_all(&path)
        } else {
            std::fs::create_dir(&path)
        };
        result.map_err(|err| format!("{dir}: {err}"))?;
    }
    Ok(())
}

fn rm(args: &[String], cwd: &Path) -> Result<(), String> {
    let (flags, paths) = options(args, "frRv")?;
    let force = flags.contains(&'f');
    let recursive = flags.iter().any(|f| matches!(f, 'r' | 'R'));
    if paths.is_empty() && !force {
        return Err("missing operand".to_string());
    }
    for operand in paths {
        let path: PathBuf = cwd.join(operand);
        let metadata = match std::fs::symlink_metadata(&path) {
            Ok(metadata) => metadata,
            Err(_) if force => continue,
            Err(err) => return Err(format!("{operand}: {err}")),
        };
        let result = if metadata.is_dir() {
            if !recursive {
                return Err(format!("{operand}: is a directory"));
            }
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        match result {
            Ok(()) => {}
            Err(err) if force && err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => return Err(format!("{operand}: {err}")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_echo(args: &[&str]) -> String {
        let mut args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        args.insert(0, "echo".to_string());
        let mut out = Vec::new();
        let status = run(
            &args,
            Path::new("."),
            &mut std::io::empty(),
            &mut out,
            &mut Vec::new(),
        );
        assert_eq!(status, 0);
        String::from_utf8_lossy(&out).into_owned()
    }

    #[test]
    fn echo_options() {
        assert_eq!(run_echo(&["a", "b"]), "a b\n");
        assert_eq!(run_echo(&["-n", "a"]), "a");
        assert_eq!(run_echo(&["-e", r"a\tb\n"]), "a\tb\n\n");
        assert_eq!(run_echo(&[r"a\tb"]), "a\\tb\n");
        assert_eq!(run_echo(&["-ne", r"x\0101y\cz"]), "xAy");
        assert_eq!(run_echo(&["-x", "a"]), "-x a\n");
        assert_eq!(run_echo(&[]), "\n");
    }

    #[test]
    fn option_splitting() {
        let args: Vec<String> = ["-rf", "--", "-x"].iter().map(|s| s.to_string()).collect();
        assert_eq!(
            options(&args, "rf").map(|(f, o)| (f, o.len())),
            Ok((vec!['r', 'f'], 1))
        );
        assert!(options(&args[..1], "r").is_err());
    }
}
