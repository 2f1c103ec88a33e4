//! A small example dialect showing how a user's dialect registers
