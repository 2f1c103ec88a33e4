//! Random well-typed programs over core ATen ops for differential testing: each program is one
//! IR function `@f` (elementwise ops with broadcasting and type promotion, comparisons and
//! `where`, reductions, views, matrix products, `cat`, softmax, casts, `prim.If` and
//! `prim.Loop`), the same program as a Python function calling `torch.ops.aten`, and random
//! inputs. The generator tracks each value's type as PyTorch computes it, a bound on its
//! magnitude (so casts to integers and integer products stay defined) and whether it is computed
//! exactly (so branch conditions never hinge on rounding).

use ir::DType;

/// A seeded splitmix64 generator: deterministic on every platform.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }

    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// A tensor type: dtype and static shape.
#[derive(Clone, Debug, PartialEq)]
pub struct Ty {
    pub dtype: DType,
    pub shape: Vec<usize>,
}

impl Ty {
    fn new(dtype: DType, shape: Vec<usize>) -> Ty {
        Ty { dtype, shape }
    }

    /// The IR spelling, `tensor<2x0xf32>`.
    pub fn text(&self) -> String {
        let dims: String = self.shape.iter().map(|d| format!("{d}x")).collect();
        format!("tensor<{dims}{}>", self.dtype.mlir_name())
    }

    fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    fn rank(&self) -> usize {
        self.shape.len()
    }
}

/// A value of the program being built.
#[derive(Clone, Debug)]
struct Val {
    name: String,
    ty: Ty,
    /// A bound on every element's magnitude; `None` when it may be huge, infinite or NaN.
    bound: Option<f64>,
    /// Computed without rounding (integers, booleans, inputs and views of them).
    exact: bool,
    /// Known to be laid out contiguously in PyTorch eager, so `view` applies.
    contiguous: bool,
}

/// An attribute value, printed in IR and in Python.
#[derive(Clone, Debug)]
enum Attr {
    Int(i64),
    Ints(Vec<i64>),
    Bool(bool),
    Float(f64),
    DType(DType),
    None,
}

impl Attr {
    fn ir(&self) -> Option<String> {
        Some(match self {
            Attr::Int(i) => i.to_string(),
            Attr::Ints(v) => format!("[{}]", v.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")),
            Attr::Bool(b) => b.to_string(),
            Attr::Float(f) => format!("{f:?}"),
            Attr::DType(d) => format!("#prim.dtype<{}>", d.mlir_name()),
            Attr::None => return None,
        })
    }

    fn py(&self) -> String {
        match self {
            Attr::Int(i) => i.to_string(),
            Attr::Ints(v) => format!("[{}]", v.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")),
            Attr::Bool(b) => if *b { "True".into() } else { "False".into() },
            Attr::Float(f) => format!("{f:?}"),
            Attr::DType(d) => format!("torch.{}", d.torch_name()),
            Attr::None => "None".into(),
        }
    }
}

/// One generated program.
pub struct Program {
    /// The IR text: a function `@f`.
    pub ir: String,
    /// The same program as a Python function `name(a0, a1, …)` returning a tuple of tensors.
    pub python: String,
    /// The inputs' types.
    pub inputs: Vec<Ty>,
    /// The results' types, as PyTorch computes them.
    pub outputs: Vec<Ty>,
    /// The input values, row-major, one `Vec` per input (booleans as 0/1).
    pub input_values: Vec<Vec<f64>>,
}

const MAX_INPUTS: usize = 6;
const MAX_NUMEL: usize = 512;

struct Gen {
    rng: Rng,
    body: String,
    py: String,
    depth: usize,
    next: usize,
    pool: Vec<Val>,
    inputs: Vec<Val>,
    /// Float inputs hold NaN, infinities and -0.0 now and then (their bound is unknown).
    specials: bool,
}

/// Generates program number `seed`; its Python function is named `py_name`.
pub fn generate(seed: u64, py_name: &str) -> Program {
    let mut rng = Rng::new(seed);
    let specials = rng.chance(0.1);
    let mut g = Gen { rng, body: String::new(), py: String::new(), depth: 1, next: 0, pool: Vec::new(), inputs: Vec::new(), specials };
    let first = g.random_ty(false);
    g.new_input(first);
    let ops = 2 + g.rng.below(10);
    for _ in 0..ops {
        g.step(true);
    }
    let last = g.pool.last().cloned().expect("a value");
    let mut outs = vec![last];
    for _ in 0..g.rng.below(3) {
        let v = g.pool[g.rng.below(g.pool.len())].clone();
        if !outs.iter().any(|o| o.name == v.name) {
            outs.push(v);
        }
    }
    let in_types: Vec<String> = g.inputs.iter().map(|v| format!("%{}: {}", v.name, v.ty.text())).collect();
    let out_types: Vec<String> = outs.iter().map(|v| v.ty.text()).collect();
    let ir = format!(
        "func.func @f({}) -> ({}) {{\n{}  func.return {} : {}\n}}\n",
        in_types.join(", "),
        out_types.join(", "),
        g.body,
        outs.iter().map(|v| format!("%{}", v.name)).collect::<Vec<_>>().join(", "),
        out_types.join(", ")
    );
    let python = format!(
        "def {py_name}({}):\n{}    return ({},)\n",
        g.inputs.iter().map(|v| v.name.clone()).collect::<Vec<_>>().join(", "),
        g.py,
        outs.iter().map(|v| v.name.clone()).collect::<Vec<_>>().join(", ")
    );
    let mut rng = Rng::new(seed ^ 0x5EED_0F_1A9u64);
    let input_values = g.inputs.iter().map(|v| input_values(&mut rng, &v.ty, g.specials)).collect();
    Program { ir, python, inputs: g.inputs.iter().map(|v| v.ty.clone()).collect(), outputs: outs.iter().map(|v| v.ty.clone()).collect(), input_values }
}

/// Input values: floats are multiples of 1/8 in [-2, 2] (sums and products of a few of them are
/// exact, so reassociation does not change them), with NaN, infinities and -0.0 now and then
/// when `specials`; integers in [-4, 4]; booleans fair.
fn input_values(rng: &mut Rng, ty: &Ty, specials: bool) -> Vec<f64> {
    (0..ty.numel())
        .map(|_| match ty.dtype {
            DType::Bool => rng.below(2) as f64,
            d if d.is_floating() => {
                if specials && rng.chance(0.05) {
                    rng.pick(&[f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0])
                } else {
                    (rng.below(33) as f64 - 16.0) / 8.0
                }
            }
            _ => rng.below(9) as f64 - 4.0,
        })
        .collect()
}

/// The magnitude bound of inputs of `dtype`.
fn input_bound(dtype: DType) -> f64 {
    if dtype.is_floating() { 2.0 } else { 4.0 }
}

fn is_half(d: DType) -> bool {
    matches!(d, DType::F16 | DType::BF16)
}

/// Broadcasts two shapes (PyTorch's rule), or `None` when they do not broadcast.
fn broadcast(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let x = if i + a.len() >= n { a[i + a.len() - n] } else { 1 };
        let y = if i + b.len() >= n { b[i + b.len() - n] } else { 1 };
        out[i] = match (x, y) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return None,
        };
    }
    Some(out)
}

