//! Decompositions: the built-in table on every matmul rank case, and a user's own entry.

use transforms::lowering::{Arg, DecompositionTable, decompose_ops, propagate_shapes};

fn run(src: &str, table: &DecompositionTable) -> String {
    let ctx = transforms::context();
    let mut m = ir::parse_module(&ctx, src, "test.ir").expect("parses");
    let top = m.top();
    propagate_shapes(&ctx, &mut m, top, true).expect("propagates");
    decompose_ops(&ctx, &mut m, top, table).expect("decomposes");
    ir::verify(&ctx, &m).expect("verifies");
    ir::print_module(&ctx, &m, ir::PrintOptions::default())
}

#[test]
fn matmul_rank_cases() {
    for (a, b, r) in [
        ("4", "4", ""),
        ("3x4", "4", "3"),
        ("4", "4x5", "5"),
        ("3x4", "4x5", "3x5"),
        ("2x3x4", "4x5", "2x3x5"),
        ("2x3x4", "4", "2x3"),
        ("2x3x4", "2x4x5", "2x3x5"),
        ("4", "2x4x5", "2x5"),
    ] {
        let rt = if r.is_empty() { "tensor<f32>".to_string() } else { format!("tensor<{r}xf32>") };
        let src = format!(
            "func.func @f(%a: tensor<{a}xf32>, %b: tensor<{b}xf32>) -> {rt} {{\n  %0 = aten.matmul %a, %b : (tensor<{a}xf32>, tensor<{b}xf32>) -> {rt}\n  func.return %0 : {rt}\n}}"
        );
        let out = run(&src, &DecompositionTable::core_aten());
        assert!(!out.contains("aten.matmul"), "{a} x {b}:\n{out}");
        assert!(out.contains(&format!("func.return %")) && out.contains(&rt), "{a} x {b}:\n{out}");
    }
}

#[test]
fn user_decomposition() {
    let mut t = DecompositionTable::new();
    t.insert("aten.relu", |b, op| {
        let x = b.with_args(op, |a| a.value("self"))?.ok_or("no input")?;
        let y = b.call("clamp", &[Arg::V(x), Arg::A(ir::Attribute::Int(0))])?;
        Ok(Some(vec![y]))
    });
    let out = run("func.func @f(%x: tensor<3xf32>) -> tensor<3xf32> {\n  %0 = aten.relu %x : tensor<3xf32>\n  func.return %0 : tensor<3xf32>\n}", &t);
    assert!(out.contains("aten.clamp %x {min = 0 : i64} : tensor<3xf32>"), "{out}");
    assert!(!out.contains("aten.relu"), "{out}");
}

#[test]
fn training_dropout_is_left() {
    let out = run(
        "func.func @f(%x: tensor<3xf32>) -> tensor<3xf32> {\n  %0 = aten.dropout %x {p = 0.5, train = true} : tensor<3xf32>\n  func.return %0 : tensor<3xf32>\n}",
        &DecompositionTable::core_aten(),
    );
    assert!(out.contains("aten.dropout"), "{out}");
}
