//! Hand-written fusion groups: the bench_pointwise chain, multiple outputs, constants, casts,
//! errors, the guard, the cache, thread splitting, and layouts (odd, empty and size-1 dims,
//! broadcasts from every side, non-contiguous inputs).

mod common;

use common::{POINTWISE, Rng, exact_eq, parse, rand_tensor, reference};
use ir::DType;
use jit::{CodegenOptions, JitError, KernelCache, KernelSpec, RunOptions};
use runtime::Tensor;



fn close(a: &Tensor, b: &Tensor, tol: f64) {
    assert_eq!(a.sizes(), b.sizes());
    assert_eq!(a.dtype(), b.dtype());
    for (i, (x, y)) in a.to_vec_f64().iter().zip(b.to_vec_f64()).enumerate() {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()) || (x.is_nan() && y.is_nan()), "element {i}: {x} vs {y}");
    }
}

fn randn(r: &mut Rng, sizes: &[usize]) -> Tensor {
    let n: usize = sizes.iter().product();
    Tensor::from_vec((0..n).map(|_| r.normal() as f32).collect::<Vec<_>>(), sizes).unwrap()
}

#[test]
fn bench_pointwise_chain_matches_the_reference() {
    let (m, g) = parse(POINTWISE);
    let mut r = Rng(7);
    // 65 rows (266 240 elements) are fissioned, with block routines where the host has them:
    // the same bits as the inline expansions.
    for rows in [1, 3, 64, 65] {
        let x = randn(&mut r, &[rows, 4096]);
        let y = randn(&mut r, &[rows, 4096]);
        let spec = KernelSpec::of(&[x.clone(), y.clone()]);
        let k = jit::compile(&m, g, &spec).unwrap();
        assert_eq!(k.lanes(), 4);
        let got = k.run(&[x.clone(), y.clone()]).unwrap();
        let inline = jit::compile_with(&m, g, &spec, CodegenOptions { block_routines: false }).unwrap();
        exact_eq(&got[0], &inline.run(&[x.clone(), y.clone()]).unwrap()[0]).unwrap();
        let want = reference(&m, g, &[x, y]).unwrap();
        close(&got[0], &want[0], 1e-6);
    }
}

#[test]
fn parallel_runs_equal_inline_runs() {
    let (m, g) = parse(POINTWISE);
    let mut r = Rng(8);
    let x = randn(&mut r, &[37, 4096]);
    let y = randn(&mut r, &[37, 4096]);
    let k = jit::compile(&m, g, &KernelSpec::of(&[x.clone(), y.clone()])).unwrap();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let inline = k.run_with(&[x.clone(), y.clone()], RunOptions { parallel_threshold: usize::MAX, chunk: 1 }).unwrap();
    // Odd chunk sizes split rows in the middle.
    for chunk in [1, 100, 4097, 50_000] {
        let par = pool.install(|| k.run_with(&[x.clone(), y.clone()], RunOptions { parallel_threshold: 0, chunk }).unwrap());
        exact_eq(&par[0], &inline[0]).unwrap();
    }
}

fn two_input_group(body: &str, nout: usize) -> String {
    let rt = vec!["tensor<*x!prim.any>"; nout].join(", ");
    format!(
        "%x = \"test.source\"() : () -> tensor<*x!prim.any>\n%y = \"test.source\"() : () -> tensor<*x!prim.any>\n%r:{nout} = \"prim.FusionGroup\"(%x, %y) ({{\n^bb0(%a: tensor<*x!prim.any>, %b: tensor<*x!prim.any>):\n{body}\n}}) : (tensor<*x!prim.any>, tensor<*x!prim.any>) -> ({rt})\n"
    )
}

const T: &str = "tensor<*x!prim.any>";

#[test]
fn several_outputs_and_casts() {
    let body = format!(
        "  %s = \"aten.add.Tensor\"(%a, %b) {{alpha = 3 : i64}} : ({T}, {T}) -> {T}\n  %c = \"aten._to_copy\"(%s) {{dtype = #prim.dtype<i64>}} : ({T}) -> {T}\n  %q = \"aten.lt.Tensor\"(%a, %b) : ({T}, {T}) -> {T}\n  \"prim.Return\"(%s, %c, %q) : ({T}, {T}, {T}) -> ()"
    );
    let (m, g) = parse(&two_input_group(&body, 3));
    let mut r = Rng(3);
    for d in [DType::F32, DType::F64, DType::I32, DType::I64] {
        let a = rand_tensor(&mut r, d, &[5, 7], 0);
        let b = rand_tensor(&mut r, d, &[7], 0);
        let k = jit::compile(&m, g, &KernelSpec::of(&[a.clone(), b.clone()])).unwrap();
        let got = k.run(&[a.clone(), b.clone()]).unwrap();
        let want = reference(&m, g, &[a, b]).unwrap();
        for (x, y) in got.iter().zip(&want) {
            exact_eq(x, y).unwrap();
        }
    }
}

