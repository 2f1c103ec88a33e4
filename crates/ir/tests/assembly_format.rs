//! Assembly formats: malformed formats are errors with columns, and random ops of every format
//! print, parse and print again to the same text and the same structure.

use ir::builtin::create_function;
use ir::format::{CustomDirective, OpParser, OpPrinter, ParsedOp};
use ir::{
    Attribute, AssemblyFormat, Context, Diagnostic, InsertPoint, Module, OpDef, OpId, OperationState, PrintOptions,
    Syntax, Type, parse_module, parse_type, print_module,
};
use proptest::prelude::*;
use std::fmt::Write;
use std::sync::Arc;

/// `[%a, %b] : A, B`: a user directive for an op of exactly two operands.
struct Pair;

impl CustomDirective for Pair {
    fn expressible(&self, _: &Context, m: &Module, op: OpId) -> bool {
        m.operands(op).len() == 2 && m.results(op).is_empty() && m.regions(op).is_empty()
    }

    fn print(&self, p: &mut OpPrinter<'_, '_>, op: OpId) {
        let operands = p.module().operands(op).to_vec();
        let types: Vec<Type> = operands.iter().map(|&v| p.module().value_type(v).clone()).collect();
        p.write("[");
        p.print_operand(operands[0]);
        p.write(", ");
        p.print_operand(operands[1]);
        p.write("] : ");
        p.print_type(&types[0]);
        p.write(", ");
        p.print_type(&types[1]);
    }

    fn parse(&self, p: &mut OpParser<'_, '_>, st: &mut ParsedOp) -> Result<(), Diagnostic> {
        p.expect("[")?;
        p.parse_operand(st)?;
        p.expect(",")?;
        p.parse_operand(st)?;
        p.expect("]")?;
        p.expect(":")?;
        let a = p.parse_type()?;
        p.expect(",")?;
        let b = p.parse_type()?;
        st.set_operand_type(0, a);
        st.set_operand_type(1, b);
        Ok(())
    }
}

/// The ops under test, with their formats: the named syntaxes and a few user formats.
const OPS: [(&str, &str); 8] = [
    ("fmt.default", "Default"),
    ("fmt.constant", "Constant"),
    ("fmt.if", "IfElse"),
    ("fmt.ret", "Return"),
    ("fmt.arrow", "operands attr-dict `:` functional-type(operands, results)"),
    (
        "fmt.opt",
        "$name (`to` $target^ `,` $b)? (`with` operands^ `:` type(operands))? (`->` type(results))? regions attr-dict",
    ),
    ("fmt.pair", "custom<Pair> attr-dict"),
    ("fmt.bare", "operand(0, i1) `,` operand(1, i64) attr-dict `:` type(results) region(0)"),
];

fn ctx() -> Context {
    let mut c = Context::new();
    c.register_dialect("fmt", "Ops of every assembly format.");
    c.register_custom_directive("Pair", Arc::new(Pair));
    for (name, format) in OPS {
        let def = OpDef::new(name);
        let def = match format {
            "Default" => def.syntax(Syntax::Default),
            "Constant" => def.syntax(Syntax::Constant),
            "IfElse" => def.syntax(Syntax::IfElse),
            "Return" => def.syntax(Syntax::Return),
            f => def.assembly_format(f),
        };
        c.register_op(def).unwrap();
    }
    c
}

/// The types operands and results are drawn from; the function has one argument of each.
const TYPES: [&str; 5] = ["i64", "f64", "i1", "tensor<2x3xf32>", "tensor<?xi64>"];

#[derive(Clone, Debug)]
enum Val {
    Int(i64),
    Float(u64),
    Bool(bool),
    Str(String),
}

impl Val {
    fn attr(&self) -> Attribute {
        match self {
            Val::Int(i) => Attribute::Int(*i),
            Val::Float(b) => Attribute::float(f64::from_bits(*b)),
            Val::Bool(b) => Attribute::Bool(*b),
            Val::Str(s) => Attribute::str(s),
        }
    }

