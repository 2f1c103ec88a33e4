//! Generic passes and the ATen to Edge to Backend lowerings
