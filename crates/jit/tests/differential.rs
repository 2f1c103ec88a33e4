//! Differential testing: randomly generated fusion groups (random DAGs of the supported ops
//! over random broadcast shapes, dtypes and layouts) run through the JIT and through the
//! runtime's kernels op by op; results must agree bitwise for exact ops and within a
//! tolerance for the f32 transcendental functions and for value-1 `addcmul` over one float
//! dtype, which the JIT rounds once (a fused multiply-add, where the host has FMA) and the
//! runtime twice (the product, then the sum): they may differ by the product's rounding error,
//! so the bound is ulp(a·b) + 2 ulp(result) (see [`fma_eq`]). `JIT_DIFF_CASES` scales the number of
//! groups (default 10000), `JIT_DIFF_SEED` picks the seed; a failure prints both.

mod common;

use common::{Rng, exact_eq, parse, rand_tensor, reference, ulp_f32};
use ir::DType;
use jit::{JitError, KernelSpec};
use runtime::Tensor;

const ANY: &str = "tensor<*x!prim.any>";

/// One generated value: its name in the text.
struct Gen {
    lines: Vec<String>,
    vals: Vec<String>,
    next: usize,
}

impl Gen {
    fn op(&mut self, name: &str, args: &[&str], attrs: &str) -> String {
        let v = format!("%v{}", self.next);
        self.next += 1;
        let tys = vec![ANY; args.len()].join(", ");
        let attrs = if attrs.is_empty() { String::new() } else { format!(" {{{attrs}}}") };
        self.lines.push(format!("    {v} = \"{name}\"({}){attrs} : ({tys}) -> {ANY}", args.join(", ")));
        v
    }
}

fn float_lit(r: &mut Rng) -> String {
    let v = *r.pick(&[0.5, 1.0, -1.0, 2.0, -2.5, 3.0, 0.0, 10.0, -0.25]);
    format!("{v:?} : f64")
}

fn scalar_lit(r: &mut Rng) -> String {
    match r.below(3) {
        0 => float_lit(r),
        1 => format!("{} : i64", r.below(7) as i64 - 3),
        _ => (if r.chance(0.5) { "true" } else { "false" }).to_string(),
    }
}

const EXACT_UNARY: &[&str] = &[
    "aten.neg", "aten.abs", "aten.relu", "aten.floor", "aten.ceil", "aten.round", "aten.trunc", "aten.sqrt",
    "aten.rsqrt", "aten.reciprocal", "aten.square", "aten.logical_not",
];
const EXACT_BINARY: &[&str] = &[
    "aten.add.Tensor", "aten.sub.Tensor", "aten.mul.Tensor", "aten.div.Tensor", "aten.maximum", "aten.minimum",
    "aten.eq.Tensor", "aten.ne.Tensor", "aten.lt.Tensor", "aten.le.Tensor", "aten.gt.Tensor", "aten.ge.Tensor",
    "aten.logical_and", "aten.logical_or", "aten.logical_xor", "aten.div.Tensor_mode", "aten.remainder.Tensor",
    "aten.fmod.Tensor",
];
const APPROX: &[&str] = &[
    "aten.exp", "aten.log", "aten.tanh", "aten.sigmoid", "aten.erf", "aten.sin", "aten.cos", "aten.gelu", "aten.silu",
];

struct Case {
    text: String,
    inputs: Vec<Tensor>,
    /// Outputs produced by an f32 transcendental (compared with a tolerance), by index.
    approx: Vec<bool>,
    /// Whether the outputs are `addcmul(s, b, c)` followed by `b` and `c` broadcast to its shape
    /// (the first compared with [`fma_eq`], the other two exactly).
    fma: bool,
}

