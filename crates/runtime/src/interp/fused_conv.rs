//! The native `backend.kernel {kernel = "conv"}` that `fuse-epilogue` forms from a forward
//! convolution with a bias and the residual add and activation after it: the filter is packed
//! once, when the program is compiled (as a lone convolution's is, `prepack`), and each call
//! applies the residual and activation to the output's tiles as they are finished
//! (`kernels::gemm::Post`), in the separate ops' order, so the bits are theirs. In a
//! half-precision program the casts to `f16` and back around the activation (`round_product`,
//! `round_result`) are applied there too, as roundings of the `f32` results.

use std::sync::Arc;

use dialect_aten::op;
use ir::{DType, Module, OpId};

use crate::fusion::{FusionKernel, FusionOutcome, OutputAlloc};
use crate::kernels::conv::{ConvArgs, Geometry, PackedFilter, Padding, ResultSizes, conv_compute_packed, conv_pool_applies, conv_pool_packed, geometry, static_positions};
use crate::tensor::{KernelError, Result, Tensor};
use crate::value::IValue;
use super::prepack::{region_op, residual_side};
use ::kernels::Isa;
use ::kernels::gemm::{Activation, Addend, HalfRounding, Post};

/// The name of the fused convolution.
pub(crate) const CONV_KERNEL: &str = dialect_backend::kernels::CONV;

/// The name of the fused concatenation of convolutions.
pub(crate) const CONV_CAT_KERNEL: &str = dialect_backend::kernels::CONV_CAT;

/// The name of the fused convolution and max pool.
pub(crate) const CONV_POOL_KERNEL: &str = dialect_backend::kernels::CONV_POOL;

#[derive(Debug)]
struct ConvKernel {
    packed: PackedFilter,
    /// The constant filter that was packed; a call with another declines.
    weight: Tensor,
    args: ConvArgs<'static>,
    /// `Some(first)` with a residual operand (`first`: it is the left operand of the sum).
    residual: Option<bool>,
    act: Activation,
    /// The roundings through `f16` (`round_product`, `round_result`) of a half-precision
    /// program's convolution.
    half: HalfRounding,
}

/// The native implementation of the `conv` kernel `op`, whose operands' compile-time values
/// are `consts`; `Err` with the reason when there is none (the region is then interpreted):
/// an attribute it does not read, a filter that is not a constant `f32` tensor, a
/// convolution whose options are not attributes, a CPU without a prepacked path.
pub(crate) fn conv_kernel(m: &Module, op: OpId, consts: &[Option<IValue>]) -> std::result::Result<Arc<dyn FusionKernel>, String> {
    Ok(Arc::new(build_conv(m, op, consts)?))
}

/// The [`ConvKernel`] of the `conv` kernel `op` (see [`conv_kernel`]).
fn build_conv(m: &Module, op: OpId, consts: &[Option<IValue>]) -> std::result::Result<ConvKernel, String> {
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
    let rounding = |k: &str| match attr(k).map(|a| a.as_str()) {
        None => Ok(false),
        Some(Some("f16")) => Ok(true),
        Some(other) => Err(format!("a `{k}` of {other:?} (only \"f16\" is known)")),
    };
    let half = HalfRounding { product: rounding("round_product")?, result: rounding("round_result")? };
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
        stride: ints("stride")?.into(),
        padding: Padding::Explicit(ints("padding")?.into()),
        dilation: ints("dilation")?.into(),
        transposed: false,
        output_padding: ints("output_padding")?.into(),
        groups: m.attr(conv, "groups").and_then(|a| a.as_int()).ok_or("a convolution without integer `groups`")?,
    };
    let weight = match consts.get(1) {
        Some(Some(IValue::Tensor(t))) if t.dtype() == DType::F32 && t.dim() >= 3 => t.clone(),
        _ => return Err("the filter is not a constant f32 tensor".into()),
    };
    let groups = usize::try_from(args.groups).map_err(|_| format!("{} groups", args.groups))?;
    let isa = Isa::simd().ok_or("this CPU has no prepacked path")?;
    let x = m.operands(op).first().and_then(|&v| m.value_type(v).as_tensor()?.static_dims());
    let packed = match x.and_then(|x| static_positions(&x, weight.sizes(), &args)) {
        Some(positions) => PackedFilter::pack_for("conv", isa, &weight, groups, positions),
        None => PackedFilter::pack("conv", isa, &weight, groups),
    }
    .map_err(|e| e.to_string())?;
    Ok(ConvKernel { packed, weight, args, residual, act, half })
}

/// A call's operands as the kernel checked them: the geometry, the result's sizes and the
/// residual, if any.
struct Checked<'t> {
    g: Geometry,
    sizes: ResultSizes,
    residual: Option<(&'t Tensor, bool)>,
}

