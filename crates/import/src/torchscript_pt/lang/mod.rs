//! The TorchScript language as `torch.jit.save` prints it into an archive's `code/` files:
//! tokens, syntax tree and parser. Compiling the tree to IR is `super::compile`'s job.

pub mod ast;
mod lex;
mod parse;

pub use parse::parse;
