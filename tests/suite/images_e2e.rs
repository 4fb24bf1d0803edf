//! Images through the real binary (issue 39): `keel exec --image` and
//! `read_file` of a PNG reach a scripted model as each protocol's image
//! content (the base64 decodes to the file's bytes, the media type is
//! right); a model that takes no images is refused (exit 2, naming the
//! setting) or reads a note; a picture over the limits arrives scaled; the
//! log holds references and the store the bytes, read back on resume.

use base64::Engine as _;
use serde_json::{Value, json};

use super::support::{Model, Sandbox, json_lines, request_bodies, scripted_model};
use super::wire::{Step, Wire, call};

/// A model each protocol's table knows to take images.
pub(super) fn seeing(wire: Wire) -> &'static str {
    match wire {
        Wire::Responses => "gpt-4.1",
        Wire::Chat => "gpt-4o",
        Wire::Anthropic => "claude-sonnet-4",
    }
}

/// A PNG of `width` × `height` (a gradient, so it does not compress away).
pub(super) fn png(width: u32, height: u32) -> Vec<u8> {
    let image = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([(x % 251) as u8, (y % 241) as u8, ((x * 7 + y * 13) % 256) as u8])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    image.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

fn write_bytes(sandbox: &Sandbox, rel: &str, bytes: &[u8]) {
    std::fs::write(sandbox.repo.join(rel), bytes).unwrap();
}

/// Every image in a request body: (media type, decoded bytes), whatever
/// the protocol's shape.
pub(super) fn images_in(body: &Value) -> Vec<(String, Vec<u8>)> {
    let mut found = Vec::new();
    walk(body, &mut found);
    found
}

fn walk(value: &Value, found: &mut Vec<(String, Vec<u8>)>) {
    match value {
        Value::Object(map) => {
            let url = map.get("image_url").and_then(|u| u.as_str().or(u["url"].as_str()));
            if let Some(url) = url {
                let (head, data) = url.split_once(";base64,").expect("a data URL");
                found.push((head.trim_start_matches("data:").to_owned(), decode(data)));
            } else if map.get("type") == Some(&json!("image")) {
                let source = &map["source"];
                assert_eq!(source["type"], "base64");
                let media = source["media_type"].as_str().unwrap().to_owned();
                found.push((media, decode(source["data"].as_str().unwrap())));
            }
            map.values().for_each(|v| walk(v, found));
        }
        Value::Array(items) => items.iter().for_each(|v| walk(v, found)),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
}

fn decode(data: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD.decode(data).expect("valid base64")
}

/// The conversation part of a request body as pretty JSON, base64 shown
/// as its decoded size, for snapshots (the instructions and tools are
/// other snapshots' business).
fn conversation(wire: Wire, body: &Value) -> String {
    let key = match wire {
        Wire::Responses => "input",
        Wire::Chat | Wire::Anthropic => "messages",
    };
    let mut items = body[key].clone();
    let keel_note = |value: &Value| value.to_string().contains("<keel_context>");
    if let Value::Array(list) = &mut items {
        // The environment note (dates, paths) and the system message.
        for item in list.iter_mut() {
            if let Some(Value::Array(blocks)) = item.get_mut("content") {
                blocks.retain(|block| !keel_note(block));
            }
        }
        list.retain(|item| {
            let empty = item["content"].as_array().is_some_and(Vec::is_empty);
            item["role"] != "system" && !empty && !keel_note(item)
        });
    }
    redact(&mut items);
    serde_json::to_string_pretty(&items).unwrap()
}

fn redact(value: &mut Value) {
    match value {
        Value::String(text) => {
            if let Some((head, data)) = text.split_once(";base64,") {
                *text = format!("{head};base64,[{} bytes]", decode(data).len());
            }
        }
        Value::Object(map) => {
            if map.get("type") == Some(&json!("base64"))
                && let Some(Value::String(data)) = map.get_mut("data")
            {
                *data = format!("[{} bytes]", decode(data).len());
            }
            if let Some(Value::Object(control)) = map.get_mut("cache_control") {
                control.clear();
            }
            map.values_mut().for_each(redact);
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// `keel exec --image shot.png` on `wire`: the first request's body.
async fn exec_with_image(wire: Wire) -> (Sandbox, Value, Vec<u8>) {
    let sandbox = Sandbox::new();
    let shot = png(64, 48);
    write_bytes(&sandbox, "shot.png", &shot);
    let server = scripted_model(wire, &[Step::Answer("A gradient.".into())]).await;
    let model = Model::on(wire, &server).named(seeing(wire));
    let output = sandbox.run(&model, &["exec", "--image", "shot.png", "What is in it?"]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let body = request_bodies(&server).await.remove(0);
    (sandbox, body, shot)
}

async fn exec_image_reaches_the_model(wire: Wire) -> String {
    let (_sandbox, body, shot) = exec_with_image(wire).await;
    assert_eq!(images_in(&body), vec![("image/png".to_owned(), shot)]);
    conversation(wire, &body)
}

#[tokio::test]
async fn exec_image_on_responses() {
    insta::assert_snapshot!(exec_image_reaches_the_model(Wire::Responses).await);
}

#[tokio::test]
async fn exec_image_on_chat() {
    insta::assert_snapshot!(exec_image_reaches_the_model(Wire::Chat).await);
}

#[tokio::test]
async fn exec_image_on_anthropic() {
    insta::assert_snapshot!(exec_image_reaches_the_model(Wire::Anthropic).await);
}

/// `read_file` of a PNG on `wire` for `model`: the second request's body.
async fn read_png(wire: Wire, model: &str) -> (Value, Vec<u8>) {
    let sandbox = Sandbox::new();
    let shot = png(30, 20);
    std::fs::create_dir_all(sandbox.repo.join("out")).unwrap();
    write_bytes(&sandbox, "out/shot.png", &shot);
    let steps = [
        Step::Calls { text: None, calls: vec![call("read_file", json!({"path": "out/shot.png"}))] },
        Step::Answer("It is a gradient.".into()),
    ];
    let server = scripted_model(wire, &steps).await;
    let output = sandbox.run(&Model::on(wire, &server).named(model), &["exec", "Look at it"]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    (request_bodies(&server).await.remove(1), shot)
}

async fn read_file_png_reaches_the_model(wire: Wire) -> String {
    let (body, shot) = read_png(wire, seeing(wire)).await;
    assert_eq!(images_in(&body), vec![("image/png".to_owned(), shot)]);
    conversation(wire, &body)
}

#[tokio::test]
async fn read_file_png_on_responses() {
    insta::assert_snapshot!(read_file_png_reaches_the_model(Wire::Responses).await);
}

#[tokio::test]
async fn read_file_png_on_chat() {
    insta::assert_snapshot!(read_file_png_reaches_the_model(Wire::Chat).await);
}

#[tokio::test]
async fn read_file_png_on_anthropic() {
    insta::assert_snapshot!(read_file_png_reaches_the_model(Wire::Anthropic).await);
}

#[tokio::test]
async fn a_model_without_images_reads_a_note_for_a_png() {
    let (body, _) = read_png(Wire::Chat, "m").await;
    assert!(images_in(&body).is_empty(), "no image for a model that takes none");
    let text = conversation(Wire::Chat, &body);
    assert!(text.contains("this model does not take images"), "{text}");
    assert!(text.contains("`[provider] images = true`"), "{text}");
    assert!(!text.contains("binary"), "{text}");
}

#[tokio::test]
async fn exec_image_is_refused_for_a_model_without_images() {
    let sandbox = Sandbox::new();
    write_bytes(&sandbox, "shot.png", &png(8, 8));
    let server = scripted_model(Wire::Chat, &[Step::Answer("never".into())]).await;
    let output =
        sandbox.run(&Model::chat(&server), &["exec", "--json", "--image", "shot.png", "What?"]);
    assert_eq!(output.status.code(), Some(2));
    let lines = json_lines(&output.stdout);
    let result = lines.last().unwrap();
    assert_eq!(result["status"], "usage_error", "{result}");
    let message = result["error"].as_str().unwrap_or_default();
    assert!(message.contains("`m` does not take images"), "{message}");
    assert!(message.contains("`images = true` under `[provider]`"), "{message}");
    assert!(request_bodies(&server).await.is_empty(), "nothing was sent");
}

#[tokio::test]
async fn the_setting_lets_a_local_model_take_images() {
    let sandbox = Sandbox::new();
    let shot = png(8, 8);
    write_bytes(&sandbox, "shot.png", &shot);
    std::fs::write(sandbox.home.join("config.toml"), "[provider]\nimages = true\n").unwrap();
    let server = scripted_model(Wire::Chat, &[Step::Answer("ok".into())]).await;
    let output = sandbox.run(&Model::chat(&server), &["exec", "--image", "shot.png", "What?"]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let body = request_bodies(&server).await.remove(0);
    assert_eq!(images_in(&body), vec![("image/png".to_owned(), shot)]);
}

#[tokio::test]
async fn a_4000_by_3000_png_arrives_scaled_within_the_limits() {
    let sandbox = Sandbox::new();
    write_bytes(&sandbox, "big.png", &png(4000, 3000));
    let server = scripted_model(Wire::Anthropic, &[Step::Answer("big".into())]).await;
    let model = Model::on(Wire::Anthropic, &server).named(seeing(Wire::Anthropic));
    let output = sandbox.run(&model, &["exec", "--image", "big.png", "What?"]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let body = request_bodies(&server).await.remove(0);
    let images = images_in(&body);
    assert_eq!(images.len(), 1);
    let (media, bytes) = &images[0];
    let sent = image::load_from_memory(bytes).unwrap();
    assert_eq!((sent.width(), sent.height()), (2000, 1500));
    assert!(media == "image/png" || media == "image/jpeg", "{media}");
    let base64_len = bytes.len().div_ceil(3) * 4;
    assert!(base64_len <= 5 * 1024 * 1024, "{base64_len} bytes of base64");
}

#[tokio::test]
async fn the_log_references_the_image_and_a_resume_sends_it_again() {
    let (sandbox, _, shot) = exec_with_image(Wire::Chat).await;
    let log = std::fs::read_to_string(sandbox.only_log_path()).unwrap();
    let b64 = base64::engine::general_purpose::STANDARD.encode(&shot);
    assert!(!log.contains(&b64[..64]), "no bytes in the log");
    let message = log.lines().find(|l| l.contains("\"user_message\"")).unwrap();
    let line: Value = serde_json::from_str(message).unwrap();
    let image = &line["images"][0];
    assert_eq!(image["media_type"], "image/png", "{line}");
    let sha = image["sha256"].as_str().unwrap();
    let stored = sandbox.home.join("sessions/images").join(format!("{sha}.png"));
    assert_eq!(std::fs::read(&stored).unwrap(), shot);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&stored).unwrap().permissions().mode() & 0o777, 0o600);

    let server = scripted_model(Wire::Chat, &[Step::Answer("Still a gradient.".into())]).await;
    let model = Model::on(Wire::Chat, &server).named(seeing(Wire::Chat));
    let output = sandbox.run(&model, &["exec", "resume", "--last", "And now?"]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let body = request_bodies(&server).await.remove(0);
    assert_eq!(images_in(&body), vec![("image/png".to_owned(), shot)], "read back from the store");
}

/// `keel exec PROMPT` on `wire` against a model that sees: the first
/// request's body and what keel wrote on stderr.
async fn exec_prompt(sandbox: &Sandbox, wire: Wire, prompt: &str) -> (Value, String) {
    let server = scripted_model(wire, &[Step::Answer("A gradient.".into())]).await;
    let model = Model::on(wire, &server).named(seeing(wire));
    let output = sandbox.run(&model, &["exec", prompt]);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    (request_bodies(&server).await.remove(0), stderr)
}

#[tokio::test]
async fn an_at_mentioned_png_reaches_the_model_as_an_image() {
    let sandbox = Sandbox::new();
    let shot = png(40, 30);
    write_bytes(&sandbox, "shot.png", &shot);
    let (body, stderr) = exec_prompt(&sandbox, Wire::Anthropic, "describe @shot.png").await;
    assert_eq!(images_in(&body), vec![("image/png".to_owned(), shot)], "{stderr}");
    let text = conversation(Wire::Anthropic, &body);
    assert!(text.contains("describe @shot.png"), "{text}");
    assert!(!stderr.contains("not attached"), "{stderr}");
    // And on the OpenAI wire, as a data URL.
    let (body, _) = exec_prompt(&sandbox, Wire::Chat, "describe @shot.png").await;
    assert_eq!(images_in(&body), vec![("image/png".to_owned(), png(40, 30))]);
}

#[tokio::test]
async fn an_at_mentioned_secret_or_outside_file_is_refused_with_a_warning() {
    let sandbox = Sandbox::new();
    sandbox.write(".env", "API_KEY=sk-live-mention-9876\n");
    std::fs::write(sandbox.root().join("outside.png"), png(8, 8)).unwrap();
    let prompt = "describe @.env and @../outside.png, ask @alice";
    let (body, stderr) = exec_prompt(&sandbox, Wire::Anthropic, prompt).await;
    assert!(images_in(&body).is_empty(), "{stderr}");
    let sent = body.to_string();
    assert!(!sent.contains("sk-live-mention"), "{sent}");
    assert!(sent.contains(prompt), "the prompt still goes: {sent}");
    assert!(stderr.contains("@.env not attached"), "{stderr}");
    assert!(stderr.contains("secret"), "{stderr}");
    assert!(stderr.contains("@../outside.png not attached"), "{stderr}");
    // A word naming no file is a person or a handle, not worth a warning.
    assert!(!stderr.contains("@alice"), "{stderr}");
}
