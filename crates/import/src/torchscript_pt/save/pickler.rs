//! A protocol-2 pickle writer for the values of a TorchScript archive (`data.pkl`,
//! `constants.pkl`): module objects as `GLOBAL`, `EMPTY_TUPLE`, `NEWOBJ`, state dict, `BUILD`;
//! tensors through `torch._utils._rebuild_tensor_v2` with a `BINPERSID` storage reference;
//! typed lists and dicts through `torch.jit._pickle`. It writes the [`Value`]s the reader in
//! `pickle` returns, so that every value it writes reads back equal.

use ir::DType;

use crate::torchscript_pt::pickle::{Storage, Tensor, Value};

const PROTO: u8 = 0x80;
const STOP: u8 = b'.';
const MARK: u8 = b'(';
const GLOBAL: u8 = b'c';
const EMPTY_TUPLE: u8 = b')';
const TUPLE: u8 = b't';
const TUPLE1: u8 = 0x85;
const TUPLE2: u8 = 0x86;
const TUPLE3: u8 = 0x87;
const EMPTY_LIST: u8 = b']';
const APPENDS: u8 = b'e';
const EMPTY_DICT: u8 = b'}';
const SETITEMS: u8 = b'u';
const NEWOBJ: u8 = 0x81;
const BUILD: u8 = b'b';
const REDUCE: u8 = b'R';
const BINPERSID: u8 = b'Q';
const NONE: u8 = b'N';
const NEWTRUE: u8 = 0x88;
const NEWFALSE: u8 = 0x89;
const BININT: u8 = b'J';
const BININT1: u8 = b'K';
const BININT2: u8 = b'M';
const LONG1: u8 = 0x8a;
const BINFLOAT: u8 = b'G';
const BINUNICODE: u8 = b'X';

/// The pickle of `value`, or what in it protocol 2 as TorchScript reads it cannot express.
pub fn pickle(value: &Value) -> Result<Vec<u8>, String> {
    let mut w = Writer { out: vec![PROTO, 2] };
    w.value(value, 0)?;
    w.out.push(STOP);
    Ok(w.out)
}

/// The name of the storage class of `dtype` (`FloatStorage`), as `torch` spells it.
pub fn storage_class(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "FloatStorage",
        DType::F64 => "DoubleStorage",
        DType::F16 => "HalfStorage",
        DType::BF16 => "BFloat16Storage",
        DType::I64 => "LongStorage",
        DType::I32 => "IntStorage",
        DType::I16 => "ShortStorage",
        DType::I8 => "CharStorage",
        DType::U8 => "ByteStorage",
        DType::Bool => "BoolStorage",
        DType::C64 => "ComplexFloatStorage",
        DType::C128 => "ComplexDoubleStorage",
    }
}

/// How deeply values may nest (the reader refuses deeper ones).
const MAX_DEPTH: usize = 256;

struct Writer {
    out: Vec<u8>,
}

