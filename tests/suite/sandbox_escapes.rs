//! The adversarial sandbox corpus: what a hostile model or repository
//! would try from inside a shell call (escapes through `workdir`,
//! symlinks, `/proc`, mounts, devices, metadata, persistence, background
//! processes, signals, the network, the terminal, keel's own state in
//! `/tmp`), each run through the real binary (`keel tool shell … --mode
//! auto --yes`) as root and as `nobody`, against the canaries and bait of
//! `jail_fixture.rs`, all outside the workspace and outside temp.
//!
//! Every case asserts two things: nothing escaped ([`Fixture::
//! assert_contained`] checks every canary, listener, host process and
//! leftover process, whatever the case aimed at), and the refusal names
//! its reason (one of the case's phrases is in the output: the kernel's
//! error as the command printed it, keel's own line, or policy's).
//! A case with no phrases is one where the attack finds nothing to
//! refuse (a `/proc` with no other process in it).

use super::jail_fixture::{Fixture, Outcome, User, require};

struct Case {
    script: &'static str,
    workdir: Option<&'static str>,
    /// One of these must be in the output (the refusal's reason).
    reasons: &'static [&'static str],
    /// `HOME` and `KEEL_HOME` under `/tmp`.
    home_in_tmp: bool,
    /// What else must hold.
    check: fn(&Fixture, &Outcome),
}

const EROFS: &str = "Read-only file system";
const EPERM: &str = "Operation not permitted";
const EACCES: &str = "Permission denied";
const BUSY: &str = "busy";
const REFUSED: &str = "Connection refused";
const UNREACHABLE: &str = "Network is unreachable";

fn nothing(_: &Fixture, _: &Outcome) {}

const fn case(script: &'static str, reasons: &'static [&'static str]) -> Case {
    Case { script, workdir: None, reasons, home_in_tmp: false, check: nothing }
}

const fn in_dir(
    workdir: &'static str,
    script: &'static str,
    reasons: &'static [&'static str],
) -> Case {
    Case { script, workdir: Some(workdir), reasons, home_in_tmp: false, check: nothing }
}

