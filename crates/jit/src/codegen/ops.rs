//! The elementwise operations of a kernel: each graph node emitted as Cranelift instructions
//! in a mode (vector or scalar), with casts, comparisons, the inline math of the unary ops and
//! integer division with its zero check.

use super::*;

impl Emitter<'_, '_> {
    /// Emits node `n` (and its operands) in `mode`, memoized in `cache`.
    pub fn node(
        &mut self,
        mode: Mode,
        n: NodeId,
        cache: &mut HashMap<NodeId, Value>,
        access: &dyn Fn(&mut Emitter<'_, '_>, usize) -> Value,
    ) -> Result<Value, JitError> {
        if let Some(&v) = cache.get(&n) {
            return Ok(v);
        }
        let node = &self.g.nodes[n];
        let d = node.dtype;
        let op = node.op;
        if let Some(v) = self.capped_exp(mode, n, cache, access)? {
            cache.insert(n, v);
            return Ok(v);
        }
        let v = match node.kind.clone() {
            NodeKind::Input(i) => access(self, i),
            NodeKind::Const(c) => self.const_value(mode, d, c),
            NodeKind::Cast(a) => {
                let x = self.node(mode, a, cache, access)?;
                let from = self.g.nodes[a].dtype;
                self.cast(mode, x, from, d, op)?
            }
            NodeKind::Unary(u, a) => {
                let x = self.node(mode, a, cache, access)?;
                let splits = mode.vector() && d == DType::F32 && matches!(u, Unary::Exp | Unary::Tanh | Unary::Sigmoid);
                self.allow_split(n, splits);
                let v = self.unary(mode, u, x, d, op);
                self.allow_split(n, false);
                v?
            }
            NodeKind::Binary(bop, a, b2) => {
                let x = self.node(mode, a, cache, access)?;
                let y = self.node(mode, b2, cache, access)?;
                self.binary(mode, bop, x, y, d, op)?
            }
            NodeKind::Cmp(c, a, b2) => {
                let x = self.node(mode, a, cache, access)?;
                let y = self.node(mode, b2, cache, access)?;
                let od = self.g.nodes[a].dtype;
                self.compare(c, x, y, od)
            }
            NodeKind::Select(c, a, b2) => {
                let m = self.node(mode, c, cache, access)?;
                let x = self.node(mode, a, cache, access)?;
                let y = self.node(mode, b2, cache, access)?;
                self.sel(m, x, y)
            }
            NodeKind::MulAdd(a, b2, c) => {
                let x = self.node(mode, a, cache, access)?;
                let y = self.node(mode, b2, cache, access)?;
                let z = self.node(mode, c, cache, access)?;
                if self.fma {
                    self.b.ins().fma(x, y, z)
                } else {
                    let p = self.b.ins().fmul(x, y);
                    self.b.ins().fadd(p, z)
                }
            }
        };
        cache.insert(n, v);
        Ok(v)
    }

    /// `clamp(exp(x), max=c)` (f32, `exp` used only there, `0 < c <= e^41`): results of
    /// `exp` above `e c` are clamped to `c` anyway, so `exp` needs no overflow handling and
    /// forms `2^k` with one shift (`exp_capped`). `None` when node `n` is not of that form.
    pub(super) fn capped_exp(
        &mut self,
        mode: Mode,
        n: NodeId,
        cache: &mut HashMap<NodeId, Value>,
        access: &dyn Fn(&mut Emitter<'_, '_>, usize) -> Value,
    ) -> Result<Option<Value>, JitError> {
        let g = self.g;
        let NodeKind::Binary(Binary::ClampHi, e, b) = g.nodes[n].kind else { return Ok(None) };
        let NodeKind::Unary(Unary::Exp, x) = g.nodes[e].kind else { return Ok(None) };
        let NodeKind::Const(Const::Float(c)) = g.nodes[b].kind else { return Ok(None) };
        let hi = c.ln() + 1.0;
        if g.nodes[n].dtype != DType::F32
            || g.nodes[e].dtype != DType::F32
            || self.multi_use.get(e).copied().unwrap_or(true)
            || cache.contains_key(&e)
            || !(c > 0.0 && hi <= 42.0)
        {
            return Ok(None);
        }
        let xv = self.node(mode, x, cache, access)?;
        self.allow_split(n, mode.vector());
        let ev = self.exp_capped(xv, hi);
        self.allow_split(n, false);
        let cv = self.node(mode, b, cache, access)?;
        self.binary(mode, Binary::ClampHi, ev, cv, DType::F32, g.nodes[n].op).map(Some)
    }

