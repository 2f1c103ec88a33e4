//! Tests of the ATen schema parser: the whole PyTorch registry round-trips, and targeted cases
//! for alias annotations, defaults, kwarg-only arguments, returns and error columns.

use std::path::PathBuf;

use ir::schema::{
    AliasInfo, DefaultValue, FunctionSchema, OpName, SchemaError, SchemaType, parse_default,
    parse_schema, parse_type, registry_lines,
};

/// The registry of every ATen schema, or `None` (after printing why) when the shared fixtures
/// are absent. With `CI=true` a missing file is a failure.
fn registry() -> Option<String> {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/aten_schemas.txt");
    match std::fs::read_to_string(&path) {
        Ok(text) => Some(text),
        Err(e) => {
            if std::env::var("CI").as_deref() == Ok("true") {
                panic!("{} is required when CI=true: {e}", path.display());
            }
            eprintln!("skipping: cannot read {}: {e}", path.display());
            None
        }
    }
}

fn parse(text: &str) -> FunctionSchema {
    match parse_schema(text) {
        Ok(s) => s,
        Err(e) => panic!("{text}\n{e}"),
    }
}

fn error(text: &str) -> SchemaError {
    match parse_schema(text) {
        Ok(s) => panic!("{text} parsed as {s:?}"),
        Err(e) => e,
    }
}

fn roundtrip(text: &str) {
    assert_eq!(parse(text).to_string(), text);
}