/// PyTorch's result type of tensor operands: dimensioned tensors take precedence over 0-dim
/// ones unless those are of a higher category.
fn result_type(tys: &[&Ty]) -> DType {
    let fold = |it: &mut dyn Iterator<Item = DType>| it.reduce(DType::promote);
    let dims = fold(&mut tys.iter().filter(|t| t.rank() > 0).map(|t| t.dtype));
    let zeros = fold(&mut tys.iter().filter(|t| t.rank() == 0).map(|t| t.dtype));
    match (dims, zeros) {
        (Some(d), Some(z)) if z.category() > d.category() => z,
        (Some(d), _) => d,
        (None, Some(z)) => z,
        (None, None) => DType::F32,
    }
}

/// The result type of a tensor and a Python scalar (a float scalar makes an integral or boolean
/// tensor `f32`; an int scalar makes a boolean one `i64`).
fn scalar_result_type(t: DType, scalar_is_float: bool) -> DType {
    match t.category() {
        ir::DTypeCategory::Floating => t,
        _ if scalar_is_float => DType::F32,
        ir::DTypeCategory::Bool => DType::I64,
        _ => t,
    }
}

fn mul_bound(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    a.zip(b).map(|(x, y)| x * y).filter(|b| *b < 1e12)
}

fn add_bound(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    a.zip(b).map(|(x, y)| x + y).filter(|b| *b < 1e12)
}

impl Gen {
    fn fresh(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("{prefix}{}", self.next)
    }

    fn random_shape(&mut self) -> Vec<usize> {
        let rank = self.rng.pick(&[0, 1, 1, 2, 2, 2, 3, 3, 4]);
        let mut shape: Vec<usize> = (0..rank).map(|_| self.rng.pick(&[1, 1, 2, 3, 3, 4, 5, 7, 8, 9, 17])).collect();
        if rank > 0 && self.rng.chance(0.08) {
            let i = self.rng.below(rank);
            shape[i] = 0;
        }
        while shape.iter().product::<usize>() > MAX_NUMEL {
            let i = shape.iter().enumerate().max_by_key(|(_, d)| **d).map(|(i, _)| i).unwrap_or(0);
            shape[i] = (shape[i] / 2).max(1);
        }
        shape
    }

    fn random_dtype(&mut self, halves: bool) -> DType {
        let mut choices = vec![DType::F32, DType::F32, DType::F32, DType::F32, DType::F64, DType::I64, DType::I64, DType::Bool];
        if halves {
            choices.extend([DType::F16, DType::BF16]);
        }
        self.rng.pick(&choices)
    }

    fn random_ty(&mut self, halves: bool) -> Ty {
        let dtype = self.random_dtype(halves);
        Ty::new(dtype, self.random_shape())
    }

    fn new_input(&mut self, ty: Ty) -> Val {
        let name = format!("a{}", self.inputs.len());
        let bound = (!(self.specials && ty.dtype.is_floating())).then(|| input_bound(ty.dtype));
        let v = Val { name, bound, ty, exact: true, contiguous: true };
        self.inputs.push(v.clone());
        self.pool.push(v.clone());
        v
    }

    /// A value of type `ty` from the pool, or a new input of that type while inputs remain.
    fn value_of(&mut self, ty: &Ty) -> Option<Val> {
        let found: Vec<Val> = self.pool.iter().filter(|v| v.ty == *ty).cloned().collect();
        if !found.is_empty() && (self.inputs.len() >= MAX_INPUTS || self.rng.chance(0.5)) {
            return Some(found[self.rng.below(found.len())].clone());
        }
        (self.inputs.len() < MAX_INPUTS).then(|| self.new_input(ty.clone()))
    }

    /// A value from the pool, recent ones preferred.
    fn operand(&mut self) -> Val {
        let n = self.pool.len();
        let i = if self.rng.chance(0.6) { n - 1 - self.rng.below(n.min(3)) } else { self.rng.below(n) };
        self.pool[i].clone()
    }

