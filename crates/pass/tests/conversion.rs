//! Dialect conversion on the `test` dialect: legality, type conversion with materializations,
//! partial versus full conversion, and the diagnostics of failed conversions.

mod common;

use common::{count, ctx, parse, print};
use ir::{Context, Diagnostic, OpId, OperationState, Type, TypeKind, ValueId};
use pass::{
    ConversionPattern, ConversionPatternSet, ConversionRewriter, ConversionTarget, OpLegality,
    TypeConverter, apply_full_conversion, apply_partial_conversion,
};

const SRC: &str = r#"
module {
  func.func @f(%x: i64) -> i64 {
    %a = "test.const"() {value = 2 : i64} : () -> i64 loc("model.py":3:4)
    %c = "test.add"(%a, %x) : (i64, i64) -> i64
    %n1 = "test.neg"(%c) : (i64) -> i64
    %n2 = "test.neg"(%n1) : (i64) -> i64
    "test.print"(%n2) : (i64) -> ()
    func.return %n2 : i64
  }
}
"#;

/// `test.add` → `lowered.add`, types unchanged.
struct AddToLowered;

impl ConversionPattern for AddToLowered {
    fn root(&self) -> Option<&str> {
        Some("test.add")
    }

    fn match_and_rewrite(
        &self,
        _: &Context,
        rw: &mut ConversionRewriter<'_, '_>,
        op: OpId,
        operands: &[ValueId],
    ) -> Result<bool, Diagnostic> {
        let ty = rw.module().value_type(rw.module().results(op)[0]).clone();
        rw.replace_op_with(
            op,
            OperationState::new("lowered.add")
                .operands(operands.iter().copied())
                .results([ty]),
        )?;
        Ok(true)
    }
}

/// `test.neg` → `lowered.neg` on converted (f64) values.
struct NegToLowered;

impl ConversionPattern for NegToLowered {
    fn root(&self) -> Option<&str> {
        Some("test.neg")
    }

    fn match_and_rewrite(
        &self,
        _: &Context,
        rw: &mut ConversionRewriter<'_, '_>,
        op: OpId,
        operands: &[ValueId],
    ) -> Result<bool, Diagnostic> {
        let input = rw.convert_value(operands[0])?;
        let old = rw.module().value_type(rw.module().results(op)[0]).clone();
        let Some(ty) = rw.convert_type(&old) else {
            return Ok(false);
        };
        rw.replace_op_with(
            op,
            OperationState::new("lowered.neg")
                .operands([input])
                .results([ty]),
        )?;
        Ok(true)
    }
}

fn converter(with_source: bool) -> TypeConverter {
    let mut tc = TypeConverter::new();
    tc.add_conversion(|_, t| Some(t.clone()));
    tc.add_conversion(|_, t| matches!(t.kind(), TypeKind::Int).then(Type::float));
    tc.add_target_materialization(|_, _, v, to, loc| {
        Some(
            OperationState::new("lowered.to_f64")
                .operands([v])
                .results([to.clone()])
                .loc(loc.clone()),
        )
    });
    if with_source {
        tc.add_source_materialization(|_, _, v, to, loc| {
            Some(
                OperationState::new("lowered.to_i64")
                    .operands([v])
                    .results([to.clone()])
                    .loc(loc.clone()),
            )
        });
    }
    tc
}

fn target() -> ConversionTarget {
    let mut t = ConversionTarget::new();
    t.add_legal_dialect("func")
        .add_legal_dialect("lowered")
        .add_illegal_op("test.add")
        .add_illegal_op("test.neg");
    t
}

fn patterns() -> ConversionPatternSet {
    let mut p = ConversionPatternSet::new();
    p.add(AddToLowered).add(NegToLowered);
    p
}

