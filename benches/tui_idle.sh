#!/usr/bin/env bash
# Idle CPU of the TUI: keel waits at an empty prompt in a 200x60 tmux pane;
# prints the CPU time (user + system) it used over SECS seconds. Target: near
# zero (no timer runs while idle; redraws happen only on input or events).
#
# usage: cargo build --release && bash benches/tui_idle.sh
# env:   BIN (default $CARGO_TARGET_DIR/release/keel), SECS (default 5)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/keel}
SECS=${SECS:-5}
sock=keel-idle-$$
home=$(mktemp -d)
trap 'tmux -L "$sock" kill-server 2>/dev/null || true; rm -rf "$home"' EXIT
# No model is contacted while idle; the base URL only has to parse.
tmux -L "$sock" -f /dev/null new-session -d -x 200 -y 60 -s idle \
    "exec env -i PATH='$PATH' HOME='$home' KEEL_HOME='$home' TERM=xterm-256color '$BIN' \
     --provider openai-chat --base-url http://127.0.0.1:9/v1 --model m"
ready=
for _ in $(seq 200); do
    if tmux -L "$sock" capture-pane -p -t idle 2>/dev/null | grep -q "Ask keel"; then ready=1; break; fi
    sleep 0.05
done
[ -n "$ready" ] || { echo "tui_idle: $BIN never showed its prompt" >&2; exit 1; }
pid=$(tmux -L "$sock" display-message -p -t idle '#{pane_pid}')
ticks() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)
before=$(ticks)
sleep "$SECS"
after=$(ticks)
echo "tui idle: $(( (after - before) * 1000 / hz )) ms CPU over ${SECS} s (resolution $(( 1000 / hz )) ms; pid $pid)"
