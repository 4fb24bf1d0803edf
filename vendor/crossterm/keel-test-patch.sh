#!/usr/bin/env bash
# Runs the vendored crossterm's parser tests (with the keel patch's) offline.
# Upstream's dev-dependencies (async-std, serial_test, temp-env, futures-timer)
# are not in keel's tree, so the crate is tested from a temporary copy with
# them, the examples and the optional dependencies keel does not use cut from
# its manifest, and style.rs's env-var tests (temp-env) cut; keel's Cargo.lock
# pins the rest. Usage: vendor/crossterm/keel-test-patch.sh [FILTER]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$here/." "$work/crate"
cp "$here/../../Cargo.lock" "$work/crate/Cargo.lock"
python3 - "$work/crate" <<'PY'
import re, sys
root = sys.argv[1]
path = root + "/Cargo.toml"
text = open(path).read()
parts = re.split(r"(?m)^(?=\[)", text)
drop = ("dev-dependencies", "[[example]]", "dependencies.filedescriptor",
        "dependencies.base64", "dependencies.serde]", "dependencies.winapi",
        "dependencies.crossterm_winapi")
parts = [p for p in parts if not any(d in p.split("\n")[0] for d in drop)]
text = "".join(parts)
text = text.replace('osc52 = ["dep:base64"]\n', "")
text = re.sub(r'serde = \[\n    "dep:serde",\n    "bitflags/serde",\n\]\n', "", text)
text = re.sub(r'use-dev-tty = \[\n    "filedescriptor",\n    "rustix/process",\n\]\n', "", text)
text = re.sub(r'windows = \[\n    "dep:winapi",\n    "dep:crossterm_winapi",\n\]\n', "windows = []\n", text)
open(path, "w").write(text)
style = root + "/src/style.rs"
src = open(style, newline="").read()
open(style, "w", newline="").write(src[: src.index("#[cfg(test)]\r\nmod tests")])
PY
cd "$work/crate"
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/../../target/vendor-crossterm}" \
    cargo test --offline --no-default-features --features events,bracketed-paste,event-stream \
    --lib "${1:-event::sys::unix::parse}"
