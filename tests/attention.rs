//! The fused attention end to end: decomposed attention in Edge IR (strided q, k, v out of
//! `[B, L, H, E]` tensors, copies, batched products, scale, mask, softmax, the permuted copy of
//! the result) is run unfused by the interpreter, and fused by `fuse-attention` into a
//! `backend.kernel` that the runtime runs natively; the two must agree (within the rounding
//! of a different summation blocking), NaNs included, and the native result must have the
//! same bits on one and two threads. A kernel the runtime has no implementation for, or
//! operands the native kernel does not take (`f64`), run the region: exactly the unfused ops.

use runtime::{CompileOptions, IValue, Tensor, Weights};

#[derive(Clone, Copy, Debug)]
enum Mask {
    None,
    /// `where(mask, -inf, s)`.
    Fill,
    /// `where(mask, s, -inf)`.
    Keep,
    /// `s + mask` (an `f32` mask).
    Add,
}

#[derive(Clone, Copy, Debug)]
struct Case {
    b: usize,
    h: usize,
    l: usize,
    s: usize,
    e: usize,
    ev: usize,
    mask: Mask,
    /// `mul.Scalar` by it, `div.Scalar` by its inverse when negative, none when 0.
    scale: f64,
    dtype: &'static str,
    /// The softmax is `_safe_softmax`'s, decomposed in this spelling.
    safe: Option<Safe>,
}

/// How a decomposed `_safe_softmax` spells "all of a row's scores are `-inf`".
#[derive(Clone, Copy, Debug)]
enum Safe {
    /// `aten.all.dim(eq.Scalar(s, -inf))`, its zeros an `aten.zeros_like` (ATen spellings,
    /// which Edge has no mirror of).
    All,
    /// `logical_not(any.dim(logical_not(eq.Scalar(s, -inf))))`, as `torch.export`'s core
    /// decomposition gives it, its zeros a `full_like`.
    NotAnyNot,
}

