//! Fuzz target for configuration: config-file-shaped TOML (keel's
//! keys and tables, values of every type, broken quoting and brackets, every
//! line end) as `$KEEL_HOME/config.toml`, through the whole [`super::load`]
//! (read, parse, resolve). It never panics, and a parse error names a line
//! and column inside the file.
//!
//! Runs `PROPTEST_CASES` cases (256 by default); `PROPTEST_CASES=100000
//! cargo test --lib fuzz_` runs every fuzz target longer (README).

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::{CliOverrides, ConfigError, Environment, load};

fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("provider = ".to_owned()),
        Just("model = ".to_owned()),
        Just("base_url = ".to_owned()),
        Just("max_steps = ".to_owned()),
        Just("approval = ".to_owned()),
        Just("[sandbox]".to_owned()),
        Just("[context]".to_owned()),
        Just("[verify]".to_owned()),
        Just("[shell]".to_owned()),
        Just("[[hooks.PreToolUse]]".to_owned()),
        Just("commands = ".to_owned()),
        Just("window = ".to_owned()),
        Just("\"openai-chat\"".to_owned()),
        Just("\"x".to_owned()),
        Just("'''".to_owned()),
        Just("[\"a\", 1]".to_owned()),
        Just("{ a = 1 }".to_owned()),
        Just("-1".to_owned()),
        Just("1e400".to_owned()),
        Just("99999999999999999999".to_owned()),
        Just("true".to_owned()),
        Just("# c".to_owned()),
        Just("\n".to_owned()),
        Just("\r".to_owned()),
        Just("\r\n".to_owned()),
        Just(" ".to_owned()),
        "\\PC{0,4}",
    ]
}

fn line_count(text: &str) -> usize {
    text.replace("\r\n", "\n").replace('\r', "\n").split('\n').count()
}

proptest! {
    #[test]
    fn fuzz_config_files_never_panic_and_errors_point_inside(
        pieces in prop::collection::vec(piece(), 0..30),
    ) {
        let text: String = pieces.concat();
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join("config.toml"), &text).unwrap();
        let env = Environment { keel_home: home, cwd: dir.path().to_owned(), vars: BTreeMap::new() };
        let cli = CliOverrides {
            provider: Some("openai-chat".into()),
            base_url: Some("http://127.0.0.1:9/v1".into()),
            model: Some("m".into()),
            ..CliOverrides::default()
        };
        if let Err(ConfigError::ParseAt { line, column, .. }) = load(&env, &cli) {
            prop_assert!(line >= 1 && line <= line_count(&text), "{line} in {text:?}");
            prop_assert!(column >= 1);
        }
    }
}
