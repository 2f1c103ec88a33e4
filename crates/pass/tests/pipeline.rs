//! Pipeline text: parsing against a registry, canonical printing, implicit nesting, options and
//! errors with columns.

use pass::{
    Anchor, OptionValue, PassInfo, PassOptions, PassRegistry, Pipeline, PipelineElement,
    default_registry,
};

fn registry() -> PassRegistry {
    let mut r = default_registry();
    r.register(
        PassInfo::new("cse", "Eliminate common subexpressions", |_| {
            Ok(Box::new(pass::Dce) as Box<dyn pass::Pass>)
        })
        .anchor(Anchor::func()),
    )
    .unwrap();
    r.register(
        PassInfo::new("lower-to-edge", "Lower ATen to Edge", |_| {
            Ok(Box::new(pass::Verify) as Box<dyn pass::Pass>)
        })
        .anchor(Anchor::module())
        .options(
            PassOptions::new()
                .bool("strict", false, "Reject ops without an Edge form")
                .int("level", 1, "How hard to try")
                .float("ratio", 0.5, "A ratio")
                .string("name", "", "A name")
                .list("ops", &[], "Ops to lower"),
        ),
    )
    .unwrap();
    r
}

fn canon(text: &str) -> String {
    Pipeline::parse(text, &registry())
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .to_string()
}

fn error(text: &str) -> String {
    Pipeline::parse(text, &registry())
        .map(|p| p.to_string())
        .unwrap_err()
        .to_string()
}

#[test]
fn nested_pipeline_round_trips() {
    let text = "builtin.module(func.func(cse,canonicalize),lower-to-edge{strict=true})";
    assert_eq!(canon(text), text);
    assert_eq!(canon(&canon(text)), text);
}

#[test]
fn whitespace_is_dropped_in_canonical_form() {
    assert_eq!(
        canon(" builtin.module( func.func( cse , canonicalize ) , lower-to-edge{ strict=true } ) "),
        "builtin.module(func.func(cse,canonicalize),lower-to-edge{strict=true})"
    );
}

#[test]
fn bare_list_is_anchored_on_the_module() {
    assert_eq!(
        canon("dce,canonicalize"),
        "builtin.module(dce,canonicalize)"
    );
    assert_eq!(canon(""), "builtin.module()");
    assert_eq!(canon("builtin.module()"), "builtin.module()");
    assert_eq!(canon("func.func(dce)"), "builtin.module(func.func(dce))");
}

#[test]
fn function_passes_nest_implicitly_on_the_module() {
    assert_eq!(
        canon("cse,cse,dce,cse"),
        "builtin.module(func.func(cse,cse),dce,func.func(cse))"
    );
    let p = Pipeline::parse("cse", &registry()).unwrap();
    assert_eq!(p.num_passes(), 1);
    assert!(matches!(&p.elements[0], PipelineElement::Nested(n) if n.anchor == "func.func"));
}

#[test]
fn options_are_typed_and_printed_in_declaration_order() {
    let p = Pipeline::parse(
        r#"lower-to-edge{ops=aten.add,aten.mul name="a b" ratio=0.25 level=3 strict}"#,
        &registry(),
    )
    .unwrap();
    let PipelineElement::Pass { name, options } = &p.elements[0] else {
        panic!("{p:?}")
    };
    assert_eq!(name, "lower-to-edge");
    assert_eq!(options.get_bool("strict"), Some(true));
    assert_eq!(options.get_int("level"), Some(3));
    assert_eq!(options.get_float("ratio"), Some(0.25));
    assert_eq!(options.get_string("name"), Some("a b"));
    assert_eq!(options.get_list("ops").unwrap(), ["aten.add", "aten.mul"]);
    let text = p.to_string();
    assert_eq!(
        text,
        r#"builtin.module(lower-to-edge{strict=true level=3 ratio=0.25 name="a b" ops=aten.add,aten.mul})"#
    );
    assert_eq!(canon(&text), text);
}

#[test]
fn defaults_apply_when_options_are_absent() {
    let p = Pipeline::parse("lower-to-edge", &registry()).unwrap();
    let PipelineElement::Pass { options, .. } = &p.elements[0] else {
        panic!()
    };
    assert_eq!(options.get("strict"), Some(&OptionValue::Bool(false)));
    assert_eq!(options.get_float("ratio"), Some(0.5));
    assert!(options.get_list("ops").unwrap().is_empty());
    assert!(!options.is_set("strict"));
}

