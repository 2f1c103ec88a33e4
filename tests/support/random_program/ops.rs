//! The op generators of `random_program`: each adds one op (or one `prim.If`/`prim.Loop`) of
//! its kind to the program being built, or declines when the operand it picked does not suit
//! it (the caller then tries another kind).

use ir::DType;

use super::{Attr, Gen, MAX_NUMEL, Ty, Val, add_bound, broadcast, is_half, mul_bound, result_type, scalar_result_type};

impl Gen {
    pub(super) fn unary(&mut self) -> bool {
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

    pub(super) fn binary(&mut self) -> bool {
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

    pub(super) fn scalar_op(&mut self) -> bool {
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
    pub(super) fn compare(&mut self) -> bool {
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

    pub(super) fn where_op(&mut self) -> bool {
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
    pub(super) fn dims(&mut self, rank: usize, min: usize) -> Vec<usize> {
        let mut dims: Vec<usize> = (0..rank).filter(|_| self.rng.chance(0.5)).collect();
        while dims.len() < min.min(rank) {
            let d = self.rng.below(rank);
            if !dims.contains(&d) {
                dims.push(d);
            }
        }
        dims
    }

    pub(super) fn dim_attr(&mut self, d: usize, rank: usize) -> i64 {
        if self.rng.chance(0.3) { d as i64 - rank.max(1) as i64 } else { d as i64 }
    }

    pub(super) fn reduce(&mut self) -> bool {
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

    pub(super) fn view_op(&mut self) -> bool {
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
    pub(super) fn refactor(&mut self, shape: &[usize]) -> Vec<usize> {
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

    pub(super) fn matmul(&mut self) -> bool {
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

    pub(super) fn cat(&mut self) -> bool {
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

    pub(super) fn softmax(&mut self) -> bool {
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

    pub(super) fn cast(&mut self) -> bool {
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
    pub(super) fn condition(&mut self) -> Option<String> {
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
    pub(super) fn same_type_ops(&mut self, acc: Val) -> Val {
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

    pub(super) fn if_op(&mut self) -> bool {
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

    pub(super) fn loop_op(&mut self) -> bool {
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
