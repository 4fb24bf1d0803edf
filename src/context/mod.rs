//! Context engineering, pure: what a model can hold, what a session costs (and on what),
//! token estimates, and the two steps of compaction (eliding old tool
//! outputs, and the summary with the facts kept verbatim).
//!
//! Invariants: no I/O; figures derive from provider-reported usage (the
//! truth when present) and the model table in [`models`].
//!
//! # How a request is built, and why its prefix never changes
//!
//! A request is tools → instructions → history, and only the history changes during a session:
//! prompt caches read the longest unchanged prefix. The instructions are `LoopConfig::prefix`
//! (`protocol::PrefixSections`: core rules → AGENTS.md files → memory index → skills index), built
//! by `runtime/assembly.rs::prefix_sections` and recorded at the start as a `prompt_prefix` line
//! (sections + a digest of the tool specs). The tool set is fixed too (`read_memory` only when
//! there are memory notes: notes that first appear at the re-read after a summary bring it through
//! `ToolsOffered`, recorded as `tools_changed`; `set_phase` is built from the session's phase
//! rules; MCP tools listed again after `list_changed` are the other change). Tool schemas leave out
//! what JSON Schema says by default (an empty `required`, a flag's `default: false`, an unsigned
//! type's `minimum: 0`: `protocol/schema.rs`).
//!
//! Everything that can change is announced instead: `agent::announce` runs before every request and
//! appends one `Item::Context` (a user message wrapped in `<keel_context>`, recorded as
//! `context_updated` with its parts) for each kind whose current text differs from what is in force
//! (the newest part of that kind in the history, else the prefix's section): environment (OS,
//! shell, cwd, git status, date, headless or not; the driver refreshes `LoopState::environment` at
//! each turn and on resume), mode and permissions, workflow (phase, the tools it allows, its
//! guidance, the checks that count; not the task list, which `todo_write`'s result shows),
//! AGENTS.md, memory and skills sections read again (`LoopState::observed`: after a summary
//! compaction, and on resume), and SessionStart hook context (`LoopState::hook_context`). At a
//! turn's start the update comes before the user's message. Because "in force" is read from the
//! history, a compaction that drops context items makes them be announced again, and a resume
//! announces what the live session would have.
//!
//! Deliberate prefix breaks, each a `prompt_prefix` line with its reason: a resume whose keel has
//! other core rules or tools (another version), or another model, or a log without a recorded
//! prefix (`runtime/history/resume.rs::prefix_break`); a summary compaction rewrites the history (its
//! `compaction` line).
//!
//! Tests: `tests/suite/context_prefix.rs` checks, per protocol, that every request starts with the
//! whole previous one (blocks as `benches/prompt_cache/canon.rs` reads them) across phase moves,
//! task rewrites, edits, a kill and a resume in another mode; `benches/prompt_cache.rs` prices it.
//! `tests/suite/context_requests.rs` snapshots the request per provider, and the first request in
//! full (`first_request_in_full_and_within_20_kilobytes`; after a compaction too, in
//! `context_compaction.rs`): review the `.snap` diff when you change a prompt or a tool
//! description. `keel debug prompt` prints the first request for the current folder and flags.
//!
//! # Compaction
//!
//! Decided in `agent/compaction.rs` (pure), from the figures here. Before each request the loop
//! estimates the context: provider-reported input tokens of the last request + the items added
//! since; bytes first, tokens (`tokens`) only if the byte bound crosses the limit. Past
//! `context.compact_threshold` (default 0.85) of the window (`context.window` or the model table)
//! it elides old tool outputs (`compact`) if that is enough, else emits `Effect::Summarize` (the
//! driver runs PreCompact hooks, asks the model with `prompts/compact.md`, no streaming) and on
//! `Input::Summarized`/`SummaryFailed` replaces the history with goal + summary block + latest
//! request (+ current turn if it fits; `summary`), records `compaction` (reason, method, tokens
//! before/after, the carried failing check) and emits `Effect::Compacted`. After a summary the
//! driver re-reads AGENTS.md and memory, runs SessionStart(`compact`) hooks and answers
//! `Input::CompactionApplied`; only then is the next request built. A provider's context-length
//! error goes elide → summary → fail within one step. `/compact [focus]` is `Session::compact`
//! (`runtime/commands.rs`). A resume starts from the latest `compaction` line.
//!
//! # Files
//!
//! `models.rs` (windows and prices by model prefix; `Pricing` = the table + `[context]` overrides →
//! cost, context %), `tokens.rs` (tiktoken `o200k_base`; the encoder is built once and only when a
//! byte bound cannot rule a request out; `TokenScale`, a local server's tokenizer against it),
//! `compact.rs` (the cheap step: old tool outputs elided), `summary.rs` (the summary request; the compacted history: goal, summary block with the preserved
//! facts, latest request, current turn if it fits), `memory.rs` + `frontmatter.rs` (memory notes
//! and the YAML front matter skills share; aliases refused: a few hundred bytes of nested aliases
//! expand to gigabytes, and a clone's skills and memory notes are read before trust), `ledger/`
//! (a session's spend by request and by part, from its log: `keel cost`, the TUI's `/cost`; the
//! attribution rule in `ledger/split.rs`), `stats.rs` (usage across sessions: `keel stats`).

pub mod compact;
pub mod frontmatter;
pub mod ledger;
pub mod memory;
pub mod models;
pub mod stats;
pub mod summary;
pub mod tokens;
pub mod window;

pub use models::{ModelInfo, Pricing, context_percent, cost_usd, model_info};
