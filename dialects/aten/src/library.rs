//! Op libraries: operators of other namespaces (`torch.library` custom ops such as
//! `mylib::scaled_add`) declared from their schema strings, as the aten dialect declares ATen.
//!
//! A library file holds one schema per line in PyTorch's syntax (`#` comments and blank lines
//! are skipped): `mylib::scaled_add(Tensor x, Tensor y, float alpha) -> Tensor`. Each
//! namespace becomes a dialect and each schema an op (`mylib.scaled_add`) with the same
//! signature, alias annotations, traits and verifier as an ATen op; importers then accept
//! `torch.ops.mylib.scaled_add.default`. Running such an op needs a kernel or a decomposition
//! that the embedder registers.

use ir::Context;
use ir::schema::{parse_schema, registry_lines};

/// A line of a library that cannot be declared.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}:{line}: {message}")]
pub struct LibraryError {
    /// The library's name in messages (its path).
    pub source_name: String,
    /// The 1-based line.
    pub line: usize,
    pub message: String,
}

/// Declares every schema of `text` (named `source_name` in errors) in `ctx`; returns the op
/// names declared. Nothing is declared when a line fails.
pub fn register_library(ctx: &mut Context, text: &str, source_name: &str) -> Result<Vec<String>, LibraryError> {
    let err = |line: usize, message: String| LibraryError { source_name: source_name.to_string(), line, message };
    let mut defs = Vec::new();
    let mut names = std::collections::HashSet::new();
    for l in registry_lines(text) {
        let schema = parse_schema(l.schema).map_err(|e| err(l.line, e.to_string()))?;
        if schema.namespace.is_empty() || !schema.namespace.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(err(l.line, format!("`{}` is not a namespace name", schema.namespace)));
        }
        let def = crate::ops::definition(&schema);
        if ctx.op_def(&def.name).is_some() || !names.insert(def.name.clone()) {
            return Err(err(l.line, format!("`{}` is already declared", def.name)));
        }
        defs.push((schema.namespace.clone(), def));
    }
    let mut declared = Vec::with_capacity(defs.len());
    for (ns, def) in defs {
        if !ctx.is_registered_dialect(&ns) {
            ctx.register_dialect(&ns, "Operators declared by an op library from their schemas.");
        }
        let name = def.name.clone();
        ctx.register_op(def).map_err(|e| err(0, e.to_string()))?;
        declared.push(name);
    }
    Ok(declared)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Context {
        crate::test_context()
    }

    #[test]
    fn declares_ops_of_new_namespaces() {
        let mut c = ctx();
        let names = register_library(
            &mut c,
            "# my ops\nmylib::scaled_add(Tensor x, Tensor y, float alpha) -> Tensor\nmylib::bump_(Tensor(a!) x) -> Tensor(a!)\n",
            "ops.txt",
        )
        .unwrap();
        assert_eq!(names, ["mylib.scaled_add", "mylib.bump_"]);
        let def = c.op_def("mylib.scaled_add").unwrap();
        assert!(def.has_trait(ir::Traits::PURE));
        assert!(!c.op_def("mylib.bump_").unwrap().has_trait(ir::Traits::PURE));
    }

    #[test]
    fn bad_lines_name_their_position_and_declare_nothing() {
        let mut c = ctx();
        let e = register_library(&mut c, "mylib::ok(Tensor x) -> Tensor\nmylib::bad(Tensor x -> Tensor\n", "lib.txt").unwrap_err();
        assert_eq!((e.source_name.as_str(), e.line), ("lib.txt", 2));
        assert!(c.op_def("mylib.ok").is_none());
        let e = register_library(&mut c, "aten::relu(Tensor self) -> Tensor\n", "lib.txt").unwrap_err();
        assert!(e.to_string().contains("already declared"), "{e}");
    }
}