    /// A shape that broadcasts with `shape` to `shape` itself (dims dropped from the front or set
    /// to 1), or, now and then, one that broadcasts both ways.
    fn broadcast_partner(&mut self, shape: &[usize]) -> Vec<usize> {
        let drop = self.rng.below(shape.len() + 1).min(if self.rng.chance(0.5) { 0 } else { shape.len() });
        let mut s: Vec<usize> = shape[drop..].iter().map(|&d| if self.rng.chance(0.3) { 1 } else { d }).collect();
        if self.rng.chance(0.15) && shape.iter().product::<usize>() * 3 <= MAX_NUMEL {
            // A new leading dim makes the result larger than either operand.
            s.insert(0, self.rng.pick(&[2, 3]));
        }
        s
    }

    fn line(&mut self, ir: &str, py: &str) {
        self.body += &"  ".repeat(self.depth);
        self.body += ir;
        self.body.push('\n');
        self.py += &"    ".repeat(self.depth);
        self.py += py;
        self.py.push('\n');
    }

    /// Emits `aten.<op>` applied to `operands` with `attrs`; its result joins the pool.
    fn emit(&mut self, op: &str, operands: &[&Val], attrs: &[(&str, Attr)], ty: Ty, bound: Option<f64>, exact: bool, contiguous: bool) -> Val {
        let name = self.fresh("v");
        let ir_attrs: Vec<String> = attrs.iter().filter_map(|(k, a)| a.ir().map(|t| format!("{k} = {t}"))).collect();
        let ir_attrs = if ir_attrs.is_empty() { String::new() } else { format!(" {{{}}}", ir_attrs.join(", ")) };
        let ops: Vec<String> = operands.iter().map(|v| format!("%{}", v.name)).collect();
        let tys: Vec<String> = operands.iter().map(|v| v.ty.text()).collect();
        let ir = format!("%{name} = aten.{op} {}{ir_attrs} : ({}) -> {}", ops.join(", "), tys.join(", "), ty.text());
        let (base, overload) = op.split_once('.').unwrap_or((op, "default"));
        let mut args: Vec<String> = operands.iter().map(|v| v.name.clone()).collect();
        args.extend(attrs.iter().map(|(k, a)| format!("{k}={}", a.py())));
        let py = format!("{name} = torch.ops.aten.{base}.{overload}({})", args.join(", "));
        self.line(&ir, &py);
        let bound = if ty.dtype == DType::Bool { Some(1.0) } else { bound };
        let v = Val { name, ty, bound, exact, contiguous };
        self.pool.push(v.clone());
        v
    }

    /// Adds one op (or one `prim.If`/`prim.Loop` when `control`) to the program.
    fn step(&mut self, control: bool) {
        for _ in 0..20 {
            let k = self.rng.below(if control { 100 } else { 85 });
            let done = match k {
                0..=13 => self.unary(),
                14..=29 => self.binary(),
                30..=35 => self.scalar_op(),
                36..=41 => self.compare(),
                42..=45 => self.where_op(),
                46..=52 => self.reduce(),
                53..=66 => self.view_op(),
                67..=71 => self.matmul(),
                72..=74 => self.cat(),
                75..=77 => self.softmax(),
                78..=84 => self.cast(),
                85..=92 => self.if_op(),
                _ => self.loop_op(),
            };
            if done {
                return;
            }
        }
    }

    fn unary(&mut self) -> bool {
        let x = self.operand();
        let d = x.ty.dtype;
        // (op, accepts integers, accepts booleans, keeps the dtype of integers)
        let table: &[(&str, bool, bool, bool)] = &[
            ("neg", true, false, true),
            ("abs", true, false, true),
            ("relu", true, false, true),
            ("exp", true, true, false),
            ("sigmoid", true, true, false),
            ("tanh", true, true, false),
            ("sin", true, true, false),
            ("sqrt", true, true, false),
            ("log", true, true, false),
            ("reciprocal", true, true, false),
            ("floor", true, false, true),
            ("ceil", true, false, true),
            ("round", true, false, true),
            ("gelu", false, false, true),
            ("logical_not", true, true, false),
        ];
        let (op, ints, bools, keeps) = self.rng.pick(table);
        if (d.is_integral() && !ints) || (d == DType::Bool && !bools) {
            return false;
        }
        // A step function of a rounded float turns an ulp into a whole unit (the JIT's
        // polynomials and fused reductions round differently from the interpreter's kernels).
        // Likewise a function at the edge of its domain or at a pole (`sqrt` of a rounded 0
        // is NaN or 0, `log` of it -inf or finite).
        if matches!(op, "floor" | "ceil" | "round" | "logical_not" | "sqrt" | "log" | "reciprocal") && !x.exact {
            return false;
        }
        // PyTorch's vectorized CPU gelu gives NaN at +inf where the function's limit (and this
        // project) gives +inf: only finite operands are compared.
        if op == "gelu" && x.bound.is_none() {
            return false;
        }
        let dtype = if op == "logical_not" {
            DType::Bool
        } else if d.is_floating() || keeps {
            d
        } else {
            DType::F32
        };
        let b = x.bound;
        let bound = match op {
            "neg" | "abs" | "relu" | "floor" | "ceil" | "round" | "gelu" => b,
            "exp" => b.filter(|b| *b < 20.0).map(f64::exp),
            "sigmoid" | "tanh" | "sin" => b.map(|_| 1.0),
            _ => None,
        };
        let exact = x.exact && (dtype.is_integral() || dtype == DType::Bool || matches!(op, "neg" | "abs" | "relu"));
        let ty = Ty::new(dtype, x.ty.shape.clone());
        self.emit(op, &[&x], &[], ty, bound, exact, true);
        true
    }

