//! Instrumentation output: the timing report, pass statistics and failure reproducers.

use std::time::Duration;

/// Named counters reported by passes ([`crate::AnalysisManager::add_statistic`]), summed per
/// pass name over its runs, in first-report order; `--mlir-pass-statistics` prints them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Statistics {
    passes: Vec<(String, Vec<Statistic>)>,
}

/// One named counter of a pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statistic {
    pub name: String,
    pub description: String,
    pub value: u64,
}

impl Statistics {
    /// Adds `value` to the counter `name` of `pass`.
    pub fn add(&mut self, pass: &str, name: &str, description: &str, value: u64) {
        let i = match self.passes.iter().position(|(p, _)| p == pass) {
            Some(i) => i,
            None => {
                self.passes.push((pass.to_string(), Vec::new()));
                self.passes.len() - 1
            }
        };
        let stats = &mut self.passes[i].1;
        match stats.iter_mut().find(|s| s.name == name) {
            Some(s) => s.value += value,
            None => stats.push(Statistic { name: name.to_string(), description: description.to_string(), value }),
        }
    }

    /// Adds every counter of `other`.
    pub fn merge(&mut self, other: &Statistics) {
        for (pass, stats) in &other.passes {
            for s in stats {
                self.add(pass, &s.name, &s.description, s.value);
            }
        }
    }

    /// The value of counter `name` of `pass`, if it was reported.
    pub fn get(&self, pass: &str, name: &str) -> Option<u64> {
        let (_, stats) = self.passes.iter().find(|(p, _)| p == pass)?;
        stats.iter().find(|s| s.name == name).map(|s| s.value)
    }

    pub fn is_empty(&self) -> bool {
        self.passes.is_empty()
    }

    /// The report, laid out like MLIR's `-mlir-pass-statistics`: each pass that reported a
    /// counter, then its counters as `(S) value name - description`.
    pub fn report(&self) -> String {
        let rule = "===-------------------------------------------------------------------------===";
        let mut out = format!("{rule}\n                         ... Pass statistics report ...\n{rule}\n");
        for (pass, stats) in &self.passes {
            out.push_str(pass);
            out.push('\n');
            let width = stats.iter().map(|s| s.value.to_string().len()).max().unwrap_or(0);
            for s in stats {
                out.push_str(&format!("  (S) {:>width$} {} - {}\n", s.value, s.name, s.description));
            }
        }
        out
    }
}

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

#[cfg(test)]
mod statistics_tests {
    use super::Statistics;

    #[test]
    fn counters_add_up_per_pass_in_first_report_order() {
        let mut s = Statistics::default();
        s.add("b-pass", "rewrites", "Patterns applied", 2);
        s.add("a-pass", "erased", "Ops erased", 10);
        s.add("b-pass", "rewrites", "Patterns applied", 3);
        assert_eq!(s.get("b-pass", "rewrites"), Some(5));
        assert_eq!(s.get("a-pass", "rewrites"), None);
        let report = s.report();
        let body: Vec<&str> = report.lines().skip(3).collect();
        assert_eq!(body, ["b-pass", "  (S) 5 rewrites - Patterns applied", "a-pass", "  (S) 10 erased - Ops erased"]);
    }
}
