//! Unit tests of the unpickler on hand-made byte strings: each opcode, each refusal.

use std::sync::Arc;

use ir::DType;

use super::*;

fn plain(bytes: &[u8]) -> Value {
    match unpickle_plain(bytes) {
        Ok(v) => v,
        Err(e) => panic!("{e}"),
    }
}

fn refused(bytes: &[u8]) -> PickleError {
    match unpickle(bytes, &mut |_| Ok(7)) {
        Ok(v) => panic!("accepted: {v:?}"),
        Err(e) => e,
    }
}

fn s(text: &str) -> Value {
    Value::Str(text.into())
}

fn tuple(items: Vec<Value>) -> Value {
    Value::Tuple(items.into())
}

#[test]
fn scalars() {
    assert_eq!(plain(b"\x80\x02N."), Value::None);
    assert_eq!(plain(b"\x88."), Value::Bool(true));
    assert_eq!(plain(b"\x89."), Value::Bool(false));
    assert_eq!(plain(b"K\xff."), Value::Int(255));
    assert_eq!(plain(b"M\x01\x02."), Value::Int(0x0201));
    assert_eq!(plain(b"J\xfe\xff\xff\xff."), Value::Int(-2));
    assert_eq!(plain(b"I42\n."), Value::Int(42));
    assert_eq!(plain(b"I01\n."), Value::Bool(true));
    assert_eq!(plain(b"I00\n."), Value::Bool(false));
    assert_eq!(plain(b"L-7L\n."), Value::Int(-7));
    assert_eq!(plain(b"\x8a\x02\x00\x80."), Value::Int(-32768));
    assert_eq!(plain(b"\x8a\x00."), Value::Int(0));
    assert_eq!(plain(b"\x8b\x01\x00\x00\x00\x05."), Value::Int(5));
    assert_eq!(plain(b"\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\xff."), Value::Int(-1));
    assert_eq!(plain(b"G?\xf8\x00\x00\x00\x00\x00\x00."), Value::Float(1.5));
    assert_eq!(plain(b"F-0.25\n."), Value::Float(-0.25));
}

#[test]
fn strings_and_bytes() {
    assert_eq!(plain(b"X\x03\x00\x00\x00abc."), s("abc"));
    assert_eq!(plain(b"\x8c\x02hi."), s("hi"));
    assert_eq!(plain(b"\x8d\x01\x00\x00\x00\x00\x00\x00\x00z."), s("z"));
    assert_eq!(plain(b"U\x02ok."), s("ok"));
    assert_eq!(plain(b"T\x01\x00\x00\x00q."), s("q"));
    assert_eq!(plain(b"S'a\\'b\\n'\n."), s("a'b\n"));
    assert_eq!(plain(b"Vx\\u00e9y\n."), s("x\u{e9}y"));
    assert_eq!(plain(b"C\x02\x00\xff."), Value::Bytes(vec![0, 0xff].into()));
    assert_eq!(plain(b"B\x01\x00\x00\x00\x07."), Value::Bytes(vec![7].into()));
    assert_eq!(plain(b"U\x01\xff."), Value::Bytes(vec![0xff].into()));
}

#[test]
fn tuples() {
    assert_eq!(plain(b")."), tuple(vec![]));
    assert_eq!(plain(b"K\x01\x85."), tuple(vec![Value::Int(1)]));
    assert_eq!(plain(b"K\x01K\x02\x86."), tuple(vec![Value::Int(1), Value::Int(2)]));
    assert_eq!(plain(b"K\x01K\x02K\x03\x87."), tuple(vec![Value::Int(1), Value::Int(2), Value::Int(3)]));
    assert_eq!(plain(b"(K\x01NK\x02t."), tuple(vec![Value::Int(1), Value::None, Value::Int(2)]));
}

