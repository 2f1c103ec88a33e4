//! Loading and saving tensors in safetensors files.

use std::path::Path;

use ir::DType;
use safetensors::tensor::{Dtype as StDtype, TensorView};

use crate::tensor::{KernelError, Result, Tensor};

/// The `DType` of a safetensors dtype, or an error naming unsupported ones.
pub fn dtype_from_safetensors(d: StDtype) -> Result<DType> {
    Ok(match d {
        StDtype::BOOL => DType::Bool,
        StDtype::U8 => DType::U8,
        StDtype::I8 => DType::I8,
        StDtype::I16 => DType::I16,
        StDtype::I32 => DType::I32,
        StDtype::I64 => DType::I64,
        StDtype::F16 => DType::F16,
        StDtype::BF16 => DType::BF16,
        StDtype::F32 => DType::F32,
        StDtype::F64 => DType::F64,
        StDtype::C64 => DType::C64,
        other => {
            return Err(KernelError::new("safetensors", format!("unsupported safetensors dtype {other:?}")));
        }
    })
}

/// The safetensors dtype of a `DType`; the format has no `complex128`.
pub fn dtype_to_safetensors(d: DType) -> Result<StDtype> {
    Ok(match d {
        DType::Bool => StDtype::BOOL,
        DType::U8 => StDtype::U8,
        DType::I8 => StDtype::I8,
        DType::I16 => StDtype::I16,
        DType::I32 => StDtype::I32,
        DType::I64 => StDtype::I64,
        DType::F16 => StDtype::F16,
        DType::BF16 => StDtype::BF16,
        DType::F32 => StDtype::F32,
        DType::F64 => StDtype::F64,
        DType::C64 => StDtype::C64,
        DType::C128 => {
            return Err(KernelError::new("safetensors", "the safetensors format has no complex128 dtype"));
        }
    })
}

/// Parses a safetensors buffer into named tensors, in the file's order of data offsets.
pub fn load_safetensors_bytes(bytes: &[u8]) -> Result<Vec<(String, Tensor)>> {
    let st = safetensors::SafeTensors::deserialize(bytes)
        .map_err(|e| KernelError::new("safetensors", format!("invalid safetensors data: {e}")))?;
    let mut items: Vec<(String, TensorView)> = st.tensors();
    items.sort_by_key(|(_, v)| v.data().as_ptr() as usize);
    items
        .into_iter()
        .map(|(name, view)| {
            let dtype = dtype_from_safetensors(view.dtype())
                .map_err(|e| KernelError::new("safetensors", format!("tensor '{name}': {}", e.message)))?;
            let t = Tensor::from_bytes(dtype, view.shape(), view.data())
                .map_err(|e| KernelError::new("safetensors", format!("tensor '{name}': {}", e.message)))?;
            Ok((name, t))
        })
        .collect()
}

/// Loads every tensor of a safetensors file.
pub fn load_safetensors(path: impl AsRef<Path>) -> Result<Vec<(String, Tensor)>> {
    let path = path.as_ref();
    let bytes = std::fs::read(path)
        .map_err(|e| KernelError::new("safetensors", format!("cannot read {}: {e}", path.display())))?;
    load_safetensors_bytes(&bytes)
}

/// Serializes named tensors to safetensors bytes (tensors are written contiguously).
pub fn save_safetensors_bytes(tensors: &[(String, Tensor)]) -> Result<Vec<u8>> {
    let mut data = Vec::with_capacity(tensors.len());
    for (name, t) in tensors {
        data.push((name.clone(), t.dtype(), t.sizes().to_vec(), t.to_bytes()?));
    }
    let views: Vec<(String, TensorView)> = data
        .iter()
        .map(|(name, d, shape, bytes)| {
            TensorView::new(dtype_to_safetensors(*d)?, shape.clone(), bytes)
                .map(|v| (name.clone(), v))
                .map_err(|e| KernelError::new("safetensors", format!("tensor '{name}': {e}")))
        })
        .collect::<Result<_>>()?;
    safetensors::serialize(views, None).map_err(|e| KernelError::new("safetensors", format!("cannot serialize: {e}")))
}

/// Saves named tensors to a safetensors file.
pub fn save_safetensors(path: impl AsRef<Path>, tensors: &[(String, Tensor)]) -> Result<()> {
    let path = path.as_ref();
    let bytes = save_safetensors_bytes(tensors)?;
    outfile::write(path, &bytes).map_err(|e| KernelError::new("safetensors", e.to_string()))
}
