//! Decoding the arguments of the text opcodes of protocol 0 (integers, quoted strings,
//! `raw-unicode-escape` lines) and of the variable-length integers of protocol 2.

use super::{Node, R, Value};

pub(super) fn parse_int(text: &str) -> R<i64> {
    text.trim()
        .parse()
        .map_err(|_| format!("`{text}` is not an integer that fits in 64 bits"))
}

pub(super) fn parse_index(text: &str) -> R<u64> {
    text.trim().parse().map_err(|_| format!("`{text}` is not a memo index"))
}

/// A little-endian two's-complement integer of any length, which must fit in an `i64`.
pub(super) fn long_from_bytes(bytes: &[u8]) -> R<i64> {
    let Some(&last) = bytes.last() else { return Ok(0) };
    let fill = if last & 0x80 != 0 { 0xff } else { 0 };
    if bytes.len() > 8 {
        let (low, high) = bytes.split_at(8);
        if high.iter().any(|&b| b != fill) || (low[7] & 0x80 != 0) != (fill == 0xff) {
            return Err("an integer does not fit in 64 bits".into());
        }
    }
    let mut buf = [fill; 8];
    let n = bytes.len().min(8);
    buf[..n].copy_from_slice(&bytes[..n]);
    Ok(i64::from_le_bytes(buf))
}

/// A protocol-0 string: text if it is UTF-8, bytes otherwise.
pub(super) fn string_node(bytes: Vec<u8>) -> Node {
    match String::from_utf8(bytes) {
        Ok(s) => Node::Leaf(Value::Str(s.into())),
        Err(e) => Node::Leaf(Value::Bytes(e.into_bytes().into())),
    }
}

/// The body of a quoted `STRING` argument (`'abc'` or `"abc"`, with backslash escapes).
pub(super) fn unquote(text: &str) -> R<Vec<u8>> {
    let b = text.as_bytes();
    let quoted = b.len() >= 2 && (b[0] == b'\'' || b[0] == b'"') && b[b.len() - 1] == b[0];
    if !quoted {
        return Err("a STRING argument is not quoted".into());
    }
    let body = &b[1..b.len() - 1];
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        if body[i] != b'\\' {
            out.push(body[i]);
            i += 1;
            continue;
        }
        let esc = *body.get(i + 1).ok_or("a STRING argument ends in a backslash")?;
        i += 2;
        out.push(match esc {
            b'n' => b'\n',
            b't' => b'\t',
            b'r' => b'\r',
            b'0' => 0,
            b'\\' | b'\'' | b'"' => esc,
            b'x' => {
                let hex = body.get(i..i + 2).ok_or("a short \\x escape")?;
                i += 2;
                u8::from_str_radix(std::str::from_utf8(hex).unwrap_or("?"), 16).map_err(|_| "a bad \\x escape".to_string())?
            }
            _ => return Err(format!("unsupported escape \\{}", esc as char)),
        });
    }
    Ok(out)
}

/// Decodes a `raw-unicode-escape` line: `\uXXXX` and `\UXXXXXXXX` escapes, other characters
/// as they are.
pub(super) fn raw_unicode_unescape(text: &str) -> R<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let digits = match after.as_bytes().first() {
            Some(b'u') => 4,
            Some(b'U') => 8,
            _ => {
                out.push('\\');
                rest = after;
                continue;
            }
        };
        let hex = after.get(1..1 + digits).ok_or("a short unicode escape")?;
        let code = u32::from_str_radix(hex, 16).map_err(|_| "a bad unicode escape".to_string())?;
        out.push(char::from_u32(code).ok_or_else(|| format!("U+{code:X} is not a character"))?);
        rest = &after[1 + digits..];
    }
    out.push_str(rest);
    Ok(out)
}
