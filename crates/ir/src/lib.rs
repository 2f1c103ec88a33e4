//! Core IR: context, operations, regions, blocks, values, types, attributes, text format, verifier
