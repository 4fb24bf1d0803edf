#!/usr/bin/env bash
# The jail alone (issue 42): `sandbox-exec … -- bash -c 'echo hi'` run by keel itself and by the
# small `keel-jail` launcher beside it, against bare `bash -c 'echo hi'`, alternated run by run
# so the machine's load falls on all three alike; medians of wall and CPU (os.wait4: the
# process and everything it reaped, so both stages of the jail and bash).
#
# usage: cargo build --release && bash benches/jail_launch.sh [RUNS]   (default 40)
# env:   KEEL (target/release/keel), JAIL (keel-jail beside it), MODE (workspace-write),
#        NETWORK (off: the private network namespace per command; the session's shared one is
#        not started here)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
KEEL=${KEEL:-$PWD/target/release/keel}
JAIL=${JAIL:-$(dirname "$KEEL")/keel-jail}
RUNS=${1:-40}
work=$(mktemp -d /var/tmp/keel-jail-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/repo" "$work/home"
git -C "$work/repo" init -q
jail_args=(sandbox-exec --mode "${MODE:-workspace-write}" --workspace-root "$work/repo"
    --read-only "$work/home" --network "${NETWORK:-off}" --protect-vcs --max-pids 4096 --)
python3 - "$RUNS" "$work/repo" "$KEEL" "$JAIL" "${jail_args[@]}" <<'PY'
import os, statistics, subprocess, sys, time
runs, repo, keel, jail, args = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
cmd = ["bash", "-c", "echo hi"]
cases = {"bash alone": cmd, "jail by keel": [keel, *args, *cmd], "jail by keel-jail": [jail, *args, *cmd]}
env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
def once(argv):
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=repo, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = proc.stdout.read()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if status != 0 or out != b"hi\n":
        sys.exit(f"{argv[0]} failed: status {status}, output {out!r}")
    return wall * 1000, (ru.ru_utime + ru.ru_stime) * 1000
for argv in cases.values():
    once(argv)  # warm-up
figures = {name: [] for name in cases}
for _ in range(runs):
    for name, argv in cases.items():
        figures[name].append(once(argv))
load = os.getloadavg()[0]
print(f"{runs} alternated runs each, load {load:.1f}; medians (wall ms, CPU ms):")
for name, values in figures.items():
    wall = statistics.median(v[0] for v in values)
    cpu = statistics.median(v[1] for v in values)
    print(f"  {name:<18} {wall:6.2f} {cpu:6.2f}")
PY
