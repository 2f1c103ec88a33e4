//! Every decomposition of the built-in table, checked by running it: each case is a small
//! function using one non-core op; it is run by the interpreter once as written (the op's own
//! kernel) and once after `functionalize`, `decompose` and `shape-propagation` (core ops only),
//! and the two must agree. Ops the interpreter has no kernel for (`dropout`, `relu6`,
//! `unflatten`, `expand_as`, `scaled_dot_product_attention`) are compared with a reference
//! written with other ops.

use runtime::{CompileOptions, IValue, Tensor, Weights};

/// Runs `pipeline` on `src`; returns the module.
fn lower(ctx: &ir::Context, src: &str, pipeline: &str) -> Result<ir::Module, String> {
    let mut m = ir::parse_module(ctx, src, "case.ir").map_err(|d| d.to_string())?;
    let mut pm = pass::PassManager::parse(&transforms::pass_registry(), pipeline, pass::PassManagerConfig::default()).map_err(|e| e.to_string())?;
    pm.run(ctx, &mut m, &mut Vec::new()).map_err(|d| d.to_string())?;
    Ok(m)
}

/// Deterministic inputs in [-1, 1) for each argument type of `@f`.
fn inputs(m: &ir::Module) -> Vec<IValue> {
    let f = m.function("f").expect("function @f");
    let (types, _) = ir::builtin::function_signature(m, f).expect("signature");
    let mut seed = 12345u64;
    types
        .iter()
        .map(|t| {
            let tt = t.as_tensor().expect("tensor argument");
            let sizes: Vec<usize> = tt.shape.as_ref().expect("static shape").iter().map(|d| d.as_static().expect("static") as usize).collect();
            let n: usize = sizes.iter().product();
            let data: Vec<f32> = (0..n)
                .map(|_| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    ((seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
                })
                .collect();
            IValue::Tensor(Tensor::from_vec(data, &sizes).expect("tensor"))
        })
        .collect()
}

fn run(ctx: &ir::Context, m: &ir::Module, args: &[IValue]) -> Result<Vec<Vec<f64>>, String> {
    let options = CompileOptions { function: "f".into(), ..CompileOptions::default() };
    let prog = runtime::compile(m, ctx, &Weights::new(), options).map_err(|e| e.to_string())?;
    let out = prog.runtime().run(args).map_err(|e| e.to_string())?;
    out.into_iter().map(|v| v.into_tensor().map(|t| t.to_vec_f64()).map_err(|e| e.to_string())).collect()
}

/// One case: the function, the op that must be gone after decomposition, and an optional
/// reference function computing the same with other ops.
struct Case {
    src: &'static str,
    op: &'static str,
    reference: Option<&'static str>,
}

const CASES: &[Case] = &[
    Case { op: "aten.linear", reference: None, src: "func.func @f(%x: tensor<3x4xf32>, %w: tensor<5x4xf32>, %b: tensor<5xf32>) -> tensor<3x5xf32> {
  %0 = aten.linear %x, %w, %b : (tensor<3x4xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  func.return %0 : tensor<3x5xf32>
}" },
    Case { op: "aten.conv1d", reference: None, src: "func.func @f(%x: tensor<1x2x8xf32>, %w: tensor<3x2x3xf32>, %b: tensor<3xf32>) -> tensor<1x3x8xf32> {
  %0 = aten.conv1d %x, %w, %b {stride = [1], padding = [1], dilation = [1], groups = 1} : (tensor<1x2x8xf32>, tensor<3x2x3xf32>, tensor<3xf32>) -> tensor<1x3x8xf32>
  func.return %0 : tensor<1x3x8xf32>
}" },
    Case { op: "aten.conv2d", reference: None, src: "func.func @f(%x: tensor<1x2x5x5xf32>, %w: tensor<4x2x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x3x3xf32> {
  %0 = aten.conv2d %x, %w, %b {stride = [2, 2], padding = [1, 1], dilation = [1, 1], groups = 1} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x3x3xf32>
  func.return %0 : tensor<1x4x3x3xf32>
}" },
    Case { op: "aten.batch_norm", reference: None, src: "func.func @f(%x: tensor<2x3x4xf32>, %w: tensor<3xf32>, %b: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>) -> tensor<2x3x4xf32> {
  %av = aten.abs %v : tensor<3xf32>
  %0 = aten.batch_norm %x, %w, %b, %m, %av {training = false, momentum = 0.1, eps = 1.0e-05, cudnn_enabled = false} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
  func.return %0 : tensor<2x3x4xf32>
}" },
    Case { op: "aten.layer_norm", reference: None, src: "func.func @f(%x: tensor<2x3x4xf32>, %w: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<2x3x4xf32> {
  %0 = aten.layer_norm %x, %w, %b {normalized_shape = [4], eps = 1.0e-05, cudnn_enable = false} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  func.return %0 : tensor<2x3x4xf32>
}" },
    Case { op: "aten.group_norm", reference: None, src: "func.func @f(%x: tensor<2x4x3xf32>, %w: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<2x4x3xf32> {
  %0 = aten.group_norm %x, %w, %b {num_groups = 2, eps = 1.0e-05, cudnn_enabled = false} : (tensor<2x4x3xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x3xf32>
  func.return %0 : tensor<2x4x3xf32>
}" },
    Case { op: "aten.softmax.int", reference: None, src: "func.func @f(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %0 = aten.softmax.int %x {dim = 1} : (tensor<3x5xf32>) -> tensor<3x5xf32>
  func.return %0 : tensor<3x5xf32>
}" },
    Case { op: "aten.log_softmax.int", reference: None, src: "func.func @f(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %0 = aten.log_softmax.int %x {dim = 0} : (tensor<3x5xf32>) -> tensor<3x5xf32>
  func.return %0 : tensor<3x5xf32>
}" },
    Case { op: "aten.matmul", reference: None, src: "func.func @f(%a: tensor<2x3x4xf32>, %b: tensor<4xf32>, %c: tensor<2x4x5xf32>) -> (tensor<2x3xf32>, tensor<2x3x5xf32>) {
  %0 = aten.matmul %a, %b : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  %1 = aten.matmul %a, %c : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  func.return %0, %1 : tensor<2x3xf32>, tensor<2x3x5xf32>
}" },
    Case {
        op: "aten.dropout",
        reference: Some("func.func @f(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = aten.clone %x : tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}"),
        src: "func.func @f(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = aten.dropout %x {p = 0.5, train = false} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}" },
    Case { op: "aten.hardswish", reference: None, src: "func.func @f(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %s = aten.mul.Scalar %x {other = 4.0} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %0 = aten.hardswish %s : tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}" },
    Case { op: "aten.hardsigmoid", reference: None, src: "func.func @f(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %s = aten.mul.Scalar %x {other = 4.0} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %0 = aten.hardsigmoid %s : tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}" },
    Case {
        op: "aten.relu6",
        reference: Some("func.func @f(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %s = aten.mul.Scalar %x {other = 8.0} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %0 = aten.clamp %s {min = 0.0, max = 6.0} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}"),
        src: "func.func @f(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %s = aten.mul.Scalar %x {other = 8.0} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %0 = aten.relu6 %s : tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}" },
    Case { op: "aten.silu", reference: None, src: "func.func @f(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = aten.silu %x : tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}" },
    Case { op: "aten.mish", reference: None, src: "func.func @f(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = aten.mish %x : tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}" },
    Case { op: "aten.transpose.int", reference: None, src: "func.func @f(%x: tensor<2x3x4xf32>) -> tensor<4x3x2xf32> {
  %0 = aten.transpose.int %x {dim0 = 0, dim1 = -1} : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  %1 = aten.contiguous %0 : tensor<4x3x2xf32>
  func.return %1 : tensor<4x3x2xf32>
}" },
    Case { op: "aten.t", reference: None, src: "func.func @f(%x: tensor<3x4xf32>) -> tensor<4x3xf32> {
  %0 = aten.t %x : (tensor<3x4xf32>) -> tensor<4x3xf32>
  %1 = aten.mul.Tensor %0, %0 : tensor<4x3xf32>
  func.return %1 : tensor<4x3xf32>
}" },
    Case { op: "aten.reshape", reference: None, src: "func.func @f(%x: tensor<3x4xf32>) -> tensor<2x6xf32> {
  %0 = aten.reshape %x {shape = [2, -1]} : (tensor<3x4xf32>) -> tensor<2x6xf32>
  func.return %0 : tensor<2x6xf32>
}" },
    Case { op: "aten.flatten.using_ints", reference: None, src: "func.func @f(%x: tensor<2x3x4xf32>) -> tensor<2x12xf32> {
  %0 = aten.flatten.using_ints %x {start_dim = 1, end_dim = -1} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  func.return %0 : tensor<2x12xf32>
}" },
    Case {
        op: "aten.unflatten.int",
        reference: Some("func.func @f(%x: tensor<2x12xf32>) -> tensor<2x3x4xf32> {
  %0 = aten.view %x {size = [2, 3, 4]} : (tensor<2x12xf32>) -> tensor<2x3x4xf32>
  func.return %0 : tensor<2x3x4xf32>
}"),
        src: "func.func @f(%x: tensor<2x12xf32>) -> tensor<2x3x4xf32> {
  %0 = aten.unflatten.int %x {dim = 1, sizes = [3, -1]} : (tensor<2x12xf32>) -> tensor<2x3x4xf32>
  func.return %0 : tensor<2x3x4xf32>
}",
    },
    Case { op: "aten.chunk", reference: None, src: "func.func @f(%x: tensor<4x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %l = aten.chunk %x {chunks = 2} : (tensor<4x3xf32>) -> !prim.list<tensor<2x3xf32>>
  %e:2 = prim.ListUnpack %l : (!prim.list<tensor<2x3xf32>>) -> (tensor<2x3xf32>, tensor<2x3xf32>)
  func.return %e#0, %e#1 : tensor<2x3xf32>, tensor<2x3xf32>
}" },
    Case { op: "aten.split.Tensor", reference: None, src: "func.func @f(%x: tensor<3x5xf32>) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>) {
  %l = aten.split.Tensor %x {split_size = 2, dim = 1} : (tensor<3x5xf32>) -> !prim.list<tensor<*xf32>>
  %e:3 = prim.ListUnpack %l : (!prim.list<tensor<*xf32>>) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>)
  func.return %e#0, %e#1, %e#2 : tensor<*xf32>, tensor<*xf32>, tensor<*xf32>
}" },
    Case { op: "aten.rsub", reference: None, src: "func.func @f(%x: tensor<3x4xf32>, %y: tensor<4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>) {
  %0 = aten.rsub.Scalar %x {other = 2.0, alpha = 3} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %1 = aten.rsub.Tensor %x, %y {alpha = 2} : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  func.return %0, %1 : tensor<3x4xf32>, tensor<3x4xf32>
}" },
    Case {
        op: "aten.expand_as",
        reference: Some("func.func @f(%x: tensor<1x4xf32>, %y: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = aten.expand %x {size = [3, 4]} : (tensor<1x4xf32>) -> tensor<3x4xf32>
  %1 = aten.add.Tensor %0, %y : tensor<3x4xf32>
  func.return %1 : tensor<3x4xf32>
}"),
        src: "func.func @f(%x: tensor<1x4xf32>, %y: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = aten.expand_as %x, %y : (tensor<1x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %1 = aten.add.Tensor %0, %y : tensor<3x4xf32>
  func.return %1 : tensor<3x4xf32>
}",
    },
    Case { op: "aten.type_as", reference: None, src: "func.func @f(%x: tensor<3x4xf32>, %y: tensor<3x4xf32>) -> tensor<3x4xf64> {
  %d = aten.to.dtype %y {dtype = #prim.dtype<f64>} : (tensor<3x4xf32>) -> tensor<3x4xf64>
  %0 = aten.type_as %x, %d : (tensor<3x4xf32>, tensor<3x4xf64>) -> tensor<3x4xf64>
  func.return %0 : tensor<3x4xf64>
}" },
    Case { op: "aten.to.dtype", reference: None, src: "func.func @f(%x: tensor<3x4xf32>) -> tensor<3x4xi64> {
  %s = aten.mul.Scalar %x {other = 10.0} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %0 = aten.to.dtype %s {dtype = #prim.dtype<i64>} : (tensor<3x4xf32>) -> tensor<3x4xi64>
  func.return %0 : tensor<3x4xi64>
}" },
    Case {
        op: "aten.scaled_dot_product_attention",
        // softmax(q kᵀ · 0.5 + mask) v, written with other ops.
        reference: Some("func.func @f(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>, %mask: tensor<3x3xf32>) -> tensor<1x2x3x4xf32> {
  %kt = aten.transpose.int %k {dim0 = -2, dim1 = -1} : (tensor<1x2x3x4xf32>) -> tensor<1x2x4x3xf32>
  %s = aten.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %sc = aten.mul.Scalar %s {other = 0.5} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %m = aten.add.Tensor %sc, %mask : (tensor<1x2x3x3xf32>, tensor<3x3xf32>) -> tensor<1x2x3x3xf32>
  %p = aten.softmax.int %m {dim = -1} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %o = aten.matmul %p, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  func.return %o : tensor<1x2x3x4xf32>
}"),
        src: "func.func @f(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>, %mask: tensor<3x3xf32>) -> tensor<1x2x3x4xf32> {
  %0 = aten.scaled_dot_product_attention %q, %k, %v, %mask {scale = 0.5} : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<3x3xf32>) -> tensor<1x2x3x4xf32>
  func.return %0 : tensor<1x2x3x4xf32>
}",
    },
    Case { op: "aten._assert_tensor_metadata", reference: None, src: "func.func @f(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  aten._assert_tensor_metadata %x {dtype = #prim.dtype<f32>} : (tensor<3x4xf32>) -> ()
  %0 = aten.neg %x : tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}" },
    // In-place variants: functionalize turns them into their functional ops first.
    Case { op: "aten.add_.Tensor", reference: None, src: "func.func @f(%x: tensor<3x4xf32>, %y: tensor<4xf32>) -> tensor<3x4xf32> {
  %t = aten.mul.Tensor %x, %x : tensor<3x4xf32>
  %u = aten.add_.Tensor %t, %y : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %w = aten.mul_.Scalar %t {other = -2.0} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %r = aten.relu_ %t : tensor<3x4xf32>
  %s = aten.add.Tensor %t, %x : tensor<3x4xf32>
  func.return %s : tensor<3x4xf32>
}" },
];

