//! [`Walls`]: what the sandbox around the model's commands really lets them
//! do, as plain facts the runtime fills from the session's confinement
//! (`runtime::walls`), and the sentences the request states them in
//! ([`walls_text`], part of the Mode context block).
//!
//! Invariants: pure; the text says only what the fields say (network off,
//! by allowlist or on; loopback or not; which paths are read-only to
//! commands; that no approval mode lifts the sandbox, and what does), so a
//! setting that changes the confinement changes the sentence and nothing
//! else. The "start, use and stop a server in one command" recipe is
//! offered only when a command can open a loopback socket. The fields are
//! fixed for a session, so the block stays byte-stable across it.
//!
//! How to set them: `network` from the confinement's network setting
//! (`Off { loopback }` with `loopback: true` once commands get a private
//! network namespace with `lo` up; `Allowlist { hosts, loopback }` with the
//! host patterns as configured, in order); `read_only_to_commands` with the
//! names as the model should read them (`.git`, `.keel`, …);
//! `git_through_git: true` once recognised git commands may write `.git`;
//! `credentials_hidden: true` when the jail covers the credential stores.

/// What a sandboxed command can reach on the network.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum NetworkWalls {
    /// No network; `loopback`: sockets on 127.0.0.1/::1 work among the
    /// command's own processes.
    Off { loopback: bool },
    /// Only these hosts (exact names or `*.suffix`), through keel's proxy.
    Allowlist { hosts: Vec<String>, loopback: bool },
    /// Unrestricted.
    #[default]
    On,
}

impl NetworkWalls {
    /// Whether a command can bind and reach a server on loopback.
    pub fn loopback(&self) -> bool {
        match self {
            NetworkWalls::Off { loopback } | NetworkWalls::Allowlist { loopback, .. } => *loopback,
            NetworkWalls::On => true,
        }
    }
}

/// Where a sandboxed command may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WriteWalls {
    /// Nowhere.
    Nowhere,
    /// The workspace, the temp folders and configured writable folders.
    #[default]
    Workspace,
    /// Anywhere the user may.
    Anywhere,
}

/// The confinement of the model's commands, as the model is told it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Walls {
    pub writes: WriteWalls,
    /// Folders writable besides the workspace and temp folders
    /// (`[sandbox] writable_roots`), as shown.
    pub extra_writable: Vec<String>,
    pub network: NetworkWalls,
    /// Paths commands cannot change even where they may write, as shown
    /// (`.git`, `.keel`, `.claude`, keel's home).
    pub read_only_to_commands: Vec<String>,
    /// Recognised git commands (`git add`, `commit`, `checkout`, …) may
    /// write `.git` although other commands cannot.
    pub git_through_git: bool,
    /// Credential stores (`~/.ssh`, `~/.aws`, …) read as empty or refused.
    pub credentials_hidden: bool,
}

/// Longest list of hosts or folders named in the text.
const LISTED_MAX: usize = 12;

/// The sandbox paragraph of the Mode block: `None` when commands run
/// unsandboxed.
pub fn walls_text(walls: Option<&Walls>) -> String {
    let Some(walls) = walls else {
        return "Commands are not sandboxed here: be as careful as the user would be.".to_owned();
    };
    let mut lines = vec![
        "Commands run in a sandbox in every mode; no approval lifts it. Only the user can: \
         `[sandbox]` settings, `--no-sandbox`, or in ask mode approving a blocked command's \
         re-run outside it."
            .to_owned(),
    ];
    lines.push(format!("- Writes: {}", writes(walls)));
    lines.push(format!("- Network: {}", network(&walls.network)));
    if walls.credentials_hidden {
        lines.push(
            "- Credential stores (`~/.ssh`, `~/.aws`, `~/.npmrc`, …) are hidden: a command \
             needing a login from one fails here."
                .to_owned(),
        );
    }
    if walls.network.loopback() {
        lines.push(
            "- A server lives as long as its command: start, use and stop it in one \
             (`./server & pid=$!; sleep 1; curl -s localhost:8080; kill $pid`)."
                .to_owned(),
        );
    }
    lines.push(
        "A failure the sandbox caused (permission denied, read-only file system, a refused \
         socket, an unresolved host) is not a bug to fix: say so and what setting would allow it."
            .to_owned(),
    );
    lines.join("\n")
}

fn writes(walls: &Walls) -> String {
    let mut text = match walls.writes {
        WriteWalls::Nowhere => "none: the sandbox is read-only.".to_owned(),
        WriteWalls::Anywhere => "anywhere.".to_owned(),
        WriteWalls::Workspace if walls.extra_writable.is_empty() => {
            "only in the workspace and temp folders.".to_owned()
        }
        WriteWalls::Workspace => {
            format!("only in the workspace, temp folders and {}.", listed(&walls.extra_writable))
        }
    };
    if walls.writes != WriteWalls::Nowhere && !walls.read_only_to_commands.is_empty() {
        text.push_str(&format!(
            " Read-only to commands: {}.",
            listed(&walls.read_only_to_commands)
        ));
        let git_locked = walls.read_only_to_commands.iter().any(|path| path == ".git");
        if git_locked && walls.git_through_git {
            text.push_str(
                " A plain git command alone in its call (`git add`, `commit`, `checkout`, \
                 `stash`, `reset`…; not chained, redirected or given `-c`/`-C`) may still change \
                 `.git`, never its config or hooks.",
            );
        } else if git_locked {
            text.push_str(
                " So `git add`, `commit`, `checkout -b` and `stash` fail: a commit the user asks \
                 for is theirs to make; give the commands.",
            );
        }
    }
    text
}

