//! Result types of the ops whose dtype changes between real and complex: `abs`/`angle` of
//! complex tensors (their real part type), `real`/`imag`, `view_as_real`/`view_as_complex`,
//! `complex`/`polar`, and the transform kernels `_fft_c2c`, `_fft_r2c`, `_fft_c2r`.

use super::*;

/// The result types of `this` if it is one of these ops (`None` otherwise, for the other rules).
pub(super) fn infer(this: OpRef, a: &Args) -> Option<Result<Option<Vec<Type>>, String>> {
    let s = self_or(a);
    let sshape = s.as_ref().and_then(|t| t.shape.clone());
    let sdtype = s.as_ref().and_then(|t| t.dtype);
    let real = |d: Option<DType>| d.map(DType::to_real);
    Some(match this {
        op::ABS | op::REAL | op::IMAG if sdtype.is_some_and(DType::is_complex) => one(tensor(real(sdtype), sshape)),
        op::ANGLE => one(tensor(sdtype.map(|d| if d.is_complex() { d.to_real() } else { float_result(d) }), sshape)),
        op::VIEW_AS_REAL | op::VIEW_AS_REAL_COPY => {
            let shape = sshape.map(|mut v| {
                v.push(Dim::Static(2));
                v
            });
            one(tensor(real(sdtype), shape))
        }
        op::VIEW_AS_COMPLEX | op::VIEW_AS_COMPLEX_COPY => {
            let shape = sshape.and_then(|v| v.split_last().map(|(_, rest)| rest.to_vec()));
            one(tensor(sdtype.and_then(DType::to_complex), shape))
        }
        op::COMPLEX | op::POLAR => {
            let (d, shape) = match elementwise(a, &[a_name(this, 0), a_name(this, 1)], &Ranges::default()) {
                Ok(v) => v,
                Err(e) => return Some(Err(e)),
            };
            one(tensor(d.and_then(DType::to_complex), shape))
        }
        op::_FFT_C2C => one(tensor(sdtype, sshape)),
        op::_FFT_R2C => {
            let onesided = a.bool("onesided");
            let dims = a.ints("dim");
            let shape = match (sshape, onesided, dims) {
                (Some(mut v), Some(true), Some(dims)) => match dims.last().and_then(|&d| norm_dim(d, v.len())) {
                    Some(d) => {
                        v[d] = match &v[d] {
                            Dim::Static(n) => Dim::Static(n / 2 + 1),
                            _ => Dim::Unknown,
                        };
                        Some(v)
                    }
                    None => None,
                },
                (v, Some(false), _) => v,
                _ => None,
            };
            one(tensor(sdtype.and_then(DType::to_complex), shape))
        }
        op::_FFT_C2R => {
            let size = a.int("last_dim_size");
            let dims = a.ints("dim");
            let shape = match (sshape, dims) {
                (Some(mut v), Some(dims)) => match dims.last().and_then(|&d| norm_dim(d, v.len())) {
                    Some(d) => {
                        v[d] = size.map_or(Dim::Unknown, Dim::Static);
                        Some(v)
                    }
                    None => None,
                },
                _ => None,
            };
            one(tensor(real(sdtype), shape))
        }
        _ => return None,
    })
}

/// The tensor argument names of `complex(real, imag)` and `polar(abs, angle)`.
fn a_name(this: OpRef, i: usize) -> &'static str {
    match (this == op::COMPLEX, i) {
        (true, 0) => "real",
        (true, _) => "imag",
        (false, 0) => "abs",
        (false, _) => "angle",
    }
}