    /// The result type a constant of this value has.
    fn type_index(&self) -> usize {
        match self {
            Val::Int(_) => 0,
            Val::Float(_) => 1,
            Val::Bool(_) | Val::Str(_) => 2,
        }
    }
}

#[derive(Clone, Debug)]
struct OpSpec {
    kind: usize,
    /// Whether to shape the op to fit its format (else it is random and may print generically).
    conform: bool,
    operands: Vec<usize>,
    results: Vec<usize>,
    attrs: Vec<(usize, Val)>,
    /// Per region: entry block argument types and inner ops' operands.
    regions: Vec<(Vec<usize>, Vec<Vec<usize>>)>,
}

const ATTR_NAMES: [&str; 5] = ["a", "b", "name", "target", "value"];

fn any_val() -> impl Strategy<Value = Val> {
    prop_oneof![
        any::<i64>().prop_map(Val::Int),
        any::<u64>().prop_map(Val::Float),
        any::<bool>().prop_map(Val::Bool),
        "[a-z ]{0,6}".prop_map(Val::Str),
    ]
}

fn any_region() -> impl Strategy<Value = (Vec<usize>, Vec<Vec<usize>>)> {
    (prop::collection::vec(0..TYPES.len(), 0..2), prop::collection::vec(prop::collection::vec(0..TYPES.len(), 0..3), 0..3))
}

fn any_op() -> impl Strategy<Value = OpSpec> {
    (
        0..OPS.len(),
        prop::bool::weighted(0.85),
        prop::collection::vec(0..TYPES.len(), 0..4),
        prop::collection::vec(0..TYPES.len(), 0..3),
        prop::collection::vec((0..ATTR_NAMES.len(), any_val()), 0..4),
        prop::collection::vec(any_region(), 0..3),
    )
        .prop_map(|(kind, conform, operands, results, mut attrs, regions)| {
            let mut seen = Vec::new();
            attrs.retain(|a| !seen.contains(&a.0) && {
                seen.push(a.0);
                true
            });
            let mut s = OpSpec { kind, conform, operands, results, attrs, regions };
            if conform {
                shape(&mut s);
            }
            s
        })
}

/// Makes a random op fit its format's counts and types.
fn shape(s: &mut OpSpec) {
    let simple = |r: &mut (Vec<usize>, Vec<Vec<usize>>)| r.0.clear();
    match OPS[s.kind].0 {
        "fmt.constant" => {
            s.operands.clear();
            s.regions.clear();
            let v = s.attrs.first().map_or(Val::Int(7), |a| a.1.clone());
            let v = if let Val::Str(_) = v { Val::Bool(true) } else { v };
            s.results = vec![v.type_index()];
            s.attrs.retain(|a| ATTR_NAMES[a.0] != "value");
            s.attrs.push((4, v));
        }
        "fmt.if" => {
            s.operands = vec![2];
            s.regions.resize_with(2, Default::default);
            s.regions.iter_mut().for_each(simple);
        }
        "fmt.ret" | "fmt.pair" => {
            s.results.clear();
            s.regions.clear();
            if OPS[s.kind].0 == "fmt.pair" {
                s.operands.resize(2, 0);
            }
        }
        "fmt.arrow" => s.regions.clear(),
        "fmt.opt" => {
            // `name` is always printed; `target` and `b` only together.
            for (k, v) in [(2, Val::Int(3)), (3, Val::Str("t".into())), (1, Val::Bool(false))] {
                let has = |s: &OpSpec, k: usize| s.attrs.iter().any(|a| a.0 == k);
                if !has(s, k) && (k == 2 || has(s, 1) || has(s, 3)) {
                    s.attrs.push((k, v));
                }
            }
        }
        "fmt.bare" => {
            s.operands = vec![2, 0];
            s.results.resize(s.results.len().max(1), 3);
            s.regions.resize_with(1, Default::default);
            s.regions.iter_mut().for_each(simple);
        }
        _ => {}
    }
}

