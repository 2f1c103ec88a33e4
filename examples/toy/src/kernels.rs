//! Toy's interpreter kernel: `toy.print` runs directly, with no lowering, through a kernel
//! registered in the tool's kernel registry.

use runtime::{IValue, KernelError, KernelRegistry};

// [doc:kernel]
/// Prints its operand on standard output: `toy.print f64[2, 2] [1, 2, 3, 4]`.
fn k_print(args: &[IValue]) -> Result<Vec<IValue>, KernelError> {
    let t = args
        .first()
        .and_then(|a| a.as_tensor().ok())
        .ok_or_else(|| KernelError::new(crate::ops::PRINT.name(), "expected a tensor operand".to_string()))?;
    let values: Vec<String> = t.to_vec_f64().iter().map(|v| v.to_string()).collect();
    println!("{} {}{:?} [{}]", crate::ops::PRINT.name(), t.dtype(), t.sizes(), values.join(", "));
    Ok(Vec::new())
}

/// Registers toy's kernels.
pub fn register(r: &mut KernelRegistry) {
    r.register(crate::ops::PRINT, k_print);
}
// [/doc:kernel]
