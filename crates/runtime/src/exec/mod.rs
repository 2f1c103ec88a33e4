//! The executor: compile a module once into an immutable, shareable [`CompiledProgram`]; run it
//! through cheap per-thread [`Runtime`]s.
//!
//! [`compile`] finds `func.func @forward` (or the function named in [`CompileOptions`]), binds
//! its parameters, buffers and lifted constants by name from [`Weights`] (their tensors are
//! shared read-only by every runtime; each runtime owns a copy of the buffers, which are
//! mutable state), and linearizes the body (`crate::interp`), failing with every op that has
//! no kernel named with its location. A [`Runtime`] validates its inputs against the
//! function's signature, picks a specialization (input dtypes and shapes, the ArgumentSpec
//! idea) whose memory plan (`crate::plan`) it keeps, runs, writes buffer mutations back into
//! its state, and returns the user outputs flat ([`Runtime::run`]) or nested as the program's
//! output pytree says ([`Runtime::run_tree`]).

mod error;
mod options;
mod outputs;
pub(crate) mod profile;
mod program;
mod runtime;




pub use error::{ExecError, MissingKernel};
pub(crate) use error::loc_string;
pub use options::{CompileOptions, GuardPolicy, Weights};
pub use outputs::{OutSpec, Outputs};
pub use profile::OpProfile;
pub use program::{CompiledProgram, InputInfo, InputKind, compile, compile_with_registry};
pub use runtime::Runtime;
