//! The prim dialect: constants, structured control flow, lists and tuples, fusion groups, SymInt arithmetic
