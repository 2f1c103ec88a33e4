//! Random well-typed programs over core ATen ops for differential testing: each program is one
//! IR function `@f` (elementwise ops with broadcasting and type promotion, comparisons and
//! `where`, reductions, views, matrix products, `cat`, softmax, casts, `prim.If` and
//! `prim.Loop`), the same program as a Python function calling `torch.ops.aten`, and random
//! inputs. The generator tracks each value's type as PyTorch computes it, a bound on its
//! magnitude (so casts to integers and integer products stay defined) and whether it is computed
//! exactly (so branch conditions never hinge on rounding).

use ir::DType;

mod ops;

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
}
