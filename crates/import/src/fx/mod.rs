//! FX graph text.
