//! Inline f32 transcendental functions for scalars and `f32x4` vectors: range reduction plus
//! polynomial or rational approximations, with special values (NaN, ±inf, ±0, denormals)
//! handled explicitly. Measured accuracy is recorded in `docs/performance.md`.
//!
//! The polynomial coefficients of `erf` were fitted by Chebyshev interpolation of the function
//! on the stated intervals; `exp` (and through it `tanh`, `sigmoid`, `silu`), `log`, `sin` and
//! `cos` use their Taylor (or `atanh`) series, which converge fast enough on the reduced ranges.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{InstBuilder, Value};

use crate::codegen::Emitter;
use crate::shims;

// The erf coefficients are shared with the runtime's f32 kernels.
use runtime::kernels::fastmath::{ERF_CUT, ERF_SMALL, ERFC_BIG};

/// π/2 split for Cody–Waite reduction in f64: 33 leading bits, then the rest.
const PIO2_HI: f64 = 1.570_796_326_734_125_6;
const PIO2_LO: f64 = 6.077_100_506_506_192e-11;
/// Beyond this magnitude sin/cos call the library (exact reduction of huge arguments).
const SINCOS_MAX: f64 = 1.0e6;
/// The clamp of `exp`'s argument: above `log(f32::MAX)` (88.72) the scaled result overflows to
/// `inf`, below `log(2^-150)` (-103.97) it rounds to 0, and `k` stays within `[-150, 129]`.
pub(crate) const EXP_HI: f64 = 89.0;
pub(crate) const EXP_LO: f64 = -104.0;
/// 1.5 * 2^23: adding it rounds a float of magnitude below 2^22 to an integer.
pub(crate) const EXP_MAGIC: f64 = 12_582_912.0;
/// The offset of `exp`'s one-shift scaling where `k` is at most 62: odd, so that the rounding
/// constant `1.5 * 2^23 + 127 + 65` is even and rounds ties of `x log2(e)` like the two-step
/// form's (the results agree bit for bit).
pub(crate) const EXP_SHIFT: i32 = 65;
/// `tanh`'s exponential argument `-2|x|` is clamped at minus this: `tanh(20)` rounds to 1.
pub(crate) const TANH_EXP_MAX: f64 = 40.0;
/// ln 2 split for Cody–Waite reduction of `exp`'s argument: `k * LN2_HI` is exact in f32.
pub(crate) const LN2_HI: f64 = -0.693_359_375;
pub(crate) const LN2_LO: f64 = 2.121_944_400_546_905_8e-4;
/// The Taylor coefficients of `(e^r - 1 - r) / r^2`, lowest degree first.
pub(crate) const EXP_POLY: [f64; 6] = [1.0 / 2.0, 1.0 / 6.0, 1.0 / 24.0, 1.0 / 120.0, 1.0 / 720.0, 1.0 / 5040.0];
/// `log`'s series of `(2 atanh(s) - 2s) / s^3` in `z = s^2`, lowest degree first.
pub(crate) const LOG_POLY: [f64; 4] = [2.0 / 3.0, 2.0 / 5.0, 2.0 / 7.0, 2.0 / 9.0];

/// How `exp` forms `2^k`.
#[derive(Clone, Copy)]
enum Scale {
    /// `2^(k - k/2) 2^(k/2)`: any `k` of the clamped range (`[-150, 129]`).
    TwoStep,
    /// `2^(k + c)` by one shift: `k + c` must stay within `[-126, 127]`.
    Shift(i32),
}

/// The sign bit of a lane of float type `t`.
fn sign_bit(t: cranelift_codegen::ir::Type) -> i64 {
    if t.lane_type() == cranelift_codegen::ir::types::F64 { i64::MIN } else { 0x8000_0000 }
}

impl Emitter<'_, '_> {
    fn ty_of(&self, x: Value) -> cranelift_codegen::ir::Type {
        self.b.func.dfg.value_type(x)
    }

    fn horner(&mut self, s: Value, coeffs: &[f64]) -> Value {
        let t = self.ty_of(s);
        let mut p = self.fconst(t, coeffs[coeffs.len() - 1]);
        for &c in coeffs[..coeffs.len() - 1].iter().rev() {
            let k = self.fconst(t, c);
            p = self.mul_add(p, s, k);
        }
        p
    }

