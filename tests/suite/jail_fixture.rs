//! The fixture of the adversarial sandbox corpus (`sandbox_escapes.rs`):
//! a workspace and canaries **outside** it and outside every temp folder
//! (under `/var/lib/keel-tests` as root, so `nobody` can reach them), the
//! host-side bait a command might go for (TCP and UDP listeners on
//! loopback, unix sockets outside the workspace and in `/tmp` as an
//! ssh-agent's would be, an abstract socket, a host process to signal, a
//! provider key in keel's own environment), and the checks that none of
//! it was touched. Commands run through the real binary: `keel tool shell
//! JSON --mode auto --yes`, as root or as `nobody` (`setpriv`).
//!
//! For the tests of both users: [`as_root_and_nobody!`] makes a root and
//! a `nobody` test of each `fn(User)`; [`sandbox_of`] and [`hand_over`]
//! give an e2e [`Sandbox`] (repository and KEEL_HOME) to the user, as a
//! real user's are theirs, with its `keel` run as that user.

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::net::{TcpListener, UdpSocket};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use serde_json::{Value, json};

use super::support::Sandbox;

pub const KEEL: &str = env!("CARGO_BIN_EXE_keel");

/// The keel that runs the corpus: this build, or `KEEL_CORPUS_BIN` (e.g.
/// an older release, to see which cases it let through).
fn keel_under_test() -> String {
    std::env::var("KEEL_CORPUS_BIN").unwrap_or_else(|_| KEEL.to_owned())
}
/// A provider key keel holds; no command may ever see it.
pub const SECRET: &str = "sk-canary-7f3a9b";
/// The system's python (a pyenv shim under `/root` is not `nobody`'s).
pub const PYTHON: &str = "/usr/bin/python3";
pub const NOBODY: [&str; 4] = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum User {
    Root,
    Nobody,
}

impl User {
    /// The user's id (and group id).
    pub fn uid(self) -> u32 {
        match self {
            User::Root => 0,
            User::Nobody => 65534,
        }
    }
}

pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Says on stderr why a test did nothing (a plain run shows it).
pub fn note(message: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{message}");
}

/// Fails the test when `user` cannot run here. The tests that call it
/// are `#[ignore]`d (a plain `cargo test` as another user cannot run
/// them), and `.ci/run` runs them as root with `--ignored`: there a
/// missing precondition is a failure, never a pass.
pub fn require(user: User) {
    if let Some(reason) = unavailable(user) {
        panic!("cannot run as {user:?} here: {reason}");
    }
}

/// Why `user` cannot run here.
fn unavailable(user: User) -> Option<&'static str> {
    match user {
        User::Root if !is_root() => Some("needs root"),
        User::Nobody if !is_root() => Some("needs root to switch to nobody"),
        User::Nobody if Command::new("setpriv").arg("--version").output().is_err() => {
            Some("setpriv is not installed")
        }
        User::Root | User::Nobody => None,
    }
}

/// Makes `as_root` and `as_nobody` tests of each named `fn(User)` (in a
/// module of the function's name); both need root, so `#[ignore]`d, and
/// `.ci/run` runs them. The caller has `User` in scope.
macro_rules! as_root_and_nobody {
    ($($name:ident;)*) => {$(
        mod $name {
            use super::*;
            #[test]
            #[ignore = "needs root: .ci/run runs it with --ignored"]
            fn as_root() {
                super::$name(User::Root);
            }
            #[test]
            #[ignore = "needs root: .ci/run runs it with --ignored"]
            fn as_nobody() {
                super::$name(User::Nobody);
            }
        }
    )*};
}
pub(crate) use as_root_and_nobody;

/// An e2e sandbox for `user` (after [`require`]), outside every temp
/// folder, whose `keel` runs as `user`; [`hand_over`] gives it to them
/// once the test has set it up.
pub fn sandbox_of(user: User) -> Sandbox {
    let sandbox = Sandbox::in_dir(&base_parent());
    match user {
        User::Root => sandbox,
        User::Nobody => sandbox.run_under(&NOBODY),
    }
}

