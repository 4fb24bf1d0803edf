//! keel: a terminal coding agent with an explicit, resumable agent loop.
//!
//! Layers (lower never imports higher; `tests/suite/layers.rs` checks it):
//! - L0, pure: [`protocol`], [`policy`], [`agent`].
//! - L1, adapters: [`llm`], [`tools`], [`sandbox`], [`session`], [`config`].
//! - L2: [`runtime`], the async driver.
//! - L3: [`exec`], [`cli`].

pub mod agent;
pub mod config;
pub mod llm;
pub mod policy;
pub mod protocol;
pub mod sandbox;
pub mod session;
pub mod tools;