/// The decomposed attention of `c` in Edge IR.
fn program(c: &Case) -> String {
    let Case { b, h, l, s, e, ev, dtype: f, .. } = *c;
    let n = b * h;
    let mut mask_arg = String::new();
    match c.mask {
        Mask::None => {}
        Mask::Fill | Mask::Keep => mask_arg = format!(", %mask: tensor<{l}x{s}xi1> {{prim.input = \"mask\"}}"),
        Mask::Add => mask_arg = format!(", %mask: tensor<{h}x{l}x{s}x{f}> {{prim.input = \"mask\"}}"),
    }
    let mut body = format!(
        r#"    %qp = edge.permute %q {{dims = [0, 2, 1, 3]}} : (tensor<{b}x{l}x{h}x{e}x{f}>) -> tensor<{b}x{h}x{l}x{e}x{f}>
    %kp = edge.permute %k {{dims = [0, 2, 1, 3]}} : (tensor<{b}x{s}x{h}x{e}x{f}>) -> tensor<{b}x{h}x{s}x{e}x{f}>
    %vp = edge.permute %v {{dims = [0, 2, 1, 3]}} : (tensor<{b}x{s}x{h}x{ev}x{f}>) -> tensor<{b}x{h}x{s}x{ev}x{f}>
    %kt = edge.permute %kp {{dims = [0, 1, 3, 2]}} : (tensor<{b}x{h}x{s}x{e}x{f}>) -> tensor<{b}x{h}x{e}x{s}x{f}>
    %qc = edge.clone %qp {{memory_format = 0 : i64}} : tensor<{b}x{h}x{l}x{e}x{f}>
    %q3 = edge.view %qc {{size = [{n} : i64, {l} : i64, {e} : i64]}} : (tensor<{b}x{h}x{l}x{e}x{f}>) -> tensor<{n}x{l}x{e}x{f}>
    %kc = edge.clone %kt {{memory_format = 0 : i64}} : tensor<{b}x{h}x{e}x{s}x{f}>
    %k3 = edge.view %kc {{size = [{n} : i64, {e} : i64, {s} : i64]}} : (tensor<{b}x{h}x{e}x{s}x{f}>) -> tensor<{n}x{e}x{s}x{f}>
    %sc3 = edge.bmm %q3, %k3 : (tensor<{n}x{l}x{e}x{f}>, tensor<{n}x{e}x{s}x{f}>) -> tensor<{n}x{l}x{s}x{f}>
    %sc = edge.view %sc3 {{size = [{b} : i64, {h} : i64, {l} : i64, {s} : i64]}} : (tensor<{n}x{l}x{s}x{f}>) -> tensor<{b}x{h}x{l}x{s}x{f}>
"#
    );
    let mut cur = "%sc".to_string();
    let st = format!("tensor<{b}x{h}x{l}x{s}x{f}>");
    if c.scale > 0.0 {
        body += &format!("    %scaled = edge.mul.Scalar {cur} {{other = {:?} : f64}} : {st}\n", c.scale);
        cur = "%scaled".into();
    } else if c.scale < 0.0 {
        body += &format!("    %scaled = edge.div.Scalar {cur} {{other = {:?} : f64}} : {st}\n", -1.0 / c.scale);
        cur = "%scaled".into();
    }
    let fill = format!("    %ninf = edge.scalar_tensor {{dtype = #prim.dtype<{f}>, s = 0xFFF0000000000000 : f64}} : () -> tensor<{f}>\n");
    match c.mask {
        Mask::None => {}
        Mask::Fill => {
            body += &fill;
            body += &format!("    %masked = edge.where.self %mask, %ninf, {cur} : (tensor<{l}x{s}xi1>, tensor<{f}>, {st}) -> {st}\n");
            cur = "%masked".into();
        }
        Mask::Keep => {
            body += &fill;
            body += &format!("    %masked = edge.where.self %mask, {cur}, %ninf : (tensor<{l}x{s}xi1>, {st}, tensor<{f}>) -> {st}\n");
            cur = "%masked".into();
        }
        Mask::Add => {
            body += &format!("    %masked = edge.add.Tensor {cur}, %mask : ({st}, tensor<{h}x{l}x{s}x{f}>) -> {st}\n");
            cur = "%masked".into();
        }
    }
    body += &format!("    %p = edge._softmax {cur} {{dim = -1 : i64, half_to_float = false}} : {st}\n");
    let mut probs = "%p";
    if let Some(how) = c.safe {
        let bt = format!("tensor<{b}x{h}x{l}x{s}xi1>");
        let rt = format!("tensor<{b}x{h}x{l}x1xi1>");
        body += &format!("    %isinf = edge.eq.Scalar {cur} {{other = 0xFFF0000000000000 : f64}} : ({st}) -> {bt}\n");
        match how {
            Safe::All => {
                body += &format!("    %rows = aten.all.dim %isinf {{dim = -1 : i64, keepdim = true}} : ({bt}) -> {rt}\n");
                body += &format!("    %zeros = aten.zeros_like %p : {st}\n");
            }
            Safe::NotAnyNot => {
                body += &format!("    %finite = edge.logical_not %isinf : {bt}\n");
                body += &format!("    %any = edge.any.dim %finite {{dim = -1 : i64, keepdim = true}} : ({bt}) -> {rt}\n");
                body += &format!("    %rows = edge.logical_not %any : {rt}\n");
                body += &format!("    %zeros = edge.full_like %p {{fill_value = 0 : i64, memory_format = 1 : i64, pin_memory = false}} : {st}\n");
            }
        }
        body += &format!("    %safe = edge.where.self %rows, %zeros, %p : ({rt}, {st}, {st}) -> {st}\n");
        probs = "%safe";
    }
    body += &format!(
        r#"    %p3 = edge.view {probs} {{size = [{n} : i64, {l} : i64, {s} : i64]}} : ({st}) -> tensor<{n}x{l}x{s}x{f}>
    %vc = edge.clone %vp {{memory_format = 0 : i64}} : tensor<{b}x{h}x{s}x{ev}x{f}>
    %v3 = edge.view %vc {{size = [{n} : i64, {s} : i64, {ev} : i64]}} : (tensor<{b}x{h}x{s}x{ev}x{f}>) -> tensor<{n}x{s}x{ev}x{f}>
    %o3 = edge.bmm %p3, %v3 : (tensor<{n}x{l}x{s}x{f}>, tensor<{n}x{s}x{ev}x{f}>) -> tensor<{n}x{l}x{ev}x{f}>
    %o4 = edge.view %o3 {{size = [{b} : i64, {h} : i64, {l} : i64, {ev} : i64]}} : (tensor<{n}x{l}x{ev}x{f}>) -> tensor<{b}x{h}x{l}x{ev}x{f}>
    %op = edge.permute %o4 {{dims = [0, 2, 1, 3]}} : (tensor<{b}x{h}x{l}x{ev}x{f}>) -> tensor<{b}x{l}x{h}x{ev}x{f}>
    %oc = edge.clone %op {{memory_format = 0 : i64}} : tensor<{b}x{l}x{h}x{ev}x{f}>
    func.return %oc : tensor<{b}x{l}x{h}x{ev}x{f}>
"#
    );
    format!(
        r#"module {{
  func.func @forward(%q: tensor<{b}x{l}x{h}x{e}x{f}> {{prim.input = "q"}}, %k: tensor<{b}x{s}x{h}x{e}x{f}> {{prim.input = "k"}}, %v: tensor<{b}x{s}x{h}x{ev}x{f}> {{prim.input = "v"}}{mask_arg}) -> tensor<{b}x{l}x{h}x{ev}x{f}> {{
{body}  }}
}}
"#
    )
}