/// A comparison of 64-bit operands stores its booleans from two-lane vectors (Cranelift's x86
/// backend cannot narrow `i64x2`, which once sent such kernels to scalar code).
#[test]
fn booleans_from_64_bit_comparisons_are_stored_from_vectors() {
    let body = format!(
        "  %q = \"aten.le.Tensor\"(%a, %b) : ({T}, {T}) -> {T}\n  %n = \"aten.logical_not\"(%q) : ({T}) -> {T}\n  \"prim.Return\"(%q, %n) : ({T}, {T}) -> ()"
    );
    let (m, g) = parse(&two_input_group(&body, 2));
    let mut r = Rng(5);
    for d in [DType::F64, DType::I64] {
        let a = rand_tensor(&mut r, d, &[9, 31], 0);
        let b = rand_tensor(&mut r, d, &[9, 31], 0);
        let k = jit::compile(&m, g, &KernelSpec::of(&[a.clone(), b.clone()])).unwrap();
        #[cfg(target_arch = "x86_64")]
        assert_eq!(k.lanes(), 2, "{d:?}: two-lane vector code");
        let got = k.run(&[a.clone(), b.clone()]).unwrap();
        let want = reference(&m, g, &[a, b]).unwrap();
        for (x, y) in got.iter().zip(&want) {
            exact_eq(x, y).unwrap();
        }
    }
}

#[test]
fn integer_division_by_zero_is_an_error() {
    let body = format!("  %d = \"aten.div.Tensor_mode\"(%a, %b) {{rounding_mode = \"floor\"}} : ({T}, {T}) -> {T}\n  \"prim.Return\"(%d) : ({T}) -> ()");
    let (m, g) = parse(&two_input_group(&body, 1));
    let a = Tensor::from_vec(vec![7i64, -7, i64::MIN, 5], &[4]).unwrap();
    let b = Tensor::from_vec(vec![2i64, 2, -1, 0], &[4]).unwrap();
    let k = jit::compile(&m, g, &KernelSpec::of(&[a.clone(), b.clone()])).unwrap();
    assert!(matches!(k.run(&[a.clone(), b.clone()]), Err(JitError::Runtime { .. })));
    let b = Tensor::from_vec(vec![2i64, 2, -1, 3], &[4]).unwrap();
    let got = k.run(&[a.clone(), b.clone()]).unwrap();
    exact_eq(&got[0], &reference(&m, g, &[a, b]).unwrap()[0]).unwrap();
}

#[test]
fn the_guard_rejects_other_layouts() {
    let body = format!("  %s = \"aten.mul.Tensor\"(%a, %b) : ({T}, {T}) -> {T}\n  \"prim.Return\"(%s) : ({T}) -> ()");
    let (m, g) = parse(&two_input_group(&body, 1));
    let a = Tensor::from_vec(vec![1f32; 12], &[3, 4]).unwrap();
    let b = Tensor::from_vec(vec![2f32; 4], &[4]).unwrap();
    let k = jit::compile(&m, g, &KernelSpec::of(&[a.clone(), b.clone()])).unwrap();
    let wrong_dtype = Tensor::from_vec(vec![2f64; 4], &[4]).unwrap();
    assert!(matches!(k.run(&[a.clone(), wrong_dtype]), Err(JitError::Guard(_))));
    assert!(matches!(k.run(&[a.t().unwrap(), b.clone()]), Err(JitError::Guard(_))));
    assert!(matches!(k.run(std::slice::from_ref(&a)), Err(JitError::Guard(_))));
    // Outputs may not alias inputs.
    assert!(matches!(k.run_into(&[a.clone(), b.clone()], std::slice::from_ref(&a)), Err(JitError::Guard(_))));
    let out = Tensor::zeros(DType::F32, &[3, 4]).unwrap();
    k.run_into(&[a, b], std::slice::from_ref(&out)).unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![2f32; 12]);
}

