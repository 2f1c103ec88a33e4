//! Boolean feature expressions of `REQUIRES:`, `UNSUPPORTED:` and `XFAIL:` directives.
//!
//! The grammar is lit's:
//!
//! ```text
//! expr     := and_expr ( "||" and_expr )*
//! and_expr := not_expr ( "&&" not_expr )*
//! not_expr := "!" not_expr | "(" expr ")" | identifier
//! ```
//!
//! An identifier is true when it names an available feature; the identifier `true` is
//! always true. Directives hold comma-separated lists of such expressions.

use crate::error::{LitError, Result};

/// Evaluates one boolean expression against the available features.
pub fn evaluate(expr: &str, features: &[String]) -> Result<bool> {
    let tokens = tokenize(expr)?;
    let mut parser = Parser {
        tokens: &tokens,
        pos: 0,
        features,
        expr,
    };
    let value = parser.or_expr()?;
    match parser.tokens.get(parser.pos) {
        None => Ok(value),
        Some(token) => Err(parser.error(format!("unexpected `{}`", token.text()))),
    }
}

/// Splits a directive's value into its comma-separated expressions, dropping empty items.
pub fn split_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(String::from)
        .collect()
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    Not,
    And,
    Or,
    LParen,
    RParen,
}

impl Token {
    fn text(&self) -> &str {
        match self {
            Token::Ident(name) => name,
            Token::Not => "!",
            Token::And => "&&",
            Token::Or => "||",
            Token::LParen => "(",
            Token::RParen => ")",
        }
    }
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '+' | '=' | '.' | '_' | '/' | ':' | '*')
}

fn tokenize(expr: &str) -> Result<Vec<Token>> {
    let mut tokens = Vec::new();
    let mut chars = expr.char_indices().peekable();
    while let Some(&(start, c)) = chars.peek() {
        match c {
            _ if c.is_whitespace() => {
                chars.next();
            }
            '!' => {
                chars.next();
                tokens.push(Token::Not);
            }
            '(' => {
                chars.next();
                tokens.push(Token::LParen);
            }
            ')' => {
                chars.next();
                tokens.push(Token::RParen);
            }
            '&' | '|' => {
                chars.next();
                if chars.peek().map(|&(_, next)| next) != Some(c) {
                    return Err(LitError::BoolExpr {
                        expr: expr.to_string(),
                        message: format!("expected `{c}{c}`"),
                    });
                }
                chars.next();
                tokens.push(if c == '&' { Token::And } else { Token::Or });
            }
            _ if is_ident_char(c) => {
                let mut end = start;
                while let Some(&(index, next)) = chars.peek() {
                    if !is_ident_char(next) {
                        break;
                    }
                    end = index + next.len_utf8();
                    chars.next();
                }
                tokens.push(Token::Ident(expr[start..end].to_string()));
            }
            _ => {
                return Err(LitError::BoolExpr {
                    expr: expr.to_string(),
                    message: format!("unexpected character `{c}`"),
                });
            }
        }
    }
    Ok(tokens)
}

struct Parser<'a> {
    tokens: &'a [Token],
    pos: usize,
    features: &'a [String],
    expr: &'a str,
}

impl Parser<'_> {
    fn error(&self, message: String) -> LitError {
        LitError::BoolExpr {
            expr: self.expr.to_string(),
            message,
        }
    }

    fn eat(&mut self, token: &Token) -> bool {
        if self.tokens.get(self.pos) == Some(token) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn or_expr(&mut self) -> Result<bool> {
        let mut value = self.and_expr()?;
        while self.eat(&Token::Or) {
            // Both sides are parsed so that syntax errors are found regardless of values.
            let rhs = self.and_expr()?;
            value = value || rhs;
        }
        Ok(value)
    }

    fn and_expr(&mut self) -> Result<bool> {
        let mut value = self.not_expr()?;
        while self.eat(&Token::And) {
            let rhs = self.not_expr()?;
            value = value && rhs;
        }
        Ok(value)
    }

    fn not_expr(&mut self) -> Result<bool> {
        match self.tokens.get(self.pos).cloned() {
            Some(Token::Not) => {
                self.pos += 1;
                Ok(!self.not_expr()?)
            }
            Some(Token::LParen) => {
                self.pos += 1;
                let value = self.or_expr()?;
                if !self.eat(&Token::RParen) {
                    return Err(self.error("expected `)`".to_string()));
                }
                Ok(value)
            }
            Some(Token::Ident(name)) => {
                self.pos += 1;
                Ok(name == "true" || self.features.contains(&name))
            }
            Some(other) => Err(self.error(format!("unexpected `{}`", other.text()))),
            None => Err(self.error("unexpected end of expression".to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(expr: &str, expected: bool) {
        let features = vec!["a".to_string(), "b".to_string(), "x86_64-linux".to_string()];
        match evaluate(expr, &features) {
            Ok(value) => assert_eq!(value, expected, "{expr}"),
            Err(err) => panic!("{expr}: {err}"),
        }
    }

    #[test]
    fn identifiers_and_operators() {
        check("a", true);
        check("c", false);
        check("true", true);
        check("!a", false);
        check("!c", true);
        check("!!a", true);
        check("a && b", true);
        check("a && c", false);
        check("a || c", true);
        check("c || !b", false);
        check("x86_64-linux", true);
    }

    #[test]
    fn precedence_and_parentheses() {
        check("c && a || b", true);
        check("c && (a || b)", false);
        check("a || b && c", true);
        check("(a || b) && c", false);
        check("!(a && c)", true);
    }

    #[test]
    fn malformed_expressions_are_errors() {
        for expr in ["", "a &&", "a & b", "(a", "a)", "a b", "!", "a ~ b", "||"] {
            assert!(evaluate(expr, &[]).is_err(), "{expr} should not parse");
        }
    }

    #[test]
    fn lists_split_on_commas() {
        assert_eq!(
            split_list(" a, b && c ,, "),
            vec!["a".to_string(), "b && c".to_string()]
        );
        assert!(split_list("  ").is_empty());
    }
}
