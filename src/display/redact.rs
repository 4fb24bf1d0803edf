//! URLs with their secrets taken out, for messages: hosted MCP endpoints
//! often carry a token in the query (`?token=…`) or in the userinfo
//! (`https://user:pass@host`), and an error that shows the URL would put
//! it on screen and in the session log.
//!
//! Invariant: in every `http://`/`https://` URL of the text, each query
//! value (or a bare query word) becomes `***` and userinfo becomes `***`;
//! scheme, host, port, path and query names stay, so the user still sees
//! which endpoint failed. Everything else is unchanged. Pure.

/// What replaces a secret.
const HIDDEN: &str = "***";

/// `text` with every URL's query values and userinfo replaced by `***`.
pub fn redact_urls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = next_url(rest) {
        out.push_str(&rest[..start]);
        let url = &rest[start..];
        let end = url.find(|c: char| c.is_whitespace() || "\"'<>)]},`".contains(c));
        let end = end.unwrap_or(url.len());
        // Punctuation after a URL is the sentence's (`… at URL: cause`).
        let end = url[..end].trim_end_matches(['.', ',', ';', ':', '!', '?']).len();
        out.push_str(&redact_url(&url[..end]));
        rest = &url[end..];
    }
    out.push_str(rest);
    out
}

/// Where the next `http://` or `https://` starts (case-insensitive).
fn next_url(text: &str) -> Option<usize> {
    let lower = text.to_ascii_lowercase();
    [lower.find("http://"), lower.find("https://")].into_iter().flatten().min()
}

/// One URL, redacted.
fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|at| at + 3) else { return url.to_owned() };
    let (scheme, after) = url.split_at(scheme_end);
    let authority_end = after.find(['/', '?', '#']).unwrap_or(after.len());
    let (authority, tail) = after.split_at(authority_end);
    let authority = match authority.rfind('@') {
        Some(at) => format!("{HIDDEN}{}", &authority[at..]),
        None => authority.to_owned(),
    };
    let (before_fragment, fragment) = match tail.find('#') {
        Some(at) => tail.split_at(at),
        None => (tail, ""),
    };
    let tail = match before_fragment.split_once('?') {
        Some((path, query)) => {
            let pairs: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((name, _)) => format!("{name}={HIDDEN}"),
                    None if pair.is_empty() => String::new(),
                    None => HIDDEN.to_owned(),
                })
                .collect();
            format!("{path}?{}", pairs.join("&"))
        }
        None => before_fragment.to_owned(),
    };
    format!("{scheme}{authority}{tail}{fragment}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_and_userinfo_are_hidden_and_the_endpoint_stays() {
        let cases = [
            (
                "error sending request for url (http://127.0.0.1:9/mcp?token=SECRET123&x=1)",
                "error sending request for url (http://127.0.0.1:9/mcp?token=***&x=***)",
            ),
            ("https://user:pw@mcp.example.com/mcp", "https://***@mcp.example.com/mcp"),
            ("HTTPS://h/p?SECRET#frag", "HTTPS://h/p?***#frag"),
            ("url http://h:1/mcp must start", "url http://h:1/mcp must start"),
            (
                "a http://a?k=1 and https://b/?t=2, done",
                "a http://a?k=*** and https://b/?t=***, done",
            ),
            ("no url here", "no url here"),
            ("at http://h/?t=1: refused", "at http://h/?t=***: refused"),
        ];
        for (text, want) in cases {
            assert_eq!(redact_urls(text), want, "{text}");
        }
    }

    #[test]
    fn redacting_twice_changes_nothing_more() {
        let once = redact_urls("at http://u:p@h/m?t=1&x: refused, see https://a/b?c=d.");
        assert_eq!(once, "at http://***@h/m?t=***&***: refused, see https://a/b?c=***.");
        assert_eq!(redact_urls(&once), once);
    }

    #[test]
    fn never_panics_on_odd_text() {
        for text in ["http://", "https://@", "http://?", "http://a@b@c/?=&=", "ｈttp://é?x=é"] {
            let _ = redact_urls(text);
        }
        assert!(!redact_urls("http://é?x=é").contains("x=é"));
    }
}
