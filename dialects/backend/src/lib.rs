//! The backend dialect: what backends execute