#[test]
fn the_cache_counts_hits_and_misses() {
    let (m, g) = parse(POINTWISE);
    let cache = std::sync::Arc::new(KernelCache::new());
    let f = jit::FusionJit::new(&m, g, cache.clone()).unwrap();
    let mut r = Rng(1);
    let (x, y) = (randn(&mut r, &[2, 4096]), randn(&mut r, &[2, 4096]));
    f.run(&[x.clone(), y.clone()]).unwrap();
    f.run(&[x.clone(), y.clone()]).unwrap();
    let (x3, y3) = (randn(&mut r, &[3, 4096]), randn(&mut r, &[3, 4096]));
    f.run(&[x3, y3]).unwrap();
    let s = cache.stats();
    assert_eq!((s.hits, s.misses, s.kernels), (1, 2, 2));
    assert!(s.total_compile_time.as_nanos() > 0);
    // Compile times come in the order the kernels were compiled.
    let times = cache.compile_times();
    let rows: Vec<usize> = times.iter().map(|(spec, _)| spec.inputs[0].sizes[0]).collect();
    assert_eq!(rows, vec![2, 3]);
    assert_eq!(times.iter().map(|(_, d)| *d).sum::<std::time::Duration>(), s.total_compile_time);
}

#[test]
fn the_host_isa_is_built_once_per_process() {
    let first = jit::Jit::default();
    let second = jit::Jit::default();
    // Whichever `Jit` (or compilation) of this process came first built the ISA; later ones
    // report no setup of their own.
    assert_eq!(second.stats().setup_time, std::time::Duration::ZERO);
    assert!(first.stats().setup_time < std::time::Duration::from_secs(1));
}

#[test]
fn threads_reusing_their_compile_context_compile_correct_kernels() {
    // Each thread compiles a sequence of different kernels (dtypes, shapes, op counts) through
    // its own reused Cranelift context, interleaved with the other threads' compilations.
    let (pw, pg) = parse(POINTWISE);
    let body = format!(
        "  %s = \"aten.add.Tensor\"(%a, %b) {{alpha = 3 : i64}} : ({T}, {T}) -> {T}\n  %q = \"aten.lt.Tensor\"(%a, %b) : ({T}, {T}) -> {T}\n  \"prim.Return\"(%s, %q) : ({T}, {T}) -> ()"
    );
    let (sm, sg) = parse(&two_input_group(&body, 2));
    std::thread::scope(|scope| {
        for t in 0..3u64 {
            let (pw, sm) = (&pw, &sm);
            scope.spawn(move || {
                let mut r = Rng(100 + t);
                for round in 0..4usize {
                    let rows = 1 + round + t as usize;
                    let (x, y) = (randn(&mut r, &[rows, 4096]), randn(&mut r, &[rows, 4096]));
                    let k = jit::compile(pw, pg, &KernelSpec::of(&[x.clone(), y.clone()])).unwrap();
                    let got = k.run(&[x.clone(), y.clone()]).unwrap();
                    close(&got[0], &reference(pw, pg, &[x, y]).unwrap()[0], 1e-6);
                    let d = [DType::F32, DType::F64, DType::I32, DType::I64][round];
                    let a = rand_tensor(&mut r, d, &[rows, 9], 0);
                    let b = rand_tensor(&mut r, d, &[9], 0);
                    let k = jit::compile(sm, sg, &KernelSpec::of(&[a.clone(), b.clone()])).unwrap();
                    let got = k.run(&[a.clone(), b.clone()]).unwrap();
                    for (x, y) in got.iter().zip(&reference(sm, sg, &[a, b]).unwrap()) {
                        exact_eq(x, y).unwrap();
                    }
                }
            });
        }
    });
}

#[test]
fn unsupported_ops_are_reported_as_such() {
    let body = format!("  %s = \"aten.atan2\"(%a, %b) : ({T}, {T}) -> {T}\n  \"prim.Return\"(%s) : ({T}) -> ()");
    let (m, g) = parse(&two_input_group(&body, 1));
    let a = Tensor::from_vec(vec![1f32; 4], &[4]).unwrap();
    assert!(matches!(jit::compile(&m, g, &KernelSpec::of(&[a.clone(), a])), Err(JitError::Unsupported(_))));
}

