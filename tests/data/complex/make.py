"""Writes cases.json and io.safetensors: PyTorch 2.15's results for complex tensors: the views
and conversions (`view_as_real`/`view_as_complex`, `real`, `imag`, `conj`, `complex`, `polar`,
`angle`, `abs`, casts), complex arithmetic with broadcasting and real operands, the transform
kernels `_fft_r2c`/`_fft_c2r`/`_fft_c2c`, every `torch.fft` op (each norm mode, `n`/`s`/`dim`
given or not, odd and even sizes, crops and zero-pads, empty batches), `fftshift`/`ifftshift`,
`stft`/`istft` with typical audio settings, and calls PyTorch refuses (complex input to ops that
have no complex form, invalid sizes). safetensors has no complex128 dtype: such tensors are
stored as `view_as_real` and listed in the case (`c128_in`, `c128_out` by index).
Run with PyTorch 2.15: python make.py"""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_cases import Cases  # noqa: E402

torch.manual_seed(0)
CASES = Cases()
aten = torch.ops.aten


def store(ts):
    """Tensors as stored, and the indices of the complex128 ones (stored as their real view)."""
    out, idx = [], []
    for i, t in enumerate(ts):
        if isinstance(t, (list, tuple)):
            out.append([u.resolve_conj() for u in t])
            continue
        if t.dtype == torch.complex128:
            idx.append(i)
            out.append(torch.view_as_real(t.resolve_conj()))
        else:
            out.append(t.resolve_conj() if t.is_complex() else t)
    return out, idx


def case(name, op, inputs, fn):
    ins, c128_in = store(inputs)
    extra = {"c128_in": c128_in} if c128_in else {}
    try:
        out = fn()
    except (RuntimeError, TypeError, ValueError, IndexError):
        CASES.add(name, op, ins, error=True, **extra)
        return
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    outs, c128_out = store(outs)
    if c128_out:
        extra["c128_out"] = c128_out
    CASES.add(name, op, ins, outs, **extra)


def opt(v):
    if v is None:
        return "#prim.none"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(str(x) for x in v) + "]"
    return f"{v} : i64"


def attrs(**kw):
    return " {" + ", ".join(f"{k} = {opt(v)}" for k, v in kw.items()) + "}" if kw else ""


def cplx(*shape, dtype=torch.complex64):
    return torch.randn(*shape, dtype=dtype)