#[test]
fn lists_and_dicts() {
    let list = |items: Vec<Value>| Value::List(Arc::new(List { items, ty: None }));
    assert_eq!(plain(b"]."), list(vec![]));
    assert_eq!(plain(b"]K\x01a."), list(vec![Value::Int(1)]));
    assert_eq!(plain(b"](K\x01K\x02e."), list(vec![Value::Int(1), Value::Int(2)]));
    assert_eq!(plain(b"(K\x01l."), list(vec![Value::Int(1)]));
    let d = plain(b"}(X\x01\x00\x00\x00aK\x01X\x01\x00\x00\x00bK\x02X\x01\x00\x00\x00aK\x03u.");
    let d = d.as_dict().unwrap();
    assert_eq!(d.entries, vec![(s("a"), Value::Int(3)), (s("b"), Value::Int(2))]);
    assert_eq!(d.get("b"), Some(&Value::Int(2)));
    let d = plain(b"(K\x01K\x02d}K\x05K\x06s\x86.");
    assert_eq!(d.as_tuple().unwrap()[1].as_dict().unwrap().entries, vec![(Value::Int(5), Value::Int(6))]);
    // Keys compare as Python compares them: True is 1, and tuples by value.
    let d = plain(b"}(\x88K\x01K\x01K\x02K\x01K\x02\x86NK\x01K\x02\x86K\x09u.");
    let d = d.as_dict().unwrap();
    assert_eq!(d.entries.len(), 2);
    assert_eq!(d.entries[0], (Value::Bool(true), Value::Int(2)));
    assert_eq!(d.entries[1].1, Value::Int(9));
}

#[test]
fn memo_stack_and_marks() {
    // A memoized list appended to later is one list wherever it is referenced.
    let v = plain(b"]q\x00K\x01ah\x00\x86.");
    let t = v.as_tuple().unwrap();
    assert_eq!(t[0], t[1]);
    let Value::List(l) = &t[0] else { panic!() };
    assert_eq!(l.items, vec![Value::Int(1)]);
    assert_eq!(plain(b"K\x05r\x07\x00\x00\x000j\x07\x00\x00\x00."), Value::Int(5));
    assert_eq!(plain(b"K\x05p3\n0g3\n."), Value::Int(5));
    assert_eq!(plain(b"\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00K\x05\x94K\x060h\x00."), Value::Int(5));
    assert_eq!(plain(b"K\x05\x32\x86."), tuple(vec![Value::Int(5), Value::Int(5)]));
    assert_eq!(plain(b"K\x01(K\x02K\x031."), Value::Int(1));
}

#[test]
fn objects_and_type_tags() {
    let v = plain(b"c__torch__.m\nC\nq\x00)\x81}(X\x01\x00\x00\x00xK\x01ub.");
    let o = v.as_object().unwrap();
    assert_eq!(o.class, "__torch__.m.C");
    assert_eq!(o.state.as_ref().unwrap().as_dict().unwrap().get("x"), Some(&Value::Int(1)));
    let v = plain(b"ctorch.jit._pickle\nbuild_intlist\n(](K\x01K\x02etR.");
    let Value::List(l) = v else { panic!() };
    assert_eq!((l.items.len(), l.ty.as_deref()), (2, Some("List[int]")));
    let v = plain(b"ctorch.jit._pickle\nrestore_type_tag\n}X\x0f\x00\x00\x00Dict[str, bool]\x86R.");
    assert_eq!(v.as_dict().unwrap().ty.as_deref(), Some("Dict[str, bool]"));
    assert_eq!(plain(b"ccollections\nOrderedDict\n)R.").as_dict().unwrap().entries.len(), 0);
    assert_eq!(plain(b"\x8c\x0b__torch__.m\x8c\x01C\x93)\x81.").as_object().unwrap().class, "__torch__.m.C");
    let err = refused(b"ctorch.jit._pickle\nbuild_intlist\n(](\x88etR.");
    assert!(err.message.contains("holding a bool"), "{err}");
}

