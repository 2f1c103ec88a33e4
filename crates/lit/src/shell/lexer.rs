//! Tokenizing a command line the way lit's internal shell does.
//!
//! Words follow POSIX quoting: `'…'` is literal; inside `"…"` a backslash escapes only `"`,
//! `\`, `$` and `` ` `` and is kept otherwise; outside quotes a backslash escapes any
//! character. Operators are `|`, `||`, `&&`, `;`, `&` and the redirections `>`, `>>`, `<`,
//! `>&`, `&>`, optionally preceded by a file-descriptor number (`2>`, `2>&1`). There is no
//! variable expansion, command substitution or globbing.

use crate::error::{LitError, Result};

/// The kind of a redirection operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirectOp {
    /// `>`: truncate and write.
    Write,
    /// `>>`: append.
    Append,
    /// `<`: read.
    Read,
    /// `>&`: duplicate another descriptor.
    Dup,
    /// `&>`: stdout and stderr to one file.
    WriteBoth,
}

/// A token of a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// A word with its quoting removed.
    Word(String),
    Pipe,
    And,
    Or,
    Semi,
    /// A lone `&` (background execution), which the parser rejects.
    Amp,
    /// A redirection operator with its explicit descriptor, if one was written.
    Redirect {
        fd: Option<u32>,
        op: RedirectOp,
    },
}

fn is_operator_char(c: char) -> bool {
    matches!(c, '|' | '&' | ';' | '<' | '>')
}

/// Splits a command line into tokens.
pub fn tokenize(line: &str) -> Result<Vec<Token>> {
    let chars: Vec<char> = line.chars().collect();
    let error = |message: &str| LitError::Shell {
        command: line.to_string(),
        message: message.to_string(),
    };
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let next = chars.get(i + 1).copied();
        match c {
            '|' if next == Some('|') => {
                tokens.push(Token::Or);
                i += 2;
            }
            '|' => {
                tokens.push(Token::Pipe);
                i += 1;
            }
            '&' if next == Some('&') => {
                tokens.push(Token::And);
                i += 2;
            }
            '&' if next == Some('>') => {
                tokens.push(Token::Redirect {
                    fd: None,
                    op: RedirectOp::WriteBoth,
                });
                i += 2;
            }
            '&' => {
                tokens.push(Token::Amp);
                i += 1;
            }
            ';' => {
                tokens.push(Token::Semi);
                i += 1;
            }
            '<' | '>' => {
                let (op, len) = redirect_op(c, next);
                tokens.push(Token::Redirect { fd: None, op });
                i += len;
            }
            _ => {
                let mut word = String::new();
                let mut quoted = false;
                while i < chars.len() && !chars[i].is_whitespace() && !is_operator_char(chars[i]) {
                    match chars[i] {
                        '\'' => {
                            quoted = true;
                            i += 1;
                            loop {
                                match chars.get(i) {
                                    None => return Err(error("unterminated single quote")),
                                    Some('\'') => break,
                                    Some(&ch) => word.push(ch),
                                }
                                i += 1;
                            }
                            i += 1;
                        }
                        '"' => {
                            quoted = true;
                            i += 1;
                            loop {
                                match chars.get(i) {
                                    None => return Err(error("unterminated double quote")),
                                    Some('"') => break,
                                    Some('\\') => {
                                        i += 1;
                                        match chars.get(i) {
                                            None => return Err(error("unterminated double quote")),
                                            Some(&ch @ ('"' | '\\' | '$' | '`')) => word.push(ch),
                                            Some(&ch) => {
                                                word.push('\\');
                                                word.push(ch);
                                            }
                                        }
                                    }
                                    Some(&ch) => word.push(ch),
                                }
                                i += 1;
                            }
                            i += 1;
                        }
                        '\\' => {
                            quoted = true;
                            match chars.get(i + 1) {
                                None => return Err(error("trailing backslash")),
                                Some(&ch) => word.push(ch),
                            }
                            i += 2;
                        }
                        ch => {
                            word.push(ch);
                            i += 1;
                        }
                    }
                }
                // `2>file`: an unquoted number glued to a redirection names the descriptor.
                let fd = if quoted {
                    None
                } else {
                    word.parse::<u32>().ok()
                };
                match (fd, chars.get(i)) {
                    (Some(fd), Some(&op_char @ ('<' | '>'))) => {
                        let (op, len) = redirect_op(op_char, chars.get(i + 1).copied());
                        tokens.push(Token::Redirect { fd: Some(fd), op });
                        i += len;
                    }
                    _ => tokens.push(Token::Word(word)),
                }
            }
        }
    }
    Ok(tokens)
}

fn redirect_op(c: char, next: Option<char>) -> (RedirectOp, usize) {
    match (c, next) {
        ('>', Some('>')) => (RedirectOp::Append, 2),
        ('>', Some('&')) => (RedirectOp::Dup, 2),
        ('>', _) => (RedirectOp::Write, 1),
        _ => (RedirectOp::Read, 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        match tokenize(line) {
            Ok(tokens) => tokens
                .into_iter()
                .map(|t| match t {
                    Token::Word(w) => format!("[{w}]"),
                    Token::Redirect { fd, op } => format!("{fd:?}{op:?}"),
                    other => format!("{other:?}"),
                })
                .collect(),
            Err(err) => vec![format!("error: {err}")],
        }
    }

    #[test]
    fn operators() {
        assert_eq!(
            words("a|b||c&&d;e&f"),
            [
                "[a]", "Pipe", "[b]", "Or", "[c]", "And", "[d]", "Semi", "[e]", "Amp", "[f]"
            ]
        );
        assert_eq!(
            words("a > f >> g < h 2>&1 2> e &> both 1>out"),
            [
                "[a]",
                "NoneWrite",
                "[f]",
                "NoneAppend",
                "[g]",
                "NoneRead",
                "[h]",
                "Some(2)Dup",
                "[1]",
                "Some(2)Write",
                "[e]",
                "NoneWriteBoth",
                "[both]",
                "Some(1)Write",
                "[out]"
            ]
        );
    }

    #[test]
    fn quoting() {
        assert_eq!(
            words(r#"echo 'a b' "c d" e\ f"#),
            ["[echo]", "[a b]", "[c d]", "[e f]"]
        );
        assert_eq!(
            words(r#"echo "x\"y\\z\n" 'q\n'"#),
            ["[echo]", r#"[x"y\z\n]"#, r"[q\n]"]
        );
        assert_eq!(words(r#"a"b"'c'd"#), ["[abcd]"]);
        assert_eq!(
            words(r#"echo "a|b" '>' \;"#),
            ["[echo]", "[a|b]", "[>]", "[;]"]
        );
        assert_eq!(words(r#"echo "" ''"#), ["[echo]", "[]", "[]"]);
        assert_eq!(
            words(r#"echo '2'>f"#),
            ["[echo]", "[2]", "NoneWrite", "[f]"]
        );
        assert_eq!(
            words("grep -e 2 x2>f"),
            ["[grep]", "[-e]", "[2]", "[x2]", "NoneWrite", "[f]"]
        );
    }

    #[test]
    fn malformed_quoting() {
        for line in ["echo 'a", "echo \"a", "echo a\\", "echo \"a\\"] {
            assert!(tokenize(line).is_err(), "{line}");
        }
    }
}
