//! Tests of the fused attention against the unfused ops it replaces, on every ISA path.

use super::compute::*;
use super::*;

/// Fresh outputs.
struct Fresh;

impl OutputAlloc for Fresh {
    fn output(&mut self, _: usize, dtype: DType, sizes: &[usize]) -> Result<Tensor> {
        Tensor::zeros(dtype, sizes)
    }
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

/// The sizes of an attention over `[b, l, h, e]` queries, `[b, s, h, e]` keys and
/// `[b, s, h, ev]` values.
#[derive(Clone, Copy, Debug)]
struct Dims {
    b: usize,
    h: usize,
    l: usize,
    s: usize,
    e: usize,
    ev: usize,
}

/// Which scores a mask replaces: by batch, head, query row and column.
type Replaced = dyn Fn(usize, usize, usize, usize) -> bool;

/// How the boolean mask is given.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Given {
    /// `[l, s]`, shared by every batch and head.
    Shared,
    /// `[h, l, s]`.
    PerHead,
    /// `[s, l]` transposed: columns `l` elements apart.
    Transposed,
    /// `[l, 1]`: whole rows replaced or kept.
    Rows,
}

/// The queries, transposed keys and values: the strided views the unfused program
/// multiplies (heads split out of `[b, l, h, e]` rows).
fn operands(d: Dims, q: &[f32], k: &[f32], v: &[f32]) -> Vec<Tensor> {
    let Dims { b, h, l, s, e, ev } = d;
    let q = Tensor::from_slice(q, &[b, l, h, e]).unwrap().permute(&[0, 2, 1, 3]).unwrap();
    let kt = Tensor::from_slice(k, &[b, s, h, e]).unwrap().permute(&[0, 2, 3, 1]).unwrap();
    let v = Tensor::from_slice(v, &[b, s, h, ev]).unwrap().permute(&[0, 2, 1, 3]).unwrap();
    vec![q, kt, v]
}

fn random(d: Dims, seed: u64) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let Dims { b, h, l, s, e, ev } = d;
    (noise(b * l * h * e, seed), noise(b * s * h * e, seed + 1), noise(b * s * h * ev, seed + 2))
}

/// The mask tensor (`true` where `replaced`, or where kept with `keep`) and the `mask_heads`
/// of the spec that reads it.
fn mask_tensor(d: Dims, given: Given, keep: bool, replaced: &Replaced) -> (Tensor, usize) {
    let Dims { h, l, s, .. } = d;
    let bit = |hh, i, j| replaced(0, hh, i, j) != keep;
    match given {
        Given::Shared => {
            let m: Vec<bool> = (0..l * s).map(|x| bit(0, x / s, x % s)).collect();
            (Tensor::from_slice(&m, &[l, s]).unwrap(), 0)
        }
        Given::PerHead => {
            let m: Vec<bool> = (0..h * l * s).map(|x| bit(x / (l * s), x / s % l, x % s)).collect();
            (Tensor::from_slice(&m, &[h, l, s]).unwrap(), h)
        }
        Given::Transposed => {
            let m: Vec<bool> = (0..s * l).map(|x| bit(0, x % l, x / l)).collect();
            (Tensor::from_slice(&m, &[s, l]).unwrap().t().unwrap(), 0)
        }
        Given::Rows => {
            let m: Vec<bool> = (0..l).map(|i| bit(0, i, 0)).collect();
            (Tensor::from_slice(&m, &[l, 1]).unwrap(), 0)
        }
    }
}

/// The output `[b, l, h, ev]` on `threads` threads.
fn run(spec: &Spec, ins: &[Tensor], threads: usize) -> Vec<f32> {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    let out = pool.install(|| attention(spec, ins, &mut Fresh)).unwrap().expect("the kernel takes these operands");
    out.to_vec::<f32>().unwrap()
}

