//! `DIALECT_LOG` and `DIALECT_OPT_LIMIT`: per-pass logging levels and rewrite limits, as
//! TorchScript's `PYTORCH_JIT_LOG_LEVEL` and `PYTORCH_JIT_OPT_LIMIT`.

use std::collections::HashMap;
use std::fmt;

/// The environment variable naming passes to log: `dce:>cse:>>canonicalize`.
pub const LOG_ENV: &str = "DIALECT_LOG";
/// The environment variable limiting rewrites per pass: `cse=3:dce=10`.
pub const OPT_LIMIT_ENV: &str = "DIALECT_OPT_LIMIT";

/// How much a pass logs; each level includes the ones below it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// Summaries and IR dumps (`pass`).
    Dump = 1,
    /// Each change made (`>pass`).
    Update = 2,
    /// Everything the pass considered (`>>pass`).
    Debug = 3,
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LogLevel::Dump => "DUMP",
            LogLevel::Update => "UPDATE",
            LogLevel::Debug => "DEBUG",
        })
    }
}

/// Per-pass log levels parsed from `DIALECT_LOG`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogConfig {
    levels: HashMap<String, LogLevel>,
}

impl LogConfig {
    /// Parses `entry:entry:...` where an entry is a pass name prefixed by zero, one or two `>`
    /// (levels dump, update, debug). Empty entries are skipped.
    pub fn parse(value: &str) -> Result<LogConfig, String> {
        let mut levels = HashMap::new();
        for entry in value.split(':') {
            let entry = entry.trim();
            if entry.is_empty() {
                continue;
            }
            let name = entry.trim_start_matches('>');
            let level = match entry.len() - name.len() {
                0 => LogLevel::Dump,
                1 => LogLevel::Update,
                2 => LogLevel::Debug,
                n => {
                    return Err(format!(
                        "{LOG_ENV}: too many '>' ({n}) before '{name}'; at most two"
                    ));
                }
            };
            if !crate::registry::valid_pass_name(name) {
                return Err(format!("{LOG_ENV}: invalid pass name '{name}'"));
            }
            levels.insert(name.to_string(), level);
        }
        Ok(LogConfig { levels })
    }

    /// Reads `DIALECT_LOG` from the process environment (unset means no logging).
    pub fn from_env() -> Result<LogConfig, String> {
        match std::env::var(LOG_ENV) {
            Ok(v) => LogConfig::parse(&v),
            Err(_) => Ok(LogConfig::default()),
        }
    }

    pub fn set(&mut self, pass: &str, level: LogLevel) {
        self.levels.insert(pass.to_string(), level);
    }

    /// The level enabled for a pass, if any.
    pub fn level(&self, pass: &str) -> Option<LogLevel> {
        self.levels.get(pass).copied()
    }

    pub fn enabled(&self, pass: &str, level: LogLevel) -> bool {
        self.level(pass).is_some_and(|l| level <= l)
    }

    pub fn is_empty(&self) -> bool {
        self.levels.is_empty()
    }
}

/// Per-pass rewrite limits parsed from `DIALECT_OPT_LIMIT`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OptLimits {
    limits: HashMap<String, usize>,
}

impl OptLimits {
    /// Parses `pass=N:pass=N`. Empty entries are skipped.
    pub fn parse(value: &str) -> Result<OptLimits, String> {
        let mut limits = HashMap::new();
        for entry in value.split(':') {
            let entry = entry.trim();
            if entry.is_empty() {
                continue;
            }
            let Some((name, n)) = entry.split_once('=') else {
                return Err(format!(
                    "{OPT_LIMIT_ENV}: expected 'pass=N', found '{entry}'"
                ));
            };
            let name = name.trim();
            if !crate::registry::valid_pass_name(name) {
                return Err(format!("{OPT_LIMIT_ENV}: invalid pass name '{name}'"));
            }
            let n: usize = n.trim().parse().map_err(|_| {
                format!(
                    "{OPT_LIMIT_ENV}: expected a non-negative count for '{name}', found '{}'",
                    n.trim()
                )
            })?;
            limits.insert(name.to_string(), n);
        }
        Ok(OptLimits { limits })
    }

    /// Reads `DIALECT_OPT_LIMIT` from the process environment (unset means no limits).
    pub fn from_env() -> Result<OptLimits, String> {
        match std::env::var(OPT_LIMIT_ENV) {
            Ok(v) => OptLimits::parse(&v),
            Err(_) => Ok(OptLimits::default()),
        }
    }

    pub fn set(&mut self, pass: &str, limit: usize) {
        self.limits.insert(pass.to_string(), limit);
    }

    /// The number of rewrites a pass may make, if limited.
    pub fn limit(&self, pass: &str) -> Option<usize> {
        self.limits.get(pass).copied()
    }

    pub fn is_empty(&self) -> bool {
        self.limits.is_empty()
    }
}
