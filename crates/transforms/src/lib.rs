//! Generic passes and the ATen → Edge → Backend lowerings.
//!
//! [`register_passes`] adds every pass of this crate to a registry; the tools call it.

pub mod lowering;
pub mod opt;

/// Registers the passes of this crate.
pub fn register_passes(r: &mut pass::PassRegistry) {
    opt::register(r);
    lowering::register(r);
}
