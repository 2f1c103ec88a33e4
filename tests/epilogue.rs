//! The fused linear layer end to end: `addmm` with a frozen weight followed by a residual
//! add, an exact GELU or a ReLU, in Edge IR, is run unfused (a prepacked product, then the
//! separate op) and fused by `fuse-epilogue` into a `backend.kernel {kernel = "linear"}` that
//! the runtime runs natively (the consumer applied to the product's tiles); the two must give
//! the same bits, on one and two threads, for odd sizes, a `k` of several blocks, a single
//! row, a product wide enough to pack its left operand, strided and transposed residuals and
//! non-finite values. Residuals that broadcast and products read twice stay unfused.

use runtime::{CompileOptions, IValue, Tensor, Weights};
use support::values;

/// What follows the product.
#[derive(Clone, Copy, Debug)]
enum Consumer {
    /// `add.Tensor(r, y)`, the residual first.
    AddLhs,
    /// `add.Tensor(y, r)`.
    AddRhs,
    Gelu,
    Relu,
}

/// How the residual operand is laid out.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Residual {
    /// A contiguous `[1, m, n]` input.
    Plain,
    /// The first `n` columns of an `[m, n + 5]` input: rows 5 elements apart.
    Sliced,
    /// The transpose of an `[n, m]` input.
    Transposed,
}

#[derive(Clone, Copy, Debug)]
struct Case {
    m: usize,
    k: usize,
    n: usize,
    consumer: Consumer,
    residual: Residual,
    /// Whether the product is viewed to `[1, m, n]` before its consumer.
    view: bool,
}

impl Case {
    fn new(m: usize, k: usize, n: usize, consumer: Consumer) -> Case {
        Case { m, k, n, consumer, residual: Residual::Plain, view: true }
    }
}

/// The program of `c` in Edge IR: inputs `x` and (for an add) the residual's source, then the
/// frozen weight and bias.
fn program(c: &Case) -> String {
    let Case { m, k, n, .. } = *c;
    let out = if c.view { format!("tensor<1x{m}x{n}xf32>") } else { format!("tensor<{m}x{n}xf32>") };
    let add = matches!(c.consumer, Consumer::AddLhs | Consumer::AddRhs);
    let (r_arg, r_ops) = match (add, c.residual) {
        (false, _) => (String::new(), String::new()),
        (true, Residual::Plain) => (format!("%r: {out}, "), String::new()),
        (true, Residual::Sliced) => {
            let w = n + 5;
            let sliced = format!("tensor<{m}x{n}xf32>");
            let view = if c.view { format!("  %r = edge.view %rs {{size = [1, {m}, {n}]}} : ({sliced}) -> {out}\n") } else { String::new() };
            let name = if c.view { "%rs" } else { "%r" };
            (
                format!("%rw: tensor<{m}x{w}xf32>, "),
                format!("  {name} = edge.slice.Tensor %rw {{dim = 1, start = 0, end = {n}, step = 1}} : (tensor<{m}x{w}xf32>) -> {sliced}\n{view}"),
            )
        }
        (true, Residual::Transposed) => {
            let t = format!("tensor<{m}x{n}xf32>");
            let view = if c.view { format!("  %r = edge.view %rt {{size = [1, {m}, {n}]}} : ({t}) -> {out}\n") } else { String::new() };
            let name = if c.view { "%rt" } else { "%r" };
            (format!("%rn: tensor<{n}x{m}xf32>, "), format!("  {name} = edge.permute %rn {{dims = [1, 0]}} : (tensor<{n}x{m}xf32>) -> {t}\n{view}"))
        }
    };
    // Without the view the consumer reads the product itself.
    let (y, yv) = if c.view {
        (format!("  %y = edge.view %p {{size = [1, {m}, {n}]}} : (tensor<{m}x{n}xf32>) -> {out}\n"), "%y")
    } else {
        (String::new(), "%p")
    };
    let consumer = match c.consumer {
        Consumer::AddLhs => format!("  %o = edge.add.Tensor %r, {yv} : {out}\n"),
        Consumer::AddRhs => format!("  %o = edge.add.Tensor {yv}, %r : {out}\n"),
        Consumer::Gelu => format!("  %o = edge.gelu {yv} : {out}\n"),
        Consumer::Relu => format!("  %o = edge.relu {yv} : {out}\n"),
    };
    format!(
        "func.func @f(%x: tensor<{m}x{k}xf32>, {r_arg}%w: tensor<{n}x{k}xf32> {{prim.param = \"w\"}}, %b: tensor<{n}xf32> {{prim.param = \"b\"}}) -> {out} {{\n\
         {r_ops}  %wt = edge.permute %w {{dims = [1, 0]}} : (tensor<{n}x{k}xf32>) -> tensor<{k}x{n}xf32>\n\
         \x20 %p = edge.addmm %b, %x, %wt : (tensor<{n}xf32>, tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32>\n\
         {y}{consumer}  func.return %o : {out}\n}}\n"
    )
}

