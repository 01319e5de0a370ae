#!/usr/bin/env bash
# Every GPU measurement the open GPU issue asks for (9 minutes at most: one device call). Run
# from the repo root on a CUDA machine with the project installed; each step has its own time
# limit and prints its figures; a failed step does not stop the rest. OUT (default ./gpu-out)
# receives the logs. Name steps to run only those (a device call is limited to 10 minutes), e.g.
#   scripts/gpu_check.sh scoped-dropout bench-gpu quality-gpu
#   scripts/gpu_check.sh quality-gpu-compiled serve-generate
# On this workplace's device machines (torch there, no captum/altair, no `python`): carry the
# wheels of what is missing and call it through a `python` wrapper, e.g.
#   pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl; export PYTHONPATH=/tmp/site:$PWD
#   printf '#!/bin/sh\nexec %s "$@"\n' "$(command -v python3)" >/tmp/bin/python  (a symlink loses the venv)
set -u
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
ONLY=" $* "
step() {  # step NAME SECONDS COMMAND...
    local name=$1 limit=$2; shift 2
    [ "$ONLY" = "  " ] || [[ "$ONLY" == *" $name "* ]] || return 0
    echo "=== $name (limit ${limit}s): $*" | tee "$OUT/$name.log"
    local t0=$SECONDS
    timeout "$limit" "$@" >>"$OUT/$name.log" 2>&1
    echo "=== $name: exit $? after $((SECONDS - t0)) s" | tee -a "$OUT/$name.log"
    tail -25 "$OUT/$name.log"
}
timeout 20 nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
# A probe with its own short limit: on 2026-11-27 a whole 10-minute device call went by with no
# line after nvidia-smi's (this probe never printed), so nothing else may start before it answers.
if ! timeout 60 python -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available())" 2>&1 | tee -a "$OUT/gpu.txt"; then
    echo "=== torch did not import or answer within 60 s; stopping" | tee -a "$OUT/gpu.txt"; exit 1
fi
# 1. scoped dropout on CUDA: two threaded runs keep their solo curves, fused attention dropout
step scoped-dropout 60 python -m pytest tests/models/test_scoped_dropout.py -q -p no:cacheprovider
# 2. twenty users' decoders beside one user alone
step serve-generate 60 python -m playground bench serve-generate --engine-only --device cuda --users 20 --rounds 3
# 3. the engine's CUDA paths, eager vs compile, MFU (scoped dropout: flash kernel with dropout)
step bench-gpu 110 python -m playground bench gpu --steps 100 --warmup 30
# 4. time to val <= 1.47 beside nanoGPT's compiled recipe, interleaved in one run (compiled first:
#    the goal is stated against it)
step quality-gpu-compiled 170 python -m playground bench quality --recipe gpu --set train.compile=true
step quality-gpu 150 python -m playground bench quality --recipe gpu
