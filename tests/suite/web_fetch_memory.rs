//! Issue 39's memory figure for `web_fetch`: keel's peak RSS (the real
//! binary, `getrusage` of a parent, `servers_floods::peak_rss`) while it
//! fetches 50 MB pages and a 50 MB binary from a local site under a
//! made-up name. The body is read no further than 10 MB, a page converted
//! no further than 2 MB and its text cut at 100 KB, so one huge page costs
//! a bounded amount over a small one, and ten of them in ten steps cost
//! what one does: the memory stays flat. Prints the figures
//! (`benches/README.md` has the latest).

use serde_json::json;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::servers_floods::peak_rss;
use super::support::{Model, scripted_model};
use super::web_fetch::{ALLOWED, configured, fetch};
use super::wire::{Step, Wire, call};

const FIFTY_MB: usize = 50 * 1024 * 1024;

async fn huge_site() -> MockServer {
    let server = MockServer::start().await;
    let paragraph = "<p>All work and no play makes keel a dull agent.</p>\n";
    let page = format!("<html><body>{}</body></html>", paragraph.repeat(FIFTY_MB / 52));
    Mock::given(method("GET"))
        .and(path("/huge"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(page, "text/html; charset=utf-8"))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/small"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(paragraph, "text/html"))
        .mount(&server)
        .await;
    let mut binary = b"\x89PNG\r\n\x1a\n".to_vec();
    binary.resize(FIFTY_MB, 7);
    Mock::given(method("GET"))
        .and(path("/huge.bin"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(binary, "application/octet-stream"))
        .mount(&server)
        .await;
    server
}

/// keel's peak RSS in MiB for a run whose model takes `steps`, and its exit.
async fn peak_mib(steps: Vec<Step>) -> (f64, Option<i32>) {
    let sandbox = configured();
    let model = scripted_model(Wire::Chat, &steps).await;
    let model = Model::chat(&model);
    let args = [&["exec", "--mode", "auto"][..], &model.flags()[..], &["read them"]].concat();
    let (stderr, code, kib, _) = peak_rss(&sandbox, &args);
    assert_eq!(code, Some(0), "{stderr}");
    (kib as f64 / 1024.0, code)
}

#[tokio::test]
#[ignore = "a measurement: run with --ignored --nocapture"]
async fn fetching_50_mb_pages_and_binaries_keeps_keels_memory_flat() {
    let site = huge_site().await;
    let url = |route: &str| format!("http://{ALLOWED}:{}/{route}", site.address().port());
    let answer = || Step::Answer("ok".into());
    let (baseline, _) = peak_mib(vec![fetch(&url("small")), answer()]).await;
    let (one, _) = peak_mib(vec![fetch(&url("huge")), answer()]).await;
    // Each its own query: the same call ten times is a loop keel stops.
    let ten: Vec<Step> =
        (0..10).map(|n| fetch(&url(&format!("huge?n={n}")))).chain([answer()]).collect();
    let (ten, _) = peak_mib(ten).await;
    let four_at_once = Step::Calls {
        text: None,
        calls: (0..4)
            .map(|n| call("web_fetch", json!({ "url": url(&format!("huge?at={n}")) })))
            .collect(),
    };
    let (parallel, _) = peak_mib(vec![four_at_once, answer()]).await;
    let (binary, _) = peak_mib(vec![fetch(&url("huge.bin")), answer()]).await;
    for (name, mib) in [
        ("one small page (baseline)", baseline),
        ("one 50 MB page", one),
        ("ten 50 MB pages, one a step", ten),
        ("four 50 MB pages in one batch", parallel),
        ("one 50 MB binary", binary),
    ] {
        println!("{name}: peak RSS {mib:.1} MiB ({:+.1} MiB over the baseline)", mib - baseline);
    }
    // A page read to its 10 MB cap and converted: bounded over the baseline.
    assert!(one - baseline < 48.0, "one page: {one:.1} MiB against {baseline:.1}");
    // Flat: ten pages one after another cost what one does (allocator slack aside).
    assert!(ten - one < 8.0, "ten pages: {ten:.1} MiB against one's {one:.1}");
    // Four at once hold at most four bodies.
    assert!(parallel - baseline < 4.0 * 48.0, "four at once: {parallel:.1} MiB");
    assert!(binary - baseline < 24.0, "binary: {binary:.1} MiB against {baseline:.1}");
}