/// Deterministic values in [-2, 2).
fn noise(n: usize, seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(1);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
        })
        .collect()
}

fn inputs(c: &Case) -> Vec<IValue> {
    let Case { b, h, l, s, e, ev, .. } = *c;
    let mk = |n: usize, sizes: &[usize], seed: u64| -> Tensor {
        let data = noise(n, seed);
        let t = Tensor::from_slice(&data, sizes).unwrap();
        if c.dtype == "f64" { t.to_dtype(ir::DType::F64).unwrap() } else { t }
    };
    let mut v = vec![
        IValue::Tensor(mk(b * l * h * e, &[b, l, h, e], 1)),
        IValue::Tensor(mk(b * s * h * e, &[b, s, h, e], 2)),
        IValue::Tensor(mk(b * s * h * ev, &[b, s, h, ev], 3)),
    ];
    match c.mask {
        Mask::None => {}
        Mask::Fill | Mask::Keep => {
            // True above the diagonal, and row 1 masked whole (all true for `fill`, all false
            // for `keep`).
            let mut m = vec![false; l * s];
            for i in 0..l {
                for j in 0..s {
                    m[i * s + j] = j > i;
                }
            }
            if l > 1 {
                for j in 0..s {
                    m[s + j] = matches!(c.mask, Mask::Fill);
                }
            }
            v.push(IValue::Tensor(Tensor::from_slice(&m, &[l, s]).unwrap()));
        }
        Mask::Add => v.push(IValue::Tensor(mk(h * l * s, &[h, l, s], 4))),
    }
    v
}

/// Compiles `text` (after `fuse-attention` when `fuse`, its kernels renamed `kernel` when
/// given); the program, and how many attentions the pass fused.
fn compile(text: &str, fuse: bool, kernel: Option<&str>) -> (runtime::CompiledProgram, usize) {
    let ctx = driver::default_context();
    let mut m = ir::parse_module(&ctx, text, "attention.ir").unwrap_or_else(|d| panic!("{}", d.render("attention.ir", text)));
    ir::verify(&ctx, &m).unwrap_or_else(|d| panic!("{}", d.render("attention.ir", text)));
    let mut fused = 0;
    if fuse {
        let top = m.top();
        fused = transforms::lowering::fuse_attention(&mut m, top).unwrap();
        ir::verify(&ctx, &m).unwrap_or_else(|d| panic!("after fuse-attention: {}", d.message));
        if let Some(name) = kernel {
            let mut kernels = Vec::new();
            m.walk(m.top(), ir::WalkOrder::PreOrder, &mut |o| {
                if m.op_name(o) == "backend.kernel" {
                    kernels.push(o);
                }
            });
            for k in kernels {
                m.set_attr(k, "kernel", ir::Attribute::str(name));
            }
        }
    }
    let p = runtime::compile(&m, &ctx, &Weights::new(), CompileOptions::default()).unwrap_or_else(|e| panic!("compile: {e}"));
    (p, fused)
}

/// Runs `text` (after `fuse-attention` when `fuse`), on `threads` threads; the output's
/// elements as `f64`, and how many attentions the pass fused.
fn run(text: &str, fuse: bool, kernel: Option<&str>, threads: usize, ins: &[IValue]) -> (Vec<f64>, usize) {
    let (p, fused) = compile(text, fuse, kernel);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    let out = pool.install(|| p.runtime().run(ins)).unwrap();
    (out[0].as_tensor().unwrap().to_vec_f64(), fused)
}

