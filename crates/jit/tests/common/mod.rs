//! Shared test helpers: parsing fusion groups, the op-by-op reference, tensors and a PRNG.
#![allow(dead_code)]

use std::collections::HashMap;

use dialect_aten::{ArgSource, bind_args};
use ir::{Attribute, Context, DType, Module, OpId};
use runtime::{IValue, Tensor};

/// The `bench_pointwise` chain as one fusion group.
pub const POINTWISE: &str = include_str!("../data/bench_pointwise.ir");

/// A context with the prim and aten dialects (and unregistered ops for test sources).
pub fn context() -> Context {
    let mut ctx = Context::new();
    dialect_prim::register(&mut ctx);
    dialect_aten::register(&mut ctx);
    ctx.set_allow_unregistered(true);
    ctx
}

/// Parses `text` and returns the module with its first fusion group.
pub fn parse(text: &str) -> (Module, OpId) {
    let ctx = context();
    let m = match ir::parse_module(&ctx, text, "test.ir") {
        Ok(m) => m,
        Err(d) => panic!("parse error: {d}\n{text}"),
    };
    let g = jit::find_fusion_groups(&m);
    assert!(!g.is_empty(), "no fusion group in\n{text}");
    let op = g[0];
    (m, op)
}

pub fn attr_value(a: &Attribute) -> IValue {
    use dialect_prim::kinds::Attr as PA;
    match dialect_prim::kinds::attr(a) {
        PA::None => return IValue::None,
        PA::DType(d) => return IValue::ScalarType(d),
        PA::Device(d) => return IValue::Device(d.into()),
        PA::Other(_) => {}
    }
    match a {
        Attribute::Bool(b) => IValue::Bool(*b),
        Attribute::Int(i) => IValue::Int(*i),
        Attribute::Float(f) => IValue::Float(f.get()),
        Attribute::Str(s) => IValue::Str(s.clone()),
        Attribute::Array(items) => {
            if items.iter().all(|i| matches!(i, Attribute::Int(_))) {
                IValue::IntList(items.iter().filter_map(|i| i.as_int()).collect())
            } else {
                IValue::List(items.iter().map(attr_value).collect())
            }
        }
        _ => IValue::None,
    }
}

/// The reference: the runtime's kernels applied op by op to the group's body. Also returns
/// every intermediate value by the op index in the body.
pub fn reference(m: &Module, group: OpId, inputs: &[Tensor]) -> Result<Vec<Tensor>, String> {
    let region = m.regions(group)[0];
    let block = m.region_blocks(region)[0];
    let mut env: HashMap<ir::ValueId, IValue> = HashMap::new();
    for (&a, t) in m.block_args(block).iter().zip(inputs) {
        env.insert(a, IValue::Tensor(t.clone()));
    }
    let reg = runtime::registry();
    for op in m.block_ops(block) {
        let name = m.op_name(op).to_string();
        if name == "prim.Return" {
            return m
                .operands(op)
                .iter()
                .map(|v| env[v].as_tensor().map(|t| t.clone()).map_err(|e| e.message))
                .collect();
        }
        if name == "prim.Constant" {
            let v = attr_value(m.attr(op, "value").unwrap());
            env.insert(m.results(op)[0], v);
            continue;
        }
        let schema = dialect_aten::schemas().iter().find(|s| s.op_name() == name).ok_or(format!("no schema {name}"))?;
        let bound = bind_args(schema, m, op).map_err(|e| e.to_string())?;
        let args: Vec<IValue> = bound
            .iter()
            .map(|b| match b {
                ArgSource::Operand(i) => env[&m.operands(op)[*i]].clone(),
                ArgSource::Const(a) => attr_value(a),
            })
            .collect();
        let out = reg.call(&name, &args).map_err(|e| format!("{}: {}", e.op, e.message))?;
        env.insert(m.results(op)[0], out.into_iter().next().ok_or("no result")?);
    }
    Err("no prim.Return".into())
}

/// SplitMix64.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.unit().max(1e-300), self.unit());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

/// A random float: mostly normal values, sometimes special ones.
pub fn rand_float(r: &mut Rng) -> f64 {
    if r.chance(0.04) {
        *r.pick(&[0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 1e30, -1e30, 1e-40, 0.5, -0.5, 1.0, -1.0, 2.0, 1e10])
    } else {
        r.normal() * 3.0
    }
}

