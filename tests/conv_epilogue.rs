//! The fused convolution end to end: a convolution with a frozen filter and bias followed by a
//! residual add and/or an activation (`relu`, a clamp, `hardswish` as its decomposition writes
//! it), in Edge IR, is run unfused (a prepacked convolution, then the separate ops) and fused
//! by `fuse-epilogue` into a `backend.kernel {kernel = "conv"}` that the runtime runs natively
//! (the residual and activation applied to the output's tiles); the two must give the same
//! bits, on one and two threads, on the column-panel, grouped, 1×1 and depthwise paths, with
//! non-finite values.

use runtime::{CompileOptions, IValue, Tensor, Weights};
use support::values;

/// What follows the convolution.
#[derive(Clone, Copy, Debug)]
enum Consumer {
    Relu,
    Relu6,
    Hardswish,
    /// `hardswish` as PyTorch's core decomposition writes it: `(y · clamp(y + 3)) / 6`.
    HardswishCore,
    /// `add.Tensor(r, y)`, the residual first.
    AddLhs,
    /// `add.Tensor(y, r)` then `relu` (a ResNet block's end).
    AddRhsRelu,
}

const CONSUMERS: [Consumer; 6] =
    [Consumer::Relu, Consumer::Relu6, Consumer::Hardswish, Consumer::HardswishCore, Consumer::AddLhs, Consumer::AddRhsRelu];

/// A convolution's shape: `n` images of `cin` channels of `h × w`, `cout` filters of
/// `k × k` in `groups` groups, `stride`, padding `k / 2`.
#[derive(Clone, Copy, Debug)]
struct Conv {
    n: usize,
    cin: usize,
    cout: usize,
    groups: usize,
    h: usize,
    w: usize,
    k: usize,
    stride: usize,
}

impl Conv {
    fn out(&self) -> (usize, usize) {
        let p = self.k / 2;
        ((self.h + 2 * p - self.k) / self.stride + 1, (self.w + 2 * p - self.k) / self.stride + 1)
    }
}

fn program(c: &Conv, consumer: Consumer) -> String {
    let Conv { n, cin, cout, groups, h, w, k, stride } = *c;
    let (oh, ow) = c.out();
    let p = k / 2;
    let ty = format!("tensor<{n}x{cout}x{oh}x{ow}xf32>");
    let add = matches!(consumer, Consumer::AddLhs | Consumer::AddRhsRelu);
    let r_arg = if add { format!("%r: {ty}, ") } else { String::new() };
    let tail = match consumer {
        Consumer::Relu => format!("  %o = edge.relu %y : {ty}\n"),
        Consumer::Relu6 => format!("  %o = edge.clamp %y {{min = 0, max = 6}} : {ty}\n"),
        Consumer::Hardswish => format!(
            "  %a = edge.add.Scalar %y {{other = 3}} : {ty}\n  %c = edge.clamp %a {{min = 0, max = 6}} : {ty}\n\
             \x20 %d = edge.div.Scalar %c {{other = 6}} : {ty}\n  %o = edge.mul.Tensor %y, %d : {ty}\n"
        ),
        Consumer::HardswishCore => format!(
            "  %a = edge.add.Scalar %y {{other = 3}} : {ty}\n  %c = edge.clamp %a {{min = 0}} : {ty}\n  %c6 = edge.clamp %c {{max = 6}} : {ty}\n\
             \x20 %m = edge.mul.Tensor %y, %c6 : {ty}\n  %o = edge.div.Scalar %m {{other = 6}} : {ty}\n"
        ),
        Consumer::AddLhs => format!("  %o = edge.add.Tensor %r, %y : {ty}\n"),
        Consumer::AddRhsRelu => format!("  %s = edge.add.Tensor %y, %r : {ty}\n  %o = edge.relu %s : {ty}\n"),
    };
    format!(
        "func.func @f(%x: tensor<{n}x{cin}x{h}x{w}xf32>, {r_arg}%wt: tensor<{cout}x{cg}x{k}x{k}xf32> {{prim.param = \"w\"}}, %b: tensor<{cout}xf32> {{prim.param = \"b\"}}) -> {ty} {{\n\
         \x20 %y = edge.convolution %x, %wt, %b {{stride = [{stride}, {stride}], padding = [{p}, {p}], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = {groups}}} : (tensor<{n}x{cin}x{h}x{w}xf32>, tensor<{cout}x{cg}x{k}x{k}xf32>, tensor<{cout}xf32>) -> {ty}\n\
         {tail}  func.return %o : {ty}\n}}\n",
        cg = cin / groups
    )
}