impl Writer {
    fn value(&mut self, v: &Value, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!("values nest deeper than {MAX_DEPTH} levels"));
        }
        match v {
            Value::None => self.out.push(NONE),
            Value::Bool(b) => self.out.push(if *b { NEWTRUE } else { NEWFALSE }),
            Value::Int(i) => self.int(*i),
            Value::Float(f) => {
                self.out.push(BINFLOAT);
                self.out.extend_from_slice(&f.to_be_bytes());
            }
            Value::Str(s) => self.str(s)?,
            Value::Bytes(_) => return Err("bytes need protocol 3, which TorchScript archives do not use".into()),
            Value::Tuple(items) => self.tuple(items, depth)?,
            Value::List(list) => {
                let tag = match list.ty.as_deref() {
                    None => None,
                    Some("List[int]") => Some(("build_intlist", None)),
                    Some("List[float]") => Some(("build_doublelist", None)),
                    Some("List[bool]") => Some(("build_boollist", None)),
                    Some("List[Tensor]") => Some(("build_tensorlist", None)),
                    Some(other) => Some(("restore_type_tag", Some(other))),
                };
                match tag {
                    None => self.list(&list.items, depth)?,
                    Some((builder, ty)) => {
                        self.global("torch.jit._pickle", builder);
                        self.out.push(MARK);
                        self.list(&list.items, depth)?;
                        if let Some(ty) = ty {
                            self.str(ty)?;
                        }
                        self.out.push(TUPLE);
                        self.out.push(REDUCE);
                    }
                }
            }
            Value::Dict(dict) => {
                if let Some(ty) = &dict.ty {
                    self.global("torch.jit._pickle", "restore_type_tag");
                    self.out.push(MARK);
                    self.dict(&dict.entries, depth)?;
                    self.str(ty)?;
                    self.out.push(TUPLE);
                    self.out.push(REDUCE);
                } else {
                    self.dict(&dict.entries, depth)?;
                }
            }
            Value::Tensor(t) => self.tensor(t)?,
            Value::Object(o) => {
                let (module, name) = o
                    .class
                    .rsplit_once('.')
                    .ok_or_else(|| format!("class `{}` has no module", o.class))?;
                self.global(module, name);
                self.out.push(EMPTY_TUPLE);
                self.out.push(NEWOBJ);
                if let Some(state) = &o.state {
                    self.value(state, depth + 1)?;
                    self.out.push(BUILD);
                }
            }
            Value::Storage(s) => self.storage(s)?,
            Value::Global(g) => {
                let (module, name) = g.rsplit_once('.').ok_or_else(|| format!("global `{g}` has no module"))?;
                self.global(module, name);
            }
        }
        Ok(())
    }

    fn int(&mut self, i: i64) {
        if (0..=0xff).contains(&i) {
            self.out.push(BININT1);
            self.out.push(i as u8);
        } else if (0..=0xffff).contains(&i) {
            self.out.push(BININT2);
            self.out.extend_from_slice(&(i as u16).to_le_bytes());
        } else if let Ok(i) = i32::try_from(i) {
            self.out.push(BININT);
            self.out.extend_from_slice(&i.to_le_bytes());
        } else {
            // The shortest two's-complement little-endian form.
            let bytes = i.to_le_bytes();
            let mut n = 8;
            while n > 1 {
                let sign = if bytes[n - 2] & 0x80 != 0 { 0xff } else { 0 };
                if bytes[n - 1] != sign {
                    break;
                }
                n -= 1;
            }
            self.out.push(LONG1);
            self.out.push(n as u8);
            self.out.extend_from_slice(&bytes[..n]);
        }
    }

    fn str(&mut self, s: &str) -> Result<(), String> {
        let len = u32::try_from(s.len()).map_err(|_| "a string of 4 GiB or more".to_string())?;
        self.out.push(BINUNICODE);
        self.out.extend_from_slice(&len.to_le_bytes());
        self.out.extend_from_slice(s.as_bytes());
        Ok(())
    }

    fn global(&mut self, module: &str, name: &str) {
        self.out.push(GLOBAL);
        self.out.extend_from_slice(module.as_bytes());
        self.out.push(b'\n');
        self.out.extend_from_slice(name.as_bytes());
        self.out.push(b'\n');
    }

    fn tuple(&mut self, items: &[Value], depth: usize) -> Result<(), String> {
        if items.is_empty() {
            self.out.push(EMPTY_TUPLE);
            return Ok(());
        }
        if items.len() > 3 {
            self.out.push(MARK);
        }
        for item in items {
            self.value(item, depth + 1)?;
        }
        self.out.push(match items.len() {
            1 => TUPLE1,
            2 => TUPLE2,
            3 => TUPLE3,
            _ => TUPLE,
        });
        Ok(())
    }

    fn list(&mut self, items: &[Value], depth: usize) -> Result<(), String> {
        self.out.push(EMPTY_LIST);
        if !items.is_empty() {
            self.out.push(MARK);
            for item in items {
                self.value(item, depth + 1)?;
            }
            self.out.push(APPENDS);
        }
        Ok(())
    }

    fn dict(&mut self, entries: &[(Value, Value)], depth: usize) -> Result<(), String> {
        self.out.push(EMPTY_DICT);
        if !entries.is_empty() {
            self.out.push(MARK);
            for (k, v) in entries {
                self.value(k, depth + 1)?;
                self.value(v, depth + 1)?;
            }
            self.out.push(SETITEMS);
        }
        Ok(())
    }

    /// The persistent id `('storage', torch.<T>Storage, key, device, numel)`.
    fn storage(&mut self, s: &Storage) -> Result<(), String> {
        let class = storage_class(s.dtype);
        let numel = i64::try_from(s.numel).map_err(|_| format!("storage `{}` is too large", s.key))?;
        self.out.push(MARK);
        self.str("storage")?;
        self.global("torch", class);
        self.str(&s.key)?;
        self.str(&s.device)?;
        self.int(numel);
        self.out.push(TUPLE);
        self.out.push(BINPERSID);
        Ok(())
    }

    /// `_rebuild_tensor_v2(storage, offset, sizes, strides, requires_grad, OrderedDict())`.
    fn tensor(&mut self, t: &Tensor) -> Result<(), String> {
        let int = |v: u64| i64::try_from(v).map(Value::Int).map_err(|_| "a tensor size or stride past i64".to_string());
        let sizes = t.sizes.iter().map(|&v| int(v)).collect::<Result<Vec<_>, _>>()?;
        let strides = t.strides.iter().map(|&v| int(v)).collect::<Result<Vec<_>, _>>()?;
        self.global("torch._utils", "_rebuild_tensor_v2");
        self.out.push(MARK);
        self.storage(&t.storage)?;
        self.int(i64::try_from(t.offset).map_err(|_| "a tensor offset past i64".to_string())?);
        self.tuple(&sizes, 1)?;
        self.tuple(&strides, 1)?;
        self.out.push(if t.requires_grad { NEWTRUE } else { NEWFALSE });
        self.global("collections", "OrderedDict");
        self.out.push(EMPTY_TUPLE);
        self.out.push(REDUCE);
        self.out.push(TUPLE);
        self.out.push(REDUCE);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::torchscript_pt::pickle::{Dict, List, Object, unpickle, unpickle_plain};

    fn round_trip(v: &Value) {
        let bytes = pickle(v).unwrap();
        let back = unpickle(&bytes, &mut |_| Ok(0)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(&back, v);
    }

    fn s(text: &str) -> Value {
        Value::Str(text.into())
    }

    #[test]
    fn scalars_round_trip() {
        for i in [0, 1, 255, 256, 65535, 65536, -1, -2, i32::MIN as i64, i32::MAX as i64 + 1, i64::MIN, i64::MAX, -129, 128 << 32] {
            round_trip(&Value::Int(i));
        }
        for f in [0.0, -0.0, 1.5, f64::INFINITY, f64::MIN_POSITIVE] {
            round_trip(&Value::Float(f));
        }
        round_trip(&Value::None);
        round_trip(&Value::Bool(true));
        round_trip(&Value::Bool(false));
        round_trip(&s("héllo\n\"x\""));
        assert_eq!(pickle(&Value::None).unwrap(), b"\x80\x02N.");
        assert_eq!(pickle(&Value::Tuple(Arc::from([]))).unwrap(), b"\x80\x02).");
    }

    #[test]
    fn containers_round_trip() {
        let items = |n: i64| (0..n).map(Value::Int).collect::<Vec<_>>();
        for n in 0..6 {
            round_trip(&Value::Tuple(items(n).into()));
            round_trip(&Value::List(Arc::new(List { items: items(n), ty: None })));
        }
        round_trip(&Value::List(Arc::new(List { items: items(3), ty: Some("List[int]".into()) })));
        round_trip(&Value::List(Arc::new(List { items: vec![Value::Float(1.0)], ty: Some("List[float]".into()) })));
        round_trip(&Value::List(Arc::new(List { items: vec![s("a")], ty: Some("List[str]".into()) })));
        let dict = Dict { entries: vec![(s("b"), Value::Int(1)), (s("a"), Value::None)], ty: None };
        round_trip(&Value::Dict(Arc::new(dict.clone())));
        round_trip(&Value::Dict(Arc::new(Dict { ty: Some("Dict[str, int]".into()), ..dict })));
    }

    #[test]
    fn module_objects_and_tensors_round_trip() {
        let storage = Arc::new(Storage { key: "3".into(), dtype: DType::F32, device: "cpu".into(), numel: 12, index: 0 });
        let tensor = Value::Tensor(Arc::new(Tensor { storage, offset: 2, sizes: vec![2, 5], strides: vec![5, 1], requires_grad: false }));
        let child = Value::Object(Arc::new(Object {
            class: "__torch__.m.Child".into(),
            state: Some(Value::Dict(Arc::new(Dict { entries: vec![(s("training"), Value::Bool(false)), (s("weight"), tensor)], ty: None }))),
        }));
        let root = Value::Object(Arc::new(Object {
            class: "__torch__.m.Root".into(),
            state: Some(Value::Dict(Arc::new(Dict { entries: vec![(s("0"), child)], ty: None }))),
        }));
        round_trip(&root);
        let bytes = pickle(&root).unwrap();
        assert!(bytes.starts_with(b"\x80\x02c__torch__.m\nRoot\n)\x81}("), "{bytes:?}");
        // Without a storage resolver, the persistent id is refused: proof that it was written.
        assert!(unpickle_plain(&bytes).is_err());
        // Storages of every dtype the reader knows.
        for dtype in [DType::F64, DType::F16, DType::BF16, DType::I64, DType::I32, DType::I16, DType::I8, DType::U8, DType::Bool] {
            let storage = Arc::new(Storage { key: "0".into(), dtype, device: "cpu".into(), numel: 1, index: 0 });
            round_trip(&Value::Tensor(Arc::new(Tensor { storage, offset: 0, sizes: vec![], strides: vec![], requires_grad: false })));
        }
    }

    #[test]
    fn refusals_say_what() {
        assert!(pickle(&Value::Bytes(Arc::from(&b"x"[..]))).unwrap_err().contains("protocol 3"));
        let mut deep = Value::None;
        for _ in 0..300 {
            deep = Value::Tuple(Arc::from([deep]));
        }
        assert!(pickle(&deep).unwrap_err().contains("nest deeper"));
    }
}