fn network(network: &NetworkWalls) -> String {
    let loopback = |on: bool| {
        if on {
            "loopback (127.0.0.1, ::1) works among the command's own processes"
        } else {
            "no socket opens, loopback included (local servers and tests that bind a port fail)"
        }
    };
    match network {
        NetworkWalls::Off { loopback: on } => {
            format!("off: {}; installs, downloads and other hosts fail.", loopback(*on))
        }
        NetworkWalls::Allowlist { hosts, loopback: on } => {
            format!("only these hosts, through keel's proxy: {}; {}.", listed(hosts), loopback(*on))
        }
        NetworkWalls::On => "on.".to_owned(),
    }
}

/// `a`, `b` and `c` (at most [`LISTED_MAX`], then how many more).
fn listed(items: &[String]) -> String {
    let mut shown: Vec<String> =
        items.iter().take(LISTED_MAX).map(|item| format!("`{item}`")).collect();
    if items.len() > LISTED_MAX {
        shown.push(format!("{} more", items.len() - LISTED_MAX));
    }
    match shown.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn default_walls() -> Walls {
        Walls {
            writes: WriteWalls::Workspace,
            extra_writable: Vec::new(),
            network: NetworkWalls::Off { loopback: false },
            read_only_to_commands: vec![".git".into(), ".keel".into(), ".claude".into()],
            git_through_git: false,
            credentials_hidden: false,
        }
    }

    #[test]
    fn the_default_sandbox_says_no_socket_and_no_git_writes_and_offers_no_server_recipe() {
        let text = walls_text(Some(&default_walls()));
        assert!(text.contains("no approval lifts it"), "{text}");
        assert!(text.contains("`--no-sandbox`") && text.contains("`[sandbox]`"), "{text}");
        assert!(text.contains("no socket opens, loopback included"), "{text}");
        assert!(text.contains("`.git`, `.keel` and `.claude`"), "{text}");
        assert!(text.contains("`git add`, `commit`, `checkout -b` and `stash` fail"), "{text}");
        assert!(!text.contains("curl -s localhost"), "no recipe that cannot work: {text}");
    }

    #[test]
    fn loopback_offers_the_server_recipe_and_an_allowlist_names_its_hosts() {
        let walls = Walls { network: NetworkWalls::Off { loopback: true }, ..default_walls() };
        let text = walls_text(Some(&walls));
        assert!(text.contains("loopback (127.0.0.1, ::1) works"), "{text}");
        assert!(text.contains("curl -s localhost:8080"), "{text}");
        let hosts = vec!["pkg.example.test".to_owned(), "*.mirror.example.test".to_owned()];
        let walls = Walls {
            network: NetworkWalls::Allowlist { hosts, loopback: false },
            ..default_walls()
        };
        let text = walls_text(Some(&walls));
        assert!(
            text.contains("only these hosts, through keel's proxy: `pkg.example.test` and `*.mirror.example.test`"),
            "{text}"
        );
        assert!(!text.contains("curl -s localhost"), "{text}");
        let on = walls_text(Some(&Walls { network: NetworkWalls::On, ..default_walls() }));
        assert!(on.contains("- Network: on.") && on.contains("curl -s localhost"), "{on}");
    }

    #[test]
    fn git_through_git_and_unprotected_git_are_said_as_they_are() {
        let through = walls_text(Some(&Walls { git_through_git: true, ..default_walls() }));
        assert!(through.contains("A plain git command alone in its call"), "{through}");
        assert!(!through.contains("commit` and `stash` fail"), "{through}");
        let open = walls_text(Some(&Walls { read_only_to_commands: vec![], ..default_walls() }));
        assert!(!open.contains("Read-only to commands"), "{open}");
        assert!(!open.contains("stash"), "{open}");
    }

    #[test]
    fn hidden_credential_stores_are_said_only_when_the_jail_covers_them() {
        let covered = walls_text(Some(&Walls { credentials_hidden: true, ..default_walls() }));
        assert!(covered.contains("Credential stores (`~/.ssh`"), "{covered}");
        let plain = walls_text(Some(&default_walls()));
        assert!(!plain.contains("Credential stores"), "{plain}");
    }

    #[test]
    fn read_only_and_full_access_sandboxes_and_no_sandbox() {
        let read_only = walls_text(Some(&Walls { writes: WriteWalls::Nowhere, ..default_walls() }));
        assert!(read_only.contains("- Writes: none: the sandbox is read-only."), "{read_only}");
        let extra = Walls { extra_writable: vec!["/data".into()], ..default_walls() };
        assert!(walls_text(Some(&extra)).contains("temp folders and `/data`."));
        assert!(walls_text(None).contains("not sandboxed"));
    }

    #[test]
    fn long_lists_are_bounded() {
        let hosts: Vec<String> = (0..40).map(|n| format!("h{n}.example.test")).collect();
        let walls =
            Walls { network: NetworkWalls::Allowlist { hosts, loopback: true }, ..default_walls() };
        let text = walls_text(Some(&walls));
        assert!(text.contains("and 28 more"), "{text}");
        assert!(!text.contains("h20.example.test"), "{text}");
    }
}