    fn binary(&mut self) -> bool {
        let x = self.operand();
        let shape = self.broadcast_partner(&x.ty.shape);
        let dtype = if self.rng.chance(0.7) { x.ty.dtype } else { self.random_dtype(is_half(x.ty.dtype)) };
        let Some(y) = self.value_of(&Ty::new(dtype, shape)) else { return false };
        let (x, y) = if self.rng.chance(0.3) { (y, x) } else { (x, y) };
        let Some(out_shape) = broadcast(&x.ty.shape, &y.ty.shape) else { return false };
        if out_shape.iter().product::<usize>() > MAX_NUMEL * 2 {
            return false;
        }
        let rt = result_type(&[&x.ty, &y.ty]);
        let op = self.rng.pick(&["add.Tensor", "sub.Tensor", "mul.Tensor", "div.Tensor", "maximum", "minimum", "pow.Tensor_Tensor"]);
        let mut attrs = Vec::new();
        if op == "add.Tensor" && self.rng.chance(0.2) && rt != DType::Bool {
            attrs.push(("alpha", Attr::Int(2)));
        }
        match op {
            // A divisor or a power's operands near a pole or the domain's edge turn an ulp
            // into a different result (see `unary`).
            "div.Tensor" if !y.exact => return false,
            "pow.Tensor_Tensor" if !(x.exact && y.exact) => return false,
            // PyTorch refuses `-` with any boolean operand.
            "sub.Tensor" if x.ty.dtype == DType::Bool || y.ty.dtype == DType::Bool => return false,
            "pow.Tensor_Tensor" if !rt.is_floating() => return false,
            _ => {}
        }
        let dtype = if op == "div.Tensor" && !rt.is_floating() { DType::F32 } else { rt };
        let bound = match op {
            "add.Tensor" | "sub.Tensor" => add_bound(x.bound, y.bound.map(|b| b * 2.0)),
            "mul.Tensor" => mul_bound(x.bound, y.bound),
            "maximum" | "minimum" => x.bound.zip(y.bound).map(|(a, b)| a.max(b)),
            _ => None,
        };
        if !dtype.is_floating() && bound.is_none() {
            return false;
        }
        let exact = x.exact && y.exact && !dtype.is_floating();
        self.emit(op, &[&x, &y], &attrs, Ty::new(dtype, out_shape), bound, exact, true);
        true
    }

    fn scalar_op(&mut self) -> bool {
        let x = self.operand();
        let is_float = self.rng.chance(0.5);
        let s = if is_float { Attr::Float(self.rng.pick(&[0.5, -1.5, 2.0, 0.125, 3.0])) } else { Attr::Int(self.rng.pick(&[-2, -1, 0, 1, 2, 3])) };
        let sv = match s {
            Attr::Float(f) => f.abs(),
            Attr::Int(i) => i.abs() as f64,
            _ => 0.0,
        };
        let op = self.rng.pick(&["add.Scalar", "sub.Scalar", "mul.Scalar", "div.Scalar"]);
        let rt = scalar_result_type(x.ty.dtype, is_float);
        if op == "sub.Scalar" && x.ty.dtype == DType::Bool {
            return false;
        }
        let dtype = if op == "div.Scalar" && !rt.is_floating() { DType::F32 } else { rt };
        let bound = match op {
            "add.Scalar" | "sub.Scalar" => add_bound(x.bound, Some(sv)),
            "mul.Scalar" => mul_bound(x.bound, Some(sv)),
            _ => None,
        };
        if !dtype.is_floating() && bound.is_none() {
            return false;
        }
        let exact = x.exact && !dtype.is_floating();
        self.emit(op, &[&x], &[("other", s)], Ty::new(dtype, x.ty.shape.clone()), bound, exact, true);
        true
    }

    /// Comparisons are step functions too: their operands must be exact (see `unary`).
    fn compare(&mut self) -> bool {
        let x = self.operand();
        if !x.exact {
            return false;
        }
        let cmp = self.rng.pick(&["eq", "ne", "lt", "le", "gt", "ge"]);
        if self.rng.chance(0.5) {
            let s = if x.ty.dtype.is_floating() || self.rng.chance(0.3) { Attr::Float(self.rng.pick(&[0.0, 0.5, -1.0])) } else { Attr::Int(self.rng.pick(&[0, 1, -1])) };
            let ty = Ty::new(DType::Bool, x.ty.shape.clone());
            self.emit(&format!("{cmp}.Scalar"), &[&x], &[("other", s)], ty, Some(1.0), x.exact, true);
            return true;
        }
        let shape = self.broadcast_partner(&x.ty.shape);
        let dtype = if self.rng.chance(0.7) { x.ty.dtype } else { self.random_dtype(is_half(x.ty.dtype)) };
        let Some(y) = self.value_of(&Ty::new(dtype, shape)) else { return false };
        let Some(out) = broadcast(&x.ty.shape, &y.ty.shape) else { return false };
        if !y.exact {
            return false;
        }
        let exact = true;
        self.emit(&format!("{cmp}.Tensor"), &[&x, &y], &[], Ty::new(DType::Bool, out), Some(1.0), exact, true);
        true
    }