    pub(super) fn compare(&mut self, c: Cmp, x: Value, y: Value, d: DType) -> Value {
        if d.is_floating() {
            let cc = match c {
                Cmp::Eq => FloatCC::Equal,
                Cmp::Ne => FloatCC::NotEqual,
                Cmp::Lt => FloatCC::LessThan,
                Cmp::Le => FloatCC::LessThanOrEqual,
                Cmp::Gt => FloatCC::GreaterThan,
                Cmp::Ge => FloatCC::GreaterThanOrEqual,
            };
            return self.b.ins().fcmp(cc, x, y);
        }
        // Bool masks are -1/0 in vectors: unsigned order keeps false < true.
        let unsigned = d == DType::Bool;
        let cc = match (c, unsigned) {
            (Cmp::Eq, _) => IntCC::Equal,
            (Cmp::Ne, _) => IntCC::NotEqual,
            (Cmp::Lt, false) => IntCC::SignedLessThan,
            (Cmp::Le, false) => IntCC::SignedLessThanOrEqual,
            (Cmp::Gt, false) => IntCC::SignedGreaterThan,
            (Cmp::Ge, false) => IntCC::SignedGreaterThanOrEqual,
            (Cmp::Lt, true) => IntCC::UnsignedLessThan,
            (Cmp::Le, true) => IntCC::UnsignedLessThanOrEqual,
            (Cmp::Gt, true) => IntCC::UnsignedGreaterThan,
            (Cmp::Ge, true) => IntCC::UnsignedGreaterThanOrEqual,
        };
        self.b.ins().icmp(cc, x, y)
    }

    /// PyTorch's casts between the compiled dtypes (float → int as x86's truncating
    /// conversions: out-of-range and NaN give the minimum value).
    pub(super) fn cast(&mut self, mode: Mode, x: Value, from: DType, to: DType, op: &str) -> Result<Value, JitError> {
        use DType::*;
        let t = mode.ty(to);
        let xt = self.b.func.dfg.value_type(x);
        if mode.vector() && from != Bool && to != Bool && from.size_bytes() != to.size_bytes() {
            return Err(JitError::Codegen(format!("{op}: mixed-width cast in a vector loop")));
        }
        Ok(match (from, to) {
            (a, b) if a == b => x,
            (Bool, F32 | F64) => {
                if mode.vector() {
                    let one = self.fconst(t, 1.0);
                    let zero = self.fconst(t, 0.0);
                    self.sel(x, one, zero)
                } else {
                    let w = self.b.ins().uextend(types::I32, x);
                    self.b.ins().fcvt_from_sint(t, w)
                }
            }
            (Bool, I32 | I64) => {
                if mode.vector() {
                    let one = self.iconst(t, 1);
                    self.b.ins().band(x, one)
                } else {
                    self.b.ins().uextend(t, x)
                }
            }
            (I32 | I64, Bool) => {
                let z = self.iconst(xt, 0);
                let m = self.b.ins().icmp(IntCC::NotEqual, x, z);
                self.fit_mask(mode, m, t)
            }
            (F32 | F64, Bool) => {
                let z = self.fconst(xt, 0.0);
                let m = self.b.ins().fcmp(FloatCC::NotEqual, x, z);
                self.fit_mask(mode, m, t)
            }
            (F32, F64) => self.b.ins().fpromote(t, x),
            (F64, F32) => self.b.ins().fdemote(t, x),
            (I32, I64) => self.b.ins().sextend(t, x),
            (I64, I32) => self.b.ins().ireduce(t, x),
            (I32 | I64, F32 | F64) => self.b.ins().fcvt_from_sint(t, x),
            (F32 | F64, I32 | I64) => {
                let (lo, hi) = if to == I32 { (-2_147_483_649.0, 2_147_483_648.0) } else { (-9_223_372_036_854_777_856.0, 9_223_372_036_854_775_808.0) };
                // In range iff lo < x < hi (in f64); in f32 the bounds are exact or excluded alike.
                let (lo_c, hi_c, lo_cc) = if from == F32 && to == I32 {
                    (-2_147_483_648.0, 2_147_483_648.0, FloatCC::GreaterThanOrEqual)
                } else if to == I64 {
                    (-9_223_372_036_854_775_808.0, 9_223_372_036_854_775_808.0, FloatCC::GreaterThanOrEqual)
                } else {
                    (lo, hi, FloatCC::GreaterThan)
                };
                let lo_v = self.fconst(xt, lo_c);
                let hi_v = self.fconst(xt, hi_c);
                let a = self.b.ins().fcmp(lo_cc, x, lo_v);
                let b = self.b.ins().fcmp(FloatCC::LessThan, x, hi_v);
                let ok = self.b.ins().band(a, b);
                let conv = self.b.ins().fcvt_to_sint_sat(t, x);
                let min = self.iconst(t, if to == I32 { i32::MIN as i64 } else { i64::MIN });
                let ok = self.fit_mask(mode, ok, t);
                self.sel(ok, conv, min)
            }
            (a, b) => return Err(JitError::unsupported_dtype(op, if a.is_floating() { b } else { a })),
        })
    }