fn gen_case(r: &mut Rng) -> Case {
    let rank = r.below(4);
    let shape: Vec<usize> = (0..rank).map(|_| *r.pick(&[1, 1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33])).collect();
    let shape = if r.chance(0.02) && rank > 0 { let mut s = shape; s[0] = 0; s } else { shape };
    // Mostly one dtype per group (vectorizable), sometimes mixed.
    let main = *r.pick(&[DType::F32, DType::F32, DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool]);
    let n_in = 1 + r.below(3);
    let mut inputs = Vec::new();
    let mut in_types = Vec::new();
    for _ in 0..n_in {
        let d = if r.chance(0.25) { *r.pick(&[DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool]) } else { main };
        // Broadcast from every side: drop leading dims or set dims to 1.
        let drop = if rank > 0 && r.chance(0.2) { r.below(rank + 1) } else { 0 };
        let sizes: Vec<usize> = shape[drop..].iter().map(|&s| if r.chance(0.2) { 1 } else { s }).collect();
        let layout = r.below(5);
        let t = rand_tensor(r, d, &sizes, layout);
        in_types.push(ANY.to_string());
        inputs.push(t);
    }
    let mut g = Gen { lines: Vec::new(), vals: (0..n_in).map(|i| format!("%in{i}")).collect(), next: 0 };
    let n_ops = 1 + r.below(8);
    for _ in 0..n_ops {
        let a = r.pick(&g.vals).clone();
        let b = r.pick(&g.vals).clone();
        let c = r.pick(&g.vals).clone();
        let v = match r.below(10) {
            0..=2 => {
                let name = *r.pick(EXACT_UNARY);
                g.op(name, &[&a], "")
            }
            3..=6 => {
                let name = *r.pick(EXACT_BINARY);
                let attrs = match name {
                    "aten.add.Tensor" | "aten.sub.Tensor" if r.chance(0.3) => format!("alpha = {}", if r.chance(0.5) { "2 : i64".to_string() } else { float_lit(r) }),
                    "aten.div.Tensor_mode" => format!("rounding_mode = \"{}\"", r.pick(&["trunc", "floor"])),
                    _ => String::new(),
                };
                g.op(name, &[&a, &b], &attrs)
            }
            7 => g.op("aten.where.self", &[&a, &b, &c], ""),
            8 => match r.below(5) {
                0 => g.op("aten.add.Scalar", &[&a], &format!("other = {}", scalar_lit(r))),
                1 => g.op("aten.mul.Scalar", &[&a], &format!("other = {}", scalar_lit(r))),
                2 => g.op("aten.gt.Scalar", &[&a], &format!("other = {}", scalar_lit(r))),
                3 => {
                    let e = *r.pick(&["2 : i64", "3 : i64", "0.5 : f64", "-1.0 : f64", "2.0 : f64", "-2.0 : f64", "1.5 : f64"]);
                    g.op("aten.pow.Tensor_Scalar", &[&a], &format!("exponent = {e}"))
                }
                _ => {
                    let lo = if r.chance(0.7) { format!("min = {}", float_lit(r)) } else { String::new() };
                    let hi = format!("max = {}", float_lit(r));
                    let attrs = if lo.is_empty() { hi } else { format!("{hi}, {lo}") };
                    g.op("aten.clamp", &[&a], &attrs)
                }
            },
            _ => {
                let d = *r.pick(&["f32", "f64", "i32", "i64", "i1"]);
                g.op("aten._to_copy", &[&a], &format!("dtype = #prim.dtype<{d}>"))
            }
        };
        g.vals.push(v);
    }
    // Outputs: the last value, sometimes another one, sometimes through a transcendental.
    let mut outs = vec![g.vals.last().cloned().unwrap_or_default()];
    if r.chance(0.3) {
        outs.push(r.pick(&g.vals[n_in..]).clone());
    }
    let mut approx = vec![false; outs.len()];
    if r.chance(0.4) {
        for (o, ap) in outs.iter_mut().zip(approx.iter_mut()) {
            let name = *r.pick(APPROX);
            let attrs = if name == "aten.gelu" && r.chance(0.5) { "approximate = \"tanh\"" } else { "" };
            *o = g.op(name, &[o], attrs);
            *ap = true;
        }
    }
    // Or an addcmul of the last value, with its factors broadcast to its shape (`where` over an
    // all-true-or-false mask of that shape picks the factor either way) as extra outputs.
    let fma = !approx[0] && r.chance(0.3);
    if fma {
        let (b, c) = (r.pick(&g.vals).clone(), r.pick(&g.vals).clone());
        let attrs = if r.chance(0.2) { format!("value = {}", if r.chance(0.5) { "2 : i64".to_string() } else { float_lit(r) }) } else { String::new() };
        let s = outs[0].clone();
        let v = g.op("aten.addcmul", &[&s, &b, &c], &attrs);
        let full = g.op("aten.eq.Tensor", &[&v, &v], "");
        let bb = g.op("aten.where.self", &[&full, &b, &b], "");
        let cc = g.op("aten.where.self", &[&full, &c, &c], "");
        outs = vec![v, bb, cc];
        approx = vec![false; 3];
    }
    let args: Vec<String> = (0..n_in).map(|i| format!("%in{i}: {ANY}")).collect();
    let srcs: Vec<String> = (0..n_in).map(|i| format!("  %s{i} = \"test.source\"() : () -> {ANY}")).collect();
    let operands: Vec<String> = (0..n_in).map(|i| format!("%s{i}")).collect();
    let rtys = vec![ANY; outs.len()].join(", ");
    let text = format!(
        "{}\n  %r:{} = \"prim.FusionGroup\"({}) ({{\n  ^bb0({}):\n{}\n    \"prim.Return\"({}) : ({rtys}) -> ()\n  }}) : ({}) -> ({rtys})\n",
        srcs.join("\n"),
        outs.len(),
        operands.join(", "),
        args.join(", "),
        g.lines.join("\n"),
        outs.join(", "),
        in_types.join(", ")
    );
    Case { text, inputs, approx, fma }
}