# ----- views, conversions, arithmetic -----
Z = cplx(3, 4)
Z2 = cplx(3, 4)
ZD = cplx(2, 3, dtype=torch.complex128)
R = torch.randn(3, 4)
case("view_as_real", "aten.view_as_real", [Z], lambda: aten.view_as_real(Z))
case("view_as_real_c128", "aten.view_as_real", [ZD], lambda: aten.view_as_real(ZD))
RP = torch.randn(3, 5, 2)
case("view_as_complex", "aten.view_as_complex", [RP], lambda: aten.view_as_complex(RP))
case("view_as_complex_f64", "aten.view_as_complex", [RP.double()], lambda: aten.view_as_complex(RP.double()))
case("view_as_complex_bad_last", "aten.view_as_complex", [R], lambda: aten.view_as_complex(R))
case("view_as_real_of_real", "aten.view_as_real", [R], lambda: aten.view_as_real(R))
case("real", "aten.real", [Z], lambda: aten.real(Z))
case("imag", "aten.imag", [Z], lambda: aten.imag(Z))
case("real_of_real", "aten.real", [R], lambda: aten.real(R))
case("imag_of_real", "aten.imag", [R], lambda: aten.imag(R))
case("conj", "aten.conj", [Z], lambda: aten.conj(Z).resolve_conj())
case("_conj", "aten._conj", [ZD], lambda: aten._conj(ZD).resolve_conj())
case("resolve_conj", "aten.resolve_conj", [Z], lambda: aten.resolve_conj(Z))
case("conj_physical", "aten.conj_physical", [Z], lambda: aten.conj_physical(Z))
IM, ANG, RB = torch.randn(4), torch.randn(3, 4), torch.randn(4)
case("complex", "aten.complex", [R, IM], lambda: aten.complex(R, IM))
case("polar", "aten.polar", [R.abs(), ANG], lambda: aten.polar(R.abs(), ANG))
case("complex_mixed", "aten.complex", [R, IM.double()], lambda: aten.complex(R, IM.double()))
case("abs", "aten.abs", [Z], lambda: aten.abs(Z))
case("abs_c128", "aten.abs", [ZD], lambda: aten.abs(ZD))
case("angle", "aten.angle", [Z], lambda: aten.angle(Z))
case("angle_real", "aten.angle", [torch.tensor([-1.5, 0.0, 2.0, float("nan")])], lambda: aten.angle(torch.tensor([-1.5, 0.0, 2.0, float("nan")])))
case("add", "aten.add.Tensor", [Z, Z2], lambda: aten.add.Tensor(Z, Z2))
case("add_alpha", "aten.add.Tensor {alpha = 2 : i64}", [Z, Z2], lambda: aten.add.Tensor(Z, Z2, alpha=2))
case("sub_real_broadcast", "aten.sub.Tensor", [Z, RB], lambda: aten.sub.Tensor(Z, RB))
case("mul", "aten.mul.Tensor", [Z, Z2], lambda: aten.mul.Tensor(Z, Z2))
case("mul_real", "aten.mul.Tensor", [R, Z], lambda: aten.mul.Tensor(R, Z))
case("mul_f64_c64", "aten.mul.Tensor", [R.double(), Z], lambda: aten.mul.Tensor(R.double(), Z))
case("div", "aten.div.Tensor", [Z, Z2], lambda: aten.div.Tensor(Z, Z2))
case("div_c128", "aten.div.Tensor", [ZD, ZD.flip(0)], lambda: aten.div.Tensor(ZD, ZD.flip(0)))
case("mul_scalar", "aten.mul.Scalar {other = 2.5 : f64}", [Z], lambda: aten.mul.Scalar(Z, 2.5))
case("neg", "aten.neg", [Z], lambda: aten.neg(Z))
case("to_complex", "aten._to_copy {dtype = #prim.dtype<complex<f32>>}", [R], lambda: aten._to_copy(R, dtype=torch.complex64))
case("to_real", "aten._to_copy {dtype = #prim.dtype<f32>}", [Z], lambda: aten._to_copy(Z, dtype=torch.float32))
case("to_c128", "aten._to_copy {dtype = #prim.dtype<complex<f64>>}", [Z], lambda: aten._to_copy(Z, dtype=torch.complex128))
case("cat", "aten.cat {dim = 1 : i64}", [[Z, Z2]], lambda: aten.cat([Z, Z2], 1))
case("permute_clone", "aten.permute {dims = [1, 0]}", [Z], lambda: aten.permute(Z, [1, 0]))
case("slice", "aten.slice.Tensor {dim = 1 : i64, start = 1 : i64, end = 4 : i64, step = 2 : i64}", [Z], lambda: aten.slice.Tensor(Z, 1, 1, 4, 2))
case("clone", "aten.clone", [Z], lambda: aten.clone(Z))
case("roll", "aten.roll {shifts = [1], dims = [1]}", [Z], lambda: aten.roll(Z, [1], [1]))
# Ops PyTorch refuses on complex input.
case("floor_complex", "aten.floor", [Z], lambda: aten.floor(Z))
case("maximum_complex", "aten.maximum", [Z, Z2], lambda: aten.maximum(Z, Z2))
case("lt_complex", "aten.lt.Tensor", [Z, Z2], lambda: aten.lt.Tensor(Z, Z2))
case("clamp_complex", "aten.clamp {min = 0.0 : f64}", [Z], lambda: aten.clamp(Z, 0.0))

