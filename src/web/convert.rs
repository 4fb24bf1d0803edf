//! What a fetched response becomes for the model: a short header (URL,
//! status, type, redirects, what was cut) and the body as text.
//!
//! - HTML (and XHTML) is decoded by its charset and converted to
//!   Markdown (`htmd`), at most [`MAX_HTML`] bytes of it;
//! - text, JSON, XML and scripts are decoded and given as they are;
//! - a PDF is not converted (no light crate does it well), anything else
//!   (images, archives, a "text" body holding NUL bytes) is summarised by
//!   type and size, never dumped.
//!
//! The charset is the `Content-Type` header's, else an HTML page's
//! `<meta charset>` (or `http-equiv`) within its first [`SNIFF`] bytes,
//! else a byte-order mark, else UTF-8; undecodable bytes become U+FFFD.
//! The text is cut at [`MAX_TEXT`] bytes on a character boundary, and the
//! header says so. Pure: no I/O.

use encoding_rs::{Encoding, UTF_8};

use super::{MAX_READ, MAX_TEXT, Page};

/// The most bytes of HTML converted (the DOM of a larger page costs
/// memory out of proportion with the 100 KB of text kept from it).
pub const MAX_HTML: usize = 2 * 1024 * 1024;
/// How far into a body its kind and an HTML charset are sniffed.
const SNIFF: usize = 1024;

/// What kind of body a response has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    Html,
    Text,
    Pdf,
    Binary,
}

/// The page as the model reads it, and its kind.
pub fn render(page: &Page) -> (String, BodyKind) {
    let media = page.content_type.as_deref().map(media_type).unwrap_or_default();
    let kind = kind_of(&media, &page.body);
    let mut notes = Vec::new();
    if page.cut {
        notes.push(format!("only the first {} MB of the body were read", MAX_READ >> 20));
    }
    let body = match kind {
        BodyKind::Html => {
            // Only what is converted is decoded (a cut character at the
            // end becomes U+FFFD).
            if page.body.len() > MAX_HTML {
                notes.push(format!("only the first {} MB of HTML were converted", MAX_HTML >> 20));
            }
            markdown(&decode(page, &page.body[..page.body.len().min(MAX_HTML)], true))
        }
        BodyKind::Text => decode(page, &page.body, false),
        BodyKind::Pdf => format!("PDF: not converted ({} bytes read).", page.body.len()),
        BodyKind::Binary => format!(
            "Binary content ({}, {} bytes read): not shown.",
            if media.is_empty() { "no content type" } else { &media },
            page.body.len()
        ),
    };
    let body = body.trim();
    let body = if body.len() > MAX_TEXT {
        notes.push(format!("the text was cut at {} KB", MAX_TEXT >> 10));
        &body[..floor_char_boundary(body, MAX_TEXT)]
    } else {
        body
    };
    (format!("{}\n{body}", header(page, &notes)), kind)
}

fn header(page: &Page, notes: &[String]) -> String {
    let mut header = format!("URL: {}\nStatus: {}\n", page.url, page.status);
    if let Some(content_type) = &page.content_type {
        header.push_str(&format!("Content-Type: {content_type}\n"));
    }
    for from in &page.redirected_from {
        header.push_str(&format!("Redirected from: {from}\n"));
    }
    for note in notes {
        header.push_str(&format!("Note: {note}\n"));
    }
    header
}

/// `text/html; charset=x` → `text/html`.
fn media_type(content_type: &str) -> String {
    content_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase()
}

fn kind_of(media: &str, body: &[u8]) -> BodyKind {
    let head = &body[..body.len().min(SNIFF)];
    if media == "application/pdf" || head.starts_with(b"%PDF-") {
        return BodyKind::Pdf;
    }
    let html = matches!(media, "text/html" | "application/xhtml+xml");
    let texty = media.starts_with("text/")
        || media.ends_with("+json")
        || media.ends_with("+xml")
        || matches!(
            media,
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/x-javascript"
                | "application/ecmascript"
                | "application/toml"
                | "application/yaml"
                | "application/x-yaml"
                | "application/x-sh"
        );
    // UTF-16 text holds NULs; its BOM says what it is.
    let utf16 = head.starts_with(&[0xFF, 0xFE]) || head.starts_with(&[0xFE, 0xFF]);
    if head.contains(&0) && !utf16 {
        return BodyKind::Binary;
    }
    if html {
        return BodyKind::Html;
    }
    if texty {
        return BodyKind::Text;
    }
    if media.is_empty() {
        let lower = String::from_utf8_lossy(head).to_ascii_lowercase();
        let start = lower.trim_start();
        if start.starts_with("<!doctype html") || start.starts_with("<html") {
            return BodyKind::Html;
        }
        if std::str::from_utf8(head).is_ok() || utf16 {
            return BodyKind::Text;
        }
    }
    BodyKind::Binary
}

