#!/usr/bin/env bash
# keel against Codex in a large repository of real code (issue 21), with the shared mock LLM.
#
# usage: cargo build --release && bash benches/large_repo.sh [make|run|tools|all]
#   make   only build the repository (kept at $REPO; rerun skips it when it exists)
#   run    measure the sessions against Codex (needs the repository)
#   tools  glob, grep and list_dir against rg/find in the repository (hyperfine, ripgrep)
#   all    make, run, then remove the repository unless KEEP=1 (default)
# env:   WORK_ROOT (/var/tmp), REPO ($WORK_ROOT/keel-large-repo), COPIES (3), MAX_FILE_KB (256),
#        CLIENTS ("keel codex-native"), RUNS (3), KEEL_BIN, PEERS_HOME (see ../shared/bench/run.sh)
#
# The repository: every file of at most MAX_FILE_KB under ~/.cargo/registry/src (the crate
# sources any machine that builds keel has), copied COPIES times side by side, committed to
# git: about 58 000 files and 740 MB with the defaults. Identical copies share git objects,
# as vendored trees often do.
#
# Figures per client, same run, same repository (measure.py: wall, CPU, peak RSS):
#   hello         one answer, no tools
#   first steps20 20 shell calls (`echo step-K`), the first session ever in this repository
#                 (fresh state folder)
#   later steps20 the same with the state the first left (medians of RUNS)
#   first/later writes20  20 shell calls that each append to a file of the repository
#                 (`echo step-K >> bench-writes.txt`): keel judges `echo` read-only and takes
#                 no undo checkpoint for steps20, so this is the scenario that pays for the
#                 checkpoint (the first ever creates keel's shadow repository) and the change
#                 detection around each command
#   state growth  the state folder's size after the first writes20 session, and after a
#                 session that changed a few files (three tracked files edited and one
#                 created before the session, so its checkpoint has something to keep)
#
# The mock is a copy of ../shared/bench/mockllm.py with one scenario added (writesN); the
# shared copy is not modified.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
KEEL_ROOT=$PWD
WORK_ROOT=${WORK_ROOT:-/var/tmp}
REPO=${REPO:-$WORK_ROOT/keel-large-repo}
COPIES=${COPIES:-3}
MAX_FILE_KB=${MAX_FILE_KB:-256}
RUNS=${RUNS:-3}
export CLIENTS=${CLIENTS:-"keel codex-native"}
export KEEL_BIN=${KEEL_BIN:-$KEEL_ROOT/target/release/keel}
SRC=${CARGO_HOME:-$HOME/.cargo}/registry/src

log() { printf '[large] %s\n' "$*" >&2; }

make_repo() {
    if [ -d "$REPO/.git" ]; then
        log "repository exists: $REPO"
        return 0
    fi
    [ -d "$SRC" ] || { log "no crate sources in $SRC (build keel once)"; return 1; }
    log "building $REPO: $COPIES copies of $SRC (files <= ${MAX_FILE_KB} KiB)"
    rm -rf "$REPO" && mkdir -p "$REPO"
    local i
    for ((i = 1; i <= COPIES; i++)); do
        mkdir -p "$REPO/vendor-$i"
        (cd "$SRC" && find . -type f -size -$((MAX_FILE_KB + 1))k -print0 |
            tar --null -T - -cf -) | tar -xf - -C "$REPO/vendor-$i"
    done
    # A .gitignore of its own would hide what the crates ship; keep only theirs.
    printf '# large bench repository\n' >"$REPO/README.md"
    (
        cd "$REPO"
        git -c init.defaultBranch=main init -q
        git add -A
        git -c user.name=bench -c user.email=bench@localhost commit -qm "vendored crates"
        git gc -q --prune=now
    )
    log "$(cd "$REPO" && git ls-files | wc -l) tracked files, $(du -sh --exclude=.git "$REPO" | cut -f1) in the work tree, $(du -sh "$REPO/.git" | cut -f1) in .git"
}

