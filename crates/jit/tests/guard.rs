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

/// Three-input groups for the shared-storage cases: a light body (a vector body, with a scalar
/// tail when rows hold partial vectors) and a heavy one (inline transcendental functions, with
/// the padded tail when rows hold partial vectors).
fn three_input_group(heavy: bool) -> String {
    let body = if heavy {
        format!(
            "  %t = \"aten.tanh\"(%a) : ({T}) -> {T}\n  %u = \"aten.sigmoid\"(%b) : ({T}) -> {T}\n  %p = \"aten.mul.Tensor\"(%t, %u) : ({T}, {T}) -> {T}\n  %q = \"aten.add.Tensor\"(%p, %c) : ({T}, {T}) -> {T}\n  \"prim.Return\"(%q) : ({T}) -> ()"
        )
    } else {
        format!(
            "  %s = \"aten.add.Tensor\"(%a, %b) : ({T}, {T}) -> {T}\n  %q = \"aten.mul.Tensor\"(%s, %c) : ({T}, {T}) -> {T}\n  \"prim.Return\"(%q) : ({T}) -> ()"
        )
    };
    let src: String = ["x", "y", "z"].iter().map(|v| format!("%{v} = \"test.source\"() : () -> {T}\n")).collect();
    format!(
        "{src}%r = \"prim.FusionGroup\"(%x, %y, %z) ({{\n^bb0(%a: {T}, %b: {T}, %c: {T}):\n{body}\n}}) : ({T}, {T}, {T}) -> {T}\n"
    )
}

/// Strides for `sizes` with `step` between elements of a row and `pad` extra elements after
/// each row (and after each matrix).
fn padded_strides(sizes: &[usize], step: usize, pad: usize) -> Vec<usize> {
    let mut st = vec![step; sizes.len()];
    for d in (0..sizes.len().saturating_sub(1)).rev() {
        st[d] = st[d + 1] * sizes[d + 1] + pad;
    }
    st
}

fn span(sizes: &[usize], strides: &[usize]) -> usize {
    sizes.iter().zip(strides).map(|(&s, &st)| s.saturating_sub(1) * st).sum::<usize>() + 1
}

/// The alias `KernelSpec::of` must find for input `k`: the first earlier input of the same
/// storage, dtype, sizes and strides, at the distance between their first elements.
fn expected_alias(inputs: &[Tensor], k: usize) -> Option<jit::Alias> {
    let t = &inputs[k];
    if t.numel() == 0 {
        return None;
    }
    let of = (0..k).find(|&j| {
        let u = &inputs[j];
        Arc::ptr_eq(u.storage(), t.storage()) && u.dtype() == t.dtype() && u.sizes() == t.sizes() && u.strides() == t.strides()
    })?;
    let bytes = (t.offset() as i64 - inputs[of].offset() as i64) * t.dtype().size_bytes() as i64;
    Some(jit::Alias { of, bytes: bytes as i32 })
}

/// The same views, each over a copy of the storage of its own.
fn detached(inputs: &[Tensor]) -> Vec<Tensor> {
    inputs
        .iter()
        .map(|t| {
            let n = t.storage().nbytes() / t.dtype().size_bytes();
            let copy = if n == 0 {
                // An empty tensor's storage may hold nothing: any storage will do.
                Tensor::zeros(t.dtype(), &[t.offset() + 1]).unwrap()
            } else {
                t.as_strided(&[n], &[1], Some(0)).unwrap().deep_clone().unwrap()
            };
            copy.as_strided(t.sizes(), t.strides(), Some(t.offset())).unwrap()
        })
        .collect()
}

