//! Importers for torch.export archives, FX text and TorchScript IR text