fn inputs(c: &Conv, consumer: Consumer) -> (Vec<IValue>, Weights) {
    let Conv { n, cin, cout, groups, h, w, k, .. } = *c;
    let (oh, ow) = c.out();
    let mut x = values(n * cin * h * w, 1, 4.0);
    x[1] = f32::NAN;
    x[7] = f32::INFINITY;
    x[20] = f32::NEG_INFINITY;
    let mut ins = vec![IValue::Tensor(Tensor::from_slice(&x, &[n, cin, h, w]).unwrap())];
    if matches!(consumer, Consumer::AddLhs | Consumer::AddRhsRelu) {
        let mut r = values(n * cout * oh * ow, 2, 4.0);
        r[5] = f32::NAN;
        ins.push(IValue::Tensor(Tensor::from_slice(&r, &[n, cout, oh, ow]).unwrap()));
    }
    let mut wts = Weights::new();
    let fan_in = cin / groups * k * k;
    wts.insert("w", Tensor::from_slice(&values(cout * fan_in, 3, 4.0 / (fan_in as f32).sqrt()), &[cout, cin / groups, k, k]).unwrap());
    wts.insert("b", Tensor::from_slice(&values(cout, 4, 1.0), &[cout]).unwrap());
    (ins, wts)
}

/// The output's bits after two calls on `threads` threads (the second on planned storage),
/// and how many convolutions `fuse-epilogue` fused (with `fuse`).
fn run(text: &str, fuse: bool, threads: usize, ins: &[IValue], w: &Weights) -> (Vec<u32>, usize) {
    let ctx = driver::default_context();
    let mut m = ir::parse_module(&ctx, text, "conv.ir").unwrap_or_else(|d| panic!("{}", d.render("conv.ir", text)));
    ir::verify(&ctx, &m).unwrap_or_else(|d| panic!("{}", d.render("conv.ir", text)));
    let mut fused = 0;
    if fuse {
        let top = m.top();
        fused = transforms::lowering::fuse_conv_epilogue(&ctx, &mut m, top).unwrap();
        ir::verify(&ctx, &m).unwrap_or_else(|d| panic!("after fuse-epilogue: {}", d.message));
    }
    let p = runtime::compile(&m, &ctx, w, CompileOptions::default()).unwrap_or_else(|e| panic!("compile: {e}"));
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    let mut rt = p.runtime();
    let bits = |v: &IValue| v.as_tensor().unwrap().to_vec::<f32>().unwrap().iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let first = pool.install(|| rt.run(ins)).unwrap();
    let out = pool.install(|| rt.run(ins)).unwrap();
    assert_eq!(bits(&first[0]), bits(&out[0]), "two calls give the same bits");
    (bits(&out[0]), fused)
}

/// The bits of `text` run unfused, after checking that `fuse-epilogue` fuses its one
/// convolution and that the fused kernel gives those bits on one and two threads (`what` names
/// the case).
fn fused_gives_unfused_bits(text: &str, ins: &[IValue], w: &Weights, what: &str) -> Vec<u32> {
    let (want, _) = run(text, false, 1, ins, w);
    let (got, fused) = run(text, true, 1, ins, w);
    assert_eq!(fused, 1, "{what}: the convolution is fused\n{text}");
    assert_eq!(got, want, "{what}: the fused convolution gives the unfused bits");
    let (got2, _) = run(text, true, 2, ins, w);
    assert_eq!(got2, want, "{what}: the same bits on two threads");
    want
}

fn check(c: Conv) {
    for consumer in CONSUMERS {
        let text = program(&c, consumer);
        let (ins, w) = inputs(&c, consumer);
        let want = fused_gives_unfused_bits(&text, &ins, &w, &format!("{c:?} {consumer:?}"));
        if !matches!(consumer, Consumer::AddLhs) {
            let sides = want.iter().any(|&b| f32::from_bits(b) == 0.0) && want.iter().any(|&b| f32::from_bits(b) > 0.0);
            assert!(sides, "{c:?} {consumer:?}: both sides of the activation");
        }
    }
}

#[test]
fn column_panels_strided_and_grouped() {
    check(Conv { n: 2, cin: 5, cout: 20, groups: 1, h: 17, w: 19, k: 3, stride: 2 });
    check(Conv { n: 1, cin: 8, cout: 12, groups: 2, h: 13, w: 21, k: 3, stride: 1 });
    // Enough work to split the panels across two threads.
    check(Conv { n: 1, cin: 16, cout: 64, groups: 1, h: 40, w: 40, k: 3, stride: 1 });
}