/// Gives everything in `sandbox` to its user (a no-op for root).
pub fn hand_over(user: User, sandbox: &Sandbox) {
    if user == User::Nobody {
        run_ok(Command::new("chown").args(["-R", "65534:65534"]).arg(sandbox.root()));
    }
}

/// `program` as `user`.
pub fn command_as(user: User, program: &str) -> Command {
    match user {
        User::Root => Command::new(program),
        User::Nobody => {
            let mut command = Command::new(NOBODY[0]);
            command.args(&NOBODY[1..]).arg(program);
            command
        }
    }
}

/// Where bases go: outside every temp folder, reachable by `nobody`.
fn base_parent() -> PathBuf {
    let parent = PathBuf::from("/var/lib/keel-tests");
    std::fs::create_dir_all(&parent).unwrap();
    run_ok(Command::new("chmod").arg("755").arg(&parent));
    parent
}

fn run_ok(command: &mut Command) {
    let status = command.status().unwrap();
    assert!(status.success(), "{command:?}");
}

/// What one case ran and what came back.
pub struct Outcome {
    pub envelope: Value,
    /// Output and error text together: the refusal's reason is in it.
    pub text: String,
}

pub struct Fixture {
    pub user: User,
    base: tempfile::TempDir,
    temp_home: Option<tempfile::TempDir>,
    pub ws: PathBuf,
    pub outside: PathBuf,
    pub home: PathBuf,
    pub keel_home: PathBuf,
    pub marker: String,
    tcp: TcpListener,
    udp: UdpSocket,
    unix_outside: UnixListener,
    unix_tmp: UnixListener,
    _unix_tmp_dir: tempfile::TempDir,
    abstract_socket: UnixListener,
    host_process: Child,
    snapshot: BTreeMap<PathBuf, String>,
}

impl Fixture {
    /// A fresh fixture; `home_in_tmp` puts `HOME` and `KEEL_HOME` in
    /// `/tmp` (a writable root of the sandbox).
    pub fn new(user: User, home_in_tmp: bool) -> Self {
        Self::configured(user, home_in_tmp, "")
    }

    /// A fresh fixture whose keel reads `config` (`config.toml`).
    pub fn configured(user: User, home_in_tmp: bool, config: &str) -> Self {
        let base = tempfile::tempdir_in(base_parent()).unwrap();
        let ws = base.path().join("ws");
        let outside = base.path().join("outside");
        std::fs::create_dir_all(outside.join("dir")).unwrap();
        std::fs::write(outside.join("canary.txt"), "canary\n").unwrap();
        std::fs::write(outside.join("script.sh"), "echo hi\n").unwrap();
        std::fs::create_dir_all(ws.join("vendor/lib/.git")).unwrap();
        std::fs::write(ws.join("vendor/lib/.git/config"), "[core]\n").unwrap();
        std::fs::write(ws.join("README"), "readme\n").unwrap();
        run_ok(Command::new("git").args(["init", "-q"]).current_dir(&ws));
        let temp_home = home_in_tmp.then(|| tempfile::tempdir_in("/tmp").unwrap());
        let home = match &temp_home {
            Some(dir) => dir.path().join("home"),
            None => base.path().join("home"),
        };
        let keel_home = home.join(".keel");
        std::fs::create_dir_all(&keel_home).unwrap();
        // keel makes its home owner-only at every start; made so here, the
        // before/after comparison sees only what a command changed.
        std::fs::set_permissions(&keel_home, std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .unwrap();
        std::fs::write(home.join(".bashrc"), "# rc\n").unwrap();
        std::fs::write(keel_home.join("config.toml"), config).unwrap();
        let unix_tmp_dir = tempfile::Builder::new().prefix("ssh-").tempdir_in("/tmp").unwrap();
        let marker = format!("keelmark{}", fastrand::u64(..));
        let fixture_owner = |path: &Path| {
            if user == User::Nobody {
                run_ok(Command::new("chown").args(["-R", "65534:65534"]).arg(path));
            }
        };
        fixture_owner(base.path());
        if let Some(dir) = &temp_home {
            fixture_owner(dir.path());
        }
        let unix_outside = listener(&outside.join("agent.sock"));
        let unix_tmp = listener(&unix_tmp_dir.path().join("agent.sock"));
        let name = format!("keel-abstract-{marker}");
        let abstract_socket =
            UnixListener::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap())
                .unwrap();
        abstract_socket.set_nonblocking(true).unwrap();
        let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
        tcp.set_nonblocking(true).unwrap();
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        udp.set_nonblocking(true).unwrap();
        let host_process = host_process(user, &marker);
        let mut fixture = Fixture {
            user,
            base,
            temp_home,
            ws,
            outside,
            home,
            keel_home,
            marker,
            tcp,
            udp,
            unix_outside,
            unix_tmp,
            _unix_tmp_dir: unix_tmp_dir,
            abstract_socket,
            host_process,
            snapshot: BTreeMap::new(),
        };
        fixture.snapshot = fixture.state();
        fixture
    }