# A pool (see ../shared/bench/in-pool.sh) of N links to the one repository.
link_pool() {
    local dir=$1 n=$2 i
    rm -rf "$dir" && mkdir -p "$dir"
    for ((i = 0; i < n; i++)); do ln -s "$REPO" "$(printf '%s/fresh-%03d' "$dir" "$i")"; done
}

state_dir() {  # the client's state folder
    case $1 in
    keel) echo "$WORK/home-keel/.keel" ;;
    codex | codex-native) echo "$WORK/home-$1/.codex" ;;
    esac
}

# Forgets everything the client kept about earlier runs (its config stays).
forget_state() {
    local dir
    dir=$(state_dir "$1")
    [ -d "$dir" ] || return 0
    find "$dir" -mindepth 1 -maxdepth 1 ! -name config.toml -exec rm -rf {} +
}

bytes_of() { du -sb "$1" 2>/dev/null | cut -f1 || echo 0; }

measure() {  # measure CLIENT SCENARIO LABEL RUNS WARMUP
    local c=$1 s=$2 label=$3 n=$4 w=$5 pool=$WORK/pool
    link_pool "$pool" $((n + w))
    client_cmd "$c" "$s" "$pool"
    log "measuring $c/$label ($n runs + $w warm-up)"
    "$PY" "$PEERS_DIR/measure.py" --runs "$n" --warmup "$w" --timeout "$RUN_TIMEOUT" \
        --label "$c/$label" --out "$OUT/results.jsonl" --log-dir "$OUT/logs" -- "${CMD[@]}" >/dev/null
}

# The session that changes a few files: three tracked files edited and one
# created before it, so its checkpoint must save them; undone afterwards.
dirty_repo() {
    local f
    for f in $(cd "$REPO" && git ls-files | awk 'NR % 20000 == 7' | head -n 3); do
        printf '\n// edited by the bench\n' >>"$REPO/$f"
    done
    printf 'a new file\n' >"$REPO/bench-new-file.txt"
}
clean_repo() {
    (cd "$REPO" && git checkout -q -- . && rm -f bench-new-file.txt bench-writes.txt)
}

# ../shared/bench with a mock that also knows writesN: N shell calls that each append
# to bench-writes.txt in the repository.
writing_peers() {
    local dir=$1
    mkdir -p "$dir"
    cp "$PEERS_DIR/measure.py" "$PEERS_DIR/in-pool.sh" "$dir/"
    "$PY" - "$PEERS_DIR/mockllm.py" "$dir/mockllm.py" <<'PATCH'
import sys
source, dest = sys.argv[1], sys.argv[2]
text = open(source).read()
parse = '    m = re.fullmatch(r"parallel(\\d*)'
assert parse in text, "mockllm.parse_scenario changed"
text = text.replace(parse, '    m = re.fullmatch(r"writes(\\d+)", name)\n    if m:\n        return "writes", min(int(m.group(1)), 1000), 0\n' + parse, 1)
steps = '    if kind == "steps":\n'
assert steps in text, "mockllm.decide changed"
text = text.replace(steps, '''    if kind == "writes":
        if done < n:
            k = done + 1
            cmd = f"echo step-{k} >> bench-writes.txt"
            return {"text": None, "calls": [(shell, build_shell_args(shell, cmd, f"bench write {k}"), cmd)]}
        return {"text": f"Done: ran {n} writing steps.", "calls": []}
''' + steps, 1)
open(dest, "w").write(text)
PATCH
}

