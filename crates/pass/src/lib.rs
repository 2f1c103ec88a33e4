//! Pass manager, pipelines, analyses and instrumentation