    fn where_op(&mut self) -> bool {
        let x = self.operand();
        let cond_shape = self.broadcast_partner(&x.ty.shape);
        let Some(c) = self.value_of(&Ty::new(DType::Bool, cond_shape)).filter(|c| c.exact) else { return false };
        let other_shape = self.broadcast_partner(&x.ty.shape);
        let dtype = if self.rng.chance(0.8) { x.ty.dtype } else { self.random_dtype(is_half(x.ty.dtype)) };
        let Some(y) = self.value_of(&Ty::new(dtype, other_shape)) else { return false };
        let Some(out) = broadcast(&c.ty.shape, &x.ty.shape).and_then(|s| broadcast(&s, &y.ty.shape)) else { return false };
        let dtype = result_type(&[&x.ty, &y.ty]);
        let bound = x.bound.zip(y.bound).map(|(a, b)| a.max(b));
        let exact = c.exact && x.exact && y.exact;
        self.emit("where.self", &[&c, &x, &y], &[], Ty::new(dtype, out), bound, exact, true);
        true
    }

    /// Random distinct dims of a rank-`rank` tensor, some written negative.
    fn dims(&mut self, rank: usize, min: usize) -> Vec<usize> {
        let mut dims: Vec<usize> = (0..rank).filter(|_| self.rng.chance(0.5)).collect();
        while dims.len() < min.min(rank) {
            let d = self.rng.below(rank);
            if !dims.contains(&d) {
                dims.push(d);
            }
        }
        dims
    }

    fn dim_attr(&mut self, d: usize, rank: usize) -> i64 {
        if self.rng.chance(0.3) { d as i64 - rank.max(1) as i64 } else { d as i64 }
    }

    fn reduce(&mut self) -> bool {
        let x = self.operand();
        let d = x.ty.dtype;
        if is_half(d) {
            return false;
        }
        let rank = x.ty.rank();
        let op = self.rng.pick(&["sum.dim_IntList", "sum.dim_IntList", "mean.dim", "amax", "sum"]);
        if op == "sum" {
            let dtype = if d.is_floating() { d } else { DType::I64 };
            let bound = x.bound.map(|b| b * x.ty.numel().max(1) as f64).filter(|b| *b < 1e12);
            if !dtype.is_floating() && bound.is_none() {
                return false;
            }
            self.emit(op, &[&x], &[], Ty::new(dtype, Vec::new()), bound, x.exact && !dtype.is_floating(), true);
            return true;
        }
        // `dim=[]` reduces every dim.
        let min = if self.rng.chance(0.15) { 0 } else { 1 };
        let dims = self.dims(rank, min);
        let all = dims.is_empty();
        let reduced = |i: usize| all || dims.contains(&i);
        let keepdim = self.rng.chance(0.4);
        let shape: Vec<usize> = (0..rank).filter_map(|i| if reduced(i) { keepdim.then_some(1) } else { Some(x.ty.shape[i]) }).collect();
        let count: usize = (0..rank).filter(|&i| reduced(i)).map(|i| x.ty.shape[i]).product();
        let (dtype, bound) = match op {
            "mean.dim" if !d.is_floating() => return false,
            "mean.dim" => (d, if count == 0 { None } else { x.bound }),
            // PyTorch refuses amax over an empty dim and over booleans.
            "amax" if count == 0 || (all && x.ty.numel() == 0) || d == DType::Bool => return false,
            "amax" => (d, x.bound),
            _ => (if d.is_floating() { d } else { DType::I64 }, x.bound.map(|b| b * count.max(1) as f64).filter(|b| *b < 1e12)),
        };
        if !dtype.is_floating() && bound.is_none() {
            return false;
        }
        let dim_list: Vec<i64> = dims.iter().map(|&i| self.dim_attr(i, rank)).collect();
        let exact = x.exact && !dtype.is_floating();
        self.emit(op, &[&x], &[("dim", Attr::Ints(dim_list)), ("keepdim", Attr::Bool(keepdim))], Ty::new(dtype, shape), bound, exact, true);
        true
    }