fn tensor(v: &[f32], sizes: &[usize]) -> Tensor {
    Tensor::from_slice(v, sizes).unwrap()
}

/// The user inputs of `c` (`x`, and the residual's source for an add), with non-finite
/// values in `x` when `specials`; and the weights.
fn inputs(c: &Case, specials: bool) -> (Vec<IValue>, Weights) {
    let Case { m, k, n, .. } = *c;
    let mut x = values(m * k, 1, 1.0);
    if specials && x.len() > 7 {
        x[1] = f32::NAN;
        x[7] = f32::INFINITY;
    }
    let mut ins = vec![IValue::Tensor(tensor(&x, &[m, k]))];
    if matches!(c.consumer, Consumer::AddLhs | Consumer::AddRhs) {
        let r = match c.residual {
            Residual::Plain if c.view => tensor(&values(m * n, 2, 4.0), &[1, m, n]),
            Residual::Plain => tensor(&values(m * n, 2, 4.0), &[m, n]),
            Residual::Sliced => tensor(&values(m * (n + 5), 2, 4.0), &[m, n + 5]),
            Residual::Transposed => tensor(&values(m * n, 2, 4.0), &[n, m]),
        };
        ins.push(IValue::Tensor(r));
    }
    let mut w = Weights::new();
    // Scaled so that the GELU sees both of its tails.
    w.insert("w", tensor(&values(n * k, 3, 6.0 / (k as f32).sqrt()), &[n, k]));
    w.insert("b", tensor(&values(n, 4, 1.0), &[n]));
    (ins, w)
}

/// Compiles `text` (after `fuse-epilogue` when `fuse`); the program and how many layers the
/// pass fused.
fn compile(text: &str, fuse: bool, weights: &Weights) -> (runtime::CompiledProgram, usize) {
    let ctx = driver::default_context();
    let mut m = ir::parse_module(&ctx, text, "linear.ir").unwrap_or_else(|d| panic!("{}", d.render("linear.ir", text)));
    ir::verify(&ctx, &m).unwrap_or_else(|d| panic!("{}", d.render("linear.ir", text)));
    let mut fused = 0;
    if fuse {
        let top = m.top();
        fused = transforms::lowering::fuse_epilogue(&mut m, top).unwrap();
        ir::verify(&ctx, &m).unwrap_or_else(|d| panic!("after fuse-epilogue: {}", d.message));
    }
    let p = runtime::compile(&m, &ctx, weights, CompileOptions::default()).unwrap_or_else(|e| panic!("compile: {e}"));
    (p, fused)
}

/// The output's bits after a run on `threads` threads (two calls, so the second runs on
/// planned storage).
fn run(text: &str, fuse: bool, threads: usize, ins: &[IValue], w: &Weights) -> (Vec<u32>, usize) {
    let (p, fused) = compile(text, fuse, w);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    let mut rt = p.runtime();
    let first = pool.install(|| rt.run(ins)).unwrap();
    let out = pool.install(|| rt.run(ins)).unwrap();
    let bits = |v: &IValue| v.as_tensor().unwrap().to_vec::<f32>().unwrap().iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&first[0]), bits(&out[0]), "two calls give the same bits");
    (bits(&out[0]), fused)
}

