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
//!   resolver ([`resolve_host`]) and records its judgements in the same
//!   [`NetLog`].
//!
//! Both listen on unix sockets in a private folder ([`Bridges`]; mode
//! 0700, kept read-only inside the jail) that the jail's launcher reaches
//! from inside the namespace: a path socket is found through the
//! filesystem, not the network namespace. The launcher puts a
//! `127.0.0.1` listener in front of each.
//!
//! A session's listeners are a value, [`NetProxy`] (its `CommandJail`
//! holds it): dropping it stops them and removes their folder, so a
//! second session in one process (`keel mcp-server`, ACP, subagents) has
//! its own sockets, configuration and judgements, and an ended session
//! leaves no socket behind. The judgements wait in the session's
//! [`NetLog`] until the runtime writes them to its log. Listeners are
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
use std::sync::atomic::{AtomicBool, Ordering};
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

/// The judgements of one session (its proxy's and its `web_fetch`
/// hops'), waiting for the runtime to write them to the session's log.
/// Clones share one list.
#[derive(Debug, Clone, Default)]
pub struct NetLog(Arc<Mutex<Vec<NetEvent>>>);

impl NetLog {
    /// Records a judgement (the `network_access` line it becomes).
    pub fn note(&self, event: NetEvent) {
        tracing::info!(
            call_id = %event.call_id, host = %event.host, port = event.port,
            allowed = event.allowed, reason = %event.reason, "network proxy"
        );
        self.events().push(event);
    }

    /// The judgements made for `call_id` since the last call, oldest
    /// first; those of unknown calls go with the first call asked about.
    pub fn take(&self, call_id: &str) -> Vec<NetEvent> {
        let mut events = self.events();
        let (mine, rest): (Vec<NetEvent>, Vec<NetEvent>) = events
            .drain(..)
            .partition(|event| event.call_id == call_id || event.call_id.is_empty());
        *events = rest;
        mine
    }

    /// The denials recorded so far for `call_id`, left for [`Self::take`]
    /// (a client may hide keel's 403 behind "no matching version").
    pub fn denials(&self, call_id: &str) -> Vec<NetEvent> {
        let events = self.events();
        events.iter().filter(|event| !event.allowed && event.call_id == call_id).cloned().collect()
    }

    fn events(&self) -> std::sync::MutexGuard<'_, Vec<NetEvent>> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The same log (one session's), not equal contents.
impl PartialEq for NetLog {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// One session's proxy and host-port bridges: their sockets (in a private
/// folder) and the threads serving them. Dropping it stops the listeners
/// and removes the folder; connections already open run to their end.
#[derive(Debug)]
pub struct NetProxy {
    bridges: Bridges,
    folder: Option<PathBuf>,
    stop: Arc<AtomicBool>,
}

impl NetProxy {
    /// The listeners `config` asks for, their judgements going to `log`:
    /// none with the network on or nothing to bridge.
    pub fn start(config: &NetConfig, log: &NetLog) -> Result<Self, NetProxyError> {
        let stop = Arc::new(AtomicBool::new(false));
        let mut proxy = Self { bridges: Bridges::default(), folder: None, stop };
        let wanted =
            config.allowlist.mode == NetworkMode::Allowlist || !config.host_ports.is_empty();
        if !config.allowlist.mode.is_closed() || !wanted {
            return Ok(proxy);
        }
        let folder = new_folder()?;
        // Set before a listener can fail: a partial start is removed too.
        proxy.folder = Some(folder.clone());
        let shared = Arc::new(config.clone());
        if config.allowlist.mode == NetworkMode::Allowlist {
            let path = folder.join("proxy.sock");
            let listener = listen(&path)?;
            let (shared, log) = (Arc::clone(&shared), log.clone());
            let record = move |event| log.note(event);
            serve(listener, &proxy.stop, move |client| http::serve(client, &shared, &record));
            proxy.bridges.proxy = Some(path);
        }
        for &port in &config.host_ports {
            let path = folder.join(format!("port-{port}.sock"));
            let listener = listen(&path)?;
            serve(listener, &proxy.stop, move |client| forward_to_host(client, port));
            proxy.bridges.host_ports.push(HostPort { port, socket: path });
        }
        Ok(proxy)
    }

    /// The sockets the jail's launcher bridges into a command's namespace.
    pub fn bridges(&self) -> &Bridges {
        &self.bridges
    }
}

impl Drop for NetProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Each listener thread waits in `accept`: a connection wakes it to
        // see the flag.
        for socket in self.bridges.sockets() {
            let _ = UnixStream::connect(socket);
        }
        if let Some(folder) = &self.folder {
            let _ = std::fs::remove_dir_all(folder);
        }
    }
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