/// The body as text, by the charset the header or (for HTML) the page
/// names, a BOM, else UTF-8.
fn decode(page: &Page, body: &[u8], html: bool) -> String {
    let declared = page.content_type.as_deref().and_then(charset_param);
    let sniffed = || html.then(|| meta_charset(&page.body)).flatten();
    let encoding = declared
        .or_else(sniffed)
        .and_then(|label| Encoding::for_label(label.as_bytes()))
        .unwrap_or(UTF_8);
    // `decode` lets a BOM override the label, as browsers do.
    let (text, _, _) = encoding.decode(body);
    text.into_owned()
}

fn charset_param(content_type: &str) -> Option<String> {
    content_type.split(';').skip(1).find_map(|param| {
        let (name, value) = param.split_once('=')?;
        (name.trim().eq_ignore_ascii_case("charset"))
            .then(|| value.trim().trim_matches('"').trim_matches('\'').to_owned())
    })
}

/// `<meta charset="x">` or `<meta http-equiv=… content="…; charset=x">`
/// within the first [`SNIFF`] bytes.
fn meta_charset(body: &[u8]) -> Option<String> {
    let head = String::from_utf8_lossy(&body[..body.len().min(SNIFF)]).to_ascii_lowercase();
    let at = head.find("charset=")?;
    let rest = head[at + "charset=".len()..].trim_start_matches(['"', '\'']);
    let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || "-_:.".contains(c)))?;
    Some(rest[..end].to_owned()).filter(|label| !label.is_empty())
}

/// HTML as Markdown; scripts, styles and the like left out.
fn markdown(html: &str) -> String {
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec!["script", "style", "noscript", "template", "iframe", "svg", "head"])
        .build();
    converter.convert(html).unwrap_or_else(|error| {
        format!("(the HTML could not be converted: {error}; its text is not shown)")
    })
}

/// The largest index at most `at` that is a character boundary of `text`.
fn floor_char_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(content_type: Option<&str>, body: &[u8]) -> Page {
        Page {
            url: "https://docs.example.test/a".into(),
            redirected_from: Vec::new(),
            status: 200,
            content_type: content_type.map(str::to_owned),
            body: body.to_vec(),
            cut: false,
        }
    }

    #[test]
    fn html_becomes_markdown_without_scripts() {
        let html = b"<html><head><title>T</title><script>evil()</script></head><body>\
                     <h1>Guide</h1><p>Use <a href=\"/x\">this</a> and <code>keel</code>.</p>\
                     <ul><li>one</li></ul></body></html>";
        let (text, kind) = render(&page(Some("text/html; charset=utf-8"), html));
        assert_eq!(kind, BodyKind::Html);
        assert!(text.starts_with("URL: https://docs.example.test/a\nStatus: 200\n"), "{text}");
        assert!(text.contains("# Guide"), "{text}");
        assert!(text.contains("[this](/x)"), "{text}");
        assert!(text.contains("`keel`"), "{text}");
        assert!(!text.contains("evil"), "{text}");
    }

    #[test]
    fn the_charset_comes_from_the_header_else_the_page() {
        // "café" in Latin-1.
        let latin1 = b"<p>caf\xe9</p>";
        let (text, _) = render(&page(Some("text/html; charset=ISO-8859-1"), latin1));
        assert!(text.contains("café"), "{text}");
        let meta = b"<html><head><meta charset=\"windows-1252\"></head><body>caf\xe9</body></html>";
        let (text, _) = render(&page(Some("text/html"), meta));
        assert!(text.contains("café"), "{text}");
        let (text, _) = render(&page(Some("text/plain; charset=\"iso-8859-1\""), b"na\xefve"));
        assert!(text.contains("naïve"), "{text}");
    }

    #[test]
    fn text_and_json_are_given_as_they_are() {
        let (text, kind) = render(&page(Some("application/json"), br#"{"a": [1, 2]}"#));
        assert_eq!(kind, BodyKind::Text);
        assert!(text.ends_with("{\"a\": [1, 2]}"), "{text}");
        let (text, kind) = render(&page(None, b"plain words"));
        assert_eq!(kind, BodyKind::Text);
        assert!(text.ends_with("plain words"), "{text}");
    }

    #[test]
    fn binary_and_pdf_bodies_are_summarised_not_dumped() {
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
        let (text, kind) = render(&page(Some("image/png"), png));
        assert_eq!(kind, BodyKind::Binary);
        assert!(text.contains("Binary content (image/png, 16 bytes read): not shown."), "{text}");
        let (_, kind) = render(&page(Some("text/plain"), b"looks\0binary"));
        assert_eq!(kind, BodyKind::Binary);
        let (text, kind) = render(&page(Some("application/octet-stream"), b"%PDF-1.7\n..."));
        assert_eq!(kind, BodyKind::Pdf);
        assert!(text.contains("PDF: not converted"), "{text}");
    }

    #[test]
    fn long_text_is_cut_on_a_character_boundary_and_said_so() {
        let body = "é".repeat(MAX_TEXT);
        let mut long = page(Some("text/plain; charset=utf-8"), body.as_bytes());
        long.cut = true;
        let (text, _) = render(&long);
        assert!(text.len() < MAX_TEXT + 500, "{}", text.len());
        assert!(text.contains("Note: the text was cut at 100 KB"), "{}", &text[..300]);
        assert!(text.contains("Note: only the first 10 MB of the body were read"));
    }
}
