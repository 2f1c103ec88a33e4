//! The aten dialect: ATen operators declared from schema strings
