//! Interpreter kernels for ATen ops, and the registry that maps op names to them.
//!
//! A kernel receives its arguments in the op's ATen schema order, with defaults already filled
//! in by the caller (keyword-only arguments included), and returns its results in schema
//! return order. Op names are `aten.<name>` for the default overload (`aten.relu`) and
//! `aten.<name>.<overload>` otherwise (`aten.add.Tensor`).

use std::collections::HashMap;
use std::sync::OnceLock;

use ir::DType;

pub use crate::tensor::KernelError;
use crate::tensor::{Result, Scalar, Tensor};
use crate::value::IValue;

pub(crate) mod attention;
pub mod binary;
pub mod cast;
pub mod complex;
pub mod conv;
pub mod creation;
pub mod distance;
pub mod elementwise;
pub mod eigvals;
pub mod embedding_bag;
pub mod fft;
pub use ::kernels::fastmath;
pub mod index;
pub mod resample;
pub mod linalg;
pub mod norm;
pub mod packed;
pub mod pad;
pub mod pool;
pub mod probe;
pub mod random;
pub mod repeat_index;
pub mod grid_sample3d;
pub mod histogram;
pub mod sobol;
pub mod special;
pub mod matrix_exp;
pub mod ctc;
pub mod reduce;
pub mod scalar;
pub mod script;
pub mod shape;
pub mod sort;
pub mod unary;
pub(crate) use ::kernels::wide;

/// Whether the memory planner runs `op` through an out-variant (its result written into a
/// planned buffer).
pub fn has_out_variant(op: &str) -> bool {
    crate::interp::out::lookup(op).is_some()
}

/// A kernel: arguments in schema order (defaults filled in), results in schema order.
pub type KernelFn = fn(&[IValue]) -> Result<Vec<IValue>, KernelError>;

/// Op name → kernel.
#[derive(Default)]
pub struct KernelRegistry {
    kernels: HashMap<&'static str, KernelFn>,
}

impl KernelRegistry {
    pub fn new() -> KernelRegistry {
        KernelRegistry::default()
    }

    /// Registers (or replaces) the kernel of `op` (its handle, such as `dialect_aten::op::RELU`,
    /// or the name of an op declared without one).
    pub fn register(&mut self, op: impl Into<ir::OpRef>, f: KernelFn) {
        self.kernels.insert(op.into().name(), f);
    }

    pub fn get(&self, op: &str) -> Option<KernelFn> {
        self.kernels.get(op).copied()
    }

    pub fn contains(&self, op: &str) -> bool {
        self.kernels.contains_key(op)
    }

    /// Registered op names, sorted.
    pub fn ops(&self) -> Vec<&'static str> {
        let mut v: Vec<&'static str> = self.kernels.keys().copied().collect();
        v.sort_unstable();
        v
    }

    /// Looks up `op` and runs it.
    pub fn call(&self, op: &str, args: &[IValue]) -> Result<Vec<IValue>> {
        let f = self
            .get(op)
            .ok_or_else(|| KernelError::new(op.to_string(), "no kernel is registered for this op"))?;
        f(args)
    }
}

/// The registry of all built-in kernels, built on first use.
pub fn registry() -> &'static KernelRegistry {
    static REGISTRY: OnceLock<KernelRegistry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let mut r = KernelRegistry::new();
        register_all(&mut r);
        r
    })
}

/// Registers every built-in kernel module into `r`.
pub fn register_all(r: &mut KernelRegistry) {
    unary::register(r);
    binary::register(r);
    reduce::register(r);
    shape::register(r);
    creation::register(r);
    cast::register(r);
    linalg::register(r);
    conv::register(r);
    pool::register(r);
    norm::register(r);
    index::register(r);
    sort::register(r);
    pad::register(r);
    resample::register(r);
    scalar::register(r);
    script::register(r);
    distance::register(r);
    random::register(r);
    embedding_bag::register(r);
    packed::register(r);
    repeat_index::register(r);
    grid_sample3d::register(r);
    histogram::register(r);
    sobol::register(r);
    special::register(r);
    matrix_exp::register(r);
    ctc::register(r);
    complex::register(r);
    fft::register(r);
    eigvals::register(r);
}

/// Typed access to a kernel's arguments, with errors naming the op and the argument position.
#[derive(Clone, Copy)]
pub struct Args<'a> {
    pub op: &'static str,
    pub args: &'a [IValue],
}

