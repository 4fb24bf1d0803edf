#!/usr/bin/env bash
# Issue 22's same-run comparison: one mock, one machine, interleaved runs of a
# candidate keel (NEW), a reference keel (REF, e.g. main before the change) and
# Codex CLI native. Needs ../shared/bench (or SHARED_BENCH) and codex on PATH.
#   NEW=target/release/keel REF=/tmp/keel-main bash benches/parallel_reads.sh
set -euo pipefail
SHARED_BENCH=${SHARED_BENCH:-$(cd "$(dirname "$0")/../.." && pwd)/shared/bench}
CLIENTS="keel codex-native"
# shellcheck source=/dev/null
source "$SHARED_BENCH/run.sh"
: "${NEW:?NEW=path to the keel to measure}" "${REF:?REF=path to the reference keel}"
B=${OUT_ROOT:-/tmp/bench-parallel}
rm -rf "$B/new" "$B/ref" "$B/codex"; mkdir -p "$B/new" "$B/ref" "$B/codex"
mkdir -p "$WORK_ROOT"
WORK=$(mktemp -d "$WORK_ROOT/peers-bench.XXXXXX")
trap cleanup EXIT
OUT=$B/new
setup_homes
start_mock
for round in 1 2; do
  for s in parallel4-sleep1000 steps20; do
    OUT=$B/new KEEL_BIN=$NEW measure_one keel "$s"
    OUT=$B/ref KEEL_BIN=$REF measure_one keel "$s"
  done
  OUT=$B/codex measure_one codex-native parallel4-sleep1000
done
OUT=$B/codex measure_one codex-native steps20
stop_mock
for d in new ref codex; do
  nproc >"$B/$d/cores"
  versions_json >"$B/$d/versions.json"
  "$PY" "$PEERS_DIR/report.py" --out "$B/$d" --json "$B/$d/summary.json" >"$B/$d/report.md" || true
done
echo "reports: $B/{new,ref,codex}/report.md"
