//! Element types of tensors, with PyTorch's names, MLIR spellings and promotion order.

use std::fmt;

/// The element type of a tensor: the PyTorch scalar types this framework supports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    Bool,
    U8,
    I8,
    I16,
    I32,
    I64,
    F16,
    BF16,
    F32,
    F64,
    /// `torch.complex64`: pairs of `f32` (real, imaginary), MLIR `complex<f32>`.
    C64,
    /// `torch.complex128`: pairs of `f64`, MLIR `complex<f64>`.
    C128,
}

/// The category of a dtype in PyTorch's type-promotion lattice
/// (bool < integral < floating < complex).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum DTypeCategory {
    Bool,
    Integral,
    Floating,
    Complex,
}

impl DType {
    pub const ALL: [DType; 12] = [
        DType::Bool,
        DType::U8,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
        DType::C64,
        DType::C128,
    ];

    /// Size of one element in bytes.
    pub fn size_bytes(self) -> usize {
        match self {
            DType::Bool | DType::U8 | DType::I8 => 1,
            DType::I16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::F32 => 4,
            DType::I64 | DType::F64 | DType::C64 => 8,
            DType::C128 => 16,
        }
    }

    pub fn category(self) -> DTypeCategory {
        match self {
            DType::Bool => DTypeCategory::Bool,
            DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64 => DTypeCategory::Integral,
            DType::F16 | DType::BF16 | DType::F32 | DType::F64 => DTypeCategory::Floating,
            DType::C64 | DType::C128 => DTypeCategory::Complex,
        }
    }

    pub fn is_complex(self) -> bool {
        self.category() == DTypeCategory::Complex
    }

    /// The real dtype of a complex one's parts (`complex64` → `float32`); other dtypes are
    /// their own.
    pub fn to_real(self) -> DType {
        match self {
            DType::C64 => DType::F32,
            DType::C128 => DType::F64,
            d => d,
        }
    }

    /// The complex dtype whose parts are this floating dtype (`float64` → `complex128`), as
    /// PyTorch's `toComplexType`; `None` for dtypes that have none here (integers, bool,
    /// `float16`/`bfloat16`, whose `complex32` this framework does not have).
    pub fn to_complex(self) -> Option<DType> {
        match self {
            DType::F32 | DType::C64 => Some(DType::C64),
            DType::F64 | DType::C128 => Some(DType::C128),
            _ => None,
        }
    }

    pub fn is_floating(self) -> bool {
        self.category() == DTypeCategory::Floating
    }

    pub fn is_integral(self) -> bool {
        self.category() == DTypeCategory::Integral
    }

    /// The spelling used in the text format (MLIR builtin element types).
    pub fn mlir_name(self) -> &'static str {
        match self {
            DType::Bool => "i1",
            DType::U8 => "ui8",
            DType::I8 => "i8",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::C64 => "complex<f32>",
            DType::C128 => "complex<f64>",
        }
    }

    pub fn from_mlir_name(s: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.mlir_name() == s)
    }

    /// PyTorch's name, as in `torch.float32`.
    pub fn torch_name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "uint8",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::C64 => "complex64",
            DType::C128 => "complex128",
        }
    }

    /// Parses PyTorch's names and their aliases (`float`, `long`, `half`, …).
    pub fn from_torch_name(s: &str) -> Option<DType> {
        let s = s.strip_prefix("torch.").unwrap_or(s);
        Some(match s {
            "bool" => DType::Bool,
            "uint8" => DType::U8,
            "int8" => DType::I8,
            "int16" | "short" => DType::I16,
            "int32" | "int" => DType::I32,
            "int64" | "long" => DType::I64,
            "float16" | "half" => DType::F16,
            "bfloat16" => DType::BF16,
            "float32" | "float" => DType::F32,
            "float64" | "double" => DType::F64,
            "complex64" | "cfloat" => DType::C64,
            "complex128" | "cdouble" => DType::C128,
            _ => return None,
        })
    }

    /// PyTorch's `ScalarType` enum code (also used by `torch.export`'s serializer for some fields).
    pub fn scalar_type_code(self) -> i64 {
        match self {
            DType::U8 => 0,
            DType::I8 => 1,
            DType::I16 => 2,
            DType::I32 => 3,
            DType::I64 => 4,
            DType::F16 => 5,
            DType::F32 => 6,
            DType::F64 => 7,
            DType::Bool => 11,
            DType::C64 => 9,
            DType::C128 => 10,
            DType::BF16 => 15,
        }
    }

    pub fn from_scalar_type_code(code: i64) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.scalar_type_code() == code)
    }

    /// The result dtype of combining two tensor dtypes of equal standing
    /// (`torch.promote_types`).
    pub fn promote(a: DType, b: DType) -> DType {
        use DType::*;
        if a == b {
            return a;
        }
        match (a, b) {
            (Bool, x) | (x, Bool) => x,
            (F16, BF16) | (BF16, F16) => F32,
            (C128, _) | (_, C128) => C128,
            // complex64 with float64 widens the parts (`torch.promote_types` gives complex128).
            (C64, F64) | (F64, C64) => C128,
            (C64, _) | (_, C64) => C64,
            (x, y) if x.is_floating() && y.is_floating() => {
                if x.size_bytes() >= y.size_bytes() { x } else { y }
            }
            (x, _) if x.is_floating() => x,
            (_, y) if y.is_floating() => y,
            // Both integral. uint8 with a signed type promotes to a signed type wide enough.
            (U8, I8) | (I8, U8) => I16,
            (U8, y) => y,
            (x, U8) => x,
            (x, y) => {
                if x.size_bytes() >= y.size_bytes() { x } else { y }
            }
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mlir_name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn promotion_follows_pytorch() {
        use DType::*;
        assert_eq!(DType::promote(I64, F32), F32);
        assert_eq!(DType::promote(U8, I8), I16);
        assert_eq!(DType::promote(Bool, I32), I32);
        assert_eq!(DType::promote(F16, BF16), F32);
        assert_eq!(DType::promote(I32, I64), I64);
        assert_eq!(DType::promote(F64, F16), F64);
        assert_eq!(DType::promote(C64, F32), C64);
        assert_eq!(DType::promote(C64, F64), C128);
        assert_eq!(DType::promote(I64, C64), C64);
        assert_eq!(DType::promote(C64, C128), C128);
    }

    #[test]
    fn names_round_trip() {
        for d in DType::ALL {
            assert_eq!(DType::from_mlir_name(d.mlir_name()), Some(d));
            assert_eq!(DType::from_torch_name(d.torch_name()), Some(d));
            assert_eq!(DType::from_scalar_type_code(d.scalar_type_code()), Some(d));
        }
    }
}