/// `_rebuild_tensor_v2(('storage', torch.FloatStorage, '0', 'cpu', numel), offset, sizes, strides, False, OrderedDict())`.
fn tensor_pickle(numel: u8, offset: u8, sizes: &[u8], strides: &[u8]) -> Vec<u8> {
    let mut p = b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK".to_vec();
    p.extend([numel, b't', b'Q', b'K', offset, b'(']);
    for s in sizes {
        p.extend([b'K', *s]);
    }
    p.extend(b"t(");
    for s in strides {
        p.extend([b'K', *s]);
    }
    p.extend(b"t\x89ccollections\nOrderedDict\n)RtR.");
    p
}

#[test]
fn tensors_resolve_their_storage() {
    let mut seen = Vec::new();
    let v = unpickle(&tensor_pickle(6, 0, &[2, 3], &[3, 1]), &mut |st| {
        seen.push((st.key.clone(), st.dtype, st.numel, st.device.clone()));
        Ok(4)
    })
    .unwrap();
    assert_eq!(seen, vec![("0".to_string(), DType::F32, 6, "cpu".to_string())]);
    let t = v.as_tensor().unwrap();
    assert_eq!((t.sizes.as_slice(), t.strides.as_slice(), t.offset, t.storage.index), (&[2, 3][..], &[3, 1][..], 0, 4));
    // The resolver's refusal is the error, at the BINPERSID.
    let p = tensor_pickle(6, 0, &[2, 3], &[3, 1]);
    let err = unpickle(&p, &mut |_| Err("storage `data/0` is missing".into())).unwrap_err();
    assert!(err.message.contains("data/0"));
    assert_eq!(p[err.offset as usize], b'Q');
}

#[test]
fn a_view_must_stay_inside_its_storage() {
    let err = refused(&tensor_pickle(6, 1, &[2, 3], &[3, 1]));
    assert!(err.message.contains("reaches 28 bytes but storage `0` declares 6 elements"), "{err}");
    let err = refused(&tensor_pickle(6, 0, &[2, 3], &[3]));
    assert!(err.message.contains("2 sizes but 1 strides"), "{err}");
    assert!(unpickle(&tensor_pickle(0, 0, &[0, 3], &[3, 1]), &mut |_| Ok(0)).is_ok());
}

#[test]
fn unknown_globals_are_refused_by_name() {
    let p = b"\x80\x02cos\nsystem\nX\x02\x00\x00\x00ls\x85R.";
    let err = refused(p);
    assert_eq!(err.to_string(), "unsupported pickle global 'os system' at byte offset 2");
    for (module, name) in [
        ("torch._utils", "_rebuild_parameter"),
        ("torch._utils", "_rebuild_tensor"),
        ("torch._utils", "_rebuild_qtensor"),
        ("torch", "ComplexFloatStorage"),
        ("torch.jit._pickle", "build_tensor_from_id"),
        ("builtins", "eval"),
        ("__torch__.m", "not an identifier"),
    ] {
        let p = format!("c{module}\n{name}\n.");
        let err = refused(p.as_bytes());
        assert!(err.message.contains(&format!("'{module} {name}'")), "{err}");
        assert_eq!(err.offset, 0);
    }
}

#[test]
fn misuse_of_allowed_globals_is_refused() {
    let cases: &[(&[u8], &str)] = &[
        (b"c__torch__.m\nC\n)R.", "cannot be called by REDUCE"),
        (b"ccollections\nOrderedDict\n)\x81.", "not a TorchScript class"),
        (b"c__torch__.m\nC\nK\x01\x85\x81.", "with arguments"),
        (b"K\x01}b.", "BUILD on an int"),
        (b"K\x01)R.", "not callable"),
        (b"ctorch\nFloatStorage\n)R.", "cannot be called"),
        (b"X\x01\x00\x00\x00xQ.", "must be ('storage'"),
        (b"P0\n.", "must be a tuple"),
        (b"ctorch._utils\n_rebuild_tensor_v2\n)R.", "takes 6 or 7 arguments"),
    ];
    for (p, want) in cases {
        let err = refused(p);
        assert!(err.message.contains(want), "{err} (wanted {want})");
    }
}