/// Every broadcast pattern and layout over odd, empty and size-1 dims.
#[test]
fn layouts_and_broadcasts_are_in_bounds_and_exact() {
    let body = format!(
        "  %s = \"aten.mul.Tensor\"(%a, %b) : ({T}, {T}) -> {T}\n  %t = \"aten.sub.Tensor\"(%s, %a) {{alpha = 2 : i64}} : ({T}, {T}) -> {T}\n  \"prim.Return\"(%t) : ({T}) -> ()"
    );
    let (m, g) = parse(&two_input_group(&body, 1));
    let mut r = Rng(11);
    let shapes: &[&[usize]] = &[&[], &[0], &[1], &[7], &[3, 5], &[1, 9], &[4, 1], &[2, 0, 3], &[3, 1, 17], &[5, 4, 3], &[2, 3, 4, 5]];
    let mut n = 0;
    for &shape in shapes {
        for mask in 0..(1usize << shape.len()).min(16) {
            // Input b has size 1 where `mask` has a bit, and may lack leading dims.
            for drop in 0..=shape.len().min(1) {
                let bs: Vec<usize> = shape.iter().enumerate().map(|(i, &s)| if mask >> i & 1 == 1 { 1 } else { s }).skip(drop).collect();
                for la in 0..4 {
                    for lb in 0..4 {
                        for d in [DType::F32, DType::I64] {
                            let a = rand_tensor(&mut r, d, shape, la);
                            let b = rand_tensor(&mut r, d, &bs, lb);
                            // Broadcasting from either side.
                            for (x, y) in [(a.clone(), b.clone()), (b.clone(), a.clone())] {
                                let want = reference(&m, g, &[x.clone(), y.clone()]);
                                let got = jit::compile(&m, g, &KernelSpec::of(&[x.clone(), y.clone()])).and_then(|k| k.run(&[x, y]));
                                match (want, got) {
                                    (Ok(w), Ok(gt)) => exact_eq(&gt[0], &w[0]).unwrap(),
                                    (Err(_), Err(_)) => {}
                                    (w, gt) => panic!("shape {shape:?} / {bs:?}: reference {w:?}, jit {gt:?}"),
                                }
                                n += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(n > 1000);
}

/// Bodies with several transcendental functions run in phases over blocks of vectors: rows
/// ending in a partial block and in a partial vector, inputs broadcast along and across rows
/// (arguments of the block routines read from an input or computed by a loop), and a bool
/// output.
#[test]
fn fissioned_bodies_match_the_reference() {
    let body = format!(
        "  %s = \"aten.sigmoid\"(%a) : ({T}) -> {T}\n  %t = \"aten.tanh\"(%b) : ({T}) -> {T}\n  %m = \"aten.mul.Tensor\"(%s, %t) : ({T}, {T}) -> {T}\n  %e = \"aten.exp\"(%b) : ({T}) -> {T}\n  %v = \"aten.mul.Tensor\"(%e, %s) : ({T}, {T}) -> {T}\n  %u = \"aten.add.Tensor\"(%m, %v) : ({T}, {T}) -> {T}\n  %q = \"aten.gt.Tensor\"(%u, %a) : ({T}, {T}) -> {T}\n  \"prim.Return\"(%u, %q, %m) : ({T}, {T}, {T}) -> ()"
    );
    let (m, g) = parse(&two_input_group(&body, 3));
    let mut r = Rng(12);
    for n in [1, 3, 4, 7, 255, 256, 257, 300, 1029] {
        // Fission starts at 2^18 elements.
        let rows = (1 << 18) / n + 1;
        for b_sizes in [vec![rows, n], vec![n], vec![rows, 1]] {
            let a = randn(&mut r, &[rows, n]);
            let b = randn(&mut r, &b_sizes);
            let spec = KernelSpec::of(&[a.clone(), b.clone()]);
            let k = jit::compile(&m, g, &spec).unwrap();
            assert_eq!(k.lanes(), 4);
            let got = k.run(&[a.clone(), b.clone()]).unwrap();
            // Block routines (where the host has them) and inline expansions agree bit for bit.
            let inline = jit::compile_with(&m, g, &spec, CodegenOptions { block_routines: false }).unwrap();
            for (x, y) in got.iter().zip(inline.run(&[a.clone(), b.clone()]).unwrap()) {
                exact_eq(x, &y).unwrap();
            }
            let want = reference(&m, g, &[a, b]).unwrap();
            close(&got[0], &want[0], 1e-6);
            close(&got[2], &want[2], 1e-6);
            // The comparison's inputs may differ by an ulp: count disagreements, not exactness.
            let (q, wq) = (got[1].to_vec_f64(), want[1].to_vec_f64());
            let differ = q.iter().zip(&wq).filter(|(x, y)| x != y).count();
            assert!(differ <= q.len() / 100, "{n} {b_sizes:?}: {differ} of {} comparisons differ", q.len());
        }
    }
}

/// Kernels from 2^12 elements whose every cut has a block routine (the LSTM cell's gates are
/// 64 × 512) are fissioned and compiled with the single-pass register allocator; without the
/// routines the same kernels expand inline, unfissioned, with the backtracking one. Both give
/// the same bits, on either side of the threshold, for whole rows and rows ending in a
/// partial vector.
#[test]
fn small_kernels_fissioned_with_block_routines_match_the_inline_path() {
    let body = format!(
        "  %s = \"aten.sigmoid\"(%a) : ({T}) -> {T}\n  %t = \"aten.tanh\"(%b) : ({T}) -> {T}\n  %m = \"aten.mul.Tensor\"(%s, %t) : ({T}, {T}) -> {T}\n  %c = \"aten.add.Tensor\"(%m, %a) : ({T}, {T}) -> {T}\n  %h = \"aten.tanh\"(%c) : ({T}) -> {T}\n  %o = \"aten.mul.Tensor\"(%h, %s) : ({T}, {T}) -> {T}\n  \"prim.Return\"(%o, %c) : ({T}, {T}) -> ()"
    );
    let (m, g) = parse(&two_input_group(&body, 2));
    let mut r = Rng(14);
    for sizes in [[64, 512], [1, 4096], [1, 4095], [3, 1367], [4, 1023]] {
        let a = randn(&mut r, &sizes);
        let b = randn(&mut r, &sizes);
        let spec = KernelSpec::of(&[a.clone(), b.clone()]);
        let got = jit::compile(&m, g, &spec).unwrap().run(&[a.clone(), b.clone()]).unwrap();
        let inline = jit::compile_with(&m, g, &spec, CodegenOptions { block_routines: false }).unwrap();
        for (x, y) in got.iter().zip(inline.run(&[a.clone(), b.clone()]).unwrap()) {
            exact_eq(x, &y).unwrap();
        }
        let want = reference(&m, g, &[a, b]).unwrap();
        close(&got[0], &want[0], 1e-6);
        close(&got[1], &want[1], 1e-6);
    }
}

/// Block routines whose arguments are earlier cuts: `tanh(exp(a))` reads `exp`'s buffer
/// directly, and `sigmoid(clamp(exp(b), max=3))` reads a capped `exp`, whose buffer holds the
/// unclamped values, so its argument is computed (clamped) by a loop after the `exp` call.
/// The routines must give the inline expansions' bits and agree with the reference.
#[test]
fn block_routines_reading_earlier_cuts_match_the_inline_path() {
    let body = format!(
        "  %e = \"aten.exp\"(%a) : ({T}) -> {T}\n  %t = \"aten.tanh\"(%e) : ({T}) -> {T}\n  %f = \"aten.exp\"(%b) : ({T}) -> {T}\n  %c = \"aten.clamp\"(%f) {{max = 3.0 : f64}} : ({T}) -> {T}\n  %s = \"aten.sigmoid\"(%c) : ({T}) -> {T}\n  %u = \"aten.add.Tensor\"(%t, %s) : ({T}, {T}) -> {T}\n  \"prim.Return\"(%u, %c, %e) : ({T}, {T}, {T}) -> ()"
    );
    let (m, g) = parse(&two_input_group(&body, 3));
    let mut r = Rng(13);
    for n in [5, 300, 1029] {
        let rows = (1 << 18) / n + 1;
        let a = randn(&mut r, &[rows, n]);
        let b = randn(&mut r, &[rows, n]);
        let spec = KernelSpec::of(&[a.clone(), b.clone()]);
        let got = jit::compile(&m, g, &spec).unwrap().run(&[a.clone(), b.clone()]).unwrap();
        let inline = jit::compile_with(&m, g, &spec, CodegenOptions { block_routines: false }).unwrap();
        for (x, y) in got.iter().zip(inline.run(&[a.clone(), b.clone()]).unwrap()) {
            exact_eq(x, &y).unwrap();
        }
        let want = reference(&m, g, &[a, b]).unwrap();
        for (x, y) in got.iter().zip(&want) {
            close(x, y, 1e-6);
        }
    }
}