#[test]
fn pointwise_and_depthwise() {
    check(Conv { n: 2, cin: 6, cout: 19, groups: 1, h: 7, w: 9, k: 1, stride: 1 });
    // Few positions and many channels: the pixel-major product.
    check(Conv { n: 2, cin: 96, cout: 80, groups: 1, h: 7, w: 7, k: 1, stride: 1 });
    check(Conv { n: 2, cin: 48, cout: 64, groups: 1, h: 7, w: 7, k: 3, stride: 1 });
    check(Conv { n: 1, cin: 32, cout: 64, groups: 1, h: 14, w: 14, k: 3, stride: 2 });
    check(Conv { n: 2, cin: 24, cout: 24, groups: 24, h: 15, w: 13, k: 3, stride: 1 });
    check(Conv { n: 1, cin: 16, cout: 16, groups: 16, h: 29, w: 31, k: 5, stride: 2 });
}

/// A fire module's expansion (SqueezeNet): a 1×1 and a 3×3 convolution of one input, each with
/// its `relu`, concatenated along channels, of `n` images.
fn fire(n: usize, cin: usize, e1: usize, e3: usize, h: usize, w: usize) -> String {
    let x = format!("tensor<{n}x{cin}x{h}x{w}xf32>");
    let (t1, t3) = (format!("tensor<{n}x{e1}x{h}x{w}xf32>"), format!("tensor<{n}x{e3}x{h}x{w}xf32>"));
    let out = format!("tensor<{n}x{}x{h}x{w}xf32>", e1 + e3);
    let opts = |p: usize| format!("{{stride = [1, 1], padding = [{p}, {p}], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1}}");
    format!(
        "func.func @f(%x: {x}, %w1: tensor<{e1}x{cin}x1x1xf32> {{prim.param = \"w1\"}}, %b1: tensor<{e1}xf32> {{prim.param = \"b1\"}}, \
         %w3: tensor<{e3}x{cin}x3x3xf32> {{prim.param = \"w3\"}}, %b3: tensor<{e3}xf32> {{prim.param = \"b3\"}}) -> {out} {{\n\
         \x20 %y1 = edge.convolution %x, %w1, %b1 {o1} : ({x}, tensor<{e1}x{cin}x1x1xf32>, tensor<{e1}xf32>) -> {t1}\n\
         \x20 %r1 = edge.relu %y1 : {t1}\n\
         \x20 %y3 = edge.convolution %x, %w3, %b3 {o3} : ({x}, tensor<{e3}x{cin}x3x3xf32>, tensor<{e3}xf32>) -> {t3}\n\
         \x20 %r3 = edge.relu %y3 : {t3}\n\
         \x20 %l = prim.ListConstruct %r1, %r3 : ({t1}, {t3}) -> !prim.list<tensor<*xf32>>\n\
         \x20 %o = edge.cat %l {{dim = 1}} : (!prim.list<tensor<*xf32>>) -> {out}\n\
         \x20 func.return %o : {out}\n}}\n",
        o1 = opts(0),
        o3 = opts(1)
    )
}

/// A concatenation of fused convolutions of one image becomes one `conv_cat` kernel that writes
/// each convolution into its channels of the result: the unfused bits, on one and two threads;
/// a batch of two keeps its separate kernels and `cat`.
#[test]
fn concatenated_convolutions() {
    for &(n, cin, e1, e3, h, w) in &[(1, 16, 24, 40, 23, 19), (1, 8, 64, 64, 30, 30), (2, 6, 10, 14, 9, 11), (1, 96, 64, 32, 7, 7)] {
        let text = fire(n, cin, e1, e3, h, w);
        let mut x = values(n * cin * h * w, 1, 4.0);
        x[3] = f32::NAN;
        let ins = vec![IValue::Tensor(Tensor::from_slice(&x, &[n, cin, h, w]).unwrap())];
        let mut wts = Weights::new();
        wts.insert("w1", Tensor::from_slice(&values(e1 * cin, 3, 1.0 / (cin as f32).sqrt()), &[e1, cin, 1, 1]).unwrap());
        wts.insert("b1", Tensor::from_slice(&values(e1, 4, 1.0), &[e1]).unwrap());
        wts.insert("w3", Tensor::from_slice(&values(e3 * cin * 9, 5, 1.0 / (9.0 * cin as f32).sqrt()), &[e3, cin, 3, 3]).unwrap());
        wts.insert("b3", Tensor::from_slice(&values(e3, 6, 1.0), &[e3]).unwrap());
        let (want, _) = run(&text, false, 1, &ins, &wts);
        let (got, fused) = run(&text, true, 1, &ins, &wts);
        assert_eq!(fused, if n == 1 { 3 } else { 2 }, "n = {n}: both convolutions fused, and their cat for one image\n{text}");
        assert_eq!(got, want, "n = {n}: the fused concatenation gives the unfused bits");
        let (got2, _) = run(&text, true, 2, &ins, &wts);
        assert_eq!(got2, want, "n = {n}: the same bits on two threads");
    }
}

