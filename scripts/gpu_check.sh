#!/usr/bin/env bash
# Every GPU measurement the open GPU issue asks for (about 11 minutes at most on an H100). Run
# from the repo root on a CUDA machine with the project installed; each step has its own time
# limit and prints its figures; a failed step does not stop the rest. OUT (default ./gpu-out)
# receives the logs. Name steps to run only those (a device call is limited to 10 minutes), e.g.
#   scripts/gpu_check.sh scoped-dropout bench-gpu quality-gpu
#   scripts/gpu_check.sh quality-gpu-compiled serve-generate
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
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
python -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" | tee -a "$OUT/gpu.txt"
# 1. scoped dropout on CUDA: two threaded runs keep their solo curves, fused attention dropout
step scoped-dropout 90 python -m pytest tests/models/test_scoped_dropout.py -q -p no:cacheprovider
# 2. the engine's CUDA paths, eager vs compile, MFU (scoped dropout: flash kernel with dropout)
step bench-gpu 120 python -m playground bench gpu --steps 100 --warmup 30
# 3. time to val <= 1.47 beside nanoGPT's compiled recipe, interleaved in one run
step quality-gpu 200 python -m playground bench quality --recipe gpu
step quality-gpu-compiled 200 python -m playground bench quality --recipe gpu --set train.compile=true
# 4. twenty users' decoders beside one user alone
step serve-generate 90 python -m playground bench serve-generate --engine-only --device cuda --users 20 --rounds 3
