//! Accuracy of the inline f32 transcendentals over the whole f32 domain, against f64 libm
//! rounded to f32: a sweep over evenly spaced bit patterns (both signs, denormals, huge values)
//! plus special values, through both the SIMD loop (contiguous input) and the scalar loop
//! (strided input), and for the functions with block routines through a fissioned kernel with
//! and without them. Prints the measured maximum ulp error of each function.

mod common;

use common::{parse, ulp_f32};
use jit::{CodegenOptions, KernelSpec};
use runtime::Tensor;

fn group(op: &str, attrs: &str) -> String {
    format!(
        "%s = \"test.source\"() : () -> tensor<*x!prim.any>\n%r = \"prim.FusionGroup\"(%s) ({{\n^bb0(%a: tensor<*x!prim.any>):\n  %y = \"{op}\"(%a){attrs} : (tensor<*x!prim.any>) -> tensor<*x!prim.any>\n  \"prim.Return\"(%y) : (tensor<*x!prim.any>) -> ()\n}}) : (tensor<*x!prim.any>) -> tensor<*x!prim.any>\n"
    )
}

fn sweep_inputs() -> Vec<f32> {
    let mut xs = Vec::new();
    let mut bits: u64 = 0;
    while bits < 0x7f80_0000 {
        let b = bits as u32;
        xs.push(f32::from_bits(b));
        xs.push(-f32::from_bits(b));
        bits += 1021;
    }
    xs.extend([0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, f32::MIN_POSITIVE, f32::MAX, f32::MIN, 1e-45, -1e-45]);
    // Dense coverage of the interesting range [-20, 20].
    for i in 0..400_000 {
        xs.push(-20.0 + 40.0 * i as f32 / 400_000.0);
    }
    xs
}

fn truth(op: &str, x: f64) -> f64 {
    match op {
        "aten.exp" => x.exp(),
        "aten.log" => x.ln(),
        "aten.tanh" => x.tanh(),
        "aten.sigmoid" => 1.0 / (1.0 + (-x).exp()),
        "aten.erf" => libm::erf(x),
        "aten.sin" => x.sin(),
        "aten.cos" => x.cos(),
        "aten.silu" => x / (1.0 + (-x).exp()),
        _ => f64::NAN,
    }
}

/// A group computing `op` of its input and a second transcendental function of it, which a
/// kernel of at least 2^18 elements runs in phases (`fission`): `op`'s phase calls its block
/// routine where the host has one (AVX-512F or AVX2, with FMA), or expands it inline.
fn fissioned_group(op: &str, attrs: &str) -> String {
    let other = if op == "aten.exp" { "aten.tanh" } else { "aten.exp" };
    format!(
        "%s = \"test.source\"() : () -> tensor<*x!prim.any>\n%r:2 = \"prim.FusionGroup\"(%s) ({{\n^bb0(%a: tensor<*x!prim.any>):\n  %y = \"{op}\"(%a){attrs} : (tensor<*x!prim.any>) -> tensor<*x!prim.any>\n  %z = \"{other}\"(%a) : (tensor<*x!prim.any>) -> tensor<*x!prim.any>\n  \"prim.Return\"(%y, %z) : (tensor<*x!prim.any>, tensor<*x!prim.any>) -> ()\n}}) : (tensor<*x!prim.any>) -> (tensor<*x!prim.any>, tensor<*x!prim.any>)\n"
    )
}

/// `op`'s results on `xs` through a fissioned kernel, with block routines (where the host has
/// them) and inline, which must agree bit for bit: `xs` as one row and, to end rows in partial
/// blocks (a partial 16- or 8-lane vector in the routines) and a padded 4-lane tail, as rows of
/// 1021 (its first `1021 k` values).
fn fissioned(op: &str, attrs: &str, xs: &[f32]) -> Vec<(f32, f32)> {
    let (m, g) = parse(&fissioned_group(op, attrs));
    let rows = xs.len() / 1021;
    let mut out = Vec::new();
    for (n, shape) in [(xs.len(), vec![xs.len()]), (rows * 1021, vec![rows, 1021])] {
        let t = Tensor::from_vec(xs[..n].to_vec(), &shape).unwrap();
        let spec = KernelSpec::of(std::slice::from_ref(&t));
        let run = |options| {
            let k = jit::compile_with(&m, g, &spec, options).unwrap();
            k.run(std::slice::from_ref(&t)).unwrap()[0].to_vec::<f32>().unwrap()
        };
        let routines = run(CodegenOptions::default());
        let inline = run(CodegenOptions { block_routines: false });
        for ((&x, &a), &b) in xs.iter().zip(&routines).zip(&inline) {
            assert!(a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()), "{op}({x:e}): routine {a:e}, inline {b:e}");
            out.push((x, a));
        }
    }
    out
}