impl<'a> Args<'a> {
    /// Wraps `args`, checking that at least `min` arguments were passed.
    pub fn new(op: impl Into<ir::OpRef>, args: &'a [IValue], min: usize) -> Result<Args<'a>> {
        let op = op.into().name();
        if args.len() < min {
            return Err(KernelError::new(op, format!("expected {min} arguments, got {}", args.len())));
        }
        Ok(Args { op, args })
    }

    pub fn len(&self) -> usize {
        self.args.len()
    }

    pub fn is_empty(&self) -> bool {
        self.args.is_empty()
    }

    /// Argument `i`; a missing trailing argument reads as `None` (optional defaults).
    pub fn get(&self, i: usize) -> &'a IValue {
        static NONE: IValue = IValue::None;
        self.args.get(i).unwrap_or(&NONE)
    }

    fn ctx<T>(&self, i: usize, r: Result<T>) -> Result<T> {
        r.map_err(|e| KernelError::new(self.op, format!("argument {i}: {}", e.message)))
    }

    pub fn tensor(&self, i: usize) -> Result<&'a Tensor> {
        self.ctx(i, self.get(i).as_tensor())
    }
    pub fn opt_tensor(&self, i: usize) -> Result<Option<&'a Tensor>> {
        self.ctx(i, self.get(i).as_opt_tensor())
    }
    pub fn int(&self, i: usize) -> Result<i64> {
        self.ctx(i, self.get(i).as_int())
    }
    pub fn opt_int(&self, i: usize) -> Result<Option<i64>> {
        self.ctx(i, self.get(i).as_opt_int())
    }
    pub fn float(&self, i: usize) -> Result<f64> {
        self.ctx(i, self.get(i).as_float())
    }
    pub fn opt_float(&self, i: usize) -> Result<Option<f64>> {
        self.ctx(i, self.get(i).as_opt_float())
    }
    pub fn bool(&self, i: usize) -> Result<bool> {
        self.ctx(i, self.get(i).as_bool())
    }
    pub fn opt_bool(&self, i: usize) -> Result<Option<bool>> {
        self.ctx(i, self.get(i).as_opt_bool())
    }
    pub fn scalar(&self, i: usize) -> Result<Scalar> {
        self.ctx(i, self.get(i).as_scalar())
    }
    pub fn opt_scalar(&self, i: usize) -> Result<Option<Scalar>> {
        self.ctx(i, self.get(i).as_opt_scalar())
    }
    pub fn str(&self, i: usize) -> Result<&'a str> {
        self.ctx(i, self.get(i).as_str())
    }
    pub fn opt_str(&self, i: usize) -> Result<Option<&'a str>> {
        self.ctx(i, self.get(i).as_opt_str())
    }
    pub fn int_list(&self, i: usize) -> Result<Vec<i64>> {
        self.ctx(i, self.get(i).as_int_list())
    }
    pub fn opt_int_list(&self, i: usize) -> Result<Option<Vec<i64>>> {
        self.ctx(i, self.get(i).as_opt_int_list())
    }
    pub fn float_list(&self, i: usize) -> Result<Vec<f64>> {
        self.ctx(i, self.get(i).as_float_list())
    }
    pub fn bool_list(&self, i: usize) -> Result<Vec<bool>> {
        self.ctx(i, self.get(i).as_bool_list())
    }
    pub fn tensor_list(&self, i: usize) -> Result<Vec<Tensor>> {
        self.ctx(i, self.get(i).as_tensor_list())
    }
    pub fn opt_tensor_list(&self, i: usize) -> Result<Vec<Option<Tensor>>> {
        self.ctx(i, self.get(i).as_opt_tensor_list())
    }
    pub fn opt_dtype(&self, i: usize) -> Result<Option<DType>> {
        self.ctx(i, self.get(i).as_opt_dtype())
    }
    /// `SymInt[]` sizes as `usize`, rejecting negatives.
    pub fn sizes(&self, i: usize) -> Result<Vec<usize>> {
        let v = self.int_list(i)?;
        crate::tensor::shape::to_sizes(self.op, &v)
    }
}

/// One tensor result.
pub fn ret(t: Tensor) -> Result<Vec<IValue>> {
    Ok(vec![IValue::Tensor(t)])
}