fn assert_close(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = if w.is_nan() { g.is_nan() } else { g == w || (g - w).abs() <= 1e-5 + 1e-4 * w.abs() };
        assert!(ok, "{what}: element {i}: fused {g}, unfused {w}");
    }
}

fn check(c: Case) {
    let want = check_inputs(&c, &inputs(&c));
    if matches!(c.mask, Mask::Fill | Mask::Keep) && c.l > 1 {
        let row = c.h * c.ev;
        let whole = &want[row..2 * row];
        if c.safe.is_some() {
            assert!(whole.iter().all(|&x| x == 0.0), "{c:?}: a fully masked row is zero after a safe softmax");
        } else {
            assert!(whole.iter().all(|x| x.is_nan()), "{c:?}: a fully masked row is NaN");
        }
    }
}

/// Checks the fused attention of `c` on `ins` against the unfused ops, and on one thread
/// against two; the unfused result.
fn check_inputs(c: &Case, ins: &[IValue]) -> Vec<f64> {
    let text = program(c);
    let (want, _) = run(&text, false, None, 1, ins);
    let (got1, fused) = run(&text, true, None, 1, ins);
    assert_eq!(fused, 1, "{c:?}: the attention is fused");
    assert_close(&got1, &want, &format!("{c:?}"));
    let (got2, _) = run(&text, true, None, 2, ins);
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&got1), bits(&got2), "{c:?}: the same bits on one and two threads");
    // A kernel the runtime does not know runs its region: the unfused ops, bit for bit.
    let (region, _) = run(&text, true, Some("no-such-kernel"), 1, ins);
    assert_eq!(bits(&region), bits(&want), "{c:?}: the region is the unfused ops");
    want
}

/// `c`'s inputs with the boolean mask (`[l, s]`) true where `masked` says.
fn with_mask(c: &Case, masked: impl Fn(usize, usize) -> bool) -> Vec<IValue> {
    let mut ins = inputs(c);
    let m: Vec<bool> = (0..c.l * c.s).map(|x| masked(x / c.s, x % c.s)).collect();
    ins[3] = IValue::Tensor(Tensor::from_slice(&m, &[c.l, c.s]).unwrap());
    ins
}

/// `c`'s inputs with element `at` of input `which` (`[b, ·, h, ·]`) set to `x`.
fn with_element(mut ins: Vec<IValue>, which: usize, at: usize, x: f32) -> Vec<IValue> {
    let t = ins[which].as_tensor().unwrap();
    let mut data = t.to_vec::<f32>().unwrap();
    data[at] = x;
    ins[which] = IValue::Tensor(Tensor::from_slice(&data, t.sizes()).unwrap());
    ins
}

#[test]
fn the_transformers_attention() {
    check(Case { b: 1, h: 4, l: 128, s: 128, e: 64, ev: 64, mask: Mask::Fill, scale: 0.125, dtype: "f32", safe: None });
}

#[test]
fn odd_sizes_several_batches_and_heads() {
    check(Case { b: 2, h: 3, l: 37, s: 53, e: 19, ev: 23, mask: Mask::Fill, scale: 0.3, dtype: "f32", safe: None });
    check(Case { b: 3, h: 1, l: 70, s: 9, e: 5, ev: 33, mask: Mask::Keep, scale: -0.25, dtype: "f32", safe: None });
    check(Case { b: 1, h: 2, l: 1, s: 17, e: 8, ev: 8, mask: Mask::None, scale: 0.0, dtype: "f32", safe: None });
    check(Case { b: 2, h: 2, l: 40, s: 40, e: 16, ev: 12, mask: Mask::Add, scale: 0.5, dtype: "f32", safe: None });
}

#[test]
fn one_head_with_many_rows_splits_its_rows() {
    check(Case { b: 1, h: 1, l: 200, s: 150, e: 32, ev: 40, mask: Mask::Fill, scale: 0.125, dtype: "f32", safe: None });
}

