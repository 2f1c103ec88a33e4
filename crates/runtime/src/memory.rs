//! The memory limit: a cap on the bytes of tensor storage alive at once in the process.
//!
//! Every owned tensor buffer (`Storage::zeroed`, and so every tensor, memory-plan slab and
//! copied input) reserves its bytes here before it is allocated and gives them back when it is
//! freed; regions of a slab and mapped weights reserve nothing. A request that would take the
//! live total past the limit is an error value naming the sizes, never a process killed by the
//! kernel's out-of-memory handler after the fact. The limit defaults to the machine's physical
//! memory (`MemTotal`) where the system says it, otherwise to no limit; tools set it from
//! `--memory-limit` or `DIALECT_MEMORY_LIMIT` (see [`parse_size`]).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The environment variable the tools read the limit from.
pub const ENV: &str = "DIALECT_MEMORY_LIMIT";

/// An explicitly set limit (0: none set, use the default).
static SET: AtomicUsize = AtomicUsize::new(0);
/// Bytes of owned storage alive now.
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// The limit in bytes.
pub fn limit() -> usize {
    match SET.load(Ordering::Relaxed) {
        0 => default_limit(),
        n => n,
    }
}

/// Sets the limit in bytes (0 restores the default).
pub fn set_limit(bytes: usize) {
    SET.store(bytes, Ordering::Relaxed);
}

/// Sets the limit from `DIALECT_MEMORY_LIMIT` when it is set; an unreadable value is an error.
pub fn set_limit_from_env() -> Result<(), String> {
    match std::env::var(ENV) {
        Ok(v) => {
            set_limit(parse_size(&v).map_err(|e| format!("{ENV}: {e}"))?);
            Ok(())
        }
        Err(std::env::VarError::NotPresent) => Ok(()),
        Err(e) => Err(format!("{ENV}: {e}")),
    }
}

/// Bytes of owned tensor storage alive now, in the whole process.
pub fn live_bytes() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// Physical memory, or no limit where it cannot be read.
fn default_limit() -> usize {
    static DEFAULT: OnceLock<usize> = OnceLock::new();
    *DEFAULT.get_or_init(|| physical_memory().unwrap_or(usize::MAX))
}

fn physical_memory() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Parses a size in bytes: a number with an optional binary suffix `K`, `M`, `G` or `T`
/// (`KiB`… and `KB`… are read the same way): `1048576`, `512M`, `1.5G`.
pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => return Err(format!("'{s}' is not a size (a number of bytes, optionally with K, M, G or T)")),
    };
    let value: f64 = num.parse().map_err(|_| format!("'{s}' is not a size (a number of bytes, optionally with K, M, G or T)"))?;
    let bytes = value * (1u64 << shift) as f64;
    if !(bytes >= 1.0 && bytes < usize::MAX as f64) {
        return Err(format!("'{s}' is not a usable limit (at least one byte, less than {} bytes)", usize::MAX));
    }
    Ok(bytes as usize)
}

/// A size in bytes as [`parse_size`] reads it back, to three significant figures: `512 B`,
/// `1.50 KiB`, `3.38 MiB`.
pub fn format_size(bytes: usize) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    match unit {
        0 => format!("{bytes} B"),
        _ if v < 10.0 => format!("{v:.2} {}", UNITS[unit]),
        _ if v < 100.0 => format!("{v:.1} {}", UNITS[unit]),
        _ => format!("{v:.0} {}", UNITS[unit]),
    }
}

/// Takes `n` bytes out of the limit; `Err` with the message when they do not fit.
pub(crate) fn reserve(n: usize) -> Result<(), String> {
    let limit = limit();
    let mut live = LIVE.load(Ordering::Relaxed);
    loop {
        let next = match live.checked_add(n) {
            Some(next) if next <= limit => next,
            _ => {
                return Err(format!(
                    "allocating {n} bytes would exceed the memory limit of {limit} bytes ({live} in use); \
                     raise it with --memory-limit or {ENV}"
                ));
            }
        };
        match LIVE.compare_exchange_weak(live, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return Ok(()),
            Err(now) => live = now,
        }
    }
}

/// Gives back `n` reserved bytes.
pub(crate) fn release(n: usize) {
    LIVE.fetch_sub(n, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_suffixes() {
        assert_eq!(parse_size("1024"), Ok(1024));
        assert_eq!(parse_size("4K"), Ok(4096));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("1.5G"), Ok(3 << 29));
        assert_eq!(parse_size("2 GiB"), Ok(2 << 30));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("0").is_err());
        assert!(parse_size("-1G").is_err());
        assert!(parse_size("99999999999T").is_err());
    }

    #[test]
    fn sizes_format_as_they_parse_back() {
        assert_eq!(format_size(0), "0 B");
        assert_eq!(format_size(1023), "1023 B");
        assert_eq!(format_size(1536), "1.50 KiB");
        assert_eq!(format_size(3_538_944), "3.38 MiB");
        assert_eq!(format_size(700 << 20), "700 MiB");
        assert_eq!(format_size(5 << 40), "5.00 TiB");
        for n in [1536usize, 3_538_944, 700 << 20] {
            let back = parse_size(&format_size(n)).unwrap() as f64;
            assert!((back - n as f64).abs() <= n as f64 * 5e-3, "{n} -> {back}");
        }
    }

    #[test]
    fn the_default_is_physical_memory_or_none() {
        assert!(default_limit() > 0);
    }
}
