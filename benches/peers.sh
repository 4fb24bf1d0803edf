#!/usr/bin/env bash
# keel against its peers with the shared scripted mock LLM (../shared/bench/run.sh), for
# one or all wire protocols. Installs only the peers named in CLIENTS: the shared
# package-lock.json is out of sync with its package.json, so its `npm ci` fails here.
#
# usage: cargo build --release && bash benches/peers.sh [openai|openai-chat|anthropic ...]
# env:   CLIENTS (default "keel codex-native"), SCENARIOS, RUNS, PEERS_HOME (see run.sh);
#        client "keel-ref" is a second keel binary, KEEL_REF_BIN (a build of an earlier
#        commit), measured in the same run for "within N % of before" figures
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export CLIENTS=${CLIENTS:-"keel codex-native"}
export SCENARIOS=${SCENARIOS:-"version hello steps20 parallel8"}
providers=("$@")
[ ${#providers[@]} -gt 0 ] || providers=(openai-chat openai anthropic)

# shellcheck source=/dev/null
source ../shared/bench/run.sh
install_peers() {
    local pkgs=() c
    for c in $CLIENTS; do
        case $c in
            codex | codex-native) [ -d "$PEERS_HOME/node_modules/@openai/codex" ] || pkgs+=("@openai/codex@0.171.0") ;;
            claude) [ -d "$PEERS_HOME/node_modules/@anthropic-ai/claude-code" ] || pkgs+=("@anthropic-ai/claude-code@2.1.332") ;;
            opencode) [ -d "$PEERS_HOME/node_modules/opencode-ai" ] || pkgs+=("opencode-ai@1.18.33") ;;
            gemini*) [ -d "$PEERS_HOME/node_modules/@google/gemini-cli" ] || pkgs+=("@google/gemini-cli@0.61.0") ;;
        esac
    done
    if [ ${#pkgs[@]} -gt 0 ]; then
        mkdir -p "$PEERS_HOME"
        (cd "$PEERS_HOME" && npm install --no-audit --no-fund --no-save "${pkgs[@]}") >&2
    fi
}

# keel-ref: keel's command line with KEEL_REF_BIN, its own HOME and its own tag at the mock.
eval "shared_client_cmd() $(declare -f client_cmd | tail -n +2)"
client_cmd() {
    if [ "$1" != keel-ref ]; then
        shared_client_cmd "$@"
        return
    fi
    KEEL_BIN=${KEEL_REF_BIN:?keel-ref needs KEEL_REF_BIN} shared_client_cmd keel "$2" "$3"
    CMD=("${CMD[@]//home-keel/home-keel-ref}")
    CMD=("${CMD[@]//\/keel\/v1//keel-ref/v1}")
}

for provider in "${providers[@]}"; do
    KEEL_PROVIDER=$provider OUT=${OUT_ROOT:-/tmp}/keel-bench-$provider main all
    sed -n '/startup wall/,/^$/p' "${OUT_ROOT:-/tmp}/keel-bench-$provider/report.md"
done
