//! The allowlist proxy's one connection: read the request head, judge the
//! host, resolve and connect, then relay.
//!
//! Accepted: `CONNECT host:port` (HTTPS and any other TLS: the tunnel
//! carries bytes keel does not read) and absolute-form requests
//! (`GET http://host:port/path`), which are sent on in origin form with
//! `Connection: close` (one request per connection, so every request's
//! host is judged). Anything else is answered 400. A head longer than
//! [`MAX_HEAD`], or slower than [`HEAD_TIMEOUT`], is refused; a connection
//! with nothing moving for [`IDLE_LIMIT`] is closed.
//!
//! The launcher's forwarder opens each connection with a line
//! `keel-call ID` naming the tool call (the log's attribution; a client
//! that reaches the socket directly may omit or forge it, which changes
//! nothing it may reach).

use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use super::{NetConfig, NetEvent, relay};

/// The longest request head read.
const MAX_HEAD: usize = 64 * 1024;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a client may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// A tunnel or request with no byte either way for this long is closed.
pub(super) const IDLE_LIMIT: Duration = Duration::from_secs(300);
/// The line the launcher's forwarder sends first.
pub const CALL_PREFIX: &str = "keel-call ";

/// What the client asked for.
#[derive(Debug, PartialEq, Eq)]
struct Target {
    tunnel: bool,
    host: String,
    port: u16,
    /// The request line and headers to send on (empty for a tunnel).
    head: Vec<u8>,
}

/// Serves one client connection; each judgement goes to `record`.
pub(super) fn serve(client: UnixStream, config: &NetConfig, record: &impl Fn(NetEvent)) {
    if client.set_read_timeout(Some(HEAD_TIMEOUT)).is_err() {
        return;
    }
    let Ok(reading) = client.try_clone() else { return };
    let mut reader = BufReader::new(reading);
    let mut client = client;
    let mut call_id = String::new();
    let head = match read_head(&mut reader, &mut call_id) {
        Ok(head) => head,
        Err(message) => return answer(&mut client, 400, "Bad Request", &message),
    };
    let target = match parse(&head) {
        Ok(target) => target,
        Err(message) => return answer(&mut client, 400, "Bad Request", &message),
    };
    let verdict = config.allowlist.judge(&target.host);
    let mut event = NetEvent {
        call_id,
        host: target.host.clone(),
        port: target.port,
        allowed: verdict.allowed,
        reason: verdict.reason,
    };
    if !event.allowed {
        let message = format!("denied by keel's network allowlist: {}", event.reason);
        record(event);
        return answer(&mut client, 403, "Forbidden by keel", &message);
    }
    let addresses = match resolve(config, &target.host, target.port) {
        Ok(addresses) => addresses,
        Err(why) => {
            event.allowed = false;
            event.reason = why.clone();
            record(event);
            return answer(&mut client, 403, "Forbidden by keel", &why);
        }
    };
    record(event);
    let Some(mut upstream) = connect(&addresses) else {
        let message = format!("keel's proxy cannot connect to {}:{}", target.host, target.port);
        return answer(&mut client, 502, "Bad Gateway", &message);
    };
    let sent = if target.tunnel {
        client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
    } else {
        upstream.write_all(&target.head)
    };
    // Bytes the client sent after its head (a body, a TLS hello).
    let early = reader.buffer().to_vec();
    if sent.and_then(|()| upstream.write_all(&early)).is_ok() {
        relay::relay_with_idle_limit(client, upstream, IDLE_LIMIT);
    }
}

/// The head up to its blank line, after the optional `keel-call` line.
fn read_head(reader: &mut BufReader<UnixStream>, call_id: &mut String) -> Result<Vec<u8>, String> {
    let mut head = Vec::new();
    loop {
        let before = head.len();
        let read = reader.read_until(b'\n', &mut head).map_err(|error| error.to_string())?;
        if read == 0 {
            return Err("the request ended before its head did".to_owned());
        }
        if head.len() > MAX_HEAD {
            return Err("request head too long".to_owned());
        }
        let line = &head[before..];
        if before == 0
            && let Some(id) = line.strip_prefix(CALL_PREFIX.as_bytes())
        {
            *call_id = String::from_utf8_lossy(id).trim().to_owned();
            head.clear();
            continue;
        }
        if line == b"\r\n" || line == b"\n" {
            return Ok(head);
        }
    }
}

