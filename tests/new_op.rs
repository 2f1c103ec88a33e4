//! Adding an elementwise op from outside the project, through its public API only: a user's
//! dialect declares `mylib.softsign` (`x / (1 + |x|)`) in one place ([`declare`]) — its
//! definition, shape inference, Edge legality and JIT lowering, attached to the op by its
//! handle — and registers its interpreter kernel. A program mixing it with aten ops runs
//! through `-O0` (interpreted) and `-O2` (fused with its aten neighbours into one fusion group
//! that the JIT compiles), and both match a reference computed here.

use std::sync::Arc;

use ir::{Arity, Context, OpDef, OpRef, Traits};
use runtime::{IValue, KernelError, KernelRegistry, Tensor};

/// The op's identity, declared beside its definition.
const SOFTSIGN: OpRef = OpRef::new("mylib.softsign");

/// Declares the op and attaches what the compiler needs to know about it.
fn declare(ctx: &mut Context) {
    ctx.register_dialect("mylib", "A user's elementwise ops.");
    let def = OpDef::new(SOFTSIGN.name())
        .summary("`x / (1 + |x|)`, computed in floating point.")
        .traits(Traits::PURE | Traits::ELEMENTWISE)
        .operands(Arity::Exact(1))
        .results(Arity::Exact(1));
    ctx.register_op(def).expect("mylib.softsign is new");
    ctx.attach(SOFTSIGN, dialect_aten::infer::ShapeInference::FloatUnary);
    ctx.attach(SOFTSIGN, dialect_edge::PromotionRule::FloatUnary);
    ctx.attach(SOFTSIGN, jit::JitLowering::Custom(lower_softsign));
}

/// The JIT lowering: primitives over the operand, in its float dtype.
fn lower_softsign(l: &mut jit::Lower<'_>, operands: &[jit::NodeId]) -> Result<jit::NodeId, jit::JitError> {
    let x = l.to_float(operands[0])?;
    let abs = l.unary(jit::Unary::Abs, x);
    let one = l.float_constant(1.0, l.dtype(x));
    let den = l.binary(jit::Binary::Add, abs, one)?;
    l.binary(jit::Binary::Div, x, den)
}

/// The interpreter kernel (f32 and f64).
fn k_softsign(args: &[IValue]) -> Result<Vec<IValue>, KernelError> {
    let bad = |m: &str| KernelError::new(SOFTSIGN.name(), m.to_string());
    let x = args.first().and_then(|a| a.as_tensor().ok()).ok_or_else(|| bad("expected a tensor"))?;
    let sizes = x.sizes().to_vec();
    let out = match x.dtype() {
        ir::DType::F32 => {
            let v: Vec<f32> = x.to_vec::<f32>()?.iter().map(|&a| a / (1.0 + a.abs())).collect();
            Tensor::from_vec(v, &sizes)?
        }
        ir::DType::F64 => {
            let v: Vec<f64> = x.to_vec::<f64>()?.iter().map(|&a| a / (1.0 + a.abs())).collect();
            Tensor::from_vec(v, &sizes)?
        }
        d => return Err(bad(&format!("not implemented for {d}"))),
    };
    Ok(vec![IValue::Tensor(out)])
}

const ROWS: usize = 32;
const COLS: usize = 96;

/// `sigmoid(softsign(x * y)) + x`; the softsign result's type is left for inference to find.
fn program() -> String {
    let t = format!("tensor<{ROWS}x{COLS}xf32>");
    format!(
        "func.func @forward(%x: {t}, %y: {t}) -> {t} {{
  %m = aten.mul.Tensor %x, %y : {t}
  %s = mylib.softsign %m : ({t}) -> tensor<*x!prim.any>
  %g = aten.sigmoid %s : (tensor<*x!prim.any>) -> {t}
  %r = aten.add.Tensor %g, %x : {t}
  func.return %r : {t}
}}
"
    )
}

fn inputs() -> (Vec<f32>, Vec<f32>) {
    let n = ROWS * COLS;
    let x = (0..n).map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0).collect();
    let y = (0..n).map(|i| ((i * 13 % 29) as f32 - 14.0) / 5.0).collect();
    (x, y)
}