# ----- transform kernels -----
X8 = torch.randn(2, 8)
X7 = torch.randn(7, 3)
for norm in [0, 1, 2]:
    case(f"r2c_{norm}", f"aten._fft_r2c {{dim = [1], normalization = {norm} : i64, onesided = true}}", [X8],
         lambda: aten._fft_r2c(X8, [1], norm, True))
    case(f"r2c_twosided_{norm}", f"aten._fft_r2c {{dim = [0, 1], normalization = {norm} : i64, onesided = false}}", [X7],
         lambda: aten._fft_r2c(X7, [0, 1], norm, False))
    C5 = cplx(3, 5)
    case(f"c2r_{norm}", f"aten._fft_c2r {{dim = [1], normalization = {norm} : i64, last_dim_size = 8 : i64}}", [C5],
         lambda: aten._fft_c2r(C5, [1], norm, 8))
    case(f"c2r_odd_{norm}", f"aten._fft_c2r {{dim = [0, 1], normalization = {norm} : i64, last_dim_size = 9 : i64}}", [C5],
         lambda: aten._fft_c2r(C5, [0, 1], norm, 9))
    for fwd in [True, False]:
        C = cplx(4, 6)
        case(f"c2c_{norm}_{fwd}", f"aten._fft_c2c {{dim = [0, 1], normalization = {norm} : i64, forward = {opt(fwd)}}}", [C],
             lambda: aten._fft_c2c(C, [0, 1], norm, fwd))
CD = cplx(5, 3, dtype=torch.complex128)
case("c2c_c128", "aten._fft_c2c {dim = [0], normalization = 0 : i64, forward = true}", [CD], lambda: aten._fft_c2c(CD, [0], 0, True))

# ----- torch.fft, one-dimensional -----
ONE = ["fft_fft", "fft_ifft", "fft_rfft", "fft_irfft", "fft_hfft", "fft_ihfft"]
REAL_IN = {"fft_rfft", "fft_ihfft"}
for name in ONE:
    f = getattr(aten, name)
    for norm in [None, "backward", "forward", "ortho"]:
        for n in [None, 5, 10]:
            for dim in [-1, 0]:
                x = torch.randn(6, 4) if name in REAL_IN else cplx(6, 4)
                tag = f"{name}_{norm}_{n}_{dim}"
                case(tag, f"aten.{name}" + attrs(n=n, dim=dim, norm=norm), [x], lambda: f(x, n, dim, norm))
    xr = torch.randn(9)
    case(f"{name}_real_odd", f"aten.{name}", [xr], lambda: f(xr))
    x64 = torch.randn(4, 6, dtype=torch.float64)
    case(f"{name}_f64", f"aten.{name}" + attrs(n=None, dim=1), [x64], lambda: f(x64, None, 1))
    xi = torch.arange(8)
    case(f"{name}_int", f"aten.{name}", [xi], lambda: f(xi))
    xz = torch.randn(0, 4) if name in REAL_IN else cplx(0, 4)
    case(f"{name}_empty_batch", f"aten.{name}", [xz], lambda: f(xz))
    xe = torch.randn(4, 0) if name in REAL_IN else cplx(4, 0)
    case(f"{name}_empty_signal", f"aten.{name}", [xe], lambda: f(xe))
    x = torch.randn(5) if name in REAL_IN else cplx(5)
    case(f"{name}_n0", f"aten.{name}" + attrs(n=0), [x], lambda: f(x, 0))
    case(f"{name}_bad_norm", f"aten.{name}" + attrs(n=None, dim=-1, norm="sideways"), [x], lambda: f(x, None, -1, "sideways"))
    xh = torch.randn(8).half()
    case(f"{name}_half", f"aten.{name}", [xh], lambda: f(xh))
case("rfft_complex", "aten.fft_rfft", [cplx(4)], lambda: aten.fft_rfft(cplx(4)))

