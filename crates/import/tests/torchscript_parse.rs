//! TorchScript IR text: the fixture graphs parse, types and attributes are read, errors located.

mod common;

use import::ParseError;
use import::torchscript::{TsAttr, TsLoc, TsTensorType, TsType, parse, parse_file};

fn graph_files() -> Vec<std::path::PathBuf> {
    let Some(root) = common::fixtures() else {
        return Vec::new();
    };
    let mut files: Vec<_> = std::fs::read_dir(root.join("torchscript"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".graph.txt"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_fixture_parses() {
    let files = graph_files();
    for path in &files {
        let graph = parse_file(path).unwrap_or_else(|e| panic!("{e}"));
        assert!(!graph.inputs.is_empty());
        assert!(!graph.body.returns.is_empty());
    }
    if common::fixtures().is_some() {
        assert_eq!(files.len(), 6);
    }
}

#[test]
fn while_count_structure() {
    let Some(root) = common::fixtures() else {
        return;
    };
    let g = parse_file(root.join("torchscript/while_count.graph.txt")).unwrap();
    assert_eq!(
        g.inputs,
        vec![
            ("x.1".into(), TsType::Tensor(None)),
            ("n.1".into(), TsType::Named("int".into()))
        ]
    );
    let consts: Vec<&TsAttr> = g
        .body
        .nodes
        .iter()
        .filter(|n| n.kind == "prim::Constant")
        .map(|n| &n.attrs[0].1)
        .collect();
    assert_eq!(
        consts,
        [
            &TsAttr::Int(0),
            &TsAttr::Int(9223372036854775807),
            &TsAttr::Float(0.5),
            &TsAttr::Float(1.0),
            &TsAttr::Int(1)
        ]
    );
    let lp = g
        .body
        .nodes
        .iter()
        .find(|n| n.kind == "prim::Loop")
        .unwrap();
    assert_eq!(lp.outputs.len(), 2);
    assert_eq!(lp.inputs, ["3", "33", "x.1", "i.1"]);
    assert_eq!(
        lp.loc,
        Some(TsLoc {
            file: "ts_graphs.py".into(),
            line: 38,
            col: 4
        })
    );
    assert_eq!(lp.blocks.len(), 1);
    let body = &lp.blocks[0];
    assert_eq!(body.params.len(), 3);
    assert_eq!(body.nodes.len(), 4);
    assert_eq!(body.returns, ["6", "x.5", "i.7"]);
    assert_eq!(g.body.returns, ["x"]);
}

#[test]
fn if_blocks_and_tuples() {
    let Some(root) = common::fixtures() else {
        return;
    };
    let g = parse_file(root.join("torchscript/add_if.graph.txt")).unwrap();
    let node = g.body.nodes.iter().find(|n| n.kind == "prim::If").unwrap();
    assert_eq!(node.blocks.len(), 2);
    assert!(
        node.blocks
            .iter()
            .all(|b| b.params.is_empty() && b.returns.len() == 1)
    );
    let g = parse_file(root.join("torchscript/lstm_cell.graph.txt")).unwrap();
    let unpack = g
        .body
        .nodes
        .iter()
        .find(|n| n.kind == "prim::ListUnpack")
        .unwrap();
    assert_eq!(unpack.outputs.len(), 4);
    assert_eq!(unpack.loc, None);
    let tuple = g.body.nodes.last().unwrap();
    assert_eq!(
        tuple.outputs[0].1,
        TsType::Tuple(vec![TsType::Tensor(None), TsType::Tensor(None)])
    );
    let chunk = g
        .body
        .nodes
        .iter()
        .find(|n| n.kind == "aten::chunk")
        .unwrap();
    assert_eq!(
        chunk.outputs[0].1,
        TsType::List(Box::new(TsType::Tensor(None)))
    );
}

#[test]
fn types_and_attributes() {
    let text = r#"graph(%self : __torch__.M,
      %x : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu),
      %y : Long(*, 4, device=cuda:0),
      %o : Tensor?, %l : int[], %d : Dict(str, Tensor), %t : (Tensor, (int, float)[])):
  %a : str = prim::Constant[value="a \"b\""]()
  %b : Tensor = prim::Constant[value={1}]()
  %c : Tensor = prim::Constant[value=<Tensor>]()
  %n : NoneType = prim::Constant()
  %f : float = prim::Constant[value=-inf]()
  %g : float = prim::Constant[value=1e-05]()
  %dv : Device = prim::Constant[value="cpu"]()
  %li : int[] = prim::Constant[value=[1, 2]]()
   = prim::RaiseException(%a) # <string>:3:1
  return ()
"#;
    let g = parse(text).unwrap();
    let types: Vec<&TsType> = g.inputs.iter().map(|(_, t)| t).collect();
    assert_eq!(types[0], &TsType::Named("__torch__.M".into()));
    assert_eq!(
        types[1],
        &TsType::Tensor(Some(TsTensorType {
            dtype: Some("Float".into()),
            sizes: vec![Some(2), Some(3)],
            strides: Some(vec![Some(3), Some(1)]),
            requires_grad: Some(false),
            device: Some("cpu".into()),
        }))
    );
    assert_eq!(
        types[2],
        &TsType::Tensor(Some(TsTensorType {
            dtype: Some("Long".into()),
            sizes: vec![None, Some(4)],
            device: Some("cuda:0".into()),
            ..Default::default()
        }))
    );
    assert_eq!(types[3], &TsType::Optional(Box::new(TsType::Tensor(None))));
    assert_eq!(
        types[4],
        &TsType::List(Box::new(TsType::Named("int".into())))
    );
    assert_eq!(
        types[5],
        &TsType::Generic {
            name: "Dict".into(),
            args: vec![TsType::Named("str".into()), TsType::Tensor(None)]
        }
    );
    assert_eq!(
        types[6],
        &TsType::Tuple(vec![
            TsType::Tensor(None),
            TsType::List(Box::new(TsType::Tuple(vec![
                TsType::Named("int".into()),
                TsType::Named("float".into())
            ])))
        ])
    );
    let attrs: Vec<Option<&TsAttr>> = g
        .body
        .nodes
        .iter()
        .map(|n| n.attrs.first().map(|a| &a.1))
        .collect();
    assert_eq!(
        attrs,
        [
            Some(&TsAttr::Str("a \"b\"".into())),
            Some(&TsAttr::Tensor("{1}".into())),
            Some(&TsAttr::Tensor("<Tensor>".into())),
            None,
            Some(&TsAttr::Float(f64::NEG_INFINITY)),
            Some(&TsAttr::Float(1e-5)),
            Some(&TsAttr::Str("cpu".into())),
            Some(&TsAttr::List(vec![TsAttr::Int(1), TsAttr::Int(2)])),
            None,
        ]
    );
    let raise = g.body.nodes.last().unwrap();
    assert!(raise.outputs.is_empty());
    assert_eq!(
        raise.loc,
        Some(TsLoc {
            file: "<string>".into(),
            line: 3,
            col: 1
        })
    );
    assert_eq!(raise.line, 13);
    assert!(g.body.returns.is_empty());
}

fn error(text: &str) -> ParseError {
    parse(text).expect_err("parse should fail")
}

#[test]
fn malformed_inputs_are_located() {
    let cases: &[(&str, usize, usize, &str)] = &[
        ("", 1, 1, "expected `graph(`"),
        ("graph(%x : Tensor:\n  return (%x)\n", 1, 18, "expected `)`"),
        (
            "graph(%x : Tensor):\n  %y : Tensor = aten::relu(%z)\n  return (%y)\n",
            2,
            28,
            "undefined value `%z`",
        ),
        (
            "graph(%x : Tensor):\n  %x : Tensor = aten::relu(%x)\n  return (%x)\n",
            2,
            3,
            "defined twice",
        ),
        (
            "graph(%x : Tensor):\n  %y : Tensor = relu(%x)\n  return (%y)\n",
            2,
            17,
            "node kind",
        ),
        (
            "graph(%x : Tensor):\n  %y : Tensor = aten::relu(%x) junk\n  return (%y)\n",
            2,
            32,
            "end of line",
        ),
        (
            "graph(%x : Tensor):\n  %y : = aten::relu(%x)\n  return (%y)\n",
            2,
            8,
            "a type",
        ),
        (
            "graph(%x : Tensor):\n  %y : Tensor = aten::relu(%x)\n",
            3,
            1,
            "no `return`",
        ),
        (
            "graph(%x : Tensor):\n  %y : Tensor = prim::If(%x)\n    block0():\n      %z : Tensor = aten::relu(%x)\n  return (%y)\n",
            5,
            3,
            "expected a node kind",
        ),
        (
            "graph(%x : Tensor):\n  %y : Tensor = prim::If(%x)\n    block0():\n      %z : Tensor = aten::relu(%x)\n      -> (%z)\n  return (%z)\n",
            6,
            11,
            "undefined value `%z`",
        ),
        (
            "graph(%x : Tensor):\n  %c : str = prim::Constant[value=\"abc]()\n  return (%x)\n",
            2,
            35,
            "unterminated",
        ),
        (
            "graph(%x : Float(2, strides=[1], foo=1)):\n  return (%x)\n",
            1,
            34,
            "unknown tensor type attribute `foo`",
        ),
        (
            "graph(%x : Tensor):\n  return (%x)\n  %y : int = prim::Constant[value=1]()\n",
            3,
            3,
            "end of input after `return`",
        ),
        (
            "graph(%x : Tensor):\n  %y : Tensor = aten::relu(%x) $\n  return (%y)\n",
            2,
            32,
            "unexpected character `$`",
        ),
    ];
    for (text, line, col, needle) in cases {
        let err = error(text);
        assert!(err.message.contains(needle), "{text:?}: {err}");
        assert_eq!((err.line, err.col), (*line, *col), "{text:?}: {err}");
    }
}
