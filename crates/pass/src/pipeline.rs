//! Textual pass pipelines: `builtin.module(func.func(cse,canonicalize),lower-to-edge{strict=true})`,
//! parsed against a registry, printed back canonically.

use crate::options::PassOptions;
use crate::pass::Anchor;
use crate::registry::PassRegistry;
use std::fmt;

/// A pipeline anchored on an op name: passes and nested pipelines, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Pipeline {
    pub anchor: String,
    pub elements: Vec<PipelineElement>,
}

/// One element of a pipeline.
#[derive(Clone, Debug, PartialEq)]
pub enum PipelineElement {
    /// A registered pass with its options (parsed against the pass's declaration).
    Pass { name: String, options: PassOptions },
    /// A pipeline run on each op named `anchor` directly inside the enclosing anchor op.
    Nested(Pipeline),
}

/// A pipeline syntax or validity error; `column` is 1-based, in characters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PipelineError {
    pub column: usize,
    pub message: String,
}

impl fmt::Display for PipelineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at column {}", self.message, self.column)
    }
}

impl std::error::Error for PipelineError {}

impl Pipeline {
    /// An empty pipeline on ops named `anchor`.
    pub fn new(anchor: &str) -> Pipeline {
        Pipeline {
            anchor: anchor.to_string(),
            elements: Vec::new(),
        }
    }

    /// Parses `op.name(elements)` or a bare `a,b{x=1},func.func(c)` list (anchored on the
    /// module). A pass anchored on another op kind than its pipeline's, inside a module pipeline,
    /// is nested implicitly: `cse` anchored on `func.func` becomes `func.func(cse)`.
    pub fn parse(text: &str, registry: &PassRegistry) -> Result<Pipeline, PipelineError> {
        let mut p = Parser {
            text,
            pos: 0,
            registry,
        };
        p.skip_ws();
        let module = ir::builtin::MODULE;
        if p.pos == text.len() {
            return Ok(Pipeline::new(module));
        }
        let mut elements = p.list(module, false)?;
        p.skip_ws();
        if p.pos < text.len() {
            return Err(p.error(
                p.pos,
                format!(
                    "expected ',' or the end of the pipeline, found '{}'",
                    p.peek_char()
                ),
            ));
        }
        if let [PipelineElement::Nested(inner)] = elements.as_slice()
            && inner.anchor == module
            && let Some(PipelineElement::Nested(inner)) = elements.pop()
        {
            return Ok(inner);
        }
        Ok(Pipeline {
            anchor: module.to_string(),
            elements,
        })
    }

    /// Number of passes, nested ones included.
    pub fn num_passes(&self) -> usize {
        self.elements
            .iter()
            .map(|e| match e {
                PipelineElement::Pass { .. } => 1,
                PipelineElement::Nested(p) => p.num_passes(),
            })
            .sum()
    }
}

/// The canonical text: no spaces, options given explicitly, in declaration order.
impl fmt::Display for Pipeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}(", self.anchor)?;
        for (i, e) in self.elements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            match e {
                PipelineElement::Pass { name, options } => {
                    f.write_str(name)?;
                    let text = options.to_option_text();
                    if !text.is_empty() {
                        write!(f, "{{{text}}}")?;
                    }
                }
                PipelineElement::Nested(p) => write!(f, "{p}")?,
            }
        }
        f.write_str(")")
    }
}

struct Parser<'a> {
    text: &'a str,
    pos: usize,
    registry: &'a PassRegistry,
}

