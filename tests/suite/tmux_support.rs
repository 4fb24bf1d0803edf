//! The one way the end-to-end TUI tests drive keel: a private tmux server
//! (its own socket, killed on drop) with one 110×50 pane running the real
//! binary under a cleared environment, and waits on what the pane shows
//! (polled with a deadline), never on a timer. Used by `tui_tmux.rs`,
//! `tui_habits.rs`, `tui_views.rs`, `queue_tmux.rs`, `rewind_tui.rs` and
//! the other TUI tests.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use super::support::Sandbox;

/// Longest wait for any one thing to appear on screen.
pub(super) const DEADLINE: Duration = Duration::from_secs(20);

/// A tmux server of our own (its own socket), killed on drop.
pub(super) struct Pane {
    socket: String,
}

impl Pane {
    pub(super) fn start(cwd: &Path, command: &str) -> Self {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let socket = format!("keel-e2e-{}-{n}", std::process::id());
        let pane = Self { socket };
        // One tmux invocation: the options hold before keel starts, so the
        // pane stays (with its exit status) even if keel exits at once.
        let cwd = cwd.display().to_string();
        let session = ["new-session", "-d", "-x", "110", "-y", "50", "-s", "keel", "-c"];
        let mut args = vec!["-f", "/dev/null", "start-server", ";"];
        args.extend(["set-option", "-g", "remain-on-exit", "on", ";"]);
        args.extend(["set-option", "-s", "escape-time", "0", ";"]);
        args.extend(session);
        let out = pane.tmux(&args, &[&cwd, command]);
        assert!(out.status.success(), "tmux: {}", String::from_utf8_lossy(&out.stderr));
        pane
    }

    pub(super) fn tmux(&self, args: &[&str], more: &[&str]) -> Output {
        Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .args(more)
            .output()
            .expect("tmux is installed (.ci/run installs it)")
    }

    pub(super) fn screen(&self) -> String {
        String::from_utf8_lossy(&self.tmux(&["capture-pane", "-p", "-t", "keel"], &[]).stdout)
            .into_owned()
    }

    pub(super) fn keys(&self, keys: &[&str]) {
        self.tmux(&["send-keys", "-t", "keel"], keys);
    }