    fn view_op(&mut self) -> bool {
        let x = self.operand();
        let shape = x.ty.shape.clone();
        let rank = shape.len();
        let with = |g: &mut Gen, op: &str, attrs: &[(&str, Attr)], shape: Vec<usize>, contiguous: bool| {
            let ty = Ty::new(x.ty.dtype, shape);
            g.emit(op, &[&x], attrs, ty, x.bound, x.exact, contiguous);
        };
        match self.rng.below(8) {
            0 => {
                let new = self.refactor(&shape);
                let mut size: Vec<i64> = new.iter().map(|&d| d as i64).collect();
                if !size.is_empty() && x.ty.numel() > 0 && self.rng.chance(0.3) {
                    let i = self.rng.below(size.len());
                    size[i] = -1;
                }
                let (op, arg) = if x.contiguous && self.rng.chance(0.6) { ("view", "size") } else { ("reshape", "shape") };
                with(self, op, &[(arg, Attr::Ints(size))], new, x.contiguous);
            }
            1 if rank >= 2 => {
                let mut perm: Vec<usize> = (0..rank).collect();
                for i in (1..rank).rev() {
                    let j = self.rng.below(i + 1);
                    perm.swap(i, j);
                }
                let new = perm.iter().map(|&p| shape[p]).collect();
                let dims: Vec<i64> = perm.iter().map(|&p| self.dim_attr(p, rank)).collect();
                with(self, "permute", &[("dims", Attr::Ints(dims))], new, false);
            }
            2 if rank >= 2 => {
                let (a, b) = (self.rng.below(rank), self.rng.below(rank));
                let mut new = shape.clone();
                new.swap(a, b);
                let (da, db) = (self.dim_attr(a, rank), self.dim_attr(b, rank));
                with(self, "transpose.int", &[("dim0", Attr::Int(da)), ("dim1", Attr::Int(db))], new, a == b && x.contiguous);
            }
            3 if rank >= 1 => {
                let d = self.rng.below(rank);
                let n = shape[d] as i64;
                let start = if self.rng.chance(0.2) { None } else { Some(self.rng.below(n as usize + 2) as i64 - if self.rng.chance(0.3) { n + 1 } else { 0 }) };
                let end = if self.rng.chance(0.2) { None } else { Some(self.rng.below(n as usize + 3) as i64 - if self.rng.chance(0.3) { n } else { 0 }) };
                let step = self.rng.pick(&[1, 1, 2, 3]);
                let clamp = |v: i64| (if v < 0 { v + n } else { v }).clamp(0, n);
                let s = start.map_or(0, clamp);
                let e = end.map_or(n, clamp);
                let len = if e > s { (e - s + step - 1) / step } else { 0 };
                let mut new = shape.clone();
                new[d] = len as usize;
                let dim = self.dim_attr(d, rank);
                let attr = |v: Option<i64>| v.map_or(Attr::None, Attr::Int);
                let attrs = [("dim", Attr::Int(dim)), ("start", attr(start)), ("end", attr(end)), ("step", Attr::Int(step))];
                with(self, "slice.Tensor", &attrs, new, false);
            }
            4 if rank < 5 => {
                let d = self.rng.below(rank + 1);
                let mut new = shape.clone();
                new.insert(d, 1);
                let dim = self.dim_attr(d, rank + 1);
                with(self, "unsqueeze", &[("dim", Attr::Int(dim))], new, x.contiguous);
            }
            5 if rank >= 1 => {
                let d = self.rng.below(rank);
                let mut new = shape.clone();
                if new[d] == 1 {
                    new.remove(d);
                }
                let dim = self.dim_attr(d, rank);
                with(self, "squeeze.dim", &[("dim", Attr::Int(dim))], new, x.contiguous);
            }
            6 => {
                let lead = if rank < 4 && self.rng.chance(0.3) { vec![self.rng.pick(&[1, 2, 3])] } else { Vec::new() };
                let mut new = lead.clone();
                let mut size: Vec<i64> = lead.iter().map(|&d| d as i64).collect();
                for &d in &shape {
                    let n = if d == 1 && self.rng.chance(0.6) { self.rng.pick(&[0, 2, 3, 4]) } else { d };
                    new.push(n);
                    size.push(if n == d && self.rng.chance(0.4) { -1 } else { n as i64 });
                }
                if new.iter().product::<usize>() > MAX_NUMEL * 2 {
                    return false;
                }
                with(self, "expand", &[("size", Attr::Ints(size))], new, false);
            }
            _ => return false,
        }
        true
    }

    /// A random shape with the same number of elements as `shape`.
    fn refactor(&mut self, shape: &[usize]) -> Vec<usize> {
        let n: usize = shape.iter().product();
        if n == 0 {
            let mut s = vec![0];
            for _ in 0..self.rng.below(3) {
                s.insert(self.rng.below(s.len() + 1), self.rng.pick(&[1, 2, 3]));
            }
            return s;
        }
        let mut factors = Vec::new();
        let mut m = n;
        let mut p = 2;
        while m > 1 {
            while m % p == 0 {
                factors.push(p);
                m /= p;
            }
            p += 1;
        }
        let rank = 1 + self.rng.below(4);
        let mut s = vec![1; rank];
        for f in factors {
            let i = self.rng.below(rank);
            s[i] *= f;
        }
        if self.rng.chance(0.1) {
            s.insert(0, 1);
        }
        s
    }

    fn matmul(&mut self) -> bool {
        let x = self.operand();
        if !matches!(x.ty.dtype, DType::F32 | DType::F64) || x.ty.rank() == 0 {
            return false;
        }
        let s = x.ty.shape.clone();
        let k = s[s.len() - 1];
        let n = self.rng.pick(&[1, 2, 3, 5, 8, 16]);
        let (op, rhs, out): (&str, Vec<usize>, Vec<usize>) = match (s.len(), self.rng.below(3)) {
            (2, 0) => ("mm", vec![k, n], vec![s[0], n]),
            (3, 0) => ("bmm", vec![s[0], k, n], vec![s[0], s[1], n]),
            (1, _) if self.rng.chance(0.5) => ("matmul", vec![k], vec![]),
            (r, _) => {
                let batch: Vec<usize> = s[..r.saturating_sub(2)].to_vec();
                let rb = self.broadcast_partner(&batch);
                let mut rhs = rb.clone();
                rhs.extend([k, n]);
                let Some(mut out) = broadcast(&batch, &rb) else { return false };
                if r >= 2 {
                    out.push(s[r - 2]);
                }
                out.push(n);
                ("matmul", rhs, out)
            }
        };
        if out.iter().product::<usize>() > MAX_NUMEL * 2 {
            return false;
        }
        let Some(y) = self.value_of(&Ty::new(x.ty.dtype, rhs)) else { return false };
        let bound = mul_bound(x.bound, y.bound).map(|b| b * k.max(1) as f64);
        self.emit(op, &[&x, &y], &[], Ty::new(x.ty.dtype, out), bound, false, true);
        true
    }