/// The spacing of floating values above `|x|` in `x`'s precision (`f32` when `single`).
fn ulp_at(x: f64, single: bool) -> f64 {
    let x = x.abs();
    if single {
        let x = x as f32;
        (f32::from_bits(x.to_bits() + 1) - x) as f64
    } else {
        f64::from_bits(x.to_bits() + 1) - x
    }
}

/// The result `a` of `addcmul(s, b, c)` against the reference `e`, given the factors `b` and
/// `c` broadcast to its shape. Rounded once (`fl(b·c + s)`) instead of twice
/// (`fl(fl(b·c) + s)`), the results differ by at most the product's rounding error, half an ulp
/// of b·c, plus the two final roundings, half an ulp of each result: within ulp(b·c) + 2 ulp(e).
/// Other dtypes, and products that overflow, must agree exactly.
fn fma_eq(a: &Tensor, e: &Tensor, b: &Tensor, c: &Tensor) -> Result<(), String> {
    if a.dtype() != e.dtype() || a.sizes() != e.sizes() {
        return Err(format!("got {} {:?}, expected {} {:?}", a.dtype(), a.sizes(), e.dtype(), e.sizes()));
    }
    if !a.dtype().is_floating() || b.dtype() != a.dtype() || c.dtype() != a.dtype() {
        return exact_eq(a, e);
    }
    let single = a.dtype() == DType::F32;
    let (x, y, bs, cs) = (a.to_vec_f64(), e.to_vec_f64(), b.to_vec_f64(), c.to_vec_f64());
    if [y.len(), bs.len(), cs.len()] != [x.len(); 3] {
        return Err("outputs of different sizes".into());
    }
    for i in 0..x.len() {
        let p = bs[i] * cs[i];
        let p_overflows = if single { (p as f32).is_infinite() } else { p.is_infinite() };
        if x[i].to_bits() == y[i].to_bits() || (x[i].is_nan() && y[i].is_nan()) || p_overflows {
            continue;
        }
        let bound = ulp_at(p, single) + 2.0 * ulp_at(y[i], single);
        let d = (x[i] - y[i]).abs();
        if d.is_nan() || d > bound {
            return Err(format!("element {i}: got {} expected {} (factors {} and {}, bound {bound})", x[i], y[i], bs[i], cs[i]));
        }
    }
    Ok(())
}

/// Tolerance for transcendental outputs against the reference's own (libm) values.
fn approx_eq(a: &Tensor, b: &Tensor) -> Result<(), String> {
    if a.dtype() != b.dtype() || a.sizes() != b.sizes() {
        return Err(format!("got {} {:?}, expected {} {:?}", a.dtype(), a.sizes(), b.dtype(), b.sizes()));
    }
    if a.dtype() != DType::F32 {
        return exact_eq(a, b);
    }
    let (x, y) = (a.to_vec::<f32>().unwrap_or_default(), b.to_vec::<f32>().unwrap_or_default());
    for i in 0..x.len() {
        let d = (x[i] - y[i]).abs();
        let ok = ulp_f32(x[i], y[i]) <= 16 || d <= 2e-6 * (1.0 + y[i].abs()) || (x[i].abs() < f32::MIN_POSITIVE && y[i].abs() < f32::MIN_POSITIVE);
        if !ok {
            return Err(format!("element {i}: got {} expected {} ({} ulp)", x[i], y[i], ulp_f32(x[i], y[i])));
        }
    }
    Ok(())
}