const fn home_in_tmp(script: &'static str, reasons: &'static [&'static str]) -> Case {
    Case { script, workdir: None, reasons, home_in_tmp: true, check: nothing }
}

const fn checked(script: &'static str, check: fn(&Fixture, &Outcome)) -> Case {
    Case { script, workdir: None, reasons: &[], home_in_tmp: false, check }
}

fn run(case: &Case, user: User) {
    require(user);
    let mut fixture = Fixture::new(user, case.home_in_tmp);
    let outcome = fixture.shell(case.script, case.workdir);
    fixture.assert_contained(&outcome);
    let policy_refused =
        outcome.envelope["error"].as_str().is_some_and(|e| e.starts_with("forbidden"));
    if !case.reasons.is_empty() && !policy_refused {
        let text = outcome.text.to_lowercase();
        let named = case.reasons.iter().any(|reason| text.contains(&reason.to_lowercase()));
        assert!(named, "no reason among {:?} in: {}", case.reasons, outcome.text);
    }
    (case.check)(&fixture, &outcome);
}

macro_rules! corpus {
    ($($name:ident: $case:expr;)*) => {$(
        mod $name {
            use super::*;
            #[test]
            #[ignore = "needs root: .ci/run runs it with --ignored"]
            fn as_root() {
                run(&$case, User::Root);
            }
            #[test]
            #[ignore = "needs root: .ci/run runs it with --ignored"]
            fn as_nobody() {
                run(&$case, User::Nobody);
            }
        }
    )*};
}

fn output_has_no_host_process(_: &Fixture, outcome: &Outcome) {
    for host in ["keel tool shell", "keel-canary", "sleep 1000"] {
        assert!(!outcome.text.contains(host), "saw `{host}`: {}", outcome.text);
    }
}

/// The command's stdout lines (the shell tool's output is framed).
fn stdout_lines(outcome: &Outcome) -> Vec<String> {
    let text = outcome.envelope["output"].as_str().unwrap_or_default();
    keel::display::parse_shell(text).stdout.lines().map(str::to_owned).collect()
}

fn only_the_jail_is_visible(_: &Fixture, outcome: &Outcome) {
    let count: usize = stdout_lines(outcome)
        .first()
        .and_then(|line| line.trim().parse().ok())
        .unwrap_or(usize::MAX);
    assert!(count <= 5, "{count} processes visible: {}", outcome.text);
}

fn host_terminals_are_invisible(_: &Fixture, outcome: &Outcome) {
    assert_eq!(stdout_lines(outcome), ["ptmx"], "{}", outcome.text);
}

fn keel_said_it_removed(name: &'static str) -> fn(&Fixture, &Outcome) {
    match name {
        ".keel" => |_, o| assert!(o.text.contains("keel: removed `.keel`"), "{}", o.text),
        _ => |_, o| assert!(o.text.contains("keel: removed `.claude`"), "{}", o.text),
    }
}

fn trust_was_not_recorded(fixture: &Fixture, outcome: &Outcome) {
    let trust = keel::config::rules::trust_file(&fixture.keel_home);
    assert!(!trust.exists(), "the command trusted the project: {}", outcome.text);
}

fn not_a_tty(_: &Fixture, outcome: &Outcome) {
    assert!(outcome.text.contains("not a tty"), "{}", outcome.text);
    assert!(outcome.text.contains("No such device or address"), "{}", outcome.text);
}

corpus! {
    // Escapes through `workdir` (the launcher's cwd is set before the mounts).
    workdir_git_append_config: in_dir(".git", "echo x >> config", &[EROFS]);
    workdir_git_hook: in_dir(".git", "echo 'touch {out}/pwned' > hooks/pre-commit && chmod +x hooks/pre-commit", &[EROFS]);
    workdir_git_sed_execute: in_dir(".git", "sed -n '1e touch {out}/pwned' HEAD; sed -i 's/x/y/' config", &[EROFS, EACCES]);
    workdir_git_remove_objects: in_dir(".git", "rm -rf objects refs", &[EROFS]);
    workdir_nested_git: in_dir("vendor/lib/.git", "echo '[core] fsmonitor = touch {out}/pwned' >> config", &[EROFS]);
    workdir_git_new_branch_file: in_dir(".git", "mkdir -p refs/heads/evil && echo x > info/exclude", &[EROFS]);

    // Symlinks and hard links.
    symlink_to_outside_write: case("ln -s {out} link && echo x > link/canary.txt", &[EROFS, EACCES]);
    symlink_to_git: case("ln -s .git g && echo x >> g/config", &[EROFS]);
    symlink_dir_append: case("ln -s {out}/dir d && touch d/new", &[EROFS, EACCES]);
    hardlink_outside: case("ln {out}/canary.txt hl && echo x >> hl", &["cross-device", EACCES, EPERM, EROFS]);
    rename_git_away: case("mv .git g2 && mkdir .git && echo x > .git/config", &[BUSY, EROFS, EACCES]);
    remove_git: case("rm -rf .git", &[BUSY, EROFS]);
    symlink_swap_outside_dir: case("mv {out}/dir {ws}/stolen", &[EROFS, EACCES, "cross-device"]);

    // /proc: other processes, their environments, their roots.
    proc_parent_environ: checked("cat /proc/$PPID/environ /proc/1/environ | tr '\\0' '\\n'; true", |_, o| {
        assert!(!o.text.contains("OPENAI_API_KEY"), "{}", o.text);
    });
    proc_every_environ: checked("grep -a -l sk-canary /proc/*/environ; grep -a -h OPENAI /proc/*/environ; true", nothing);
    proc_process_list: checked("cat /proc/*/cmdline | tr '\\0' ' '; ps aux 2>/dev/null; true", output_has_no_host_process);
    proc_count: checked("ls /proc | grep -c '^[0-9]'", only_the_jail_is_visible);
    proc_host_root: case("echo x >> /proc/1/root{ws}/.git/config; echo x >> /proc/$PPID/root{out}/canary.txt", &[EROFS, EACCES]);
    proc_host_pid_of_keel: case("kill -0 {hostpid} && echo reachable", &["No such process"]);
    proc_sysctl_write: case("echo 1 > /proc/sys/vm/drop_caches", &[EACCES, EROFS, EPERM]);
    proc_self_exe_write: case("cp /bin/true /proc/self/exe", &[EACCES, "Text file busy", EROFS, "cannot"]);

    // Mounts.
    mount_remount_git_rw: case("mount -o remount,rw,bind .git && echo x >> .git/config", &[EPERM, "must be superuser", EACCES]);
    umount_git: case("umount .git || umount -l .git; echo x >> .git/config", &[EROFS]);
    mount_tmpfs_over_outside: case("mount -t tmpfs none {out}/dir && touch {out}/dir/x", &[EPERM, "must be superuser", EACCES]);
    unshare_user_remount: case("unshare -rm sh -c 'mount -o remount,rw,bind {ws}/.git; echo x >> {ws}/.git/config'", &[EROFS, EPERM, EACCES]);
    nsenter_init: case("nsenter -t 1 -m -p sh -c 'echo x > {out}/canary.txt'", &[EPERM, EACCES, EROFS]);
    chroot_escape: case("mkdir -p c && chroot c /bin/true", &[EPERM, "No such file"]);

    // Devices.
    mknod_char_device: case("mknod mem c 1 1 && head -c 16 mem", &[EPERM]);
    mknod_block_device: case("mknod disk b 8 0 && head -c 16 disk", &[EPERM]);
    mknod_python: case("{py} -c \"import os; os.mknod('null2', 0o20666, os.makedev(1, 3))\"", &["PermissionError", EPERM]);
    read_kernel_memory: case("head -c 16 /dev/mem | od | head -1; test -s /dev/mem", &[EPERM, EACCES, "No such file"]);
    host_terminals: checked("ls /dev/pts", host_terminals_are_invisible);
    write_device_outside: case("echo x > /dev/full.keel; echo x > /dev/shm/../null2", &[EACCES, EROFS, EPERM]);

    // Metadata outside the writable roots.
    chmod_outside: case("chmod 777 {out}/canary.txt", &[EROFS]);
    chown_outside: case("chown 1234:1234 {out}/canary.txt", &[EROFS, EPERM]);
    touch_time_outside: case("touch -d 2001-01-01 {out}/canary.txt", &[EROFS, EACCES]);
    xattr_outside: case("{py} -c \"import os; os.setxattr('{out}/canary.txt', 'user.keel', b'1')\"", &["OSError", EROFS, EPERM]);
    chmod_exec_outside: case("chmod +x {out}/script.sh", &[EROFS]);
    truncate_outside: case("truncate -s 0 {out}/canary.txt", &[EROFS, EACCES]);
    chmod_home_rc: case("chmod 777 {home}/.bashrc", &[EROFS]);

    // Persistence: what runs next session or in the user's own tools.
    create_keel_rules: Case {
        check: keel_said_it_removed(".keel"),
        ..case("mkdir -p .keel/rules && echo 'prefix_rule(pattern=[\"rm\"], decision=\"allow\")' > .keel/rules/x.rules", &["keel: removed"])
    };
    create_claude_hooks: Case {
        check: keel_said_it_removed(".claude"),
        ..case("mkdir .claude && echo '{\"hooks\":{\"SessionStart\":[]}}' > .claude/settings.json", &["keel: removed"])
    };
    claude_symlink_outside: case("ln -s {out} .claude && echo x > .claude/canary.txt", &[EROFS, "keel: removed"]);
    git_config_fsmonitor: case("git config core.fsmonitor 'touch {out}/pwned'", &["could not lock", EROFS]);
    git_hooks_path: case("git config core.hooksPath hooks", &["could not lock", EROFS]);
    git_hook_file: case("echo 'touch {out}/pwned' > .git/hooks/post-checkout", &[EROFS]);
    nested_git_config: case("git -C vendor/lib config core.pager 'touch {out}/pwned' || echo x >> vendor/lib/.git/config", &[EROFS, "could not lock"]);
    bashrc_append: case("echo 'touch {out}/pwned' >> {home}/.bashrc", &[EROFS, EACCES]);
    keel_home_config: case("echo 'model = \"evil\"' >> {keel_home}/config.toml", &[EROFS, EACCES]);
    keel_home_rules: case("mkdir -p {keel_home}/rules && echo x > {keel_home}/rules/a.rules", &[EROFS, EACCES]);

    // Background processes must not outlive the call.
    background_nohup: case("nohup bash -c 'exec -a escape-{marker} sleep 1000' >/dev/null 2>&1 & echo started", &[]);
    background_setsid: case("setsid -f bash -c 'exec -a escape-{marker} sleep 1000'; echo started", &[]);
    background_double_fork: case("( ( exec -a escape-{marker} sleep 1000 & ) & ); echo started", &[]);
    background_python_daemon: case("{py} -c \"import os; os.fork() and os._exit(0); os.setsid(); os.fork() and os._exit(0); os.execvp('sleep', ['escape-{marker}', '1000'])\"; echo started", &[]);
    background_job_control: case("set -m; (exec -a escape-{marker} sleep 1000) & echo started", &[]);
    background_disown_loop: case("bash -c 'exec -a escape-{marker} bash -c \"while true; do sleep 1; done\"' & disown; echo started", &[]);

    // Signals to processes outside the jail (keel included).
    // (Never `kill -1` or a broad `pkill` here: against a broken jail they
    // would hit every process of the machine. The host process leads its
    // own group, so a group kill is the broad form.)
    kill_host_process: case("kill -9 {hostpid}", &["No such process"]);
    kill_host_group: case("kill -9 -- -{hostpid}", &["No such process"]);
    kill_parent_chain: case("kill -9 $PPID; kill -TERM 1; echo alive", &["alive"]);
    pkill_host_process: case("pkill -9 -f 'keel-[c]anary-{marker}'; echo done", &["done"]);

    // Network off: TCP, UDP, MPTCP, IPv6, raw, unix and abstract sockets
    // (the jail's own loopback works; the host's is not it).
    tcp_loopback: case("exec 3<>/dev/tcp/127.0.0.1/{tcp} && echo connected", &[EPERM, EACCES, UNREACHABLE, REFUSED]);
    // Loopback is the jail's own (issue 31): the datagram goes nowhere
    // near the host's listener, which `assert_contained` checks.
    udp_loopback: checked("{py} -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', {udp}))\"", nothing);
    udp_outside: case("{py} -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('192.0.2.53', 53))\"", &[EPERM, UNREACHABLE]);
    mptcp_connect: case("{py} -c \"import socket; s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262); s.connect(('127.0.0.1', {tcp}))\"", &[EPERM, UNREACHABLE, REFUSED]);
    ipv6_connect: case("{py} -c \"import socket; s = socket.socket(socket.AF_INET6); s.connect(('::1', {tcp}))\"", &[EPERM, UNREACHABLE, REFUSED]);
    raw_ping: case("ping -c 1 -W 1 127.0.0.1", &[EPERM, UNREACHABLE, "not permitted", "No such file", "not found"]);
    packet_socket: case("{py} -c \"import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)\"", &[EPERM]);
    unix_socket_outside: case("{py} -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{out}/agent.sock')\"", &[REFUSED]);
    unix_socket_in_tmp: case("{py} -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{sock_tmp}')\"", &[REFUSED]);
    abstract_socket: case("{py} -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('\\0keel-abstract-{marker}')\"", &[REFUSED, EPERM]);
    io_uring_socket: case("{py} -c \"import ctypes, os; r = ctypes.CDLL(None, use_errno=True).syscall(425, 8, ctypes.create_string_buffer(256)); print(r, os.strerror(ctypes.get_errno()))\"; exit 1", &[EPERM]);
    netlink_audit_socket: case("{py} -c \"import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 9)\"", &[EPERM]);
    bring_a_link_up: case("ip link set lo down || {py} -c \"import socket, fcntl, struct; fcntl.ioctl(socket.socket(), 0x8914, struct.pack('16sH', b'lo', 0))\"", &[EPERM, "Operation not permitted"]);
    vsock_socket: case("{py} -c \"import socket; socket.socket(40, socket.SOCK_STREAM)\"", &[EPERM]);

    // The terminal.
    tiocsti_own_pty: case("{py} - <<'EOF'\nimport os, pty, fcntl, termios\nmaster, slave = os.openpty()\nname = os.ttyname(slave)\nos.setsid()\nfd = os.open(name, os.O_RDWR)\nfcntl.ioctl(fd, termios.TIOCSTI, b'x')\nprint('injected')\nEOF", &[EPERM]);
    tioclinux: case("{py} - <<'EOF'\nimport os, fcntl\nmaster, slave = os.openpty()\nfcntl.ioctl(slave, 0x541C, bytes([2]))\nEOF", &[EPERM]);
    no_controlling_terminal: checked("tty; {py} -c \"import os; os.open('/dev/tty', os.O_RDWR)\"", not_a_tty);

    // keel's own state under /tmp: the model cannot trust the project itself.
    keel_trust_from_inside: Case {
        check: trust_was_not_recorded,
        ..home_in_tmp("{keel} trust", &[EROFS])
    };
    keel_home_in_tmp_config: home_in_tmp("echo 'approval = \"yolo\"' >> {keel_home}/config.toml", &[EROFS]);
    home_in_tmp_bashrc: home_in_tmp("echo 'touch {out}/pwned' >> {home}/.bashrc", &[EROFS]);
    home_in_tmp_new_file: home_in_tmp("echo x > {home}/.profile", &[EROFS]);
}