/// The target of a request head (pure; the tests read it).
fn parse(head: &[u8]) -> Result<Target, String> {
    let text = std::str::from_utf8(head).map_err(|_| "the request head is not text".to_owned())?;
    let mut lines = text.split("\r\n").flat_map(|line| line.split('\n'));
    let request = lines.next().unwrap_or_default();
    let mut parts = request.split(' ');
    let (Some(method), Some(uri), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(format!("not an HTTP request line: {request:?}"));
    };
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = split_authority(uri, None)?;
        return Ok(Target { tunnel: true, host, port, head: Vec::new() });
    }
    let Some(rest) = uri.strip_prefix("http://") else {
        return Err(format!(
            "keel's proxy takes absolute http:// URLs and CONNECT only, not {uri:?}"
        ));
    };
    let (authority, path) = match rest.find('/') {
        Some(slash) => (&rest[..slash], &rest[slash..]),
        None => (rest, "/"),
    };
    let (host, port) = split_authority(authority, Some(80))?;
    let mut sent = format!("{method} {path} {version}\r\n");
    for line in lines.filter(|line| !line.is_empty()) {
        let name = line.split(':').next().unwrap_or_default().trim().to_ascii_lowercase();
        if !matches!(
            name.as_str(),
            "proxy-connection" | "proxy-authorization" | "connection" | "keep-alive"
        ) {
            sent.push_str(line);
            sent.push_str("\r\n");
        }
    }
    sent.push_str("Connection: close\r\n\r\n");
    Ok(Target { tunnel: false, host, port, head: sent.into_bytes() })
}

/// `host:port` or `[v6]:port` (the port optional when there is a default).
fn split_authority(authority: &str, default_port: Option<u16>) -> Result<(String, u16), String> {
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let bad = || format!("bad host and port {authority:?}");
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or_else(bad)?;
        (host, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let port = match port {
        Some(port) => port.parse().map_err(|_| bad())?,
        None => default_port.ok_or_else(bad)?,
    };
    if host.is_empty() {
        return Err(bad());
    }
    Ok((host.to_owned(), port))
}

/// Where `host` is: the `[sandbox] hosts` map, else the resolver, minus
/// addresses that would lead back into the host.
pub(super) fn resolve(
    config: &NetConfig,
    host: &str,
    port: u16,
) -> Result<Vec<SocketAddr>, String> {
    let name = host.trim_end_matches('.').to_ascii_lowercase();
    if let Some(address) = config.hosts.get(&name) {
        return Ok(vec![SocketAddr::new(*address, port)]);
    }
    let found: Vec<SocketAddr> = (name.as_str(), port)
        .to_socket_addrs()
        .map_err(|error| format!("keel's proxy cannot resolve {host}: {error}"))?
        .collect();
    let outside: Vec<SocketAddr> =
        found.iter().copied().filter(|address| !leads_into_host(address.ip())).collect();
    if outside.is_empty() && !found.is_empty() {
        return Err(format!(
            "{host} resolves to a loopback, link-local or unspecified address; map it in \
             [sandbox] hosts to allow that deliberately"
        ));
    }
    Ok(outside)
}

fn leads_into_host(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(v4) => v4.is_loopback() || v4.is_link_local() || v4.is_unspecified(),
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_unicast_link_local()
                || v6.to_ipv4_mapped().is_some_and(|v4| leads_into_host(IpAddr::V4(v4)))
        }
    }
}

fn connect(addresses: &[SocketAddr]) -> Option<TcpStream> {
    addresses.iter().find_map(|address| TcpStream::connect_timeout(address, CONNECT_TIMEOUT).ok())
}

/// A short plain-text answer, then the connection closes.
fn answer(client: &mut UnixStream, code: u16, phrase: &str, message: &str) {
    let body = format!("{message}\n");
    let _ = write!(
        client,
        "HTTP/1.1 {code} {phrase}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_and_absolute_requests_name_their_host() {
        let tunnel = parse(b"CONNECT pkgs.example.test:443 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert_eq!(
            (tunnel.tunnel, tunnel.host.as_str(), tunnel.port),
            (true, "pkgs.example.test", 443)
        );
        let plain = parse(
            b"GET http://pkgs.example.test:8080/simple/ HTTP/1.1\r\nHost: pkgs.example.test\r\n\
              Proxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n",
        )
        .unwrap();
        assert_eq!((plain.host.as_str(), plain.port), ("pkgs.example.test", 8080));
        let sent = String::from_utf8(plain.head).unwrap();
        assert!(sent.starts_with("GET /simple/ HTTP/1.1\r\n"), "{sent}");
        assert!(!sent.contains("Proxy-Connection"), "{sent}");
        assert!(sent.ends_with("Accept: */*\r\nConnection: close\r\n\r\n"), "{sent}");
        let v6 = parse(b"CONNECT [::1]:443 HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!(v6.host, "::1");
    }

    #[test]
    fn origin_form_and_https_urls_are_refused() {
        assert!(parse(b"GET /x HTTP/1.1\r\n\r\n").is_err());
        assert!(parse(b"GET https://a.example.test/ HTTP/1.1\r\n\r\n").is_err());
        assert!(parse(b"CONNECT a.example.test HTTP/1.1\r\n\r\n").is_err());
    }

    #[test]
    fn names_resolving_into_the_host_are_refused_unless_mapped() {
        let mut config = NetConfig::default();
        let refused = resolve(&config, "localhost", 80).unwrap_err();
        assert!(refused.contains("loopback"), "{refused}");
        config.hosts.insert("pkgs.example.test".to_owned(), "127.0.0.1".parse().unwrap());
        assert_eq!(
            resolve(&config, "PKGS.example.test", 81).unwrap(),
            vec!["127.0.0.1:81".parse().unwrap()]
        );
    }
}
