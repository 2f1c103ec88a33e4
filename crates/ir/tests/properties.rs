//! Property tests: every f64 attribute and every tensor type round-trips through text exactly.

use ir::{Attribute, Context, DType, Dim, TensorType, Type, parse_attribute, parse_type};
use proptest::prelude::*;

fn ctx() -> Context {
    Context::new()
}

fn any_dim() -> impl Strategy<Value = Dim> {
    prop_oneof![
        (0i64..100_000).prop_map(Dim::Static),
        "[a-z][a-z0-9_]{0,4}".prop_map(|s| Dim::Sym(s.into())),
        "[0-9]\\*s[0-9]".prop_map(|s| Dim::Sym(s.into())),
        Just(Dim::Unknown),
    ]
}

fn any_dtype() -> impl Strategy<Value = DType> {
    prop::sample::select(DType::ALL.to_vec())
}

proptest! {
    #[test]
    fn f64_bits_round_trip(bits in any::<u64>()) {
        let a = Attribute::float(f64::from_bits(bits));
        let text = a.to_string();
        let back = parse_attribute(&ctx(), &text).map_err(|d| TestCaseError::fail(d.to_string()))?;
        prop_assert_eq!(a, back, "{}", text);
    }

    #[test]
    fn i64_round_trip(v in any::<i64>()) {
        let a = Attribute::Int(v);
        prop_assert_eq!(parse_attribute(&ctx(), &a.to_string()).unwrap(), a);
    }

    #[test]
    fn tensor_types_round_trip(dtype in prop::option::of(any_dtype()), dims in prop::option::of(prop::collection::vec(any_dim(), 0..6))) {
        let t = Type::tensor_of(TensorType { dtype, shape: dims });
        let text = t.to_string();
        let back = parse_type(&ctx(), &text).map_err(|d| TestCaseError::fail(format!("{text}: {d}")))?;
        prop_assert_eq!(t, back, "{}", text);
    }

    #[test]
    fn strings_round_trip(s in "\\PC{0,20}") {
        let a = Attribute::str(&s);
        let back = parse_attribute(&ctx(), &a.to_string()).map_err(|d| TestCaseError::fail(d.to_string()))?;
        prop_assert_eq!(a, back);
    }

    #[test]
    fn dense_f32_round_trip(vals in prop::collection::vec(any::<u32>(), 1..40)) {
        let floats: Vec<f32> = vals.iter().map(|&b| f32::from_bits(b)).collect();
        let d = ir::DenseAttr::from_f32(&[floats.len() as i64], &floats).unwrap();
        let a = Attribute::Dense(d);
        let text = a.to_string();
        let back = parse_attribute(&ctx(), &text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        prop_assert_eq!(a, back, "{}", text);
    }
}
