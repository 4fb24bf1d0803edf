#!/usr/bin/env python3
"""Report of benches/large_repo.sh: keel and Codex side by side.

    large_repo_report.py RESULTS.jsonl REPO

Per client: hello, the first steps20 and writes20 ever in the repository, later
ones (medians), per-step overhead ((later - hello) / 20), peak RSS and the
state folder's growth (first writes20 session; a session that changed a few
files).
"""

import json
import subprocess
import sys


def main():
    results, repo = sys.argv[1], sys.argv[2]
    rows = {}
    for line in open(results):
        r = json.loads(line)
        client, what = r["label"].split("/", 1)
        rows.setdefault(client, {})[what] = r
    files = subprocess.run(["git", "-C", repo, "ls-files"], capture_output=True, text=True).stdout.count("\n")
    print(f"repository: {repo}, {files} tracked files\n")
    clients = list(rows)
    print("| measure | " + " | ".join(clients) + (" | keel / " + clients[1] if len(clients) > 1 else "") + " |")
    print("|---" * (len(clients) + 1 + (len(clients) > 1)) + "|")

    def wall(c, what):
        r = rows[c].get(what)
        return r and r["wall"]["median"]

    def peak(c):
        return max((r["peak_mib"]["max"] for k, r in rows[c].items() if "peak_mib" in r and r["peak_mib"]), default=None)

    def per_step(c, what):
        h, s = wall(c, "hello"), wall(c, what)
        return None if h is None or s is None else (s - h) / 20 * 1000

    def growth(c, what):
        r = rows[c].get(what)
        return r and r["bytes"] / 1e6

    measures = [
        ("hello wall s", lambda c: wall(c, "hello"), "{:.3f}"),
        ("first steps20 ever, wall s", lambda c: wall(c, "first-steps20"), "{:.2f}"),
        ("later steps20 wall s (median)", lambda c: wall(c, "later-steps20"), "{:.2f}"),
        ("per-step overhead, steps20 ms", lambda c: per_step(c, "later-steps20"), "{:.1f}"),
        ("first writes20 ever, wall s", lambda c: wall(c, "first-writes20"), "{:.2f}"),
        ("later writes20 wall s (median)", lambda c: wall(c, "later-writes20"), "{:.2f}"),
        ("per-step overhead, writes20 ms", lambda c: per_step(c, "later-writes20"), "{:.1f}"),
        ("writes20 with 4 files changed, wall s", lambda c: wall(c, "changed-writes20"), "{:.2f}"),
        ("peak RSS MiB", peak, "{:.1f}"),
        ("state growth, first writes20 session MB", lambda c: growth(c, "state-first"), "{:.2f}"),
        ("state growth, session changing 4 files MB", lambda c: growth(c, "state-changed"), "{:.2f}"),
    ]
    for name, get, fmt in measures:
        values = [get(c) for c in clients]
        cells = [fmt.format(v) if v is not None else "—" for v in values]
        if len(clients) > 1:
            a, b = values[0], values[1]
            cells.append(f"{a / b:.2f}×" if a is not None and b else "—")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
