//! `%`-substitutions in `RUN:` lines (`%s`, `%S`, `%p`, `%t`, `%T`, their forward-slash
//! forms `%{/s}` …, `%%`, `%{pathsep}`) and user-supplied ones.
//!
//! Substitution is a single left-to-right pass: at each position the longest matching
//! pattern wins and its replacement is not scanned again, so `%%t` is the text `%t`. A user
//! pattern that starts with a word character (a tool name such as `filecheck`) matches only
//! as a whole word: not inside `myfilecheck`, `path/filecheck` or `filecheck-extra`.

use std::path::Path;

/// An ordered set of substitution patterns and their replacements.
#[derive(Debug, Clone, Default)]
pub struct Substitutions {
    /// Patterns and replacements, longest pattern first; ties keep insertion order.
    entries: Vec<(String, String)>,
}

/// The paths a test's built-in substitutions expand to.
#[derive(Debug, Clone)]
pub struct TestPaths<'a> {
    /// The test file (`%s`).
    pub source: &'a Path,
    /// The test's temporary path (`%t`); not created by the runner.
    pub temp: &'a Path,
    /// The directory holding `%t` (`%T`); created by the runner.
    pub temp_dir: &'a Path,
}

impl Substitutions {
    /// Creates substitutions from user patterns followed by the built-in ones for a test.
    /// User patterns take precedence over built-in ones of the same length.
    pub fn for_test(user: &[(String, String)], paths: &TestPaths<'_>) -> Self {
        let dir = paths.source.parent().unwrap_or(Path::new("."));
        let builtin = [
            ("%s", display(paths.source)),
            ("%S", display(dir)),
            ("%p", display(dir)),
            ("%t", display(paths.temp)),
            ("%T", display(paths.temp_dir)),
            ("%%", "%".to_string()),
            (
                "%{pathsep}",
                if cfg!(windows) { ";" } else { ":" }.to_string(),
            ),
        ];
        let mut entries: Vec<(String, String)> = user.to_vec();
        // `%{/s}` and friends are the same paths with forward slashes.
        for (pattern, value) in &builtin[..5] {
            let letter = &pattern[1..];
            entries.push((format!("%{{/{letter}}}"), value.replace('\\', "/")));
        }
        entries.extend(builtin.into_iter().map(|(k, v)| (k.to_string(), v)));
        Self::new(entries)
    }

    /// Creates substitutions from explicit patterns, in precedence order.
    pub fn new(entries: Vec<(String, String)>) -> Self {
        let mut entries: Vec<(String, String)> = entries
            .into_iter()
            .filter(|(pattern, _)| !pattern.is_empty())
            .collect();
        // A stable sort keeps the earlier of two equally long patterns first.
        entries.sort_by_key(|(pattern, _)| std::cmp::Reverse(pattern.len()));
        Substitutions { entries }
    }

    /// Applies the substitutions to a command line.
    pub fn apply(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut pos = 0;
        'scan: while pos < text.len() {
            let rest = &text[pos..];
            for (pattern, replacement) in &self.entries {
                if rest.starts_with(pattern.as_str()) && self.boundary_ok(text, pos, pattern) {
                    out.push_str(replacement);
                    pos += pattern.len();
                    continue 'scan;
                }
            }
            let Some(c) = rest.chars().next() else { break };
            out.push(c);
            pos += c.len_utf8();
        }
        out
    }

    fn boundary_ok(&self, text: &str, pos: usize, pattern: &str) -> bool {
        let word = |c: char| c.is_alphanumeric() || c == '_';
        if !pattern.starts_with(word) {
            return true;
        }
        let before_ok = text[..pos]
            .chars()
            .next_back()
            .is_none_or(|c| !(word(c) || "-./".contains(c)));
        let after_ok = text[pos + pattern.len()..]
            .chars()
            .next()
            .is_none_or(|c| !(word(c) || c == '-'));
        before_ok && after_ok
    }
}

fn display(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subs(user: &[(&str, &str)]) -> Substitutions {
        let user: Vec<(String, String)> = user
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        Substitutions::for_test(
            &user,
            &TestPaths {
                source: Path::new("/src/lit/a.ir"),
                temp: Path::new("/tmp/lit/a.ir.tmp"),
                temp_dir: Path::new("/tmp/lit"),
            },
        )
    }

    #[test]
    fn builtin_substitutions() {
        let s = subs(&[]);
        assert_eq!(
            s.apply("cat %s > %t"),
            "cat /src/lit/a.ir > /tmp/lit/a.ir.tmp"
        );
        assert_eq!(s.apply("%S %p %T"), "/src/lit /src/lit /tmp/lit");
        assert_eq!(s.apply("a%{pathsep}b"), "a:b");
        assert_eq!(s.apply("%{/s} %{/t}"), "/src/lit/a.ir /tmp/lit/a.ir.tmp");
        assert_eq!(s.apply("100%% %t.out"), "100% /tmp/lit/a.ir.tmp.out");
        assert_eq!(s.apply("%%t %%s"), "%t %s");
        assert_eq!(s.apply("%q stays"), "%q stays");
        assert_eq!(s.apply("ünïcode %s"), "ünïcode /src/lit/a.ir");
    }

    #[test]
    fn user_substitutions_win_and_respect_words() {
        let s = subs(&[
            ("filecheck", "/bin/fc"),
            ("%{opt}", "dialect-opt -x"),
            ("%s2", "two"),
        ]);
        assert_eq!(s.apply("filecheck %s"), "/bin/fc /src/lit/a.ir");
        assert_eq!(s.apply("x | filecheck"), "x | /bin/fc");
        assert_eq!(
            s.apply("myfilecheck filecheck-x a/filecheck"),
            "myfilecheck filecheck-x a/filecheck"
        );
        assert_eq!(s.apply("%{opt} %s2"), "dialect-opt -x two");
    }
}
