//! Fuzz target for the rules parser: rules-file-shaped text,
//! from calls and strings to unbalanced brackets, deep nesting and every
//! kind of line end, through [`RuleSet::load`] (syntax, then argument
//! checks). It never panics or overflows the stack, and an error always
//! points inside the file.
//!
//! Runs `PROPTEST_CASES` cases (256 by default); `PROPTEST_CASES=100000
//! cargo test --lib fuzz_` runs every fuzz target longer (README).

use proptest::prelude::*;

use super::{Origin, RuleSet, RulesError};

fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("prefix_rule".to_owned()),
        Just("path_rule".to_owned()),
        Just("host_executable".to_owned()),
        Just("network_rule".to_owned()),
        Just("pattern".to_owned()),
        Just("decision".to_owned()),
        Just("match".to_owned()),
        Just("glob".to_owned()),
        Just("name".to_owned()),
        Just("paths".to_owned()),
        Just("(".to_owned()),
        Just(")".to_owned()),
        Just("[".to_owned()),
        Just("]".to_owned()),
        Just(",".to_owned()),
        Just(" = ".to_owned()),
        Just("\"allow\"".to_owned()),
        Just("\"forbidden\"".to_owned()),
        Just("'git'".to_owned()),
        Just("\"\"\"".to_owned()),
        Just("r'".to_owned()),
        Just("\\".to_owned()),
        Just("# note".to_owned()),
        Just("\n".to_owned()),
        Just("\r".to_owned()),
        Just("\r\n".to_owned()),
        Just(" ".to_owned()),
        Just("True".to_owned()),
        (1usize..2000).prop_map(|n| "[".repeat(n)),
        "\\PC{0,4}",
    ]
}

/// Lines as an editor counts them: LF, CRLF and a lone CR each end one.
fn line_count(text: &str) -> usize {
    text.replace("\r\n", "\n").replace('\r', "\n").split('\n').count()
}

proptest! {
    #[test]
    fn fuzz_rules_files_never_panic_and_errors_point_inside(
        pieces in prop::collection::vec(piece(), 0..40),
    ) {
        let text: String = pieces.concat();
        let mut rules = RuleSet::default();
        if let Err(error) = rules.load("f.rules", &text, Origin::Project) {
            let (line, column) = match &error {
                RulesError::Syntax { line, column, .. }
                | RulesError::UnknownFunction { line, column, .. }
                | RulesError::Invalid { line, column, .. }
                | RulesError::ExampleNotMatched { line, column, .. }
                | RulesError::ExampleMatched { line, column, .. } => (*line, *column),
            };
            prop_assert!(line >= 1 && line <= line_count(&text), "{error} in {text:?}");
            prop_assert!(column >= 1, "{error}");
            let prefix = format!("f.rules:{line}:{column}: ");
            prop_assert!(error.to_string().starts_with(&prefix), "{error}");
        }
    }
}