const PIPELINE: &str = "builtin.module(functionalize,shape-propagation,decompose,shape-propagation)";

#[test]
fn decompositions_compute_what_the_ops_compute() {
    let ctx = transforms::context();
    let mut failures = Vec::new();
    for case in CASES {
        let result = (|| -> Result<(), String> {
            let original = lower(&ctx, case.src, "builtin.module(shape-propagation)")?;
            let reference = lower(&ctx, case.reference.unwrap_or(case.src), "builtin.module(shape-propagation)")?;
            let decomposed = lower(&ctx, case.src, PIPELINE)?;
            let text = ir::print_module(&ctx, &decomposed, ir::PrintOptions::default());
            let mut names = Vec::new();
            decomposed.walk(decomposed.top(), ir::WalkOrder::PreOrder, &mut |o| names.push(decomposed.op_name(o).to_string()));
            // `aten.rsub` stands for both overloads; in-place ops (`add_`) must be gone too.
            let left = names.iter().find(|n| {
                *n == case.op || n.strip_prefix(case.op).is_some_and(|r| r.starts_with('.')) || n.split('.').nth(1).is_some_and(|b| b.ends_with('_') && !b.starts_with('_'))
            });
            if let Some(n) = left {
                return Err(format!("'{n}' is still there:\n{text}"));
            }
            let args = inputs(&original);
            let want = run(&ctx, &reference, &args)?;
            let got = run(&ctx, &decomposed, &args).map_err(|e| format!("{e}\n{text}"))?;
            if want.len() != got.len() {
                return Err(format!("{} outputs, expected {}", got.len(), want.len()));
            }
            for (i, (w, g)) in want.iter().zip(&got).enumerate() {
                let worst = w.iter().zip(g).map(|(a, b)| (a - b).abs() / (1.0 + a.abs())).fold(0.0, f64::max);
                if w.len() != g.len() || worst > 1e-5 {
                    return Err(format!("output {i} differs (worst relative error {worst:e}): {w:?} vs {g:?}\n{text}"));
                }
            }
            Ok(())
        })();
        if let Err(e) = result {
            failures.push(format!("{}: {e}", case.op));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