    fn cat(&mut self) -> bool {
        let x = self.operand();
        let rank = x.ty.rank();
        if rank == 0 {
            return false;
        }
        let d = self.rng.below(rank);
        let mut parts = vec![x.clone()];
        for _ in 0..1 + self.rng.below(2) {
            let mut shape = x.ty.shape.clone();
            shape[d] = self.rng.pick(&[0, 1, 2, 3]);
            let Some(v) = self.value_of(&Ty::new(x.ty.dtype, shape)) else { return false };
            parts.push(v);
        }
        let mut out = x.ty.shape.clone();
        out[d] = parts.iter().map(|p| p.ty.shape[d]).sum();
        let list = self.fresh("l");
        let names: Vec<String> = parts.iter().map(|p| format!("%{}", p.name)).collect();
        let tys: Vec<String> = parts.iter().map(|p| p.ty.text()).collect();
        let elem = format!("tensor<*x{}>", x.ty.dtype.mlir_name());
        let py_names: Vec<String> = parts.iter().map(|p| p.name.clone()).collect();
        self.line(&format!("%{list} = prim.ListConstruct {} : ({}) -> !prim.list<{elem}>", names.join(", "), tys.join(", ")), &format!("{list} = [{}]", py_names.join(", ")));
        let lv = Val { name: list, ty: x.ty.clone(), bound: None, exact: false, contiguous: false };
        let name = self.fresh("v");
        let dim = self.dim_attr(d, rank);
        let ty = Ty::new(x.ty.dtype, out);
        self.line(
            &format!("%{name} = aten.cat %{} {{dim = {dim}}} : (!prim.list<{elem}>) -> {}", lv.name, ty.text()),
            &format!("{name} = torch.ops.aten.cat.default({}, dim={dim})", lv.name),
        );
        let bound = parts.iter().try_fold(0.0f64, |m, p| p.bound.map(|b| m.max(b)));
        let exact = parts.iter().all(|p| p.exact);
        self.pool.push(Val { name, ty, bound, exact, contiguous: true });
        true
    }

    fn softmax(&mut self) -> bool {
        let x = self.operand();
        if !matches!(x.ty.dtype, DType::F32 | DType::F64) || x.ty.rank() == 0 {
            return false;
        }
        let d = self.rng.below(x.ty.rank());
        let dim = self.dim_attr(d, x.ty.rank());
        let ty = x.ty.clone();
        match self.rng.below(3) {
            0 => self.emit("_softmax", &[&x], &[("dim", Attr::Int(dim)), ("half_to_float", Attr::Bool(false))], ty, Some(1.0), false, true),
            1 => self.emit("softmax.int", &[&x], &[("dim", Attr::Int(dim))], ty, Some(1.0), false, true),
            _ => self.emit("_log_softmax", &[&x], &[("dim", Attr::Int(dim)), ("half_to_float", Attr::Bool(false))], ty, None, false, true),
        };
        true
    }

    fn cast(&mut self) -> bool {
        let x = self.operand();
        let to = self.rng.pick(&[DType::F32, DType::F64, DType::I64, DType::Bool, DType::F16, DType::BF16]);
        // A float outside the integers' range (or NaN) has no defined integer value.
        if to.is_integral() && x.ty.dtype.is_floating() && !x.bound.is_some_and(|b| b < 1e9) {
            return false;
        }
        // Truncation and the test against zero are step functions (see `unary`).
        if !to.is_floating() && x.ty.dtype.is_floating() && !x.exact {
            return false;
        }
        let exact = x.exact && !(is_half(to) && !is_half(x.ty.dtype));
        let bound = if to == DType::F16 { x.bound.filter(|b| *b < 6e4) } else { x.bound };
        self.emit("_to_copy", &[&x], &[("dtype", Attr::DType(to))], Ty::new(to, x.ty.shape.clone()), bound, exact, true);
        true
    }

    /// A computed, exactly known `i1`: whether some element of an exact value passes a test,
    /// or whether an integer sum exceeds a constant.
    fn condition(&mut self) -> Option<String> {
        let exact: Vec<Val> = self.pool.iter().filter(|v| v.exact).cloned().collect();
        let x = exact.get(self.rng.below(exact.len().max(1)))?.clone();
        let c = self.fresh("c");
        if x.ty.dtype.is_integral() && self.rng.chance(0.5) {
            let s = self.emit("sum", &[&x], &[], Ty::new(DType::I64, Vec::new()), None, true, true);
            let (i, k) = (self.fresh("s"), self.fresh("k"));
            let limit = self.rng.pick(&[-1, 0, 2]);
            self.line(&format!("%{i} = aten._local_scalar_dense %{} : (tensor<i64>) -> i64", s.name), &format!("{i} = int({})", s.name));
            self.line(&format!("%{k} = prim.Constant {limit} : i64"), &format!("{k} = {limit}"));
            self.line(&format!("%{c} = aten.gt.int %{i}, %{k} : (i64, i64) -> i1"), &format!("{c} = {i} > {k}"));
            return Some(c);
        }
        let b = if x.ty.dtype == DType::Bool {
            x
        } else {
            let ty = Ty::new(DType::Bool, x.ty.shape.clone());
            self.emit("gt.Scalar", &[&x], &[("other", Attr::Float(0.5))], ty, Some(1.0), true, true)
        };
        let op = self.rng.pick(&["any", "all"]);
        let r = self.emit(op, &[&b], &[], Ty::new(DType::Bool, Vec::new()), Some(1.0), true, true);
        self.line(&format!("%{c} = aten._local_scalar_dense %{} : (tensor<i1>) -> i1", r.name), &format!("{c} = bool({})", r.name));
        Some(c)
    }

