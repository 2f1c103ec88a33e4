//! Corrupt and unsupported inputs fail with an error naming the problem, never a panic.

use std::path::Path;

use import::ImportError;
use import::pt2::schema::ExportedProgram;
use ir::Context;

fn ctx() -> Context {
    let mut c = Context::new();
    dialect_prim::register(&mut c);
    dialect_aten::register(&mut c);
    c
}

const META: &str = r#"{"dtype": 7, "sizes": [{"as_int": 2}], "requires_grad": false, "device": {"type": "cpu"}, "strides": [{"as_int": 1}], "storage_offset": {"as_int": 0}, "layout": 7}"#;

/// A one-input program whose nodes are `nodes` (JSON) and whose output is `y`.
fn program(nodes: &str) -> ExportedProgram {
    let text = format!(
        r#"{{"graph_module": {{"graph": {{"inputs": [{{"as_tensor": {{"name": "x"}}}}], "outputs": [{{"as_tensor": {{"name": "y"}}}}],
  "nodes": [{nodes}], "tensor_values": {{"x": {META}, "y": {META}}}}},
  "signature": {{"input_specs": [{{"user_input": {{"arg": {{"as_tensor": {{"name": "x"}}}}}}}}],
                 "output_specs": [{{"user_output": {{"arg": {{"as_tensor": {{"name": "y"}}}}}}}}]}}}},
 "range_constraints": {{"s0": {{"min_val": 2, "max_val": null}}}},
 "schema_version": {{"major": 8, "minor": 20}}}}"#
    );
    serde_json::from_str(&text).unwrap()
}

fn node(target: &str, input: &str, output: &str) -> String {
    format!(
        r#"{{"target": "{target}", "inputs": [{{"name": "self", "arg": {{"as_tensor": {{"name": "{input}"}}}}, "kind": 1}}],
            "outputs": [{{"as_tensor": {{"name": "{output}"}}}}], "metadata": {{"stack_trace": "File \"m.py\", line 7, in forward\n    y = x.relu()"}}, "name": "{output}"}}"#
    )
}

fn convert(nodes: &str) -> Result<ir::Module, ImportError> {
    import::convert::pt2::convert_program(&ctx(), &program(nodes), Path::new("t.pt2"))
}

#[test]
fn a_valid_program_converts() {
    let c = ctx();
    let m = convert(&node("torch.ops.aten.relu.default", "x", "y")).unwrap();
    let text = ir::print_module(
        &c,
        &m,
        ir::PrintOptions {
            generic: false,
            debug_info: true,
        },
    );
    assert!(
        text.contains("%y = aten.relu %x : tensor<2xf32> loc(\"y\"(\"m.py\":7:0))"),
        "{text}"
    );
    // An unbounded maximum is left out of the range.
    assert!(
        text.contains("prim.range_constraints = {s0 = [2 : i64]}"),
        "{text}"
    );
}

#[test]
fn unknown_targets_are_named() {
    match convert(&node("torch.ops.aten.bogus.default", "x", "y")) {
        Err(ImportError::UnknownTarget { node, target, .. }) => {
            assert_eq!(
                (node.as_str(), target.as_str()),
                ("y", "torch.ops.aten.bogus.default")
            );
        }
        other => panic!("{other:?}"),
    }
    let e = convert(&node("torch.ops.mylib.custom.default", "x", "y")).unwrap_err();
    assert!(
        e.to_string()
            .contains("unknown operator target `torch.ops.mylib.custom.default`"),
        "{e}"
    );
}

#[test]
fn undefined_and_duplicate_values() {
    match convert(&node("torch.ops.aten.relu.default", "z", "y")) {
        Err(ImportError::UndefinedValue { name, .. }) => assert_eq!(name, "z"),
        other => panic!("{other:?}"),
    }
    let two = format!(
        "{}, {}",
        node("torch.ops.aten.relu.default", "x", "y"),
        node("torch.ops.aten.relu.default", "x", "y")
    );
    match convert(&two) {
        Err(ImportError::DuplicateValue { name, .. }) => assert_eq!(name, "y"),
        other => panic!("{other:?}"),
    }
    // The output refers to a value no node defines.
    match convert(&node("torch.ops.aten.relu.default", "x", "w")) {
        Err(ImportError::UndefinedValue { name, .. }) => assert_eq!(name, "y"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn arguments_that_contradict_the_schema() {
    // `relu` has no argument `alpha`.
    let n = r#"{"target": "torch.ops.aten.relu.default", "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "x"}}, "kind": 1},
        {"name": "alpha", "arg": {"as_int": 1}, "kind": 2}], "outputs": [{"as_tensor": {"name": "y"}}], "metadata": {}}"#;
    let e = convert(n).unwrap_err();
    assert!(e.to_string().contains("has no argument `alpha`"), "{e}");
    // A required argument is missing.
    let n = r#"{"target": "torch.ops.aten.add.Tensor", "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "x"}}, "kind": 1}],
        "outputs": [{"as_tensor": {"name": "y"}}], "metadata": {}}"#;
    let e = convert(n).unwrap_err();
    assert!(e.to_string().contains("argument `other` is missing"), "{e}");
}

