#!/usr/bin/env python3
"""Per-step overhead of OpenTelemetry export (issue 41), same run.

Runs `keel exec` on the shared mock (`../shared/bench/mockllm.py`) for `hello`
and `steps20`, with telemetry off, on with no collector listening (connections
refused) and on with a collector that accepts and never answers, alternating
modes in every round. Per step = (steps20 - hello) / 20 from each mode's
medians; wall time and CPU (user + sys of keel and its children).

    cargo build --release
    python3 benches/telemetry_overhead.py [ROUNDS]   # KEEL_BIN overrides the binary
"""

import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KEEL = os.environ.get("KEEL_BIN", os.path.join(ROOT, "target", "release", "keel"))
SHARED = os.environ.get("KEEL_SHARED_DIR") or next(
    (d for d in (os.path.join(ROOT, "..", "shared"), os.path.join(ROOT, "..", "..", "shared"))
     if os.path.isdir(d)), os.path.join(ROOT, "..", "shared"))
MOCK = os.path.join(SHARED, "bench", "mockllm.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def silent_collector():
    """Accepts connections, reads nothing, answers nothing."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held = []

    def accept():
        while True:
            conn, _ = listener.accept()
            held.append(conn)

    threading.Thread(target=accept, daemon=True).start()
    return listener.getsockname()[1]


def run(mock_port, scenario, mode, repo, home):
    env = {"PATH": os.environ["PATH"], "HOME": home, "KEEL_HOME": home}
    args = [KEEL, "exec", "--json", "--full-auto", "--provider", "openai-chat",
            "--model", "mock-model",
            "--base-url", f"http://127.0.0.1:{mock_port}/mock/{scenario}/t{time.time_ns()}/v1"]
    if mode != "off":
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{mode}"
        args += ["-c", "telemetry.enabled=true"]
    args.append("do it")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(args, cwd=repo, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    # `hello` ends `no_tool_call` (exit 1): the mock answers without tools.
    if done.returncode != 0 and scenario != "hello":
        sys.exit(f"{scenario} ({mode}) exited {done.returncode}: {done.stdout[-400:]!r}")
    return wall, cpu


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    mock_port = free_port()
    mock = subprocess.Popen([sys.executable, MOCK, "--port", str(mock_port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", mock_port), 0.1).close()
                break
            except OSError:
                time.sleep(0.05)
        refused = free_port()
        modes = {"off": "off", "refused": str(refused), "silent": str(silent_collector())}
        samples = {(m, s): [] for m in modes for s in ("hello", "steps20")}
        with tempfile.TemporaryDirectory() as tmp:
            repo = os.path.join(tmp, "repo")
            os.makedirs(repo)
            subprocess.run(["git", "init", "-q", repo], check=True)
            for index in range(rounds + 1):
                for name, mode in modes.items():
                    for scenario in ("hello", "steps20"):
                        home = tempfile.mkdtemp(dir=tmp)
                        sample = run(mock_port, scenario, mode, repo, home)
                        if index > 0:  # the first round warms up
                            samples[(name, scenario)].append(sample)
        print(f"rounds: {rounds}, binary: {KEEL}")
        print("| mode | steps20 wall | per-step wall | per-step CPU | ratio to off (wall, CPU) |")
        print("|---|---|---|---|---|")
        base = None
        for name in modes:
            med = lambda s, i: statistics.median(x[i] for x in samples[(name, s)])
            wall = (med("steps20", 0) - med("hello", 0)) / 20 * 1000
            cpu = (med("steps20", 1) - med("hello", 1)) / 20 * 1000
            base = base or (wall, cpu)
            print(f"| {name} | {med('steps20', 0):.3f} s | {wall:.1f} ms | {cpu:.1f} ms | "
                  f"{wall / base[0]:.2f}x, {cpu / base[1]:.2f}x |")
    finally:
        mock.kill()


if __name__ == "__main__":
    main()
