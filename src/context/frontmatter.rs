//! Splitting a markdown file's YAML front matter from its body (skills'
//! `SKILL.md` and memory notes share the format).
//!
//! Invariants: pure; a missing or unterminated front matter is `None`,
//! never a panic; a BOM and CRLF line ends are accepted.

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
    fn splits_yaml_from_body_with_bom_and_crlf() {
        assert_eq!(split("---\nname: a\n---\nbody\n"), Some(("name: a\n", "body\n")));
        assert_eq!(split("\u{feff}---\r\nname: a\r\n---\r\nbody"), Some(("name: a\r\n", "body")));
        assert_eq!(split("no front matter"), None);
        assert_eq!(split("---\nname: a\nnever closed\n"), None);
    }
}
