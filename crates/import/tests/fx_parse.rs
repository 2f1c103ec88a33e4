//! FX graph text: every fixture parses, literals are classified, malformed lines are located.

mod common;

use import::ParseError;
use import::fx::{FxArg, FxOp, parse, parse_file};
use import::pt2::schema::{Layout, MemoryFormat, ScalarType};

#[test]
fn every_fixture_parses() {
    let mut count = 0;
    for group in ["export", "bench"] {
        for file in ["graph.fx.txt", "core.fx.txt"] {
            for path in common::cases(group, file) {
                let graph = parse_file(&path).unwrap_or_else(|e| panic!("{e}"));
                let text = std::fs::read_to_string(&path).unwrap();
                let node_lines = text
                    .lines()
                    .filter(|l| l.trim_start().starts_with('%'))
                    .count();
                assert_eq!(graph.nodes.len(), node_lines, "{}", path.display());
                let FxArg::Tuple(outputs) = &graph.output else {
                    panic!("{}: output {:?}", path.display(), graph.output)
                };
                for out in outputs {
                    let name = out
                        .as_node()
                        .unwrap_or_else(|| panic!("{}: {out:?}", path.display()));
                    assert!(graph.node(name).is_some());
                }
                count += 1;
            }
        }
    }
    if common::fixtures().is_some() {
        assert_eq!(count, 40);
    }
}

#[test]
fn scalar_math_literals() {
    let Some(root) = common::fixtures() else {
        return;
    };
    let graph = parse_file(root.join("export/scalar_math/core.fx.txt")).unwrap();
    let view = graph.node("view").unwrap();
    assert_eq!(view.op, FxOp::CallFunction);
    assert_eq!(view.target, "torch.ops.aten.view.default");
    assert_eq!(view.num_users, Some(1));
    assert_eq!(
        view.args,
        vec![
            FxArg::Node("x".into()),
            FxArg::List(vec![FxArg::Node("mul".into()), FxArg::Int(-1)])
        ]
    );
    let arange = graph.node("arange").unwrap();
    assert_eq!(
        arange.kwargs,
        vec![
            ("dtype".into(), FxArg::Dtype(ScalarType::Float32)),
            ("layout".into(), FxArg::Layout(Layout::Strided)),
            ("device".into(), FxArg::Word("cpu".into())),
            ("pin_memory".into(), FxArg::Bool(false)),
        ]
    );
    let x = graph.node("x").unwrap();
    assert_eq!(
        (x.op, x.target.as_str(), x.num_users),
        (FxOp::Placeholder, "x", Some(2))
    );
    assert_eq!(
        graph.output,
        FxArg::Tuple(vec![
            FxArg::Node("mul_4".into()),
            FxArg::Node("arange".into())
        ])
    );
}

#[test]
fn cond_subgraph_references() {
    let Some(root) = common::fixtures() else {
        return;
    };
    let graph = parse_file(root.join("export/cond/graph.fx.txt")).unwrap();
    let true_graph = graph.node("true_graph_0").unwrap();
    assert_eq!(
        (true_graph.op, true_graph.target.as_str()),
        (FxOp::GetAttr, "true_graph_0")
    );
    let cond = graph.node("cond").unwrap();
    assert_eq!(cond.target, "torch.ops.higher_order.cond");
    assert_eq!(
        cond.args[3],
        FxArg::Tuple(vec![FxArg::Node("x".into()), FxArg::Node("y".into())])
    );
}