# ----- torch.fft, n-dimensional -----
ND = ["fft_fftn", "fft_ifftn", "fft_rfftn", "fft_irfftn", "fft_hfftn", "fft_ihfftn"]
for name in ND + [n[:-1] + "2" for n in ND]:
    f = getattr(aten, name)
    two = name.endswith("2")
    real_in = name.endswith(("rfftn", "rfft2")) and not name.endswith(("irfftn", "irfft2")) or "ihfft" in name
    for norm in [None, "forward", "ortho"]:
        for s, dim in [(None, None), ([4, 5], None), (None, [0, 2]), ([3, -1], [2, 0]), ([6], [1])]:
            if two and dim is None:
                dim = [-2, -1]
            x = torch.randn(3, 4, 6) if real_in else cplx(3, 4, 6)
            tag = f"{name}_{norm}_{s}_{dim}"
            case(tag, f"aten.{name}" + attrs(s=s, dim=dim, norm=norm), [x], lambda: f(x, s, dim, norm))
    x = torch.randn(3, 4) if real_in else cplx(3, 4)
    case(f"{name}_shape_dim_mismatch", f"aten.{name}" + attrs(s=[2, 2], dim=[0]), [x], lambda: f(x, [2, 2], [0]))
    case(f"{name}_repeated_dim", f"aten.{name}" + attrs(s=None, dim=[0, 0]), [x], lambda: f(x, None, [0, 0]))

for name in ["fft_fftshift", "fft_ifftshift"]:
    f = getattr(aten, name)
    for dim in [None, [1], [0, 1]]:
        for shape in [(4, 6), (5, 7)]:
            x = cplx(*shape)
            case(f"{name}_{dim}_{shape[0]}", f"aten.{name}" + attrs(dim=dim), [x], lambda: f(x, dim))
    xr = torch.randn(3, 5)
    case(f"{name}_real", f"aten.{name}", [xr], lambda: f(xr))

# ----- stft / istft -----
SIG = torch.randn(400)
SIG2 = torch.randn(2, 300)
HANN = torch.hann_window(64)
HANN48 = torch.hann_window(48)
HAMM = torch.hamming_window(32, dtype=torch.float64)
SC = "aten.stft.center"


def stft_case(name, x, n_fft, hop=None, win=None, window=None, center=True, pad_mode="reflect", normalized=False,
              onesided=None, return_complex=True):
    ins = [x] + ([window] if window is not None else [])
    a = attrs(n_fft=n_fft, hop_length=hop, win_length=win) [:-1]
    tail = attrs(center=center, pad_mode=pad_mode, normalized=normalized, onesided=onesided, return_complex=return_complex)[2:]
    if window is None:
        a += ", window = #prim.none"
    op = SC + a + ", " + tail
    case(name, op, ins, lambda: aten.stft.center(x, n_fft, hop, win, window, center, pad_mode, normalized, onesided, return_complex))


stft_case("stft_hann", SIG, 64, 16, None, HANN)
stft_case("stft_normalized", SIG, 64, 16, 64, HANN, normalized=True)
stft_case("stft_not_centered", SIG, 64, 32, None, HANN, center=False)
stft_case("stft_short_window", SIG, 64, 16, 48, HANN48)
stft_case("stft_batch_constant_pad", SIG2, 50, 12, None, torch.hann_window(50), pad_mode="constant")
stft_case("stft_two_sided", SIG, 32, 8, None, torch.hann_window(32), onesided=False)
stft_case("stft_real_view", SIG, 32, 8, None, torch.hann_window(32), return_complex=False)
stft_case("stft_no_window", SIG, 40, 10)
stft_case("stft_f64", SIG.double(), 32, 8, None, HAMM)
stft_case("stft_replicate", SIG, 32, 8, None, torch.hann_window(32), pad_mode="replicate")
stft_case("stft_circular", SIG, 32, 8, None, torch.hann_window(32), pad_mode="circular")
stft_case("stft_needs_return_complex", SIG, 32, 8, None, torch.hann_window(32), return_complex=None)
stft_case("stft_n_fft_too_big", SIG[:20], 64, 16, None, HANN, center=False)
stft_case("stft_window_size", SIG, 64, 16, None, HANN48)
x = SIG
case("stft_plain", "aten.stft {n_fft = 64 : i64, hop_length = 16 : i64, win_length = #prim.none, normalized = false, onesided = #prim.none, return_complex = true}",
     [x, HANN], lambda: aten.stft(x, 64, 16, None, HANN, False, None, True))


