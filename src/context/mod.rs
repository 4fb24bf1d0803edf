//! Context engineering, pure: what a model can hold and what a session
//! costs. Assembly order and compaction planning will live here too.
//!
//! Invariants: no I/O; figures derive from provider-reported usage (the
//! truth when present) and the model table in [`models`].

pub mod compact;
pub mod models;

pub use models::{ModelInfo, context_percent, cost_usd, model_info};
