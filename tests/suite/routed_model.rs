//! A scripted Chat Completions model that answers each kind of request
//! from its own script: a parent session and its subagents are told apart
//! by their system prompt or first user message. Unlike wiremock's
//! synchronous responders it can hold a response until another request
//! has arrived (proving two requests were in flight at once) or forever
//! (so a test can kill keel while it waits), so tests synchronise on
//! events instead of sleeping.
//!
//! One thread, its own tokio runtime, HTTP/1.1 with `connection: close`
//! (every request is a fresh connection), 127.0.0.1 only.

use std::collections::BTreeMap;
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::wire::{Step, Wire, render};

/// How long a held response waits for the request it waits on before the
/// test fails (a last-resort bound; the wait normally ends at once).
const HOLD_BOUND: Duration = Duration::from_secs(120);

/// What one request of a route gets.
#[derive(Debug, Clone)]
pub enum Reply {
    Step(Step),
    /// This step, once the route named here has received a request.
    After(&'static str, Step),
    /// Nothing, ever: the test is told (see [`RoutedModel::held`]).
    Hold,
}

/// A kind of request, its predicate and its script.
pub struct Route {
    pub name: &'static str,
    pub matches: Box<dyn Fn(&Value) -> bool + Send + Sync>,
    pub replies: Vec<Reply>,
    /// Every response names its calls `call_0_0`, `call_0_1`… (a server
    /// reusing ids, as keel's own names for an id-less server do).
    pub repeated_ids: bool,
    /// Its responses report no usage at all (some Ollama and llama.cpp
    /// versions, proxies).
    pub without_usage: bool,
}

impl Route {
    /// Requests whose system prompt contains `needle`.
    pub fn system(name: &'static str, needle: &'static str, replies: Vec<Reply>) -> Self {
        let matches = Box::new(move |body: &Value| system_of(body).contains(needle));
        Self { name, matches, replies, repeated_ids: false, without_usage: false }
    }

    /// The same route, its calls' ids repeated from response to response.
    pub fn with_repeated_ids(self) -> Self {
        Self { repeated_ids: true, ..self }
    }

    /// The same route, its responses reporting no usage.
    pub fn without_usage(self) -> Self {
        Self { without_usage: true, ..self }
    }

    /// Requests whose first user message contains `needle`.
    pub fn first_user(name: &'static str, needle: &'static str, replies: Vec<Reply>) -> Self {
        let matches = Box::new(move |body: &Value| first_user_of(body).contains(needle));
        Self { name, matches, replies, repeated_ids: false, without_usage: false }
    }
}

/// One request as received.
#[derive(Debug, Clone)]
pub struct Received {
    pub route: &'static str,
    pub at: Instant,
    pub body: Value,
}

struct Shared {
    routes: Vec<Route>,
    counters: Mutex<BTreeMap<&'static str, usize>>,
    received: Mutex<Vec<Received>>,
    arrivals: watch::Sender<Vec<&'static str>>,
    held: Mutex<std_mpsc::Sender<&'static str>>,
    /// Unique per response, so call ids never repeat.
    rendered: Mutex<usize>,
}

/// The running model.
pub struct RoutedModel {
    pub uri: String,
    shared: Arc<Shared>,
    held: std_mpsc::Receiver<&'static str>,
}

impl RoutedModel {
    pub fn start(routes: Vec<Route>) -> Self {
        let (held_tx, held) = std_mpsc::channel();
        let (arrivals, _) = watch::channel(Vec::new());
        let shared = Arc::new(Shared {
            routes,
            counters: Mutex::new(BTreeMap::new()),
            received: Mutex::new(Vec::new()),
            arrivals,
            held: Mutex::new(held_tx),
            rendered: Mutex::new(0),
        });
        let (addr_tx, addr_rx) = std_mpsc::channel();
        let serving = shared.clone();
        std::thread::spawn(move || {
            let runtime =
                tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async move {
                let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                loop {
                    let Ok((stream, _)) = listener.accept().await else { return };
                    tokio::spawn(serve(stream, serving.clone()));
                }
            });
        });
        let addr = addr_rx.recv().unwrap();
        Self { uri: format!("http://{addr}"), shared, held }
    }

