//! Fuzz target for the session log: a real session's log (the
//! bundled demo), with lines cut, repeated, swapped and corrupted and bytes
//! flipped, read back with [`for_each_entry`] into the rebuild and its
//! reconciliation. Nothing panics, every non-blank line is accounted for
//! (a record, an unreadable line, or a newer keel's), and a badly damaged
//! log gives a handful of warnings, not one per line.
//!
//! Runs `PROPTEST_CASES` cases (256 by default); `PROPTEST_CASES=100000
//! cargo test --lib fuzz_` runs every fuzz target longer (README).

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::reader::{DETAILED_WARNINGS, LogEntry, for_each_entry};
use crate::agent::{FileProbe, LoopConfig, Rebuilder, reconcile};
use crate::policy::{ApprovalMode, PathContext, Policy, RuleSet};
use crate::protocol::ToolClass;

const DEMO: &str = include_str!("../cli/demo/session.jsonl");

#[derive(Debug, Clone)]
enum Damage {
    DropLine(prop::sample::Index),
    RepeatLine(prop::sample::Index),
    Swap(prop::sample::Index, prop::sample::Index),
    Truncate(prop::sample::Index, prop::sample::Index),
    Garbage(prop::sample::Index, String),
    FlipByte(prop::sample::Index, u8),
}

fn damage() -> impl Strategy<Value = Damage> {
    let index = any::<prop::sample::Index>;
    prop_oneof![
        index().prop_map(Damage::DropLine),
        index().prop_map(Damage::RepeatLine),
        (index(), index()).prop_map(|(a, b)| Damage::Swap(a, b)),
        (index(), index()).prop_map(|(a, b)| Damage::Truncate(a, b)),
        (index(), "\\PC{0,40}").prop_map(|(a, text)| Damage::Garbage(a, text)),
        (index(), any::<u8>()).prop_map(|(a, byte)| Damage::FlipByte(a, byte)),
    ]
}

fn damaged(damages: &[Damage], torn: bool) -> Vec<u8> {
    let mut lines: Vec<Vec<u8>> = DEMO.lines().map(|l| l.as_bytes().to_vec()).collect();
    for damage in damages {
        let len = lines.len().max(1);
        match damage {
            Damage::DropLine(at) if !lines.is_empty() => {
                lines.remove(at.index(len));
            }
            Damage::RepeatLine(at) if !lines.is_empty() => {
                let line = lines[at.index(len)].clone();
                lines.insert(at.index(len), line);
            }
            Damage::Swap(a, b) if !lines.is_empty() => lines.swap(a.index(len), b.index(len)),
            Damage::Truncate(at, cut) if !lines.is_empty() => {
                let line = &mut lines[at.index(len)];
                let keep = cut.index(line.len() + 1);
                line.truncate(keep);
            }
            Damage::Garbage(at, text) => lines.insert(at.index(len + 1), text.as_bytes().to_vec()),
            Damage::FlipByte(at, byte) if !lines.is_empty() => {
                let line = &mut lines[at.index(len)];
                if !line.is_empty() {
                    let at = at.index(line.len());
                    line[at] ^= byte;
                }
            }
            Damage::DropLine(_)
            | Damage::RepeatLine(_)
            | Damage::Swap(..)
            | Damage::Truncate(..)
            | Damage::FlipByte(..) => {}
        }
    }
    let mut bytes = lines.join(&b'\n');
    if !torn {
        bytes.push(b'\n');
    }
    bytes
}

fn config() -> LoopConfig {
    LoopConfig {
        model: "m".into(),
        prefix: crate::protocol::PrefixSections::default(),
        tools: Vec::new(),
        tool_classes: BTreeMap::from([
            ("read_file".to_owned(), ToolClass::ReadOnly),
            ("shell".to_owned(), ToolClass::Mutating),
            ("edit_file".to_owned(), ToolClass::Mutating),
        ]),
        policy: Policy::new(
            RuleSet::default(),
            ApprovalMode::Auto,
            PathContext::new("/h", "/w", "/w"),
        ),
        limits: crate::agent::Limits::with_max_steps(50),
        pricing: crate::context::Pricing::default(),
        configured: crate::agent::ConfiguredModel {
            model: "m".into(),
            pricing: crate::context::Pricing::default(),
            one_hour_cache: false,
        },
        context_window: None,
        max_output_tokens: None,
        compact_threshold: 0.85,
        token_scale: crate::context::tokens::TokenScale::IDENTITY,
        post_tool_hooks: false,
        pre_tool_hooks: false,
        agent_classes: BTreeMap::new(),
        tool_scope: None,
        walls: crate::prompts::Walls::default(),
        strict_tools: None,
    }
}

struct Gone;
impl FileProbe for Gone {
    fn hash(&self, _path: &str) -> Option<String> {
        None
    }
}

proptest! {
    #[test]
    fn fuzz_damaged_session_logs_read_and_rebuild_without_panicking(
        damages in prop::collection::vec(damage(), 0..12),
        torn in any::<bool>(),
    ) {
        let bytes = damaged(&damages, torn);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        std::fs::write(&path, &bytes).unwrap();
        let mut rebuilder = Rebuilder::new(config());
        let (mut records, mut unreadable) = (0u64, 0u64);
        let report = for_each_entry(&path, |entry| match entry {
            LogEntry::Record(record) => {
                records += 1;
                rebuilder.apply(record);
            }
            LogEntry::Unreadable { line, torn } => {
                unreadable += 1;
                rebuilder.unreadable(line, torn);
            }
        })
        .unwrap();
        let lines = bytes
            .split(|b| *b == b'\n')
            .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
            .count() as u64;
        prop_assert_eq!(records + unreadable + report.unknown.len() as u64, lines);
        prop_assert_eq!(unreadable, report.corrupt_lines);
        prop_assert!(report.warnings.len() <= DETAILED_WARNINGS, "{:?}", report.warnings);
        let rebuilt = rebuilder.finish();
        if let Some(open) = rebuilt.open_turn.clone() {
            let mut state = rebuilt.state;
            let _ = reconcile(&mut state, &open, &Gone);
        }
    }
}