    /// `script` with the fixture's paths and bait filled in.
    pub fn fill(&self, script: &str) -> String {
        script
            .replace("{out}", &self.outside.display().to_string())
            .replace("{ws}", &self.ws.display().to_string())
            .replace("{home}", &self.home.display().to_string())
            .replace("{keel_home}", &self.keel_home.display().to_string())
            .replace("{keel}", KEEL)
            .replace("{py}", PYTHON)
            .replace("{marker}", &self.marker)
            .replace("{tcp}", &self.tcp.local_addr().unwrap().port().to_string())
            .replace("{udp}", &self.udp.local_addr().unwrap().port().to_string())
            .replace(
                "{sock_tmp}",
                &self.unix_tmp.local_addr().unwrap().as_pathname().unwrap().display().to_string(),
            )
            .replace("{hostpid}", &self.host_process.id().to_string())
    }

    /// Runs `script` through `keel tool shell` in the workspace.
    pub fn shell(&self, script: &str, workdir: Option<&str>) -> Outcome {
        self.shell_timing_out(script, workdir, 60_000)
    }

    /// [`Self::shell`] killed after `timeout_ms`.
    pub fn shell_timing_out(
        &self,
        script: &str,
        workdir: Option<&str>,
        timeout_ms: u64,
    ) -> Outcome {
        let mut args = json!({"command": self.fill(script), "timeout_ms": timeout_ms});
        if let Some(dir) = workdir {
            args["workdir"] = json!(dir);
        }
        self.tool_shell(&args)
    }

    /// Starts `script` as a background command on a terminal (`pty`)
    /// through `keel tool shell`; one that ends within the first second is
    /// reported with its output.
    pub fn shell_on_terminal(&self, script: &str) -> Outcome {
        self.tool_shell(&json!({"command": self.fill(script), "background": true, "pty": true}))
    }

