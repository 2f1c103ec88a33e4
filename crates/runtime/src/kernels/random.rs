//! Random kernels: `rand`, `randn`, `randperm` and their `_like` forms, and the generator they
//! and dropout draw from.
//!
//! The generator is this runtime's own (xorshift64*, one stream per thread): distributions and
//! shapes are PyTorch's, the values are not (no program can expect PyTorch's bit stream).

use std::cell::Cell;

use ir::DType;

use super::{Args, KernelRegistry, ret};
use crate::tensor::{KernelError, Result, Tensor};
use crate::value::IValue;
use dialect_aten::op;

thread_local! {
    /// The generator of this thread, seeded from the thread's identity.
    static RNG: Cell<u64> = Cell::new(0x9E37_79B9_7F4A_7C15 ^ thread_seed());
}

fn thread_seed() -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::thread::current().id().hash(&mut h);
    h.finish() | 1
}

/// A uniform sample in [0, 1).
pub(crate) fn next_uniform() -> f64 {
    RNG.with(|c| {
        let mut x = c.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        c.set(x);
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    })
}

/// A standard normal sample (Box–Muller).
fn next_normal() -> f64 {
    let u1 = next_uniform().max(f64::MIN_POSITIVE);
    let u2 = next_uniform();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

fn float_dtype(op: &str, d: DType) -> Result<DType> {
    if d.is_floating() {
        Ok(d)
    } else {
        Err(KernelError::new(op.to_string(), format!("expects a floating-point dtype, got {}", d.torch_name())))
    }
}

fn sample(op: &str, sizes: &[usize], dtype: DType, draw: fn() -> f64) -> Result<Vec<IValue>> {
    let dtype = float_dtype(op, dtype)?;
    let n: usize = sizes.iter().product();
    let v: Vec<f64> = (0..n).map(|_| draw()).collect();
    ret(Tensor::from_vec(v, sizes)?.to_dtype(dtype)?)
}

fn k_rand(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::RAND, args, 1)?;
    sample(a.op, &a.sizes(0)?, a.opt_dtype(1)?.unwrap_or(DType::F32), next_uniform)
}

fn k_randn(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::RANDN, args, 1)?;
    sample(a.op, &a.sizes(0)?, a.opt_dtype(1)?.unwrap_or(DType::F32), next_normal)
}

fn k_rand_like(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::RAND_LIKE, args, 1)?;
    let t = a.tensor(0)?;
    sample(a.op, t.sizes(), a.opt_dtype(1)?.unwrap_or(t.dtype()), next_uniform)
}

fn k_randn_like(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::RANDN_LIKE, args, 1)?;
    let t = a.tensor(0)?;
    sample(a.op, t.sizes(), a.opt_dtype(1)?.unwrap_or(t.dtype()), next_normal)
}

/// `randperm(n)`: a uniformly random permutation of `0..n` (Fisher–Yates), int64 by default.
fn k_randperm(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::RANDPERM, args, 1)?;
    let n = a.int(0)?;
    let n = usize::try_from(n).map_err(|_| KernelError::new(a.op, format!("n must be non-negative, got {n}")))?;
    let mut v: Vec<i64> = (0..n as i64).collect();
    for i in (1..n).rev() {
        let j = ((next_uniform() * (i + 1) as f64) as usize).min(i);
        v.swap(i, j);
    }
    let dtype = a.opt_dtype(1)?.unwrap_or(DType::I64);
    ret(Tensor::from_vec(v, &[n])?.to_dtype(dtype)?)
}

pub fn register(r: &mut KernelRegistry) {
    r.register(op::RAND, k_rand);
    r.register(op::RANDN, k_randn);
    r.register(op::RAND_LIKE, k_rand_like);
    r.register(op::RANDN_LIKE, k_randn_like);
    r.register(op::RANDPERM, k_randperm);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(op: &str, args: &[IValue]) -> Tensor {
        match &super::super::registry().call(op, args).unwrap()[0] {
            IValue::Tensor(t) => t.clone(),
            other => panic!("not a tensor: {other:?}"),
        }
    }

    #[test]
    fn distributions_have_their_shape_dtype_and_moments() {
        let u = call(op::RAND.name(), &[IValue::IntList(vec![100, 100])]);
        assert_eq!((u.sizes(), u.dtype()), (&[100usize, 100][..], DType::F32));
        let v = u.to_vec_f64();
        assert!(v.iter().all(|&x| (0.0..1.0).contains(&x)));
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        assert!((mean - 0.5).abs() < 0.02, "{mean}");
        let n = call(op::RANDN.name(), &[IValue::IntList(vec![20000]), IValue::ScalarType(DType::F64)]).to_vec_f64();
        let mean = n.iter().sum::<f64>() / n.len() as f64;
        let var = n.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n.len() as f64;
        assert!(mean.abs() < 0.05 && (var - 1.0).abs() < 0.05, "{mean} {var}");
        assert!(super::super::registry().call(op::RAND.name(), &[IValue::IntList(vec![2]), IValue::ScalarType(DType::I64)]).is_err());
    }

    #[test]
    fn randperm_is_a_permutation() {
        let mut p = call(op::RANDPERM.name(), &[IValue::Int(50)]).to_vec_i64();
        p.sort_unstable();
        assert_eq!(p, (0..50).collect::<Vec<i64>>());
    }
}
