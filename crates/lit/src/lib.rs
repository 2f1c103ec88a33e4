//! A lit test runner
