//! Float-only activation functions with parameters (`gelu`, `silu`, `mish`, the hard
//! activations, `leaky_relu`, `elu`, `softplus`).

use super::*;

/// Float-only activation functions take their parameters from the arguments.
pub(super) fn float_only<'a>(op: &str, t: &'a Tensor) -> Result<&'a Tensor> {
    if !t.dtype().is_floating() {
        return Err(KernelError::new(op.to_string(), format!("not implemented for {}", t.dtype().torch_name())));
    }
    Ok(t)
}

/// GELU, exact (`erf`) or with the `tanh` approximation.
pub(crate) struct Gelu {
    pub tanh: bool,
}

impl FloatFn for Gelu {
    #[inline(always)]
    fn f32(&self, x: f32) -> f32 {
        if self.tanh { fastmath::gelu_tanh_f32(x) } else { fastmath::gelu_erf_f32(x) }
    }
    fn f64(&self, x: f64) -> f64 {
        if self.tanh {
            let k = (2.0 / std::f64::consts::PI).sqrt();
            0.5 * x * (1.0 + (k * (x + 0.044715 * x * x * x)).tanh())
        } else {
            0.5 * x * (1.0 + libm::erf(x * std::f64::consts::FRAC_1_SQRT_2))
        }
    }
    fn f32_slice(&self, src: &[f32], dst: &mut [f32]) {
        if self.tanh {
            fastmath::map_slice(src, dst, fastmath::gelu_tanh_f32)
        } else {
            fastmath::map_slice(src, dst, fastmath::gelu_erf_f32)
        }
    }
    fn f32_in_place(&self, data: &mut [f32]) {
        if self.tanh {
            fastmath::map_in_place(data, fastmath::gelu_tanh_f32)
        } else {
            fastmath::map_in_place(data, fastmath::gelu_erf_f32)
        }
    }
}

pub(super) fn k_gelu(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::GELU, args, 1)?;
    let t = float_only(op::GELU.name(), a.tensor(0)?)?;
    let tanh = match a.opt_str(1)?.unwrap_or("none") {
        "none" => false,
        "tanh" => true,
        other => return Err(KernelError::new(op::GELU, format!("approximate must be 'none' or 'tanh', got '{other}'"))),
    };
    ret(map_float(op::GELU.name(), t, &Gelu { tanh })?)
}

pub(super) struct Silu;
impl FloatFn for Silu {
    fn f32(&self, x: f32) -> f32 {
        x / (1.0 + (-x).exp())
    }
    fn f64(&self, x: f64) -> f64 {
        x / (1.0 + (-x).exp())
    }
}

pub(super) fn k_silu(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = float_only(op::SILU.name(), Args::new(op::SILU, args, 1)?.tensor(0)?)?;
    ret(map_float(op::SILU.name(), t, &Silu)?)
}

pub(super) struct Mish;
impl FloatFn for Mish {
    fn f32(&self, x: f32) -> f32 {
        x * softplus64(x as f64, 1.0, 20.0).tanh() as f32
    }
    fn f64(&self, x: f64) -> f64 {
        x * softplus64(x, 1.0, 20.0).tanh()
    }
}

pub(super) fn k_mish(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = float_only(op::MISH.name(), Args::new(op::MISH, args, 1)?.tensor(0)?)?;
    ret(map_float(op::MISH.name(), t, &Mish)?)
}

pub(super) struct HardSigmoid;
impl FloatFn for HardSigmoid {
    fn f32(&self, x: f32) -> f32 {
        (x + 3.0).clamp(0.0, 6.0) / 6.0
    }
    fn f64(&self, x: f64) -> f64 {
        (x + 3.0).clamp(0.0, 6.0) / 6.0
    }
}

pub(super) struct HardSwish;
impl FloatFn for HardSwish {
    fn f32(&self, x: f32) -> f32 {
        x * (x + 3.0).clamp(0.0, 6.0) / 6.0
    }
    fn f64(&self, x: f64) -> f64 {
        x * (x + 3.0).clamp(0.0, 6.0) / 6.0
    }
}

pub(super) fn k_hardsigmoid(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = float_only(op::HARDSIGMOID.name(), Args::new(op::HARDSIGMOID, args, 1)?.tensor(0)?)?;
    ret(map_float(op::HARDSIGMOID.name(), t, &HardSigmoid)?)
}

pub(super) fn k_hardswish(args: &[IValue]) -> Result<Vec<IValue>> {
    let t = float_only(op::HARDSWISH.name(), Args::new(op::HARDSWISH, args, 1)?.tensor(0)?)?;
    ret(map_float(op::HARDSWISH.name(), t, &HardSwish)?)
}

pub(super) struct LeakyRelu {
    pub(super) slope: f64,
}
impl FloatFn for LeakyRelu {
    fn f32(&self, x: f32) -> f32 {
        if x > 0.0 { x } else { x * self.slope as f32 }
    }
    fn f64(&self, x: f64) -> f64 {
        if x > 0.0 { x } else { x * self.slope }
    }
}

pub(super) fn k_leaky_relu(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::LEAKY_RELU, args, 1)?;
    let t = float_only(op::LEAKY_RELU.name(), a.tensor(0)?)?;
    let slope = a.opt_scalar(1)?.map_or(0.01, |s| s.to_f64());
    ret(map_float(op::LEAKY_RELU.name(), t, &LeakyRelu { slope })?)
}

pub(super) struct Elu {
    pub(super) alpha: f64,
    pub(super) scale: f64,
    pub(super) input_scale: f64,
}
impl FloatFn for Elu {
    fn f32(&self, x: f32) -> f32 {
        if x <= 0.0 {
            ((x * self.input_scale as f32).exp_m1()) * (self.alpha * self.scale) as f32
        } else {
            x * self.scale as f32
        }
    }
    fn f64(&self, x: f64) -> f64 {
        if x <= 0.0 { (x * self.input_scale).exp_m1() * self.alpha * self.scale } else { x * self.scale }
    }
}

pub(super) fn k_elu(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::ELU, args, 1)?;
    let t = float_only(op::ELU.name(), a.tensor(0)?)?;
    let get = |i: usize| -> Result<f64> { Ok(a.opt_scalar(i)?.map_or(1.0, |s| s.to_f64())) };
    ret(map_float(op::ELU.name(), t, &Elu { alpha: get(1)?, scale: get(2)?, input_scale: get(3)? })?)
}

pub(super) fn softplus64(x: f64, beta: f64, threshold: f64) -> f64 {
    if x * beta > threshold { x } else { (x * beta).exp().ln_1p() / beta }
}

pub(super) struct Softplus {
    pub(super) beta: f64,
    pub(super) threshold: f64,
}
impl FloatFn for Softplus {
    fn f32(&self, x: f32) -> f32 {
        let b = self.beta as f32;
        if x * b > self.threshold as f32 { x } else { (x * b).exp().ln_1p() / b }
    }
    fn f64(&self, x: f64) -> f64 {
        softplus64(x, self.beta, self.threshold)
    }
}

pub(super) fn k_softplus(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::SOFTPLUS, args, 1)?;
    let t = float_only(op::SOFTPLUS.name(), a.tensor(0)?)?;
    let beta = a.opt_scalar(1)?.map_or(1.0, |s| s.to_f64());
    let threshold = a.opt_scalar(2)?.map_or(20.0, |s| s.to_f64());
    ret(map_float(op::SOFTPLUS.name(), t, &Softplus { beta, threshold })?)
}