/// A module with one function whose arguments have every type of [`TYPES`], holding the ops.
fn build(c: &Context, specs: &[OpSpec]) -> Module {
    let mut m = Module::new();
    let types: Vec<Type> = TYPES.iter().map(|t| parse_type(c, t).unwrap()).collect();
    let (_, entry) = create_function(&mut m, "f", &types, &[]);
    let args = m.block_args(entry).to_vec();
    for s in specs {
        let mut st = OperationState::new(OPS[s.kind].0)
            .operands(s.operands.iter().map(|&i| args[i]))
            .results(s.results.iter().map(|&i| types[i].clone()));
        for (k, v) in &s.attrs {
            st = st.attr(ATTR_NAMES[*k], v.attr());
        }
        let op = m.create_op(st);
        for (block_args, inner) in &s.regions {
            let r = m.add_region(op);
            let arg_types: Vec<Type> = block_args.iter().map(|&i| types[i].clone()).collect();
            let b = m.append_block(r, &arg_types);
            for operands in inner {
                let st = OperationState::new("fmt.default")
                    .operands(operands.iter().map(|&i| args[i]))
                    .results([types[0].clone()]);
                let o = m.create_op(st);
                m.insert_op(o, InsertPoint::End(b)).unwrap();
            }
        }
        m.insert_op(op, InsertPoint::End(entry)).unwrap();
    }
    m
}

/// The structure of everything under `op`: names, operands (by definition order), result and
/// argument types, attributes (as a set) and regions.
fn structure(m: &Module, op: OpId, ids: &mut std::collections::HashMap<ir::ValueId, usize>, out: &mut String) {
    let operands: Vec<String> = m.operands(op).iter().map(|v| ids.get(v).map_or("?".into(), |i| i.to_string())).collect();
    let mut attrs: Vec<String> = m.attributes(op).iter().map(|(k, v)| format!("{k}={v}")).collect();
    attrs.sort();
    let results: Vec<String> = m.results(op).iter().map(|&v| m.value_type(v).to_string()).collect();
    let _ = write!(out, "{}({}) -> ({}) {{{}}} [", m.op_name(op), operands.join(","), results.join(","), attrs.join(","));
    for &v in m.results(op) {
        let n = ids.len();
        ids.insert(v, n);
    }
    for &r in m.regions(op) {
        out.push('{');
        for &b in m.region_blocks(r) {
            out.push_str("^(");
            for &a in m.block_args(b) {
                let n = ids.len();
                ids.insert(a, n);
                let _ = write!(out, "{},", m.value_type(a));
            }
            out.push_str("):");
            for o in m.block_ops(b) {
                structure(m, o, ids, out);
            }
        }
        out.push('}');
    }
    out.push_str("];");
}

fn structure_of(m: &Module) -> String {
    let mut out = String::new();
    structure(m, m.top(), &mut Default::default(), &mut out);
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn print_parse_print_is_a_fixed_point(specs in prop::collection::vec(any_op(), 1..5)) {
        let c = ctx();
        let m = build(&c, &specs);
        let once = print_module(&c, &m, PrintOptions::default());
        let m2 = parse_module(&c, &once, "once.ir").map_err(|d| TestCaseError::fail(format!("{}\n{once}", d.render("once.ir", &once))))?;
        let twice = print_module(&c, &m2, PrintOptions::default());
        prop_assert_eq!(&once, &twice);
        prop_assert_eq!(structure_of(&m), structure_of(&m2), "{}", once);
        // An op shaped to fit its format prints in it, not in the generic form.
        let top_level: Vec<&str> = once
            .lines()
            .filter(|l| l.starts_with("    ") && !l.starts_with("     ") && !l.starts_with("    }") && !l.starts_with("    ^"))
            .collect();
        for (s, line) in specs.iter().zip(&top_level) {
            if s.conform {
                prop_assert!(!line.contains("\"fmt."), "{} printed generically: {}", OPS[s.kind].0, line);
            }
        }
    }
}

