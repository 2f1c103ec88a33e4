//! The native `backend.kernel {kernel = "conv"}` that `fuse-epilogue` forms from a forward
//! convolution with a bias and the residual add and activation after it: the filter is packed
//! once, when the program is compiled (as a lone convolution's is, `prepack`), and each call
//! applies the residual and activation to the output's tiles as they are finished
//! (`kernels::gemm::Post`), in the separate ops' order, so the bits are theirs.

use std::sync::Arc;

use dialect_aten::op;
use ir::{DType, Module, OpId};

use crate::fusion::{FusionKernel, FusionOutcome, OutputAlloc};
use crate::kernels::conv::{ConvArgs, PackedFilter, Padding, conv_compute_packed, geometry};
use crate::tensor::{Result, Tensor};
use crate::value::IValue;
use super::prepack::{region_op, residual_side};
use ::kernels::Isa;
use ::kernels::gemm::{Activation, Addend, Post};

/// The name of the fused convolution.
pub(crate) const CONV_KERNEL: &str = dialect_backend::kernels::CONV;

#[derive(Debug)]
struct ConvKernel {
    packed: PackedFilter,
    /// The constant filter that was packed; a call with another declines.
    weight: Tensor,
    args: ConvArgs,
    /// `Some(first)` with a residual operand (`first`: it is the left operand of the sum).
    residual: Option<bool>,
    act: Activation,
}

/// The native implementation of the `conv` kernel `op`, whose operands' compile-time values
/// are `consts`; `Err` with the reason when there is none (the region is then interpreted):
/// an attribute it does not read, a filter that is not a constant `f32` tensor, a
/// convolution whose options are not attributes, a CPU without a prepacked path.
pub(crate) fn conv_kernel(m: &Module, op: OpId, consts: &[Option<IValue>]) -> std::result::Result<Arc<dyn FusionKernel>, String> {
    let attr = |k: &str| m.attr(op, k);
    let number = |k: &str| attr(k).and_then(|a| a.as_number()).map(|v| v as f32).ok_or(format!("a clamp without a numeric `{k}`"));
    let act = match attr("activation").and_then(|a| a.as_str()) {
        Some("none") => Activation::None,
        Some("relu") => Activation::Relu,
        Some("hardswish") => Activation::Hardswish,
        Some("hardswish-product-first") => Activation::HardswishProductFirst,
        Some("clamp") => Activation::Clamp(number("min")?, number("max")?),
        other => return Err(format!("unknown activation {other:?}")),
    };
    let residual = residual_side(m, op)?;
    let operands = 3 + usize::from(residual.is_some());
    if m.operands(op).len() != operands || m.results(op).len() != 1 {
        return Err(format!("a conv kernel with {} operands and {} results", m.operands(op).len(), m.results(op).len()));
    }
    let conv = region_op(m, op, op::CONVOLUTION)?;
    let ints = |k: &str| -> std::result::Result<Vec<i64>, String> {
        let a = m.attr(conv, k).ok_or(format!("a convolution without `{k}`"))?;
        a.as_int_array().ok_or(format!("a convolution whose `{k}` is not a list of ints"))
    };
    if m.attr(conv, "transposed").and_then(|a| a.as_bool()) != Some(false) {
        return Err("a transposed convolution".into());
    }
    let args = ConvArgs {
        stride: ints("stride")?,
        padding: Padding::Explicit(ints("padding")?),
        dilation: ints("dilation")?,
        transposed: false,
        output_padding: ints("output_padding")?,
        groups: m.attr(conv, "groups").and_then(|a| a.as_int()).ok_or("a convolution without integer `groups`")?,
    };
    let weight = match consts.get(1) {
        Some(Some(IValue::Tensor(t))) if t.dtype() == DType::F32 && t.dim() >= 3 => t.clone(),
        _ => return Err("the filter is not a constant f32 tensor".into()),
    };
    let groups = usize::try_from(args.groups).map_err(|_| format!("{} groups", args.groups))?;
    let isa = Isa::simd().ok_or("this CPU has no prepacked path")?;
    let packed = PackedFilter::pack("conv", isa, &weight, groups).map_err(|e| e.to_string())?;
    Ok(Arc::new(ConvKernel { packed, weight, args, residual, act }))
}

impl FusionKernel for ConvKernel {
    fn run(&self, inputs: &[Tensor], alloc: &mut dyn OutputAlloc) -> Result<FusionOutcome> {
        const OP: &str = "conv";
        let decline = |why: &str| Ok(FusionOutcome::Declined(why.to_string()));
        let [x, w, bias, rest @ ..] = inputs else { return decline("too few operands") };
        if !super::prepack::is_same_tensor(w, &self.weight) {
            return decline("a filter other than the packed constant");
        }
        if x.dtype() != DType::F32 || bias.dtype() != DType::F32 || bias.dim() != 1 {
            return decline("operands other than an f32 input and bias");
        }
        let g = geometry(OP, x.sizes(), w.sizes(), Some(bias.sizes()), &self.args)?;
        let mut sizes = vec![g.n, g.cout];
        sizes.extend_from_slice(&g.output[3 - (w.dim() - 2)..]);
        let lout: usize = g.output.iter().product();
        let copy: Tensor;
        let addend = match (self.residual, rest) {
            (None, []) => None,
            (Some(first), [r]) => {
                if r.sizes() != sizes.as_slice() || r.dtype() != DType::F32 {
                    return decline("a residual that is not an f32 tensor of the result's shape");
                }
                let r = if r.is_contiguous() {
                    r
                } else {
                    copy = r.contiguous()?;
                    &copy
                };
                Some(Addend { data: r.as_slice::<f32>()?, ld: lout, first })
            }
            _ => return decline("an operand count other than the kernel's"),
        };
        let xc;
        let x = if x.is_contiguous() {
            x
        } else {
            xc = x.contiguous()?;
            &xc
        };
        let bc;
        let bias = if bias.is_contiguous() {
            bias
        } else {
            bc = bias.contiguous()?;
            &bc
        };
        let out = alloc.output(0, DType::F32, &sizes)?;
        // SAFETY: `out` is a fresh or planned tensor no other handle references; the memory
        // plan never gives an instruction's result the storage of a value it reads (their
        // lifetimes overlap at the instruction), so it is distinct from every operand.
        let c = unsafe { out.as_mut_slice::<f32>()? };
        conv_compute_packed(OP, &g, x.as_slice::<f32>()?, &self.packed, Some(bias.as_slice::<f32>()?), &Post { addend, act: self.act }, c)?;
        Ok(FusionOutcome::Ran(vec![out]))
    }
}