impl Parser<'_> {
    fn error(&self, pos: usize, message: impl Into<String>) -> PipelineError {
        let column = self.text.get(..pos).map_or(pos, |s| s.chars().count()) + 1;
        PipelineError {
            column,
            message: message.into(),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn peek_char(&self) -> char {
        self.text
            .get(self.pos..)
            .and_then(|s| s.chars().next())
            .unwrap_or(' ')
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            self.pos += 1;
        }
    }

    fn name(&mut self) -> &str {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        {
            self.pos += 1;
        }
        &self.text[start..self.pos]
    }

    /// Elements up to the end or (when `nested`) a `)`, which is left for the caller.
    fn list(&mut self, anchor: &str, nested: bool) -> Result<Vec<PipelineElement>, PipelineError> {
        let mut out: Vec<PipelineElement> = Vec::new();
        // The index in `out` of the last implicitly nested pipeline, which following passes of
        // the same anchor join.
        let mut implicit: Option<usize> = None;
        self.skip_ws();
        if nested && self.peek() == Some(b')') {
            return Ok(out);
        }
        loop {
            self.skip_ws();
            let start = self.pos;
            let name = self.name().to_string();
            if name.is_empty() {
                let found = if self.pos >= self.text.len() {
                    "the end".to_string()
                } else {
                    format!("'{}'", self.peek_char())
                };
                return Err(self.error(start, format!("expected a pass or op name, found {found}")));
            }
            self.skip_ws();
            if self.peek() == Some(b'(') {
                self.pos += 1;
                if !name.contains('.') {
                    return Err(self.error(
                        start,
                        format!("'{name}' is not an op name; nested pipelines are anchored on ops such as 'func.func'"),
                    ));
                }
                let elements = self.list(&name, true)?;
                self.skip_ws();
                if self.peek() != Some(b')') {
                    return Err(self.error(self.pos, format!("expected ')' to close '{name}('")));
                }
                self.pos += 1;
                out.push(PipelineElement::Nested(Pipeline {
                    anchor: name,
                    elements,
                }));
                implicit = None;
            } else {
                let Some(info) = self.registry.get(&name) else {
                    return Err(self.error(start, format!("unknown pass '{name}'")));
                };
                let mut options = info.options.clone();
                if self.peek() == Some(b'{') {
                    let inner_start = self.pos + 1;
                    let end = self.matching_brace()?;
                    let inner = &self.text[inner_start..end];
                    options.parse(inner).map_err(|e| {
                        self.error(
                            inner_start + e.offset,
                            format!("{} (in options of pass '{name}')", e.message),
                        )
                    })?;
                    self.pos = end + 1;
                }
                let element = PipelineElement::Pass {
                    name: name.clone(),
                    options,
                };
                match &info.anchor {
                    Anchor::Op(a) if a != anchor => {
                        if anchor != ir::builtin::MODULE {
                            return Err(self.error(
                                start,
                                format!("pass '{name}' runs on '{a}' ops and cannot be scheduled on '{anchor}'"),
                            ));
                        }
                        match implicit.and_then(|i| out.get_mut(i)) {
                            Some(PipelineElement::Nested(p)) if &p.anchor == a => {
                                p.elements.push(element)
                            }
                            _ => {
                                out.push(PipelineElement::Nested(Pipeline {
                                    anchor: a.clone(),
                                    elements: vec![element],
                                }));
                                implicit = Some(out.len() - 1);
                            }
                        }
                    }
                    _ => {
                        out.push(element);
                        implicit = None;
                    }
                }
            }
            self.skip_ws();
            if self.peek() == Some(b',') {
                self.pos += 1;
                continue;
            }
            return Ok(out);
        }
    }

    /// The position of the `}` matching the `{` at `self.pos`, skipping quoted text.
    fn matching_brace(&self) -> Result<usize, PipelineError> {
        let bytes = self.text.as_bytes();
        let mut depth = 0usize;
        let mut quoted = false;
        let mut i = self.pos;
        while i < bytes.len() {
            match bytes[i] {
                b'"' => quoted = !quoted,
                b'\\' if quoted => i += 1,
                b'{' if !quoted => depth += 1,
                b'}' if !quoted => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return Ok(i);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        Err(self.error(self.pos, "unterminated '{' in pass options"))
    }
}