run_bench() {
    [ -d "$REPO/.git" ] || { log "no repository at $REPO: run make first"; return 1; }
    export REPO
    OUT=${OUT:-$WORK_ROOT/keel-large-bench-out}
    # shellcheck source=/dev/null
    source "$KEEL_ROOT/../shared/bench/run.sh"
    install_peers() { :; }
    rm -rf "$OUT" && mkdir -p "$OUT"
    WORK=$(mktemp -d "$WORK_ROOT/large-bench.XXXXXX")
    trap 'stop_mock; clean_repo; rm -rf "$WORK"' EXIT
    writing_peers "$WORK/peers"
    PEERS_DIR=$WORK/peers
    setup_homes
    start_mock
    local c before after
    for c in $CLIENTS; do
        if [ "$c" != keel ] && [ -z "$(codex_native)" ]; then
            log "$c is not installed in $PEERS_HOME (../shared/bench/run.sh install); skipped"
            continue
        fi
        measure "$c" hello hello "$RUNS" 1
        forget_state "$c"
        measure "$c" steps20 first-steps20 1 0
        measure "$c" steps20 later-steps20 "$RUNS" 0
        forget_state "$c"
        before=$(bytes_of "$(state_dir "$c")")
        measure "$c" writes20 first-writes20 1 0
        after=$(bytes_of "$(state_dir "$c")")
        clean_repo
        printf '{"label": "%s/state-first", "bytes": %s}\n' "$c" $((after - before)) >>"$OUT/results.jsonl"
        measure "$c" writes20 later-writes20 "$RUNS" 0
        clean_repo
        dirty_repo
        before=$(bytes_of "$(state_dir "$c")")
        measure "$c" writes20 changed-writes20 1 0
        after=$(bytes_of "$(state_dir "$c")")
        clean_repo
        printf '{"label": "%s/state-changed", "bytes": %s}\n' "$c" $((after - before)) >>"$OUT/results.jsonl"
    done
    stop_mock
    "$PY" "$KEEL_ROOT/benches/large_repo_report.py" "$OUT/results.jsonl" "$REPO" | tee "$OUT/report.md"
}

# The file tools against their references in the same repository, page cache warm for both
# (hyperfine -N): glob vs `rg --files -g`, grep vs `rg -n`, list_dir at depth 5 vs
# `find -maxdepth 5` (list_dir stops counting at 20 000 entries, find lists them all).
tools_bench() {
    [ -d "$REPO/.git" ] || { log "no repository at $REPO: run make first"; return 1; }
    command -v hyperfine >/dev/null && command -v rg >/dev/null || { log "install hyperfine and ripgrep"; return 2; }
    OUT=${OUT:-$WORK_ROOT/keel-large-bench-out}
    mkdir -p "$OUT"
    local home
    home=$(mktemp -d "$WORK_ROOT/large-tools.XXXXXX")
    local keel="env -i PATH=$PATH HOME=$home KEEL_HOME=$home $KEEL_BIN tool"
    cd "$REPO"
    hyperfine -N --warmup 1 --runs "$RUNS" --export-markdown "$OUT/tools-glob.md" \
        "rg --files -g '*.rs'" "$keel glob '{\"pattern\":\"**/*.rs\"}'" >&2
    hyperfine -N --warmup 1 --runs "$RUNS" --export-markdown "$OUT/tools-glob-prefix.md" \
        "rg --files -g '*.rs' vendor-1" "$keel glob '{\"pattern\":\"vendor-1/**/*.rs\"}'" >&2
    hyperfine -N --warmup 1 --runs "$RUNS" --export-markdown "$OUT/tools-grep.md" \
        "rg -n 'fn main'" "$keel grep '{\"pattern\":\"fn main\"}'" >&2
    hyperfine -N --warmup 1 --runs "$RUNS" --export-markdown "$OUT/tools-list.md" \
        "find . -maxdepth 5 -not -path './.git*'" "$keel list_dir '{\"depth\":5}'" >&2
    cd - >/dev/null
    rm -rf "$home"
    cat "$OUT"/tools-*.md
}

case ${1:-all} in
make) make_repo ;;
run) run_bench ;;
tools) tools_bench ;;
all)
    make_repo
    run_bench
    [ -n "${KEEP:-}" ] || { log "removing $REPO (KEEP=1 keeps it)"; rm -rf "$REPO"; }
    ;;
*) log "unknown mode $1"; exit 2 ;;
esac