/// A fresh private folder for one proxy's sockets (a random name, made
/// new: an existing one is never reused).
fn new_folder() -> Result<PathBuf, NetProxyError> {
    use std::os::unix::fs::DirBuilderExt;
    let mut attempt = 0;
    loop {
        let name = format!("keel-net-{}-{:016x}", std::process::id(), fastrand::u64(..));
        let path = std::env::temp_dir().join(name);
        match std::fs::DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => return Ok(path),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists && attempt < 8 => {
                attempt += 1;
            }
            Err(source) => return Err(NetProxyError::Folder { path, source }),
        }
    }
}

fn listen(path: &Path) -> Result<UnixListener, NetProxyError> {
    UnixListener::bind(path)
        .map_err(|source| NetProxyError::Listen { path: path.to_owned(), source })
}

/// Connections one listener serves at once; past it a client is closed
/// at once (a command that opens sockets in a loop holds no more threads).
pub const MAX_CONNECTIONS: usize = 64;

/// Accepts on `listener` until `stop` is set, each connection on a
/// thread of its own, at most [`MAX_CONNECTIONS`] at a time.
fn serve(
    listener: UnixListener,
    stop: &Arc<AtomicBool>,
    handle: impl Fn(UnixStream) + Send + Sync + Clone + 'static,
) {
    let stop = Arc::clone(stop);
    std::thread::spawn(move || serve_capped(&listener, MAX_CONNECTIONS, &stop, handle));
}

fn serve_capped(
    listener: &UnixListener,
    cap: usize,
    stop: &AtomicBool,
    handle: impl Fn(UnixStream) + Send + Sync + Clone + 'static,
) {
    use std::sync::atomic::AtomicUsize;
    let live = Arc::new(AtomicUsize::new(0));
    for client in listener.incoming().flatten() {
        if stop.load(Ordering::SeqCst) {
            break;
        }
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

    fn allowlist(domains: &[&str]) -> NetConfig {
        let user = domains.iter().map(|d| crate::policy::network::DomainPattern::parse(d).unwrap());
        NetConfig {
            allowlist: NetAllowlist {
                mode: NetworkMode::Allowlist,
                user: user.collect(),
                project: None,
            },
            ..NetConfig::default()
        }
    }

    /// Asks the proxy at `socket` for `host` as call `call_id`; its
    /// status line.
    fn ask(socket: &Path, call_id: &str, host: &str) -> String {
        use std::io::Write;
        let mut client = UnixStream::connect(socket).unwrap();
        client.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(
            client,
            "{CALL_PREFIX}{call_id}\nCONNECT {host}:443 HTTP/1.1\r\nHost: {host}\r\n\r\n"
        )
        .unwrap();
        let mut answer = String::new();
        let _ = client.read_to_string(&mut answer);
        answer.lines().next().unwrap_or_default().to_owned()
    }

    /// Issue 30/31: the listeners were one per process, replaced (their
    /// folder removed) when a session with another configuration started,
    /// and their judgements went to whichever session asked first.
    #[test]
    fn two_sessions_have_their_own_listeners_and_judgements() {
        let (log_a, log_b) = (NetLog::default(), NetLog::default());
        let a = NetProxy::start(&allowlist(&["a.example"]), &log_a).unwrap();
        let b = NetProxy::start(&allowlist(&["b.example"]), &log_b).unwrap();
        let (socket_a, socket_b) =
            (a.bridges().proxy.clone().unwrap(), b.bridges().proxy.clone().unwrap());
        assert_ne!(socket_a.parent(), socket_b.parent());
        assert!(ask(&socket_a, "call_a", "b.example").contains("403"), "a's list, not b's");
        assert!(ask(&socket_b, "call_b", "c.example").contains("403"));
        let taken_a = log_a.take("call_a");
        assert_eq!(taken_a.len(), 1, "{taken_a:?}");
        assert_eq!(taken_a[0].host, "b.example");
        assert!(log_a.take("call_b").is_empty(), "b's judgement is not a's");
        assert_eq!(log_b.denials("call_b").len(), 1);
    }

    /// Issue 31: the sockets' folder stayed in the temp folder for the
    /// process's life (and after a crash of it, forever).
    #[test]
    fn a_dropped_proxy_stops_listening_and_removes_its_folder() {
        let proxy = NetProxy::start(&allowlist(&["a.example"]), &NetLog::default()).unwrap();
        let socket = proxy.bridges().proxy.clone().unwrap();
        let folder = socket.parent().unwrap().to_owned();
        assert!(ask(&socket, "c", "z.example").contains("403"));
        drop(proxy);
        assert!(!folder.exists(), "{} left behind", folder.display());
        assert!(UnixStream::connect(&socket).is_err());
    }

    #[test]
    fn with_the_network_on_nothing_listens() {
        let mut config = allowlist(&["a.example"]);
        config.allowlist.mode = NetworkMode::On;
        let proxy = NetProxy::start(&config, &NetLog::default()).unwrap();
        assert_eq!(proxy.bridges(), &Bridges::default());
    }

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
        let stop = AtomicBool::new(false);
        std::thread::spawn(move || serve_capped(&listener, 2, &stop, handle));
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