fn spec(mask: Mask, mask_heads: usize, h: usize) -> Spec {
    Spec { scale: Scale::Mul(0.3), mask, mask_heads, output: Output::Permuted(h), safe: false }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Checks that the boolean mask `replaced` (given as `given`, replacing by `-inf`, so
/// skipped where it can be) gives, on one and two threads, the bits of the same mask
/// replacing by `f32::MIN` (whose probabilities are also `+0`, at full width), except in
/// rows it replaces whole, which are NaN. The rows must each keep a score above `f32::MIN`
/// or a NaN, where the two fills agree.
fn check(d: Dims, (q, k, v): (&[f32], &[f32], &[f32]), given: Given, replaced: &Replaced) {
    let Dims { b, h, l, s, ev, .. } = d;
    let ins = operands(d, q, k, v);
    for keep in [false, true] {
        let (mask, heads) = mask_tensor(d, given, keep, replaced);
        let with = |f: f32| {
            let m = if keep { Mask::Keep(f) } else { Mask::Fill(f) };
            let mut ins = ins.clone();
            ins.push(mask.clone());
            (spec(m, heads, h), ins)
        };
        let (skipping, ins_skip) = with(f32::NEG_INFINITY);
        let (full, ins_full) = with(f32::MIN);
        let got = run(&skipping, &ins_skip, 1);
        let want = run(&full, &ins_full, 1);
        assert_eq!(bits(&got), bits(&run(&skipping, &ins_skip, 2)), "{d:?} {given:?} keep {keep}: one and two threads");
        for bb in 0..b {
            for i in 0..l {
                for hh in 0..h {
                    let at = ((bb * l + i) * h + hh) * ev;
                    let (g, w) = (&got[at..at + ev], &want[at..at + ev]);
                    if (0..s).all(|j| replaced(bb, hh, i, j)) {
                        assert!(g.iter().all(|x| x.is_nan()), "{d:?} {given:?} keep {keep}: row {i} of batch {bb} head {hh} is masked whole");
                    } else {
                        assert_eq!(bits(g), bits(w), "{d:?} {given:?} keep {keep}: row {i} of batch {bb} head {hh}");
                    }
                }
            }
        }
    }
}

fn causal(_: usize, _: usize, i: usize, j: usize) -> bool {
    j > i
}

#[test]
fn a_block_computes_up_to_the_last_column_its_rows_keep_in_whole_vectors() {
    let (l, s) = (40, 100);
    let d = Dims { b: 1, h: 1, l, s, e: 1, ev: 1 };
    let (mask, _) = mask_tensor(d, Given::Shared, false, &causal);
    let md = mask.storage_slice::<bool>().unwrap();
    let ml = mask_layout(&mask, 1, l, s, 0).unwrap();
    let end = |r0: usize, rows: usize| kept_end(md, &ml, r0 * ml.rs, rows, s, false).unwrap();
    assert_eq!([end(0, 1), end(0, 16), end(16, 16), end(32, 8)], [1, 16, 32, 40]);
    assert_eq!([block_width(0, s), block_width(1, s), block_width(16, s), block_width(17, s), block_width(97, s)], [16, 16, 16, 32, 100]);
    // Kept columns before the end do not matter, nor does which row keeps the last one.
    let band = |_: usize, _: usize, i: usize, j: usize| !(j + 3 >= i && j <= i + 5);
    for (given, want) in [(Given::Shared, 21), (Given::Transposed, 21)] {
        let (mask, _) = mask_tensor(d, given, true, &band);
        let md = mask.storage_slice::<bool>().unwrap();
        let ml = mask_layout(&mask, 1, l, s, 0).unwrap();
        assert_eq!(kept_end(md, &ml, mask.offset() + 8 * ml.rs, 8, s, true).unwrap(), want, "{given:?}");
    }
    let (mask, _) = mask_tensor(d, Given::Rows, false, &|_, _, i, _| i % 2 == 0);
    let ml = mask_layout(&mask, 1, l, s, 0).unwrap();
    let md = mask.storage_slice::<bool>().unwrap();
    assert_eq!([kept_end(md, &ml, 0, 1, s, false).unwrap(), kept_end(md, &ml, 0, 2, s, false).unwrap()], [0, s]);
}

#[test]
fn the_values_are_finite_up_to_the_row_after_the_last_nonfinite_one() {
    let mut v = noise(6 * 5, 3);
    let view = |v: &[f32]| nonfinite_end(&MatView::new(OP, v, 0, 6, 5, 5, 1).unwrap());
    assert_eq!(view(&v), 0);
    v[2 * 5 + 4] = f32::INFINITY;
    assert_eq!(view(&v), 3);
    v[3 * 5] = f32::NAN;
    assert_eq!(view(&v), 4);
    v[5 * 5 + 1] = f32::NEG_INFINITY;
    assert_eq!(view(&v), 6);
    // Columns apart: the transposed view of the same elements.
    assert_eq!(nonfinite_end(&MatView::new(OP, &v, 0, 5, 6, 1, 5).unwrap()), 5);
}

#[test]
fn a_causal_mask_skips_with_the_bits_of_the_full_width() {
    // The transformer's attention, then odd sizes: sub-blocks, tasks and panels that end
    // mid-vector, several batches, keys longer than queries.
    for d in [
        Dims { b: 1, h: 4, l: 128, s: 128, e: 64, ev: 64 },
        Dims { b: 2, h: 3, l: 37, s: 53, e: 19, ev: 23 },
        Dims { b: 1, h: 1, l: 200, s: 150, e: 32, ev: 40 },
        Dims { b: 1, h: 2, l: 70, s: 600, e: 8, ev: 600 },
    ] {
        let (q, k, v) = random(d, 7);
        check(d, (&q, &k, &v), Given::Shared, &causal);
    }
}

#[test]
fn other_masks_skip_with_the_bits_of_the_full_width() {
    let d = Dims { b: 2, h: 3, l: 45, s: 77, e: 12, ev: 20 };
    let (q, k, v) = random(d, 11);
    let ops = (&q[..], &k[..], &v[..]);
    // Anti-causal: every row keeps the last column, nothing is skipped.
    check(d, ops, Given::Shared, &|_, _, i, j| j < i);
    // A band: leading columns replaced too, only trailing ones skipped.
    check(d, ops, Given::Shared, &|_, _, i, j| !(j + 4 >= i && j <= i + 9));
    check(d, ops, Given::Transposed, &|_, _, i, j| !(j + 4 >= i && j <= i + 9));
    // Arbitrary, with some rows masked whole (and a block of them).
    check(d, ops, Given::Shared, &|_, _, i, j| (i * 7 + j * 13) % 5 < 2 || i % 9 == 4 || (20..=25).contains(&i));
    check(d, ops, Given::Rows, &|_, _, i, _| i % 3 == 1);
    // A different mask per head: causal, a window of 10, everything after column 3.
    check(d, ops, Given::PerHead, &|_, hh, i, j| match hh {
        0 => j > i,
        1 => j > i || j + 10 < i,
        _ => j > 3,
    });
    // Every row masked whole.
    check(d, ops, Given::Shared, &|_, _, _, _| true);
}

#[test]
fn nonfinite_queries_keys_and_values_give_the_bits_of_the_full_width() {
    let d = Dims { b: 1, h: 2, l: 70, s: 70, e: 8, ev: 6 };
    let (mut q, mut k, v) = random(d, 5);
    let Dims { h, e, ev, .. } = d;
    // A query row with a NaN, one with infinities; a key row with an infinity.
    q[(10 * h) * e + 3] = f32::NAN;
    q[(40 * h + 1) * e] = f32::INFINITY;
    q[(41 * h + 1) * e + 2] = f32::NEG_INFINITY;
    k[(5 * h) * e + 1] = f32::NEG_INFINITY;
    check(d, (&q, &k, &v), Given::Shared, &causal);
    // A NaN or an infinity in a row of the values that the first blocks skip, or in the
    // last row, which every block skips but the last.
    for (row, x) in [(40, f32::NAN), (50, f32::INFINITY), (69, f32::NEG_INFINITY), (3, f32::NAN)] {
        let mut v2 = v.clone();
        v2[(row * h + 1) * ev + 2] = x;
        check(d, (&q, &k, &v2), Given::Shared, &causal);
    }
}

#[test]
fn a_negative_zero_sum_is_computed_again_at_full_width() {
    // Uniform probabilities (zero queries) of at least a third over the kept columns times
    // the least negative subnormal: every product rounds to -0, so the kept columns sum to
    // -0, which the skipped columns' +0·1 turn into +0 at full width.
    let d = Dims { b: 1, h: 1, l: 64, s: 64, e: 4, ev: 2 };
    let q = vec![0.0; 64 * 4];
    let k = noise(64 * 4, 9);
    let v: Vec<f32> = (0..64 * 2).map(|x| if x / 2 < 32 { -f32::from_bits(1) } else { 1.0 }).collect();
    check(d, (&q, &k, &v), Given::Shared, &causal);
    let mut ins = operands(d, &q, &k, &v);
    ins.push(mask_tensor(d, Given::Shared, false, &causal).0);
    let got = run(&spec(Mask::Fill(f32::NEG_INFINITY), 0, 1), &ins, 1);
    assert_eq!(got[20 * 2].to_bits(), 0, "+0, as the full width gives");
}

#[test]
fn an_added_mask_of_zeros_and_minus_infinity_gives_the_bits_of_the_skipping_fill() {
    let d = Dims { b: 1, h: 2, l: 50, s: 50, e: 16, ev: 16 };
    let (q, k, v) = random(d, 13);
    let mut ins = operands(d, &q, &k, &v);
    let add: Vec<f32> = (0..50 * 50).map(|x| if x % 50 > x / 50 { f32::NEG_INFINITY } else { 0.0 }).collect();
    let mut added = ins.clone();
    added.push(Tensor::from_slice(&add, &[50, 50]).unwrap());
    ins.push(mask_tensor(d, Given::Shared, false, &causal).0);
    let want = run(&spec(Mask::Add, 0, 2), &added, 1);
    assert_eq!(bits(&run(&spec(Mask::Fill(f32::NEG_INFINITY), 0, 2), &ins, 1)), bits(&want));
    assert_eq!(bits(&run(&spec(Mask::Add, 0, 2), &added, 2)), bits(&want));
}

#[test]
fn a_finite_fill_is_not_skipped() {
    // A row masked whole with a finite fill is the mean of every row of the values.
    let d = Dims { b: 1, h: 1, l: 40, s: 40, e: 4, ev: 3 };
    let (q, k, v) = random(d, 17);
    let mut ins = operands(d, &q, &k, &v);
    ins.push(mask_tensor(d, Given::Shared, false, &|_, _, i, j| j > i || i == 0).0);
    let got = run(&spec(Mask::Fill(-1e9), 0, 1), &ins, 1);
    for c in 0..3 {
        let mean = (0..40).map(|j| f64::from(v[j * 3 + c])).sum::<f64>() / 40.0;
        assert!((f64::from(got[c]) - mean).abs() < 1e-5, "column {c}: {} against {mean}", got[c]);
    }
}

