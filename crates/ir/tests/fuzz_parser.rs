//! Mutation fuzzing of the parser, printer and verifier: thousands of corrupted versions of the
//! lit inputs must produce a value or a located diagnostic, never a panic, and whatever parses
//! must print and re-parse. Deterministic (seeded), so a failure reproduces; the seed is printed.

use ir::{Context, PrintOptions, parse_module, print_module, verify};
use std::path::{Path, PathBuf};

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next() % n as u64) as usize }
    }
}

fn corpus() -> Vec<String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../lit");
    let mut files = Vec::new();
    collect(&root, &mut files);
    files.sort();
    files.iter().filter_map(|p| std::fs::read_to_string(p).ok()).collect()
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            // FileCheck's own tests are check files, not IR.
            if p.file_name().is_some_and(|name| name == "filecheck") {
                continue;
            }
            collect(&p, out);
        } else if p.extension().is_some_and(|x| x == "ir") {
            out.push(p);
        }
    }
}

const TOKENS: &[&str] = &[
    "%", "^bb0", "(", ")", "{", "}", "<", ">", "[", "]", ":", ",", "=", "->", "\"", "#prim.sym<", "tensor<",
    "?x", "*x", "0x", "dense<", "loc(", "#loc", "!prim.list<", "-", "1e999", "9999999999999999999", "@",
    "prim.If", "func.return", "\\", "\n", " ", "x", "%0#7", "%a:0", "tuple<", "!", "#",
];

fn mutate(rng: &mut Rng, src: &str) -> String {
    let mut bytes = src.as_bytes().to_vec();
    for _ in 0..1 + rng.below(4) {
        if bytes.is_empty() {
            break;
        }
        let at = rng.below(bytes.len());
        match rng.below(5) {
            0 => {
                let end = (at + 1 + rng.below(12)).min(bytes.len());
                bytes.drain(at..end);
            }
            1 => {
                let tok = TOKENS[rng.below(TOKENS.len())];
                bytes.splice(at..at, tok.bytes());
            }
            2 => bytes.truncate(at),
            3 => {
                let from = rng.below(bytes.len());
                let len = rng.below(30).min(bytes.len() - from);
                let piece: Vec<u8> = bytes[from..from + len].to_vec();
                bytes.splice(at..at, piece);
            }
            _ => bytes[at] = b"(){}<>[]%^:,=\"x0?*#!@"[rng.below(21)],
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[test]
fn mutated_inputs_never_panic() {
    let mut ctx = Context::new();
    ctx.set_allow_unregistered(true);
    let corpus = corpus();
    assert!(!corpus.is_empty(), "no lit inputs found");
    let seed = std::env::var("FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5EED_1234_u64);
    let iterations: usize = std::env::var("FUZZ_ITERS").ok().and_then(|s| s.parse().ok()).unwrap_or(3000);
    println!("seed {seed:#x}, {iterations} iterations over {} inputs", corpus.len());
    let mut rng = Rng(seed);
    let (mut parsed, mut rejected) = (0, 0);
    for i in 0..iterations {
        let src = &corpus[i % corpus.len()];
        let text = mutate(&mut rng, src);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match parse_module(&ctx, &text, "fuzz.ir") {
            Ok(m) => {
                let _ = verify(&ctx, &m);
                let printed = print_module(&ctx, &m, PrintOptions::default());
                let generic = print_module(&ctx, &m, PrintOptions { generic: true, debug_info: true });
                for (p, opts) in [
                    (printed, PrintOptions::default()),
                    (generic, PrintOptions { generic: true, debug_info: true }),
                ] {
                    match parse_module(&ctx, &p, "printed.ir") {
                        Err(d) => return Err(format!("printed output does not parse: {d}\n{p}")),
                        Ok(m2) => {
                            let again = print_module(&ctx, &m2, opts);
                            if again != p {
                                return Err(format!("printing is not a fixed point:\n{p}\n---\n{again}"));
                            }
                        }
                    }
                }
                Ok(true)
            }
            Err(d) => {
                if d.loc.file_line_col().is_none() {
                    return Err(format!("diagnostic without a position: {d}"));
                }
                let _ = d.render("fuzz.ir", &text);
                Ok(false)
            }
        }));
        match outcome {
            Ok(Ok(true)) => parsed += 1,
            Ok(Ok(false)) => rejected += 1,
            Ok(Err(msg)) => panic!("iteration {i} (seed {seed:#x}): {msg}\ninput:\n{text}"),
            Err(_) => panic!("iteration {i} (seed {seed:#x}) panicked on input:\n{text}"),
        }
    }
    println!("{parsed} parsed, {rejected} rejected with a located error");
    assert!(rejected > 0 && parsed > 0);
}