    /// Runs `f` with vector constants hoisted out of the loops (see `ConstPool`).
    fn without_pool<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        let pool = self.pool.take();
        let r = f(self);
        self.pool = pool;
        r
    }

    /// `|x|`: one `and` on vectors (Cranelift's vector `fabs` first builds its mask in two
    /// instructions).
    pub fn abs(&mut self, x: Value) -> Value {
        let t = self.ty_of(x);
        if !t.is_vector() {
            return self.b.ins().fabs(x);
        }
        let ti = t.as_int();
        let xi = self.bitcast(ti, x);
        let mask = self.iconst(ti, !sign_bit(t));
        let r = self.b.ins().band(xi, mask);
        self.bitcast(t, r)
    }

    /// `-x` by flipping the sign bit (one `xor` on vectors).
    pub fn neg(&mut self, x: Value) -> Value {
        let t = self.ty_of(x);
        if !t.is_vector() {
            return self.b.ins().fneg(x);
        }
        let ti = t.as_int();
        let xi = self.bitcast(ti, x);
        let mask = self.iconst(ti, sign_bit(t));
        let r = self.b.ins().bxor(xi, mask);
        self.bitcast(t, r)
    }

    /// `-|x|` (one `or` of the sign bit on vectors).
    fn neg_abs(&mut self, x: Value) -> Value {
        let t = self.ty_of(x);
        if !t.is_vector() {
            let a = self.b.ins().fabs(x);
            return self.b.ins().fneg(a);
        }
        let ti = t.as_int();
        let xi = self.bitcast(ti, x);
        let mask = self.iconst(ti, sign_bit(t));
        let r = self.b.ins().bor(xi, mask);
        self.bitcast(t, r)
    }

    /// `a` (non-negative or NaN) with the sign of `s`.
    fn or_sign(&mut self, a: Value, s: Value) -> Value {
        let t = self.ty_of(a);
        if !t.is_vector() {
            return self.copysign(a, s);
        }
        let ti = t.as_int();
        let ai = self.bitcast(ti, a);
        let si = self.bitcast(ti, s);
        let sign = self.iconst(ti, sign_bit(t));
        let si = self.b.ins().band(si, sign);
        let r = self.b.ins().bor(ai, si);
        self.bitcast(t, r)
    }

    /// `|a|` with the sign of `s` (integer bit operations: no vector `fcopysign` on x86).
    fn copysign(&mut self, a: Value, s: Value) -> Value {
        let t = self.ty_of(a);
        let ti = t.as_int();
        let ai = self.bitcast(ti, a);
        let si = self.bitcast(ti, s);
        let mag = self.iconst(ti, 0x7fff_ffff);
        let sign = self.iconst(ti, 0x8000_0000);
        let ai = self.b.ins().band(ai, mag);
        let si = self.b.ins().band(si, sign);
        let r = self.b.ins().bor(ai, si);
        self.bitcast(t, r)
    }

    fn mulc(&mut self, x: Value, c: f64) -> Value {
        let t = self.ty_of(x);
        let k = self.fconst(t, c);
        self.b.ins().fmul(x, k)
    }

    fn addc(&mut self, x: Value, c: f64) -> Value {
        let t = self.ty_of(x);
        let k = self.fconst(t, c);
        self.b.ins().fadd(x, k)
    }

    fn cmpc(&mut self, cc: FloatCC, x: Value, c: f64) -> Value {
        let t = self.ty_of(x);
        let k = self.fconst(t, c);
        self.b.ins().fcmp(cc, x, k)
    }

    /// `2^k` for integer lanes `k` in `[-126, 127]`.
    fn pow2i(&mut self, k: Value) -> Value {
        let ti = self.ty_of(k);
        let bias = self.iconst(ti, 127);
        let e = self.b.ins().iadd(k, bias);
        let bits = self.b.ins().ishl_imm_u(e, 23);
        let tf = if ti.is_vector() { cranelift_codegen::ir::types::F32X4 } else { cranelift_codegen::ir::types::F32 };
        self.bitcast(tf, bits)
    }

    /// `exp(x)`: the argument clamped to `[-104, 89]`, `x = k ln2 + r`, `|r| <= ln2/2`, degree-7
    /// Taylor polynomial of `e^r`, and a two-step scaling by `2^k` so that results in the
    /// denormal range round once.
    pub fn exp_f32(&mut self, x: Value) -> Value {
        let (s1, s2, u) = self.exp_parts(x, Some(EXP_LO), Some(EXP_HI), Scale::TwoStep);
        self.exp_join(s1, s2, u)
    }

    /// `exp(x)` for `x <= 0` (or NaN): no upper clamp, and `2^k` (`k` in `[-150, 0]`) as
    /// `2^(k+65)` times `2^-65`, which rounds a denormal result once, like the two-step scaling.
    fn exp_nonpositive(&mut self, x: Value) -> Value {
        let (s1, s2, u) = self.exp_parts(x, Some(EXP_LO), None, Scale::Shift(EXP_SHIFT));
        let y = self.exp_join(s1, s2, u);
        self.mulc(y, 2f64.powi(-EXP_SHIFT))
    }

    /// `exp(x)` where only values up to `e^hi` matter (`hi <= 42`): the argument is clamped to
    /// `[-104, hi]`, so `k` stays within `[-150, 61]` and `2^k` is `2^(k+65)` (one shift)
    /// times `2^-65`.
    pub fn exp_capped(&mut self, x: Value, hi: f64) -> Value {
        let (s1, s2, u) = self.exp_parts(x, Some(EXP_LO), Some(hi), Scale::Shift(EXP_SHIFT));
        let y = self.exp_join(s1, s2, u);
        self.mulc(y, 2f64.powi(-EXP_SHIFT))
    }

    /// `e^x = (1 + u) s1 s2`, `u = e^r - 1`, `2^k = s1 s2` (see [`Scale`]).
    fn exp_join(&mut self, s1: Value, s2: Option<Value>, u: Value) -> Value {
        let e = self.addc(u, 1.0);
        let y = self.b.ins().fmul(e, s1);
        match s2 {
            Some(s2) => self.b.ins().fmul(y, s2),
            None => y,
        }
    }

    /// The parts of `exp(x)` for arguments clamped to `[lo, hi]` (a side left out must be
    /// impossible or harmless for the caller): `x = k ln2 + r` (Cody-Waite, `|r| <= ln2/2`),
    /// `u = e^r - 1` (degree-7 Taylor polynomial) and the scale `2^k` as one factor (`s2` is
    /// `None`) or two (see [`Scale`]). The default bounds are chosen so that the arithmetic
    /// itself gives `inf` above `log(f32::MAX)` and `0` below `log(2^-150)`, with no selects
    /// afterwards.
    ///
    /// The clamps are a compare and a select in the form Cranelift lowers to `minps`/`maxps`
    /// (`c < x ? c : x`, so a NaN `x` passes through); its `fmin`/`fmax` order NaNs and signed
    /// zeros at ~8 instructions a lane.
    fn exp_parts(&mut self, x: Value, lo: Option<f64>, hi: Option<f64>, scale: Scale) -> (Value, Option<Value>, Value) {
        let t = self.ty_of(x);
        let ti = t.as_int();
        let mut xc = x;
        if let Some(hi) = hi {
            xc = self.clamp_hi(xc, hi);
        }
        if let Some(lo) = lo {
            xc = self.clamp_lo(xc, lo);
        }
        // Round `x log2(e)` to the nearest integer by adding and subtracting 1.5 * 2^23 (plus
        // the biased exponent's offset for the one-shift scaling): the sum's low mantissa
        // bits are then the integer itself (|k| <= 151).
        let kx = self.mulc(xc, std::f64::consts::LOG2_E);
        let magic = match scale {
            Scale::TwoStep => EXP_MAGIC,
            Scale::Shift(c) => EXP_MAGIC + 127.0 + c as f64,
        };
        let kt = self.addc(kx, magic);
        let kf = self.addc(kt, -magic);
        // r = x - k ln2 (Cody-Waite: the first product is exact).
        let r = self.mul_addc(kf, LN2_HI, xc);
        let r = self.mul_addc(kf, LN2_LO, r);
        // A fissioned body starts a new phase here (see `Emitter::split`).
        let mut v = [r, kt];
        self.split(&mut v);
        let [r, kt] = v;
        // The coefficients are shared by every exp of the body: kept in registers (constants
        // hoisted out of the loops, see `Hoist`) rather than loaded from the pool at each use.
        let p = self.without_pool(|em| {
            em.horner(r, &EXP_POLY)
        });
        let r2 = self.b.ins().fmul(r, r);
        let u = self.mul_add(r2, p, r);
        let kbits = self.bitcast(ti, kt);
        let s = match scale {
            Scale::TwoStep => {
                let magic_bits = self.iconst(ti, (EXP_MAGIC as f32).to_bits() as i64);
                let k = self.b.ins().isub(kbits, magic_bits);
                let k1 = self.b.ins().sshr_imm_u(k, 1);
                let k2 = self.b.ins().isub(k, k1);
                (self.pow2i(k1), Some(self.pow2i(k2)))
            }
            Scale::Shift(_) => {
                // The sum's bits are those of 1.5 * 2^23 plus k + 127 + c; shifted left by 23
                // only k + 127 + c stays, in the exponent field.
                let bits = self.b.ins().ishl_imm_u(kbits, 23);
                (self.bitcast(t, bits), None)
            }
        };
        (s.0, s.1, u)
    }

    /// `min(x, c)` with a NaN `x` kept (`minps`).
    fn clamp_hi(&mut self, x: Value, c: f64) -> Value {
        let t = self.ty_of(x);
        let k = self.fconst(t, c);
        let m = self.b.ins().fcmp(FloatCC::LessThan, k, x);
        self.sel(m, k, x)
    }

    /// `max(x, c)` with a NaN `x` kept (`maxps`).
    fn clamp_lo(&mut self, x: Value, c: f64) -> Value {
        let t = self.ty_of(x);
        let k = self.fconst(t, c);
        let m = self.b.ins().fcmp(FloatCC::LessThan, x, k);
        self.sel(m, k, x)
    }

    /// `a * b + c`, fused where the host has FMA (only inside the approximations).
    fn mul_add(&mut self, a: Value, b: Value, c: Value) -> Value {
        if self.fma {
            self.b.ins().fma(a, b, c)
        } else {
            let m = self.b.ins().fmul(a, b);
            self.b.ins().fadd(m, c)
        }
    }

    /// `a * k + c` for a constant `k`.
    fn mul_addc(&mut self, a: Value, k: f64, c: Value) -> Value {
        let t = self.ty_of(a);
        let kv = self.fconst(t, k);
        self.mul_add(a, kv, c)
    }

    /// `log(x)`: `x = 2^e m` with `m` in `[sqrt(2)/2, sqrt(2)]`, `log(m) = 2 atanh(f / (2 + f))`
    /// summed as an odd series; denormals are scaled by `2^23` first.
    pub fn log_f32(&mut self, x: Value) -> Value {
        let t = self.ty_of(x);
        let ti = t.as_int();
        let small = self.cmpc(FloatCC::LessThan, x, f32::MIN_POSITIVE as f64);
        let scaled = self.mulc(x, 8_388_608.0);
        let xs = self.sel(small, scaled, x);
        let m23 = self.iconst(ti, -23);
        let z0 = self.iconst(ti, 0);
        let ebias = self.sel(small, m23, z0);
        let xi = self.bitcast(ti, xs);
        let ex = self.b.ins().ushr_imm_u(xi, 23);
        let mask = self.iconst(ti, 0xff);
        let ex = self.b.ins().band(ex, mask);
        let b127 = self.iconst(ti, 127);
        let ex = self.b.ins().isub(ex, b127);
        let ex = self.b.ins().iadd(ex, ebias);
        let mant_mask = self.iconst(ti, 0x007f_ffff);
        let one_bits = self.iconst(ti, 0x3f80_0000);
        let mi = self.b.ins().band(xi, mant_mask);
        let mi = self.b.ins().bor(mi, one_bits);
        let m = self.bitcast(t, mi);
        let big = self.cmpc(FloatCC::GreaterThan, m, std::f64::consts::SQRT_2);
        let half_m = self.mulc(m, 0.5);
        let m = self.sel(big, half_m, m);
        let one_i = self.iconst(ti, 1);
        let ex1 = self.b.ins().iadd(ex, one_i);
        let ex = self.sel(big, ex1, ex);
        let f = self.addc(m, -1.0);
        let two_f = self.addc(f, 2.0);
        let s = self.b.ins().fdiv(f, two_f);
        let z = self.b.ins().fmul(s, s);
        let p = self.horner(z, &LOG_POLY);
        let r = self.b.ins().fmul(z, p);
        let ff = self.b.ins().fmul(f, f);
        let hfsq = self.mulc(ff, 0.5);
        let ef = self.b.ins().fcvt_from_sint(t, ex);
        let hr = self.b.ins().fadd(hfsq, r);
        let shr = self.b.ins().fmul(s, hr);
        let elo = self.mulc(ef, -LN2_LO);
        let inner = self.b.ins().fadd(shr, elo);
        let inner = self.b.ins().fsub(hfsq, inner);
        let inner = self.b.ins().fsub(f, inner);
        let ehi = self.mulc(ef, -LN2_HI);
        let y = self.b.ins().fadd(ehi, inner);
        // Special values: +inf → +inf, ±0 → -inf, negative or NaN → NaN.
        let inf = self.fconst(t, f64::INFINITY);
        let ninf = self.fconst(t, f64::NEG_INFINITY);
        let nan = self.fconst(t, f64::NAN);
        let is_inf = self.b.ins().fcmp(FloatCC::Equal, x, inf);
        let y = self.sel(is_inf, inf, y);
        let is_zero = self.cmpc(FloatCC::Equal, x, 0.0);
        let y = self.sel(is_zero, ninf, y);
        let bad = self.cmpc(FloatCC::UnorderedOrLessThan, x, 0.0);
        self.sel(bad, nan, y)
    }

    /// `tanh(x) = -m / (2 + m)` with the sign of `x`, where `m = e^{-2|x|} - 1` is formed
    /// without cancellation as `2^k u + (2^k - 1)` from the parts of `exp` (`u = e^r - 1`);
    /// `-2|x|` is clamped at -40, where `tanh` has long rounded to ±1.
    pub fn tanh_f32(&mut self, x: Value) -> Value {
        let t = self.ty_of(x);
        let na = self.neg_abs(x);
        let y = self.b.ins().fadd(na, na);
        let (m, x) = self.carried(x, |em| {
            // k in [-58, 0]: one shift, one factor.
            let (s, _, u) = em.exp_parts(y, Some(-TANH_EXP_MAX), None, Scale::Shift(0));
            let sm1 = em.addc(s, -1.0);
            let mut m = [em.mul_add(s, u, sm1)];
            em.split(&mut m);
            m[0]
        });
        // tanh(|x|) = m / (-2 - m) >= 0 (or NaN), so or-ing in the sign of x is copysign.
        let m2 = self.fconst(t, -2.0);
        let den = self.b.ins().fsub(m2, m);
        let th = self.b.ins().fdiv(m, den);
        self.or_sign(th, x)
    }

    /// `sigmoid(x) = 1 / (1 + e^{-x})`, computed from `e^{-|x|}` so that no step overflows.
    pub fn sigmoid_f32(&mut self, x: Value) -> Value {
        let (num, den) = self.sigmoid_parts(x);
        self.b.ins().fdiv(num, den)
    }

    fn sigmoid_parts(&mut self, x: Value) -> (Value, Value) {
        let t = self.ty_of(x);
        let na = self.neg_abs(x);
        let (e, x) = self.carried(x, |em| {
            let mut e = [em.exp_nonpositive(na)];
            em.split(&mut e);
            e[0]
        });
        let one = self.fconst(t, 1.0);
        let pos = self.cmpc(FloatCC::GreaterThanOrEqual, x, 0.0);
        let num = self.sel(pos, one, e);
        let den = self.b.ins().fadd(one, e);
        (num, den)
    }

    /// `silu(x) = x sigmoid(x)`. For negative `x` the product `x e^{x}` is formed as
    /// `(x e^{x + 22}) e^{-22}`, so that it rounds once even when the result is denormal.
    pub fn silu_f32(&mut self, x: Value) -> Value {
        let t = self.ty_of(x);
        let a = self.b.ins().fabs(x);
        // Only far in the negative range (where `22 - |x|` is exact) is the scaling used.
        let far = self.cmpc(FloatCC::GreaterThan, a, 80.0);
        let k = self.fconst(t, 22.0);
        let shifted = self.b.ins().fsub(k, a);
        let na = self.b.ins().fneg(a);
        let arg = self.sel(far, shifted, na);
        let es = self.exp_nonpositive(arg);
        let cf = self.fconst(t, (-22.0f64).exp() as f32 as f64);
        let one = self.fconst(t, 1.0);
        let c = self.sel(far, cf, one);
        let e = self.b.ins().fmul(es, c);
        let xs = self.b.ins().fmul(x, es);
        let xs = self.b.ins().fmul(xs, c);
        let pos = self.cmpc(FloatCC::GreaterThanOrEqual, x, 0.0);
        let num = self.sel(pos, x, xs);
        let den = self.addc(e, 1.0);
        self.b.ins().fdiv(num, den)
    }

    /// `erf(x)`: `x P(x^2)` below 0.875, `1 - Q(|x|)` up to 4 (with the sign of `x`), ±1 beyond.
    pub fn erf_f32(&mut self, x: Value) -> Value {
        let t = self.ty_of(x);
        let a = self.b.ins().fabs(x);
        let x2 = self.b.ins().fmul(x, x);
        let s = self.mulc(x2, 2.0 / (ERF_CUT * ERF_CUT));
        let s = self.addc(s, -1.0);
        let p = self.horner(s, &ERF_SMALL);
        let ys = self.b.ins().fmul(x, p);
        let s2 = self.mulc(a, 2.0 / 3.125);
        let s2 = self.addc(s2, -4.875 / 3.125);
        let q = self.horner(s2, &ERFC_BIG);
        let one = self.fconst(t, 1.0);
        let yb = self.b.ins().fsub(one, q);
        let sat = self.cmpc(FloatCC::GreaterThanOrEqual, a, 4.0);
        let yb = self.sel(sat, one, yb);
        let yb = self.copysign(yb, x);
        let small = self.cmpc(FloatCC::LessThan, a, ERF_CUT);
        self.sel(small, ys, yb)
    }

    /// `gelu(x) = 0.5 x (1 + erf(x / sqrt 2))`, in the reference's order of operations.
    pub fn gelu_erf_f32(&mut self, x: Value) -> Value {
        let u = self.mulc(x, std::f32::consts::FRAC_1_SQRT_2 as f64);
        let e = self.erf_f32(u);
        let e1 = self.addc(e, 1.0);
        let hx = self.mulc(x, 0.5);
        self.b.ins().fmul(hx, e1)
    }

    /// `gelu(x, 'tanh') = 0.5 x (1 + tanh(k (x + 0.044715 x^3)))`.
    pub fn gelu_tanh_f32(&mut self, x: Value) -> Value {
        let c = self.mulc(x, 0.044715);
        let c = self.b.ins().fmul(c, x);
        let c = self.b.ins().fmul(c, x);
        let inner = self.b.ins().fadd(x, c);
        let inner = self.mulc(inner, 0.797_884_6_f32 as f64);
        let th = self.tanh_f32(inner);
        let th1 = self.addc(th, 1.0);
        let hx = self.mulc(x, 0.5);
        self.b.ins().fmul(hx, th1)
    }

    /// `sin(x)` or `cos(x)`: reduction by π/2 in f64 (exact for `|x| <= 1e6`), Taylor
    /// polynomials of degree 9/10 on `[-π/4, π/4]`, quadrant selection; larger finite or
    /// infinite arguments call the library function.
    pub fn sincos_f32(&mut self, x: Value, cos: bool) -> Value {
        use cranelift_codegen::ir::types;
        let t = self.ty_of(x);
        let (r, q) = if t.is_vector() {
            let lo = self.b.ins().fvpromote_low(x);
            let xb = self.bitcast(types::I8X16, x);
            let mask = self.b.func.dfg.immediates.push(cranelift_codegen::ir::ConstantData::from(
                [8u8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15].as_ref(),
            ));
            let hi_b = self.b.ins().shuffle(xb, xb, mask);
            let hi_f = self.bitcast(types::F32X4, hi_b);
            let hi = self.b.ins().fvpromote_low(hi_f);
            let (rl, kl) = self.reduce_f64(lo);
            let (rh, kh) = self.reduce_f64(hi);
            let r = self.join_halves(rl, rh);
            let k = self.join_halves(kl, kh);
            (r, k)
        } else {
            let xd = self.b.ins().fpromote(types::F64, x);
            let (r, k) = self.reduce_f64(xd);
            let r = self.b.ins().fdemote(types::F32, r);
            let k = self.b.ins().fdemote(types::F32, k);
            (r, k)
        };
        let ti = t.as_int();
        let qi = self.b.ins().fcvt_to_sint_sat(ti, q);
        let qi = if cos {
            let one = self.iconst(ti, 1);
            self.b.ins().iadd(qi, one)
        } else {
            qi
        };
        let z = self.b.ins().fmul(r, r);
        let sp = self.horner(z, &[-1.0 / 6.0, 1.0 / 120.0, -1.0 / 5040.0, 1.0 / 362_880.0]);
        let rz = self.b.ins().fmul(r, z);
        let sp = self.b.ins().fmul(rz, sp);
        let sinr = self.b.ins().fadd(r, sp);
        let cp = self.horner(z, &[1.0 / 24.0, -1.0 / 720.0, 1.0 / 40_320.0, -1.0 / 3_628_800.0]);
        let zz = self.b.ins().fmul(z, z);
        let cp = self.b.ins().fmul(zz, cp);
        let hz = self.mulc(z, 0.5);
        let one = self.fconst(t, 1.0);
        let c0 = self.b.ins().fsub(one, hz);
        let cosr = self.b.ins().fadd(c0, cp);
        // sin(x) for quadrant q: q&1 swaps to cos, q&2 negates (cos(x) = sin(x + π/2)).
        let one_i = self.iconst(ti, 1);
        let two_i = self.iconst(ti, 2);
        let zero_i = self.iconst(ti, 0);
        let b1 = self.b.ins().band(qi, one_i);
        let swap = self.b.ins().icmp(IntCC::NotEqual, b1, zero_i);
        let b2 = self.b.ins().band(qi, two_i);
        let neg = self.b.ins().icmp(IntCC::NotEqual, b2, zero_i);
        let y = self.sel(swap, cosr, sinr);
        let ny = self.b.ins().fneg(y);
        let y = self.sel(neg, ny, y);
        let y = if cos {
            y
        } else {
            // sin(±0) = ±0.
            let is_zero = self.cmpc(FloatCC::Equal, x, 0.0);
            self.sel(is_zero, x, y)
        };
        // Huge or infinite arguments: the library function, for every lane of the vector.
        let a = self.b.ins().fabs(x);
        let big = self.cmpc(FloatCC::GreaterThan, a, SINCOS_MAX);
        let any = if t.is_vector() { self.b.ins().vany_true(big) } else { big };
        let slow = self.b.create_block();
        let join = self.b.create_block();
        self.b.append_block_param(join, t);
        self.b.ins().brif(any, slow, &[], join, &[y.into()]);
        self.b.switch_to_block(slow);
        let addr = if cos { shims::cos_f32 as *const () as usize } else { shims::sin_f32 as *const () as usize };
        let ys = self.call_lanes(addr, &[x]);
        self.b.ins().jump(join, &[ys.into()]);
        self.b.switch_to_block(join);
        self.b.block_params(join)[0]
    }

    /// Reduces f64 lanes `x` by π/2: `(r, k)` with `x = k π/2 + r`.
    fn reduce_f64(&mut self, x: Value) -> (Value, Value) {
        let k = self.mulc(x, std::f64::consts::FRAC_2_PI);
        let k = self.b.ins().nearest(k);
        let a = self.mulc(k, PIO2_HI);
        let r = self.b.ins().fsub(x, a);
        let b = self.mulc(k, PIO2_LO);
        let r = self.b.ins().fsub(r, b);
        (r, k)
    }

    /// Two `f64x2` halves demoted into one `f32x4` (low lanes from `lo`).
    fn join_halves(&mut self, lo: Value, hi: Value) -> Value {
        use cranelift_codegen::ir::types;
        let l = self.b.ins().fvdemote(lo);
        let h = self.b.ins().fvdemote(hi);
        let lb = self.bitcast(types::I8X16, l);
        let hb = self.bitcast(types::I8X16, h);
        let mask = self.b.func.dfg.immediates.push(cranelift_codegen::ir::ConstantData::from(
            [0u8, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23].as_ref(),
        ));
        let j = self.b.ins().shuffle(lb, hb, mask);
        self.bitcast(types::F32X4, j)
    }
}