/// Inputs viewing one storage: the same view twice, views of one layout at other (often
/// overlapping) offsets, views of another layout, and inputs of a storage of their own; rows
/// of whole and partial vectors, strided rows, size-0 and size-1 dims. The kernel reads every
/// input at its own address (it agrees bitwise with the same views over separate copies of
/// the storage, and with the reference), a kernel specialized to aliases refuses inputs that
/// lack them, and a kernel without aliases runs on shared inputs too.
#[test]
fn inputs_sharing_a_storage_are_read_at_their_own_addresses() {
    let groups = [parse(&three_input_group(false)), parse(&three_input_group(true))];
    let mut r = Rng(0x5a4e);
    let (mut aliased, mut refused) = (0, 0);
    for case in 0..cases() / 3 {
        let heavy = r.chance(0.5);
        let (m, g) = &groups[usize::from(heavy)];
        let rank = 1 + r.below(3);
        let sizes: Vec<usize> = (0..rank).map(|_| if r.chance(0.03) { 0 } else { *r.pick(&[1, 2, 3, 4, 5, 8, 9, 16]) }).collect();
        let dtype = if heavy || r.chance(0.7) { DType::F32 } else { DType::F64 };
        let layouts = [padded_strides(&sizes, 1, 0), padded_strides(&sizes, 1, 3), padded_strides(&sizes, 2, 1)];
        let main = r.below(layouts.len());
        let most = layouts.iter().map(|st| span(&sizes, st)).max().unwrap_or(1);
        let base = rand_tensor(&mut r, dtype, &[4 * most + 8], 0);
        let view = |r: &mut Rng, strides: &[usize]| base.as_strided(&sizes, strides, Some(r.below(3 * most + 8))).unwrap();
        let first = view(&mut r, &layouts[main]);
        let mut inputs = vec![first.clone()];
        for _ in 1..3 {
            inputs.push(match r.below(4) {
                0 => first.clone(),
                1 => view(&mut r, &layouts[main]),
                2 => {
                    let other = (main + 1 + r.below(2)) % layouts.len();
                    view(&mut r, &layouts[other])
                }
                _ => {
                    let layout = r.below(3);
                    rand_tensor(&mut r, dtype, &sizes, layout)
                }
            });
        }
        let spec = KernelSpec::of(&inputs);
        for k in 0..inputs.len() {
            assert_eq!(spec.inputs[k].alias, expected_alias(&inputs, k), "case {case}: input {k}");
        }
        let k = match jit::compile(m, *g, &spec) {
            Ok(k) => k,
            Err(JitError::Unsupported(_)) => continue,
            Err(e) => panic!("case {case}: {spec:?}: {e}"),
        };
        let got = k.run(&inputs).unwrap_or_else(|e| panic!("case {case}: {e}"));
        let copies = detached(&inputs);
        let plain = jit::compile(m, *g, &KernelSpec::of(&copies)).unwrap();
        assert!(KernelSpec::of(&copies).inputs.iter().all(|s| s.alias.is_none()));
        let want = plain.run(&copies).unwrap();
        exact_eq(&got[0], &want[0]).unwrap_or_else(|e| panic!("case {case}: {spec:?}: {e}"));
        if !heavy {
            let reference = reference(m, *g, &inputs).unwrap();
            exact_eq(&got[0], &reference[0]).unwrap_or_else(|e| panic!("case {case}: {e}"));
        }
        // A kernel without aliases reads shared inputs through their own pointers.
        assert!(plain.accepts(&inputs), "case {case}");
        exact_eq(&plain.run(&inputs).unwrap()[0], &got[0]).unwrap_or_else(|e| panic!("case {case}: {e}"));
        if spec.inputs.iter().all(|s| s.alias.is_none()) {
            continue;
        }
        aliased += 1;
        // The same layouts without the sharing, or with an alias moved by one element: refused
        // before any native code runs.
        let mut moved = inputs.clone();
        let last = (0..3).rev().find(|&i| spec.inputs[i].alias.is_some()).unwrap();
        let t = &inputs[last];
        let shifted = t.offset() + 1;
        if shifted + span(t.sizes(), t.strides()) <= base.numel() {
            moved[last] = base.as_strided(t.sizes(), t.strides(), Some(shifted)).unwrap();
        } else {
            moved[last] = base.as_strided(t.sizes(), t.strides(), Some(t.offset() - 1)).unwrap();
        }
        for other in [copies, moved] {
            assert!(!k.accepts(&other), "case {case}");
            let outs = sentinel_outputs(&k);
            let before: Vec<Vec<f64>> = outs.iter().map(Tensor::to_vec_f64).collect();
            assert!(matches!(k.run_into(&other, &outs), Err(JitError::Guard(_))), "case {case}");
            let after: Vec<Vec<f64>> = outs.iter().map(Tensor::to_vec_f64).collect();
            assert_eq!(before, after, "case {case}: outputs written after the guard refused");
            refused += 1;
        }
    }
    assert!(aliased > 50 && refused > 100, "aliased {aliased}, refused {refused}");
}

