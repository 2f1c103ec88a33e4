//! Symbolic size expressions: sympy's `srepr` form (as `torch.export` stores them) to infix text.
//!
//! `Symbol('s77', positive=True, integer=True)` becomes `s77`,
//! `Mul(Integer(2), Symbol('s77', …))` becomes `2*s77`, `Add(Symbol('s77', …), Integer(1))`
//! becomes `s77 + 1` — the spelling `print(exported_program)` uses.

/// A parsed srepr term.
enum Term {
    Call { func: String, args: Vec<Term> },
    Int(String),
    Str(String),
    Word(String),
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn term(&mut self) -> Result<Term, String> {
        self.depth += 1;
        if self.depth > 200 {
            return Err("expression nests too deeply".into());
        }
        self.ws();
        let start = self.pos;
        let c = *self.s.get(self.pos).ok_or("unexpected end of expression")?;
        let t = if c == b'\'' || c == b'"' {
            self.pos += 1;
            while self.pos < self.s.len() && self.s[self.pos] != c {
                self.pos += 1;
            }
            let text = String::from_utf8_lossy(&self.s[start + 1..self.pos.min(self.s.len())])
                .into_owned();
            self.pos += 1;
            Term::Str(text)
        } else if c == b'-' || c.is_ascii_digit() {
            self.pos += 1;
            while self.pos < self.s.len() && self.s[self.pos].is_ascii_digit() {
                self.pos += 1;
            }
            Term::Int(String::from_utf8_lossy(&self.s[start..self.pos]).into_owned())
        } else if c.is_ascii_alphabetic() || c == b'_' {
            while self.pos < self.s.len()
                && (self.s[self.pos].is_ascii_alphanumeric() || self.s[self.pos] == b'_')
            {
                self.pos += 1;
            }
            let word = String::from_utf8_lossy(&self.s[start..self.pos]).into_owned();
            self.ws();
            if self.s.get(self.pos) == Some(&b'(') {
                self.pos += 1;
                let mut args = Vec::new();
                loop {
                    self.ws();
                    if self.s.get(self.pos) == Some(&b')') {
                        self.pos += 1;
                        break;
                    }
                    let a = self.term()?;
                    self.ws();
                    // `name=value` keyword arguments (assumptions) are skipped.
                    if self.s.get(self.pos) == Some(&b'=') {
                        self.pos += 1;
                        let _ = self.term()?;
                    } else {
                        args.push(a);
                    }
                    self.ws();
                    match self.s.get(self.pos) {
                        Some(b',') => self.pos += 1,
                        Some(b')') => {}
                        _ => return Err(format!("expected `,` or `)` at offset {}", self.pos)),
                    }
                }
                Term::Call { func: word, args }
            } else {
                Term::Word(word)
            }
        } else {
            return Err(format!("unexpected `{}` at offset {}", c as char, self.pos));
        };
        self.depth -= 1;
        Ok(t)
    }
}

/// Binding strength of a rendered term, for parentheses.
#[derive(PartialEq, PartialOrd)]
enum Prec {
    Sum,
    Product,
    Atom,
}

fn render(t: &Term) -> (String, Prec) {
    match t {
        Term::Int(i) => {
            let p = if i.starts_with('-') {
                Prec::Sum
            } else {
                Prec::Atom
            };
            (i.clone(), p)
        }
        Term::Str(s) | Term::Word(s) => (s.clone(), Prec::Atom),
        Term::Call { func, args } => {
            let r: Vec<(String, Prec)> = args.iter().map(render).collect();
            let wrap = |(s, p): &(String, Prec), min: Prec| {
                if *p < min {
                    format!("({s})")
                } else {
                    s.clone()
                }
            };
            match (func.as_str(), r.as_slice()) {
                ("Symbol" | "Integer", [(s, _)]) => (
                    s.clone(),
                    if s.starts_with('-') {
                        Prec::Sum
                    } else {
                        Prec::Atom
                    },
                ),
                ("Rational", [a, b]) => (format!("{}/{}", a.0, b.0), Prec::Product),
                ("Add", _) if !r.is_empty() => {
                    let mut out = wrap(&r[0], Prec::Sum);
                    for term in &r[1..] {
                        match term.0.strip_prefix('-') {
                            Some(rest) => {
                                out.push_str(" - ");
                                out.push_str(rest);
                            }
                            None => {
                                out.push_str(" + ");
                                out.push_str(&term.0);
                            }
                        }
                    }
                    (out, Prec::Sum)
                }
                ("Mul", _) if !r.is_empty() => {
                    let parts: Vec<String> = r
                        .iter()
                        .enumerate()
                        .map(|(i, t)| {
                            if i == 0 && t.0.starts_with('-') && !t.0.contains(' ') {
                                t.0.clone()
                            } else {
                                wrap(t, Prec::Product)
                            }
                        })
                        .collect();
                    let s = parts.join("*");
                    let s = s
                        .strip_prefix("-1*")
                        .map(|rest| format!("-{rest}"))
                        .unwrap_or(s);
                    (s, Prec::Product)
                }
                ("Pow", [a, b]) => (
                    format!("{}**{}", wrap(a, Prec::Atom), wrap(b, Prec::Atom)),
                    Prec::Product,
                ),
                ("FloorDiv", [a, b]) => (
                    format!("{}//{}", wrap(a, Prec::Atom), wrap(b, Prec::Atom)),
                    Prec::Product,
                ),
                ("CleanDiv" | "IntTrueDiv", [a, b]) => (
                    format!("{}/{}", wrap(a, Prec::Atom), wrap(b, Prec::Atom)),
                    Prec::Product,
                ),
                ("Mod" | "PythonMod", [a, b]) => (
                    format!("{} % {}", wrap(a, Prec::Atom), wrap(b, Prec::Atom)),
                    Prec::Product,
                ),
                _ => {
                    let inner: Vec<&str> = r.iter().map(|t| t.0.as_str()).collect();
                    let name = match func.as_str() {
                        "Max" => "max",
                        "Min" => "min",
                        other => other,
                    };
                    (format!("{name}({})", inner.join(", ")), Prec::Atom)
                }
            }
        }
    }
}

/// Converts sympy's `srepr` text to infix (`2*s77`, `s77 + 1`). Text that is not srepr is
/// returned trimmed, as it is.
pub fn srepr_to_text(expr: &str) -> String {
    let mut p = Parser {
        s: expr.as_bytes(),
        pos: 0,
        depth: 0,
    };
    match p.term() {
        Ok(t) => {
            p.ws();
            if p.pos == p.s.len() {
                render(&t).0
            } else {
                expr.trim().to_string()
            }
        }
        Err(_) => expr.trim().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::srepr_to_text;

    #[test]
    fn sympy_forms() {
        let s = "Symbol('s77', positive=True, integer=True)";
        assert_eq!(srepr_to_text(s), "s77");
        assert_eq!(srepr_to_text(&format!("Mul(Integer(2), {s})")), "2*s77");
        assert_eq!(srepr_to_text(&format!("Add({s}, Integer(1))")), "s77 + 1");
        assert_eq!(srepr_to_text(&format!("Add({s}, Integer(-1))")), "s77 - 1");
        assert_eq!(
            srepr_to_text(&format!("Mul(Integer(2), Add({s}, Integer(1)))")),
            "2*(s77 + 1)"
        );
        assert_eq!(
            srepr_to_text(&format!("FloorDiv({s}, Integer(2))")),
            "s77//2"
        );
        assert_eq!(srepr_to_text("s0"), "s0");
        assert_eq!(srepr_to_text("Add(("), "Add((");
    }
}
