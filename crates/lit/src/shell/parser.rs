//! Parsing tokens into lit's shell syntax tree: sequences of pipelines of commands.
//!
//! ```text
//! script   := pipeline ( ( "&&" | "||" | ";" ) pipeline )* [ ";" ]
//! pipeline := command ( "|" command )*
//! command  := ( word | redirect word )+
//! ```
//!
//! `&&`, `||` and `;` have equal precedence and associate to the left, as in POSIX shells.

use super::lexer::{RedirectOp, Token, tokenize};
use crate::error::{LitError, Result};

/// How two parts of a sequence are joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqOp {
    /// `&&`: run the right side if the left succeeded.
    And,
    /// `||`: run the right side if the left failed.
    Or,
    /// `;`: always run the right side.
    Then,
}

/// A parsed command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Script {
    Pipeline(Pipeline),
    Seq(Box<Script>, SeqOp, Box<Script>),
}

/// Commands whose standard output feeds the next one's standard input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pipeline {
    pub commands: Vec<Command>,
}

/// One simple command: its words and redirections, in written order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    pub args: Vec<String>,
    pub redirects: Vec<Redirect>,
}

/// What a redirection does to a file descriptor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedirectTarget {
    /// `fd> path`
    Write(String),
    /// `fd>> path`
    Append(String),
    /// `fd< path`
    Read(String),
    /// `fd>&n`: make `fd` a copy of descriptor `n`.
    Dup(u32),
    /// `&> path`: stdout and stderr to `path`.
    WriteBoth(String),
}

/// A redirection of one descriptor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    pub fd: u32,
    pub target: RedirectTarget,
}

/// Tokenizes and parses a command line.
pub fn parse(line: &str) -> Result<Script> {
    let tokens = tokenize(line)?;
    let mut parser = Parser {
        tokens: &tokens,
        pos: 0,
        line,
    };
    parser.script()
}

struct Parser<'a> {
    tokens: &'a [Token],
    pos: usize,
    line: &'a str,
}

impl Parser<'_> {
    fn error(&self, message: impl Into<String>) -> LitError {
        LitError::Shell {
            command: self.line.to_string(),
            message: message.into(),
        }
    }

    fn script(&mut self) -> Result<Script> {
        let mut script = Script::Pipeline(self.pipeline()?);
        while let Some(token) = self.tokens.get(self.pos) {
            let op = match token {
                Token::And => SeqOp::And,
                Token::Or => SeqOp::Or,
                Token::Semi => SeqOp::Then,
                Token::Amp => return Err(self.error("background execution (`&`) is not supported")),
                other => return Err(self.error(format!("unexpected {other:?}"))),
            };
            self.pos += 1;
            if op == SeqOp::Then && self.pos == self.tokens.len() {
                break;
            }
            let rhs = Script::Pipeline(self.pipeline()?);
            script = Script::Seq(Box::new(script), op, Box::new(rhs));
        }
        Ok(script)
    }

    fn pipeline(&mut self) -> Result<Pipeline> {
        let mut commands = vec![self.command()?];
        while self.tokens.get(self.pos) == Some(&Token::Pipe) {
            self.pos += 1;
            commands.push(self.command()?);
        }
        Ok(Pipeline { commands })
    }

    fn command(&mut self) -> Result<Command> {
        let mut command = Command {
            args: Vec::new(),
            redirects: Vec::new(),
        };
        loop {
            match self.tokens.get(self.pos) {
                Some(Token::Word(word)) => {
                    command.args.push(word.clone());
                    self.pos += 1;
                }
                Some(&Token::Redirect { fd, op }) => {
                    self.pos += 1;
                    let Some(Token::Word(word)) = self.tokens.get(self.pos) else {
                        return Err(self.error("expected a file name after a redirection"));
                    };
                    self.pos += 1;
                    let default_fd = if op == RedirectOp::Read { 0 } else { 1 };
                    let target = match op {
                        RedirectOp::Write => RedirectTarget::Write(word.clone()),
                        RedirectOp::Append => RedirectTarget::Append(word.clone()),
                        RedirectOp::Read => RedirectTarget::Read(word.clone()),
                        RedirectOp::WriteBoth => RedirectTarget::WriteBoth(word.clone()),
                        RedirectOp::Dup => match word.parse::<u32>() {
                            Ok(n) => RedirectTarget::Dup(n),
                            Err(_) => {
                                return Err(self.error(format!("bad descriptor in `>&{word}`")));
                            }
                        },
                    };
                    command.redirects.push(Redirect {
                        fd: fd.unwrap_or(default_fd),
                        target,
                    });
                }
                _ => break,
            }
        }
        if command.args.is_empty() {
            return Err(self.error(match self.tokens.get(self.pos) {
                Some(token) => format!("expected a command before {token:?}"),
                None => "expected a command".to_string(),
            }));
        }
        Ok(command)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Renders a script compactly: `{...}` groups sequences, `[...]` commands.
    fn render(line: &str) -> String {
        fn go(script: &Script) -> String {
            match script {
                Script::Pipeline(p) => p
                    .commands
                    .iter()
                    .map(|c| {
                        let mut parts = c.args.clone();
                        parts.extend(
                            c.redirects
                                .iter()
                                .map(|r| format!("{}{:?}", r.fd, r.target)),
                        );
                        format!("[{}]", parts.join(" "))
                    })
                    .collect::<Vec<_>>()
                    .join("|"),
                Script::Seq(l, op, r) => format!("{{{} {op:?} {}}}", go(l), go(r)),
            }
        }
        match parse(line) {
            Ok(script) => go(&script),
            Err(err) => format!("error: {err}"),
        }
    }

    #[test]
    fn pipelines_and_sequences() {
        assert_eq!(render("a x | b | c"), "[a x]|[b]|[c]");
        assert_eq!(
            render("a && b || c ; d"),
            "{{{[a] And [b]} Or [c]} Then [d]}"
        );
        assert_eq!(render("a | b && c;"), "{[a]|[b] And [c]}");
    }

    #[test]
    fn redirections() {
        assert_eq!(
            render("a < in > out 2>&1"),
            r#"[a 0Read("in") 1Write("out") 2Dup(1)]"#
        );
        assert_eq!(
            render("a 2>> log &> both"),
            r#"[a 2Append("log") 1WriteBoth("both")]"#
        );
        assert_eq!(render("> out echo hi"), r#"[echo hi 1Write("out")]"#);
    }

    #[test]
    fn syntax_errors() {
        for line in [
            "", "| a", "a |", "a &&", "a & b", "a >", "a > | b", "a >&x", "; a",
        ] {
            assert!(
                render(line).starts_with("error:"),
                "{line} should not parse"
            );
        }
    }
}