#[test]
fn literal_forms() {
    let text = "graph():
    %a : [num_users=1] = placeholder[target=a]
    %b : torch.Tensor [num_users=0] = placeholder[target=b](default=2.5)
    %c : [num_users=1] = call_function[target=torch.ops.aten.clamp.default](args = (%a, -inf, inf), kwargs = {})
    %d : [num_users=1] = call_function[target=foo](args = (nan, 1e-05, 1., -3, 9223372036854775808, None, True), kwargs = {s: 'it\\'s', m: torch.contiguous_format, dv: device(type='cuda', index=1), dv2: device(type='cuda:2'), e: cuda:0})
    %e : [num_users=1] = call_method[target=view](args = (%d, [(1, 2), []], ()), kwargs = {k: slice(None, 2, None), f: floor})
    return {'out': e, 'aux': [c, 3]}
";
    let g = parse(text).unwrap();
    assert_eq!(g.nodes.len(), 5);
    let b = g.node("b").unwrap();
    assert_eq!(b.type_annotation.as_deref(), Some("torch.Tensor"));
    assert_eq!(b.kwargs, vec![("default".into(), FxArg::Float(2.5))]);
    assert_eq!(
        g.node("c").unwrap().args,
        vec![
            FxArg::Node("a".into()),
            FxArg::Float(f64::NEG_INFINITY),
            FxArg::Float(f64::INFINITY)
        ]
    );
    let d = g.node("d").unwrap();
    assert!(matches!(d.args[0], FxArg::Float(f) if f.is_nan()));
    assert_eq!(
        d.args[1..],
        [
            FxArg::Float(1e-5),
            FxArg::Float(1.0),
            FxArg::Int(-3),
            FxArg::BigInt("9223372036854775808".into()),
            FxArg::None,
            FxArg::Bool(true),
        ]
    );
    assert_eq!(
        d.kwargs,
        vec![
            ("s".into(), FxArg::Str("it's".into())),
            (
                "m".into(),
                FxArg::MemoryFormat(MemoryFormat::ContiguousFormat)
            ),
            (
                "dv".into(),
                FxArg::Device {
                    kind: "cuda".into(),
                    index: Some(1)
                }
            ),
            (
                "dv2".into(),
                FxArg::Device {
                    kind: "cuda".into(),
                    index: Some(2)
                }
            ),
            ("e".into(), FxArg::Word("cuda:0".into())),
        ]
    );
    let e = g.node("e").unwrap();
    assert_eq!(e.op, FxOp::CallMethod);
    assert_eq!(
        e.args[1],
        FxArg::List(vec![
            FxArg::Tuple(vec![FxArg::Int(1), FxArg::Int(2)]),
            FxArg::List(vec![])
        ])
    );
    assert_eq!(e.args[2], FxArg::Tuple(vec![]));
    assert_eq!(
        e.kwargs[0].1,
        FxArg::Call {
            func: "slice".into(),
            args: vec![FxArg::None, FxArg::Int(2), FxArg::None],
            kwargs: vec![]
        }
    );
    assert_eq!(
        g.output,
        FxArg::Dict(vec![
            (FxArg::Str("out".into()), FxArg::Node("e".into())),
            (
                FxArg::Str("aux".into()),
                FxArg::List(vec![FxArg::Node("c".into()), FxArg::Int(3)])
            ),
        ])
    );
    assert_eq!(g.output_line, 7);
}

fn error(text: &str) -> ParseError {
    parse(text).expect_err("parse should fail")
}

#[test]
fn malformed_lines_are_located() {
    let header = "graph():\n    %x : [num_users=1] = placeholder[target=x]\n";
    let cases: &[(&str, usize, usize, &str)] = &[
        ("", 1, 1, "graph():"),
        ("graf():\n", 1, 1, "graph():"),
        (
            "graph():\n    %x : [num_users=1] = placeholder[target=x]\n",
            2,
            47,
            "return",
        ),
        (
            "    %y : [num_users=1] = call_function[target=f](args = (%x, %z), kwargs = {})\n",
            3,
            62,
            "`%z` is not defined",
        ),
        (
            "    %y : [num_users=1] = call_function[target=f](args = (%x,, 1), kwargs = {})\n",
            3,
            61,
            "expected a value",
        ),
        (
            "    %y : [num_users=1] = call_function[target=f](args = (%x, 1), kwargs = {a 1})\n",
            3,
            78,
            "expected `:`",
        ),
        (
            "    %y : [num_users=1] = jump[target=f]\n",
            3,
            26,
            "unknown opcode `jump`",
        ),
        (
            "    %y : [num_users=one] = placeholder[target=y]\n",
            3,
            21,
            "user count",
        ),
        (
            "    %x : [num_users=1] = placeholder[target=x]\n",
            3,
            6,
            "defined twice",
        ),
        (
            "    %y : [num_users=1] = call_function[target=f](args = (%x, 'abc), kwargs = {})\n",
            3,
            62,
            "unterminated",
        ),
        (
            "    %y : [num_users=1] = call_function[target=f](args = %x, kwargs = {})\n",
            3,
            57,
            "must be a tuple",
        ),
        (
            "    %y : [num_users=1] = call_function[target=f](args = (%x,), kwargs = {}) extra\n",
            3,
            77,
            "end of the line",
        ),
        (
            "    return (x,)\n    %y : [num_users=1] = placeholder[target=y]\n",
            4,
            5,
            "after the `return`",
        ),
        ("    return (x,\n", 3, 15, "expected a value"),
        ("    jump\n", 3, 5, "expected a node"),
    ];
    for (tail, line, col, needle) in cases {
        let text = if *line == 1 || tail.starts_with("graph") {
            tail.to_string()
        } else {
            format!("{header}{tail}")
        };
        let err = error(&text);
        assert!(err.message.contains(needle), "{tail:?}: {err}");
        assert_eq!((err.line, err.col), (*line, *col), "{tail:?}: {err}");
    }
}