    pub(super) fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "keel", "-l"], &[text]);
    }

    /// Sends `bytes` to keel as they are (`send-keys -H`), such as an escape
    /// sequence tmux has no key name for.
    pub(super) fn send_bytes(&self, bytes: &[u8]) {
        let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let hex: Vec<&str> = hex.iter().map(String::as_str).collect();
        self.tmux(&["send-keys", "-t", "keel", "-H"], &hex);
    }

    /// Waits until the screen contains every one of `texts`.
    pub(super) fn wait_for(&self, texts: &[&str]) -> String {
        let started = Instant::now();
        loop {
            let screen = self.screen();
            if texts.iter().all(|t| screen.contains(t)) {
                return screen;
            }
            assert!(
                started.elapsed() < DEADLINE,
                "waited for {texts:?}; the screen shows:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until the screen no longer contains `text` (a key keel has
    /// read and acted on, such as `\`+Enter turning into a line break).
    pub(super) fn wait_gone(&self, text: &str) -> String {
        let started = Instant::now();
        loop {
            let screen = self.screen();
            if !screen.contains(text) {
                return screen;
            }
            assert!(
                started.elapsed() < DEADLINE,
                "waited for {text:?} to go; the screen shows:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The pane process's state and its threads' wait channels (diagnostics).
    fn process(&self) -> String {
        let out = self.tmux(&["display-message", "-p", "-t", "keel", "#{pane_pid}"], &[]);
        let pid = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        let mut text = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
            for task in tasks.flatten() {
                let path = task.path();
                let comm = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
                let wchan = std::fs::read_to_string(path.join("wchan")).unwrap_or_default();
                text.push_str(&format!("{} {} {wchan}\n", comm.trim(), path.display()));
            }
        }
        text
    }

    /// `Some(status)` once keel has exited: tmux says the pane is dead, or
    /// (tmux has not reaped it yet; seen under load) the process is a
    /// zombie, whose wait status is the last field of `/proc/PID/stat`.
    fn exit_status(&self) -> Option<i32> {
        let format = "#{pane_dead} #{pane_dead_status} #{pane_pid}";
        let out = self.tmux(&["display-message", "-p", "-t", "keel", format], &[]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let words: Vec<&str> = text.split_whitespace().collect();
        match words.as_slice() {
            ["1", code, _pid] => code.parse().ok(),
            // Alive, or dead without a status yet: ask the kernel.
            [_, pid] | [_, _, pid] => {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
                let fields: Vec<&str> = stat.rsplit(')').next()?.split_whitespace().collect();
                if fields.first() != Some(&"Z") {
                    return None;
                }
                let wait_status: i32 = fields.last()?.parse().ok()?;
                Some((wait_status >> 8) & 0xff)
            }
            _ => None,
        }
    }

    pub(super) fn wait_exit(&self) -> i32 {
        let started = Instant::now();
        loop {
            if let Some(code) = self.exit_status() {
                return code;
            }
            assert!(
                started.elapsed() < DEADLINE,
                "keel did not exit:\n{}\n{}",
                self.screen(),
                self.process()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"], &[]);
    }
}

pub(super) fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// How to start keel in a pane besides the defaults of [`launch`].
#[derive(Debug, Clone)]
pub(super) struct Launch<'a> {
    /// `TERM` (default `xterm-256color`).
    pub(super) term: &'a str,
    /// More `NAME=value` pairs for the environment (already quoted).
    pub(super) env: &'a str,
    /// Appended to keel's command line (already quoted).
    pub(super) extra: &'a str,
}

impl Default for Launch<'_> {
    fn default() -> Self {
        Self { term: "xterm-256color", env: "", extra: "" }
    }
}

/// Starts keel in a pane with a cleared environment against the scripted
/// model at `model_uri`; `extra` is appended to the command line (already
/// quoted).
pub(super) fn launch(sandbox: &Sandbox, model_uri: &str, extra: &str) -> Pane {
    launch_with(sandbox, model_uri, &Launch { extra, ..Launch::default() })
}

/// [`launch`] with a `TERM`, more environment and arguments.
pub(super) fn launch_with(sandbox: &Sandbox, model_uri: &str, how: &Launch<'_>) -> Pane {
    let keel = assert_cmd::cargo::cargo_bin("keel");
    let command = format!(
        "env -i PATH={} HOME={} KEEL_HOME={} TERM={} {} {} --provider openai-chat --base-url {} \
         --model m {}",
        shell_quote(&std::env::var("PATH").unwrap_or_default()),
        shell_quote(&sandbox.home.display().to_string()),
        shell_quote(&sandbox.home.display().to_string()),
        how.term,
        how.env,
        shell_quote(&keel.display().to_string()),
        shell_quote(&format!("{model_uri}/v1")),
        how.extra,
    );
    Pane::start(&sandbox.repo, &command)
}

/// Records what keel writes to the terminal from now on (tmux `pipe-pane`).
pub(super) fn record_output(pane: &Pane, sandbox: &Sandbox) -> std::path::PathBuf {
    let file = sandbox.home.join("pane-output.bin");
    let command = format!("cat >> {}", shell_quote(&file.display().to_string()));
    let out = pane.tmux(&["pipe-pane", "-t", "keel", "-o", &command], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    file
}

/// Waits until the recorded output holds `needle`.
pub(super) fn wait_for_output(file: &Path, needle: &[u8]) -> Vec<u8> {
    let started = Instant::now();
    loop {
        let bytes = std::fs::read(file).unwrap_or_default();
        if bytes.windows(needle.len()).any(|window| window == needle) {
            return bytes;
        }
        assert!(
            started.elapsed() < DEADLINE,
            "waited for {:?} in the output; got {:?}",
            String::from_utf8_lossy(needle),
            String::from_utf8_lossy(&bytes)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
