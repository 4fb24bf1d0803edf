//! Bounded indexes of named things the model can ask for (skills, agent
//! types) and the lookup that reaches the ones an index leaves out.
//!
//! Invariants: an index is a pure function of its entries (sorted by the
//! caller), so the request prefix it is part of stays byte-stable for the
//! prompt cache; when every entry fits in the full budget it is listed with
//! its description cut at [`FULL_DESCRIPTION_CHARS`], else the compact form
//! lists what fits in [`COMPACT_BYTES`] with short descriptions and ends
//! with a line saying how many are left out and how to find them
//! ([`SEARCH_PREFIX`]). Every entry stays reachable: by its exact name, and
//! through [`search`], whose answer is bounded too.

/// A name given as `search:WORDS` asks for the entries matching WORDS.
pub const SEARCH_PREFIX: &str = "search:";
/// Longest description shown per entry in the full form.
pub const FULL_DESCRIPTION_CHARS: usize = 300;
/// Longest description shown per entry in the compact form.
const COMPACT_DESCRIPTION_CHARS: usize = 60;
/// Upper bound of a compact index's lines.
pub const COMPACT_BYTES: usize = 2 * 1024;
/// Most entries one search answers with.
const SEARCH_RESULTS: usize = 25;
/// Longest description shown per entry in a search answer.
const SEARCH_DESCRIPTION_CHARS: usize = 160;

/// An index's lines and how many entries they name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Index {
    /// `- name: description` lines, newline-terminated; in the compact
    /// form the last says what is left out.
    pub text: String,
    pub listed: usize,
    pub total: usize,
}

impl Index {
    pub fn complete(&self) -> bool {
        self.listed == self.total
    }
}

/// One entry: its name, description and a note after the name (e.g.
/// ` (read-only)`).
pub struct Entry<'a> {
    pub name: &'a str,
    pub description: &'a str,
    pub note: &'a str,
}

/// The index of `entries` (in the caller's order): full when it fits in
/// `full_bytes`, else compact; `what` names the kind (`skills`) and `how`
/// says how to search (e.g. "call `load_skill` with name `search:WORDS`").
pub fn index(entries: &[Entry<'_>], full_bytes: usize, what: &str, how: &str) -> Index {
    let total = entries.len();
    let full: String = entries
        .iter()
        .map(|entry| line(entry, FULL_DESCRIPTION_CHARS))
        .collect::<Vec<_>>()
        .concat();
    if full.len() <= full_bytes {
        return Index { text: full, listed: total, total };
    }
    let mut text = String::new();
    let mut listed = 0;
    for entry in entries {
        let line = line(entry, COMPACT_DESCRIPTION_CHARS);
        if text.len() + line.len() > COMPACT_BYTES {
            break;
        }
        text.push_str(&line);
        listed += 1;
    }
    text.push_str(&format!(
        "- … {} more {what} ({total} in all) not listed here: {how} to list those whose name or \
         description has those words; any of them works by its exact name.\n",
        total - listed
    ));
    Index { text, listed, total }
}

/// The entries matching `query`'s words (in name or description, a name
/// match counting double), best first, as a bounded answer for the model.
pub fn search(query: &str, entries: &[Entry<'_>], what: &str) -> String {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect();
    let mut scored: Vec<(usize, &Entry<'_>)> = entries
        .iter()
        .map(|entry| {
            let name = entry.name.to_lowercase();
            let description = entry.description.to_lowercase();
            let score = words
                .iter()
                .map(|word| {
                    2 * usize::from(name.contains(word.as_str()))
                        + usize::from(description.contains(word.as_str()))
                })
                .sum();
            (score, entry)
        })
        .filter(|(score, _)| words.is_empty() || *score > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name.cmp(b.1.name)));
    if scored.is_empty() {
        return format!("no {what} match `{query}` ({} in all); try other words", entries.len());
    }
    let mut out = format!("{what} matching `{query}` ({} of {}):\n", scored.len(), entries.len());
    for (_, entry) in scored.iter().take(SEARCH_RESULTS) {
        out.push_str(&line(entry, SEARCH_DESCRIPTION_CHARS));
    }
    if scored.len() > SEARCH_RESULTS {
        out.push_str(&format!(
            "- … {} more match; add words to narrow\n",
            scored.len() - SEARCH_RESULTS
        ));
    }
    out
}

/// The words after [`SEARCH_PREFIX`], when `name` is a search.
pub fn search_query(name: &str) -> Option<&str> {
    name.trim().strip_prefix(SEARCH_PREFIX).map(str::trim)
}

fn line(entry: &Entry<'_>, chars: usize) -> String {
    let one_line = entry.description.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut shown: String = one_line.chars().take(chars).collect();
    if shown.len() < one_line.len() {
        shown.push('…');
    }
    format!("- {}{}: {shown}\n", entry.name, entry.note)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(names: &[(String, String)]) -> Vec<Entry<'_>> {
        names.iter().map(|(n, d)| Entry { name: n, description: d, note: "" }).collect()
    }

    #[test]
    fn a_small_catalog_is_listed_whole_a_large_one_compactly_with_the_rest_counted() {
        let few: Vec<(String, String)> =
            (0..3).map(|i| (format!("s{i}"), "does things".to_owned())).collect();
        let index = index(&entries(&few), 8192, "skills", "search");
        assert!(index.complete());
        assert_eq!(index.text, "- s0: does things\n- s1: does things\n- s2: does things\n");
        let many: Vec<(String, String)> =
            (0..700).map(|i| (format!("skill-{i:03}"), "word ".repeat(80))).collect();
        let index = super::index(&entries(&many), 8192, "skills", "call X with `search:WORDS`");
        assert!(index.text.len() <= COMPACT_BYTES + 300, "{}", index.text.len());
        assert!(index.listed > 10 && index.listed < 700);
        let tail = index.text.lines().last().unwrap();
        assert!(tail.contains(&format!("{} more skills (700 in all)", 700 - index.listed)));
    }

    #[test]
    fn search_ranks_name_matches_first_and_stays_bounded() {
        let mut list: Vec<(String, String)> =
            (0..100).map(|i| (format!("tool-{i}"), "kubernetes helper".to_owned())).collect();
        list.push(("kubernetes-architect".into(), "designs clusters".into()));
        list.push(("pdf".into(), "reads PDF files".into()));
        let all = entries(&list);
        let answer = search("kubernetes", &all, "agent types");
        assert!(answer.starts_with("agent types matching `kubernetes` (101 of 102):\n"));
        assert!(answer.lines().nth(1).unwrap().starts_with("- kubernetes-architect:"));
        assert!(answer.contains("76 more match"), "{answer}");
        assert!(search("pdf", &all, "skills").contains("- pdf: reads PDF files"));
        assert!(search("zzz", &all, "skills").starts_with("no skills match"));
        assert_eq!(search_query(" search: pdf files"), Some("pdf files"));
        assert_eq!(search_query("pdf"), None);
    }
}