impl ConvKernel {
    /// What a call with `inputs` computes, or why the kernel declines it (`Ok(Err(reason))`).
    fn check<'t>(&self, inputs: &[&'t Tensor]) -> Result<std::result::Result<Checked<'t>, &'static str>> {
        let [x, w, bias, rest @ ..] = inputs else { return Ok(Err("too few operands")) };
        if !super::prepack::is_same_tensor(w, &self.weight) {
            return Ok(Err("a filter other than the packed constant"));
        }
        if x.dtype() != DType::F32 || bias.dtype() != DType::F32 || bias.dim() != 1 {
            return Ok(Err("operands other than an f32 input and bias"));
        }
        let g = geometry(OP, x.sizes(), w.sizes(), Some(bias.sizes()), &self.args)?;
        let sizes = g.result_sizes(w.dim() - 2);
        let residual = match (self.residual, rest) {
            (None, []) => None,
            (Some(first), [r]) => {
                if r.sizes() != &*sizes || r.dtype() != DType::F32 {
                    return Ok(Err("a residual that is not an f32 tensor of the result's shape"));
                }
                Some((*r, first))
            }
            _ => return Ok(Err("an operand count other than the kernel's")),
        };
        Ok(Ok(Checked { g, sizes, residual }))
    }

    /// Computes the checked call into `c` (the result's elements, contiguous).
    fn compute(&self, x: &Tensor, bias: &Tensor, k: &Checked<'_>, c: &mut [f32]) -> Result<()> {
        let lout: usize = k.g.output.iter().product();
        let copy: Tensor;
        let addend = match k.residual {
            None => None,
            Some((r, first)) => {
                let r = if r.is_contiguous() {
                    r
                } else {
                    copy = r.contiguous()?;
                    &copy
                };
                Some(Addend { data: r.as_slice::<f32>()?, ld: lout, first })
            }
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
        conv_compute_packed(OP, &k.g, x.as_slice::<f32>()?, &self.packed, Some(bias.as_slice::<f32>()?), &Post { addend, act: self.act, half: self.half }, c)
    }
}

/// The name the fused convolutions report errors under.
const OP: &str = "conv";

impl FusionKernel for ConvKernel {
    fn run(&self, inputs: &[Tensor], alloc: &mut dyn OutputAlloc) -> Result<FusionOutcome> {
        let ins: Vec<&Tensor> = inputs.iter().collect();
        let k = match self.check(&ins)? {
            Ok(k) => k,
            Err(why) => return Ok(FusionOutcome::Declined(why.to_string())),
        };
        let out = alloc.output(0, DType::F32, &k.sizes)?;
        // SAFETY: `out` is a fresh or planned tensor no other handle references; the memory
        // plan never gives an instruction's result the storage of a value it reads (their
        // lifetimes overlap at the instruction), so it is distinct from every operand.
        let c = unsafe { out.as_mut_slice::<f32>()? };
        self.compute(ins[0], ins[2], &k, c)?;
        Ok(FusionOutcome::Ran(vec![out]))
    }
}

/// The native `backend.kernel {kernel = "conv_cat"}`: the `conv` kernels of its region, each
/// with the positions of its operands among the kernel's, in the order the `cat` takes them.
#[derive(Debug)]
struct ConvCatKernel {
    parts: Vec<(ConvKernel, Vec<usize>)>,
}

