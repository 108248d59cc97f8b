#!/usr/bin/env bash
# The GPU check in one script that fits 10 minutes on an H100/H200: the hardware tests, then bench_gpu.py's
# headline (d 128: speed on the shared corpus and on 100M words, both reductions, CPU hogbatch on every core and a
# PyTorch SGNS beside them; quality over 3 seeds), then speed only at d 100 and 300, the block-size sweep and the
# loss's cost, each stage cut off at its own time limit so an overrun loses only the stages after it.
#
#     benchmarks/gpu_check.sh OUT_DIR [CORPUS]     # logs and JSON under OUT_DIR
#
# Every stage's log is OUT_DIR/<stage>.log; the bench stages also write OUT_DIR/<stage>.json.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: benchmarks/gpu_check.sh OUT_DIR [CORPUS]}
corpus=${2:-../shared/data/corpus/enwiki2015_text8style_100M.txt.xz}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH="src${PYTHONPATH:+:$PYTHONPATH}"
py=${PYTHON:-python3}
start=$SECONDS
budget=${GPU_CHECK_SECONDS:-570}

stage() {  # stage NAME LIMIT_S CMD...: run CMD with at most LIMIT_S seconds (less if the budget is nearly spent)
    local name=$1 limit=$2
    shift 2
    local left=$((budget - (SECONDS - start)))
    ((limit > left)) && limit=$left
    if ((limit < 20)); then
        echo "== $name: skipped (${left}s of the budget left)" | tee -a "$out/summary.log"
        return
    fi
    echo "== $name (limit ${limit}s): $*" | tee -a "$out/summary.log"
    local t0=$SECONDS
    timeout -k 5 "$limit" "$@" >"$out/$name.log" 2>&1
    echo "== $name: rc $? in $((SECONDS - t0))s" | tee -a "$out/summary.log"
}

{
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
    lscpu | grep -E "Model name|^CPU\(s\)"
    "$py" -c "import numpy, numba, numba_cuda; print('numpy', numpy.__version__, 'numba', numba.__version__, \
'numba-cuda', numba_cuda.__version__)"
} >"$out/machine.log" 2>&1

bench=("$py" benchmarks/bench_gpu.py --no-tests --corpus "$corpus")
stage tests 170 "$py" -m pytest -q -p no:cacheprovider -m gpu tests/gpu
stage bench_d128 230 "${bench[@]}" --dims 128 --out "$out/bench_d128.json"
stage speed_d100_d300 90 "${bench[@]}" --dims 100 300 --big-words 0 --no-quality --no-torch \
    --out "$out/speed_d100_d300.json"
stage blocks_noloss_d128 80 "${bench[@]}" --dims 128 --big-words 0 --no-quality --no-torch --no-cpu --no-loss \
    --threads-per-block 32 64 128 --reductions shuffle --out "$out/blocks_noloss_d128.json"
echo "total $((SECONDS - start))s" | tee -a "$out/summary.log"