fn reference(x: &[f32], y: &[f32]) -> Vec<f64> {
    x.iter()
        .zip(y)
        .map(|(&a, &b)| {
            let m = (a * b) as f64;
            let s = m / (1.0 + m.abs());
            1.0 / (1.0 + (-s).exp()) + a as f64
        })
        .collect()
}

/// Lowers the program to `level`, compiles and runs it; returns the result and the program.
fn run(ctx: &Context, level: u32, jit: Option<Arc<jit::Jit>>) -> (Vec<f64>, runtime::CompiledProgram, ir::Module) {
    let mut m = ir::parse_module(ctx, &program(), "new_op.ir").expect("the program parses");
    let registry = driver::default_pass_registry();
    let text = driver::pipeline_for_level(level);
    let mut pm = pass::PassManager::parse(&registry, &text, pass::PassManagerConfig::default()).expect("pipeline");
    pm.run(ctx, &mut m, &mut Vec::new()).unwrap_or_else(|d| panic!("-O{level}: {d}"));
    let mut kernels = KernelRegistry::new();
    runtime::kernels::register_all(&mut kernels);
    kernels.register(SOFTSIGN, k_softsign);
    let options = runtime::CompileOptions { fusion: jit.map(|j| j as Arc<dyn runtime::FusionCompiler>), ..Default::default() };
    let compiled = runtime::compile_with_registry(&m, ctx, &runtime::Weights::new(), options, &kernels)
        .unwrap_or_else(|e| panic!("-O{level}: {e}"));
    let (x, y) = inputs();
    let args = [
        IValue::Tensor(Tensor::from_vec(x, &[ROWS, COLS]).unwrap()),
        IValue::Tensor(Tensor::from_vec(y, &[ROWS, COLS]).unwrap()),
    ];
    let out = compiled.runtime().run(&args).unwrap_or_else(|e| panic!("-O{level}: {e}"));
    let t = out[0].as_tensor().expect("a tensor result");
    assert_eq!(t.sizes(), &[ROWS, COLS]);
    assert_eq!(t.dtype(), ir::DType::F32);
    (t.to_vec_f64(), compiled, m)
}

fn assert_close(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 1e-5 * (1.0 + w.abs()), "{what}: element {i} is {g}, expected {w}");
    }
}

#[test]
fn a_new_elementwise_op_runs_through_o0_and_o2_with_the_jit() {
    let mut ctx = driver::default_context();
    declare(&mut ctx);
    let (x, y) = inputs();
    let want = reference(&x, &y);

    // Shape inference: the op's result type is inferred from its operand.
    let m = ir::parse_module(&ctx, &program(), "new_op.ir").expect("the program parses");
    let mut softsign = None;
    m.walk(m.top(), ir::WalkOrder::PreOrder, &mut |o| {
        if SOFTSIGN.is(m.op_name(o)) {
            softsign = Some(o);
        }
    });
    let inferred = dialect_aten::infer::infer_op(&ctx, &m, softsign.expect("the op is in the program")).unwrap();
    assert_eq!(inferred, Some(vec![ir::Type::tensor(ir::DType::F32, &[ROWS as i64, COLS as i64])]));

    let (o0, _, _) = run(&ctx, 0, None);
    assert_close(&o0, &want, "-O0");

    let jit = Arc::new(jit::Jit::for_context(&ctx, jit::JitOptions::default()));
    let (o2, compiled, lowered) = run(&ctx, 2, Some(jit.clone()));
    assert_close(&o2, &want, "-O2");
    // One fusion group holds the whole chain, softsign included, and the JIT compiled it.
    let groups = compiled.fusion_groups();
    assert_eq!(groups.len(), 1, "{groups:?}\n{}", ir::print_module(&ctx, &lowered, ir::PrintOptions::default()));
    assert!(groups[0].compiled(), "{groups:?}");
    assert_eq!(groups[0].ops, 4, "{groups:?}");
    let stats = jit.stats();
    assert_eq!(stats.groups_compiled, 1);
    assert!(stats.native_calls >= 1, "{stats:?}");
}
