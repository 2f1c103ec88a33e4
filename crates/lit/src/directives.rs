//! Reading the directives (`RUN:`, `REQUIRES:`, `UNSUPPORTED:`, `XFAIL:`) of a test file.
//!
//! As in lit, a directive is a keyword followed by a colon anywhere on a line, so any
//! comment syntax works (`// RUN:`, `# RUN:`, `; RUN:`). The keyword must not be glued to a
//! preceding word character or dash, so `CHECK-RUN:` or `XRUN:` are not directives. A `RUN:`
//! line ending in `\` continues on the next `RUN:` line.

use crate::boolexpr::split_list;
use crate::error::{LitError, Result};

/// One logical `RUN:` command, after joining continuation lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunLine {
    /// The 1-based line number of the first physical line.
    pub line: usize,
    /// The command text, before substitution.
    pub command: String,
}

/// The directives of one test file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Directives {
    pub run: Vec<RunLine>,
    /// `REQUIRES:` expressions; all must hold.
    pub requires: Vec<String>,
    /// `UNSUPPORTED:` expressions; any holding makes the test unsupported.
    pub unsupported: Vec<String>,
    /// `XFAIL:` expressions; any holding (or `*`) means the test is expected to fail.
    pub xfail: Vec<String>,
}

const KEYWORDS: [&str; 5] = ["RUN", "REQUIRES", "UNSUPPORTED", "XFAIL", "ALLOW_RETRIES"];

/// Finds the first directive on a line: its keyword and the text after the colon.
fn find_directive(line: &str) -> Option<(&'static str, &str)> {
    let bytes = line.as_bytes();
    let mut best: Option<(usize, &'static str)> = None;
    for keyword in KEYWORDS {
        let pattern = format!("{keyword}:");
        let mut from = 0;
        while let Some(found) = line[from..].find(&pattern) {
            let at = from + found;
            let glued = at > 0 && {
                let prev = bytes[at - 1];
                prev.is_ascii_alphanumeric() || prev == b'_' || prev == b'-'
            };
            if !glued {
                if best.is_none_or(|(pos, _)| at < pos) {
                    best = Some((at, keyword));
                }
                break;
            }
            from = at + pattern.len();
        }
    }
    best.map(|(at, keyword)| (keyword, &line[at + keyword.len() + 1..]))
}

/// Parses the directives of a test file's text.
pub fn parse(text: &str) -> Result<Directives> {
    let mut directives = Directives::default();
    // A RUN line that ended with `\` and is waiting for its continuation.
    let mut pending: Option<RunLine> = None;
    for (index, line) in text.lines().enumerate() {
        let line_no = index + 1;
        let Some((keyword, value)) = find_directive(line) else {
            continue;
        };
        let value = value.trim();
        if keyword == "RUN" {
            let (body, continues) = match value.strip_suffix('\\') {
                Some(body) => (body, true),
                None => (value, false),
            };
            let mut run = match pending.take() {
                Some(mut run) => {
                    run.command.push_str(body);
                    run
                }
                None => RunLine {
                    line: line_no,
                    command: body.to_string(),
                },
            };
            if continues {
                pending = Some(run);
            } else {
                run.command = run.command.trim().to_string();
                directives.run.push(run);
            }
            continue;
        }
        if let Some(run) = &pending {
            return Err(LitError::Directive {
                line: line_no,
                message: format!("RUN line {} continues into a {keyword}: line", run.line),
            });
        }
        match keyword {
            "REQUIRES" => directives.requires.extend(list(value, keyword, line_no)?),
            "UNSUPPORTED" => directives
                .unsupported
                .extend(list(value, keyword, line_no)?),
            "XFAIL" => directives.xfail.extend(list(value, keyword, line_no)?),
            // Retries are not implemented; a flaky test should be fixed instead.
            _ => {}
        }
    }
    if let Some(run) = pending {
        return Err(LitError::Directive {
            line: run.line,
            message: "unterminated RUN line (ends with `\\` but no RUN line follows)".to_string(),
        });
    }
    Ok(directives)
}

fn list(value: &str, keyword: &str, line: usize) -> Result<Vec<String>> {
    let items = split_list(value);
    if items.is_empty() {
        return Err(LitError::Directive {
            line,
            message: format!("empty {keyword}: directive"),
        });
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_commands(text: &str) -> Vec<(usize, String)> {
        match parse(text) {
            Ok(d) => d.run.into_iter().map(|r| (r.line, r.command)).collect(),
            Err(err) => vec![(0, format!("error: {err}"))],
        }
    }

    #[test]
    fn run_lines_with_any_comment_prefix() {
        let text = "// RUN: echo a\n# RUN: echo b\n; RUN:echo c  \nfunc\n  //   RUN:  echo d\n";
        assert_eq!(
            run_commands(text),
            vec![
                (1, "echo a".to_string()),
                (2, "echo b".to_string()),
                (3, "echo c".to_string()),
                (5, "echo d".to_string()),
            ]
        );
    }

    #[test]
    fn continuation_lines_join() {
        let text = "// RUN: dialect-opt %s \\\n// RUN:   | filecheck %s\n// RUN: true\n";
        assert_eq!(
            run_commands(text),
            vec![
                (1, "dialect-opt %s | filecheck %s".to_string()),
                (3, "true".to_string())
            ]
        );
    }

    #[test]
    fn unterminated_continuation_is_an_error() {
        assert!(parse("// RUN: echo \\\n").is_err());
        assert!(parse("// RUN: echo \\\n// REQUIRES: a\n// RUN: x\n").is_err());
    }

    #[test]
    fn glued_keywords_are_not_directives() {
        assert_eq!(
            run_commands("// CHECK-RUN: x\n// XRUN: y\n// MY_RUN: z\n"),
            vec![]
        );
    }

    #[test]
    fn feature_directives_accumulate() {
        let text = "// REQUIRES: a, b\n// REQUIRES: !c && d\n// UNSUPPORTED: e\n// XFAIL: *\n\
                    // ALLOW_RETRIES: 3\n";
        let d = parse(text).unwrap_or_default();
        assert_eq!(d.requires, vec!["a", "b", "!c && d"]);
        assert_eq!(d.unsupported, vec!["e"]);
        assert_eq!(d.xfail, vec!["*"]);
        assert!(parse("// REQUIRES:\n").is_err());
    }
}