#[test]
fn infinities_and_nans_in_the_inputs_propagate_as_unfused() {
    let c = Case { b: 1, h: 2, l: 9, s: 11, e: 4, ev: 3, mask: Mask::None, scale: 1.0, dtype: "f32", safe: None };
    let text = program(&c);
    let mut ins = inputs(&c);
    let q = ins[0].as_tensor().unwrap().to_vec::<f32>().unwrap();
    let mut q2 = q.clone();
    q2[0] = f32::INFINITY;
    q2[9] = f32::NAN;
    q2[20] = f32::NEG_INFINITY;
    ins[0] = IValue::Tensor(Tensor::from_slice(&q2, ins[0].as_tensor().unwrap().sizes()).unwrap());
    let (want, _) = run(&text, false, None, 1, &ins);
    let (got, fused) = run(&text, true, None, 1, &ins);
    assert_eq!(fused, 1);
    assert!(want.iter().any(|x| x.is_nan()));
    assert_close(&got, &want, "non-finite inputs");
}

#[test]
fn f64_operands_run_the_region() {
    let c = Case { b: 1, h: 2, l: 6, s: 7, e: 5, ev: 4, mask: Mask::Fill, scale: 0.5, dtype: "f64", safe: None };
    let text = program(&c);
    let ins = inputs(&c);
    let (want, _) = run(&text, false, None, 1, &ins);
    let (got, fused) = run(&text, true, None, 1, &ins);
    assert_eq!(fused, 1);
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&got), bits(&want));
}

/// A causal mask computed from constants (`arange`, two `unsqueeze`s, `gt`) is computed once
/// at compile time whether the attention is fused or not: the fused kernel reads its operands
/// and writes none of them, as its region says.
#[test]
fn a_constant_mask_read_by_the_fused_kernel_is_hoisted() {
    let c = Case { b: 1, h: 2, l: 8, s: 8, e: 4, ev: 4, mask: Mask::Fill, scale: 0.5, dtype: "f32", safe: None };
    let mask_ops = "    %r = edge.arange.start_step {end = 8 : i64, start = 0 : i64} : () -> tensor<8xi64>\n    %row = edge.unsqueeze %r {dim = 1 : i64} : (tensor<8xi64>) -> tensor<8x1xi64>\n    %col = edge.unsqueeze %r {dim = 0 : i64} : (tensor<8xi64>) -> tensor<1x8xi64>\n    %mask = edge.gt.Tensor %col, %row : (tensor<1x8xi64>, tensor<8x1xi64>) -> tensor<8x8xi1>\n";
    let text = program(&c).replacen(", %mask: tensor<8x8xi1> {prim.input = \"mask\"}", "", 1).replacen("    %qp = ", &format!("{mask_ops}    %qp = "), 1);
    let mut ins = inputs(&c);
    ins.pop();
    // The four mask ops and the `-inf` fill (`scalar_tensor`; fused, in the kernel's region,
    // which the interpreter keeps for the calls the native kernel declines).
    for fuse in [false, true] {
        let (p, fused) = compile(&text, fuse, None);
        assert_eq!(fused, usize::from(fuse));
        assert_eq!(p.num_hoisted(), 5, "fused: {fuse}");
    }
    // The same results as the mask given as an input (row 1 of the given one is masked whole).
    let (got, _) = run(&text, true, None, 1, &ins);
    let given = program(&c);
    let mut want_ins = ins.clone();
    let causal: Vec<bool> = (0..64).map(|k| k % 8 > k / 8).collect();
    want_ins.push(IValue::Tensor(Tensor::from_slice(&causal, &[8, 8]).unwrap()));
    let (want, _) = run(&given, false, None, 1, &want_ins);
    assert_close(&got, &want, "hoisted causal mask");
}

/// Masks whose trailing columns the kernel skips in some blocks of rows (a `-inf` fill), or
/// in none: the unfused ops' results, NaN rows included.
#[test]
fn masks_that_replace_trailing_columns() {
    let c = Case { b: 2, h: 3, l: 45, s: 77, e: 12, ev: 20, mask: Mask::Fill, scale: 0.3, dtype: "f32", safe: None };
    // Causal, anti-causal, a band, an arbitrary pattern with rows masked whole.
    check_inputs(&c, &with_mask(&c, |i, j| j > i));
    check_inputs(&c, &with_mask(&c, |i, j| j < i));
    check_inputs(&c, &with_mask(&c, |i, j| !(j + 4 >= i && j <= i + 9)));
    let want = check_inputs(&c, &with_mask(&c, |i, j| (i * 7 + j * 13) % 5 < 2 || (20..=25).contains(&i)));
    let row = c.h * c.ev;
    assert!(want[20 * row..26 * row].iter().all(|x| x.is_nan()), "rows masked whole are NaN");
    let keep = Case { mask: Mask::Keep, ..c };
    check_inputs(&keep, &with_mask(&keep, |i, j| j <= i + 2));
    // The transformer's causal attention, keys longer than the queries.
    let long = Case { b: 1, h: 2, l: 70, s: 600, e: 8, ev: 40, mask: Mask::Fill, scale: 0.125, dtype: "f32", safe: None };
    check_inputs(&long, &with_mask(&long, |i, j| j > i));
}

