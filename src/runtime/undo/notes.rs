//! What undo does not cover, in words: the warning when a checkpoint
//! leaves files out (size caps, special files), and the note of `keel
//! undo` about files the undone turns changed that no checkpoint holds
//! (ignored by `.gitignore`, or over `undo.max_file_mb`), found from the
//! session log: paths of `file_changed` lines, and the ignored paths a
//! shell call changed (`not_checkpointed` in its result's meta).

use std::path::Path;

use crate::protocol::SessionEvent;
use crate::session::{SessionError, for_each_record};

use super::checkpoint::{SkipReason, Skipped, UndoLimits};
use super::ignores::Ignores;

/// Files listed by name in a warning; the rest are counted.
const LISTED: usize = 5;
/// Paths recorded per shell call in its `not_checkpointed` meta.
pub const NOT_CHECKPOINTED_KEY: &str = "not_checkpointed";

/// A file an undo leaves as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotCovered {
    pub path: String,
    pub why: NotCoveredWhy,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotCoveredWhy {
    Ignored,
    TooLarge,
}

/// The warning for a checkpoint that left files out, if it did.
pub fn skipped_warning(skipped: &[Skipped], limits: UndoLimits) -> Option<String> {
    if skipped.is_empty() {
        return None;
    }
    let mb = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    let mut named: Vec<String> = skipped
        .iter()
        .take(LISTED)
        .map(|file| match file.reason {
            SkipReason::FileTooLarge => format!(
                "{} ({:.1} MB, over undo.max_file_mb = {})",
                file.path,
                mb(file.bytes),
                limits.max_file_bytes / (1024 * 1024)
            ),
            SkipReason::OverBudget => format!(
                "{} (past undo.max_total_mb = {} for one checkpoint)",
                file.path,
                limits.max_total_bytes / (1024 * 1024)
            ),
            SkipReason::Unsupported => format!("{} (not a regular file)", file.path),
        })
        .collect();
    if skipped.len() > LISTED {
        named.push(format!("and {} more", skipped.len() - LISTED));
    }
    let count = skipped.len();
    let noun = if count == 1 { "file" } else { "files" };
    Some(format!(
        "undo does not cover {count} {noun}, so `keel undo` leaves them as they are: {}",
        named.join(", ")
    ))
}

/// The line `keel undo` adds for files it could not restore.
pub fn not_covered_line(files: &[NotCovered]) -> Option<String> {
    if files.is_empty() {
        return None;
    }
    let mut named: Vec<String> = files
        .iter()
        .take(LISTED)
        .map(|file| match file.why {
            NotCoveredWhy::Ignored => format!("{} (ignored by .gitignore)", file.path),
            NotCoveredWhy::TooLarge => format!("{} (over undo.max_file_mb)", file.path),
        })
        .collect();
    if files.len() > LISTED {
        named.push(format!("and {} more", files.len() - LISTED));
    }
    Some(format!("not restored, because checkpoints do not hold them: {}", named.join(", ")))
}

/// Files changed from `turn` on (by file tools or, when ignored, by shell
/// calls) that no checkpoint holds.
pub fn not_covered_by(
    root: &Path,
    log_path: &Path,
    turn: u32,
    limits: UndoLimits,
) -> Result<Vec<NotCovered>, SessionError> {
    let mut current = 0;
    let mut touched: Vec<String> = Vec::new();
    for_each_record(log_path, |record| match record.event {
        SessionEvent::TurnStarted { turn } => current = turn,
        SessionEvent::FileChanged { path, .. } if current >= turn => {
            let path = Path::new(&path);
            if let Ok(rel) = path.strip_prefix(root) {
                touched.push(rel.display().to_string());
            }
        }
        SessionEvent::ToolCallFinished { meta, .. } if current >= turn => {
            let listed = meta.get(NOT_CHECKPOINTED_KEY).and_then(serde_json::Value::as_array);
            touched
                .extend(listed.into_iter().flatten().filter_map(|p| p.as_str()).map(str::to_owned));
        }
        _ => {}
    })?;
    let mut ignores = Ignores::new(root);
    let mut found: Vec<NotCovered> = Vec::new();
    for path in touched {
        if found.iter().any(|file| file.path == path) || path.is_empty() {
            continue;
        }
        let why = if ignores.is_ignored_anywhere(Path::new(&path)) {
            NotCoveredWhy::Ignored
        } else if std::fs::symlink_metadata(root.join(&path))
            .is_ok_and(|meta| meta.is_file() && meta.len() > limits.max_file_bytes)
        {
            NotCoveredWhy::TooLarge
        } else {
            continue;
        };
        found.push(NotCovered { path, why });
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_name_a_few_files_and_count_the_rest() {
        let skipped: Vec<Skipped> = (0..7)
            .map(|n| Skipped {
                path: format!("f{n}"),
                bytes: 20 * 1024 * 1024,
                reason: SkipReason::FileTooLarge,
            })
            .collect();
        let text = skipped_warning(&skipped, UndoLimits::default()).unwrap();
        assert!(text.starts_with("undo does not cover 7 files"), "{text}");
        assert!(text.contains("f0 (20.0 MB, over undo.max_file_mb = 10)"), "{text}");
        assert!(text.ends_with("and 2 more"), "{text}");
        assert_eq!(skipped_warning(&[], UndoLimits::default()), None);
    }
}
