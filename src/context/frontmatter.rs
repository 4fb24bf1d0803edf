//! Splitting a markdown file's YAML front matter from its body (skills'
//! `SKILL.md`, memory notes, agent and command files share the format),
//! and loading that YAML.
//!
//! Invariants: pure; a missing or unterminated front matter is `None`,
//! never a panic; a BOM and CRLF line ends are accepted. [`load_yaml`]
//! refuses aliases: the loader copies the anchored node at every alias,
//! so a few hundred bytes of nested aliases (the "billion laughs") would
//! take gigabytes, and a cloned repository's skills and memory notes are
//! read before it is trusted. Front matter never needs them.

use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::{Yaml, YamlLoader};

/// Why front matter did not load.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum YamlError {
    #[error("{message}")]
    Syntax { message: String },
    #[error("YAML aliases (`*name`) are not accepted in front matter")]
    Alias,
}

/// The documents of `yaml`, refusing any alias (see the module docs).
pub fn load_yaml(yaml: &str) -> Result<Vec<Yaml>, YamlError> {
    let syntax = |error: yaml_rust2::ScanError| YamlError::Syntax { message: error.to_string() };
    let mut parser = Parser::new_from_str(yaml);
    loop {
        match parser.next_token().map_err(syntax)? {
            (Event::StreamEnd, _) => break,
            (Event::Alias(_), _) => return Err(YamlError::Alias),
            _ => {}
        }
    }
    YamlLoader::load_from_str(yaml).map_err(syntax)
}

/// Splits `---\nYAML\n---\nbody` into (YAML, body).
pub fn split(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text.strip_prefix("---")?.trim_start_matches([' ', '\t']);
    let rest = rest.strip_prefix("\r\n").or_else(|| rest.strip_prefix('\n'))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_are_refused_before_they_expand() {
        let mut bomb = String::from("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
        for level in 1..9 {
            let refs = vec![format!("*a{}", level - 1); 10].join(", ");
            bomb.push_str(&format!("a{level}: &a{level} [{refs}]\n"));
        }
        assert_eq!(load_yaml(&bomb), Err(YamlError::Alias), "10^9 nodes from {} bytes", bomb.len());
        let docs = load_yaml("name: a\ntools: [Read, Grep]\n").unwrap();
        assert_eq!(docs[0]["tools"][1].as_str(), Some("Grep"));
        assert!(matches!(load_yaml("a: [unclosed"), Err(YamlError::Syntax { .. })));
    }

    #[test]
    fn splits_yaml_from_body_with_bom_and_crlf() {
        assert_eq!(split("---\nname: a\n---\nbody\n"), Some(("name: a\n", "body\n")));
        assert_eq!(split("\u{feff}---\r\nname: a\r\n---\r\nbody"), Some(("name: a\r\n", "body")));
        assert_eq!(split("no front matter"), None);
        assert_eq!(split("---\nname: a\nnever closed\n"), None);
    }
}