#[test]
fn named_syntaxes_are_formats() {
    for s in [Syntax::Default, Syntax::Constant, Syntax::IfElse, Syntax::Function, Syntax::Return, Syntax::Module] {
        let f = AssemblyFormat::of_syntax(s).unwrap();
        assert_eq!(f.source(), s.format());
    }
}

#[test]
fn malformed_formats_are_errors_with_columns() {
    let cases = [
        ("operands `:` type(operands)", 28, "attr-dict"),
        ("attr-dict operands attr-dict `:` type(operands)", 20, "only one"),
        ("operand(0, i1) operand(2, i1) attr-dict", 16, "each once"),
        ("attr-dict $a `,` $a", 18, "more than once"),
        ("attr-dict type(operands) operands", 11, "must follow"),
        ("operands attr-dict `:` type(operand)", 24, "'type' takes"),
        ("attr-dict `{`", 11, "neither a keyword"),
        ("attr-dict (`->` type(results)", 30, "unclosed optional group"),
        ("attr-dict (`->`)?", 11, "needs an anchor"),
        ("attr-dict operands", 11, "never given"),
        ("attr-dict frobnicate", 11, "unknown directive 'frobnicate'"),
        ("attr-dict region(0)", 11, "ambiguous"),
        ("attr-dict `x", 11, "unclosed literal"),
        ("attr-dict untyped($v)", 11, "result type"),
    ];
    for (text, column, message) in cases {
        let e = AssemblyFormat::parse(text).unwrap_err();
        assert!(e.message.contains(message), "{text}: {e}");
        assert_eq!(e.column, column, "{text}: {e}");
    }
}

#[test]
fn registering_a_bad_format_fails() {
    let mut c = Context::new();
    c.register_dialect("fmt", "");
    let e = c.register_op(OpDef::new("fmt.a").assembly_format("attr-dict custom<Nope>")).unwrap_err();
    assert!(e.to_string().contains("column 18: unknown custom directive 'Nope'"), "{e}");
    let e = c.register_op(OpDef::new("fmt.b").assembly_format("operand(0, q9) attr-dict")).unwrap_err();
    assert!(e.to_string().contains("column 12: bad type 'q9'"), "{e}");
    let e = c.register_op(OpDef::new("fmt.c").assembly_format("attr-dict attr-dict")).unwrap_err();
    assert!(e.to_string().contains("column 11: a format has only one 'attr-dict'"), "{e}");
    assert!(OpDef::new("fmt.d").try_assembly_format("operands attr-dict `:` type(operands)").is_ok());
    assert!(c.op_def("fmt.a").is_none());
}

#[test]
fn errors_in_custom_syntax_keep_their_position() {
    let c = ctx();
    let src = "func.func @f(%c: i1) {\n  fmt.if %c {\n  } {\n  }\n}\n";
    let e = parse_module(&c, src, "bad.ir").unwrap_err();
    let text = e.render("bad.ir", src);
    assert!(text.starts_with("bad.ir:3:5: error: expected 'else', found '{'"), "{text}");
    let src = "func.func @f(%x: i64) {\n  fmt.pair [%x %x] : i64, i64\n}\n";
    let text = parse_module(&c, src, "bad.ir").unwrap_err().render("bad.ir", src);
    assert!(text.starts_with("bad.ir:2:16: error: expected ','"), "{text}");
    let src = "func.func @f(%x: i64) {\n  %0 = fmt.constant 1.5 : i64\n}\n";
    let text = parse_module(&c, src, "bad.ir").unwrap_err().render("bad.ir", src);
    assert!(text.starts_with("bad.ir:2:21:"), "{text}");
}

