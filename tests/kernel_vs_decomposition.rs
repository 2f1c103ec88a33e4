//! Every op that has both an interpreter kernel and a decomposition is run both ways on random
//! inputs, and the two must agree: for each dtype (f32, f64, bf16, f16, i64, i32, bool) and each
//! shape case (a matrix, a scalar, a 0-size tensor, and for ops of two tensors a broadcast
//! pair), the op alone is compiled once as written (its kernel) and once after `decompose` of
//! that op (core ops, with the composite fallback for what they need). Both runs must fail, or
//! both succeed with the same shape, dtype and values (within the dtype's rounding).

use runtime::{IValue, Tensor};

/// A deterministic generator of test values.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

const DTYPES: [ir::DType; 7] =
    [ir::DType::F32, ir::DType::F64, ir::DType::BF16, ir::DType::F16, ir::DType::I64, ir::DType::I32, ir::DType::Bool];

fn random_tensor(rng: &mut Lcg, dtype: ir::DType, shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n)
        .map(|_| {
            let u = rng.next();
            match dtype {
                ir::DType::Bool => (u < 0.5) as i64 as f64,
                d if d.is_floating() => u * 4.0 - 2.0,
                // Positive integers keep integer division and roots defined.
                _ => (u * 6.0).floor() + 1.0,
            }
        })
        .collect();
    Tensor::from_vec(v, shape).and_then(|t| t.to_dtype(dtype)).expect("a test tensor")
}

fn type_text(dtype: ir::DType, shape: &[usize]) -> String {
    let dims: String = shape.iter().map(|d| format!("{d}x")).collect();
    format!("tensor<{dims}{}>", dtype.mlir_name())
}

/// The constant text of a non-tensor argument without a default, or `None` to skip the op.
fn attr_text(name: &str, ty: &ir::schema::SchemaType) -> Option<String> {
    use ir::schema::SchemaType as S;
    Some(match ty.unwrap_optional() {
        S::Int | S::SymInt if name.contains("dim") => "-1 : i64".into(),
        S::Int | S::SymInt => "1 : i64".into(),
        S::Float | S::Scalar | S::Number => "0.5 : f64".into(),
        S::Bool => "false".into(),
        S::List { elem, .. } if matches!(elem.as_ref(), S::Int | S::SymInt) && name.contains("size") => "[2, 3]".into(),
        S::List { elem, .. } if matches!(elem.as_ref(), S::Int | S::SymInt) => "[-1]".into(),
        _ => return None,
    })
}

/// The dtype and shape of tensor argument `name` in a case of `dtype` and `shape`: masks and
/// conditions are bool, a filling `value` is 0-dimensional.
fn arg_case(name: &str, dtype: ir::DType, shape: &[usize]) -> (ir::DType, Vec<usize>) {
    match name {
        "mask" | "condition" => (ir::DType::Bool, shape.to_vec()),
        "value" => (dtype, Vec::new()),
        _ => (dtype, shape.to_vec()),
    }
}

/// The program applying `op` to tensors of `shapes`, or `None` when its arguments cannot be made.
fn program(schema: &ir::schema::FunctionSchema, dtype: ir::DType, shapes: &[Vec<usize>]) -> Option<String> {
    let mut params = Vec::new();
    let mut operands = Vec::new();
    let mut types = Vec::new();
    let mut attrs = Vec::new();
    let mut t = 0;
    for a in &schema.args {
        if matches!(a.ty, ir::schema::SchemaType::Tensor) {
            let (dtype, shape) = arg_case(&a.name, dtype, shapes.get(t)?);
            let ty = type_text(dtype, &shape);
            params.push(format!("%a{t}: {ty}"));
            operands.push(format!("%a{t}"));
            types.push(ty);
            t += 1;
        } else if a.default.is_none() {
            attrs.push(format!("{} = {}", a.name, attr_text(&a.name, &a.ty)?));
        }
    }
    if t != shapes.len() || schema.returns.len() != 1 || !matches!(schema.returns[0].ty, ir::schema::SchemaType::Tensor) {
        return None;
    }
    let attrs = if attrs.is_empty() { String::new() } else { format!(" {{{}}}", attrs.join(", ")) };
    Some(format!(
        "func.func @f({}) -> tensor<*x!prim.any> {{\n  %r = \"{}\"({}){attrs} : ({}) -> tensor<*x!prim.any>\n  func.return %r : tensor<*x!prim.any>\n}}\n",
        params.join(", "),
        schema.op_name(),
        operands.join(", "),
        types.join(", ")
    ))
}

