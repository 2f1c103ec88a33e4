//! Generates `op.rs`: one `OpRef` constant per op of `src/schemas.txt` (`aten.add.Tensor` →
//! `ADD_TENSOR`, `aten.sigmoid_` → `SIGMOID_`), so an op's name is written only in its schema
//! line. TorchScript's builtins whose names start with a capital letter (`aten::Size`,
//! `aten::Int.Tensor`) get the prefix `TS_` (`TS_SIZE`, `TS_INT_TENSOR`), which keeps them apart
//! from the ops they would otherwise share a constant with (`aten::size`). Two op names that
//! still map to one constant fail the build.

use std::collections::BTreeMap;
use std::fmt::Write as _;

fn main() {
    println!("cargo::rerun-if-changed=src/schemas.txt");
    let text = std::fs::read_to_string("src/schemas.txt").expect("src/schemas.txt is readable");
    let mut consts: BTreeMap<String, String> = BTreeMap::new();
    for raw in text.lines() {
        let line = raw.trim();
        let line = line
            .strip_prefix("core ")
            .map(str::trim_start)
            .unwrap_or(line);
        let Some(rest) = line.strip_prefix("aten::") else {
            continue;
        };
        let Some(qualified) = rest.split('(').next() else {
            continue;
        };
        let op = format!("aten.{qualified}");
        let mut ident = qualified.replace('.', "_").to_ascii_uppercase();
        if qualified.starts_with(|c: char| c.is_ascii_uppercase()) {
            ident.insert_str(0, "TS_");
        }
        match consts.get(&ident) {
            Some(other) if *other != op => {
                panic!("ops '{other}' and '{op}' would both be named `{ident}`")
            }
            _ => {
                consts.insert(ident, op);
            }
        }
    }
    assert!(!consts.contains_key("EVERY_OP"), "an op would be named `EVERY_OP`, the name of the list of all ops");
    let mut out = String::new();
    for (ident, op) in &consts {
        writeln!(
            out,
            "/// `{op}`.\npub const {ident}: ir::OpRef = ir::OpRef::new(\"{op}\");"
        )
        .unwrap();
    }
    let mut names: Vec<(&String, &String)> = consts.iter().map(|(i, o)| (o, i)).collect();
    names.sort();
    out.push_str("\n/// Every op of the data file, sorted by name (see [`by_name`]).\npub const EVERY_OP: &[ir::OpRef] = &[\n");
    for (_, ident) in &names {
        writeln!(out, "    {ident},").unwrap();
    }
    out.push_str("];\n");
    let dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(format!("{dir}/op.rs"), out).expect("OUT_DIR is writable");
}
