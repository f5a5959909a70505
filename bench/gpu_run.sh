#!/usr/bin/env bash
# The GPU check in one command on a bare GPU machine (torch and transformers
# installed, no network): the flash-linear-attention wheels of bench/wheels/
# (see bench/README.md for the download) are unpacked onto the path, then
# bench/gpu_check.py prints its table. Extra arguments go to gpu_check.py;
# GPU_CHECK_LOG=FILE keeps a copy of the output.
set -euo pipefail
cd "$(dirname "$0")/.."
deps="$(mktemp -d)"
trap 'rm -rf "$deps"' EXIT
shopt -s nullglob
wheels=(bench/wheels/*.whl)
if ((${#wheels[@]})); then
    for wheel in "${wheels[@]}"; do
        python3 -m zipfile -e "$wheel" "$deps"
    done
    echo "gpu_run: unpacked ${wheels[*]##*/}"
else
    echo "gpu_run: no wheels in bench/wheels; the Gated DeltaNet layers run transformers' torch code"
fi
export PYTHONPATH="$deps:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
python3 -c 'import torch, transformers; print(f"gpu_run: torch {torch.__version__}, transformers {transformers.__version__}")'
if [[ -n "${GPU_CHECK_LOG:-}" ]]; then
    python3 bench/gpu_check.py "$@" 2>&1 | tee "$GPU_CHECK_LOG"
else
    python3 bench/gpu_check.py "$@"
fi