fn run(ctx: &ir::Context, src: &str, pipeline: Option<&str>, inputs: &[IValue]) -> Result<Tensor, String> {
    match support::run_function(ctx, src, pipeline, inputs)?.into_iter().next() {
        Some(IValue::Tensor(t)) => Ok(t),
        other => Err(format!("not a tensor: {other:?}")),
    }
}

fn agree(a: &Tensor, b: &Tensor) -> Result<(), String> {
    if a.sizes() != b.sizes() || a.dtype() != b.dtype() {
        return Err(format!("kernel gives {:?} {}, decomposition {:?} {}", a.sizes(), a.dtype().mlir_name(), b.sizes(), b.dtype().mlir_name()));
    }
    let tol = match a.dtype() {
        ir::DType::BF16 => 2e-2,
        ir::DType::F16 => 2e-3,
        ir::DType::F32 => 2e-5,
        _ => 1e-9,
    };
    for (i, (x, y)) in a.to_vec_f64().iter().zip(b.to_vec_f64()).enumerate() {
        let same = x == &y || (x.is_nan() && y.is_nan()) || (x - y).abs() <= tol * (1.0 + x.abs().max(y.abs()));
        if !same {
            return Err(format!("element {i}: kernel {x}, decomposition {y}"));
        }
    }
    Ok(())
}

#[test]
fn kernels_and_decompositions_agree_on_random_inputs() {
    let ctx = driver::default_context();
    let table = transforms::lowering::DecompositionTable::core_aten();
    let reg = runtime::registry();
    let mut rng = Lcg(0x5eed);
    let mut compared = std::collections::BTreeSet::new();
    let mut cases = 0;
    let mut failures = Vec::new();
    for name in table.names() {
        if !reg.contains(name) {
            continue;
        }
        let Some(schema) = ctx.op_def(name).and_then(|d| d.schema.clone()) else { continue };
        let tensors = schema.args.iter().filter(|a| matches!(a.ty, ir::schema::SchemaType::Tensor)).count();
        let mut shape_cases: Vec<Vec<Vec<usize>>> = vec![vec![vec![2, 3]; tensors], vec![vec![]; tensors], vec![vec![0, 3]; tensors]];
        if tensors == 2 {
            shape_cases.push(vec![vec![2, 3], vec![3]]);
            shape_cases.push(vec![vec![2, 1], vec![1, 3]]);
            shape_cases.push(vec![vec![2, 3], vec![3, 2]]);
            shape_cases.push(vec![vec![3], vec![3]]);
        }
        for dtype in DTYPES {
            for shapes in &shape_cases {
                let Some(src) = program(&schema, dtype, shapes) else { continue };
                let names = schema.args.iter().filter(|a| matches!(a.ty, ir::schema::SchemaType::Tensor)).map(|a| a.name.as_str());
                let inputs: Vec<IValue> = names
                    .zip(shapes)
                    .map(|(n, s)| {
                        let (d, s) = arg_case(n, dtype, s);
                        IValue::Tensor(random_tensor(&mut rng, d, &s))
                    })
                    .collect();
                let short = name.trim_start_matches("aten.");
                let pipeline = format!("builtin.module(shape-propagation,decompose{{ops={short}}},shape-propagation)");
                let kernel = run(&ctx, &src, Some("builtin.module(shape-propagation)"), &inputs);
                let decomposed = run(&ctx, &src, Some(&pipeline), &inputs);
                let case = format!("{name} {} {shapes:?}", dtype.mlir_name());
                match (kernel, decomposed) {
                    (Ok(a), Ok(b)) => {
                        cases += 1;
                        compared.insert(name.to_string());
                        if let Err(e) = agree(&a, &b) {
                            failures.push(format!("{case}: {e}"));
                        }
                    }
                    (Err(_), Err(_)) => {}
                    (Ok(_), Err(e)) => failures.push(format!("{case}: the kernel runs, the decomposition fails: {e}")),
                    (Err(e), Ok(_)) => failures.push(format!("{case}: the decomposition runs, the kernel fails: {e}")),
                }
            }
        }
    }
    eprintln!("{cases} cases of {} ops compared: {compared:?}", compared.len());
    assert!(compared.len() >= 20, "too few ops compared: {compared:?}");
    assert!(failures.is_empty(), "{} disagreements:\n{}", failures.len(), failures.join("\n"));
}