    fn tool_shell(&self, args: &Value) -> Outcome {
        let output = command_as(self.user, &keel_under_test())
            .args(["tool", "shell", &args.to_string(), "--mode", "auto", "--yes"])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("KEEL_HOME", &self.keel_home)
            .env("OPENAI_API_KEY", SECRET)
            .current_dir(&self.ws)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        let envelope: Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|_| panic!("keel did not answer (was it killed?): {stderr}"));
        let text = format!(
            "{}\n{}",
            envelope["output"].as_str().unwrap_or_default(),
            envelope["error"].as_str().unwrap_or_default()
        );
        Outcome { envelope, text }
    }

    /// What must never change: every file outside the workspace that the
    /// fixture made (content, mode, owner, times, extended attributes), the
    /// workspace's `.git` config, the nested repo, the home and keel's state.
    fn state(&self) -> BTreeMap<PathBuf, String> {
        let mut state = BTreeMap::new();
        let roots = [
            self.outside.clone(),
            self.home.clone(),
            self.ws.join(".git/config"),
            self.ws.join(".git/hooks"),
            self.ws.join("vendor/lib/.git"),
        ];
        for root in roots {
            walk(&root, &mut state);
        }
        state
    }

    /// Fails the test on any escape: changed canaries, bait that was
    /// reached, a host process signalled or a process of the command
    /// still running.
    pub fn assert_contained(&mut self, outcome: &Outcome) {
        let now = self.state();
        for (path, before) in &self.snapshot {
            let after = now.get(path).map(String::as_str).unwrap_or("<gone>");
            assert_eq!(before, after, "{} changed: {}", path.display(), outcome.text);
        }
        for path in now.keys() {
            assert!(
                self.snapshot.contains_key(path),
                "{} was created: {}",
                path.display(),
                outcome.text
            );
        }
        for name in [".keel", ".claude"] {
            assert!(!self.ws.join(name).exists(), "{name} persists: {}", outcome.text);
        }
        assert!(!outcome.text.contains(SECRET), "keel's key leaked: {}", outcome.text);
        let reached = [
            ("tcp", would_block(self.tcp.accept().map(drop))),
            ("udp", would_block(self.udp.recv(&mut [0; 16]).map(drop))),
            ("unix outside", would_block(self.unix_outside.accept().map(drop))),
            ("unix in /tmp", would_block(self.unix_tmp.accept().map(drop))),
            ("abstract unix", would_block(self.abstract_socket.accept().map(drop))),
        ];
        for (bait, untouched) in reached {
            assert!(untouched, "the {bait} listener was reached: {}", outcome.text);
        }
        assert!(
            self.host_process.try_wait().unwrap().is_none(),
            "a host process was killed: {}",
            outcome.text
        );
        let survivors = processes_named(&format!("escape-{}", self.marker));
        assert!(survivors.is_empty(), "processes outlived the command: {survivors:?}");
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = self.host_process.kill();
        let _ = self.host_process.wait();
        // Whatever escaped a broken jail must not outlive the test.
        let _ =
            Command::new("pkill").args(["-9", "-f", &format!("escape-{}", self.marker)]).status();
        let _ = (&self.base, &self.temp_home);
    }
}

fn listener(path: &Path) -> UnixListener {
    let listener = UnixListener::bind(path).unwrap();
    listener.set_nonblocking(true).unwrap();
    // Open to everyone: only the sandbox may stop `nobody`, not the mode.
    run_ok(Command::new("chmod").arg("777").arg(path));
    listener
}

fn host_process(user: User, marker: &str) -> Child {
    let script = format!("exec -a keel-canary-{marker} sleep 1000");
    // Its own process group: the group kill a command may try hits only it.
    command_as(user, "bash").args(["-c", &script]).process_group(0).spawn().unwrap()
}

fn would_block(result: std::io::Result<()>) -> bool {
    matches!(result, Err(error) if error.kind() == ErrorKind::WouldBlock)
}

/// Each path below `root` (symlinks not followed) with what identifies
/// its state.
fn walk(root: &Path, state: &mut BTreeMap<PathBuf, String>) {
    let Ok(meta) = std::fs::symlink_metadata(root) else { return };
    let content = if meta.is_file() { std::fs::read(root).unwrap_or_default() } else { Vec::new() };
    let mut names = [0u8; 4096];
    let xattrs = match rustix::fs::llistxattr(root, &mut names) {
        Ok(len) => String::from_utf8_lossy(&names[..len]).into_owned(),
        Err(error) => error.to_string(),
    };
    state.insert(
        root.to_owned(),
        format!(
            "mode={:o} uid={} gid={} mtime={} {:?} {xattrs}",
            meta.mode(),
            meta.uid(),
            meta.gid(),
            meta.mtime_nsec() + meta.mtime() * 1_000_000_000,
            content
        ),
    );
    if meta.is_dir() {
        for entry in std::fs::read_dir(root).unwrap().filter_map(Result::ok) {
            walk(&entry.path(), state);
        }
    }
}

/// Host processes whose command line holds `needle`.
pub fn processes_named(needle: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
        .map(|cmdline| String::from_utf8_lossy(&cmdline).replace('\0', " "))
        .filter(|cmdline| cmdline.contains(needle))
        .collect()
}