    /// Every request so far, in arrival order.
    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap().clone()
    }

    /// The requests of one route.
    pub fn of(&self, route: &str) -> Vec<Received> {
        self.received().into_iter().filter(|r| r.route == route).collect()
    }

    /// Blocks until a [`Reply::Hold`] request arrives; its route's name.
    pub fn held(&self) -> &'static str {
        self.held.recv_timeout(HOLD_BOUND).expect("no request was held")
    }
}

async fn serve(mut stream: TcpStream, shared: Arc<Shared>) {
    let Some(body) = read_request(&mut stream).await else { return };
    let Some(route) = shared.routes.iter().find(|route| (route.matches)(&body)) else {
        let _ = stream.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n").await;
        panic!("no route for request: {}", system_of(&body));
    };
    let index = {
        let mut counters = shared.counters.lock().unwrap();
        let next = counters.entry(route.name).or_insert(0);
        *next += 1;
        *next - 1
    };
    shared.received.lock().unwrap().push(Received { route: route.name, at: Instant::now(), body });
    shared.arrivals.send_modify(|names| names.push(route.name));
    let reply = route.replies.get(index).or(route.replies.last()).cloned().unwrap_or(Reply::Hold);
    let step = match reply {
        Reply::Step(step) => step,
        Reply::After(other, step) => {
            let mut arrivals = shared.arrivals.subscribe();
            let waited =
                tokio::time::timeout(HOLD_BOUND, arrivals.wait_for(|names| names.contains(&other)))
                    .await;
            assert!(waited.is_ok(), "{} never received a request", other);
            step
        }
        Reply::Hold => {
            let _ = shared.held.lock().unwrap().send(route.name);
            std::future::pending::<()>().await;
            return;
        }
    };
    let unique = if route.repeated_ids {
        0
    } else {
        let mut rendered = shared.rendered.lock().unwrap();
        *rendered += 1;
        *rendered
    };
    let mut sse = render(Wire::Chat, &step, unique);
    if route.without_usage {
        sse = sse.split_inclusive("\n\n").filter(|event| !event.contains("\"usage\"")).collect();
    }
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n",
        sse.len()
    );
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(sse.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// The JSON body of one HTTP/1.1 request (`None` if the peer went away).
async fn read_request(stream: &mut TcpStream) -> Option<Value> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0);
    while buffer.len() < head_end + length {
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
    serde_json::from_slice(&buffer[head_end..head_end + length]).ok()
}

/// The system prompt of a Chat Completions request.
pub fn system_of(body: &Value) -> String {
    body["messages"][0]["content"].as_str().unwrap_or_default().to_owned()
}

/// The first user message of a Chat Completions request (keel's context
/// messages, which are user messages too, left out).
pub fn first_user_of(body: &Value) -> String {
    user_messages(body)
        .into_iter()
        .find(|text| !text.starts_with("<keel_context>"))
        .unwrap_or_default()
}

/// keel's context messages (`<keel_context>`) of a request, in order.
pub fn context_of(body: &Value) -> Vec<String> {
    user_messages(body).into_iter().filter(|text| text.starts_with("<keel_context>")).collect()
}

fn user_messages(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The tool results a request carries, in order (`role: tool` contents).
pub fn tool_results(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// An untrusted result's text without its fence (`protocol::origin`),
/// or the text as it is when it has none.
pub fn unfenced(text: &str) -> String {
    let Some(rest) = text.strip_prefix("<untrusted source=") else { return text.to_owned() };
    let body = rest.split_once(">\n").map_or(rest, |(_, body)| body);
    body.rsplit_once("\n</untrusted>").map_or(body, |(body, _)| body).to_owned()
}

/// The tool names a request offers.
pub fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t["function"]["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}