pub fn rand_int(r: &mut Rng) -> i64 {
    if r.chance(0.03) {
        *r.pick(&[0, i32::MAX as i64, i32::MIN as i64, i64::MAX, i64::MIN, -1, 1])
    } else {
        r.below(41) as i64 - 20
    }
}

/// A tensor of `dtype` and `sizes` with random values; laid out contiguously, transposed,
/// strided or expanded depending on `layout` (0..4).
pub fn rand_tensor(r: &mut Rng, dtype: DType, sizes: &[usize], layout: usize) -> Tensor {
    let n: usize = sizes.iter().product();
    let make = |r: &mut Rng, n: usize, sizes: &[usize]| -> Tensor {
        match dtype {
            DType::F32 => Tensor::from_vec((0..n).map(|_| rand_float(r) as f32).collect::<Vec<_>>(), sizes).unwrap(),
            DType::F64 => Tensor::from_vec((0..n).map(|_| rand_float(r)).collect::<Vec<_>>(), sizes).unwrap(),
            DType::I32 => Tensor::from_vec((0..n).map(|_| rand_int(r) as i32).collect::<Vec<_>>(), sizes).unwrap(),
            DType::I64 => Tensor::from_vec((0..n).map(|_| rand_int(r)).collect::<Vec<_>>(), sizes).unwrap(),
            _ => Tensor::from_vec((0..n).map(|_| r.chance(0.5)).collect::<Vec<_>>(), sizes).unwrap(),
        }
    };
    match layout {
        // Transposed: build the reversed shape and permute back.
        1 if sizes.len() >= 2 => {
            let rev: Vec<usize> = sizes.iter().rev().copied().collect();
            let t = make(r, n, &rev);
            let perm: Vec<i64> = (0..sizes.len() as i64).rev().collect();
            t.permute(&perm).unwrap()
        }
        // Every other element of a larger buffer along the last dim, at an offset.
        2 if !sizes.is_empty() => {
            let mut big = sizes.to_vec();
            let last = big.len() - 1;
            big[last] = sizes[last] * 2 + 1;
            let t = make(r, big.iter().product(), &big);
            t.slice(last as i64, Some(1), None, 2).unwrap().narrow(last as i64, 0, sizes[last]).unwrap()
        }
        // Expanded along dims of size > 1 chosen at random (stride 0).
        3 if !sizes.is_empty() => {
            let small: Vec<usize> = sizes.iter().map(|&s| if r.chance(0.5) { 1 } else { s }).collect();
            let t = make(r, small.iter().product(), &small);
            let target: Vec<i64> = sizes.iter().map(|&s| s as i64).collect();
            t.expand(&target).unwrap()
        }
        _ => make(r, n, sizes),
    }
}

/// Distance in units in the last place between two f32 values of the same sign (huge otherwise).
pub fn ulp_f32(a: f32, b: f32) -> u64 {
    if a == b || (a.is_nan() && b.is_nan()) {
        return 0;
    }
    if a.is_nan() || b.is_nan() {
        return u64::MAX;
    }
    let key = |x: f32| -> i64 {
        let i = x.to_bits() as i32 as i64;
        if i < 0 { i32::MIN as i64 - i } else { i }
    };
    (key(a) - key(b)).unsigned_abs()
}

/// Elementwise equality: bit-equal, both NaN, or zeros of either sign.
pub fn exact_eq(a: &Tensor, b: &Tensor) -> Result<(), String> {
    if a.dtype() != b.dtype() || a.sizes() != b.sizes() {
        return Err(format!("got {} {:?}, expected {} {:?}", a.dtype(), a.sizes(), b.dtype(), b.sizes()));
    }
    let (x, y) = (a.to_vec_f64(), b.to_vec_f64());
    let (xi, yi) = (a.to_vec_i64(), b.to_vec_i64());
    for i in 0..x.len() {
        let ok = if a.dtype().is_floating() {
            x[i].to_bits() == y[i].to_bits() || (x[i].is_nan() && y[i].is_nan()) || (x[i] == 0.0 && y[i] == 0.0)
        } else {
            xi[i] == yi[i]
        };
        if !ok {
            return Err(format!("element {i}: got {} expected {}", x[i], y[i]));
        }
    }
    Ok(())
}
