//! keel's side of the jail's network (issue 31): what runs in keel's own
//! process, in the host's network namespace, for the model's commands
//! that live in a private one (`jail::loopback` is the namespace's side).
//!
//! - The allowlist proxy ([`http`]): HTTP in absolute form and HTTPS
//!   `CONNECT`, by host name, judged by `policy::network`; it resolves
//!   names itself (the `[sandbox] hosts` map first, then the system
//!   resolver), refuses IP literals, hosts not on the list and names that
//!   resolve to a loopback, link-local or unspecified address (a listed
//!   name must not become a door to the host's own services; `hosts`
//!   maps one there deliberately), and records each allow and deny
//!   ([`NetEvent`], drained per call by the runtime into the session log).
//! - Host-port bridges: for each `[sandbox] host_ports` entry, a unix
//!   socket whose connections keel forwards to the host's
//!   `127.0.0.1:PORT` (then `[::1]:PORT`).
//!
//! - keel's own HTTP client (`web_fetch`) resolves through the same
//!   resolver ([`resolve_host`]) and records its judgements here too
//!   ([`note`]).
//!
//! Both listen on unix sockets in a private folder ([`Bridges`]; mode
//! 0700, kept read-only inside the jail) that the jail's launcher reaches
//! from inside the namespace: a path socket is found through the
//! filesystem, not the network namespace. The launcher puts a
//! `127.0.0.1` listener in front of each.
//!
//! One set of listeners per process and configuration ([`start`]),
//! served by blocking threads: a command makes few connections, and the
//! proxy must not depend on which async runtime (if any) the caller has.
//! Invariant: nothing here ever connects to a host the allowlist did not
//! allow, and a deny is never silent (logged and answered 403).

mod http;
pub use http::CALL_PREFIX;
pub mod relay;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::policy::network::{NetAllowlist, NetworkMode};

/// The unix sockets the launcher bridges into the jail's namespace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bridges {
    /// The allowlist proxy (allowlist mode only).
    pub proxy: Option<PathBuf>,
    /// Host loopback ports and the socket keel forwards each from.
    pub host_ports: Vec<HostPort>,
}

/// One bridged host port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostPort {
    pub port: u16,
    pub socket: PathBuf,
}

impl Bridges {
    /// Every socket path (the launcher must not cover them).
    pub fn sockets(&self) -> impl Iterator<Item = &Path> {
        self.proxy
            .iter()
            .map(PathBuf::as_path)
            .chain(self.host_ports.iter().map(|h| h.socket.as_path()))
    }

    /// The folder holding the sockets (kept read-only for commands).
    pub fn folder(&self) -> Option<&Path> {
        self.sockets().next().and_then(Path::parent)
    }
}

/// What the proxy and the bridges serve.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetConfig {
    pub allowlist: NetAllowlist,
    /// `[sandbox] hosts`: names the proxy resolves to these addresses
    /// without asking the resolver (a mirror on the LAN, a test's index).
    pub hosts: BTreeMap<String, IpAddr>,
    /// `[sandbox] host_ports`.
    pub host_ports: Vec<u16>,
}

/// One judgement of the proxy, for the session log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetEvent {
    /// The tool call whose command asked (empty when unknown: a client
    /// that reached the socket without the launcher).
    pub call_id: String,
    pub host: String,
    pub port: u16,
    pub allowed: bool,
    pub reason: String,
}

/// Why the listeners could not be started.
#[derive(Debug, thiserror::Error)]
pub enum NetProxyError {
    #[error("cannot create the network bridge folder {path}: {source}", path = path.display())]
    Folder { path: PathBuf, source: std::io::Error },
    #[error("cannot listen on {path}: {source}", path = path.display())]
    Listen { path: PathBuf, source: std::io::Error },
}

/// The listeners of this process: their configuration and sockets.
static RUNNING: Mutex<Option<(NetConfig, Bridges)>> = Mutex::new(None);
/// Judgements not yet taken by [`take_events`].
static EVENTS: Mutex<Vec<NetEvent>> = Mutex::new(Vec::new());

/// The bridges for `config`: none with the network on, else the running
/// listeners when their configuration is the same, else new ones.
pub fn start(config: &NetConfig) -> Result<Bridges, NetProxyError> {
    let wanted = config.allowlist.mode == NetworkMode::Allowlist || !config.host_ports.is_empty();
    if !config.allowlist.mode.is_closed() || !wanted {
        return Ok(Bridges::default());
    }
    let mut running = RUNNING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((same, bridges)) = running.as_ref()
        && same == config
    {
        return Ok(bridges.clone());
    }
    let folder = new_folder()?;
    let shared = Arc::new(config.clone());
    let mut bridges = Bridges::default();
    if config.allowlist.mode == NetworkMode::Allowlist {
        let path = folder.join("proxy.sock");
        let listener = listen(&path)?;
        let shared = Arc::clone(&shared);
        serve(listener, move |client| http::serve(client, &shared, record));
        bridges.proxy = Some(path);
    }
    for &port in &config.host_ports {
        let path = folder.join(format!("port-{port}.sock"));
        let listener = listen(&path)?;
        serve(listener, move |client| forward_to_host(client, port));
        bridges.host_ports.push(HostPort { port, socket: path });
    }
    if let Some((_, old)) = running.take()
        && let Some(old_folder) = old.folder()
    {
        let _ = std::fs::remove_dir_all(old_folder);
    }
    *running = Some((config.clone(), bridges.clone()));
    Ok(bridges)
}

