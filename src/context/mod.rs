//! Context engineering, pure: what a model can hold, what a session costs,
//! token estimates, and the two steps of compaction (eliding old tool
//! outputs, and the summary with the facts kept verbatim).
//!
//! Invariants: no I/O; figures derive from provider-reported usage (the
//! truth when present) and the model table in [`models`].

pub mod compact;
pub mod frontmatter;
pub mod memory;
pub mod models;
pub mod summary;
pub mod tokens;

pub use models::{ModelInfo, context_percent, cost_usd, model_info};
