//! The guard, as a property: a kernel compiled for one input spec never enters native code for
//! inputs of another spec. Random specs (ranks 0–3, sizes 0, 1 and more, broadcast operands,
//! transposed, strided, offset and expanded layouts, several dtypes) are compiled; random
//! other inputs — or fresh inputs of the same spec — are then given to the kernel. Inputs of
//! another spec must be refused with `JitError::Guard`, leaving the outputs untouched (a
//! native call would have overwritten them); inputs of the same spec must run and match the
//! runtime's kernels. The same holds through the runtime hook (`jit::Jit`): a group
//! specialized to one spec compiles another kernel for a new spec instead of reusing one.
//! `JIT_GUARD_CASES` scales the number of cases (default 3000).

mod common;

use std::sync::Arc;

use common::{Rng, exact_eq, parse, rand_tensor, reference};
use ir::DType;
use jit::{JitError, KernelSpec};
use runtime::{FusionCompiler, FusionOutcome, KernelError, OutputAlloc, Tensor};

const T: &str = "tensor<*x!prim.any>";

fn group_text() -> String {
    format!(
        "%x = \"test.source\"() : () -> {T}\n%y = \"test.source\"() : () -> {T}\n%r = \"prim.FusionGroup\"(%x, %y) ({{\n^bb0(%a: {T}, %b: {T}):\n  %s = \"aten.add.Tensor\"(%a, %b) : ({T}, {T}) -> {T}\n  %p = \"aten.mul.Tensor\"(%s, %a) : ({T}, {T}) -> {T}\n  \"prim.Return\"(%p) : ({T}) -> ()\n}}) : ({T}, {T}) -> {T}\n"
    )
}

/// A random shape of rank 0–3 with sizes among 0, 1, 2, 3, 5 (0 rarely).
fn rand_shape(r: &mut Rng) -> Vec<usize> {
    let rank = r.below(4);
    (0..rank).map(|_| if r.chance(0.05) { 0 } else { *r.pick(&[1, 1, 2, 3, 5]) }).collect()
}

/// A shape that broadcasts to `full`: a suffix of it with some dims set to 1.
fn broadcast_of(r: &mut Rng, full: &[usize]) -> Vec<usize> {
    let drop = r.below(full.len() + 1);
    full[drop..].iter().map(|&s| if r.chance(0.3) { 1 } else { s }).collect()
}

/// A pair of inputs: a random dtype each (f32, f64, i64), random layouts, broadcasting shapes.
fn rand_inputs(r: &mut Rng) -> Vec<Tensor> {
    let full = rand_shape(r);
    let other = broadcast_of(r, &full);
    let (sa, sb) = if r.chance(0.5) { (full, other) } else { (other, full) };
    let dtypes = [DType::F32, DType::F64, DType::I64];
    let (da, db) = (*r.pick(&dtypes), if r.chance(0.7) { None } else { Some(*r.pick(&dtypes)) });
    let (la, lb) = (r.below(4), r.below(4));
    let a = rand_tensor(r, da, &sa, la);
    let b = rand_tensor(r, db.unwrap_or(da), &sb, lb);
    vec![a, b]
}

/// Fresh inputs with exactly the dtypes, sizes and strides of `like`, and new values.
fn same_spec(r: &mut Rng, like: &[Tensor]) -> Vec<Tensor> {
    like.iter()
        .map(|t| {
            let span = t.sizes().iter().zip(t.strides()).map(|(&s, &st)| s.saturating_sub(1) * st).sum::<usize>() + 1;
            let base = rand_tensor(r, t.dtype(), &[span + t.offset()], 0);
            base.as_strided(t.sizes(), t.strides(), Some(t.offset())).unwrap()
        })
        .collect()
}

/// Outputs of the kernel's dtypes and shapes holding a sentinel.
fn sentinel_outputs(k: &jit::Kernel) -> Vec<Tensor> {
    k.outputs()
        .iter()
        .map(|(d, s)| {
            let n: usize = s.iter().product();
            Tensor::from_vec(vec![7.0f64; n], s).unwrap().to_dtype(*d).unwrap()
        })
        .collect()
}