    /// Ops that keep `acc`'s type (the bodies of branches and loops), ending in the value
    /// yielded.
    fn same_type_ops(&mut self, acc: Val) -> Val {
        let mut cur = acc;
        for _ in 0..1 + self.rng.below(3) {
            let d = cur.ty.dtype;
            let ty = cur.ty.clone();
            cur = match self.rng.below(4) {
                0 if d.is_floating() => {
                    let op = self.rng.pick(&["tanh", "sigmoid", "neg", "abs", "sin"]);
                    let bound = if op == "neg" || op == "abs" { cur.bound } else { cur.bound.map(|_| 1.0) };
                    self.emit(op, &[&cur], &[], ty, bound, false, true)
                }
                1 if d != DType::Bool => {
                    let shape = self.broadcast_partner(&cur.ty.shape);
                    let shape = if broadcast(&shape, &cur.ty.shape).as_deref() == Some(&cur.ty.shape[..]) { shape } else { cur.ty.shape.clone() };
                    let Some(y) = self.value_of(&Ty::new(d, shape)) else { continue };
                    let op = self.rng.pick(&["add.Tensor", "maximum", "minimum"]);
                    let bound = if op == "add.Tensor" { add_bound(cur.bound, y.bound) } else { cur.bound.zip(y.bound).map(|(a, b)| a.max(b)) };
                    if !d.is_floating() && bound.is_none() {
                        continue;
                    }
                    let exact = cur.exact && y.exact && !d.is_floating();
                    self.emit(op, &[&cur, &y], &[], ty, bound, exact, true)
                }
                2 if d.is_floating() => self.emit("mul.Scalar", &[&cur], &[("other", Attr::Float(0.5))], ty, cur.bound, false, true),
                _ => {
                    let op = if d == DType::Bool { "logical_not" } else { "neg" };
                    self.emit(op, &[&cur], &[], ty, cur.bound, cur.exact, true)
                }
            };
        }
        cur
    }

    fn if_op(&mut self) -> bool {
        let Some(c) = self.condition() else { return false };
        let x = self.operand();
        let y = self.pool.iter().filter(|v| v.ty == x.ty).cloned().collect::<Vec<_>>();
        let y = y[self.rng.below(y.len())].clone();
        let name = self.fresh("v");
        let t = x.ty.text();
        self.body += &format!("{}%{name} = prim.If %{c} -> ({t}) {{\n", "  ".repeat(self.depth));
        self.py += &format!("{}if {c}:\n", "    ".repeat(self.depth));
        let mut results = Vec::new();
        for (i, seed) in [x.clone(), y].into_iter().enumerate() {
            if i == 1 {
                self.body += &format!("{}}} else {{\n", "  ".repeat(self.depth));
                self.py += &format!("{}else:\n", "    ".repeat(self.depth));
            }
            let saved = self.pool.len();
            self.depth += 1;
            let r = if self.rng.chance(0.2) { seed } else { self.same_type_ops(seed) };
            self.line(&format!("prim.Yield %{} : {t}", r.name), &format!("{name} = {}", r.name));
            self.depth -= 1;
            self.pool.truncate(saved);
            results.push(r);
        }
        self.body += &format!("{}}}\n", "  ".repeat(self.depth));
        let bound = results[0].bound.zip(results[1].bound).map(|(a, b)| a.max(b));
        let exact = results.iter().all(|r| r.exact);
        // A branch may yield a view as it is.
        let contiguous = results.iter().all(|r| r.contiguous);
        self.pool.push(Val { name, ty: x.ty.clone(), bound, exact, contiguous });
        true
    }

    fn loop_op(&mut self) -> bool {
        let x = self.operand();
        let (n, t, i, acc, name) = (self.fresh("n"), self.fresh("t"), self.fresh("i"), self.fresh("acc"), self.fresh("v"));
        // The trip count: a constant, or a size of some value (possibly 0).
        let sized: Vec<Val> = self.pool.iter().filter(|v| v.ty.rank() > 0 && v.ty.shape.iter().all(|&d| d <= 4)).cloned().collect();
        if !sized.is_empty() && self.rng.chance(0.5) {
            let v = sized[self.rng.below(sized.len())].clone();
            let d = self.rng.below(v.ty.rank());
            let k = self.fresh("k");
            self.line(&format!("%{k} = prim.Constant {d} : i64"), &format!("{k} = {d}"));
            self.line(&format!("%{n} = aten.size.int %{}, %{k} : ({}, i64) -> i64", v.name, v.ty.text()), &format!("{n} = {}.size({k})", v.name));
        } else {
            let trips = self.rng.below(4);
            self.line(&format!("%{n} = prim.Constant {trips} : i64"), &format!("{n} = {trips}"));
        }
        self.line(&format!("%{t} = prim.Constant true : i1"), &format!("{t} = True"));
        let ty = x.ty.text();
        self.body += &format!("{}%{name} = prim.Loop %{n}, %{t}, %{} ({{\n", "  ".repeat(self.depth), x.name);
        self.body += &format!("{}^bb0(%{i}: i64, %{acc}: {ty}):\n", "  ".repeat(self.depth));
        self.py += &format!("{}{acc} = {}\n{}for {i} in range({n}):\n", "    ".repeat(self.depth), x.name, "    ".repeat(self.depth));
        let saved = self.pool.len();
        self.depth += 1;
        let a = Val { name: acc.clone(), ty: x.ty.clone(), bound: x.bound, exact: x.exact, contiguous: true };
        let r = self.same_type_ops(a);
        self.line(&format!("prim.Yield %{t}, %{} : i1, {ty}", r.name), &format!("{acc} = {}", r.name));
        self.depth -= 1;
        self.pool.truncate(saved);
        self.body += &format!("{}}}) : (i64, i1, {ty}) -> {ty}\n", "  ".repeat(self.depth));
        self.py += &format!("{}{name} = {acc}\n", "    ".repeat(self.depth));
        // Bounds grow with each trip: unknown after the loop.
        let exact = r.exact && x.exact;
        // A loop of zero trips returns its initial value, a view perhaps.
        let contiguous = r.contiguous && x.contiguous;
        self.pool.push(Val { name, ty: x.ty.clone(), bound: None, exact, contiguous });
        true
    }
}
