//! Splitting an input file at `// -----` markers, as `mlir-opt --split-input-file` does.

/// One chunk of a split file: its text and the number of lines before it in the original.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk<'a> {
    pub text: &'a str,
    pub line_offset: u32,
}

/// Splits at lines consisting of `// -----` (surrounding whitespace allowed).
pub fn split_input(source: &str) -> Vec<Chunk<'_>> {
    let mut chunks = Vec::new();
    let mut start = 0;
    let mut start_line = 0u32;
    let mut line = 0u32;
    let mut pos = 0;
    for l in source.split_inclusive('\n') {
        if l.trim() == "// -----" {
            chunks.push(Chunk { text: &source[start..pos], line_offset: start_line });
            start = pos + l.len();
            start_line = line + 1;
        }
        pos += l.len();
        line += 1;
    }
    chunks.push(Chunk { text: &source[start..], line_offset: start_line });
    chunks
}