fn cases() -> usize {
    std::env::var("JIT_GUARD_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(3000)
}

#[test]
fn kernels_refuse_inputs_of_any_other_spec() {
    let (m, g) = parse(&group_text());
    let mut r = Rng(0x6a17);
    let (mut refused, mut ran) = (0, 0);
    for case in 0..cases() {
        let compiled_for = rand_inputs(&mut r);
        let spec = KernelSpec::of(&compiled_for);
        let k = match jit::compile(&m, g, &spec) {
            Ok(k) => k,
            Err(JitError::Unsupported(_)) => continue,
            Err(e) => panic!("case {case}: {spec:?}: {e}"),
        };
        let inputs = if r.chance(0.3) { same_spec(&mut r, &compiled_for) } else { rand_inputs(&mut r) };
        let outs = sentinel_outputs(&k);
        let before: Vec<Vec<f64>> = outs.iter().map(Tensor::to_vec_f64).collect();
        let matches = KernelSpec::of(&inputs) == spec;
        assert_eq!(k.accepts(&inputs), matches, "case {case}");
        match k.run_into(&inputs, &outs) {
            Err(JitError::Guard(_)) if !matches => {
                let after: Vec<Vec<f64>> = outs.iter().map(Tensor::to_vec_f64).collect();
                assert_eq!(before, after, "case {case}: outputs written after the guard refused");
                refused += 1;
            }
            Ok(()) if matches => {
                let want = reference(&m, g, &inputs).unwrap();
                exact_eq(&outs[0], &want[0]).unwrap_or_else(|e| panic!("case {case}: {e}"));
                ran += 1;
            }
            other => panic!("case {case}: spec {spec:?}, inputs {:?}: {other:?}", KernelSpec::of(&inputs)),
        }
    }
    assert!(refused > 0 && ran > 0, "refused {refused}, ran {ran}");
}

#[test]
fn outputs_of_the_wrong_shape_layout_or_aliasing_an_input_are_refused() {
    let (m, g) = parse(&group_text());
    let mut r = Rng(11);
    let a = rand_tensor(&mut r, DType::F32, &[3, 4], 0);
    let b = rand_tensor(&mut r, DType::F32, &[1, 4], 3);
    let k = jit::compile(&m, g, &KernelSpec::of(&[a.clone(), b.clone()])).unwrap();
    let wrong: Vec<Tensor> = vec![
        Tensor::zeros(DType::F32, &[4, 3]).unwrap(),
        Tensor::zeros(DType::F64, &[3, 4]).unwrap(),
        Tensor::zeros(DType::F32, &[4, 3]).unwrap().t().unwrap(),
        a.clone(),
    ];
    for out in wrong {
        let before = out.to_vec_f64();
        assert!(matches!(k.run_into(&[a.clone(), b.clone()], std::slice::from_ref(&out)), Err(JitError::Guard(_))));
        assert_eq!(out.to_vec_f64(), before);
    }
}

struct Fresh;

impl OutputAlloc for Fresh {
    fn output(&mut self, _: usize, dtype: DType, sizes: &[usize]) -> Result<Tensor, KernelError> {
        Tensor::zeros(dtype, sizes)
    }
}

#[test]
fn the_runtime_hook_compiles_a_new_kernel_for_each_new_spec() {
    let (m, g) = parse(&group_text());
    let jit = Arc::new(jit::Jit::default());
    let kernel = jit.compile_group(&m, g).unwrap();
    let mut r = Rng(5);
    let mut specs: Vec<KernelSpec> = Vec::new();
    for case in 0..200 {
        let inputs = rand_inputs(&mut r);
        let spec = KernelSpec::of(&inputs);
        let outcome = kernel.run(&inputs, &mut Fresh).unwrap();
        let before = jit.stats().cache;
        match outcome {
            FusionOutcome::Ran(outs) => {
                let want = reference(&m, g, &inputs).unwrap();
                exact_eq(&outs[0], &want[0]).unwrap_or_else(|e| panic!("case {case}: {e}"));
                if !specs.contains(&spec) {
                    specs.push(spec);
                }
            }
            FusionOutcome::Declined(reason) => assert!(reason.starts_with("unsupported"), "case {case}: {reason}"),
        }
        // Every spec seen so far has its own kernel; none was reused for another spec.
        assert_eq!(before.kernels, specs.len(), "case {case}");
    }
    // Inputs of a dtype the JIT does not compile are handed back to the interpreter.
    let half = Tensor::zeros(DType::F16, &[2]).unwrap();
    assert!(matches!(kernel.run(&[half.clone(), half], &mut Fresh).unwrap(), FusionOutcome::Declined(_)));
    assert!(jit.stats().interpreted_calls >= 1);
}