fn check_with(c: Case, specials: bool) {
    let text = program(&c);
    let (ins, w) = inputs(&c, specials);
    let (want, _) = run(&text, false, 1, &ins, &w);
    let (got, fused) = run(&text, true, 1, &ins, &w);
    assert_eq!(fused, 1, "{c:?}: the layer is fused\n{text}");
    assert_eq!(got, want, "{c:?}: the fused layer gives the unfused bits");
    let (got2, _) = run(&text, true, 2, &ins, &w);
    assert_eq!(got2, want, "{c:?}: the same bits on two threads");
    if matches!(c.consumer, Consumer::Relu) {
        assert!(want.contains(&0) && want.iter().any(|&b| f32::from_bits(b) > 0.0), "{c:?}: both sides of the ReLU");
    }
}

fn check(c: Case) {
    check_with(c, false);
}

#[test]
fn the_transformers_layers() {
    check(Case::new(128, 256, 256, Consumer::AddLhs));
    check(Case::new(128, 256, 1024, Consumer::Gelu));
    check(Case::new(128, 1024, 256, Consumer::AddLhs));
}

#[test]
fn odd_sizes_either_side_of_the_sum_and_every_activation() {
    for consumer in [Consumer::AddLhs, Consumer::AddRhs, Consumer::Gelu, Consumer::Relu] {
        check(Case::new(37, 300, 70, consumer));
        check(Case { view: false, ..Case::new(13, 17, 33, consumer) });
        // Wide enough that the left operand is packed per call, with a short last panel.
        check(Case::new(29, 40, 521, consumer));
        // A single row: the matrix-vector product, then the consumer.
        check(Case::new(1, 600, 45, consumer));
    }
}

#[test]
fn strided_and_transposed_residuals() {
    for residual in [Residual::Sliced, Residual::Transposed] {
        for view in [true, false] {
            check(Case { residual, view, ..Case::new(21, 530, 40, Consumer::AddLhs) });
            check(Case { residual, view, ..Case::new(5, 9, 70, Consumer::AddRhs) });
        }
    }
}

#[test]
fn non_finite_values_propagate_as_unfused() {
    for consumer in [Consumer::AddLhs, Consumer::Gelu, Consumer::Relu] {
        check_with(Case::new(9, 20, 40, consumer), true);
    }
}

/// A program that must stay as it is.
fn unfused(text: &str) {
    let ctx = driver::default_context();
    let mut m = ir::parse_module(&ctx, text, "linear.ir").unwrap_or_else(|d| panic!("{}", d.render("linear.ir", text)));
    let top = m.top();
    assert_eq!(transforms::lowering::fuse_epilogue(&mut m, top).unwrap(), 0, "{text}");
}

#[test]
fn broadcast_residuals_and_products_read_twice_stay_unfused() {
    let c = Case::new(4, 8, 16, Consumer::AddLhs);
    let text = program(&c);
    // A residual of one row, broadcast down the result.
    unfused(
        &text
            .replace("%r: tensor<1x4x16xf32>", "%r: tensor<16xf32>")
            .replace("edge.add.Tensor %r, %y : tensor<1x4x16xf32>", "edge.add.Tensor %r, %y : (tensor<16xf32>, tensor<1x4x16xf32>) -> tensor<1x4x16xf32>"),
    );
    // The product is also returned.
    unfused(&text.replace("func.return %o : tensor<1x4x16xf32>", "func.return %o, %p : tensor<1x4x16xf32>, tensor<4x16xf32>").replace(
        ") -> tensor<1x4x16xf32> {",
        ") -> (tensor<1x4x16xf32>, tensor<4x16xf32>) {",
    ));
    // A tanh-approximated GELU is another function.
    let g = program(&Case::new(4, 8, 16, Consumer::Gelu));
    unfused(&g.replace("edge.gelu %y :", "edge.gelu %y {approximate = \"tanh\"} :"));
}
