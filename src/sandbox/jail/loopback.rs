//! The private network namespace's side (network off or allowlist): its
//! loopback device brought up, and `127.0.0.1` listeners in front of the
//! unix sockets keel serves outside (`sandbox::netproxy`): the allowlist
//! proxy on a free port (its address goes into the command's
//! `HTTP_PROXY` and friends) and each bridged host port on its own number.
//!
//! [`bring_up`] runs in the launcher right after `unshare` (before
//! seccomp, which refuses other netlink families to the command). The
//! listeners are threads of the jail's init, started once it is
//! confined (a process that unshared a PID namespace cannot start
//! threads, so the launcher cannot hold them): they live exactly as long
//! as the command, and hold no more rights than it.
//!
//! `lo` is brought up with one `RTM_NEWLINK` netlink message (no `ip`
//! binary, no `ioctl`, which would need `unsafe`): a fresh namespace's
//! loopback is always interface 1, and the launcher holds
//! `CAP_NET_ADMIN` over the namespace it created (as root, or through
//! the user namespace it created with it).

use std::io::Write;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketType};

use crate::sandbox::netproxy::{Bridges, relay};

/// Why the namespace's network could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum LoopbackError {
    #[error("cannot bring up the loopback device: {0}")]
    Netlink(rustix::io::Errno),
    #[error("the kernel refused to bring up the loopback device (error {0})")]
    Refused(i32),
    #[error("cannot listen on 127.0.0.1:{port} in the jail: {source}")]
    Listen { port: u16, source: std::io::Error },
}

/// The environment the command gets in allowlist mode.
pub const PROXY_VARIABLES: [&str; 5] =
    ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"];
const NO_PROXY: &str = "localhost,127.0.0.1,::1";

/// `RTM_NEWLINK` on interface 1 with `IFF_UP` set, acknowledged.
pub fn bring_up() -> Result<(), LoopbackError> {
    const RTM_NEWLINK: u16 = 16;
    const NLM_F_REQUEST_ACK: u16 = 0x1 | 0x4;
    const NLMSG_ERROR: u16 = 2;
    const IFF_UP: u32 = 1;
    const LOOPBACK_INDEX: i32 = 1;
    let socket = rustix::net::socket(AddressFamily::NETLINK, SocketType::RAW, None)
        .map_err(LoopbackError::Netlink)?;
    let mut message = Vec::with_capacity(32);
    message.extend_from_slice(&32u32.to_ne_bytes()); // nlmsg_len
    message.extend_from_slice(&RTM_NEWLINK.to_ne_bytes());
    message.extend_from_slice(&NLM_F_REQUEST_ACK.to_ne_bytes());
    message.extend_from_slice(&1u32.to_ne_bytes()); // seq
    message.extend_from_slice(&0u32.to_ne_bytes()); // pid: the kernel
    message.extend_from_slice(&[0, 0]); // ifi_family AF_UNSPEC, pad
    message.extend_from_slice(&0u16.to_ne_bytes()); // ifi_type
    message.extend_from_slice(&LOOPBACK_INDEX.to_ne_bytes());
    message.extend_from_slice(&IFF_UP.to_ne_bytes()); // ifi_flags
    message.extend_from_slice(&IFF_UP.to_ne_bytes()); // ifi_change
    rustix::net::send(&socket, &message, SendFlags::empty()).map_err(LoopbackError::Netlink)?;
    let mut reply = [0u8; 256];
    let (read, _) = rustix::net::recv(&socket, &mut reply, RecvFlags::empty())
        .map_err(LoopbackError::Netlink)?;
    let field = |at: usize| reply.get(at..at + 4).and_then(|bytes| bytes.try_into().ok());
    let kind = reply.get(4..6).and_then(|bytes| bytes.try_into().ok()).map(u16::from_ne_bytes);
    match (kind, field(16).map(i32::from_ne_bytes)) {
        (Some(NLMSG_ERROR), Some(0)) if read >= 20 => Ok(()),
        (Some(NLMSG_ERROR), Some(error)) => Err(LoopbackError::Refused(-error)),
        _ => Err(LoopbackError::Refused(0)),
    }
}

/// Starts the listeners for `bridges` (each on a thread that lives as
/// long as the launcher). Returns the variables the command gets.
pub fn listen(bridges: &Bridges, call_id: &str) -> Result<Vec<(String, String)>, LoopbackError> {
    let mut variables = Vec::new();
    if let Some(proxy) = &bridges.proxy {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .map_err(|source| LoopbackError::Listen { port: 0, source })?;
        let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
        let url = format!("http://127.0.0.1:{port}");
        for name in PROXY_VARIABLES {
            variables.push((name.to_owned(), url.clone()));
        }
        for name in ["NO_PROXY", "no_proxy"] {
            variables.push((name.to_owned(), NO_PROXY.to_owned()));
        }
        let preamble = format!("{}{call_id}\n", crate::sandbox::netproxy::CALL_PREFIX);
        forward(listener, proxy.clone(), Some(preamble));
    }
    for bridge in &bridges.host_ports {
        let v4 = TcpListener::bind((Ipv4Addr::LOCALHOST, bridge.port))
            .map_err(|source| LoopbackError::Listen { port: bridge.port, source })?;
        forward(v4, bridge.socket.clone(), None);
        // Best effort: a client that tries ::1 first still finds it.
        if let Ok(v6) = TcpListener::bind(SocketAddr::from((Ipv6Addr::LOCALHOST, bridge.port))) {
            forward(v6, bridge.socket.clone(), None);
        }
    }
    Ok(variables)
}

/// Accepts on `listener` and relays each connection to the unix `socket`.
fn forward(listener: TcpListener, socket: PathBuf, preamble: Option<String>) {
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let socket = socket.clone();
            let preamble = preamble.clone();
            std::thread::spawn(move || relay_to(client, &socket, preamble.as_deref()));
        }
    });
}

fn relay_to(client: TcpStream, socket: &Path, preamble: Option<&str>) {
    let Ok(mut upstream) = UnixStream::connect(socket) else { return };
    if let Some(preamble) = preamble
        && upstream.write_all(preamble.as_bytes()).is_err()
    {
        return;
    }
    relay::relay(client, upstream);
}