/// A convolution with its `relu`, then a 3 × 3 stride-2 max pool (`pad`, `ceil_mode`) of `n`
/// images of `cin × h × w`, the stem of SqueezeNet, ResNet or ShuffleNet.
fn pooled_stem(n: usize, cin: usize, cout: usize, h: usize, w: usize, pad: usize, ceil: bool) -> (String, [usize; 2]) {
    let (oh, ow) = ((h + 2 - 3) / 2 + 1, (w + 2 - 3) / 2 + 1);
    let size = |i: usize| {
        let num = i + 2 * pad - 3 + if ceil { 1 } else { 0 };
        let o = num / 2 + 1;
        if ceil && (o - 1) * 2 >= i + pad { o - 1 } else { o }
    };
    let (ph, pw) = (size(oh), size(ow));
    let (x, y, p) = (format!("tensor<{n}x{cin}x{h}x{w}xf32>"), format!("tensor<{n}x{cout}x{oh}x{ow}xf32>"), format!("tensor<{n}x{cout}x{ph}x{pw}"));
    let text = format!(
        "func.func @f(%x: {x}, %wt: tensor<{cout}x{cin}x3x3xf32> {{prim.param = \"w\"}}, %b: tensor<{cout}xf32> {{prim.param = \"b\"}}) -> {p}xf32> {{\n\
         \x20 %y = edge.convolution %x, %wt, %b {{stride = [2, 2], padding = [1, 1], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1}} : ({x}, tensor<{cout}x{cin}x3x3xf32>, tensor<{cout}xf32>) -> {y}\n\
         \x20 %r = edge.relu %y : {y}\n\
         \x20 %m:2 = edge.max_pool2d_with_indices %r {{kernel_size = [3, 3], stride = [2, 2], padding = [{pad}, {pad}], dilation = [1, 1], ceil_mode = {ceil}}} : ({y}) -> ({p}xf32>, {p}xi64>)\n\
         \x20 func.return %m#0 : {p}xf32>\n}}\n"
    );
    (text, [ph, pw])
}

/// A fused convolution whose only reader is a 3 × 3 stride-2 max pool becomes one `conv_pool`
/// kernel with it: the unfused bits, on one and two threads, padded and not, for a batch, and
/// where `ceil_mode` leaves a partial window (which the runtime declines and interprets).
#[test]
fn pooled_convolutions() {
    for &(n, cin, cout, h, w, pad, ceil) in &[(1, 3, 24, 65, 64, 1, false), (2, 3, 16, 41, 125, 0, true), (1, 4, 64, 66, 64, 1, false), (1, 3, 8, 64, 64, 0, true)] {
        let (text, [ph, pw]) = pooled_stem(n, cin, cout, h, w, pad, ceil);
        let mut x = values(n * cin * h * w, 1, 4.0);
        x[3] = f32::NAN;
        let ins = vec![IValue::Tensor(Tensor::from_slice(&x, &[n, cin, h, w]).unwrap())];
        let mut wts = Weights::new();
        wts.insert("w", Tensor::from_slice(&values(cout * cin * 9, 3, 1.0 / (9.0 * cin as f32).sqrt()), &[cout, cin, 3, 3]).unwrap());
        wts.insert("b", Tensor::from_slice(&values(cout, 4, 1.0), &[cout]).unwrap());
        let (want, _) = run(&text, false, 1, &ins, &wts);
        assert_eq!(want.len(), n * cout * ph * pw);
        let (got, fused) = run(&text, true, 1, &ins, &wts);
        assert_eq!(fused, 2, "the convolution and its pool fused\n{text}");
        assert_eq!(got, want, "{text}: the fused pool gives the unfused bits");
        let (got2, _) = run(&text, true, 2, &ins, &wts);
        assert_eq!(got2, want, "{text}: the same bits on two threads");
    }
}