    /// A comparison mask used as a value of mask type `t` (same lane count; scalar stays `i8`).
    pub(super) fn fit_mask(&mut self, mode: Mode, m: Value, t: Type) -> Value {
        if !mode.vector() {
            return m;
        }
        let mt = self.b.func.dfg.value_type(m);
        if mt == t { m } else { self.bitcast(t, m) }
    }

    pub(super) fn unary(&mut self, mode: Mode, u: Unary, x: Value, d: DType, op: &str) -> Result<Value, JitError> {
        let t = mode.ty(d);
        let float = d.is_floating();
        Ok(match u {
            Unary::Neg if float => self.neg(x),
            Unary::Neg => self.b.ins().ineg(x),
            Unary::Abs if float => self.abs(x),
            Unary::Abs => self.b.ins().iabs(x),
            Unary::Relu if float => {
                let z = self.fconst(t, 0.0);
                let m = self.b.ins().fcmp(FloatCC::UnorderedOrGreaterThan, x, z);
                self.sel(m, x, z)
            }
            Unary::Relu => {
                let z = self.iconst(t, 0);
                self.b.ins().smax(x, z)
            }
            Unary::Floor => self.b.ins().floor(x),
            Unary::Ceil => self.b.ins().ceil(x),
            Unary::Round => self.b.ins().nearest(x),
            Unary::Trunc => self.b.ins().trunc(x),
            Unary::Sqrt => self.b.ins().sqrt(x),
            Unary::Rsqrt => {
                let s = self.b.ins().sqrt(x);
                let one = self.fconst(t, 1.0);
                self.b.ins().fdiv(one, s)
            }
            Unary::Recip => {
                let one = self.fconst(t, 1.0);
                self.b.ins().fdiv(one, x)
            }
            Unary::Square if float => self.b.ins().fmul(x, x),
            Unary::Square => self.b.ins().imul(x, x),
            Unary::Not => {
                if mode.vector() {
                    self.b.ins().bnot(x)
                } else {
                    let one = self.iconst(types::I8, 1);
                    self.b.ins().bxor(x, one)
                }
            }
            Unary::PowI(k) => {
                // Square-and-multiply with wrapping products, as the reference's loop.
                let mut acc = self.iconst(t, 1);
                let mut base = x;
                let mut e = k;
                while e > 0 {
                    if e & 1 == 1 {
                        acc = self.b.ins().imul(acc, base);
                    }
                    e >>= 1;
                    if e > 0 {
                        base = self.b.ins().imul(base, base);
                    }
                }
                acc
            }
            Unary::PowF(e) => {
                let one = self.fconst(t, 1.0);
                if e == 2.0 {
                    self.b.ins().fmul(x, x)
                } else if e == 3.0 {
                    let s = self.b.ins().fmul(x, x);
                    self.b.ins().fmul(s, x)
                } else if e == 0.5 {
                    self.b.ins().sqrt(x)
                } else if e == -0.5 {
                    let s = self.b.ins().sqrt(x);
                    self.b.ins().fdiv(one, s)
                } else if e == -1.0 {
                    self.b.ins().fdiv(one, x)
                } else if e == -2.0 {
                    let s = self.b.ins().fmul(x, x);
                    self.b.ins().fdiv(one, s)
                } else {
                    let ev = self.fconst(t, e);
                    let addr = if d == DType::F32 { shims::pow_f32 as *const () as usize } else { shims::pow_f64 as *const () as usize };
                    self.call_lanes(addr, &[x, ev])
                }
            }
            Unary::Lib(f) => {
                let (a, b) = shims::lib_fn(f);
                let addr = if d == DType::F32 { a as *const () as usize } else { b as *const () as usize };
                self.call_lanes(addr, &[x])
            }
            Unary::Exp | Unary::Log | Unary::Tanh | Unary::Sigmoid | Unary::Erf | Unary::Sin | Unary::Cos
            | Unary::GeluErf | Unary::GeluTanh | Unary::Silu => {
                if d == DType::F64 {
                    let addr = match u {
                        Unary::Exp => shims::exp_f64 as *const () as usize,
                        Unary::Log => shims::log_f64 as *const () as usize,
                        Unary::Tanh => shims::tanh_f64 as *const () as usize,
                        Unary::Sigmoid => shims::sigmoid_f64 as *const () as usize,
                        Unary::Erf => shims::erf_f64 as *const () as usize,
                        Unary::Sin => shims::sin_f64 as *const () as usize,
                        Unary::Cos => shims::cos_f64 as *const () as usize,
                        Unary::GeluErf => shims::gelu_erf_f64 as *const () as usize,
                        Unary::GeluTanh => shims::gelu_tanh_f64 as *const () as usize,
                        _ => shims::silu_f64 as *const () as usize,
                    };
                    self.call_lanes(addr, &[x])
                } else if d == DType::F32 {
                    match u {
                        Unary::Exp => self.exp_f32(x),
                        Unary::Log => self.log_f32(x),
                        Unary::Tanh => self.tanh_f32(x),
                        Unary::Sigmoid => self.sigmoid_f32(x),
                        Unary::Erf => self.erf_f32(x),
                        Unary::Sin => self.sincos_f32(x, false),
                        Unary::Cos => self.sincos_f32(x, true),
                        Unary::GeluErf => self.gelu_erf_f32(x),
                        Unary::GeluTanh => self.gelu_tanh_f32(x),
                        _ => self.silu_f32(x),
                    }
                } else {
                    return Err(JitError::unsupported_dtype(op, d));
                }
            }
        })
    }