#[test]
fn random_fusion_groups_match_the_reference() {
    let cases: usize = std::env::var("JIT_DIFF_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let seed: u64 = std::env::var("JIT_DIFF_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5EED_2024);
    let (mut ok, mut both_err, mut unsupported, mut vectorized) = (0usize, 0usize, 0usize, 0usize);
    // addcmul results that differ from the reference's (rounded once by a fused multiply-add).
    let mut rounded_once = 0usize;
    let mut fma_cases = 0usize;
    let mut failures = Vec::new();
    let mut ref_panics: Vec<u64> = Vec::new();
    for i in 0..cases {
        let case_seed = seed.wrapping_add(i as u64);
        let mut r = Rng(case_seed);
        let case = gen_case(&mut r);
        fma_cases += usize::from(case.fma);
        let (m, op) = parse(&case.text);
        // A panic in the reference kernels is their bug, not the JIT's: counted and reported.
        let want = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| reference(&m, op, &case.inputs))) {
            Ok(w) => w,
            Err(_) => {
                ref_panics.push(case_seed);
                continue;
            }
        };
        let got = jit::compile(&m, op, &KernelSpec::of(&case.inputs)).and_then(|k| {
            if k.lanes() > 1 {
                vectorized += 1;
            }
            k.run(&case.inputs)
        });
        let verdict: Result<(), String> = match (&want, &got) {
            (Ok(w), Ok(g)) => {
                let mut res = Ok(());
                if w.len() != g.len() {
                    res = Err("different number of outputs".into());
                }
                for (k, (gv, wv)) in g.iter().zip(w).enumerate() {
                    let c = if case.fma && k == 0 && w.len() == 3 {
                        if gv.to_vec_f64().iter().zip(wv.to_vec_f64()).any(|(a, b)| a.to_bits() != b.to_bits() && !(a.is_nan() && b.is_nan())) {
                            rounded_once += 1;
                        }
                        fma_eq(gv, wv, &w[1], &w[2])
                    } else if case.approx[k] {
                        approx_eq(gv, wv)
                    } else {
                        exact_eq(gv, wv)
                    };
                    if let Err(e) = c {
                        res = Err(format!("output {k}: {e}"));
                        break;
                    }
                }
                res
            }
            (Err(_), Err(_)) => {
                both_err += 1;
                Ok(())
            }
            (_, Err(JitError::Unsupported(_))) => {
                unsupported += 1;
                Ok(())
            }
            (Ok(_), Err(e)) => Err(format!("JIT failed: {e}")),
            (Err(e), Ok(_)) => Err(format!("reference failed ({e}) but the JIT succeeded")),
        };
        if verdict.is_ok() && got.is_ok() {
            ok += 1;
        }
        if let Err(e) = verdict {
            failures.push(format!("case seed {case_seed} (JIT_DIFF_SEED={seed}, case {i}): {e}\n{}\ninputs: {:?}", case.text, case.inputs));
            if failures.len() >= 5 {
                break;
            }
        }
    }
    eprintln!("{cases} groups: {ok} agree, {both_err} rejected by both, {unsupported} unsupported by the JIT, {vectorized} vectorized");
    eprintln!("{fma_cases} with addcmul, {rounded_once} of them rounded once (a fused multiply-add)");
    // The reference kernels must never panic either: a panic there is a runtime bug.
    assert!(
        ref_panics.is_empty(),
        "the reference panicked on {} group(s), case seeds {:?}",
        ref_panics.len(),
        &ref_panics[..ref_panics.len().min(5)]
    );
    assert!(failures.is_empty(), "{} failure(s); first:\n{}", failures.len(), failures.join("\n\n"));
    // Where the host has FMA, the JIT fuses value-1 addcmul: some results must differ from
    // the reference's twice-rounded ones.
    #[cfg(target_arch = "x86_64")]
    if cases >= 1_000 && std::arch::is_x86_feature_detected!("fma") {
        assert!(rounded_once > 0, "no addcmul result was rounded once in {fma_cases} cases");
    }
    assert!(unsupported * 10 <= cases, "too many unsupported groups: {unsupported}");
}
