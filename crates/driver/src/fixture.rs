//! Running programs against recorded PyTorch outputs: weight conversion, pytree flattening,
//! tolerance comparison and fixture metadata. Used by `dialect-run --compare` and the fixture tests.

use dialect_prim::kinds::{Kind as PK, TypeExt as _};
use runtime::{CompileOptions, CompiledProgram, IValue, Scalar, Tensor, Weights, compile};
use std::collections::HashMap;
use std::path::Path;

/// Converts an imported program's lazily read weights into runtime tensors.
pub fn weights_from_import(w: &import::Weights) -> Result<Weights, String> {
    let mut out = Weights::new();
    for (name, wt) in w.iter() {
        let bytes = wt.contiguous_bytes().map_err(|e| format!("weight '{name}': {e}"))?;
        let sizes: Vec<usize> = wt.sizes.iter().map(|&s| s.max(0) as usize).collect();
        out.insert_bytes(name.to_string(), wt.dtype, &sizes, &bytes).map_err(|e| format!("weight '{name}': {e}"))?;
    }
    Ok(out)
}

/// Flattens tuples and lists of outputs into their leaves, in order (PyTorch's pytree flattening).
pub fn flatten(values: Vec<IValue>) -> Vec<IValue> {
    let mut out = Vec::with_capacity(values.len());
    for v in values {
        match v {
            IValue::Tuple(items) | IValue::List(items) => out.extend(flatten(items)),
            IValue::TensorList(ts) => out.extend(ts.into_iter().map(IValue::Tensor)),
            other => out.push(other),
        }
    }
    out
}

/// The result of comparing one output with its expected value.
#[derive(Clone, Debug)]
pub struct Comparison {
    pub ok: bool,
    pub max_abs: f64,
    pub max_rel: f64,
    /// A one-line description: dtype, shape, errors, verdict.
    pub text: String,
}

/// Compares an output with PyTorch's: same dtype and shape, and every element within
/// `atol + rtol * |expected|` (exact for integers and booleans; NaN equals NaN).
pub fn compare(got: &IValue, want: &Tensor, rtol: f64, atol: f64) -> Comparison {
    let fail = |text: String| Comparison { ok: false, max_abs: f64::INFINITY, max_rel: f64::INFINITY, text };
    let got = match got {
        IValue::Tensor(t) => t.clone(),
        IValue::Int(i) => match Tensor::scalar_tensor(Scalar::Int(*i), want.dtype()) {
            Ok(t) => t,
            Err(e) => return fail(e.to_string()),
        },
        IValue::Float(x) => match Tensor::scalar_tensor(Scalar::Float(*x), want.dtype()) {
            Ok(t) => t,
            Err(e) => return fail(e.to_string()),
        },
        IValue::Bool(b) => match Tensor::scalar_tensor(Scalar::Bool(*b), want.dtype()) {
            Ok(t) => t,
            Err(e) => return fail(e.to_string()),
        },
        other => return fail(format!("output is not a tensor: {other:?}")),
    };
    if got.sizes() != want.sizes() {
        return fail(format!("shape {:?}, expected {:?}", got.sizes(), want.sizes()));
    }
    if got.dtype() != want.dtype() {
        return fail(format!("dtype {}, expected {}", got.dtype(), want.dtype()));
    }
    if got.dtype().is_complex() {
        // Complex tensors compare part by part.
        let parts = |t: &Tensor| runtime::kernels::complex::view_as_real("compare", t);
        return match (parts(&got), parts(want)) {
            (Ok(g), Ok(w)) => compare(&IValue::Tensor(g), &w, rtol, atol),
            (Err(e), _) | (_, Err(e)) => fail(e.to_string()),
        };
    }
    let (a, b) = (got.to_vec_f64(), want.to_vec_f64());
    let exact = !want.dtype().is_floating();
    let (mut max_abs, mut max_rel, mut bad) = (0f64, 0f64, 0usize);
    for (x, y) in a.iter().zip(&b) {
        if (x.is_nan() && y.is_nan()) || x == y {
            continue;
        }
        let d = (x - y).abs();
        let d = if d.is_nan() { f64::INFINITY } else { d };
        max_abs = max_abs.max(d);
        if *y != 0.0 {
            max_rel = max_rel.max(d / y.abs());
        }
        let allowed = if exact { 0.0 } else { atol + rtol * y.abs() };
        if d > allowed {
            bad += 1;
        }
    }
    let ok = bad == 0;
    let verdict = if ok { "ok".to_string() } else { format!("{bad} element(s) outside tolerance") };
    let text = format!("{}{:?} max_abs_err={max_abs:.3e} max_rel_err={max_rel:.3e} {verdict}", got.dtype(), got.sizes());
    Comparison { ok, max_abs, max_rel, text }
}

