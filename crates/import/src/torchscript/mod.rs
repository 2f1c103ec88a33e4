//! TorchScript IR text.
