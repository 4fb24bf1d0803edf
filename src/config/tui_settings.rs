//! The `[tui]` table: the interactive front end's preferences, which change
//! what the terminal is told, never what keel does. `notify` says how the
//! TUI calls for attention when an approval waits or a turn that took at
//! least `notify_after_secs` ends: `bell` (BEL, the default), `osc9`
//! (`ESC ] 9 ; text BEL`, iTerm2, WezTerm, kitty, Windows Terminal),
//! `osc777` (`ESC ] 777 ; notify ; keel ; text BEL`, foot, rxvt, some VTE),
//! or `off`. An untrusted project's `[tui]` is ignored like its other
//! settings (`trust.rs`); a trusted one applies.
//!
//! Invariants: parsing validates (unknown keys and values are errors with
//! the value named); resolving fills the defaults here and nowhere else.

use serde::Deserialize;

/// How long a turn runs before its end is worth a notification (default).
pub const DEFAULT_NOTIFY_AFTER_SECS: u64 = 30;

/// `[tui] notify`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Notify {
    #[default]
    Bell,
    Osc9,
    Osc777,
    Off,
}

/// The `[tui]` table as written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TuiFile {
    pub notify: Option<Notify>,
    pub notify_after_secs: Option<u64>,
}

impl TuiFile {
    /// `other` (a later layer) over this one, key by key.
    pub fn overlay(&mut self, other: Self) {
        self.notify = other.notify.or(self.notify);
        self.notify_after_secs = other.notify_after_secs.or(self.notify_after_secs);
    }
}

/// The resolved `[tui]` table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TuiSettings {
    pub notify: Notify,
    /// A turn at least this long notifies when it ends.
    pub notify_after_secs: u64,
}

impl Default for TuiSettings {
    fn default() -> Self {
        Self { notify: Notify::default(), notify_after_secs: DEFAULT_NOTIFY_AFTER_SECS }
    }
}

/// Fills the defaults.
pub fn resolve(file: Option<TuiFile>) -> TuiSettings {
    let file = file.unwrap_or_default();
    let default = TuiSettings::default();
    TuiSettings {
        notify: file.notify.unwrap_or(default.notify),
        notify_after_secs: file.notify_after_secs.unwrap_or(default.notify_after_secs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_parses_and_overlays_key_by_key() {
        let user: super::super::ConfigFile =
            toml::from_str("[tui]\nnotify = \"osc9\"\nnotify_after_secs = 5\n").unwrap();
        let mut merged = user.tui.unwrap();
        merged.overlay(toml::from_str("notify = \"off\"").unwrap());
        assert_eq!(
            resolve(Some(merged)),
            TuiSettings { notify: Notify::Off, notify_after_secs: 5 }
        );
        assert_eq!(resolve(None), TuiSettings::default());
        let error = toml::from_str::<super::super::ConfigFile>("[tui]\nnotify = \"loud\"\n");
        assert!(error.unwrap_err().to_string().contains("loud"));
    }
}
