//! Instrumentation output: the timing report and failure reproducers.

use std::time::Duration;

/// Wall time and run count per pass name, in first-run order.
#[derive(Clone, Debug, Default)]
pub struct Timing {
    rows: Vec<(String, Duration, usize)>,
}

impl Timing {
    pub fn record(&mut self, name: &str, d: Duration) {
        match self.rows.iter_mut().find(|r| r.0 == name) {
            Some(r) => {
                r.1 += d;
                r.2 += 1;
            }
            None => self.rows.push((name.to_string(), d, 1)),
        }
    }

    /// Adds every row of `other` as `prefix/name` (as `name` with an empty prefix): a pass that
    /// runs a pipeline of its own reports that pipeline's passes under its name.
    pub fn merge(&mut self, prefix: &str, other: &Timing) {
        for (name, d, runs) in &other.rows {
            let name = if prefix.is_empty() { name.clone() } else { format!("{prefix}/{name}") };
            match self.rows.iter_mut().find(|r| r.0 == name) {
                Some(r) => {
                    r.1 += *d;
                    r.2 += runs;
                }
                None => self.rows.push((name, *d, *runs)),
            }
        }
    }

    /// The rows: name, total wall time, number of runs.
    pub fn rows(&self) -> &[(String, Duration, usize)] {
        &self.rows
    }

    /// The report, laid out like MLIR's `-mlir-timing`, with a run-count column; times in
    /// seconds to the microsecond, so that passes over small programs do not all read 0.0000.
    pub fn report(&self, total: Duration) -> String {
        let total_s = total.as_secs_f64();
        let pct = |d: Duration| {
            if total_s > 0.0 {
                100.0 * d.as_secs_f64() / total_s
            } else {
                0.0
            }
        };
        let rule =
            "===-------------------------------------------------------------------------===";
        let mut out = String::new();
        out.push_str(rule);
        out.push('\n');
        out.push_str("                         ... Execution time report ...\n");
        out.push_str(rule);
        out.push('\n');
        out.push_str(&format!("  Total Execution Time: {total_s:.6} seconds\n\n"));
        out.push_str("  -----Wall Time-----  ----Runs----  ----Name----\n");
        for (name, d, runs) in &self.rows {
            out.push_str(&format!(
                "  {:>10.6} ({:>5.1}%)  {:>12}  {}\n",
                d.as_secs_f64(),
                pct(*d),
                runs,
                name
            ));
        }
        out.push_str(&format!(
            "  {:>10.6} ({:>5.1}%)  {:>12}  Total\n",
            total_s, 100.0, ""
        ));
        out
    }
}

/// What a failure reproducer holds: the pipeline to re-run and the IR it failed on.
///
/// Its text is `// configuration: --pass-pipeline='PIPELINE'`, optional `//` comment lines,
/// then the IR; since the header is a comment, the file is also plain IR text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reproducer {
    pub pipeline: String,
    pub ir: String,
}

impl Reproducer {
    pub fn new(pipeline: &str, ir: &str) -> Reproducer {
        Reproducer {
            pipeline: pipeline.to_string(),
            ir: ir.to_string(),
        }
    }

    /// The file text; `note` (the failure) becomes comment lines after the header.
    pub fn to_text(&self, note: &str) -> String {
        let mut out = format!(
            "// configuration: --pass-pipeline={}\n",
            shell_quote(&self.pipeline)
        );
        for line in note.lines() {
            out.push_str(&format!("// {line}\n"));
        }
        out.push_str(&self.ir);
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out
    }

    /// Reads a reproducer: the pipeline from the `// configuration:` line, the IR after the
    /// leading comment lines.
    pub fn parse(text: &str) -> Result<Reproducer, String> {
        let mut pipeline = None;
        let mut ir_start = 0;
        for line in text.split_inclusive('\n') {
            let t = line.trim();
            if !(t.starts_with("//") || t.is_empty()) {
                break;
            }
            ir_start += line.len();
            if let Some(cfg) = t
                .strip_prefix("//")
                .map(str::trim)
                .and_then(|r| r.strip_prefix("configuration:"))
            {
                pipeline = Some(pipeline_flag(cfg)?);
            }
        }
        let pipeline = pipeline.ok_or(
            "not a reproducer: no '// configuration: --pass-pipeline=...' line before the IR",
        )?;
        Ok(Reproducer {
            pipeline,
            ir: text[ir_start..].to_string(),
        })
    }
}

/// Quotes for a POSIX shell: `'...'`, with `'` written as `'\''`.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The value of `--pass-pipeline=` in a configuration line, shell-unquoted.
fn pipeline_flag(cfg: &str) -> Result<String, String> {
    let key = "--pass-pipeline=";
    let start = cfg
        .find(key)
        .ok_or("reproducer configuration has no '--pass-pipeline='")?
        + key.len();
    let mut out = String::new();
    let mut chars = cfg[start..].chars();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (None, c) if c.is_whitespace() => break,
            (None, '\\') => out.extend(chars.next()),
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => out.extend(chars.next()),
            (_, c) => out.push(c),
        }
    }
    if quote.is_some() {
        return Err("unterminated quote in reproducer '--pass-pipeline='".into());
    }
    Ok(out)
}