/// The native implementation of the `conv_cat` kernel `op` (see [`conv_kernel`]): its region
/// must be `conv` kernels of its arguments, a list of their results and a `cat` of the list
/// along channels, returned.
pub(crate) fn conv_cat_kernel(m: &Module, op: OpId, consts: &[Option<IValue>]) -> std::result::Result<Arc<dyn FusionKernel>, String> {
    let body = m.regions(op).first().and_then(|&r| m.region_blocks(r).first().copied()).ok_or("a kernel without a body")?;
    let args = m.block_args(body).to_vec();
    let ops = m.block_ops(body);
    let cat = ops
        .iter()
        .copied()
        .find(|&o| dialect_edge::as_aten(m.op_name(o)) == Some(op::CAT))
        .ok_or("no cat in the kernel's region")?;
    let ret = ops.last().copied().ok_or("an empty region")?;
    if m.operands(ret) != m.results(cat) {
        return Err("a region that does not return its cat".into());
    }
    let rank = m.value_type(m.results(cat)[0]).as_tensor().and_then(|t| t.static_dims()).map_or(0, |d| d.len() as i64);
    let dim = m.attr(cat, "dim").and_then(|a| a.as_int()).ok_or("a cat without an integer dim")?;
    if dim != 1 && dim != 1 - rank {
        return Err(format!("a cat along dim {dim}"));
    }
    let list = m.operands(cat).first().and_then(|&l| m.defining_op(l)).ok_or("a cat of no list")?;
    if m.op_name(list) != dialect_prim::LIST_CONSTRUCT {
        return Err("a cat of something other than a list".into());
    }
    let mut parts = Vec::new();
    for &p in m.operands(list) {
        let k = m.defining_op(p).filter(|&k| m.parent_block(k) == Some(body)).ok_or("a part made outside the region")?;
        if m.op_name(k) != dialect_backend::KERNEL || m.attr(k, dialect_backend::kernels::ATTR).and_then(|a| a.as_str()) != Some(CONV_KERNEL) {
            return Err("a part that is not a conv kernel".into());
        }
        let at = operand_positions(m, k, &args)?;
        let inner: Vec<Option<IValue>> = at.iter().map(|&i| consts.get(i).cloned().flatten()).collect();
        parts.push((build_conv(m, k, &inner)?, at));
    }
    // Nothing else may happen in the region: the parts, the list, the cat and the return.
    if ops.len() != parts.len() + 3 {
        return Err("a region with ops besides the convolutions and their cat".into());
    }
    Ok(Arc::new(ConvCatKernel { parts }))
}

impl FusionKernel for ConvCatKernel {
    fn run(&self, inputs: &[Tensor], alloc: &mut dyn OutputAlloc) -> Result<FusionOutcome> {
        let decline = |why: &str| Ok(FusionOutcome::Declined(why.to_string()));
        let mut checked = Vec::with_capacity(self.parts.len());
        let mut sizes: Option<Vec<usize>> = None;
        for (k, at) in &self.parts {
            let Some(ins) = at.iter().map(|&i| inputs.get(i)).collect::<Option<Vec<&Tensor>>>() else { return decline("too few operands") };
            let c = match k.check(&ins)? {
                Ok(c) => c,
                Err(why) => return decline(why),
            };
            // One image: each part's channels are one contiguous run of the result.
            if c.sizes.len() < 3 || c.sizes[0] != 1 {
                return decline("a batch of other than one image");
            }
            match &mut sizes {
                None => sizes = Some(c.sizes.to_vec()),
                Some(s) if s.len() == c.sizes.len() && s[2..] == c.sizes[2..] => s[1] += c.sizes[1],
                Some(_) => return decline("parts of different spatial sizes"),
            }
            checked.push((ins, c));
        }
        let Some(sizes) = sizes else { return decline("no parts") };
        let out = alloc.output(0, DType::F32, &sizes)?;
        // SAFETY: as in `ConvKernel::run`: a fresh or planned tensor distinct from every operand.
        let c = unsafe { out.as_mut_slice::<f32>()? };
        let mut start = 0;
        for ((k, _), (ins, checked)) in self.parts.iter().zip(&checked) {
            let len: usize = checked.sizes.iter().product();
            let part = c.get_mut(start..start + len).ok_or_else(|| KernelError::new(OP, "internal error: the parts overrun the result"))?;
            k.compute(ins[0], ins[2], checked, part)?;
            start += len;
        }
        Ok(FusionOutcome::Ran(vec![out]))
    }
}

/// The positions among a region's arguments `args` of the operands of the `conv` kernel `k`
/// inside it; `Err` when one is made inside the region.
fn operand_positions(m: &Module, k: OpId, args: &[ir::ValueId]) -> std::result::Result<Vec<usize>, String> {
    m.operands(k)
        .iter()
        .map(|v| args.iter().position(|a| a == v))
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| "a conv kernel with an operand made inside the region".to_string())
}

/// The native `backend.kernel {kernel = "conv_pool"}`: its region's `conv` kernel, then a 3 × 3
/// max pool of stride 2 over the result (`pad` rows and columns of padding, `ceil` its
/// `ceil_mode`), computed without the convolution's output
/// ([`crate::kernels::conv::conv_pool_packed`]).
#[derive(Debug)]
struct ConvPoolKernel {
    conv: ConvKernel,
    pad: usize,
    ceil: bool,
}

