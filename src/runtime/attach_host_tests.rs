use std::os::unix::fs::PermissionsExt;

use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

use super::*;
use crate::runtime::TypedInput;

fn shell(command: &str) -> ToolCall {
    ToolCall {
        call_id: "c1".into(),
        name: "shell".into(),
        arguments: serde_json::json!({ "command": command }).to_string(),
        item_id: None,
        provider_data: None,
    }
}

/// Never answers; counts `answered_elsewhere`.
struct Silent(Arc<AtomicUsize>);

impl Approver for Silent {
    fn decide<'a>(&'a mut self, _: &'a ToolCall, _: &'a str) -> BoxFuture<'a, ApprovalAnswer> {
        Box::pin(std::future::pending())
    }
    fn answered_elsewhere(&mut self, _call_id: &str) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

struct Nowhere;

impl EventSink for Nowhere {
    fn emit(&mut self, _event: RuntimeEvent) {}
}

struct Client {
    reader: BufReader<tokio::net::unix::OwnedReadHalf>,
    writer: tokio::net::unix::OwnedWriteHalf,
}

impl Client {
    async fn connect(path: &Path) -> Self {
        let (read, writer) = UnixStream::connect(path).await.unwrap().into_split();
        let mut client = Self { reader: BufReader::new(read), writer };
        client.send(&AttacherLine::Hello { v: WIRE_VERSION }).await;
        client
    }
    async fn send(&mut self, line: &AttacherLine) {
        self.writer.write_all(encode(line).as_bytes()).await.unwrap();
    }
    async fn next(&mut self) -> Option<HostLine> {
        let line = read_line(&mut self.reader, MAX_HOST_LINE).await.unwrap()?;
        Some(parse(&line).unwrap())
    }
    /// Reads until a line matches.
    async fn until(&mut self, wanted: impl Fn(&HostLine) -> bool) -> HostLine {
        loop {
            let line = self.next().await.expect("the owner closed the connection");
            if wanted(&line) {
                return line;
            }
        }
    }
}

fn listening(
    home: &Path,
) -> (AttachHost, Listening, tokio::sync::mpsc::UnboundedReceiver<TypedInput>) {
    let host = AttachHost::new();
    let (input, typed) = InputSender::pair();
    let guard = host.listen(home, "s1", home.join("missing.jsonl"), Some(input)).unwrap();
    (host, guard, typed)
}

#[tokio::test]
async fn an_attacher_answers_the_open_approval_and_types_input() {
    let home = tempfile::tempdir().unwrap();
    let (host, guard, mut typed) = listening(home.path());
    let dir_mode = std::fs::metadata(home.path().join("attach")).unwrap().permissions().mode();
    let sock_mode = std::fs::metadata(guard.path()).unwrap().permissions().mode();
    assert_eq!((dir_mode & 0o777, sock_mode & 0o777), (0o700, 0o600));

    let elsewhere = Arc::new(AtomicUsize::new(0));
    let mut approver = host.approver(Box::new(Silent(elsewhere.clone())));
    let asking = tokio::spawn(async move {
        let answer = approver.decide(&shell("rm -rf build"), "not read-only").await;
        (approver, answer)
    });
    // Connected after the question opened: it is in the opening lines.
    let mut client = Client::connect(guard.path()).await;
    assert!(matches!(client.next().await, Some(HostLine::Hello { v: 1, .. })));
    let HostLine::Approval { id, text, .. } =
        client.until(|line| matches!(line, HostLine::Approval { .. })).await
    else {
        unreachable!()
    };
    assert!(text.unwrap().contains("rm -rf build"));
    client.send(&AttacherLine::Answer { id: id + 7, approve: true, note: None }).await;
    client.until(|line| matches!(line, HostLine::Notice { .. })).await;
    client.send(&AttacherLine::Answer { id, approve: false, note: Some("not now".into()) }).await;
    let (_approver, answer) = asking.await.unwrap();
    assert_eq!((answer.approved, answer.note.as_deref()), (false, Some("not now")));
    assert_eq!(elsewhere.load(Ordering::SeqCst), 1, "the owner's dialog was told");
    let settled = client.until(|line| matches!(line, HostLine::Settled { .. })).await;
    assert_eq!(settled, HostLine::Settled { id, approved: false, by: "attacher".into() });

    client.send(&AttacherLine::Prompt { text: "and the docs".into(), steer: true }).await;
    let input = typed.recv().await.unwrap();
    assert_eq!((input.text.as_str(), input.mode), ("and the docs", Delivery::Steer));
    drop(guard);
    assert!(!home.path().join("attach/s1.sock").exists(), "the socket is removed");
}

#[tokio::test]
async fn events_stream_to_attachers_and_a_plan_review_is_not_theirs() {
    let home = tempfile::tempdir().unwrap();
    let (host, guard, _typed) = listening(home.path());
    let mut client = Client::connect(guard.path()).await;
    // The missing log: said, not fatal.
    client.until(|line| matches!(line, HostLine::Notice { .. })).await;
    let mut sink = host.sink(Box::new(Nowhere));
    sink.emit(RuntimeEvent::TurnStarted { turn: 4 });
    assert_eq!(client.next().await, Some(HostLine::TurnStarted { turn: 4 }));

    let plan = ToolCall { name: "submit_plan".into(), ..shell("x") };
    let (id, mut from_attacher) = host.open_approval(&plan, "review the plan");
    let line = client.next().await.unwrap();
    assert!(matches!(line, HostLine::Approval { text: None, .. }), "{line:?}");
    assert!(!host.answer(id, true, None), "a plan review is answered by its owner");
    assert!(from_attacher.try_recv().is_err());
}

#[tokio::test]
async fn wrong_versions_long_lines_and_stale_sockets() {
    let home = tempfile::tempdir().unwrap();
    // A socket left by a dead owner is replaced; a file that is not one is not.
    let dir = home.path().join("attach");
    std::fs::create_dir_all(&dir).unwrap();
    drop(std::os::unix::net::UnixListener::bind(dir.join("s1.sock")).unwrap());
    let (_host, guard, _typed) = listening(home.path());
    std::fs::write(dir.join("s2.sock"), "not a socket").unwrap();
    let refused =
        AttachHost::new().listen(home.path(), "s2", dir.join("x"), Some(InputSender::pair().0));
    assert!(matches!(refused, Err(AttachError::NotASocket { .. })));

    let (read, mut writer) = UnixStream::connect(guard.path()).await.unwrap().into_split();
    let mut client = Client {
        reader: BufReader::new(read),
        writer: {
            writer.write_all(b"{\"type\":\"hello\",\"v\":99}\n").await.unwrap();
            writer
        },
    };
    assert!(matches!(client.next().await, Some(HostLine::Bye { .. })));
    assert!(client.next().await.is_none(), "closed after the bye");

    let mut client = Client::connect(guard.path()).await;
    client.until(|line| matches!(line, HostLine::Notice { .. })).await;
    let long = vec![b'x'; MAX_ATTACHER_LINE + 10];
    // The owner stops reading at the cap and closes the connection.
    let _ = client.writer.write_all(&long).await;
    while let Some(line) = client.next().await {
        assert!(!matches!(line, HostLine::Approval { .. }), "{line:?}");
    }
}