    pub(super) fn binary(&mut self, mode: Mode, bop: Binary, x: Value, y: Value, d: DType, op: &str) -> Result<Value, JitError> {
        let float = d.is_floating();
        let t = mode.ty(d);
        Ok(match bop {
            Binary::Add if float => self.b.ins().fadd(x, y),
            Binary::Add => self.b.ins().iadd(x, y),
            Binary::Sub if float => self.b.ins().fsub(x, y),
            Binary::Sub => self.b.ins().isub(x, y),
            Binary::Mul if float => self.b.ins().fmul(x, y),
            Binary::Mul => self.b.ins().imul(x, y),
            Binary::Div if float => self.b.ins().fdiv(x, y),
            Binary::Max if float => self.b.ins().fmax(x, y),
            Binary::Min if float => self.b.ins().fmin(x, y),
            Binary::Max => self.b.ins().smax(x, y),
            Binary::Min => self.b.ins().smin(x, y),
            Binary::And => self.b.ins().band(x, y),
            Binary::Or => self.b.ins().bor(x, y),
            Binary::Xor => self.b.ins().bxor(x, y),
            // `x < y ? y : x` and `y < x ? y : x`: the forms Cranelift lowers to one
            // `maxps`/`minps` (a NaN `x` passes through, as in the reference).
            Binary::ClampLo if float => {
                let m = self.b.ins().fcmp(FloatCC::LessThan, x, y);
                self.sel(m, y, x)
            }
            Binary::ClampHi if float => {
                let m = self.b.ins().fcmp(FloatCC::LessThan, y, x);
                self.sel(m, y, x)
            }
            Binary::ClampLo => self.b.ins().smax(x, y),
            Binary::ClampHi => self.b.ins().smin(x, y),
            Binary::Pow if float => {
                let addr = if d == DType::F32 { shims::pow_f32 as *const () as usize } else { shims::pow_f64 as *const () as usize };
                self.call_lanes(addr, &[x, y])
            }
            Binary::DivFloor | Binary::Rem | Binary::Fmod if float => {
                let addr = match (bop, d) {
                    (Binary::DivFloor, DType::F32) => shims::floor_div_f32 as *const () as usize,
                    (Binary::DivFloor, _) => shims::floor_div_f64 as *const () as usize,
                    (Binary::Rem, DType::F32) => shims::rem_f32 as *const () as usize,
                    (Binary::Rem, _) => shims::rem_f64 as *const () as usize,
                    (_, DType::F32) => shims::fmod_f32 as *const () as usize,
                    _ => shims::fmod_f64 as *const () as usize,
                };
                self.call_lanes(addr, &[x, y])
            }
            Binary::DivTrunc | Binary::DivFloor | Binary::Rem | Binary::Fmod if !mode.vector() && !float => {
                self.int_div(bop, x, y, t)
            }
            _ => return Err(JitError::Unsupported(format!("{op}: {bop:?} on {}", d.torch_name()))),
        })
    }

