//! Deterministic inputs for the kernels' tests and those of the crates that call them.

/// A small deterministic generator (xorshift) of values in [-1, 1).
pub struct Gen(pub u64);

impl Gen {
    /// The next value.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }

    /// The next `n` values.
    pub fn vec(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.next()).collect()
    }
}