/// What a fixture's `meta.json` says about running it.
#[derive(Clone, Debug, Default)]
pub struct Meta {
    pub rtol: Option<f64>,
    pub atol: Option<f64>,
    /// Calls on one runtime (stateful programs have 2).
    pub calls: Option<usize>,
    /// TorchScript fixtures: the non-tensor inputs of each call, by argument position.
    pub scalar_calls: Vec<HashMap<usize, IValue>>,
}

/// Reads the `meta.json` beside a fixture's io file (`io.safetensors` → `meta.json`,
/// `name.io.safetensors` → `name.meta.json`); an absent file gives the defaults.
pub fn read_meta(io: &Path) -> Result<Meta, String> {
    let name = io.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let meta_path = match name.strip_suffix(".io.safetensors") {
        Some(stem) => io.with_file_name(format!("{stem}.meta.json")),
        None => io.with_file_name("meta.json"),
    };
    if !meta_path.exists() {
        return Ok(Meta::default());
    }
    let text = std::fs::read_to_string(&meta_path).map_err(|e| format!("{}: {e}", meta_path.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", meta_path.display()))?;
    let mut m = Meta {
        rtol: v["tolerance"]["rtol"].as_f64(),
        atol: v["tolerance"]["atol"].as_f64(),
        calls: v["calls"].as_u64().map(|c| c as usize),
        scalar_calls: Vec::new(),
    };
    // TorchScript archive fixtures give each non-tensor argument as `inputs[K] = {"value": …}`.
    if let Some(inputs) = v["inputs"].as_array() {
        let mut map = HashMap::new();
        for (pos, input) in inputs.iter().enumerate() {
            let Some(val) = input.get("value") else { continue };
            map.insert(pos, json_scalar(val).ok_or_else(|| format!("{}: unsupported input value {val}", meta_path.display()))?);
        }
        if !map.is_empty() {
            m.scalar_calls.push(map);
        }
    }
    if let Some(calls) = v["calls"].as_array() {
        for c in calls {
            let mut map = HashMap::new();
            if let Some(obj) = c["scalar_inputs"].as_object() {
                for (k, val) in obj {
                    let Ok(pos) = k.parse::<usize>() else { continue };
                    let iv = json_scalar(val).ok_or_else(|| format!("{}: unsupported scalar input {val}", meta_path.display()))?;
                    map.insert(pos, iv);
                }
            }
            m.scalar_calls.push(map);
        }
    }
    Ok(m)
}

/// A JSON scalar as a program input: a bool, int, float, string or `null` (None).
fn json_scalar(val: &serde_json::Value) -> Option<IValue> {
    Some(if let Some(b) = val.as_bool() {
        IValue::Bool(b)
    } else if let Some(i) = val.as_i64() {
        IValue::Int(i)
    } else if let Some(f) = val.as_f64() {
        IValue::Float(f)
    } else if let Some(s) = val.as_str() {
        IValue::Str(s.into())
    } else if val.is_null() {
        IValue::None
    } else {
        return None;
    })
}

/// Gives each user input of `@forward` whose tensor type is fully unknown (TorchScript programs
/// declare only `Tensor` or `Tensor?`) the dtype and shape of the tensor passed for it (`in.N` or
/// `callK.in.N` of `io`), so that shape propagation, and the decompositions that need ranks,
/// see them; an optional input given None (in `scalars`) becomes None-typed. The program is then
/// specialised to those inputs, as a profiled TorchScript graph is.
pub fn specialize_inputs(m: &mut ir::Module, io: &[(String, Tensor)], scalars: Option<&HashMap<usize, IValue>>, call: usize) {
    let Some(func) = m.function("forward") else { return };
    let Some((mut inputs, results)) = ir::builtin::function_signature(m, func) else { return };
    let attrs = match m.attr(func, ir::builtin::ARG_ATTRS) {
        Some(ir::Attribute::Array(a)) => a.to_vec(),
        _ => Vec::new(),
    };
    let Some(entry) = m.regions(func).first().and_then(|&r| m.entry_block(r)) else { return };
    let args = m.block_args(entry).to_vec();
    let mut user = 0;
    let mut changed = false;
    for (i, &arg) in args.iter().enumerate() {
        let is_user = match attrs.get(i) {
            Some(ir::Attribute::Dict(d)) => d.iter().any(|(k, _)| &**k == "prim.input"),
            _ => true,
        };
        if !is_user {
            continue;
        }
        let pos = user;
        user += 1;
        // An optional given None is None.
        let declared = m.value_type(arg).clone();
        if matches!(declared.pk(), PK::Optional(_)) && matches!(scalars.and_then(|s| s.get(&pos)), Some(IValue::None)) {
            m.set_value_type(arg, ir::Type::none());
            if let Some(slot) = inputs.get_mut(i) {
                *slot = ir::Type::none();
            }
            changed = true;
            continue;
        }
        // A tensor of unknown type, or an optional one (`Tensor?`) that is given a tensor.
        let tensor = match declared.pk() {
            PK::Optional(inner) => inner.as_tensor().cloned(),
            _ => declared.as_tensor().cloned(),
        };
        if !tensor.is_some_and(|t| t.dtype.is_none() && t.shape.is_none()) {
            continue;
        }
        let Some((_, t)) = io.iter().find(|(k, _)| *k == format!("in.{pos}") || *k == format!("call{call}.in.{pos}")) else { continue };
        let dims: Vec<i64> = t.sizes().iter().map(|&d| d as i64).collect();
        let ty = ir::Type::tensor(t.dtype(), &dims);
        m.set_value_type(arg, ty.clone());
        if let Some(slot) = inputs.get_mut(i) {
            *slot = ty;
        }
        changed = true;
    }
    if changed {
        m.set_attr(func, ir::builtin::FUNCTION_TYPE, ir::Attribute::Type(ir::Type::function(inputs, results)));
    }
}

/// The key prefix of call `call`'s expected outputs in an io file: `out.` for the first call of
/// an exported program, `call2.out.` for its second; `callK.out.` for TorchScript call K.
pub fn expected_prefix(io: &HashMap<String, Tensor>, ts_call: usize, call: usize) -> Option<String> {
    let has = |p: &str| io.keys().any(|k| k.starts_with(p));
    if call == 0 && has(&format!("call{ts_call}.out.")) {
        return Some(format!("call{ts_call}.out."));
    }
    if call == 0 && has("out.") {
        return Some("out.".into());
    }
    let p = format!("call{}.out.", call + 1);
    has(&p).then_some(p)
}

/// The inputs of a fixture call: tensors `in.N` (or `callK.in.N`) and the scalar inputs of `meta`,
/// by position, for `n` user inputs.
pub fn fixture_inputs(io: &HashMap<String, Tensor>, meta: &Meta, ts_call: usize, n: usize) -> Result<Vec<IValue>, String> {
    let scalars = meta.scalar_calls.get(ts_call);
    (0..n)
        .map(|i| {
            if let Some(t) = io.get(&format!("in.{i}")).or_else(|| io.get(&format!("call{ts_call}.in.{i}"))) {
                return Ok(IValue::Tensor(t.clone()));
            }
            scalars.and_then(|s| s.get(&i)).cloned().ok_or_else(|| format!("input #{i} is neither in the io file nor in meta.json"))
        })
        .collect()
}

/// One fixture run: the per-output comparisons of each call.
#[derive(Clone, Debug)]
pub struct FixtureReport {
    /// `(key, comparison)` for every expected output, in order.
    pub outputs: Vec<(String, Comparison)>,
}

impl FixtureReport {
    pub fn ok(&self) -> bool {
        !self.outputs.is_empty() && self.outputs.iter().all(|(_, c)| c.ok)
    }
}

/// Compiles a module with imported weights using default options.
pub fn compile_program(ctx: &ir::Context, program: &import::Program) -> Result<CompiledProgram, String> {
    compile_program_with(ctx, program, CompileOptions::default())
}

/// Compiles a module with imported weights using `options` (a fusion compiler, say).
pub fn compile_program_with(ctx: &ir::Context, program: &import::Program, options: CompileOptions) -> Result<CompiledProgram, String> {
    let w = weights_from_import(&program.weights)?;
    compile(&program.module, ctx, &w, options).map_err(|e| e.to_string())
}

/// Runs a compiled fixture program on its recorded inputs (`ts_call` selects a TorchScript call)
/// and compares every call's outputs with PyTorch's.
pub fn run_fixture(compiled: &CompiledProgram, io_path: &Path, ts_call: usize) -> Result<FixtureReport, String> {
    let meta = read_meta(io_path)?;
    let io: HashMap<String, Tensor> = runtime::io::load_safetensors(io_path)
        .map_err(|e| format!("{}: {e}", io_path.display()))?
        .into_iter()
        .collect();
    let n_inputs = compiled.input_names().len();
    let inputs = fixture_inputs(&io, &meta, ts_call, n_inputs)?;
    let (rtol, atol) = (meta.rtol.unwrap_or(1e-4), meta.atol.unwrap_or(1e-5));
    let calls = meta.calls.unwrap_or(1).max(1);
    let mut rt = compiled.runtime();
    let mut outputs = Vec::new();
    for call in 0..calls {
        let got = flatten(rt.run(&inputs).map_err(|e| e.to_string())?);
        let Some(prefix) = expected_prefix(&io, ts_call, call) else { continue };
        let expected = (0..).map_while(|i| io.get(&format!("{prefix}{i}")).map(|t| (i, t))).count();
        if expected != got.len() {
            return Err(format!("{prefix}*: the program gave {} output(s), PyTorch {expected}", got.len()));
        }
        for (i, v) in got.iter().enumerate() {
            let key = format!("{prefix}{i}");
            if let Some(want) = io.get(&key) {
                outputs.push((key, compare(v, want, rtol, atol)));
            }
        }
    }
    Ok(FixtureReport { outputs })
}