    /// Integer division and remainders on scalars; a zero divisor sets the error flag.
    pub(super) fn int_div(&mut self, bop: Binary, x: Value, y: Value, t: Type) -> Value {
        let zero = self.iconst(t, 0);
        let one = self.iconst(t, 1);
        let m1 = self.iconst(t, -1);
        let is0 = self.b.ins().icmp(IntCC::Equal, y, zero);
        let is_m1 = self.b.ins().icmp(IntCC::Equal, y, m1);
        let e = self.b.use_var(self.err);
        let e2 = self.b.ins().uextend(types::I32, is0);
        let e = self.b.ins().bor(e, e2);
        self.b.def_var(self.err, e);
        // Neither 0 (error) nor -1 (overflow on MIN / -1) reaches the hardware division.
        let unsafe_div = self.b.ins().bor(is0, is_m1);
        let safe = self.b.ins().select(unsafe_div, one, y);
        let q = self.b.ins().sdiv(x, safe);
        let negx = self.b.ins().ineg(x);
        let q = self.b.ins().select(is_m1, negx, q);
        let r = self.b.ins().srem(x, safe);
        let r = self.b.ins().select(is_m1, zero, r);
        let r_nz = self.b.ins().icmp(IntCC::NotEqual, r, zero);
        let r_neg = self.b.ins().icmp(IntCC::SignedLessThan, r, zero);
        let y_neg = self.b.ins().icmp(IntCC::SignedLessThan, y, zero);
        let diff = self.b.ins().bxor(r_neg, y_neg);
        let adjust = self.b.ins().band(r_nz, diff);
        match bop {
            Binary::DivTrunc => q,
            Binary::DivFloor => {
                let q1 = self.b.ins().isub(q, one);
                self.b.ins().select(adjust, q1, q)
            }
            Binary::Rem => {
                let ry = self.b.ins().iadd(r, y);
                self.b.ins().select(adjust, ry, r)
            }
            _ => r,
        }
    }
}
