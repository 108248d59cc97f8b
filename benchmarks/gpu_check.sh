#!/usr/bin/env bash
# The GPU check in one script that fits 9 minutes on an H100/H200, each stage cut off at its own time limit (and
# the whole at GPU_CHECK_SECONDS, 530 by default) so an overrun loses only the stages after it, most needed first:
#
#   tests            pytest -m gpu tests/gpu: both kernels against their CPU references (both reductions at the
#                    cases' block size, 64 and 256 threads; the defaults' sizes at d 100/128/300), the additivity of
#                    32 concurrent copies of a sentence, the related-words tests (PAR's included)
#   bench_d128       speed at d 128 (both reductions, CPU hogbatch on every core, PyTorch SGNS), quality over 3 seeds
#                    (full-w2v and par beside CPU hogbatch and CPU par, the bars judged), PyTorch SGNS's quality, the
#                    words/s floor
#   model_check      the related-words runs on the GPU and in the CPU model of its Hogwild with this GPU's resident
#                    blocks: loss per epoch and probes side by side
#   speed_d100_d300  speed at d 100 and 300
#   par_launches     PAR at 100k and 1M words per launch (the old cap and full-w2v's): speed and quality, 1 seed
#   blocks_noloss    the block-size sweep at d 128 without the loss (what the loss costs: against bench_d128)
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
budget=${GPU_CHECK_SECONDS:-530}

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

bench=("$py" benchmarks/bench_gpu.py --no-tests --corpus "$corpus" --big-words 0)
stage tests 200 "$py" -m pytest -q -p no:cacheprovider -m gpu tests/gpu -rf
stage bench_d128 210 "${bench[@]}" --dims 128 --cpu-quality hogbatch par --out "$out/bench_d128.json"
stage model_check 150 "${bench[@]}" --model-check --out "$out/model_check.json"
stage speed_d100_d300 60 "${bench[@]}" --dims 100 300 --reductions shuffle --no-quality --no-torch \
    --out "$out/speed_d100_d300.json"
stage par_launches 60 "${bench[@]}" --algos par --quality-dims 128 --reductions shuffle --seeds 1 --no-cpu \
    --words-per-launch 100000 1048576 --out "$out/par_launches.json"
stage blocks_noloss 50 "${bench[@]}" --dims 128 --no-quality --no-torch --no-cpu --no-loss --reductions shuffle \
    --threads-per-block 32 64 128 256 --out "$out/blocks_noloss.json"
echo "total $((SECONDS - start))s" | tee -a "$out/summary.log"