#[test]
fn partial_conversion_leaves_unknown_ops_and_materializes_casts() {
    let c = ctx();
    let mut m = parse(&c, SRC);
    let root = m.top();
    let r = apply_partial_conversion(&c, &mut m, root, &target(), &patterns(), &converter(true))
        .unwrap();
    assert_eq!(r.converted, 3);
    // The print and the return still take i64: one cast back for each.
    assert_eq!(r.materializations, 2);
    assert_eq!(r.unknown_left, 2);
    ir::verify(&c, &m).unwrap_or_else(|d| panic!("{d}\n{}", print(&c, &m)));
    let f = m.function("f").unwrap();
    let ops: Vec<String> = m
        .nested_ops(f)
        .into_iter()
        .map(|o| m.op_name(o).to_string())
        .collect();
    assert_eq!(
        ops,
        [
            "test.const",
            "lowered.add",
            "lowered.to_f64",
            "lowered.neg",
            "lowered.neg",
            "lowered.to_i64",
            "test.print",
            "lowered.to_i64",
            "func.return"
        ]
    );
    let text = print(&c, &m);
    assert!(
        text.contains("\"lowered.neg\"(%2) : (f64) -> f64"),
        "{text}"
    );
}

#[test]
fn full_conversion_names_the_first_op_left_illegal() {
    let c = ctx();
    let mut m = parse(&c, SRC);
    let root = m.top();
    let e = apply_full_conversion(&c, &mut m, root, &target(), &patterns(), &converter(true))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "model.py:3:4: error: failed to legalize operation 'test.const'"
    );
    // Declaring the rest legal lets the full conversion succeed.
    let mut m = parse(&c, SRC);
    let mut t = target();
    t.add_legal_op("test.const").add_legal_op("test.print");
    let r = apply_full_conversion(&c, &mut m, root, &t, &patterns(), &converter(true)).unwrap();
    assert_eq!((r.converted, r.unknown_left), (3, 0));
    assert_eq!(count(&m, "test.add") + count(&m, "test.neg"), 0);
}

#[test]
fn partial_conversion_fails_on_ops_marked_illegal() {
    let c = ctx();
    let mut m = parse(&c, SRC);
    let root = m.top();
    let mut t = target();
    t.add_illegal_op("test.print");
    let e =
        apply_partial_conversion(&c, &mut m, root, &t, &patterns(), &converter(true)).unwrap_err();
    assert_eq!(
        e.message,
        "failed to legalize operation 'test.print' that was explicitly marked illegal"
    );
}

#[test]
fn missing_source_materialization_is_a_diagnostic() {
    let c = ctx();
    let mut m = parse(&c, SRC);
    let root = m.top();
    let e = apply_partial_conversion(&c, &mut m, root, &target(), &patterns(), &converter(false))
        .unwrap_err();
    assert_eq!(
        e.message,
        "failed to materialize conversion of a f64 value back to i64 for its use by 'test.print'"
    );
}

#[test]
fn dynamic_legality_decides_per_op() {
    let c = ctx();
    let src = r#"
module {
  func.func @f(%x: i64, %y: i64) {
    %a = "test.add"(%x, %x) : (i64, i64) -> i64
    %b = "test.add"(%x, %y) : (i64, i64) -> i64
    "test.print"(%a, %b) : (i64, i64) -> ()
    func.return
  }
}
"#;
    let mut m = parse(&c, src);
    let mut t = ConversionTarget::new();
    t.add_legal_dialect("func").add_legal_dialect("lowered");
    t.add_dynamically_legal_op("test.add", |_, m, op| {
        m.operands(op)[0] != m.operands(op)[1]
    });
    let ops = m.nested_ops(m.top());
    assert_eq!(t.legality(&c, &m, ops[1]), OpLegality::Illegal);
    assert_eq!(t.legality(&c, &m, ops[2]), OpLegality::Legal);
    assert_eq!(t.legality(&c, &m, ops[3]), OpLegality::Unknown);
    let root = m.top();
    let r =
        apply_partial_conversion(&c, &mut m, root, &t, &patterns(), &TypeConverter::new()).unwrap();
    assert_eq!(r.converted, 1);
    assert_eq!((count(&m, "lowered.add"), count(&m, "test.add")), (1, 1));
}

#[test]
fn type_converter_tries_later_conversions_first() {
    let c = ctx();
    let tc = converter(true);
    assert_eq!(tc.convert_type(&c, &Type::int()), Some(Type::float()));
    assert_eq!(tc.convert_type(&c, &Type::bool()), Some(Type::bool()));
    assert!(tc.is_legal(&c, &Type::float()));
    assert!(!tc.is_legal(&c, &Type::int()));
    assert_eq!(
        TypeConverter::new().convert_type(&c, &Type::int()),
        Some(Type::int())
    );
}
