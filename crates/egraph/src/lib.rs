//! E-graph rewrite engine and fusion-group formation
