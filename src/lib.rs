//! keel: a terminal coding agent with an explicit, resumable agent loop.
//!
//! Layers (lower never imports higher; `tests/suite/layers.rs` checks it):
//! - L0, pure (no tokio, fs, process, clock): [`protocol`], [`policy`],
//!   [`prompts`], [`context`], [`plan`], [`tasks`], [`agent`], [`display`],
//!   [`export`].
//! - L1, adapters, one kind of effect each: [`llm`], [`tools`],
//!   [`sandbox`], [`session`], [`skills`], [`hooks`], [`config`], [`mcp`];
//!   [`support`], helpers they share, below all of them.
//! - L2: [`runtime`], the async driver.
//! - L3, front ends: [`exec`], [`tui`], [`acp`], [`cli`], and how they end the
//!   process ([`exit`]).
//!
//! No two modules import each other, directly or around a cycle (the same
//! test checks it, and inside `agent/` between its files).

pub mod agent;
pub mod context;
pub mod display;
pub mod export;
pub mod plan;
pub mod policy;
pub mod prompts;
pub mod protocol;
pub mod tasks;

pub mod config;
pub mod hooks;
pub mod llm;
pub mod mcp;
pub mod sandbox;
pub mod session;
pub mod skills;
pub mod support;
pub mod telemetry;
pub mod tools;
pub mod web;

pub mod runtime;

pub mod acp;
pub mod attach;
pub mod cli;
pub mod exec;
pub mod exit;
pub mod tui;

#[cfg(test)]
mod shared_corpus;