/// The native implementation of the `conv_pool` kernel `op` (see [`conv_kernel`]): its region
/// must be a `conv` kernel of its arguments without a residual and a max pool of its result
/// (`max_pool2d_with_indices`, its indices unread, or `max_pool2d`) of a 3 × 3 window, stride
/// 2, padding of at most one and no dilation, returned.
pub(crate) fn conv_pool_kernel(m: &Module, op: OpId, consts: &[Option<IValue>]) -> std::result::Result<Arc<dyn FusionKernel>, String> {
    let body = m.regions(op).first().and_then(|&r| m.region_blocks(r).first().copied()).ok_or("a kernel without a body")?;
    let args = m.block_args(body).to_vec();
    let ops = m.block_ops(body);
    let [k, pool, ret] = ops[..] else { return Err("a region with ops besides a convolution and its pool".into()) };
    let name = dialect_edge::as_aten(m.op_name(pool));
    if name != Some(op::MAX_POOL2D_WITH_INDICES) && name != Some(op::MAX_POOL2D) {
        return Err("no max pool in the kernel's region".into());
    }
    if m.results(pool).get(1).is_some_and(|&i| !m.uses(i).is_empty()) {
        return Err("a max pool whose indices are read".into());
    }
    if m.operands(ret) != &m.results(pool)[..1] {
        return Err("a region that does not return its pool's values".into());
    }
    if m.op_name(k) != dialect_backend::KERNEL || m.attr(k, dialect_backend::kernels::ATTR).and_then(|a| a.as_str()) != Some(CONV_KERNEL) {
        return Err("a pool of something other than a conv kernel".into());
    }
    if m.operands(pool).first() != m.results(k).first() {
        return Err("a pool of another value than the convolution's".into());
    }
    let ints = |key: &str, default: &[i64]| -> std::result::Result<Vec<i64>, String> {
        match m.attr(pool, key) {
            None => Ok(default.to_vec()),
            Some(a) => a.as_int_array().ok_or(format!("a max pool whose `{key}` is not a list of ints")),
        }
    };
    let kernel = ints("kernel_size", &[])?;
    let stride = match ints("stride", &[])? {
        s if s.is_empty() => kernel.clone(),
        s => s,
    };
    let padding = ints("padding", &[0])?;
    let dilation = ints("dilation", &[1])?;
    let two = |v: &[i64]| match v {
        [a] => Some(*a),
        [a, b] if a == b => Some(*a),
        _ => None,
    };
    let pad = match (two(&kernel), two(&stride), two(&padding), two(&dilation)) {
        (Some(3), Some(2), Some(p @ (0 | 1)), Some(1)) => p as usize,
        _ => return Err(format!("a max pool of kernel {kernel:?}, stride {stride:?}, padding {padding:?}, dilation {dilation:?}")),
    };
    let ceil = match m.attr(pool, "ceil_mode") {
        None => false,
        Some(a) => a.as_bool().ok_or("a max pool whose `ceil_mode` is not a bool")?,
    };
    if operand_positions(m, k, &args)? != (0..args.len()).collect::<Vec<_>>() {
        return Err("a conv kernel whose operands are not the kernel's, in order".into());
    }
    let conv = build_conv(m, k, consts)?;
    if conv.residual.is_some() {
        return Err("a pooled convolution with a residual".into());
    }
    Ok(Arc::new(ConvPoolKernel { conv, pad, ceil }))
}

impl FusionKernel for ConvPoolKernel {
    fn run(&self, inputs: &[Tensor], alloc: &mut dyn OutputAlloc) -> Result<FusionOutcome> {
        let ins: Vec<&Tensor> = inputs.iter().collect();
        let k = match self.conv.check(&ins)? {
            Ok(k) => k,
            Err(why) => return Ok(FusionOutcome::Declined(why.to_string())),
        };
        let &[n, c, oh, ow] = &*k.sizes else { return Ok(FusionOutcome::Declined("a convolution other than 2-d".into())) };
        // PyTorch's output size (an empty one is declined by `conv_pool_applies`, and the
        // interpreted pool reports it).
        let size = |i: usize| usize::try_from(crate::kernels::pool::pooled_size(i, 3, self.pad, 2, 1, self.ceil)).unwrap_or(0);
        let pooled = [size(oh), size(ow)];
        let post = Post { addend: None, act: self.conv.act, half: self.conv.half };
        if !conv_pool_applies(&k.g, &self.conv.packed, &post, self.pad, pooled) {
            return Ok(FusionOutcome::Declined("a pooled convolution the banded path does not cover".into()));
        }
        let out = alloc.output(0, DType::F32, &[n, c, pooled[0], pooled[1]])?;
        // SAFETY: as in `ConvKernel::run`: a fresh or planned tensor distinct from every operand.
        let dst = unsafe { out.as_mut_slice::<f32>()? };
        let (x, bias) = (ins[0].contiguous()?, ins[2].contiguous()?);
        conv_pool_packed(OP, &k.g, x.as_slice::<f32>()?, &self.conv.packed, Some(bias.as_slice::<f32>()?), &post, self.pad, pooled, dst)?;
        Ok(FusionOutcome::Ran(vec![out]))
    }
}