#[test]
fn quoted_and_braced_values() {
    let p = Pipeline::parse(r#"lower-to-edge{name={x y} ops="a,b",c}"#, &registry()).unwrap();
    let PipelineElement::Pass { options, .. } = &p.elements[0] else {
        panic!()
    };
    assert_eq!(options.get_string("name"), Some("x y"));
    assert_eq!(options.get_list("ops").unwrap(), ["a,b", "c"]);
    assert_eq!(canon(&p.to_string()), p.to_string());
}

#[test]
fn errors_name_the_column() {
    assert_eq!(
        error("builtin.module(foo)"),
        "unknown pass 'foo' at column 16"
    );
    assert_eq!(
        error("builtin.module(dce,foo)"),
        "unknown pass 'foo' at column 20"
    );
    assert_eq!(
        error("lower-to-edge{strictt=true}"),
        "unknown option 'strictt' (known: strict, level, ratio, name, ops) (in options of pass 'lower-to-edge') at column 15"
    );
    assert_eq!(
        error("lower-to-edge{strict=maybe}"),
        "bad value for option 'strict' (bool): expected 'true' or 'false', found 'maybe' (in options of pass 'lower-to-edge') at column 22"
    );
    assert_eq!(
        error("lower-to-edge{level=x}"),
        "bad value for option 'level' (int): expected an integer, found 'x' (in options of pass 'lower-to-edge') at column 21"
    );
    assert_eq!(
        error("dce{x=1}"),
        "unknown option 'x' (the pass takes no options) (in options of pass 'dce') at column 5"
    );
    assert_eq!(
        error("builtin.module(dce"),
        "expected ')' to close 'builtin.module(' at column 19"
    );
    assert_eq!(
        error("dce,,cse"),
        "expected a pass or op name, found ',' at column 5"
    );
    assert_eq!(
        error("dce)"),
        "expected ',' or the end of the pipeline, found ')' at column 4"
    );
    assert_eq!(
        error("lower-to-edge{strict=true"),
        "unterminated '{' in pass options at column 14"
    );
    assert_eq!(
        error("func.func(lower-to-edge)"),
        "pass 'lower-to-edge' runs on 'builtin.module' ops and cannot be scheduled on 'func.func' at column 11"
    );
    assert_eq!(
        error("foo(dce)"),
        "'foo' is not an op name; nested pipelines are anchored on ops such as 'func.func' at column 1"
    );
}

#[test]
fn registry_lists_passes_with_options() {
    let r = registry();
    let names: Vec<&str> = r.passes().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "canonicalize",
            "cse",
            "dce",
            "lower-to-edge",
            "print-ir",
            "verify"
        ]
    );
    let help = r.help_text();
    assert!(
        help.contains("  cse (on 'func.func') - Eliminate common subexpressions\n"),
        "{help}"
    );
    assert!(
        help.contains("      strict=bool (default: false) - Reject ops without an Edge form\n"),
        "{help}"
    );
    assert!(
        help.contains("      max-iterations=int (default: 10)"),
        "{help}"
    );
    let mut r2 = r.clone();
    assert_eq!(
        r2.register(PassInfo::new("dce", "again", |_| Ok(
            Box::new(pass::Dce) as Box<dyn pass::Pass>
        )))
        .unwrap_err(),
        "pass 'dce' is already registered"
    );
    assert!(
        r2.register(PassInfo::new("9x", "bad", |_| Ok(
            Box::new(pass::Dce) as Box<dyn pass::Pass>
        )))
        .is_err()
    );
}

#[test]
fn malformed_text_never_panics() {
    let r = registry();
    for text in [
        "(",
        ")",
        "{",
        "}",
        "dce{",
        "dce{}",
        "dce{=}",
        "a.b(",
        "a.b(((",
        ",",
        "dce,",
        "lower-to-edge{name=\"}",
        "é",
        "dce é",
        "builtin.module(é)",
    ] {
        let _ = Pipeline::parse(text, &r);
    }
}