#[test]
fn malformed_pickles_are_errors_with_offsets() {
    let cases: &[(&[u8], &str, u64)] = &[
        (b"", "ends before its STOP", 0),
        (b"K\x01", "ends before its STOP", 2),
        (b"X\x05\x00\x00\x00ab", "ends inside an opcode", 0),
        (b"\x80\x05.", "unsupported pickle protocol 5", 0),
        (b"0.", "stack underflow", 0),
        (b"(K\x010.", "", 0),
        (b"t.", "no MARK", 0),
        (b"h\x03.", "memo entry 3 is not set", 0),
        (b"K\x01a.", "stack underflow", 2),
        (b"K\x01K\x01a.", "APPEND to an int", 4),
        (b"}]K\x01s.", "cannot be a dict key", 4),
        (b"\xff.", "unknown opcode 0xff", 0),
        (b"\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01.", "does not fit in 64 bits", 0),
        (b"I99999999999999999999\n.", "fits in 64 bits", 0),
        (b"\x8f.", "sets are not supported", 0),
        (b"i__torch__\nC\n.", "INST", 0),
        (b"(o.", "OBJ", 1),
        (b"\x82\x01.", "extension registry", 0),
        (b"\x90.", "sets are not supported", 0),
        (b"\x92.", "NEWOBJ_EX", 0),
        (b"\x8b\xff\xff\xff\xff.", "negative LONG4 length", 0),
        (b"T\xff\xff\xff\xff.", "negative BINSTRING length", 0),
        (b"S'abc\n.", "not quoted", 0),
        (b"Fx\n.", "not a float", 0),
        (b"K\x01", "ends before its STOP", 2),
        (b"X\x02\x00\x00\x00\xff\xfe.", "not UTF-8", 0),
        (b"]q\x00h\x00a.", "contains itself", 6),
    ];
    for (p, want, offset) in cases {
        let err = refused(p);
        assert!(err.message.contains(want), "{:?}: {err} (wanted {want})", p);
        if !want.is_empty() {
            assert_eq!(err.offset, *offset, "{:?}: {err}", p);
        }
        assert!(err.offset <= p.len() as u64);
    }
}

#[test]
fn deep_nesting_is_refused_without_overflowing_the_stack() {
    // A million nested one-tuples: refused at STOP, and nothing recursive touches them.
    let mut p = b"N".to_vec();
    p.extend(std::iter::repeat_n(0x85u8, 1_000_000));
    p.push(b'.');
    let err = refused(&p);
    assert!(err.message.contains("nest deeper than 256"), "{err}");
    // As deep as allowed is fine.
    let mut p = b"N".to_vec();
    p.extend(std::iter::repeat_n(0x85u8, MAX_NESTING - 1));
    p.push(b'.');
    assert!(unpickle_plain(&p).is_ok());
    // Deep tuples as a dict key are refused too.
    let mut p = b"}N".to_vec();
    p.extend(std::iter::repeat_n(0x85u8, 100_000));
    p.extend(b"Ns.");
    assert!(refused(&p).message.contains("deeper than"));
    // A key whose parts are shared 2^40 times over is refused quickly.
    let mut p = b"}Nq\x000".to_vec();
    for _ in 0..40 {
        p.extend(b"h\x00h\x00\x86q\x000");
    }
    p.extend(b"h\x00Ns.");
    assert!(refused(&p).message.contains("too many parts"));
}

#[test]
fn sharing_does_not_multiply_memory() {
    // x = (x, x) forty times: 2^40 leaves as a tree, forty nodes as the shared value.
    let mut p = b"Nq\x000".to_vec();
    for _ in 0..40 {
        p.extend(b"h\x00h\x00\x86q\x000");
    }
    p.extend(b"h\x00.");
    let v = plain(&p);
    let mut depth = 0;
    let mut at = &v;
    while let Value::Tuple(t) = at {
        let (Value::Tuple(a), Value::Tuple(b)) = (&t[0], &t[1]) else { break };
        assert!(Arc::ptr_eq(a, b));
        at = &t[0];
        depth += 1;
    }
    assert_eq!(depth, 39);
}