/// A filter computed from parameters (batch norm folded into it: `w · scale`) is a constant of
/// the `conv_pool` kernel that reads it: it is computed once, when the program is compiled, so
/// the kernel packs it and runs natively (a kernel holding other kernels, as `conv_pool` and
/// `conv_cat` do, is as pure as their bodies), and the results are the unfused bits.
#[test]
fn folded_filters_are_constants_of_pooled_kernels() {
    let (n, cin, cout, h, w) = (1, 3, 16, 65, 64);
    let (pooled, _) = pooled_stem(n, cin, cout, h, w, 1, false);
    let folded = pooled
        .replace("%b: tensor<16xf32> {prim.param = \"b\"})", "%b: tensor<16xf32> {prim.param = \"b\"}, %s: tensor<16x1x1x1xf32> {prim.param = \"s\"})")
        .replace(
            "  %y = edge.convolution %x, %wt, %b",
            "  %wf = edge.mul.Tensor %wt, %s : (tensor<16x3x3x3xf32>, tensor<16x1x1x1xf32>) -> tensor<16x3x3x3xf32>\n  %y = edge.convolution %x, %wf, %b",
        );
    assert!(folded.contains("%wf, %b"), "{folded}");
    let mut wts = Weights::new();
    wts.insert("w", Tensor::from_slice(&values(cout * cin * 9, 3, 0.3), &[cout, cin, 3, 3]).unwrap());
    wts.insert("b", Tensor::from_slice(&values(cout, 4, 1.0), &[cout]).unwrap());
    wts.insert("s", Tensor::from_slice(&values(cout, 5, 2.0), &[cout, 1, 1, 1]).unwrap());
    let x = values(n * cin * h * w, 1, 4.0);
    let ins = vec![IValue::Tensor(Tensor::from_slice(&x, &[n, cin, h, w]).unwrap())];
    let hoisted = |text: &str| {
        let ctx = driver::default_context();
        let mut m = ir::parse_module(&ctx, text, "conv.ir").unwrap_or_else(|d| panic!("{}", d.render("conv.ir", text)));
        let top = m.top();
        transforms::lowering::fuse_conv_epilogue(&ctx, &mut m, top).unwrap();
        runtime::compile(&m, &ctx, &wts, CompileOptions::default()).unwrap().num_hoisted()
    };
    assert_eq!(hoisted(&folded), 1, "the folded filter of the pooled convolution is computed once\n{folded}");
    let (want, _) = run(&folded, false, 1, &ins, &wts);
    let (got, fused) = run(&folded, true, 2, &ins, &wts);
    assert_eq!(fused, 2);
    assert_eq!(got, want, "the pooled convolution of a folded filter gives the unfused bits");
}

/// What a half-precision program has after its convolution once `widen-half-products` computed
/// it in `f32`: casts to `f16` and back around the activation.
#[derive(Clone, Copy, Debug)]
enum HalfConsumer {
    /// `to16 → to32 → hardswish (core decomposition) → to16 → to32`.
    RoundHardswishRound,
    /// `to16 → relu (in f16) → to32`.
    HalfRelu,
    /// `to16 → to32 → add.Tensor(y, r)` (an `f32` residual).
    RoundAdd,
    /// `relu → to16 → to32`.
    ReluRound,
}

