//! `docs/dialects.md` cannot drift from the code it shows: every code block in it is preceded
//! by `<!-- from PATH#ANCHOR -->` and equals the region of that file (a path from the
//! workspace root) between the lines holding `[doc:ANCHOR]` and `[/doc:ANCHOR]`, dedented.

use std::path::Path;

/// The lines of `file` strictly between the anchor's markers, with their common indentation
/// removed.
fn region(file: &str, text: &str, anchor: &str) -> Result<String, String> {
    let (open, close) = (format!("[doc:{anchor}]"), format!("[/doc:{anchor}]"));
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.iter().position(|l| l.contains(&open)).ok_or(format!("{file} has no [doc:{anchor}]"))?;
    let len = lines[start + 1..].iter().position(|l| l.contains(&close)).ok_or(format!("{file} does not close [doc:{anchor}]"))?;
    let body = &lines[start + 1..start + 1 + len];
    let indent = body.iter().filter(|l| !l.trim().is_empty()).map(|l| l.len() - l.trim_start().len()).min().unwrap_or(0);
    Ok(body.iter().map(|l| l.get(indent..).unwrap_or("").trim_end()).collect::<Vec<_>>().join("\n"))
}

/// Checks every code block of the markdown `doc`; returns the number checked.
fn check(root: &Path, doc: &str) -> Result<usize, Vec<String>> {
    let lines: Vec<&str> = doc.lines().collect();
    let mut problems = Vec::new();
    let mut checked = 0;
    let mut i = 0;
    while i < lines.len() {
        if !lines[i].starts_with("```") {
            i += 1;
            continue;
        }
        let end = lines[i + 1..].iter().position(|l| l.starts_with("```")).map(|n| i + 1 + n).unwrap_or(lines.len());
        let block = lines[i + 1..end].join("\n");
        let source = lines[..i].iter().rev().find(|l| !l.trim().is_empty()).and_then(|l| l.trim().strip_prefix("<!-- from ")).and_then(|l| l.strip_suffix(" -->"));
        match source.and_then(|s| s.split_once('#')) {
            None => problems.push(format!("line {}: a code block without a `<!-- from PATH#ANCHOR -->` line before it", i + 1)),
            Some((path, anchor)) => match std::fs::read_to_string(root.join(path)).map_err(|e| format!("{path}: {e}")).and_then(|t| region(path, &t, anchor)) {
                Err(e) => problems.push(format!("line {}: {e}", i + 1)),
                Ok(want) if want != block => problems.push(format!("line {}: the block differs from {path}#{anchor}:\n{want}", i + 1)),
                Ok(_) => checked += 1,
            },
        }
        i = end + 1;
    }
    if problems.is_empty() { Ok(checked) } else { Err(problems) }
}

#[test]
fn every_block_of_the_tutorial_is_the_code_it_names() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let doc = std::fs::read_to_string(root.join("docs/dialects.md")).expect("docs/dialects.md");
    match check(&root, &doc) {
        Ok(n) => assert!(n >= 10, "only {n} blocks checked"),
        Err(p) => panic!("docs/dialects.md:\n{}", p.join("\n")),
    }
}

#[test]
fn a_drifted_block_is_caught() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let good = "<!-- from examples/toy/src/ops.rs#handles -->\n```rust\n";
    let text = std::fs::read_to_string(root.join("examples/toy/src/ops.rs")).unwrap();
    let body = region("ops.rs", &text, "handles").unwrap();
    assert_eq!(check(&root, &format!("{good}{body}\n```\n")), Ok(1));
    assert!(check(&root, &format!("{good}{body}\n// changed\n```\n")).is_err());
    assert!(check(&root, "```rust\nfn main() {}\n```\n").is_err());
    assert!(check(&root, "<!-- from examples/toy/src/ops.rs#nowhere -->\n```rust\n```\n").is_err());
}