/// Runs `op` on `xs` through the JIT and returns (max ulp, worst input) over the loops: the
/// SIMD and scalar loops of a one-function kernel, and for the functions with block routines
/// a fissioned kernel with and without them.
fn measure(op: &str, xs: &[f32]) -> (u64, f32) {
    let (m, g) = parse(&group(op, ""));
    let contiguous = Tensor::from_vec(xs.to_vec(), &[xs.len()]).unwrap();
    // A strided view of the same values: every other element of a buffer twice as long.
    let mut doubled = vec![0f32; xs.len() * 2];
    for (i, &x) in xs.iter().enumerate() {
        doubled[2 * i] = x;
    }
    let strided = Tensor::from_vec(doubled, &[xs.len() * 2]).unwrap().slice(0, Some(0), None, 2).unwrap();
    let mut worst = (0u64, 0f32);
    for (t, vector) in [(contiguous, true), (strided, false)] {
        let k = jit::compile(&m, g, &KernelSpec::of(std::slice::from_ref(&t))).unwrap();
        assert_eq!(k.lanes() > 1, vector, "{op}: unexpected loop kind");
        let out = k.run(&[t]).unwrap()[0].to_vec::<f32>().unwrap();
        for (&x, &y) in xs.iter().zip(&out) {
            let want = truth(op, x as f64) as f32;
            let e = ulp_f32(y, want);
            if e > worst.0 {
                worst = (e, x);
            }
        }
    }
    if matches!(op, "aten.exp" | "aten.tanh" | "aten.sigmoid" | "aten.log" | "aten.erf" | "aten.silu") {
        for (x, y) in fissioned(op, "", xs) {
            let e = ulp_f32(y, truth(op, x as f64) as f32);
            if e > worst.0 {
                worst = (e, x);
            }
        }
    }
    (worst.0, worst.1)
}

#[test]
fn transcendentals_are_within_their_ulp_bounds() {
    let xs = sweep_inputs();
    let bounds = [
        ("aten.exp", 2),
        ("aten.log", 2),
        ("aten.tanh", 8),
        ("aten.sigmoid", 8),
        ("aten.erf", 8),
        ("aten.sin", 8),
        ("aten.cos", 8),
        ("aten.silu", 8),
    ];
    let mut report = Vec::new();
    let mut bad = Vec::new();
    for (op, bound) in bounds {
        let (e, x) = measure(op, &xs);
        report.push(format!("{op}: max {e} ulp (at x = {x:e}), bound {bound}"));
        if e > bound {
            bad.push(format!("{op}: {e} ulp at x = {x:e} ({:#010x})", x.to_bits()));
        }
    }
    eprintln!("{}", report.join("\n"));
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// GELU (both forms) has no f64 truth here (the differential test compares it with the
/// reference kernels); its block routines must give the inline expansions' bits over the sweep.
#[test]
fn gelu_routines_equal_the_inline_expansions() {
    let xs = sweep_inputs();
    for attrs in ["", " {approximate = \"tanh\"}"] {
        assert_eq!(fissioned("aten.gelu", attrs, &xs).len(), xs.len() + xs.len() / 1021 * 1021);
    }
}

/// `clamp(exp(x), max=c)` compiles `exp` without overflow handling (its large results are
/// clamped anyway); the result must equal `exp` followed by the clamp bit for bit, over the
/// whole sweep (NaN, ±inf, denormal results), for bounds small, large, and beyond the
/// specialization's range (e^50, compiled the ordinary way), in a kernel of its own and in a
/// fissioned one.
#[test]
fn clamped_exp_equals_exp_then_clamp() {
    let xs = sweep_inputs();
    let (me, ge) = parse(&group("aten.exp", ""));
    let t = Tensor::from_vec(xs.clone(), &[xs.len()]).unwrap();
    let k = jit::compile(&me, ge, &KernelSpec::of(std::slice::from_ref(&t))).unwrap();
    let exp = k.run(std::slice::from_ref(&t)).unwrap()[0].to_vec::<f32>().unwrap();
    for text in ["10.0", "0.001", "1.0", "1.0e17", "5.2e21"] {
        let c: f64 = text.parse().unwrap();
        let body = format!(
            "%s = \"test.source\"() : () -> tensor<*x!prim.any>\n%r = \"prim.FusionGroup\"(%s) ({{\n^bb0(%a: tensor<*x!prim.any>):\n  %e = \"aten.exp\"(%a) : (tensor<*x!prim.any>) -> tensor<*x!prim.any>\n  %y = \"aten.clamp\"(%e) {{max = {text} : f64}} : (tensor<*x!prim.any>) -> tensor<*x!prim.any>\n  \"prim.Return\"(%y) : (tensor<*x!prim.any>) -> ()\n}}) : (tensor<*x!prim.any>) -> tensor<*x!prim.any>\n"
        );
        // With `tanh` beside it the kernel is fissioned: the capped `exp` is a phase of its
        // own (a block routine's `exp` where the host has one, the clamp applied by its readers).
        let fissioned = body
            .replace("  \"prim.Return\"(%y) : (tensor<*x!prim.any>) -> ()", "  %z = \"aten.tanh\"(%a) : (tensor<*x!prim.any>) -> tensor<*x!prim.any>\n  \"prim.Return\"(%y, %z) : (tensor<*x!prim.any>, tensor<*x!prim.any>) -> ()")
            .replace("%r = ", "%r:2 = ")
            .replace("}) : (tensor<*x!prim.any>) -> tensor<*x!prim.any>\n", "}) : (tensor<*x!prim.any>) -> (tensor<*x!prim.any>, tensor<*x!prim.any>)\n");
        for text in [body, fissioned] {
            let (m, g) = parse(&text);
            let k = jit::compile(&m, g, &KernelSpec::of(std::slice::from_ref(&t))).unwrap();
            let got = k.run(std::slice::from_ref(&t)).unwrap()[0].to_vec::<f32>().unwrap();
            let cf = c as f32;
            for ((&x, &e), &y) in xs.iter().zip(&exp).zip(&got) {
                let want = if e > cf { cf } else { e };
                assert!(
                    want.to_bits() == y.to_bits() || (want.is_nan() && y.is_nan()),
                    "clamp(exp({x:e}), max={c:e}): {y:e}, want {want:e}"
                );
            }
        }
    }
}
