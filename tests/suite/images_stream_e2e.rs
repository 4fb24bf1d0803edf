//! Images that come with input other than `--image FILE` (issue 39), through
//! the real binary: `--image -` reads a picture from stdin; `--input-stream`
//! lines carry images (`{"path":…}` or `{"base64":…}`) to the message they
//! become, stored before their `input_queued` line so that a SIGKILL and a
//! resume still deliver them; a line whose image cannot go is skipped
//! whole, and said.

use base64::Engine as _;
use serde_json::json;

use super::images_e2e::{images_in, png, seeing};
use super::queue_e2e::{Run, waits_for_go};
use super::support::{Model, Sandbox, read_jsonl, request_bodies, scripted_model};
use super::wire::{Step, Wire};

fn png_of(seed: u32) -> Vec<u8> {
    png(16 + seed, 9)
}

#[tokio::test]
async fn an_image_piped_to_image_dash_reaches_the_model() {
    let sandbox = Sandbox::new();
    let shot = png_of(1);
    let server = scripted_model(Wire::Anthropic, &[Step::Answer("A gradient.".into())]).await;
    let model = Model::on(Wire::Anthropic, &server).named(seeing(Wire::Anthropic));
    let output = sandbox
        .keel_on(&model, &["exec", "--image", "-", "What is in it?"])
        .write_stdin(shot.clone())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let body = request_bodies(&server).await.remove(0);
    assert_eq!(images_in(&body), vec![("image/png".to_owned(), shot)]);
}

#[tokio::test]
async fn image_dash_is_refused_when_something_else_reads_stdin() {
    let sandbox = Sandbox::new();
    let server = scripted_model(Wire::Chat, &[Step::Answer("never".into())]).await;
    let model = Model::on(Wire::Chat, &server).named(seeing(Wire::Chat));
    for args in [
        &["exec", "--input-stream", "--image", "-", "go"][..],
        &["exec", "--answer-from-stdin", "--image", "-", "go"][..],
        &["exec", "--image", "-", "-"][..],
        &["exec", "--image", "-", "--image", "-", "go"][..],
    ] {
        let output = sandbox.run(&model, args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("--image -"), "{args:?}: {stderr}");
    }
    assert!(request_bodies(&server).await.is_empty(), "nothing was sent");
}

#[tokio::test]
async fn stream_lines_bring_images_by_path_and_by_base64_to_the_turns_they_start() {
    let sandbox = Sandbox::new();
    let (first, second) = (png_of(1), png_of(2));
    std::fs::write(sandbox.repo.join("first.png"), &first).unwrap();
    let steps = [Step::Answer("one".into()), Step::Answer("two".into())];
    let server = scripted_model(Wire::Responses, &steps).await;
    let model = Model::on(Wire::Responses, &server).named(seeing(Wire::Responses));
    let mut run = Run::start(&sandbox, &model, &["exec", "--json", "--input-stream"]);
    run.send(json!({"type": "user", "text": "look", "images": [{"path": "first.png"}]}));
    let encoded = base64::engine::general_purpose::STANDARD.encode(&second);
    run.send(json!({"type": "user", "text": "and this", "images": [{"base64": encoded}]}));
    let (lines, code) = run.finish();
    assert_eq!(code, Some(0), "{lines:#?}");
    let requests = request_bodies(&server).await;
    assert_eq!(requests.len(), 2);
    let png = |bytes: &Vec<u8>| ("image/png".to_owned(), bytes.clone());
    assert_eq!(images_in(&requests[0]), [png(&first)]);
    assert_eq!(images_in(&requests[1]), [png(&first), png(&second)], "history, then the new one");
    let log = read_jsonl(&sandbox.only_log_path());
    let queued: Vec<_> = log.iter().filter(|line| line["type"] == "input_queued").collect();
    assert_eq!(queued[1]["images"][0]["media_type"], "image/png", "{:#?}", queued[1]);
    assert!(!std::fs::read_to_string(sandbox.only_log_path()).unwrap().contains(&encoded[..40]));
}

#[tokio::test]
async fn a_line_whose_image_cannot_go_is_skipped_whole_and_said() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.repo.join("shot.png"), png_of(1)).unwrap();
    let server = scripted_model(Wire::Chat, &[Step::Answer("only the text".into())]).await;
    // `m` takes no images.
    let model = Model::chat(&server);
    let lines = [
        json!({"type": "user", "text": "see", "images": [{"path": "shot.png"}]}),
        json!({"type": "user", "text": "gone", "images": [{"path": "missing.png"}]}),
        json!({"type": "user", "text": "just text"}),
    ];
    let stdin: String = lines.iter().map(|line| format!("{line}\n")).collect();
    let output = sandbox
        .keel_on(&model, &["exec", "--json", "--input-stream"])
        .write_stdin(stdin)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("line 1 skipped: `m` does not take images"), "{stderr}");
    assert!(stderr.contains("line 2 skipped: `m` does not take images"), "{stderr}");
    let requests = request_bodies(&server).await;
    assert_eq!(requests.len(), 1, "only the line that could go ran");
    assert!(images_in(&requests[0]).is_empty());
}

#[tokio::test]
async fn an_image_queued_during_a_long_call_survives_sigkill_and_goes_with_its_message() {
    let sandbox = Sandbox::new();
    let shot = png_of(3);
    std::fs::write(sandbox.repo.join("shot.png"), &shot).unwrap();
    let steps = [
        waits_for_go(),
        Step::Answer("finished the interrupted turn".into()),
        Step::Answer("looked at it".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let model = Model::on(Wire::Chat, &server).named(seeing(Wire::Chat));
    let args = ["exec", "--json", "--full-auto", "--input-stream", "begin"];
    let mut run = Run::start(&sandbox, &model, &args);
    run.shell_started();
    run.send(json!({"type": "user", "text": "then this", "images": [{"path": "shot.png"}]}));
    run.until("the input queued", |v| v["type"] == "input_queued");
    run.child.kill().unwrap();
    run.child.wait().unwrap();
    // The picture is gone from the workspace: the store has it.
    std::fs::remove_file(sandbox.repo.join("shot.png")).unwrap();
    let session =
        read_jsonl(&sandbox.only_log_path())[0]["session_id"].as_str().unwrap().to_owned();

    let resumed = sandbox.run(&model, &["exec", "resume", &session, "--json", "--full-auto"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", String::from_utf8_lossy(&resumed.stderr));
    let requests = request_bodies(&server).await;
    assert_eq!(requests.len(), 3);
    assert_eq!(images_in(&requests[2]), [("image/png".to_owned(), shot)]);
}
