#!/usr/bin/env bash
# Tool benchmarks for issue 3, each a ratio against a reference run in the same session:
#   - `keel tool grep` vs `rg` on a generated tree (>= 50k files, >= 500 MB), a literal and a
#     regex search, page cache warm for both;
#   - `keel tool read_file` on a 50 MB file vs `wc -l` (one pass over the file, which read_file
#     also needs to count lines), first page and a page near the end;
#   - `keel tool edit_file` on the same file vs `sed -i` (GNU sed also writes a temp file and
#     renames it).
# The tree lives under /var/tmp and is deleted at the end (KEEP=1 keeps it).
#
# usage: cargo build --release && bash benches/grep_vs_rg.sh
# env:   KEEL (default target/release/keel), FILES (50000), FILE_KB (10.5), RUNS (5)
set -euo pipefail
KEEL=${KEEL:-${CARGO_TARGET_DIR:-target}/release/keel}
FILES=${FILES:-50000}
RUNS=${RUNS:-5}
command -v rg >/dev/null || { echo "install ripgrep (apt-get install -y ripgrep)" >&2; exit 2; }
command -v hyperfine >/dev/null || { echo "install hyperfine" >&2; exit 2; }
[ -x "$KEEL" ] || { echo "no keel binary at $KEEL (cargo build --release)" >&2; exit 2; }
KEEL=$(realpath "$KEEL")
ROOT=$(mktemp -d /var/tmp/keel-tool-bench.XXXXXX)
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$ROOT"' EXIT
OUT=$ROOT/results
mkdir -p "$OUT" "$ROOT/tree" "$ROOT/big"

echo "generating $FILES files under $ROOT/tree ..." >&2
python3 - "$ROOT/tree" "$FILES" <<'PY'
import os, random, sys
root, files = sys.argv[1], int(sys.argv[2])
rng = random.Random(42)
words = ("let mut self return match impl struct enum pub use crate super where async await "
         "value index count buffer result error config state token parser writer reader "
         "handle stream future option vector string slice bytes offset length").split()
def line():
    kind = rng.random()
    if kind < 0.15:
        return "fn %s_%s(%s: usize) -> Result<(), Error> {" % (rng.choice(words), rng.choice(words), rng.choice(words))
    if kind < 0.3:
        return "    // %s" % " ".join(rng.choice(words) for _ in range(8))
    return "    let %s = %s.%s(%d);" % (rng.choice(words), rng.choice(words), rng.choice(words), rng.randrange(10000))
block = [line() for _ in range(400_000)]
per_file = 260  # ~10.5 KB per file
for n in range(files):
    d = os.path.join(root, "d%03d" % (n // 100))
    if n % 100 == 0:
        os.makedirs(d, exist_ok=True)
    start = rng.randrange(len(block) - per_file)
    lines = block[start:start + per_file]
    if n % 997 == 0:
        lines[rng.randrange(per_file)] = "    let marker = KEEL_NEEDLE_LITERAL; // %d" % n
    if n % 1499 == 0:
        lines[rng.randrange(per_file)] = "fn parse_needle%d(input: &str) -> usize {" % n
    with open(os.path.join(d, "f%05d.rs" % n), "w") as f:
        f.write("\n".join(lines) + "\n")
PY
python3 - "$ROOT/big/big.txt" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    for n in range(1_000_000):
        f.write("line %07d: the quick brown fox jumps over the dog\n" % n)
    f.write("UNIQUE_TAIL_MARKER\n")
PY
cp "$ROOT/big/big.txt" "$ROOT/big/pristine.txt"
echo "tree: $(find "$ROOT/tree" -type f | wc -l) files, $(du -sh "$ROOT/tree" | cut -f1); big file $(du -h "$ROOT/big/big.txt" | cut -f1)" | tee "$OUT/sizes.txt" >&2

# Same answers first: a faster wrong search is no result.
cd "$ROOT/tree"
for pattern in KEEL_NEEDLE_LITERAL 'fn\s+[a-z]+_needle\d+\('; do
    want=$(rg -n "$pattern" | wc -l)
    args=$(python3 -c 'import json,sys; print(json.dumps({"pattern": sys.argv[1], "limit": 2000}))' "$pattern")
    got=$("$KEEL" tool grep "$args" | python3 -c 'import json,sys; print(json.load(sys.stdin)["meta"]["matches"])')
    echo "matches for $pattern: rg $want, keel $got" | tee -a "$OUT/sizes.txt" >&2
    [ "$want" = "$got" ] || { echo "keel and rg disagree" >&2; exit 1; }
done

bench() { # name, then hyperfine commands (reference first)
    local name=$1; shift
    hyperfine -N --warmup 1 --runs "$RUNS" --export-json "$OUT/$name.json" "$@" >&2
}
cd "$ROOT/tree"
bench grep_literal \
    "rg -n KEEL_NEEDLE_LITERAL" \
    "$KEEL tool grep '{\"pattern\":\"KEEL_NEEDLE_LITERAL\",\"limit\":2000}'"
bench grep_regex \
    "rg -n 'fn\\s+[a-z]+_needle\\d+\\('" \
    "$KEEL tool grep '{\"pattern\":\"fn\\\\s+[a-z]+_needle\\\\d+\\\\(\",\"limit\":2000}'"
cd "$ROOT/big"
bench read_file \
    "wc -l big.txt" \
    "$KEEL tool read_file '{\"path\":\"big.txt\"}'" \
    "$KEEL tool read_file '{\"path\":\"big.txt\",\"offset\":999000}'"
bench edit_file --prepare "cp pristine.txt big.txt" \
    "sed -i s/UNIQUE_TAIL_MARKER/UNIQUE_TAIL_CHANGED/ big.txt" \
    "$KEEL tool edit_file '{\"path\":\"big.txt\",\"old_string\":\"UNIQUE_TAIL_MARKER\",\"new_string\":\"UNIQUE_TAIL_CHANGED\"}'"

python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
print("| benchmark | reference | keel | keel / reference |")
print("|---|---|---|---|")
for name in ["grep_literal", "grep_regex", "read_file", "edit_file"]:
    results = json.load(open(os.path.join(out, name + ".json")))["results"]
    ref = results[0]
    for r in results[1:]:
        label = name if len(results) == 2 else "%s (%s)" % (name, "end page" if "offset" in r["command"] else "first page")
        print("| %s | %.0f ms | %.0f ms | %.2f× |" % (label, ref["median"] * 1000, r["median"] * 1000, r["median"] / ref["median"]))
PY