#[test]
fn ops_that_do_not_fit_print_generically() {
    let c = ctx();
    let src = "func.func @f(%c: i64, %d: i1) {\n  \"fmt.if\"(%c) ({\n  }, {\n  }) : (i64) -> ()\n  fmt.if %d {\n    fmt.ret\n  } else {\n    fmt.ret\n  }\n}\n";
    let m = parse_module(&c, src, "t.ir").unwrap();
    let out = print_module(&c, &m, PrintOptions::default());
    assert!(out.contains("\"fmt.if\"(%c) ({"), "{out}");
    assert!(out.contains("    fmt.if %d {"), "{out}");
    // An untyped literal whose kind is not the result's type (a float constant of type `i64`)
    // cannot be written bare, and round-trips in the generic form.
    let src = "%0 = \"fmt.constant\"() {value = 0.0 : f64} : () -> i64\n%1 = \"fmt.constant\"() {value = 5 : i64} : () -> f64\n%2 = fmt.constant 2 : i64\n";
    let m = parse_module(&c, src, "t.ir").unwrap();
    let out = print_module(&c, &m, PrintOptions::default());
    assert!(out.contains("\"fmt.constant\"() {value = 0.0 : f64} : () -> i64"), "{out}");
    assert!(out.contains("\"fmt.constant\"() {value = 5 : i64} : () -> f64"), "{out}");
    assert!(out.contains("%2 = fmt.constant 2 : i64"), "{out}");
    let again = print_module(&c, &parse_module(&c, &out, "t.ir").unwrap(), PrintOptions::default());
    assert_eq!(out, again);
}

#[test]
fn the_documented_example_prints_as_documented() {
    let mut c = Context::new();
    c.register_dialect("toy", "");
    let def = OpDef::new("toy.transpose")
        .try_assembly_format("`(` operands `)` attr-dict `:` type(operands) `->` type(results)")
        .unwrap();
    c.register_op(def).unwrap();
    let src = "func.func @f(%a: tensor<2x3xf64>) {\n  %t = toy.transpose (%a) : tensor<2x3xf64> -> tensor<3x2xf64>\n}\n";
    let m = parse_module(&c, src, "t.ir").unwrap();
    let out = print_module(&c, &m, PrintOptions::default());
    assert!(out.contains("    %t = toy.transpose (%a) : tensor<2x3xf64> -> tensor<3x2xf64>\n"), "{out}");
}

#[test]
fn builtin_directives_in_user_formats_never_panic() {
    let mut c = Context::new();
    c.register_dialect("u", "");
    c.register_op(OpDef::new("u.body").assembly_format("custom<FunctionBody> attr-dict")).unwrap();
    c.register_op(OpDef::new("u.sig").assembly_format("custom<FunctionSignature> attr-dict")).unwrap();
    let mut m = Module::new();
    let body = m.body();
    for name in ["u.body", "u.sig"] {
        let op = m.create_op(OperationState::new(name));
        m.insert_op(op, InsertPoint::End(body)).unwrap();
    }
    let out = print_module(&c, &m, PrintOptions::default());
    assert!(out.contains("\"u.body\"() : () -> ()") && out.contains("\"u.sig\"() : () -> ()"), "{out}");
}

#[test]
fn a_group_that_prints_must_show_all_it_holds() {
    let mut c = Context::new();
    c.register_dialect("u", "");
    c.register_op(OpDef::new("u.g").assembly_format("(`to` $t^ `:` type(results) $u)? attr-dict")).unwrap();
    let src = "\"u.g\"() {t = 1 : i64} : () -> ()\n%0 = \"u.g\"() {t = 1 : i64, u = 2 : i64} : () -> i64\n";
    let m = parse_module(&c, src, "t.ir").unwrap();
    let out = print_module(&c, &m, PrintOptions::default());
    // Without results or `u` the group would print `to 1 : i64 :` and not read back.
    assert!(out.contains("  \"u.g\"() {t = 1 : i64} : () -> ()\n"), "{out}");
    assert!(out.contains("  %0 = u.g to 1 : i64 : i64 2 : i64\n"), "{out}");
    let m2 = parse_module(&c, &out, "out.ir").unwrap();
    assert_eq!(print_module(&c, &m2, PrintOptions::default()), out);
}