fn half_program(c: &Conv, consumer: HalfConsumer) -> String {
    let Conv { n, cin, cout, groups, h, w, k, stride } = *c;
    let (oh, ow) = c.out();
    let p = k / 2;
    let shape = format!("{n}x{cout}x{oh}x{ow}");
    let (ty, ty16) = (format!("tensor<{shape}xf32>"), format!("tensor<{shape}xf16>"));
    let round = |from: &str, to: &str| {
        format!(
            "  %{to}h = edge._to_copy %{from} {{dtype = #prim.dtype<f16>}} : ({ty}) -> {ty16}\n  %{to} = edge._to_copy %{to}h {{dtype = #prim.dtype<f32>}} : ({ty16}) -> {ty}\n"
        )
    };
    let r_arg = if matches!(consumer, HalfConsumer::RoundAdd) { format!("%r: {ty}, ") } else { String::new() };
    let tail = match consumer {
        HalfConsumer::RoundHardswishRound => format!(
            "{}  %a = edge.add.Scalar %z {{other = 3}} : {ty}\n  %c = edge.clamp %a {{min = 0}} : {ty}\n  %c6 = edge.clamp %c {{max = 6}} : {ty}\n\
             \x20 %m = edge.mul.Tensor %z, %c6 : {ty}\n  %s = edge.div.Scalar %m {{other = 6}} : {ty}\n{}",
            round("y", "z"),
            round("s", "o")
        ),
        HalfConsumer::HalfRelu => format!(
            "  %yh = edge._to_copy %y {{dtype = #prim.dtype<f16>}} : ({ty}) -> {ty16}\n  %rh = edge.relu %yh : {ty16}\n\
             \x20 %o = edge._to_copy %rh {{dtype = #prim.dtype<f32>}} : ({ty16}) -> {ty}\n"
        ),
        HalfConsumer::RoundAdd => format!("{}  %o = edge.add.Tensor %z, %r : {ty}\n", round("y", "z")),
        HalfConsumer::ReluRound => format!("  %z = edge.relu %y : {ty}\n{}", round("z", "o")),
    };
    format!(
        "func.func @f(%x: tensor<{n}x{cin}x{h}x{w}xf32>, {r_arg}%wt: tensor<{cout}x{cg}x{k}x{k}xf32> {{prim.param = \"w\"}}, %b: tensor<{cout}xf32> {{prim.param = \"b\"}}) -> {ty} {{\n\
         \x20 %y = edge.convolution %x, %wt, %b {{stride = [{stride}, {stride}], padding = [{p}, {p}], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = {groups}}} : (tensor<{n}x{cin}x{h}x{w}xf32>, tensor<{cout}x{cg}x{k}x{k}xf32>, tensor<{cout}xf32>) -> {ty}\n\
         {tail}  func.return %o : {ty}\n}}\n",
        cg = cin / groups
    )
}

/// In a half-precision program the casts to `f16` and back after the convolution and after
/// its activation join the fused kernel (`round_product`, `round_result`), and a ReLU in `f16`
/// between casts becomes the kernel's activation: the unfused bits, on one and two threads, on
/// the column-panel, padded-rows, 1×1 and depthwise paths, with results past `f16`'s range
/// (which round to infinity) and NaNs.
#[test]
fn half_precision_roundings() {
    let convs = [
        Conv { n: 2, cin: 5, cout: 20, groups: 1, h: 17, w: 19, k: 3, stride: 2 },
        Conv { n: 1, cin: 16, cout: 32, groups: 1, h: 20, w: 64, k: 3, stride: 1 },
        Conv { n: 2, cin: 6, cout: 19, groups: 1, h: 7, w: 9, k: 1, stride: 1 },
        Conv { n: 2, cin: 24, cout: 24, groups: 24, h: 15, w: 13, k: 3, stride: 1 },
    ];
    let consumers = [HalfConsumer::RoundHardswishRound, HalfConsumer::HalfRelu, HalfConsumer::RoundAdd, HalfConsumer::ReluRound];
    for c in convs {
        for consumer in consumers {
            let text = half_program(&c, consumer);
            let residual = if matches!(consumer, HalfConsumer::RoundAdd) { Consumer::AddLhs } else { Consumer::Relu };
            let (mut ins, mut w) = inputs(&c, residual);
            // Large enough that some results overflow `f16`, and values that are not `f16`'s.
            let big = w.get("w").unwrap().to_vec::<f32>().unwrap().iter().map(|v| v * 3000.0 + 1e-3).collect::<Vec<_>>();
            let sizes = w.get("w").unwrap().sizes().to_vec();
            w.insert("w", Tensor::from_slice(&big, &sizes).unwrap());
            if let IValue::Tensor(x) = &ins[0] {
                let mut xv = x.to_vec::<f32>().unwrap();
                xv[2] = 1e-5;
                ins[0] = IValue::Tensor(Tensor::from_slice(&xv, x.sizes()).unwrap());
            }
            let want = fused_gives_unfused_bits(&text, &ins, &w, &format!("{c:?} {consumer:?}"));
            let vals: Vec<f32> = want.iter().map(|&b| f32::from_bits(b)).collect();
            assert!(vals.iter().any(|v| v.is_infinite()), "{c:?} {consumer:?}: some results past f16's range");
            // A residual is added after the rounding, so only the others end on `f16` values.
            assert!(
                matches!(consumer, HalfConsumer::RoundAdd) || vals.iter().filter(|v| v.is_finite()).all(|&v| half::f16::from_f32(v).to_f32() == v),
                "{c:?} {consumer:?}: every finite result is an f16 value"
            );
        }
    }
}
