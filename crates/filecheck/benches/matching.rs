//! Matching speed over a 10 MB input: a long pattern that does not match, a
//! check file of regex-heavy patterns with variables matched all the way
//! down, CHECK-NOT and CHECK-DAG searches over the whole input. Prints the
//! time of each case, and that of LLVM's FileCheck on the same files when it
//! is installed. Run with `cargo bench -p filecheck --bench matching`; the
//! files are left in the printed directory for timing the tools by hand.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use filecheck::{CheckFile, Config};

/// About 10 MB of IR-like text: numbered instructions in functions.
fn input() -> String {
    let mut text = String::with_capacity(10_500_000);
    let mut n = 0u64;
    while text.len() < 10_000_000 {
        let _ = writeln!(text, "define @f{n}(%a, %b) {{");
        for i in 0..20 {
            let _ = writeln!(text, "  %{} = add i32 %{}, {} ; line {}", i + 1, i, (n * 7 + i) % 1000, n);
        }
        text.push_str("  ret %20\n}\n");
        n += 1;
    }
    text
}

/// The cases: name, check file, extra flags.
fn cases() -> Vec<(&'static str, String, Vec<&'static str>)> {
    let long: String = std::iter::repeat_n("aaaaaaaaaa", 300).collect::<Vec<_>>().join(" ");
    let long_check = format!("CHECK: define @f0\nCHECK: aaaaaaaaa{{{{a}}}} {long} aaaah!\n");
    let mut regex_heavy = String::new();
    for n in (0..12_000).step_by(97) {
        let _ = writeln!(regex_heavy, "CHECK-LABEL: define @f{n}(");
        let _ = writeln!(regex_heavy, "CHECK: %[[#A:]] = add i32 %{{{{[0-9]+}}}}, [[#%u,K:]] ; line [[#%u,L:]]");
        let _ = writeln!(regex_heavy, "CHECK-NEXT: %[[#A+1]] = add i32 %[[#A]], {{{{[0-9]+}}}} ; line [[#L]]");
        let _ = writeln!(regex_heavy, "CHECK-NOT: mul");
        let _ = writeln!(regex_heavy, "CHECK: %[[V:[0-9]+]] = add i32 %{{{{[0-9]+}}}}, [[#]] ; line [[#L]]");
        let _ = writeln!(regex_heavy, "CHECK-NEXT: {{{{%[0-9]+}}}} = add i32 %[[V]], {{{{.*}}}}");
        let _ = writeln!(regex_heavy, "CHECK: ret %{{{{[0-9]+}}}}");
    }
    let not_check = "CHECK: define @f0\nCHECK-NOT: {{mul|sub}} i{{[0-9]+}} %{{[0-9]+}}, {{[0-9]+}}\nCHECK: define @f12000(\n".to_string();
    let dag_check = "CHECK-DAG: ret %20\nCHECK-DAG: %{{[0-9]+}} = add i32 %{{[0-9]+}}, 999 ; line 1199{{[0-9]}}\nCHECK-DAG: define @f12000(\n".to_string();
    vec![
        ("long pattern, no match", long_check, vec![]),
        ("regex-heavy, labels and variables", regex_heavy, vec![]),
        ("CHECK-NOT over the input", not_check, vec![]),
        ("CHECK-DAG over the input", dag_check, vec![]),
    ]
}

fn time_ours(check: &str, input: &str) -> (Duration, bool) {
    let config = Config::default();
    let start = Instant::now();
    let passed = CheckFile::parse(check, "check.txt", &config).and_then(|file| file.run(input, "input.txt")).is_ok();
    (start.elapsed(), passed)
}

fn time_llvm(llvm: &Path, check: &Path, input: &Path) -> (Duration, bool) {
    let start = Instant::now();
    let status = std::process::Command::new(llvm)
        .arg(check)
        .arg("--input-file")
        .arg(input)
        .arg("--dump-input=never")
        .stderr(std::process::Stdio::null())
        .status()
        .expect("LLVM FileCheck runs");
    (start.elapsed(), status.success())
}

fn main() {
    let dir = std::env::temp_dir().join("filecheck-bench");
    std::fs::create_dir_all(&dir).expect("bench dir");
    let input = input();
    let input_path = dir.join("input.txt");
    std::fs::write(&input_path, &input).expect("input written");
    let llvm: Option<PathBuf> =
        ["/usr/lib/llvm-22/bin/FileCheck", "/usr/bin/FileCheck-22"].iter().map(PathBuf::from).find(|p| p.exists());
    println!("input: {} bytes in {}", input.len(), dir.display());
    if llvm.is_none() {
        println!("LLVM's FileCheck is not installed: only our times are printed");
    }
    for (index, (name, check, _flags)) in cases().into_iter().enumerate() {
        let check_path = dir.join(format!("check{index}.txt"));
        std::fs::write(&check_path, &check).expect("check file written");
        let runs = 3;
        let ours = (0..runs).map(|_| time_ours(&check, &input)).min_by_key(|r| r.0).expect("runs");
        let mut line = format!("{name:<36} ours {:>8.3} s (passed: {})", ours.0.as_secs_f64(), ours.1);
        if let Some(llvm) = &llvm {
            let theirs = (0..runs).map(|_| time_llvm(llvm, &check_path, &input_path)).min_by_key(|r| r.0).expect("runs");
            let _ = write!(line, "   LLVM {:>8.3} s (passed: {})", theirs.0.as_secs_f64(), theirs.1);
        }
        println!("{line}");
    }
}