#[test]
fn fx_text_errors_have_line_numbers() {
    let c = ctx();
    let dir = std::env::temp_dir().join(format!("import-convert-errors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.fx.txt");
    std::fs::write(&path, "graph():\n    %x : [num_users=1] = placeholder[target=x]\n    %y : [num_users=1] = call_function[target=torch.ops.aten.nope.default](args = (%x,), kwargs = {})\n    return (y,)\n").unwrap();
    match import::import_file(&c, &path, None) {
        Err(ImportError::UnknownTarget { node, target, .. }) => assert_eq!(
            (node.as_str(), target.as_str()),
            ("y", "torch.ops.aten.nope.default")
        ),
        other => panic!("{other:?}"),
    }
    std::fs::write(&path, "graph():\n    %x : [num_users=1] = placeholder[target=x]\n    %y : [num_users=1] = call_function[target=torch.ops.aten.sum.dim_IntList](args = (%x, [1]), kwargs = {keepdim: banana})\n    return (y,)\n").unwrap();
    let e = import::import_file(&c, &path, None).unwrap_err();
    assert!(
        e.to_string()
            .contains("bad.fx.txt:3:1: `banana` is not a value of type bool"),
        "{e}"
    );
    let ts = dir.join("bad.graph.txt");
    std::fs::write(
        &ts,
        // Three tensors: no overload of relu takes them (`relu.out` takes two, the second its `out`).
        "graph(%x.1 : Tensor):\n  %y : Tensor = aten::relu(%x.1, %x.1, %x.1)\n  return (%y)\n",
    )
    .unwrap();
    let e = import::import_file(&c, &ts, None).unwrap_err();
    assert!(
        e.to_string()
            .contains("bad.graph.txt:2:1: no overload of `aten::relu` takes"),
        "{e}"
    );
    std::fs::write(
        &ts,
        "graph(%x.1 : Tensor):\n  %y : Tensor = aten::frobnicate(%x.1)\n  return (%y)\n",
    )
    .unwrap();
    assert!(matches!(
        import::import_file(&c, &ts, None),
        Err(ImportError::UnknownTarget { .. })
    ));
    std::fs::write(
        &ts,
        "graph(%x.1 : Tensor):\n  %y : Tensor = aten::relu(%z)\n  return (%y)\n",
    )
    .unwrap();
    assert!(import::import_file(&c, &ts, None).is_err());
    let ir = dir.join("bad.ir");
    std::fs::write(
        &ir,
        "module {\n  func.func @f() {\n    %0 = aten.relu : tensor<2xf32>\n  }\n}\n",
    )
    .unwrap();
    assert!(import::import_file(&c, &ir, None).is_err());
    assert!(matches!(
        import::import_file(&c, &dir.join("x.unknown"), None),
        Err(ImportError::UnknownFormat { .. })
    ));
    assert_eq!(
        import::Format::from_name("torchscript"),
        Some(import::Format::TorchScript)
    );
    assert_eq!(import::Format::from_name("nope"), None);
}

#[test]
fn a_context_without_the_dialects_is_refused() {
    let e = import::convert::pt2::convert_program(
        &Context::new(),
        &program(&node("torch.ops.aten.relu.default", "x", "y")),
        Path::new("t.pt2"),
    )
    .unwrap_err();
    assert!(e.to_string().contains("does not register"), "{e}");
}

#[test]
fn nested_conds_nest_regions() {
    let Some(root) = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(|d| Path::new(&d).join("../../../shared/fixtures/export/cond/model.pt2"))
    else {
        return;
    };
    if !root.is_file() {
        eprintln!("skipping: {} is absent", root.display());
        return;
    }
    use import::pt2::schema::{Argument, TensorArgument};
    let archive = import::pt2::Pt2Archive::open(&root).unwrap();
    let mut p = archive.program().clone();
    let outer = p.graph_module.graph.nodes.clone();
    // The true branch becomes `sum; gt; cond(...)` returning the inner cond's output as `relu`.
    let mut inner_cond = outer[2].clone();
    inner_cond.outputs = vec![Argument::AsTensor(TensorArgument {
        name: "relu".into(),
    })];
    if let Argument::AsGraph(g) = &mut p.graph_module.graph.nodes[2].inputs[1].arg {
        let mut tv = g.graph.tensor_values.clone();
        for (k, v) in &p.graph_module.graph.tensor_values {
            tv.entry(k.clone()).or_insert_with(|| v.clone());
        }
        g.graph.tensor_values = tv;
        g.graph.nodes = vec![outer[0].clone(), outer[1].clone(), inner_cond];
    } else {
        panic!("cond fixture changed");
    }
    let c = ctx();
    let m = import::convert::pt2::convert_program(&c, &p, Path::new("nested.pt2")).unwrap();
    let text = ir::print_module(&c, &m, ir::PrintOptions::default());
    assert_eq!(text.matches("prim.If").count(), 2, "{text}");
    assert!(text.contains("      %relu = prim.If"), "{text}");
}