/// A NaN or an infinity in a row of the values or keys that a block skips, or in one it
/// keeps: the unfused ops' NaNs (`0·inf` is NaN in the second product).
#[test]
fn nonfinite_values_and_keys_in_skipped_rows() {
    let c = Case { b: 1, h: 2, l: 70, s: 70, e: 8, ev: 6, mask: Mask::Fill, scale: 0.5, dtype: "f32", safe: None };
    let causal = with_mask(&c, |i, j| j > i);
    for (row, x) in [(69, f32::NAN), (50, f32::INFINITY), (3, f32::NEG_INFINITY)] {
        let ins = with_element(causal.clone(), 2, (row * c.h + 1) * c.ev + 2, x);
        let want = check_inputs(&c, &ins);
        // Column 2 of head 1 is NaN in the rows that give it probability zero (those before
        // it), and in the others NaN or infinite as the element is.
        for i in 0..c.l {
            let y = want[(i * c.h + 1) * c.ev + 2];
            assert!(if i < row || x.is_nan() { y.is_nan() } else { y.is_infinite() }, "row {i}, {x} in row {row} of the values: {y}");
        }
    }
    let ins = with_element(causal, 1, (60 * c.h) * c.e + 1, f32::NEG_INFINITY);
    check_inputs(&c, &ins);
}

/// An added mask of zeros and `-inf` (kept at full width).
#[test]
fn an_added_mask_of_zeros_and_minus_infinity() {
    let c = Case { b: 1, h: 2, l: 40, s: 40, e: 16, ev: 12, mask: Mask::Add, scale: 0.5, dtype: "f32", safe: None };
    let mut ins = inputs(&c);
    let m: Vec<f32> = (0..c.h * c.l * c.s).map(|x| if x % c.s > x / c.s % c.l { f32::NEG_INFINITY } else { 0.0 }).collect();
    ins[3] = IValue::Tensor(Tensor::from_slice(&m, &[c.h, c.l, c.s]).unwrap());
    check_inputs(&c, &ins);
}

/// `_safe_softmax` (the softmax of `scaled_dot_product_attention` with a boolean mask, as
/// `torch.export` decomposes it): rows masked whole are zeros, fused or not, in both spellings
/// of "all `-inf`", with every mask kind and with a NaN in a row of the values.
#[test]
fn a_safe_softmax_is_fused_and_gives_zeros_for_rows_masked_whole() {
    for safe in [Safe::NotAnyNot, Safe::All] {
        for mask in [Mask::Fill, Mask::Keep] {
            check(Case { b: 2, h: 4, l: 16, s: 16, e: 16, ev: 16, mask, scale: 0.25, dtype: "f32", safe: Some(safe) });
        }
        let c = Case { b: 2, h: 3, l: 45, s: 77, e: 12, ev: 20, mask: Mask::Fill, scale: 0.3, dtype: "f32", safe: Some(safe) };
        let want = check_inputs(&c, &with_mask(&c, |i, j| (i * 7 + j * 13) % 5 < 2 || (20..=25).contains(&i) || j > i + 30));
        let row = c.h * c.ev;
        assert!(want[20 * row..26 * row].iter().all(|&x| x == 0.0), "{safe:?}: rows masked whole are zeros");
        check_inputs(&c, &with_element(with_mask(&c, |i, j| j > i || i == 3), 2, (50 * c.h + 1) * c.ev + 2, f32::NAN));
        let add = Case { mask: Mask::Add, ..c };
        let mut ins = inputs(&add);
        let m: Vec<f32> = (0..add.h * add.l * add.s).map(|x| if x / add.s % add.l == 7 || x % add.s > x / add.s % add.l { f32::NEG_INFINITY } else { 0.0 }).collect();
        ins[3] = IValue::Tensor(Tensor::from_slice(&m, &[add.h, add.l, add.s]).unwrap());
        let want = check_inputs(&add, &ins);
        assert!(want[7 * row..8 * row].iter().all(|&x| x == 0.0), "{safe:?}: a row added -inf whole is zeros");
    }
}