/// Rows long enough for the vector loop, and large enough to split into chunks and phases:
/// the alias is read at the right distance in every code path.
#[test]
fn aliases_hold_in_split_and_fissioned_kernels() {
    let (m, g) = parse(&three_input_group(true));
    let (ml, gl) = parse(&three_input_group(false));
    let mut r = Rng(41);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    // 2^18 elements and more are fissioned; 1029 leaves a partial vector per row.
    for (rows, cols) in [(64, 512), (3, 1029), (512, 512), (256, 1029)] {
        let base = rand_tensor(&mut r, DType::F32, &[rows, 4 * cols], 0);
        let inputs: Vec<Tensor> = [0, 2, 3].iter().map(|&q| base.narrow(1, q * cols as i64, cols).unwrap()).collect();
        let spec = KernelSpec::of(&inputs);
        assert_eq!(spec.inputs[2].alias, Some(jit::Alias { of: 0, bytes: 12 * cols as i32 }));
        let copies = detached(&inputs);
        for (m, g) in [(&m, g), (&ml, gl)] {
            let k = jit::compile(m, g, &spec).unwrap();
            let want = jit::compile(m, g, &KernelSpec::of(&copies)).unwrap().run(&copies).unwrap();
            let inline = k.run(&inputs).unwrap();
            exact_eq(&inline[0], &want[0]).unwrap_or_else(|e| panic!("{rows}x{cols}: {e}"));
            let opts = jit::RunOptions { parallel_threshold: 0, chunk: 100 };
            let split = pool.install(|| k.run_with(&inputs, opts)).unwrap();
            exact_eq(&split[0], &want[0]).unwrap_or_else(|e| panic!("{rows}x{cols} split: {e}"));
        }
    }
}

/// The runtime hook specializes on the sharing: inputs without it get a kernel of their own,
/// while a kernel without aliases, compiled first, also serves shared inputs.
#[test]
fn the_runtime_hook_specializes_on_shared_storage() {
    let (m, g) = parse(&three_input_group(false));
    let mut r = Rng(77);
    let base = rand_tensor(&mut r, DType::F32, &[8, 48], 0);
    let shared: Vec<Tensor> = [0, 16, 32].iter().map(|&q| base.narrow(1, q, 16).unwrap()).collect();
    let copies = detached(&shared);
    let want = reference(&m, g, &shared).unwrap();
    for (order, kernels) in [([&shared, &copies], 2), ([&copies, &shared], 1)] {
        let jit = Arc::new(jit::Jit::default());
        let kernel = jit.compile_group(&m, g).unwrap();
        for inputs in order.into_iter().chain([&shared, &copies]) {
            match kernel.run(inputs, &mut Fresh).unwrap() {
                FusionOutcome::Ran(outs) => exact_eq(&outs[0], &want[0]).unwrap(),
                FusionOutcome::Declined(reason) => panic!("declined: {reason}"),
            }
        }
        assert_eq!(jit.stats().cache.kernels, kernels);
        assert_eq!(jit.stats().interpreted_calls, 0);
    }
}