/// The judgements made for `call_id` since the last call, oldest first;
/// those of unknown calls go with the first call asked about.
pub fn take_events(call_id: &str) -> Vec<NetEvent> {
    let mut events = EVENTS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (mine, rest): (Vec<NetEvent>, Vec<NetEvent>) =
        events.drain(..).partition(|event| event.call_id == call_id || event.call_id.is_empty());
    *events = rest;
    mine
}

/// The denials recorded so far for `call_id`, left for [`take_events`]
/// (a client may hide keel's 403 behind "no matching version").
pub fn denials(call_id: &str) -> Vec<NetEvent> {
    let events = EVENTS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    events.iter().filter(|event| !event.allowed && event.call_id == call_id).cloned().collect()
}

/// Where `host` is for keel's own HTTP client (`web::fetch`): the proxy's
/// resolver, so the `[sandbox] hosts` map and the refusal of names that
/// resolve into the host hold for it too. Blocking.
pub fn resolve_host(
    hosts: &BTreeMap<String, IpAddr>,
    host: &str,
    port: u16,
) -> Result<Vec<std::net::SocketAddr>, String> {
    let config = NetConfig { hosts: hosts.clone(), ..NetConfig::default() };
    http::resolve(&config, host, port)
}

/// Records a judgement made outside the proxy (a `web_fetch` hop): the
/// same log line (`network_access`) a command's request gets.
pub fn note(event: NetEvent) {
    record(event);
}

fn record(event: NetEvent) {
    tracing::info!(
        call_id = %event.call_id, host = %event.host, port = event.port,
        allowed = event.allowed, reason = %event.reason, "network proxy"
    );
    EVENTS.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(event);
}

/// A fresh private folder for this process's sockets.
fn new_folder() -> Result<PathBuf, NetProxyError> {
    use std::os::unix::fs::DirBuilderExt;
    static COUNT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("keel-net-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&path);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&path)
        .map_err(|source| NetProxyError::Folder { path: path.clone(), source })?;
    Ok(path)
}

fn listen(path: &Path) -> Result<UnixListener, NetProxyError> {
    UnixListener::bind(path)
        .map_err(|source| NetProxyError::Listen { path: path.to_owned(), source })
}

/// Connections one listener serves at once; past it a client is closed
/// at once (a command that opens sockets in a loop holds no more threads).
pub const MAX_CONNECTIONS: usize = 64;

/// Accepts on `listener` forever, each connection on a thread of its own,
/// at most [`MAX_CONNECTIONS`] at a time.
fn serve(listener: UnixListener, handle: impl Fn(UnixStream) + Send + Sync + Clone + 'static) {
    std::thread::spawn(move || serve_capped(&listener, MAX_CONNECTIONS, handle));
}

fn serve_capped(
    listener: &UnixListener,
    cap: usize,
    handle: impl Fn(UnixStream) + Send + Sync + Clone + 'static,
) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let live = Arc::new(AtomicUsize::new(0));
    for client in listener.incoming().flatten() {
        if live.fetch_add(1, Ordering::SeqCst) >= cap {
            live.fetch_sub(1, Ordering::SeqCst);
            tracing::warn!(cap, "network bridge: too many connections at once, one refused");
            let _ = client.shutdown(std::net::Shutdown::Both);
            continue;
        }
        let (handle, live) = (handle.clone(), Arc::clone(&live));
        std::thread::spawn(move || {
            handle(client);
            live.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

/// A bridged host port: the host's loopback, IPv4 then IPv6.
fn forward_to_host(client: UnixStream, port: u16) {
    let upstream = std::net::TcpStream::connect(("127.0.0.1", port))
        .or_else(|_| std::net::TcpStream::connect(("::1", port)));
    if let Ok(upstream) = upstream {
        relay::relay(client, upstream);
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::time::Duration;

    use super::*;

    /// Issue 31: the proxy's listeners took every connection, each on a
    /// thread, without bound; past the cap a client is closed at once.
    #[test]
    fn connections_past_the_cap_are_closed_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let listener = listen(&path).unwrap();
        let (release, held) = std::sync::mpsc::channel::<()>();
        let held = Arc::new(Mutex::new(held));
        let handle = move |_client: UnixStream| {
            let _ = held.lock().unwrap().recv_timeout(Duration::from_secs(30));
        };
        std::thread::spawn(move || serve_capped(&listener, 2, handle));
        let first = UnixStream::connect(&path).unwrap();
        let second = UnixStream::connect(&path).unwrap();
        let mut third = UnixStream::connect(&path).unwrap();
        third.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut got = Vec::new();
        // End-of-file (not a timeout): the third was refused.
        assert_eq!(third.read_to_end(&mut got).unwrap(), 0);
        drop((first, second));
        release.send(()).unwrap();
        release.send(()).unwrap();
    }
}