#[test]
fn every_registry_line_round_trips() {
    let Some(text) = registry() else { return };
    let mut count = 0;
    let mut core = 0;
    let mut failures = Vec::new();
    for line in registry_lines(&text) {
        count += 1;
        core += usize::from(line.core);
        match parse_schema(line.schema) {
            Ok(schema) => {
                let printed = schema.to_string();
                if printed != line.schema {
                    failures.push(format!(
                        "line {}:\n  {}\n  {printed}",
                        line.line, line.schema
                    ));
                } else if parse_schema(&printed).as_ref() != Ok(&schema) {
                    failures.push(format!("line {}: reparse differs", line.line));
                }
            }
            Err(e) => failures.push(format!("line {}: {e}\n  {}", line.line, line.schema)),
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(count, 3765);
    assert_eq!(core, 193);
}

#[test]
fn registry_op_names_are_unique_and_round_trip() {
    let Some(text) = registry() else { return };
    let mut seen = std::collections::HashSet::new();
    for line in registry_lines(&text) {
        let schema = parse(line.schema);
        let name = schema.op_name();
        assert!(seen.insert(name.clone()), "duplicate op {name}");
        let op = OpName::parse(&name).unwrap();
        assert_eq!(op, schema.op());
        assert_eq!(OpName::parse(&schema.qualified_name()).unwrap(), op);
    }
}

#[test]
fn registry_queries_are_consistent() {
    let Some(text) = registry() else { return };
    for line in registry_lines(&text) {
        let s = parse(line.schema);
        // An out variant names its written kwarg-only arguments.
        assert_eq!(s.is_out(), !s.out_args().is_empty(), "{}", line.schema);
        // Arguments written in place are mutable arguments.
        if s.is_inplace() || s.is_out() {
            assert!(s.is_mutable(), "{}", line.schema);
        }
        // Kwarg-only arguments come last.
        let first_kw = s
            .args
            .iter()
            .position(|a| a.kwarg_only)
            .unwrap_or(s.args.len());
        assert!(
            s.args[first_kw..].iter().all(|a| a.kwarg_only),
            "{}",
            line.schema
        );
    }
    let get = |name: &str| {
        registry_lines(&text)
            .map(|l| parse(l.schema))
            .find(|s| s.op_name() == name)
            .unwrap_or_else(|| panic!("{name} not in registry"))
    };
    assert!(get("aten.add_.Tensor").is_inplace());
    assert!(get("aten.add.out").is_out());
    assert!(!get("aten.add.Tensor").is_mutable());
    assert_eq!(get("aten.view").returns_alias_of(0), Some(0));
    assert_eq!(get("aten.split.Tensor").returns_alias_of(0), Some(0));
    assert_eq!(get("aten.max.dim_max").returns_alias_of(1), Some(4));
}

#[test]
fn simple_schema() {
    let s = parse("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
    assert_eq!(s.namespace, "aten");
    assert_eq!(s.name, "add");
    assert_eq!(s.overload, "Tensor");
    assert_eq!(s.op_name(), "aten.add.Tensor");
    assert_eq!(s.qualified_name(), "aten::add.Tensor");
    assert_eq!(s.args.len(), 3);
    assert_eq!(s.args[0].ty, SchemaType::Tensor);
    assert!(!s.args[1].kwarg_only);
    assert!(s.args[2].kwarg_only);
    assert_eq!(s.args[2].ty, SchemaType::Scalar);
    assert_eq!(s.args[2].default, Some(DefaultValue::Int(1)));
    assert_eq!(s.returns.len(), 1);
    assert_eq!(s.returns[0].name, None);
    assert!(!s.is_mutable() && !s.is_inplace() && !s.is_out());
    assert!(!s.is_vararg && !s.is_varret);
}

#[test]
fn default_overload_op_name() {
    let s = parse("aten::relu(Tensor self) -> Tensor");
    assert_eq!(s.overload, "");
    assert_eq!(s.op_name(), "aten.relu");
    for text in [
        "aten.relu",
        "aten.relu.default",
        "torch.ops.aten.relu.default",
        "aten::relu",
    ] {
        assert_eq!(OpName::parse(text).unwrap(), s.op(), "{text}");
    }
    let op = OpName::parse("torch.ops.aten.add.Tensor").unwrap();
    assert_eq!(
        (
            op.namespace.as_str(),
            op.name.as_str(),
            op.overload.as_str()
        ),
        ("aten", "add", "Tensor")
    );
    assert_eq!(op.to_string(), "aten.add.Tensor");
    assert_eq!(op.qualified(), "aten::add.Tensor");
    assert!(OpName::parse("relu").is_err());
    assert!(OpName::parse("aten.add.Tensor.extra").is_err());
    assert!(OpName::parse("aten..x").is_err());
}

#[test]
fn schema_without_namespace() {
    let s = parse("foo(Tensor x) -> Tensor");
    assert_eq!(s.namespace, "");
    assert_eq!(s.op_name(), "foo");
    roundtrip("foo(Tensor x) -> Tensor");
}

#[test]
fn alias_annotations() {
    let s =
        parse("aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)");
    assert_eq!(s.args[0].alias, Some(AliasInfo::set("a", true)));
    assert!(s.arg_is_written(0));
    assert!(!s.arg_is_written(1));
    assert!(!s.arg_is_written(99));
    assert!(s.is_inplace() && !s.is_out() && s.is_mutable());
    assert_eq!(s.returns_alias_of(0), Some(0));
    assert!(s.returns[0].is_written());

    let s = parse(
        "aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
    );
    assert!(s.is_out() && !s.is_inplace());
    assert_eq!(s.out_args(), vec![3]);
    assert_eq!(s.returns_alias_of(0), Some(3));

    // A view: the result aliases `self` without writing it.
    let s = parse("aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a)");
    assert!(!s.is_mutable());
    assert_eq!(s.args[0].alias, Some(AliasInfo::set("a", false)));
    assert_eq!(s.returns_alias_of(0), Some(0));

    // Set transitions and wildcards.
    let s = parse(
        "aten::split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
    );
    let alias = s.args[0].alias.as_ref().unwrap();
    assert_eq!(alias.before, vec!["a"]);
    assert_eq!(alias.after, vec!["*"]);
    assert!(!alias.is_write);
    let ret = s.returns[0].alias.as_ref().unwrap();
    assert!(ret.before.is_empty());
    assert_eq!(ret.contained.as_deref(), Some(&AliasInfo::set("a", false)));
    assert_eq!(s.returns_alias_of(0), Some(0));
    roundtrip(
        "aten::split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
    );

    let s = parse("aten::cpu(Tensor(a) self) -> Tensor(b|a)");
    assert_eq!(s.returns[0].alias.as_ref().unwrap().before, vec!["b", "a"]);
    assert_eq!(s.returns_alias_of(0), Some(0));

    let s = parse("aten::wait(Future(t) self) -> t(*)");
    assert_eq!(s.returns[0].alias.as_ref().unwrap().before, vec!["*"]);
    assert_eq!(s.returns_alias_of(0), None);

    // Annotations on lists: the elements (`Tensor(a!)[]`) or the list (`t[](a!)`).
    let s = parse(
        "aten::_foreach_add_.List(Tensor(a!)[] self, Tensor[] other, *, Scalar alpha=1) -> ()",
    );
    assert!(s.arg_is_written(0) && s.is_inplace());
    let alias = s.args[0].alias.as_ref().unwrap();
    assert!(!alias.is_write && alias.before.is_empty());
    assert!(alias.contained.as_ref().unwrap().is_write);
    let s = parse("aten::append.t(t[](a!) self, t(c -> *) el) -> t[](a!)");
    let alias = s.args[0].alias.as_ref().unwrap();
    assert!(alias.is_write && alias.contained.is_none());
    assert_eq!(s.args[0].ty, SchemaType::Var("t".into()).list());
    assert_eq!(s.returns_alias_of(0), Some(0));

    // Optional and dict annotations.
    let s = parse("aten::_unwrap_optional(t(a)? optional) -> t(a)");
    assert_eq!(s.args[0].ty, SchemaType::Var("t".into()).optional());
    assert_eq!(s.args[0].alias, Some(AliasInfo::set("a", false)));
    roundtrip("aten::_unwrap_optional(t(a)? optional) -> t(a)");
    roundtrip("aten::Delete.Dict_str(Dict(str, t)(a!) self, str key) -> ()");
    roundtrip(
        "aten::foo(Tensor?(a!)[] self, Tensor(a)[](b!) x, t[](a!)? y, Tensor(a! -> a|b) z) -> ()",
    );

    // Non-canonical placements parse and print canonically.
    let s = parse("aten::foo(Tensor?(a!) x) -> ()");
    assert_eq!(s.to_string(), "aten::foo(Tensor(a!)? x) -> ()");
    let s = parse("aten::foo(Tensor(a -> a) x) -> ()");
    assert_eq!(s.to_string(), "aten::foo(Tensor(a) x) -> ()");
    let s = parse("aten::foo(Tensor(a|b!) x) -> ()");
    assert_eq!(s.to_string(), "aten::foo(Tensor(a|b!) x) -> ()");
}

#[test]
fn writes_of_positional_arguments_are_mutable_not_inplace() {
    let s = parse(
        "aten::_native_batch_norm_legit(Tensor input, Tensor? weight, Tensor? bias, Tensor(a!) running_mean, Tensor(b!) running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
    );
    assert!(s.is_mutable());
    assert!(!s.is_inplace() && !s.is_out());
    assert!(s.arg_is_written(3) && s.arg_is_written(4) && !s.arg_is_written(0));
}

#[test]
fn misplaced_alias_annotations_are_errors() {
    // After a non-final suffix.
    let e = error("aten::foo(Tensor(a)?[] x) -> ()");
    assert_eq!(e.column, 17);
    // Two in a row.
    let e = error("aten::foo(Tensor(a)(b) x) -> ()");
    assert_eq!(e.column, 20);
    // Twice on the value itself.
    let e = error("aten::foo(Tensor(a)?(b) x) -> ()");
    assert_eq!(e.column, 21);
    // Inside a type parameter.
    assert!(parse_schema("aten::foo(Dict(str, Tensor(a)) x) -> ()").is_err());
}

#[test]
fn defaults() {
    let s = parse(
        "aten::foo(int a=-1, float b=1e-05, float c=-inf, float d=inf, float e=nan, bool f=True, bool g=False, Tensor? h=None, str i=\"mean\", str j='none', int[] k=[0, 1], int[] l=[], MemoryFormat m=contiguous_format, ScalarType n=long, float o=1.) -> ()",
    );
    let d: Vec<_> = s.args.iter().map(|a| a.default.clone().unwrap()).collect();
    assert_eq!(d[0], DefaultValue::Int(-1));
    assert_eq!(d[1], DefaultValue::Float(1e-5));
    assert_eq!(d[2], DefaultValue::Float(f64::NEG_INFINITY));
    assert_eq!(d[3], DefaultValue::Float(f64::INFINITY));
    assert!(matches!(d[4], DefaultValue::Float(v) if v.is_nan()));
    assert_eq!(d[5], DefaultValue::Bool(true));
    assert_eq!(d[6], DefaultValue::Bool(false));
    assert_eq!(d[7], DefaultValue::None);
    assert_eq!(d[8], DefaultValue::Str("mean".into()));
    assert_eq!(d[9], DefaultValue::Str("none".into()));
    assert_eq!(
        d[10],
        DefaultValue::List(vec![DefaultValue::Int(0), DefaultValue::Int(1)])
    );
    assert_eq!(d[11], DefaultValue::List(vec![]));
    assert_eq!(d[12], DefaultValue::Ident("contiguous_format".into()));
    assert_eq!(d[13], DefaultValue::Ident("long".into()));
    assert_eq!(d[14], DefaultValue::Float(1.0));
    // Floats print like `%.17g`; strings print double-quoted.
    assert_eq!(
        s.to_string(),
        "aten::foo(int a=-1, float b=1.0000000000000001e-05, float c=-inf, float d=inf, float e=nan, bool f=True, bool g=False, Tensor? h=None, str i=\"mean\", str j=\"none\", int[] k=[0, 1], int[] l=[], MemoryFormat m=contiguous_format, ScalarType n=long, float o=1.) -> ()"
    );
}

#[test]
fn float_defaults_print_like_pytorch() {
    for (text, printed) in [
        ("1.", "1."),
        ("0.", "0."),
        ("60.", "60."),
        ("0.5", "0.5"),
        ("0.125", "0.125"),
        ("0.01", "0.01"),
        ("1e-08", "1e-08"),
        ("1e-5", "1.0000000000000001e-05"),
        ("1e-6", "9.9999999999999995e-07"),
        ("1e-15", "1.0000000000000001e-15"),
        ("0.33333333333333331", "0.33333333333333331"),
        ("-2.5", "-2.5"),
        ("1e20", "1e+20"),
        ("123456789012345680000.", "1.2345678901234568e+20"),
        ("-0.", "-0."),
        ("-nan", "nan"),
    ] {
        assert_eq!(parse_default(text).unwrap().to_string(), printed, "{text}");
    }
}

#[test]
fn string_escapes() {
    let s = parse(
        r#"aten::_test_string_default(Tensor dummy, str a="\"\'\\", str b="\"\'\\") -> Tensor"#,
    );
    assert_eq!(s.args[1].default, Some(DefaultValue::Str("\"'\\".into())));
    roundtrip(
        r#"aten::_test_string_default(Tensor dummy, str a="\"\'\\", str b="\"\'\\") -> Tensor"#,
    );
    assert_eq!(
        parse_default(r#""a\n\t\x41\101\0""#).unwrap(),
        DefaultValue::Str("a\n\tAA\0".into())
    );
    assert_eq!(
        parse_default(r#""a\n\001""#).unwrap().to_string(),
        r#""a\n\001""#
    );
    assert_eq!(
        parse_default(r#""a, b)""#).unwrap(),
        DefaultValue::Str("a, b)".into())
    );
    assert_eq!(parse_default(r#""\q""#).unwrap_err().column, 2);
    assert_eq!(parse_default(r#"  "abc"#).unwrap_err().column, 3);
}

#[test]
fn kwarg_only_and_varargs() {
    let s = parse(
        "aten::empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
    );
    assert_eq!(s.args.iter().filter(|a| a.kwarg_only).count(), 5);
    assert_eq!(s.args[1].ty, SchemaType::ScalarType.optional());
    let s = parse("aten::foo(*, Tensor(a!) out) -> Tensor(a!)");
    assert!(s.args[0].kwarg_only && s.is_out());
    roundtrip("aten::foo(*, Tensor(a!) out) -> Tensor(a!)");
    let s = parse("aten::format(str self, ...) -> str");
    assert!(s.is_vararg && s.args.len() == 1);
    roundtrip("aten::format(str self, ...) -> str");
    roundtrip("aten::has_torch_function(...) -> bool");
    roundtrip("aten::foo(Tensor x) -> ...");
    roundtrip("aten::foo(Tensor x) -> (Tensor, ...)");
    roundtrip("aten::foo() -> ()");
    assert_eq!(error("aten::foo(..., Tensor x) -> ()").column, 16);
    assert_eq!(error("aten::foo(Tensor x, *) -> ()").column, 22);
    assert_eq!(error("aten::foo(*, *, Tensor x) -> ()").column, 14);
}

#[test]
fn returns() {
    let s = parse(
        "aten::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
    );
    assert_eq!(s.returns.len(), 2);
    assert_eq!(s.returns[0].name.as_deref(), Some("values"));
    assert_eq!(s.returns[1].name.as_deref(), Some("indices"));
    let s = parse(
        "aten::max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, Tensor(b!) max_values) -> (Tensor(a!) values, Tensor(b!) indices)",
    );
    assert_eq!(s.returns_alias_of(0), Some(3));
    assert_eq!(s.returns_alias_of(1), Some(4));
    assert_eq!(s.out_args(), vec![3, 4]);
    let s = parse(
        "aten::split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]",
    );
    assert_eq!(s.returns[0].ty, SchemaType::Tensor.list());
    let s = parse("aten::foo(Tensor x) -> Tensor[] self_out");
    assert_eq!(s.returns[0].name.as_deref(), Some("self_out"));
    roundtrip("aten::foo(Tensor x) -> Tensor[] self_out");
    // A lone tuple return keeps the list parentheses.
    let s = parse("aten::items.str(Dict(str, t) self) -> ((str, t)[])");
    assert_eq!(s.returns.len(), 1);
    assert_eq!(
        s.returns[0].ty,
        SchemaType::Tuple(vec![SchemaType::Str, SchemaType::Var("t".into())]).list()
    );
    roundtrip("aten::items.str(Dict(str, t) self) -> ((str, t)[])");
    roundtrip("aten::popitem.str(Dict(str, t)(a!) self) -> ((str, t))");
    // A parenthesized single return prints bare.
    assert_eq!(
        parse("aten::foo(Tensor x) -> (Tensor)").to_string(),
        "aten::foo(Tensor x) -> Tensor"
    );
}

#[test]
fn types() {
    for (text, ty) in [
        (
            "int[2]",
            SchemaType::List {
                elem: Box::new(SchemaType::Int),
                size: Some(2),
            },
        ),
        (
            "int[1]?",
            SchemaType::List {
                elem: Box::new(SchemaType::Int),
                size: Some(1),
            }
            .optional(),
        ),
        ("Tensor?[]", SchemaType::Tensor.optional().list()),
        (
            "Tensor?[]?",
            SchemaType::Tensor.optional().list().optional(),
        ),
        (
            "Dict(str, t)",
            SchemaType::Dict(
                Box::new(SchemaType::Str),
                Box::new(SchemaType::Var("t".into())),
            ),
        ),
        (
            "Future(t)",
            SchemaType::Future(Box::new(SchemaType::Var("t".into()))),
        ),
        (
            "Await(t)",
            SchemaType::Await(Box::new(SchemaType::Var("t".into()))),
        ),
        (
            "RRef(t)",
            SchemaType::RRef(Box::new(SchemaType::Var("t".into()))),
        ),
        (
            "Union(int, str)?",
            SchemaType::Union(vec![SchemaType::Int, SchemaType::Str]).optional(),
        ),
        (
            "(Tensor, Tensor)",
            SchemaType::Tuple(vec![SchemaType::Tensor, SchemaType::Tensor]),
        ),
        (
            "__torch__.torch.classes.rnn.CellParamsBase[]",
            SchemaType::Class("__torch__.torch.classes.rnn.CellParamsBase".into()).list(),
        ),
        ("complex", SchemaType::Complex),
        ("number", SchemaType::Number),
        ("Any[]", SchemaType::Any.list()),
        ("tVal", SchemaType::Var("tVal".into())),
    ] {
        assert_eq!(parse_type(text).unwrap(), ty, "{text}");
        assert_eq!(ty.to_string(), text);
    }
    assert!(SchemaType::Tensor.optional().list().contains_tensor());
    assert!(!SchemaType::Int.list().contains_tensor());
    let e = parse_type("Tensr").unwrap_err();
    assert!(e.message.contains("Tensr"));
    assert_eq!(parse_type("Dict(str)").unwrap_err().column, 1);
    assert_eq!(parse_type("int[x]").unwrap_err().column, 5);
}

#[test]
fn error_columns() {
    for (text, column) in [
        ("", 1),
        ("aten::", 7),
        ("aten::add.", 11),
        ("aten::add", 10),
        ("aten::add(Tensor self", 22),
        ("aten::add(Tensor self) Tensor", 24),
        ("aten::add(Tensor self) ->", 26),
        ("aten::add(Tensor self) -> Tensor extra stuff", 40),
        ("aten::add(Tensor) -> Tensor", 17),
        ("aten::add(Tensor self, Foo other) -> Tensor", 24),
        ("aten::add(Tensor self, int x=) -> Tensor", 30),
        (
            "aten::add(Tensor self, int x=99999999999999999999) -> Tensor",
            30,
        ),
        ("aten::add(Tensor(a self) -> Tensor", 20),
        ("aten::add(Tensor() self) -> Tensor", 18),
        ("aten::add(Tensor self, int[ x) -> Tensor", 29),
        ("aten::add(Tensor self, float x=1e) -> Tensor", 34),
        ("aten::add(Tensor self, float x=1.5.) -> Tensor", 35),
        ("aten::add(Tensor self, int[] x=[1, 2) -> Tensor", 37),
        ("aten::ädd(Tensor self) -> Tensor", 7),
        ("aten::a(Tensor ß) -> Tensor", 16),
    ] {
        let e = error(text);
        assert_eq!(e.column, column, "{text}: {e}");
        assert!(e.to_string().starts_with(&format!("column {column}: ")));
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let deep = format!(
        "aten::f({}int{} x) -> ()",
        "(".repeat(10_000),
        ")".repeat(10_000)
    );
    assert!(parse_schema(&deep).is_err());
    let deep = format!("aten::f(int x={}) -> ()", "[".repeat(10_000));
    assert!(parse_schema(&deep).is_err());
    let long_suffix = format!("aten::f(int{} x) -> ()", "[]".repeat(10_000));
    assert!(parse_schema(&long_suffix).is_err());
    let nested = format!("aten::f(int{} x) -> ()", "[]".repeat(40));
    assert_eq!(parse(&nested).to_string(), nested);
}

/// A small deterministic pseudo-random generator (xorshift), so the test needs no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Every mutation of a real schema either fails with a column inside (or just past) the input,
/// or parses to a schema whose printed form parses back to the same schema.
fn check_no_panic(text: &str) {
    match parse_schema(text) {
        Ok(schema) => {
            let printed = schema.to_string();
            let reparsed = parse_schema(&printed)
                .unwrap_or_else(|e| panic!("{text:?} printed as {printed:?} which fails: {e}"));
            assert_eq!(reparsed.to_string(), printed, "{text:?}");
        }
        Err(e) => {
            let len = text.chars().count();
            assert!(
                e.column >= 1 && e.column <= len + 1,
                "{text:?}: column {} of {len}",
                e.column
            );
        }
    }
}

#[test]
fn mutations_never_panic() {
    const PIECES: [&str; 24] = [
        "(", ")", "[", "]", "?", "!", ",", "*", "...", "->", "|", "=", "\"", "'", " ", "a", "-",
        ".", "1", "e", "\\", "Tensor", "::", "ä",
    ];
    let fallback = "aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)\n\
        aten::split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]\n\
        aten::items.str(Dict(str, t) self) -> ((str, t)[])\n\
        aten::_test_string_default(Tensor dummy, str a=\"\\\"\\'\\\\\", str b=\"\\\"\\'\\\\\") -> Tensor\n\
        aten::layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1.0000000000000001e-05, bool cudnn_enable=True) -> Tensor";
    let text = registry().unwrap_or_else(|| fallback.to_string());
    let lines: Vec<&str> = registry_lines(&text).map(|l| l.schema).collect();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..20_000 {
        let line: Vec<char> = lines[rng.below(lines.len())].chars().collect();
        let mut chars = line.clone();
        match rng.below(5) {
            0 => chars.truncate(rng.below(line.len() + 1)),
            1 => {
                if !chars.is_empty() {
                    chars.remove(rng.below(chars.len()));
                }
            }
            2 => {
                let piece = PIECES[rng.below(PIECES.len())];
                let at = rng.below(chars.len() + 1);
                chars.splice(at..at, piece.chars());
            }
            3 => {
                if !chars.is_empty() {
                    let at = rng.below(chars.len());
                    chars[at] = PIECES[rng.below(PIECES.len())]
                        .chars()
                        .next()
                        .unwrap_or('x');
                }
            }
            _ => {
                let start = rng.below(chars.len() + 1);
                let end = (start + rng.below(12)).min(chars.len());
                chars.drain(start..end);
            }
        }
        check_no_panic(&chars.into_iter().collect::<String>());
    }
}
