//! Tensors, kernels, the interpreter, the memory planner and the executor
