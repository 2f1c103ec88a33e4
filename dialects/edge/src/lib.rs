//! The edge dialect: EXIR's functional, explicitly typed operator set
