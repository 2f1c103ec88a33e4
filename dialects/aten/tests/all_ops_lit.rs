//! Generates `lit/dialects/aten/all-ops.ir`: one function per aten op, so every declared op is
//! shown parsing, verifying and printing in both forms. `BLESS=1` rewrites the file.

use ir::schema::{FunctionSchema, SchemaType};
use std::fmt::Write;
use std::path::PathBuf;

fn value_type(t: &SchemaType) -> Option<String> {
    Some(match t {
        SchemaType::Tensor => "tensor<*xf32>".into(),
        SchemaType::Int | SchemaType::SymInt => "i64".into(),
        SchemaType::Float | SchemaType::SymFloat | SchemaType::Scalar => "f64".into(),
        SchemaType::Bool | SchemaType::SymBool => "i1".into(),
        SchemaType::Str => "!prim.str".into(),
        SchemaType::Optional(inner) => match inner.as_ref() {
            SchemaType::Tensor => "tensor<*xf32>".into(),
            other => format!("!prim.optional<{}>", value_type(other)?),
        },
        SchemaType::List { elem, .. } => format!("!prim.list<{}>", value_type(elem)?),
        // Types the IR has no spelling of its own for (dicts, generators, storages, complex
        // numbers, enums, streams) are values of any type, as TorchScript's importer types them.
        _ => "!prim.any".into(),
    })
}

/// A constant attribute for a non-tensor argument.
fn attr_value(t: &SchemaType) -> Option<String> {
    Some(match t {
        SchemaType::Int | SchemaType::SymInt => "1 : i64".into(),
        SchemaType::Float | SchemaType::SymFloat => "1.0 : f64".into(),
        SchemaType::Scalar | SchemaType::Number => "2 : i64".into(),
        SchemaType::Bool | SchemaType::SymBool => "false".into(),
        SchemaType::Str => "\"none\"".into(),
        SchemaType::ScalarType => "#prim.dtype<f32>".into(),
        SchemaType::Device => "#prim.device<\"cpu\">".into(),
        SchemaType::Layout | SchemaType::MemoryFormat => "0 : i64".into(),
        SchemaType::Optional(_) => "#prim.none".into(),
        SchemaType::List { elem, size } => {
            let one = attr_value(elem)?;
            let n = size.unwrap_or(1);
            format!("[{}]", vec![one; n].join(", "))
        }
        _ => return None,
    })
}

fn func_name(op: &str) -> String {
    op.replace('.', "_")
}

fn is_tensorish(t: &SchemaType) -> bool {
    match t {
        SchemaType::Tensor | SchemaType::Var(_) => true,
        SchemaType::Optional(i) => is_tensorish(i),
        SchemaType::List { elem, .. } => is_tensorish(elem),
        _ => false,
    }
}

/// One function exercising `s`, or `None` when an argument type has no IR spelling.
fn function(s: &FunctionSchema) -> Option<String> {
    let op = s.op_name();
    let mut args = Vec::new();
    let mut operands = Vec::new();
    let mut operand_types = Vec::new();
    let mut attrs = Vec::new();
    for (i, a) in s.args.iter().enumerate() {
        if is_tensorish(&a.ty) {
            let t = value_type(&a.ty)?;
            args.push(format!("%a{i}: {t}"));
            operands.push(format!("%a{i}"));
            operand_types.push(t);
        } else if let Some(v) = attr_value(&a.ty) {
            attrs.push(format!("{} = {v}", a.name));
        } else {
            // No constant spelling: passed as a value.
            let t = value_type(&a.ty)?;
            args.push(format!("%a{i}: {t}"));
            operands.push(format!("%a{i}"));
            operand_types.push(t);
        }
    }
    let results: Vec<String> = s
        .returns
        .iter()
        .map(|r| value_type(&r.ty))
        .collect::<Option<_>>()?;
    let mut f = String::new();
    let _ = writeln!(f, "// CHECK-LABEL: func.func @{}", func_name(&op));
    let _ = writeln!(f, "// CHECK-NEXT:    {op}");
    let _ = writeln!(f, "// GENERIC:       \"{op}\"");
    let _ = writeln!(f, "func.func @{}({}) {{", func_name(&op), args.join(", "));
    let res = match results.len() {
        0 => String::new(),
        1 => "%r = ".into(),
        n => format!("%r:{n} = "),
    };
    let attr_dict = if attrs.is_empty() {
        String::new()
    } else {
        format!(" {{{}}}", attrs.join(", "))
    };
    let result_ty = if results.len() == 1 {
        results[0].clone()
    } else {
        format!("({})", results.join(", "))
    };
    let _ = writeln!(
        f,
        "  {res}\"{op}\"({}){attr_dict} : ({}) -> {result_ty}",
        operands.join(", "),
        operand_types.join(", ")
    );
    let _ = writeln!(f, "  func.return\n}}\n");
    Some(f)
}

fn generate() -> (String, Vec<String>) {
    let mut out = String::new();
    out.push_str(
        "// Every op of the aten dialect, generated from its schema by dialects/aten/tests/all_ops_lit.rs\n\
         // (BLESS=1 rewrites it): each parses, verifies, and prints back in both forms; the generic form is\n\
         // legal MLIR where mlir-opt is installed.\n\
         // RUN: dialect-opt %s | filecheck %s\n\
         // RUN: dialect-opt %s | dialect-opt | filecheck %s\n\
         // RUN: dialect-opt --print-op-generic %s | filecheck %s --check-prefix=GENERIC\n\
         // RUN: dialect-opt --print-op-generic %s | dialect-opt | filecheck %s\n\
         // RUN: dialect-opt %s > %t.1 && dialect-opt %t.1 > %t.2 && diff %t.1 %t.2\n\
         // RUN: dialect-opt --print-op-generic %s > %t.g1 && dialect-opt --print-op-generic %t.g1 > %t.g2 && diff %t.g1 %t.g2\n\n",
    );
    let mut skipped = Vec::new();
    for s in dialect_aten::schemas() {
        match function(s) {
            Some(f) => out.push_str(&f),
            None => skipped.push(s.op_name()),
        }
    }
    (out, skipped)
}

fn lit_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../lit/dialects/aten/all-ops.ir")
}

#[test]
fn generated_functions_verify() {
    let (text, skipped) = generate();
    assert!(
        skipped.is_empty(),
        "ops with argument types that have no IR spelling: {skipped:?}"
    );
    let mut ctx = ir::Context::new();
    dialect_prim::register(&mut ctx);
    dialect_aten::register(&mut ctx);
    let m = ir::parse_module(&ctx, &text, "all-ops.ir")
        .unwrap_or_else(|d| panic!("{}", d.render("all-ops.ir", &text)));
    ir::verify(&ctx, &m).unwrap_or_else(|d| panic!("{}", d.render("all-ops.ir", &text)));
    assert_eq!(
        m.functions().len() + skipped.len(),
        dialect_aten::schemas().len()
    );
}

#[test]
fn lit_file_is_up_to_date() {
    let (text, _) = generate();
    let path = lit_path();
    if std::env::var("BLESS").is_ok_and(|v| v == "1") {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        current == text,
        "{} is stale: run `BLESS=1 cargo test -p dialect-aten --test all_ops_lit`",
        path.display()
    );
}
