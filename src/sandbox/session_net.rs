//! keel's end of a session's network namespace ([`SessionNetwork`]): the
//! keeper process (`jail::shared_net`) it starts once, lazily, for the
//! first jailed command of a session with the network off or allowlist,
//! and holds until the session ends.
//!
//! Invariants: the keeper's stdin is a pipe only keel holds (standard
//! library pipes are close-on-exec, so no command inherits it); dropping
//! the [`SessionNetwork`] (the session's `CommandJail` went away) kills
//! and reaps the keeper, and if keel dies instead the kernel closes the
//! pipe and the keeper ends on end-of-file. Either way the namespace goes
//! with the last process in it, and every jailed process dies with keel.

use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use super::jail::shared_net::SharedNetwork;
use super::netproxy::Bridges;

/// Why the session's namespace could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SessionNetError {
    #[error("cannot start the network namespace keeper: {0}")]
    Spawn(std::io::Error),
    #[error("the network namespace keeper failed: {0}")]
    Refused(String),
}

/// A running keeper and where its namespace is.
#[derive(Debug)]
pub struct SessionNetwork {
    keeper: Child,
    shared: SharedNetwork,
}

impl SessionNetwork {
    /// Starts the keeper (`launcher` is the keel binary) serving the host
    /// ports of `bridges`, and waits for its ready line. Blocking (one
    /// process start, a few milliseconds).
    pub fn start(launcher: &Path, bridges: &Bridges) -> Result<Self, SessionNetError> {
        let mut command = Command::new(launcher);
        command.args(["sandbox-exec", "--netns-keeper"]);
        for bridge in &bridges.host_ports {
            command.arg("--host-port").arg(format!("{}={}", bridge.port, bridge.socket.display()));
        }
        let mut keeper = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(SessionNetError::Spawn)?;
        let mut line = String::new();
        if let Some(stdout) = keeper.stdout.take() {
            let _ = std::io::BufReader::new(stdout).read_line(&mut line);
        }
        match SharedNetwork::parse(&line) {
            Some(shared) if shared.pid == keeper.id() => Ok(Self { keeper, shared }),
            _ => {
                let _ = keeper.kill();
                let _ = keeper.wait();
                let said = line.trim().trim_start_matches("error: ");
                Err(SessionNetError::Refused(if said.is_empty() {
                    "it ended without a word".to_owned()
                } else {
                    said.to_owned()
                }))
            }
        }
    }

    /// Where the namespace is, for the launcher to join.
    pub fn shared(&self) -> SharedNetwork {
        self.shared
    }
}

impl Drop for SessionNetwork {
    fn drop(&mut self) {
        drop(self.keeper.stdin.take());
        let _ = self.keeper.kill();
        let _ = self.keeper.wait();
    }
}