def istft_case(name, spec, n_fft, hop=None, win=None, window=None, center=True, normalized=False, onesided=None,
               length=None, return_complex=False):
    ins = [spec] + ([window] if window is not None else [])
    a = attrs(n_fft=n_fft, hop_length=hop, win_length=win)[:-1]
    if window is None:
        a += ", window = #prim.none"
    tail = attrs(center=center, normalized=normalized, onesided=onesided, length=length, return_complex=return_complex)[2:]
    case(name, "aten.istft" + a + ", " + tail, ins,
         lambda: aten.istft(spec, n_fft, hop, win, window, center, normalized, onesided, length, return_complex))


S1 = torch.stft(SIG, 64, 16, window=HANN, return_complex=True)
istft_case("istft_hann", S1, 64, 16, None, HANN)
istft_case("istft_length_short", S1, 64, 16, None, HANN, length=350)
istft_case("istft_length_long", S1, 64, 16, None, HANN, length=420)
SN = torch.stft(SIG, 64, 16, window=HANN, normalized=True, return_complex=True)
istft_case("istft_normalized", SN, 64, 16, None, HANN, normalized=True)
SB = torch.stft(SIG2, 50, 12, window=torch.hann_window(50), return_complex=True)
istft_case("istft_batch", SB, 50, 12, None, torch.hann_window(50), length=300)
S2 = torch.stft(SIG, 32, 8, window=torch.hann_window(32), onesided=False, return_complex=True)
istft_case("istft_two_sided", S2, 32, 8, None, torch.hann_window(32), onesided=False)
istft_case("istft_two_sided_complex", S2, 32, 8, None, torch.hann_window(32), onesided=False, return_complex=True)
SW = torch.stft(SIG, 64, 16, 48, window=HANN48, return_complex=True)
istft_case("istft_short_window", SW, 64, 16, 48, HANN48)
SR = torch.stft(SIG, 32, 8, return_complex=True, center=False)
istft_case("istft_not_centered_rect", SR, 32, 8, None, None, center=False)
SH = torch.stft(SIG, 64, 16, window=HANN, center=False, return_complex=True)
istft_case("istft_not_centered_hann", SH, 64, 16, None, HANN, center=False)
istft_case("istft_real_input", torch.randn(33, 10), 64, 16, None, HANN)
istft_case("istft_wrong_freqs", S1[:30], 64, 16, None, HANN)

# ----- eigenvalues (compared after sorting by real, then imaginary part: "sorted") -----
def sort_c(w):
    order = sorted(range(w.shape[-1]), key=lambda i: (round(float(w[..., i].real), 6), float(w[..., i].imag)))
    return w[..., order]


def eig_case(name, a):
    ins, _ = store([a])
    try:
        w = torch.linalg.eigvals(a)
    except RuntimeError:
        CASES.add(name, "aten.linalg_eigvals", ins, error=True)
        return
    if w.dim() == 1:
        w = sort_c(w)
    else:
        w = torch.stack([sort_c(r) for r in w.reshape(-1, w.shape[-1])]).reshape(w.shape)
    outs, c128 = store([w])
    extra = {"sorted": True}
    if c128:
        extra["c128_out"] = c128
    CASES.add(name, "aten.linalg_eigvals", ins, outs, **extra)


for n in [1, 2, 3, 5, 8, 12]:
    eig_case(f"eigvals_{n}", torch.randn(n, n))
    eig_case(f"eigvals_f64_{n}", torch.randn(n, n, dtype=torch.float64))
eig_case("eigvals_batch", torch.randn(2, 3, 4, 4))
eig_case("eigvals_symmetric", (lambda m: m + m.T)(torch.randn(6, 6)))
eig_case("eigvals_rotation", torch.tensor([[0.0, -1.0], [1.0, 0.0]]))
eig_case("eigvals_triangular", torch.triu(torch.randn(5, 5)))
eig_case("eigvals_not_square", torch.randn(3, 4))
eig_case("eigvals_int", torch.ones(3, 3, dtype=torch.int64))

CASES.save()
