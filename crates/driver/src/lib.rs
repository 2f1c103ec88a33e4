//! Command-line tools: dialect-opt, dialect-run and filecheck
