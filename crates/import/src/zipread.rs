//! Reading one compressed entry of a zip archive without trusting its directory: the entry
//! inflates to exactly the size its directory declares or is refused, so a small archive
//! cannot expand into gigabytes (a zip bomb) and a truncated one is not taken for whole.

use std::io::Read;

/// The most bytes deflate can produce from one compressed byte (its best case is about
/// 1,032:1); a declared size beyond this ratio is a lie about the entry.
const MAX_DEFLATE_RATIO: u64 = 1_100;

/// The largest up-front reservation: larger entries grow as they really inflate.
const MAX_RESERVE: u64 = 64 << 20;

/// Reads one entry of an archive, checked against the sizes its directory declares. The error
/// says what was wrong, for the caller to name the archive and the entry.
pub(crate) fn read_entry<R: Read>(entry: zip::read::ZipFile<'_, R>) -> Result<Vec<u8>, String> {
    let (declared, compressed) = (entry.size(), entry.compressed_size());
    read_declared(entry, declared, compressed)
}

/// Reads an entry that declares `declared` bytes from `compressed` stored bytes.
fn read_declared(entry: impl Read, declared: u64, compressed: u64) -> Result<Vec<u8>, String> {
    let most = compressed.saturating_mul(MAX_DEFLATE_RATIO).saturating_add(1 << 10);
    if declared > most {
        return Err(format!("declares {declared} bytes from {compressed} compressed bytes, more than deflate can produce"));
    }
    let mut out = Vec::new();
    out.try_reserve_exact(declared.min(MAX_RESERVE) as usize)
        .map_err(|_| format!("cannot allocate {declared} bytes to inflate it"))?;
    entry.take(declared.saturating_add(1)).read_to_end(&mut out).map_err(|e| e.to_string())?;
    match (out.len() as u64).cmp(&declared) {
        std::cmp::Ordering::Equal => Ok(out),
        std::cmp::Ordering::Greater => Err(format!("inflates to more than the {declared} bytes its directory entry declares")),
        std::cmp::Ordering::Less => Err(format!("inflates to {} bytes, its directory entry declares {declared}", out.len())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_must_inflate_to_its_declared_size() {
        assert_eq!(read_declared(&b"abcd"[..], 4, 4).unwrap(), b"abcd");
        assert!(read_declared(&b"abcde"[..], 4, 4).unwrap_err().contains("more than the 4 bytes"));
        assert!(read_declared(&b"abc"[..], 4, 4).unwrap_err().contains("inflates to 3 bytes"));
        assert!(read_declared(&b""[..], 1 << 40, 10).unwrap_err().contains("more than deflate can produce"));
    }
}
